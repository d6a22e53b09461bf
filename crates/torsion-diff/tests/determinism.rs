//! Determinism fingerprints (issue 20 item 6; RELIABILITY.md "Determinism"): per solver, a 64-bit hash of the
//! bits of a trajectory (every state's flat encoding) and of its reverse-mode gradient (∂L/∂s0, ∂L/∂u_t, ∂L/∂θ).
//! The same computation must give the same bits: run twice with fresh workspaces, with a workspace reused
//! after another trajectory, through `rollout` + `rollout_vjp`, and on two `std::thread` workers at once.
//! No golden hashes are committed (docs/decisions.md): the hashes are compared within a run.
use torsion_diff::{rollout, rollout_vjp};
use torsion_math::Vec3;
use torsion_model::builder::{floating_tree, tensegrity_prism_on_ground, two_link_arm};
use torsion_model::io::mjcf::load_mjcf_str;
use torsion_model::{Control, GenState, Model, ParamSelection, StateSpace};
use torsion_solvers::lcp::LcpSolver;
use torsion_solvers::ncp::{NcpOptions, NcpSolver};
use torsion_solvers::{DiffSolver, FeatherstoneSolver, XpbdOptions, XpbdSolver};

/// FNV-1a over the bits of f64 values.
#[derive(Clone, Copy)]
struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn add(&mut self, xs: &[f64]) {
        for x in xs {
            for b in x.to_bits().to_le_bytes() {
                self.0 = (self.0 ^ b as u64).wrapping_mul(0x100_0000_01b3);
            }
        }
    }
}

/// L = Σ_t w·s_t with fixed weights w_i = sin(i + 1): ∂L/∂s_t = w.
fn weights(n: usize) -> Vec<f64> {
    (0..n).map(|i| ((i + 1) as f64).sin()).collect()
}

/// The fingerprint of a T-step trajectory and its gradient: computed step by step in the caller's workspace
/// (`Some`), or through the library's `rollout` and `rollout_vjp` (`None`: fresh workspaces inside).
fn fingerprint<S: DiffSolver>(
    solver: &S,
    model: &Model,
    s0: &S::State,
    controls: &[Control],
    dt: f64,
    sel: &ParamSelection,
    ws: Option<&mut S::Workspace>,
) -> u64 {
    let w = weights(s0.encode().len());
    let (states, g_u, g_s0, g_theta) = match ws {
        None => {
            let states = rollout(solver, model, s0, controls, dt).unwrap();
            let g = rollout_vjp(solver, model, &states, controls, dt, sel, |_, _, g| g.add_encoded(&w)).unwrap();
            (states, g.g_u, g.g_s0, g.g_theta)
        }
        Some(ws) => {
            let mut states = vec![s0.clone()];
            let mut rec = solver.record(model);
            for u in controls {
                let mut next = s0.clone();
                solver.step(model, states.last().unwrap(), u, dt, &mut next, ws, None).unwrap();
                states.push(next);
            }
            let (mut g_next, mut g_prev) = (solver.zero_grad(model), solver.zero_grad(model));
            g_next.add_encoded(&w);
            let mut g_theta = vec![0.0; sel.len()];
            let mut g_u = vec![vec![0.0; solver.control_dim(model)]; controls.len()];
            let mut scratch = s0.clone();
            for t in (0..controls.len()).rev() {
                solver.step(model, &states[t], &controls[t], dt, &mut scratch, ws, Some(&mut rec)).unwrap();
                solver.clear_grad(&mut g_prev);
                g_prev.add_encoded(&w);
                solver.step_vjp(model, &rec, &g_next, &mut g_prev, &mut g_u[t], sel, &mut g_theta, ws).unwrap();
                std::mem::swap(&mut g_next, &mut g_prev);
            }
            (states, g_u, g_next, g_theta)
        }
    };
    let mut h = Fnv::new();
    states.iter().for_each(|s| h.add(&s.encode()));
    g_u.iter().rev().for_each(|gu| h.add(gu));
    h.add(&g_s0.encode());
    h.add(&g_theta);
    h.0
}

