//! Shared machinery of the spec 001 identification experiments (§4 E1, E2, E4, E5): a floor and one or two
//! free cubes (MJCF), rollouts of the contact stepper with per-pair friction, the forward sensitivities of the
//! cube positions w.r.t. (μ, m, ε, initial state) chained from `step_jacobians_with_contacts`, synthetic data
//! from a different solver setting, and the Levenberg–Marquardt fit on a multi-step position loss.
use crate::plot::{color, Mark, Panel, Reference, Series};
use crate::result::{Check, ExperimentError, ExperimentResult};
use crate::scene::{Recorder, SceneView};
use crate::stay_still::Lcg;
use nalgebra::DMatrix;
use torsion_model::io::mjcf::load_mjcf_str;
use torsion_model::{Model, ParamSelection};
use torsion_opt::{levenberg_marquardt, LmOptions, Param};
use torsion_solvers::contact::ContactStep;
use torsion_solvers::featherstone::GenState;
use torsion_solvers::ncp::{FrictionSet, NcpOptions, NcpSolver};
use torsion_solvers::Solver;

/// Cube half size (m) and gravity.
pub const HALF: f64 = 0.05;
pub const G: f64 = 9.81;
/// Position noise σ (m): spec 001 §3.11 item 8 read as σ = 1 mm.
pub const SIGMA: f64 = 1e-3;

/// Physical parameters of the unknown cube A and its initial planar state (x0, y0, vx0, vy0).
#[derive(Clone, Debug)]
pub struct Phys {
    pub mu: f64,
    pub mass: f64,
    pub eps: f64,
    pub init: [f64; 4],
}

/// A scene: the floor, cube A (unknown) and optionally cube B (known, at rest at `b_x`).
#[derive(Clone, Debug)]
pub struct Scene {
    pub model: Model,
    pub two: bool,
    /// floor friction of cube B (known)
    pub mu_b: f64,
    /// known generalized force on A (world x, y; A does not rotate in these scenes)
    pub push: [f64; 2],
    pub b_x: f64,
    /// collision margin (0: no speculative contacts, so Newton restitution holds at the impact, spec 001 §4 E5)
    pub margin: f64,
}

impl Scene {
    pub fn new(
        two: bool,
        mass_b: f64,
        b_x: f64,
        mu_b: f64,
        push: [f64; 2],
        margin: f64,
    ) -> Result<Self, ExperimentError> {
        let b = if two {
            format!(
                r#"<body name="b" pos="{b_x} 0 {HALF}"><freejoint/><geom type="box" size="{HALF} {HALF} {HALF}" mass="{mass_b}"/></body>"#
            )
        } else {
            String::new()
        };
        let xml = format!(
            r#"<mujoco model="ncp_cubes"><option timestep="0.01" gravity="0 0 -{G}"/><worldbody>
<geom name="floor" type="plane" size="20 20 0.1"/>
<body name="a" pos="0 0 {HALF}"><freejoint/><geom type="box" size="{HALF} {HALF} {HALF}" mass="1"/></body>{b}
</worldbody></mujoco>"#
        );
        let model = load_mjcf_str(&xml, "ncp_cubes.xml", None)?;
        Ok(Scene { model, two, mu_b, push, b_x, margin })
    }

    /// Cube A alone on the floor (no margin) under the fixed horizontal push `push` (N).
    pub fn one_cube(push: [f64; 2]) -> Result<Self, ExperimentError> {
        Scene::new(false, 1.0, 0.0, 0.0, push, 0.0)
    }

    pub fn nv(&self) -> usize {
        self.model.nv()
    }

    /// The model with cube A's mass m (inertia kept consistent, I = m s²/6 with s = 2·HALF; spec 001 §6 item 11).
    pub fn model_with_mass(&self, m: f64) -> Model {
        let mut model = self.model.clone();
        model.body_mass[1] = m;
        model.body_inertia[1] = nalgebra::Matrix3::identity() * (m * (2.0 * HALF).powi(2) / 6.0);
        model
    }

    /// The initial state: the cubes resting on the floor (1 µm deep: contacts exist at margin 0), A moving.
    pub fn initial(&self, p: &Phys) -> GenState {
        let z = HALF - 1e-6;
        let mut q = vec![p.init[0], p.init[1], z, 1.0, 0.0, 0.0, 0.0];
        let mut v = vec![0.0, 0.0, 0.0, p.init[2], p.init[3], 0.0];
        if self.two {
            q.extend_from_slice(&[self.b_x, 0.0, z, 1.0, 0.0, 0.0, 0.0]);
            v.extend_from_slice(&[0.0; 6]);
        }
        GenState::new(q, v)
    }

