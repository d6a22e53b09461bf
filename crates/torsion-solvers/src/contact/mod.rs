//! The contact layer shared by the contact solvers (issue 13 item 2): contact frames and their Jacobians in
//! generalized coordinates (`frames.rs`, converted once from collision detection), the sparse Delassus assembly
//! and contact islands (`delassus.rs`), and the contact problem of a step — M, S(v), G, the impact's and the
//! step's offsets, restitution, impulse application (`prelude.rs`), how a contact moves with the bodies in a tangent
//! pass (`anchor.rs`), and reusable buffers (`buffers.rs`). ncp's staggered projections are one user; the boxed-LCP
//! stepper (`lcp::stepper`, spec 004) the second.
pub mod anchor;
pub mod buffers;
pub mod delassus;
pub mod frames;
pub mod prelude;

pub use frames::{ContactFrame, ContactGeom};
pub use prelude::{Prelude, PreludeOptions};
