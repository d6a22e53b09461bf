//! `jade-cube-push` — spec 004 §4.3 task 2 (issue 17 item 6). Scene (our decision; the paper gives a figure
//! only): two equal free 1 kg cubes (half size 0.1 m) on a floor plane, faces 0.5 m apart along x; the gray cube
//! is launched at 2 m/s towards the blue one; μ = 0.16 (floor and cubes), g = 9.81, Δt = 0.01, 150 steps, the
//! `lcp` stepper (CCD, the default). Restitution e between the cubes: 0 (the paper's "come to rest together") and 1.
//! Analytic prediction (continuous time, Coulomb sliding, an instantaneous impact): gray reaches blue at
//! v_c = √(v₀² − 2 μ g d) at t_c = (v₀ − v_c)/(μ g); after the impact v_gray = (1 − e) v_c / 2,
//! v_blue = (1 + e) v_c / 2, each then decelerating at μ g; the rest gap is (v_blue² − v_gray²) / (2 μ g).
//! Measured: blue's post-impact velocity line (least squares over its sliding steps) evaluated at t_c, against
//! v_blue (`velocity_error`, relative); the final face gap against the predicted one (`rest_gap_error`, m).
use crate::jade_sliding_prisms::sliding_line;
use crate::ncp_scene::panels_result;
use crate::plot::{color, Mark, Panel, Series};
use crate::result::{Check, ExperimentError, ExperimentResult};
use crate::scene::{lcp_normal_impulses, Recorder, SceneView};
use serde_json::json;
use torsion_model::{Control, GenState, Model};
use torsion_solvers::{LcpSolver, Solver};
use torsion_view::Trajectory;

pub const MU: f64 = 0.16;
pub const G: f64 = 9.81;
pub const DT: f64 = 0.01;
pub const STEPS: usize = 150;
pub const V0: f64 = 2.0;
pub const GAP: f64 = 0.5;
pub const HALF: f64 = 0.1;
pub const RESTITUTION: [f64; 2] = [0.0, 1.0];

/// The two cubes on the floor; restitution `e` on the cubes (a pair uses the larger ε: the floor keeps 0 but the
/// cube–floor pairs get e too, harmless: resting contacts do not approach faster than the bounce threshold).
pub fn scene(e: f64) -> Result<Model, ExperimentError> {
    let xb = 2.0 * HALF + GAP;
    let xml = format!(
        r#"<mujoco><option gravity="0 0 -{G}" timestep="{DT}"/><worldbody>
        <geom type="plane" size="50 50 0.1" friction="{MU}"/>
        <body name="gray" pos="0 0 {HALF}"><freejoint/><geom type="box" size="{HALF} {HALF} {HALF}" mass="1" friction="{MU}"/></body>
        <body name="blue" pos="{xb} 0 {HALF}"><freejoint/><geom type="box" size="{HALF} {HALF} {HALF}" mass="1" friction="{MU}"/></body>
        </worldbody></mujoco>"#
    );
    let mut m = torsion_model::io::mjcf::load_mjcf_str(&xml, "cube-push.xml", None)?;
    for s in m.shapes.iter_mut().filter(|s| s.body != 0) {
        s.restitution = e;
    }
    Ok(m)
}

/// The prediction for restitution e: (v_c, t_c, v_gray after, v_blue after, rest gap).
pub fn analytic(e: f64) -> (f64, f64, f64, f64, f64) {
    let a = MU * G;
    let vc = (V0 * V0 - 2.0 * a * GAP).sqrt();
    let (vg, vb) = (0.5 * (1.0 - e) * vc, 0.5 * (1.0 + e) * vc);
    (vc, (V0 - vc) / a, vg, vb, (vb * vb - vg * vg) / (2.0 * a))
}

