//! Derivatives w.r.t. the 10 inertial parameters of every body. Inverse dynamics is linear in them
//! (Atkeson, An & Hollerbach 1986): τ = Y(q, v, a) π + armature·a + damping·v, with per body
//! π_b = (m, h_x, h_y, h_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz): mass, first moment h = m c (c: the COM in the
//! body frame) and the rotational inertia about the body frame's origin — Pinocchio's `dynamicParameters` order.
//! So ∂RNEA/∂π = Y exactly, and differentiating M q̈ + c = τ gives ∂ABA/∂π = −M⁻¹ Y(q, v, q̈).
//! Moving a body's COM (h ≠ 0) is a change of π like any other: [`set_inertial_parameters`] writes π into the
//! model view, and every algorithm of this crate takes general spatial inertias.
use crate::aba::aba_into;
use crate::crba::crba_into;
use crate::data::{DynData, DynError, DynModel};
use crate::fk::local_kinematics;
use crate::rnea::rnea_forward;
use nalgebra::{DMatrix, Matrix3, Vector3};
use torsion_math::linalg::{cholesky_in_place, inverse_from_cholesky};
use torsion_math::spatial::{cross_force, Inertia, V6};
use torsion_math::Scalar;

/// Number of inertial parameters per body.
pub const N_INERTIAL: usize = 10;

/// Names of the 10 entries of π_b, in order.
pub const INERTIAL_NAMES: [&str; N_INERTIAL] = ["m", "hx", "hy", "hz", "ixx", "ixy", "iyy", "ixz", "iyz", "izz"];

fn to_params<T: Scalar>(y: &Inertia<T>) -> [T; N_INERTIAL] {
    let i = &y.i;
    [y.m, y.h[0], y.h[1], y.h[2], i[(0, 0)], i[(0, 1)], i[(1, 1)], i[(0, 2)], i[(1, 2)], i[(2, 2)]]
}

fn from_params<T: Scalar>(p: &[T]) -> Inertia<T> {
    Inertia {
        m: p[0],
        h: Vector3::new(p[1], p[2], p[3]),
        i: Matrix3::new(p[4], p[5], p[7], p[5], p[6], p[8], p[7], p[8], p[9]),
    }
}

/// π (10 × number of bodies, body order of the model) of the model view.
pub fn inertial_parameters<T: Scalar>(dm: &DynModel<T>) -> Vec<T> {
    dm.inertia.iter().flat_map(|m6| to_params(&Inertia::from_matrix(m6))).collect()
}

/// Write π (as [`inertial_parameters`] orders it) into the model view's spatial inertias. Errors on a wrong
/// length; physical consistency (m > 0, positive-definite inertia at the COM) is the caller's choice.
pub fn set_inertial_parameters<T: Scalar>(dm: &mut DynModel<T>, pi: &[T]) -> Result<(), DynError> {
    if pi.len() != N_INERTIAL * dm.nb {
        return Err(DynError::Shape { what: "inertial parameters", got: pi.len(), expected: N_INERTIAL * dm.nb });
    }
    for (m6, p) in dm.inertia.iter_mut().zip(pi.chunks_exact(N_INERTIAL)) {
        *m6 = from_params(p).to_matrix();
    }
    Ok(())
}

