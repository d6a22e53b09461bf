//! torsion-dynamics: generalized-coordinate rigid-body algorithms as functions over (model, data), written
//! once generic over the scalar (f64 for values, num-dual duals for derivatives of the same code):
//! forward kinematics, CRBA (M), RNEA (inverse dynamics, bias, gravity), ABA (forward dynamics), and the
//! analytic derivatives of RNEA and ABA (Carpentier & Mansard 2018; `derivatives` keeps the dual-number
//! reference). Each algorithm has an `*_into` form that writes into preallocated outputs and allocates nothing.
//! Frames: each body's frame is its COM frame (model.rs); velocities are body-frame spatial motions
//! [ω; v]; joint velocities are expressed in the child joint frame (ball: ω; free: [ω; v]).
#![allow(clippy::needless_range_loop)]
pub mod aba;
pub mod aba_derivatives;
pub mod contact_features;
pub mod crba;
pub mod data;
pub mod derivatives;
pub mod external;
pub mod fk;
pub mod fluid;
pub mod gyroscopic;
pub mod jacobians;
pub mod joints;
pub mod log_cholesky;
pub mod ltl;
pub mod passive;
pub mod regressor;
pub mod rnea;
pub mod rnea_derivatives;
pub mod tensegrity_contact;

pub use aba::{aba, aba_into};
pub use crba::{crba, crba_into, crba_tree_into};
pub use data::{DynData, DynError, DynModel};
pub use fk::forward_kinematics;
pub use rnea::{gravity, nonlinear_effects, nonlinear_effects_into, rnea, rnea_into};
