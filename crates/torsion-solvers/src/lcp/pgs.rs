//! Projected Gauss–Seidel on the boxed LCP (spec 004 §3.9 fallback chain, §4.3 baseline (b)): rows in order
//! (normals first), λ_i ← Π_i(λ_i − w_i / A_ii) with the friction box ±μ λ_n taken from the current normal
//! impulse. Stops when the natural-map residual max_i |λ_i − Π_i(λ_i − w_i)| ≤ tol · max(1, ‖b‖∞), or at the
//! sweep cap (D10: 1000 sweeps, tol 1e-10), and reports convergence; then the validity check (§3.3).
use super::active_set::classify_into;
use super::dense::{copy_vec, zeroed};
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
    natural_residual_w(lcp, f, &lcp.w(f))
}

/// [`natural_residual`] with w = A λ + b given.
fn natural_residual_w(lcp: &BoxedLcp, f: &DVector<f64>, w: &DVector<f64>) -> f64 {
    (0..lcp.len()).map(|i| (f[i] - project(lcp, f, i, f[i] - w[i])).abs()).fold(0.0, f64::max)
}

/// The buffers of PGS (the row order and w), reused from solve to solve.
#[derive(Clone, Debug, Default)]
pub struct PgsScratch {
    order: Vec<usize>,
    w: DVector<f64>,
}

/// Solve with PGS from λ₀ (zeros when None).
pub fn solve_pgs(lcp: &BoxedLcp, o: &PgsOptions, start: Option<&DVector<f64>>) -> LcpSolution {
    let mut out = LcpSolution::empty(LcpSolverKind::Pgs);
    solve_pgs_into(lcp, o, start, &mut PgsScratch::default(), &mut out);
    out
}

/// [`solve_pgs`] in reused buffers (`sc`) into `out`'s storage.
pub fn solve_pgs_into(
    lcp: &BoxedLcp,
    o: &PgsOptions,
    start: Option<&DVector<f64>>,
    sc: &mut PgsScratch,
    out: &mut LcpSolution,
) {
    let m = lcp.len();
    lcp.order_into(&mut sc.order);
    let f = &mut out.lambda;
    match start {
        Some(s) => copy_vec(f, s),
        None => zeroed(f, m),
    }
    let tol = o.tol * lcp.scale();
    let mut sweeps = 0;
    lcp.w_into(f, &mut sc.w);
    let mut residual = natural_residual_w(lcp, f, &sc.w);
    while residual > tol && sweeps < o.max_sweeps {
        sweeps += 1;
        for &i in &sc.order {
            let d = lcp.a[(i, i)] + o.cfm;
            if d <= 0.0 {
                continue;
            }
            let wi = lcp.w_row(i, f);
            f[i] = project(lcp, f, i, f[i] - wi / d);
        }
        lcp.w_into(f, &mut sc.w);
        residual = natural_residual_w(lcp, f, &sc.w);
    }
    let validity = lcp.check_into(f, o.validity_tol, &mut out.w);
    let failure = if residual > tol {
        Some(LcpFailure::NotConverged { residual })
    } else if !validity.valid {
        Some(LcpFailure::Invalid)
    } else {
        None
    };
    classify_into(lcp, f, &out.w, o.validity_tol * f.amax().max(1.0), &mut out.classes);
    out.solver = LcpSolverKind::Pgs;
    out.iterations = sweeps;
    out.validity = validity;
    out.failure = failure;
}
