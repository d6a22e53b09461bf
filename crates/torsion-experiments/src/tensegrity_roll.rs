//! `tensegrity-roll` — spec 003 §4.5 Exp. E, H8 (and H6's accounting): SUPERball rolling towards the CoM
//! velocity target [10, 0, 0] by open-loop controls from the sampled iLQG (`torsion_opt::ilqr::sampled`), trained
//! 5 × in torsion's engine with the parameters identified from 1 + 1 MuJoCo trajectories ([`identify`]: the
//! cable ratios of `tensegrity-noncontact-id`, then the linear contact model of `tensegrity-contact-id` on top) and
//! 5 × directly in MuJoCo with the same code, cost, iterations and samples; both policy sets executed open-loop in
//! MuJoCo.
//!
//! **The pipeline** (reused by `tensegrity-3bar`, spec 003 §4.6): fill a [`TransferConfig`] (MJCF text, gravity,
//! control interval `hold` in engine steps, the actuated actuators, target and weights, horizon in control
//! intervals, seeds, iterations × samples, the paper's figures) and call [`run_transfer`] with an [`Identified`]
//! (SUPERball's parameters, applied unchanged to any rod model by [`Identified::apply`]). MuJoCo is a black-box
//! simulator behind a pipe ([`MujocoSim`]: bench/tensegrity/mj_server.py, compiled in, run by `python3 -c`;
//! `TORSION_PYTHON` names another interpreter), torsion is [`TorsionSim`]; both implement the iLQG's `Dynamics` on
//! one flat state (MuJoCo's qpos, qvel, act: [`Layout`]), so one [`VelocityCost`] and one iLQG serve both
//! (docs/decisions.md, issue 19 item 3).
//! - Cost per control interval t (at its start state) and at the end: Σ_i w_i (v_com,i − v*_i)² + r ‖u‖²
//!   (r = [`CONTROL_WEIGHT`]; the terminal term without u). v_com is linear in qvel, so its derivatives are exact.
//! - Metrics: the CoM's mean x-velocity over the horizon and the total cost, both on MuJoCo, mean ± std over seeds;
//!   `x_velocity_ratio` = engine-trained / MuJoCo-trained mean x-velocity, `cost_ratio` = MuJoCo-trained /
//!   engine-trained mean cost (both "engine-trained performance relative to MuJoCo-trained", ≥ 0.9 passes H8).
use crate::ncp_scene::bar;
use crate::plot::{color, figure, Mark, Panel, Series};
use crate::result::{Check, ExperimentError, ExperimentResult};
use crate::scene::{Recorder, SceneView};
use crate::tensegrity_contact_id::{self as cid, read_full_pairs, read_quick, Pairs, FULL_STRIDE};
use crate::tensegrity_noncontact_id::{controls, fit_ratios, full_set, mean, quick_set, superball_air, Mapping};
use nalgebra::{DMatrix, DVector};
use serde_json::{json, Value};
use std::io::{BufReader, BufWriter, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::OnceLock;
use std::time::Instant;
use torsion_math::{Quat, Vec3};
use torsion_model::{Control, GenState, JointType, LinearContact, Model};
use torsion_opt::ilqr::{Cost, CostDerivs, Dynamics, Ilqr, IlqrError, IlqrOptions};
use torsion_opt::SampledOptions;
use torsion_solvers::{FeatherstoneSolver, Solver};

/// The MuJoCo server (bench/tensegrity/mj_server.py), run as `python3 -c`.
const SERVER: &str = include_str!("../../../bench/tensegrity/mj_server.py");
/// r, the control cost per interval (u in the actuators' ±100 range: ≤ 0.24 per interval for 24 controls at the
/// bound, against 100 for standing still).
pub const CONTROL_WEIGHT: f64 = 1e-6;
/// The paper's ground-truth accounting (§4.5, H6): 1 + 1 trajectories of 5000 steps vs 20 × 40 × 5000.
pub const PAPER_ENGINE_STEPS: usize = 10_000;
pub const PAPER_MUJOCO_STEPS: usize = 4_000_000;

fn fail(s: impl Into<String>) -> ExperimentError {
    ExperimentError::Failed(s.into())
}

fn quat(x: &[f64], i: usize) -> Quat {
    Quat::new(x[i], x[i + 1], x[i + 2], x[i + 3])
}

/// The flat state both simulators share: MuJoCo's (qpos, qvel, act) — free joints' linear velocity in the world
/// frame, angular in the body frame — and its tangent (2 nv + na): per joint the position difference and the
/// body-frame rotation log(q_x⁻¹ ⊗ q_o) (x ⊕ δ = x ⊗ Exp(δ)), then plain differences of qvel and act.
#[derive(Clone, Debug)]
pub struct Layout {
    pub nq: usize,
    pub nv: usize,
    pub na: usize,
    /// (type, q start, v start) per joint
    joints: Vec<(JointType, usize, usize)>,
    /// (q start, v start, mass / total mass) per free joint: the CoM and its velocity
    free: Vec<(usize, usize, f64)>,
}

impl Layout {
    pub fn new(m: &Model) -> Result<Self, ExperimentError> {
        let (qs, vs) = (m.joint_q_start(), m.joint_v_start());
        let joints: Vec<_> = (0..m.joint_type.len()).map(|j| (m.joint_type[j], qs[j], vs[j])).collect();
        let free: Vec<_> = (0..joints.len())
            .filter(|&j| joints[j].0 == JointType::Free)
            .map(|j| (joints[j].1, joints[j].2, m.body_mass[m.joint_child[j]]))
            .collect();
        let total: f64 = free.iter().map(|f| f.2).sum();
        if free.is_empty() || total <= 0.0 {
            return Err(fail(format!("{}: no free bodies with mass (the CoM velocity cost needs them)", m.name)));
        }
        let free = free.into_iter().map(|(q, v, w)| (q, v, w / total)).collect();
        Ok(Layout { nq: m.nq(), nv: m.nv(), na: m.na(), joints, free })
    }
    pub fn flat_len(&self) -> usize {
        self.nq + self.nv + self.na
    }
    pub fn tangent_len(&self) -> usize {
        2 * self.nv + self.na
    }
    /// o ⊖ x into `out`.
    pub fn diff(&self, x: &[f64], o: &[f64], out: &mut [f64]) {
        for &(t, qs, vs) in &self.joints {
            match t {
                JointType::Free => {
                    for i in 0..3 {
                        out[vs + i] = o[qs + i] - x[qs + i];
                    }
                    let r = quat(x, qs + 3).conj().mul(&quat(o, qs + 3)).log();
                    out[vs + 3..vs + 6].copy_from_slice(r.as_slice());
                }
                JointType::Ball => {
                    let r = quat(x, qs).conj().mul(&quat(o, qs)).log();
                    out[vs..vs + 3].copy_from_slice(r.as_slice());
                }
                JointType::Fixed => {}
                _ => out[vs] = o[qs] - x[qs],
            }
        }
        let (nq, nv) = (self.nq, self.nv);
        for i in 0..nv + self.na {
            out[nv + i] = o[nq + i] - x[nq + i];
        }
    }
    /// x ⊕ δ.
    pub fn retract(&self, x: &[f64], d: &[f64]) -> Vec<f64> {
        let mut o = x.to_vec();
        let rot = |o: &mut [f64], qi: usize, di: usize| {
            let q = quat(x, qi).mul(&Quat::exp(&Vec3::new(d[di], d[di + 1], d[di + 2])));
            o[qi..qi + 4].copy_from_slice(&q.to_array());
        };
        for &(t, qs, vs) in &self.joints {
            match t {
                JointType::Free => {
                    for i in 0..3 {
                        o[qs + i] += d[vs + i];
                    }
                    rot(&mut o, qs + 3, vs + 3);
                }
                JointType::Ball => rot(&mut o, qs, vs),
                JointType::Fixed => {}
                _ => o[qs] += d[vs],
            }
        }
        let (nq, nv) = (self.nq, self.nv);
        for i in 0..nv + self.na {
            o[nq + i] += d[nv + i];
        }
        o
    }
    /// The CoM of the free bodies.
    pub fn com(&self, x: &[f64]) -> Vec3 {
        self.free.iter().fold(Vec3::zeros(), |a, &(q, _, w)| a + Vec3::new(x[q], x[q + 1], x[q + 2]) * w)
    }
    /// The CoM's velocity (world frame): linear in qvel.
    pub fn com_velocity(&self, x: &[f64]) -> Vec3 {
        let o = self.nq;
        self.free.iter().fold(Vec3::zeros(), |a, &(_, v, w)| a + Vec3::new(x[o + v], x[o + v + 1], x[o + v + 2]) * w)
    }
    /// Flat state → torsion's GenState (`tensegrity_noncontact_id::mj_qvel_to_v` for free joints: (ω_body,
    /// Rᵀ v_world)); the contact warm start cleared.
    pub fn to_gen(&self, x: &[f64], s: &mut GenState) {
        let (nq, nv) = (self.nq, self.nv);
        s.q.clear();
        s.q.extend_from_slice(&x[..nq]);
        s.v.clear();
        s.v.extend_from_slice(&x[nq..nq + nv]);
        s.act.clear();
        s.act.extend_from_slice(&x[nq + nv..]);
        s.warm = Default::default();
        for &(t, qs, vs) in &self.joints {
            if t == JointType::Free {
                let vl = quat(x, qs + 3).rotate_inv(&Vec3::new(x[nq + vs], x[nq + vs + 1], x[nq + vs + 2]));
                s.v[vs..vs + 3].copy_from_slice(&x[nq + vs + 3..nq + vs + 6]);
                s.v[vs + 3..vs + 6].copy_from_slice(vl.as_slice());
            }
        }
    }
    /// torsion's GenState → flat state (the inverse of [`Layout::to_gen`]).
    pub fn from_gen(&self, s: &GenState, x: &mut Vec<f64>) {
        x.clear();
        x.extend_from_slice(&s.q);
        x.extend_from_slice(&s.v);
        x.extend_from_slice(&s.act);
        let nq = self.nq;
        for &(t, qs, vs) in &self.joints {
            if t == JointType::Free {
                let vw = quat(&s.q, qs + 3).rotate(&Vec3::new(s.v[vs + 3], s.v[vs + 4], s.v[vs + 5]));
                x[nq + vs..nq + vs + 3].copy_from_slice(vw.as_slice());
                x[nq + vs + 3..nq + vs + 6].copy_from_slice(&s.v[vs..vs + 3]);
            }
        }
    }
}

/// Σ_i w_i (v_com,i − v*_i)² + r ‖u‖² per control interval, the velocity term alone at the end (module doc).
#[derive(Clone, Debug)]
pub struct VelocityCost {
    pub layout: Layout,
    pub target: Vec3,
    pub weights: [f64; 3],
    pub r: f64,
}

impl VelocityCost {
    fn state_cost(&self, x: &[f64]) -> f64 {
        let v = self.layout.com_velocity(x) - self.target;
        (0..3).map(|i| self.weights[i] * v[i] * v[i]).sum()
    }
    /// Exact: the cost is quadratic in the tangent's qvel part (which is a plain difference).
    fn state_derivs(&self, x: &[f64], lx: &mut DVector<f64>, lxx: &mut DMatrix<f64>) {
        lx.fill(0.0);
        lxx.fill(0.0);
        let v = self.layout.com_velocity(x) - self.target;
        let nv = self.layout.nv;
        for i in 0..3 {
            for &(_, va, wa) in &self.layout.free {
                lx[nv + va + i] += 2.0 * self.weights[i] * v[i] * wa;
                for &(_, vb, wb) in &self.layout.free {
                    lxx[(nv + va + i, nv + vb + i)] += 2.0 * self.weights[i] * wa * wb;
                }
            }
        }
    }
}

impl Cost<Vec<f64>> for VelocityCost {
    fn running(&mut self, _: usize, x: &Vec<f64>, u: &[f64]) -> f64 {
        self.state_cost(x) + self.r * u.iter().map(|v| v * v).sum::<f64>()
    }
    fn running_derivs(&mut self, _: usize, x: &Vec<f64>, u: &[f64], d: &mut CostDerivs) {
        self.state_derivs(x, &mut d.lx, &mut d.lxx);
        d.luu.fill(0.0);
        for (i, ui) in u.iter().enumerate() {
            d.lu[i] = 2.0 * self.r * ui;
            d.luu[(i, i)] = 2.0 * self.r;
        }
        d.lux.fill(0.0);
    }
    fn terminal(&mut self, x: &Vec<f64>) -> f64 {
        self.state_cost(x)
    }
    fn terminal_derivs(&mut self, x: &Vec<f64>, lx: &mut DVector<f64>, lxx: &mut DMatrix<f64>) {
        self.state_derivs(x, lx, lxx)
    }
    fn check(&self, nx: usize, _: usize, _: usize) -> Result<(), String> {
        if nx == self.layout.tangent_len() {
            Ok(())
        } else {
            Err(format!("the cost's layout has {} tangent entries, the dynamics {nx}", self.layout.tangent_len()))
        }
    }
}

const NO_JACOBIANS: &str = "tensegrity-roll's simulators are black boxes (the sampled iLQG needs no Jacobians)";

/// The `Dynamics` items both simulators share (flat layout, actuated controls, no Jacobians).
macro_rules! black_box_dynamics {
    () => {
        type State = Vec<f64>;
        fn state_dim(&self) -> usize {
            self.layout.tangent_len()
        }
        fn control_dim(&self) -> usize {
            self.actuated.len()
        }
        fn jacobians(
            &mut self,
            _: &Vec<f64>,
            _: &[f64],
            _: &mut DMatrix<f64>,
            _: &mut DMatrix<f64>,
        ) -> Result<(), IlqrError> {
            Err(IlqrError::BadInput(NO_JACOBIANS.into()))
        }
        fn diff(&mut self, x: &Vec<f64>, o: &Vec<f64>, out: &mut [f64]) {
            self.layout.diff(x, o, out)
        }
    };
}

/// torsion's engine (Featherstone with the linear contact model) as iLQG dynamics: one call = `hold` steps with
/// the controls held; u holds the actuated actuators' controls (the others stay 0).
pub struct TorsionSim {
    pub model: Model,
    solver: FeatherstoneSolver,
    ws: <FeatherstoneSolver as Solver>::Workspace,
    layout: Layout,
    hold: usize,
    actuated: Vec<usize>,
    u: Control,
    s: GenState,
    out: GenState,
    /// engine steps taken
    pub steps: usize,
}

impl TorsionSim {
    pub fn new(model: Model, hold: usize, actuated: &[usize]) -> Result<Self, ExperimentError> {
        check_actuated(&model, actuated)?;
        let solver = FeatherstoneSolver::default();
        let ws = solver.workspace(&model)?;
        let layout = Layout::new(&model)?;
        let u = Control::with_ctrl(&vec![0.0; model.nv()], &vec![0.0; model.nu()]);
        let s = GenState::rest(&model);
        Ok(TorsionSim { solver, ws, layout, hold, actuated: actuated.to_vec(), u, out: s.clone(), s, model, steps: 0 })
    }
}

fn check_actuated(m: &Model, actuated: &[usize]) -> Result<(), ExperimentError> {
    match actuated.iter().find(|&&i| i >= m.nu()) {
        Some(i) => Err(fail(format!("{}: actuated actuator {i} does not exist (nu = {})", m.name, m.nu()))),
        None if actuated.is_empty() => Err(fail(format!("{}: no actuated actuators", m.name))),
        None => Ok(()),
    }
}

impl Dynamics for TorsionSim {
    black_box_dynamics!();
    fn step(&mut self, x: &Vec<f64>, u: &[f64], out: &mut Vec<f64>) -> Result<(), IlqrError> {
        for (k, &i) in self.actuated.iter().enumerate() {
            self.u.ctrl[i] = u[k];
        }
        self.layout.to_gen(x, &mut self.s);
        for _ in 0..self.hold {
            self.solver.step(&self.model, &self.s, &self.u, self.model.dt, &mut self.out, &mut self.ws, None)?;
            std::mem::swap(&mut self.s, &mut self.out);
        }
        self.steps += self.hold;
        self.layout.from_gen(&self.s, out);
        if out.iter().any(|v| !v.is_finite()) {
            return Err(IlqrError::BadInput("the engine's state is not finite".into()));
        }
        Ok(())
    }
}

fn le_f64(c: &[u8]) -> f64 {
    f64::from_bits(le_u64(c))
}

/// MuJoCo (pip `mujoco`) behind a pipe as iLQG dynamics: the server (bench/tensegrity/mj_server.py) loads the
/// same MJCF text with the given gravity, settles it from qpos0 under zero controls (`x0`), then answers step
/// requests (`hold` mj_steps from a given state with the controls held, the solver's warm start cleared).
pub struct MujocoSim {
    child: Child,
    tx: BufWriter<ChildStdin>,
    rx: BufReader<ChildStdout>,
    layout: Layout,
    hold: usize,
    actuated: Vec<usize>,
    ctrl: Vec<f64>,
    buf: Vec<u8>,
    /// the settled state and the steps it took (0: not settled within `settle_max`)
    pub x0: Vec<f64>,
    pub settle_steps: usize,
    pub dt: f64,
    /// MuJoCo steps taken through `step`
    pub steps: usize,
}

impl MujocoSim {
    /// Start the server for `xml` (labelled `label` in errors) under `gravity`; `model` is torsion's load of the
    /// same text (its layout must be MuJoCo's).
    pub fn start(
        xml: &str,
        label: &str,
        gravity: Vec3,
        model: &Model,
        hold: usize,
        actuated: &[usize],
        settle: (f64, usize),
    ) -> Result<Self, ExperimentError> {
        check_actuated(model, actuated)?;
        let py = std::env::var("TORSION_PYTHON").unwrap_or_else(|_| "python3".into());
        let need = "MuJoCo's side runs `python3 -c bench/tensegrity/mj_server.py` and needs numpy and the `mujoco` \
                    package (python3 -m pip install mujoco; TORSION_PYTHON names another interpreter)";
        let mut child = Command::new(&py)
            .arg("-c")
            .arg(SERVER)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| fail(format!("{label}: cannot start `{py}`: {e}; {need}")))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(fail(format!("{label}: no pipe to `{py}`")));
        };
        let mut tx = BufWriter::new(stdin);
        let mut rx = BufReader::new(stdout);
        let mut head = vec![];
        head.extend((xml.len() as u64).to_le_bytes());
        head.extend(xml.as_bytes());
        for g in [gravity.x, gravity.y, gravity.z, settle.0] {
            head.extend(g.to_le_bytes());
        }
        head.extend((settle.1 as u64).to_le_bytes());
        let dead = |e: std::io::Error| {
            fail(format!("{label}: the MuJoCo server stopped ({e}; its Python error is printed above); {need}"))
        };
        tx.write_all(&head).and_then(|_| tx.flush()).map_err(dead)?;
        let mut b = [0u8; 48];
        rx.read_exact(&mut b).map_err(dead)?;
        let n: Vec<usize> = b[..40].chunks_exact(8).map(|c| le_u64(c) as usize).collect();
        let layout = Layout::new(model)?;
        if (n[0], n[1], n[2], n[3]) != (layout.nq, layout.nv, layout.na, model.nu()) {
            return Err(fail(format!(
                "{label}: MuJoCo has (nq, nv, na, nu) = ({}, {}, {}, {}), torsion's load ({}, {}, {}, {})",
                n[0],
                n[1],
                n[2],
                n[3],
                layout.nq,
                layout.nv,
                layout.na,
                model.nu()
            )));
        }
        let dt = le_f64(&b[40..48]);
        let mut xb = vec![0u8; 8 * layout.flat_len()];
        rx.read_exact(&mut xb).map_err(dead)?;
        let x0 = xb.chunks_exact(8).map(le_f64).collect();
        Ok(MujocoSim {
            child,
            tx,
            rx,
            hold,
            actuated: actuated.to_vec(),
            ctrl: vec![0.0; model.nu()],
            buf: vec![],
            x0,
            settle_steps: n[4],
            dt,
            steps: 0,
            layout,
        })
    }
}

