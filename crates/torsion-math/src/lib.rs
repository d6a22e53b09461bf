//! torsion-math: the scalar trait shared by value and derivative code, and quaternion / SO(3) kernels.
//!
//! Every kernel is generic over [`Scalar`] (f64 for simulation, num-dual duals for forward-mode derivatives of
//! the *same* code); reverse-mode adjoints (`*_vjp`) sit beside their kernel and are tested against duals and
//! central finite differences.
pub mod alloc_count;
pub mod linalg;
pub mod quat;
pub mod rng;
pub mod scalar;
pub mod spatial;

pub use quat::Quat;
pub use scalar::Scalar;
pub type Vec3<T = f64> = nalgebra::Vector3<T>;
pub type Mat3<T = f64> = nalgebra::Matrix3<T>;
