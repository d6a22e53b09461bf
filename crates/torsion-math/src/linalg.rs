//! Small dense factorisations shared by the dynamics (M⁻¹ in the ABA derivatives) and the contact solvers
//! (ADMM, KKT systems): Cholesky in place, solves, inverse, the profile (envelope) Cholesky of the ncp direct
//! solve, and the complete orthogonal decomposition of the ncp fixed point's singular KKT system (`Cod`).
//! Generic over the scalar (the profile variant and `Cod`: f64); no allocation once the buffers are grown.
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

/// Minimum-norm (pseudo-inverse) solutions x = A⁺b and y = A⁺ᵀc of a square, possibly rank-deficient A without
/// forming A⁺: the complete orthogonal decomposition A P = Q [T 0; 0 0] Z (Golub & Van Loan §5.4.2; LAPACK
/// xGEQP3 then xTZRZF). Column-pivoted Householder QR A P = Q R, stopped at rank r where every remaining column's
/// norm is ≤ `rel_tol` × the first pivot's (R₂₂ dropped); then r reflections from the right turn the trapezoid
/// [R₁₁ R₁₂] into [T 0] Z (only when r < n). Then A⁺ = P Z₁ᵀ T⁻¹ Q₁ᵀ (Z₁, Q₁: the first r rows / columns).
/// Everything lives in reused buffers: no allocation once grown.
#[derive(Clone, Debug, Default)]
pub struct Cod {
    n: usize,
    rank: usize,
    /// column-major n × n: T (R above the rank) on and above the diagonal, the QR reflectors' tails below it, the
    /// RZ reflectors' tails in rows < rank, columns ≥ rank
    a: Vec<f64>,
    tau_q: Vec<f64>,
    tau_z: Vec<f64>,
    /// A P's column j is A's column `perm[j]`
    perm: Vec<usize>,
    work: Vec<f64>,
}

/// The Householder reflection H = I − τ v vᵀ (v₀ = 1, v's tail overwriting `tail`) with H (x₀, tail) = (β, 0):
/// returns (β, τ) (τ = 0: H = I, when the tail is already 0). LAPACK xLARFG.
fn householder(x0: f64, tail: &mut [f64]) -> (f64, f64) {
    let xn = dot(tail, tail).sqrt();
    if xn == 0.0 {
        return (x0, 0.0);
    }
    let beta = -x0.hypot(xn).copysign(x0);
    let scale = 1.0 / (x0 - beta);
    tail.iter_mut().for_each(|t| *t *= scale);
    (beta, (beta - x0) / beta)
}

impl Cod {
    /// The n × n matrix to factor (column-major, zeroed), to fill before [`Cod::factor`].
    pub fn matrix_mut(&mut self, n: usize) -> &mut [f64] {
        self.n = n;
        self.rank = 0;
        self.a.clear();
        self.a.resize(n * n, 0.0);
        &mut self.a
    }

    /// The matrix's size n.
    pub fn dim(&self) -> usize {
        self.n
    }

