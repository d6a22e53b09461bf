//! Reverse-mode gradient of a scalar trajectory loss L(s_0, …, s_T) w.r.t. the initial state, every control
//! and the model parameters. `rollout_vjp` stores only the states and recomputes each step's record on the way
//! back (memory O(T × state) + one step record, one extra step per step); `tape_vjp` reads the records a
//! [`rollout_tape`] kept from the forward pass (memory O(T × record), no step re-run: issue 14 item 7). Both run
//! the same backward loop. Featherstone's records keep the step's articulated-body factorization of M̃, so its
//! two agree bit for bit.
use torsion_model::{Control, Model, ParamSelection};
use torsion_solvers::{DiffSolver, Solver, SolverError};

pub struct RolloutGrad<St> {
    /// ∂L/∂s_0, ambient (same shape as the state)
    pub g_s0: St,
    /// ∂L/∂s_0 in tangent coordinates (quaternions through the left exponential map)
    pub g_s0_tangent: Vec<f64>,
    /// ∂L/∂u_t per step, `DiffSolver::control_dim` entries (one per joint; per DoF for featherstone)
    pub g_u: Vec<Vec<f64>>,
    /// ∂L/∂θ of the selected parameters, in the selection's order (`ParamSelection::all` for the full
    /// `Model::param_table`)
    pub g_theta: Vec<f64>,
    /// ∂L/∂(body wrenches) per step (`Control::body_wrench`'s layout, 6 per body; `DiffSolver::wrench_vjp`),
    /// empty for the steps whose control has none
    pub g_wrench: Vec<Vec<f64>>,
}

impl<St> RolloutGrad<St> {
    /// ∂L/∂ctrl_t: the cable actuators' part of `g_u[t]` (its last `nu` entries, `set_control_row`'s split).
    pub fn g_ctrl(&self, t: usize, nu: usize) -> &[f64] {
        let g = &self.g_u[t];
        &g[g.len().saturating_sub(nu)..]
    }
}

/// A forward rollout that kept each step's record for the adjoint ([`tape_vjp`]).
pub struct Tape<S: Solver> {
    /// s_0 … s_T
    pub states: Vec<S::State>,
    /// the record of step t (s_t → s_{t+1})
    pub records: Vec<S::Record>,
}

/// [`crate::rollout`] keeping every step's record: T + 1 states and T records (all allocated before the first
/// step; the steps fill them).
pub fn rollout_tape<S: DiffSolver>(
    solver: &S,
    model: &Model,
    s0: &S::State,
    controls: &[Control],
    dt: f64,
) -> Result<Tape<S>, SolverError> {
    let mut ws = solver.workspace(model)?;
    let t_len = controls.len();
    let mut states = vec![s0.clone(); t_len + 1];
    let mut records: Vec<S::Record> = (0..t_len).map(|_| solver.record(model)).collect();
    for (t, (u, rec)) in controls.iter().zip(records.iter_mut()).enumerate() {
        let (done, rest) = states.split_at_mut(t + 1);
        solver.step(model, &done[t], u, dt, &mut rest[0], &mut ws, Some(rec))?;
    }
    Ok(Tape { states, records })
}

/// `dloss(t, s_t, g)` must *add* ∂L/∂s_t (ambient) into `g`, for t = 0..=T. Parameter gradients for the
/// selection `sel` only (a solver differentiating by tangent passes computes only those).
pub fn rollout_vjp<S: DiffSolver>(
    solver: &S,
    model: &Model,
    states: &[S::State],
    controls: &[Control],
    dt: f64,
    sel: &ParamSelection,
    dloss: impl FnMut(usize, &S::State, &mut S::State),
) -> Result<RolloutGrad<S::State>, SolverError> {
    backward(solver, model, states, None, controls, dt, sel, dloss)
}

