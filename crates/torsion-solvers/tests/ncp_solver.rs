//! The contact stepper through the shared `Solver` / `DiffSolver` contract with collision detection: an MJCF box
//! dropped onto a plane lands, slides and stops where Coulomb friction says; a rollout gradient through sliding
//! contact matches finite differences.
use torsion_diff::{rollout, rollout_vjp};
use torsion_model::io::mjcf::load_mjcf_str;
use torsion_model::{Control, Model, ParamSelection};
use torsion_solvers::ncp::{AdmmOptions, NcpOptions, NcpSolver, StopRule};
use torsion_solvers::GenState;
use torsion_solvers::{DiffSolver, Solver};

const MU: f64 = 0.3;

fn scene() -> Model {
    load_mjcf_str(&scene_xml(0.2), "box_on_plane.xml", None).unwrap()
}

/// The box on the plane with the box body at height `z`.
fn scene_xml(z: f64) -> String {
    format!(
        r#"<mujoco model="box_on_plane">
  <option timestep="0.01" gravity="0 0 -9.81"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" friction="{MU} 0.005 0.0001"/>
    <body name="box" pos="0 0 {z}">
      <freejoint/>
      <geom name="box" type="box" size="0.1 0.1 0.1" mass="2" friction="{MU} 0.005 0.0001"/>
    </body>
  </worldbody>
</mujoco>"#
    )
}

/// q = (x, quat w-first), v = (ω, v) in the body frame.
fn box_state(z: f64, vx: f64, vz: f64) -> GenState {
    GenState::new(vec![0.0, 0.0, z, 1.0, 0.0, 0.0, 0.0], vec![0.0, 0.0, 0.0, vx, 0.0, vz])
}

#[test]
fn box_lands_slides_and_stops() {
    let m = scene();
    assert_eq!((m.nq(), m.nv()), (7, 6));
    let solver = NcpSolver::new(NcpOptions { n_step: 20, ..Default::default() });
    let s0 = box_state(0.15, 1.0, 0.0);
    let controls = vec![Control::from_torques(&[0.0; 6]); 150];
    let states = rollout(&solver, &m, &s0, &controls, 0.01).unwrap();
    let last = states.last().unwrap();
    // at rest on the floor: the box's half height above z = 0 (within the solver's penetration), not tipped
    assert!((last.q[2] - 0.1).abs() < 2e-3, "rest height {}", last.q[2]);
    assert!(last.v.iter().all(|v| v.abs() < 1e-6), "at rest: {:?}", last.v);
    assert!((last.q[3] - 1.0).abs() < 1e-6, "not tipped: {:?}", &last.q[3..7]);
    // while sliding on the floor, the speed drops by μ g Δt per step (an impact with ε = 0 first)
    let on_floor: Vec<usize> = (1..states.len()).filter(|&t| (states[t].q[2] - 0.1).abs() < 2e-3).collect();
    let t0 = on_floor[2];
    let (v1, v2) = (states[t0].v[3], states[t0 + 1].v[3]);
    if v2 > 0.0 {
        assert!((v1 - v2 - MU * 9.81 * 0.01).abs() < 1e-6, "deceleration {} vs {}", v1 - v2, MU * 9.81 * 0.01);
    }
    let stop_x = last.q[0];
    assert!(stop_x > 0.1 && stop_x < 0.5, "stopping position {stop_x}");
}