    /// The stepper (restitution is per contact: `simulate` sets the frames' μ and ε).
    pub fn solver(&self, set: FrictionSet, n_step: usize, tolerance: f64) -> NcpSolver {
        // the experiments' pass counts are theirs (`tolerance` 0: exactly n_step passes): no residual stop
        let mut o = NcpOptions { n_step, tolerance, residual_tolerance: 0.0, friction_set: set, ..Default::default() };
        o.collision.margin = self.margin;
        NcpSolver::new(o)
    }
}

/// Which sensitivities to propagate (columns in this order: μ, m, ε, x0, y0, vx0, vy0).
pub const NCOL: usize = 7;

/// A rollout: per observation time the cube positions (A then B), the sensitivities of those positions
/// (3 per cube rows × NCOL) when asked, and the NCP reports' pass counts.
pub struct Rollout {
    pub pos: Vec<Vec<f64>>,
    pub sens: Vec<DMatrix<f64>>,
}

/// Simulate `steps` steps of length dt, recording every `every`-th state. `jac`: propagate sensitivities. `rec`:
/// also record every `every`-th state with the contacts of the step that led to it (the viewer's scene).
#[allow(clippy::too_many_arguments)]
pub fn simulate(
    sc: &Scene,
    p: &Phys,
    set: FrictionSet,
    n_step: usize,
    tolerance: f64,
    dt: f64,
    steps: usize,
    every: usize,
    jac: bool,
    mut rec: Option<&mut Recorder>,
) -> Result<Rollout, ExperimentError> {
    let model = sc.model_with_mass(p.mass);
    let solver = sc.solver(set, n_step, tolerance);
    let mut ws = Solver::workspace(&solver, &model)?;
    let nv = model.nv();
    let nb = if sc.two { 2 } else { 1 };
    let mut u = vec![0.0; nv];
    u[3] = sc.push[0];
    u[4] = sc.push[1];
    let sel = if jac { ParamSelection::by_prefix(&model, "body_mass[a]") } else { ParamSelection { indices: vec![] } };
    let mut s = sc.initial(p);
    // tangent sensitivities of the state (2nv × NCOL); the initial-state columns (identity orientation: the
    // tangent's linear part is the world translation / velocity)
    let mut st = DMatrix::zeros(2 * nv, NCOL);
    st[(3, 3)] = 1.0;
    st[(4, 4)] = 1.0;
    st[(nv + 3, 5)] = 1.0;
    st[(nv + 4, 6)] = 1.0;
    let mut out = Rollout { pos: vec![], sens: vec![] };
    let record = |s: &GenState, st: &DMatrix<f64>, out: &mut Rollout| {
        let mut pos = Vec::with_capacity(3 * nb);
        let mut sens = DMatrix::zeros(3 * nb, NCOL);
        for k in 0..nb {
            let q = &s.q[7 * k..7 * k + 7];
            pos.extend_from_slice(&q[..3]);
            if jac {
                // ∂p/∂(tangent) = R on the joint's linear part
                let r = torsion_math::Quat::new(q[3], q[4], q[5], q[6]).normalize().to_mat();
                let lin = st.rows(6 * k + 3, 3);
                sens.rows_mut(3 * k, 3).copy_from(&(r * lin));
            }
        }
        out.pos.push(pos);
        out.sens.push(sens);
    };
    record(&s, &st, &mut out);
    if let Some(rec) = rec.as_deref_mut() {
        rec.gen(0.0, &s, &[])?;
    }
    for t in 1..=steps {
        solver.detect(&model, &mut ws, &s.q, &s.warm)?;
        let mut frames = ws.frames.clone();
        // per-pair friction (spec 001 §6 item 10): floor–A unknown μ, floor–B known, A–B frictionless; one
        // restitution ε at every contact (its column: `d_restitution`, the common shift of all contacts' ε)
        let mut a_floor = vec![];
        for (i, f) in frames.iter_mut().enumerate() {
            f.restitution = p.eps;
            let pair = (f.body_a.min(f.body_b), f.body_a.max(f.body_b));
            f.mu = match pair {
                (0, 1) => {
                    a_floor.push(i);
                    p.mu
                }
                (0, 2) => sc.mu_b,
                _ => 0.0,
            };
        }
        let mut next = s.clone();
        let report = if jac {
            let (j, nx, report) = solver.step_jacobians_with_contacts(
                &ContactStep::new(&model, &s, &u, dt, &frames),
                &mut ws.ncp,
                &sel,
            )?;
            let mut add = DMatrix::zeros(2 * nv, NCOL);
            for &i in &a_floor {
                for r in 0..2 * nv {
                    add[(r, 0)] += j.d_mu[(r, i)];
                }
            }
            for r in 0..2 * nv {
                add[(r, 1)] = j.c[(r, 0)];
                add[(r, 2)] = j.d_restitution[r];
            }
            st = &j.a * &st + add;
            next = nx;
            report
        } else {
            solver.step_with_contacts(&ContactStep::new(&model, &s, &u, dt, &frames), &mut ws.ncp, &mut next)?
        };
        s = next;
        if t % every == 0 {
            record(&s, &st, &mut out);
            if let Some(rec) = rec.as_deref_mut() {
                rec.gen(t as f64 * dt, &s, &[])?;
                rec.contacts(&frames, &report.lambda_n);
            }
        }
    }
    Ok(out)
}

