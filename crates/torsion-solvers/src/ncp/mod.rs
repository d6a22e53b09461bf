//! Velocity-level frictional contact by staggered projections (spec 001): the ADMM QP (normal impulses) and
//! QCQP (friction impulses, exact Coulomb disk or a pyramid) with their implicit derivatives.
pub mod admm;
pub mod backward;
pub mod chain;
mod direct;
pub mod exact;
mod fixed_point;
pub mod sets;
pub mod solver;
pub mod staggered;
pub mod tangent;

pub use crate::contact::ContactFrame;
pub use admm::{Admm, AdmmInfo, AdmmOptions, StopRule};
pub use backward::ReducedKkt;
pub use sets::{ConstraintSet, FrictionSet};
pub use solver::{NcpRecord, NcpSimWorkspace};
pub use staggered::{NcpGradient, NcpOptions, NcpReport, NcpResiduals, NcpSolver, NcpWorkspace};
pub use tangent::NcpJacobians;
