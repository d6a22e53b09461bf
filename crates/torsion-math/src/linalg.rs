//! Small dense factorisations shared by the dynamics (M⁻¹ in the ABA derivatives) and the contact solvers
//! (ADMM, KKT systems): Cholesky in place, solves, inverse. Generic over the scalar; no allocation.
use crate::Scalar;
use nalgebra::DMatrix;

/// M = L Lᵀ: L overwrites the lower triangle of `m` (the strict upper triangle is left as it was). False if
/// a pivot is not positive (on the primal values).
pub fn cholesky_in_place<T: Scalar>(m: &mut DMatrix<T>) -> bool {
    let n = m.nrows();
    for j in 0..n {
        let mut djj = m[(j, j)];
        for k in 0..j {
            djj -= m[(j, k)] * m[(j, k)];
        }
        if djj.re() <= 0.0 || !djj.re().is_finite() {
            return false;
        }
        let ljj = djj.sqrt();
        m[(j, j)] = ljj;
        let r = T::one() / ljj;
        for i in j + 1..n {
            let mut s = m[(i, j)];
            for k in 0..j {
                s -= m[(i, k)] * m[(j, k)];
            }
            m[(i, j)] = s * r;
        }
    }
    true
}

/// M⁻¹ = L⁻ᵀ L⁻¹ from the Cholesky factor in the lower triangle of `l` (overwritten by L⁻¹); `out` gets the
/// full symmetric inverse.
pub fn inverse_from_cholesky<T: Scalar>(l: &mut DMatrix<T>, out: &mut DMatrix<T>) {
    let n = l.nrows();
    // L⁻¹ in place (lower triangular), column by column from the left: the diagonal first
    for j in 0..n {
        l[(j, j)] = T::one() / l[(j, j)];
    }
    for j in 0..n {
        for i in j + 1..n {
            // (L⁻¹)_{ij} = −(Σ_{k=j}^{i−1} L_{ik} (L⁻¹)_{kj}) / L_{ii}
            let mut s = T::zero();
            for k in j..i {
                let lk = if k == j { l[(j, j)] } else { l[(k, j)] };
                s += l[(i, k)] * lk;
            }
            l[(i, j)] = -s * l[(i, i)];
        }
    }
    // M⁻¹_{ij} = Σ_{k ≥ max(i, j)} (L⁻¹)_{ki} (L⁻¹)_{kj}
    for i in 0..n {
        for j in 0..=i {
            let mut s = T::zero();
            for k in i..n {
                s += l[(k, i)] * l[(k, j)];
            }
            out[(i, j)] = s;
            out[(j, i)] = s;
        }
    }
}

/// Solve L Lᵀ x = b in place (L in the lower triangle of `l`, from [`cholesky_in_place`]).
pub fn cholesky_solve_in_place<T: Scalar>(l: &DMatrix<T>, b: &mut [T]) {
    let n = l.nrows();
    let ls = l.as_slice();
    // L y = b, column-oriented (axpy over contiguous columns)
    for j in 0..n {
        let yj = b[j] / ls[j + j * n];
        b[j] = yj;
        for (x, &lij) in b[j + 1..n].iter_mut().zip(&ls[j * n + j + 1..(j + 1) * n]) {
            *x -= yj * lij;
        }
    }
    // Lᵀ x = y: row j of Lᵀ is column j of L
    for j in (0..n).rev() {
        let mut s = b[j];
        for (&lij, &xi) in ls[j * n + j + 1..(j + 1) * n].iter().zip(&b[j + 1..n]) {
            s -= lij * xi;
        }
        b[j] = s / ls[j + j * n];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cholesky_inverse_of_a_known_matrix() {
        let a = DMatrix::from_row_slice(3, 3, &[4.0, 1.0, 0.5, 1.0, 3.0, -0.2, 0.5, -0.2, 2.0]);
        let mut l = a.clone();
        assert!(cholesky_in_place(&mut l));
        let mut inv = DMatrix::zeros(3, 3);
        inverse_from_cholesky(&mut l, &mut inv);
        assert!((&inv * &a - DMatrix::identity(3, 3)).amax() < 1e-15);
        let mut bad = DMatrix::from_row_slice(2, 2, &[1.0, 2.0, 2.0, 1.0]);
        assert!(!cholesky_in_place(&mut bad));
    }

    #[test]
    fn cholesky_solve_matches_the_inverse() {
        let a = DMatrix::from_row_slice(3, 3, &[4.0, 1.0, 0.5, 1.0, 3.0, -0.2, 0.5, -0.2, 2.0]);
        let mut l = a.clone();
        assert!(cholesky_in_place(&mut l));
        let mut x = [1.0, -2.0, 0.5];
        cholesky_solve_in_place(&l, &mut x);
        let r = &a * nalgebra::DVector::from_column_slice(&x) - nalgebra::DVector::from_column_slice(&[1.0, -2.0, 0.5]);
        assert!(r.amax() < 1e-15);
    }
}
