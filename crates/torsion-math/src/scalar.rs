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
    /// Exactly zero in every part (primal and all derivative parts): a term multiplied by it can be skipped.
    fn is_exact_zero(&self) -> bool;
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
    #[inline(always)]
    fn is_exact_zero(&self) -> bool {
        *self == 0.0
    }
}

impl Scalar for num_dual::Dual64 {
    #[inline(always)]
    fn re(&self) -> f64 {
        self.re
    }
    #[inline(always)]
    fn is_exact_zero(&self) -> bool {
        self.re == 0.0 && self.eps == 0.0
    }
}

impl<const N: usize> Scalar for num_dual::DualSVec64<N> {
    #[inline(always)]
    fn re(&self) -> f64 {
        self.re
    }
    #[inline(always)]
    fn is_exact_zero(&self) -> bool {
        self.re == 0.0 && self.eps.0.is_none_or(|e| e.iter().all(|&x| x == 0.0))
    }
}

/// Lift a constant vector.
#[inline(always)]
pub fn cv<T: Scalar>(v: &nalgebra::Vector3<f64>) -> nalgebra::Vector3<T> {
    nalgebra::Vector3::new(T::c(v.x), T::c(v.y), T::c(v.z))
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_dual::{Derivative, Dual64, DualSVec64};

    #[test]
    fn exact_zero_looks_at_every_part() {
        assert!(0.0f64.is_exact_zero() && !1e-300f64.is_exact_zero());
        assert!(Dual64::from(0.0).is_exact_zero());
        assert!(!Dual64::new(0.0, 1.0).is_exact_zero());
        assert!(DualSVec64::<2>::from(0.0).is_exact_zero());
        let d = DualSVec64::<2>::new(0.0, Derivative::some(nalgebra::SVector::from([0.0, 2.0])));
        assert!(!d.is_exact_zero());
    }
}
