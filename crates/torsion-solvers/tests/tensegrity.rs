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

// ----- the linear contact model (spec 003 §3.6, issue 16 items 3–4; kernel: torsion-dynamics tensegrity_contact.rs)

use torsion_model::LinearContact;

const CONTACT_NAMES: [&str; 5] = ["contact_beta", "contact_e", "contact_gamma", "contact_mu", "contact_eps"];

/// One capsule rod (SUPERball's: 10 kg, L = 1.684 m, R = 0.02 m) over a floor, its body z along `axis_quat`,
/// COM at `pos`; gravity `g`; the linear contact model on with `lc`.
fn one_rod(pos: [f64; 3], axis_quat: &str, g: f64, lc: LinearContact) -> Model {
    let xml = format!(
        r#"<mujoco><option timestep="0.001" gravity="0 0 {g}"/><worldbody><geom name="floor" type="plane" size="5 5 .1"/>
        <body name="rod" pos="{} {} {}" quat="{axis_quat}"><freejoint/>
        <geom name="rod" type="capsule" fromto="0 0 -0.842 0 0 0.842" size="0.02" mass="10"/></body></worldbody>
        </mujoco>"#,
        pos[0], pos[1], pos[2]
    );
    let mut m = torsion_model::io::mjcf::load_mjcf_str(&xml, "rod.xml", None).unwrap();
    m.tensegrity_contact = Some(lc);
    m
}

const HORIZONTAL: &str = "0.70710678118654752 0 0.70710678118654752 0"; // body z → world x

/// A rod dropped flat from 8 cm (e = 0, defaults otherwise) lands and comes to rest on the floor: penetration
/// bounded, final depth ≈ 0 (the equilibrium where each end's j = m g/2 with the predicted v̂_n = −g Δt:
/// d = −(g Δt²/β)(m K(n)/2 − 1)), final speed ≈ 0. Without the contact model it falls through.
#[test]
fn dropped_rod_comes_to_rest_on_the_floor() {
    let m = one_rod([0.0, 0.0, 0.1], HORIZONTAL, -9.81, LinearContact { e: 0.0, ..Default::default() });
    let solver = FeatherstoneSolver::default();
    let mut ws = solver.workspace(&m).unwrap();
    let (mut s, mut o) = (GenState::rest(&m), GenState::rest(&m));
    let u = Control::zeros(m.nv());
    let mut min_depth = f64::INFINITY;
    for _ in 0..1000 {
        solver.step(&m, &s, &u, m.dt, &mut o, &mut ws, None).unwrap();
        std::mem::swap(&mut s, &mut o);
        min_depth = min_depth.min(s.q[2] - 0.02);
    }
    let depth = s.q[2] - 0.02;
    let speed = s.v.iter().fold(0.0f64, |a, x| a.max(x.abs()));
    // both ends carry m g / 2: j = (−β d/Δt² + g)/K(n), K(n) = 1/m + (L/2)²/I_xx
    let ixx = m.body_inertia[1][(0, 0)];
    let kn = 0.1 + 0.842f64.powi(2) / ixx;
    let want = -9.81 * 1e-6 / 0.5 * (10.0 * kn / 2.0 - 1.0);
    eprintln!(
        "dropped rod: final depth {depth:.3e} (equilibrium {want:.3e}), deepest {min_depth:.2e}, speed {speed:.1e}"
    );
    assert!(min_depth > -2e-3, "penetration {min_depth}");
    assert!((depth - want).abs() < 1e-7 && speed < 1e-6, "depth {depth}, speed {speed}");
}

