//! `pbd-design` — spec 000 §4.1 (Table II): choose the link lengths (l1, l2) of a 2-link arm so that, under
//! the Cartesian stiffness controller τ = Jᵀ[K(p_des − p_ee) + D(ṗ_des − ṗ_ee)] (Eq. 29, K = 60, D = 6), it
//! tracks a 0.3 m circle with little mechanical work: L = Σ_t ‖p_ee − p_des‖ + λ Σ_t (θ_t − θ_{t−1})·τ_t
//! (Eq. 30, λ = 25, signed work). Setup = the spec's recommendation plus its "Checked numerically" choices:
//! horizontal plane, g = 0, uniform 1 kg rods (I = m l²/12), one counter-clockwise lap in 2 s (200 steps of
//! 0.01 s) starting at the circle point nearest the base, elbow θ2 ≥ 0, 30 Gauss–Seidel iterations.
//!
//! The gradient dL/d(l1, l2) is exact forward mode: the same generic XPBD step runs on 2-wide dual numbers,
//! through the controller, the initial inverse kinematics and the link geometry (anchors r/t, inertia).
//! Plain Adam from (3.0, 0.1) stalls in local minima (spec §4.1), so the optimiser is a documented
//! multi-start: Adam (lr 0.01, bounds) from (3.0, 0.1) and from a fixed set of other starts; the best final
//! loss wins and every path is reported. A coarse grid of the same loss locates the optimum as a check.
use crate::plot::{color, figure, lighten, Heat, Mark, Panel, Reference, Series, TRUTH};
use crate::result::{Check, ExperimentError, ExperimentResult};
use indicatif::{ProgressBar, ProgressStyle};
use nalgebra::{Const, Vector2};
use num_dual::DualSVec64;
use plotters::style::RGBColor;
use rayon::prelude::*;
use serde_json::json;
use torsion_math::{Quat, Scalar, Vec3};
use torsion_model::builder::two_link_arm;
use torsion_model::params::ParamKind;
use torsion_model::{MaximalState, Model, ParamTable};
use torsion_opt::Adam;
use torsion_solvers::{XpbdOptions, XpbdSolver};

type D2 = DualSVec64<2>;

#[derive(Clone, Debug)]
pub struct Setup {
    /// circle centre distance from the base pivot, m
    pub centre: f64,
    pub radius: f64,
    /// duration of the lap, s
    pub lap: f64,
    pub dt: f64,
    pub k: f64,
    pub d: f64,
    pub lambda: f64,
    /// link mass (fixed), kg; rod radius for the small axial inertia, m
    pub mass: f64,
    pub rod_radius: f64,
    pub iterations: usize,
    /// simulated duration, s (default: one lap)
    pub horizon: f64,
}

impl Setup {
    pub fn new(centre: f64) -> Self {
        Setup {
            centre,
            radius: 0.3,
            lap: 2.0,
            dt: 0.01,
            k: 60.0,
            d: 6.0,
            lambda: 25.0,
            mass: 1.0,
            rod_radius: 0.01,
            iterations: 30,
            horizon: 2.0,
        }
    }
    fn steps(&self) -> usize {
        (self.horizon / self.dt).round() as usize
    }
    /// desired position and velocity at time t (counter-clockwise, starting at angle π about the centre)
    fn desired<T: Scalar>(&self, t: f64) -> (Vector2<T>, Vector2<T>) {
        let w = 2.0 * std::f64::consts::PI / self.lap;
        let a = std::f64::consts::PI + w * t;
        (
            Vector2::new(T::c(self.centre + self.radius * a.cos()), T::c(self.radius * a.sin())),
            Vector2::new(T::c(-self.radius * w * a.sin()), T::c(self.radius * w * a.cos())),
        )
    }
}

/// Everything a design evaluation needs (model template, table, solver).
pub struct Design {
    pub setup: Setup,
    model: Model,
    table: ParamTable,
    solver: XpbdSolver,
}

