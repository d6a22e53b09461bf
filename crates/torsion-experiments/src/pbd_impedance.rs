//! `pbd-impedance` — spec 000 §4.5, simulation part (Fig. 12, Fig. 13): joint impedance control of Baxter's s1
//! (Eq. 28, u = K(q_d − q) + D(q̇_d − q̇) + s·τ_net, §3.10) with the net-torque lookup map built by optimisation
//! in the simulator.
//!
//! Model: only s1 moves. The links distal to s1 (lower_shoulder … wrist + hand) are lumped, with the other joints
//! locked at 0, into one rigid body hinged at s1's pivot about s1's world axis (exact composite mass, COM and
//! inertia, parallel-axis theorem); gravity off (Baxter compensates it internally, §4.5). Map (Fig. 12): for each
//! key (Δθ, ω) of a 21 × 21 grid over |Δθ| ≤ 0.00625 rad, |ω| ≤ 0.5 rad/s, start at angular velocity ω and
//! solve Eq. 26 (angle only) for the torque that reaches θ0 + Δθ in one XPBD step, by Gauss–Newton on the
//! residual with the engine's exact derivative (`step_vjp`, `joint_angles_vjp`); bilinear interpolation
//! between nodes. Check: one-step inverse dynamics τ = I_s1 (Δθ/h − ω)/h with I_s1 = M_s1,s1 from CRBA of the
//! full 7-joint arm (an independent code path). Scenario (Fig. 13): q_d = −0.45, q̇_d = 0, K = 30, D = 0.01,
//! s = 1, external torque 5 N·m on [5, 15) s and 10 N·m on [20, 30) s, 40 s; impedance vs PD only.
//! Runtime key (decision): (clip(q_d − q, ±0.00625), clip(q̇, ±0.5)), the map's torque to reach q_d in one step.
use crate::plot::{color, figure, Mark, Panel, Reference, Series, TRUTH};
use crate::result::{Check, ExperimentError, ExperimentResult};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use torsion_dynamics::{crba, DynModel};
use torsion_math::{Mat3, Quat, Vec3};
use torsion_model::builder::{JointDesc, ModelBuilder};
use torsion_model::{Control, MaximalState, Model};
use torsion_solvers::{DiffSolver, Solver, XpbdSolver};

pub const DT: f64 = 0.01;
pub const DTHETA_MAX: f64 = 0.00625;
pub const OMEGA_MAX: f64 = 0.5;
pub const Q_DES: f64 = -0.45;
pub const K_M: f64 = 30.0;
pub const D_M: f64 = 0.01;
pub const SCALE: f64 = 1.0;
pub const DURATION: f64 = 40.0;
/// (start, end, torque N·m) of the external pulses
pub const PULSES: [(f64, f64, f64); 2] = [(5.0, 15.0, 5.0), (20.0, 30.0, 10.0)];
const S1: usize = 1;

/// The s1-only model and the analytic inertia I_s1 = M_s1,s1 (CRBA of the full arm at the locked pose).
pub struct S1Arm {
    pub model: Model,
    pub axis: Vec3,
    pub inertia_crba: f64,
    /// a·I_pivot·a of the composite body (must equal the CRBA value)
    pub inertia_composite: f64,
}

pub fn s1_arm() -> Result<S1Arm, ExperimentError> {
    let full = crate::pbd_mpc::nominal_model()?;
    let nj = full.joint_count();
    let q = vec![0.0; nj];
    let s = full.state_at(&q)?;
    let (p, c) = (full.joint_parent[S1], full.joint_child[S1]);
    let pivot = s.x[p] + s.q[p].rotate(&full.joint_anchor_parent[S1]);
    let axis = s.q[p].rotate(&full.joint_axis_parent(S1)).normalize();
    // bodies distal to s1: the subtree of its child
    let mut distal = vec![false; full.body_count()];
    distal[c] = true;
    for j in 0..nj {
        if distal[full.joint_parent[j]] {
            distal[full.joint_child[j]] = true;
        }
    }
    let ks: Vec<usize> = (0..full.body_count()).filter(|&k| distal[k]).collect();
    let mass: f64 = ks.iter().map(|&k| full.body_mass[k]).sum();
    let com = ks.iter().fold(Vec3::zeros(), |a, &k| a + s.x[k] * full.body_mass[k]) / mass;
    let mut inertia = Mat3::zeros();
    for &k in &ks {
        let r = s.q[k].to_mat();
        let d = s.x[k] - com;
        inertia += r * full.body_inertia[k] * r.transpose()
            + (Mat3::identity() * d.norm_squared() - d * d.transpose()) * full.body_mass[k];
    }
    let dp = com - pivot;
    let i_pivot = inertia + (Mat3::identity() * dp.norm_squared() - dp * dp.transpose()) * mass;
    let mut b = ModelBuilder::new("baxter_s1_only").gravity(Vec3::zeros()).dt(DT);
    let base = b.add_fixed_body("base", Vec3::zeros(), Quat::identity());
    let link = b.add_body("s1_distal_composite", mass, inertia);
    b.set_body_com(link, dp);
    b.add_joint(JointDesc::hinge("s1", base, link, Vec3::zeros(), -dp, axis));
    let model = b.build()?;
    let dm = DynModel::from_model(&full).map_err(|e| ExperimentError::Failed(e.to_string()))?;
    let m =
        crba(&dm, &q, &mut torsion_dynamics::DynData::new(&dm)).map_err(|e| ExperimentError::Failed(e.to_string()))?;
    Ok(S1Arm { model, axis, inertia_crba: m[(S1, S1)], inertia_composite: axis.dot(&(i_pivot * axis)) })
}

