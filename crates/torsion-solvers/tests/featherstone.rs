//! The semi-implicit Featherstone stepper: transition Jacobians (A, B, C) and the step VJP against central
//! finite differences on the manifold (free, ball, prismatic and revolute joints), and a rollout gradient.
use torsion_diff::{fd_jacobian, gradcheck, rel_err, rollout, rollout_vjp};
use torsion_math::{Mat3, Quat, Vec3};
use torsion_model::builder::{JointDesc, ModelBuilder};
use torsion_model::{Control, JointType, Model, ParamSelection};
use torsion_solvers::{DiffSolver, FeatherstoneSolver, GenState, Solver};

fn tree() -> Model {
    let mut b = ModelBuilder::new("tree").gravity(Vec3::new(0.0, 0.0, -9.81)).dt(0.01);
    let w = b.add_fixed_body("world", Vec3::zeros(), Quat::identity());
    let i = |a: f64, bb: f64, c: f64, d: f64| Mat3::new(a, d, 0.001, d, bb, -0.002, 0.001, -0.002, c);
    let base = b.add_body("base", 3.0, i(0.1, 0.12, 0.08, 0.005));
    let arm = b.add_body("arm", 1.2, i(0.02, 0.03, 0.025, -0.001));
    let tip = b.add_body("tip", 0.5, i(0.004, 0.005, 0.003, 0.0002));
    let end = b.add_body("end", 0.3, i(0.002, 0.003, 0.0025, 0.0001));
    let mut f = JointDesc::hinge("free", w, base, Vec3::zeros(), Vec3::new(0.01, -0.02, 0.03), Vec3::z());
    f.kind = JointType::Free;
    b.add_joint(f);
    let mut ball =
        JointDesc::hinge("ball", base, arm, Vec3::new(0.2, 0.0, 0.1), Vec3::new(-0.15, 0.01, 0.0), Vec3::z());
    ball.kind = JointType::Ball;
    b.add_joint(ball);
    let mut pr = JointDesc::hinge(
        "slide",
        arm,
        tip,
        Vec3::new(0.15, 0.0, 0.0),
        Vec3::new(0.0, 0.0, -0.05),
        Vec3::new(1.0, 0.2, 0.1),
    );
    pr.kind = JointType::Prismatic;
    b.add_joint(pr);
    let mut h = JointDesc::hinge(
        "hinge",
        tip,
        end,
        Vec3::new(0.0, 0.05, 0.0),
        Vec3::new(-0.05, 0.0, 0.0),
        Vec3::new(0.3, 1.0, 0.0),
    );
    h.damping = 0.1;
    b.add_joint(h);
    b.build().unwrap()
}

fn state(m: &Model) -> GenState {
    let qb = Quat::new(0.9, 0.1, -0.3, 0.2).normalize().to_array();
    let qa = Quat::new(0.8, -0.2, 0.4, 0.3).normalize().to_array();
    let mut q = vec![0.1, -0.2, 0.3];
    q.extend_from_slice(&qb);
    q.extend_from_slice(&qa);
    q.extend_from_slice(&[0.05, 0.4]);
    assert_eq!(q.len(), m.nq());
    GenState { q, v: vec![0.3, -0.1, 0.2, 0.5, 0.4, -0.6, 1.0, -0.5, 0.7, 0.2, -0.8] }
}

#[test]
fn jacobians_and_vjp_match_finite_differences() {
    let m = tree();
    let solver = FeatherstoneSolver::default();
    let s0 = state(&m);
    let u = Control::from_torques(&[0.2, 0.1, -0.3, 1.0, 2.0, -1.0, 0.3, 0.2, 0.1, 0.5, -0.2]);
    let sel = ParamSelection::all(&m);
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
    let theta = m.param_vector();
    let fc = fd_jacobian(
        |d| {
            let mut mm = m.clone();
            let th: Vec<f64> = theta.iter().zip(d).map(|(a, b)| a + b).collect();
            mm.params_set(&sel, &th).unwrap();
            solver.local_diff(&m, &base, &next(&mm, &s0, &u))
        },
        sel.len(),
        1e-7,
    );
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
    let g_out = GenState { q: w[..m.nq()].to_vec(), v: w[m.nq()..].to_vec() };
    let mut g_s = solver.zero_grad(&m);
    let mut g_u = vec![0.0; m.nv()];
    let mut g_th = vec![0.0; theta.len()];
    solver.step_vjp(&m, &rec, &g_out, &mut g_s, &mut g_u, &mut g_th, &mut ws).unwrap();
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
    let s0 = GenState { q: vec![0.1, -0.4, 0.2, 0.9, -0.3, 0.5, 0.2], v: vec![0.0; 7] };
    let us: Vec<Control> = (0..30).map(|t| Control::from_torques(&[(t as f64 * 0.1).sin(); 7])).collect();
    let states = rollout(&solver, &m, &s0, &us, 0.005).unwrap();
    let loss = |st: &[GenState]| st.iter().map(|s| s.q.iter().map(|x| x.sin()).sum::<f64>()).sum::<f64>();
    let g = rollout_vjp(&solver, &m, &states, &us, 0.005, |_, s, g: &mut GenState| {
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
