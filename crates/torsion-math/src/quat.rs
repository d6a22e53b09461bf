//! Unit quaternions q = (w, v) with the Hamilton product, rotating local → world (design.md §1), and the
//! left (world-frame) perturbation q ⊕ δ = Exp(δ) ⊗ q of spec 000 §3.0.
//!
//! Each kernel is generic over [`Scalar`]; its reverse-mode adjoint `*_vjp` is right beside it, and both are
//! checked against central finite differences in the tests at the bottom of this file.
use crate::scalar::Scalar;
use nalgebra::{Matrix3, Vector3};

/// Quaternion (w, x, y, z) stored as scalar part `w` and vector part `v`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Quat<T: Scalar = f64> {
    pub w: T,
    pub v: Vector3<T>,
}

impl<T: Scalar> Default for Quat<T> {
    fn default() -> Self {
        Self::identity()
    }
}

impl<T: Scalar> Quat<T> {
    #[inline(always)]
    pub fn new(w: T, x: T, y: T, z: T) -> Self {
        Self { w, v: Vector3::new(x, y, z) }
    }
    #[inline(always)]
    pub fn identity() -> Self {
        Self { w: T::one(), v: Vector3::zeros() }
    }
    #[inline(always)]
    pub fn zero() -> Self {
        Self { w: T::zero(), v: Vector3::zeros() }
    }
    /// Components in (w, x, y, z) order.
    #[inline(always)]
    pub fn to_array(&self) -> [T; 4] {
        [self.w, self.v.x, self.v.y, self.v.z]
    }
    #[inline(always)]
    pub fn from_array(a: [T; 4]) -> Self {
        Self::new(a[0], a[1], a[2], a[3])
    }
    #[inline(always)]
    pub fn conj(&self) -> Self {
        Self { w: self.w, v: -self.v }
    }
    #[inline(always)]
    pub fn dot(&self, o: &Self) -> T {
        self.w * o.w + self.v.dot(&o.v)
    }
    #[inline(always)]
    pub fn norm(&self) -> T {
        self.dot(self).sqrt()
    }
    #[inline(always)]
    pub fn add(&self, o: &Self) -> Self {
        Self { w: self.w + o.w, v: self.v + o.v }
    }
    #[inline(always)]
    pub fn scale(&self, s: T) -> Self {
        Self { w: self.w * s, v: self.v * s }
    }
    /// Hamilton product self ⊗ b.
    #[inline(always)]
    pub fn mul(&self, b: &Self) -> Self {
        Self { w: self.w * b.w - self.v.dot(&b.v), v: b.v * self.w + self.v * b.w + self.v.cross(&b.v) }
    }
    /// R(q) p = p + 2 u × (u × p + w p).
    #[inline(always)]
    pub fn rotate(&self, p: &Vector3<T>) -> Vector3<T> {
        let s = self.v.cross(p) + p * self.w;
        p + self.v.cross(&s) * T::c(2.0)
    }
    /// R(q)ᵀ p = p + 2 u × (u × p − w p).
    #[inline(always)]
    pub fn rotate_inv(&self, p: &Vector3<T>) -> Vector3<T> {
        let s = self.v.cross(p) - p * self.w;
        p + self.v.cross(&s) * T::c(2.0)
    }
    /// Rotation matrix R(q) (local → world) of a unit quaternion.
    #[inline(always)]
    pub fn to_mat(&self) -> Matrix3<T> {
        let (w, x, y, z) = (self.w, self.v.x, self.v.y, self.v.z);
        let two = T::c(2.0);
        let one = T::one();
        Matrix3::new(
            one - two * (y * y + z * z),
            two * (x * y - w * z),
            two * (x * z + w * y),
            two * (x * y + w * z),
            one - two * (x * x + z * z),
            two * (y * z - w * x),
            two * (x * z - w * y),
            two * (y * z + w * x),
            one - two * (x * x + y * y),
        )
    }
    #[inline(always)]
    pub fn normalize(&self) -> Self {
        self.scale(T::one() / self.norm())
    }
    /// Spec 000 Eq. 10/17: q ⊕ δ ≈ normalize(q + ½ [0, δ] ⊗ q).
    #[inline(always)]
    pub fn apply_dphi(&self, d: &Vector3<T>) -> Self {
        let half = T::c(0.5);
        let p = Self { w: self.w - d.dot(&self.v) * half, v: self.v + (d * self.w + d.cross(&self.v)) * half };
        p.normalize()
    }
    /// Exact exponential map Exp(δ) (a unit quaternion), guarded at |δ| = 0 (no NaN).
    pub fn exp(d: &Vector3<T>) -> Self {
        let th2 = d.dot(d);
        if th2.re() < 1e-24 {
            // Taylor: sin(θ/2)/θ ≈ 1/2 − θ²/48
            return Self { w: T::one() - th2 * T::c(0.125), v: d * (T::c(0.5) - th2 * T::c(1.0 / 48.0)) };
        }
        let th = th2.sqrt();
        let half = th * T::c(0.5);
        Self { w: half.cos(), v: d * (half.sin() / th) }
    }
    /// Left perturbation on the manifold: Exp(δ) ⊗ q (used by gradcheck and tangent Jacobians).
    pub fn retract(&self, d: &Vector3<T>) -> Self {
        Self::exp(d).mul(self)
    }
    /// Rotation vector of a unit quaternion (Log), shortest arc, guarded at the identity.
    pub fn log(&self) -> Vector3<T> {
        let (w, v) = if self.w.re() < 0.0 { (-self.w, -self.v) } else { (self.w, self.v) };
        let s = v.norm();
        if s.re() < 1e-12 {
            return v * T::c(2.0);
        }
        v * (T::c(2.0) * s.atan2(w) / s)
    }
    /// Quaternion of a rotation matrix (Shepperd's method), w ≥ 0.
    pub fn from_mat(r: &Matrix3<T>) -> Self {
        let tr = r[(0, 0)] + r[(1, 1)] + r[(2, 2)];
        let one = T::one();
        let q = if tr.re() > 0.0 {
            let s = (tr + one).sqrt() * T::c(2.0);
            Self::new(
                s * T::c(0.25),
                (r[(2, 1)] - r[(1, 2)]) / s,
                (r[(0, 2)] - r[(2, 0)]) / s,
                (r[(1, 0)] - r[(0, 1)]) / s,
            )
        } else if r[(0, 0)].re() > r[(1, 1)].re() && r[(0, 0)].re() > r[(2, 2)].re() {
            let s = (one + r[(0, 0)] - r[(1, 1)] - r[(2, 2)]).sqrt() * T::c(2.0);
            Self::new(
                (r[(2, 1)] - r[(1, 2)]) / s,
                s * T::c(0.25),
                (r[(0, 1)] + r[(1, 0)]) / s,
                (r[(0, 2)] + r[(2, 0)]) / s,
            )
        } else if r[(1, 1)].re() > r[(2, 2)].re() {
            let s = (one + r[(1, 1)] - r[(0, 0)] - r[(2, 2)]).sqrt() * T::c(2.0);
            Self::new(
                (r[(0, 2)] - r[(2, 0)]) / s,
                (r[(0, 1)] + r[(1, 0)]) / s,
                s * T::c(0.25),
                (r[(1, 2)] + r[(2, 1)]) / s,
            )
        } else {
            let s = (one + r[(2, 2)] - r[(0, 0)] - r[(1, 1)]).sqrt() * T::c(2.0);
            Self::new(
                (r[(1, 0)] - r[(0, 1)]) / s,
                (r[(0, 2)] + r[(2, 0)]) / s,
                (r[(1, 2)] + r[(2, 1)]) / s,
                s * T::c(0.25),
            )
        };
        let q = q.normalize();
        if q.w.re() < 0.0 {
            q.scale(-one)
        } else {
            q
        }
    }
    /// Quaternion of URDF roll-pitch-yaw (R = Rz(y) Ry(p) Rx(r)).
    pub fn from_rpy(r: T, p: T, y: T) -> Self {
        let h = T::c(0.5);
        let qx = Self::new((r * h).cos(), (r * h).sin(), T::zero(), T::zero());
        let qy = Self::new((p * h).cos(), T::zero(), (p * h).sin(), T::zero());
        let qz = Self::new((y * h).cos(), T::zero(), T::zero(), (y * h).sin());
        qz.mul(&qy).mul(&qx)
    }
    /// Rotation of angle `a` about the unit axis `e`.
    pub fn from_axis_angle(e: &Vector3<T>, a: T) -> Self {
        let h = a * T::c(0.5);
        Self { w: h.cos(), v: e * h.sin() }
    }
}

