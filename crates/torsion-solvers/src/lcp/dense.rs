//! The square solves of the active-set systems (spec 004 §3.3 Eq. 15, docs/decisions.md spec 004 D11) on reused
//! storage (design.md §7): LU with full pivoting (nalgebra's `FullPivLU` steps, `gauss_step` / `gauss_step_swap`,
//! run on the buffer: bit-identical to `full_piv_lu`) and, when its pivots fall to roundoff (a rank-deficient A: a
//! box resting on its face), the least-squares minimum-norm solution by a complete orthogonal decomposition
//! (`torsion_math::linalg::Cod`), in the LCP solves and their derivative alike. No heap allocation once the buffers
//! have held a system as large. Until session 13 the solves took nalgebra's SVD (11–13 allocations per singular
//! system): the decomposition's roundoff-level change of their answers turned the dropped 3-box stack (tests/lcp.rs)
//! into a trajectory with a step PGS stalls on just above its tolerance, which PGS's active-set polish
//! (`pgs::polish_into`) now finishes.
use crate::contact::buffers::reshape_zeroed;
use nalgebra::{DMatrix, DVector};
use torsion_math::linalg::Cod;
use torsion_math::Scalar;

/// `v` ← n zeros on any scalar, reusing its storage (allocates only when n exceeds every earlier length).
pub fn zeroed<T: Scalar>(v: &mut DVector<T>, n: usize) {
    if v.len() == n {
        v.fill(T::zero());
        return;
    }
    let mut data: Vec<T> = std::mem::replace(v, DVector::from_vec(vec![])).data.into();
    data.clear();
    data.resize(n, T::zero());
    *v = DVector::from_vec(data);
}

/// `dst` ← `src`, reusing `dst`'s storage.
pub fn copy_vec(dst: &mut DVector<f64>, src: &DVector<f64>) {
    if dst.len() != src.len() {
        zeroed(dst, src.len());
    }
    dst.copy_from(src);
}

/// Pivot ratio below which the LU counts as singular, and the decomposition's relative rank cut-off (D11).
const PIVOT_RATIO: f64 = 1e-11;
/// Buffers of a square solve M x = r; the solution is `x`. A factorisation ([`DenseSolver::factor`]) serves any
/// number of right-hand sides ([`DenseSolver::solve_factored`]; the implicit derivative's directions).
#[derive(Clone, Debug)]
pub struct DenseSolver {
    lu: DMatrix<f64>,
    p: Vec<(usize, usize)>,
    q: Vec<(usize, usize)>,
    /// the decomposition of the last system when it was singular (false: the LU holds it)
    cod: Cod,
    cod_held: bool,
    /// the right-hand side, overwritten by `Cod::solve`
    rhs: Vec<f64>,
    pub x: DVector<f64>,
    /// the singular systems factorised so far (by the decomposition)
    pub singular: usize,
}

impl Default for DenseSolver {
    fn default() -> Self {
        DenseSolver {
            lu: DMatrix::from_vec(0, 0, vec![]),
            p: vec![],
            q: vec![],
            cod: Cod::default(),
            cod_held: false,
            rhs: vec![],
            x: DVector::from_vec(vec![]),
            singular: 0,
        }
    }
}

impl DenseSolver {
    /// Solve M x = r into `self.x`: LU with full pivoting when its pivots are well above roundoff (ratio 1e-11),
    /// otherwise the least-squares minimum-norm solution (D11). Some(singular) (the Option is kept for the
    /// callers' error paths; a factorisation does not fail).
    pub fn solve(&mut self, m: &DMatrix<f64>, r: &DVector<f64>) -> Option<bool> {
        let singular = self.factor(m);
        self.solve_factored(r);
        Some(singular)
    }

    /// Factorise M for [`DenseSolver::solve_factored`]: LU with full pivoting, or when its pivots fall to roundoff
    /// the complete orthogonal decomposition (rank: the pivoted columns above 1e-11 of the largest's norm). Returns
    /// whether M is singular.
    pub fn factor(&mut self, m: &DMatrix<f64>) -> bool {
        if !self.factor_regular(m) {
            return false;
        }
        self.singular += 1;
        self.cod.matrix_mut(m.nrows()).copy_from_slice(m.as_slice());
        self.cod.factor(PIVOT_RATIO);
        self.cod_held = true;
        true
    }

