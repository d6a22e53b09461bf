//! `pbd-spring-id` — spec 000 §4.3 with the §4.6 synthetic substitute: Baxter's shoulder counterbalance spring,
//! Eq. 31 with the θ-dependent length (§3.11), at joint s1 with known k*, α2* and the invented geometry of §4.6
//! (l1 = 0.25 m, l2 = 0.10 m, α1 = 0.3 rad, x_rest = 0.2 m). "Measured motor torque" at each pose:
//! u = g(q) − e_s1 τ_s(θ2; k*, α2*) (RNEA g, so that the arm with the spring is in equilibrium), optionally with
//! N(0, σ²) noise on s1 (σ = 0.5 N·m). From k0 = 0.5 k* (and α2 0.3 rad off), (k, α2) are recovered by
//! (a) curve fitting: least squares of Eq. 31 against τ_s = g_s1 − u_s1 (the model's gravity compensation);
//! (b) differentiable simulation: the spring inside XPBD, the measured torques applied, and the one-step
//!     stay-still loss Eq. 26 with λ = (1, 0.2) (§4.3) averaged over the poses, w.r.t. (k, α2).
//! Both minimisers are Gauss–Newton with exact Jacobians: Eq. 31's dual-number gradient (spring.rs, FD-tested) for
//! (a), reverse XPBD steps (∂ρ/∂θ, FD-tested in `stay_still`) for (b). (b) runs at the paper's solver settings (30
//! iterations) and with 10 substeps: the XPBD one-step gap to g(q) of `pbd-gravity-comp` biases k at 30 iterations.
use crate::plot::{color, figure, Mark, Panel, Series, PAPER, TRUTH};
use crate::result::{Check, ExperimentError, ExperimentResult};
use crate::stay_still::{baxter, paper_solver, rnea_gravity, sample_poses, Lcg, StayStill, DT};
use nalgebra::{DMatrix, DVector};
use rayon::prelude::*;
use serde_json::{json, Map, Value};
use torsion_model::{JointSpring, Model};
use torsion_opt::GnOptions;
use torsion_solvers::xpbd::spring::{spring_torque, spring_torque_grad};
use torsion_solvers::{XpbdOptions, XpbdSolver};

const POSES: [usize; 2] = [30, 10];
const SEED: u64 = 2024;
const NOISE_SEED: u64 = 7;
const SIGMA: f64 = 0.5;
/// Eq. 26 weights of the spring experiment (§3.9: (1, 0.2)).
const LAMBDA: (f64, f64) = (1.0, 0.2);
/// True spring (§4.6 geometry). k* makes the spring carry ~70 % of the mean |s1| gravity torque at our poses
/// (metric `spring_to_gravity_ratio`; §4.6 asks for 50–100 %, which this geometry reaches at ~9 kN/m rather than the
/// suggested 4–5 kN/m: 4.5 kN/m gives 35 %); α2* puts the spring in tension over most of the s1 range; sign −1: it
/// supports the arm (the same sign as g_s1, which is mostly negative).
const K_STAR: f64 = 9000.0;
const ALPHA2_STAR: f64 = 0.8;
const ALPHA2_OFFSET0: f64 = -0.3;
const GEOMETRY: (f64, f64, f64, f64) = (0.3, 0.25, 0.10, 0.2); // α1, l1, l2, x_rest
const SIGN: f64 = -1.0;

fn spring(k: f64, alpha2: f64) -> JointSpring {
    let (alpha1, l1, l2, x_rest) = GEOMETRY;
    JointSpring { k, alpha1, alpha2, l1, l2, x_rest, sign: SIGN, literal: false }
}

fn tau_s(theta: f64, k: f64, alpha2: f64) -> f64 {
    let (a1, l1, l2, xr) = GEOMETRY;
    spring_torque(theta, &[k, a1, alpha2, l1, l2, xr], SIGN, false)
}