/// The one-step identities of spec 003 §3.6 on a single body (no gravity, no spin: other forces ignored): a
/// vertical rod on its lower cap, d = −1 mm. Normal: v_n' = −e v_n − β d/Δt (e = 0.5). Tangential, below the
/// Coulomb cap: v_t' = γ v_t; above it: v_t' = v_t − Δt K(t) μ j v_t/|v_t| (eq 4), with K(t) = 1/m + ℓ²/I_xx at
/// the contact point ℓ = L/2 + R below the COM, j = (−β d/Δt² − (1+e) v_n/Δt) m.
#[test]
fn one_step_restitution_and_friction_identities() {
    let solver = FeatherstoneSolver::default();
    let (beta, e, gamma, h, d) = (0.3, 0.5, 0.4, 1e-3, -1e-3);
    let z = 0.842 + 0.02 + d;
    for (mu, vt) in [(0.9, [0.2, -0.1]), (0.05, [1.5, 2.0])] {
        let lc = LinearContact { beta, e, gamma, mu, eps: 0.005 };
        let m = one_rod([0.0, 0.0, z], "1 0 0 0", 0.0, lc);
        let vn = -0.8;
        // free joint v = (ω, v), body frame = world here
        let s = GenState::new(m.qpos0.clone(), vec![0.0, 0.0, 0.0, vt[0], vt[1], vn]);
        let o = step(&solver, &m, &s, &Control::zeros(6), h);
        // world velocities after the step (body frame at q1), then the contact point's (arm r = −ℓ z)
        let r1 = torsion_math::Quat::new(o.q[3], o.q[4], o.q[5], o.q[6]).to_mat();
        let w1 = r1 * torsion_math::Vec3::new(o.v[0], o.v[1], o.v[2]);
        let v1 = r1 * torsion_math::Vec3::new(o.v[3], o.v[4], o.v[5]);
        let ell = 0.842 + 0.02;
        let vc = v1 + w1.cross(&torsion_math::Vec3::new(0.0, 0.0, -ell));
        let want_n = -e * vn - beta * d / h;
        assert!((vc.z - want_n).abs() < 1e-12, "v_n' {} vs {want_n}", vc.z);
        let (ixx, mass) = (m.body_inertia[1][(0, 0)], 10.0);
        let kt = 1.0 / mass + ell * ell / ixx;
        let j = (-beta * d / (h * h) - (1.0 + e) * vn / h) * mass;
        let vt_norm = (vt[0] * vt[0] + vt[1] * vt[1]).sqrt();
        let stick = (1.0 - gamma) * vt_norm / (h * kt) < mu * j;
        let scale = if stick { gamma } else { 1.0 - h * kt * mu * j / vt_norm };
        eprintln!("μ {mu}: {} v_t' = {:.6} v_t, v_n' {:.6}", if stick { "stick" } else { "slip" }, vc.x / vt[0], vc.z);
        assert_eq!(stick, mu > 0.5, "the cases cover both branches");
        for k in 0..2 {
            assert!((vc[k] - scale * vt[k]).abs() < 1e-12, "v_t'[{k}] {} vs {}", vc[k], scale * vt[k]);
        }
    }
}

/// A, B and C (the 5 contact parameters) of one step against central differences: (A, B errors, C per column).
fn contact_jacobian_errors(m: &Model, s0: &GenState, u: &Control) -> (f64, f64, Vec<f64>) {
    let solver = FeatherstoneSolver::default();
    let (dt, nv, nu) = (m.dt, m.nv(), m.nu());
    let sel = ParamSelection::by_names(m, &CONTACT_NAMES).unwrap();
    let jac = solver.step_jacobians(m, s0, u, dt, &sel).unwrap();
    assert!(jac.a.iter().chain(jac.b.iter()).chain(jac.c.iter()).all(|x| x.is_finite()));
    let n = solver.tangent_dim(m);
    let base = step(&solver, m, s0, u, dt);
    let fa = fd_jacobian(|d| solver.local_diff(m, &base, &step(&solver, m, &solver.retract(m, s0, d), u, dt)), n, 1e-6);
    let ctrl = if u.ctrl.is_empty() { vec![0.0; nu] } else { u.ctrl.clone() };
    let fb = fd_jacobian(
        |d| {
            let t: Vec<f64> = u.joint_torque.iter().zip(d).map(|(a, b)| a + b).collect();
            let c: Vec<f64> = ctrl.iter().zip(&d[nv..]).map(|(a, b)| a + b).collect();
            solver.local_diff(m, &base, &step(&solver, m, s0, &Control::with_ctrl(&t, &c), dt))
        },
        nv + nu,
        1e-4, // a torque step of 1e-6 N·m moves the state by ~1e-10: round-off would dominate
    );
    let theta = m.params_get(&sel);
    let fc = fd_jacobian(
        |d| {
            let mut mm = m.clone();
            let th: Vec<f64> = theta.iter().zip(d).map(|(a, b)| a + b).collect();
            mm.params_set(&sel, &th).unwrap();
            solver.local_diff(m, &base, &step(&solver, &mm, s0, u, dt))
        },
        5,
        1e-7,
    );
    let (ea, eb) = (rel_err(jac.a.as_slice(), fa.as_slice()), rel_err(jac.b.as_slice(), fb.as_slice()));
    // a column that is zero (e.g. γ when every contact slips at the Coulomb cap) is 0 up to FD round-off
    let ec = column_errors(&jac.c, &fc)
        .into_iter()
        .enumerate()
        .map(|(c, e)| if jac.c.column(c).amax() < 1e-12 && fc.column(c).amax() < 1e-8 { 0.0 } else { e })
        .collect();
    assert!(jac.c.column(0).amax() > 0.0, "β moves the rods: the contacts act");
    (ea, eb, ec)
}