/// One run: per step (x_gray, x_blue, v_gray, v_blue), the steps PGS answered, the failure if any, and the run
/// for the viewer (poses, contacts with their normal impulses).
#[allow(clippy::type_complexity)]
fn push(e: f64) -> Result<(Vec<[f64; 4]>, usize, Option<String>, Trajectory), ExperimentError> {
    let m = scene(e)?;
    let mut rec = Recorder::new(&format!("e = {e}"), &m)?;
    let solver = LcpSolver::default();
    let mut ws = solver.workspace(&m)?;
    let mut v = vec![0.0; m.nv()];
    v[3] = V0; // gray's free joint: (ω, v), body frame = world (no rotation)
    let mut s = GenState::new(m.qpos0.clone(), v);
    let mut out = s.clone();
    let u = Control::zeros(m.nv());
    let row = |s: &GenState| [s.q[0], s.q[7], s.v[3], s.v[9]];
    let (mut rows, mut pgs) = (vec![row(&s)], 0);
    rec.gen(0.0, &s, &[])?;
    for k in 0..STEPS {
        match solver.step(&m, &s, &u, DT, &mut out, &mut ws, None) {
            Ok(info) => pgs += (info.solver == "lcp/pgs") as usize,
            Err(err) => return Ok((rows, pgs, Some(format!("step {k}: {err}")), rec.finish())),
        }
        std::mem::swap(&mut s, &mut out);
        rows.push(row(&s));
        rec.gen((k + 1) as f64 * DT, &s, &[])?;
        rec.contacts(&ws.frames, &lcp_normal_impulses(&ws));
    }
    Ok((rows, pgs, None, rec.finish()))
}

