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
pub use jacobians::{forward_sensitivities, trajectory_jacobians};
pub use rollout::{cable_controls, rollout, rollout_each, set_control_row};
