//! Transition Jacobians (A, B, C) at every step of a trajectory, and the forward sensitivities they chain to:
//! S_{t+1} = A_t S_t + B_t U_t + [0 | C_t] (tangent coordinates; the columns: directions of the initial state,
//! then the selected parameters).
use nalgebra::DMatrix;
use torsion_model::{Control, Model, ParamSelection};
use torsion_solvers::{DiffSolver, SolverError, StepJacobians};

/// (A, B, C) at each step t of a trajectory (states s_0..s_T or s_0..s_{T−1}), all with the caller's workspace `ws`
/// (`solver.workspace(model)`, as `rollout_each`'s).
pub fn trajectory_jacobians<S: DiffSolver>(
    solver: &S,
    model: &Model,
    states: &[S::State],
    controls: &[Control],
    dt: f64,
    ws: &mut S::Workspace,
    sel: &ParamSelection,
) -> Result<Vec<StepJacobians>, SolverError> {
    controls
        .iter()
        .enumerate()
        .map(|(t, u)| {
            let mut j = StepJacobians::for_solver(solver, model, sel);
            solver.step_jacobians_into(model, &states[t], u, dt, sel, ws, &mut j)?;
            Ok(j)
        })
        .collect()
}

/// Forward sensitivities of a trajectory from its transition Jacobians: S_0 = [D | 0] (D: nt × m directions of
/// the initial state in tangent coordinates, e.g. the identity or none), S_{t+1} = A_t S_t + [0 | C_t]
/// (+ B_t U_t when `du(t)` gives the nu × (m + k) control directions of step t). Returns S_0..S_T, each
/// nt × (m + k), k = the Jacobians' parameter columns.
pub fn forward_sensitivities(
    jacs: &[StepJacobians],
    d0: &DMatrix<f64>,
    mut du: impl FnMut(usize) -> Option<DMatrix<f64>>,
) -> Vec<DMatrix<f64>> {
    let (nt, m) = d0.shape();
    let k = jacs.first().map_or(0, |j| j.c.ncols());
    let mut s = DMatrix::zeros(nt, m + k);
    s.columns_mut(0, m).copy_from(d0);
    let mut out = Vec::with_capacity(jacs.len() + 1);
    out.push(s.clone());
    for (t, j) in jacs.iter().enumerate() {
        let mut next = &j.a * &s;
        let mut pc = next.columns_mut(m, k);
        pc += &j.c;
        if let Some(u) = du(t) {
            next += &j.b * u;
        }
        s = next;
        out.push(s.clone());
    }
    out
}

