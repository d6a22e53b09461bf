//! Joint models: the joint transform X_J(q) (child joint frame in the parent joint frame) and the motion
//! subspace S expressed in the child *body* frame (constant for every joint type here, because joint
//! velocities are expressed in the child joint frame).
use torsion_math::spatial::{Se3, V6};
use torsion_math::{Quat, Scalar, Vec3};
use torsion_model::JointType;

#[derive(Clone, Debug)]
pub struct JointModel<T: Scalar> {
    pub kind: JointType,
    /// unit axis in the joint frame
    pub axis: Vec3<T>,
    /// motion subspace columns in the child body frame (nv of them)
    pub s: [V6<T>; 6],
    pub nv: usize,
    pub nq: usize,
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
        JointModel { kind, axis: *axis, s: cols, nv, nq: kind.nq() }
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
