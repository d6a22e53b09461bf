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

/// Every parameter but the joints' friction loss, 0 here: a non-smooth point (friction switches on across it,
/// docs/gradients.md; `joint_friction.rs` tests it away from 0), and the contact materials (not read without
/// contact; a restitution of 0 is at its bound).
fn smooth_params(m: &Model) -> ParamSelection {
    let mut sel = ParamSelection::all(m);
    let table = m.param_table();
    sel.indices
        .retain(|&i| !table.names[i].starts_with("joint_frictionloss[") && !table.kinds[i].is_contact_material());
    sel
}

/// Position servos (kp 8, kv 1.5: τ = kp (ctrl − q) − kv q̇) on every 1-DoF joint, so that implicitfast (kv in
/// M − h ∂τ/∂q̇) differs from Euler, and controls for them.
fn with_servos(mut m: Model) -> (Model, Vec<f64>) {
    for (j, t) in m.joint_type.clone().into_iter().enumerate() {
        if t.dof() == 1 {
            m.cable_actuators.push(torsion_model::CableActuator {
                name: format!("servo{j}"),
                transmission: torsion_model::Transmission::Joint(j),
                gain: 8.0,
                bias: [0.0, -8.0, -1.5],
                forcerange: None,
                timeconst: None,
                ctrlrange: None,
            });
        }
    }
    let ctrl = (0..m.nu()).map(|a| 0.3 - 0.2 * a as f64).collect();
    (m, ctrl)
}

/// Normwise errors of the step Jacobians A, B (generalized forces and actuator controls), C (`smooth_params`) and of
/// the step VJP (θ, state on the manifold, controls) of a weighted sum of the next state, against central
/// differences of `solver`'s step.
fn derivative_errors(solver: &FeatherstoneSolver, m: &Model, s0: &GenState, u: &Control, dt: f64) -> [f64; 6] {
    let sel = smooth_params(m);
    let jac = solver.step_jacobians(m, s0, u, dt, &sel).unwrap();
    let next = |mm: &Model, s: &GenState, uu: &Control| {
        let mut ws = solver.workspace(mm).unwrap();
        let mut o = s.clone();
        solver.step(mm, s, uu, dt, &mut o, &mut ws, None).unwrap();
        o
    };
    let (nv, nu) = (m.nv(), m.nu());
    let with = |c: &[f64]| Control::with_ctrl(&c[..nv], &c[nv..]);
    let c0: Vec<f64> = u.joint_torque.iter().chain(&u.ctrl).copied().collect();
    let shifted = |d: &[f64]| -> Vec<f64> { c0.iter().zip(d).map(|(a, b)| a + b).collect() };
    let base = next(m, s0, u);
    let n = solver.tangent_dim(m);
    let fa = fd_jacobian(|d| solver.local_diff(m, &base, &next(m, &solver.retract(m, s0, d), u)), n, 1e-6);
    let fb = fd_jacobian(|d| solver.local_diff(m, &base, &next(m, s0, &with(&shifted(d)))), nv + nu, 1e-6);
    let fc = fd_params(m, &sel, |mm| solver.local_diff(m, &base, &next(mm, s0, u)));

    // VJP of a scalar of the next state (ambient), w.r.t. the state on the manifold, controls and θ
    let w: Vec<f64> = (0..m.nq() + nv).map(|i| ((i * 7919) % 13) as f64 / 6.0 - 1.0).collect();
    let loss = |s: &GenState| s.q.iter().chain(&s.v).zip(&w).map(|(a, b)| a * b).sum::<f64>();
    let mut ws = solver.workspace(m).unwrap();
    let mut rec = solver.record(m);
    let mut out = s0.clone();
    solver.step(m, s0, u, dt, &mut out, &mut ws, Some(&mut rec)).unwrap();
    let g_out = GenState::new(w[..m.nq()].to_vec(), w[m.nq()..].to_vec());
    let (mut g_s, mut g_u, mut g_th) = (solver.zero_grad(m), vec![0.0; nv + nu], vec![0.0; sel.len()]);
    solver.step_vjp(m, &rec, &g_out, &mut g_s, &mut g_u, &sel, &mut g_th, &mut ws).unwrap();
    let th0 = m.params_get(&sel);
    let fth = fd_jacobian(
        |d| {
            let mut mm = m.clone();
            let v: Vec<f64> = th0.iter().zip(d).map(|(a, b)| a + b).collect();
            mm.params_set(&sel, &v).unwrap();
            vec![loss(&next(&mm, s0, u))]
        },
        sel.len(),
        1e-6,
    );
    let fs = fd_jacobian(|d| vec![loss(&next(m, &solver.retract(m, s0, d), u))], n, 1e-6);
    let fu = fd_jacobian(|d| vec![loss(&next(m, s0, &with(&shifted(d))))], nv + nu, 1e-6);
    [
        rel_err(jac.a.as_slice(), fa.as_slice()),
        rel_err(jac.b.as_slice(), fb.as_slice()),
        rel_err(jac.c.as_slice(), fc.as_slice()),
        rel_err(&g_th, fth.as_slice()),
        rel_err(&solver.grad_to_tangent(m, s0, &g_s), fs.as_slice()),
        rel_err(&g_u, fu.as_slice()),
    ]
}

