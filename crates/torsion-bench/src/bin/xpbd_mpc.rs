//! One MPC optimisation iteration of `pbd-mpc-torques` (spec 000 §4.4), the benchmark of BENCHMARKS.md
//! "XPBD MPC iteration": value and exact gradient of the Eq. 26 loss w.r.t. the horizon's torques, for the
//! 1-step loss (1, 0.02, 0) and the 3-step loss (1, 0.02, 2e-7), with `torsion_experiments::pbd_mpc::Mpc`
//! (XPBD step with a record, then `joint_angles_vjp` and `step_vjp` backwards; buffers allocated once).
//! Problem: Baxter left arm at rest at the experiment's centre pose, torques and targets = the first 3 samples
//! of the experiment's Featherstone reference. `--export FILE` writes the problem (state, torques, targets,
//! weights) as JSON so that bench/xpbd_mpc.py can time the PyTorch and JAX references on the same numbers.
//! Prints one JSON object (median / min of `--repeats` after `--warmup`, single thread).
//! Usage: cargo run --release -p torsion-bench --bin xpbd_mpc -- [--repeats N] [--warmup N] [--export FILE]
use std::hint::black_box;
use std::process::ExitCode;
use std::time::Instant;
use torsion_bench::median;
use torsion_experiments::pbd_mpc::{
    nominal_model, reference, step_target, Mpc, StepTarget, Weights, BOTH, MPC3, Q_CENTRE,
};

fn run() -> Result<serde_json::Value, String> {
    let (mut repeats, mut warmup, mut export) = (201usize, 20usize, None::<String>);
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut val = || it.next().ok_or_else(|| format!("{k} needs a value"));
        match k.as_str() {
            "--repeats" => repeats = val()?.parse().map_err(|e| format!("--repeats: {e}"))?,
            "--warmup" => warmup = val()?.parse().map_err(|e| format!("--warmup: {e}"))?,
            "--export" => export = Some(val()?),
            _ => {
                return Err(format!("unknown argument {k}; usage: xpbd_mpc [--repeats N] [--warmup N] [--export FILE]"))
            }
        }
    }
    if repeats == 0 {
        return Err("--repeats must be ≥ 1".into());
    }
    let e = |e: torsion_experiments::ExperimentError| e.to_string();
    let m = nominal_model().map_err(e)?;
    let r = reference(&m, false, 3).map_err(e)?;
    let targets: Vec<StepTarget> =
        (1..=3).map(|t| step_target(&m, &r.q[t], &r.qd[t])).collect::<Result<_, _>>().map_err(e)?;
    let s0 = m.state_at(&Q_CENTRE).map_err(|x| x.to_string())?;
    let u: Vec<f64> = r.u.concat();
    let u_prev = r.u[0].clone();
    let mut out = serde_json::Map::new();
    for (name, h, w) in [("one_step", 1usize, BOTH), ("three_step", 3, MPC3)] {
        let mut mpc = Mpc::new(&m, h).map_err(e)?;
        let mut g = vec![0.0; 7 * h];
        let time = |mpc: &mut Mpc, g: &mut [f64], w: &Weights| -> Result<f64, String> {
            let t0 = Instant::now();
            black_box(mpc.loss(&m, black_box(&s0), &u[..7 * h], &u_prev, &targets[..h], w, Some(g)).map_err(e)?);
            Ok(t0.elapsed().as_secs_f64())
        };
        for _ in 0..warmup {
            time(&mut mpc, &mut g, &w)?;
        }
        let ts: Vec<f64> = (0..repeats).map(|_| time(&mut mpc, &mut g, &w)).collect::<Result<_, _>>()?;
        let loss = mpc.loss(&m, &s0, &u[..7 * h], &u_prev, &targets[..h], &w, Some(&mut g)).map_err(e)?;
        out.insert(
            name.into(),
            serde_json::json!({
                "horizon": h, "weights": [w.angle, w.omega, w.smooth],
                "us_median": median(&ts) * 1e6, "us_min": ts.iter().copied().fold(f64::INFINITY, f64::min) * 1e6,
                "loss": loss, "grad": g,
            }),
        );
    }
    if let Some(path) = export {
        let v3 = |v: &torsion_math::Vec3| [v.x, v.y, v.z];
        let problem = serde_json::json!({
            "x": s0.x.iter().map(v3).collect::<Vec<_>>(),
            "q": s0.q.iter().map(|q| [q.w, q.v.x, q.v.y, q.v.z]).collect::<Vec<_>>(),
            "v": s0.v.iter().map(v3).collect::<Vec<_>>(),
            "w": s0.w.iter().map(v3).collect::<Vec<_>>(),
            "u": r.u, "u_prev": u_prev,
            "target_angles": targets.iter().map(|t| t.angles.clone()).collect::<Vec<_>>(),
            "target_omega": targets.iter().map(|t| t.omega.iter().map(v3).collect::<Vec<_>>()).collect::<Vec<_>>(),
            "weights": {"one_step": [BOTH.angle, BOTH.omega, BOTH.smooth], "three_step": [MPC3.angle, MPC3.omega, MPC3.smooth]},
        });
        std::fs::write(&path, problem.to_string()).map_err(|x| format!("{path}: {x}"))?;
    }
    out.insert(
        "settings".into(),
        serde_json::json!({"repeats": repeats, "warmup": warmup, "threads": 1, "iterations": 30, "dt": 0.01,
            "limits": "on (none active at this pose)", "statistic": "median (min also given)"}),
    );
    Ok(serde_json::Value::Object(out))
}

fn main() -> ExitCode {
    torsion_bench::finish("xpbd_mpc", run())
}