pub fn run(quick: bool) -> Result<ExperimentResult, ExperimentError> {
    let t0 = std::time::Instant::now();
    let (mut cases, mut series, mut checks) = (serde_json::Map::new(), vec![], vec![]);
    let (mut worst_v, mut worst_gap, mut failures) = (0f64, 0f64, 0usize);
    let mut runs = vec![];
    for e in RESTITUTION {
        let (vc, tc, vg, vb, gap_want) = analytic(e);
        let (rows, pgs, failure, run) = push(e)?;
        runs.push(run);
        failures += failure.is_some() as usize;
        // blue's sliding steps after it was struck: from the step after its first motion while still moving
        let k1 = rows.iter().position(|r| r[3] > 1e-6).unwrap_or(rows.len());
        let pts: Vec<(f64, f64)> =
            (k1 + 1..rows.len()).take_while(|&k| rows[k][3] > 1e-9).map(|k| (k as f64 * DT, rows[k][3])).collect();
        let (slope, intercept) = sliding_line(&pts);
        let vb_sim = intercept + slope * tc;
        let v_err = ((vb_sim - vb) / vb).abs();
        let last = rows.last().unwrap();
        let gap = last[1] - last[0] - 2.0 * HALF;
        let gap_err = (gap - gap_want).abs();
        let min_gap = rows.iter().map(|r| r[1] - r[0] - 2.0 * HALF).fold(f64::INFINITY, f64::min);
        worst_v = worst_v.max(if v_err.is_finite() { v_err } else { f64::INFINITY });
        worst_gap = worst_gap.max(gap_err);
        cases.insert(
            format!("e_{e}"),
            json!({"impact_speed_analytic": vc, "impact_time_analytic_s": tc, "impact_step": k1,
                   "v_gray_after_analytic": vg, "v_blue_after_analytic": vb, "v_blue_after_fitted": vb_sim,
                   "v_gray_at_impact_step": rows.get(k1).map(|r| r[2]),
                   "blue_deceleration_fitted": -slope, "velocity_error": v_err,
                   "rest_gap_analytic_m": gap_want, "rest_gap_m": gap, "rest_gap_error": gap_err,
                   "min_face_gap_m": min_gap,
                   "final_speeds": [last[2], last[3]], "pgs_steps": pgs, "failure": failure}),
        );
        checks.push(Check::le(&format!("e = {e}: velocity_error (blue after impact, relative)"), v_err, 0.02));
        // bound kept from DCD (a contact found up to a step late, the response a step later still): ≤ 2 v_c Δt
        checks.push(Check::le(&format!("e = {e}: rest_gap_error (m)"), gap_err, 2.0 * vc * DT).note("2 v_c Δt"));
        checks.push(Check::holds(
            &format!("e = {e}: both cubes at rest at the end"),
            last[2].abs() + last[3].abs() < 1e-9,
        ));
        for (i, name) in ["gray", "blue"].iter().enumerate() {
            series.push((
                format!("{name}, e = {e}"),
                rows.iter().enumerate().map(|(k, r)| (k as f64 * DT, r[2 + i])).collect(),
            ));
        }
    }
    checks.push(Check::le("steps without a valid LCP answer", failures as f64, 0.0));
    let metrics = json!({
        "velocity_error": worst_v,
        "rest_gap_error": worst_gap,
        "cases": cases,
        "wall_clock_s": t0.elapsed().as_secs_f64(),
    });
    let paper = json!({
        "claim": "Fig. (cube push): the gray cube hits the blue one and 'the two finally come to rest together'; 'the simulation result is expected' (figure only, no numbers)",
        "nimble": "invalid LCP, falls back to frictionless: the bodies do not decelerate correctly (spec 004 §4.3)",
        "analytic_e0": "v_c = √(4 − 2μg·0.5) ≈ 1.56 m/s; both at 0.78 m/s, stop 0.5 s later (spec 004 §4.3 item 4)",
    });
    let settings = json!({
        "quick": quick, "mu": MU, "g": G, "dt": DT, "steps": STEPS, "v0": V0, "gap_m": GAP, "cube_half_size_m": HALF,
        "mass_kg": 1.0, "restitution": RESTITUTION,
        "stepper": "lcp (Jade's Dantzig → PGS; parallel position update; CCD / TOI backtracking (default); bounce threshold 0.1 m/s)",
        "velocity_fit": "least squares of blue's v_x over its sliding steps after the impact step, evaluated at t_c",
        "targets": "velocity_error ≤ 2 % (≈ 2 μ g Δt / v_c: the impact lands within a step of t_c); rest_gap_error ≤ 2 v_c Δt (kept from the DCD runs, where the contact was found up to one step's travel late; with CCD e = 0 ends 1.1e-10 m off, e = 1 0.010 m: the parallel update's discrete sliding)",
    });
    // v_x of both cubes per case, beside the analytic velocities (dashed): deceleration μg, the impact at t_c
    let mut panel = Panel::new("cube push, μ = 0.16: v_x of both cubes (lcp stepper)", "t (s)", "v_x (m/s)");
    for (i, (label, pts)) in series.into_iter().enumerate() {
        panel = panel.series(Series::line(label, pts, color(i)));
    }
    for (i, &e) in RESTITUTION.iter().enumerate() {
        let (_, tc, vg, vb, _) = analytic(e);
        let a = MU * G;
        let ts = (0..=STEPS).map(|k| k as f64 * DT);
        let gray = ts.clone().map(|t| (t, if t < tc { V0 - a * t } else { (vg - a * (t - tc)).max(0.0) })).collect();
        let blue = ts.map(|t| (t, if t < tc { 0.0 } else { (vb - a * (t - tc)).max(0.0) })).collect();
        panel = panel
            .series(Series::new(format!("gray, e = {e}: analytic"), gray, Mark::Dashed, color(2 * i)))
            .series(Series::new(format!("blue, e = {e}: analytic"), blue, Mark::Dashed, color(2 * i + 1)));
    }
    let scene = SceneView::new(scene(0.0)?, runs)?;
    Ok(panels_result("jade-cube-push", metrics, paper, settings, vec![panel]).with_checks(checks).with_scene(scene))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scene_holds_both_runs_as_measured() {
        // the viewer's trajectories are the runs the metrics come from: the last frame's face gap is the
        // measured rest gap, and the lcp contacts carry the impact's impulse
        let r = run(true).unwrap();
        let sc = r.scene.as_ref().expect("jade-cube-push has a scene");
        assert_eq!(sc.trajectories.len(), RESTITUTION.len());
        for (t, e) in sc.trajectories.iter().zip(RESTITUTION) {
            assert_eq!(t.time.len(), STEPS + 1);
            assert_eq!(t.body_poses[0].len(), sc.model.body_count());
            let last = t.body_poses.last().unwrap();
            let gap = last[2][0] - last[1][0] - 2.0 * HALF;
            let want = r.metrics["cases"][format!("e_{e}")]["rest_gap_m"].as_f64().unwrap();
            assert!((gap - want).abs() < 1e-12, "e = {e}: scene gap {gap}, metric {want}");
            let c = t.contacts.as_ref().expect("lcp contacts recorded");
            assert_eq!(c.len(), t.time.len());
            // the cube–cube contacts (horizontal normals) give blue its momentum after the impact, (1 + e) m v_c / 2
            let push: f64 = c.iter().flatten().filter(|c| c.normal[2].abs() < 0.5).map(|c| c.impulse_n).sum();
            let want = (1.0 + e) * analytic(e).0 / 2.0;
            eprintln!("e = {e}: cube-cube impulse {push:.4} N s, analytic {want:.4}");
            assert!((push - want).abs() < 0.1 * want, "e = {e}: cube-cube impulse {push}, analytic {want}");
        }
        assert!(r.html(None).unwrap().contains("<div id=\"torsion-viewer\">"));
    }
}