    /// Factorise M by LU; whether it is singular (then a least-squares factorisation is to be made).
    fn factor_regular(&mut self, m: &DMatrix<f64>) -> bool {
        let n = m.nrows();
        self.cod_held = false;
        if n == 0 {
            zeroed(&mut self.x, 0);
            return false;
        }
        self.factor_lu(m);
        let lu = &self.lu;
        let d = (0..n).map(|i| lu[(i, i)].abs());
        let (dmin, dmax) = d.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| (a.min(x), b.max(x)));
        !(dmin > PIVOT_RATIO * dmax && dmax > 0.0 && lu[(n - 1, n - 1)] != 0.0)
    }

    /// x of the last factorised M for the right-hand side r, into `self.x`: the LU's solve (`FullPivLU::solve_mut`)
    /// or the decomposition's minimum-norm least squares, x = M⁺ r.
    pub fn solve_factored(&mut self, r: &DVector<f64>) {
        copy_vec(&mut self.x, r);
        if r.is_empty() {
            return;
        }
        if self.cod_held {
            self.rhs.clear();
            self.rhs.extend_from_slice(r.as_slice());
            self.cod.solve(&mut self.rhs, self.x.as_mut_slice());
            return;
        }
        let lu = &self.lu;
        for &(i, j) in &self.p {
            self.x.swap_rows(i, j);
        }
        let _ = lu.solve_lower_triangular_with_diag_mut(&mut self.x, 1.0);
        let _ = lu.solve_upper_triangular_mut(&mut self.x);
        for &(i, j) in self.q.iter().rev() {
            self.x.swap_rows(i, j);
        }
    }

    /// `FullPivLU::new` on the buffer (the same steps, so the same factors).
    fn factor_lu(&mut self, m: &DMatrix<f64>) {
        let n = m.nrows();
        let lu = &mut self.lu;
        reshape_zeroed(lu, n, n);
        lu.copy_from(m);
        self.p.clear();
        self.q.clear();
        for i in 0..n {
            let piv = lu.view_range(i.., i..).icamax_full();
            let (row_piv, col_piv) = (piv.0 + i, piv.1 + i);
            let diag = lu[(row_piv, col_piv)];
            if diag == 0.0 {
                break;
            }
            lu.swap_columns(i, col_piv);
            if col_piv != i {
                self.q.push((i, col_piv));
            }
            if row_piv != i {
                self.p.push((i, row_piv));
                lu.columns_range_mut(..i).swap_rows(i, row_piv);
                nalgebra::linalg::gauss_step_swap(lu, diag, i, row_piv);
            } else {
                nalgebra::linalg::gauss_step(lu, diag, i);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regular systems: the same bits as nalgebra's `full_piv_lu().solve`, in one reused solver.
    #[test]
    fn lu_is_nalgebras_bit_for_bit() {
        let mut sv = DenseSolver::default();
        for n in (1..13).chain([3, 24, 5]) {
            let m = DMatrix::from_fn(n, n, |i, j| 1.0 / (1.0 + i as f64 + 2.0 * j as f64) + (i == j) as u8 as f64);
            let r = DVector::from_fn(n, |i, _| (i as f64 * 0.7).sin());
            assert_eq!(sv.solve(&m, &r), Some(false));
            assert_eq!(sv.x, m.clone().full_piv_lu().solve(&r).unwrap(), "n = {n}");
        }
        // a rank-deficient one (J Jᵀ, 5 rows spanning 3 motions): the decomposition's branch, flagged
        let b = DMatrix::from_fn(3, 7, |i, j| ((i * 7 + j) as f64 * 1.3).cos() + (i == j) as u8 as f64);
        let jm = DMatrix::from_fn(5, 7, |i, j| if i < 3 { b[(i, j)] } else { b[(0, j)] - 0.5 * b[(2, j)] });
        let m = &jm * jm.transpose();
        let r = DVector::from_fn(5, |i, _| 0.3 - i as f64 * 0.2);
        assert_eq!(sv.solve(&m, &r), Some(true));
        assert!((m.transpose() * (&m * &sv.x - &r)).amax() < 1e-12, "normal equations");
    }

    /// One factorisation, many right-hand sides: each the same bits as nalgebra's `full_piv_lu().solve` (regular),
    /// or (rank-deficient J Jᵀ of 3 to 8 rows on 2 to 5 motions) the SVD's minimum-norm answer at the solver's
    /// threshold to 1e-12 relative.
    #[test]
    fn factored_solves_are_nalgebras() {
        let mut sv = DenseSolver::default();
        for (n, rank) in [(3, 2), (5, 3), (8, 5), (4, 4), (6, 6)] {
            let b = DMatrix::from_fn(rank, 9, |i, j| ((i * 9 + j) as f64 * 0.37).sin() + (i == j) as u8 as f64);
            let jm =
                DMatrix::from_fn(n, 9, |i, j| if i < rank { b[(i, j)] } else { b[(i % rank, j)] * 0.5 - b[(0, j)] });
            let m = &jm * jm.transpose();
            assert_eq!(sv.factor(&m), rank < n, "n {n}, rank {rank}");
            for k in 0..4 {
                let r = DVector::from_fn(n, |i, _| ((i + 3 * k) as f64 * 0.9).cos());
                sv.solve_factored(&r);
                if rank < n {
                    let svd = m.clone().svd(true, true);
                    let expected = svd.solve(&r, PIVOT_RATIO * svd.singular_values.max()).unwrap();
                    let err = (&sv.x - &expected).amax() / expected.amax();
                    assert!(err < 1e-12, "n {n}, rank {rank}, rhs {k}: {err:e} from the SVD's");
                } else {
                    assert_eq!(sv.x, m.clone().full_piv_lu().solve(&r).unwrap(), "n {n}, rank {rank}, rhs {k}");
                }
            }
        }
        assert_eq!(sv.singular, 3);
    }
}