/// ∂x_T/∂(v0_x, pushing forces) through 15 sliding steps on the floor (every step: four sliding corners,
/// translation only, so v⁺ is unique) against central differences.
#[test]
fn sliding_rollout_gradient_matches_finite_differences() {
    let m = scene();
    let solver = NcpSolver::new(NcpOptions::default());
    let s0 = box_state(0.0999, 1.5, 0.0);
    let steps = 15;
    let controls: Vec<Control> =
        (0..steps).map(|t| Control::from_torques(&[0.0, 0.0, 0.0, 1.0 + 0.1 * t as f64, 0.5, 0.0])).collect();
    let states = rollout(&solver, &m, &s0, &controls, 0.01).unwrap();
    assert!(states.iter().all(|s| s.v[3] > 0.1), "sliding throughout");
    let g = rollout_vjp(&solver, &m, &states, &controls, 0.01, &ParamSelection::none(), |t, _, gs: &mut GenState| {
        if t == steps {
            gs.q[0] += 1.0;
        }
    })
    .unwrap();
    let final_x = |s0: &GenState, c: &[Control]| rollout(&solver, &m, s0, c, 0.01).unwrap()[steps].q[0];
    let h = 1e-6;
    // initial forward velocity (body frame = world frame here)
    let (mut sp, mut sm) = (s0.clone(), s0.clone());
    sp.v[3] += h;
    sm.v[3] -= h;
    let fd_v = (final_x(&sp, &controls) - final_x(&sm, &controls)) / (2.0 * h);
    let an_v = g.g_s0.v[3];
    assert!((an_v - fd_v).abs() < 1e-6 * fd_v.abs().max(1e-3), "∂x_T/∂v0: {an_v} vs {fd_v}");
    // the force at step 3, x and y components
    for k in [3, 4] {
        let (mut cp, mut cm) = (controls.clone(), controls.clone());
        cp[3].joint_torque[k] += h;
        cm[3].joint_torque[k] -= h;
        let fd = (final_x(&s0, &cp) - final_x(&s0, &cm)) / (2.0 * h);
        let an = g.g_u[3][k];
        assert!((an - fd).abs() < 1e-6 * fd.abs().max(1e-4), "∂x_T/∂u_3[{k}]: {an} vs {fd}");
    }
    // the trait's transition Jacobians: B columns against the dynamics, mass row present
    let sel = torsion_model::ParamSelection::by_prefix(&m, "body_mass[");
    let jac = solver.step_jacobians(&m, &states[3], &controls[3], 0.01, &sel).unwrap();
    assert_eq!((jac.a.nrows(), jac.a.ncols(), jac.b.ncols(), jac.c.ncols()), (12, 12, 6, 1));
    let ws = Solver::workspace(&solver, &m);
    assert!(ws.is_ok());
}

/// The box on the floor with distinct contact materials: the pair takes the larger of the two shapes' friction
/// (the box's here) and restitution (the floor's).
fn material_scene() -> Model {
    let mut m = scene();
    for (name, v) in [("shape_friction[floor]", 0.25), ("shape_friction[box]", 0.4), ("shape_restitution[floor]", 0.5)]
    {
        m.param_set_by_name(name, v).unwrap();
    }
    m.param_set_by_name("shape_restitution[box]", 0.2).unwrap();
    m
}

const MATERIAL: [&str; 4] =
    ["shape_friction[floor]", "shape_friction[box]", "shape_restitution[floor]", "shape_restitution[box]"];

/// `step_jacobians`' columns for the shapes' friction and restitution (collision detection inside) against
/// central differences of `Solver::step` with the parameter moved: a box landing (v_z = −0.5 m/s) while sliding
/// (translation only), so both μ and ε act; the non-maximal shapes' columns are zero on both sides.
#[test]
fn material_parameter_columns_match_finite_differences() {
    let m = material_scene();
    let solver = NcpSolver::new(NcpOptions::default());
    let s = box_state(0.0999, 1.5, -0.5);
    let u = Control::from_torques(&[0.0, 0.0, 0.0, 0.5, 0.2, 0.0]);
    let sel = torsion_model::ParamSelection::by_names(&m, &MATERIAL).unwrap();
    let jac = solver.step_jacobians(&m, &s, &u, 0.01, &sel).unwrap();
    let next = |mm: &Model| {
        let mut ws = Solver::workspace(&solver, mm).unwrap();
        let mut o = s.clone();
        solver.step(mm, &s, &u, 0.01, &mut o, &mut ws, None).unwrap();
        o
    };
    let base = next(&m);
    assert!(base.v[5] > 0.1 && base.v[3] > 0.1, "bounces (ε) while sliding (μ): v⁺ = {:?}", base.v);
    let fd = torsion_diff::fd_jacobian(
        |d| {
            let mut mm = m.clone();
            let vals: Vec<f64> = m.params_get(&sel).iter().zip(d).map(|(a, b)| a + b).collect();
            mm.params_set(&sel, &vals).unwrap();
            solver.local_diff(&m, &base, &next(&mm))
        },
        4,
        1e-6,
    );
    let e = torsion_diff::rel_err(jac.c.as_slice(), fd.as_slice());
    eprintln!("material columns vs FD: {e:.1e} (max |FD| {:.2e})", fd.amax());
    assert!(e < 1e-6, "material columns: {e:e}\nan {}\nfd {fd}", jac.c);
    assert!(jac.c.column(1).amax() > 1e-3 && jac.c.column(2).amax() > 1e-3, "μ_box and ε_floor act");
    assert!(jac.c.column(0).amax() == 0.0 && jac.c.column(3).amax() == 0.0, "the smaller values do not");
}

