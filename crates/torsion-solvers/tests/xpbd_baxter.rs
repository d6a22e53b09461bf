//! The Baxter left arm from example-robot-data's URDF (spec 000 §4.7): joint drift at 30 and 300 iterations,
//! value and gradient agreement with the PyTorch reference of the same algorithm (bench/pbd_torch.py, exported
//! to tests/data/pbd_torch_ref.npz), and the 100-step rollout gradient against finite differences.
use torsion_diff::{gradcheck, rel_err, rollout, rollout_vjp};
use torsion_model::io::robots::baxter_left_arm_spec000;
use torsion_model::{Control, MaximalState, Model, ParamSelection};
use torsion_solvers::{XpbdOptions, XpbdSolver};

fn baxter() -> Model {
    let mut m =
        baxter_left_arm_spec000().expect("Baxter URDF from example-robot-data (pip install example-robot-data)");
    m.gravity = torsion_math::Vec3::new(0.0, 0.0, -9.8); // spec 000 §4.0 and the reference use 9.8
    m
}

fn npz(name: &str) -> Vec<f64> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/pbd_torch_ref.npz");
    let mut a = npyz::npz::NpzArchive::open(path).expect("tests/data/pbd_torch_ref.npz");
    a.by_name(name).expect("npz entry").expect("npz entry present").into_vec::<f64>().expect("f64 array")
}

/// The reference's settings: 30 Gauss–Seidel iterations, no limits, no springs (bench/pbd_torch.py header).
fn reference_solver() -> XpbdSolver {
    XpbdSolver::new(XpbdOptions { limits: false, ..Default::default() })
}

fn controls(u: &[f64]) -> Vec<Control> {
    u.chunks(7).map(Control::from_torques).collect()
}

/// (final, max over the trajectory) positional joint violation of a rollout from the zero pose.
fn drift(m: &Model, solver: &XpbdSolver, us: &[Control]) -> (f64, f64) {
    let states = rollout(solver, m, &m.state_at(&[0.0; 7]).unwrap(), us, 0.01).unwrap();
    let fin = solver.violations(m, states.last().unwrap()).0;
    (fin, states.iter().map(|s| solver.violations(m, s).0).fold(0.0, f64::max))
}

#[test]
fn baxter_drift_falls_with_iterations() {
    // the reference's swing: 100 steps of N(0, 1) N·m torques from the zero pose, dt 0.01, no limits.
    // PyTorch (bench/pbd_torch.py) measures 5.44e-5 m after 100 steps and 2.334e-4 m over the trajectory.
    let m = baxter();
    let u = controls(&npz("U0"));
    let d: Vec<(f64, f64)> = [30, 100, 300]
        .iter()
        .map(|&it| drift(&m, &XpbdSolver::new(XpbdOptions { iterations: it, limits: false, ..Default::default() }), &u))
        .collect();
    // with limits on (e1 sits at its −0.05 rad stop) the limit fights the joint constraints
    let lim = drift(&m, &XpbdSolver::default(), &u);
    eprintln!(
        "Baxter swing drift, final / max over 100 steps: 30 it {:.3e} / {:.3e} m, 100 it {:.3e} / {:.3e}, 300 it {:.3e} / {:.3e}; limits on, 30 it {:.3e} / {:.3e}",
        d[0].0, d[0].1, d[1].0, d[1].1, d[2].0, d[2].1, lim.0, lim.1
    );
    assert!(d[0].0 <= 1e-4, "30 iterations: {:e}", d[0].0);
    assert!((d[0].0 - 5.44e-5).abs() < 1e-7 && (d[0].1 - 2.334e-4).abs() < 1e-7, "same drift as the PyTorch reference");
    assert!(d[1].0 < d[0].0 && d[2].0 < d[1].0 && d[2].0 < 1e-6, "drift must fall with iterations: {d:?}");
    assert!(d[2].1 < 1e-6);
}

#[test]
fn baxter_matches_the_pytorch_reference() {
    let m = baxter();
    let solver = reference_solver();
    let u = npz("U0");
    let s0 = m.state_at(&[0.0; 7]).unwrap();
    // same initial body poses as the reference
    let (x0, q0) = (npz("x0"), npz("q0"));
    for k in 0..8 {
        let dx = (s0.x[k] - torsion_math::Vec3::new(x0[3 * k], x0[3 * k + 1], x0[3 * k + 2])).norm();
        let q = torsion_math::Quat::new(q0[4 * k], q0[4 * k + 1], q0[4 * k + 2], q0[4 * k + 3]);
        // the URDF prints π/2 as 1.57079632679: the poses differ by ~1e-11 m
        assert!(dx < 1e-10 && s0.q[k].dot(&q).abs() > 1.0 - 1e-12, "body {k}: initial pose differs by {dx:e}");
    }
    let us = controls(&u);
    let states = rollout(&solver, &m, &s0, &us, 0.01).unwrap();
    let angles = solver.joint_angles(&m, states.last().unwrap());
    let reference = npz("angles");
    let max_diff = angles.iter().zip(&reference).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    // loss = Σ φ_T², its gradient w.r.t. all 700 torques by the adjoint rollout
    let g = rollout_vjp(&solver, &m, &states, &us, 0.01, &ParamSelection::none(), |t, s, g: &mut MaximalState| {
        if t == 100 {
            let phi = solver.joint_angles(&m, s);
            let gphi: Vec<f64> = phi.iter().map(|p| 2.0 * p).collect();
            solver.joint_angles_vjp(&m, s, &gphi, g);
        }
    })
    .unwrap();
    let grad: Vec<f64> = g.g_u.concat();
    let e = rel_err(&grad, &npz("grad"));
    eprintln!("vs PyTorch reference: max |Δφ_T| = {max_diff:.2e} rad, loss-gradient rel err {e:.2e}");
    assert!(max_diff <= 1e-9, "final joint angles differ by {max_diff:e} rad");
    assert!(e <= 1e-6, "gradient rel err {e:e}");
}

