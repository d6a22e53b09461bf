//! Heap allocations per call after the workspace is built (design.md §7, issue 13 item 3): one shared counting
//! allocator (torsion-math `alloc_count`), counting the test's own thread only. Each case warms up first (a
//! workspace's contact-count capacity grows on a new maximum, documented in `NcpWorkspace`), then asserts 0
//! allocations per call. Each solver's cases are separate `#[test]` functions.
use torsion_math::alloc_count::{thread_allocations, CountingAlloc};
use torsion_model::io::mjcf::load_mjcf_str;
use torsion_model::io::{example_robot_data_dir, load_urdf, robots::PANDA_URDF, scenes::box_grid, UrdfOptions};
use torsion_model::{Control, MaximalState, Model, ParamSelection};
use torsion_solvers::featherstone::FeatherstoneSolver;
use torsion_solvers::lcp::{CcdOptions, LcpOptions, LcpSolver, LcpWorkspace};
use torsion_solvers::ncp::{NcpGradient, NcpSolver};
use torsion_solvers::xpbd::XpbdSolver;
use torsion_solvers::{DiffSolver, GenState, Solver, StepJacobians};

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// Allocations made by `f` on this thread.
fn count(f: impl FnOnce()) -> usize {
    let a0 = thread_allocations();
    f();
    thread_allocations() - a0
}

/// `n` boxes on a plane (friction 0.5, restitution `eps` on every shape), lying on the floor a little apart.
fn boxes(n: usize, eps: f64) -> Model {
    let mut m = box_grid(n, 4, 0.3, 0.0999).unwrap();
    m.shapes.iter_mut().for_each(|s| s.restitution = eps);
    m
}

/// A sphere falling onto a plane at 1 m/s, ε = 0.5 (the impact solve runs at the landing step).
fn bouncing_sphere() -> (Model, GenState) {
    let xml = r#"<mujoco><option timestep="0.005" gravity="0 0 -9.81"/><worldbody><geom type="plane" size="10 10 0.1" friction="0.5"/>
        <body pos="0 0 0.1"><freejoint/><geom type="sphere" size="0.1" mass="1" friction="0.5"/></body></worldbody></mujoco>"#;
    let mut m = load_mjcf_str(xml, "sphere.xml", None).unwrap();
    m.shapes.iter_mut().for_each(|s| s.restitution = 0.5);
    let mut s = GenState::new(m.qpos0.clone(), vec![0.0; m.nv()]);
    s.q[2] = 0.1005;
    s.v[5] = -1.0; // linear velocity (the free joint: angular, then linear)
    (m, s)
}

/// The states of a rollout of `steps` steps from `s0` (every state stepped from, with its warm start).
fn rollout(solver: &NcpSolver, m: &Model, s0: &GenState, u: &Control, steps: usize) -> Vec<GenState> {
    let mut ws = solver.workspace(m).unwrap();
    let mut states = vec![s0.clone()];
    for _ in 0..steps {
        let mut next = s0.clone();
        solver.step(m, states.last().unwrap(), u, 0.005, &mut next, &mut ws, None).unwrap();
        states.push(next);
    }
    states
}

/// Shape pairs a plane and a box (parry's half-space × polygonal-feature-map manifold) among the contacts.
fn plane_box_pairs(m: &Model, contacts: &torsion_collision::Contacts) -> usize {
    use torsion_model::ShapeKind::{Box, Plane};
    let mut pairs: Vec<(usize, usize)> = contacts.contacts.iter().map(|c| (c.geom_a, c.geom_b)).collect();
    pairs.sort_unstable();
    pairs.dedup();
    pairs
        .iter()
        .filter(|&&(a, b)| {
            let (ka, kb) = (&m.shapes[a].kind, &m.shapes[b].kind);
            matches!((ka, kb), (Plane { .. }, Box { .. }) | (Box { .. }, Plane { .. }))
        })
        .count()
}

