//! Projected Gauss–Seidel on the boxed LCP (spec 004 §3.9 fallback chain, §4.3 baseline (b)): rows in order
//! (normals first), λ_i ← Π_i(λ_i − w_i / A_ii) with the friction box ±μ λ_n taken from the current normal
//! impulse. Stops when the natural-map residual max_i |λ_i − Π_i(λ_i − w_i)| ≤ tol · max(1, ‖b‖∞), or at the
//! sweep cap (D10: 1000 sweeps, tol 1e-10), and reports convergence; then the validity check (§3.3).
use super::active_set::{classify_into, expand_into, ActiveSystem, Class};
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
    /// the polish's classes, active-set system and answer (`polish_into`)
    classes: Vec<Class>,
    sys: ActiveSystem,
    lambda: DVector<f64>,
}

impl PgsScratch {
    /// The singular active-set systems the polish solved in these buffers so far (D11).
    pub fn singular_solves(&self) -> usize {
        self.sys.dense.singular
    }
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
    out.polished = false;
}

/// Active-set rounds of [`polish_into`].
const POLISH_ROUNDS: usize = 4;

/// A stalled PGS answer (`NotConverged`) finished by active-set solves (§3.3 Eq. 15: Ã_SS λ_S = −b_S, bound
/// frictions following their normals; least squares when Ã_SS is singular, D11). PGS converges sublinearly along
/// redundant impulses (boxes on faces: more rows than motions) and may stall just above its tolerance. Each round
/// reads the classes off the current (λ, w) — a degenerate row whose complementarity fails (a normal at λ ≈ 0 with
/// w < 0, a friction at its bound with w pushing inward) joins S — and solves for the correction nearest the
/// current answer (Ã_SS (λ_S + δ) = −b_S, δ of minimum norm: redundant impulses keep PGS's split, which its bounds
/// hold). Tried only on a stall inside the validity tolerance (natural-map residual ≤ `validity_tol` · max(1,
/// ‖b‖∞)). Accepted at the first round that meets PGS's own tolerance, else at the last round if it passes the
/// validity check (§3.3) — the criterion every active-set answer (Jade's Dantzig's) is accepted by: degenerate rows
/// (λ ≈ 0 ≈ w) of a redundant set can keep the natural-map residual at ~1e-9 that no class choice removes. Then `sol`
/// holds it (`polished` set) and true is returned. No allocation once the scratch has held an LCP as large.
pub fn polish_into(lcp: &BoxedLcp, o: &PgsOptions, sc: &mut PgsScratch, sol: &mut LcpSolution) -> bool {
    match sol.failure {
        Some(LcpFailure::NotConverged { residual }) if residual <= o.validity_tol * lcp.scale() => {}
        _ => return false,
    }
    let tol = o.tol * lcp.scale();
    copy_vec(&mut sc.lambda, &sol.lambda);
    lcp.w_into(&sc.lambda, &mut sc.w);
    for round in 0..POLISH_ROUNDS {
        classify_into(lcp, &sc.lambda, &sc.w, o.validity_tol * sc.lambda.amax().max(1.0), &mut sc.classes);
        // a row whose complementarity fails at its class joins S: a normal at 0 pushed in (w < 0), a friction at
        // its upper (lower) bound whose w pushes it back inside (w > 0, w < 0)
        for (c, &w) in sc.classes.iter_mut().zip(sc.w.iter()) {
            *c = match *c {
                Class::N if w < 0.0 => Class::C,
                Class::Nh if w > 0.0 => Class::Cf,
                Class::Nl if w < 0.0 => Class::Cf,
                c => c,
            };
        }
        let sys = &mut sc.sys;
        sys.assemble(lcp, &sc.classes);
        for k in 0..sys.s.len() {
            let at_x: f64 = sys.s.iter().enumerate().map(|(l, &j)| sys.at[(k, l)] * sc.lambda[j]).sum();
            sys.rhs[k] = -lcp.b[sys.s[k]] - at_x;
        }
        sys.solve();
        for (k, &i) in sys.s.iter().enumerate() {
            sys.dense.x[k] += sc.lambda[i];
        }
        expand_into(lcp, &sc.classes, &sys.col, &sys.dense.x, None, &mut sc.lambda);
        lcp.w_into(&sc.lambda, &mut sc.w);
        let residual = natural_residual_w(lcp, &sc.lambda, &sc.w);
        if residual <= tol || round + 1 == POLISH_ROUNDS {
            let validity = lcp.check_into(&sc.lambda, o.validity_tol, &mut sc.w);
            if !validity.valid {
                return false;
            }
            std::mem::swap(&mut sol.lambda, &mut sc.lambda);
            std::mem::swap(&mut sol.w, &mut sc.w);
            classify_into(lcp, &sol.lambda, &sol.w, o.validity_tol * sol.lambda.amax().max(1.0), &mut sol.classes);
            sol.validity = validity;
            sol.failure = None;
            sol.polished = true;
            return true;
        }
    }
    false
}
