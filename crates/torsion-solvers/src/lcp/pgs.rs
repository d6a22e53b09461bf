//! Projected Gauss–Seidel on the boxed LCP (spec 004 §3.9 fallback chain, §4.3 baseline (b)): rows in order
//! (normals first), λ_i ← Π_i(λ_i − w_i / A_ii) with the friction box ±μ λ_n taken from the current normal
//! impulse. Stops when the natural-map residual max_i |λ_i − Π_i(λ_i − w_i)| ≤ tol · max(1, ‖b‖∞), or at the
//! sweep cap (D10: 1000 sweeps, tol 1e-10), and reports convergence; then the validity check (§3.3).
use super::active_set::classify;
use super::problem::{BoxedLcp, Row};
use super::solution::{LcpFailure, LcpSolution, LcpSolverKind};
use nalgebra::DVector;

#[derive(Clone, Copy, Debug)]
pub struct PgsOptions {
    pub max_sweeps: usize,
    /// natural-map residual, relative to max(1, ‖b‖∞)
    pub tol: f64,
    /// added to each A_ii (CFM; 0 = none)
    pub cfm: f64,
    pub validity_tol: f64,
}

impl Default for PgsOptions {
    fn default() -> Self {
        PgsOptions { max_sweeps: 1000, tol: 1e-10, cfm: 0.0, validity_tol: 1e-6 }
    }
}

fn project(lcp: &BoxedLcp, f: &DVector<f64>, i: usize, x: f64) -> f64 {
    match lcp.rows[i] {
        Row::Normal => x.max(0.0),
        Row::Friction { normal, mu } => {
            let r = mu * f[normal].max(0.0);
            x.clamp(-r, r)
        }
    }
}

/// The natural-map residual max_i |λ_i − Π_i(λ_i − w_i)|.
pub fn natural_residual(lcp: &BoxedLcp, f: &DVector<f64>) -> f64 {
    let w = lcp.w(f);
    (0..lcp.len()).map(|i| (f[i] - project(lcp, f, i, f[i] - w[i])).abs()).fold(0.0, f64::max)
}

/// Solve with PGS from λ₀ (zeros when None).
pub fn solve_pgs(lcp: &BoxedLcp, o: &PgsOptions, start: Option<&DVector<f64>>) -> LcpSolution {
    let m = lcp.len();
    let order = lcp.order();
    let mut f = start.cloned().unwrap_or_else(|| DVector::zeros(m));
    let tol = o.tol * lcp.scale();
    let mut sweeps = 0;
    let mut residual = natural_residual(lcp, &f);
    while residual > tol && sweeps < o.max_sweeps {
        sweeps += 1;
        for &i in &order {
            let d = lcp.a[(i, i)] + o.cfm;
            if d <= 0.0 {
                continue;
            }
            let wi = (lcp.a.row(i) * &f)[0] + lcp.b[i];
            f[i] = project(lcp, &f, i, f[i] - wi / d);
        }
        residual = natural_residual(lcp, &f);
    }
    let w = lcp.w(&f);
    let validity = lcp.check(&f, o.validity_tol);
    let failure = if residual > tol {
        Some(LcpFailure::NotConverged { residual })
    } else if !validity.valid {
        Some(LcpFailure::Invalid)
    } else {
        None
    };
    let classes = classify(lcp, &f, &w, o.validity_tol * f.amax().max(1.0));
    LcpSolution { solver: LcpSolverKind::Pgs, lambda: f, w, classes, iterations: sweeps, validity, failure }
}