/// Rigid state of the s1 body at angle θ and rate ω (pivot at the origin).
fn state(arm: &S1Arm, theta: f64, omega: f64) -> Result<MaximalState, ExperimentError> {
    let mut s = arm.model.state_at(&[theta])?;
    s.w[1] = arm.axis * omega;
    s.v[1] = s.w[1].cross(&s.x[1]);
    Ok(s)
}

/// One XPBD step's joint angle and its derivative w.r.t. the torque (exact reverse mode).
struct OneStep {
    solver: XpbdSolver,
    ws: torsion_solvers::xpbd::XpbdWorkspace,
    rec: torsion_solvers::xpbd::step::XpbdRecord,
}

impl OneStep {
    fn new(m: &Model) -> Result<Self, ExperimentError> {
        let solver = XpbdSolver::default();
        Ok(OneStep { ws: solver.workspace(m)?, rec: solver.record(m), solver })
    }
    fn angle_and_slope(&mut self, m: &Model, s: &MaximalState, tau: f64) -> Result<(f64, f64), ExperimentError> {
        let mut out = s.clone();
        self.solver.step(m, s, &Control::from_torques(&[tau]), DT, &mut out, &mut self.ws, Some(&mut self.rec))?;
        let theta = self.solver.joint_angles(m, &out)[0];
        let mut g = self.solver.zero_grad(m);
        self.solver.joint_angles_vjp(m, &out, &[1.0], &mut g);
        let (mut gs, mut gu) = (self.solver.zero_grad(m), [0.0]);
        let none = torsion_model::ParamSelection::none();
        self.solver.step_vjp(m, &self.rec, &g, &mut gs, &mut gu, &none, &mut [], &mut self.ws)?;
        Ok((theta, gu[0]))
    }
}

/// The net-torque map: τ_net on a grid of (Δθ, ω), bilinear interpolation (clamped at the edges).
pub struct NetTorqueMap {
    pub dtheta: Vec<f64>,
    pub omega: Vec<f64>,
    /// tau[i][j] at (dtheta[i], omega[j])
    pub tau: Vec<Vec<f64>>,
    /// largest final |θ1 − goal| of the Gauss–Newton solves, rad
    pub max_residual: f64,
}

fn linspace(a: f64, b: f64, n: usize) -> Vec<f64> {
    (0..n).map(|i| a + (b - a) * i as f64 / (n - 1) as f64).collect()
}

impl NetTorqueMap {
    /// Fig. 12: solve Eq. 26 (angle only) at every key by Gauss–Newton with the engine's derivative.
    pub fn build(arm: &S1Arm, n: usize, bar: &ProgressBar) -> Result<Self, ExperimentError> {
        let (dtheta, omega) = (linspace(-DTHETA_MAX, DTHETA_MAX, n), linspace(-OMEGA_MAX, OMEGA_MAX, n));
        let mut one = OneStep::new(&arm.model)?;
        let mut tau = vec![vec![0.0; n]; n];
        let mut max_residual: f64 = 0.0;
        for (i, &dth) in dtheta.iter().enumerate() {
            for (j, &om) in omega.iter().enumerate() {
                let s = state(arm, 0.0, om)?;
                let mut u = 0.0;
                let mut r = f64::INFINITY;
                for _ in 0..20 {
                    let (th, slope) = one.angle_and_slope(&arm.model, &s, u)?;
                    r = th - dth;
                    if r.abs() < 1e-14 || slope.abs() < 1e-300 {
                        break;
                    }
                    u -= r / slope;
                }
                max_residual = max_residual.max(r.abs());
                tau[i][j] = u;
            }
            bar.inc(1);
        }
        Ok(NetTorqueMap { dtheta, omega, tau, max_residual })
    }

