//! iLQR convergence on the analytic Jacobians of real steppers (issue 19 item 2): (a) a 2-link arm swing-up
//! under Featherstone, (b) a Panda reach under Featherstone with control limits, (c) pushing a box to a spot
//! under ncp (contact, friction). Each reports iterations, cost before / after and the final task error.
use nalgebra::DVector;
use std::f64::consts::FRAC_PI_2;
use torsion_math::Vec3;
use torsion_model::builder::two_link_arm;
use torsion_model::io::mjcf::load_mjcf_str;
use torsion_model::io::{example_robot_data_dir, load_urdf, robots::PANDA_URDF, UrdfOptions};
use torsion_model::GenState;
use torsion_opt::ilqr::{Ilqr, IlqrOptions, QuadraticTracking, SolverDynamics};
use torsion_opt::IlqrReport;
use torsion_solvers::ncp::{NcpOptions, NcpSolver};
use torsion_solvers::FeatherstoneSolver;

/// Every control of the report inside [lo, hi]; the number of entries on a bound.
fn check_box(r: &IlqrReport<GenState>, lo: &[f64], hi: &[f64]) -> usize {
    let mut on_bound = 0;
    for u in &r.controls {
        for i in 0..u.len() {
            assert!(u[i] >= lo[i] && u[i] <= hi[i], "control {i} = {} outside [{}, {}]", u[i], lo[i], hi[i]);
            on_bound += (lo[i] < hi[i] && (u[i] == lo[i] || u[i] == hi[i])) as usize;
        }
    }
    on_bound
}

/// The cost history never increases.
fn check_monotone(r: &IlqrReport<GenState>) {
    assert!(r.cost_history.windows(2).all(|w| w[1] <= w[0]), "cost rose: {:?}", r.cost_history);
}

/// (a) Swing-up of the 2-link arm (0.5 m, 1 kg links, hinges about z, gravity −y) from hanging (−π/2, 0) to
/// upright (π/2, 0) in 2 s (100 steps of 20 ms) with |u1| ≤ 6 N·m, |u2| ≤ 3 N·m (holding the arm horizontal
/// would need 9.8 N·m at the shoulder: it has to swing), from zero controls.
#[test]
fn arm_swing_up_under_featherstone() {
    let dt = 0.02;
    let m = two_link_arm(0.5, 0.5, 1.0, Vec3::new(0.0, -9.8, 0.0), dt).unwrap();
    let solver = FeatherstoneSolver::default();
    let mut dynamics = SolverDynamics::new(&solver, &m, dt).unwrap();
    let x0 = GenState::new(vec![-FRAC_PI_2, 0.0], vec![0.0, 0.0]);
    let goal = GenState::new(vec![FRAC_PI_2, 0.0], vec![0.0, 0.0]);
    let mut cost = QuadraticTracking::diagonal(&m, goal, &[0.0; 4], &[1e-2, 1e-2], &[1000.0, 1000.0, 100.0, 100.0]);
    let (lo, hi) = (vec![-6.0, -3.0], vec![6.0, 3.0]);
    let o = IlqrOptions { max_iter: 200, u_min: Some(lo.clone()), u_max: Some(hi.clone()), ..Default::default() };
    let t_len = 100;
    let mut il = Ilqr::new(4, 2, t_len, &x0, o).unwrap();
    let r = il.solve(&mut dynamics, &mut cost, &x0, &vec![DVector::zeros(2); t_len]).unwrap();
    let xt = r.states.last().unwrap();
    let err = ((xt.q[0] - FRAC_PI_2).powi(2) + xt.q[1].powi(2)).sqrt();
    let verr = (xt.v[0].powi(2) + xt.v[1].powi(2)).sqrt();
    let on_bound = check_box(&r, &lo, &hi);
    eprintln!(
        "arm swing-up: {} iterations ({:?}), cost {:.4e} → {:.4e}, final |q − q*| {err:.2e} rad, |v| {verr:.2e} rad/s, \
         {on_bound} control entries on a bound",
        r.iterations,
        r.stop,
        r.cost_history[0],
        r.cost_history.last().unwrap()
    );
    check_monotone(&r);
    assert!(err < 0.02 && verr < 0.1, "final error {err:e} rad, {verr:e} rad/s");
    assert!(on_bound > 0, "the limits were never active");
}

