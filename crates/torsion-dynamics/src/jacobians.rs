//! Kinematic Jacobians (after `forward_kinematics`): the world-aligned Jacobian of a body frame (its COM
//! frame) and of a point fixed in a body, nv columns in tangent coordinates (q ⊕ δ of `joints::integrate`).
//! Also M⁻¹ products without forming M⁻¹ (ABA with zero velocity and no gravity).
use crate::data::{DynData, DynError, DynModel};
use crate::fk::forward_kinematics;
use nalgebra::DMatrix;
use torsion_math::spatial::{ang, lin};
use torsion_math::{Scalar, Vec3};

/// Rows 0..3: angular velocity, rows 3..6: linear velocity of the point `p_local` (body frame) of `body`,
/// both in world axes (Pinocchio's LOCAL_WORLD_ALIGNED).
pub fn point_jacobian<T: Scalar>(
    dm: &DynModel<T>,
    q: &[T],
    body: usize,
    p_local: &Vec3<T>,
    d: &mut DynData<T>,
) -> Result<DMatrix<T>, DynError> {
    dm.check_q(q)?;
    if body >= dm.nb {
        return Err(DynError::Shape { what: "body index", got: body, expected: dm.nb });
    }
    forward_kinematics(dm, q, d);
    let p = d.o_m[body].act_point(p_local);
    let mut jac = DMatrix::zeros(6, dm.nv);
    let mut body_joint = vec![usize::MAX; dm.nb];
    for j in 0..dm.parent.len() {
        body_joint[dm.child[j]] = j;
    }
    let mut b = body;
    while body_joint[b] != usize::MAX {
        let j = body_joint[b];
        let c = dm.child[j];
        for i in 0..dm.joint[j].nv {
            // the joint's motion in world coordinates (about the world origin), then at the point
            let m = d.o_m[c].act_motion(&dm.joint[j].s[i]);
            let (w, v0) = (ang(&m), lin(&m));
            let vp = v0 + w.cross(&p);
            for r in 0..3 {
                jac[(r, dm.v_start[j] + i)] = w[r];
                jac[(3 + r, dm.v_start[j] + i)] = vp[r];
            }
        }
        b = dm.parent[j];
    }
    Ok(jac)
}

/// World-aligned Jacobian of a body's frame origin (its COM).
pub fn body_jacobian<T: Scalar>(
    dm: &DynModel<T>,
    q: &[T],
    body: usize,
    d: &mut DynData<T>,
) -> Result<DMatrix<T>, DynError> {
    point_jacobian(dm, q, body, &Vec3::zeros(), d)
}

/// x = M(q)⁻¹ y without forming M or M⁻¹: ABA with zero velocity, zero gravity, τ = y.
pub fn minv_product<T: Scalar>(dm: &DynModel<T>, q: &[T], y: &[T], d: &mut DynData<T>) -> Result<Vec<T>, DynError> {
    let mut no_g = dm.clone();
    no_g.gravity = Vec3::zeros();
    let z = vec![T::zero(); dm.nv];
    crate::aba(&no_g, q, &z, y, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::joints::integrate;
    use torsion_math::{Mat3, Quat};
    use torsion_model::builder::{JointDesc, ModelBuilder};
    use torsion_model::JointType;

    /// Point Jacobian against central differences of forward kinematics on the manifold; M⁻¹ product against
    /// a dense solve with CRBA's M.
    #[test]
    fn point_jacobian_matches_finite_differences_and_minv_matches_solve() {
        let mut b = ModelBuilder::new("chain").gravity(Vec3::new(0.0, 0.0, -9.81));
        let w = b.add_fixed_body("world", Vec3::zeros(), Quat::identity());
        let l1 = b.add_body("l1", 2.0, Mat3::new(0.05, 0.001, 0.0, 0.001, 0.04, 0.002, 0.0, 0.002, 0.03));
        let l2 = b.add_body("l2", 1.0, Mat3::new(0.02, 0.0, 0.001, 0.0, 0.03, 0.0, 0.001, 0.0, 0.025));
        let l3 = b.add_body("l3", 0.5, Mat3::new(0.01, 0.0, 0.0, 0.0, 0.012, 0.0, 0.0, 0.0, 0.011));
        let mut f = JointDesc::hinge("free", w, l1, Vec3::zeros(), Vec3::new(0.0, 0.0, -0.1), Vec3::z());
        f.kind = JointType::Free;
        b.add_joint(f);
        let mut ball = JointDesc::hinge("ball", l1, l2, Vec3::new(0.2, 0.0, 0.0), Vec3::new(-0.1, 0.0, 0.0), Vec3::z());
        ball.kind = JointType::Ball;
        b.add_joint(ball);
        b.add_joint(JointDesc::hinge("h", l2, l3, Vec3::new(0.1, 0.0, 0.0), Vec3::new(-0.05, 0.0, 0.0), Vec3::y()));
        let m = b.build().unwrap();
        let dm: DynModel<f64> = DynModel::from_model(&m).unwrap();
        let mut d = DynData::new(&dm);
        let mut q = vec![0.1, -0.2, 0.3];
        q.extend_from_slice(&Quat::new(0.9, 0.1, -0.3, 0.2).normalize().to_array());
        q.extend_from_slice(&Quat::new(0.8, -0.2, 0.4, 0.3).normalize().to_array());
        q.push(0.7);
        let p = Vec3::new(0.03, -0.02, 0.05);
        let jac = point_jacobian(&dm, &q, 3, &p, &mut d).unwrap();
        let h = 1e-6;
        let mut worst: f64 = 0.0;
        for k in 0..dm.nv {
            let mut e = vec![0.0; dm.nv];
            e[k] = h;
            let qp = integrate(&dm, &q, &e);
            e[k] = -h;
            let qm = integrate(&dm, &q, &e);
            let pos = |qq: &[f64], d: &mut DynData<f64>| {
                forward_kinematics(&dm, qq, d);
                d.o_m[3].act_point(&p)
            };
            let fd = (pos(&qp, &mut d) - pos(&qm, &mut d)) / (2.0 * h);
            for r in 0..3 {
                worst = worst.max((fd[r] - jac[(3 + r, k)]).abs());
            }
        }
        assert!(worst < 1e-8, "point Jacobian vs FD: {worst:e}");
        let y: Vec<f64> = (0..dm.nv).map(|i| (i as f64 * 0.37).sin()).collect();
        let x = minv_product(&dm, &q, &y, &mut d).unwrap();
        let mm = crate::crba(&dm, &q, &mut d).unwrap();
        let xs = mm.lu().solve(&nalgebra::DVector::from_vec(y)).unwrap();
        assert!((nalgebra::DVector::from_vec(x) - xs).norm() < 1e-10);
    }
}