fn le_u64(c: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(c);
    u64::from_le_bytes(b)
}

impl Drop for MujocoSim {
    fn drop(&mut self) {
        let _ = self.tx.write_all(&0u64.to_le_bytes()).and_then(|_| self.tx.flush());
        let _ = self.child.wait();
    }
}

impl Dynamics for MujocoSim {
    black_box_dynamics!();
    fn step(&mut self, x: &Vec<f64>, u: &[f64], out: &mut Vec<f64>) -> Result<(), IlqrError> {
        for (k, &i) in self.actuated.iter().enumerate() {
            self.ctrl[i] = u[k];
        }
        self.buf.clear();
        self.buf.extend(1u64.to_le_bytes());
        self.buf.extend((self.hold as u64).to_le_bytes());
        for v in x.iter().chain(&self.ctrl) {
            self.buf.extend(v.to_le_bytes());
        }
        let io = |e: std::io::Error| IlqrError::BadInput(format!("the MuJoCo server: {e}"));
        self.tx.write_all(&self.buf).and_then(|_| self.tx.flush()).map_err(io)?;
        let n = self.layout.flat_len();
        self.buf.resize(8 * n, 0);
        self.rx.read_exact(&mut self.buf).map_err(io)?;
        out.clear();
        out.extend(self.buf.chunks_exact(8).map(le_f64));
        self.steps += self.hold;
        if out.iter().any(|v| !v.is_finite()) {
            return Err(IlqrError::BadInput("MuJoCo's state is not finite".into()));
        }
        Ok(())
    }
}

