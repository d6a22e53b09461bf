//! Per-step inputs. Their layout depends on the solver family (issue 13 item 6), see [`ControlLayout`].
use crate::{JointType, Model, ModelError};
use torsion_math::Scalar;

/// How a solver family reads [`Control::joint_torque`] (`DiffSolver::control_dim` gives its length).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControlLayout {
    /// Maximal coordinates (XPBD): one entry per joint, in joint order: the torque about a hinge (N·m) or the
    /// force along a slide (N); entries of ball, free and fixed joints are ignored.
    PerJoint,
    /// Generalized coordinates (Featherstone, contact): one generalized force per DoF, in v order (the
    /// `Model::joint_v_start` offsets): hinge N·m, slide N, ball the torque (3), free the spatial force
    /// [torque; force] (6) — each in the child joint frame, dual to the joint's velocity coordinates.
    PerDof,
}

impl ControlLayout {
    /// Entries a control of this layout has for `model`.
    pub fn dim(self, model: &Model) -> usize {
        match self {
            ControlLayout::PerJoint => model.joint_count(),
            ControlLayout::PerDof => model.nv(),
        }
    }
}

/// Inputs for one step: `joint_torque` in the solver family's [`ControlLayout`] (per joint for XPBD, per DoF
/// for the generalized-coordinate steppers; the two agree for models of hinges and slides only). Convert with
/// [`Control::to_per_dof`] / [`Control::to_per_joint`].
#[derive(Clone, Debug, PartialEq)]
pub struct Control<T: Scalar = f64> {
    /// shape (joint_count,) or (nv,) by the solver's layout; N·m or N
    pub joint_torque: Vec<T>,
    /// MuJoCo `ctrl` of the model's actuators (`Model::cable_actuators`: cable and joint transmissions, nu
    /// entries in file order; spec 003 §3.3), clamped to their `ctrlrange` by the stepper; empty = all zero (and
    /// for models without them). `joint_torque` adds to the actuator forces.
    pub ctrl: Vec<T>,
    /// External wrenches on the bodies (MuJoCo's `xfrc_applied`): per body a force and then a torque, both in the
    /// world frame, applied at the body's COM, 6 entries per body in body order (N, N·m); empty = none. The
    /// generalized-coordinate steppers add Σ_b J_bᵀ w_b to the generalized forces (`torsion_dynamics::external`);
    /// their cotangent is J_b ḡ_u (`generalized::wrench_vjp`). XPBD refuses them.
    pub body_wrench: Vec<T>,
}

impl<T: Scalar> Control<T> {
    pub fn zeros(n: usize) -> Self {
        Self { joint_torque: vec![T::zero(); n], ctrl: vec![], body_wrench: vec![] }
    }
    pub fn from_torques(t: &[T]) -> Self {
        Self { joint_torque: t.to_vec(), ctrl: vec![], body_wrench: vec![] }
    }
    /// Generalized forces and actuator controls.
    pub fn with_ctrl(t: &[T], ctrl: &[T]) -> Self {
        Self { joint_torque: t.to_vec(), ctrl: ctrl.to_vec(), body_wrench: vec![] }
    }
    /// These controls with external body wrenches (6 per body: force, torque; world frame, at the COM).
    pub fn with_body_wrench(mut self, w: &[T]) -> Self {
        self.body_wrench = w.to_vec();
        self
    }
    /// A zero control of `layout` for `model`.
    pub fn zeros_for(model: &Model, layout: ControlLayout) -> Self {
        Self::zeros(layout.dim(model))
    }

    /// Per-joint → per-DoF: each hinge / slide entry goes to its DoF; ball, free and fixed joints (whose per-joint
    /// entry XPBD ignores) get zero generalized force.
    pub fn to_per_dof(&self, model: &Model) -> Result<Self, ModelError> {
        check_len(&self.joint_torque, ControlLayout::PerJoint, model)?;
        let mut out = Self::zeros(model.nv());
        out.ctrl = self.ctrl.clone();
        out.body_wrench = self.body_wrench.clone();
        for (j, vs) in model.joint_v_start().into_iter().enumerate() {
            if let JointType::Revolute | JointType::Prismatic = model.joint_type[j] {
                out.joint_torque[vs] = self.joint_torque[j];
            }
        }
        Ok(out)
    }

    /// Per-DoF → per-joint: each hinge / slide takes its DoF's entry; a ball or free joint has no per-joint
    /// entry to carry a generalized force, so a non-zero one is an error naming the joint (its entry is zero).
    pub fn to_per_joint(&self, model: &Model) -> Result<Self, ModelError> {
        check_len(&self.joint_torque, ControlLayout::PerDof, model)?;
        let mut out = Self::zeros(model.joint_count());
        out.ctrl = self.ctrl.clone();
        out.body_wrench = self.body_wrench.clone();
        for (j, vs) in model.joint_v_start().into_iter().enumerate() {
            let kind = model.joint_type[j];
            match kind {
                JointType::Revolute | JointType::Prismatic => out.joint_torque[j] = self.joint_torque[vs],
                _ => {
                    if self.joint_torque[vs..vs + kind.dof()].iter().any(|x| x.re() != 0.0) {
                        return Err(ModelError::Invalid(format!(
                            "control: joint '{}' is {kind:?} with {} DoFs: a per-joint control cannot carry its \
                             non-zero generalized forces",
                            model.joint_name[j],
                            kind.dof()
                        )));
                    }
                }
            }
        }
        Ok(out)
    }
}

fn check_len<T>(u: &[T], layout: ControlLayout, model: &Model) -> Result<(), ModelError> {
    let n = layout.dim(model);
    if u.len() != n {
        let what = match layout {
            ControlLayout::PerJoint => "one per joint",
            ControlLayout::PerDof => "one per DoF (nv)",
        };
        return Err(ModelError::Invalid(format!("control has {} entries, expected {n} ({what})", u.len())));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::floating_tree;

    /// floating_tree: free (6 DoFs), ball (3), slide, two hinges → per joint [·, ·, 3, 4, 5] ↔ per DoF
    /// [0 × 9, 3, 4, 5].
    #[test]
    fn per_joint_and_per_dof_controls_convert_both_ways() {
        let m = floating_tree();
        assert_eq!((ControlLayout::PerJoint.dim(&m), ControlLayout::PerDof.dim(&m)), (5, 12));
        let u = Control::from_torques(&[1.0, 2.0, 3.0, 4.0, 5.0]);
        let d = u.to_per_dof(&m).unwrap();
        let mut want = vec![0.0; 12];
        want[9..].copy_from_slice(&[3.0, 4.0, 5.0]);
        assert_eq!(d.joint_torque, want);
        // back: the ball and free entries (ignored per joint) come back as zero
        assert_eq!(d.to_per_joint(&m).unwrap().joint_torque, vec![0.0, 0.0, 3.0, 4.0, 5.0]);
        assert_eq!(Control::<f64>::zeros_for(&m, ControlLayout::PerDof).joint_torque.len(), 12);
        // errors: wrong length (naming the layout), a ball torque that a per-joint control cannot hold
        let e = Control::from_torques(&[1.0; 12]).to_per_dof(&m).unwrap_err().to_string();
        assert!(e.contains("12 entries, expected 5 (one per joint)"), "{e}");
        let e = u.to_per_joint(&m).unwrap_err().to_string();
        assert!(e.contains("expected 12 (one per DoF"), "{e}");
        let mut w = want.clone();
        w[7] = 0.5;
        let e = Control::from_torques(&w).to_per_joint(&m).unwrap_err().to_string();
        assert!(e.contains("joint 'ball' is Ball with 3 DoFs"), "{e}");
    }
}