/// Outcome of one rollout.
#[derive(Clone, Debug)]
pub struct Eval<T> {
    pub loss: T,
    pub track: T,
    pub work: T,
}

impl Design {
    pub fn new(setup: Setup) -> Result<Self, ExperimentError> {
        let model = two_link_arm(3.0, 0.1, setup.mass, Vec3::zeros(), setup.dt)?;
        let table = model.param_table();
        let solver = XpbdSolver::new(XpbdOptions { iterations: setup.iterations, ..Default::default() });
        Ok(Design { setup, model, table, solver })
    }

    /// The full parameter vector as a function of (l1, l2): anchors at the rod ends, rod inertia.
    fn theta<T: Scalar>(&self, l1: T, l2: T) -> Vec<T> {
        let (m, r) = (T::c(self.setup.mass), T::c(self.setup.rod_radius));
        let l = [l1, l2];
        let mut th: Vec<T> = self.model.param_vector().iter().map(|&v| T::c(v)).collect();
        for (i, k) in self.table.kinds.iter().enumerate() {
            match *k {
                ParamKind::BodyInertia(b, e) => {
                    let lb = l[b - 1];
                    th[i] = match e {
                        0 => m * r * r * T::c(0.5),
                        3 | 5 => m * lb * lb / T::c(12.0) + m * r * r * T::c(0.25),
                        _ => T::zero(),
                    }
                }
                ParamKind::AnchorParent(1, 0) => th[i] = l1 * T::c(0.5),
                ParamKind::AnchorChild(j, 0) => th[i] = -l[j] * T::c(0.5),
                _ => {}
            }
        }
        th
    }

    /// Start pose: inverse kinematics to the reachable point nearest the lap's start, elbow θ2 ≥ 0.
    pub fn initial_angles<T: Scalar>(&self, l1: T, l2: T) -> (T, T) {
        let dist = T::c(self.setup.centre - self.setup.radius);
        let (lo, hi) = ((l1 - l2).abs(), l1 + l2);
        // branch on primal values: at the clamps θ2 is the constant 0 or π
        let th2 = if dist.re() <= lo.re() {
            T::c(if l1.re() >= l2.re() { std::f64::consts::PI } else { 0.0 })
        } else if dist.re() >= hi.re() {
            T::zero()
        } else {
            ((dist * dist - l1 * l1 - l2 * l2) / (T::c(2.0) * l1 * l2)).acos()
        };
        let th1 = -(l2 * th2.sin()).atan2(l1 + l2 * th2.cos());
        (th1, th2)
    }

    fn initial_state<T: Scalar>(&self, l1: T, l2: T) -> MaximalState<T> {
        let (a1, a2) = self.initial_angles(l1, l2);
        let mut s = MaximalState::<T>::zeros(3);
        let half = T::c(0.5);
        let e1 = Vec3::new(a1.cos(), a1.sin(), T::zero());
        let e12 = Vec3::new((a1 + a2).cos(), (a1 + a2).sin(), T::zero());
        s.x[1] = e1 * (l1 * half);
        s.q[1] = Quat::from_axis_angle(&Vec3::z(), a1);
        s.x[2] = e1 * l1 + e12 * (l2 * half);
        s.q[2] = Quat::from_axis_angle(&Vec3::z(), a1 + a2);
        s
    }

