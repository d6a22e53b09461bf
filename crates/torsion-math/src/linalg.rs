//! Small dense factorisations shared by the dynamics (M⁻¹ in the ABA derivatives) and the contact solvers
//! (ADMM, KKT systems): Cholesky in place, solves, inverse, and the profile (envelope) Cholesky of the ncp direct
//! solve. Generic over the scalar (the profile variant: f64); no allocation.
//!
//! The factor keeps 1/L_jj on its diagonal (the solves and the inverse multiply instead of dividing); the slice
//! forms work on the leading n × n block of a column-major buffer, so a workspace can reuse one buffer for
//! systems of varying size (the ncp KKT and ADMM factors).
use crate::Scalar;
use nalgebra::DMatrix;

/// A = L Lᵀ for the column-major n × n matrix in `a[..n * n]`: L overwrites the lower triangle, its diagonal
/// stored as 1/L_jj (the strict upper triangle is left as it was). False if a pivot is not positive (on the
/// primal values).
pub fn cholesky_factor<T: Scalar>(a: &mut [T], n: usize) -> bool {
    for j in 0..n {
        let mut djj = a[j + j * n];
        for k in 0..j {
            djj -= a[j + k * n] * a[j + k * n];
        }
        if djj.re() <= 0.0 || !djj.re().is_finite() {
            return false;
        }
        let r = T::one() / djj.sqrt();
        a[j + j * n] = r;
        for i in j + 1..n {
            let mut s = a[i + j * n];
            for k in 0..j {
                s -= a[i + k * n] * a[j + k * n];
            }
            a[i + j * n] = s * r;
        }
    }
    true
}

/// Solve L Lᵀ x = b in place (`b[..n]`) for the factor of [`cholesky_factor`] in `l[..n * n]`.
pub fn cholesky_solve<T: Scalar>(l: &[T], n: usize, b: &mut [T]) {
    let (l, b) = (&l[..n * n], &mut b[..n]);
    // L y = b, column-oriented (axpy over contiguous columns)
    for j in 0..n {
        let yj = b[j] * l[j + j * n];
        b[j] = yj;
        for (x, &lij) in b[j + 1..n].iter_mut().zip(&l[j * n + j + 1..(j + 1) * n]) {
            *x -= yj * lij;
        }
    }
    // Lᵀ x = y: row j of Lᵀ is column j of L
    for j in (0..n).rev() {
        let mut s = b[j];
        for (&lij, &xi) in l[j * n + j + 1..(j + 1) * n].iter().zip(&b[j + 1..n]) {
            s -= lij * xi;
        }
        b[j] = s * l[j + j * n];
    }
}

/// [`cholesky_factor`] of a square matrix (diagonal 1/L_jj).
pub fn cholesky_in_place<T: Scalar>(m: &mut DMatrix<T>) -> bool {
    let n = m.nrows();
    cholesky_factor(m.as_mut_slice(), n)
}

/// M⁻¹ = L⁻ᵀ L⁻¹ from the factor of [`cholesky_in_place`] in the lower triangle of `l` (overwritten by L⁻¹);
/// `out` gets the full symmetric inverse.
pub fn inverse_from_cholesky<T: Scalar>(l: &mut DMatrix<T>, out: &mut DMatrix<T>) {
    let n = l.nrows();
    // L⁻¹ in place (lower triangular), column by column from the left: its diagonal 1/L_jj is already stored
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

/// Solve L Lᵀ x = b in place for the factor of [`cholesky_in_place`] in `l`.
pub fn cholesky_solve_in_place<T: Scalar>(l: &DMatrix<T>, b: &mut [T]) {
    cholesky_solve(l.as_slice(), l.nrows(), b);
}

/// Σ a_k b_k over the shorter length in four interleaved partial sums (k mod 4), added pairwise at the end: a
/// fixed order (deterministic), and four independent add chains instead of one (a sequential sum waits on each
/// add: the profile factor's and the ncp direct solve's dot products were latency-bound).
#[inline]
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut s = [0.0f64; 4];
    let (ca, cb) = (a.chunks_exact(4), b.chunks_exact(4));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for k in 0..4 {
            s[k] += x[k] * y[k];
        }
    }
    for (k, (x, y)) in ra.iter().zip(rb).enumerate() {
        s[k] += x * y;
    }
    (s[0] + s[2]) + (s[1] + s[3])
}

