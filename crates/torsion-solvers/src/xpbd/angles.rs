//! Joint angles from body orientations (spec 000 §3.6, Algorithm 2 in the AD-safe atan2 form):
//! φ = atan2((n_P,w × n_C,w)·b_w, n_P,w·n_C,w), positive = right-hand rotation of the child about b_w.
use torsion_math::quat::rotate_vjp;
use torsion_math::{Quat, Scalar, Vec3};

#[inline(always)]
pub fn hinge_angle_world<T: Scalar>(npw: &Vec3<T>, ncw: &Vec3<T>, bw: &Vec3<T>) -> T {
    npw.cross(ncw).dot(bw).atan2(npw.dot(ncw))
}

#[inline(always)]
pub fn hinge_angle<T: Scalar>(qa: &Quat<T>, qb: &Quat<T>, b: &Vec3<T>, np: &Vec3<T>, nc: &Vec3<T>) -> T {
    hinge_angle_world(&qa.rotate(np), &qb.rotate(nc), &qa.rotate(b))
}

/// Adjoint of [`hinge_angle`]: accumulates φ̄ ∂φ/∂q_A into `gqa` and ∂φ/∂q_B into `gqb`.
/// The atan2 derivative is guarded where both arguments vanish (child reference ∥ axis: never for a hinge).
#[allow(clippy::too_many_arguments)]
pub fn hinge_angle_vjp(
    qa: &Quat,
    qb: &Quat,
    b: &Vec3,
    np: &Vec3,
    nc: &Vec3,
    gphi: f64,
    gqa: &mut Quat,
    gqb: &mut Quat,
) {
    let npw = qa.rotate(np);
    let ncw = qb.rotate(nc);
    let bw = qa.rotate(b);
    let y = npw.cross(&ncw).dot(&bw);
    let x = npw.dot(&ncw);
    let r2 = (x * x + y * y).max(1e-300);
    let (gy, gx) = (gphi * x / r2, -gphi * y / r2);
    let gnp = ncw.cross(&bw) * gy + ncw * gx;
    let gnc = bw.cross(&npw) * gy + npw * gx;
    let gb = npw.cross(&ncw) * gy;
    for (v, gv) in [(np, gnp), (b, gb)] {
        let (gq, _) = rotate_vjp(qa, v, &gv);
        *gqa = gqa.add(&gq);
    }
    let (gq, _) = rotate_vjp(qb, nc, &gnc);
    *gqb = gqb.add(&gq);
}

#[cfg(test)]
mod tests {
    use super::*;
    use torsion_diff::gradcheck;
    use torsion_math::quat::grad_ambient_to_tangent;

    #[test]
    fn hinge_angle_vjp_matches_central_differences() {
        let (qa, qb) = (Quat::from_rpy(0.3, -0.2, 0.5), Quat::from_rpy(0.2, -0.1, 2.5));
        let (b, np, nc) = (Vec3::z(), Vec3::x(), Vec3::x());
        let (mut ga, mut gb) = (Quat::zero(), Quat::zero());
        hinge_angle_vjp(&qa, &qb, &b, &np, &nc, 1.3, &mut ga, &mut gb);
        let mut an = grad_ambient_to_tangent(&qa, &ga).as_slice().to_vec();
        an.extend_from_slice(grad_ambient_to_tangent(&qb, &gb).as_slice());
        let c = gradcheck(
            |d| {
                1.3 * hinge_angle(
                    &qa.retract(&Vec3::new(d[0], d[1], d[2])),
                    &qb.retract(&Vec3::new(d[3], d[4], d[5])),
                    &b,
                    &np,
                    &nc,
                )
            },
            &an,
            1e-7,
        );
        assert!(c.max_rel_err < 1e-7, "{:e}", c.max_rel_err);
    }
}
