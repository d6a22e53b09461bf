//! Featherstone's sparse factorisation of the joint-space inertia matrix (RBDA §6.5, "LTL"): M = Lᵀ L with L
//! lower triangular, factorised from the leaves up. M_ij ≠ 0 only when DoF j is an ancestor of DoF i (or i of j),
//! and eliminating the leaves first creates no fill-in: L has M's sparsity, L_ij ≠ 0 only for j = i or j an
//! ancestor of i. The tree of DoFs is given by λ(i) < i (`dof_parents`): within a joint each DoF hangs on the
//! previous one (a joint's block is dense), the first on the last DoF of the parent joint. Free bodies give
//! independent 6 × 6 blocks, so the factorisation and the solves cost O(Σ depth²) instead of O(nv³).
//! A solve with Lᵀ (from the leaves to the root) only touches ancestors: a vector supported on an
//! ancestor-closed set of DoFs (a contact Jacobian row: the DoFs of its bodies' chains) stays on that set.
//! Generic over the scalar (duals go through), allocation-free; only the ancestor entries of the lower triangle
//! of `l` are read and written, so `l` is a dense `DMatrix` or a [`TreeMatrix`] (those entries alone: Σ (depth + 1)
//! numbers instead of nv², issue 15 item 2).
use crate::DynModel;
use std::ops::{Index, IndexMut};
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

/// The entries (k, i) of an nv × nv matrix with i = k or i an ancestor of k (λ(k), λ(λ(k)), …) and nothing
/// else: what the LTL factorisation reads and writes. Row k is stored as [(k, k), (k, λ(k)), (k, λ²(k)), …]
/// (nearest ancestor first), so (k, i) sits at `start[k] + depth[k] − depth[i]`. Indexing another entry is a
/// logic error (checked in debug builds).
#[derive(Clone, Debug)]
pub struct TreeMatrix<T> {
    depth: Vec<usize>,
    start: Vec<usize>,
    vals: Vec<T>,
}

impl<T> Default for TreeMatrix<T> {
    fn default() -> Self {
        TreeMatrix { depth: vec![], start: vec![], vals: vec![] }
    }
}

impl<T: Scalar> TreeMatrix<T> {
    /// Shaped for the DoF tree λ (`dof_parents`), every entry zero; reuses the storage (no allocation once it
    /// has grown).
    pub fn reshape(&mut self, lambda: &[usize]) {
        self.depth.clear();
        self.start.clear();
        let mut total = 0;
        for k in 0..lambda.len() {
            let dk = if lambda[k] == NO_DOF { 0 } else { self.depth[lambda[k]] + 1 };
            self.depth.push(dk);
            self.start.push(total);
            total += dk + 1;
        }
        self.vals.clear();
        self.vals.resize(total, T::zero());
    }

    /// 0 × 0, the storage kept.
    pub fn clear(&mut self) {
        self.depth.clear();
        self.start.clear();
        self.vals.clear();
    }

    /// The number of rows (nv; 0 when empty).
    pub fn nrows(&self) -> usize {
        self.depth.len()
    }

    pub fn is_empty(&self) -> bool {
        self.depth.is_empty()
    }

    /// The number of stored entries, Σ_k (depth(k) + 1).
    pub fn stored(&self) -> usize {
        self.vals.len()
    }

    /// Row k as stored: [L_kk, L_{k, λ(k)}, L_{k, λ²(k)}, …] (depth(k) + 1 entries).
    #[inline]
    pub fn row(&self, k: usize) -> &[T] {
        &self.vals[self.start[k]..=self.start[k] + self.depth[k]]
    }

    /// The tree entries of a dense matrix (its lower triangle's ancestor entries), shaped for λ.
    pub fn from_dense(m: &nalgebra::DMatrix<T>, lambda: &[usize]) -> Self {
        let mut t = TreeMatrix::default();
        t.reshape(lambda);
        for k in 0..lambda.len() {
            let mut i = k;
            while i != NO_DOF {
                t[(k, i)] = m[(k, i)];
                i = lambda[i];
            }
        }
        t
    }