/// The joint-torque regressor Y(q, v, a) (nv × 10 nb) into `y`; no heap allocation. Column block b holds the
/// body forces I(e_i) a_b + v_b ×* I(e_i) v_b of each unit parameter (the same `Inertia::mul_motion` RNEA uses),
/// carried to every joint above body b and projected on its motion subspace.
pub fn joint_torque_regressor_into<T: Scalar>(
    dm: &DynModel<T>,
    q: &[T],
    v: &[T],
    a: &[T],
    d: &mut DynData<T>,
    y: &mut DMatrix<T>,
) -> Result<(), DynError> {
    dm.check_q(q)?;
    dm.check_v("v", v)?;
    dm.check_v("a", a)?;
    if y.nrows() != dm.nv || y.ncols() != N_INERTIAL * dm.nb {
        return Err(DynError::Shape { what: "regressor (output)", got: y.len(), expected: dm.nv * N_INERTIAL * dm.nb });
    }
    local_kinematics(dm, q, d);
    rnea_forward(dm, v, a, d, true);
    for j in 0..dm.parent.len() {
        d.body_joint[dm.child[j]] = j;
    }
    y.fill(T::zero());
    let mut unit = [T::zero(); N_INERTIAL];
    for jb in 0..dm.parent.len() {
        let b = dm.child[jb];
        let (vb, ab) = (d.vel[b], d.acc[b]);
        for i in 0..N_INERTIAL {
            unit[i] = T::one();
            let yi = from_params(&unit);
            unit[i] = T::zero();
            // the force this parameter contributes, carried up the tree (spec: Featherstone 2008 §5.3 backward pass)
            let mut f: V6<T> = yi.mul_motion(&ab) + cross_force(&vb, &yi.mul_motion(&vb));
            let col = N_INERTIAL * b + i;
            let mut j = jb;
            loop {
                let jm = &dm.joint[j];
                for k in 0..jm.nv {
                    y[(dm.v_start[j] + k, col)] = jm.s[k].dot(&f);
                }
                let p = dm.parent[j];
                if dm.root_pose[p].is_some() {
                    break;
                }
                f = d.x_pc[j].act_force(&f);
                j = d.body_joint[p];
            }
        }
    }
    Ok(())
}

/// Y(q, v, a) = ∂RNEA/∂π (allocating convenience wrapper).
pub fn joint_torque_regressor<T: Scalar>(
    dm: &DynModel<T>,
    q: &[T],
    v: &[T],
    a: &[T],
    d: &mut DynData<T>,
) -> Result<DMatrix<T>, DynError> {
    let mut y = DMatrix::zeros(dm.nv, N_INERTIAL * dm.nb);
    joint_torque_regressor_into(dm, q, v, a, d, &mut y)?;
    Ok(y)
}

