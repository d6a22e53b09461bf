//! Box-constrained quadratic programme min ½ xᵀHx + gᵀx s.t. l ≤ x ≤ u by projected Newton on the free set
//! (Tassa, Mansard & Todorov 2014, "Control-limited differential dynamic programming", Alg. 1 and the reference
//! `boxQP.m`): at each iteration the clamped set is {x = l, ∂ > 0} ∪ {x = u, ∂ < 0}, the Newton step is taken on
//! the free coordinates only (H_ff Cholesky), and an Armijo search projects the trial points on the box. The
//! factor of the last free block is kept for the iLQR feedback gains (K_f = −H_ff⁻¹ Q_ux,f, K_c = 0).
use nalgebra::{DMatrix, DVector};

/// Why `BoxQp::solve` stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoxQpStatus {
    /// H_ff is not positive definite (the caller raises its regularisation)
    NotPositiveDefinite,
    /// the projected Newton direction is not a descent direction (numerically at the optimum)
    NoDescent,
    /// the Armijo search fell below its smallest step
    LineSearchFailed,
    /// the free gradient norm fell below `MIN_GRAD`
    SmallGradient,
    /// the relative improvement fell below `MIN_REL_IMPROVE`
    SmallImprovement,
    /// every coordinate is clamped
    AllClamped,
    /// `MAX_ITER` iterations
    MaxIter,
}

impl BoxQpStatus {
    /// A usable solution (everything but a non-positive-definite free block).
    pub fn ok(self) -> bool {
        self != BoxQpStatus::NotPositiveDefinite
    }
}

// The constants of Tassa's boxQP.m.
const MAX_ITER: usize = 100;
const MIN_GRAD: f64 = 1e-8;
const MIN_REL_IMPROVE: f64 = 1e-8;
const STEP_DEC: f64 = 0.6;
const MIN_STEP: f64 = 1e-22;
const ARMIJO: f64 = 0.1;

/// The solver's buffers for problems of dimension n (no allocation in `solve`).
#[derive(Clone, Debug)]
pub struct BoxQp {
    /// the solution
    pub x: DVector<f64>,
    /// per coordinate: clamped at the solution's last active-set test
    pub clamped: Vec<bool>,
    /// the free coordinates of the last factorisation (ascending), `free_len` of them
    pub free: Vec<usize>,
    pub free_len: usize,
    /// lower-triangular Cholesky factor of H_ff (the leading free_len × free_len block)
    pub chol: DMatrix<f64>,
    grad: DVector<f64>,
    search: DVector<f64>,
    trial: DVector<f64>,
    hx: DVector<f64>,
    rhs: DVector<f64>,
    old_clamped: Vec<bool>,
}

impl BoxQp {
    pub fn new(n: usize) -> Self {
        BoxQp {
            x: DVector::zeros(n),
            clamped: vec![false; n],
            free: vec![0; n],
            free_len: 0,
            chol: DMatrix::zeros(n, n),
            grad: DVector::zeros(n),
            search: DVector::zeros(n),
            trial: DVector::zeros(n),
            hx: DVector::zeros(n),
            rhs: DVector::zeros(n),
            old_clamped: vec![false; n],
        }
    }

    /// ½ xᵀHx + gᵀx (H x into `hx`).
    fn value(h: &DMatrix<f64>, g: &DVector<f64>, x: &DVector<f64>, hx: &mut DVector<f64>) -> f64 {
        hx.gemv(1.0, h, x, 0.0);
        x.dot(g) + 0.5 * x.dot(hx)
    }