#[test]
fn baxter_rollout_gradient_matches_finite_differences() {
    // 40-step rollout, loss on every step's joint angles and velocities, gradient w.r.t. the initial state,
    // a slice of the controls and the link parameters (masses, inertias, anchors) at once
    let m = baxter();
    let solver = XpbdSolver::default();
    let u: Vec<f64> = npz("U0")[..40 * 7].iter().map(|v| 3.0 * v).collect();
    let us = controls(&u);
    let s0 = m.state_at(&[0.1, -0.4, 0.2, 0.9, -0.3, 0.5, 0.2]).unwrap();
    let loss = |states: &[MaximalState]| -> f64 {
        states
            .iter()
            .map(|s| {
                let phi = solver.joint_angles(&m, s);
                phi.iter().map(|p| p.sin()).sum::<f64>() + 0.01 * s.w[7].norm_squared()
            })
            .sum()
    };
    let states = rollout(&solver, &m, &s0, &us, 0.01).unwrap();
    let g = rollout_vjp(&solver, &m, &states, &us, 0.01, &ParamSelection::all(&m), |_, s, g: &mut MaximalState| {
        let phi = solver.joint_angles(&m, s);
        let gphi: Vec<f64> = phi.iter().map(|p| p.cos()).collect();
        solver.joint_angles_vjp(&m, s, &gphi, g);
        g.w[7] += s.w[7] * 0.02;
    })
    .unwrap();
    assert!(g.g_theta.iter().all(|v| v.is_finite()));
    let c = gradcheck(
        |d| loss(&rollout(&solver, &m, &solver_retract(&solver, &m, &s0, d), &us, 0.01).unwrap()),
        &g.g_s0_tangent,
        1e-6,
    );
    eprintln!("rollout grad vs FD: initial state {:.2e}", c.max_rel_err);
    assert!(c.max_rel_err < 1e-6);
    let cu = gradcheck(
        |d| {
            let mut uu = u.clone();
            for (i, di) in d.iter().enumerate() {
                uu[i * 13 % u.len()] += di;
            }
            loss(&rollout(&solver, &m, &s0, &controls(&uu), 0.01).unwrap())
        },
        &(0..20).map(|i| g.g_u[(i * 13 % u.len()) / 7][(i * 13 % u.len()) % 7]).collect::<Vec<_>>(),
        1e-6,
    );
    eprintln!("rollout grad vs FD: controls {:.2e}", cu.max_rel_err);
    assert!(cu.max_rel_err < 1e-6);
    // parameters in relative coordinates θ_i (1 + d_i): the wrist's inertia entries are ~1e-6..1e-4; the shapes'
    // contact material (not read by XPBD) has zero gradient and is left out of the differences
    let table = m.param_table();
    let all = torsion_model::ParamSelection::dynamics(&m);
    assert!((0..table.len()).all(|i| !table.kinds[i].is_contact_material() || g.g_theta[i] == 0.0));
    let theta = m.params_get(&all);
    let scale: Vec<f64> = theta.iter().map(|t| if t.abs() > 1e-12 { t.abs() } else { 1e-3 }).collect();
    let scaled: Vec<f64> = all.indices.iter().zip(&scale).map(|(&i, s)| g.g_theta[i] * s).collect();
    let ct = gradcheck(
        |d| {
            let mut mm = m.clone();
            let th: Vec<f64> = theta.iter().zip(d).zip(&scale).map(|((a, b), s)| a + b * s).collect();
            mm.params_set(&all, &th).unwrap();
            loss(&rollout(&solver, &mm, &s0, &us, 0.01).unwrap())
        },
        &scaled,
        1e-6,
    );
    eprintln!(
        "rollout grad vs FD: {} parameters {:.2e} (worst {})",
        theta.len(),
        ct.max_rel_err,
        table.names[all.indices[ct.worst_index]]
    );
    assert!(ct.max_rel_err < 1e-6);
}

fn solver_retract(solver: &XpbdSolver, m: &Model, s: &MaximalState, d: &[f64]) -> MaximalState {
    use torsion_solvers::DiffSolver;
    solver.retract(m, s, d)
}
