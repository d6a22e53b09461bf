//! One semi-implicit Featherstone step and its transition Jacobians (A, B) on dm_control models, timed per
//! call for BENCHMARKS.md "Featherstone step and transition Jacobians vs MuJoCo" (bench/featherstone_mujoco.py
//! runs this and MuJoCo in one run). Per model: a random state near the reference configuration (tangent
//! offsets in [−0.1, 0.1] for q and v, fixed seed), zero controls, the model's timestep;
//!   * `step_us`: `Solver::step` with the workspace reused and no record;
//!   * `jac_us`: `transition_jacobians_into` (A, B), the analytic path with the step's workspace reused (no
//!     allocation per call; `jac_allocs` counts them); `jac_alloc_us`: the same through the trait's
//!     `step_jacobians`, which builds a workspace per call;
//!   * `jac_dual_us`: `step_jacobians_dual`, the all-dual reference (one Dual64 pass per input direction);
//!   * heap allocations per `step` call;
//!   * max |ours − FD| of A and B for forward and central differences of our own step (ε = 1e-6), and the
//!     max |analytic − dual| (both exact up to round-off);
//!   * the state, dt and (for models without a free joint) A and B themselves, for the cross-check against
//!     MuJoCo's `mjd_transitionFD` in the driver.
//!
//! Single thread, median over `--repeats` repeats of batches sized to ~2 ms.
//! Usage: cargo run --release -p torsion-bench --bin featherstone_mujoco -- [--repeats N] [--models a,b,c]
use nalgebra::DMatrix;
use serde_json::{json, Value};
use std::hint::black_box;
use std::process::ExitCode;
use std::time::Instant;
use torsion_diff::gradcheck::XorShift;
use torsion_math::alloc_count::{thread_allocations, CountingAlloc};
use torsion_model::io::robots::dm_control_model;
use torsion_model::{Control, JointType, Model, ParamSelection};
use torsion_solvers::featherstone::TransitionJacobians;
use torsion_solvers::{DiffSolver, FeatherstoneSolver, GenState, Solver, StepPoint};

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// Median per-call time in µs of `f` over `repeats` batches of calls sized to about 2 ms.
fn time_us(repeats: usize, mut f: impl FnMut()) -> f64 {
    let t = Instant::now();
    let mut n = 0usize;
    while t.elapsed().as_secs_f64() < 0.02 || n < 3 {
        f();
        n += 1;
    }
    let per = t.elapsed().as_secs_f64() / n as f64;
    let batch = ((2e-3 / per).ceil() as usize).max(1);
    let mut v: Vec<f64> = (0..repeats)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..batch {
                f();
            }
            t.elapsed().as_secs_f64() * 1e6 / batch as f64
        })
        .collect();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// Deterministic uniform numbers in [−1, 1] (xorshift).
fn rows(m: &DMatrix<f64>) -> Value {
    json!((0..m.nrows()).map(|r| (0..m.ncols()).map(|c| m[(r, c)]).collect::<Vec<_>>()).collect::<Vec<_>>())
}

fn max_abs_diff(a: &DMatrix<f64>, b: &DMatrix<f64>) -> f64 {
    (a - b).amax()
}