    /// Roll out one lap and evaluate Eq. 30; `traj` receives the tip path if given.
    pub fn evaluate<T: Scalar>(&self, l1: T, l2: T, mut traj: Option<&mut Vec<[f64; 4]>>) -> Eval<T> {
        let st = &self.setup;
        let th = self.theta(l1, l2);
        let mut s = self.initial_state(l1, l2);
        let (mut track, mut work) = (T::zero(), T::zero());
        let tip_local = Vec3::new(l2 * T::c(0.5), T::zero(), T::zero());
        let tip = |s: &MaximalState<T>| {
            let p = s.x[2] + s.q[2].rotate(&tip_local);
            Vector2::new(p.x, p.y)
        };
        let mut phi = self.solver.joint_angles(&self.model, &s);
        for k in 0..st.steps() {
            let t = k as f64 * st.dt;
            // Eq. 29 Cartesian stiffness controller on the extracted joint angles (§3.6) and rates
            let (s1, c1, s12, c12) = (phi[0].sin(), phi[0].cos(), (phi[0] + phi[1]).sin(), (phi[0] + phi[1]).cos());
            let j = nalgebra::Matrix2::new(-l1 * s1 - l2 * s12, -l2 * s12, l1 * c1 + l2 * c12, l2 * c12);
            let rate = Vector2::new(s.w[1].z, s.w[2].z - s.w[1].z);
            let (pd, vd) = st.desired::<T>(t);
            let f = (pd - tip(&s)) * T::c(st.k) + (vd - j * rate) * T::c(st.d);
            let tau = j.transpose() * f;
            let next = self.solver.step_generic(&self.model, &self.table, &th, &s, &[tau.x, tau.y], st.dt);
            let phin = self.solver.joint_angles(&self.model, &next);
            let (pn, _) = st.desired::<T>(t + st.dt);
            let e = tip(&next) - pn;
            // guarded norm (no NaN at zero error)
            let en = e.norm_squared();
            track += if en.re() > 1e-300 { en.sqrt() } else { T::zero() };
            for i in 0..2 {
                // wrapped angle increment (the extracted angle lives in (−π, π])
                let d = phin[i] - phi[i];
                work += d.sin().atan2(d.cos()) * tau[i];
            }
            if let Some(tr) = traj.as_deref_mut() {
                let p = tip(&next);
                tr.push([t + st.dt, p.x.re(), p.y.re(), (tau.x * tau.x + tau.y * tau.y).sqrt().re()]);
            }
            s = next;
            phi = phin;
        }
        Eval { loss: track + work * T::c(st.lambda), track, work }
    }

    pub fn loss(&self, l: [f64; 2]) -> Eval<f64> {
        self.evaluate(l[0], l[1], None)
    }

    /// Loss and exact gradient w.r.t. (l1, l2) by forward-mode duals through the whole rollout.
    pub fn loss_grad(&self, l: [f64; 2]) -> (Eval<f64>, [f64; 2]) {
        let e = self.evaluate(D2::from_re(l[0]).derivative(0), D2::from_re(l[1]).derivative(1), None);
        let g = e.loss.eps.unwrap_generic(Const::<2>, Const::<1>);
        (Eval { loss: e.loss.re, track: e.track.re, work: e.work.re }, [g[0], g[1]])
    }
}

/// One optimisation path.
#[derive(Clone, Debug)]
pub struct Path {
    pub start: [f64; 2],
    pub points: Vec<[f64; 3]>,
}

/// Adam with an exponentially decaying learning rate lr_k = lr0 (lr_end/lr0)^(k/(iters−1)).
pub fn optimise(design: &Design, start: [f64; 2], iters: usize, lr: (f64, f64), bar: &ProgressBar) -> Path {
    let mut x = start.to_vec();
    let mut opt = Adam::new(2, lr.0).with_bounds(vec![(0.2, 4.0), (0.05, 1.5)]);
    let mut points = Vec::with_capacity(iters + 1);
    for k in 0..iters {
        let (e, g) = design.loss_grad([x[0], x[1]]);
        points.push([x[0], x[1], e.loss]);
        opt.lr = lr.0 * (lr.1 / lr.0).powf(k as f64 / (iters.max(2) - 1) as f64);
        opt.step(&mut x, &g);
        bar.inc(1);
    }
    points.push([x[0], x[1], design.loss([x[0], x[1]]).loss]);
    Path { start, points }
}

