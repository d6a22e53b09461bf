//! Forward kinematics: X_{P←C}(q) = X_{P←Jp} X_J(q) X_{Jc←C} per joint and the world placement of every body.
use crate::data::{DynData, DynModel};
use torsion_math::Scalar;
use torsion_model::JointType;

/// X_{P←C}(q) per joint (`d.x_pc`) and the world placement of every body (`d.o_m`).
pub fn forward_kinematics<T: Scalar>(dm: &DynModel<T>, q: &[T], d: &mut DynData<T>) {
    for k in 0..dm.nb {
        if let Some(p) = dm.root_pose[k] {
            d.o_m[k] = p;
        }
    }
    placements(dm, q, d, true);
}

/// Only X_{P←C}(q) per joint (`d.x_pc`; `d.o_m` is left as it was): what RNEA and ABA need.
pub(crate) fn local_kinematics<T: Scalar>(dm: &DynModel<T>, q: &[T], d: &mut DynData<T>) {
    placements(dm, q, d, false);
}

#[inline(always)]
fn placements<T: Scalar>(dm: &DynModel<T>, q: &[T], d: &mut DynData<T>, world: bool) {
    let nj = dm.parent.len();
    // the sines and cosines first: library calls clobber every vector register, so keeping them out of the
    // transform loop lets that loop run without spills
    for j in 0..nj {
        if dm.joint[j].kind == JointType::Revolute {
            d.sincos[j] = q[dm.q_start[j]].sin_cos();
        }
    }
    for j in 0..nj {
        let jm = &dm.joint[j];
        let qs = &q[dm.q_start[j]..dm.q_start[j] + jm.nq];
        let x = dm.x_pj[j].compose(&jm.child_transform_sc(qs, d.sincos[j]));
        d.x_pc[j] = x;
        if world {
            d.o_m[dm.child[j]] = d.o_m[dm.parent[j]].compose(&x);
        }
    }
}