/// The step's A, B, C (w.r.t. β, e, γ, μ, ε) against central differences in contact: a rod resting on the floor
/// and sliding (both caps 1 mm deep), the 3-bar prism rolling on the floor (spinning, its bottom caps 1 mm
/// deep), two rods pressed into each other (rod–rod only); all ≤ 1e-6.
#[test]
fn contact_jacobians_match_central_differences() {
    let lc = LinearContact { beta: 0.4, e: 0.2, gamma: 0.3, mu: 0.6, eps: 0.005 };
    let mut cases = vec![];
    // resting and creeping (below the Coulomb cap), and sliding fast while turning (at the cap: γ's column 0)
    let m = one_rod([0.0, 0.0, 0.019], HORIZONTAL, -9.81, lc);
    cases.push(("rod resting", m.clone(), GenState::new(m.qpos0.clone(), vec![0.0, 0.0, 0.0, 0.0, 0.02, 0.01])));
    cases.push(("rod sliding", m.clone(), GenState::new(m.qpos0.clone(), vec![0.0, 0.3, 0.0, 0.0, 0.4, -0.6])));
    // rolling prism: every rod spinning, the whole moving sideways
    let mut m = torsion_model::builder::tensegrity_prism_on_ground();
    m.tensegrity_contact = Some(lc);
    let mut q = m.qpos0.clone();
    for k in 0..3 {
        q[7 * k + 2] -= 1e-3;
    }
    let v: Vec<f64> = (0..m.nv()).map(|i| [0.4, -0.3, 1.5, 0.5, 0.2, -0.1][i % 6]).collect();
    cases.push(("rolling prism", m.clone(), GenState::with_act(q, v, vec![10.0, -5.0, 3.0])));
    // two rods crossing at right angles, 1.5 mm overlap, no floor contact (in the air, no gravity)
    let xml = r#"<mujoco><option timestep="0.001" gravity="0 0 0"/><worldbody>
        <body name="a" pos="0 0 1"><freejoint/><geom name="a" type="capsule" fromto="-0.842 0 0 0.842 0 0" size="0.02" mass="10"/></body>
        <body name="b" pos="0.2 0.1 1.0385"><freejoint/><geom name="b" type="capsule" fromto="0 -0.842 0 0 0.842 0" size="0.02" mass="10"/></body>
        </worldbody><custom><numeric name="torsion_linear_contact" data="0.4 0.2 0.3 0.6 0.005"/></custom></mujoco>"#;
    let m = torsion_model::io::mjcf::load_mjcf_str(xml, "rods.xml", None).unwrap();
    let v = vec![0.1, 0.2, -0.3, 0.5, -0.2, 0.3, -0.2, 0.1, 0.2, -0.4, 0.3, -0.5];
    cases.push(("rod–rod", m.clone(), GenState::new(m.qpos0.clone(), v)));
    for (name, m, s0) in cases {
        let u = Control::zeros(m.nv());
        let (ea, eb, ec) = contact_jacobian_errors(&m, &s0, &u);
        eprintln!(
            "{name}: A {ea:.1e}, B {eb:.1e}, C (β, e, γ, μ, ε) {:?}",
            ec.iter().map(|e| format!("{e:.1e}")).collect::<Vec<_>>()
        );
        assert!(ea < 1e-6 && eb < 1e-6 && ec.iter().all(|&e| e < 1e-6), "{name}: A {ea:e} B {eb:e} C {ec:?}");
    }
}