/// Tangent-space derivative of the left perturbation at δ = 0: d(Exp(δ)⊗q)/dδ applied to δ̇ = ½ [0, δ̇] ⊗ q.
#[inline(always)]
pub fn tangent_push<T: Scalar>(q: &Quat<T>, d: &Vector3<T>) -> Quat<T> {
    Quat { w: T::zero(), v: *d }.mul(q).scale(T::c(0.5))
}

/// The inverse map: a quaternion velocity q̇ (tangent to the unit sphere) → δ with q̇ = ½[0,δ]⊗q,
/// i.e. δ = 2 vec(q̇ ⊗ q⁻¹).
#[inline(always)]
pub fn tangent_pull<T: Scalar>(q: &Quat<T>, qdot: &Quat<T>) -> Vector3<T> {
    qdot.mul(&q.conj()).v * T::c(2.0)
}

/// Ambient gradient ḡ (w.r.t. the 4 components of q) → gradient w.r.t. the left tangent δ: Gᵀ ḡ with
/// G δ = ½ [0, δ] ⊗ q.
#[inline(always)]
pub fn grad_ambient_to_tangent(q: &Quat<f64>, g: &Quat<f64>) -> Vector3<f64> {
    // ½[0,δ]⊗q = ½(−δ·qv, qw δ + δ × qv);  gᵀ(...) = ½ δ·(−gw qv + qw gv + qv × gv)
    (-q.v * g.w + g.v * q.w + q.v.cross(&g.v)) * 0.5
}

