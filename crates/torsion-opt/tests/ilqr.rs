//! iLQR convergence on the analytic Jacobians of real steppers (issue 19 item 2): (a) a 2-link arm swing-up
//! under Featherstone, (b) a Panda reach under Featherstone with control limits, (c) pushing a box to a spot
//! under ncp (contact, friction). Each reports iterations, cost before / after and the final task error.
use nalgebra::DVector;
use std::f64::consts::FRAC_PI_2;
use torsion_math::Vec3;
use torsion_model::builder::two_link_arm;
use torsion_model::GenState;
use torsion_opt::ilqr::{Ilqr, IlqrOptions, QuadraticTracking, SolverDynamics};
use torsion_opt::IlqrReport;
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
