//! Joint constraint projections (spec 000 §3.3–3.5) as correction kernels: each returns the position and
//! rotation corrections of its two bodies; Gauss–Seidel applies them at once, Jacobi sums them.
pub mod hinge;
pub mod limits;