/// Every check on one scene: fresh twice, reused workspace (after the scene `other` ran in it), the library
/// path, two threads at once. Returns the fingerprint.
fn check<S: DiffSolver + Sync>(
    solver: &S,
    model: &Model,
    s0: &S::State,
    other: &S::State,
    controls: &[Control],
    dt: f64,
) -> u64
where
    S::State: Sync,
{
    let sel = ParamSelection::all(model);
    let fresh = || fingerprint(solver, model, s0, controls, dt, &sel, Some(&mut solver.workspace(model).unwrap()));
    let h = fresh();
    assert_eq!(fresh(), h, "{}: a second run differs", solver.name());
    let mut ws = solver.workspace(model).unwrap();
    let h_other = fingerprint(solver, model, other, controls, dt, &sel, Some(&mut ws));
    assert_ne!(h_other, h, "{}: another initial state gives another fingerprint", solver.name());
    assert_eq!(
        fingerprint(solver, model, s0, controls, dt, &sel, Some(&mut ws)),
        h,
        "{}: reused workspace",
        solver.name()
    );
    assert_eq!(fingerprint(solver, model, s0, controls, dt, &sel, None), h, "{}: rollout + rollout_vjp", solver.name());
    let par: Vec<u64> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..2).map(|_| sc.spawn(fresh)).collect();
        hs.into_iter().map(|j| j.join().unwrap()).collect()
    });
    assert_eq!(par, [h, h], "{}: two threads at once", solver.name());
    h
}

fn torques(n: usize, steps: usize) -> Vec<Control> {
    (0..steps)
        .map(|t| Control::from_torques(&(0..n).map(|i| (0.7 * (t + i) as f64).cos()).collect::<Vec<_>>()))
        .collect()
}

#[test]
fn xpbd_fingerprint_is_reproducible() {
    let m = two_link_arm(0.8, 0.5, 1.0, Vec3::new(0.0, 0.0, -9.81), 0.01).unwrap();
    let s = XpbdSolver::new(XpbdOptions { iterations: 10, ..Default::default() });
    let (a, b) = (m.state_at(&[0.4, -0.7]).unwrap(), m.state_at(&[0.3, 0.2]).unwrap());
    check(&s, &m, &a, &b, &torques(2, 8), 0.01);
}

#[test]
fn featherstone_fingerprint_is_reproducible() {
    let mut m = floating_tree();
    m.joint_frictionloss.iter_mut().for_each(|f| *f = 0.3); // the dry-friction solve too
    let s = FeatherstoneSolver::default();
    let q = torsion_model::builder::example_configuration(&m, 3);
    let v: Vec<f64> = (0..m.nv()).map(|i| 0.1 * i as f64 - 0.4).collect();
    let (a, b) = (GenState::new(q.clone(), v), GenState::new(q, vec![0.0; m.nv()]));
    check(&s, &m, &a, &b, &torques(m.nv(), 8), 0.005);
}

#[test]
fn tensegrity_fingerprint_is_reproducible() {
    let m = tensegrity_prism_on_ground();
    let s = FeatherstoneSolver::default();
    let nv = m.nv();
    let a = GenState::with_act(m.qpos0.clone(), (0..nv).map(|i| 0.05 * (i as f64).sin()).collect(), vec![0.0; 3]);
    let b = GenState::with_act(m.qpos0.clone(), vec![0.0; nv], vec![0.0; 3]);
    let u: Vec<Control> = (0..8).map(|t| Control::with_ctrl(&vec![0.0; nv], &[10.0 * t as f64, -20.0, 30.0])).collect();
    check(&s, &m, &a, &b, &u, 0.002);
}

/// A box dropped tilted onto the floor with restitution: impacts, sliding and sticking contacts.
fn landing() -> (Model, GenState, GenState) {
    let xml = r#"<mujoco><worldbody><geom name="floor" type="plane" size="5 5 0.1"/>
        <body pos="0 0 0.1"><freejoint/><geom type="box" size="0.1 0.1 0.1" mass="1"/></body></worldbody></mujoco>"#;
    let mut m = load_mjcf_str(xml, "box.xml", None).unwrap();
    m.param_set_by_name("shape_restitution[floor]", 0.3).unwrap();
    let tilt = torsion_math::Quat::from_rpy(0.2, -0.1, 0.3).to_array();
    let q = [&[0.0, 0.0, 0.13][..], &tilt].concat();
    let a = GenState::new(q.clone(), vec![0.5, -0.2, 0.1, 0.3, 0.1, -1.0]);
    let b = GenState::new(q, vec![0.0; 6]);
    (m, a, b)
}

#[test]
fn ncp_fingerprint_is_reproducible() {
    let (m, a, b) = landing();
    let s = NcpSolver::new(NcpOptions::default());
    check(&s, &m, &a, &b, &torques(6, 8), 0.01);
}

#[test]
fn lcp_fingerprint_is_reproducible() {
    let (m, a, b) = landing();
    check(&LcpSolver::default(), &m, &a, &b, &torques(6, 8), 0.01);
}