#[test]
fn jacobians_and_vjp_match_finite_differences() {
    let m = tree();
    let s0 = state(&m);
    let u = Control::from_torques(&(0..m.nv()).map(|i| ((i * 5 + 1) % 7) as f64 / 3.0 - 1.0).collect::<Vec<_>>());
    let e = derivative_errors(&FeatherstoneSolver::default(), &m, &s0, &u, 0.01);
    eprintln!(
        "featherstone step vs FD: A {:.1e} B {:.1e} C {:.1e}; VJP θ {:.1e} s {:.1e} u {:.1e}",
        e[0], e[1], e[2], e[3], e[4], e[5]
    );
    assert!(e.iter().all(|x| *x < 1e-6), "{e:?}");
}

/// Each integrator (issue 20 item 3: Euler, RK4, implicitfast) on the floating tree (free, ball, slide and hinge
/// joints, damped, with armature) and the Baxter arm (damped), both with position servos on their 1-DoF joints:
/// A, B, C and the step VJP against central differences (≤ 1e-6), and the integrators give different steps.
#[test]
fn every_integrator_has_jacobians_and_vjp_matching_finite_differences() {
    use torsion_solvers::Integrator;
    let mut tree = tree();
    for (j, (d, a)) in tree.joint_damping.iter_mut().zip(tree.joint_armature.iter_mut()).enumerate() {
        (*d, *a) = (0.05 + 0.02 * j as f64, 0.01 * j as f64);
    }
    let mut baxter = torsion_model::io::robots::baxter_left_arm().expect("example-robot-data");
    baxter.joint_frictionloss.iter_mut().for_each(|f| *f = 0.0);
    baxter.joint_damping.iter_mut().enumerate().for_each(|(j, d)| *d = 0.1 + 0.05 * j as f64);
    let baxter_q = vec![0.1, -0.4, 0.2, 0.9, -0.3, 0.5, 0.2];
    for (name, m) in [("floating tree", tree), ("baxter", baxter)] {
        let (m, ctrl) = with_servos(m);
        let s0 = if name == "baxter" { GenState::new(baxter_q.clone(), vec![0.0; 7]) } else { state(&m) };
        let s0 = GenState::new(s0.q, (0..m.nv()).map(|i| ((i * 7 + 3) % 11) as f64 / 5.0 - 1.0).collect());
        let tq: Vec<f64> = (0..m.nv()).map(|i| ((i * 5 + 1) % 7) as f64 / 3.0 - 1.0).collect();
        let u = Control::with_ctrl(&tq, &ctrl);
        let mut outs = vec![];
        for integ in [Integrator::SemiImplicitEuler, Integrator::Rk4, Integrator::ImplicitFast] {
            let solver = FeatherstoneSolver::with_integrator(integ);
            let e = derivative_errors(&solver, &m, &s0, &u, 0.01);
            eprintln!(
                "{name}, {integ}: A {:.1e} B {:.1e} C {:.1e}; VJP θ {:.1e} s {:.1e} u {:.1e} (vs central differences)",
                e[0], e[1], e[2], e[3], e[4], e[5]
            );
            assert!(e.iter().all(|x| *x < 1e-6), "{name}, {integ}: {e:?}");
            let mut o = s0.clone();
            solver.step(&m, &s0, &u, 0.01, &mut o, &mut solver.workspace(&m).unwrap(), None).unwrap();
            outs.push(o.v);
        }
        let diff = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max);
        assert!(diff(&outs[0], &outs[1]) > 1e-6 && diff(&outs[0], &outs[2]) > 1e-6, "{name}: the integrators differ");
    }
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
    warm.warm = [WarmImpulse { id: 7, normal: 1.0, tangent: [0.5, -0.5], t1: [1.0, 0.0, 0.0], ..Default::default() }]
        .into_iter()
        .collect();
    let u = Control::zeros(m.nv());
    let mut ws = solver.workspace(&m).unwrap();
    let (mut a, mut b) = (warm.clone(), warm.clone());
    solver.step(&m, &s, &u, 0.01, &mut a, &mut ws, None).unwrap();
    solver.step(&m, &warm, &u, 0.01, &mut b, &mut ws, None).unwrap();
    assert_eq!((a.q.clone(), a.v.clone()), (b.q.clone(), b.v.clone()));
    assert_eq!(b.warm, ContactWarmStart::default());
    assert!(a.warm.is_empty());
}

