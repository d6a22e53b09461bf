//! Forward rollouts: `rollout` keeps one state per step; `rollout_each` hands each state to a callback (no
//! state kept, no allocation per step after the workspace: the Python bindings write them into NumPy rows).
//! Cable-driven models (spec 003 §3.3) take per-step actuator controls in `Control::ctrl`: `cable_controls`
//! builds them, `set_control_row` splits a flat row of `DiffSolver::control_dim` entries (generalized forces,
//! then the nu actuator controls) into a reused `Control`, for `rollout_each`'s `control` callback.
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

/// T per-step controls with zero generalized forces (`n_torque`: the solver's layout, e.g. nv for Featherstone)
/// and the cable actuators' controls from `ctrl` (T × nu, row-major; MuJoCo `ctrl`, spec 003 §3.3).
pub fn cable_controls(n_torque: usize, nu: usize, ctrl: &[f64]) -> Vec<Control> {
    let zeros = vec![0.0; n_torque];
    ctrl.chunks(nu.max(1)).map(|row| Control::with_ctrl(&zeros, &row[..nu.min(row.len())])).collect()
}

/// Write a flat control row into `u` (its buffers reused, no allocation once sized): the first `row.len() − nu`
/// entries are the generalized forces (`Control::joint_torque`), the last `nu` the cable actuators' controls
/// (`Control::ctrl`) — the order of `DiffSolver::control_dim` and of `RolloutGrad::g_u` (Featherstone: nv + nu).
/// A row shorter than `nu` is all generalized forces (models without cable actuators: nu = 0).
pub fn set_control_row(u: &mut Control, row: &[f64], nu: usize) {
    let split = row.len().saturating_sub(nu);
    let n_ctrl = if row.len() >= nu { nu } else { 0 };
    let (tau, ctrl) = row.split_at(if n_ctrl == 0 { row.len() } else { split });
    u.joint_torque.clear();
    u.joint_torque.extend_from_slice(tau);
    u.ctrl.clear();
    u.ctrl.extend_from_slice(ctrl);
}
