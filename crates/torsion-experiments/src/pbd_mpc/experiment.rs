//! The `pbd-mpc-torques` run: the estimation schemes (1-step Adam / exact, 3-step MPC), the ω-only probes, the
//! metrics JSON and the figure.
use super::*;
use crate::plot::{color, figure, lighten, Mark, Panel, Reference as PlotRef, Series, PAPER};
use crate::result::{Check, ExperimentError, ExperimentResult};
use crate::scene::{Recorder, SceneView};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use serde_json::{json, Value};
use torsion_dynamics::{gravity, DynData, DynModel};
use torsion_model::{MaximalState, Model};
use torsion_opt::Adam;
use torsion_solvers::XpbdSolver;

/// Adam settings of §4.4: (iterations, lr) for zero init, other inits, and the 3-step MPC.
pub const ITERS_1: usize = 80;
pub const LR_ZERO: f64 = 1.0;
pub const LR_WARM: f64 = 0.2;
pub const ITERS_3: usize = 120;
pub const LR_3: f64 = 0.1;

/// Initialisation of u^t (§4.4).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Init {
    Zero,
    Previous,
    Gravity,
}

impl Init {
    pub fn name(&self) -> &'static str {
        match self {
            Init::Zero => "zero",
            Init::Previous => "previous",
            Init::Gravity => "gravity",
        }
    }
}

/// One estimation run: 1-step MPC (`horizon` 1, an `Init`, a loss) or the 3-step receding-horizon MPC.
#[derive(Clone, Copy, Debug)]
pub struct Scheme {
    pub init: Init,
    pub loss: (&'static str, Weights),
    pub horizon: usize,
    /// false: the paper's Adam (fixed lr, 80 / 120 iterations); true (1-step only): the exact minimiser of the
    /// one-step loss by Gauss–Newton ([`Mpc::solve_exact`]) started from the initialisation
    pub exact: bool,
}

/// Steps at which the 1-step ω-only Adam runs are compared with the exact minimiser from the same state.
pub const PROBE_STEPS: [usize; 5] = [1, 5, 20, 50, 99];
/// Gauss–Newton iteration cap of the exact one-step minimiser (it converges in 3–10 from any initialisation).
pub const GN_ITERS: usize = 50;

/// Estimated torques (T × 7) and the simulated joint angles (T + 1 × 7) of one scheme.
pub struct Estimate {
    pub u: Vec<Vec<f64>>,
    pub angles: Vec<Vec<f64>>,
    /// Err text if the simulation failed (e.g. a non-finite state) at some step
    pub failure: Option<String>,
    /// 1-step Adam runs at [`PROBE_STEPS`]: the Adam result against the exact minimiser from the same state
    pub probes: Vec<Value>,
}

/// Compare the optimiser's one-step result `u` with the exact minimiser from the same state `s`: losses, the
/// difference per joint, the minimiser reached from five starts (uniqueness), and the Gauss–Newton Hessian 2JᵀJ.
#[allow(clippy::too_many_arguments)]
fn probe(
    mpc: &mut Mpc,
    model: &Model,
    s: &MaximalState,
    t: usize,
    u: &[f64],
    u0: &[f64],
    u_prev: &[f64],
    g: &[f64],
    truth: &[f64],
    target: &StepTarget,
    w: &Weights,
) -> Result<Value, ExperimentError> {
    let tg = std::slice::from_ref(target);
    let l_init = mpc.loss(model, s, u0, u_prev, tg, w, None)?;
    let l_opt = mpc.loss(model, s, u, u_prev, tg, w, None)?;
    let (ux, lx, it) = mpc.solve_exact(model, s, u, u_prev, target, w, GN_ITERS)?;
    let mut spread = 0.0f64;
    let far: Vec<f64> = truth.iter().map(|v| v + 30.0).collect();
    let flip: Vec<f64> = truth.iter().map(|v| -2.0 * v).collect();
    for start in [&vec![0.0; u.len()][..], g, u_prev, &far, &flip] {
        let (u2, _, _) = mpc.solve_exact(model, s, start, u_prev, target, w, GN_ITERS)?;
        spread = spread.max(u2.iter().zip(&ux).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max));
    }
    let (_, jac) = mpc.residual_jacobian(model, s, &ux, u_prev, target, w)?;
    let svd = jac.svd(false, true);
    let sv = &svd.singular_values;
    let (smin, smax) = (sv.min(), sv.max());
    // the flattest direction of the loss (unit torque combination, all 7 joints)
    let flat: Vec<f64> = match &svd.v_t {
        Some(vt) => {
            let row = vt.row(sv.argmin().0);
            let sign = if row[1] < 0.0 { -1.0 } else { 1.0 };
            row.iter().map(|v| sign * v).collect()
        }
        None => vec![],
    };
    let pick = |v: &[f64]| REPORTED.iter().map(|&(j, _)| v[j]).collect::<Vec<_>>();
    let diff: Vec<f64> = u.iter().zip(&ux).map(|(a, b)| a - b).collect();
    let gap: Vec<f64> = ux.iter().zip(truth).map(|(a, b)| a - b).collect();
    Ok(json!({
        "step": t, "loss_init": l_init, "loss_optimiser": l_opt, "loss_exact": lx, "gauss_newton_iterations": it,
        "optimiser_minus_exact_s1_e0_e1": pick(&diff), "exact_minus_truth_s1_e0_e1": pick(&gap),
        "exact_from_5_starts_max_abs_diff": spread,
        "hessian_gn_eig_min": 2.0 * smin * smin, "hessian_gn_eig_max": 2.0 * smax * smax,
        "hessian_gn_flattest_direction": flat,
    }))
}