/// At a tie (both shapes μ = 0.3, a kink of the max) the derivative goes to the lower-indexed shape (the floor);
/// the two columns' sum is the derivative of moving both together, which central differences can check.
#[test]
fn tied_friction_goes_to_the_first_shape() {
    let m = scene();
    let solver = NcpSolver::new(NcpOptions::default());
    let s = box_state(0.0999, 1.5, 0.0);
    let u = Control::from_torques(&[0.0, 0.0, 0.0, 0.5, 0.2, 0.0]);
    let sel = torsion_model::ParamSelection::by_names(&m, &["shape_friction[floor]", "shape_friction[box]"]).unwrap();
    let jac = solver.step_jacobians(&m, &s, &u, 0.01, &sel).unwrap();
    assert!(jac.c.column(1).amax() == 0.0 && jac.c.column(0).amax() > 1e-3);
    let next = |mu: f64| {
        let mut mm = m.clone();
        mm.params_set(&sel, &[mu, mu]).unwrap();
        let mut ws = Solver::workspace(&solver, &mm).unwrap();
        let mut o = s.clone();
        solver.step(&mm, &s, &u, 0.01, &mut o, &mut ws, None).unwrap();
        o
    };
    let (base, h) = (next(MU), 1e-6);
    let (p, q) = (solver.local_diff(&m, &base, &next(MU + h)), solver.local_diff(&m, &base, &next(MU - h)));
    let fd: Vec<f64> = p.iter().zip(&q).map(|(a, b)| (a - b) / (2.0 * h)).collect();
    let an: Vec<f64> = (0..12).map(|r| jac.c[(r, 0)] + jac.c[(r, 1)]).collect();
    let e = torsion_diff::rel_err(&an, &fd);
    eprintln!("tied friction vs FD: {e:.1e}");
    assert!(e < 1e-6, "tie: {e:e}");
}

/// ∂L/∂(shape friction, shape restitution) of both shapes through `rollout_vjp` (15 steps: a landing with
/// restitution, then sliding on the floor) against central differences of the rollout.
#[test]
fn material_rollout_gradient_matches_finite_differences() {
    let m = material_scene();
    let solver = NcpSolver::new(NcpOptions::default());
    let s0 = box_state(0.0999, 1.5, -0.5);
    let steps = 15;
    let controls: Vec<Control> =
        (0..steps).map(|t| Control::from_torques(&[0.0, 0.0, 0.0, 1.0 + 0.1 * t as f64, 0.5, 0.0])).collect();
    let states = rollout(&solver, &m, &s0, &controls, 0.01).unwrap();
    // L = x_T + z_T + v_z at step 1 (the bounce)
    let loss = |st: &[GenState]| st[steps].q[0] + st[steps].q[2] + st[1].v[5];
    let sel = ParamSelection::by_names(&m, &MATERIAL).unwrap();
    let g = rollout_vjp(&solver, &m, &states, &controls, 0.01, &sel, |t, _, gs: &mut GenState| {
        if t == steps {
            gs.q[0] += 1.0;
            gs.q[2] += 1.0;
        }
        if t == 1 {
            gs.v[5] += 1.0;
        }
    })
    .unwrap();
    let an: Vec<f64> = g.g_theta.clone();
    let v0 = m.params_get(&sel);
    let fd = torsion_diff::fd_gradient(
        |d| {
            let mut mm = m.clone();
            let vals: Vec<f64> = v0.iter().zip(d).map(|(a, b)| a + b).collect();
            mm.params_set(&sel, &vals).unwrap();
            loss(&rollout(&solver, &mm, &s0, &controls, 0.01).unwrap())
        },
        4,
        1e-6,
    );
    let e = torsion_diff::rel_err(&an, &fd);
    eprintln!("material rollout gradient vs FD: {e:.1e}\n an {an:?}\n fd {fd:?}");
    assert!(e < 1e-6, "rollout ∂L/∂(μ, ε): {e:e}");
    assert!(an[1].abs() > 1e-3 && an[2].abs() > 1e-3 && an[0] == 0.0 && an[3] == 0.0);
}

