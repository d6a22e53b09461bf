//! `sysid-contact` — issue 14 item 6: mass, μ and ε of a box thrown onto a table and pushed across it, from 2 s
//! of MuJoCo data (bench/sysid/gen_contact.py: soft contact made stiff, elliptic cone; noise σ_q = 1e-4,
//! σ_v = 1e-3; committed as tests/data/sysid/box_contact.npz), identified under `ncp` with the multiple-shooting
//! simulation residual of `torsion_opt::sysid::shooting` (windows of 50 ms from the recorded states, exact
//! forward-sensitivity Jacobians, bounded LM; m log, μ softplus, ε sigmoid, started 50 % off).
//! - `mass_rel_error`, `mu_rel_error`: |p̂ − p*| / p* against MuJoCo's model values.
//! - `restitution_rel_error`: against the bounce MuJoCo's data shows (`eps_measured`, mean of −v_z⁺/v_z⁻ over
//!   the first bounces); `restitution_formula` is ε(ζ) = exp(−πζ/√(1 − ζ²)) of its solref damping ratio.
//! - `wall_time_s`: the fit (LM with its Jacobians, standard errors), one thread, data in memory.
//! - `mujoco_*`: MuJoCo's sysid toolbox on the same data (bench/sysid/mujoco_contact_fit.py writes
//!   bench/sysid/data/mujoco_contact_fit{,_quick}.json: wall time, mass, μ, ζ → ε); null when missing.
//!
//! Quick (CI): the first 0.7 s (the bounces and 0.35 s of pushing) at 4 ms steps (every 2nd sample); full: 2 s at
//! the data's 2 ms.
use crate::plot::{color, figure, Mark, Panel, Series};
use crate::result::{Check, ExperimentError, ExperimentResult};
use crate::scene::{Recorder, SceneView};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use torsion_model::io::mjcf::load_mjcf_str;
use torsion_model::GenState;
use torsion_opt::{LmOptions, Param, ShootingOptions, ShootingProblem, Trajectory};
use torsion_solvers::ncp::{NcpOptions, NcpSolver};

const NPZ: &[u8] = include_bytes!("../../../tests/data/sysid/box_contact.npz");
const NAMES: [&str; 3] = ["body_mass[box]", "shape_friction[boxg]", "shape_restitution[boxg]"];
/// start values (truth: 0.8 kg, 0.3, ~0.37)
const START: [f64; 3] = [1.2, 0.15, 0.6];
const WINDOW: usize = 25;
const QUICK_S: f64 = 0.7;
/// the quick fit steps at 2 × the data's Δt (every 2nd sample; the push averaged over each pair: the same impulse)
const QUICK_STRIDE: usize = 2;

fn fail(e: impl std::fmt::Display) -> ExperimentError {
    ExperimentError::Failed(e.to_string())
}

struct Data {
    dt: f64,
    q: Vec<Vec<f64>>,
    v: Vec<Vec<f64>>,
    push: Vec<Vec<f64>>,
    scalars: std::collections::HashMap<&'static str, f64>,
}

fn load() -> Result<Data, ExperimentError> {
    let label = "tests/data/sysid/box_contact.npz";
    let mut a = npyz::npz::NpzArchive::new(std::io::Cursor::new(NPZ)).map_err(fail)?;
    let mut arr = |name: &str| -> Result<(Vec<u64>, Vec<f64>), ExperimentError> {
        let bad = |e: String| fail(format!("{label}: entry '{name}': {e}"));
        let f = a.by_name(name).map_err(|e| bad(e.to_string()))?.ok_or_else(|| bad("missing".into()))?;
        let shape = f.shape().to_vec();
        Ok((shape, f.into_vec::<f64>().map_err(|e| bad(e.to_string()))?))
    };
    let mut rows = |name: &str, cols: usize| -> Result<Vec<Vec<f64>>, ExperimentError> {
        let (shape, v) = arr(name)?;
        if shape.last().copied() != Some(cols as u64) {
            return Err(fail(format!("{label}: entry '{name}' has shape {shape:?}, expected (·, {cols})")));
        }
        Ok(v.chunks(cols).map(|r| r.to_vec()).collect())
    };
    let (q, v, push) = (rows("q", 7)?, rows("v", 6)?, rows("push", 2)?);
    let mut scalars = std::collections::HashMap::new();
    for k in ["dt", "mass", "mu", "zeta", "eps_formula", "eps_measured", "sigma_q", "sigma_v", "half"] {
        let (_, v) = arr(k)?;
        scalars.insert(k, *v.first().ok_or_else(|| fail(format!("{label}: entry '{k}' is empty")))?);
    }
    Ok(Data { dt: scalars["dt"], q, v, push, scalars })
}

