//! Cables and motor filters in the Featherstone stepper (spec 003 §3.3–3.5, issue 16 items 1, 2, 4): one cable's
//! step against the closed form, the transition Jacobians A, B, C w.r.t. the state (q, v, act), the controls
//! (u, ctrl) and the named cable parameters against central differences on the 3-bar prism in the air, and the
//! zero-length guard. The match with MuJoCo on SUPERball is `tests/python/test_tensegrity_air.py`.
use nalgebra::DMatrix;
use torsion_diff::{fd_jacobian, rel_err};
use torsion_model::{Control, GenState, Model, ParamSelection};
use torsion_solvers::{DiffSolver, FeatherstoneSolver, Solver};

fn step(solver: &FeatherstoneSolver, m: &Model, s: &GenState, u: &Control, dt: f64) -> GenState {
    let mut ws = solver.workspace(m).unwrap();
    let mut o = s.clone();
    solver.step(m, s, u, dt, &mut o, &mut ws, None).unwrap();
    o
}

/// A 2 kg ball hanging on one cable from a world site, no gravity: one step's velocity and activation equal
/// the closed form v1 = h (−k (L − l) − c L̇ + gain · act)/m and act1 = act + h (clamp(ctrl) − act)/τ
/// (force from act, not act1: MuJoCo's order), and the dead band gives no spring force inside [lo, hi].
#[test]
fn one_cable_step_matches_the_closed_form() {
    let xml = |sl: &str| {
        format!(
            r#"<mujoco><option gravity="0 0 0" timestep="0.001"/><worldbody><site name="w" pos="0 0 2"/>
            <body name="b" pos="0 0 1"><freejoint/><geom type="sphere" size="0.1" mass="2"/><site name="s"/></body>
            </worldbody><tendon><spatial name="t" stiffness="300" damping="7" springlength="{sl}">
            <site site="w"/><site site="s"/></spatial></tendon><actuator>
            <general name="a" tendon="t" dyntype="filter" dynprm="0.25" gainprm="40" ctrlrange="-1 1"/></actuator>
            </mujoco>"#
        )
    };
    let solver = FeatherstoneSolver::default();
    let h = 0.001;
    for (sl, spring) in [("0.6", -300.0 * (1.0 - 0.6)), ("0.5 1.2", 0.0)] {
        let m = torsion_model::io::mjcf::load_mjcf_str(&xml(sl), "one.xml", None).unwrap();
        // moving down at 0.5 m/s (torsion's free joint v = (ω, v) in the body frame): L̇ = +0.5
        let s = GenState::with_act(m.qpos0.clone(), vec![0.0, 0.0, 0.0, 0.0, 0.0, -0.5], vec![0.3]);
        let u = Control::with_ctrl(&[0.0; 6], &[5.0]); // clamped to 1
        let o = step(&solver, &m, &s, &u, h);
        // tendon force along û = (0, 0, −1) from the ball towards the world site: f > 0 pushes the ball down
        let f = spring - 7.0 * 0.5 + 40.0 * 0.3;
        let want_vz = -0.5 - h * f / 2.0;
        assert!((o.v[5] - want_vz).abs() < 1e-14, "{sl}: v_z {} vs {want_vz}", o.v[5]);
        let want_act = 0.3 + h * (1.0 - 0.3) / 0.25;
        assert!((o.act[0] - want_act).abs() < 1e-15, "act {} vs {want_act}", o.act[0]);
    }
}

/// Per-column relative error of C (its columns have different units).
fn column_errors(an: &DMatrix<f64>, fd: &DMatrix<f64>) -> Vec<f64> {
    (0..an.ncols()).map(|c| rel_err(an.column(c).as_slice(), fd.column(c).as_slice())).collect()
}