/// Gauss–Newton with backtracking (torsion-opt's; stops when the loss stops decreasing) on a least-squares problem
/// r(p) given by `resid(p, want_jacobian)`. Returns (p, loss, iterations).
fn gauss_newton(
    p0: Vec<f64>,
    mut resid: impl FnMut(&[f64], bool) -> Result<(DVector<f64>, Option<DMatrix<f64>>), ExperimentError>,
) -> Result<(Vec<f64>, f64, usize), ExperimentError> {
    let rep = torsion_opt::gauss_newton(
        &mut resid,
        &p0,
        &GnOptions::default(),
        |f, p| Ok::<_, ExperimentError>(f(p, false)?.0.norm_squared()),
        |f, p| {
            let (r, j) = f(p, true)?;
            Ok((r, j.ok_or_else(|| ExperimentError::Failed("missing Jacobian".into()))?))
        },
    )?;
    Ok((rep.x, rep.loss, rep.iterations))
}

/// (a) curve fit of (k, α2) to τ_s data at the s1 angles.
fn curve_fit(theta: &[f64], tau: &[f64], start: [f64; 2]) -> Result<(Vec<f64>, f64, usize), ExperimentError> {
    let (a1, l1, l2, xr) = GEOMETRY;
    gauss_newton(start.to_vec(), |p, jac| {
        let r = DVector::from_iterator(theta.len(), theta.iter().zip(tau).map(|(&t, &y)| tau_s(t, p[0], p[1]) - y));
        let j = jac.then(|| {
            DMatrix::from_fn(theta.len(), 2, |i, c| {
                let g = spring_torque_grad(theta[i], &[p[0], a1, p[1], l1, l2, xr], SIGN, false);
                [g[1], g[3]][c]
            })
        });
        Ok((r, j))
    })
}

/// (b) differentiable-simulation fit of (k, α2): the stay-still residuals of every pose with the measured torques.
fn diffsim_fit(
    model: &Model,
    solver: &XpbdSolver,
    poses: &[Vec<f64>],
    u_meas: &[Vec<f64>],
    start: [f64; 2],
) -> Result<(Vec<f64>, f64, usize), ExperimentError> {
    let t = model.param_table();
    let idx = [t.index("joint_spring[left_s1].k")?, t.index("joint_spring[left_s1].alpha2")?];
    let states: Vec<_> = poses.iter().map(|q| model.state_at(q)).collect::<Result<_, _>>()?;
    let w = 1.0 / (poses.len() as f64).sqrt(); // mean over poses
    gauss_newton(start.to_vec(), |p, jac| {
        let mut m = model.clone();
        let sel = torsion_model::ParamSelection { indices: idx.to_vec() };
        m.params_set(&sel, p)?;
        let parts: Vec<(DVector<f64>, DMatrix<f64>)> = (0..poses.len())
            .into_par_iter()
            .map(|i| {
                let mut ss = StayStill::new(m.clone(), solver.clone(), DT, LAMBDA)?;
                if jac {
                    let (r, _, jt) = ss.residual_jacobians(&states[i], &poses[i], &u_meas[i], &idx)?;
                    Ok((r, jt))
                } else {
                    let l = ss.eval(&states[i], &poses[i], &u_meas[i], false)?;
                    Ok((DVector::from_element(1, l.sqrt()), DMatrix::zeros(0, 2)))
                }
            })
            .collect::<Result<_, ExperimentError>>()?;
        let rows: usize = parts.iter().map(|x| x.0.len()).sum();
        let mut r = DVector::zeros(rows);
        let mut j = DMatrix::zeros(rows, 2);
        let mut o = 0;
        for (pr, pj) in &parts {
            r.rows_mut(o, pr.len()).copy_from(&(pr * w));
            if jac {
                j.rows_mut(o, pr.len()).copy_from(&(pj * w));
            }
            o += pr.len();
        }
        Ok((r, jac.then_some(j)))
    })
}