// ------------------------------------------------------------------------------------------------------------
// Reverse-mode adjoints (f64), each beside the kernel it differentiates above.

/// Adjoint of `a ⊗ b`: returns (ā, b̄) for output cotangent g.
#[inline(always)]
pub fn mul_vjp(a: &Quat, b: &Quat, g: &Quat) -> (Quat, Quat) {
    let ga = Quat { w: g.w * b.w + g.v.dot(&b.v), v: -b.v * g.w + g.v * b.w + b.v.cross(&g.v) };
    let gb = Quat { w: g.w * a.w + g.v.dot(&a.v), v: -a.v * g.w + g.v * a.w + g.v.cross(&a.v) };
    (ga, gb)
}

/// Adjoint of `q.rotate(p)`: returns (q̄, p̄).
#[inline(always)]
pub fn rotate_vjp(q: &Quat, p: &Vector3<f64>, g: &Vector3<f64>) -> (Quat, Vector3<f64>) {
    let s = q.v.cross(p) + p * q.w;
    let gs = g.cross(&q.v) * 2.0;
    let gu = s.cross(g) * 2.0 + p.cross(&gs);
    let gp = g + gs.cross(&q.v) + gs * q.w;
    (Quat { w: p.dot(&gs), v: gu }, gp)
}

/// Adjoint of `q.rotate_inv(p)`: returns (q̄, p̄).
#[inline(always)]
pub fn rotate_inv_vjp(q: &Quat, p: &Vector3<f64>, g: &Vector3<f64>) -> (Quat, Vector3<f64>) {
    let s = q.v.cross(p) - p * q.w;
    let gs = g.cross(&q.v) * 2.0;
    let gu = s.cross(g) * 2.0 + p.cross(&gs);
    let gp = g + gs.cross(&q.v) - gs * q.w;
    (Quat { w: -p.dot(&gs), v: gu }, gp)
}

/// Adjoint of `p.normalize()`: p̄ = (g − n (n·g)) / |p|.
#[inline(always)]
pub fn normalize_vjp(p: &Quat, g: &Quat) -> Quat {
    let inv = 1.0 / p.norm();
    let n = p.scale(inv);
    let ng = n.dot(g);
    Quat { w: (g.w - n.w * ng) * inv, v: (g.v - n.v * ng) * inv }
}

/// Adjoint of `q.apply_dphi(d)`: returns (q̄, d̄).
#[inline(always)]
pub fn apply_dphi_vjp(q: &Quat, d: &Vector3<f64>, g: &Quat) -> (Quat, Vector3<f64>) {
    let p = Quat { w: q.w - 0.5 * d.dot(&q.v), v: q.v + (d * q.w + d.cross(&q.v)) * 0.5 };
    let gp = normalize_vjp(&p, g);
    let gq = Quat { w: gp.w + 0.5 * d.dot(&gp.v), v: -d * (0.5 * gp.w) + gp.v + gp.v.cross(d) * 0.5 };
    let gd = -q.v * (0.5 * gp.w) + gp.v * (0.5 * q.w) + q.v.cross(&gp.v) * 0.5;
    (gq, gd)
}