pub struct GridResult {
    pub best: [f64; 3],
    pub l1: Vec<f64>,
    pub l2: Vec<f64>,
    pub loss: Vec<Vec<f64>>,
}

pub fn grid(design: &Design, l1: Vec<f64>, l2: Vec<f64>, bar: &ProgressBar) -> GridResult {
    let loss: Vec<Vec<f64>> = l1
        .par_iter()
        .map(|&a| {
            let row = l2.iter().map(|&b| design.loss([a, b]).loss).collect();
            bar.inc(1);
            row
        })
        .collect();
    let mut best = [0.0, 0.0, f64::INFINITY];
    for (i, row) in loss.iter().enumerate() {
        for (j, &v) in row.iter().enumerate() {
            if v < best[2] {
                best = [l1[i], l2[j], v];
            }
        }
    }
    GridResult { best, l1, l2, loss }
}

fn linspace(a: f64, b: f64, n: usize) -> Vec<f64> {
    (0..n).map(|i| a + (b - a) * i as f64 / (n - 1) as f64).collect()
}

/// Adam iterations per start (full, quick) and the learning-rate schedule (start, end): small steps, the
/// global basin is only ~0.1 m wide in l1 (see the grid panel of the plot).
const ITERS: [usize; 2] = [100, 30];
const LR: (f64, f64) = (0.01, 0.001);
/// Adam starts besides (3.0, 0.1): the best screened designs (full, quick).
const STARTS: [usize; 2] = [4, 2];

/// Screening lattice (the multi-start's first stage): cell centres of l1 ∈ [1.5, 3.5], l2 ∈ [0.1, 0.8], spacing
/// 0.1 (also in quick mode: the global basin is ~0.1 wide).
/// It does not depend on the circle; the best designs, pairwise ≥ 0.15 apart, seed Adam.
fn screening(design: &Design, quick: bool, n: usize) -> Vec<[f64; 2]> {
    let step = 0.1;
    let _ = quick;
    // offset by half a spacing so that round designs (e.g. the expected (c, 0.3)) are not lattice points
    let l1s: Vec<f64> = (0..(2.0 / step) as usize).map(|i| 1.5 + step * (i as f64 + 0.5)).collect();
    let l2s: Vec<f64> = (0..(0.7 / step) as usize).map(|i| 0.1 + step * (i as f64 + 0.5)).collect();
    let mut scored: Vec<(f64, [f64; 2])> = l1s
        .par_iter()
        .flat_map_iter(|&a| l2s.iter().map(move |&b| (a, b)))
        .map(|(a, b)| (design.loss([a, b]).loss, [a, b]))
        .collect();
    scored.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut picked: Vec<[f64; 2]> = vec![];
    for (_, p) in scored {
        if picked.iter().all(|q| (q[0] - p[0]).hypot(q[1] - p[1]) >= 0.15) {
            picked.push(p);
        }
        if picked.len() == n {
            break;
        }
    }
    picked
}

/// One full design run for a circle centre: multi-start Adam + grid check.
struct Run {
    centre: f64,
    initial: Eval<f64>,
    best: Path,
    paths: Vec<Path>,
    final_eval: Eval<f64>,
    grid: GridResult,
    traj_initial: Vec<[f64; 4]>,
    traj_final: Vec<[f64; 4]>,
}

fn design_run(centre: f64, quick: bool, bar: &ProgressBar) -> Result<Run, ExperimentError> {
    let design = Design::new(Setup::new(centre))?;
    let (iters, lr) = (ITERS[quick as usize], LR);
    let mut starts = vec![[3.0, 0.1]];
    starts.extend(screening(&design, quick, STARTS[quick as usize]));
    let paths: Vec<Path> = starts.par_iter().map(|&s| optimise(&design, s, iters, lr, bar)).collect();
    let best = paths
        .iter()
        .min_by(|a, b| a.points.last().unwrap()[2].total_cmp(&b.points.last().unwrap()[2]))
        .cloned()
        .ok_or_else(|| ExperimentError::Failed("no optimisation path".into()))?;
    let n = if quick { 9 } else { 41 };
    let g = grid(&design, linspace(centre - 0.4, centre + 0.4, n), linspace(0.1, 0.6, if quick { 6 } else { 26 }), bar);
    let fin = *best.points.last().unwrap();
    let mut traj_initial = vec![];
    let mut traj_final = vec![];
    let initial = design.evaluate(3.0, 0.1, Some(&mut traj_initial));
    let final_eval = design.evaluate(fin[0], fin[1], Some(&mut traj_final));
    Ok(Run { centre, initial, best, paths, final_eval, grid: g, traj_initial, traj_final })
}