fn run(name: &str, repeats: usize) -> Result<Value, String> {
    let m: Model = dm_control_model(name).map_err(|e| format!("{name}: {e}"))?;
    let solver = FeatherstoneSolver::default();
    let (nq, nv, dt) = (m.nq(), m.nv(), m.dt);
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15 ^ name.len() as u64);
    let d: Vec<f64> = (0..2 * nv).map(|_| 0.1 * rng.sym()).collect();
    let s = solver.retract(&m, &GenState::rest(&m), &d);
    let u = Control::from_torques(&vec![0.0; nv]);
    let none = ParamSelection::none();

    let mut ws = solver.workspace(&m).map_err(|e| e.to_string())?;
    let mut out = s.clone();
    solver.step(&m, &s, &u, dt, &mut out, &mut ws, None).map_err(|e| e.to_string())?;
    let a0 = thread_allocations();
    solver.step(&m, &s, &u, dt, &mut out, &mut ws, None).map_err(|e| e.to_string())?;
    let step_allocs = thread_allocations() - a0;
    let step_us = time_us(repeats, || {
        solver.step(&m, black_box(&s), &u, dt, &mut out, &mut ws, None).unwrap();
        black_box(&out);
    });
    let jac = solver.step_jacobians(&m, &s, &u, dt, &none).map_err(|e| e.to_string())?;
    let jac_alloc_us = time_us(repeats, || {
        black_box(solver.step_jacobians(&m, black_box(&s), &u, dt, &none).unwrap());
    });
    // the workspace path (what a rollout or an iLQR pass uses): no allocation per call
    let mut tj = TransitionJacobians::new(&m);
    solver.transition_jacobians_into(&m, &s, &u, dt, &mut ws, &mut tj).map_err(|e| e.to_string())?;
    if tj.a() != jac.a || tj.b() != jac.b {
        return Err(format!("{name}: transition_jacobians_into differs from step_jacobians"));
    }
    let a0 = thread_allocations();
    solver.transition_jacobians_into(&m, &s, &u, dt, &mut ws, &mut tj).map_err(|e| e.to_string())?;
    let jac_allocs = thread_allocations() - a0;
    let jac_us = time_us(repeats, || {
        solver.transition_jacobians_into(&m, black_box(&s), &u, dt, &mut ws, &mut tj).unwrap();
        black_box(&tj.ab);
    });
    let dual = solver.step_jacobians_dual(StepPoint::new(&m, &s, &u, dt), &none).map_err(|e| e.to_string())?;
    let jac_dual_us = time_us(repeats.min(11), || {
        black_box(solver.step_jacobians_dual(StepPoint::new(&m, black_box(&s), &u, dt), &none).unwrap());
    });

    // finite differences of our own step, in the same tangent coordinates; controls = (τ (nv), ctrl (nu))
    let nc = jac.b.ncols();
    let next = |s: &GenState, uu: &[f64]| {
        let mut o = s.clone();
        let mut w = solver.workspace(&m).unwrap();
        solver.step(&m, s, &Control::with_ctrl(&uu[..nv], &uu[nv..]), dt, &mut o, &mut w, None).unwrap();
        o
    };
    let u0 = vec![0.0; nc];
    let base = next(&s, &u0);
    let eps = 1e-6;
    let (mut fa_f, mut fa_c) = (DMatrix::zeros(2 * nv, 2 * nv), DMatrix::zeros(2 * nv, 2 * nv));
    let (mut fb_f, mut fb_c) = (DMatrix::zeros(2 * nv, nc), DMatrix::zeros(2 * nv, nc));
    for c in 0..2 * nv {
        let mut e = vec![0.0; 2 * nv];
        e[c] = eps;
        let p = solver.local_diff(&m, &base, &next(&solver.retract(&m, &s, &e), &u0));
        e[c] = -eps;
        let q = solver.local_diff(&m, &base, &next(&solver.retract(&m, &s, &e), &u0));
        for r in 0..2 * nv {
            fa_f[(r, c)] = p[r] / eps;
            fa_c[(r, c)] = (p[r] - q[r]) / (2.0 * eps);
        }
    }
    for c in 0..nc {
        let mut uu = u0.clone();
        uu[c] = eps;
        let p = solver.local_diff(&m, &base, &next(&s, &uu));
        uu[c] = -eps;
        let q = solver.local_diff(&m, &base, &next(&s, &uu));
        for r in 0..2 * nv {
            fb_f[(r, c)] = p[r] / eps;
            fb_c[(r, c)] = (p[r] - q[r]) / (2.0 * eps);
        }
    }
    let has_free = m.joint_type.iter().any(|t| matches!(t, JointType::Free | JointType::Ball));
    let mut o = json!({
        "name": name, "nq": nq, "nv": nv, "dt": dt,
        "q": s.q, "v": s.v, "q_next": out.q, "v_next": out.v,
        "step_us": step_us, "jac_us": jac_us, "jac_alloc_us": jac_alloc_us, "jac_dual_us": jac_dual_us,
        "step_allocs": step_allocs, "jac_allocs": jac_allocs,
        "fd_forward_max_abs": {"A": max_abs_diff(&jac.a, &fa_f), "B": max_abs_diff(&jac.b, &fb_f)},
        "fd_central_max_abs": {"A": max_abs_diff(&jac.a, &fa_c), "B": max_abs_diff(&jac.b, &fb_c)},
        "analytic_vs_dual_max_abs": {"A": max_abs_diff(&jac.a, &dual.a), "B": max_abs_diff(&jac.b, &dual.b)},
        "a_max_abs": jac.a.amax(), "b_max_abs": jac.b.amax(),
        "joint_names": m.joint_name,
    });
    if !has_free {
        o["A"] = rows(&jac.a);
        o["B"] = rows(&jac.b);
    }
    Ok(o)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let mut repeats = 51;
    let mut models = vec!["hopper".to_string(), "cheetah".to_string(), "humanoid".to_string()];
    let mut i = 1;
    while i < args.len() {
        match args[i].as_str() {
            "--repeats" if i + 1 < args.len() => {
                repeats = args[i + 1].parse().unwrap_or(repeats);
                i += 1;
            }
            "--models" if i + 1 < args.len() => {
                models = args[i + 1].split(',').map(str::to_string).collect();
                i += 1;
            }
            a => {
                eprintln!("featherstone_mujoco: unknown argument '{a}'");
                return ExitCode::FAILURE;
            }
        }
        i += 1;
    }
    let mut out = vec![];
    for name in &models {
        match run(name, repeats.max(1)) {
            Ok(v) => out.push(v),
            Err(e) => {
                eprintln!("featherstone_mujoco: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    println!("{}", json!({ "models": out }));
    ExitCode::SUCCESS
}
