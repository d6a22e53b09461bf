//! Zero heap allocations after the workspace is built (design.md §7, issue 13): a counting global allocator
//! (`torsion_math::alloc_count`, per thread) around repeated calls. Each solver's cases are their own `#[test]`.

use torsion_math::alloc_count::{thread_allocations, CountingAlloc};
use torsion_model::io::{example_robot_data_dir, load_urdf, robots::PANDA_URDF, UrdfOptions};
use torsion_model::{Control, GenState, Model, ParamSelection};
use torsion_solvers::featherstone::FeatherstoneSolver;
use torsion_solvers::{DiffSolver, Solver, StepJacobians};

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

// ---------------------------------------------------------------------------------------------------------------
// Featherstone (issue 14 item 1 / issue 13): step, the reverse-mode step_vjp and step_jacobians_into

/// The Panda arm of example-robot-data as a 7-DoF chain (hand and fingers dropped).
fn panda() -> Model {
    let dir = example_robot_data_dir().expect("example-robot-data");
    let opts = UrdfOptions { root: Some("panda_link0".into()), tip: Some("panda_link8".into()), drop_off_chain: true };
    load_urdf(&dir.join(PANDA_URDF), &opts).unwrap()
}

/// Allocations of `f` over 20 calls, after two warm-up calls (the record's buffers take their sizes then).
fn count(mut f: impl FnMut()) -> usize {
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
/// hinge tree (damped, armature). Models with cables or fluid forces take the dual-number path and may allocate.
#[test]
fn featherstone_step_vjp_and_jacobians_allocate_nothing() {
    let mut tree = torsion_model::builder::floating_tree();
    tree.joint_damping.iter_mut().for_each(|d| *d = 0.1);
    tree.joint_armature.iter_mut().for_each(|a| *a = 0.01);
    for (name, m) in [("panda", panda()), ("floating tree", tree)] {
        let solver = FeatherstoneSolver::default();
        let nv = m.nv();
        let q = torsion_model::builder::example_configuration(&m, 3);
        let s = GenState::new(q, (0..nv).map(|i| (i % 5) as f64 / 4.0 - 0.5).collect());
        let u = Control::from_torques(&(0..nv).map(|i| (i % 3) as f64 - 1.0).collect::<Vec<_>>());
        let dt = 0.001;
        let mut ws = solver.workspace(&m).unwrap();
        let mut rec = solver.record(&m);
        let mut out = s.clone();
        let n = count(|| {
            solver.step(&m, &s, &u, dt, &mut out, &mut ws, None).unwrap();
        });
        assert_eq!(n, 0, "{name}: step allocated {n} times");
        let n = count(|| {
            solver.step(&m, &s, &u, dt, &mut out, &mut ws, Some(&mut rec)).unwrap();
        });
        assert_eq!(n, 0, "{name}: step with a record allocated {n} times");
        let g_out = GenState::new(vec![0.3; m.nq()], vec![-0.2; nv]);
        let inertial = ParamSelection::by_prefix(&m, "body_");
        for (which, sel) in [("none", ParamSelection::none()), ("inertial", inertial), ("all", ParamSelection::all(&m))]
        {
            let (mut gs, mut gu, mut gt) = (solver.zero_grad(&m), vec![0.0; nv], vec![0.0; sel.len()]);
            let n = count(|| {
                solver.step_vjp(&m, &rec, &g_out, &mut gs, &mut gu, &sel, &mut gt, &mut ws).unwrap();
            });
            assert_eq!(n, 0, "{name}: step_vjp (sel {which}, {} parameters) allocated {n} times", sel.len());
            assert!(gt.iter().all(|x| x.is_finite()) && (sel.is_empty() || gt.iter().any(|x| *x != 0.0)));
            let mut jac = StepJacobians::for_solver(&solver, &m, &sel);
            let n = count(|| {
                solver.step_jacobians_into(&m, &s, &u, dt, &sel, &mut ws, &mut jac).unwrap();
            });
            assert_eq!(n, 0, "{name}: step_jacobians_into (sel {which}) allocated {n} times");
        }
    }
}