/// A and B of `DiffSolver::step_jacobians` (collision detection inside) against central differences of
/// `Solver::step`, contacts re-detected at every perturbed state; returns the relative errors.
fn jacobians_vs_fd(solver: &NcpSolver, m: &Model, s: &GenState, u: &[f64]) -> (f64, f64) {
    use torsion_model::ParamSelection;
    let jac = solver.step_jacobians(m, s, &Control::from_torques(u), 0.01, &ParamSelection::none()).unwrap();
    let next = |st: &GenState, uu: &[f64]| {
        let mut ws = Solver::workspace(solver, m).unwrap();
        let mut o = st.clone();
        solver.step(m, st, &Control::from_torques(uu), 0.01, &mut o, &mut ws, None).unwrap();
        o
    };
    let base = next(s, u);
    let (n, nv, h) = (solver.tangent_dim(m), m.nv(), 1e-6);
    let (mut fa, mut fb) = (nalgebra::DMatrix::zeros(n, n), nalgebra::DMatrix::zeros(n, nv));
    for k in 0..n + nv {
        let (p, q) = if k < n {
            let mut d = vec![0.0; n];
            d[k] = h;
            let p = next(&solver.retract(m, s, &d), u);
            d[k] = -h;
            (p, next(&solver.retract(m, s, &d), u))
        } else {
            let (mut up, mut um) = (u.to_vec(), u.to_vec());
            up[k - n] += h;
            um[k - n] -= h;
            (next(s, &up), next(s, &um))
        };
        let (lp, lq) = (solver.local_diff(m, &base, &p), solver.local_diff(m, &base, &q));
        for r in 0..n {
            let v = (lp[r] - lq[r]) / (2.0 * h);
            if k < n {
                fa[(r, k)] = v;
            } else {
                fb[(r, k - n)] = v;
            }
        }
    }
    (torsion_diff::rel_err(jac.a.as_slice(), fa.as_slice()), torsion_diff::rel_err(jac.b.as_slice(), fb.as_slice()))
}

/// Curved surfaces (docs/gradients.md): a sphere's detected contact point rolls over it, so the Jacobians
/// treat the sphere as a ball around a material centre (`ContactFrame::radius`). A tilted-frame ball rolling
/// and pushed on a plane (sticking), and two balls meeting off-centre with sliding friction (the normal
/// follows the line of centres), against central differences through collision detection.
#[test]
fn curved_contacts_jacobians_match_finite_differences_through_detection() {
    let ball = load_mjcf_str(
        r#"<mujoco><option timestep="0.01"/><worldbody><geom type="plane" size="5 5 0.1" friction="0.8"/>
            <body pos="0 0 0.2"><freejoint/><geom type="sphere" size="0.1" mass="1" friction="0.8"/></body>
            </worldbody></mujoco>"#,
        "ball.xml",
        None,
    )
    .unwrap();
    let solver = NcpSolver::new(NcpOptions::default());
    let qr = torsion_math::Quat::from_axis_angle(
        &nalgebra::Unit::new_normalize(torsion_math::Vec3::new(0.3, -0.5, 0.8)),
        0.7,
    );
    let s = GenState::new(vec![0.0, 0.0, 0.1 - 1e-4, qr.w, qr.v.x, qr.v.y, qr.v.z], {
        // rolling without slip: ω × (−r ẑ) + v = 0 at the contact (world), a spin about z besides
        let (vb, wb) = (
            qr.rotate_inv(&torsion_math::Vec3::new(0.3, 0.2, -0.05)),
            qr.rotate_inv(&torsion_math::Vec3::new(-2.0, 3.0, 0.5)),
        );
        vec![wb.x, wb.y, wb.z, vb.x, vb.y, vb.z]
    });
    let u = [0.01, 0.0, -0.02, 0.6, -0.3, 0.0];
    let mut ws = Solver::workspace(&solver, &ball).unwrap();
    let mut o = s.clone();
    solver.step(&ball, &s, &Control::from_torques(&u), 0.01, &mut o, &mut ws, None).unwrap();
    assert_eq!(ws.frames.len(), 1);
    assert_eq!(ws.frames[0].radius, [0.1, 0.0]);
    let rep = &ws.report;
    assert!(rep.lambda_t[0].hypot(rep.lambda_t[1]) < 0.9 * 0.8 * rep.lambda_n[0], "sticks: {rep:?}");
    let (ea, eb) = jacobians_vs_fd(&solver, &ball, &s, &u);
    eprintln!("rolling ball (detected contact): A {ea:.1e}, B {eb:.1e}");
    assert!(ea < 1e-6 && eb < 1e-6, "rolling ball: A {ea:e}, B {eb:e}");

    let two = load_mjcf_str(
        r#"<mujoco><option timestep="0.01" gravity="0 0 0"/><worldbody>
            <body pos="0 0 0"><freejoint/><geom type="sphere" size="0.1" mass="1" friction="0.1"/></body>
            <body pos="0.19 0.05 0.02"><freejoint/><geom type="capsule" size="0.08 0.1" mass="2" friction="0.1"/></body>
            </worldbody></mujoco>"#,
        "two.xml",
        None,
    )
    .unwrap();
    let q2 = torsion_math::Quat::from_axis_angle(
        &nalgebra::Unit::new_normalize(torsion_math::Vec3::new(0.0, 1.0, 0.2)),
        1.3,
    );
    let s = GenState::new(
        vec![0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.175, 0.04, 0.02, q2.w, q2.v.x, q2.v.y, q2.v.z],
        vec![0.5, 0.0, -0.3, 1.0, 0.3, 0.0, 0.0, 0.2, 0.4, -0.5, 0.1, 0.0],
    );
    let u = [0.0; 12];
    let mut ws = Solver::workspace(&solver, &two).unwrap();
    let mut o = s.clone();
    solver.step(&two, &s, &Control::from_torques(&u), 0.01, &mut o, &mut ws, None).unwrap();
    assert_eq!(ws.frames.len(), 1, "{:?}", ws.frames);
    assert!(ws.frames[0].radius.iter().all(|&r| r > 0.0));
    assert!(ws.report.lambda_n[0] > 0.0, "in contact: {:?}", ws.report);
    let (ea, eb) = jacobians_vs_fd(&solver, &two, &s, &u);
    eprintln!("ball–capsule impact (detected contact): A {ea:.1e}, B {eb:.1e}");
    assert!(ea < 1e-6 && eb < 1e-6, "ball–capsule: A {ea:e}, B {eb:e}");
}

