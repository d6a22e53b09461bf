//! Hinge angle limits (spec 000 §3.5, from Müller et al. 2020): when the extracted angle φ (§3.6) leaves
//! [lo, hi], rotate the parent reference to the clamped angle, n_P' = Rot(b_w, φ_c) n_P, and apply the angular
//! correction of §3.4 with c = n_P' × n_C. An inequality: inactive (no correction) inside the range.
use super::hinge::{angular_core_fwd, angular_core_vjp, AngularFwd, Corr, CorrGrad, Pair, PairGrad};
use crate::xpbd::angles::hinge_angle_world;
use torsion_math::quat::rotate_vjp;
use torsion_math::{Scalar, Vec3};

/// Intermediate values of an active limit projection (the adjoint reuses them).
#[derive(Clone, Copy, Debug)]
pub struct LimitFwd<T: Scalar> {
    /// b_w, n_P,w, n_C,w (world axis and references)
    pub bw: Vec3<T>,
    pub npw: Vec3<T>,
    pub ncw: Vec3<T>,
    /// the rotated parent reference n_P' and cos φ_c, sin φ_c of the clamped angle (constants)
    pub npc: Vec3<T>,
    pub cph: f64,
    pub sph: f64,
    /// None: skipped by the ε guard of the angular correction
    pub core: Option<AngularFwd<T>>,
}

impl<T: Scalar> LimitFwd<T> {
    #[inline(always)]
    pub fn corr(&self) -> Corr<T> {
        match &self.core {
            Some(c) => c.corr(),
            None => Corr::none(),
        }
    }
}

/// The limit projection with its intermediates; None when the limit is inactive (branch on the primal angle
/// only).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn limit_fwd<T: Scalar>(
    p: &Pair<T>,
    b: &Vec3<T>,
    np: &Vec3<T>,
    nc: &Vec3<T>,
    lo: f64,
    hi: f64,
    lam: T,
    at: T,
) -> Option<LimitFwd<T>> {
    let bw = p.qa.rotate(b);
    let npw = p.qa.rotate(np);
    let ncw = p.qb.rotate(nc);
    // φ of §3.6 (the same expression as `angles::hinge_angle`, on the rotated vectors)
    let pr = hinge_angle_world(&npw, &ncw, &bw).re();
    if pr >= lo && pr <= hi {
        return None;
    }
    let phic = if pr < lo { lo } else { hi };
    let (cph, sph) = (phic.cos(), phic.sin());
    let npc = npw * T::c(cph) + bw.cross(&npw) * T::c(sph);
    let core = angular_core_fwd(p, &p.qa.to_mat(), &p.qb.to_mat(), &npc.cross(&ncw), lam, at);
    Some(LimitFwd { bw, npw, ncw, npc, cph, sph, core })
}

/// Adjoint of [`limit_fwd`]'s correction at the forward values `f` of an active limit (φ_c is a constant there).
#[allow(clippy::too_many_arguments)]
#[inline]
pub fn limit_vjp(
    p: &Pair<f64>,
    b: &Vec3,
    np: &Vec3,
    nc: &Vec3,
    f: &LimitFwd<f64>,
    at: f64,
    g: &CorrGrad,
    gp: &mut PairGrad,
) {
    let Some(core) = &f.core else { return };
    let LimitFwd { bw, npw, ncw, npc, cph, sph, .. } = *f;
    let gc = angular_core_vjp(p, core, at, g, gp);
    let gnpc = ncw.cross(&gc);
    let gncw = gc.cross(&npc);
    let gbw = npw.cross(&gnpc) * sph;
    let gnpw = gnpc * cph + gnpc.cross(&bw) * sph;
    for (v, gv) in [(b, gbw), (np, gnpw)] {
        let (gq, _) = rotate_vjp(&p.qa, v, &gv);
        gp.qa = gp.qa.add(&gq);
    }
    let (gq, _) = rotate_vjp(&p.qb, nc, &gncw);
    gp.qb = gp.qb.add(&gq);
}

#[cfg(test)]
mod tests {
    use super::super::hinge::testing::*;
    use super::*;
    use crate::xpbd::joints::hinge::PairGrad;
    use torsion_diff::gradcheck;

    #[test]
    fn limit_vjp_matches_central_differences() {
        let p = pair();
        let b = Vec3::new(0.0, 0.1, 1.0).normalize();
        let np = Vec3::new(1.0, 0.0, 0.0);
        let nc = Vec3::new(0.9, 0.2, -0.02).normalize();
        let phi = crate::xpbd::angles::hinge_angle(&p.qa, &p.qb, &b, &np, &nc);
        for (lo, hi) in [(phi + 0.1, phi + 0.5), (phi - 0.6, phi - 0.2)] {
            let g = cot();
            let f = limit_fwd(&p, &b, &np, &nc, lo, hi, 0.0, 0.0).expect("active limit");
            let mut gp = PairGrad::default();
            limit_vjp(&p, &b, &np, &nc, &f, 0.0, &g, &mut gp);
            let an = tangent(&p, &gp);
            let c = gradcheck(
                |d| dot(&limit_fwd(&perturb(&p, d), &b, &np, &nc, lo, hi, 0.0, 0.0).expect("still active").corr(), &g),
                &an,
                1e-7,
            );
            assert!(c.max_rel_err < 1e-7, "limit VJP: {:e} at {}", c.max_rel_err, c.worst_index);
        }
        assert!(limit_fwd(&p, &b, &np, &nc, phi - 0.1, phi + 0.1, 0.0, 0.0).is_none(), "inactive inside the range");
    }
}
