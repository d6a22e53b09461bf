//! Joint models: the joint transform X_J(q) (child joint frame in the parent joint frame) and the motion
//! subspace S expressed in the child *body* frame (constant for every joint type here, because joint
//! velocities are expressed in the child joint frame).
//!
//! Each joint also keeps X_{Jc←C} (the child body frame in the child joint frame, the inverse of the `cj` it is
//! built from) and, for revolute joints, the Rodrigues expansion of X_J(q) X_{Jc←C}, so that
//! [`JointModel::child_transform`] costs 24 multiply-adds and one sine/cosine.
//!
//! The configuration maps (q ⊕ δ, its inverse, the semi-implicit position update) live in
//! `torsion_model::joint_maps`, below this crate, so that the state spaces of `torsion-model` retract by them;
//! they are re-exported here and take a [`crate::DynModel`] as their [`JointLayout`].
use nalgebra::Matrix3;
use torsion_math::spatial::{skew, Se3, V6};
use torsion_math::{Quat, Scalar, Vec3};
use torsion_model::JointType;

pub use torsion_model::joint_maps::{
    add_free_frame_term, advance_into, advance_joint, difference, integrate, integrate_joint, integrate_scaled_into,
    JointLayout,
};

#[derive(Clone, Debug)]
pub struct JointModel<T: Scalar> {
    pub kind: JointType,
    /// unit axis in the joint frame
    pub axis: Vec3<T>,
    /// motion subspace columns in the child body frame (nv of them)
    pub s: [V6<T>; 6],
    pub nv: usize,
    pub nq: usize,
    /// X_{Jc←C}: the child body frame in the child joint frame (`cj`⁻¹, the same as `DynModel::x_jc`)
    pub x_jc: Se3<T>,
    /// revolute: K R_jc, K² R_jc, K p_jc, K² p_jc with K = [axis]×, so that
    /// X_J(q) X_{Jc←C} = (R_jc + sin q K R_jc + (1 − cos q) K² R_jc, p_jc + sin q K p_jc + (1 − cos q) K² p_jc)
    k1r: Matrix3<T>,
    k2r: Matrix3<T>,
    k1p: Vec3<T>,
    k2p: Vec3<T>,
}

impl<T: Scalar> JointModel<T> {
    /// `cj` = X_{C←Jc}: the joint frame seen from the child body.
    pub fn new(kind: JointType, axis: &Vec3<T>, cj: &Se3<T>) -> Self {
        let z = T::zero();
        let mut cols = [V6::zeros(); 6];
        let unit = |i: usize| {
            let mut m = V6::zeros();
            m[i] = T::one();
            m
        };
        match kind {
            JointType::Revolute => cols[0] = V6::new(axis.x, axis.y, axis.z, z, z, z),
            JointType::Prismatic => cols[0] = V6::new(z, z, z, axis.x, axis.y, axis.z),
            JointType::Ball => (0..3).for_each(|i| cols[i] = unit(i)),
            JointType::Free => (0..6).for_each(|i| cols[i] = unit(i)),
            JointType::Fixed => {}
        }
        let nv = kind.dof();
        for c in cols.iter_mut().take(nv) {
            *c = cj.act_motion(c);
        }
        let x_jc = cj.inverse();
        let k = skew(axis);
        let k2 = k * k;
        JointModel {
            kind,
            axis: *axis,
            s: cols,
            nv,
            nq: kind.nq(),
            x_jc,
            k1r: k * x_jc.rot,
            k2r: k2 * x_jc.rot,
            k1p: k * x_jc.pos,
            k2p: k2 * x_jc.pos,
        }
    }

    /// X_J(q) X_{Jc←C}: the child body frame in the parent joint frame.
    #[inline(always)]
    pub fn child_transform(&self, q: &[T]) -> Se3<T> {
        let sc = if self.kind == JointType::Revolute { q[0].sin_cos() } else { (T::zero(), T::one()) };
        self.child_transform_sc(q, sc)
    }

    /// [`JointModel::child_transform`] with (sin q, cos q) of a revolute joint given (ignored otherwise).
    #[inline(always)]
    pub fn child_transform_sc(&self, q: &[T], (s, c): (T, T)) -> Se3<T> {
        match self.kind {
            JointType::Revolute => {
                let c1 = T::one() - c;
                Se3::new(self.x_jc.rot + self.k1r * s + self.k2r * c1, self.x_jc.pos + self.k1p * s + self.k2p * c1)
            }
            JointType::Prismatic => Se3::new(self.x_jc.rot, self.x_jc.pos + self.axis * q[0]),
            _ => self.transform(q).compose(&self.x_jc),
        }
    }

    /// X_{Jp←Jc}(q) for this joint's slice of q.
    #[inline]
    pub fn transform(&self, q: &[T]) -> Se3<T> {
        match self.kind {
            JointType::Revolute => Se3::new(Quat::from_axis_angle(&self.axis, q[0]).to_mat(), Vec3::zeros()),
            JointType::Prismatic => Se3::new(nalgebra::Matrix3::identity(), self.axis * q[0]),
            JointType::Ball => Se3::new(Quat::new(q[0], q[1], q[2], q[3]).normalize().to_mat(), Vec3::zeros()),
            JointType::Free => {
                Se3::new(Quat::new(q[3], q[4], q[5], q[6]).normalize().to_mat(), Vec3::new(q[0], q[1], q[2]))
            }
            JointType::Fixed => Se3::identity(),
        }
    }
}