/// ncp `step` over the states of a rollout (warmed up on the same states first): per step, the allocations of
/// the step and of its collision detection alone (`NcpSolver::detect`), and the plane–box pairs in contact;
/// and how many steps made an impact solve.
fn ncp_step_allocs(m: &Model, s0: &GenState, u: &Control, steps: usize) -> (Vec<[usize; 3]>, usize) {
    let solver = NcpSolver::default();
    let states = rollout(&solver, m, s0, u, steps);
    let mut ws = solver.workspace(m).unwrap();
    let mut rec = solver.record(m);
    let mut out = s0.clone();
    for s in &states {
        solver.step(m, s, u, 0.005, &mut out, &mut ws, Some(&mut rec)).unwrap();
    }
    let mut impacts = 0;
    let counts = states
        .iter()
        .map(|s| {
            let step = count(|| {
                solver.step(m, s, u, 0.005, &mut out, &mut ws, Some(&mut rec)).unwrap();
            });
            impacts += ws.report.impact.is_some() as usize;
            let detect = count(|| solver.detect(m, &mut ws, &s.q, &s.warm).unwrap());
            [step, detect, plane_box_pairs(m, &ws.contacts)]
        })
        .collect();
    (counts, impacts)
}

/// Asserts the steps allocated nothing, nor did their collision detection. Before (session 10) parry 0.31's
/// `contact_manifold_halfspace_pfm` (a plane against a box) allocated once per plane–box pair in contact per
/// detection (it moves the manifold's point list out); torsion-collision's narrow phase now writes that manifold
/// into the kept list (`narrow_phase::halfspace_pfm`, bit for bit parry's).
fn assert_none(name: &str, counts: &[[usize; 3]]) {
    for (k, &[step, detect, pairs]) in counts.iter().enumerate() {
        assert!(
            step == 0 && detect == 0,
            "{name}, step {k}: {step} allocations in the step, {detect} in collision detection ({pairs} plane–box \
             pairs in contact; all: {counts:?})"
        );
    }
}

#[test]
fn ncp_step_allocates_nothing() {
    // boxes resting, boxes sliding (2 m/s along x), a sphere bouncing with ε = 0.5
    let m = boxes(4, 0.0);
    let rest = GenState::new(m.qpos0.clone(), vec![0.0; m.nv()]);
    let mut slide = rest.clone();
    for b in 0..4 {
        slide.v[6 * b + 3] = 2.0;
    }
    let u = Control::from_torques(&vec![0.0; m.nv()]);
    for (name, s0) in [("boxes resting", &rest), ("boxes sliding", &slide)] {
        let (c, _) = ncp_step_allocs(&m, s0, &u, 20);
        assert!(c.iter().all(|c| c[2] == 4), "{name}: every box touches the floor ({c:?})");
        assert_none(name, &c);
    }
    let (m, s0) = bouncing_sphere();
    let u = Control::from_torques(&vec![0.0; m.nv()]);
    let (c, impacts) = ncp_step_allocs(&m, &s0, &u, 20);
    assert!(impacts > 0, "the impact solve never ran");
    assert!(c.iter().all(|c| c[0] == 0), "sphere bouncing (ε = 0.5): allocations per step {c:?}");
}

