//! `ncp-friction-id` — spec 001 §4 E1 / H1: μ of a cube sliding on the floor (exact Coulomb disk). Data: the
//! truth (μ* = 0.2) simulated at Δt/4 with 100 staggered passes to 1e-10 (a different Δt and solver setting),
//! every 4th state, σ = 1 mm noise on every position coordinate. Identification: the differentiable stepper at Δt
//! (10 passes, fixed tape), a multi-step position loss over the whole trajectory (spec 001 §6 item 12: with 1 mm
//! noise a one-step loss sees μgΔt² ≈ 0.2 mm per step under a 2.4 mm second-difference noise), the cube's initial
//! planar state estimated with μ (its O(Δt) discretisation offset absorbs the Δt mismatch), μ on a softplus
//! scale, Levenberg–Marquardt with the engine's exact forward-mode Jacobians (d_mu, A).
use crate::ncp_scene::{
    bar, init_guess, lm_desc, observe, with_init, Fit, Phys, Scene, DATA_DESC, HALF, MODEL_DESC, SIGMA,
};
use crate::result::{Check, ExperimentError, ExperimentResult};
use serde_json::json;
use torsion_opt::Param;

pub const MU_TRUE: f64 = 0.2;
pub const DT: f64 = 0.01;
pub const V0: f64 = 5.0;
pub const SEED: u64 = 11;
const INITS: [&[f64]; 2] = [&[0.05, 0.1, 0.3, 0.5, 0.8], &[0.05, 0.8]];
/// Trajectory length (full, quick) and LM steps, shared by `ncp-mass-id` and `ncp-pyramid-bias`.
pub const STEPS: [usize; 2] = [100, 60];
pub const ITERS: usize = 30;

pub fn run(quick: bool) -> Result<ExperimentResult, ExperimentError> {
    let t0 = std::time::Instant::now();
    let q = quick as usize;
    let steps = STEPS[q];
    let sc = Scene::one_cube([0.0, 0.0])?;
    let truth = Phys { mu: MU_TRUE, mass: 1.0, eps: 0.0, init: [0.0, 0.0, V0, 0.0] };
    let obs = observe(&sc, &truth, DT, steps, 4, SIGMA, SEED)?;
    let guess = init_guess(&obs, DT);
    let fit = Fit::cone(&sc, DT, steps, with_init(&[(0, Param::Softplus)]), truth.clone());
    let pb = bar("ncp-friction-id", INITS[q].len());
    let st = fit.from_starts(&obs, &truth, guess, 0, ("μ", ""), INITS[q], ITERS, &pb)?;
    // the same fit on noise-free data (the Δt / solver-setting gap alone) and at σ = √1e-3 m ≈ 3.2 cm (the
    // other reading of the paper's "variance 1e-3 m", spec 001 H9), from μ₀ = 0.5
    let mut extra = vec![];
    for sigma in [0.0, 1e-3f64.sqrt()] {
        let o = observe(&sc, &truth, DT, steps, 4, sigma, SEED)?;
        let start = Phys { mu: 0.5, init: init_guess(&o, DT), ..truth.clone() };
        extra.push(fit.run(&o, &start, ITERS)?.phys.mu);
    }
    pb.finish_and_clear();
    let max_err = st.est.iter().map(|m| (m - MU_TRUE).abs()).fold(0.0, f64::max);
    let metrics = json!({
        "mu_true": MU_TRUE,
        "mu_estimates": st.est,
        "max_abs_error": max_err,
        "lm_iterations": st.iters,
        "mu_estimate_noise_free": extra[0],
        "mu_estimate_sigma_3p2cm": extra[1],
        "wall_clock_s": t0.elapsed().as_secs_f64(),
    });
    let paper = json!({
        "claim": "Fig. 4a: 'our method always converges to the ground truth value' from several initialisations (GT not given in the text; 0.2 implied by Fig. 5)",
        "target": "H1: |μ − μ*| ≤ 0.005 from ≥ 5 initialisations",
    });
    let settings = json!({
        "quick": quick, "cube_half_size_m": HALF, "mass_kg": 1.0, "dt": DT, "steps": steps, "T_s": steps as f64 * DT,
        "v0": [V0, 0.0], "mu_true": MU_TRUE, "mu_inits": INITS[q], "noise_sigma_m": SIGMA, "noise_seed": SEED,
        "noise_on": "x, y, z of the cube at every observation",
        "data": DATA_DESC,
        "model": MODEL_DESC,
        "loss": "Σ_t ‖p_t(μ, x0, v0) − p_t^obs‖² / σ² over t = 0..T (multi-step rollout, positions only)",
        "estimated": "μ (softplus), initial x, y, vx, vy (identity)",
        "optimiser": lm_desc(ITERS),
    });
    let checks = vec![
        Check::le("max |μ − μ*| over the initialisations", max_err, 0.005).note("H1"),
        Check::le("|μ − μ*| on noise-free data", (extra[0] - MU_TRUE).abs(), 1e-6),
    ];
    // Fig. 4a plots μ per iteration from several starts, converging to the truth
    let panel = ("E1 (Fig. 4a): μ per LM step, 1 mm noise", "μ (friction coefficient)");
    st.result(&fit, "ncp-friction-id", [metrics, paper, settings], panel, "E1: loss per LM step", checks, truth)
}
