//! The contact layer shared by the contact solvers (issue 13 item 2): contact frames and their Jacobians in
//! generalized coordinates (`frames.rs`, converted once from collision detection), the sparse Delassus assembly
//! and contact islands (`delassus.rs`), and the contact problem of a step — M, S(v), G, the impact's and the
//! step's offsets, restitution, impulse application (`prelude.rs`), how a contact moves with the bodies in a tangent
//! pass (`anchor.rs`), and reusable buffers (`buffers.rs`), warm starts by contact id or place (`warm.rs`). ncp's staggered projections are one user; the boxed-LCP
//! stepper (`lcp::stepper`, spec 004) the second.
pub mod anchor;
pub mod buffers;
pub mod delassus;
pub mod frames;
pub mod prelude;
pub mod warm;

pub use frames::{ContactFrame, ContactGeom};
pub use prelude::{Prelude, PreludeOptions};

use torsion_model::{GenState, Model};

/// One contact step's inputs, as the contact steppers' entry points take them (`NcpSolver::step_with_contacts`,
/// `LcpSolver::step_with_contacts`, their Jacobians and tapes): the model, the state, nv generalized forces, the
/// time step and the contacts (from collision detection at `s.q`, or hand-built).
#[derive(Clone, Copy, Debug)]
pub struct ContactStep<'a> {
    pub model: &'a Model,
    pub s: &'a GenState,
    /// nv generalized forces
    pub u: &'a [f64],
    pub dt: f64,
    pub contacts: &'a [ContactFrame],
}

impl<'a> ContactStep<'a> {
    pub fn new(model: &'a Model, s: &'a GenState, u: &'a [f64], dt: f64, contacts: &'a [ContactFrame]) -> Self {
        ContactStep { model, s, u, dt, contacts }
    }
}