    #[inline]
    fn at(&self, (k, i): (usize, usize)) -> usize {
        debug_assert!(i <= k && self.depth[i] <= self.depth[k], "({k}, {i}) is not on the tree");
        self.start[k] + self.depth[k] - self.depth[i]
    }
}

impl<T> Index<(usize, usize)> for TreeMatrix<T>
where
    T: Scalar,
{
    type Output = T;
    #[inline]
    fn index(&self, ki: (usize, usize)) -> &T {
        &self.vals[self.at(ki)]
    }
}

impl<T: Scalar> IndexMut<(usize, usize)> for TreeMatrix<T> {
    #[inline]
    fn index_mut(&mut self, ki: (usize, usize)) -> &mut T {
        let a = self.at(ki);
        &mut self.vals[a]
    }
}

/// M = Lᵀ L in place (L in the ancestor entries of `m`, rows as stored: entry j of row k is L_{k, λʲ(k)}).
/// False if a pivot is not positive (on the primal values).
pub fn ltl_in_place<T: Scalar>(m: &mut TreeMatrix<T>, lambda: &[usize]) -> bool {
    let TreeMatrix { depth, start, vals } = m;
    for k in (0..lambda.len()).rev() {
        let (sk, dk) = (start[k], depth[k]);
        let d = vals[sk];
        if d.re() <= 0.0 || !d.re().is_finite() {
            return false;
        }
        let a = d.sqrt();
        vals[sk] = a;
        let r = T::one() / a;
        vals[sk + 1..=sk + dk].iter_mut().for_each(|x| *x *= r);
        // M_ij −= L_ki L_kj for i an ancestor of k, j = i or an ancestor of i (row i from its start)
        let (mut i, mut ji) = (lambda[k], 1);
        while i != NO_DOF {
            let lki = vals[sk + ji];
            let si = start[i];
            for t in 0..=depth[i] {
                let lkj = vals[sk + ji + t];
                vals[si + t] -= lki * lkj;
            }
            i = lambda[i];
            ji += 1;
        }
    }
    true
}

/// b ← L⁻ᵀ b (Lᵀ upper triangular: from the leaves to the root; each DoF updates only its ancestors).
pub fn lt_solve_in_place<T: Scalar>(l: &TreeMatrix<T>, lambda: &[usize], b: &mut [T]) {
    for k in (0..b.len()).rev() {
        lt_solve_step(l, lambda, b, k);
    }
}

/// b ← L⁻ᵀ b for three right-hand sides at once (`b[k]`: their entries at DoF k; a contact's rows n, t1, t2)
/// supported on `support`: ancestor-closed (every ancestor of a member is a member), sorted ascending. The result
/// has the same support; entries outside it are neither read nor written. Each column by the operations of
/// [`lt_solve_in_place`] (bit for bit), one walk of L's rows for the three.
pub fn lt_solve_on3<T: Scalar>(l: &TreeMatrix<T>, lambda: &[usize], b: &mut [[T; 3]], support: &[usize]) {
    for &k in support.iter().rev() {
        let row = l.row(k);
        let y = b[k].map(|x| x / row[0]);
        b[k] = y;
        let mut i = lambda[k];
        for &lki in &row[1..] {
            for (bi, yi) in b[i].iter_mut().zip(y) {
                *bi -= lki * yi;
            }
            i = lambda[i];
        }
    }
}

#[inline]
fn lt_solve_step<T: Scalar>(l: &TreeMatrix<T>, lambda: &[usize], b: &mut [T], k: usize) {
    let row = l.row(k);
    let y = b[k] / row[0];
    b[k] = y;
    let mut i = lambda[k];
    for &lki in &row[1..] {
        b[i] -= lki * y;
        i = lambda[i];
    }
}

