//! `sysid-arm` — issue 14 item 6: the Panda of example-robot-data (7 hinges, hand and fingers welded into
//! panda_link7) identified from MuJoCo data (bench/sysid/gen.py: 10 s of Fourier excitation at 1 kHz under
//! position servos, joint damping and frictionloss, sensor noise on q, v, τ) with the regressor residual of
//! `torsion_opt::sysid::arm`: all 10 inertial parameters of the 7 moving links, viscous damping and dry friction
//! per joint (softplus, ≥ 0): 84 parameters, started 0.3 off in every log-Cholesky coordinate and at 0.1 for
//! damping / friction. The headline fit takes π as it is (linear least squares: LM converges in a few steps);
//! `metrics.log_cholesky` repeats it through the log-Cholesky map (every iterate physically consistent),
//! warm-started from the linear fit; `physically_consistent_bodies` counts the linear estimates that already are.
//! - `wall_time_s`: filter + regressor stack + LM + standard errors (one thread), data already in memory.
//! - `torque_prediction_rmse`: RMS of τ̂ − τ (N·m, per joint sample) on the held-out trajectory (seed 2), τ̂ from
//!   the identified p at the filtered held-out (q, v, v̇); beside it the same for the true parameters (the floor
//!   set by the noise, σ_τ = 0.05 N·m, and by frictionloss ≠ tanh).
//! - `param_rel_errors`: per base (identifiable) combination β = p_B + K p_D (QR with column pivoting of the
//!   stacked training regressor, `BaseParams`), |β̂ − β*| / |β*|.
//! - MuJoCo's toolbox (`mujoco.sysid`, bench/sysid/mujoco_fit.py) runs in Python on the same data and writes
//!   bench/sysid/data/mujoco_fit{,_quick}.json: its wall time, and its identified link inertials / damping /
//!   frictionloss, from which this file computes `mujoco_torque_prediction_rmse` with the same pipeline. Missing
//!   JSON: the two metrics are null and `settings.mujoco` says so.
use crate::plot::{color, figure, Mark, Panel, Series};
use crate::result::{Check, ExperimentError, ExperimentResult};
use serde_json::{json, Value};
use std::io::{Read, Seek};
use std::path::{Path, PathBuf};
use std::time::Instant;
use torsion_dynamics::log_cholesky::{params_from_theta, theta_from_params};
use torsion_dynamics::regressor::N_INERTIAL;
use torsion_model::io::{example_robot_data_dir, load_urdf, robots::PANDA_URDF, UrdfOptions};
use torsion_model::Model;
use torsion_opt::{ArmProblem, BaseParams, Inertial, LmOptions, Param, Recording, ScalarSpec};

/// The committed quick set (gen.py --quick-set): the training and held-out motions at 200 Hz (every 5th sample).
const QUICK_NPZ: &[u8] = include_bytes!("../../../tests/data/sysid/panda_quick.npz");
/// Offset of every log-Cholesky coordinate at the start (a deterministic ±pattern)
pub const START_OFFSET: f64 = 0.3;
/// The rank tolerance of the base parameters (`BaseParams::from_gram`)
pub const BASE_TOL: f64 = 1e-5;

fn fail(e: impl std::fmt::Display) -> ExperimentError {
    ExperimentError::Failed(e.to_string())
}

/// The Panda chain panda_link0 → panda_link8, hand and fingers welded into panda_link7.
pub fn panda() -> Result<Model, ExperimentError> {
    let dir = example_robot_data_dir().ok_or_else(|| {
        fail("example-robot-data is not installed (python3 -m pip install example-robot-data, or TORSION_ROBOTS_DIR)")
    })?;
    let opts = UrdfOptions { root: Some("panda_link0".into()), tip: Some("panda_link8".into()), drop_off_chain: false };
    Ok(load_urdf(&dir.join(PANDA_URDF), &opts)?)
}

