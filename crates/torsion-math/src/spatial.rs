//! Spatial (6-D) algebra for generalized-coordinate dynamics, generic over the scalar (Featherstone 2008,
//! Pinocchio conventions): motion and force vectors stacked [angular; linear], rigid transforms a←b with
//! x_a = R x_b + p, the motion and force actions, cross products and the transformation of 6×6 inertias
//! (dense, and on 3×3 blocks for symmetric ones), and the 10-number rigid-body [`Inertia`] that the
//! composite-inertia and derivative algorithms sum and transform.
use crate::scalar::Scalar;
use nalgebra::{Matrix3, Matrix6, Vector3, Vector6};

pub type V6<T = f64> = Vector6<T>;
pub type M6<T = f64> = Matrix6<T>;

#[inline(always)]
pub fn ang<T: Scalar>(m: &V6<T>) -> Vector3<T> {
    Vector3::new(m[0], m[1], m[2])
}
#[inline(always)]
pub fn lin<T: Scalar>(m: &V6<T>) -> Vector3<T> {
    Vector3::new(m[3], m[4], m[5])
}
#[inline(always)]
pub fn stack<T: Scalar>(a: &Vector3<T>, l: &Vector3<T>) -> V6<T> {
    V6::new(a.x, a.y, a.z, l.x, l.y, l.z)
}

/// Skew matrix [a]× with [a]× b = a × b.
#[inline(always)]
pub fn skew<T: Scalar>(a: &Vector3<T>) -> Matrix3<T> {
    let z = T::zero();
    Matrix3::new(z, -a.z, a.y, a.z, z, -a.x, -a.y, a.x, z)
}

/// Rigid transform a←b (placement of frame b in frame a): x_a = rot x_b + pos.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Se3<T: Scalar = f64> {
    pub rot: Matrix3<T>,
    pub pos: Vector3<T>,
}