/// A, B, C of the prism's step (free rods, 9 cables, 3 filter motors, moving, activations non-zero) against
/// central differences: A over the tangent (q, v, act), B over (u, ctrl), C over tendon_stiffness,
/// tendon_damping, actuator_gain, actuator_timeconst; the VJP equals Jᵀ ḡ.
#[test]
fn prism_jacobians_match_central_differences() {
    let m = torsion_model::builder::tensegrity_prism();
    let solver = FeatherstoneSolver::default();
    let dt = m.dt;
    let nv = m.nv();
    let v: Vec<f64> = (0..nv).map(|i| ((i * 7 + 3) % 11) as f64 / 5.0 - 1.0).collect();
    let s0 = GenState::with_act(m.qpos0.clone(), v, vec![20.0, -35.0, 8.0]);
    let tau: Vec<f64> = (0..nv).map(|i| ((i * 5 + 1) % 7) as f64 - 3.0).collect();
    let u = Control::with_ctrl(&tau, &[60.0, -10.0, 90.0]);
    let names = [
        "tendon_stiffness[c0]",
        "tendon_damping[c4]",
        "tendon_stiffness[c7]",
        "actuator_gain[a1]",
        "actuator_timeconst[a2]",
    ];
    let sel = ParamSelection::by_names(&m, &names).unwrap();
    let jac = solver.step_jacobians(&m, &s0, &u, dt, &sel).unwrap();
    let n = solver.tangent_dim(&m);
    assert_eq!((jac.a.shape(), jac.b.shape(), jac.c.shape()), ((n, n), (n, nv + 3), (n, names.len())));
    let base = step(&solver, &m, &s0, &u, dt);
    let fa =
        fd_jacobian(|d| solver.local_diff(&m, &base, &step(&solver, &m, &solver.retract(&m, &s0, d), &u, dt)), n, 1e-6);
    let fb = fd_jacobian(
        |d| {
            let t: Vec<f64> = tau.iter().zip(d).map(|(a, b)| a + b).collect();
            let c: Vec<f64> = u.ctrl.iter().zip(&d[nv..]).map(|(a, b)| a + b).collect();
            solver.local_diff(&m, &base, &step(&solver, &m, &s0, &Control::with_ctrl(&t, &c), dt))
        },
        nv + 3,
        1e-6,
    );
    let theta = m.params_get(&sel);
    let fc = fd_jacobian(
        |d| {
            let mut mm = m.clone();
            let th: Vec<f64> = theta.iter().zip(d).map(|(a, b)| a + b * a.abs().max(1.0)).collect();
            mm.params_set(&sel, &th).unwrap();
            solver.local_diff(&m, &base, &step(&solver, &mm, &s0, &u, dt))
        },
        names.len(),
        1e-6,
    );
    // fd_jacobian's column k is ∂/∂(d_k) with θ_k = θ + d_k |θ|: scale back
    let fc = DMatrix::from_fn(n, names.len(), |r, c| fc[(r, c)] / theta[c].abs().max(1.0));
    let (ea, eb) = (rel_err(jac.a.as_slice(), fa.as_slice()), rel_err(jac.b.as_slice(), fb.as_slice()));
    let ec = column_errors(&jac.c, &fc);
    // the activation block: ∂act'/∂act = 1 − h/τ, ∂act'/∂ctrl = h/τ (inside the control range)
    assert!((jac.a[(2 * nv, 2 * nv)] - (1.0 - dt)).abs() < 1e-15 && (jac.b[(2 * nv + 1, nv + 1)] - dt).abs() < 1e-15);
    eprintln!(
        "prism: A vs FD {ea:.1e}, B vs FD {eb:.1e}, C columns vs FD {:?}",
        ec.iter().map(|e| format!("{e:.1e}")).collect::<Vec<_>>()
    );
    assert!(ea < 1e-6 && eb < 1e-6, "A {ea:e} B {eb:e}");
    assert!(ec.iter().all(|&e| e < 1e-6), "C {ec:?}");
    assert!(jac.c.column(0).amax() > 0.0 && jac.c.column(4).amax() > 0.0);
    // the VJP is Jᵀ ḡ (state, controls and the selected parameters)
    let mut rec = solver.record(&m);
    let mut ws = solver.workspace(&m).unwrap();
    let mut o = s0.clone();
    solver.step(&m, &s0, &u, dt, &mut o, &mut ws, Some(&mut rec)).unwrap();
    let gt: Vec<f64> = (0..n).map(|i| ((i * 3 + 1) % 5) as f64 - 2.0).collect();
    let g_out = <GenState as torsion_model::StateSpace>::grad_to_ambient(&base, &m, &gt);
    let mut g_s = solver.zero_grad(&m);
    let (mut g_u, mut g_th) = (vec![0.0; solver.control_dim(&m)], vec![0.0; sel.len()]);
    solver.step_vjp(&m, &rec, &g_out, &mut g_s, &mut g_u, &sel, &mut g_th, &mut ws).unwrap();
    let g = nalgebra::DVector::from_vec(gt);
    let want_s = jac.a.transpose() * &g;
    let got_s = solver.grad_to_tangent(&m, &s0, &g_s);
    assert!(rel_err(&got_s, want_s.as_slice()) < 1e-10, "VJP state");
    assert!(rel_err(&g_u, (jac.b.transpose() * &g).as_slice()) < 1e-10, "VJP controls");
    let want_c = jac.c.transpose() * &g;
    for k in 0..sel.len() {
        assert!((g_th[k] - want_c[k]).abs() <= 1e-10 * want_c[k].abs().max(1e-12), "VJP {}", names[k]);
    }
}

/// A cable whose two ends coincide (L = 0): the step and its Jacobians stay finite (the direction û is taken
/// as 0 below `MIN_CABLE_LENGTH`: no NaN; docs/gradients.md).
#[test]
fn zero_length_cable_gives_no_nan() {
    let mut m = torsion_model::builder::tensegrity_prism();
    m.cables[0].body = [1, 1];
    m.cables[0].site = [torsion_math::Vec3::new(0.0, 0.0, 0.3); 2];
    let solver = FeatherstoneSolver::default();
    let s = GenState::rest(&m);
    let u = Control::with_ctrl(&vec![0.0; m.nv()], &[1.0, 2.0, 3.0]);
    let o = step(&solver, &m, &s, &u, m.dt);
    assert!(o.q.iter().chain(&o.v).chain(&o.act).all(|x| x.is_finite()));
    let sel = ParamSelection::by_prefix(&m, "tendon_");
    let j = solver.step_jacobians(&m, &s, &u, m.dt, &sel).unwrap();
    assert!(j.a.iter().chain(j.b.iter()).chain(j.c.iter()).all(|x| x.is_finite()));
    // the collapsed cable has no force and so a zero column for its stiffness
    assert_eq!(j.c.column(0).amax(), 0.0);
}