pub fn run(quick: bool) -> Result<ExperimentResult, ExperimentError> {
    let t0 = std::time::Instant::now();
    let base = baxter()?;
    let s1 = base
        .joint_name
        .iter()
        .position(|n| n == "left_s1")
        .ok_or_else(|| ExperimentError::Failed("no joint left_s1".into()))?;
    let mut model = base.clone();
    model.joint_spring[s1] = Some(spring(K_STAR, ALPHA2_STAR));
    let npose = POSES[quick as usize];
    let poses = sample_poses(&base, npose, SEED)?;
    let g = rnea_gravity(&base, &poses)?;
    let theta: Vec<f64> = poses.iter().map(|q| q[s1]).collect();
    let ts_true: Vec<f64> = theta.iter().map(|&t| tau_s(t, K_STAR, ALPHA2_STAR)).collect();
    let mut rng = Lcg::new(NOISE_SEED);
    let noise: Vec<f64> = (0..npose).map(|_| SIGMA * rng.normal()).collect();
    let start = [0.5 * K_STAR, ALPHA2_STAR + ALPHA2_OFFSET0];
    let variants = [
        // primary: the engine converged (10 substeps); the paper's 30 iterations / 1 substep beside it
        ("", XpbdSolver::new(XpbdOptions { substeps: 10, ..paper_solver().options })),
        ("_paper_settings", paper_solver()),
    ];
    let mut m = Map::new();
    let ratio = ts_true.iter().map(|v| v.abs()).sum::<f64>() / g.iter().map(|v| v[s1].abs()).sum::<f64>();
    m.insert("spring_to_gravity_ratio".into(), json!(ratio));
    let mut fits = vec![];
    for (nsfx, noisy) in [("", false), ("_noisy", true)] {
        let u_meas: Vec<Vec<f64>> = g
            .iter()
            .enumerate()
            .map(|(i, gi)| {
                let mut u = gi.clone();
                u[s1] -= ts_true[i] - if noisy { noise[i] } else { 0.0 };
                u
            })
            .collect();
        // (a) τ_s data = gravity compensation − measured motor torque
        let data: Vec<f64> = g.iter().zip(&u_meas).map(|(gi, ui)| gi[s1] - ui[s1]).collect();
        let tc = std::time::Instant::now();
        let (pc, lc, ic) = curve_fit(&theta, &data, start)?;
        m.insert(format!("wall_clock_curvefit_s{nsfx}"), json!(tc.elapsed().as_secs_f64()));
        m.insert(format!("k_curvefit{nsfx}"), json!(pc[0]));
        m.insert(format!("alpha2_curvefit{nsfx}"), json!(pc[1]));
        m.insert(format!("k_rel_error_curvefit{nsfx}"), json!((pc[0] - K_STAR).abs() / K_STAR));
        m.insert(format!("alpha2_error_curvefit{nsfx}"), json!((pc[1] - ALPHA2_STAR).abs()));
        m.insert(format!("loss_curvefit{nsfx}"), json!(lc / npose as f64));
        m.insert(format!("iterations_curvefit{nsfx}"), json!(ic));
        for (vsfx, solver) in &variants {
            let td = std::time::Instant::now();
            let (pd, ld, id) = diffsim_fit(&model, solver, &poses, &u_meas, start)?;
            let s = format!("{vsfx}{nsfx}");
            m.insert(format!("wall_clock_diffsim_s{s}"), json!(td.elapsed().as_secs_f64()));
            m.insert(format!("k_diffsim{s}"), json!(pd[0]));
            m.insert(format!("alpha2_diffsim{s}"), json!(pd[1]));
            m.insert(format!("k_rel_error_diffsim{s}"), json!((pd[0] - K_STAR).abs() / K_STAR));
            m.insert(format!("alpha2_error_diffsim{s}"), json!((pd[1] - ALPHA2_STAR).abs()));
            m.insert(format!("k_methods_rel_diff{s}"), json!((pd[0] - pc[0]).abs() / pc[0]));
            m.insert(format!("loss_diffsim{s}"), json!(ld));
            m.insert(format!("iterations_diffsim{s}"), json!(id));
            if vsfx.is_empty() {
                fits.push((noisy, data.clone(), pc.clone(), pd.clone()));
            }
        }
    }
    m.insert("wall_clock_total_s".into(), json!(t0.elapsed().as_secs_f64()));
    let metric = |k: &str| m.get(k).and_then(Value::as_f64).unwrap_or(f64::NAN);
    let checks = vec![
        Check::le("k_rel_error_curvefit", metric("k_rel_error_curvefit"), 0.01),
        Check::le("k_rel_error_curvefit_noisy", metric("k_rel_error_curvefit_noisy"), 0.05),
        Check::le("k_rel_error_diffsim", metric("k_rel_error_diffsim"), 0.01),
        Check::le("k_rel_error_diffsim_noisy", metric("k_rel_error_diffsim_noisy"), 0.05),
        Check::le("k_methods_rel_diff", metric("k_methods_rel_diff"), 0.01).note("both methods agree"),
        Check::le("k_methods_rel_diff_noisy", metric("k_methods_rel_diff_noisy"), 0.01),
    ];
    let metrics = Value::Object(m);
    let paper = json!({
        "note": "Fig. 8 only (image): curve fitting and differentiable simulation 'converged to similar values'; no reference stiffness given",
        "targets": "|k − k*|/k* < 1 % noise-free, < 5 % with σ = 0.5 N·m noise; both methods agree (spec §4.6)",
    });
    let (a1, l1, l2, xr) = GEOMETRY;
    let settings = json!({
        "quick": quick, "poses": npose, "seed": SEED, "noise_seed": NOISE_SEED, "sigma": SIGMA, "noise_on": "s1 motor torque",
        "k_star": K_STAR, "alpha2_star": ALPHA2_STAR, "alpha1": a1, "l1": l1, "l2": l2, "x_rest": xr, "sign": SIGN,
        "spring_model": "Eq. 31 with θ-dependent length (§3.11)", "start": start,
        "measured_motor_torque": "u = g(q) (RNEA) − e_s1 τ_s(θ2; k*, α2*) (+ noise)",
        "curvefit": "Gauss–Newton on Σ (τ_s(θ; k, α2) − (g_s1 − u_s1))², exact gradient of Eq. 31 (duals)",
        "diffsim": "Gauss–Newton on the mean over poses of Eq. 26 (one step, λ = (1, 0.2)), exact ∂ρ/∂(k, α2) by reverse XPBD steps",
        "diffsim_variants": {"": "10 substeps × 30 Gauss–Seidel iterations (primary)", "_paper_settings": "the paper's 30 iterations, 1 substep"},
        "dt": DT, "limits": false, "gravity": 9.8,
    });
    Ok(ExperimentResult {
        scene: None,
        name: "pbd-spring-id".into(),
        checks,
        metrics,
        paper,
        settings,
        plot: Box::new(move |p| plot(p, &theta, &fits)),
    })
}