impl<T: Scalar> Se3<T> {
    pub fn identity() -> Self {
        Se3 { rot: Matrix3::identity(), pos: Vector3::zeros() }
    }
    pub fn new(rot: Matrix3<T>, pos: Vector3<T>) -> Self {
        Se3 { rot, pos }
    }
    /// self ∘ b: (a←b)(b←c) = a←c.
    #[inline(always)]
    pub fn compose(&self, b: &Self) -> Self {
        Se3 { rot: self.rot * b.rot, pos: self.rot * b.pos + self.pos }
    }
    #[inline(always)]
    pub fn inverse(&self) -> Self {
        let rt = self.rot.transpose();
        Se3 { rot: rt, pos: -(rt * self.pos) }
    }
    #[inline(always)]
    pub fn act_point(&self, x: &Vector3<T>) -> Vector3<T> {
        self.rot * x + self.pos
    }
    /// Motion b → a: ω_a = R ω, v_a = R v + p × ω_a.
    #[inline(always)]
    pub fn act_motion(&self, m: &V6<T>) -> V6<T> {
        let w = self.rot * ang(m);
        stack(&w, &(self.rot * lin(m) + self.pos.cross(&w)))
    }
    /// Motion a → b (inverse action).
    #[inline(always)]
    pub fn inv_act_motion(&self, m: &V6<T>) -> V6<T> {
        let w = ang(m);
        let rt = self.rot.transpose();
        stack(&(rt * w), &(rt * (lin(m) - self.pos.cross(&w))))
    }
    /// Force b → a: f_a = R f, n_a = R n + p × f_a.
    #[inline(always)]
    pub fn act_force(&self, f: &V6<T>) -> V6<T> {
        let fl = self.rot * lin(f);
        stack(&(self.rot * ang(f) + self.pos.cross(&fl)), &fl)
    }
    /// Force a → b.
    #[inline(always)]
    pub fn inv_act_force(&self, f: &V6<T>) -> V6<T> {
        let fl = lin(f);
        let rt = self.rot.transpose();
        stack(&(rt * (ang(f) - self.pos.cross(&fl))), &(rt * fl))
    }
    /// 6×6 motion transform a←b: [[R, 0], [p̂ R, R]].
    pub fn motion_matrix(&self) -> M6<T> {
        let mut m = M6::zeros();
        let pr = skew(&self.pos) * self.rot;
        m.fixed_view_mut::<3, 3>(0, 0).copy_from(&self.rot);
        m.fixed_view_mut::<3, 3>(3, 3).copy_from(&self.rot);
        m.fixed_view_mut::<3, 3>(3, 0).copy_from(&pr);
        m
    }
    /// Inertia expressed in b → in a: I_a = X*_{a←b} I_b X_{b←a} = X_{b←a}ᵀ I_b X_{b←a}.
    pub fn act_inertia(&self, i: &M6<T>) -> M6<T> {
        let x = self.inverse().motion_matrix();
        x.transpose() * i * x
    }
    /// A symmetric 6×6 inertia (rigid or articulated) expressed in b → in a: X*_{a←b} I X_{b←a}, the same
    /// value as [`Se3::act_inertia`] for symmetric `i`, computed on 3×3 blocks (≈ 5× fewer operations).
    /// With I = [[A, B], [Bᵀ, C]] rotated to A₁ = R A Rᵀ, B₁ = R B Rᵀ, C₁ = R C Rᵀ and then shifted by p:
    /// B' = B₁ + p̂ C₁, A' = A₁ − B₁ p̂ + p̂ B'ᵀ, C' = C₁. Only the upper triangle of `i` is read.
    #[inline]
    pub fn act_sym6(&self, i: &M6<T>) -> M6<T> {
        let r = &self.rot;
        let a = sym3_upper(i, 0);
        let c = sym3_upper(i, 3);
        let b: Matrix3<T> = i.fixed_view::<3, 3>(0, 3).into_owned();
        let a1 = rot_sym(r, &a);
        let c1 = rot_sym(r, &c);
        let b1 = r * b * r.transpose();
        let p = self.pos;
        // p̂ C₁ column by column
        let mut b2 = b1;
        for k in 0..3 {
            let col = p.cross(&c1.column(k).into_owned());
            b2[(0, k)] += col.x;
            b2[(1, k)] += col.y;
            b2[(2, k)] += col.z;
        }
        // A' = A₁ − B₁ p̂ + p̂ B'ᵀ; (B₁ p̂)[r, :] = B₁[r, :] × … : (B₁ p̂) e_k = B₁ (p × e_k); (p̂ B'ᵀ)[:, k] = p × B'[k, :]
        let mut out = M6::zeros();
        let pb2t: [Vector3<T>; 3] = std::array::from_fn(|k| p.cross(&b2.row(k).transpose()));
        for rr in 0..3 {
            let row = b1.row(rr).transpose();
            // (B₁ p̂)[rr, k] = row · (p × e_k) = (row × p)_k
            let bp = row.cross(&p);
            for k in rr..3 {
                let v = a1[(rr, k)] - bp[k] + pb2t[k][rr];
                out[(rr, k)] = v;
                out[(k, rr)] = v;
            }
        }
        for rr in 0..3 {
            for k in 0..3 {
                out[(rr, 3 + k)] = b2[(rr, k)];
                out[(3 + k, rr)] = b2[(rr, k)];
                out[(3 + rr, 3 + k)] = c1[(rr, k)];
            }
        }
        out
    }
}

/// The symmetric 3×3 block at (o, o) of `m`, read from its upper triangle.
#[inline(always)]
fn sym3_upper<T: Scalar>(m: &M6<T>, o: usize) -> Matrix3<T> {
    let (a, b, c) = (m[(o, o)], m[(o, o + 1)], m[(o, o + 2)]);
    let (d, e, f) = (m[(o + 1, o + 1)], m[(o + 1, o + 2)], m[(o + 2, o + 2)]);
    Matrix3::new(a, b, c, b, d, e, c, e, f)
}