    /// Its numerical rank, by the last [`Cod::factor`].
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Factor the matrix of [`Cod::matrix_mut`] in place; returns the rank.
    pub fn factor(&mut self, rel_tol: f64) -> usize {
        let n = self.n;
        let Cod { a, tau_q, tau_z, perm, work, .. } = self;
        perm.clear();
        perm.extend(0..n);
        tau_q.clear();
        tau_z.clear();
        let mut first = 0.0;
        let mut r = 0;
        // column-pivoted QR (the pivot: the remaining column of largest norm, the first of equals)
        for k in 0..n {
            let (mut p, mut best) = (k, -1.0);
            for j in k..n {
                let c = &a[j * n + k..(j + 1) * n];
                let s = dot(c, c);
                if s > best {
                    (p, best) = (j, s);
                }
            }
            let best = best.sqrt();
            if k == 0 {
                first = best;
            }
            if best == 0.0 || best <= rel_tol * first {
                break;
            }
            if p != k {
                for i in 0..n {
                    a.swap(k * n + i, p * n + i);
                }
                perm.swap(k, p);
            }
            let (beta, tau) = householder(a[k * n + k], &mut a[k * n + k + 1..(k + 1) * n]);
            a[k * n + k] = beta;
            tau_q.push(tau);
            let (head, rest) = a.split_at_mut((k + 1) * n);
            let v = &head[k * n + k + 1..];
            for c in rest.chunks_exact_mut(n) {
                let s = tau * (c[k] + dot(v, &c[k + 1..]));
                c[k] -= s;
                c[k + 1..].iter_mut().zip(v).for_each(|(x, &vi)| *x -= s * vi);
            }
            r = k + 1;
        }
        self.rank = r;
        if r == n {
            return r;
        }
        // [R₁₁ R₁₂] = [T 0] Z: row k's reflection acts on columns k and r.., applied to rows ≤ k (last row first)
        tau_z.resize(r, 0.0);
        work.resize(n.max(1), 0.0);
        for k in (0..r).rev() {
            // row k's tail (columns r..) gathered into work[k..k + n − r]
            let (s, tail) = work.split_at_mut(k);
            let tail = &mut tail[..n - r];
            tail.iter_mut().zip(r..n).for_each(|(t, j)| *t = a[j * n + k]);
            let (beta, tau) = householder(a[k * n + k], tail);
            if tau == 0.0 {
                continue;
            }
            a[k * n + k] = beta;
            tail.iter().zip(r..n).for_each(|(&t, j)| a[j * n + k] = t);
            tau_z[k] = tau;
            // rows i < k: s_i = τ (a_ik + Σ_j a_ij v_j), then a_ik −= s_i, a_ij −= s_i v_j
            s.copy_from_slice(&a[k * n..k * n + k]);
            for (&vj, j) in tail.iter().zip(r..n) {
                s.iter_mut().zip(&a[j * n..j * n + k]).for_each(|(s, &x)| *s += x * vj);
            }
            s.iter_mut().for_each(|s| *s *= tau);
            a[k * n..k * n + k].iter_mut().zip(s.iter()).for_each(|(x, &s)| *x -= s);
            for (&vj, j) in tail.iter().zip(r..n) {
                a[j * n..j * n + k].iter_mut().zip(s.iter()).for_each(|(x, &s)| *x -= s * vj);
            }
        }
        r
    }

    /// y ← H y for the QR reflection k.
    fn reflect_q(&self, k: usize, y: &mut [f64]) {
        let n = self.n;
        let v = &self.a[k * n + k + 1..(k + 1) * n];
        let s = self.tau_q[k] * (y[k] + dot(v, &y[k + 1..n]));
        y[k] -= s;
        y[k + 1..n].iter_mut().zip(v).for_each(|(x, &vi)| *x -= s * vi);
    }

    /// y ← H y for the RZ reflection k (on coordinates k and rank..).
    fn reflect_z(&self, k: usize, y: &mut [f64]) {
        let (n, r, a) = (self.n, self.rank, &self.a);
        let tau = self.tau_z[k];
        if tau == 0.0 {
            return;
        }
        let s = tau * (y[k] + (r..n).map(|j| a[j * n + k] * y[j]).sum::<f64>());
        y[k] -= s;
        for j in r..n {
            y[j] -= s * a[j * n + k];
        }
    }

    /// x = A⁺ b (`b[..n]`, overwritten as scratch; `x[..n]`).
    pub fn solve(&self, b: &mut [f64], x: &mut [f64]) {
        let (n, r, a) = (self.n, self.rank, &self.a);
        for k in 0..r {
            self.reflect_q(k, b);
        }
        // T s = (Q₁ᵀ b), back substitution
        for i in (0..r).rev() {
            let s: f64 = (i + 1..r).map(|j| a[j * n + i] * b[j]).sum();
            b[i] = (b[i] - s) / a[i * n + i];
        }
        b[r..n].fill(0.0);
        if r < n {
            for k in 0..r {
                self.reflect_z(k, b);
            }
        }
        for (j, &p) in self.perm.iter().enumerate() {
            x[p] = b[j];
        }
    }

    /// The null space's j-th basis vector (j < n − rank) into `out[..n]`: P Zᵀ e_(rank+j), since A P Zᵀ = Q [T 0; 0 0];
    /// the n − rank vectors are orthonormal. `work[..n]`: scratch (no allocation).
    pub fn null_vector(&self, j: usize, work: &mut [f64], out: &mut [f64]) {
        let (n, r) = (self.n, self.rank);
        let y = &mut work[..n];
        y.fill(0.0);
        y[r + j] = 1.0;
        for k in 0..r {
            self.reflect_z(k, y);
        }
        for (i, &p) in self.perm.iter().enumerate() {
            out[p] = y[i];
        }
    }

