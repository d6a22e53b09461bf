//! The semi-implicit Featherstone stepper: transition Jacobians (A, B, C) and the step VJP against central
//! finite differences on the manifold (free, ball, prismatic and revolute joints), and a rollout gradient.
mod common;
use common::fd_params;
use torsion_diff::{fd_jacobian, gradcheck, rel_err, rollout, rollout_vjp};
use torsion_model::{Control, Model, ParamSelection};
use torsion_solvers::{DiffSolver, FeatherstoneSolver, GenState, Solver};

fn tree() -> Model {
    torsion_model::builder::floating_tree()
}

fn state(m: &Model) -> GenState {
    let v = (0..m.nv()).map(|i| ((i * 7 + 3) % 11) as f64 / 5.0 - 1.0).collect();
    GenState::new(torsion_model::builder::example_configuration(m, 4), v)
}

#[test]
fn jacobians_and_vjp_match_finite_differences() {
    let m = tree();
    let solver = FeatherstoneSolver::default();
    let s0 = state(&m);
    let u = Control::from_torques(&(0..m.nv()).map(|i| ((i * 5 + 1) % 7) as f64 / 3.0 - 1.0).collect::<Vec<_>>());
    // every parameter but the joints' friction loss, 0 here: a non-smooth point (friction switches on across it,
    // docs/gradients.md; `joint_friction.rs` tests it away from 0)
    let mut sel = ParamSelection::all(&m);
    let names = m.param_table().names;
    sel.indices.retain(|&i| !names[i].starts_with("joint_frictionloss["));
    let jac = solver.step_jacobians(&m, &s0, &u, 0.01, &sel).unwrap();
    let next = |mm: &Model, s: &GenState, uu: &Control| {
        let mut ws = solver.workspace(mm).unwrap();
        let mut o = s.clone();
        solver.step(mm, s, uu, 0.01, &mut o, &mut ws, None).unwrap();
        o
    };
    let base = next(&m, &s0, &u);
    let n = solver.tangent_dim(&m);
    let fa = fd_jacobian(|d| solver.local_diff(&m, &base, &next(&m, &solver.retract(&m, &s0, d), &u)), n, 1e-6);
    let fb = fd_jacobian(
        |d| {
            let uu: Vec<f64> = u.joint_torque.iter().zip(d).map(|(a, b)| a + b).collect();
            solver.local_diff(&m, &base, &next(&m, &s0, &Control::from_torques(&uu)))
        },
        m.nv(),
        1e-6,
    );
    let fc = fd_params(&m, &sel, |mm| solver.local_diff(&m, &base, &next(mm, &s0, &u)));
    let (ea, eb, ec) = (
        rel_err(jac.a.as_slice(), fa.as_slice()),
        rel_err(jac.b.as_slice(), fb.as_slice()),
        rel_err(jac.c.as_slice(), fc.as_slice()),
    );
    eprintln!("featherstone step Jacobians vs FD: A {ea:.1e} B {eb:.1e} C {ec:.1e}");
    assert!(ea < 1e-6 && eb < 1e-6 && ec < 1e-6);

    // VJP of a scalar of the next state (ambient), w.r.t. the state on the manifold, controls and θ
    let w: Vec<f64> = (0..m.nq() + m.nv()).map(|i| ((i * 7919) % 13) as f64 / 6.0 - 1.0).collect();
    let loss = |s: &GenState| s.q.iter().chain(&s.v).zip(&w).map(|(a, b)| a * b).sum::<f64>();
    let mut ws = solver.workspace(&m).unwrap();
    let mut rec = solver.record(&m);
    let mut out = s0.clone();
    solver.step(&m, &s0, &u, 0.01, &mut out, &mut ws, Some(&mut rec)).unwrap();
    let g_out = GenState::new(w[..m.nq()].to_vec(), w[m.nq()..].to_vec());
    let mut g_s = solver.zero_grad(&m);
    let mut g_u = vec![0.0; m.nv()];
    // the selected parameters only (the masses): one dual pass each, in the selection's order
    let msel = ParamSelection::by_prefix(&m, "body_mass[");
    let mut g_th = vec![0.0; msel.len()];
    solver.step_vjp(&m, &rec, &g_out, &mut g_s, &mut g_u, &msel, &mut g_th, &mut ws).unwrap();
    let m0 = m.params_get(&msel);
    let cth = gradcheck(
        |d| {
            let mut mm = m.clone();
            let v: Vec<f64> = m0.iter().zip(d).map(|(a, b)| a + b).collect();
            mm.params_set(&msel, &v).unwrap();
            loss(&next(&mm, &s0, &u))
        },
        &g_th,
        1e-6,
    );
    eprintln!("featherstone step VJP vs FD: selected masses {:.1e}", cth.max_rel_err);
    assert!(msel.len() > 1 && cth.max_rel_err < 1e-6);
    let c =
        gradcheck(|d| loss(&next(&m, &solver.retract(&m, &s0, d), &u)), &solver.grad_to_tangent(&m, &s0, &g_s), 1e-6);
    let cu = gradcheck(
        |d| {
            let uu: Vec<f64> = u.joint_torque.iter().zip(d).map(|(a, b)| a + b).collect();
            loss(&next(&m, &s0, &Control::from_torques(&uu)))
        },
        &g_u,
        1e-6,
    );
    eprintln!("featherstone step VJP vs FD: state {:.1e} controls {:.1e}", c.max_rel_err, cu.max_rel_err);
    assert!(c.max_rel_err < 1e-6 && cu.max_rel_err < 1e-6);
}