/// Fig. 8: the spring torque at s1 vs the s1 angle: the measured points, the true curve (dashed) and the two fits,
/// noise-free and noisy. The paper gives no stiffness value: the truth is the reference.
fn plot(
    path: &std::path::Path,
    theta: &[f64],
    fits: &[(bool, Vec<f64>, Vec<f64>, Vec<f64>)],
) -> Result<(), ExperimentError> {
    let grid: Vec<f64> = (0..=100).map(|i| -2.147 + (1.047 + 2.147) * i as f64 / 100.0).collect();
    let curve = |k: f64, a2: f64| grid.iter().map(|&t| (t, tau_s(t, k, a2))).collect::<Vec<_>>();
    let panels: Vec<Panel> = fits
        .iter()
        .map(|(noisy, data, pc, pd)| {
            let noise = if *noisy { "σ = 0.5 N·m noise" } else { "noise-free" };
            Panel::new(
                format!("spring torque at s1 (Fig. 8), {noise}"),
                "θ2 = s1 angle (rad)",
                "spring torque τ_s (N·m)",
            )
            .series(Series::new(
                "g_s1 − measured u_s1",
                theta.iter().copied().zip(data.iter().copied()).collect(),
                Mark::Points,
                PAPER,
            ))
            .series(Series::line(
                format!("curve fit: k = {:.1}, α2 = {:.4}", pc[0], pc[1]),
                curve(pc[0], pc[1]),
                color(0),
            ))
            .series(Series::line(
                format!("diffsim (30 it.): k = {:.1}, α2 = {:.4}", pd[0], pd[1]),
                curve(pd[0], pd[1]),
                color(1),
            ))
            .series(Series::new(
                format!("true: k = {K_STAR:.1}, α2 = {ALPHA2_STAR:.4}"),
                curve(K_STAR, ALPHA2_STAR),
                Mark::Dashed,
                TRUTH,
            ))
        })
        .collect();
    figure(path, &panels, 2)
}