/// (b) The Panda (example-robot-data, 7 DoF, hand dropped) reaches a joint-space goal 0.3–0.5 rad away in 0.5 s
/// (50 steps of 10 ms) against gravity, with torque limits ±40 N·m (joints 1–4) and ±4 N·m (5–7), started from
/// zero torques (the arm first falls): every returned control is inside the box and some sit on it.
#[test]
fn panda_reach_with_control_limits_under_featherstone() {
    let dir = example_robot_data_dir().expect("example-robot-data");
    let opts = UrdfOptions { root: Some("panda_link0".into()), tip: Some("panda_link8".into()), drop_off_chain: true };
    let m = load_urdf(&dir.join(PANDA_URDF), &opts).unwrap();
    let dt = 0.01;
    let solver = FeatherstoneSolver::default();
    let mut dynamics = SolverDynamics::new(&solver, &m, dt).unwrap();
    let nv = m.nv();
    let q0 = vec![0.0, -0.4, 0.0, -2.0, 0.0, 1.6, 0.8];
    let dq = [0.4, 0.3, -0.3, 0.5, 0.4, -0.3, 0.5];
    let q_goal: Vec<f64> = q0.iter().zip(&dq).map(|(a, b)| a + b).collect();
    let x0 = GenState::new(q0, vec![0.0; nv]);
    let goal = GenState::new(q_goal.clone(), vec![0.0; nv]);
    let qf: Vec<f64> = (0..2 * nv).map(|i| if i < nv { 1000.0 } else { 10.0 }).collect();
    let mut cost = QuadraticTracking::diagonal(&m, goal, &vec![0.0; 2 * nv], &vec![1e-4; nv], &qf);
    let hi: Vec<f64> = (0..nv).map(|i| if i < 4 { 40.0 } else { 4.0 }).collect();
    let lo: Vec<f64> = hi.iter().map(|h| -h).collect();
    let o = IlqrOptions { max_iter: 100, u_min: Some(lo.clone()), u_max: Some(hi.clone()), ..Default::default() };
    let t_len = 50;
    let mut il = Ilqr::new(2 * nv, nv, t_len, &x0, o).unwrap();
    let r = il.solve(&mut dynamics, &mut cost, &x0, &vec![DVector::zeros(nv); t_len]).unwrap();
    let xt = r.states.last().unwrap();
    let err = xt.q.iter().zip(&q_goal).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    let verr = xt.v.iter().map(|v| v.abs()).fold(0.0, f64::max);
    let on_bound = check_box(&r, &lo, &hi);
    eprintln!(
        "panda reach: {} iterations ({:?}), cost {:.4e} → {:.4e}, final max |q − q*| {err:.2e} rad, max |v| {verr:.2e} \
         rad/s, {on_bound} control entries on a bound",
        r.iterations,
        r.stop,
        r.cost_history[0],
        r.cost_history.last().unwrap()
    );
    check_monotone(&r);
    assert!(err < 0.01 && verr < 0.1, "final error {err:e} rad, {verr:e} rad/s");
    assert!(on_bound > 0, "the limits were never active");
}

/// (c) Contact: a 1 kg box (0.2 m cube, μ = 0.5 with the floor, so 4.9 N of friction) resting on a plane under
/// ncp is pushed by a horizontal force at its COM (the free joint's force entries; torques and the vertical force
/// held at 0 by the box) to (0.3, 0.1) m, at rest, in 0.6 s (30 steps of 20 ms), |F_x|, |F_y| ≤ 15 N. Started
/// from a constant 6 N push along x (a sticking box has zero control gradient: iLQR needs it sliding).
#[test]
fn box_push_to_a_spot_under_ncp() {
    let xml = r#"<mujoco><option timestep="0.02"/><worldbody><geom type="plane" size="5 5 0.1" friction="0.5"/>
        <body pos="0 0 0.1"><freejoint/><geom type="box" size="0.1 0.1 0.1" mass="1" friction="0.5"/></body>
        </worldbody></mujoco>"#;
    let m = load_mjcf_str(xml, "box.xml", None).unwrap();
    let dt = 0.02;
    let solver = NcpSolver::new(NcpOptions::default());
    let mut dynamics = SolverDynamics::new(&solver, &m, dt).unwrap();
    let x0 = GenState::new(vec![0.0, 0.0, 0.0999, 1.0, 0.0, 0.0, 0.0], vec![0.0; 6]);
    let target = [0.3, 0.1];
    let goal = GenState::new(vec![target[0], target[1], 0.0999, 1.0, 0.0, 0.0, 0.0], vec![0.0; 6]);
    // tangent of the free joint: (ω-part, position part) of q, then (ω, v)
    let qf = [10.0, 10.0, 10.0, 1e4, 1e4, 0.0, 1.0, 1.0, 1.0, 100.0, 100.0, 0.0];
    let mut cost = QuadraticTracking::diagonal(&m, goal, &[0.0; 12], &[0.0, 0.0, 0.0, 1e-3, 1e-3, 0.0], &qf);
    // generalized force of the free joint: [torque; force] in the body frame
    let hi = [0.0, 0.0, 0.0, 15.0, 15.0, 0.0];
    let lo = [0.0, 0.0, 0.0, -15.0, -15.0, 0.0];
    let o = IlqrOptions { max_iter: 50, u_min: Some(lo.to_vec()), u_max: Some(hi.to_vec()), ..Default::default() };
    let t_len = 30;
    let mut il = Ilqr::new(12, 6, t_len, &x0, o).unwrap();
    let u0 = vec![DVector::from_vec(vec![0.0, 0.0, 0.0, 6.0, 0.0, 0.0]); t_len];
    let r = il.solve(&mut dynamics, &mut cost, &x0, &u0).unwrap();
    let xt = r.states.last().unwrap();
    let err = ((xt.q[0] - target[0]).powi(2) + (xt.q[1] - target[1]).powi(2)).sqrt();
    let speed = (xt.v[3].powi(2) + xt.v[4].powi(2)).sqrt();
    check_box(&r, &lo, &hi);
    eprintln!(
        "box push (ncp): {} iterations ({:?}), cost {:.4e} → {:.4e}, final position error {err:.2e} m, speed {speed:.2e} \
         m/s",
        r.iterations,
        r.stop,
        r.cost_history[0],
        r.cost_history.last().unwrap()
    );
    check_monotone(&r);
    assert!(err < 0.01 && speed < 0.05, "final error {err:e} m, speed {speed:e} m/s");
}