/// World-frame inertia-like product R(q) M R(q)ᵀ p (spec 000 §3.0: I_w⁻¹ = R I_l⁻¹ Rᵀ).
#[inline(always)]
pub fn sandwich<T: Scalar>(q: &Quat<T>, m: &Matrix3<T>, p: &Vector3<T>) -> Vector3<T> {
    q.rotate(&(m * q.rotate_inv(p)))
}

/// The same product R M Rᵀ p given R = `q.to_mat()` (an identical polynomial in q, so [`sandwich_vjp`] is its
/// adjoint too). Cheaper where R is shared with rotations of the same body, and shallower on a dependency chain:
/// R is formed from q while other work proceeds, then three matrix–vector products remain.
#[inline(always)]
pub fn sandwich_mat<T: Scalar>(r: &Matrix3<T>, m: &Matrix3<T>, p: &Vector3<T>) -> Vector3<T> {
    r * (m * r.tr_mul(p))
}

/// Adjoint of [`sandwich`]: returns (q̄, M̄, p̄).
#[inline(always)]
pub fn sandwich_vjp(
    q: &Quat,
    m: &Matrix3<f64>,
    p: &Vector3<f64>,
    g: &Vector3<f64>,
) -> (Quat, Matrix3<f64>, Vector3<f64>) {
    let z = q.rotate_inv(p);
    let y = m * z;
    let (gq1, gy) = rotate_vjp(q, &y, g);
    let gm = gy * z.transpose();
    let gz = m.transpose() * gy;
    let (gq2, gp) = rotate_inv_vjp(q, p, &gz);
    (gq1.add(&gq2), gm, gp)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rq(seed: u64) -> Quat {
        let mut s = seed;
        let mut r = || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        };
        Quat::new(r(), r(), r(), r()).normalize()
    }
    fn rv(seed: u64) -> Vector3<f64> {
        let q = rq(seed);
        q.v * 1.3 + Vector3::new(0.1, -0.2, 0.3)
    }
    fn qa(q: &Quat) -> [f64; 4] {
        q.to_array()
    }
    /// central finite-difference gradient of a scalar function of a flat vector
    fn fd_grad(f: &dyn Fn(&[f64]) -> f64, x: &[f64]) -> Vec<f64> {
        let h = 1e-6;
        (0..x.len())
            .map(|i| {
                let mut a = x.to_vec();
                let mut b = x.to_vec();
                a[i] += h;
                b[i] -= h;
                (f(&a) - f(&b)) / (2.0 * h)
            })
            .collect()
    }
    fn close(a: &[f64], b: &[f64]) {
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() <= 1e-7 * (1.0 + y.abs()), "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn rotate_matches_matrix_and_inverse() {
        let q = rq(3);
        let p = rv(4);
        let r = q.to_mat();
        assert!((q.rotate(&p) - r * p).norm() < 1e-14);
        assert!((q.rotate_inv(&p) - r.transpose() * p).norm() < 1e-14);
        assert!((Quat::from_mat(&r).to_mat() - r).norm() < 1e-14);
        let d = rv(5) * 0.3;
        assert!((Quat::exp(&d).mul(&q).log() - (Quat::exp(&d).mul(&q)).log()).norm() < 1e-15);
        assert!((Quat::exp(&d).log() - d).norm() < 1e-14);
    }

    #[test]
    fn matrix_forms_match_the_quaternion_forms() {
        // to_mat and rotate are the same polynomial in (w, x, y, z), unit or not
        let m = Matrix3::new(2.0, 0.1, 0.2, 0.1, 3.0, -0.3, 0.2, -0.3, 1.5);
        for (seed, scale) in [(41, 1.0), (42, 1.7), (43, 0.4)] {
            let q = rq(seed).scale(scale);
            let p = rv(seed + 100);
            let r = q.to_mat();
            assert!((r * p - q.rotate(&p)).norm() < 1e-14 * (1.0 + scale * scale) * p.norm());
            assert!((r.tr_mul(&p) - q.rotate_inv(&p)).norm() < 1e-14 * (1.0 + scale * scale) * p.norm());
            let (a, b) = (sandwich_mat(&r, &m, &p), sandwich(&q, &m, &p));
            assert!((a - b).norm() < 1e-13 * (1.0 + scale.powi(4)) * b.norm(), "{a} vs {b}");
        }
    }

    #[test]
    fn vjps_match_finite_differences() {
        let q = rq(1);
        let p = rv(2);
        let g = rv(7);
        let gq4 = rq(8);
        // rotate: f(q, p) = g · rotate(q, p)
        let f = |x: &[f64]| g.dot(&Quat::new(x[0], x[1], x[2], x[3]).rotate(&Vector3::new(x[4], x[5], x[6])));
        let x = [qa(&q).to_vec(), p.as_slice().to_vec()].concat();
        let (gq, gp) = rotate_vjp(&q, &p, &g);
        close(&[qa(&gq).to_vec(), gp.as_slice().to_vec()].concat(), &fd_grad(&f, &x));
        let f = |x: &[f64]| g.dot(&Quat::new(x[0], x[1], x[2], x[3]).rotate_inv(&Vector3::new(x[4], x[5], x[6])));
        let (gq, gp) = rotate_inv_vjp(&q, &p, &g);
        close(&[qa(&gq).to_vec(), gp.as_slice().to_vec()].concat(), &fd_grad(&f, &x));
        // apply_dphi
        let d = rv(9) * 0.2;
        let f = |x: &[f64]| Quat::new(x[0], x[1], x[2], x[3]).apply_dphi(&Vector3::new(x[4], x[5], x[6])).dot(&gq4);
        let x = [qa(&q).to_vec(), d.as_slice().to_vec()].concat();
        let (gq, gd) = apply_dphi_vjp(&q, &d, &gq4);
        close(&[qa(&gq).to_vec(), gd.as_slice().to_vec()].concat(), &fd_grad(&f, &x));
        // mul
        let b = rq(11);
        let f = |x: &[f64]| Quat::new(x[0], x[1], x[2], x[3]).mul(&Quat::new(x[4], x[5], x[6], x[7])).dot(&gq4);
        let x = [qa(&q).to_vec(), qa(&b).to_vec()].concat();
        let (ga, gb) = mul_vjp(&q, &b, &gq4);
        close(&[qa(&ga).to_vec(), qa(&gb).to_vec()].concat(), &fd_grad(&f, &x));
        // sandwich
        let m = Matrix3::new(2.0, 0.1, 0.2, 0.1, 3.0, -0.3, 0.2, -0.3, 1.5);
        let f = |x: &[f64]| {
            let mm = Matrix3::from_column_slice(&x[7..16]);
            g.dot(&sandwich(&Quat::new(x[0], x[1], x[2], x[3]), &mm, &Vector3::new(x[4], x[5], x[6])))
        };
        let x = [qa(&q).to_vec(), p.as_slice().to_vec(), m.as_slice().to_vec()].concat();
        let (gq, gm, gp) = sandwich_vjp(&q, &m, &p, &g);
        close(&[qa(&gq).to_vec(), gp.as_slice().to_vec(), gm.as_slice().to_vec()].concat(), &fd_grad(&f, &x));
    }

    #[test]
    fn tangent_maps_are_consistent() {
        let q = rq(21);
        let d = rv(22);
        let g = rq(23);
        // d/dε (Exp(ε d) ⊗ q) at 0 == tangent_push; FD check
        let h = 1e-6;
        let a = q.retract(&(d * h));
        let b = q.retract(&(d * -h));
        let fd = a.add(&b.scale(-1.0)).scale(0.5 / h);
        let tp = tangent_push(&q, &d);
        close(&qa(&tp), &qa(&fd));
        assert!((tangent_pull(&q, &tp) - d).norm() < 1e-14);
        // gradient map: g·(G d) == grad_ambient_to_tangent(q, g)·d
        assert!((g.dot(&tp) - grad_ambient_to_tangent(&q, &g).dot(&d)).abs() < 1e-14);
        // no NaN at zero
        assert!(Quat::<f64>::exp(&Vector3::zeros()).w == 1.0);
        assert!(Quat::<f64>::identity().log().norm() == 0.0);
    }

    #[test]
    fn generic_code_runs_on_duals() {
        use num_dual::Dual64;
        let q = rq(31);
        let p = rv(32);
        let g = rv(33);
        // derivative of g·rotate(q, p) w.r.t. p.x by a dual equals the vjp component
        let qd = Quat::new(Dual64::from(q.w), Dual64::from(q.v.x), Dual64::from(q.v.y), Dual64::from(q.v.z));
        let pd = Vector3::new(Dual64::from(p.x).derivative(), Dual64::from(p.y), Dual64::from(p.z));
        let out = qd.rotate(&pd);
        let val = out.x * g.x + out.y * g.y + out.z * g.z;
        let (_, gp) = rotate_vjp(&q, &p, &g);
        assert!((val.eps - gp.x).abs() < 1e-14);
        assert!((val.re() - g.dot(&q.rotate(&p))).abs() < 1e-14);
    }
}