/// The data of one gen.py archive.
pub struct ArmData {
    pub train: Recording,
    pub test: Recording,
    pub damping: Vec<f64>,
    pub frictionloss: Vec<f64>,
    /// MuJoCo's link inertials: per body m, COM (link frame), inertia about the COM (link frame, 3 × 3)
    pub link_inertials: Vec<[f64; 13]>,
}

fn read_npz<R: Read + Seek>(mut a: npyz::npz::NpzArchive<R>, label: &str) -> Result<ArmData, ExperimentError> {
    let mut arr = |name: &str| -> Result<(Vec<u64>, Vec<f64>), ExperimentError> {
        let bad = |e: String| fail(format!("{label}: entry '{name}': {e}"));
        let f = a.by_name(name).map_err(|e| bad(e.to_string()))?.ok_or_else(|| bad("missing".into()))?;
        let shape = f.shape().to_vec();
        let v = match f.dtype() {
            npyz::DType::Plain(t) if t.size_field() == 4 => {
                f.into_vec::<f32>().map_err(|e| bad(e.to_string()))?.into_iter().map(f64::from).collect()
            }
            _ => f.into_vec::<f64>().map_err(|e| bad(e.to_string()))?,
        };
        Ok((shape, v))
    };
    let dt = match arr("dt")?.1.as_slice() {
        [dt] if *dt > 0.0 => *dt,
        v => return Err(fail(format!("{label}: entry 'dt' is {v:?}, expected one positive number"))),
    };
    let mut rows = |name: &str, cols: usize| -> Result<Vec<Vec<f64>>, ExperimentError> {
        let (shape, v) = arr(name)?;
        if shape.last().copied() != Some(cols as u64) {
            return Err(fail(format!("{label}: entry '{name}' has shape {shape:?}, expected (·, {cols})")));
        }
        Ok(v.chunks(cols).map(|r| r.to_vec()).collect())
    };
    let rec = |rows: &mut dyn FnMut(&str, usize) -> Result<Vec<Vec<f64>>, ExperimentError>, part: &str| {
        Ok::<_, ExperimentError>(Recording {
            name: format!("{label}:{part}"),
            dt,
            q: rows(&format!("{part}_q"), 7)?,
            v: Some(rows(&format!("{part}_v"), 7)?),
            tau: rows(&format!("{part}_tau"), 7)?,
        })
    };
    let train = rec(&mut rows, "train")?;
    let test = rec(&mut rows, "test")?;
    let damping = rows("damping", 7)?.concat();
    let frictionloss = rows("frictionloss", 7)?.concat();
    let li = rows("link_inertials", 13)?;
    let link_inertials = li.iter().map(|r| std::array::from_fn(|i| r[i])).collect();
    Ok(ArmData { train, test, damping, frictionloss, link_inertials })
}

/// The committed quick set, or the full archive (`TORSION_SYSID_DATA` or bench/sysid/data).
pub fn load_data(quick: bool) -> Result<ArmData, ExperimentError> {
    if quick {
        let a = npyz::npz::NpzArchive::new(std::io::Cursor::new(QUICK_NPZ)).map_err(fail)?;
        return read_npz(a, "tests/data/sysid/panda_quick.npz");
    }
    let p = data_dir().join("panda.npz");
    let a = npyz::npz::NpzArchive::open(&p).map_err(|e| {
        fail(format!("{}: {e} (generate it with `python3 bench/sysid/gen.py`, or set TORSION_SYSID_DATA)", p.display()))
    })?;
    read_npz(a, &p.display().to_string())
}

fn data_dir() -> PathBuf {
    std::env::var_os("TORSION_SYSID_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/sysid/data"))
}