/// R S Rᵀ for a symmetric S (6 entries computed, mirrored).
#[inline(always)]
pub fn rot_sym<T: Scalar>(r: &Matrix3<T>, s: &Matrix3<T>) -> Matrix3<T> {
    let t = r * s; // t Rᵀ: entry (i, j) = t[i, :] · r[j, :]
    let e = |i: usize, j: usize| t[(i, 0)] * r[(j, 0)] + t[(i, 1)] * r[(j, 1)] + t[(i, 2)] * r[(j, 2)];
    let (a, b, c, d, ee, f) = (e(0, 0), e(0, 1), e(0, 2), e(1, 1), e(1, 2), e(2, 2));
    Matrix3::new(a, b, c, b, d, ee, c, ee, f)
}

/// Spatial inertia of a rigid body (or a composite of rigid bodies) about the origin of a frame, in the 10
/// numbers that transform and add cheaply: mass `m`, first moment `h` = m c (c: the COM in the frame) and the
/// rotational inertia `i` about the frame's origin (symmetric). As a 6×6 matrix: [[i, [h]×], [[h]×ᵀ, m 1]].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Inertia<T: Scalar = f64> {
    pub m: T,
    pub h: Vector3<T>,
    pub i: Matrix3<T>,
}

impl<T: Scalar> Inertia<T> {
    pub fn zeros() -> Self {
        Inertia { m: T::zero(), h: Vector3::zeros(), i: Matrix3::zeros() }
    }
    /// From a rigid-body 6×6 inertia [[i, [h]×], [[h]×ᵀ, m 1]] (as [`inertia_at_com`] builds, h = 0 there).
    #[inline]
    pub fn from_matrix(m6: &M6<T>) -> Self {
        Inertia { m: m6[(3, 3)], h: Vector3::new(m6[(2, 4)], m6[(0, 5)], m6[(1, 3)]), i: sym3_upper(m6, 0) }
    }
    pub fn to_matrix(&self) -> M6<T> {
        let mut out = M6::zeros();
        let hx = skew(&self.h);
        out.fixed_view_mut::<3, 3>(0, 0).copy_from(&self.i);
        out.fixed_view_mut::<3, 3>(0, 3).copy_from(&hx);
        out.fixed_view_mut::<3, 3>(3, 0).copy_from(&hx.transpose());
        for k in 3..6 {
            out[(k, k)] = self.m;
        }
        out
    }
    /// I m = [i ω + h × v; m v − h × ω] for m = [ω; v].
    #[inline(always)]
    pub fn mul_motion(&self, mo: &V6<T>) -> V6<T> {
        let (w, v) = (ang(mo), lin(mo));
        stack(&(self.i * w + self.h.cross(&v)), &(v * self.m - self.h.cross(&w)))
    }
    /// The inertia expressed in b → in a, for `x` = a←b: h_a = R h + m p and, by the parallel-axis theorem,
    /// i_a = R i Rᵀ + (2 p·(R h) + m |p|²) 1 − (p (R h)ᵀ + (R h) pᵀ + m p pᵀ) = R i Rᵀ + 2 (p·u) 1 − (p uᵀ + u pᵀ)
    /// with u = R h + m p / 2.
    #[inline]
    pub fn transformed(&self, x: &Se3<T>) -> Self {
        let rh = x.rot * self.h;
        let p = x.pos;
        let u = rh + p * (self.m * T::c(0.5));
        let d = (p.dot(&u)) * T::c(2.0);
        let r = rot_sym(&x.rot, &self.i);
        let e = |a: usize, b: usize| r[(a, b)] - (p[a] * u[b] + u[a] * p[b]);
        let (xx, yy, zz) = (e(0, 0) + d, e(1, 1) + d, e(2, 2) + d);
        let (xy, xz, yz) = (e(0, 1), e(0, 2), e(1, 2));
        Inertia { m: self.m, h: rh + p * self.m, i: Matrix3::new(xx, xy, xz, xy, yy, yz, xz, yz, zz) }
    }
}

