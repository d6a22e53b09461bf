#![allow(clippy::too_many_arguments, clippy::needless_range_loop)]
//! torsion-solvers: the [`Solver`] / [`DiffSolver`] traits (design.md §3) and the steppers.
pub mod contact;
pub mod featherstone;
pub mod generalized;
pub mod integrators;
pub mod joint_friction;
pub mod lcp;
pub mod ncp;
pub mod solver;
pub mod xpbd;

pub use featherstone::{FeatherstoneOptions, FeatherstoneSolver, StepPoint};
pub use lcp::{LcpOptions, LcpSolver, PositionUpdate};
pub use solver::{DiffSolver, Solver, SolverError, StepInfo, StepJacobians};
pub use torsion_model::{ContactWarmStart, GenState, Integrator, MaximalState, StateSpace, WarmImpulse};
pub use xpbd::{Ordering, XpbdOptions, XpbdSolver};
