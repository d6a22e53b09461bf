//! The constraint sets of the two sub-problems of the staggered projections (spec 001 §3.4, §3.6): the
//! non-negative orthant for the normal impulses (QP) and, per contact, a 2-D friction set of radius r_i = μ_i λ_n(i)
//! for the tangential impulses: the exact Coulomb disk (QCQP, the default), the box pyramid |z1|, |z2| ≤ r
//! (circumscribed, Bullet-style clamps) or the diamond pyramid |z1| + |z2| ≤ r (inscribed, Anitescu–Potra)
//! (spec 001 §3.11 item 9). Each set gives its Euclidean projection (ADMM's z-step) and, at a solution, its
//! active constraints c_k(z) ≤ 0 with ∇c_k, the curvature of c_k and ∂c_k/∂r (the reduced KKT system, §3.8).
//! Norms are guarded at zero: no NaN for a zero radius or a zero vector.

/// Friction set per contact (spec 001 §3.4, Fig. 5 / E4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrictionSet {
    /// ‖z_(i)‖₂ ≤ r_i: the exact Coulomb cone at fixed λ_n (a disk); the paper's QCQP
    Cone,
    /// |z_1|, |z_2| ≤ r_i: the box pyramid (contains the disk)
    BoxPyramid,
    /// |z_1| + |z_2| ≤ r_i: the diamond pyramid (inside the disk)
    DiamondPyramid,
}

/// The set of one ADMM problem.
#[derive(Clone, Copy, Debug)]
pub enum ConstraintSet<'a> {
    /// x ≥ 0 (normal impulses)
    Nonneg,
    /// per contact i, (x_2i, x_2i+1) in a friction set of radius r[i] ≥ 0
    Friction { kind: FrictionSet, r: &'a [f64] },
}

/// One active constraint at a solution: c(z) = ½ s (‖z_(i)‖² − r²) for the disk (s = 1; ∇c = z_(i), curvature 1,
/// ∂c/∂r = −r) or c(z) = aᵀ z_(i) − r for a face of a pyramid (∇c = a, no curvature, ∂c/∂r = −1), or a bound
/// −x_j ≤ 0 of the orthant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Active {
    /// contact (Friction) or coordinate (Nonneg)
    pub index: usize,
    /// ∇c on the contact's two coordinates (Nonneg: only `grad[0]` on coordinate `index`)
    pub grad: [f64; 2],
    /// ∇²c = curvature · I₂ (disk: 1)
    pub curvature: f64,
    /// ∂c/∂r_index
    pub d_dr: f64,
}

impl ConstraintSet<'_> {
    /// Number of variables the set constrains, or None for the orthant (any length).
    pub fn dim(&self) -> Option<usize> {
        match self {
            ConstraintSet::Nonneg => None,
            ConstraintSet::Friction { r, .. } => Some(2 * r.len()),
        }
    }

    /// Euclidean projection in place.
    #[inline]
    pub fn project(&self, x: &mut [f64]) {
        match *self {
            ConstraintSet::Nonneg => x.iter_mut().for_each(|v| *v = v.max(0.0)),
            ConstraintSet::Friction { kind, r } => {
                for (w, &ri) in x.chunks_exact_mut(2).zip(r) {
                    project_friction(kind, ri, w);
                }
            }
        }
    }

    /// Largest constraint violation of x (0 when feasible).
    pub fn violation(&self, x: &[f64]) -> f64 {
        match *self {
            ConstraintSet::Nonneg => x.iter().fold(0.0, |m, &v| m.max(-v)),
            ConstraintSet::Friction { kind, r } => {
                x.chunks_exact(2).zip(r).fold(0.0, |m, (w, &ri)| m.max(friction_gauge(kind, w[0], w[1]) - ri))
            }
        }
    }
}

/// The friction set's gauge of one contact's (λ_t1, λ_t2): the set is {gauge ≤ r} (disk: ‖·‖₂, box: ‖·‖∞,
/// diamond: ‖·‖₁).
#[inline]
pub fn friction_gauge(kind: FrictionSet, a: f64, b: f64) -> f64 {
    match kind {
        FrictionSet::Cone => norm2(a, b),
        FrictionSet::BoxPyramid => a.abs().max(b.abs()),
        FrictionSet::DiamondPyramid => a.abs() + b.abs(),
    }
}