/// Contact islands (connected components over moving bodies) are solved separately; the result is that of the
/// unsplit problem (G is block diagonal over islands): 3 stacks of 2 balls and a lone ball, rolling and sliding.
#[test]
fn islands_give_the_unsplit_step() {
    let mut bodies = String::new();
    for (k, (x, z)) in
        [(0.0, 0.1), (0.02, 0.305), (1.0, 0.1), (0.97, 0.305), (2.0, 0.1), (2.0, 0.31), (3.0, 0.1)].iter().enumerate()
    {
        bodies += &format!(
            r#"<body pos="{x} 0 {z}" euler="0 0 {}"><freejoint/><geom type="sphere" size="0.1" mass="1" friction="0.4"/></body>"#,
            0.3 * k as f64
        );
    }
    let xml = format!(
        r#"<mujoco><option timestep="0.005" gravity="0 0 -9.81"/><worldbody><geom type="plane" size="10 10 0.1" friction="0.4"/>{bodies}</worldbody></mujoco>"#
    );
    let m = load_mjcf_str(&xml, "stacks.xml", None).unwrap();
    // the KKT stop: with the default (dual residual only) the unsplit QP can stop, warm-started, at a
    // non-solution (here at step 5: a box's four floor contacts at λ_n = 0, Signorini residual gΔt)
    let admm = AdmmOptions { stop: StopRule::Kkt, ..Default::default() };
    // the default direct solve on both sides (issue 15): steps compared by their states where both met the NCP
    let solver = NcpSolver::new(NcpOptions { n_step: 100, tolerance: 1e-12, admm, ..Default::default() });
    let mut s = GenState::new(m.qpos0.clone(), vec![0.0; m.nv()]);
    for b in 0..7 {
        s.v[6 * b + 3] = 0.3 * (b as f64 - 3.0);
    }
    let u = Control::from_torques(&vec![0.0; m.nv()]);
    let (mut split, mut whole) = (Solver::workspace(&solver, &m).unwrap(), Solver::workspace(&solver, &m).unwrap());
    whole.ncp.split_islands = false;
    let (mut a, mut b) = (s.clone(), s.clone());
    let (mut worst, mut compared): (f64, usize) = (0.0, 0);
    for step in 0..40 {
        solver.step(&m, &s, &u, 0.005, &mut a, &mut split, None).unwrap();
        solver.step(&m, &s, &u, 0.005, &mut b, &mut whole, None).unwrap();
        // compared where both solves met the NCP to 1e-12 (v⁺ is unique there; the impulses need not be, and a
        // direct solve's Δλ is from the warm start, not a pass's)
        let ncp = |w: &torsion_solvers::ncp::NcpSimWorkspace| {
            let r = &w.report.residuals;
            r.signorini.max(r.cone).max(r.mdp_sticking).max(r.mdp_sliding)
        };
        if ncp(&split).max(ncp(&whole)) < 1e-12 {
            worst = worst.max(a.v.iter().zip(&b.v).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max));
            compared += 1;
        }
        let res = split.report.residuals.signorini.max(whole.report.residuals.signorini);
        assert!(res < 1e-5, "step {step}: Signorini residual {res:e}");
        if step == 39 {
            assert!(split.frames.len() >= 7, "contacts: {}", split.frames.len());
        }
        s = a.clone();
    }
    eprintln!("split vs unsplit v⁺: {worst:e} over {compared} steps");
    assert!(compared >= 10 && worst < 1e-9, "split vs unsplit v⁺: {worst:e} over {compared} steps");
}

