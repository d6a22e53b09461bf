//! Forward kinematics: X_{P←C}(q) = X_{P←Jp} X_J(q) X_{Jc←C} per joint and the world placement of every body.
use crate::data::{DynData, DynModel};
use torsion_math::Scalar;

pub fn forward_kinematics<T: Scalar>(dm: &DynModel<T>, q: &[T], d: &mut DynData<T>) {
    for k in 0..dm.nb {
        if let Some(p) = dm.root_pose[k] {
            d.o_m[k] = p;
        }
    }
    for j in 0..dm.parent.len() {
        let qs = &q[dm.q_start[j]..dm.q_start[j] + dm.joint[j].nq];
        d.x_pc[j] = dm.x_pj[j].compose(&dm.joint[j].transform(qs)).compose(&dm.x_jc[j]);
        d.o_m[dm.child[j]] = d.o_m[dm.parent[j]].compose(&d.x_pc[j]);
    }
}
