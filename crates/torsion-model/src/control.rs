//! Per-step inputs.
use torsion_math::Scalar;

/// Inputs for one step: one torque (hinge, N·m) or force (prismatic, N) per joint, in joint order.
/// Fixed and ball joints ignore their entry.
#[derive(Clone, Debug, PartialEq)]
pub struct Control<T: Scalar = f64> {
    /// shape (joint_count,), N·m or N
    pub joint_torque: Vec<T>,
}

impl<T: Scalar> Control<T> {
    pub fn zeros(joint_count: usize) -> Self {
        Self { joint_torque: vec![T::zero(); joint_count] }
    }
    pub fn from_torques(t: &[T]) -> Self {
        Self { joint_torque: t.to_vec() }
    }
}
