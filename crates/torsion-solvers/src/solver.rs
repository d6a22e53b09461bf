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
}

/// What a step reports (per-step diagnostics; never hides a failure).
#[derive(Clone, Debug, Default)]
pub struct StepInfo {
    /// largest positional joint violation ‖c‖ after the step, m
    pub max_position_violation: f64,
    /// largest angular joint violation ‖b_w × a_w‖ after the step
    pub max_angular_violation: f64,
    /// number of projections skipped by the ‖c‖ < ε guard (exactly satisfied constraints)
    pub skipped_projections: usize,
    /// number of limit projections applied
    pub active_limits: usize,
}

/// Transition Jacobians in tangent coordinates (quaternions through the left exponential map):
/// A = ∂s'/∂s, B = ∂s'/∂u, C = ∂s'/∂θ_sel.
#[derive(Clone, Debug)]
pub struct StepJacobians {
    pub a: DMatrix<f64>,
    pub b: DMatrix<f64>,
    pub c: DMatrix<f64>,
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
    /// ∂L/∂u into `g_u` (`control_dim` entries) and ∂L/∂θ into `g_theta` (the full parameter table) using `rec`.
    #[allow(clippy::too_many_arguments)]
    fn step_vjp(
        &self,
        model: &Model,
        rec: &Self::Record,
        g_out: &Self::State,
        g_s: &mut Self::State,
        g_u: &mut [f64],
        g_theta: &mut [f64],
        ws: &mut Self::Workspace,
    ) -> Result<(), SolverError>;

    /// Forward mode: transition Jacobians in tangent coordinates.
    fn step_jacobians(
        &self,
        model: &Model,
        s: &Self::State,
        u: &Control,
        dt: f64,
        sel: &ParamSelection,
    ) -> Result<StepJacobians, SolverError>;

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
