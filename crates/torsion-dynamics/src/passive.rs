//! Passive forces (MuJoCo's qfrc_passive): viscous joint damping −d v, the joint spring −k (q − springref) of
//! hinge and slide joints, and the inertia-box fluid forces (`fluid.rs`) when the model has a fluid density or
//! viscosity. Ball / free joint springs are not supported yet.
use crate::data::DynError;
use torsion_math::Scalar;
use torsion_model::{JointType, Model};

/// The passive generalized forces (nv) at (q, v); builds a dynamics model only when the fluid forces need one.
pub fn passive_forces<T: Scalar>(model: &Model, q: &[T], v: &[T]) -> Result<Vec<T>, DynError> {
    if crate::fluid::FluidBodies::new(model).on() {
        let dm: crate::DynModel<T> = crate::DynModel::from_model(model)?;
        let mut d = crate::DynData::new(&dm);
        passive_forces_in(model, &dm, &mut d, q, v)
    } else {
        joint_passive(model, q, v)
    }
}

/// [`passive_forces`] with the caller's dynamics model and scratch (a stepper's: its θ, or its dual θ for a
/// tangent pass), so the fluid forces neither rebuild a model nor lose θ's tangent. `d` is used as scratch.
pub fn passive_forces_in<T: Scalar>(
    model: &Model,
    dm: &crate::DynModel<T>,
    d: &mut crate::DynData<T>,
    q: &[T],
    v: &[T],
) -> Result<Vec<T>, DynError> {
    let mut f = joint_passive(model, q, v)?;
    let fluid = crate::fluid::FluidBodies::new(model);
    if fluid.on() {
        crate::fluid::fluid_forces_into(&fluid, dm, q, v, d, &mut f)?;
    }
    Ok(f)
}

/// Joint damping and hinge / slide springs.
fn joint_passive<T: Scalar>(model: &Model, q: &[T], v: &[T]) -> Result<Vec<T>, DynError> {
    let (qs, vs) = (model.joint_q_start(), model.joint_v_start());
    let mut f = vec![T::zero(); model.nv()];
    for j in 0..model.joint_count() {
        let t = model.joint_type[j];
        for i in 0..t.dof() {
            f[vs[j] + i] -= v[vs[j] + i] * T::c(model.joint_damping[j]);
        }
        let k = model.joint_stiffness[j];
        if k != 0.0 {
            match t {
                JointType::Revolute | JointType::Prismatic => {
                    f[vs[j]] -= (q[qs[j]] - T::c(model.joint_springref[j])) * T::c(k);
                }
                _ => {
                    return Err(DynError::Unsupported(format!(
                        "joint '{}': stiffness on {t:?} joints is not supported yet",
                        model.joint_name[j]
                    )))
                }
            }
        }
    }
    Ok(f)
}
