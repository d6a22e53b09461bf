//! The boxed LCP of Jade (spec 004): the problem, its validity check and its assembly from the shared contact
//! layer (`problem.rs`), row classes and the active-set system (`active_set.rs`) and its in-place solves (`dense.rs`), the solvers — baseline
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
pub mod dense;
pub mod oracle;
pub mod pgs;
pub mod problem;
pub mod random;
pub mod solution;
pub mod stepper;

use nalgebra::DVector;

pub use active_set::Class;
pub use ccd::CcdOptions;
pub use dantzig_baseline::solve_baseline;
pub use dantzig_jade::{solve_jade, solve_jade_into, JadeOptions, JadeScratch};
pub use pgs::{natural_residual, polish_into, solve_pgs, solve_pgs_into, PgsOptions, PgsScratch};
pub use problem::{BoxedLcp, Condition, LcpError, Offsets, Row, ValidityReport, Violation};
pub use solution::{LcpFailure, LcpSolution, LcpSolverKind};
pub use stepper::{LcpOptions, LcpReport, LcpSolver, LcpWorkspace, PositionUpdate};

/// The fallback chain (D10): Jade's Dantzig, then (if enabled) PGS from Jade's answer, a stall of it finished by
/// its active-set polish (`pgs::polish_into`, D7a; `LcpSolution::polished`); the first valid answer is returned,
/// naming its solver, with every earlier attempt's failure. No frictionless fallback: when every
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
    /// PGS's sweeps between its stall checks (D7a): a stall inside the validity tolerance goes to the polish at
    /// once instead of after every sweep of the cap; 0: no checks
    pub stall_every: usize,
}

impl Default for ChainOptions {
    fn default() -> Self {
        ChainOptions { jade: JadeOptions::default(), pgs: Some(PgsOptions::default()), min_norm: false, stall_every: 0 }
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

impl ChainSolution {
    /// An empty answer (storage for [`solve_chain_into`]).
    pub fn empty() -> Self {
        ChainSolution {
            solution: LcpSolution::empty(LcpSolverKind::JadeDantzig),
            failed: Vec::with_capacity(1),
            min_norm: false,
        }
    }
}

/// The chain's buffers, reused from solve to solve (design.md §7): each solver's and its attempts' storage.
#[derive(Clone, Debug)]
pub struct ChainScratch {
    jade: JadeScratch,
    pgs: PgsScratch,
    first: LcpSolution,
    second: LcpSolution,
    /// PGS's iterate between its runs (`pgs_until_stall`)
    restart: DVector<f64>,
}

impl Default for ChainScratch {
    fn default() -> Self {
        ChainScratch {
            jade: JadeScratch::default(),
            pgs: PgsScratch::default(),
            first: LcpSolution::empty(LcpSolverKind::JadeDantzig),
            second: LcpSolution::empty(LcpSolverKind::Pgs),
            restart: DVector::zeros(0),
        }
    }
}

impl ChainScratch {
    /// The singular active-set systems solved in these buffers so far (Jade's directions and PGS's polish; D11).
    pub fn singular_solves(&self) -> usize {
        self.jade.singular_solves() + self.pgs.singular_solves()
    }
}

/// Solve with the chain (see [`ChainOptions`]).
pub fn solve_chain(lcp: &BoxedLcp, o: &ChainOptions) -> Result<ChainSolution, ChainFailure> {
    let mut out = ChainSolution::empty();
    solve_chain_into(lcp, o, &mut ChainScratch::default(), &mut out)?;
    Ok(out)
}

/// [`solve_chain`] in reused buffers (`sc`) into `out`'s storage: no heap allocation once they have held an LCP as
/// large (a failure's report and the minimum-norm polish, off by default, allocate).
pub fn solve_chain_into(
    lcp: &BoxedLcp,
    o: &ChainOptions,
    sc: &mut ChainScratch,
    out: &mut ChainSolution,
) -> Result<(), ChainFailure> {
    solve_jade_into(lcp, &o.jade, &mut sc.jade, &mut sc.first);
    out.failed.clear();
    out.min_norm = false;
    if sc.first.ok() {
        std::mem::swap(&mut out.solution, &mut sc.first);
    } else {
        let Some(p) = &o.pgs else { return Err(ChainFailure { attempts: vec![sc.first.clone()] }) };
        pgs_until_stall(lcp, p, o.stall_every, sc);
        if !sc.second.ok() && !polish_into(lcp, p, &mut sc.pgs, &mut sc.second) {
            return Err(ChainFailure { attempts: vec![sc.first.clone(), sc.second.clone()] });
        }
        out.failed.push((sc.first.solver, sc.first.failure.clone().unwrap_or(LcpFailure::Invalid)));
        std::mem::swap(&mut out.solution, &mut sc.second);
    }
    out.min_norm = o.min_norm && polish(lcp, &mut out.solution, o.jade.validity_tol);
    Ok(())
}

/// PGS from Jade's answer into `sc.second`, in runs of `every` sweeps (0: one run to the cap); a stall (D7a: a
/// run that lowers the natural-map residual by less than `STALL_PROGRESS`, a rate at which the rest of the cap could
/// not lower it by more than e⁻¹) is handed to the polish at once, and PGS goes on only where the polish declines
/// (a stall outside the validity tolerance, or no valid answer at its classes). Between runs PGS continues from its
/// iterate, so an answer PGS reaches without a polished stall is the one run's, bit for bit. Sweeps are counted
/// over the runs.
fn pgs_until_stall(lcp: &BoxedLcp, p: &PgsOptions, every: usize, sc: &mut ChainScratch) {
    const STALL_PROGRESS: f64 = 0.01;
    let run = |sweeps: usize| PgsOptions { max_sweeps: sweeps, ..*p };
    let first = if every == 0 { p.max_sweeps } else { every.min(p.max_sweeps) };
    solve_pgs_into(lcp, &run(first), Some(&sc.first.lambda), &mut sc.pgs, &mut sc.second);
    let mut done = sc.second.iterations;
    while let Some(LcpFailure::NotConverged { residual: before }) = sc.second.failure {
        if done >= p.max_sweeps {
            break;
        }
        std::mem::swap(&mut sc.restart, &mut sc.second.lambda);
        solve_pgs_into(lcp, &run(every.min(p.max_sweeps - done)), Some(&sc.restart), &mut sc.pgs, &mut sc.second);
        done += sc.second.iterations;
        let stalled = matches!(sc.second.failure, Some(LcpFailure::NotConverged { residual }) if residual > (1.0 - STALL_PROGRESS) * before);
        if stalled && polish_into(lcp, p, &mut sc.pgs, &mut sc.second) {
            break;
        }
    }
    sc.second.iterations = done;
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