/// The parameters identified from SUPERball's 1 + 1 MuJoCo trajectories (spec 003 §4.5): the shared cable ratios
/// from one air trajectory (`tensegrity_noncontact_id::fit_ratios`), then β, e, γ, μ, ε from one throw with
/// those cables frozen (`tensegrity_contact_id::fit`, progressive as §1); [`IdData`] picks the data. Quick: the
/// committed quick sets (300 air steps, 40 pairs of the throw); full: bench/tensegrity/data (5000 + 5000 steps).
#[derive(Clone, Debug)]
pub struct Identified {
    /// (k/m, c/m, a, b)
    pub ratios: [f64; 4],
    /// β, e, γ, μ, ε
    pub contact: [f64; 5],
    /// ground-truth steps consumed (the two trajectories' lengths)
    pub gt_steps: usize,
    pub wall_s: f64,
    pub data: IdData,
}

impl Identified {
    /// These parameters on a rod model: every cable's stiffness / damping (× the first free rod's mass), every
    /// filter actuator's gain and time constant (`Mapping`), and the linear contact model.
    pub fn apply(&self, m: &mut Model) -> Result<(), ExperimentError> {
        let map = Mapping::new(m, m.dt)?;
        let [km, cm, a, b] = self.ratios;
        map.apply(m, &[km, cm, a, b * km])?;
        m.tensegrity_contact = Some(LinearContact::from_array(self.contact));
        Ok(())
    }
}

/// [`identify`] on the committed quick sets, computed once per process: tensegrity-roll and tensegrity-3bar (and
/// their CI tests, which run in one test binary) share it; `wall_s` is the one identification's.
pub fn identify_quick() -> Result<Identified, ExperimentError> {
    identify_once(IdData::Quick)
}

/// The data an identification uses (`TORSION_TRANSFER_ID` for a full run: `quick`, `full` or `full+actuated`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdData {
    /// the committed quick subsets: 300 air steps, 40 one-step pairs of the throw
    Quick,
    /// the paper's 1 + 1 (spec 003 §4.5): the 5000-step air trajectory, every 5th pair of the 5000-step throw
    Full,
    /// a labelled variant beyond the paper's budget: Full plus one 5000-step actuated MuJoCo trajectory on the
    /// ground ([`actuated_pairs`]) in the contact fit
    FullActuated,
}

/// The environment variable that picks a full run's identification data ([`IdData`]; default `full`).
pub const ID_VAR: &str = "TORSION_TRANSFER_ID";

