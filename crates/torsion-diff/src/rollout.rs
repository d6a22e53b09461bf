//! Forward rollouts: `rollout` keeps one state per step; `rollout_each` hands each state to a callback (no
//! state kept, no allocation per step after the workspace: the Python bindings write them into NumPy rows).
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
    rollout_each(
        solver,
        model,
        s0,
        controls.len(),
        dt,
        &mut ws,
        |t, u| u.clone_from(&controls[t]),
        |_, s| states.push(s.clone()),
    )?;
    Ok(states)
}

/// T steps from `s0` with the caller's workspace: `control(t, u)` writes step t's control into `u` (a buffer
/// reused across steps, starting as `Control::zeros(0)`), `visit(t, s)` sees the state s_t after each step
/// (t = 1..=T).
#[allow(clippy::too_many_arguments)]
pub fn rollout_each<S: Solver>(
    solver: &S,
    model: &Model,
    s0: &S::State,
    t_len: usize,
    dt: f64,
    ws: &mut S::Workspace,
    mut control: impl FnMut(usize, &mut Control),
    mut visit: impl FnMut(usize, &S::State),
) -> Result<(), SolverError> {
    let mut cur = s0.clone();
    let mut next = s0.clone();
    let mut u = Control::zeros(0);
    for t in 0..t_len {
        control(t, &mut u);
        solver.step(model, &cur, &u, dt, &mut next, ws, None)?;
        visit(t + 1, &next);
        std::mem::swap(&mut cur, &mut next);
    }
    Ok(())
}