/// `step_vjp` recomputes a recorded step from the warm start that step began with (in its recorded input state), so its
/// result does not depend on what the workspace did since: the same gradient from the workspace after two more
/// steps and from a fresh one.
#[test]
fn step_vjp_recomputes_from_the_recorded_warm_start() {
    let m = scene();
    let solver = NcpSolver::new(NcpOptions::default());
    let mut ws = Solver::workspace(&solver, &m).unwrap();
    let u = Control::from_torques(&[0.0, 0.0, 0.3, 1.0, -0.5, 0.0]);
    let mut s = box_state(0.0995, 0.8, 0.0);
    let mut recs = vec![];
    for _ in 0..3 {
        let mut r = solver.record(&m);
        let mut o = s.clone();
        solver.step(&m, &s, &u, 0.01, &mut o, &mut ws, Some(&mut r)).unwrap();
        recs.push(r);
        s = o;
    }
    assert!(!ws.frames.is_empty(), "in contact");
    let g_out = GenState::new(vec![0.3, -0.2, 1.0, 0.1, 0.2, -0.1, 0.4], vec![0.5, -1.0, 0.2, 1.0, 0.7, -0.3]);
    let vjp = |w: &mut torsion_solvers::ncp::NcpSimWorkspace| {
        let mut g_s = solver.zero_grad(&m);
        let sel = ParamSelection::all(&m);
        let (mut g_u, mut g_th) = (vec![0.0; 6], vec![0.0; sel.len()]);
        solver.step_vjp(&m, &recs[1], &g_out, &mut g_s, &mut g_u, &sel, &mut g_th, w).unwrap();
        (g_s, g_u, g_th)
    };
    let (a, b) = (vjp(&mut ws), vjp(&mut Solver::workspace(&solver, &m).unwrap()));
    assert_eq!(a.0.q, b.0.q);
    assert_eq!(a.0.v, b.0.v);
    assert_eq!(a.1, b.1);
    assert_eq!(a.2, b.2);
}

