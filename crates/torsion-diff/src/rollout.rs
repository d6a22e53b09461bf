//! Forward rollout keeping one state per step.
use torsion_model::{Control, Model};
use torsion_solvers::{Solver, SolverError};

/// Run T = `controls.len()` steps from `s0`; returns the T + 1 states (s0 first).
pub fn rollout<S: Solver>(
    solver: &S,
    model: &Model,
    s0: &S::State,
    controls: &[Control],
    dt: f64,
) -> Result<Vec<S::State>, SolverError> {
    let mut ws = solver.workspace(model)?;
    let mut states = Vec::with_capacity(controls.len() + 1);
    states.push(s0.clone());
    let mut next = s0.clone();
    for u in controls {
        solver.step(model, states.last().expect("non-empty"), u, dt, &mut next, &mut ws, None)?;
        states.push(next.clone());
    }
    Ok(states)
}
