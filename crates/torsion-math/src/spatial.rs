//! Spatial (6-D) algebra for generalized-coordinate dynamics, generic over the scalar (Featherstone 2008,
//! Pinocchio conventions): motion and force vectors stacked [angular; linear], rigid transforms a←b with
//! x_a = R x_b + p, the motion and force actions, cross products and the transformation of 6×6 inertias.
use crate::scalar::Scalar;
use nalgebra::{Matrix3, Matrix6, Vector3, Vector6};

pub type V6<T = f64> = Vector6<T>;
pub type M6<T = f64> = Matrix6<T>;

#[inline(always)]
pub fn ang<T: Scalar>(m: &V6<T>) -> Vector3<T> {
    Vector3::new(m[0], m[1], m[2])
}
#[inline(always)]
pub fn lin<T: Scalar>(m: &V6<T>) -> Vector3<T> {
    Vector3::new(m[3], m[4], m[5])
}
#[inline(always)]
pub fn stack<T: Scalar>(a: &Vector3<T>, l: &Vector3<T>) -> V6<T> {
    V6::new(a.x, a.y, a.z, l.x, l.y, l.z)
}

/// Skew matrix [a]× with [a]× b = a × b.
#[inline(always)]
pub fn skew<T: Scalar>(a: &Vector3<T>) -> Matrix3<T> {
    let z = T::zero();
    Matrix3::new(z, -a.z, a.y, a.z, z, -a.x, -a.y, a.x, z)
}

/// Rigid transform a←b (placement of frame b in frame a): x_a = rot x_b + pos.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Se3<T: Scalar = f64> {
    pub rot: Matrix3<T>,
    pub pos: Vector3<T>,
}

impl<T: Scalar> Se3<T> {
    pub fn identity() -> Self {
        Se3 { rot: Matrix3::identity(), pos: Vector3::zeros() }
    }
    pub fn new(rot: Matrix3<T>, pos: Vector3<T>) -> Self {
        Se3 { rot, pos }
    }
    /// self ∘ b: (a←b)(b←c) = a←c.
    #[inline(always)]
    pub fn compose(&self, b: &Self) -> Self {
        Se3 { rot: self.rot * b.rot, pos: self.rot * b.pos + self.pos }
    }
    #[inline(always)]
    pub fn inverse(&self) -> Self {
        let rt = self.rot.transpose();
        Se3 { rot: rt, pos: -(rt * self.pos) }
    }
    #[inline(always)]
    pub fn act_point(&self, x: &Vector3<T>) -> Vector3<T> {
        self.rot * x + self.pos
    }
    /// Motion b → a: ω_a = R ω, v_a = R v + p × ω_a.
    #[inline(always)]
    pub fn act_motion(&self, m: &V6<T>) -> V6<T> {
        let w = self.rot * ang(m);
        stack(&w, &(self.rot * lin(m) + self.pos.cross(&w)))
    }
    /// Motion a → b (inverse action).
    #[inline(always)]
    pub fn inv_act_motion(&self, m: &V6<T>) -> V6<T> {
        let w = ang(m);
        let rt = self.rot.transpose();
        stack(&(rt * w), &(rt * (lin(m) - self.pos.cross(&w))))
    }
    /// Force b → a: f_a = R f, n_a = R n + p × f_a.
    #[inline(always)]
    pub fn act_force(&self, f: &V6<T>) -> V6<T> {
        let fl = self.rot * lin(f);
        stack(&(self.rot * ang(f) + self.pos.cross(&fl)), &fl)
    }
    /// Force a → b.
    #[inline(always)]
    pub fn inv_act_force(&self, f: &V6<T>) -> V6<T> {
        let fl = lin(f);
        let rt = self.rot.transpose();
        stack(&(rt * (ang(f) - self.pos.cross(&fl))), &(rt * fl))
    }
    /// 6×6 motion transform a←b: [[R, 0], [p̂ R, R]].
    pub fn motion_matrix(&self) -> M6<T> {
        let mut m = M6::zeros();
        let pr = skew(&self.pos) * self.rot;
        m.fixed_view_mut::<3, 3>(0, 0).copy_from(&self.rot);
        m.fixed_view_mut::<3, 3>(3, 3).copy_from(&self.rot);
        m.fixed_view_mut::<3, 3>(3, 0).copy_from(&pr);
        m
    }
    /// Inertia expressed in b → in a: I_a = X*_{a←b} I_b X_{b←a} = X_{b←a}ᵀ I_b X_{b←a}.
    pub fn act_inertia(&self, i: &M6<T>) -> M6<T> {
        let x = self.inverse().motion_matrix();
        x.transpose() * i * x
    }
}

/// Motion cross product m × n (spatial velocity acting on a motion).
#[inline(always)]
pub fn cross_motion<T: Scalar>(m: &V6<T>, n: &V6<T>) -> V6<T> {
    let (w, v) = (ang(m), lin(m));
    stack(&w.cross(&ang(n)), &(w.cross(&lin(n)) + v.cross(&ang(n))))
}

/// Force cross product m ×* f.
#[inline(always)]
pub fn cross_force<T: Scalar>(m: &V6<T>, f: &V6<T>) -> V6<T> {
    let (w, v) = (ang(m), lin(m));
    stack(&(w.cross(&ang(f)) + v.cross(&lin(f))), &w.cross(&lin(f)))
}

/// Spatial inertia of a rigid body in a frame at its COM: diag(I_c, m 1).
pub fn inertia_at_com<T: Scalar>(mass: T, ic: &Matrix3<T>) -> M6<T> {
    let mut m = M6::zeros();
    m.fixed_view_mut::<3, 3>(0, 0).copy_from(ic);
    for i in 3..6 {
        m[(i, i)] = mass;
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Quat;
    fn x() -> Se3 {
        Se3::new(Quat::from_rpy(0.3, -0.2, 0.9).to_mat(), Vector3::new(0.1, -0.4, 0.25))
    }
    #[test]
    fn actions_match_matrices_and_duality() {
        let x = x();
        let m = V6::new(0.1, 0.2, -0.3, 0.5, -0.1, 0.7);
        let f = V6::new(-0.3, 0.4, 0.2, 0.1, 0.9, -0.5);
        assert!((x.act_motion(&m) - x.motion_matrix() * m).norm() < 1e-14);
        assert!((x.inv_act_motion(&x.act_motion(&m)) - m).norm() < 1e-14);
        assert!((x.inv_act_force(&x.act_force(&f)) - f).norm() < 1e-14);
        // power is frame invariant: (X m)·(X* f) = m·f
        assert!((x.act_motion(&m).dot(&x.act_force(&f)) - m.dot(&f)).abs() < 1e-14);
        // m ×* f is minus the transpose of m ×: (m × n)·f = −n·(m ×* f)
        let n = V6::new(0.3, -0.2, 0.1, 0.0, 0.4, -0.6);
        assert!((cross_motion(&m, &n).dot(&f) + n.dot(&cross_force(&m, &f))).abs() < 1e-14);
        assert!((x.compose(&x.inverse()).pos).norm() < 1e-15);
    }
}