/// A pendulum of one hinge; `welded`: a second body fixed to the first (no DoF, seven more parameters).
fn pendulum(welded: bool) -> Model {
    use torsion_math::{Quat, Vec3};
    use torsion_model::builder::{JointDesc, ModelBuilder};
    let mut b = ModelBuilder::new("pendulum");
    let w = b.add_fixed_body("world", Vec3::zeros(), Quat::identity());
    let rod = b.add_body("rod", 1.0, common::inertia(0.02, 0.02, 0.001, 0.0, 0.0, 0.0));
    b.add_joint(JointDesc::hinge("hinge", w, rod, Vec3::zeros(), Vec3::new(0.0, 0.0, 0.3), Vec3::x()));
    if welded {
        let bob = b.add_body("bob", 0.5, common::inertia(0.001, 0.001, 0.001, 0.0, 0.0, 0.0));
        let mut weld = JointDesc::hinge("weld", rod, bob, Vec3::new(0.0, 0.0, -0.3), Vec3::zeros(), Vec3::x());
        weld.kind = torsion_model::JointType::Fixed;
        b.add_joint(weld);
    }
    b.build().unwrap()
}

/// A workspace holds its model's θ (`DynCache`, issue 13): stepping a model of the same nv but another parameter
/// table with it is an error naming the mismatch, not an index panic.
#[test]
fn a_workspace_for_another_parameter_table_is_an_error() {
    let (a, b) = (pendulum(false), pendulum(true));
    assert_eq!(a.nv(), b.nv());
    let solver = FeatherstoneSolver::default();
    let mut ws = solver.workspace(&a).unwrap();
    let s = GenState::new(vec![0.3], vec![0.1]);
    let mut out = s.clone();
    let e = solver.step(&b, &s, &Control::zeros(1), 0.01, &mut out, &mut ws, None).unwrap_err();
    assert!(e.to_string().contains("workspace was built for another model"), "{e}");
    // the workspace's own model still steps
    solver.step(&a, &s, &Control::zeros(1), 0.01, &mut out, &mut ws, None).unwrap();
}
