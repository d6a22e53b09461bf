//! torsion-collision: collision detection producing the per-step [`Contacts`] set (design.md §1, §4): shapes
//! from the model ([`shapes`], [`mesh`]), a sweep-and-prune broad phase ([`broad_phase`]), parry3d-f64 contact
//! manifolds as the narrow phase (`narrow_phase`) and contact frames continuous over time ([`frames`]).
//!
//! Conventions (spec 001 §3.1): each contact has a unit normal pointing from body B to body A (a positive
//! relative normal velocity of A w.r.t. B separates), a signed distance (negative = penetration) and a
//! right-handed orthonormal frame (n, t1, t2). parry uses glam types; conversion happens at this crate's boundary.
//!
//! ```no_run
//! # use torsion_collision::*;
//! # let model = torsion_model::Model::empty("m");
//! let mut world = CollisionWorld::new(&model, CollisionOptions::default())?;
//! let poses = model.forward_kinematics(&model.qpos0)?;
//! let mut contacts = Contacts::default();
//! world.detect(&poses, &mut contacts)?; // call again each step with the same `contacts`
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
pub mod broad_phase;
pub mod contact;
pub mod error;
pub mod frames;
pub mod mesh;
mod narrow_phase;
pub mod shapes;
pub mod world;

pub use broad_phase::BroadPhase;
pub use contact::{Contact, ContactId, Contacts};
pub use error::CollisionError;
pub use frames::{tangent_frame, tangent_reference};
pub use mesh::MeshPolicy;
pub use world::{CollisionOptions, CollisionWorld};
