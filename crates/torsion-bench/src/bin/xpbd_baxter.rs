//! XPBD on the Baxter left arm (spec 000 §4.7), the benchmark of BENCHMARKS.md "XPBD, Baxter left arm":
//! 7 links, 30 Gauss–Seidel iterations, dt 0.01, no limits, the seeded torques `tests/data/U0.npy` (100 × 7).
//! Times (single thread, median of `--repeats` after `--warmup` runs):
//!   (a) the forward step (`Solver::step`, one reused workspace, no record), µs per step over the 100-step rollout;
//!   (b) forward + backward of the 100-step rollout of L = Σ φ_T² w.r.t. all 700 torques (`torsion_diff::rollout`,
//!       `rollout_vjp` and `XpbdSolver::joint_angles_vjp`, the hand-written adjoint).
//! Prints one JSON object: the figures, the loss, the gradient norm and the agreement with the PyTorch reference
//! `tests/data/pbd_torch_ref.npz` (final angles, gradient).
//! Usage: cargo run --release -p torsion-bench --bin xpbd_baxter -- [--repeats N] [--warmup N] [--data DIR]
use std::hint::black_box;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;
use torsion_bench::median;
use torsion_diff::{rel_err, rollout, rollout_vjp};
use torsion_math::alloc_count::{thread_allocations, CountingAlloc};
use torsion_model::io::robots::baxter_left_arm_spec000;
use torsion_model::{Control, MaximalState, Model, ParamSelection};
use torsion_solvers::{DiffSolver, Solver, XpbdOptions, XpbdSolver};

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

const DT: f64 = 0.01;

struct Args {
    repeats: usize,
    warmup: usize,
    data: PathBuf,
    /// profiling: time only this part ("forward" or "backward") and print its median
    only: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        repeats: 31,
        warmup: 5,
        data: PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data")),
        only: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut val = || it.next().ok_or_else(|| format!("{k} needs a value"));
        match k.as_str() {
            "--repeats" => a.repeats = val()?.parse().map_err(|e| format!("--repeats: {e}"))?,
            "--warmup" => a.warmup = val()?.parse().map_err(|e| format!("--warmup: {e}"))?,
            "--data" => a.data = PathBuf::from(val()?),
            "--only" => a.only = Some(val()?),
            "-h" | "--help" => {
                return Err(
                    "usage: xpbd_baxter [--repeats N] [--warmup N] [--data DIR with U0.npy, pbd_torch_ref.npz] \
                     [--only forward|backward (profiling)]"
                        .into(),
                )
            }
            _ => return Err(format!("unknown argument {k}")),
        }
    }
    if a.repeats == 0 {
        return Err("--repeats must be ≥ 1".into());
    }
    Ok(a)
}

fn read_npy(path: &PathBuf) -> Result<(Vec<u64>, Vec<f64>), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let npy = npyz::NpyFile::new(&bytes[..]).map_err(|e| format!("{}: {e}", path.display()))?;
    let shape = npy.shape().to_vec();
    let v = npy.into_vec::<f64>().map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((shape, v))
}

fn read_npz(path: &PathBuf, name: &str) -> Result<Vec<f64>, String> {
    let mut a = npyz::npz::NpzArchive::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let v = a
        .by_name(name)
        .map_err(|e| format!("{}[{name}]: {e}", path.display()))?
        .ok_or_else(|| format!("{}: no entry '{name}'", path.display()))?
        .into_vec::<f64>()
        .map_err(|e| format!("{}[{name}]: {e}", path.display()));
    v
}

fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

/// The forward rollout as a simulator runs it: one workspace, two state buffers swapped, no record.
fn forward(solver: &XpbdSolver, m: &Model, s0: &MaximalState, us: &[Control]) -> Result<MaximalState, String> {
    let mut ws = solver.workspace(m).map_err(|e| e.to_string())?;
    let (mut a, mut b) = (s0.clone(), s0.clone());
    for u in us {
        solver.step(m, &a, u, DT, &mut b, &mut ws, None).map_err(|e| e.to_string())?;
        std::mem::swap(&mut a, &mut b);
    }
    Ok(a)
}