/// MuJoCo's link inertial row (m, c, I_c in the link frame) as torsion's π of body `b` (body frame: the link
/// frame moved to the model's `body_com`): c_t = c − body_com, h = m c_t, I_o = I_c + m (|c_t|² 𝟙 − c_t c_tᵀ).
pub fn pi_from_link(model: &Model, b: usize, row: &[f64; 13]) -> [f64; N_INERTIAL] {
    let m = row[0];
    let c = nalgebra::Vector3::new(row[1], row[2], row[3]) - model.body_com[b];
    let ic = nalgebra::Matrix3::from_row_slice(&row[4..13]);
    let io = ic + (nalgebra::Matrix3::identity() * c.norm_squared() - c * c.transpose()) * m;
    [m, m * c[0], m * c[1], m * c[2], io[(0, 0)], io[(0, 1)], io[(1, 1)], io[(0, 2)], io[(1, 2)], io[(2, 2)]]
}

/// MuJoCo's toolbox figures from bench/sysid/mujoco_fit.py, if present: wall time and its p (torsion's layout).
struct MujocoFit {
    wall_time_s: f64,
    p: Vec<f64>,
    meta: Value,
}

fn mujoco_fit(model: &Model, pb: &ArmProblem, quick: bool) -> Result<Option<MujocoFit>, ExperimentError> {
    let path = data_dir().join(if quick { "mujoco_fit_quick.json" } else { "mujoco_fit.json" });
    let Ok(text) = std::fs::read_to_string(&path) else { return Ok(None) };
    let v: Value = serde_json::from_str(&text).map_err(|e| fail(format!("{}: {e}", path.display())))?;
    let num =
        |k: &str| v.get(k).and_then(Value::as_f64).ok_or_else(|| fail(format!("{}: no number '{k}'", path.display())));
    let list = |k: &str| -> Result<Vec<f64>, ExperimentError> {
        v.get(k)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_f64).collect())
            .ok_or_else(|| fail(format!("{}: no list '{k}'", path.display())))
    };
    let li = v
        .get("link_inertials")
        .and_then(Value::as_array)
        .ok_or_else(|| fail(format!("{}: no 'link_inertials'", path.display())))?;
    let mut p = vec![];
    for (k, &b) in pb.bodies.iter().enumerate() {
        let row: Vec<f64> = li
            .get(k)
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default();
        let row: [f64; 13] =
            row.try_into().map_err(|_| fail(format!("{}: link_inertials[{k}] needs 13 numbers", path.display())))?;
        p.extend(pi_from_link(model, b, &row));
    }
    p.extend(list("damping")?);
    p.extend(list("frictionloss")?);
    if p.len() != pb.np() {
        return Err(fail(format!("{}: {} parameters, expected {}", path.display(), p.len(), pb.np())));
    }
    let mut meta = v.clone();
    if let Some(o) = meta.as_object_mut() {
        o.remove("link_inertials");
    }
    Ok(Some(MujocoFit { wall_time_s: num("wall_time_s")?, p, meta }))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        f64::NAN
    } else {
        v[v.len() / 2]
    }
}