    pub fn lookup(&self, dtheta: f64, omega: f64) -> f64 {
        let idx = |v: &[f64], x: f64| {
            let n = v.len();
            let f = ((x - v[0]) / (v[n - 1] - v[0]) * (n - 1) as f64).clamp(0.0, (n - 1) as f64);
            let i = (f.floor() as usize).min(n - 2);
            (i, f - i as f64)
        };
        let ((i, a), (j, b)) = (idx(&self.dtheta, dtheta), idx(&self.omega, omega));
        let t = &self.tau;
        (1.0 - a) * ((1.0 - b) * t[i][j] + b * t[i][j + 1]) + a * ((1.0 - b) * t[i + 1][j] + b * t[i + 1][j + 1])
    }
}

fn external(t: f64) -> f64 {
    PULSES.iter().filter(|p| t >= p.0 && t < p.1).map(|p| p.2).sum()
}

/// One 40 s closed loop; rows (t, q, τ_ext, τ_pd, τ_net, motor).
pub fn closed_loop(arm: &S1Arm, map: Option<&NetTorqueMap>) -> Result<Vec<[f64; 6]>, ExperimentError> {
    let solver = XpbdSolver::default();
    let mut ws = solver.workspace(&arm.model)?;
    let mut s = state(arm, Q_DES, 0.0)?;
    let mut next = s.clone();
    let steps = (DURATION / DT).round() as usize;
    let mut rows = Vec::with_capacity(steps + 1);
    for k in 0..=steps {
        let t = k as f64 * DT;
        let q = solver.joint_angles(&arm.model, &s)[0];
        let qd = arm.axis.dot(&s.w[1]);
        let tau_pd = K_M * (Q_DES - q) + D_M * (0.0 - qd);
        let tau_net = map.map_or(0.0, |m| {
            SCALE * m.lookup((Q_DES - q).clamp(-DTHETA_MAX, DTHETA_MAX), qd.clamp(-OMEGA_MAX, OMEGA_MAX))
        });
        let ext = external(t);
        let motor = tau_pd + tau_net;
        rows.push([t, q, ext, tau_pd, tau_net, motor]);
        if k == steps {
            break;
        }
        // the external torque acts about the s1 axis like a joint torque
        solver.step(&arm.model, &s, &Control::from_torques(&[motor + ext]), DT, &mut next, &mut ws, None)?;
        std::mem::swap(&mut s, &mut next);
    }
    Ok(rows)
}

/// Steady deflection of a pulse: mean of (q − q_d) over its last 5 s; stability summary of a run.
fn summarise(rows: &[[f64; 6]]) -> serde_json::Value {
    let window = |a: f64, b: f64| rows.iter().filter(move |r| r[0] >= a && r[0] < b).map(|r| r[1] - Q_DES);
    let mean = |a: f64, b: f64| {
        let v: Vec<f64> = window(a, b).collect();
        v.iter().sum::<f64>() / v.len().max(1) as f64
    };
    let p2p = |a: f64, b: f64| {
        let (lo, hi) = window(a, b).fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(v), h.max(v)));
        hi - lo
    };
    let finite = rows.iter().all(|r| r.iter().all(|v| v.is_finite()));
    let max_dev = rows.iter().map(|r| (r[1] - Q_DES).abs()).fold(0.0, f64::max);
    let max_ext = PULSES.iter().map(|p| p.2).fold(0.0, f64::max);
    // bounded: within the undamped step-response bound 2 τ_max / K (+10 %); not growing after the pulses
    let bound = 1.1 * 2.0 * max_ext / K_M;
    let (a1, a2) = (p2p(30.0, 35.0), p2p(35.0, 40.0));
    let stable = finite && max_dev <= bound && a2 <= 1.05 * a1 + 1e-9;
    json!({
        "steady_deflection": [mean(PULSES[0].1 - 5.0, PULSES[0].1), mean(PULSES[1].1 - 5.0, PULSES[1].1)],
        "oscillation_peak_to_peak_in_pulses": [p2p(PULSES[0].1 - 5.0, PULSES[0].1), p2p(PULSES[1].1 - 5.0, PULSES[1].1)],
        "max_abs_deviation": max_dev, "bound": bound,
        "peak_to_peak_30_35": a1, "peak_to_peak_35_40": a2,
        "final_abs_deviation": (rows.last().map_or(f64::NAN, |r| r[1]) - Q_DES).abs(),
        "stable": stable,
    })
}