/// ‖(a, b)‖₂ without libm's `hypot` (5× slower here; impulses are far from overflow).
#[inline(always)]
fn norm2(a: f64, b: f64) -> f64 {
    (a * a + b * b).sqrt()
}

/// Projection of one contact's 2-vector onto its friction set of radius r ≥ 0.
#[inline]
pub fn project_friction(kind: FrictionSet, r: f64, w: &mut [f64]) {
    let r = r.max(0.0);
    match kind {
        FrictionSet::Cone => {
            let n = norm2(w[0], w[1]);
            if n > r {
                // n > r ≥ 0, so n > 0: no division by zero
                let s = r / n;
                w[0] *= s;
                w[1] *= s;
            }
        }
        FrictionSet::BoxPyramid => {
            w[0] = w[0].clamp(-r, r);
            w[1] = w[1].clamp(-r, r);
        }
        FrictionSet::DiamondPyramid => {
            let (a0, a1) = (w[0].abs(), w[1].abs());
            if a0 + a1 <= r {
                return;
            }
            // soft threshold by τ with Σ max(|w_k| − τ, 0) = r
            let (hi, lo) = if a0 >= a1 { (a0, a1) } else { (a1, a0) };
            let tau = if hi - lo >= r { hi - r } else { 0.5 * (hi + lo - r) };
            w[0] = w[0].signum() * (a0 - tau).max(0.0);
            w[1] = w[1].signum() * (a1 - tau).max(0.0);
        }
    }
}

/// Euclidean projection of one contact's (λ_n, λ_t1, λ_t2) onto the Coulomb cone {‖λ_t‖ ≤ μ λ_n} (μ ≥ 0): the
/// identity inside, the apex (0) in the polar cone, else onto the cone's ray through λ_t's direction. Returns
/// whether it moved the point.
#[inline]
pub fn project_coulomb_cone(mu: f64, x: &mut [f64]) -> bool {
    let (n, t) = (x[0], norm2(x[1], x[2]));
    if t <= mu * n {
        return false;
    }
    if mu * t <= -n {
        x.iter_mut().for_each(|v| *v = 0.0);
        return true;
    }
    // t > μ n and μ t > −n: t > 0 (else 0 > μ n ≥ ... and 0 > −n contradict), no division by zero
    let a = (n + mu * t) / (1.0 + mu * mu);
    let s = mu * a / t;
    (x[0], x[1], x[2]) = (a, s * x[1], s * x[2]);
    true
}

