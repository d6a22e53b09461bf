//! The scalar bound used by every physics kernel: nalgebra's `RealField` + `Copy`.
//! `f64` and `num_dual::{Dual64, DualSVec64<N>}` satisfy it.
use nalgebra::RealField;

pub trait Scalar: RealField + Copy {
    /// Lift a constant (model data that is never differentiated, e.g. axes, limits).
    #[inline(always)]
    fn c(x: f64) -> Self {
        nalgebra::convert(x)
    }
    /// The primal (real) part, used for branching: branch on primal values only (design.md §3).
    fn re(&self) -> f64;
}

impl Scalar for f64 {
    #[inline(always)]
    fn c(x: f64) -> Self {
        x
    }
    #[inline(always)]
    fn re(&self) -> f64 {
        *self
    }
}

impl Scalar for num_dual::Dual64 {
    #[inline(always)]
    fn re(&self) -> f64 {
        self.re
    }
}

impl<const N: usize> Scalar for num_dual::DualSVec64<N> {
    #[inline(always)]
    fn re(&self) -> f64 {
        self.re
    }
}

/// Lift a constant vector.
#[inline(always)]
pub fn cv<T: Scalar>(v: &nalgebra::Vector3<f64>) -> nalgebra::Vector3<T> {
    nalgebra::Vector3::new(T::c(v.x), T::c(v.y), T::c(v.z))
}