/// (d) Cable actuators (the 3-bar prism of spec 003 §4.0: 3 free rods, 9 cables, 3 filtered motors): u is the
/// Featherstone row [18 generalized forces (boxed to 0); 3 actuator controls], so this exercises the `ctrl` split
/// of `SolverDynamics` and B's actuator columns. The target is the state a reference control sequence reaches
/// after 0.1 s (50 steps of 2 ms; the stiff, damped cables need a short step); iLQR from zero controls must find controls that reach it.
#[test]
fn tensegrity_prism_actuators_reach_a_reference_state() {
    use torsion_model::builder::tensegrity_prism;
    use torsion_model::StateSpace;
    let m = tensegrity_prism();
    let dt = 0.002;
    let solver = FeatherstoneSolver::default();
    let mut dynamics = SolverDynamics::new(&solver, &m, dt).unwrap();
    let (nv, na, nu) = (m.nv(), m.na(), m.nu());
    let (nx, nc) = (2 * nv + na, nv + nu);
    let x0 = GenState::with_act(m.qpos0.clone(), vec![0.0; nv], vec![0.0; na]);
    let t_len = 50;
    let u_ref: Vec<DVector<f64>> = (0..t_len)
        .map(|t| {
            let mut u = DVector::zeros(nc);
            u[nv] = 60.0;
            u[nv + 1] = -40.0 + t as f64;
            u
        })
        .collect();
    let mut x = x0.clone();
    let mut next = x0.clone();
    use torsion_opt::Dynamics;
    for u in &u_ref {
        dynamics.step(&x, u.as_slice(), &mut next).unwrap();
        std::mem::swap(&mut x, &mut next);
    }
    let qf: Vec<f64> = (0..nx).map(|i| if i < nv { 1e4 } else { 10.0 }).collect();
    let r: Vec<f64> = (0..nc).map(|i| if i < nv { 0.0 } else { 1e-6 }).collect();
    let mut cost = QuadraticTracking::diagonal(&m, x.clone(), &vec![0.0; nx], &r, &qf);
    let hi: Vec<f64> = (0..nc).map(|i| if i < nv { 0.0 } else { 100.0 }).collect();
    let lo: Vec<f64> = hi.iter().map(|h| -h).collect();
    let o = IlqrOptions { max_iter: 50, u_min: Some(lo.clone()), u_max: Some(hi.clone()), ..Default::default() };
    let mut il = Ilqr::new(nx, nc, t_len, &x0, o).unwrap();
    let res = il.solve(&mut dynamics, &mut cost, &x0, &vec![DVector::zeros(nc); t_len]).unwrap();
    check_box(&res, &lo, &hi);
    check_monotone(&res);
    let e = StateSpace::local_diff(&x, &m, res.states.last().unwrap());
    let err = e[..nv].iter().map(|v| v.abs()).fold(0.0, f64::max);
    let start = StateSpace::local_diff(&x, &m, &x0)[..nv].iter().map(|v| v.abs()).fold(0.0, f64::max);
    let (j0, j1) = (res.cost_history[0], *res.cost_history.last().unwrap());
    eprintln!(
        "prism actuators: {} iterations ({:?}), cost {j0:.4e} → {j1:.4e}, final max |q ⊖ q*| {err:.2e} (from {start:.2e})",
        res.iterations, res.stop
    );
    assert!(j1 < 1e-2 * j0, "{j0:e} → {j1:e}");
    assert!(err < 0.05 * start, "{err:e} vs {start:e}");
}
