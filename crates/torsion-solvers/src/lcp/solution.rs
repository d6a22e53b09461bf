//! What every LCP solver returns (spec 004 §3.9, D10): which solver answered, its iterations, the validity
//! report of §3.3 (always computed) and its failure, if any. A failure is reported, never replaced by a
//! frictionless answer.
use super::active_set::Class;
use super::dense::copy_vec;
use super::problem::ValidityReport;
use nalgebra::DVector;

/// The solvers of the `lcp` module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LcpSolverKind {
    /// ODE-style Dantzig with frozen friction bounds (§3.9 Alg. 1; `dantzig_baseline.rs`)
    BaselineDantzig,
    /// Jade's modified Dantzig: moving-bound ratio test and the direction-reversal DFS (§3.9; `dantzig_jade.rs`)
    JadeDantzig,
    /// projected Gauss–Seidel (`pgs.rs`)
    Pgs,
    /// enumeration of the active sets (`oracle.rs`)
    Oracle,
}

/// Why a solver gave up (its answer is still returned, with its validity report).
#[derive(Clone, Debug, PartialEq)]
pub enum LcpFailure {
    /// pivoting row `row` found no admissible step in any direction (Jade: the DFS exhausted both branches)
    NoStep { row: usize },
    /// pivoting row `row` hit the iteration cap (cycling; Jade: "Over loop", 3m)
    IterationCap { row: usize },
    /// PGS stopped at its sweep cap with this natural-map residual
    NotConverged { residual: f64 },
    /// the oracle found no valid pattern
    NoValidPattern,
    /// the solver finished but its answer fails the validity check (§3.3)
    Invalid,
}

/// A solver's answer.
#[derive(Clone, Debug)]
pub struct LcpSolution {
    pub solver: LcpSolverKind,
    pub lambda: DVector<f64>,
    /// w = A λ + b
    pub w: DVector<f64>,
    /// the classes the answer was found with (read off (λ, w) for PGS), for the implicit derivative (§3.6)
    pub classes: Vec<Class>,
    /// pivots (Dantzig: ratio tests taken, DFS retries included), sweeps (PGS), patterns tried (oracle)
    pub iterations: usize,
    pub validity: ValidityReport,
    pub failure: Option<LcpFailure>,
    /// PGS stalled above its tolerance and active-set solves at its classes finished it (`pgs::polish_into`)
    pub polished: bool,
}

impl LcpSolution {
    /// A usable answer: no failure and valid.
    pub fn ok(&self) -> bool {
        self.failure.is_none() && self.validity.valid
    }

    /// `self` ← `src` in `self`'s buffers (no allocation once they have held as large an answer). Every field is
    /// named, so a new one cannot be left out of the copy.
    pub fn copy_from(&mut self, src: &LcpSolution) {
        let LcpSolution { solver, lambda, w, classes, iterations, validity, failure, polished } = src;
        copy_vec(&mut self.lambda, lambda);
        copy_vec(&mut self.w, w);
        self.classes.clone_from(classes);
        self.solver = *solver;
        self.iterations = *iterations;
        self.validity.clone_from(validity);
        self.failure.clone_from(failure);
        self.polished = *polished;
    }
}

impl LcpSolution {
    /// An empty answer of `solver` (storage for the `_into` solvers).
    pub fn empty(solver: LcpSolverKind) -> Self {
        LcpSolution {
            solver,
            lambda: DVector::zeros(0),
            w: DVector::zeros(0),
            classes: vec![],
            iterations: 0,
            validity: ValidityReport {
                valid: true,
                worst: None,
                max_bound: 0.0,
                max_findex: 0.0,
                max_complementarity: 0.0,
            },
            failure: None,
            polished: false,
        }
    }
}