    /// Minimise from `x0` (projected onto the box first); infinite bounds are allowed, l ≤ u is required (the
    /// caller checks). The solution is in `self.x`.
    pub fn solve(
        &mut self,
        h: &DMatrix<f64>,
        g: &DVector<f64>,
        lower: &DVector<f64>,
        upper: &DVector<f64>,
        x0: &DVector<f64>,
    ) -> BoxQpStatus {
        let n = g.len();
        for i in 0..n {
            self.x[i] = x0[i].clamp(lower[i], upper[i]);
        }
        let mut value = Self::value(h, g, &self.x, &mut self.hx);
        let mut factorised = false;
        self.free_len = 0;
        for iter in 0..MAX_ITER {
            // gradient and active set
            self.grad.copy_from(g);
            self.grad += &self.hx;
            std::mem::swap(&mut self.clamped, &mut self.old_clamped);
            let mut all_clamped = true;
            for i in 0..n {
                let c = (self.x[i] == lower[i] && self.grad[i] > 0.0) || (self.x[i] == upper[i] && self.grad[i] < 0.0);
                self.clamped[i] = c;
                all_clamped &= c;
            }
            if all_clamped {
                self.free_len = 0;
                return BoxQpStatus::AllClamped;
            }
            if !factorised || self.clamped != self.old_clamped {
                self.free_len = 0;
                for i in 0..n {
                    if !self.clamped[i] {
                        self.free[self.free_len] = i;
                        self.free_len += 1;
                    }
                }
                if !cholesky_subset(h, &self.free[..self.free_len], &mut self.chol) {
                    return BoxQpStatus::NotPositiveDefinite;
                }
                factorised = true;
            }
            let gnorm = self.free[..self.free_len].iter().map(|&i| self.grad[i] * self.grad[i]).sum::<f64>().sqrt();
            if gnorm < MIN_GRAD {
                return BoxQpStatus::SmallGradient;
            }
            // Newton step on the free set with the clamped coordinates held: g + H x_c restricted to the free set
            let nf = self.free_len;
            for (a, &i) in self.free[..nf].iter().enumerate() {
                let mut s = g[i];
                for j in 0..n {
                    if self.clamped[j] {
                        s += h[(i, j)] * self.x[j];
                    }
                }
                self.rhs[a] = s;
            }
            chol_solve_in_place(&self.chol, nf, &mut self.rhs);
            self.search.fill(0.0);
            for (a, &i) in self.free[..nf].iter().enumerate() {
                self.search[i] = -self.rhs[a] - self.x[i];
            }
            let sdotg = self.search.dot(&self.grad);
            if sdotg >= 0.0 {
                return BoxQpStatus::NoDescent;
            }
            // Armijo search along the projected path
            let mut step = 1.0;
            let trial_value = loop {
                for i in 0..n {
                    self.trial[i] = (self.x[i] + step * self.search[i]).clamp(lower[i], upper[i]);
                }
                let vt = Self::value(h, g, &self.trial, &mut self.hx);
                if (vt - value) / (step * sdotg) >= ARMIJO {
                    break vt;
                }
                step *= STEP_DEC;
                if step < MIN_STEP {
                    Self::value(h, g, &self.x, &mut self.hx);
                    return BoxQpStatus::LineSearchFailed;
                }
            };
            let improved = value - trial_value;
            std::mem::swap(&mut self.x, &mut self.trial);
            value = trial_value;
            if iter > 0 && improved < MIN_REL_IMPROVE * value.abs() {
                return BoxQpStatus::SmallImprovement;
            }
        }
        BoxQpStatus::MaxIter
    }
}

/// Cholesky factor L (lower, into the leading block of `l`) of H restricted to `idx`; false if not positive
/// definite. No allocation.
pub(crate) fn cholesky_subset(h: &DMatrix<f64>, idx: &[usize], l: &mut DMatrix<f64>) -> bool {
    let m = idx.len();
    for a in 0..m {
        for b in 0..=a {
            let mut s = h[(idx[a], idx[b])];
            for c in 0..b {
                s -= l[(a, c)] * l[(b, c)];
            }
            if a == b {
                if s <= 0.0 || !s.is_finite() {
                    return false;
                }
                l[(a, a)] = s.sqrt();
            } else {
                l[(a, b)] = s / l[(b, b)];
            }
        }
    }
    true
}