    /// y = A⁺ᵀ c (`c[..n]`, `y[..n]`).
    pub fn solve_transpose(&self, c: &[f64], y: &mut [f64]) {
        let (n, r, a) = (self.n, self.rank, &self.a);
        for (j, &p) in self.perm.iter().enumerate() {
            y[j] = c[p];
        }
        if r < n {
            for k in (0..r).rev() {
                self.reflect_z(k, y);
            }
        }
        // Tᵀ s = (Z₁ Pᵀ c), forward substitution
        for i in 0..r {
            let s = dot(&a[i * n..i * n + i], &y[..i]);
            y[i] = (y[i] - s) / a[i * n + i];
        }
        y[r..n].fill(0.0);
        for k in (0..r).rev() {
            self.reflect_q(k, y);
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
    /// `Cod`'s solves equal the SVD pseudo-inverse's products (nalgebra, the same relative cut-off) to round-off
    /// on empty, full-rank and rank-deficient matrices (rank 0 to n: products of n × r and r × n factors, one with a
    /// zero and one with a repeated column), the rank is the SVD's, and `null_vector` spans an orthonormal null space.
    #[test]
    fn cod_solves_match_the_svd_pseudo_inverse() {
        let mut cod = Cod::default();
        let mut seed = 1u64;
        let mut rnd = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        };
        cod.matrix_mut(0);
        assert_eq!(cod.factor(1e-11), 0);
        for (n, r) in [(1, 0), (1, 1), (3, 3), (5, 2), (7, 7), (8, 5), (12, 1), (12, 11), (20, 13)] {
            let (u, v) = (DMatrix::from_fn(n, r, |_, _| rnd()), DMatrix::from_fn(r, n, |_, _| rnd()));
            let mut m = &u * &v;
            if n > 3 && r < n {
                m.column_mut(1).fill(0.0);
                let c = m.column(2).clone_owned();
                m.column_mut(3).copy_from(&c);
            }
            cod.matrix_mut(n).copy_from_slice(m.as_slice());
            let rank = cod.factor(1e-11);
            let svd = m.clone().svd(true, true);
            let tol = 1e-11 * svd.singular_values.max().max(1e-300);
            assert_eq!(rank, svd.singular_values.iter().filter(|&&s| s > tol).count(), "n {n}, r {r}: rank");
            assert_eq!((cod.dim(), cod.rank()), (n, rank));
            let pinv = svd.pseudo_inverse(tol).unwrap();
            let b: Vec<f64> = (0..n).map(|_| rnd()).collect();
            let (mut bb, mut x, mut y) = (b.clone(), vec![0.0; n], vec![0.0; n]);
            cod.solve(&mut bb, &mut x);
            cod.solve_transpose(&b, &mut y);
            let bv = nalgebra::DVector::from_column_slice(&b);
            let (xs, ys) = (&pinv * &bv, pinv.transpose() * &bv);
            let scale = 1.0 + xs.amax().max(ys.amax());
            let ex = (nalgebra::DVector::from_column_slice(&x) - xs).amax() / scale;
            let ey = (nalgebra::DVector::from_column_slice(&y) - ys).amax() / scale;
            assert!(ex < 1e-12 && ey < 1e-12, "n {n}, r {r}: A⁺b off by {ex:e}, A⁺ᵀb by {ey:e}");
            // the null space: n − rank orthonormal vectors that A maps to 0
            let (mut work, mut z) = (vec![0.0; n], vec![vec![0.0; n]; n - rank]);
            for (j, zj) in z.iter_mut().enumerate() {
                cod.null_vector(j, &mut work, zj);
                let az = &m * nalgebra::DVector::from_column_slice(zj);
                assert!(az.amax() < 1e-12 * (1.0 + m.amax()), "n {n}, r {r}: A z_{j} = {:e}", az.amax());
            }
            for (i, zi) in z.iter().enumerate() {
                for (j, zj) in z.iter().enumerate() {
                    let d: f64 = zi.iter().zip(zj).map(|(a, b)| a * b).sum();
                    assert!((d - if i == j { 1.0 } else { 0.0 }).abs() < 1e-13, "n {n}, r {r}: z_{i}·z_{j} = {d}");
                }
            }
        }
    }
}