/// [`rollout_vjp`] from a [`rollout_tape`] with the same controls: the records are the forward pass's, no step
/// runs again.
pub fn tape_vjp<S: DiffSolver>(
    solver: &S,
    model: &Model,
    tape: &Tape<S>,
    controls: &[Control],
    sel: &ParamSelection,
    dloss: impl FnMut(usize, &S::State, &mut S::State),
) -> Result<RolloutGrad<S::State>, SolverError> {
    if tape.records.len() != controls.len() {
        return Err(SolverError::BadInput {
            solver: solver.name(),
            problem: format!("a tape of {} steps for {} controls", tape.records.len(), controls.len()),
        });
    }
    backward(solver, model, &tape.states, Some(&tape.records), controls, 0.0, sel, dloss)
}

/// The backward loop of both: step t's record from `records`, or recomputed by a step with a record (`dt`).
#[allow(clippy::too_many_arguments)]
fn backward<S: DiffSolver>(
    solver: &S,
    model: &Model,
    states: &[S::State],
    records: Option<&[S::Record]>,
    controls: &[Control],
    dt: f64,
    sel: &ParamSelection,
    mut dloss: impl FnMut(usize, &S::State, &mut S::State),
) -> Result<RolloutGrad<S::State>, SolverError> {
    let t_len = controls.len();
    if states.len() != t_len + 1 {
        return Err(SolverError::BadInput {
            solver: solver.name(),
            problem: format!("{} states for {} controls", states.len(), t_len),
        });
    }
    let mut ws = solver.workspace(model)?;
    let mut own = solver.record(model);
    let mut g_theta = vec![0.0; sel.len()];
    let mut g_u = vec![vec![0.0; solver.control_dim(model)]; t_len];
    let mut g_wrench = vec![vec![]; t_len];
    let mut g_next = solver.zero_grad(model);
    dloss(t_len, &states[t_len], &mut g_next);
    let mut scratch = states[0].clone();
    // two gradient buffers reused across the steps (no allocation per step)
    let mut g_prev = solver.zero_grad(model);
    for t in (0..t_len).rev() {
        let rec = match records {
            Some(r) => &r[t],
            None => {
                solver.step(model, &states[t], &controls[t], dt, &mut scratch, &mut ws, Some(&mut own))?;
                &own
            }
        };
        solver.clear_grad(&mut g_prev);
        dloss(t, &states[t], &mut g_prev);
        solver.step_vjp(model, rec, &g_next, &mut g_prev, &mut g_u[t], sel, &mut g_theta, &mut ws)?;
        if !controls[t].body_wrench.is_empty() {
            // g_u[t] holds this step's ∂L/∂u only (it started at zero)
            g_wrench[t].resize(controls[t].body_wrench.len(), 0.0);
            solver.wrench_vjp(model, rec, &g_u[t], &mut g_wrench[t], &mut ws)?;
        }
        std::mem::swap(&mut g_next, &mut g_prev);
    }
    let g_s0_tangent = solver.grad_to_tangent(model, &states[0], &g_next);
    Ok(RolloutGrad { g_s0: g_next, g_s0_tangent, g_u, g_theta, g_wrench })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{gradcheck, rollout, test_arm_xpbd};
    use torsion_model::{GenState, MaximalState};
    use torsion_solvers::FeatherstoneSolver;

    /// A 20-step rollout gradient w.r.t. every control against central differences.
    #[test]
    fn rollout_vjp_matches_central_differences() {
        let (m, solver, s0) = test_arm_xpbd();
        let us: Vec<Control> = (0..20).map(|t| Control::from_torques(&[(t as f64 * 0.3).sin(), 0.2])).collect();
        let loss = |st: &[MaximalState]| st.iter().map(|s| s.x[2].x + s.w[1].z * 0.1).sum::<f64>();
        let states = rollout(&solver, &m, &s0, &us, 0.01).unwrap();
        let g = rollout_vjp(&solver, &m, &states, &us, 0.01, &ParamSelection::none(), |_, _, g: &mut MaximalState| {
            g.x[2].x += 1.0;
            g.w[1].z += 0.1;
        })
        .unwrap();
        let an: Vec<f64> = g.g_u.concat();
        let c = gradcheck(
            |d| {
                let uu: Vec<Control> = us
                    .iter()
                    .enumerate()
                    .map(|(t, u)| {
                        Control::from_torques(&[u.joint_torque[0] + d[2 * t], u.joint_torque[1] + d[2 * t + 1]])
                    })
                    .collect();
                loss(&rollout(&solver, &m, &s0, &uu, 0.01).unwrap())
            },
            &an,
            1e-5,
        );
        assert!(c.max_rel_err < 1e-6, "{:e}", c.max_rel_err);
    }

    /// Featherstone's start state on `m`: example configuration 2, every velocity 0.1.
    fn start(m: &Model) -> GenState {
        GenState::new(torsion_model::builder::example_configuration(m, 2), vec![0.1; m.nv()])
    }

    /// The floating tree (free, ball, slide, hinge), Featherstone, [`start`].
    fn floating_tree_case() -> (Model, FeatherstoneSolver, GenState) {
        let m = torsion_model::builder::floating_tree();
        let s0 = start(&m);
        (m, FeatherstoneSolver::default(), s0)
    }

    /// The cotangent the tape tests feed in at each state (any fixed map of the state does).
    fn tape_cotangent(_: usize, s: &GenState, g: &mut GenState) {
        for (a, b) in g.q.iter_mut().zip(&s.q) {
            *a += b;
        }
        g.v[0] += s.v[1];
    }

    /// One Featherstone rollout from `s0` (dt 0.01) and its gradients w.r.t. every parameter with [`tape_cotangent`]:
    /// (states, tape, `rollout_vjp`'s (records recomputed), `tape_vjp`'s (the forward pass's records)).
    #[allow(clippy::type_complexity)]
    fn both_vjps(
        solver: &FeatherstoneSolver,
        m: &Model,
        s0: &GenState,
        us: &[Control],
    ) -> (Vec<GenState>, Tape<FeatherstoneSolver>, RolloutGrad<GenState>, RolloutGrad<GenState>) {
        let sel = ParamSelection::all(m);
        let states = rollout(solver, m, s0, us, 0.01).unwrap();
        let a = rollout_vjp(solver, m, &states, us, 0.01, &sel, tape_cotangent).unwrap();
        let tape = rollout_tape(solver, m, s0, us, 0.01).unwrap();
        let b = tape_vjp(solver, m, &tape, us, &sel, tape_cotangent).unwrap();
        assert!(a.g_theta.iter().any(|g| *g != 0.0), "{}: some ∂L/∂θ", m.name);
        (states, tape, a, b)
    }

    /// A 15-step Featherstone rollout of the floating tree under time-varying body wrenches: ∂L/∂(every wrench
    /// of every step) and ∂L/∂s_0 against central differences.
    #[test]
    fn rollout_vjp_body_wrenches_match_central_differences() {
        let (m, solver, s0) = floating_tree_case();
        let nw = 6 * m.body_count();
        let t_len = 15;
        let ws: Vec<f64> = (0..t_len * nw).map(|i| ((i * 13 % 17) as f64 - 8.0) * 0.05).collect();
        let controls = |w: &[f64]| -> Vec<Control> {
            (0..t_len).map(|t| Control::zeros(m.nv()).with_body_wrench(&w[t * nw..(t + 1) * nw])).collect()
        };
        let loss = |st: &[GenState]| st.iter().map(|s| s.q[0] + 0.3 * s.v[2] - 0.2 * s.q[9]).sum::<f64>();
        let us = controls(&ws);
        let states = rollout(&solver, &m, &s0, &us, 0.01).unwrap();
        let g = rollout_vjp(&solver, &m, &states, &us, 0.01, &ParamSelection::none(), |_, _, g: &mut GenState| {
            g.q[0] += 1.0;
            g.v[2] += 0.3;
            g.q[9] -= 0.2;
        })
        .unwrap();
        let an: Vec<f64> = g.g_wrench.concat();
        let c = gradcheck(
            |d| {
                loss(
                    &rollout(
                        &solver,
                        &m,
                        &s0,
                        &controls(&ws.iter().zip(d).map(|(a, b)| a + b).collect::<Vec<_>>()),
                        0.01,
                    )
                    .unwrap(),
                )
            },
            &an,
            1e-6,
        );
        eprintln!("rollout ∂L/∂wrenches vs central differences: {:e}", c.max_rel_err);
        assert!(c.max_rel_err < 1e-6, "{:e}", c.max_rel_err);
    }

    /// The tape's gradient (records of the forward pass) equals `rollout_vjp`'s (records recomputed) to
    /// round-off, for every parameter of the floating tree under Featherstone, and its states are `rollout`'s.
    #[test]
    fn tape_vjp_matches_rollout_vjp() {
        let (m, solver, s0) = floating_tree_case();
        let us: Vec<Control> =
            (0..30).map(|t| Control::from_torques(&vec![0.2 * (t as f64 * 0.3).sin(); m.nv()])).collect();
        let (states, tape, a, b) = both_vjps(&solver, &m, &s0, &us);
        assert!(tape.states.iter().zip(&states).all(|(x, y)| x.q == y.q && x.v == y.v));
        let e = [
            crate::rel_err(&b.g_theta, &a.g_theta),
            crate::rel_err(&b.g_u.concat(), &a.g_u.concat()),
            crate::rel_err(&b.g_s0_tangent, &a.g_s0_tangent),
        ];
        eprintln!("tape_vjp vs rollout_vjp (θ, u, s0): {:.1e} {:.1e} {:.1e}", e[0], e[1], e[2]);
        assert!(e.iter().all(|&x| x < 1e-12), "{e:?}");
        assert!(tape_vjp(&solver, &m, &tape, &us[1..], &ParamSelection::all(&m), tape_cotangent).is_err());
    }

    /// With the step's articulated-body factorization kept in each record, the tape's gradient is `rollout_vjp`'s
    /// bit for bit (both solve with the same factors), w.r.t. every parameter, control and s_0: on the floating
    /// tree (free, ball, slide, hinge; damped, armature) and on the Panda with joint dry friction (stuck and
    /// sliding DoFs: the stick constraints' adjoint solves with the factors too).
    #[test]
    fn tape_vjp_is_bit_identical_to_rollout_vjp() {
        use torsion_model::io::{example_robot_data_dir, load_urdf, robots::PANDA_URDF, UrdfOptions};
        let (mut tree, solver, _) = floating_tree_case();
        tree.joint_damping.iter_mut().for_each(|d| *d = 0.1);
        tree.joint_armature.iter_mut().for_each(|a| *a = 0.01);
        let dir = example_robot_data_dir().expect("example-robot-data");
        let opts =
            UrdfOptions { root: Some("panda_link0".into()), tip: Some("panda_link8".into()), drop_off_chain: true };
        let mut panda = load_urdf(&dir.join(PANDA_URDF), &opts).unwrap();
        panda.joint_frictionloss.iter_mut().for_each(|f| *f = 2.0);
        for m in [tree, panda] {
            let us: Vec<Control> = (0..30)
                .map(|t| {
                    Control::from_torques(
                        &(0..m.nv()).map(|i| 3.0 * (t as f64 * 0.3 + i as f64).sin()).collect::<Vec<_>>(),
                    )
                })
                .collect();
            let (_, _, a, b) = both_vjps(&solver, &m, &start(&m), &us);
            assert_eq!(b.g_theta, a.g_theta, "{}: ∂L/∂θ", m.name);
            assert_eq!(b.g_u, a.g_u, "{}: ∂L/∂u", m.name);
            assert_eq!(b.g_s0_tangent, a.g_s0_tangent, "{}: ∂L/∂s_0", m.name);
        }
    }
}
