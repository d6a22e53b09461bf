//! torsion-opt: small optimisers shared by experiments, the system-identification toolkit (`sysid`) and iLQR /
//! sample-based iLQG on any solver (`ilqr`)
//! (design.md §8: small enough to write; argmin pins an older nalgebra).
#![allow(clippy::needless_range_loop)]
pub mod adam;
pub mod gauss_newton;
pub mod mlp;
pub mod sysid;
pub use adam::Adam;
pub use gauss_newton::{gauss_newton, GnOptions, GnReport};
pub use mlp::{Activation, Mlp, MlpWork};
pub use sysid::arm::{ArmProblem, BaseParams, Gram, Inertial, Recording, ScalarSpec, SysidError, SysidFit};
pub use sysid::shooting::{ShootingFit, ShootingOptions, ShootingProblem, Trajectory};
pub use sysid::{levenberg_marquardt, levenberg_marquardt_normal, LmOptions, LmReport, Param};
pub mod ilqr;
pub use ilqr::sampled::{SampledOptions, SampledReport};
pub use ilqr::{Cost, Dynamics, Ilqr, IlqrError, IlqrOptions, IlqrReport, IlqrStop, QuadraticTracking, SolverDynamics};