pub fn run(quick: bool) -> Result<ExperimentResult, ExperimentError> {
    let t0 = std::time::Instant::now();
    let n = if quick { 11 } else { 21 };
    let bar = ProgressBar::new(n as u64 + 2);
    bar.set_style(
        ProgressStyle::with_template("pbd-impedance {bar:40} {pos}/{len} [{elapsed_precise}]")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let arm = s1_arm()?;
    let map = NetTorqueMap::build(&arm, n, &bar)?;
    let map_s = t0.elapsed().as_secs_f64();
    let i_s1 = arm.inertia_crba;
    let analytic = |dth: f64, om: f64| i_s1 * (dth / DT - om) / DT;
    // error at the nodes and, for the interpolation, at the cell centres; relative to the grid's largest torque
    let scale = analytic(DTHETA_MAX, -OMEGA_MAX).abs();
    let mut node_err: f64 = 0.0;
    for (i, &a) in map.dtheta.iter().enumerate() {
        for (j, &b) in map.omega.iter().enumerate() {
            node_err = node_err.max((map.tau[i][j] - analytic(a, b)).abs());
        }
    }
    let mut centre_err: f64 = 0.0;
    for i in 0..n - 1 {
        for j in 0..n - 1 {
            let (a, b) = (0.5 * (map.dtheta[i] + map.dtheta[i + 1]), 0.5 * (map.omega[j] + map.omega[j + 1]));
            centre_err = centre_err.max((map.lookup(a, b) - analytic(a, b)).abs());
        }
    }
    let pd = closed_loop(&arm, None)?;
    bar.inc(1);
    let imp = closed_loop(&arm, Some(&map))?;
    bar.inc(1);
    bar.finish_and_clear();
    let (spd, simp) = (summarise(&pd), summarise(&imp));
    let k_imp = K_M + SCALE * i_s1 / (DT * DT);
    let defl = |v: &serde_json::Value, i: usize| v["steady_deflection"][i].as_f64().unwrap_or(f64::NAN);
    let mut checks = vec![
        Check::le("map_max_rel_error_nodes", node_err / scale, 0.05),
        Check::le("map_max_rel_error_cell_centres", centre_err / scale, 0.05),
        Check::holds("PD closed loop stable and bounded", spd["stable"] == true),
        Check::holds("impedance closed loop stable and bounded", simp["stable"] == true),
    ];
    for (i, p) in PULSES.iter().enumerate() {
        let expected = p.2 / K_M;
        checks.push(Check::within(
            &format!("PD steady deflection, pulse {}", i + 1),
            defl(&spd, i),
            expected,
            0.05 * expected,
        ));
    }
    let metrics = json!({
        "inertia_s1_crba": i_s1, "inertia_s1_composite": arm.inertia_composite,
        "map_grid": [n, n], "map_max_solve_residual_rad": map.max_residual,
        "map_torque_range": scale,
        "map_max_rel_error_nodes": node_err / scale, "map_max_rel_error_cell_centres": centre_err / scale,
        "map_max_abs_error_nodes": node_err,
        "pd": spd, "impedance": simp,
        "pd_expected_deflection": PULSES.iter().map(|p| p.2 / K_M).collect::<Vec<_>>(),
        "impedance_expected_deflection": PULSES.iter().map(|p| p.2 / k_imp).collect::<Vec<_>>(),
        "wall_clock_s": t0.elapsed().as_secs_f64(), "map_build_s": map_s,
    });
    let paper = json!({
        "claims": "Fig. 13: impedance control stable under 5 / 10 N·m pulses; no numbers in the text",
        "targets": "map within 5 % of one-step inverse dynamics; stable bounded closed loop; PD steady deflection ≈ τ_ext/K = 0.167 / 0.333 rad",
        "pd_expected_deflection": [5.0 / K_M, 10.0 / K_M],
    });
    let settings = json!({
        "quick": quick, "dt": DT, "xpbd": "30 Gauss–Seidel iterations, limits on (s1 stays inside), gravity off",
        "model": "s1 only: the distal links (others locked at 0) lumped into one rigid body at s1's pivot and axis",
        "map": {"grid": [n, n], "dtheta_rad": [-DTHETA_MAX, DTHETA_MAX], "omega_rad_s": [-OMEGA_MAX, OMEGA_MAX], "solve": "Gauss–Newton on θ1(τ) − θ_goal (Eq. 26 angle only) with the exact XPBD derivative, ≤ 20 iterations, |r| < 1e-14", "interpolation": "bilinear, clamped"},
        "analytic": "τ = I_s1 (Δθ/h − ω)/h, I_s1 = M_s1,s1 (CRBA, full arm, other joints at 0)",
        "controller": {"q_des": Q_DES, "K": K_M, "D": D_M, "scale": SCALE, "key": "(clip(q_d − q, ±0.00625), clip(q̇, ±0.5))"},
        "pulses": PULSES.iter().map(|p| json!({"start": p.0, "end": p.1, "torque": p.2})).collect::<Vec<_>>(),
        "steady_deflection": "mean of q − q_d over the last 5 s of each pulse",
        "stable": "finite, max |q − q_d| ≤ 1.1 · 2 τ_max/K (the undamped step-response bound), and the peak-to-peak over [35, 40] s ≤ 1.05 × that over [30, 35] s",
    });
    let slice: Vec<(f64, f64, f64)> =
        map.omega.iter().enumerate().map(|(j, &om)| (om, map.tau[n - 1][j], analytic(map.dtheta[n - 1], om))).collect();
    Ok(ExperimentResult {
        scene: None,
        name: "pbd-impedance".into(),
        checks,
        metrics,
        paper,
        settings,
        plot: Box::new(move |p| plot(p, &pd, &imp, &slice)),
    })
}

/// (a) Fig. 13: the s1 deflection q − q_d under the 5 / 10 N·m pulses, PD only vs impedance, beside the PD's
/// expected steady deflections τ_ext/K (dashed); (b) the impedance run's torques; (c) one slice of the τ_net map,
/// XPBD optimisation (points) vs one-step inverse dynamics (dashed).
fn plot(
    path: &std::path::Path,
    pd: &[[f64; 6]],
    imp: &[[f64; 6]],
    slice: &[(f64, f64, f64)],
) -> Result<(), ExperimentError> {
    let defl = |rows: &[[f64; 6]]| rows.iter().map(|r| (r[0], r[1] - Q_DES)).collect::<Vec<_>>();
    let mut angle = Panel::new("s1 deflection under 5 / 10 N·m pulses (Fig. 13)", "t (s)", "q − q_d (rad)")
        .series(Series::line("PD only", defl(pd), color(0)))
        .series(Series::line("impedance (PD + τ_net)", defl(imp), color(1)));
    for (i, p) in PULSES.iter().enumerate() {
        let label = if i == 0 {
            format!("PD expected τ_ext/K: {:.3}, {:.3} rad", PULSES[0].2 / K_M, PULSES[1].2 / K_M)
        } else {
            String::new()
        };
        angle = angle.refs(Reference::truth_h(p.2 / K_M, label));
    }
    let mut torques = Panel::new("impedance run: torques at s1", "t (s)", "torque (N·m)");
    for (i, (col, label)) in
        [(2, "external"), (3, "PD component"), (4, "impedance τ_net"), (5, "motor")].iter().enumerate()
    {
        torques = torques.series(Series::line(*label, imp.iter().map(|r| (r[0], r[*col])).collect(), color(i)));
    }
    let map = Panel::new(format!("τ_net map at Δθ = {DTHETA_MAX}"), "ω (rad/s)", "τ_net (N·m)")
        .series(Series::new(
            "XPBD optimisation (map nodes)",
            slice.iter().map(|s| (s.0, s.1)).collect(),
            Mark::Points,
            color(1),
        ))
        .series(Series::new(
            "inverse dynamics I (Δθ/h − ω)/h",
            slice.iter().map(|s| (s.0, s.2)).collect(),
            Mark::Dashed,
            TRUTH,
        ));
    figure(path, &[angle, torques, map], 3)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The composite body's inertia about the s1 axis equals CRBA's M_s1,s1, and the map's derivative (the
    /// engine's adjoint through one step and the angle extraction) matches central differences.
    #[test]
    fn composite_inertia_and_one_step_slope() {
        let arm = s1_arm().unwrap();
        assert!((arm.inertia_composite - arm.inertia_crba).abs() < 1e-9 * arm.inertia_crba);
        let mut one = OneStep::new(&arm.model).unwrap();
        let s = state(&arm, 0.2, 0.3).unwrap();
        let (_, slope) = one.angle_and_slope(&arm.model, &s, 7.0).unwrap();
        let f = |u: f64| OneStep::new(&arm.model).unwrap().angle_and_slope(&arm.model, &s, u).unwrap().0;
        let fd = (f(7.0 + 1e-3) - f(7.0 - 1e-3)) / 2e-3;
        assert!((slope - fd).abs() < 1e-7 * fd.abs(), "{slope} vs {fd}");
    }
}