/// Synthetic observations (spec 001 §4 E1 "a different Δt"): the truth simulated at Δt/sub with many staggered
/// passes to a tolerance (100 passes, 1e-10), every sub-th state kept, N(0, σ²) added to every position coordinate.
#[allow(clippy::too_many_arguments)]
pub fn observe(
    sc: &Scene,
    truth: &Phys,
    dt: f64,
    steps: usize,
    sub: usize,
    sigma: f64,
    seed: u64,
) -> Result<Vec<Vec<f64>>, ExperimentError> {
    let r = simulate(sc, truth, FrictionSet::Cone, 100, 1e-10, dt / sub.max(1) as f64, sub * steps, sub, false, None)?;
    let mut rng = Lcg::new(seed);
    Ok(r.pos.into_iter().map(|p| p.into_iter().map(|x| x + sigma * rng.normal()).collect()).collect())
}

/// What is estimated: the columns of `NCOL` left free (the rest held at `base`), with their parameterisations.
pub struct Fit<'a> {
    pub scene: &'a Scene,
    pub set: FrictionSet,
    pub dt: f64,
    pub steps: usize,
    /// the identification solver's staggered passes (tolerance 0: a fixed tape)
    pub n_step: usize,
    pub free: Vec<(usize, Param)>,
    pub base: Phys,
}

pub struct FitResult {
    pub phys: Phys,
    pub cost: f64,
    pub iterations: usize,
    pub history: Vec<f64>,
    /// the physical parameters after each accepted step (first: the start)
    pub path: Vec<Phys>,
}

fn get(p: &Phys, c: usize) -> f64 {
    match c {
        0 => p.mu,
        1 => p.mass,
        2 => p.eps,
        k => p.init[k - 3],
    }
}
fn set(p: &mut Phys, c: usize, v: f64) {
    match c {
        0 => p.mu = v,
        1 => p.mass = v,
        2 => p.eps = v,
        k => p.init[k - 3] = v,
    }
}

/// `phys` (columns 0–2 with their scales) and the cube's initial planar state (columns 3–6, identity scale).
pub fn with_init(phys: &[(usize, Param)]) -> Vec<(usize, Param)> {
    phys.iter().copied().chain((3..NCOL).map(|c| (c, Param::Identity))).collect()
}

/// Settings text shared by the experiments: the data generator, the identification model, the optimiser.
pub const DATA_DESC: &str = "cone, 100 staggered passes, tolerance 1e-10, Δt/4, every 4th state";
pub const MODEL_DESC: &str = "cone, 10 staggered passes (tolerance 0), Δt, collision margin 0";
pub fn lm_desc(iters: usize) -> String {
    format!("Levenberg–Marquardt, ≤ {iters} steps, exact forward-mode Jacobians")
}

/// The fits of [`Fit::from_starts`], one per start (in order), each labelled "{sym}₀ = start{unit}".
pub struct Starts {
    /// the parameter's column and (symbol, unit)
    col: usize,
    sym: (String, String),
    /// the estimates and LM iterations
    pub est: Vec<f64>,
    pub iters: Vec<usize>,
    /// the loss per accepted step and the parameter's path, labelled
    pub hist: Vec<(String, Vec<f64>)>,
    pub paths: Vec<(String, Vec<f64>)>,
    /// the first fit, labelled with its estimate (shown in the scene)
    pub shown: Option<(String, Phys)>,
}