/// The profile (envelope) variant for a row-major symmetric matrix whose rows start late (a column of boxes:
/// block-tridiagonal), used by the ncp direct solve (`ncp/direct.rs`).
/// A = L Lᵀ for the symmetric positive definite n × n `a` (row-major, lower triangle read), L's rows over
/// their profile: `first[i]` = the first non-zero column of row i, below which L's row is zero too (no fill
/// outside the profile), so a banded or block-tridiagonal G (a column of boxes) costs its band only. L
/// overwrites the lower triangle row by row (contiguous dot products), its diagonal stored as 1/L_ii. False if a
/// pivot is not positive.
pub fn profile_cholesky(a: &mut [f64], n: usize, first: &mut Vec<usize>) -> bool {
    first.clear();
    first.extend((0..n).map(|i| (0..i).find(|&j| a[i * n + j] != 0.0).unwrap_or(i)));
    for i in 0..n {
        let fi = first[i];
        for j in fi..=i {
            let k0 = fi.max(first[j]);
            let (ri, rj) = (i * n, j * n);
            let s = a[ri + j] - dot(&a[ri + k0..ri + j], &a[rj + k0..rj + j]);
            if j < i {
                a[ri + j] = s * a[rj + j];
            } else if s > 0.0 && s.is_finite() {
                a[ri + i] = 1.0 / s.sqrt();
            } else {
                return false;
            }
        }
    }
    true
}

/// Solve L Lᵀ x = b in place for the factor of [`profile_cholesky`].
pub fn profile_solve(l: &[f64], n: usize, first: &[usize], b: &mut [f64]) {
    for i in 0..n {
        let r = i * n;
        b[i] = (b[i] - dot(&l[r + first[i]..r + i], &b[first[i]..i])) * l[r + i];
    }
    for i in (0..n).rev() {
        let r = i * n;
        b[i] *= l[r + i];
        let xi = b[i];
        for k in first[i]..i {
            b[k] -= l[r + k] * xi;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `dot`'s four partial sums: every length's remainder (0–3 past the chunks) and the shorter slice's length.
    #[test]
    fn dot_sums_the_products_of_the_shorter_length() {
        for n in 0..11 {
            let a: Vec<f64> = (0..n).map(|k| 1.0 + 0.5 * k as f64).collect();
            let b: Vec<f64> = (0..n + 2).map(|k| 2.0 - 0.25 * k as f64).collect();
            let naive: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((dot(&a, &b) - naive).abs() <= 1e-14 * (1.0 + naive.abs()), "n {n}: {} vs {naive}", dot(&a, &b));
            assert_eq!(dot(&a, &b), dot(&b, &a));
        }
    }

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

    #[test]
    fn slice_forms_use_the_leading_block_of_a_larger_buffer() {
        // a 2 × 2 system in a 3 × 3 buffer (a workspace reused for a smaller system): the stale tail is ignored
        let mut buf = [4.0, 1.0, 1.0, 3.0, 7.0, 7.0, 7.0, 7.0, 7.0];
        assert!(cholesky_factor(&mut buf, 2));
        let mut x = [1.0, 2.0, 9.0];
        cholesky_solve(&buf, 2, &mut x);
        assert!((4.0 * x[0] + x[1] - 1.0).abs() < 1e-15 && (x[0] + 3.0 * x[1] - 2.0).abs() < 1e-15);
        assert_eq!(x[2], 9.0);
    }

    #[test]
    fn profile_cholesky_solves_a_banded_system_and_rejects_an_indefinite_one() {
        // a tridiagonal SPD matrix with a zero-profile row start (rows 2.. begin at i−1): the profile factor's
        // solve equals the dense one's
        let n = 6;
        let mut a = vec![0.0; n * n];
        for i in 0..n {
            a[i * n + i] = 4.0 + i as f64;
            if i > 0 {
                a[i * n + i - 1] = -1.0;
                a[(i - 1) * n + i] = -1.0;
            }
        }
        let dense = DMatrix::from_row_slice(n, n, &a);
        let b: Vec<f64> = (0..n).map(|i| 1.0 - 0.3 * i as f64).collect();
        let (mut l, mut first, mut x) = (a.clone(), vec![], b.clone());
        assert!(profile_cholesky(&mut l, n, &mut first));
        assert_eq!(first, vec![0, 0, 1, 2, 3, 4]);
        profile_solve(&l, n, &first, &mut x);
        let r = &dense * nalgebra::DVector::from_column_slice(&x) - nalgebra::DVector::from_column_slice(&b);
        assert!(r.amax() < 1e-14, "{}", r.amax());
        let mut bad = vec![1.0, 2.0, 2.0, 1.0];
        assert!(!profile_cholesky(&mut bad, 2, &mut first));
    }
}