pub fn run(quick: bool) -> Result<ExperimentResult, ExperimentError> {
    let model = panda()?;
    let data = load_data(quick)?;
    let mut pb = ArmProblem::new(&model).map_err(fail)?;
    if pb.nv() != 7 || pb.bodies.len() != 7 {
        return Err(fail(format!(
            "expected the 7-link Panda chain, got nv {} and {} bodies",
            pb.nv(),
            pb.bodies.len()
        )));
    }
    // the truth: the URDF's inertials (MuJoCo read the same file), the damping / frictionloss gen.py set
    let mut truth = pb.p0();
    let off = N_INERTIAL * 7;
    truth[off..off + 7].copy_from_slice(&data.damping);
    truth[off + 7..].copy_from_slice(&data.frictionloss);
    let mj_truth: Vec<f64> =
        pb.bodies.iter().zip(&data.link_inertials).flat_map(|(&b, row)| pi_from_link(&model, b, row)).collect();
    let frame_mismatch = mj_truth.iter().zip(&truth).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    // start: every log-Cholesky coordinate moved by ±START_OFFSET (a fixed pattern), damping / friction 0.1
    for k in 0..7 {
        let th = theta_from_params(&pb.pi0[k]).map_err(fail)?;
        let th0: [f64; N_INERTIAL] =
            std::array::from_fn(|i| th[i] + START_OFFSET * if (3 * k + i) % 2 == 0 { 1.0 } else { -1.0 });
        pb.pi0[k] = params_from_theta(&th0);
    }
    pb.inertial = vec![Inertial::Linear; 7];
    let scalar = ScalarSpec { lower: 0.0, ..ScalarSpec::free(0.1, Param::Softplus) };
    pb.damping = vec![scalar.clone(); 7];
    pb.coulomb = vec![scalar; 7];
    pb.recordings = vec![data.train.clone()];
    // the full data at 1 kHz: filtered at full rate, then every 5th sample kept (200 Hz; the signals are
    // band-limited to 10 Hz by then); the quick set already is at 200 Hz
    pb.options.stride = if quick { 1 } else { 5 };
    let lm = LmOptions { max_iter: 100, lambda0: 1e-3, ftol: 1e-12 };
    let p_start = pb.p0();

    let t0 = Instant::now();
    let fit = pb.fit(&lm, !quick).map_err(fail)?;
    let wall_time_s = t0.elapsed().as_secs_f64();

    let consistent =
        (0..7).filter(|&k| theta_from_params(&std::array::from_fn(|i| fit.p[N_INERTIAL * k + i])).is_ok()).count();
    // the physically consistent variant: the same problem through the log-Cholesky map (warm-started from the
    // linear fit, `ArmOptions::linear_warm_start`), on the Gram already built
    let mut pb_lc = pb.clone();
    pb_lc.inertial = vec![Inertial::LogCholesky; 7];
    let t1 = Instant::now();
    let fit_lc = pb_lc.fit_gram(fit.gram.clone(), &lm, !quick).map_err(fail)?;
    let wall_lc = t1.elapsed().as_secs_f64() + fit.time_stack_s;

    // held-out torque prediction
    let test = pb.prepare(&data.test).map_err(fail)?;
    let gram_test = pb.gram(std::slice::from_ref(&test), false).map_err(fail)?;
    let rmse = gram_test.rmse(&fit.p);
    let rmse_truth = gram_test.rmse(&truth);
    let rmse_start = gram_test.rmse(&p_start);
    // identifiable combinations
    let base = BaseParams::from_gram(&fit.gram.g, BASE_TOL);
    let (bh, bt) = (base.apply(&fit.p), base.apply(&truth));
    let rel: Vec<f64> = bh.iter().zip(&bt).map(|(a, b)| (a - b).abs() / b.abs().max(1e-300)).collect();
    let base_names: Vec<&str> = base.independent.iter().map(|&i| fit.names[i].as_str()).collect();
    let df_err: Vec<f64> = (off..off + 14).map(|i| (fit.p[i] - truth[i]).abs() / truth[i]).collect();

    let mj = mujoco_fit(&model, &pb, quick)?;
    let (mj_wall, mj_rmse, mj_rel) = match &mj {
        Some(m) => {
            let b = base.apply(&m.p);
            let r: Vec<f64> = b.iter().zip(&bt).map(|(a, t)| (a - t).abs() / t.abs().max(1e-300)).collect();
            (Some(m.wall_time_s), Some(gram_test.rmse(&m.p)), Some(r))
        }
        None => (None, None, None),
    };
    let metrics = json!({
        "wall_time_s": wall_time_s,
        "torque_prediction_rmse": rmse,
        "param_rel_errors": rel,
        "mujoco_wall_time_s": mj_wall,
        "mujoco_torque_prediction_rmse": mj_rmse,
        "param_rel_error_median": median(rel.clone()),
        "param_rel_error_max": rel.iter().copied().fold(0.0, f64::max),
        "mujoco_param_rel_error_median": mj_rel.as_ref().map(|r| median(r.clone())),
        "speedup_vs_mujoco": mj_wall.map(|m| m / wall_time_s),
        "torque_prediction_rmse_true_params": rmse_truth,
        "physically_consistent_bodies": consistent,
        "log_cholesky": {
            "wall_time_s": wall_lc,
            "torque_prediction_rmse": gram_test.rmse(&fit_lc.p),
            "train_rmse": fit_lc.rmse,
            "iterations": fit_lc.iterations,
            "param_rel_error_median": median(base.apply(&fit_lc.p).iter().zip(&bt).map(|(a, b)| (a - b).abs() / b.abs().max(1e-300)).collect()),
            "warm_started_bodies": fit_lc.warm_started_bodies,
        },
        "torque_prediction_rmse_start": rmse_start,
        "train_rmse": fit.rmse,
        "parameters": pb.np(),
        "base_parameters": base.independent.len(),
        "base_parameter_names": base_names,
        "damping": &fit.p[off..off + 7],
        "damping_std_errors": &fit.std_errors[off..off + 7],
        "frictionloss": &fit.p[off + 7..],
        "frictionloss_std_errors": &fit.std_errors[off + 7..],
        "damping_friction_rel_error_max": df_err.iter().copied().fold(0.0, f64::max),
        "iterations": fit.iterations,
        "time_stack_s": fit.time_stack_s,
        "time_solve_s": fit.time_solve_s,
        "cost_history": fit.history,
        "mujoco_vs_urdf_inertial_max_abs_diff": frame_mismatch,
    });
    let paper = json!({
        "wall_time_s": "< 1 s on one core (issue 14 goal)",
        "speedup_vs_mujoco": "≥ 10 (issue 14 goal)",
        "torque_prediction_rmse": "≤ MuJoCo's toolbox on the same data (issue 14 goal)",
    });
    let settings = json!({
        "data": if quick { "tests/data/sysid/panda_quick.npz: the 10 s training and held-out motions at 200 Hz (every 5th sample, float32)" } else { "bench/sysid/data/panda.npz: 10 s training (seed 1), 10 s held-out (seed 2), 1 kHz" },
        "generator": "bench/sysid/gen.py: MuJoCo 1 kHz Euler, stripped panda.urdf (fingers fixed, fusestatic), position servos on a 5-harmonic Fourier reference (0.1 Hz base), damping and frictionloss set, noise σ_q 1e-4 rad, σ_v 2e-3 rad/s, σ_τ 0.05 N·m",
        "model": "example-robot-data panda.urdf, chain panda_link0 → panda_link8, hand + fingers welded into panda_link7",
        "residual": format!("τ = Y(q, v, v̇) π + diag(v) d + diag(tanh(v / 0.02)) f; q, v zero-phase Butterworth 10 Hz, v̇ central differences, τ unfiltered; every {}th filtered sample", pb.options.stride),
        "parameters": "7 × 10 inertial (π itself: the linear least-squares parameters), 7 damping + 7 dry friction (softplus, ≥ 0); metrics.log_cholesky: the same 70 through the log-Cholesky map (physically consistent by construction), warm-started from the linear fit projected on the consistent set",
        "start": format!("π of the log-Cholesky coordinates of the truth ± {START_OFFSET} (alternating), damping and friction 0.1"),
        "optimiser": format!("Levenberg–Marquardt (normal equations, exact ∂p/∂z, bounds), ≤ {} iterations, ftol {:e}", lm.max_iter, lm.ftol),
        "param_rel_errors": format!("per base combination β = p_B + K p_D (QR with column pivoting of the stacked training regressor, rank tol {BASE_TOL:e}): |β̂ − β*| / |β*|"),
        "mujoco": match &mj { Some(m) => m.meta.clone(), None => json!(format!("missing: run `python3 bench/sysid/mujoco_fit.py{}` after gen.py", if quick { " --quick" } else { "" })) },
    });
    let mut checks = vec![
        Check::le(
            "MuJoCo's link inertials vs the URDF's in torsion's body frames (max abs diff)",
            frame_mismatch,
            1e-9,
        ),
        Check::le("torque_prediction_rmse / true-parameter rmse", rmse / rmse_truth, 1.2),
        Check::le("param_rel_error_median", median(rel.clone()), if quick { 1.0 } else { 0.5 }),
        Check::le("damping_friction_rel_error_max", df_err.iter().copied().fold(0.0, f64::max), 0.5),
        Check::ge("parameters (issue: ≥ 80)", pb.np() as f64, 80.0),
    ];
    if !quick {
        checks.push(Check::le("wall_time_s (issue goal)", wall_time_s, 1.0));
        if let (Some(w), Some(r)) = (mj_wall, mj_rmse) {
            checks.push(Check::ge("speedup_vs_mujoco (issue goal)", w / wall_time_s, 10.0));
            checks.push(Check::le(
                "torque_prediction_rmse / mujoco_torque_prediction_rmse (issue goal)",
                rmse / r,
                1.0,
            ));
        }
    }
    // plot: cost history, held-out torque of joints 2 and 6 (first 2000 kept samples), base-parameter errors
    let history: Vec<(f64, f64)> = fit.history.iter().enumerate().map(|(i, c)| (i as f64, *c)).collect();
    let pred = pb.predict(&test, &fit.p).map_err(fail)?;
    let n = pred.len().min(2000);
    let dt = data.test.dt * pb.options.stride as f64;
    let torque = |j: usize| -> Panel {
        Panel::new(format!("held-out torque, joint {}", j + 1), "t (s)", "τ (N·m)")
            .series(Series::line(
                format!("measured τ{}", j + 1),
                (0..n).map(|t| (t as f64 * dt, test.tau[t][j])).collect(),
                color(0),
            ))
            .series(Series::new(
                format!("predicted τ{}", j + 1),
                (0..n).map(|t| (t as f64 * dt, pred[t][j])).collect(),
                Mark::Dashed,
                color(1),
            ))
    };
    let rel_pts: Vec<(f64, f64)> = rel.iter().enumerate().map(|(i, r)| (i as f64, r.max(1e-12))).collect();
    let panels = vec![
        Panel::new("LM cost", "iteration", "½‖r‖² (N²·m²)").x_int().log_y().series(Series::line(
            "cost",
            history,
            color(0),
        )),
        torque(1),
        torque(5),
        Panel::new("base parameters", "combination", "|β̂ − β*| / |β*|").x_int().log_y().series(Series::new(
            "relative error",
            rel_pts,
            Mark::Points,
            color(2),
        )),
    ];
    Ok(ExperimentResult {
        name: "sysid-arm".into(),
        metrics,
        paper,
        settings,
        checks: vec![],
        // the fit replays recorded motion (no simulated scene to view)
        scene: None,
        plot: Box::new(move |p| figure(p, &panels, 2)),
    }
    .with_checks(checks))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_run_meets_its_targets() {
        if example_robot_data_dir().is_none() {
            eprintln!("skipped: example-robot-data is not installed");
            return;
        }
        let r = run(true).unwrap();
        eprintln!("{}", r.summary());
        for k in [
            "wall_time_s",
            "torque_prediction_rmse",
            "param_rel_errors",
            "mujoco_wall_time_s",
            "mujoco_torque_prediction_rmse",
        ] {
            assert!(r.metrics.get(k).is_some(), "metric {k} missing");
        }
        assert!(r.passed(), "{}", r.summary());
    }

    /// `cargo test -p torsion-experiments --release --lib sysid_arm_full -- --ignored --nocapture` after
    /// `python3 bench/sysid/gen.py` (and bench/sysid/mujoco_fit.py for the comparison); writes results/sysid-arm.*
    #[test]
    #[ignore]
    fn sysid_arm_full_run() {
        let r = run(false).unwrap();
        r.write(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../results")).unwrap();
        eprintln!("{}", r.summary());
        assert!(r.passed(), "{}", r.summary());
    }
}
