//! Articulated-body algorithm (Featherstone 2008 §7.3): forward dynamics a = M⁻¹(τ − c − g) in O(n),
//! without forming M. Handles multi-DoF joints (ball, free) with a small dense solve per joint.
use crate::data::{DynData, DynError, DynModel};
use crate::fk::forward_kinematics;
use crate::rnea::root_acc;
use nalgebra::{DMatrix, DVector};
use torsion_math::spatial::{cross_force, cross_motion, V6};
use torsion_math::Scalar;

pub fn aba<T: Scalar>(dm: &DynModel<T>, q: &[T], v: &[T], tau: &[T], d: &mut DynData<T>) -> Result<Vec<T>, DynError> {
    dm.check_q(q)?;
    dm.check_v("v", v)?;
    dm.check_v("tau", tau)?;
    forward_kinematics(dm, q, d);
    root_acc(dm, d, true);
    let nj = dm.parent.len();
    let mut cbias = vec![V6::<T>::zeros(); dm.nb];
    // pass 1: velocities, bias accelerations, articulated inertias initialised to rigid ones
    for j in 0..nj {
        let (p, c) = (dm.parent[j], dm.child[j]);
        let jm = &dm.joint[j];
        let mut vj = V6::zeros();
        for i in 0..jm.nv {
            vj += jm.s[i] * v[dm.v_start[j] + i];
        }
        let vc = d.x_pc[j].inv_act_motion(&d.vel[p]) + vj;
        d.vel[c] = vc;
        cbias[c] = cross_motion(&vc, &vj);
        d.ia[c] = dm.inertia[c];
        let iv = dm.inertia[c] * vc;
        d.pa[c] = cross_force(&vc, &iv);
    }
    // pass 2: tip → base
    let mut u_store: Vec<DVector<T>> = vec![DVector::zeros(0); nj];
    let mut dinv_store: Vec<DMatrix<T>> = vec![DMatrix::zeros(0, 0); nj];
    let mut uu_store: Vec<[V6<T>; 6]> = vec![[V6::zeros(); 6]; nj];
    for j in (0..nj).rev() {
        let (p, c) = (dm.parent[j], dm.child[j]);
        let jm = &dm.joint[j];
        let n = jm.nv;
        let mut uu = [V6::zeros(); 6];
        let mut dmat = DMatrix::zeros(n, n);
        let mut u = DVector::zeros(n);
        for i in 0..n {
            uu[i] = d.ia[c] * jm.s[i];
            let k = dm.v_start[j] + i;
            u[i] = tau[k] - dm.damping[k] * v[k] - jm.s[i].dot(&d.pa[c]);
        }
        for a in 0..n {
            for b in 0..n {
                dmat[(a, b)] = jm.s[a].dot(&uu[b]);
            }
            dmat[(a, a)] += dm.armature[dm.v_start[j] + a];
        }
        let dinv =
            if n > 0 { dmat.try_inverse().unwrap_or_else(|| DMatrix::zeros(n, n)) } else { DMatrix::zeros(0, 0) };
        if dm.root_pose[p].is_none() {
            // Ia' = Ia − U D⁻¹ Uᵀ ; pa' = pa + Ia' c + U D⁻¹ u
            let mut ia = d.ia[c];
            let mut pa = d.pa[c];
            for a in 0..n {
                for b in 0..n {
                    ia -= uu[a] * uu[b].transpose() * dinv[(a, b)];
                }
            }
            pa += ia * cbias[c];
            for a in 0..n {
                let mut coef = T::zero();
                for b in 0..n {
                    coef += dinv[(a, b)] * u[b];
                }
                pa += uu[a] * coef;
            }
            let x = &d.x_pc[j];
            let ip = x.act_inertia(&ia);
            let pp = x.act_force(&pa);
            d.ia[p] += ip;
            d.pa[p] += pp;
        }
        u_store[j] = u;
        dinv_store[j] = dinv;
        uu_store[j] = uu;
    }
    // pass 3: base → tip
    let mut qdd = vec![T::zero(); dm.nv];
    for j in 0..nj {
        let (p, c) = (dm.parent[j], dm.child[j]);
        let jm = &dm.joint[j];
        let n = jm.nv;
        let ap = d.x_pc[j].inv_act_motion(&d.acc[p]) + cbias[c];
        let mut rhs = DVector::zeros(n);
        for i in 0..n {
            rhs[i] = u_store[j][i] - uu_store[j][i].dot(&ap);
        }
        let sol = &dinv_store[j] * rhs;
        let mut ac = ap;
        for i in 0..n {
            qdd[dm.v_start[j] + i] = sol[i];
            ac += jm.s[i] * sol[i];
        }
        d.acc[c] = ac;
    }
    Ok(qdd)
}