impl<T: Scalar> std::ops::AddAssign for Inertia<T> {
    #[inline(always)]
    fn add_assign(&mut self, o: Self) {
        self.m += o.m;
        self.h += o.h;
        self.i += o.i;
    }
}

/// Motion cross product m × n (spatial velocity acting on a motion).
#[inline(always)]
pub fn cross_motion<T: Scalar>(m: &V6<T>, n: &V6<T>) -> V6<T> {
    let (w, v) = (ang(m), lin(m));
    stack(&w.cross(&ang(n)), &(w.cross(&lin(n)) + v.cross(&ang(n))))
}

/// Force cross product m ×* f.
#[inline(always)]
pub fn cross_force<T: Scalar>(m: &V6<T>, f: &V6<T>) -> V6<T> {
    let (w, v) = (ang(m), lin(m));
    stack(&(w.cross(&ang(f)) + v.cross(&lin(f))), &w.cross(&lin(f)))
}

/// Spatial inertia of a rigid body in a frame at its COM: diag(I_c, m 1).
pub fn inertia_at_com<T: Scalar>(mass: T, ic: &Matrix3<T>) -> M6<T> {
    let mut m = M6::zeros();
    m.fixed_view_mut::<3, 3>(0, 0).copy_from(ic);
    for i in 3..6 {
        m[(i, i)] = mass;
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Quat;
    fn x() -> Se3 {
        Se3::new(Quat::from_rpy(0.3, -0.2, 0.9).to_mat(), Vector3::new(0.1, -0.4, 0.25))
    }
    #[test]
    fn actions_match_matrices_and_duality() {
        let x = x();
        let m = V6::new(0.1, 0.2, -0.3, 0.5, -0.1, 0.7);
        let f = V6::new(-0.3, 0.4, 0.2, 0.1, 0.9, -0.5);
        assert!((x.act_motion(&m) - x.motion_matrix() * m).norm() < 1e-14);
        assert!((x.inv_act_motion(&x.act_motion(&m)) - m).norm() < 1e-14);
        assert!((x.inv_act_force(&x.act_force(&f)) - f).norm() < 1e-14);
        // power is frame invariant: (X m)·(X* f) = m·f
        assert!((x.act_motion(&m).dot(&x.act_force(&f)) - m.dot(&f)).abs() < 1e-14);
        // m ×* f is minus the transpose of m ×: (m × n)·f = −n·(m ×* f)
        let n = V6::new(0.3, -0.2, 0.1, 0.0, 0.4, -0.6);
        assert!((cross_motion(&m, &n).dot(&f) + n.dot(&cross_force(&m, &f))).abs() < 1e-14);
        assert!((x.compose(&x.inverse()).pos).norm() < 1e-15);
    }

    #[test]
    fn structured_inertia_actions_match_dense() {
        let x = x();
        let mut a = M6::zeros();
        for r in 0..6 {
            for c in 0..6 {
                a[(r, c)] = ((r * 7 + c * 3) % 11) as f64 * 0.1 - 0.4;
            }
        }
        let a = a + a.transpose();
        assert!((x.act_sym6(&a) - x.act_inertia(&a)).norm() < 1e-13);
        let ic = Matrix3::new(0.05, 0.001, -0.002, 0.001, 0.04, 0.003, -0.002, 0.003, 0.03);
        let body = Inertia::from_matrix(&inertia_at_com(2.5, &ic));
        let moved = body.transformed(&x);
        assert!((moved.to_matrix() - x.act_inertia(&body.to_matrix())).norm() < 1e-13);
        let twice = moved.transformed(&x);
        assert!((Inertia::from_matrix(&twice.to_matrix()).to_matrix() - twice.to_matrix()).norm() < 1e-15);
        let m = V6::new(0.1, 0.2, -0.3, 0.5, -0.1, 0.7);
        assert!((twice.mul_motion(&m) - twice.to_matrix() * m).norm() < 1e-13);
        let mut sum = moved;
        sum += twice;
        assert!((sum.to_matrix() - moved.to_matrix() - twice.to_matrix()).norm() < 1e-14);
    }
}
