//! torsion-model: everything static about a robot ([`Model`]), the dynamic state of the maximal-coordinate
//! family ([`MaximalState`]), per-step inputs ([`Control`]) and the named, flat view of differentiable
//! quantities ([`params`]).
pub mod builder;
pub mod control;
pub mod error;
pub mod io;
pub mod model;
pub mod params;
pub mod state;

pub use control::Control;
pub use error::ModelError;
pub use model::{JointSpring, JointType, Model};
pub use params::{ParamKind, ParamSelection, ParamTable};
pub use state::MaximalState;
