//! Spec 000 §3.2 (Algorithm 1 with the fixes) outside the projection loop: joint torques → body torques
//! (§3.8), the symplectic prediction with the gyroscopic term, and the velocity update from positions with the
//! quaternion sign fix. Generic kernels with their adjoints beside them.
use torsion_math::quat::{apply_dphi_vjp, mul_vjp, rotate_vjp, sandwich, sandwich_vjp};
use torsion_math::{Mat3, Quat, Scalar, Vec3};

/// Prediction of one body (Alg. 1 L5–L12, fixed): v̄ = v + h g; x̄ = x + h v̄;
/// ω̄ = ω + h I_w⁻¹(τ − ω × I_w ω) with I_w = R I_l Rᵀ; q̄ = normalize(q + ½ h [0, ω̄] ⊗ q).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn predict<T: Scalar>(
    x: &Vec3<T>,
    q: &Quat<T>,
    v: &Vec3<T>,
    w: &Vec3<T>,
    tau: &Vec3<T>,
    inertia: &Mat3<T>,
    inv_inertia: &Mat3<T>,
    g: &Vec3<T>,
    h: T,
) -> (Vec3<T>, Quat<T>) {
    let vb = v + g * h;
    let xb = x + vb * h;
    let l = sandwich(q, inertia, w);
    let wb = w + sandwich(q, inv_inertia, &(tau - w.cross(&l))) * h;
    (xb, q.apply_dphi(&(wb * h)))
}

/// Cotangents of [`predict`]'s inputs.
pub struct PredictGrad {
    pub x: Vec3,
    pub q: Quat,
    pub v: Vec3,
    pub w: Vec3,
    pub tau: Vec3,
    pub inertia: Mat3,
    pub inv_inertia: Mat3,
}

/// Adjoint of [`predict`] given x̄̄ (gx) and q̄̄ (gq) of the predicted pose.
#[allow(clippy::too_many_arguments)]
pub fn predict_vjp(
    q: &Quat,
    w: &Vec3,
    tau: &Vec3,
    inertia: &Mat3,
    inv_inertia: &Mat3,
    h: f64,
    gx: &Vec3,
    gq: &Quat,
) -> PredictGrad {
    let l = sandwich(q, inertia, w);
    let arg = tau - w.cross(&l);
    let wb = w + sandwich(q, inv_inertia, &arg) * h;
    let (gq0, gdphi) = apply_dphi_vjp(q, &(wb * h), gq);
    let gwb = gdphi * h;
    let (gq1, gii, garg) = sandwich_vjp(q, inv_inertia, &arg, &(gwb * h));
    // arg = τ − ω × l
    let ggyro = -garg;
    let mut gw = gwb + l.cross(&ggyro);
    let gl = ggyro.cross(w);
    let (gq2, gi, gw2) = sandwich_vjp(q, inertia, w, &gl);
    gw += gw2;
    PredictGrad { x: *gx, q: gq0.add(&gq1).add(&gq2), v: gx * h, w: gw, tau: garg, inertia: gi, inv_inertia: gii }
}

/// Velocity update (Alg. 1 L28–L35): v = (x̄ − x)/h; Δq = q̄ ⊗ q⁻¹; ω = ±2 vec(Δq)/h (sign of Re Δq).
#[inline(always)]
pub fn velocity_update<T: Scalar>(x: &Vec3<T>, q: &Quat<T>, xb: &Vec3<T>, qb: &Quat<T>, h: T) -> (Vec3<T>, Vec3<T>) {
    let v = (xb - x) / h;
    let dq = qb.mul(&q.conj());
    let om = dq.v * (T::c(2.0) / h);
    (v, if dq.w.re() < 0.0 { -om } else { om })
}

/// Adjoint of [`velocity_update`]: returns (x̄, q̄, x̄b, q̄b).
pub fn velocity_update_vjp(q: &Quat, qb: &Quat, h: f64, gv: &Vec3, gw: &Vec3) -> (Vec3, Quat, Vec3, Quat) {
    let dq = qb.mul(&q.conj());
    let s = if dq.w < 0.0 { -1.0 } else { 1.0 };
    let gdq = Quat { w: 0.0, v: gw * (s * 2.0 / h) };
    let (gqb, gqc) = mul_vjp(qb, &q.conj(), &gdq);
    (-gv / h, gqc.conj(), gv / h, gqb)
}

/// Joint torque → equal and opposite body torques about the world axis e = R(q_P) b^P (§3.8).
#[inline(always)]
pub fn joint_torque_axis<T: Scalar>(qp: &Quat<T>, b: &Vec3<T>) -> Vec3<T> {
    qp.rotate(b)
}

/// Adjoint of the torque map for one joint: given τ̄_C, τ̄_P (zero if P is fixed), returns (ū, q̄_P).
pub fn joint_torque_vjp(qp: &Quat, b: &Vec3, u: f64, gtau_c: &Vec3, gtau_p: &Vec3) -> (f64, Quat) {
    let e = qp.rotate(b);
    let d = gtau_c - gtau_p;
    let (gq, _) = rotate_vjp(qp, b, &(d * u));
    (e.dot(&d), gq)
}
