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

#[cfg(test)]
mod tests {
    use super::*;
    use torsion_diff::gradcheck;
    use torsion_math::quat::grad_ambient_to_tangent;

    #[test]
    fn predict_velocity_and_torque_vjps_match_central_differences() {
        let (x, q) = (Vec3::new(0.1, 0.2, 0.3), Quat::from_rpy(0.4, -0.3, 0.2));
        let (v, w, tau) = (Vec3::new(0.5, -0.2, 0.1), Vec3::new(1.0, -2.0, 0.5), Vec3::new(0.3, 0.1, -0.2));
        let i = Mat3::new(0.05, 0.001, 0.002, 0.001, 0.04, -0.001, 0.002, -0.001, 0.03);
        let ii = i.try_inverse().unwrap();
        let g = Vec3::new(0.0, 0.0, -9.8);
        let (gx, gq) = (Vec3::new(0.3, -0.5, 0.2), Quat::new(0.1, -0.4, 0.3, 0.6));
        let pg = predict_vjp(&q, &w, &tau, &i, &ii, 0.01, &gx, &gq);
        let mut an = vec![];
        for a in [pg.x, grad_ambient_to_tangent(&q, &pg.q), pg.v, pg.w, pg.tau] {
            an.extend_from_slice(a.as_slice());
        }
        an.extend_from_slice(pg.inertia.as_slice());
        an.extend_from_slice(pg.inv_inertia.as_slice());
        let c = gradcheck(
            |d| {
                let v3 = |o: usize| Vec3::new(d[o], d[o + 1], d[o + 2]);
                let (xb, qb) = predict(
                    &(x + v3(0)),
                    &q.retract(&v3(3)),
                    &(v + v3(6)),
                    &(w + v3(9)),
                    &(tau + v3(12)),
                    &(i + Mat3::from_column_slice(&d[15..24])),
                    &(ii + Mat3::from_column_slice(&d[24..33])),
                    &g,
                    0.01,
                );
                xb.dot(&gx) + qb.dot(&gq)
            },
            &an,
            1e-7,
        );
        assert!(c.max_rel_err < 1e-7, "predict VJP {:e} at {}", c.max_rel_err, c.worst_index);

        // velocity update
        let qb = q.retract(&Vec3::new(0.01, -0.02, 0.015));
        let (gv, gw) = (Vec3::new(0.2, 0.1, -0.3), Vec3::new(-0.5, 0.4, 0.1));
        let (gx0, gq0, gxb, gqb) = velocity_update_vjp(&q, &qb, 0.01, &gv, &gw);
        let mut an = vec![];
        for a in [gx0, grad_ambient_to_tangent(&q, &gq0), gxb, grad_ambient_to_tangent(&qb, &gqb)] {
            an.extend_from_slice(a.as_slice());
        }
        let c = gradcheck(
            |d| {
                let v3 = |o: usize| Vec3::new(d[o], d[o + 1], d[o + 2]);
                let (vv, ww) =
                    velocity_update(&(x + v3(0)), &q.retract(&v3(3)), &(x + v3(6)), &qb.retract(&v3(9)), 0.01);
                vv.dot(&gv) + ww.dot(&gw)
            },
            &an,
            1e-8,
        );
        assert!(c.max_rel_err < 1e-6, "velocity update VJP {:e}", c.max_rel_err);

        // joint torque map
        let b = Vec3::new(0.0, 0.3, 1.0).normalize();
        let (gc, gp) = (Vec3::new(0.3, -0.1, 0.2), Vec3::new(0.1, 0.4, -0.2));
        let (gu, gqp) = joint_torque_vjp(&q, &b, 1.7, &gc, &gp);
        let mut an = vec![gu];
        an.extend_from_slice(grad_ambient_to_tangent(&q, &gqp).as_slice());
        let c = gradcheck(
            |d| {
                let e = joint_torque_axis(&q.retract(&Vec3::new(d[1], d[2], d[3])), &b) * (1.7 + d[0]);
                e.dot(&gc) - e.dot(&gp)
            },
            &an,
            1e-7,
        );
        assert!(c.max_rel_err < 1e-7, "torque map VJP {:e}", c.max_rel_err);
    }
}