/// One step's transition Jacobians by central differences of `Solver::step` at (s, u): A (nt × nt; its columns
/// `state_cols`, the others left 0: the state moved by ± h along each tangent direction through `retract`, the
/// outputs compared by `local_diff` with the unperturbed step's) and B (nt × |u|, u given as generalized forces).
/// The reference of the solvers' gradient tests and experiments; at a non-smooth point of the step it measures
/// whichever branches ± h fall on.
pub fn step_jacobians_fd<S: DiffSolver>(
    solver: &S,
    model: &Model,
    s: &S::State,
    u: &[f64],
    dt: f64,
    h: f64,
    state_cols: std::ops::Range<usize>,
) -> Result<(DMatrix<f64>, DMatrix<f64>), SolverError> {
    let nt = solver.tangent_dim(model);
    let mut ws = solver.workspace(model)?;
    let mut out = s.clone();
    let mut next = |st: &S::State, uu: &[f64]| -> Result<S::State, SolverError> {
        solver.step(model, st, &Control::from_torques(uu), dt, &mut out, &mut ws, None)?;
        Ok(out.clone())
    };
    let base = next(s, u)?;
    let (mut a, mut b) = (DMatrix::zeros(nt, nt), DMatrix::zeros(nt, u.len()));
    let (mut d, mut uu) = (vec![0.0; nt], u.to_vec());
    for k in state_cols.chain(nt..nt + u.len()) {
        let mut side = |sign: f64| -> Result<Vec<f64>, SolverError> {
            let o = if k < nt {
                d[k] = sign * h;
                let o = next(&solver.retract(model, s, &d), u);
                d[k] = 0.0;
                o?
            } else {
                uu[k - nt] = u[k - nt] + sign * h;
                let o = next(s, &uu);
                uu[k - nt] = u[k - nt];
                o?
            };
            Ok(solver.local_diff(model, &base, &o))
        };
        let (p, q) = (side(1.0)?, side(-1.0)?);
        let mut col = if k < nt { a.column_mut(k) } else { b.column_mut(k - nt) };
        for r in 0..nt {
            col[r] = (p[r] - q[r]) / (2.0 * h);
        }
    }
    Ok((a, b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{fd_jacobian, rel_err, rollout, test_arm, test_arm_xpbd};
    use torsion_solvers::{DiffSolver, Solver};

    /// B along a trajectory against central differences of each step (`step_jacobians_fd`, no state columns).
    #[test]
    fn trajectory_jacobians_match_central_differences() {
        let (m, solver, s0) = test_arm_xpbd();
        let us = vec![Control::from_torques(&[0.3, -0.2]); 5];
        let states = rollout(&solver, &m, &s0, &us, 0.01).unwrap();
        let mut ws = solver.workspace(&m).unwrap();
        let jacs = trajectory_jacobians(&solver, &m, &states, &us, 0.01, &mut ws, &ParamSelection::none()).unwrap();
        for (t, j) in jacs.iter().enumerate() {
            let (_, fb) = step_jacobians_fd(&solver, &m, &states[t], &[0.3, -0.2], 0.01, 1e-6, 0..0).unwrap();
            let eb = rel_err(j.b.as_slice(), fb.as_slice());
            assert!(eb < 1e-6, "step {t}: B {eb:e}");
        }
    }

    /// S_T = ∂s_T/∂(s_0 along two tangent directions, a link mass, the joint torques of step 2) of a 12-step
    /// Featherstone rollout against central differences of the rollout.
    #[test]
    fn forward_sensitivities_match_central_differences() {
        use torsion_solvers::FeatherstoneSolver;
        let m = test_arm();
        let solver = FeatherstoneSolver::default();
        let sel = ParamSelection::by_prefix(&m, "body_mass[");
        let s0 = torsion_model::GenState::new(vec![0.4, -0.7], vec![0.3, 0.1]);
        let us: Vec<Control> = (0..12).map(|t| Control::from_torques(&[(t as f64 * 0.4).sin(), 0.2])).collect();
        let states = rollout(&solver, &m, &s0, &us, 0.01).unwrap();
        let mut ws = solver.workspace(&m).unwrap();
        let jacs = trajectory_jacobians(&solver, &m, &states, &us, 0.01, &mut ws, &sel).unwrap();
        let nt = solver.tangent_dim(&m);
        let mut d0 = DMatrix::zeros(nt, 3);
        d0[(0, 0)] = 1.0;
        d0[(3, 1)] = 1.0;
        // the third direction: step 2's first torque
        d0.column_mut(2).fill(0.0);
        let sens = forward_sensitivities(&jacs, &d0, |t| {
            (t == 2).then(|| {
                let mut u = DMatrix::zeros(2, 3 + sel.len());
                u[(0, 2)] = 1.0;
                u
            })
        });
        let k = sel.len();
        assert_eq!(sens.len(), 13);
        assert_eq!(sens[12].shape(), (nt, 3 + k));
        let run = |d: &[f64]| -> Vec<f64> {
            let mut mm = m.clone();
            let v: Vec<f64> = mm.params_get(&sel).iter().zip(&d[3..]).map(|(a, b)| a + b).collect();
            mm.params_set(&sel, &v).unwrap();
            let s = solver.retract(&mm, &s0, &[d[0], 0.0, 0.0, d[1]]);
            let mut uu = us.clone();
            uu[2].joint_torque[0] += d[2];
            let st = rollout(&solver, &mm, &s, &uu, 0.01).unwrap();
            solver.local_diff(&m, &states[12], &st[12])
        };
        let fd = fd_jacobian(run, 3 + k, 1e-6);
        let e = rel_err(sens[12].as_slice(), fd.as_slice());
        eprintln!("forward sensitivities vs FD: {e:.1e}");
        assert!(e < 1e-6, "{e:e}");
    }
}