/// `param_jacobian` (C alone, the one-step identification's Jacobian) is `step_jacobians`' C: the rolling prism
/// (cables, actuators, contact) w.r.t. β, e, γ, μ, ε and a cable stiffness.
#[test]
fn param_jacobian_is_step_jacobians_c() {
    let mut m = torsion_model::builder::tensegrity_prism_on_ground();
    m.tensegrity_contact = Some(LinearContact { beta: 0.4, e: 0.2, gamma: 0.3, mu: 0.6, eps: 0.005 });
    let mut q = m.qpos0.clone();
    for k in 0..3 {
        q[7 * k + 2] -= 1e-3;
    }
    let v: Vec<f64> = (0..m.nv()).map(|i| [0.4, -0.3, 1.5, 0.5, 0.2, -0.1][i % 6]).collect();
    let s = GenState::with_act(q, v, vec![10.0, -5.0, 3.0]);
    let cable = format!("tendon_stiffness[{}]", m.cables[0].name);
    let mut names = CONTACT_NAMES.to_vec();
    names.push(&cable);
    let sel = ParamSelection::by_names(&m, &names).unwrap();
    let solver = FeatherstoneSolver::default();
    let u = Control::zeros(m.nv());
    let c = solver.param_jacobian(torsion_solvers::StepPoint::new(&m, &s, &u, m.dt), &sel).unwrap();
    let j = solver.step_jacobians(&m, &s, &u, m.dt, &sel).unwrap();
    assert_eq!(c.shape(), j.c.shape());
    let e = (&c - &j.c).amax();
    assert!(e <= 1e-12 * j.c.amax() && j.c.amax() > 0.0, "{e:e}");
}

/// Zero slip: a rod at rest 1 mm in the floor (v_t = 0 exactly at both contacts) gives finite A, B, C.
#[test]
fn zero_slip_contact_gives_no_nan() {
    let m = one_rod([0.0, 0.0, 0.019], HORIZONTAL, -9.81, LinearContact::default());
    let solver = FeatherstoneSolver::default();
    let s = GenState::rest(&m);
    let sel = ParamSelection::by_names(&m, &CONTACT_NAMES).unwrap();
    let j = solver.step_jacobians(&m, &s, &Control::zeros(6), m.dt, &sel).unwrap();
    assert!(j.a.iter().chain(j.b.iter()).chain(j.c.iter()).all(|x| x.is_finite()));
    assert!(j.c.column(0).amax() > 0.0, "β moves the resting rod");
}

/// Steps `n` times from `s`; returns the final state, the deepest rod-end penetration seen (m, from the
/// capsules' lowest end caps) and the largest speed entry over the last 100 steps.
fn settle(m: &Model, mut s: GenState, n: usize) -> (GenState, f64, f64) {
    let solver = FeatherstoneSolver::default();
    let mut ws = solver.workspace(m).unwrap();
    let mut o = s.clone();
    let u = Control::zeros(m.nv());
    let (mut deepest, mut late_speed) = (f64::INFINITY, 0.0f64);
    for k in 0..n {
        solver.step(m, &s, &u, m.dt, &mut o, &mut ws, None).unwrap();
        std::mem::swap(&mut s, &mut o);
        let pose = m.forward_kinematics(&s.q).unwrap();
        for sh in m.shapes.iter().filter(|sh| !m.body_fixed[sh.body]) {
            if let torsion_model::ShapeKind::Capsule { radius, half_length } = sh.kind {
                let (x, q) = pose[sh.body];
                let a = q.rotate(&sh.pose.1.rotate(&torsion_math::Vec3::z())) * half_length;
                let c = x + q.rotate(&sh.pose.0);
                deepest = deepest.min((c + a).z.min((c - a).z) - radius);
            }
        }
        if k + 100 >= n {
            late_speed = late_speed.max(s.v.iter().fold(0.0f64, |a, x| a.max(x.abs())));
        }
    }
    (s, deepest, late_speed)
}

