//! Featherstone's sparse factorisation of the joint-space inertia matrix (RBDA §6.5, "LTL"): M = Lᵀ L with L
//! lower triangular, factorised from the leaves up. M_ij ≠ 0 only when DoF j is an ancestor of DoF i (or i of j),
//! and eliminating the leaves first creates no fill-in: L has M's sparsity, L_ij ≠ 0 only for j = i or j an
//! ancestor of i. The tree of DoFs is given by λ(i) < i (`dof_parents`): within a joint each DoF hangs on the
//! previous one (a joint's block is dense), the first on the last DoF of the parent joint. Free bodies give
//! independent 6 × 6 blocks, so the factorisation and the solves cost O(Σ depth²) instead of O(nv³).
//! A solve with Lᵀ (from the leaves to the root) only touches ancestors: a vector supported on an
//! ancestor-closed set of DoFs (a contact Jacobian row: the DoFs of its bodies' chains) stays on that set.
//! Generic over the scalar (duals go through), allocation-free; only the lower triangle of `l` is read.
use crate::DynModel;
use nalgebra::DMatrix;
use torsion_math::Scalar;

/// No parent DoF (a DoF of a root joint, i.e. one attached to a fixed body).
pub const NO_DOF: usize = usize::MAX;

/// λ(i) for every DoF i (λ(i) < i; `NO_DOF` at the top of a tree). Needs joints in parent-before-child order
/// (as CRBA / RNEA).
pub fn dof_parents<T: Scalar>(dm: &DynModel<T>, out: &mut Vec<usize>) {
    dof_parents_with(dm, out, &mut vec![]);
}

/// [`dof_parents`] with the caller's scratch `body_last` (no allocation once it has the body count).
pub fn dof_parents_with<T: Scalar>(dm: &DynModel<T>, out: &mut Vec<usize>, body_last: &mut Vec<usize>) {
    out.clear();
    out.resize(dm.nv, NO_DOF);
    // the last DoF of the joint moving each body (NO_DOF for fixed bodies and zero-DoF joints above them)
    body_last.clear();
    body_last.resize(dm.nb, NO_DOF);
    for j in 0..dm.parent.len() {
        let (vs, n) = (dm.v_start[j], dm.joint[j].nv);
        let above = body_last[dm.parent[j]];
        for k in 0..n {
            out[vs + k] = if k == 0 { above } else { vs + k - 1 };
        }
        body_last[dm.child[j]] = if n > 0 { vs + n - 1 } else { above };
    }
}

/// M = Lᵀ L in place (L in the lower triangle of `m`, ancestor entries only). False if a pivot is not positive
/// (on the primal values).
pub fn ltl_in_place<T: Scalar>(m: &mut DMatrix<T>, lambda: &[usize]) -> bool {
    let n = m.nrows();
    for k in (0..n).rev() {
        let d = m[(k, k)];
        if d.re() <= 0.0 || !d.re().is_finite() {
            return false;
        }
        let a = d.sqrt();
        m[(k, k)] = a;
        let r = T::one() / a;
        let mut i = lambda[k];
        while i != NO_DOF {
            m[(k, i)] *= r;
            i = lambda[i];
        }
        let mut i = lambda[k];
        while i != NO_DOF {
            let lki = m[(k, i)];
            let mut j = i;
            while j != NO_DOF {
                let lkj = m[(k, j)];
                m[(i, j)] -= lki * lkj;
                j = lambda[j];
            }
            i = lambda[i];
        }
    }
    true
}

/// b ← L⁻ᵀ b (Lᵀ upper triangular: from the leaves to the root; each DoF updates only its ancestors).
pub fn lt_solve_in_place<T: Scalar>(l: &DMatrix<T>, lambda: &[usize], b: &mut [T]) {
    for k in (0..b.len()).rev() {
        lt_solve_step(l, lambda, b, k);
    }
}

