//! torsion-model: everything static about a robot ([`Model`]), the dynamic states of the maximal- and
//! generalized-coordinate families ([`MaximalState`], [`GenState`]) under one [`StateSpace`] contract, the joint
//! configuration maps they retract by ([`joint_maps`]), per-step inputs ([`Control`]) and the named, flat view of differentiable
//! quantities ([`params`]); shapes ([`shape`]), cables and their actuators ([`tendon`]) and parsed-but-unused elements ([`extras`]).
pub mod builder;
pub mod control;
pub mod error;
pub mod extras;
pub mod integrator;
pub mod io;
pub mod joint_maps;
pub mod model;
pub mod params;
pub mod shape;
pub mod state;
pub mod state_space;
pub mod tendon;

pub use control::{Control, ControlLayout};
pub use error::ModelError;
pub use extras::{Actuator, ActuatorTarget, ModelExtras, Site, Tendon, TendonKind};
pub use integrator::Integrator;
pub use joint_maps::JointLayout;
pub use model::{JointSpring, JointType, Model};
pub use params::{ParamKind, ParamSelection, ParamTable};
pub use shape::{Shape, ShapeKind};
pub use state::{ContactWarmStart, GenState, MaximalState, WarmImpulse};
pub use state_space::StateSpace;
pub use tendon::{Cable, CableActuator, LinearContact, Transmission};