impl Starts {
    /// The experiment's result: the parameter's paths beside the truth (`param_panel` titled `title`, y axis
    /// `y_label`) and the loss per LM step (`loss_title`), `checks`, and the scene of the ground truth beside the
    /// first fit.
    #[allow(clippy::too_many_arguments)]
    pub fn result(
        self,
        fit: &Fit,
        name: &str,
        [metrics, paper, settings]: [serde_json::Value; 3],
        (title, y_label): (&str, &str),
        loss_title: &str,
        checks: Vec<Check>,
        truth: Phys,
    ) -> Result<ExperimentResult, ExperimentError> {
        let x = get(&truth, self.col);
        let panels = vec![param_panel(title, y_label, &self.paths, x), loss_panel(loss_title, &self.hist)];
        let (sym, unit) = &self.sym;
        let runs =
            [(format!("ground truth: {sym} = {x}{unit}"), truth)].into_iter().chain(self.shown).collect::<Vec<_>>();
        let scene = fit.scene_view(&runs)?;
        Ok(panels_result(name, metrics, paper, settings, panels).with_checks(checks).with_scene(scene))
    }
}

impl FitResult {
    /// One parameter (column 0: μ, 1: m, 2: ε) along the LM path.
    pub fn param_path(&self, col: usize) -> Vec<f64> {
        self.path.iter().map(|p| get(p, col)).collect()
    }
}

impl<'a> Fit<'a> {
    /// The identification setting of the experiments: exact disk, 10 staggered passes.
    pub fn cone(scene: &'a Scene, dt: f64, steps: usize, free: Vec<(usize, Param)>, base: Phys) -> Self {
        Fit { scene, set: FrictionSet::Cone, dt, steps, n_step: 10, free, base }
    }
}

impl Fit<'_> {
    fn phys(&self, z: &[f64]) -> Phys {
        let mut p = self.base.clone();
        for (k, &(c, map)) in self.free.iter().enumerate() {
            set(&mut p, c, map.value(z[k]));
        }
        p
    }

    /// Residuals (p_model − p_obs)/σ over all observation times and coordinates, and their Jacobian in z.
    pub fn residual(
        &self,
        obs: &[Vec<f64>],
        z: &[f64],
        jac: bool,
    ) -> Result<(Vec<f64>, Option<Vec<f64>>), ExperimentError> {
        let p = self.phys(z);
        let r = simulate(self.scene, &p, self.set, self.n_step, 0.0, self.dt, self.steps, 1, jac, None)?;
        let nf = self.free.len();
        let mut res = vec![];
        let mut jm = vec![];
        for (t, (pm, po)) in r.pos.iter().zip(obs).enumerate() {
            for i in 0..pm.len() {
                res.push((pm[i] - po[i]) / SIGMA);
                if jac {
                    for (k, &(c, map)) in self.free.iter().enumerate() {
                        jm.push(r.sens[t][(i, c)] * map.deriv(z[k]) / SIGMA);
                    }
                }
            }
        }
        debug_assert!(!jac || jm.len() == res.len() * nf);
        Ok((res, jac.then_some(jm)))
    }

    /// Levenberg–Marquardt from `start` (physical values of the free columns).
    pub fn run(&self, obs: &[Vec<f64>], start: &Phys, iters: usize) -> Result<FitResult, ExperimentError> {
        let z0: Vec<f64> = self.free.iter().map(|&(c, map)| map.coord(get(start, c))).collect();
        let o = LmOptions { max_iter: iters, ..Default::default() };
        let rep = levenberg_marquardt(&z0, |z, j| self.residual(obs, z, j), &o)?;
        let path = rep.path.iter().map(|z| self.phys(z)).collect();
        Ok(FitResult {
            phys: self.phys(&rep.x),
            cost: rep.cost,
            iterations: rep.iterations,
            history: rep.history,
            path,
        })
    }

    /// One physical parameter (column `col`: 0 μ, 1 m, 2 ε; symbol and unit `sym`, e.g. ("m", " kg")) identified
    /// from each start value in `inits` (spec 001 E1, E2): one `run` per start, the other parameters at `truth` and
    /// the initial state at `guess`; `pb` ticks once per start.
    #[allow(clippy::too_many_arguments)]
    pub fn from_starts(
        &self,
        obs: &[Vec<f64>],
        truth: &Phys,
        guess: [f64; 4],
        col: usize,
        sym: (&str, &str),
        inits: &[f64],
        iters: usize,
        pb: &indicatif::ProgressBar,
    ) -> Result<Starts, ExperimentError> {
        let (name, unit) = sym;
        let mut st = Starts {
            col,
            sym: (name.into(), unit.into()),
            est: vec![],
            iters: vec![],
            hist: vec![],
            paths: vec![],
            shown: None,
        };
        for &x0 in inits {
            let mut start = Phys { init: guess, ..truth.clone() };
            set(&mut start, col, x0);
            let r = self.run(obs, &start, iters)?;
            let (label, x) = (format!("{name}₀ = {x0}{unit}"), get(&r.phys, col));
            st.shown.get_or_insert_with(|| (format!("identified from {label}: {name} = {x:.4}{unit}"), r.phys.clone()));
            st.est.push(x);
            st.iters.push(r.iterations);
            st.hist.push((label.clone(), r.history.clone()));
            st.paths.push((label, r.param_path(col)));
            pb.inc(1);
        }
        Ok(st)
    }

    /// The viewer's scene: each (legend label, parameters) rolled out by this fit's stepper, every step recorded
    /// with its contacts and their normal impulses.
    pub fn scene_view(&self, runs: &[(String, Phys)]) -> Result<SceneView, ExperimentError> {
        let mut trajectories = vec![];
        for (name, p) in runs {
            let model = self.scene.model_with_mass(p.mass);
            let mut rec = Recorder::new(name, &model)?;
            simulate(self.scene, p, self.set, self.n_step, 0.0, self.dt, self.steps, 1, false, Some(&mut rec))?;
            trajectories.push(rec.finish());
        }
        SceneView::new(self.scene.model.clone(), trajectories)
    }

    /// The Gauss–Newton matrix JᵀJ of the free columns at `p` (physical coordinates, unscaled).
    pub fn gauss_newton_matrix(&self, p: &Phys) -> Result<DMatrix<f64>, ExperimentError> {
        let r = simulate(self.scene, p, self.set, self.n_step, 0.0, self.dt, self.steps, 1, true, None)?;
        let nf = self.free.len();
        let mut h = DMatrix::zeros(nf, nf);
        for s in &r.sens {
            let cols: Vec<usize> = self.free.iter().map(|f| f.0).collect();
            let js = DMatrix::from_fn(s.nrows(), nf, |i, k| s[(i, cols[k])] / SIGMA);
            h += js.transpose() * js;
        }
        Ok(h)
    }
}