/// Issue 12: a symmetric stack of five 20 cm cubes dropped from 2 mm gaps settles without tilting or drifting
/// (Δt 10 ms with 10 and 50 staggered passes, 5 ms with 10). Before: the ADMM's Newton polish, applied to the singular
/// sub-problem of four coplanar corners per face, moved along its solution set and gave asymmetric impulses
/// (top cube: up to 1.4e-4 m drift and 1.5e-4 rad tilt after 2 s; the issue saw 1.85 mm and 1.5 mrad), and a
/// polished λ_n of −2e-15 made the next friction solve reject its radius μ λ_n.
#[test]
fn symmetric_stack_stays_symmetric() {
    let z = |i: usize| 0.1 + 0.202 * i as f64;
    let bodies: String = (0..5)
        .map(|i| {
            format!(
                r#"<body name="b{i}" pos="0 0 {}"><freejoint/><geom name="g{i}" type="box" size="0.1 0.1 0.1" mass="1" friction="0.5 0 0"/></body>"#,
                z(i)
            )
        })
        .collect();
    let xml = format!(
        r#"<mujoco><option gravity="0 0 -9.81"/><worldbody><geom name="floor" type="plane" size="5 5 0.1" friction="0.5 0 0"/>{bodies}</worldbody></mujoco>"#
    );
    let m = load_mjcf_str(&xml, "stack.xml", None).unwrap();
    for (dt, n_step) in [(0.01, 10), (0.01, 50), (0.005, 10)] {
        let solver = NcpSolver::new(NcpOptions { n_step, ..Default::default() });
        let q: Vec<f64> = (0..5).flat_map(|i| [0.0, 0.0, z(i), 1.0, 0.0, 0.0, 0.0]).collect();
        let s0 = GenState::new(q, vec![0.0; m.nv()]);
        let controls = vec![Control::from_torques(&vec![0.0; m.nv()]); (2.0 / dt) as usize];
        let states = rollout(&solver, &m, &s0, &controls, dt).unwrap();
        let last = states.last().unwrap();
        let (mut drift, mut tilt) = (0.0f64, 0.0f64);
        for b in 0..5 {
            let q = &last.q[7 * b..7 * b + 7];
            drift = drift.max(q[0].hypot(q[1]));
            tilt = tilt.max(2.0 * (q[4] * q[4] + q[5] * q[5] + q[6] * q[6]).sqrt());
        }
        eprintln!("stack Δt {dt}, {n_step} passes: drift {drift:.1e} m, tilt {tilt:.1e} rad, top z {:.6}", last.q[30]);
        assert!(drift < 1e-8 && tilt < 1e-8, "Δt {dt}, {n_step} passes: drift {drift:e} m, tilt {tilt:e} rad");
        assert!((last.q[30] - 0.9).abs() < 1e-3, "settled: top at {}", last.q[30]);
    }
}