/// ncp `step_vjp` (no parameter, every parameter) and `step_jacobians_into` on a contact step with sliding boxes
/// and on the bouncing sphere's impact step, with the cascade and the fixed-point derivative (its complete
/// orthogonal decomposition in reused buffers, `torsion_math::linalg::Cod`), with plane–box contacts in
/// `step_jacobians_into`'s collision detection (see `assert_none`): nothing is allocated.
#[test]
fn ncp_step_vjp_and_jacobians_allocate_nothing() {
    let m = boxes(2, 0.0);
    let mut s0 = GenState::new(m.qpos0.clone(), vec![0.0; m.nv()]);
    s0.v[3] = 1.0;
    let (ms, ss) = bouncing_sphere();
    for (name, m, s0) in [("boxes", &m, &s0), ("sphere impact", &ms, &ss)] {
        for gradient in [NcpGradient::Cascade, NcpGradient::FixedPoint] {
            let mut solver = NcpSolver::default();
            solver.options.gradient = gradient;
            let u = Control::from_torques(&vec![0.1; m.nv()]);
            let mut ws = solver.workspace(m).unwrap();
            let mut rec = solver.record(m);
            let mut out = s0.clone();
            solver.step(m, s0, &u, 0.005, &mut out, &mut ws, Some(&mut rec)).unwrap();
            assert!(!ws.frames.is_empty(), "{name}: no contact");
            let phases = 1 + ws.report.impact.is_some() as usize;
            assert_eq!(phases, if name == "boxes" { 1 } else { 2 }, "{name}: the impact solve");
            let islands = ws.ncp.island_count();
            assert_eq!(islands, if name == "boxes" { 2 } else { 1 }, "{name}: contact islands");
            let pairs = plane_box_pairs(m, &ws.contacts);
            assert_eq!(pairs, if name == "boxes" { 2 } else { 0 }, "{name}: plane–box pairs in contact");
            let mut g_out = solver.zero_grad(m);
            g_out.q.iter_mut().chain(g_out.v.iter_mut()).enumerate().for_each(|(i, g)| *g = 0.1 * i as f64 - 0.3);
            let mut g_s = solver.zero_grad(m);
            let mut g_u = vec![0.0; m.nv()];
            for sel in [ParamSelection::none(), ParamSelection::all(m)] {
                let what = format!("{name}, {gradient:?}, {} parameters", sel.len());
                let mut g_theta = vec![0.0; sel.len()];
                let mut vjp =
                    || solver.step_vjp(m, &rec, &g_out, &mut g_s, &mut g_u, &sel, &mut g_theta, &mut ws).unwrap();
                vjp();
                let c = count(vjp);
                assert_eq!(c, 0, "{what}: {c} step_vjp allocations");
                let mut jac = StepJacobians::for_solver(&solver, m, &sel);
                let mut jacobians = || solver.step_jacobians_into(m, s0, &u, 0.005, &sel, &mut ws, &mut jac).unwrap();
                jacobians();
                let cj = count(jacobians);
                assert_eq!(cj, 0, "{what}: {cj} step_jacobians_into allocations");
            }
        }
    }
}

