//! torsion-dynamics: generalized-coordinate rigid-body algorithms as functions over (model, data), written
//! once generic over the scalar (f64 for values, num-dual duals for derivatives of the same code):
//! forward kinematics, CRBA (M), RNEA (inverse dynamics, bias, gravity), ABA (forward dynamics).
//! Frames: each body's frame is its COM frame (model.rs); velocities are body-frame spatial motions
//! [ω; v]; joint velocities are expressed in the child joint frame (ball: ω; free: [ω; v]).
#![allow(clippy::needless_range_loop)]
pub mod aba;
pub mod crba;
pub mod data;
pub mod derivatives;
pub mod fk;
pub mod joints;
pub mod rnea;

pub use aba::aba;
pub use crba::crba;
pub use data::{DynData, DynError, DynModel};
pub use fk::forward_kinematics;
pub use rnea::{gravity, nonlinear_effects, rnea};
