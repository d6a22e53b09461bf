//! The differentiation contract every time stepper implements (design.md §3).
use nalgebra::DMatrix;
use thiserror::Error;
use torsion_model::{Control, Model, ParamSelection, StateSpace};

#[derive(Debug, Error)]
pub enum SolverError {
    #[error("{solver}: unsupported model: {problem}")]
    Unsupported { solver: &'static str, problem: String },
    #[error("{solver}: bad input: {problem}")]
    BadInput { solver: &'static str, problem: String },
    #[error("{solver}: non-finite state after step {what}")]
    NonFinite { solver: &'static str, what: String },
    /// an inner problem had no valid solution (the LCP stepper: every solver of the chain failed the validity
    /// check); the step is not taken
    #[error("{solver}: no valid solution: {problem}")]
    NoSolution { solver: &'static str, problem: String },
}

/// What a step reports, the same for every solver (issue 13 item 5). A failure is an `Err`, never a field here;
/// these say how the step was reached. The solver-specific detail stays with the solver (ncp: `NcpReport` in its
/// workspace, with each ADMM solve's result and the impulses).
#[derive(Clone, Debug)]
pub struct StepInfo {
    /// the solver that produced the step ("xpbd", "featherstone", "ncp"; a fallback chain names the one that
    /// answered: "lcp/jade", or "lcp/pgs" when some LCP of the step needed PGS)
    pub solver: &'static str,
    /// iterations made: XPBD projection sweeps (iterations × substeps), ncp staggered passes (the impact's and the
    /// step's), lcp pivots / sweeps of the answering solvers (the impact's and the step's), Featherstone the joint
    /// dry-friction solve's sweeps and active-set passes (0 without friction loss)
    pub iterations: usize,
    /// contacts in the step (the contact solvers; 0 otherwise)
    pub contacts: usize,
    /// the step's own convergence measure at its end: ncp the largest NCP residual (§3.9: Signorini, friction set,
    /// maximum dissipation, in N·s and m/s), lcp the largest validity residual (§3.3: bound, friction box,
    /// complementarity); 0 for a direct solve and for XPBD's fixed sweeps
    pub residual: f64,
    /// every inner solve met its tolerance (ncp: all ADMM QP / QCQP solves and, with the residual stop, every contact
    /// island at the NCP tolerance: false where capped passes are kept above it); a direct solve: true
    pub converged: bool,
    /// XPBD: projections skipped by the ‖c‖ < ε guard (exactly satisfied constraints)
    pub skipped_projections: usize,
    /// XPBD: limit projections applied
    pub active_limits: usize,
    /// ncp: contact-island solves whose direct solve was rejected by its NCP check and answered by the ADMM passes
    /// instead (`NcpReport::direct_rejected`; never silent); 0 for the other solvers
    pub fallbacks: usize,
}

impl StepInfo {
    /// A step by `solver`, converged, nothing counted yet.
    pub fn new(solver: &'static str) -> Self {
        StepInfo {
            solver,
            iterations: 0,
            contacts: 0,
            residual: 0.0,
            converged: true,
            skipped_projections: 0,
            active_limits: 0,
            fallbacks: 0,
        }
    }
}

/// Transition Jacobians in tangent coordinates (quaternions through the left exponential map):
/// A = ∂s'/∂s, B = ∂s'/∂u, C = ∂s'/∂θ_sel.
#[derive(Clone, Debug)]
pub struct StepJacobians {
    pub a: DMatrix<f64>,
    pub b: DMatrix<f64>,
    pub c: DMatrix<f64>,
}

impl StepJacobians {
    /// Zero Jacobians for nt tangent rows, nu controls and k selected parameters (the buffers of
    /// `DiffSolver::step_jacobians_into`).
    pub fn zeros(nt: usize, nu: usize, k: usize) -> Self {
        StepJacobians { a: DMatrix::zeros(nt, nt), b: DMatrix::zeros(nt, nu), c: DMatrix::zeros(nt, k) }
    }

    /// Zero buffers shaped for `solver` on `model` with the selection `sel`.
    pub fn for_solver<S: DiffSolver + ?Sized>(solver: &S, model: &Model, sel: &ParamSelection) -> Self {
        Self::zeros(solver.tangent_dim(model), solver.control_dim(model), sel.len())
    }

    /// Copy `other` in (resizing only if the shapes differ).
    pub fn assign(&mut self, other: &StepJacobians) {
        for (d, s) in [(&mut self.a, &other.a), (&mut self.b, &other.b), (&mut self.c, &other.c)] {
            if d.shape() != s.shape() {
                *d = s.clone();
            } else {
                d.copy_from(s);
            }
        }
    }
}

pub trait Solver {
    /// The solver's state space (`torsion_model::StateSpace`): `MaximalState` for XPBD, `GenState` for the
    /// generalized-coordinate steppers (Featherstone, contact).
    type State: StateSpace;
    type Workspace;
    /// what `step` saves for `step_vjp` (reused buffers, allocated once)
    type Record;
    fn name(&self) -> &'static str;
    /// All allocation happens here.
    fn workspace(&self, model: &Model) -> Result<Self::Workspace, SolverError>;
    fn record(&self, model: &Model) -> Self::Record;
    #[allow(clippy::too_many_arguments)]
    fn step(
        &self,
        model: &Model,
        s: &Self::State,
        u: &Control,
        dt: f64,
        out: &mut Self::State,
        ws: &mut Self::Workspace,
        rec: Option<&mut Self::Record>,
    ) -> Result<StepInfo, SolverError>;
}

pub trait DiffSolver: Solver {
    /// Reverse mode: given ∂L/∂out (ambient, same shape as the state), *accumulate* ∂L/∂s into `g_s`,
    /// ∂L/∂u into `g_u` (`control_dim` entries) and ∂L/∂θ of the selected parameters into `g_theta` (`sel.len()`
    /// entries, in `sel`'s order; a solver differentiating by tangent passes computes only those) using `rec`.
    #[allow(clippy::too_many_arguments)]
    fn step_vjp(
        &self,
        model: &Model,
        rec: &Self::Record,
        g_out: &Self::State,
        g_s: &mut Self::State,
        g_u: &mut [f64],
        sel: &ParamSelection,
        g_theta: &mut [f64],
        ws: &mut Self::Workspace,
    ) -> Result<(), SolverError>;

    /// ∂L/∂(body wrenches) of the recorded step, *accumulated* into `g_w` (`Control::body_wrench`'s layout: 6 per
    /// body), from the control cotangent `g_u` that `step_vjp` gave for the same record. The generalized-coordinate
    /// steppers add Σ_b J_bᵀ w_b where u enters, so ḡ_w = J_b(q) ḡ_u (`torsion_dynamics::external`; issue 13 item
    /// 6); `step_vjp` already holds the wrenches' q-dependence. XPBD: unsupported (its step refuses wrenches).
    fn wrench_vjp(
        &self,
        model: &Model,
        rec: &Self::Record,
        g_u: &[f64],
        g_w: &mut [f64],
        ws: &mut Self::Workspace,
    ) -> Result<(), SolverError> {
        let _ = (model, rec, g_u, g_w, ws);
        Err(SolverError::Unsupported { solver: self.name(), problem: "external body wrenches".into() })
    }

    /// Forward mode: the transition Jacobians in tangent coordinates at (s, u), w.r.t. the selected parameters,
    /// written into caller-owned buffers (`StepJacobians::for_solver`) with the caller's workspace.
    #[allow(clippy::too_many_arguments)]
    fn step_jacobians_into(
        &self,
        model: &Model,
        s: &Self::State,
        u: &Control,
        dt: f64,
        sel: &ParamSelection,
        ws: &mut Self::Workspace,
        out: &mut StepJacobians,
    ) -> Result<(), SolverError>;

    /// `step_jacobians_into` with a fresh workspace and buffers (convenience for one-off calls).
    fn step_jacobians(
        &self,
        model: &Model,
        s: &Self::State,
        u: &Control,
        dt: f64,
        sel: &ParamSelection,
    ) -> Result<StepJacobians, SolverError> {
        let mut ws = self.workspace(model)?;
        let mut out = StepJacobians::for_solver(self, model, sel);
        self.step_jacobians_into(model, s, u, dt, sel, &mut ws, &mut out)?;
        Ok(out)
    }

    /// Entries of a `Control` (and of a control gradient) the solver takes: one per joint by default
    /// (`ControlLayout::PerJoint`, XPBD); the generalized-coordinate steppers take one per DoF
    /// (`ControlLayout::PerDof`, nv). `Control::to_per_dof` / `to_per_joint` convert.
    fn control_dim(&self, model: &Model) -> usize {
        model.joint_count()
    }

    /// Manifold helpers used by the `diff` machinery (gradcheck, tangent Jacobians): the state space's own
    /// (`StateSpace`), which a solver has no reason to override.
    fn tangent_dim(&self, model: &Model) -> usize {
        Self::State::tangent_dim(model)
    }
    fn retract(&self, model: &Model, s: &Self::State, d: &[f64]) -> Self::State {
        StateSpace::retract(s, model, d)
    }
    fn local_diff(&self, model: &Model, s: &Self::State, other: &Self::State) -> Vec<f64> {
        StateSpace::local_diff(s, model, other)
    }
    fn grad_to_tangent(&self, model: &Model, s: &Self::State, g: &Self::State) -> Vec<f64> {
        StateSpace::grad_to_tangent(s, model, g)
    }
    fn zero_grad(&self, model: &Model) -> Self::State {
        Self::State::zero_grad(model)
    }
    /// Reset a gradient buffer to zero without reallocating it.
    fn clear_grad(&self, g: &mut Self::State) {
        g.clear_grad()
    }
}

/// `step_vjp`'s buffer sizes: `nu` control entries, one parameter entry per selected parameter.
pub(crate) fn check_grad_sizes(
    solver: &'static str,
    nu: usize,
    g_u: &[f64],
    sel: &ParamSelection,
    g_theta: &[f64],
) -> Result<(), SolverError> {
    if g_u.len() != nu || g_theta.len() != sel.len() {
        return Err(SolverError::BadInput {
            solver,
            problem: format!(
                "step_vjp buffers: g_u has {} entries (needs {nu}), g_theta {} (needs one per selected parameter, {})",
                g_u.len(),
                g_theta.len(),
                sel.len()
            ),
        });
    }
    Ok(())
}