/// SUPERball (superball.xml, linear contact on with the defaults) dropped from 0.5 m above its rest height lands
/// and settles over 2000 steps without exploding: finite, penetration bounded, its CoM at MuJoCo's rest height
/// (0.7295 m) and still over the second 1000 steps, the rods slow. A residual creep of the rods (≤ 0.034 m/s or
/// rad/s) remains (docs/decisions.md, open). Without the contact model it falls through the floor.
#[test]
fn superball_dropped_settles_on_the_floor() {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../torsion-model/tests/data/mjcf/superball.xml");
    let mut m = torsion_model::io::mjcf::load_mjcf(&p).unwrap();
    assert!(m.tensegrity_contact.is_none(), "the file loads unchanged: contact model off");
    m.tensegrity_contact = Some(LinearContact::default());
    let mut s = GenState::rest(&m);
    for k in 0..6 {
        s.q[7 * k + 2] += 0.5;
    }
    let com = |s: &GenState| torsion_math::Vec3::from_fn(|a, _| (0..6).map(|k| s.q[7 * k + a]).sum::<f64>() / 6.0);
    let (s, deepest1, _) = settle(&m, s, 1000);
    let c1 = com(&s);
    let (s, deepest2, late_speed) = settle(&m, s, 1000);
    let c2 = com(&s);
    let deepest = deepest1.min(deepest2);
    eprintln!(
        "SUPERball drop: CoM z {:.4} m, CoM moved {:.1e} m over steps 1000–2000, deepest {deepest:.2e} m, max \
         speed over the last 100 steps {late_speed:.1e}",
        c2.z,
        (c2 - c1).norm()
    );
    assert!(s.q.iter().chain(&s.v).all(|x| x.is_finite()));
    assert!(deepest > -5e-3, "penetration {deepest}");
    assert!((c2.z - 0.7295).abs() < 0.01 && (c2 - c1).norm() < 1e-3, "CoM {c1} → {c2}");
    assert!(late_speed < 0.05, "moving: {late_speed}");
}

/// The 3-bar prism on the floor (0.1 g, `tensegrity_prism_on_ground`) rests: after 3000 steps it is still, its
/// caps at depth ≈ 0.
#[test]
fn prism_rests_on_the_floor() {
    let m = torsion_model::builder::tensegrity_prism_on_ground();
    let (s, deepest, late_speed) = settle(&m, GenState::rest(&m), 3000);
    eprintln!("prism: deepest {deepest:.2e} m, max speed over the last 100 steps {late_speed:.1e}");
    assert!(s.q.iter().chain(&s.v).all(|x| x.is_finite()));
    assert!(deepest > -1e-3 && late_speed < 1e-3, "deepest {deepest}, speed {late_speed}");
}

/// A contact parameter changed after the workspace was built is used by the next step (the workspace's table
/// does not carry `contact_*`: it refreshes them from the model each step).
#[test]
fn contact_parameters_reach_a_reused_workspace() {
    let mut m = one_rod([0.0, 0.0, 0.019], HORIZONTAL, -9.81, LinearContact::default());
    let solver = FeatherstoneSolver::default();
    let mut ws = solver.workspace(&m).unwrap();
    let s = GenState::new(m.qpos0.clone(), vec![0.0, 0.0, 0.5, 0.0, 0.3, 0.2]);
    let u = Control::zeros(6);
    let mut o = s.clone();
    solver.step(&m, &s, &u, m.dt, &mut o, &mut ws, None).unwrap();
    for (name, v) in
        [("contact_beta", 0.2), ("contact_e", 0.4), ("contact_gamma", 0.9), ("contact_mu", 0.1), ("contact_eps", 0.0)]
    {
        m.param_set_by_name(name, v).unwrap();
        solver.step(&m, &s, &u, m.dt, &mut o, &mut ws, None).unwrap();
        let fresh = step(&solver, &m, &s, &u, m.dt);
        assert_eq!((&o.q, &o.v), (&fresh.q, &fresh.v), "{name}");
    }
}

/// The same for the cable parameters (they too are not in the workspace's table; before: the reused workspace
/// kept the stiffness it was built with).
#[test]
fn cable_parameters_reach_a_reused_workspace() {
    let mut m = torsion_model::builder::tensegrity_prism();
    let solver = FeatherstoneSolver::default();
    let mut ws = solver.workspace(&m).unwrap();
    let s = GenState::rest(&m);
    let mut o = s.clone();
    for (name, v) in [
        ("tendon_stiffness[c0]", 5000.0),
        ("tendon_damping[c3]", 10.0),
        ("actuator_gain[a1]", 50.0),
        ("actuator_timeconst[a2]", 0.3),
    ] {
        m.param_set_by_name(name, v).unwrap();
        let s = GenState::with_act(s.q.clone(), vec![0.1; m.nv()], vec![1.0, 2.0, 3.0]);
        let u = Control::with_ctrl(&vec![0.0; m.nv()], &[4.0, 5.0, 6.0]);
        solver.step(&m, &s, &u, m.dt, &mut o, &mut ws, None).unwrap();
        let fresh = step(&solver, &m, &s, &u, m.dt);
        assert_eq!((&o.v, &o.act), (&fresh.v, &fresh.act), "{name}");
    }
}
