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
    use crate::derivatives::tangent_step_pair;

    /// Point Jacobian against central differences of forward kinematics on the manifold; M⁻¹ product against
    /// a dense solve with CRBA's M.
    #[test]
    fn point_jacobian_matches_finite_differences_and_minv_matches_solve() {
        let m = torsion_model::builder::floating_tree();
        let dm: DynModel<f64> = DynModel::from_model(&m).unwrap();
        let mut d = DynData::new(&dm);
        let q = torsion_model::builder::example_configuration(&m, 3);
        let p = Vec3::new(0.03, -0.02, 0.05);
        let jac = point_jacobian(&dm, &q, 3, &p, &mut d).unwrap();
        let h = 1e-6;
        let mut worst: f64 = 0.0;
        for k in 0..dm.nv {
            let (qp, qm) = tangent_step_pair(&dm, &q, k, h);
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