/// b ← L⁻ᵀ b for a b supported on `support`: ancestor-closed (every ancestor of a member is a member), sorted
/// ascending. The result has the same support; entries of b outside it are neither read nor written.
pub fn lt_solve_on<T: Scalar>(l: &DMatrix<T>, lambda: &[usize], b: &mut [T], support: &[usize]) {
    for &k in support.iter().rev() {
        lt_solve_step(l, lambda, b, k);
    }
}

#[inline]
fn lt_solve_step<T: Scalar>(l: &DMatrix<T>, lambda: &[usize], b: &mut [T], k: usize) {
    let y = b[k] / l[(k, k)];
    b[k] = y;
    let mut i = lambda[k];
    while i != NO_DOF {
        b[i] -= l[(k, i)] * y;
        i = lambda[i];
    }
}

/// b ← L⁻¹ b (from the root to the leaves; each DoF reads its ancestors).
pub fn l_solve_in_place<T: Scalar>(l: &DMatrix<T>, lambda: &[usize], b: &mut [T]) {
    for k in 0..b.len() {
        let mut s = b[k];
        let mut i = lambda[k];
        while i != NO_DOF {
            s -= l[(k, i)] * b[i];
            i = lambda[i];
        }
        b[k] = s / l[(k, k)];
    }
}

/// Solve M x = Lᵀ L x = b in place.
pub fn ltl_solve_in_place<T: Scalar>(l: &DMatrix<T>, lambda: &[usize], b: &mut [T]) {
    lt_solve_in_place(l, lambda, b);
    l_solve_in_place(l, lambda, b);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{crba, DynData, DynModel};

    /// On the floating tree (free, ball, slide, hinges on two branches): Lᵀ L = M, L keeps M's sparsity
    /// (no fill-in), and the solve matches the dense one.
    #[test]
    fn ltl_reproduces_m_without_fill_in() {
        let m = torsion_model::builder::floating_tree();
        let dm = DynModel::<f64>::from_model(&m).unwrap();
        let q = torsion_model::builder::example_configuration(&m, 3);
        let mut d = DynData::new(&dm);
        let mm = crba(&dm, &q, &mut d).unwrap();
        let mut lambda = vec![];
        dof_parents(&dm, &mut lambda);
        let n = dm.nv;
        assert!((0..n).all(|i| lambda[i] == NO_DOF || lambda[i] < i));
        let mut l = mm.clone();
        assert!(ltl_in_place(&mut l, &lambda));
        // keep only the ancestor entries of L
        let mut lower = DMatrix::<f64>::zeros(n, n);
        for k in 0..n {
            lower[(k, k)] = l[(k, k)];
            let mut i = lambda[k];
            while i != NO_DOF {
                lower[(k, i)] = l[(k, i)];
                i = lambda[i];
            }
        }
        let err = (lower.transpose() * &lower - &mm).abs().max();
        assert!(err < 1e-12 * mm.abs().max(), "LᵀL − M: {err:e}");
        // M_ij = 0 off the ancestor relation (so the factor has no fill-in there)
        let anc = |a: usize, b: usize| {
            let mut i = a;
            while i != NO_DOF {
                if i == b {
                    return true;
                }
                i = lambda[i];
            }
            false
        };
        for i in 0..n {
            for j in 0..n {
                if !anc(i, j) && !anc(j, i) {
                    assert_eq!(mm[(i, j)], 0.0, "M[{i},{j}] off the tree");
                }
            }
        }
        let b: Vec<f64> = (0..n).map(|i| (i as f64 * 0.7).sin()).collect();
        let mut x = b.clone();
        ltl_solve_in_place(&l, &lambda, &mut x);
        let dense = mm.clone().cholesky().unwrap().solve(&nalgebra::DVector::from_column_slice(&b));
        let err = (0..n).map(|i| (x[i] - dense[i]).abs()).fold(0.0, f64::max);
        assert!(err < 1e-10, "LTL solve vs dense: {err:e}");
    }
}