fn data_dir() -> PathBuf {
    std::env::var_os("TORSION_SYSID_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/sysid/data"))
}

/// MuJoCo's toolbox result (bench/sysid/mujoco_contact_fit.py), if present.
fn mujoco_fit(quick: bool) -> Result<Option<Value>, ExperimentError> {
    let path = data_dir().join(if quick { "mujoco_contact_fit_quick.json" } else { "mujoco_contact_fit.json" });
    let Ok(text) = std::fs::read_to_string(&path) else { return Ok(None) };
    let v: Value = serde_json::from_str(&text).map_err(|e| fail(format!("{}: {e}", path.display())))?;
    for k in ["wall_time_s", "mass", "mu", "eps"] {
        if v.get(k).and_then(Value::as_f64).is_none() {
            return Err(fail(format!("{}: no number '{k}'", path.display())));
        }
    }
    Ok(Some(v))
}

/// The shooting problem of the data (quick: the first `QUICK_S` at `QUICK_STRIDE`), started at `START`; with the
/// data, the samples used and the stride.
fn problem(quick: bool) -> Result<(ShootingProblem<NcpSolver>, Data, usize, usize), ExperimentError> {
    let d = load()?;
    let half = d.scalars["half"];
    let xml = format!(
        r#"<mujoco model="box_table"><option gravity="0 0 -9.81"/><worldbody>
<geom name="table" type="plane" size="20 20 0.1" friction="0 0 0"/>
<body name="box" pos="0 0 {z}"><freejoint/><geom name="boxg" type="box" size="{half} {half} {half}" mass="{m}"/></body>
</worldbody></mujoco>"#,
        z = half + 0.05,
        m = START[0]
    );
    let mut model = load_mjcf_str(&xml, "sysid_contact.xml", None)?;
    model.shapes[0].restitution = 0.0;
    let mut o = NcpOptions::default();
    // no speculative contacts: Newton restitution at the impact (ncp_scene.rs)
    o.collision.margin = 0.0;
    let mut pb = ShootingProblem::new(NcpSolver::new(o), model.clone(), &NAMES).map_err(fail)?;
    let stride = if quick { QUICK_STRIDE } else { 1 };
    let n = if quick { (QUICK_S / d.dt).round() as usize } else { d.push.len() };
    let n = (n.min(d.push.len()) / stride) * stride;
    let nw = 6 * model.body_count();
    let wrench: Vec<Vec<f64>> = (0..n / stride)
        .map(|k| {
            let mut w = vec![0.0; nw];
            for f in &d.push[k * stride..(k + 1) * stride] {
                w[6] += f[0] / stride as f64;
                w[7] += f[1] / stride as f64;
            }
            w
        })
        .collect();
    let dt = d.dt * stride as f64;
    let keep = |rows: &[Vec<f64>]| rows[..=n].iter().step_by(stride).cloned().collect::<Vec<_>>();
    pb.recordings.push(Trajectory {
        name: "box_contact".into(),
        dt,
        q: keep(&d.q),
        v: keep(&d.v),
        u: vec![vec![0.0; model.nv()]; n / stride],
        wrench,
    });
    pb.options = ShootingOptions { window: WINDOW, sigma_q: d.scalars["sigma_q"], sigma_v: Some(d.scalars["sigma_v"]) };
    for (s, (v, map)) in
        pb.params.iter_mut().zip([(START[0], Param::Log), (START[1], Param::Softplus), (START[2], Param::Sigmoid)])
    {
        s.value = v;
        s.transform = map;
    }
    Ok((pb, d, n, stride))
}

