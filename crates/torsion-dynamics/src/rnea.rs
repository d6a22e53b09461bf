//! Recursive Newton–Euler (Featherstone 2008 §5.3): τ = M(q) a + c(q, v) − the gravity is included as a
//! fictitious base acceleration −g. Also g(q) = RNEA(q, 0, 0) and the bias c(q, v) = RNEA(q, v, 0).
use crate::data::{DynData, DynError, DynModel};
use crate::fk::forward_kinematics;
use torsion_math::spatial::{cross_force, cross_motion, stack, V6};
use torsion_math::{Scalar, Vec3};

/// Base (root) spatial acceleration in the root's frame: [0; −Rᵀ g].
pub(crate) fn root_acc<T: Scalar>(dm: &DynModel<T>, d: &mut DynData<T>, with_gravity: bool) {
    for k in 0..dm.nb {
        if let Some(p) = dm.root_pose[k] {
            d.vel[k] = V6::zeros();
            let g = if with_gravity { -(p.rot.transpose() * dm.gravity) } else { Vec3::zeros() };
            d.acc[k] = stack(&Vec3::zeros(), &g);
        }
    }
}

/// Inverse dynamics τ(q, v, a) (nv), gravity included.
pub fn rnea<T: Scalar>(dm: &DynModel<T>, q: &[T], v: &[T], a: &[T], d: &mut DynData<T>) -> Result<Vec<T>, DynError> {
    dm.check_q(q)?;
    dm.check_v("v", v)?;
    dm.check_v("a", a)?;
    Ok(rnea_impl(dm, q, v, a, d, true))
}

pub(crate) fn rnea_impl<T: Scalar>(
    dm: &DynModel<T>,
    q: &[T],
    v: &[T],
    a: &[T],
    d: &mut DynData<T>,
    grav: bool,
) -> Vec<T> {
    forward_kinematics(dm, q, d);
    root_acc(dm, d, grav);
    let nj = dm.parent.len();
    for j in 0..nj {
        let (p, c) = (dm.parent[j], dm.child[j]);
        let jm = &dm.joint[j];
        let vs = dm.v_start[j];
        let mut vj = V6::zeros();
        let mut aj = V6::zeros();
        for i in 0..jm.nv {
            vj += jm.s[i] * v[vs + i];
            aj += jm.s[i] * a[vs + i];
        }
        let x = &d.x_pc[j];
        let vc = x.inv_act_motion(&d.vel[p]) + vj;
        d.acc[c] = x.inv_act_motion(&d.acc[p]) + aj + cross_motion(&vc, &vj);
        d.vel[c] = vc;
        let iv = dm.inertia[c] * vc;
        d.f[c] = dm.inertia[c] * d.acc[c] + cross_force(&vc, &iv);
    }
    let mut tau = vec![T::zero(); dm.nv];
    for j in (0..nj).rev() {
        let (p, c) = (dm.parent[j], dm.child[j]);
        let jm = &dm.joint[j];
        for i in 0..jm.nv {
            let k = dm.v_start[j] + i;
            tau[k] = jm.s[i].dot(&d.f[c]) + dm.armature[k] * a[k] + dm.damping[k] * v[k];
        }
        if dm.root_pose[p].is_none() {
            let fp = d.x_pc[j].act_force(&d.f[c]);
            d.f[p] += fp;
        }
    }
    tau
}

/// g(q): generalized gravity torques.
pub fn gravity<T: Scalar>(dm: &DynModel<T>, q: &[T], d: &mut DynData<T>) -> Result<Vec<T>, DynError> {
    dm.check_q(q)?;
    let z = vec![T::zero(); dm.nv];
    Ok(rnea_impl(dm, q, &z, &z, d, true))
}

/// c(q, v) + g(q): the bias forces (RNEA with zero acceleration).
pub fn nonlinear_effects<T: Scalar>(
    dm: &DynModel<T>,
    q: &[T],
    v: &[T],
    d: &mut DynData<T>,
) -> Result<Vec<T>, DynError> {
    dm.check_q(q)?;
    dm.check_v("v", v)?;
    let z = vec![T::zero(); dm.nv];
    Ok(rnea_impl(dm, q, v, &z, d, true))
}