/// Run one scheme over the reference (open loop: the simulated state advances with the optimised torques).
pub fn estimate(
    model: &Model,
    targets: &[StepTarget],
    q0: &[f64],
    sc: &Scheme,
    truths: &[Vec<f64>],
    bar: &ProgressBar,
) -> Result<Estimate, ExperimentError> {
    let nj = model.joint_count();
    let steps = targets.len() - 1;
    let mut mpc = Mpc::new(model, sc.horizon)?;
    let dm = DynModel::from_model(model).map_err(|e| ExperimentError::Failed(e.to_string()))?;
    let mut dd = DynData::new(&dm);
    let mut g_of = |s: &MaximalState, solver: &XpbdSolver| -> Result<Vec<f64>, ExperimentError> {
        gravity(&dm, &solver.joint_angles(model, s), &mut dd).map_err(|e| ExperimentError::Failed(e.to_string()))
    };
    // the real robot starts at rest: the PBD state at rest at the measured initial angles
    let mut s = model.state_at(q0)?;
    let mut next = s.clone();
    let mut out =
        Estimate { u: vec![], angles: vec![mpc.solver.joint_angles(model, &s)], failure: None, probes: vec![] };
    let (iters, lr) = match (sc.horizon, sc.init) {
        (1, Init::Zero) => (ITERS_1, LR_ZERO),
        (1, _) => (ITERS_1, LR_WARM),
        _ => (ITERS_3, LR_3),
    };
    let mut u_prev = vec![0.0; nj];
    let mut plan: Vec<f64> = vec![];
    let mut grad = vec![0.0; sc.horizon * nj];
    for t in 0..steps {
        let h = sc.horizon.min(steps - t);
        let g = g_of(&s, &mpc.solver)?;
        let mut u: Vec<f64> = if sc.horizon == 1 {
            match sc.init {
                Init::Zero => vec![0.0; nj],
                Init::Previous => u_prev.clone(),
                Init::Gravity => g.clone(),
            }
        } else {
            // warm-start shift: the previous plan's later torques, gravity compensation for the new last step
            (0..h)
                .flat_map(
                    |k| if (k + 1) * nj < plan.len() { plan[(k + 1) * nj..(k + 2) * nj].to_vec() } else { g.clone() },
                )
                .collect()
        };
        let u0 = u.clone();
        let mut adam = Adam::new(u.len(), lr);
        let tg = &targets[t + 1..t + 1 + h];
        // keep the lowest-loss iterate (Adam's last iterate jitters by ~lr; docs/decisions.md)
        let mut res = Ok(0.0);
        let mut best = (f64::INFINITY, u.clone());
        if sc.exact {
            res = mpc.solve_exact(model, &s, &u, &u_prev, &tg[0], &sc.loss.1, GN_ITERS).map(|(ux, l, _)| {
                best = (l, ux);
                l
            });
        } else {
            for it in 0..=iters {
                let g = if it < iters { Some(&mut grad[..h * nj]) } else { None };
                res = mpc.loss(model, &s, &u, &u_prev, tg, &sc.loss.1, g);
                match res {
                    Ok(l) if l < best.0 => best = (l, u.clone()),
                    Err(_) => break,
                    _ => {}
                }
                if it < iters {
                    adam.step(&mut u, &grad[..h * nj]);
                }
            }
        }
        let u = best.1;
        if !sc.exact && h == 1 && sc.loss.0 == "omega" && PROBE_STEPS.contains(&t) && res.is_ok() {
            let truth = truths.get(t).map(|v| v.as_slice()).unwrap_or(&u);
            match probe(&mut mpc, model, &s, t, &u, &u0, &u_prev, &g, truth, &tg[0], &sc.loss.1) {
                Ok(p) => out.probes.push(p),
                Err(e) => out.probes.push(json!({"step": t, "error": e.to_string()})),
            }
        }
        let applied = u[..nj].to_vec();
        if let Err(e) = res.and_then(|_| mpc.advance(model, &s, &applied, &mut next)) {
            out.failure = Some(format!("step {t}: {e}"));
            bar.inc((steps - t) as u64);
            return Ok(out);
        }
        std::mem::swap(&mut s, &mut next);
        out.angles.push(mpc.solver.joint_angles(model, &s));
        out.u.push(applied.clone());
        u_prev = applied;
        plan = u;
        bar.inc(1);
    }
    Ok(out)
}

