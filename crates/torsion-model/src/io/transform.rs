//! The rigid transform both loaders compose frames with (URDF origins, MJCF body / geom / site poses).
use torsion_math::{Quat, Vec3};

/// A rigid transform x ↦ q x + p.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tf {
    pub(crate) p: Vec3,
    pub(crate) q: Quat,
}

impl Tf {
    pub(crate) fn identity() -> Self {
        Tf { p: Vec3::zeros(), q: Quat::identity() }
    }
    /// self ∘ b (the product quaternion renormalised).
    pub(crate) fn mul(&self, b: &Tf) -> Tf {
        Tf { p: self.p + self.q.rotate(&b.p), q: self.q.mul(&b.q).normalize() }
    }
    pub(crate) fn inv(&self) -> Tf {
        Tf { p: -self.q.rotate_inv(&self.p), q: self.q.conj() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inverse_composes_to_identity() {
        let a = Tf { p: Vec3::new(0.3, -1.0, 2.0), q: Quat::from_rpy(0.4, -0.2, 1.1) };
        let b = Tf { p: Vec3::new(-0.5, 0.1, 0.7), q: Quat::from_rpy(-1.0, 0.3, 0.2) };
        let x = Vec3::new(1.0, 2.0, 3.0);
        // (a ∘ b) x = a (b x)
        let ab = a.mul(&b);
        let lhs = ab.p + ab.q.rotate(&x);
        let rhs = a.p + a.q.rotate(&(b.p + b.q.rotate(&x)));
        assert!((lhs - rhs).norm() < 1e-14);
        let e = a.mul(&a.inv());
        assert!(e.p.norm() < 1e-14 && (e.q.rotate(&x) - x).norm() < 1e-14);
    }
}