/// L = Σ φ_T², and ∂L/∂u (100 × 7) by the adjoint rollout (as tests/xpbd_baxter.rs does).
fn loss_and_grad(
    solver: &XpbdSolver,
    m: &Model,
    s0: &MaximalState,
    us: &[Control],
) -> Result<(f64, Vec<f64>, Vec<f64>), String> {
    let states = rollout(solver, m, s0, us, DT).map_err(|e| e.to_string())?;
    let t_end = us.len();
    let phi = solver.joint_angles(m, &states[t_end]);
    let loss: f64 = phi.iter().map(|p| p * p).sum();
    let g = rollout_vjp(solver, m, &states, us, DT, &ParamSelection::none(), |t, s, g: &mut MaximalState| {
        if t == t_end {
            let phi = solver.joint_angles(m, s);
            let gphi: Vec<f64> = phi.iter().map(|p| 2.0 * p).collect();
            solver.joint_angles_vjp(m, s, &gphi, g);
        }
    })
    .map_err(|e| e.to_string())?;
    Ok((loss, phi, g.g_u.concat()))
}

/// Heap allocations per call of `step` (no record) and of `step` with a record + `step_vjp`, after the
/// workspace, the record and the buffers exist.
fn allocations(solver: &XpbdSolver, m: &Model, s0: &MaximalState, us: &[Control]) -> Result<(f64, f64), String> {
    let e = |e: torsion_solvers::SolverError| e.to_string();
    let mut ws = solver.workspace(m).map_err(e)?;
    let mut rec = solver.record(m);
    let (mut a, mut b) = (s0.clone(), s0.clone());
    let (g_out, mut g_s) = (solver.zero_grad(m), solver.zero_grad(m));
    let mut g_u = vec![0.0; m.joint_count()];
    let sel = ParamSelection::all(m);
    let mut g_th = vec![0.0; sel.len()];
    // one call of each first, so that lazily grown buffers are in place
    solver.step(m, &a, &us[0], DT, &mut b, &mut ws, Some(&mut rec)).map_err(e)?;
    solver.step_vjp(m, &rec, &g_out, &mut g_s, &mut g_u, &sel, &mut g_th, &mut ws).map_err(e)?;
    let n0 = thread_allocations();
    for u in us {
        solver.step(m, &a, u, DT, &mut b, &mut ws, None).map_err(e)?;
        std::mem::swap(&mut a, &mut b);
    }
    let n1 = thread_allocations();
    for u in us {
        solver.step(m, &a, u, DT, &mut b, &mut ws, Some(&mut rec)).map_err(e)?;
        solver.step_vjp(m, &rec, &g_out, &mut g_s, &mut g_u, &sel, &mut g_th, &mut ws).map_err(e)?;
        std::mem::swap(&mut a, &mut b);
    }
    let n2 = thread_allocations();
    let t = us.len() as f64;
    Ok(((n1 - n0) as f64 / t, (n2 - n1) as f64 / t))
}

