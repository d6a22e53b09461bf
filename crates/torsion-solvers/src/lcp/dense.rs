//! The square solves of the active-set systems (spec 004 §3.3 Eq. 15, docs/decisions.md spec 004 D11) on reused
//! storage (design.md §7): LU with full pivoting (nalgebra's `FullPivLU` steps, `gauss_step` / `gauss_step_swap`,
//! run on the buffer: bit-identical to `full_piv_lu`, no heap allocation once the buffers have held a system as
//! large) and, when its pivots fall to roundoff, nalgebra's SVD least-squares minimum-norm solution, which still
//! allocates its factors (a rank-deficient A: a box resting on its face; see docs/decisions.md D11).
use crate::contact::buffers::reshape_zeroed;
use nalgebra::{DMatrix, DVector};
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

/// Pivot ratio below which the LU counts as singular (D11).
const PIVOT_RATIO: f64 = 1e-11;
/// Buffers of a square solve M x = r; the solution is `x`.
#[derive(Clone, Debug)]
pub struct DenseSolver {
    lu: DMatrix<f64>,
    p: Vec<(usize, usize)>,
    q: Vec<(usize, usize)>,
    pub x: DVector<f64>,
    /// the singular systems solved so far (each one an SVD, which allocates)
    pub singular: usize,
}

impl Default for DenseSolver {
    fn default() -> Self {
        DenseSolver {
            lu: DMatrix::from_vec(0, 0, vec![]),
            p: vec![],
            q: vec![],
            x: DVector::from_vec(vec![]),
            singular: 0,
        }
    }
}

impl DenseSolver {
    /// Solve M x = r into `self.x`: LU with full pivoting when its pivots are well above roundoff (ratio 1e-11),
    /// otherwise the SVD's least-squares minimum-norm solution (D11). Some(singular), None only when the SVD
    /// fails.
    pub fn solve(&mut self, m: &DMatrix<f64>, r: &DVector<f64>) -> Option<bool> {
        let n = m.nrows();
        copy_vec(&mut self.x, r);
        if n == 0 {
            return Some(false);
        }
        self.factor(m);
        let lu = &self.lu;
        let d = (0..n).map(|i| lu[(i, i)].abs());
        let (dmin, dmax) = d.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| (a.min(x), b.max(x)));
        if dmin > PIVOT_RATIO * dmax && dmax > 0.0 && lu[(n - 1, n - 1)] != 0.0 {
            // FullPivLU::solve_mut
            for &(i, j) in &self.p {
                self.x.swap_rows(i, j);
            }
            let _ = lu.solve_lower_triangular_with_diag_mut(&mut self.x, 1.0);
            let _ = lu.solve_upper_triangular_mut(&mut self.x);
            for &(i, j) in self.q.iter().rev() {
                self.x.swap_rows(i, j);
            }
            return Some(false);
        }
        // the SVD's least-squares minimum-norm solution (allocates: nalgebra's `SVD` owns its factors)
        self.singular += 1;
        let svd = m.clone().svd(true, true);
        let tol = PIVOT_RATIO * svd.singular_values.max().max(f64::MIN_POSITIVE);
        self.x.copy_from(&svd.solve(r, tol).ok()?);
        Some(true)
    }

    /// `FullPivLU::new` on the buffer (the same steps, so the same factors).
    fn factor(&mut self, m: &DMatrix<f64>) {
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
        // a rank-deficient one (J Jᵀ, 5 rows spanning 3 motions): the SVD branch, flagged
        let b = DMatrix::from_fn(3, 7, |i, j| ((i * 7 + j) as f64 * 1.3).cos() + (i == j) as u8 as f64);
        let jm = DMatrix::from_fn(5, 7, |i, j| if i < 3 { b[(i, j)] } else { b[(0, j)] - 0.5 * b[(2, j)] });
        let m = &jm * jm.transpose();
        let r = DVector::from_fn(5, |i, _| 0.3 - i as f64 * 0.2);
        assert_eq!(sv.solve(&m, &r), Some(true));
        assert!((m.transpose() * (&m * &sv.x - &r)).amax() < 1e-12, "normal equations");
    }
}