/// Solve L Lᵀ y = b in place for the leading m entries of `b`.
pub(crate) fn chol_solve_in_place(l: &DMatrix<f64>, m: usize, b: &mut DVector<f64>) {
    for a in 0..m {
        let mut s = b[a];
        for c in 0..a {
            s -= l[(a, c)] * b[c];
        }
        b[a] = s / l[(a, a)];
    }
    for a in (0..m).rev() {
        let mut s = b[a];
        for c in a + 1..m {
            s -= l[(c, a)] * b[c];
        }
        b[a] = s / l[(a, a)];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The minimum of the box QP by enumeration of the 3ⁿ active sets (each coordinate at l, at u, or free with
    /// the stationarity of the free block), keeping the feasible candidate of least value.
    fn brute_force(h: &DMatrix<f64>, g: &DVector<f64>, l: &DVector<f64>, u: &DVector<f64>) -> (DVector<f64>, f64) {
        let n = g.len();
        let mut best = (DVector::zeros(n), f64::INFINITY);
        for code in 0..3usize.pow(n as u32) {
            let mut x = DVector::zeros(n);
            let mut free = vec![];
            let mut c = code;
            for i in 0..n {
                match c % 3 {
                    0 => x[i] = l[i],
                    1 => x[i] = u[i],
                    _ => free.push(i),
                }
                c /= 3;
            }
            if !free.is_empty() {
                let hf = DMatrix::from_fn(free.len(), free.len(), |a, b| h[(free[a], free[b])]);
                let rhs = DVector::from_fn(free.len(), |a, _| {
                    -g[free[a]] - (0..n).filter(|j| !free.contains(j)).map(|j| h[(free[a], j)] * x[j]).sum::<f64>()
                });
                let Some(sol) = hf.lu().solve(&rhs) else { continue };
                for (a, &i) in free.iter().enumerate() {
                    x[i] = sol[a];
                }
            }
            if (0..n).any(|i| x[i] < l[i] - 1e-12 || x[i] > u[i] + 1e-12) {
                continue;
            }
            let v = x.dot(g) + 0.5 * x.dot(&(h * &x));
            if v < best.1 {
                best = (x, v);
            }
        }
        best
    }

    /// A small LCG so that the cases are reproducible without a dependency.
    fn lcg(seed: &mut u64) -> f64 {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (*seed >> 11) as f64 / (1u64 << 53) as f64
    }

    /// 300 random strictly convex problems in 1–4 dimensions with boxes that cut the unconstrained minimiser:
    /// boxQP's value equals the brute-force minimum (a convex QP: value equality means the same minimiser).
    #[test]
    fn boxqp_matches_brute_force_on_small_boxes() {
        let mut seed = 7u64;
        let mut worst: f64 = 0.0;
        let mut clamped_cases = 0;
        for case in 0..300 {
            let n = 1 + case % 4;
            let m = DMatrix::from_fn(n, n, |_, _| lcg(&mut seed) * 2.0 - 1.0);
            let h = &m * m.transpose() + DMatrix::identity(n, n) * 0.1;
            let g = DVector::from_fn(n, |_, _| (lcg(&mut seed) * 2.0 - 1.0) * 3.0);
            let l = DVector::from_fn(n, |_, _| -lcg(&mut seed));
            let u = DVector::from_fn(n, |_, _| lcg(&mut seed));
            let x0 = DVector::from_fn(n, |_, _| lcg(&mut seed) * 2.0 - 1.0);
            let mut qp = BoxQp::new(n);
            let status = qp.solve(&h, &g, &l, &u, &x0);
            assert!(status.ok(), "case {case}: {status:?}");
            let (xb, vb) = brute_force(&h, &g, &l, &u);
            let v = qp.x.dot(&g) + 0.5 * qp.x.dot(&(&h * &qp.x));
            assert!((0..n).all(|i| qp.x[i] >= l[i] && qp.x[i] <= u[i]), "case {case}: outside the box");
            let err = (v - vb).abs() / (1.0 + vb.abs());
            worst = worst.max(err);
            assert!(err < 1e-9, "case {case}: value {v} vs brute force {vb} (x {:?} vs {:?})", qp.x, xb);
            assert!((&qp.x - &xb).amax() < 1e-5, "case {case}: x {:?} vs {:?}", qp.x, xb);
            clamped_cases += qp.clamped.iter().any(|&c| c) as usize;
        }
        // the boxes are active in most cases (else this would test the unconstrained Newton step only)
        assert!(clamped_cases > 150, "only {clamped_cases} cases with a clamped coordinate");
        eprintln!("boxQP vs brute force: worst relative value error {worst:e}, {clamped_cases}/300 clamped");
    }

    /// An indefinite free block is reported, not solved.
    #[test]
    fn boxqp_reports_an_indefinite_hessian() {
        let h = DMatrix::from_row_slice(2, 2, &[1.0, 0.0, 0.0, -1.0]);
        let g = DVector::from_vec(vec![0.1, 0.1]);
        let b = DVector::from_element(2, 1.0);
        let mut qp = BoxQp::new(2);
        assert_eq!(qp.solve(&h, &g, &(-&b), &b, &DVector::zeros(2)), BoxQpStatus::NotPositiveDefinite);
    }
}
