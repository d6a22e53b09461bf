//! Composite rigid-body algorithm (Featherstone 2008 §6.2): the joint-space inertia matrix M(q) (nv × nv),
//! armature added on the diagonal.
use crate::data::{DynData, DynError, DynModel};
use crate::fk::forward_kinematics;
use nalgebra::DMatrix;
use torsion_math::spatial::V6;
use torsion_math::Scalar;

pub fn crba<T: Scalar>(dm: &DynModel<T>, q: &[T], d: &mut DynData<T>) -> Result<DMatrix<T>, DynError> {
    dm.check_q(q)?;
    forward_kinematics(dm, q, d);
    let nj = dm.parent.len();
    for k in 0..dm.nb {
        d.ia[k] = dm.inertia[k];
    }
    // composite inertias, tip → base
    for j in (0..nj).rev() {
        let (p, c) = (dm.parent[j], dm.child[j]);
        if dm.root_pose[p].is_none() {
            let ic = d.x_pc[j].act_inertia(&d.ia[c]);
            d.ia[p] += ic;
        }
    }
    // which joint moves each body
    let mut body_joint = vec![usize::MAX; dm.nb];
    for j in 0..nj {
        body_joint[dm.child[j]] = j;
    }
    let mut m = DMatrix::zeros(dm.nv, dm.nv);
    for j in 0..nj {
        let jm = &dm.joint[j];
        let c = dm.child[j];
        for i in 0..jm.nv {
            let col = dm.v_start[j] + i;
            let mut f: V6<T> = d.ia[c] * jm.s[i];
            for i2 in 0..jm.nv {
                m[(dm.v_start[j] + i2, col)] = jm.s[i2].dot(&f);
            }
            // walk up the ancestors
            let mut jj = j;
            loop {
                let p = dm.parent[jj];
                if dm.root_pose[p].is_some() {
                    break;
                }
                f = d.x_pc[jj].act_force(&f);
                jj = body_joint[p];
                let ja = &dm.joint[jj];
                for i2 in 0..ja.nv {
                    let row = dm.v_start[jj] + i2;
                    let val = ja.s[i2].dot(&f);
                    m[(row, col)] = val;
                    m[(col, row)] = val;
                }
            }
        }
    }
    for k in 0..dm.nv {
        m[(k, k)] += dm.armature[k];
    }
    Ok(m)
}
