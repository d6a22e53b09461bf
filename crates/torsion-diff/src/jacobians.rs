//! Transition Jacobians (A, B, C) at every step of a trajectory.
use torsion_model::{Control, Model, ParamSelection};
use torsion_solvers::{DiffSolver, SolverError, StepJacobians};

pub fn trajectory_jacobians<S: DiffSolver>(
    solver: &S,
    model: &Model,
    states: &[S::State],
    controls: &[Control],
    dt: f64,
    sel: &ParamSelection,
) -> Result<Vec<StepJacobians>, SolverError> {
    controls.iter().enumerate().map(|(t, u)| solver.step_jacobians(model, &states[t], u, dt, sel)).collect()
}