/// ∂q̈/∂π = −M⁻¹ Y(q, v, q̈) at q̈ = ABA(q, v, τ) (nv × 10 nb); M includes the armature.
pub fn aba_inertial_derivatives<T: Scalar>(
    dm: &DynModel<T>,
    q: &[T],
    v: &[T],
    tau: &[T],
    d: &mut DynData<T>,
) -> Result<DMatrix<T>, DynError> {
    let nv = dm.nv;
    let mut qdd = vec![T::zero(); nv];
    aba_into(dm, q, v, tau, d, &mut qdd)?;
    let y = joint_torque_regressor(dm, q, v, &qdd, d)?;
    let mut m = DMatrix::zeros(nv, nv);
    crba_into(dm, q, d, &mut m)?;
    if !cholesky_in_place(&mut m) {
        return Err(DynError::Unsupported("the joint-space inertia matrix is not positive definite".into()));
    }
    let mut minv = DMatrix::zeros(nv, nv);
    inverse_from_cholesky(&mut m, &mut minv);
    Ok(-(minv * y))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rnea_derivatives::test_models::{point, tree, with_armature};
    use crate::{aba, rnea};
    use torsion_model::Model;

    /// A model view with every body's COM moved off its frame origin (h ≠ 0), so that all 10 parameters
    /// matter, and joint damping on.
    fn shifted(m: &Model) -> DynModel<f64> {
        let mut dm = with_armature(DynModel::<f64>::from_model(m).unwrap());
        for (k, d) in dm.damping.iter_mut().enumerate() {
            *d = 0.1 + 0.05 * k as f64;
        }
        let mut pi = inertial_parameters(&dm);
        for (b, p) in pi.chunks_exact_mut(N_INERTIAL).enumerate() {
            let c = Vector3::new(0.03, -0.02 * b as f64, 0.05);
            let y = Inertia { m: p[0], h: Vector3::zeros(), i: from_params(p).i };
            // parallel-axis: the COM at c in the body frame
            let moved = y.transformed(&torsion_math::spatial::Se3::new(Matrix3::identity(), c));
            p.copy_from_slice(&to_params(&moved));
        }
        set_inertial_parameters(&mut dm, &pi).unwrap();
        dm
    }

    fn cases() -> Vec<(&'static str, Model)> {
        vec![("tree", tree()), ("baxter", torsion_model::io::robots::baxter_left_arm().expect("example-robot-data"))]
    }

    /// τ = Y π + armature a + damping v (linearity), and π round-trips through the model view.
    #[test]
    fn regressor_reproduces_rnea() {
        for (name, m) in cases() {
            let dm = shifted(&m);
            let mut d = DynData::new(&dm);
            let pi = inertial_parameters(&dm);
            let mut dm2 = dm.clone();
            set_inertial_parameters(&mut dm2, &pi).unwrap();
            assert!(dm2.inertia.iter().zip(&dm.inertia).all(|(a, b)| (a - b).amax() == 0.0));
            for seed in 0..3 {
                let (q, v, a) = point(&m, seed);
                let tau = rnea(&dm, &q, &v, &a, &mut d).unwrap();
                let y = joint_torque_regressor(&dm, &q, &v, &a, &mut d).unwrap();
                let yp = &y * nalgebra::DVector::from_column_slice(&pi);
                let mut err: f64 = 0.0;
                for k in 0..dm.nv {
                    let pred = yp[k] + dm.armature[k] * a[k] + dm.damping[k] * v[k];
                    err = err.max((pred - tau[k]).abs() / (1.0 + tau[k].abs()));
                }
                eprintln!("{name} seed {seed}: |Yπ + A a + D v − RNEA| {err:.1e}");
                assert!(err < 1e-12, "{name}: {err:e}");
            }
        }
    }

    /// ∂RNEA/∂π = Y and ∂ABA/∂π = −M⁻¹ Y(q, v, q̈) against central differences of RNEA / ABA in π.
    #[test]
    fn inertial_derivatives_match_central_differences() {
        for (name, m) in cases() {
            let dm = shifted(&m);
            let mut d = DynData::new(&dm);
            let pi = inertial_parameters(&dm);
            let (q, v, w) = point(&m, 7);
            let y = joint_torque_regressor(&dm, &q, &v, &w, &mut d).unwrap();
            let dq = aba_inertial_derivatives(&dm, &q, &v, &w, &mut d).unwrap();
            for (which, an) in [("RNEA", &y), ("ABA", &dq)] {
                let mut fd = DMatrix::zeros(dm.nv, pi.len());
                for i in 0..pi.len() {
                    let h = 1e-6 * pi[i].abs().max(1e-2);
                    let mut eval = |s: f64| {
                        let mut p = pi.clone();
                        p[i] += s;
                        let mut dmp = dm.clone();
                        set_inertial_parameters(&mut dmp, &p).unwrap();
                        if which == "ABA" {
                            aba(&dmp, &q, &v, &w, &mut d).unwrap()
                        } else {
                            rnea(&dmp, &q, &v, &w, &mut d).unwrap()
                        }
                    };
                    let (fp, fm) = (eval(h), eval(-h));
                    for k in 0..dm.nv {
                        fd[(k, i)] = (fp[k] - fm[k]) / (2.0 * h);
                    }
                }
                // normwise relative error (docs/gradients.md convention)
                let err = (an - &fd).amax() / fd.amax();
                eprintln!("{name}: ∂{which}/∂π ({} parameters) vs FD {err:.1e}", pi.len());
                assert!(err < 1e-6, "{name}: ∂{which}/∂π vs FD {err:e}");
            }
        }
    }

    #[test]
    fn wrong_lengths_are_errors() {
        let m = tree();
        let mut dm = DynModel::<f64>::from_model(&m).unwrap();
        assert!(set_inertial_parameters(&mut dm, &[1.0; 3]).is_err());
        let mut d = DynData::new(&dm);
        let (q, v, a) = point(&m, 0);
        let mut y = DMatrix::zeros(dm.nv, 3);
        assert!(joint_torque_regressor_into(&dm, &q, &v, &a, &mut d, &mut y).is_err());
        assert!(joint_torque_regressor(&dm, &q[..1], &v, &a, &mut d).is_err());
    }
}
