//! torsion-opt: small optimisers shared by experiments and system identification (design.md §8: small
//! enough to write; argmin pins an older nalgebra).
pub mod adam;
pub mod gauss_newton;
pub mod sysid;
pub use adam::Adam;
pub use gauss_newton::{gauss_newton, GnOptions, GnReport};
pub use sysid::{levenberg_marquardt, LmOptions, LmReport, Param};