pub fn run(quick: bool) -> Result<ExperimentResult, ExperimentError> {
    let centres = [2.7, 2.0];
    let (iters, nstarts, grid_rows) = (ITERS[quick as usize], 1 + STARTS[quick as usize], if quick { 9 } else { 41 });
    let total = centres.len() * (nstarts * iters + grid_rows);
    let bar = ProgressBar::new(total as u64);
    bar.set_style(
        ProgressStyle::with_template("pbd-design {bar:40} {pos}/{len} [{elapsed_precise}]")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let runs: Vec<Run> = centres.iter().map(|&c| design_run(c, quick, &bar)).collect::<Result<_, _>>()?;
    bar.finish_and_clear();
    let (a, b) = (&runs[0], &runs[1]);
    let fa = a.best.points.last().unwrap();
    let fb = b.best.points.last().unwrap();
    let path_json = |r: &Run| {
        json!(r.paths.iter().map(|p| json!({"start": p.start, "final": p.points.last().unwrap(), "path_every_10": p.points.iter().step_by(10).collect::<Vec<_>>()})).collect::<Vec<_>>())
    };
    let metrics = json!({
        "l1": fa[0], "l2": fa[1], "circle_center_distance": a.centre,
        "loss_initial": a.initial.loss, "loss_final": a.final_eval.loss,
        "loss_ratio": a.initial.loss / a.final_eval.loss,
        "work_initial": a.initial.work, "work_final": a.final_eval.work,
        "work_ratio": a.initial.work / a.final_eval.work,
        "tracking_initial": a.initial.track, "tracking_final": a.final_eval.track,
        "grid_optimum": [a.grid.best[0], a.grid.best[1]], "grid_optimum_loss": a.grid.best[2],
        "l1_c2": fb[0], "l2_c2": fb[1], "circle_center_distance_c2": b.centre,
        "loss_initial_c2": b.initial.loss, "loss_final_c2": b.final_eval.loss,
        "work_initial_c2": b.initial.work, "work_final_c2": b.final_eval.work,
        "grid_optimum_c2": [b.grid.best[0], b.grid.best[1]], "grid_optimum_loss_c2": b.grid.best[2],
        "paths": path_json(a), "paths_c2": path_json(b),
    });
    let paper = json!({
        "l1_initial": 3.0, "l2_initial": 0.1, "l1": 2.7026, "l2": 0.3074, "l1_text": 2.707, "l2_text": 0.302,
        "loss_initial": 51.716, "loss_final": 14.448, "work_initial": 1.475, "work_final": 0.368,
        "targets": "l2 = 0.30 ± 0.03, l1 = centre ± 0.03 (both runs), loss ratio ≥ 3.5, work ratio ≥ 4"
    });
    let st = &Setup::new(2.7);
    let settings = json!({
        "quick": quick, "circle_radius": st.radius, "lap_s": st.lap, "dt": st.dt, "steps": st.steps(), "K": st.k, "D": st.d,
        "lambda": st.lambda, "gravity": 0.0, "link_mass": st.mass, "rod_radius": st.rod_radius, "iterations": st.iterations,
        "optimiser": format!("multi-start Adam: starts = (3.0, 0.1) and the {} best designs of a screening lattice (cell centres over l1 ∈ [1.5, 3.5], l2 ∈ [0.1, 0.8], spacing {}, pairwise ≥ 0.15 apart); Adam lr {} → {} (exponential decay), {} iterations per start, bounds l1 ∈ [0.2, 4], l2 ∈ [0.05, 1.5]; the best final loss wins", STARTS[quick as usize], 0.1, LR.0, LR.1, iters),
        "gradient": "forward-mode dual numbers (2 directions) through the XPBD rollout, controller and IK start",
        "work": "signed, Σ (θ_t − θ_{t−1})·τ_t", "start": "circle point nearest the base, counter-clockwise, elbow θ2 ≥ 0",
    });
    let plot_runs: Vec<PlotRun> = runs
        .iter()
        .map(|r| PlotRun {
            centre: r.centre,
            traj_initial: r.traj_initial.clone(),
            traj_final: r.traj_final.clone(),
            best: r.best.clone(),
            from_paper_start: r.paths[0].clone(),
            grid_best: r.grid.best,
        })
        .collect();
    let grid0 = (runs[0].grid.l1.clone(), runs[0].grid.l2.clone(), runs[0].grid.loss.clone());
    let checks = vec![
        Check::within("l2", fa[1], 0.30, 0.03),
        Check::within("l1 − centre", fa[0] - a.centre, 0.0, 0.03),
        Check::within("l2 (centre 2.0)", fb[1], 0.30, 0.03),
        Check::within("l1 − centre (centre 2.0)", fb[0] - b.centre, 0.0, 0.03),
        Check::ge("loss ratio", a.initial.loss / a.final_eval.loss, 3.5),
        Check::ge("work ratio", a.initial.work / a.final_eval.work, 4.0),
    ];
    Ok(ExperimentResult {
        scene: None,
        name: "pbd-design".into(),
        checks,
        metrics,
        paper,
        settings,
        plot: Box::new(move |p| plot(p, &plot_runs, &grid0)),
    })
}

/// What the plot needs of one design run.
struct PlotRun {
    centre: f64,
    traj_initial: Vec<[f64; 4]>,
    traj_final: Vec<[f64; 4]>,
    best: Path,
    /// Adam from the paper's start (3.0, 0.1)
    from_paper_start: Path,
    grid_best: [f64; 3],
}

/// (a) tip paths, initial vs optimised; (b) the loss over (l1, l2) at centre 2.7 (colour bar) with the Adam paths,
/// the paper's design marked; (c) the loss per Adam iteration from the paper's start (3.0, 0.1) and of the best
/// start, beside the paper's 51.716 → 14.448 (Table II).
fn plot(
    path: &std::path::Path,
    runs: &[PlotRun],
    grid: &(Vec<f64>, Vec<f64>, Vec<Vec<f64>>),
) -> Result<(), ExperimentError> {
    let mut tips = Panel::new("end-effector path: initial (3.0, 0.1) vs optimised", "x (m)", "y (m)");
    for (i, r) in runs.iter().enumerate() {
        let circle: Vec<(f64, f64)> = (0..=100)
            .map(|k| {
                let a = k as f64 / 100.0 * std::f64::consts::TAU;
                (r.centre + 0.3 * a.cos(), 0.3 * a.sin())
            })
            .collect();
        let fin = r.best.points.last().copied().unwrap_or([f64::NAN; 3]);
        let label = if i == 0 { "desired circles (r = 0.3 m)" } else { "" };
        tips = tips
            .series(Series::new(label, circle, Mark::Dashed, TRUTH))
            .series(Series::line(
                format!("c = {}: initial (3.0, 0.1)", r.centre),
                r.traj_initial.iter().map(|p| (p[1], p[2])).collect(),
                lighten(color(2 * i), 0.4),
            ))
            .series(Series::line(
                format!("c = {}: optimised ({:.3}, {:.3})", r.centre, fin[0], fin[1]),
                r.traj_final.iter().map(|p| (p[1], p[2])).collect(),
                color(2 * i + 1),
            ));
    }
    let (l1, l2, loss) = grid;
    let r0 = &runs[0];
    let pts = |p: &Path| p.points.iter().map(|q| (q[0], q[1])).collect::<Vec<_>>();
    let land = Panel {
        heat: Some(Heat {
            x: l1.clone(),
            y: l2.clone(),
            z: loss.clone(),
            label: "loss (Eq. 30), log scale".into(),
            log: true,
        }),
        ..Panel::new(format!("loss over (l1, l2), c = {}", r0.centre), "l1 (m)", "l2 (m)")
    }
    .series(Series::line("Adam from (3.0, 0.1)", pts(&r0.from_paper_start), RGBColor(255, 0, 255)))
    .series(Series::line("best Adam path (multi-start)", pts(&r0.best), RGBColor(214, 39, 40)))
    .refs(Reference::point(r0.grid_best[0], r0.grid_best[1], "grid optimum", RGBColor(255, 127, 14)))
    .refs(Reference::paper_point(2.7026, 0.3074, "paper: (2.7026, 0.3074)"));
    let curve = |p: &Path| p.points.iter().map(|q| q[2]).collect::<Vec<_>>();
    let mut losses =
        Panel::new("loss per Adam iteration (Table II)", "Adam iteration", "loss (Eq. 30)").x_int().log_y();
    for (i, r) in runs.iter().enumerate() {
        let s = r.best.start;
        losses = losses
            .series(Series::indexed(
                format!("c = {}: from (3.0, 0.1)", r.centre),
                &curve(&r.from_paper_start),
                Mark::Dashed,
                color(2 * i),
            ))
            .series(Series::indexed(
                format!("c = {}: best start ({:.2}, {:.2})", r.centre, s[0], s[1]),
                &curve(&r.best),
                Mark::Line,
                color(2 * i + 1),
            ));
    }
    let losses = losses
        .refs(Reference::paper_h(51.716, "paper: initial loss 51.716"))
        .refs(Reference::paper_h(14.448, "paper: final loss 14.448").with_color(RGBColor(120, 120, 120)));
    figure(path, &[tips, land, losses], 3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn design_gradient_matches_finite_differences() {
        // the first quarter lap (50 steps): over the whole lap the closed loop passes near singular poses
        // where the loss is so curved that central differences need h < 1e-7 (docs/gradients.md)
        let d = Design::new(Setup { horizon: 0.5, ..Setup::new(2.7) }).unwrap();
        // (at some designs, e.g. (2.2, 0.5), the closed loop nears a singular pose and central differences with
        // h = 1e-7 still carry 5e-6 of curvature error; see docs/gradients.md)
        for l in [[2.9, 0.25], [2.7, 0.32], [3.0, 0.1]] {
            let (_, g) = d.loss_grad(l);
            let fd = torsion_diff::fd_gradient(|e| d.loss([l[0] + e[0], l[1] + e[1]]).loss, 2, 1e-7);
            let err = torsion_diff::rel_err(&g, &fd);
            eprintln!("design gradient at {l:?}: rel err vs FD {err:.2e}");
            assert!(err < 1e-6, "{l:?}: dual {g:?} vs fd {fd:?} ({err:e})");
        }
    }

    #[test]
    fn initial_pose_reaches_the_nearest_point() {
        let d = Design::new(Setup::new(2.7)).unwrap();
        let s = d.initial_state(2.7, 0.3);
        let tip = s.x[2] + s.q[2].rotate(&Vec3::new(0.15, 0.0, 0.0));
        assert!((tip - Vec3::new(2.4, 0.0, 0.0)).norm() < 1e-12);
        let (_, th2) = d.initial_angles(3.0, 0.1);
        assert!((th2 - std::f64::consts::PI).abs() < 1e-15, "(3.0, 0.1) cannot reach 2.4 m: folded");
    }
}
