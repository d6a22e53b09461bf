//! The boxed LCP of Jade (spec 004): the problem, its validity check and its assembly from the shared contact
//! layer (`problem.rs`), row classes and the active-set system (`active_set.rs`), the solvers — baseline
//! ODE-style Dantzig (`dantzig_baseline.rs`), Jade's modified Dantzig (`dantzig_jade.rs`), PGS (`pgs.rs`), the
//! enumeration oracle (`oracle.rs`) —, what they return (`solution.rs`), the implicit derivative at the active
//! set (`backward.rs`), random contact LCPs for tests and experiments (`random.rs`) and the stepper `lcp`
//! (`stepper.rs`: impact and step LCPs on the shared contact layer, the position update, tangent Jacobians). Imports nothing from
//! the other steppers (ncp, xpbd).
pub mod active_set;
pub mod backward;
pub mod ccd;
pub mod dantzig_baseline;
pub mod dantzig_jade;
pub mod oracle;
pub mod pgs;
pub mod problem;
pub mod random;
pub mod solution;
pub mod stepper;

pub use active_set::Class;
pub use ccd::CcdOptions;
pub use dantzig_baseline::solve_baseline;
pub use dantzig_jade::{solve_jade, JadeOptions};
pub use pgs::{solve_pgs, PgsOptions};
pub use problem::{BoxedLcp, Condition, LcpError, Offsets, Row, ValidityReport, Violation};
pub use solution::{LcpFailure, LcpSolution, LcpSolverKind};
pub use stepper::{LcpOptions, LcpReport, LcpSolver, LcpWorkspace, PositionUpdate};

/// The fallback chain (D10): Jade's Dantzig, then (if enabled) PGS from Jade's answer; the first valid answer
/// is returned, naming its solver, with every earlier attempt's failure. No frictionless fallback: when every
/// solver fails the last answer is returned as an error carrying all attempts.
#[derive(Clone, Copy, Debug)]
pub struct ChainOptions {
    pub jade: JadeOptions,
    /// PGS after a failed Jade solve (None: no fallback)
    pub pgs: Option<PgsOptions>,
    /// on a rank-deficient A, return the first valid minimum-norm answer at the valid answer's active set
    /// (`active_set::min_norm_candidates`, D11a). Off by default: it holds a four-point grasp, but changes the
    /// trajectories of box stacks into ones whose LCPs neither Jade's Dantzig nor PGS answer
    pub min_norm: bool,
}

impl Default for ChainOptions {
    fn default() -> Self {
        ChainOptions { jade: JadeOptions::default(), pgs: Some(PgsOptions::default()), min_norm: false }
    }
}

/// An answer from the chain, with the failed attempts before it.
#[derive(Clone, Debug)]
pub struct ChainSolution {
    pub solution: LcpSolution,
    /// (solver, failure) of each attempt that did not answer
    pub failed: Vec<(LcpSolverKind, LcpFailure)>,
    /// the answer is the minimum-norm one at the solver's active set (D11a)
    pub min_norm: bool,
}

/// Every solver of the chain failed: the attempts, last one's answer included.
#[derive(Clone, Debug, thiserror::Error)]
#[error("boxed LCP: no valid solution ({} attempts; last: {:?} {:?})", .attempts.len(), .attempts.last().map(|a| a.solver), .attempts.last().and_then(|a| a.failure.clone()))]
pub struct ChainFailure {
    pub attempts: Vec<LcpSolution>,
}

/// Solve with the chain (see [`ChainOptions`]).
pub fn solve_chain(lcp: &BoxedLcp, o: &ChainOptions) -> Result<ChainSolution, ChainFailure> {
    let mut attempts = vec![solve_jade(lcp, &o.jade)];
    if !attempts[0].ok() {
        if let Some(p) = &o.pgs {
            let start = attempts[0].lambda.clone();
            attempts.push(solve_pgs(lcp, p, Some(&start)));
        }
    }
    match attempts.iter().position(|a| a.ok()) {
        Some(k) => {
            let failed =
                attempts[..k].iter().map(|a| (a.solver, a.failure.clone().unwrap_or(LcpFailure::Invalid))).collect();
            let mut solution = attempts.swap_remove(k);
            let min_norm = o.min_norm && polish(lcp, &mut solution, o.jade.validity_tol);
            Ok(ChainSolution { solution, failed, min_norm })
        }
        None => Err(ChainFailure { attempts }),
    }
}

/// Replace a valid answer by the first valid minimum-norm candidate at its active set when A is rank-deficient
/// there (`active_set::min_norm_candidates`; degenerate rows: λ_n, |w_n| ≤ 1e-9 · max(1, ‖b‖∞)). A candidate must
/// pass the validity check at 1e-9 (an exact solution of its classes), not only the chain's looser tolerance.
fn polish(lcp: &BoxedLcp, sol: &mut LcpSolution, validity_tol: f64) -> bool {
    let tol = 1e-9 * lcp.scale();
    for (lambda, classes) in active_set::min_norm_candidates(lcp, &sol.lambda, &sol.w, &sol.classes, tol) {
        let validity = lcp.check(&lambda, validity_tol.min(1e-9));
        if validity.valid {
            sol.w = lcp.w(&lambda);
            sol.lambda = lambda;
            sol.classes = classes;
            sol.validity = validity;
            return true;
        }
    }
    false
}