/// A box the file places 5 cm into the floor: `initial_overlaps` at the default configuration warns, naming both
/// shapes, their bodies and the depth; placed above the floor, or with `<flag contact="disable"/>`, no warning. With contacts
/// disabled the box falls through the floor.
#[test]
fn initial_overlap_warns_and_contact_flag_disables_contacts() {
    let xml = |z: f64, flag: &str| {
        scene_xml(z).replace(r#"gravity="0 0 -9.81"/>"#, &format!(r#"gravity="0 0 -9.81">{flag}</option>"#))
    };
    let solver = NcpSolver::new(NcpOptions::default());
    let m = load_mjcf_str(&xml(0.05, ""), "overlap.xml", None).unwrap();
    let warnings = solver.initial_overlaps(&m, &m.neutral_q()).unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let w = &warnings[0];
    for s in ["initial overlap", "'floor' (body 'world')", "'box' (body 'box')", "0.0500 m"] {
        assert!(w.contains(s), "'{s}' not in {w}");
    }
    let above = load_mjcf_str(&xml(0.105, ""), "overlap.xml", None).unwrap();
    assert!(solver.initial_overlaps(&above, &above.neutral_q()).unwrap().is_empty());
    let off = load_mjcf_str(&xml(0.05, r#"<flag contact="disable"/>"#), "overlap.xml", None).unwrap();
    assert!(solver.initial_overlaps(&off, &off.neutral_q()).unwrap().is_empty());
    // no contacts: the box resting on the floor falls freely (with contacts it stays)
    let fall = |m: &Model| {
        let s0 = GenState::new(m.neutral_q(), vec![0.0; 6]);
        let states = rollout(&solver, m, &s0, &vec![Control::from_torques(&[0.0; 6]); 20], 0.01).unwrap();
        states.last().unwrap().q[2]
    };
    let on = load_mjcf_str(&xml(0.1, ""), "overlap.xml", None).unwrap();
    let off = load_mjcf_str(&xml(0.1, r#"<flag contact="disable"/>"#), "overlap.xml", None).unwrap();
    assert!((fall(&on) - 0.1).abs() < 2e-3, "{}", fall(&on));
    assert!(fall(&off) < 0.1 - 0.15, "free fall {}", fall(&off));
}

/// Three boxes on the floor: one landing while sliding, one resting (sticking), one landing tilted on it; and
/// a ball rolling off another (a contact normal turning in 3-D: the tangents continue from the last step's).
fn three_boxes() -> Model {
    let body = |name: &str, pos: &str| {
        format!(
            r#"<body name="{name}" pos="{pos}"><freejoint/><geom type="box" size="0.1 0.1 0.1" mass="1" friction="0.5"/></body>"#
        )
    };
    let ball = |name: &str| {
        format!(r#"<body name="{name}"><freejoint/><geom type="sphere" size="0.1" mass="1" friction="0.5"/></body>"#)
    };
    let xml = format!(
        r#"<mujoco><option timestep="0.01"/><worldbody><geom type="plane" size="5 5 0.1" friction="0.5"/>{}{}{}{}{}</worldbody></mujoco>"#,
        body("a", "0 0 0.2"),
        body("b", "1 0 0.1"),
        body("c", "1 0 0.3"),
        ball("d"),
        ball("e")
    );
    load_mjcf_str(&xml, "three_boxes.xml", None).unwrap()
}

/// The warm start is part of the state (design.md §3): 50 contact steps give bit-identical states (and warm
/// starts) from the same workspace reused, from a fresh solver and workspace, and through `torsion_diff::rollout`.
#[test]
fn contact_rollouts_are_bit_identical_whatever_the_workspace() {
    let m = three_boxes();
    let tilt = torsion_math::Quat::from_axis_angle(
        &nalgebra::Unit::new_normalize(torsion_math::Vec3::new(1.0, 0.5, 0.0)),
        0.2,
    );
    let s0 = GenState::new(
        vec![
            0.0, 0.0, 0.103, 1.0, 0.0, 0.0, 0.0, // a: 3 mm up, sliding
            1.0, 0.0, 0.0999, 1.0, 0.0, 0.0, 0.0, // b: resting
            1.02, 0.01, 0.33, tilt.w, tilt.v.x, tilt.v.y, tilt.v.z, // c: tilted, above b
            2.0, 0.0, 0.0999, 1.0, 0.0, 0.0, 0.0, // d: ball on the floor
            2.03, 0.02, 0.2966, 1.0, 0.0, 0.0, 0.0, // e: ball on d, off centre
        ],
        vec![
            0.0, 0.0, 0.5, 1.5, 0.2, -0.5, // a
            0.0, 0.0, 0.0, 0.0, 0.0, 0.0, // b
            0.3, 0.0, 0.0, 0.1, 0.0, -0.4, // c
            0.0, 0.0, 0.0, 0.0, 0.0, 0.0, // d
            0.0, 0.0, 0.0, 0.0, 0.0, 0.0, // e
        ],
    );
    let u = vec![Control::from_torques(&[0.0; 30]); 50];
    let run = |solver: &NcpSolver, ws: &mut torsion_solvers::ncp::NcpSimWorkspace| {
        let mut states = vec![s0.clone()];
        let mut next = s0.clone();
        for c in &u {
            solver.step(&m, states.last().unwrap(), c, 0.01, &mut next, ws, None).unwrap();
            states.push(next.clone());
        }
        states
    };
    let solver = NcpSolver::new(NcpOptions::default());
    let mut ws = Solver::workspace(&solver, &m).unwrap();
    let first = run(&solver, &mut ws);
    let again = run(&solver, &mut ws);
    let fresh_solver = NcpSolver::new(NcpOptions::default());
    let fresh = run(&fresh_solver, &mut Solver::workspace(&fresh_solver, &m).unwrap());
    let lib = rollout(&solver, &m, &s0, &u, 0.01).unwrap();
    for (name, other) in [("reused workspace", &again), ("fresh solver", &fresh), ("torsion_diff::rollout", &lib)] {
        for (t, (a, b)) in first.iter().zip(other.iter()).enumerate() {
            assert!(
                a == b,
                "{name}: step {t} differs: {:?}",
                a.v.iter().zip(&b.v).map(|(x, y)| x - y).collect::<Vec<_>>()
            );
        }
    }
    // one step from any state of the rollout with a fresh workspace: the same next state (the tangent frames
    // continue from the warm start's t1, not from the workspace's last contacts)
    for t in [1, 10, 25, 40] {
        let mut w = Solver::workspace(&solver, &m).unwrap();
        let mut next = s0.clone();
        solver.step(&m, &first[t], &u[t], 0.01, &mut next, &mut w, None).unwrap();
        assert!(next == first[t + 1], "step {t} from a fresh workspace differs");
    }
    // the scene: contacts warm-started; a slid and b stuck under c
    let last = first.last().unwrap();
    assert!(first.iter().skip(2).all(|s| !s.warm.is_empty()), "in contact");
    assert!(last.q[0] > 0.05, "a slid: x = {}", last.q[0]);
    assert!(last.v[6..12].iter().all(|v| v.abs() < 1e-3), "b sticks: {:?}", &last.v[6..12]);
}