/// XPBD `step`, `step_vjp` and `step_jacobians_into` on the two-link arm.
#[test]
fn xpbd_step_vjp_and_jacobians_allocate_nothing() {
    let (m, s0): (Model, MaximalState) = torsion_model::builder::spinning_thick_arm();
    let solver = XpbdSolver::default();
    let u = Control::from_torques(&[0.7, -0.3]);
    let mut ws = solver.workspace(&m).unwrap();
    let mut rec = solver.record(&m);
    let mut out = s0.clone();
    let step = |rec: &mut _, ws: &mut _, out: &mut _| solver.step(&m, &s0, &u, 0.01, out, ws, Some(rec)).unwrap();
    step(&mut rec, &mut ws, &mut out);
    let c = count(|| {
        step(&mut rec, &mut ws, &mut out);
    });
    assert_eq!(c, 0, "xpbd step: {c} allocations");
    let g_out = out.clone();
    let mut g_s = solver.zero_grad(&m);
    let mut g_u = vec![0.0; m.joint_count()];
    for sel in [ParamSelection::none(), ParamSelection::all(&m)] {
        let mut g_theta = vec![0.0; sel.len()];
        let mut vjp = || solver.step_vjp(&m, &rec, &g_out, &mut g_s, &mut g_u, &sel, &mut g_theta, &mut ws).unwrap();
        vjp();
        let c = count(vjp);
        assert_eq!(c, 0, "xpbd step_vjp with {} parameters: {c} allocations", sel.len());
        let mut jac = StepJacobians::for_solver(&solver, &m, &sel);
        let mut jacobians = || solver.step_jacobians_into(&m, &s0, &u, 0.01, &sel, &mut ws, &mut jac).unwrap();
        jacobians();
        let c = count(jacobians);
        assert_eq!(c, 0, "xpbd step_jacobians_into with {} parameters: {c} allocations", sel.len());
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Featherstone (issue 14 item 1 / issue 13): step, the reverse-mode step_vjp and step_jacobians_into

/// The Panda arm of example-robot-data as a 7-DoF chain (hand and fingers dropped).
fn panda() -> Model {
    let dir = example_robot_data_dir().expect("example-robot-data");
    let opts = UrdfOptions { root: Some("panda_link0".into()), tip: Some("panda_link8".into()), drop_off_chain: true };
    load_urdf(&dir.join(PANDA_URDF), &opts).unwrap()
}

/// Allocations of `f` over 20 calls, after two warm-up calls (the record's buffers take their sizes then).
fn count_calls(mut f: impl FnMut()) -> usize {
    f();
    f();
    let before = thread_allocations();
    for _ in 0..20 {
        f();
    }
    thread_allocations() - before
}

/// `step` (with and without a record), `step_vjp` with no, the inertial and every parameter, and
/// `step_jacobians_into` (no and every parameter) allocate nothing on the Panda and on the free + ball + slide +
/// hinge tree (damped, armature), and on the Panda with joint dry friction (frictionloss 5 N·m: a stuck joint and
/// sliding ones). Models with cables or fluid forces take the dual-number path and may allocate.
#[test]
fn featherstone_step_vjp_and_jacobians_allocate_nothing() {
    let mut tree = torsion_model::builder::floating_tree();
    tree.joint_damping.iter_mut().for_each(|d| *d = 0.1);
    tree.joint_armature.iter_mut().for_each(|a| *a = 0.01);
    let mut rough = panda();
    rough.joint_frictionloss.iter_mut().for_each(|f| *f = 5.0);
    rough.joint_damping.iter_mut().for_each(|d| *d = 0.1);
    for (name, m) in [("panda", panda()), ("floating tree", tree), ("panda + friction", rough)] {
        let solver = FeatherstoneSolver::default();
        let nv = m.nv();
        let q = torsion_model::builder::example_configuration(&m, 3);
        let s = GenState::new(q, (0..nv).map(|i| (i % 5) as f64 / 4.0 - 0.5).collect());
        let u = Control::from_torques(&(0..nv).map(|i| (i % 3) as f64 - 1.0).collect::<Vec<_>>());
        let dt = 0.001;
        let mut ws = solver.workspace(&m).unwrap();
        let mut rec = solver.record(&m);
        let mut out = s.clone();
        let n = count_calls(|| {
            solver.step(&m, &s, &u, dt, &mut out, &mut ws, None).unwrap();
        });
        assert_eq!(n, 0, "{name}: step allocated {n} times");
        let n = count_calls(|| {
            solver.step(&m, &s, &u, dt, &mut out, &mut ws, Some(&mut rec)).unwrap();
        });
        assert_eq!(n, 0, "{name}: step with a record allocated {n} times");
        if name == "panda + friction" {
            use torsion_solvers::joint_friction::FrictionMode;
            let modes = rec.friction_modes();
            assert!(modes.contains(&FrictionMode::Stick) && modes.iter().any(|m| matches!(m, FrictionMode::Slide(_))));
        }
        let g_out = GenState::new(vec![0.3; m.nq()], vec![-0.2; nv]);
        let inertial = ParamSelection::by_prefix(&m, "body_");
        for (which, sel) in [("none", ParamSelection::none()), ("inertial", inertial), ("all", ParamSelection::all(&m))]
        {
            let (mut gs, mut gu, mut gt) = (solver.zero_grad(&m), vec![0.0; nv], vec![0.0; sel.len()]);
            let n = count_calls(|| {
                solver.step_vjp(&m, &rec, &g_out, &mut gs, &mut gu, &sel, &mut gt, &mut ws).unwrap();
            });
            assert_eq!(n, 0, "{name}: step_vjp (sel {which}, {} parameters) allocated {n} times", sel.len());
            assert!(gt.iter().all(|x| x.is_finite()) && (sel.is_empty() || gt.iter().any(|x| *x != 0.0)));
            let mut jac = StepJacobians::for_solver(&solver, &m, &sel);
            let n = count_calls(|| {
                solver.step_jacobians_into(&m, &s, &u, dt, &sel, &mut ws, &mut jac).unwrap();
            });
            assert_eq!(n, 0, "{name}: step_jacobians_into (sel {which}) allocated {n} times");
        }
    }
}

/// A fresh record (`Solver::record`) takes the first step without allocating: a tape's records are sized when the
/// tape is built, not by its steps (issue 14 item 7); on the Panda with dry friction and the floating tree.
#[test]
fn featherstone_fresh_record_step_allocates_nothing() {
    let mut rough = panda();
    rough.joint_frictionloss.iter_mut().for_each(|f| *f = 5.0);
    for (name, m) in [("panda + friction", rough), ("floating tree", torsion_model::builder::floating_tree())] {
        let solver = FeatherstoneSolver::default();
        let nv = m.nv();
        let s = GenState::new(torsion_model::builder::example_configuration(&m, 3), vec![0.2; nv]);
        let u = Control::from_torques(&vec![0.5; nv]);
        let (mut ws, mut out) = (solver.workspace(&m).unwrap(), s.clone());
        solver.step(&m, &s, &u, 0.001, &mut out, &mut ws, None).unwrap();
        for _ in 0..3 {
            let mut rec = solver.record(&m);
            let n = count(|| {
                solver.step(&m, &s, &u, 0.001, &mut out, &mut ws, Some(&mut rec)).unwrap();
            });
            assert_eq!(n, 0, "{name}: a step into a fresh record allocated {n} times");
        }
    }
}

/// The RK4 and implicitfast steps (issue 20 item 3) allocate nothing either, with and without a record: RK4's stage
/// buffers live in the workspace (`integrators::Rk4Scratch`); implicitfast with a position servo on every joint of
/// the Panda (its velocity gain enters M̃). Their derivatives take the dual passes (docs/decisions.md).
#[test]
fn rk4_and_implicitfast_steps_allocate_nothing() {
    use torsion_solvers::Integrator;
    let mut tree = torsion_model::builder::floating_tree();
    tree.joint_damping.iter_mut().for_each(|d| *d = 0.1);
    let mut servo = panda();
    for j in 0..servo.joint_count() {
        servo.cable_actuators.push(torsion_model::CableActuator {
            name: format!("p{j}"),
            transmission: torsion_model::Transmission::Joint(j),
            gain: 20.0,
            bias: [0.0, -20.0, -2.0],
            forcerange: Some((-30.0, 30.0)),
            timeconst: None,
            ctrlrange: None,
        });
    }
    for integ in [Integrator::Rk4, Integrator::ImplicitFast] {
        for (name, m) in [("panda", panda()), ("floating tree", tree.clone()), ("panda + servos", servo.clone())] {
            let solver = FeatherstoneSolver::with_integrator(integ);
            let nv = m.nv();
            let q = torsion_model::builder::example_configuration(&m, 3);
            let s = GenState::new(q, (0..nv).map(|i| (i % 5) as f64 / 4.0 - 0.5).collect());
            let u = Control::with_ctrl(&(0..nv).map(|i| (i % 3) as f64 - 1.0).collect::<Vec<_>>(), &vec![0.1; m.nu()]);
            let (mut ws, mut rec, mut out) = (solver.workspace(&m).unwrap(), solver.record(&m), s.clone());
            let n = count_calls(|| {
                solver.step(&m, &s, &u, 0.001, &mut out, &mut ws, None).unwrap();
            });
            assert_eq!(n, 0, "{name}, {integ}: step allocated {n} times");
            let n = count_calls(|| {
                solver.step(&m, &s, &u, 0.001, &mut out, &mut ws, Some(&mut rec)).unwrap();
            });
            assert_eq!(n, 0, "{name}, {integ}: step with a record allocated {n} times");
        }
    }
}

/// The SUPERball rolling (superball.xml: 6 free rods, 24 cables and filter actuators, the linear contact model on:
/// rod–floor and rod–rod with the broad phase) steps without allocating, a record or not, while rods touch the
/// floor (issue 16 item 8: the benchmark's rolling step).
#[test]
fn tensegrity_rolling_step_allocates_nothing() {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../torsion-model/tests/data/mjcf/superball.xml");
    let mut m = torsion_model::io::mjcf::load_mjcf(&p).unwrap();
    m.tensegrity_contact = Some(torsion_model::LinearContact::from_array([0.5, 0.0, 0.5, 1.0, 0.005]));
    let solver = FeatherstoneSolver::default();
    let mut s = GenState::rest(&m);
    for k in 0..6 {
        // body-frame (ω, v) of each rod: a sideways push with some spin
        s.v[6 * k..6 * k + 6].copy_from_slice(&[0.5, -0.3, 0.0, 2.0, 1.0 - 0.3 * k as f64, 0.5]);
    }
    let u = Control::zeros(m.nv());
    let mut ws = solver.workspace(&m).unwrap();
    let mut rec = solver.record(&m);
    let mut out = s.clone();
    let (mut n, mut m_rec) = (0, 0);
    for k in 0..300 {
        let a0 = thread_allocations();
        if k % 2 == 0 {
            solver.step(&m, &s, &u, m.dt, &mut out, &mut ws, None).unwrap();
        } else {
            solver.step(&m, &s, &u, m.dt, &mut out, &mut ws, Some(&mut rec)).unwrap();
        }
        // after two warm-up steps (the record's buffers take their sizes then)
        if k >= 3 {
            *if k % 2 == 0 { &mut n } else { &mut m_rec } += thread_allocations() - a0;
        }
        std::mem::swap(&mut s, &mut out);
    }
    // still in contact at the end: the same step without the contact model differs
    let mut free = m.clone();
    free.tensegrity_contact = None;
    let mut ws_free = solver.workspace(&free).unwrap();
    let mut o_free = s.clone();
    solver.step(&m, &s, &u, m.dt, &mut out, &mut ws, None).unwrap();
    solver.step(&free, &s, &u, m.dt, &mut o_free, &mut ws_free, None).unwrap();
    let dv = out.v.iter().zip(&o_free.v).fold(0.0f64, |a, (x, y)| a.max((x - y).abs()));
    assert!(s.q.iter().all(|x| x.is_finite()) && dv > 1e-3, "no contact at the end: |Δv| {dv}");
    assert_eq!((n, m_rec), (0, 0), "rolling steps allocated (no record, record)");
}

// ---------------------------------------------------------------------------------------------------------------
// lcp (spec 004): `step` and its parts

/// Allocations of one lcp `step` from `s` (warmed up on the same state first), of collision detection at each of
/// its sub-steps' starts, the plane–box pairs in contact there (summed over the sub-steps), and the singular
/// active-set systems the step's LCP solves met (D11: the complete orthogonal decomposition).
fn lcp_step_allocs(solver: &LcpSolver, m: &Model, s: &GenState) -> [usize; 4] {
    let mut ws = Solver::workspace(solver, m).unwrap();
    let u = Control::zeros(m.nv());
    let mut out = s.clone();
    for _ in 0..3 {
        solver.step(m, s, &u, 0.005, &mut out, &mut ws, None).unwrap();
    }
    let singular0 = ws.singular_step_solves();
    let step = count(|| {
        solver.step(m, s, &u, 0.005, &mut out, &mut ws, None).unwrap();
    });
    let singular = ws.singular_step_solves() - singular0;
    let (mut detect, mut pairs) = (0, 0);
    for seg in ws.tape.clone() {
        detect += count(|| solver.detect(m, &mut ws, &seg.q, &Default::default()).unwrap());
        pairs += plane_box_pairs(m, &ws.contacts);
    }
    [step, detect, pairs, singular]
}

/// The lcp `step` (CCD and DCD) allocates nothing: its collision detection (plane–box manifolds, see
/// `assert_none`), its LCP solvers (Jade's Dantzig with its LU and, on the singular active-set systems of the boxes'
/// redundant corners, the complete orthogonal decomposition (D11); PGS and its polish; the chain) and the CCD's
/// time-of-impact searches run in the workspace's buffers. On two boxes resting, two boxes sliding and a sphere
/// bouncing (ε = 0.5); the box scenes meet singular systems. Before the solvers' buffers (`ChainScratch`,
/// `DenseSolver`) a step allocated 196 / 759 / 38 times besides detection (CCD), 194 / 757 / 38 of them in the LCP
/// solvers; before session 10 detection allocated once per plane–box pair in contact; before session 13 nalgebra's
/// SVD of each singular system allocated 11–13 times.
#[test]
fn lcp_step_allocates_nothing() {
    let mut met = 0;
    for (ccd, solver, name, m, s) in lcp_scenes() {
        let [step, detect, pairs, singular] = lcp_step_allocs(&solver, &m, &s);
        let what = format!("lcp (CCD {ccd}) {name}");
        eprintln!("{what}: step {step} allocations, detection {detect} ({pairs} plane–box pairs), {singular} singular");
        assert_eq!(detect, 0, "{what}: detection ({pairs} plane–box pairs) allocated");
        assert_eq!(step, 0, "{what}: {step} allocations ({singular} singular systems)");
        if name == "sphere" {
            assert_eq!(singular, 0, "{what}: one contact, a regular system");
        } else {
            assert!(pairs >= 2, "{what}: {pairs} plane–box pairs in contact");
        }
        met += singular;
    }
    assert!(met > 0, "no singular active-set system met");
}

/// The lcp scenes (CCD on, off): two boxes resting, two boxes sliding (1 m/s), a sphere bouncing (ε = 0.5).
fn lcp_scenes() -> Vec<(bool, LcpSolver, &'static str, Model, GenState)> {
    let m = boxes(2, 0.0);
    let rest = GenState::new(m.qpos0.clone(), vec![0.0; m.nv()]);
    let mut slide = rest.clone();
    (0..2).for_each(|b| slide.v[6 * b + 3] = 1.0);
    let (ms, ss) = bouncing_sphere();
    let mut out = vec![];
    for ccd in [true, false] {
        let ccd_o = CcdOptions { enabled: ccd, ..Default::default() };
        let solver = LcpSolver::new(LcpOptions { ccd: ccd_o, ..Default::default() });
        for (name, m, s) in [("boxes resting", &m, &rest), ("boxes sliding", &m, &slide), ("sphere", &ms, &ss)] {
            out.push((ccd, solver.clone(), name, m.clone(), s.clone()));
        }
    }
    out
}

/// Allocations of `f` (warmed up by two calls first), and the singular systems the workspace met in the counted
/// call: all of them, and those of the re-run step's LCP solves.
fn count_with_singular(ws: &mut LcpWorkspace, mut f: impl FnMut(&mut LcpWorkspace)) -> [usize; 3] {
    f(ws);
    f(ws);
    let (all0, step0) = (ws.singular_solves(), ws.singular_step_solves());
    let n = count(|| f(ws));
    [n, ws.singular_solves() - all0, ws.singular_step_solves() - step0]
}

/// lcp `step_vjp` (no parameter, every parameter) and `step_jacobians_into` allocate nothing: the re-run step
/// (see `lcp_step_allocates_nothing`) and each solved LCP's derivative, factorised once per call (a singular one,
/// D11, by the complete orthogonal decomposition), run in the workspace's buffers: the same count with 0 and with
/// every parameter. On the lcp step's scenes; the box scenes meet singular derivatives. Before the tangent buffers
/// (`TangentScratch`, `backward::JvpFactor`) they allocated, CCD on / off alike but the sphere: 3,921 / 8,663
/// (resting boxes, 0 / 38 parameters), 3,963 / 8,591 (sliding), 2,722 / 5,872 (sphere, CCD; DCD 1,767 / 3,897) per
/// `step_vjp`, `step_jacobians_into` 4–5 fewer; before session 10, 15 (resting) and 145 (sliding) per `step_vjp`:
/// parry's plane–box manifolds and an SVD per singular system; before session 13, 0 and 130: the SVDs of the
/// re-run step's singular systems.
#[test]
fn lcp_step_vjp_and_jacobians_allocate_nothing() {
    let mut derivatives = 0;
    for (ccd, solver, name, m, s) in lcp_scenes() {
        let what = format!("lcp (CCD {ccd}) {name}");
        let mut ws = Solver::workspace(&solver, &m).unwrap();
        let u = Control::zeros(m.nv());
        let mut rec = solver.record(&m);
        let mut out = s.clone();
        solver.step(&m, &s, &u, 0.005, &mut out, &mut ws, Some(&mut rec)).unwrap();
        let mut pairs = 0;
        for seg in ws.tape.clone() {
            solver.detect(&m, &mut ws, &seg.q, &Default::default()).unwrap();
            pairs += plane_box_pairs(&m, &ws.contacts);
        }
        assert_eq!(pairs == 0, name == "sphere", "{what}: {pairs} plane–box pairs in contact");
        let mut g_out = solver.zero_grad(&m);
        g_out.q.iter_mut().chain(g_out.v.iter_mut()).enumerate().for_each(|(i, g)| *g = 0.1 * i as f64 - 0.3);
        let (mut g_s, mut g_u) = (solver.zero_grad(&m), vec![0.0; m.nv()]);
        let mut per_sel = vec![];
        for sel in [ParamSelection::none(), ParamSelection::all(&m)] {
            let mut g_theta = vec![0.0; sel.len()];
            let vjp = count_with_singular(&mut ws, |ws| {
                solver.step_vjp(&m, &rec, &g_out, &mut g_s, &mut g_u, &sel, &mut g_theta, ws).unwrap();
            });
            let mut jac = StepJacobians::for_solver(&solver, &m, &sel);
            let jacobians = count_with_singular(&mut ws, |ws| {
                solver.step_jacobians_into(&m, &s, &u, 0.005, &sel, ws, &mut jac).unwrap();
            });
            for (call, [n, singular, in_step]) in [("step_vjp", vjp), ("step_jacobians_into", jacobians)] {
                eprintln!(
                    "{what}, {} parameters: {call} {n} allocations, {singular} singular ({in_step} in the re-run step)",
                    sel.len()
                );
                assert_eq!(n, 0, "{what}, {} parameters: {call} {n} allocations", sel.len());
                if name == "sphere" {
                    assert_eq!(singular, 0, "{what}: {call}: one contact, a regular system");
                }
                derivatives += singular - in_step;
            }
            per_sel.push((vjp, jacobians));
        }
        // never per direction: the same with 0 and with every parameter
        assert_eq!(
            per_sel[0], per_sel[1],
            "{what}: (allocations, singular, in the step) of (vjp, jacobians), 0 / all parameters"
        );
    }
    assert!(derivatives > 0, "no singular LCP derivative met");
}
