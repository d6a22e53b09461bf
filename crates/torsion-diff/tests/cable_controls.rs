//! Rollouts of a cable-driven model (SUPERball in the air, spec 003 §4.1, issue 16 item 6): per-step cable-actuator
//! controls (`Control::ctrl`) through `rollout` / `rollout_each` (flat rows, `set_control_row`) / `rollout_vjp`,
//! and the gradients w.r.t. those controls and the cable parameters (k, c, gain, τ) against central differences.
use std::path::PathBuf;
use torsion_diff::{cable_controls, fd_gradient, rel_err, rollout, rollout_each, rollout_vjp, set_control_row};
use torsion_model::{Control, GenState, Model, ParamSelection};
use torsion_solvers::{DiffSolver, FeatherstoneSolver, Solver};

const DT: f64 = 0.001;
const T: usize = 8;

fn superball_air() -> Model {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../torsion-model/tests/data/mjcf/superball_air.xml");
    torsion_model::io::mjcf::load_mjcf(&p).unwrap()
}

/// T × nu controls in [−100, 100], different per step and actuator.
fn ctrl_rows(nu: usize) -> Vec<f64> {
    (0..T * nu).map(|i| 100.0 * ((i as f64 * 0.7311).sin())).collect()
}

fn start(m: &Model) -> GenState {
    let mut s = GenState::rest(m);
    s.act = (0..m.na()).map(|a| 0.5 * (a as f64 * 1.3).cos()).collect();
    s
}

/// Flat rows (nv generalized forces, then nu controls) through `rollout_each` + `set_control_row` give the
/// same trajectory as `rollout` over `cable_controls`, and the controls move the rods (vs zero controls).
#[test]
fn flat_control_rows_drive_the_cables() {
    let m = superball_air();
    let solver = FeatherstoneSolver::default();
    let (nv, nu) = (m.nv(), m.nu());
    assert_eq!(solver.control_dim(&m), nv + nu);
    let ctrl = ctrl_rows(nu);
    let us = cable_controls(nv, nu, &ctrl);
    assert_eq!((us.len(), us[0].joint_torque.len(), us[0].ctrl.len()), (T, nv, nu));
    let s0 = start(&m);
    let states = rollout(&solver, &m, &s0, &us, DT).unwrap();
    let flat: Vec<f64> =
        (0..T).flat_map(|t| vec![0.0; nv].into_iter().chain(ctrl[t * nu..(t + 1) * nu].to_vec())).collect();
    let mut ws = solver.workspace(&m).unwrap();
    let mut seen = vec![];
    let row = |t: usize, u: &mut Control| set_control_row(u, &flat[t * (nv + nu)..(t + 1) * (nv + nu)], nu);
    rollout_each(&solver, &m, &s0, T, DT, &mut ws, row, |_, s| seen.push(s.clone())).unwrap();
    assert_eq!(seen.as_slice(), &states[1..]);
    // the activations follow the controls, and the rods differ from the zero-control rollout
    let zero = rollout(&solver, &m, &s0, &cable_controls(nv, nu, &vec![0.0; T * nu]), DT).unwrap();
    let dact = states[T].act.iter().zip(&zero[T].act).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    let dq = states[T].q.iter().zip(&zero[T].q).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    assert!(dact > 1e-2 && dq > 1e-9, "dact {dact:e} dq {dq:e}");
    // a row shorter than nu is all generalized forces
    let mut u = Control::zeros(0);
    set_control_row(&mut u, &[1.0, 2.0], 24);
    assert_eq!((u.joint_torque.as_slice(), u.ctrl.len()), (&[1.0, 2.0][..], 0));
}

/// ∂L/∂ctrl_t (every step, every actuator) and ∂L/∂θ for one cable's k and c and one actuator's gain and τ of an
/// 8-step rollout, L = Σ_t (w · q_t + act_t · w_a), against central differences in relative units.
#[test]
fn rollout_vjp_through_cable_controls_matches_central_differences() {
    let m = superball_air();
    let solver = FeatherstoneSolver::default();
    let (nv, nu) = (m.nv(), m.nu());
    let names = ["tendon_stiffness[c3]", "tendon_damping[c7]", "actuator_gain[a3]", "actuator_timeconst[a5]"];
    let sel = ParamSelection::by_names(&m, &names).unwrap();
    let theta0 = m.params_get(&sel);
    let ctrl = ctrl_rows(nu);
    let s0 = start(&m);
    let wq: Vec<f64> = (0..m.nq()).map(|i| ((i * 7 % 11) as f64 - 5.0) / 5.0).collect();
    let wa: Vec<f64> = (0..m.na()).map(|i| ((i * 3 % 7) as f64 - 3.0) / 30.0).collect();
    let loss = |st: &[GenState]| -> f64 {
        st.iter()
            .map(|s| {
                s.q.iter().zip(&wq).map(|(a, b)| a * b).sum::<f64>()
                    + s.act.iter().zip(&wa).map(|(a, b)| a * b).sum::<f64>()
            })
            .sum()
    };
    let states = rollout(&solver, &m, &s0, &cable_controls(nv, nu, &ctrl), DT).unwrap();
    let g = rollout_vjp(&solver, &m, &states, &cable_controls(nv, nu, &ctrl), DT, &sel, |_, _, g: &mut GenState| {
        g.q.iter_mut().zip(&wq).for_each(|(a, b)| *a += b);
        g.act.iter_mut().zip(&wa).for_each(|(a, b)| *a += b);
    })
    .unwrap();
    // analytic, in relative units: ctrl by 100 d, θ_i by θ_i (1 + d)
    let mut an: Vec<f64> = (0..T).flat_map(|t| g.g_ctrl(t, nu).iter().map(|x| 100.0 * x).collect::<Vec<_>>()).collect();
    an.extend(g.g_theta.iter().zip(&theta0).map(|(a, b)| a * b));
    let f = |d: &[f64]| {
        let mut mm = m.clone();
        let th: Vec<f64> = theta0.iter().zip(&d[T * nu..]).map(|(a, b)| a * (1.0 + b)).collect();
        mm.params_set(&sel, &th).unwrap();
        let c: Vec<f64> = ctrl.iter().zip(d).map(|(a, b)| a + 100.0 * b).collect();
        loss(&rollout(&solver, &mm, &s0, &cable_controls(nv, nu, &c), DT).unwrap())
    };
    let num = fd_gradient(f, T * nu + sel.len(), 1e-6);
    let (e_u, e_th) = (rel_err(&an[..T * nu], &num[..T * nu]), rel_err(&an[T * nu..], &num[T * nu..]));
    eprintln!(
        "cable controls: d/dctrl vs FD {e_u:.1e}, d/d(k, c, gain, tau) vs FD {e_th:.1e}; grads {:?}",
        &an[T * nu..]
    );
    assert!(an.iter().all(|x| x.is_finite()));
    // the last step's controls do not reach the states (actearly off: ctrl_t moves act_{t+1}, X_{t+2})
    assert!(g.g_ctrl(T - 1, nu).iter().zip(&wa).all(|(x, w)| (x - w * DT / 1.0).abs() < 1e-12));
    assert!(e_u < 1e-6 && e_th < 1e-6, "ctrl {e_u:e} theta {e_th:e}");
    assert!(an[T * nu..].iter().all(|x| x.abs() > 1e-12), "each parameter moves the loss: {:?}", &an[T * nu..]);
}