fn rmse(est: &[Vec<f64>], truth: &[Vec<f64>], j: usize) -> f64 {
    if est.len() != truth.len() || est.is_empty() {
        return f64::NAN;
    }
    (est.iter().zip(truth).map(|(a, b)| (a[j] - b[j]).powi(2)).sum::<f64>() / est.len() as f64).sqrt()
}

/// The ten schemes: 3 initialisations × 3 losses (1 step) and the 3-step MPC.
pub fn schemes() -> Vec<Scheme> {
    let mut v = vec![];
    for init in [Init::Zero, Init::Previous, Init::Gravity] {
        for loss in [("angle", ANGLE), ("omega", OMEGA), ("angle+omega", BOTH)] {
            v.push(Scheme { init, loss, horizon: 1, exact: false });
        }
    }
    v.push(Scheme { init: Init::Gravity, loss: ("mpc", MPC3), horizon: 3, exact: false });
    v
}

/// The converged variant of the ω-only column: the exact one-step minimiser started from each initialisation.
pub fn converged_schemes() -> Vec<Scheme> {
    [Init::Zero, Init::Previous, Init::Gravity]
        .into_iter()
        .map(|init| Scheme { init, loss: ("omega", OMEGA), horizon: 1, exact: true })
        .collect()
}

fn scheme_key(s: &Scheme) -> (String, String) {
    if s.horizon > 1 {
        ("mpc".into(), "angle+omega".into())
    } else {
        (s.init.name().into(), s.loss.0.into())
    }
}

struct Variant {
    reference: Reference,
    estimates: Vec<Estimate>,
}