impl IdData {
    pub fn parse(s: &str) -> Result<Self, ExperimentError> {
        match s.trim() {
            "quick" => Ok(IdData::Quick),
            "full" => Ok(IdData::Full),
            "full+actuated" => Ok(IdData::FullActuated),
            _ => Err(fail(format!("{ID_VAR}='{s}': expected quick, full or full+actuated"))),
        }
    }
    /// The run's data: quick runs always the quick subsets; full runs `TORSION_TRANSFER_ID` or the paper's 1 + 1.
    pub fn for_run(quick: bool) -> Result<Self, ExperimentError> {
        match std::env::var(ID_VAR) {
            _ if quick => Ok(IdData::Quick),
            Ok(s) => IdData::parse(&s),
            Err(_) => Ok(IdData::Full),
        }
    }
    pub fn label(self) -> &'static str {
        match self {
            IdData::Quick => "quick",
            IdData::Full => "full",
            IdData::FullActuated => "full+actuated",
        }
    }
}

/// [`identify`] once per process and data choice (tensegrity-roll and tensegrity-3bar in one process share it).
pub fn identify_once(data: IdData) -> Result<Identified, ExperimentError> {
    static ID: [OnceLock<Result<Identified, String>>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    ID[data as usize].get_or_init(|| identify_with(data).map_err(|e| e.to_string())).clone().map_err(fail)
}

/// The actuated trajectory's seed, length and control hold (steps) for [`IdData::FullActuated`].
pub const ACTUATED_SEED: u64 = 3000;
pub const ACTUATED_STEPS: usize = 5000;

/// One actuated MuJoCo trajectory of SUPERball on the ground: from MuJoCo's settled rest, every actuator's control
/// drawn from U[ctrlrange] (±100) and held 100 ms (gt.py's generator, `controls`), `steps` mj_steps; its one-step
/// pairs every `stride`-th step in torsion's coordinates with activations and controls (the fit's data).
pub fn actuated_pairs(m: &Model, steps: usize, stride: usize, seed: u64) -> Result<Pairs, ExperimentError> {
    let all: Vec<usize> = (0..m.nu()).collect();
    let mut mj = MujocoSim::start(cid::MODEL_XML, "superball.xml", m.gravity, m, 1, &all, (1e-5, 20_000))?;
    let (layout, nu) = (Layout::new(m)?, m.nu());
    let ctrl = controls(m, steps, 100, seed);
    let mut p = Pairs { q: vec![], v: vec![], v1: vec![], act: vec![], ctrl: vec![], throw: vec![], dt: mj.dt };
    let (mut x, mut next) = (mj.x0.clone(), vec![]);
    let mut s = GenState::default();
    for t in 0..steps {
        let u = &ctrl[t * nu..(t + 1) * nu];
        mj.step(&x, u, &mut next).map_err(|e| fail(format!("actuated trajectory, step {t}: {e}")))?;
        if t % stride.max(1) == 0 {
            layout.to_gen(&x, &mut s);
            p.q.push(s.q.clone());
            p.v.push(s.v.clone());
            p.act.push(s.act.clone());
            p.ctrl.push(u.to_vec());
            layout.to_gen(&next, &mut s);
            p.v1.push(s.v.clone());
            p.throw.push(0);
        }
        std::mem::swap(&mut x, &mut next);
    }
    Ok(p)
}

pub fn identify(quick: bool) -> Result<Identified, ExperimentError> {
    identify_with(if quick { IdData::Quick } else { IdData::Full })
}

pub fn identify_with(data: IdData) -> Result<Identified, ExperimentError> {
    let quick = data == IdData::Quick;
    let t0 = Instant::now();
    let solver = FeatherstoneSolver::default();
    let air = superball_air()?;
    let train = if quick { quick_set(&air)?.0 } else { full_set(&air, "air_h1_train")? };
    let map = Mapping::new(&air, train.dt)?;
    let ratios = fit_ratios(&solver, &air, &map, &train, || ())?.x;
    let mut ball = cid::superball()?;
    let part = Identified { ratios, contact: cid::P_INIT, gt_steps: 0, wall_s: 0.0, data };
    part.apply(&mut ball)?;
    let all = if quick { read_quick(&ball)?.0 } else { read_full_pairs(&ball, FULL_STRIDE)? };
    let mut pairs = all.first(1);
    let mut throw_steps = if quick { pairs.len() } else { 5000 };
    if data == IdData::FullActuated {
        pairs.extend(actuated_pairs(&ball, ACTUATED_STEPS, FULL_STRIDE, ACTUATED_SEED)?, ball.na(), ball.nu());
        throw_steps += ACTUATED_STEPS;
    }
    let f = cid::fit(&solver, &ball, &pairs)?;
    let wall_s = t0.elapsed().as_secs_f64();
    eprintln!(
        "identify({}): ratios {ratios:?}, contact {:?}, {} LM iterations, {wall_s:.1} s",
        data.label(),
        f.p,
        f.iterations
    );
    Ok(Identified { ratios, contact: f.p, gt_steps: train.steps() + throw_steps, wall_s, data })
}

/// One transfer study (module doc): the robot, its task and the iLQG's size.
#[derive(Clone, Debug)]
pub struct TransferConfig {
    /// the experiment's name (its result files)
    pub name: String,
    pub model_xml: String,
    /// the MJCF's name in errors and settings
    pub model_label: String,
    /// None: the file's
    pub gravity: Option<Vec3>,
    /// engine / MuJoCo steps per control interval (the controls are held)
    pub hold: usize,
    /// indices of the controlled actuators (file order); the others stay at 0
    pub actuated: Vec<usize>,
    pub target: [f64; 3],
    pub weights: [f64; 3],
    /// control intervals
    pub horizon: usize,
    pub seeds: Vec<u64>,
    pub iterations: usize,
    pub samples: usize,
    pub kl_weight: f64,
    /// Some(ε): the KL bound (`SampledOptions::kl_bound`, w chosen per iteration; `kl_weight` its first guess)
    pub kl_bound: Option<f64>,
    /// the first iteration's exploration standard deviation per control
    pub init_sigma: f64,
    /// MuJoCo's settling from qpos0 under zero controls: max |qvel| tolerance, steps at most
    pub settle: (f64, usize),
    /// the paper's figures and claim (the result's "paper")
    pub paper: Value,
    /// the paper's ground-truth steps (engine identification, MuJoCo training) and the hypotheses the full run's
    /// checks test (transfer, data efficiency)
    pub paper_gt_steps: [usize; 2],
    pub hypotheses: [&'static str; 2],
    pub quick: bool,
}

/// The environment variable that sizes a full transfer run.
pub const SIZE_VAR: &str = "TORSION_TRANSFER_SIZE";

impl TransferConfig {
    pub fn interval_s(&self, dt: f64) -> f64 {
        self.hold as f64 * dt
    }
    /// A full run's size from `TORSION_TRANSFER_SIZE` = "seeds,iterations,samples,horizon" (seeds 1..=seeds,
    /// horizon in control intervals; docs/EXPERIMENTS.md: the paper's is 5,20,40,50 for SUPERball and 5,20,40,150
    /// for the 3-bar); unset or quick: unchanged.
    /// Per experiment: "NAME=spec;NAME=spec" (e.g. `tensegrity-roll=2,20,40,20;tensegrity-3bar=2,20,40,30`; a
    /// name not listed keeps its size).
    pub fn sized_from_env(self) -> Result<Self, ExperimentError> {
        let var = std::env::var_os(SIZE_VAR).filter(|_| !self.quick).map(|s| s.to_string_lossy().into_owned());
        self.sized_for_name(var.as_deref())
    }
    /// The variable's value `var` ("spec" or "NAME=spec;…", above) applied by [`TransferConfig::sized`].
    pub fn sized_for_name(self, var: Option<&str>) -> Result<Self, ExperimentError> {
        let spec = match var {
            Some(v) if v.contains('=') => v
                .split(';')
                .find_map(|e| e.split_once('=').filter(|(n, _)| n.trim() == self.name).map(|(_, s)| s.to_string())),
            v => v.map(str::to_string),
        };
        self.sized(spec.as_deref())
    }
    /// [`TransferConfig::sized_from_env`] on the variable's value `spec` (None: unchanged).
    pub fn sized(mut self, spec: Option<&str>) -> Result<Self, ExperimentError> {
        const VAR: &str = SIZE_VAR;
        let Some(s) = spec else { return Ok(self) };
        let n: Vec<usize> = s.split(',').map(|x| x.trim().parse::<usize>()).collect::<Result<_, _>>().map_err(|e| {
            fail(format!("{VAR}='{s}': {e} (expected four positive integers seeds,iterations,samples,horizon)"))
        })?;
        match n[..] {
            [seeds, iterations, samples, horizon] if seeds > 0 && iterations > 0 && samples >= 2 && horizon > 0 => {
                (self.seeds, self.iterations, self.samples, self.horizon) =
                    ((1..=seeds as u64).collect(), iterations, samples, horizon);
                Ok(self)
            }
            _ => Err(fail(format!(
                "{VAR}='{s}': expected seeds,iterations,samples,horizon (seeds, iterations, horizon ≥ 1, samples ≥ 2)"
            ))),
        }
    }
}

/// A trained policy: the open-loop controls (the final nominal), the cost history in the training simulator,
/// that simulator's steps and the wall-clock.
pub struct Trained {
    pub controls: Vec<DVector<f64>>,
    pub cost_history: Vec<f64>,
    pub sim_steps: usize,
    pub wall_s: f64,
}

/// The sampled iLQG (spec 003 §4.5) on `dyn_` from x0 and zero controls, the actuators' ctrlrange as the box.
pub fn train<D: Dynamics<State = Vec<f64>>>(
    dynamics: &mut D,
    steps: impl Fn(&D) -> usize,
    cfg: &TransferConfig,
    model: &Model,
    cost: &mut VelocityCost,
    x0: &[f64],
    seed: u64,
) -> Result<Trained, ExperimentError> {
    let t0 = Instant::now();
    let s0 = steps(dynamics);
    let nu = cfg.actuated.len();
    let range = |i: usize| model.cable_actuators[i].ctrlrange.unwrap_or((f64::NEG_INFINITY, f64::INFINITY));
    let opts = IlqrOptions {
        u_min: Some(cfg.actuated.iter().map(|&i| range(i).0).collect()),
        u_max: Some(cfg.actuated.iter().map(|&i| range(i).1).collect()),
        ..IlqrOptions::default()
    };
    let x0 = x0.to_vec();
    let ilqg = |e: IlqrError| fail(format!("{}: iLQG: {e}", cfg.name));
    let mut il = Ilqr::new(dynamics.state_dim(), nu, cfg.horizon, &x0, opts).map_err(ilqg)?;
    let so = SampledOptions {
        iterations: cfg.iterations,
        samples: cfg.samples,
        kl_weight: cfg.kl_weight,
        kl_bound: cfg.kl_bound,
        init_sigma: cfg.init_sigma,
        seed,
        ..SampledOptions::default()
    };
    let u0 = vec![DVector::zeros(nu); cfg.horizon];
    let r = il.solve_sampled(dynamics, cost, &x0, &u0, &so).map_err(ilqg)?;
    Ok(Trained {
        controls: r.controls,
        cost_history: r.cost_history,
        sim_steps: steps(dynamics) - s0,
        wall_s: t0.elapsed().as_secs_f64(),
    })
}

/// Open-loop controls executed from x0: the cost per interval (then the terminal term), the CoM path, the total
/// cost, the CoM's mean x-velocity and the states at the intervals' ends (x0 first).
pub struct Eval {
    pub cost: Vec<f64>,
    pub states: Vec<Vec<f64>>,
    pub com: Vec<Vec3>,
    pub total: f64,
    pub x_velocity: f64,
}

pub fn evaluate<D: Dynamics<State = Vec<f64>>>(
    dynamics: &mut D,
    cost: &mut VelocityCost,
    x0: &[f64],
    controls: &[DVector<f64>],
    interval_s: f64,
) -> Result<Eval, ExperimentError> {
    let (mut x, mut next) = (x0.to_vec(), x0.to_vec());
    let mut per = vec![];
    let mut com = vec![cost.layout.com(&x)];
    let mut states = vec![x.clone()];
    for (t, u) in controls.iter().enumerate() {
        per.push(cost.running(t, &x, u.as_slice()));
        dynamics.step(&x, u.as_slice(), &mut next).map_err(|e| fail(format!("open-loop evaluation: {e}")))?;
        std::mem::swap(&mut x, &mut next);
        com.push(cost.layout.com(&x));
        states.push(x.clone());
    }
    per.push(cost.terminal(&x));
    let span = controls.len() as f64 * interval_s;
    let x_velocity = (com[com.len() - 1].x - com[0].x) / span;
    Ok(Eval { total: per.iter().sum(), cost: per, states, com, x_velocity })
}

/// The environment variable naming a directory where a full run keeps its MuJoCo-trained policies (the MuJoCo
/// side is deterministic: same MJCF, seeds, size and start give the same policies), so runs that vary only the
/// engine's identification train MuJoCo once. Unset: no cache.
pub const CACHE_VAR: &str = "TORSION_TRANSFER_CACHE";

pub(crate) fn policy_cache(cfg: &TransferConfig) -> Option<std::path::PathBuf> {
    let dir = std::env::var_os(CACHE_VAR).filter(|_| !cfg.quick)?;
    let f = format!(
        "{}-mujoco-{}x{}x{}x{}-h{}-kl{}-s{}.json",
        cfg.name,
        cfg.seeds.len(),
        cfg.iterations,
        cfg.samples,
        cfg.horizon,
        cfg.hold,
        cfg.kl_weight,
        cfg.init_sigma
    );
    Some(std::path::PathBuf::from(dir).join(f))
}

/// The cached policies when the file exists and its start state is `x0` (to 1e-12: serde_json's default parser
/// may miss the written shortest decimals by an ulp, so reused controls can differ from the trained ones by that).
pub(crate) fn load_policies(p: &std::path::Path, x0: &[f64]) -> Option<Vec<Trained>> {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(p).ok()?).ok()?;
    let f = |v: &Value| v.as_array().map(|a| a.iter().filter_map(Value::as_f64).collect::<Vec<f64>>());
    let c = f(&v["x0"])?;
    if c.len() != x0.len() || c.iter().zip(x0).any(|(a, b)| (a - b).abs() > 1e-12 * b.abs().max(1.0)) {
        return None;
    }
    v["policies"]
        .as_array()?
        .iter()
        .map(|p| {
            Some(Trained {
                controls: p["controls"]
                    .as_array()?
                    .iter()
                    .map(|u| f(u).map(DVector::from_vec))
                    .collect::<Option<_>>()?,
                cost_history: f(&p["cost_history"])?,
                sim_steps: p["sim_steps"].as_u64()? as usize,
                wall_s: p["wall_s"].as_f64()?,
            })
        })
        .collect()
}

fn save_policies(p: &std::path::Path, x0: &[f64], set: &[Trained]) -> Result<(), ExperimentError> {
    let pol: Vec<Value> = set
        .iter()
        .map(|t| {
            json!({"controls": t.controls.iter().map(|u| u.as_slice().to_vec()).collect::<Vec<_>>(),
                   "cost_history": t.cost_history, "sim_steps": t.sim_steps, "wall_s": t.wall_s})
        })
        .collect();
    std::fs::create_dir_all(p.parent().unwrap_or(std::path::Path::new(".")))
        .and_then(|_| std::fs::write(p, json!({"x0": x0, "policies": pol}).to_string()))
        .map_err(|e| fail(format!("{CACHE_VAR}: writing {}: {e}", p.display())))
}

/// mean and population standard deviation
fn mean_std(v: &[f64]) -> (f64, f64) {
    let m = mean(v);
    (m, (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len().max(1) as f64).sqrt())
}

fn stats(v: &[f64]) -> Value {
    let (m, s) = mean_std(v);
    json!({"mean": m, "std": s, "per_seed": v})
}

/// Train `cfg.seeds` policies in torsion (with `id` applied) and in MuJoCo, run both sets open-loop in MuJoCo
/// and report (module doc).
pub fn run_transfer(cfg: &TransferConfig, id: &Identified) -> Result<ExperimentResult, ExperimentError> {
    let t0 = Instant::now();
    let mut model = torsion_model::io::mjcf::load_mjcf_str(&cfg.model_xml, &cfg.model_label, None)?;
    if let Some(g) = cfg.gravity {
        model.gravity = g;
    }
    id.apply(&mut model)?;
    let layout = Layout::new(&model)?;
    let mut mj =
        MujocoSim::start(&cfg.model_xml, &cfg.model_label, model.gravity, &model, cfg.hold, &cfg.actuated, cfg.settle)?;
    if (mj.dt - model.dt).abs() > 1e-15 {
        return Err(fail(format!("{}: MuJoCo's timestep {} ≠ torsion's {}", cfg.model_label, mj.dt, model.dt)));
    }
    let x0 = mj.x0.clone();
    let interval = cfg.interval_s(model.dt);
    let mut cost = VelocityCost {
        layout: layout.clone(),
        target: Vec3::new(cfg.target[0], cfg.target[1], cfg.target[2]),
        weights: cfg.weights,
        r: CONTROL_WEIGHT,
    };
    let mut eng = TorsionSim::new(model.clone(), cfg.hold, &cfg.actuated)?;
    let pb = bar(&cfg.name, 2 * cfg.seeds.len());
    let cache = policy_cache(cfg);
    let cached = cache.as_deref().and_then(|p| load_policies(p, &x0));
    let (mut ours, mut theirs) = (vec![], vec![]);
    for &seed in &cfg.seeds {
        ours.push(train(&mut eng, |d: &TorsionSim| d.steps, cfg, &model, &mut cost, &x0, seed)?);
        pb.inc(1);
        if cached.is_none() {
            theirs.push(train(&mut mj, |d: &MujocoSim| d.steps, cfg, &model, &mut cost, &x0, seed)?);
        }
        pb.inc(1);
    }
    pb.finish_and_clear();
    let reused = cached.is_some();
    match (cached, &cache) {
        (Some(c), _) => theirs = c,
        (None, Some(p)) => save_policies(p, &x0, &theirs)?,
        (None, None) => {}
    }
    // both sets open-loop on MuJoCo; the zero controls as the floor
    let run = |mj: &mut MujocoSim, cost: &mut VelocityCost, set: &[Trained]| -> Result<Vec<Eval>, ExperimentError> {
        set.iter().map(|p| evaluate(&mut *mj, &mut *cost, &x0, &p.controls, interval)).collect()
    };
    let ev_ours = run(&mut mj, &mut cost, &ours)?;
    let ev_theirs = run(&mut mj, &mut cost, &theirs)?;
    let zero = evaluate(&mut mj, &mut cost, &x0, &vec![DVector::zeros(cfg.actuated.len()); cfg.horizon], interval)?;
    // the sim gap (tensegrity_gap): both sets, zero and random controls replayed in torsion and MuJoCo (full runs)
    let gap = if cfg.quick {
        Value::Null
    } else {
        let label = |who: &str, s: &[Trained]| -> Vec<(String, Vec<DVector<f64>>)> {
            s.iter().zip(&cfg.seeds).map(|(p, k)| (format!("{who}, seed {k}"), p.controls.clone())).collect()
        };
        let mut sets = label("engine-trained", &ours);
        sets.extend(label("MuJoCo-trained", &theirs));
        crate::tensegrity_gap::measure(cfg, &model, &sets)?
    };
    let xv = |e: &[Eval]| e.iter().map(|e| e.x_velocity).collect::<Vec<_>>();
    let tc = |e: &[Eval]| e.iter().map(|e| e.total).collect::<Vec<_>>();
    let (xo, xt) = (mean(&xv(&ev_ours)), mean(&xv(&ev_theirs)));
    let (co, ct) = (mean(&tc(&ev_ours)), mean(&tc(&ev_theirs)));
    let x_velocity_ratio = xo / xt;
    let cost_ratio = ct / co;
    let wall = |s: &[Trained]| s.iter().map(|p| p.wall_s).collect::<Vec<_>>();
    let (wo, wt) = (wall(&ours), wall(&theirs));
    let mj_steps: Vec<f64> = theirs.iter().map(|p| p.sim_steps as f64).collect();
    let nominal = cfg.iterations * cfg.samples * cfg.horizon * cfg.hold;
    let in_engine: Vec<f64> = ours.iter().map(|p| *p.cost_history.last().unwrap_or(&f64::NAN)).collect();
    let first = |s: &[Trained]| s.iter().map(|p| p.cost_history[0]).collect::<Vec<_>>();
    let last = |s: &[Trained]| s.iter().map(|p| *p.cost_history.last().unwrap_or(&f64::NAN)).collect::<Vec<_>>();
    let paper_fraction = cfg.paper_gt_steps[0] as f64 / cfg.paper_gt_steps[1] as f64;
    let metrics = json!({
        "x_velocity_ratio": x_velocity_ratio,
        "cost_ratio": cost_ratio,
        "x_velocity": {"engine_trained": stats(&xv(&ev_ours)), "mujoco_trained": stats(&xv(&ev_theirs)),
                       "zero_controls": zero.x_velocity, "target": cfg.target[0]},
        "cost": {"engine_trained": stats(&tc(&ev_ours)), "mujoco_trained": stats(&tc(&ev_theirs)),
                 "zero_controls": zero.total,
                 "engine_trained_in_engine": stats(&in_engine),
                 "training_first_last": {"engine": [mean(&first(&ours)), mean(&last(&ours))],
                                         "mujoco": [mean(&first(&theirs)), mean(&last(&theirs))]}},
        "gt_steps": {
            "engine": {"identification": id.gt_steps, "training": 0, "total": id.gt_steps},
            "mujoco_trained": {"per_seed": mj_steps, "mean": mean(&mj_steps),
                               "iterations_x_samples_x_steps": nominal},
            "fraction": id.gt_steps as f64 / mean(&mj_steps),
            "paper": {"engine": cfg.paper_gt_steps[0], "mujoco": cfg.paper_gt_steps[1],
                      "fraction": paper_fraction},
        },
        "training_wall_clock_s": {"torsion": stats(&wo), "mujoco": stats(&wt),
                                  "mujoco_over_torsion": mean(&wt) / mean(&wo)},
        "identified": {"k_over_m": id.ratios[0], "c_over_m": id.ratios[1], "a": id.ratios[2], "b": id.ratios[3],
                       "contact": cid::NAMES.iter().zip(&id.contact).map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
                       "data": id.data.label(), "wall_clock_s": id.wall_s},
        "sim_gap": gap,
        "mujoco_settle_steps": mj.settle_steps,
        "mujoco_policies_reused": if reused { json!(cache.as_ref().map(|p| p.display().to_string())) } else { json!(false) },
        "wall_clock_s": t0.elapsed().as_secs_f64(),
    });
    let settings = json!({
        "quick": cfg.quick,
        "model": format!("{} (unchanged), gravity {:?}", cfg.model_label, [model.gravity.x, model.gravity.y, model.gravity.z]),
        "engine": format!("Featherstone + the linear contact model with the parameters identified from 1 air + 1 throw trajectory (identify_with: noncontact ratios, then contact with them frozen), data: {}", id.data.label()),
        "task": format!("CoM velocity target {:?}, weights {:?}, control cost r = {CONTROL_WEIGHT} per interval", cfg.target, cfg.weights),
        "control_interval_s": interval,
        "horizon": format!("{} intervals = {} s = {} steps", cfg.horizon, cfg.horizon as f64 * interval, cfg.horizon * cfg.hold),
        "actuated": cfg.actuated,
        "ilqg": format!("sampled iLQG (torsion_opt::ilqr::sampled), {} iterations × {} samples, KL weight {} (fixed), initial σ {}, zero initial controls, the ctrlrange as the box; the same code, cost and settings on both simulators", cfg.iterations, cfg.samples, cfg.kl_weight, cfg.init_sigma),
        "seeds": cfg.seeds,
        "start": format!("MuJoCo's rest state: qpos0 settled under zero controls until max |qvel| < {} ({} steps)", cfg.settle.0, mj.settle_steps),
        "evaluation": "each policy's final nominal controls executed open-loop in MuJoCo from the same start; x-velocity = CoM x displacement / horizon; cost = the iLQG's cost on MuJoCo's states",
        "ratios": "x_velocity_ratio = mean x-velocity engine-trained / MuJoCo-trained; cost_ratio = mean cost MuJoCo-trained / engine-trained (both: engine-trained performance relative, ≥ 0.9 passes H8)",
        "mujoco": "pip mujoco behind a pipe (bench/tensegrity/mj_server.py); training wall-clocks include the pipe",
    });
    // Fig. 11: cost per interval (mean over seeds), CoM XY (mean over seeds), training curves
    let mean_curve = |e: &[Eval]| -> Vec<f64> {
        (0..e[0].cost.len()).map(|t| mean(&e.iter().map(|x| x.cost[t]).collect::<Vec<_>>())).collect()
    };
    let mean_xy = |e: &[Eval]| -> Vec<(f64, f64)> {
        (0..e[0].com.len())
            .map(|t| {
                (
                    mean(&e.iter().map(|x| x.com[t].x).collect::<Vec<_>>()),
                    mean(&e.iter().map(|x| x.com[t].y).collect::<Vec<_>>()),
                )
            })
            .collect()
    };
    let mut cost_panel = Panel::new("cost per control interval on MuJoCo (Fig. 11 left)", "interval", "cost").x_int();
    cost_panel = cost_panel
        .series(Series::indexed("engine-trained", &mean_curve(&ev_ours), Mark::LinePoints, color(0)))
        .series(Series::indexed("MuJoCo-trained", &mean_curve(&ev_theirs), Mark::LinePoints, color(1)))
        .series(Series::indexed("zero controls", &zero.cost, Mark::Dashed, color(2)));
    let mut xy = Panel::new("mean CoM path on MuJoCo (Fig. 11 right)", "x (m)", "y (m)");
    xy = xy.series(Series::new("engine-trained", mean_xy(&ev_ours), Mark::LinePoints, color(0))).series(Series::new(
        "MuJoCo-trained",
        mean_xy(&ev_theirs),
        Mark::LinePoints,
        color(1),
    ));
    let hist = |s: &[Trained]| -> Vec<f64> {
        (0..s[0].cost_history.len()).map(|i| mean(&s.iter().map(|p| p.cost_history[i]).collect::<Vec<_>>())).collect()
    };
    let training = Panel::new("training cost in its own simulator (mean over seeds)", "iteration", "cost")
        .x_int()
        .series(Series::indexed("in torsion", &hist(&ours), Mark::LinePoints, color(0)))
        .series(Series::indexed("in MuJoCo", &hist(&theirs), Mark::LinePoints, color(1)));
    let panels = vec![cost_panel, xy, training];
    let improved = |s: &[Trained]| s.iter().all(|p| p.cost_history.last() < p.cost_history.first());
    let mut checks = vec![Check::holds(
        "every seed lowers its cost in its training simulator (engine and MuJoCo)",
        improved(&ours) && improved(&theirs),
    )];
    // the quick run's few iterations on a short horizon say nothing about H8 and its MuJoCo training is tiny (H6):
    // there the ratios are reported, not held
    if !cfg.quick {
        let [h_transfer, h_data] = cfg.hypotheses;
        let data_note = format!("{h_data}: paper {} / {}", cfg.paper_gt_steps[0], cfg.paper_gt_steps[1]);
        checks.extend([
            Check::ge("x_velocity_ratio", x_velocity_ratio, 0.9).note(h_transfer),
            Check::ge("cost_ratio", cost_ratio, 0.9).note(h_transfer),
            Check::le(
                "engine gt steps / MuJoCo-trained gt steps",
                id.gt_steps as f64 / mean(&mj_steps),
                paper_fraction,
            )
            .note(&data_note),
        ]);
    }
    // the scene: the first seed of each set on MuJoCo, one frame per control interval
    let mut runs = vec![];
    for (label, ev, p) in
        [("engine-trained on MuJoCo", &ev_ours[0], &ours[0]), ("MuJoCo-trained", &ev_theirs[0], &theirs[0])]
    {
        let mut rec = Recorder::new(&format!("{label} (seed {})", cfg.seeds[0]), &model)?;
        let (mut s, mut ctrl) = (GenState::default(), vec![0.0; model.nu()]);
        for (t, x) in ev.states.iter().enumerate() {
            // the controls of the interval that led to this state
            if let Some(u) = t.checked_sub(1).and_then(|k| p.controls.get(k)) {
                cfg.actuated.iter().enumerate().for_each(|(k, &i)| ctrl[i] = u[k]);
            }
            layout.to_gen(x, &mut s);
            rec.gen(t as f64 * interval, &s, &ctrl)?;
        }
        runs.push(rec.finish());
    }
    let scene = SceneView::new(model.clone(), runs)?;
    Ok(ExperimentResult {
        scene: Some(scene),
        name: cfg.name.clone(),
        checks,
        metrics,
        paper: cfg.paper.clone(),
        settings,
        plot: Box::new(move |p| figure(p, &panels, 3)),
    })
}

/// The SUPERball task (spec 003 §4.5): 24 actuators, 100 ms control interval (the 3-bar's; the 6-bar's is not
/// stated), full: the paper's 5 seeds of 20 iterations × 40 samples over 5 s; quick: 1 seed, 2 × 8 over 0.5 s.
pub fn superball_config(quick: bool) -> Result<TransferConfig, ExperimentError> {
    let m = cid::superball()?;
    Ok(TransferConfig {
        name: "tensegrity-roll".into(),
        model_xml: cid::MODEL_XML.into(),
        model_label: "superball.xml".into(),
        gravity: None,
        hold: 100,
        actuated: (0..m.nu()).collect(),
        target: [10.0, 0.0, 0.0],
        weights: [1.0, 0.5, 0.1],
        horizon: if quick { 5 } else { FULL_HORIZON },
        seeds: if quick { vec![1] } else { (1..=5).collect() },
        iterations: if quick { 2 } else { PAPER_ITERATIONS },
        samples: if quick { 8 } else { 40 },
        kl_weight: 0.005,
        kl_bound: None,
        init_sigma: INIT_SIGMA,
        settle: (1e-5, 20_000),
        paper: json!({
            "claim": "§V-C, Figs. 10–11: iLQG (20 iterations × 40 samples × 5000 steps, KL weight 0.005) trained 5× in the engine identified from 1 + 1 trajectories and 5× on MuJoCo; both executed open-loop on MuJoCo give 'very close' cost curves and XY paths (no numbers). Data: 10k ground-truth steps vs 4M = 0.25 %",
            "x_velocity_ratio": "≥ 0.9 (H8, our criterion; the paper gives no number)",
            "cost_ratio": "≥ 0.9 (H8, our criterion)",
            "gt_steps": {"engine": PAPER_ENGINE_STEPS, "mujoco": PAPER_MUJOCO_STEPS, "fraction": 0.0025},
            "ilqg": {"iterations": 20, "samples": 40, "steps": 5000, "kl_weight": 0.005},
            "target": "H8: engine-trained policies on MuJoCo reach ≥ 90 % of the MuJoCo-trained ones' mean x-velocity and total cost; H6: 10k vs 4M",
        }),
        paper_gt_steps: [PAPER_ENGINE_STEPS, PAPER_MUJOCO_STEPS],
        hypotheses: ["H8", "H6"],
        quick,
    })
}

/// The full run's size: the paper's 20 iterations (× 40 samples) over 5 s (50 intervals of 100 ms);
/// `TORSION_TRANSFER_SIZE` runs less (docs/EXPERIMENTS.md: the sizes run).
pub const FULL_HORIZON: usize = 50;
pub const PAPER_ITERATIONS: usize = 20;
/// The first iteration's exploration σ per control (the ctrlrange is ±100).
pub const INIT_SIGMA: f64 = 20.0;

pub fn run(quick: bool) -> Result<ExperimentResult, ExperimentError> {
    // quick: the committed quick subsets of the 1 + 1 trajectories; full: the paper's 1 + 1 (`TORSION_TRANSFER_ID`)
    run_transfer(&superball_config(quick)?.sized_from_env()?, &identify_once(IdData::for_run(quick)?)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensegrity_noncontact_id::mj_qvel_to_v;
    use torsion_math::rng::XorShift;

    /// A SUPERball state off rest: qpos from the file, random velocities and activations.
    fn state(m: &Model, seed: u64) -> Vec<f64> {
        let mut rng = XorShift(seed);
        let mut x = m.neutral_q();
        x.extend((0..m.nv() + m.na()).map(|_| rng.sym()));
        x
    }

    /// The flat layout: to_gen = mj_qvel_to_v and from_gen its inverse; diff(x, x ⊕ δ) = δ.
    #[test]
    fn layout_round_trips() {
        let m = cid::superball().unwrap();
        let l = Layout::new(&m).unwrap();
        let x = state(&m, 3);
        let mut s = GenState::default();
        l.to_gen(&x, &mut s);
        let v = mj_qvel_to_v(&m, &x[..l.nq], &x[l.nq..l.nq + l.nv]);
        assert!(s.v.iter().zip(&v).all(|(a, b)| (a - b).abs() < 1e-15));
        let mut back = vec![];
        l.from_gen(&s, &mut back);
        let e = x.iter().zip(&back).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        assert!(e < 1e-14, "{e:e}");
        let mut rng = XorShift(5);
        let d: Vec<f64> = (0..l.tangent_len()).map(|_| 0.3 * rng.sym()).collect();
        let mut out = vec![0.0; l.tangent_len()];
        l.diff(&x, &l.retract(&x, &d), &mut out);
        let e = d.iter().zip(&out).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        assert!(e < 1e-12, "{e:e}");
    }

    /// The cost's tangent gradient and Hessian against central differences through `retract`.
    #[test]
    fn cost_derivatives_match_central_differences() {
        let m = cid::superball().unwrap();
        let l = Layout::new(&m).unwrap();
        let mut c =
            VelocityCost { layout: l.clone(), target: Vec3::new(10.0, 0.0, 0.0), weights: [1.0, 0.5, 0.1], r: 0.3 };
        let x = state(&m, 7);
        let u = [0.4, -1.2];
        let (nx, h) = (l.tangent_len(), 1e-5);
        let mut d = CostDerivs::zeros(nx, 2);
        c.running_derivs(0, &x, &u, &mut d);
        let f = |c: &mut VelocityCost, dx: &[f64], u: &[f64]| c.running(0, &l.retract(&x, dx), u);
        let (mut gx, mut hx) = (vec![0.0; nx], DMatrix::zeros(nx, nx));
        for i in 0..nx {
            let (mut p, mut q) = (vec![0.0; nx], vec![0.0; nx]);
            p[i] = h;
            q[i] = -h;
            gx[i] = (f(&mut c, &p, &u) - f(&mut c, &q, &u)) / (2.0 * h);
            // the Hessian's column i: central differences of the analytic gradient
            let (mut dp, mut dq) = (CostDerivs::zeros(nx, 2), CostDerivs::zeros(nx, 2));
            c.running_derivs(0, &l.retract(&x, &p), &u, &mut dp);
            c.running_derivs(0, &l.retract(&x, &q), &u, &mut dq);
            hx.set_column(i, &((&dp.lx - &dq.lx) / (2.0 * h)));
        }
        let gu: Vec<f64> = (0..2)
            .map(|i| {
                let (mut p, mut q) = (u, u);
                p[i] += h;
                q[i] -= h;
                let z = vec![0.0; nx];
                (f(&mut c, &z, &p) - f(&mut c, &z, &q)) / (2.0 * h)
            })
            .collect();
        let ex = torsion_diff::rel_err(d.lx.as_slice(), &gx);
        let eu = torsion_diff::rel_err(d.lu.as_slice(), &gu);
        let eh = (&d.lxx - &hx).amax() / hx.amax();
        eprintln!("cost derivatives vs central FD: lx {ex:.1e}, lu {eu:.1e}, lxx {eh:.1e}");
        assert!(ex < 1e-6 && eu < 1e-6 && eh < 1e-6, "{ex:e} {eu:e} {eh:e}");
        assert!(d.lxx.amax() > 0.0 && d.lx.amax() > 0.0);
    }

    /// `TORSION_TRANSFER_SIZE` sets seeds, iterations, samples and horizon; malformed values are errors naming the
    /// variable; the quick run ignores it (`sized_from_env`).
    #[test]
    fn transfer_size_parses_and_rejects() {
        let cfg = superball_config(false).unwrap();
        let c = cfg.clone().sized(Some("2, 20,40,150")).unwrap();
        assert_eq!((c.seeds, c.iterations, c.samples, c.horizon), (vec![1, 2], 20, 40, 150));
        let c = cfg.clone().sized(None).unwrap();
        assert_eq!((c.seeds.len(), c.iterations, c.horizon), (5, PAPER_ITERATIONS, FULL_HORIZON));
        // per experiment name; a name not listed keeps its size
        let c = cfg.clone().sized_for_name(Some("tensegrity-3bar=1,2,3,4; tensegrity-roll=2,20,40,20")).unwrap();
        assert_eq!((c.seeds, c.iterations, c.samples, c.horizon), (vec![1, 2], 20, 40, 20));
        let c = cfg.clone().sized_for_name(Some("tensegrity-3bar=1,2,3,4")).unwrap();
        assert_eq!((c.seeds.len(), c.horizon), (5, FULL_HORIZON));
        let c = cfg.clone().sized_for_name(Some("2,20,40,150")).unwrap();
        assert_eq!(c.horizon, 150);
        let e =
            cfg.clone().sized_for_name(Some("tensegrity-roll=2,x")).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains(SIZE_VAR) && e.contains("2,x"), "{e}");
        for bad in ["2,20,40", "2,20,1,150", "0,20,40,150", "a,20,40,150", ""] {
            let e = cfg.clone().sized(Some(bad)).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(e.contains(SIZE_VAR) && e.contains(bad), "'{bad}': {e}");
        }
    }

    /// The quick identification is computed once per process and shared.
    #[test]
    fn quick_identification_is_shared() {
        let (a, b) = (identify_quick().unwrap(), identify_quick().unwrap());
        assert_eq!((a.contact, a.ratios, a.wall_s), (b.contact, b.ratios, b.wall_s));
    }

    /// Identical flat states give identical next states through torsion's wrapper and the solver's own rollout
    /// (hold steps with the controls held).
    #[test]
    fn engine_wrapper_equals_the_stepper() {
        let mut m = cid::superball().unwrap();
        m.tensegrity_contact = Some(LinearContact::from_array(cid::P_INIT));
        let l = Layout::new(&m).unwrap();
        let mut sim = TorsionSim::new(m.clone(), 3, &[0, 5]).unwrap();
        let x = state(&m, 11);
        let mut out = vec![];
        sim.step(&x, &[40.0, -70.0], &mut out).unwrap();
        let solver = FeatherstoneSolver::default();
        let mut ws = solver.workspace(&m).unwrap();
        let mut s = GenState::default();
        l.to_gen(&x, &mut s);
        let mut ctrl = vec![0.0; m.nu()];
        ctrl[0] = 40.0;
        ctrl[5] = -70.0;
        let u = Control::with_ctrl(&vec![0.0; m.nv()], &ctrl);
        let mut next = s.clone();
        for _ in 0..3 {
            solver.step(&m, &s, &u, m.dt, &mut next, &mut ws, None).unwrap();
            std::mem::swap(&mut s, &mut next);
        }
        let mut flat = vec![];
        l.from_gen(&s, &mut flat);
        assert_eq!(flat, out);
        assert_eq!(sim.steps, 3);
        assert!(TorsionSim::new(m.clone(), 3, &[24]).is_err());
    }

    /// The quick run (MuJoCo through the pipe): both simulators' iLQG lower their own cost, the accounting holds.
    #[test]
    fn quick_run_meets_its_targets() {
        let r = run(true).unwrap();
        let g = &r.metrics["gt_steps"]["mujoco_trained"];
        // per seed: the initial nominal, then samples × T and the line search's rollouts per iteration
        let per_seed = g["per_seed"][0].as_f64().unwrap();
        assert!(per_seed >= g["iterations_x_samples_x_steps"].as_f64().unwrap(), "{g}");
        cid::check_run(&r);
    }

    /// The full run: `cargo test --release -p torsion-experiments --lib tensegrity_roll::tests::full_run --
    /// --ignored --nocapture` (bench/tensegrity/data from gt.py; writes results/tensegrity-roll.*).
    #[test]
    #[ignore]
    fn full_run_meets_its_targets() {
        cid::check_full_run(&run(false).unwrap());
    }
}
