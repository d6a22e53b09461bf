//! Composite rigid-body algorithm (Featherstone 2008 §6.2): the joint-space inertia matrix M(q) (nv × nv),
//! armature added on the diagonal. Computed in the world frame as Pinocchio does: composite inertias Y_i as
//! 10-number rigid inertias summed tip → base, F_i = Y_i J_i and M_{ik} = J_iᵀ F_k for every joint i on the
//! path from joint k to the root (J: the joint columns in the world frame).
use crate::data::{DynData, DynError, DynModel};
use crate::fk::forward_kinematics;
use crate::ltl::TreeMatrix;
use nalgebra::DMatrix;
use torsion_math::spatial::Inertia;
use torsion_math::Scalar;

pub fn crba<T: Scalar>(dm: &DynModel<T>, q: &[T], d: &mut DynData<T>) -> Result<DMatrix<T>, DynError> {
    let mut m = DMatrix::zeros(dm.nv, dm.nv);
    crba_into(dm, q, d, &mut m)?;
    Ok(m)
}

/// [`crba`] into a preallocated nv × nv matrix (every entry is written); no heap allocation.
pub fn crba_into<T: Scalar>(dm: &DynModel<T>, q: &[T], d: &mut DynData<T>, m: &mut DMatrix<T>) -> Result<(), DynError> {
    dm.check_q(q)?;
    if m.nrows() != dm.nv || m.ncols() != dm.nv {
        return Err(DynError::Shape {
            what: "M (output, rows × cols)",
            got: m.nrows() * m.ncols(),
            expected: dm.nv * dm.nv,
        });
    }
    m.fill(T::zero()); // pairs of joints on different branches stay zero
    crba_entries::<T, _, true>(dm, q, d, &mut Dense { m: m.as_mut_slice(), nv: dm.nv });
    Ok(())
}

/// [`crba`]'s lower-triangle entries on the DoF tree (M_ki for i = k or an ancestor of k: all that the LTL
/// factorisation reads, `ltl::ltl_in_place`) into `m`, shaped for `ltl::dof_parents` (`TreeMatrix::reshape`):
/// O(Σ depth) storage and work, no nv × nv matrix (issue 15 item 2). The same numbers as [`crba_into`]'s entries.
pub fn crba_tree_into<T: Scalar>(
    dm: &DynModel<T>,
    q: &[T],
    d: &mut DynData<T>,
    m: &mut TreeMatrix<T>,
) -> Result<(), DynError> {
    dm.check_q(q)?;
    if m.nrows() != dm.nv {
        return Err(DynError::Shape { what: "M (output, rows)", got: m.nrows(), expected: dm.nv });
    }
    crba_entries::<T, _, false>(dm, q, d, m);
    Ok(())
}

/// Where [`crba_entries`] writes M_ab: the dense matrix (its column-major storage) or the DoF tree.
trait Entries<T> {
    fn entry(&mut self, a: usize, b: usize) -> &mut T;
}

/// An nv × nv matrix's column-major storage.
struct Dense<'a, T> {
    m: &'a mut [T],
    nv: usize,
}

impl<T> Entries<T> for Dense<'_, T> {
    #[inline(always)]
    fn entry(&mut self, a: usize, b: usize) -> &mut T {
        &mut self.m[a + b * self.nv]
    }
}

impl<T: Scalar> Entries<T> for TreeMatrix<T> {
    #[inline(always)]
    fn entry(&mut self, a: usize, b: usize) -> &mut T {
        &mut self[(a, b)]
    }
}

/// The entries of M: within each joint's block (all of it with `MIRROR`, else the lower triangle) and
/// M_ik = J_iᵀ F_k for every joint i strictly above joint k (at (k, i) and, with `MIRROR`, (i, k)), armature added
/// on the diagonal. Other entries are not written.
fn crba_entries<T: Scalar, M: Entries<T>, const MIRROR: bool>(
    dm: &DynModel<T>,
    q: &[T],
    d: &mut DynData<T>,
    m: &mut M,
) {
    forward_kinematics(dm, q, d);
    world_columns(dm, d);
    // disjoint borrows of the scratch (so that stores to one are known not to alias loads from another)
    let (jac, dfda, oy, parent_joint) = (&d.jac[..], &mut d.dfda[..], &mut d.oy[..], &d.parent_joint[..]);
    for j in (0..dm.parent.len()).rev() {
        let (p, c) = (dm.parent[j], dm.child[j]);
        let (vs, n) = (dm.v_start[j], dm.joint[j].nv);
        let y = oy[c];
        for i in vs..vs + n {
            dfda[i] = y.mul_motion(&jac[i]);
        }
        for a in vs..vs + n {
            for b in vs..vs + n {
                if MIRROR || b <= a {
                    *m.entry(a, b) = jac[a].dot(&dfda[b]);
                }
            }
        }
        if dm.root_pose[p].is_none() {
            oy[p] += y;
        }
    }
    // M_{ik} = M_{ki} = J_iᵀ F_k for every joint i strictly above joint k
    for k in 0..dm.parent.len() {
        let (ks, kn) = (dm.v_start[k], dm.joint[k].nv);
        let mut i = parent_joint[k];
        while i != usize::MAX {
            let (is, in_) = (dm.v_start[i], dm.joint[i].nv);
            for a in is..is + in_ {
                let ja = jac[a];
                for b in ks..ks + kn {
                    let val = ja.dot(&dfda[b]);
                    if MIRROR {
                        *m.entry(a, b) = val;
                    }
                    *m.entry(b, a) = val;
                }
            }
            i = parent_joint[i];
        }
    }
    for k in 0..dm.nv {
        *m.entry(k, k) += dm.armature[k];
    }
}

/// From the world placements `d.o_m`: the joint of every body (`d.body_joint`, usize::MAX for roots) and
/// above every joint (`d.parent_joint`, joints in parent-before-child order), each
/// body's inertia in the world frame (`d.oy`, before the composite sums) and the world-frame joint columns
/// `d.jac`.
pub(crate) fn world_columns<T: Scalar>(dm: &DynModel<T>, d: &mut DynData<T>) {
    for j in 0..dm.parent.len() {
        let c = dm.child[j];
        let jm = &dm.joint[j];
        let om = d.o_m[c];
        d.body_joint[c] = j;
        d.parent_joint[j] = d.body_joint[dm.parent[j]];
        d.oy[c] = Inertia::from_matrix(&dm.inertia[c]).transformed(&om);
        for i in 0..jm.nv {
            d.jac[dm.v_start[j] + i] = om.act_motion(&jm.s[i]);
        }
    }
}