/// The constraints of one contact's friction set that are active at w (within the absolute tolerance `tol`),
/// as (∇c, curvature, ∂c/∂r). A disk gives at most one, a pyramid at most two (a corner). r ≤ tol is reported
/// as `None`: the contact's impulse is pinned at zero (spec 001 §3.8, 𝒵).
pub fn friction_active(kind: FrictionSet, r: f64, w: &[f64], tol: f64) -> Option<([Active; 2], usize)> {
    if r <= tol {
        return None;
    }
    let z = Active { index: 0, grad: [0.0; 2], curvature: 0.0, d_dr: 0.0 };
    let mut out = [z; 2];
    let mut n = 0;
    let mut push = |g: [f64; 2], curv: f64, d_dr: f64| {
        out[n] = Active { index: 0, grad: g, curvature: curv, d_dr };
        n += 1;
    };
    let t = tol;
    match kind {
        FrictionSet::Cone => {
            if norm2(w[0], w[1]) >= r - t {
                push([w[0], w[1]], 1.0, -r);
            }
        }
        FrictionSet::BoxPyramid => {
            for k in 0..2 {
                if w[k].abs() >= r - t {
                    let mut g = [0.0; 2];
                    g[k] = if w[k] >= 0.0 { 1.0 } else { -1.0 };
                    push(g, 0.0, -1.0);
                }
            }
        }
        FrictionSet::DiamondPyramid => {
            if w[0].abs() + w[1].abs() >= r - t {
                let s = |x: f64| if x >= 0.0 { 1.0 } else { -1.0 };
                if w[0].abs() <= t || w[1].abs() <= t {
                    // a vertex of the diamond: both adjacent faces
                    if w[0].abs() <= t {
                        push([1.0, s(w[1])], 0.0, -1.0);
                        push([-1.0, s(w[1])], 0.0, -1.0);
                    } else {
                        push([s(w[0]), 1.0], 0.0, -1.0);
                        push([s(w[0]), -1.0], 0.0, -1.0);
                    }
                } else {
                    push([s(w[0]), s(w[1])], 0.0, -1.0);
                }
            }
        }
    }
    Some((out, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rng(seed: &mut u64) -> f64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        (*seed >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }

    /// Projections land in the set, are idempotent, and satisfy the variational inequality
    /// ⟨x − Π(x), y − Π(x)⟩ ≤ 0 for every y in the set.
    #[test]
    fn projections_are_projections() {
        let mut s = 0x1234_5678_9abc_def1u64;
        for kind in [FrictionSet::Cone, FrictionSet::BoxPyramid, FrictionSet::DiamondPyramid] {
            for _ in 0..2000 {
                let r = [(rng(&mut s) + 1.0) * 0.5, 0.0];
                let set = ConstraintSet::Friction { kind, r: &r };
                let x = [3.0 * rng(&mut s), 3.0 * rng(&mut s), rng(&mut s), rng(&mut s)];
                let mut p = x;
                set.project(&mut p);
                assert!(set.violation(&p) <= 1e-15, "{kind:?} {x:?} -> {p:?}");
                assert_eq!(&p[2..], &[0.0, 0.0], "r = 0 pins the impulse at zero");
                let mut pp = p;
                set.project(&mut pp);
                assert!((pp[0] - p[0]).abs() + (pp[1] - p[1]).abs() < 1e-15);
                for _ in 0..20 {
                    let mut y = [2.0 * rng(&mut s), 2.0 * rng(&mut s), 0.0, 0.0];
                    set.project(&mut y);
                    let vi = (x[0] - p[0]) * (y[0] - p[0]) + (x[1] - p[1]) * (y[1] - p[1]);
                    assert!(vi <= 1e-12, "{kind:?}: variational inequality {vi}");
                }
            }
        }
        let mut z = [-1.0, 2.0, 0.0];
        ConstraintSet::Nonneg.project(&mut z);
        assert_eq!(z, [0.0, 2.0, 0.0]);
    }

    /// The cone's projection lands in the cone, is idempotent and satisfies the variational inequality.
    #[test]
    fn coulomb_cone_projection_is_a_projection() {
        let mut s = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..5000 {
            let mu = 0.05 + (rng(&mut s) + 1.0);
            let x = [2.0 * rng(&mut s), 2.0 * rng(&mut s), 2.0 * rng(&mut s)];
            let mut p = x;
            let moved = project_coulomb_cone(mu, &mut p);
            assert_eq!(moved, p != x);
            assert!(p[1].hypot(p[2]) <= mu * p[0] * (1.0 + 1e-14) + 1e-15 && p[0] >= 0.0, "{x:?} -> {p:?}");
            let mut pp = p;
            assert!(!project_coulomb_cone(mu, &mut pp) || (0..3).all(|k| (pp[k] - p[k]).abs() < 1e-14));
            for _ in 0..20 {
                let mut y = [2.0 * rng(&mut s), 2.0 * rng(&mut s), 2.0 * rng(&mut s)];
                project_coulomb_cone(mu, &mut y);
                let vi: f64 = (0..3).map(|k| (x[k] - p[k]) * (y[k] - p[k])).sum();
                assert!(vi <= 1e-12, "variational inequality {vi}");
            }
        }
    }

    #[test]
    fn active_constraints() {
        let a = friction_active(FrictionSet::Cone, 1.0, &[0.6, 0.8], 1e-9).unwrap();
        assert_eq!(a.1, 1);
        assert_eq!(a.0[0].grad, [0.6, 0.8]);
        assert_eq!(friction_active(FrictionSet::Cone, 1.0, &[0.1, 0.2], 1e-9).unwrap().1, 0);
        assert!(friction_active(FrictionSet::Cone, 0.0, &[0.0, 0.0], 1e-9).is_none());
        assert_eq!(friction_active(FrictionSet::BoxPyramid, 1.0, &[1.0, -1.0], 1e-9).unwrap().1, 2);
        let d = friction_active(FrictionSet::DiamondPyramid, 1.0, &[0.0, -1.0], 1e-9).unwrap();
        assert_eq!(d.1, 2);
        assert_eq!(
            friction_active(FrictionSet::DiamondPyramid, 1.0, &[0.5, -0.5], 1e-9).unwrap().0[0].grad,
            [1.0, -1.0]
        );
    }
}