fn run() -> Result<serde_json::Value, String> {
    let args = parse_args()?;
    let mut m = baxter_left_arm_spec000().map_err(|e| format!("Baxter left arm: {e}"))?;
    m.gravity = torsion_math::Vec3::new(0.0, 0.0, -9.8);
    let solver = XpbdSolver::new(XpbdOptions { limits: false, ..Default::default() });
    let (shape, u) = read_npy(&args.data.join("U0.npy"))?;
    let nj = m.joint_count();
    if shape.len() != 2 || shape[1] as usize != nj {
        return Err(format!("U0.npy has shape {shape:?}, expected (T, {nj})"));
    }
    let us: Vec<Control> = u.chunks(nj).map(Control::from_torques).collect();
    let steps = us.len();
    let s0 = m.state_at(&vec![0.0; nj]).map_err(|e| e.to_string())?;

    if let Some(part) = &args.only {
        // profiling aid: one part only, minimal output
        let mut t = Vec::with_capacity(args.repeats);
        for _ in 0..args.repeats + args.warmup {
            let t0 = Instant::now();
            match part.as_str() {
                "forward" => drop(black_box(forward(&solver, &m, &s0, &us)?)),
                "backward" => drop(black_box(loss_and_grad(&solver, &m, &s0, &us)?)),
                _ => return Err(format!("--only {part}: expected forward or backward")),
            }
            t.push(t0.elapsed().as_secs_f64());
        }
        return Ok(serde_json::json!({ "only": part, "median_s": median(&t[args.warmup..]) }));
    }

    // (a) forward step
    for _ in 0..args.warmup {
        black_box(forward(&solver, &m, &s0, &us)?);
    }
    let mut fwd = Vec::with_capacity(args.repeats);
    for _ in 0..args.repeats {
        let t0 = Instant::now();
        let s = forward(&solver, black_box(&m), black_box(&s0), black_box(&us))?;
        fwd.push(t0.elapsed().as_secs_f64() / steps as f64);
        black_box(s);
    }

    // (b) forward + backward of the rollout (split: forward keeping the states, then the adjoint)
    for _ in 0..args.warmup {
        black_box(loss_and_grad(&solver, &m, &s0, &us)?);
    }
    let mut total = Vec::with_capacity(args.repeats);
    let mut fwd_states = Vec::with_capacity(args.repeats);
    let mut result = None;
    for _ in 0..args.repeats {
        let t0 = Instant::now();
        let r = loss_and_grad(&solver, black_box(&m), black_box(&s0), black_box(&us))?;
        total.push(t0.elapsed().as_secs_f64());
        result = Some(black_box(r));
        let t0 = Instant::now();
        black_box(rollout(&solver, &m, &s0, &us, DT).map_err(|e| e.to_string())?);
        fwd_states.push(t0.elapsed().as_secs_f64());
    }
    let (loss, phi, grad) = result.expect("repeats ≥ 1");
    let grad_norm = grad.iter().map(|g| g * g).sum::<f64>().sqrt();

    // agreement with the PyTorch reference (same algorithm, same torques)
    let ref_path = args.data.join("pbd_torch_ref.npz");
    let r_angles = read_npz(&ref_path, "angles")?;
    let r_grad = read_npz(&ref_path, "grad")?;
    let r_loss = read_npz(&ref_path, "loss")?;
    let max_angle_diff = phi.iter().zip(&r_angles).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);

    let (alloc_step, alloc_step_vjp) = allocations(&solver, &m, &s0, &us)?;

    let fwd_us = median(&fwd) * 1e6;
    let tot_ms = median(&total) * 1e3;
    let fs_ms = median(&fwd_states) * 1e3;
    Ok(serde_json::json!({
        "benchmark": "xpbd_baxter",
        "model": "Baxter left arm (example-robot-data URDF, spec 000 §4.7), 7 revolute joints, 8 bodies (base fixed)",
        "settings": {
            "iterations": solver.options.iterations, "dt": DT, "steps": steps, "limits": false,
            "gravity": [0.0, 0.0, -9.8], "repeats": args.repeats, "warmup": args.warmup,
            "statistic": "median (min also given)", "threads": 1,
            "torques": args.data.join("U0.npy").display().to_string(),
        },
        "forward": {
            "us_per_step_median": fwd_us,
            "us_per_step_min": min(&fwd) * 1e6,
            "runs_us_per_step": fwd.iter().map(|t| t * 1e6).collect::<Vec<_>>(),
            "projections_per_step": 2 * nj * solver.options.iterations,
            "ns_per_projection": fwd_us * 1e3 / (2 * nj * solver.options.iterations) as f64,
            "heap_allocations_per_step": alloc_step,
        },
        "rollout_fwd_bwd": {
            "ms_median": tot_ms,
            "ms_min": min(&total) * 1e3,
            "runs_ms": total.iter().map(|t| t * 1e3).collect::<Vec<_>>(),
            "forward_keeping_states_ms_median": fs_ms,
            "backward_ms_median_estimate": tot_ms - fs_ms,
            "ratio_to_forward": tot_ms * 1e3 / (fwd_us * steps as f64),
            "wrt": format!("{} torques", grad.len()),
            "loss": loss,
            "grad_norm": grad_norm,
            "grad_finite": grad.iter().all(|g| g.is_finite()),
            "heap_allocations_per_step_with_record_and_step_vjp": alloc_step_vjp,
        },
        "vs_pytorch_reference": {
            "final_angles_max_abs_diff_rad": max_angle_diff,
            "loss_rel_diff": (loss - r_loss[0]).abs() / r_loss[0].abs(),
            "grad_rel_err": rel_err(&grad, &r_grad),
            "reference": ref_path.display().to_string(),
        },
    }))
}

fn main() -> ExitCode {
    torsion_bench::finish("xpbd_baxter", run())
}
