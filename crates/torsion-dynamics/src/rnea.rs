//! Recursive Newton–Euler (Featherstone 2008 §5.3): τ = M(q) a + c(q, v) − the gravity is included as a
//! fictitious base acceleration −g. Also g(q) = RNEA(q, 0, 0) and the bias c(q, v) = RNEA(q, v, 0).
use crate::data::{DynData, DynError, DynModel};
use crate::fk::local_kinematics;
use torsion_math::spatial::{cross_force, cross_motion, stack, Inertia, V6};
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
    let mut tau = vec![T::zero(); dm.nv];
    rnea_into(dm, q, v, a, d, &mut tau)?;
    Ok(tau)
}

/// [`rnea`] into a preallocated `tau` (nv); no heap allocation.
pub fn rnea_into<T: Scalar>(
    dm: &DynModel<T>,
    q: &[T],
    v: &[T],
    a: &[T],
    d: &mut DynData<T>,
    tau: &mut [T],
) -> Result<(), DynError> {
    dm.check_q(q)?;
    dm.check_v("v", v)?;
    dm.check_v("a", a)?;
    dm.check_v("tau (output)", tau)?;
    local_kinematics(dm, q, d);
    rnea_pass(dm, v, a, d, true, tau);
    Ok(())
}

/// The two RNEA sweeps on the placements already in `d.x_pc`.
pub(crate) fn rnea_pass<T: Scalar>(dm: &DynModel<T>, v: &[T], a: &[T], d: &mut DynData<T>, grav: bool, tau: &mut [T]) {
    rnea_forward(dm, v, a, d, grav);
    let nj = dm.parent.len();
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
}

/// The forward sweep: body velocities, accelerations (gravity as a base acceleration when `grav`) and the
/// net body forces I a + v ×* I v, all in body frames.
pub(crate) fn rnea_forward<T: Scalar>(dm: &DynModel<T>, v: &[T], a: &[T], d: &mut DynData<T>, grav: bool) {
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
        let ac = x.inv_act_motion(&d.acc[p]) + aj + cross_motion(&vc, &vj);
        d.vel[c] = vc;
        d.acc[c] = ac;
        let y = Inertia::from_matrix(&dm.inertia[c]);
        d.f[c] = y.mul_motion(&ac) + cross_force(&vc, &y.mul_motion(&vc));
    }
}

/// RNEA with v and/or a replaced by zeros (from the scratch's zero vector).
fn rnea_zeros<T: Scalar>(dm: &DynModel<T>, q: &[T], v: Option<&[T]>, d: &mut DynData<T>) -> Vec<T> {
    let mut tau = vec![T::zero(); dm.nv];
    let z = std::mem::take(&mut d.zero_nv);
    local_kinematics(dm, q, d);
    rnea_pass(dm, v.unwrap_or(&z), &z, d, true, &mut tau);
    d.zero_nv = z;
    tau
}

/// g(q): generalized gravity torques.
pub fn gravity<T: Scalar>(dm: &DynModel<T>, q: &[T], d: &mut DynData<T>) -> Result<Vec<T>, DynError> {
    dm.check_q(q)?;
    Ok(rnea_zeros(dm, q, None, d))
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
    Ok(rnea_zeros(dm, q, Some(v), d))
}

/// [`nonlinear_effects`] written into `tau` (nv entries): no allocation.
pub fn nonlinear_effects_into<T: Scalar>(
    dm: &DynModel<T>,
    q: &[T],
    v: &[T],
    d: &mut DynData<T>,
    tau: &mut [T],
) -> Result<(), DynError> {
    dm.check_q(q)?;
    dm.check_v("v", v)?;
    tau.fill(T::zero());
    let z = std::mem::take(&mut d.zero_nv);
    local_kinematics(dm, q, d);
    rnea_pass(dm, v, &z, d, true, tau);
    d.zero_nv = z;
    Ok(())
}