/// Initial planar state guessed from the first observations (position, and velocity from a 3-interval difference).
pub fn init_guess(obs: &[Vec<f64>], dt: f64) -> [f64; 4] {
    if obs.len() < 2 {
        return obs.first().map_or([0.0; 4], |o| [o[0], o[1], 0.0, 0.0]);
    }
    let k = 3.min(obs.len() - 1).max(1);
    let v = |i: usize| (obs[k][i] - obs[0][i]) / (k as f64 * dt);
    [obs[0][0], obs[0][1], v(0), v(1)]
}

/// A parameter's LM path (physical value per accepted step) for each start, beside the truth: the quantity the
/// paper's identification figures plot (spec 001 Fig. 4, 6).
pub fn param_panel(title: &str, y_label: &str, runs: &[(String, Vec<f64>)], truth: f64) -> Panel {
    let mut p = Panel::new(title, "accepted LM step", y_label).x_int();
    for (i, (label, v)) in runs.iter().enumerate() {
        p = p.series(Series::indexed(label.clone(), v, Mark::LinePoints, color(i)));
    }
    p.refs(Reference::truth_h(truth, format!("ground truth {truth}")))
}

/// A loss-per-LM-step panel (log scale) of the runs in `series`.
pub fn loss_panel(title: &str, runs: &[(String, Vec<f64>)]) -> Panel {
    let mut p = Panel::new(title, "accepted LM step", "½‖r‖² (σ-scaled residuals)").x_int().log_y();
    for (i, (label, v)) in runs.iter().enumerate() {
        p = p.series(Series::indexed(label.clone(), v, Mark::LinePoints, color(i)));
    }
    p
}

/// The experiment's result, plotted as `panels` side by side.
pub fn panels_result(
    name: &str,
    metrics: serde_json::Value,
    paper: serde_json::Value,
    settings: serde_json::Value,
    panels: Vec<Panel>,
) -> ExperimentResult {
    let cols = if panels.len() == 4 { 2 } else { 3 };
    ExperimentResult::from_panels(name, metrics, paper, settings, panels, cols)
}

/// A progress bar on stderr.
pub fn bar(name: &str, len: usize) -> indicatif::ProgressBar {
    let b = indicatif::ProgressBar::new(len as u64);
    b.set_style(
        indicatif::ProgressStyle::with_template(&format!("{name} {{bar:40}} {{pos}}/{{len}} [{{elapsed_precise}}]"))
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    b
}