pub fn run(quick: bool) -> Result<ExperimentResult, ExperimentError> {
    let (pb, d, n, stride) = problem(quick)?;
    let dt = d.dt * stride as f64;
    let lm = LmOptions { max_iter: 30, ..Default::default() };
    let fit = pb.fit(&lm, false).map_err(fail)?;
    let truth = [d.scalars["mass"], d.scalars["mu"], d.scalars["eps_measured"]];
    let rel: Vec<f64> = fit.p.iter().zip(&truth).map(|(a, b)| (a - b).abs() / b).collect();
    let mj = mujoco_fit(quick)?;
    let mj_num = |k: &str| mj.as_ref().and_then(|v| v.get(k)).and_then(Value::as_f64);
    let mj_rel = |k: &str, t: f64| mj_num(k).map(|v| (v - t).abs() / t);
    let metrics = json!({
        "mass_rel_error": rel[0],
        "mu_rel_error": rel[1],
        "restitution_rel_error": rel[2],
        "restitution_rel_error_vs_formula": (fit.p[2] - d.scalars["eps_formula"]).abs() / d.scalars["eps_formula"],
        "estimates": {"mass": fit.p[0], "mu": fit.p[1], "restitution": fit.p[2]},
        "std_errors": {"mass": fit.std_errors[0], "mu": fit.std_errors[1], "restitution": fit.std_errors[2]},
        "truth": {"mass": truth[0], "mu": truth[1], "restitution_measured": truth[2], "restitution_formula": d.scalars["eps_formula"]},
        "wall_time_s": fit.wall_time_s,
        "lm_iterations": fit.iterations,
        "q_rmse": fit.rmse_q,
        "mujoco_wall_time_s": mj_num("wall_time_s"),
        "mujoco_mass_rel_error": mj_rel("mass", truth[0]),
        "mujoco_mu_rel_error": mj_rel("mu", truth[1]),
        "mujoco_restitution_rel_error": mj_rel("eps", truth[2]),
        "speedup_vs_mujoco": mj_num("wall_time_s").map(|m| m / fit.wall_time_s),
    });
    let paper = json!({
        "claim": "issue 14 item 6: mass, μ, ε of a box from 2 s of data under ncp, vs MuJoCo's toolbox on the same data",
        "target": "each parameter within a few % of MuJoCo's values (the soft-vs-hard contact floor), faster than MuJoCo's toolbox; CI checks: each ≤ 20 % (regression bounds at the measured floor, docs/decisions.md)",
    });
    let settings = json!({
        "quick": quick,
        "steps": n / stride,
        "dt": dt,
        "seconds": n as f64 * d.dt,
        "data": "bench/sysid/gen_contact.py (MuJoCo: solref (5 ms, ζ), solimp (0.99, 0.999, 0.001), elliptic cone, condim 3, 0.5 ms step, every 4th state kept; noise σ_q = 1e-4, σ_v = 1e-3)",
        "mapping": "ε* = the bounce measured in MuJoCo's noise-free data (ε(ζ) formula beside it); μ: MuJoCo's pair friction = max of the geoms' = torsion's; the table has μ = ε = 0",
        "model": "ncp (default passes), collision margin 0, Δt = the data's 2 ms (quick: 4 ms, every 2nd sample, the push averaged per pair); box inertia from the start mass (not identified)",
        "residual": format!("multiple shooting, windows of {WINDOW} steps from the recorded (q, v); rows (q̂ − q)/σ_q, (v̂ − v)/σ_v"),
        "parameters": NAMES,
        "start": START,
        "optimiser": "bounded Levenberg–Marquardt on JᵀJ (levenberg_marquardt_normal), ≤ 30 steps, exact forward-sensitivity Jacobians",
        "mujoco": match &mj { Some(v) => v.clone(), None => json!(format!("missing: run `python3 bench/sysid/mujoco_contact_fit.py{}`", if quick { " --quick" } else { "" })) },
    });
    // regression bounds at the soft-vs-hard floor (docs/decisions.md; quick: m 0.063, μ 0.087, ε 0.107 when set),
    // not the issue's "within a few %", which the fit misses
    let checks = vec![
        Check::le("mass_rel_error", rel[0], 0.2).note("floor: MuJoCo's box rocks while sliding"),
        Check::le("mu_rel_error", rel[1], 0.2).note("floor: MuJoCo's box rocks while sliding"),
        Check::le("restitution_rel_error", rel[2], 0.2).note("floor: soft bounce vs Newton impact"),
    ];
    // plot: data vs the windows' prediction at the estimate (x, z), LM cost
    let pred = pb.predict(&fit.p).map_err(fail)?.remove(0);
    let rec_q = pb.recordings[0].q.clone();
    let t = |k: usize| k as f64 * dt;
    let coord = |c: usize, title: &str, unit: &str| -> Panel {
        let data = rec_q.iter().enumerate().map(|(k, q)| (t(k), q[c])).collect();
        let model = pred.iter().enumerate().map(|(k, s)| (t(k), s.q[c])).collect();
        Panel::new(title, "t (s)", unit)
            .series(Series::new("MuJoCo data", data, Mark::Points, color(0)))
            .series(Series::line("ncp windows at the estimate", model, color(1)))
    };
    // scene: MuJoCo's recorded poses and the ncp windows at the estimate (the states the residual compares)
    let (model_fit, mut runs) = (pb.model_at(&fit.p).map_err(fail)?, vec![]);
    let rec = &pb.recordings[0];
    for (name, states) in [
        ("MuJoCo data", rec.q.iter().zip(&rec.v).map(|(q, v)| GenState::new(q.clone(), v.clone())).collect()),
        ("ncp windows at the estimate", pred.clone()),
    ] {
        let mut r = Recorder::new(name, &model_fit)?;
        for (k, st) in states.iter().enumerate() {
            r.gen(t(k), st, &[])?;
        }
        runs.push(r.finish());
    }
    let scene = SceneView::new(model_fit, runs)?;
    let history: Vec<(f64, f64)> = fit.history.iter().enumerate().map(|(i, c)| (i as f64, *c)).collect();
    let panels = vec![
        coord(2, "box height", "z (m)"),
        coord(0, "box x", "x (m)"),
        Panel::new("LM cost", "iteration", "½‖r‖²").x_int().log_y().series(Series::line("cost", history, color(0))),
    ];
    Ok(ExperimentResult {
        name: "sysid-contact".into(),
        metrics,
        paper,
        settings,
        checks: vec![],
        scene: None,
        plot: Box::new(move |p| figure(p, &panels, 3)),
    }
    .with_checks(checks)
    .with_scene(scene))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The residual's Jacobian (exact forward sensitivities through every window) against central differences
    /// (h = 1e-3 in z), per parameter, at the start and at the truth of the quick problem. Session 12: at the start
    /// it was 5.8e-2 (mass) and 3.3e-1 (μ) off — steps kept at capped passes (the yawing box's corners taken in
    /// sliding, Gauss–Newton found no sliding solution), whose results jumped by ~1e-9 m as the parameters moved —
    /// then 1.8e-4 / 1.6e-4 / 6.4e-5 (h = 1e-6), at every h from 1e-3 to 1e-5: the box sliding on four corners,
    /// whose redundant impulses' derivative took the wrong member of its family (`ncp::fixed_point`, session 13).
    /// Now 1.7e-7 / 4.4e-7 / 7.5e-8 at the start, 1.7e-7 / 1.4e-7 / 8.4e-8 at the truth. Smaller h sees the
    /// impact window's solver-tolerance jumps (~1e-12 m: 3e-6 at h = 1e-4, 2e-4 at 1e-6).
    #[test]
    fn residual_jacobian_matches_central_differences() {
        let (pb, d, _, _) = problem(true).unwrap();
        let truth = [d.scalars["mass"], d.scalars["mu"], d.scalars["eps_measured"]];
        let z_truth: Vec<f64> = pb.params.iter().zip(truth).map(|(s, t)| s.transform.coord(t)).collect();
        for (label, z) in [("start", pb.z0().unwrap().0), ("truth", z_truth)] {
            let (_, jac) = pb.residual(&z, true).unwrap();
            let jac = jac.unwrap();
            for (c, name) in NAMES.iter().enumerate() {
                let h = 1e-3;
                let (mut zp, mut zm) = (z.clone(), z.clone());
                zp[c] += h;
                zm[c] -= h;
                let fd = (pb.residual(&zp, false).unwrap().0 - pb.residual(&zm, false).unwrap().0) / (2.0 * h);
                let err = (jac.column(c) - &fd).norm() / fd.norm();
                eprintln!("{label}: ∂r/∂z[{name}] vs central differences {err:.2e}");
                assert!(err < 1e-6, "{label}: ∂r/∂z[{name}] {err:e} off central differences");
            }
        }
    }

    #[test]
    fn quick_run_meets_its_targets() {
        let r = run(true).unwrap();
        eprintln!("{}", r.summary());
        for k in ["mass_rel_error", "mu_rel_error", "restitution_rel_error", "wall_time_s", "mujoco_wall_time_s"] {
            assert!(r.metrics.get(k).is_some(), "metric {k} missing");
        }
        assert!(r.scene.is_some());
        assert!(r.passed(), "{}", r.summary());
    }

    /// `cargo test -p torsion-experiments --release --lib sysid_contact_full -- --ignored --nocapture`; writes
    /// results/sysid-contact.* (no assertion on the checks: the full 2 s misses ε, docs/EXPERIMENTS.md)
    #[test]
    #[ignore]
    fn sysid_contact_full_run() {
        let r = run(false).unwrap();
        r.write(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../results")).unwrap();
        eprintln!("{}", r.summary());
    }
}