/// b ← L⁻¹ b (from the root to the leaves; each DoF reads its ancestors).
pub fn l_solve_in_place<T: Scalar>(l: &TreeMatrix<T>, lambda: &[usize], b: &mut [T]) {
    for k in 0..b.len() {
        let row = l.row(k);
        let mut s = b[k];
        let mut i = lambda[k];
        for &lki in &row[1..] {
            s -= lki * b[i];
            i = lambda[i];
        }
        b[k] = s / row[0];
    }
}

/// Solve M x = Lᵀ L x = b in place.
pub fn ltl_solve_in_place<T: Scalar>(l: &TreeMatrix<T>, lambda: &[usize], b: &mut [T]) {
    lt_solve_in_place(l, lambda, b);
    l_solve_in_place(l, lambda, b);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{crba, DynData, DynModel};
    use nalgebra::DMatrix;

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
        let mut l = TreeMatrix::from_dense(&mm, &lambda);
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
        // three columns on a support (the ancestors of the last DoF of each branch's end): as one by one, bit for bit,
        // and untouched outside it
        let mut support: Vec<usize> = [n - 1, n / 2]
            .iter()
            .flat_map(|&k| std::iter::successors(Some(k), |&i| (lambda[i] != NO_DOF).then(|| lambda[i])))
            .collect();
        support.sort_unstable();
        support.dedup();
        let col = |m: usize| -> Vec<f64> {
            (0..n).map(|i| if support.contains(&i) { b[(i + 3 * m) % n] } else { 0.0 }).collect()
        };
        let mut three: Vec<[f64; 3]> = (0..n).map(|i| [col(0)[i], col(1)[i], col(2)[i]]).collect();
        three.iter_mut().enumerate().filter(|(i, _)| !support.contains(i)).for_each(|(_, x)| *x = [7.0; 3]);
        lt_solve_on3(&l, &lambda, &mut three, &support);
        for m in 0..3 {
            let mut one = col(m);
            lt_solve_in_place(&l, &lambda, &mut one);
            for i in 0..n {
                let want = if support.contains(&i) { one[i] } else { 7.0 };
                assert_eq!(three[i][m].to_bits(), want.to_bits(), "column {m}, DoF {i}");
            }
        }
        let mut x = b.clone();
        ltl_solve_in_place(&l, &lambda, &mut x);
        let dense = mm.clone().cholesky().unwrap().solve(&nalgebra::DVector::from_column_slice(&b));
        let err = (0..n).map(|i| (x[i] - dense[i]).abs()).fold(0.0, f64::max);
        assert!(err < 1e-10, "LTL solve vs dense: {err:e}");
    }

    /// `crba_tree_into` writes the dense M's ancestor entries bit for bit, in Σ (depth + 1) entries.
    #[test]
    fn tree_storage_matches_the_dense_one() {
        let m = torsion_model::builder::floating_tree();
        let dm = DynModel::<f64>::from_model(&m).unwrap();
        let q = torsion_model::builder::example_configuration(&m, 5);
        let mut d = DynData::new(&dm);
        let dense = crba(&dm, &q, &mut d).unwrap();
        let mut lambda = vec![];
        dof_parents(&dm, &mut lambda);
        let n = dm.nv;
        let mut tree = TreeMatrix::default();
        tree.reshape(&lambda);
        crate::crba_tree_into(&dm, &q, &mut d, &mut tree).unwrap();
        let each = |f: &mut dyn FnMut(usize, usize)| {
            for k in 0..n {
                let mut i = k;
                while i != NO_DOF {
                    f(k, i);
                    i = lambda[i];
                }
            }
        };
        let mut count = 0;
        each(&mut |k, i| {
            assert_eq!(tree[(k, i)].to_bits(), dense[(k, i)].to_bits(), "M[{k},{i}]");
            count += 1;
        });
        assert_eq!(tree.stored(), count);
        assert!(count < n * n);
        let mut wrong = TreeMatrix::default();
        wrong.reshape(&lambda[..n - 1]);
        assert!(crate::crba_tree_into(&dm, &q, &mut d, &mut wrong).is_err());
    }
}