fn variant_json(v: &Variant, sch: &[Scheme]) -> Value {
    let mut rm = serde_json::Map::new();
    let mut all = serde_json::Map::new();
    let mut best = serde_json::Map::new();
    let mut failures = serde_json::Map::new();
    for &(j, name) in &REPORTED {
        let mut table = serde_json::Map::new();
        let mut b = (f64::INFINITY, String::new());
        for (s, e) in sch.iter().zip(&v.estimates) {
            let (row, col) = scheme_key(s);
            let r = if e.failure.is_none() { rmse(&e.u, &v.reference.u, j) } else { f64::NAN };
            if r < b.0 {
                b = (r, format!("{row}/{col}"));
            }
            let entry = table.entry(row).or_insert_with(|| json!({}));
            entry[col] = if r.is_finite() { json!(r) } else { Value::Null };
        }
        rm.insert(name.into(), Value::Object(table));
        best.insert(name.into(), json!({"rmse": b.0, "scheme": b.1}));
    }
    for (s, e) in sch.iter().zip(&v.estimates) {
        let (row, col) = scheme_key(s);
        let per_joint: Vec<Value> = (0..7)
            .map(|j| if e.failure.is_none() { json!(rmse(&e.u, &v.reference.u, j)) } else { Value::Null })
            .collect();
        let track: f64 = if e.failure.is_none() {
            let n = e.angles.len().min(v.reference.q.len());
            (0..n).map(|t| (0..7).map(|j| (e.angles[t][j] - v.reference.q[t][j]).powi(2)).sum::<f64>()).sum::<f64>()
                / (n * 7) as f64
        } else {
            f64::NAN
        }
        .sqrt();
        all.insert(
            format!("{row}/{col}"),
            json!({"rmse_all_joints": per_joint, "angle_tracking_rms_rad": if track.is_finite() { json!(track) } else { Value::Null }}),
        );
        if let Some(f) = &e.failure {
            failures.insert(format!("{row}/{col}"), json!(f));
        }
    }
    let truth_rms: Vec<f64> = REPORTED
        .iter()
        .map(|&(j, _)| (v.reference.u.iter().map(|u| u[j] * u[j]).sum::<f64>() / v.reference.u.len() as f64).sqrt())
        .collect();
    json!({"rmse": rm, "best": best, "schemes": all, "failures": failures, "true_torque_rms_s1_e0_e1": truth_rms})
}

/// The ω-only column under the paper's Adam and converged (the exact one-step minimiser), no reality gap:
/// RMSE per initialisation, the spread across initialisations (max − min per joint), Adam-vs-exact probes, and
/// the data check (the exact ω-only minimiser from the re-synchronised measured state against the true torque).
fn omega_only_json(
    model: &Model,
    r: &Reference,
    targets: &[StepTarget],
    sch: &[Scheme],
    paper: &[Estimate],
    conv: &[Scheme],
    converged: &[Estimate],
) -> Result<Value, ExperimentError> {
    let paper_omega: Vec<(&Scheme, &Estimate)> =
        sch.iter().zip(paper).filter(|(s, _)| s.horizon == 1 && s.loss.0 == "omega").collect();
    let conv_pairs: Vec<(&Scheme, &Estimate)> = conv.iter().zip(converged).collect();
    let table = |pairs: &[(&Scheme, &Estimate)]| -> (Value, Value) {
        let (mut rm, mut spread) = (serde_json::Map::new(), serde_json::Map::new());
        for &(j, name) in &REPORTED {
            let mut row = serde_json::Map::new();
            let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
            for (s, e) in pairs {
                let v = if e.failure.is_none() { rmse(&e.u, &r.u, j) } else { f64::NAN };
                row.insert(s.init.name().into(), if v.is_finite() { json!(v) } else { Value::Null });
                lo = lo.min(v);
                hi = hi.max(v);
            }
            rm.insert(name.into(), Value::Object(row));
            spread.insert(name.into(), if (hi - lo).is_finite() { json!(hi - lo) } else { Value::Null });
        }
        (Value::Object(rm), Value::Object(spread))
    };
    let (_, spread_paper) = table(&paper_omega);
    let (rm_conv, spread_conv) = table(&conv_pairs);
    // the largest torque difference between the converged runs (any joint, any step)
    let mut max_diff = 0.0f64;
    for e in converged.iter().skip(1) {
        for (a, b) in e.u.iter().zip(&converged[0].u) {
            max_diff = max_diff.max(a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max));
        }
    }
    // the data check: from the re-synchronised measured state at every step
    let mut mpc = Mpc::new(model, 1)?;
    let nj = model.joint_count();
    let (mut se, mut l_exact, mut l_truth, mut gn_max) = (vec![0.0; nj], 0.0, 0.0, 0);
    let steps = r.u.len();
    for t in 0..steps {
        let s = measured_state(model, &r.q[t], &r.qd[t])?;
        let (u, l, it) = mpc.solve_exact(model, &s, &vec![0.0; nj], &r.u[t], &targets[t + 1], &OMEGA, GN_ITERS)?;
        l_exact += l / steps as f64;
        l_truth += mpc.loss(model, &s, &r.u[t], &r.u[t], &targets[t + 1..t + 2], &OMEGA, None)? / steps as f64;
        gn_max = gn_max.max(it);
        for j in 0..nj {
            se[j] += (u[j] - r.u[t][j]).powi(2) / steps as f64;
        }
    }
    let resync_rmse: Vec<f64> = se.iter().map(|v| v.sqrt()).collect();
    let conv_failures: serde_json::Map<String, Value> = conv_pairs
        .iter()
        .filter_map(|(s, e)| e.failure.as_ref().map(|f| (s.init.name().to_string(), json!(f))))
        .collect();
    let probes: serde_json::Map<String, Value> =
        paper_omega.iter().map(|(s, e)| (s.init.name().to_string(), json!(e.probes))).collect();
    Ok(json!({
        "rmse_omega_converged": rm_conv,
        "omega_only_init_spread": {"paper_adam": spread_paper, "converged": spread_conv},
        "diagnosis": {
            "converged_max_abs_torque_difference_across_inits": max_diff,
            "converged_failures": conv_failures,
            "paper_adam_vs_exact_probes": probes,
            "resync_exact_rmse_s1_e0_e1": REPORTED.iter().map(|&(j, _)| resync_rmse[j]).collect::<Vec<_>>(),
            "resync_exact_rmse_all_joints": resync_rmse,
            "resync_loss_exact_mean": l_exact, "resync_loss_truth_mean": l_truth,
            "resync_gauss_newton_iterations_max": gn_max,
        },
    }))
}

