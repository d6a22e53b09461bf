//! torsion-model: everything static about a robot ([`Model`]), the dynamic state of the maximal-coordinate
//! family ([`MaximalState`]), per-step inputs ([`Control`]) and the named, flat view of differentiable
//! quantities ([`params`]); shapes ([`shape`]) and parsed-but-unused elements ([`extras`]).
pub mod builder;
pub mod control;
pub mod error;
pub mod extras;
pub mod io;
pub mod model;
pub mod params;
pub mod shape;
pub mod state;

pub use control::Control;
pub use error::ModelError;
pub use extras::{Actuator, ActuatorTarget, ModelExtras, Site, Tendon, TendonKind};
pub use model::{JointSpring, JointType, Model};
pub use params::{ParamKind, ParamSelection, ParamTable};
pub use shape::{Shape, ShapeKind};
pub use state::MaximalState;