#[test]
fn baxter_rollout_gradient_matches_finite_differences() {
    let m = torsion_model::io::robots::baxter_left_arm().expect("example-robot-data");
    let solver = FeatherstoneSolver::default();
    let s0 = GenState::new(vec![0.1, -0.4, 0.2, 0.9, -0.3, 0.5, 0.2], vec![0.0; 7]);
    let us: Vec<Control> = (0..30).map(|t| Control::from_torques(&[(t as f64 * 0.1).sin(); 7])).collect();
    let states = rollout(&solver, &m, &s0, &us, 0.005).unwrap();
    let loss = |st: &[GenState]| st.iter().map(|s| s.q.iter().map(|x| x.sin()).sum::<f64>()).sum::<f64>();
    let g = rollout_vjp(&solver, &m, &states, &us, 0.005, &ParamSelection::none(), |_, s, g: &mut GenState| {
        for i in 0..7 {
            g.q[i] += s.q[i].cos();
        }
    })
    .unwrap();
    let c = gradcheck(
        |d| loss(&rollout(&solver, &m, &solver.retract(&m, &s0, d), &us, 0.005).unwrap()),
        &g.g_s0_tangent,
        1e-6,
    );
    let cu = gradcheck(
        |d| {
            let mut uu = us.clone();
            uu[3].joint_torque.iter_mut().zip(d).for_each(|(a, b)| *a += b);
            loss(&rollout(&solver, &m, &s0, &uu, 0.005).unwrap())
        },
        &g.g_u[3],
        1e-6,
    );
    eprintln!(
        "featherstone Baxter 30-step rollout gradient vs FD: state {:.1e}, controls {:.1e}",
        c.max_rel_err, cu.max_rel_err
    );
    assert!(c.max_rel_err < 1e-6 && cu.max_rel_err < 1e-6);
}

/// Featherstone has no contacts: a contact warm start in the input is ignored (the same step without it) and
/// the output carries none.
#[test]
fn contact_warm_start_is_ignored_and_cleared() {
    use torsion_solvers::{ContactWarmStart, WarmImpulse};
    let m = tree();
    let solver = FeatherstoneSolver::default();
    let s = state(&m);
    let mut warm = s.clone();
    warm.warm = [WarmImpulse { id: 7, normal: 1.0, tangent: [0.5, -0.5], t1: [1.0, 0.0, 0.0] }].into_iter().collect();
    let u = Control::zeros(m.nv());
    let mut ws = solver.workspace(&m).unwrap();
    let (mut a, mut b) = (warm.clone(), warm.clone());
    solver.step(&m, &s, &u, 0.01, &mut a, &mut ws, None).unwrap();
    solver.step(&m, &warm, &u, 0.01, &mut b, &mut ws, None).unwrap();
    assert_eq!((a.q.clone(), a.v.clone()), (b.q.clone(), b.v.clone()));
    assert_eq!(b.warm, ContactWarmStart::default());
    assert!(a.warm.is_empty());
}
