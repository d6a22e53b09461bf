//! One step report for every solver (issue 13 item 5): `Solver::step` returns a `StepInfo` naming the solver,
//! its iterations, contacts, final residual and convergence.
use torsion_math::Vec3;
use torsion_model::builder::two_link_arm;
use torsion_model::io::mjcf::load_mjcf_str;
use torsion_model::{Control, GenState};
use torsion_solvers::lcp::LcpSolver;
use torsion_solvers::ncp::{NcpOptions, NcpSolver};
use torsion_solvers::{FeatherstoneSolver, Solver, XpbdOptions, XpbdSolver};

#[test]
fn every_solver_reports_its_step() {
    let arm = two_link_arm(0.8, 0.5, 1.0, Vec3::new(0.0, -9.8, 0.0), 0.01).unwrap();
    let u = Control::from_torques(&[0.3, -0.2]);

    let xpbd = XpbdSolver::new(XpbdOptions { iterations: 7, substeps: 3, ..Default::default() });
    let s = arm.state_at(&[0.4, -0.7]).unwrap();
    let (mut out, mut ws) = (s.clone(), xpbd.workspace(&arm).unwrap());
    let info = xpbd.step(&arm, &s, &u, 0.01, &mut out, &mut ws, None).unwrap();
    assert_eq!((info.solver, info.iterations, info.contacts), ("xpbd", 21, 0));
    assert!(info.converged);

    let fs = FeatherstoneSolver::default();
    let g = GenState::new(vec![0.4, -0.7], vec![0.0; 2]);
    let (mut out, mut ws) = (g.clone(), fs.workspace(&arm).unwrap());
    let info = fs.step(&arm, &g, &u, 0.01, &mut out, &mut ws, None).unwrap();
    assert_eq!((info.solver, info.iterations, info.residual), ("featherstone", 0, 0.0));
    assert!(info.converged);

    // a box landing with restitution: the impact's passes and the step's
    let xml = r#"<mujoco><option timestep="0.01"/><worldbody><geom name="floor" type="plane" size="5 5 0.1"/>
        <body pos="0 0 0.1"><freejoint/><geom type="box" size="0.1 0.1 0.1" mass="1"/></body></worldbody></mujoco>"#;
    let mut m = load_mjcf_str(xml, "box.xml", None).unwrap();
    m.param_set_by_name("shape_restitution[floor]", 0.5).unwrap();
    // a fixed pass count (no residual stop): 6 passes for the impact, 6 for the step
    let ncp = NcpSolver::new(NcpOptions { n_step: 6, residual_tolerance: 0.0, ..Default::default() });
    let mut s = GenState::new(m.qpos0.clone(), vec![0.0; 6]);
    s.v[5] = -1.0;
    let (mut out, mut ws) = (s.clone(), ncp.workspace(&m).unwrap());
    let info = ncp.step(&m, &s, &Control::from_torques(&[0.0; 6]), 0.01, &mut out, &mut ws, None).unwrap();
    assert!(ws.report.impact.is_some(), "an impact solve");
    assert_eq!((info.solver, info.contacts, info.iterations), ("ncp", 4, 12));
    assert!(info.converged && info.residual < 1e-6, "{info:?}");

    // the LCP stepper on the same landing: the impact LCP and the step's, answered by Jade's Dantzig (its pivots)
    let lcp = LcpSolver::default();
    let (mut out, mut ws) = (s.clone(), lcp.workspace(&m).unwrap());
    let info = lcp.step(&m, &s, &Control::from_torques(&[0.0; 6]), 0.01, &mut out, &mut ws, None).unwrap();
    assert!(ws.report.impact.is_some() && ws.report.step.is_some(), "an impact LCP and a step LCP");
    let pivots: usize =
        [&ws.report.impact, &ws.report.step].iter().map(|r| r.as_ref().unwrap().answer.solution.iterations).sum();
    assert_eq!((info.solver, info.contacts, info.iterations), ("lcp/jade", 4, pivots));
    assert!(pivots > 0 && info.converged && info.residual < 1e-6, "{info:?}");

    // no contact (the box in the air, the default solvers): nothing to solve, converged (ncp reported a
    // contact-free step as not converged before session 12)
    let mut air = GenState::new(m.qpos0.clone(), vec![0.0; 6]);
    air.q[2] = 1.0;
    for (name, info) in [
        ("ncp", {
            let ncp = NcpSolver::default();
            let (mut out, mut ws) = (air.clone(), ncp.workspace(&m).unwrap());
            ncp.step(&m, &air, &Control::from_torques(&[0.0; 6]), 0.01, &mut out, &mut ws, None).unwrap()
        }),
        ("lcp", {
            let (mut out, mut ws) = (air.clone(), lcp.workspace(&m).unwrap());
            lcp.step(&m, &air, &Control::from_torques(&[0.0; 6]), 0.01, &mut out, &mut ws, None).unwrap()
        }),
    ] {
        assert!(info.contacts == 0 && info.converged && info.residual == 0.0, "{name} in the air: {info:?}");
    }
}