pub fn run(quick: bool) -> Result<ExperimentResult, ExperimentError> {
    let t_start = std::time::Instant::now();
    let model = nominal_model()?;
    let duration = if quick { 1.0 } else { 5.0 };
    let steps = (duration / DT).round() as usize;
    let sch = schemes();
    let variants = [false, true];
    let refs: Vec<Reference> = variants.iter().map(|&gap| reference(&model, gap, steps)).collect::<Result<_, _>>()?;
    let scene = reference_scene(&model, &refs)?;
    let targets: Vec<Vec<StepTarget>> = refs
        .iter()
        .map(|r| r.q_meas.iter().zip(&r.qd).map(|(q, qd)| step_target(&model, q, qd)).collect())
        .collect::<Result<_, _>>()?;
    let bar = ProgressBar::new((variants.len() * sch.len() * steps) as u64);
    bar.set_style(
        ProgressStyle::with_template("pbd-mpc-torques {bar:40} {pos}/{len} MPC steps [{elapsed_precise}]")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    // the paper's ten schemes on both variants, then the converged ω-only variant (no gap) after them
    let conv = converged_schemes();
    let all_sch: Vec<Scheme> = sch.iter().chain(&conv).copied().collect();
    let mut jobs: Vec<(usize, usize)> = (0..variants.len()).flat_map(|v| (0..sch.len()).map(move |s| (v, s))).collect();
    jobs.extend((sch.len()..all_sch.len()).map(|s| (0, s)));
    let results: Vec<((usize, usize), Estimate, f64)> = jobs
        .par_iter()
        .map(|&(v, s)| {
            let t0 = std::time::Instant::now();
            let e = estimate(&model, &targets[v], &refs[v].q_meas[0], &all_sch[s], &refs[v].u, &bar)?;
            Ok(((v, s), e, t0.elapsed().as_secs_f64()))
        })
        .collect::<Result<_, ExperimentError>>()?;
    bar.finish_and_clear();
    let mut per_variant: Vec<Vec<Estimate>> = vec![vec![], vec![]];
    let mut converged: Vec<Estimate> = vec![];
    let mut timing = serde_json::Map::new();
    let mut cpu_s = 0.0;
    for ((v, s), e, secs) in results {
        let (row, col) = scheme_key(&all_sch[s]);
        let tag = if all_sch[s].exact {
            "converged:"
        } else if v == 1 {
            "gap:"
        } else {
            ""
        };
        timing.insert(format!("{tag}{row}/{col}"), json!(secs));
        cpu_s += secs;
        if all_sch[s].exact {
            converged.push(e);
        } else {
            per_variant[v].push(e);
        }
    }
    let omega = omega_only_json(&model, &refs[0], &targets[0], &sch, &per_variant[0], &conv, &converged)?;
    let vars: Vec<Variant> =
        refs.into_iter().zip(per_variant).map(|(reference, estimates)| Variant { reference, estimates }).collect();
    let no_gap = variant_json(&vars[0], &sch);
    let gap = variant_json(&vars[1], &sch);
    let iter_count: usize = sch.iter().map(|s| steps * if s.horizon > 1 { ITERS_3 } else { ITERS_1 }).sum();
    let mut checks = vec![];
    for (joint, paper_best) in [("s1", 1.726), ("e0", 1.192), ("e1", 2.128)] {
        let best = no_gap["best"][joint]["rmse"].as_f64().unwrap_or(f64::NAN);
        checks.push(Check::le(&format!("best RMSE {joint}, N·m"), best, paper_best).note("Table IV"));
        let spread = omega["omega_only_init_spread"]["converged"][joint].as_f64().unwrap_or(f64::NAN);
        checks.push(Check::le(&format!("ω-only init spread {joint} (converged), N·m"), spread, 1e-3));
    }
    let metrics = json!({
        "rmse": no_gap["rmse"], "best": no_gap["best"], "schemes": no_gap["schemes"], "failures": no_gap["failures"],
        "true_torque_rms_s1_e0_e1": no_gap["true_torque_rms_s1_e0_e1"],
        "rmse_omega_converged": omega["rmse_omega_converged"],
        "omega_only_init_spread": omega["omega_only_init_spread"],
        "omega_only_diagnosis": omega["diagnosis"],
        "reality_gap": gap,
        "wall_clock_s": t_start.elapsed().as_secs_f64(),
        "scheme_seconds": timing,
        "optimisation_iterations_per_variant": iter_count,
        "summed_scheme_seconds": cpu_s,
    });
    let paper = json!({
        "rmse": {
            "s1": {"zero": {"angle": 13.429, "omega": 2.353, "angle+omega": 31.151}, "previous": {"angle": 27.269, "omega": 2.300, "angle+omega": 2.593}, "gravity": {"angle": 3.080, "omega": 2.424, "angle+omega": 1.7638}, "mpc": {"angle+omega": 1.726}},
            "e0": {"zero": {"angle": 2.172, "omega": 1.518, "angle+omega": 3.293}, "previous": {"angle": 37.543, "omega": 1.500, "angle+omega": 1.448}, "gravity": {"angle": 1.309, "omega": 1.344, "angle+omega": 1.192}, "mpc": {"angle+omega": 1.196}},
            "e1": {"zero": {"angle": 6.926, "omega": 2.251, "angle+omega": 18.162}, "previous": {"angle": 32.447, "omega": 2.244, "angle+omega": 2.309}, "gravity": {"angle": 2.745, "omega": 2.243, "angle+omega": 2.164}, "mpc": {"angle+omega": 2.128}},
        },
        "targets": "ω-only insensitive to initialisation; gravity init with angle+ω and the MPC best; best RMSE ≤ 1.73 / 1.19 / 2.13 N·m (s1 / e0 / e1) without the gap",
        "data": "real Baxter trajectory and measured torques (we use the §4.6 Featherstone substitute)",
    });
    let settings = json!({
        "quick": quick, "duration_s": duration, "steps": steps, "dt": DT, "reference_dt": DT / SUBSTEPS as f64,
        "reference": "Featherstone (ABA, semi-implicit Euler) on the same Model at 1 kHz; u = g(q) + Kp (q_d − q) + Kd (q̇_d − q̇), q_d = q_c + A (1 − cos 2πft); ground truth = mean torque over each 10 ms step",
        "q_centre": Q_CENTRE, "amplitude_rad": AMPLITUDE, "frequency_hz": FREQUENCY,
        "pd": format!("Kp = ω_n² M_ii(q_c), Kd = 2ζω_n M_ii(q_c), ω_n = {PD_OMEGA} rad/s, ζ = {PD_ZETA}"),
        "xpbd": "30 Gauss–Seidel iterations, limits on, g = 9.8, no joint damping",
        "losses": {"angle": [1, 0, 0], "omega": [0, 1, 0], "angle+omega": [1, 0.02, 0], "mpc": [1, 0.02, 2e-7]},
        "loss_average": "mean over (horizon steps × 7 joints)",
        "adam": {"kept": "the lowest-loss iterate of the run (the final evaluation included)", "iterations_1step": ITERS_1, "lr_zero_init": LR_ZERO, "lr_other_init": LR_WARM, "iterations_3step": ITERS_3, "lr_3step": LR_3},
        "mpc": "horizon 3, warm start (previous plan shifted, g(q) for the new step), receding (apply u^t only)",
        "state_update": "open loop: the PBD state advances with the optimised torque, never re-synchronised to the measurement",
        "gravity_init": "g(q) by RNEA of the nominal model at the current simulated joint angles",
        "omega_target": "Eq. 24 from forward kinematics of the measured angles (detached)",
        "reality_gap": {"mass_scale": GAP_MASS_SCALE, "joint_damping": GAP_DAMPING, "encoder_noise_rad": GAP_ENCODER_NOISE},
    });
    // plot data: truth and a few schemes' s1/e0/e1 torques (no-gap), RMSE bars of both variants
    let truth = vars[0].reference.u.clone();
    let pick = |row: &str, col: &str| {
        sch.iter()
            .position(|s| scheme_key(s) == (row.to_string(), col.to_string()))
            .map(|i| vars[0].estimates[i].u.clone())
    };
    let curves: Vec<(String, Vec<Vec<f64>>)> = [("gravity", "angle+omega"), ("mpc", "angle+omega"), ("zero", "omega")]
        .iter()
        .filter_map(|(r, c)| pick(r, c).map(|u| (format!("{r}/{c}"), u)))
        .collect();
    let bars: Vec<Bar> = sch
        .iter()
        .map(|s| {
            let (r, c) = scheme_key(s);
            let get = |v: &Value, j: &str| v["rmse"][j][&r][&c].as_f64().unwrap_or(f64::NAN);
            let three = |v: &Value| [get(v, "s1"), get(v, "e0"), get(v, "e1")];
            Bar { name: format!("{r}/{c}"), no_gap: three(&no_gap), gap: three(&gap), paper: three(&paper) }
        })
        .collect();
    Ok(ExperimentResult {
        scene,
        name: "pbd-mpc-torques".into(),
        checks,
        metrics,
        paper,
        settings,
        plot: Box::new(move |p| plot(p, &truth, &curves, &bars)),
    })
}

/// The viewer's scene: the Featherstone reference motions the torques are estimated from (without and with the
/// reality gap), posed by the nominal model's kinematics (the gap changes masses and damping only). `None`, with a
/// warning, when the arm's mesh files cannot be read (the experiment's numbers do not need them).
fn reference_scene(model: &Model, refs: &[Reference]) -> Result<Option<SceneView>, ExperimentError> {
    let mut runs = vec![];
    for (r, name) in refs.iter().zip(["Featherstone reference", "Featherstone reference, reality gap"]) {
        let mut rec = Recorder::new(name, model)?;
        for (k, (q, qd)) in r.q.iter().zip(&r.qd).enumerate() {
            rec.gen(k as f64 * DT, &torsion_model::GenState::new(q.clone(), qd.clone()), &[])?;
        }
        runs.push(rec.finish());
    }
    match SceneView::new(model.clone(), runs) {
        Ok(s) => Ok(Some(s)),
        Err(e) => {
            eprintln!("pbd-mpc-torques: no scene in the report ({e})");
            Ok(None)
        }
    }
}

/// One scheme's torque RMSE (s1, e0, e1), N·m: ours without and with the reality gap, the paper's (NaN: none).
struct Bar {
    name: String,
    no_gap: [f64; 3],
    gap: [f64; 3],
    paper: [f64; 3],
}

/// Top row: the s1 / e0 / e1 torques over time, measured vs estimated; bottom row: Table IV, the RMSE per scheme
/// for each joint, ours (no gap, gap) as bars beside the paper's values (crosses).
fn plot(
    path: &std::path::Path,
    truth: &[Vec<f64>],
    curves: &[(String, Vec<Vec<f64>>)],
    bars: &[Bar],
) -> Result<(), ExperimentError> {
    let mut panels = vec![];
    for &(j, name) in REPORTED.iter() {
        let mut p =
            Panel::new(format!("{name} torque: measured vs estimated"), "t (s)", "torque (N·m)").series(Series::new(
                "measured (Featherstone, 1 kHz)",
                truth.iter().enumerate().map(|(t, u)| (t as f64 * DT, u[j])).collect(),
                Mark::Line,
                PAPER,
            ));
        for (i, (label, u)) in curves.iter().enumerate() {
            p = p.series(Series::line(
                label.clone(),
                u.iter().enumerate().map(|(t, u)| (t as f64 * DT, u[j])).collect(),
                color(i),
            ));
        }
        panels.push(p);
    }
    // short tick names (10 schemes in ~480 px)
    let short = |n: &str| match n {
        "mpc/angle+omega" => "mpc".to_string(),
        n => n
            .replace("zero", "0")
            .replace("previous", "p")
            .replace("gravity", "g")
            .replace("angle+omega", "a+ω")
            .replace("angle", "a")
            .replace("omega", "ω"),
    };
    let names: Vec<String> = bars.iter().map(|b| short(&b.name)).collect();
    for (k, &(_, name)) in REPORTED.iter().enumerate() {
        let at = |f: &dyn Fn(&Bar) -> f64, dx: f64| {
            bars.iter().enumerate().map(|(i, b)| (i as f64 + dx, f(b))).collect::<Vec<_>>()
        };
        let mut p = Panel {
            x_names: names.clone(),
            ..Panel::new(
                format!("{name}: torque RMSE per scheme (Table IV)"),
                "init / loss (init: 0 zero, p previous, g g(q); loss: a angle, ω)",
                "RMSE (N·m)",
            )
        }
        .log_y()
        .series(Series::new("ours, no reality gap", at(&|b| b.no_gap[k], -0.17), Mark::Bars(0.32), color(0)))
        .series(Series::new(
            "ours, reality gap",
            at(&|b| b.gap[k], 0.17),
            Mark::Bars(0.32),
            lighten(color(1), 0.2),
        ));
        for (i, b) in bars.iter().enumerate().filter(|(_, b)| b.paper[k].is_finite()) {
            p = p.refs(PlotRef::paper_point(i as f64, b.paper[k], if i == 0 { "paper (Table IV)" } else { "" }));
        }
        panels.push(p);
    }
    figure(path, &panels, 3)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The report's scene is the reference motion: each run's frame k poses the arm at the reference's angles of
    /// step k (forward kinematics), the arm moves, and the reality gap changes the motion.
    #[test]
    fn reference_scene_follows_the_reference() {
        let model = nominal_model().unwrap();
        let refs = [reference(&model, false, 20).unwrap(), reference(&model, true, 20).unwrap()];
        let sc = reference_scene(&model, &refs).unwrap().expect("the Baxter arm's meshes load");
        assert_eq!(sc.trajectories.len(), 2);
        let dist = |a: &[f64; 7], b: &[f64; 7]| (0..3).map(|i| (a[i] - b[i]).abs()).fold(0.0, f64::max);
        for (t, r) in sc.trajectories.iter().zip(&refs) {
            assert_eq!(t.time.len(), 21);
            for k in [0, 10, 20] {
                let fk = model.forward_kinematics(&r.q[k]).unwrap();
                for (p, (x, _)) in t.body_poses[k].iter().zip(&fk) {
                    assert!((p[0] - x.x).abs() + (p[1] - x.y).abs() + (p[2] - x.z).abs() < 1e-12);
                }
            }
            let tip = model.body_count() - 1;
            assert!(dist(&t.body_poses[0][tip], &t.body_poses[20][tip]) > 1e-3, "{}: the arm does not move", t.name);
        }
        let tip = model.body_count() - 1;
        let (a, b) = (&sc.trajectories[0].body_poses[20][tip], &sc.trajectories[1].body_poses[20][tip]);
        assert!(dist(a, b) > 0.0, "the reality gap leaves the motion unchanged");
    }
}
