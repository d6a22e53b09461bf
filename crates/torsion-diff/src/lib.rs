//! torsion-diff: machinery shared by every solver (design.md §3): `rollout` keeps one state per step,
//! `rollout_vjp` runs the adjoint backwards recomputing each step's record (memory O(T × state)) or, after
//! `rollout_tape`, `tape_vjp` reads the forward pass's records,
//! `trajectory_jacobians` gives (A, B, C) along a trajectory and `forward_sensitivities` chains them, and `gradcheck` compares derivatives with
//! central finite differences (on the manifold for quaternions). No physics lives here.
pub mod adjoint;
pub mod gradcheck;
pub mod jacobians;
pub mod rollout;

pub use adjoint::{rollout_tape, rollout_vjp, tape_vjp, RolloutGrad, Tape};
pub use gradcheck::{fd_gradient, fd_jacobian, gradcheck, rel_err, GradCheck};
pub use jacobians::{forward_sensitivities, step_jacobians_fd, trajectory_jacobians};
pub use rollout::{cable_controls, rollout, rollout_each, set_control_row};

/// The unit tests' model: a two-link arm under gravity (links 0.8 m and 0.5 m, 1 kg, Δt 0.01 s).
#[cfg(test)]
pub(crate) fn test_arm() -> torsion_model::Model {
    torsion_model::builder::two_link_arm(0.8, 0.5, 1.0, torsion_math::Vec3::new(0.0, -9.8, 0.0), 0.01).unwrap()
}

/// [`test_arm`] with XPBD and its maximal-coordinate state at q = (0.4, −0.7).
#[cfg(test)]
pub(crate) fn test_arm_xpbd() -> (torsion_model::Model, torsion_solvers::XpbdSolver, torsion_model::MaximalState) {
    let m = test_arm();
    let s0 = m.state_at(&[0.4, -0.7]).unwrap();
    (m, torsion_solvers::XpbdSolver::default(), s0)
}
