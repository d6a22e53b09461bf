//! Randomized sweeps (issue 20 item 5; RELIABILITY.md "Randomized sweeps"): per solver, scenes with random
//! states, controls, time steps and parameters within documented ranges, contact configurations placed at the
//! switches (touching, grazing, resting, stick/slip boundaries). Each scene takes `STEPS` steps with a record,
//! a `step_vjp` with a random cotangent after each step and `step_jacobians_into` at the first state; it counts
//! non-finite states / gradients / Jacobians that no `SolverError` reported (the promise: 0), blow-ups, the
//! reported errors by kind and panics (the promise: 0). `torsion-bench sweep` (bin `sweep`) runs ≥ 10,000
//! scenes per solver, `tests/sweep.rs` a few hundred.
use nalgebra::DMatrix;
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use torsion_diff::gradcheck::XorShift;
use torsion_diff::rollout::set_control_row;
use torsion_math::{Quat, Vec3};
use torsion_model::builder::{floating_tree, tensegrity_prism, tensegrity_prism_on_ground, two_link_arm};
use torsion_model::io::baxter_left_arm;
use torsion_model::io::mjcf::load_mjcf_str;
use torsion_model::params::ParamKind;
use torsion_model::{Control, GenState, JointType, Model, ParamSelection, StateSpace};
use torsion_solvers::lcp::LcpSolver;
use torsion_solvers::ncp::{NcpOptions, NcpSolver};
use torsion_solvers::{DiffSolver, FeatherstoneSolver, SolverError, StepJacobians, XpbdOptions, XpbdSolver};

/// Steps per scene.
pub const STEPS: usize = 3;
/// A state entry (position, velocity, quaternion entry, activation) beyond this magnitude after a step that
/// reported no error is a blow-up (counted: a divergence, not a wrong value).
pub const BLOWUP: f64 = 1e6;

/// The swept steppers (`tensegrity`: Featherstone on the 3-bar prism, in the air and on the ground).
pub const SOLVERS: [&str; 5] = ["xpbd", "featherstone", "tensegrity", "ncp", "lcp"];

/// What a sweep saw. `nonfinite_*` and `panics` must be 0.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SweepCounts {
    pub scenes: usize,
    /// steps that returned Ok
    pub steps: usize,
    /// Ok steps with contacts (`StepInfo::contacts` > 0) and Ok steps whose inner solves missed their tolerance
    /// (`StepInfo::converged` false: reported, the state is still finite)
    pub contact_steps: usize,
    pub unconverged_steps: usize,
    pub vjps: usize,
    pub jacobians: usize,
    /// Ok steps with a non-finite entry in the new state
    pub nonfinite_states: usize,
    /// Ok `step_vjp`s with a non-finite entry in ∂L/∂s, ∂L/∂u or ∂L/∂θ
    pub nonfinite_gradients: usize,
    /// Ok `step_jacobians_into` with a non-finite entry in A, B or C
    pub nonfinite_jacobians: usize,
    /// Ok steps with a finite state entry beyond [`BLOWUP`] (the scene stops there)
    pub blowups: usize,
    /// reported errors of `step`, `step_vjp`, `step_jacobians_into` (and `workspace`) by call and kind
    pub errors: BTreeMap<String, usize>,
    /// the first error of each key of `errors`, with the scene's seed
    pub first_errors: BTreeMap<String, String>,
    /// random parameter values the model refused (`params_set`; the scene keeps the old ones)
    pub params_refused: usize,
    pub panics: usize,
    /// the first few problems (non-finite outputs, panics), with the scene's seed, to reproduce them
    pub examples: Vec<String>,
}

impl SweepCounts {
    /// Non-finite outputs no error reported, plus panics: what the sweep promises to be 0.
    pub fn unreported(&self) -> usize {
        self.nonfinite_states + self.nonfinite_gradients + self.nonfinite_jacobians + self.panics
    }

    fn error(&mut self, call: &str, e: &SolverError, tag: &str) {
        let kind = match e {
            SolverError::Unsupported { .. } => "unsupported",
            SolverError::BadInput { .. } => "bad_input",
            SolverError::NonFinite { .. } => "non_finite",
            SolverError::NoSolution { .. } => "no_solution",
        };
        let key = format!("{call}/{kind}");
        self.first_errors.entry(key.clone()).or_insert_with(|| format!("{tag}{e}"));
        *self.errors.entry(key).or_default() += 1;
    }

    fn example(&mut self, what: String) {
        if self.examples.len() < 10 {
            self.examples.push(what);
        }
    }

    /// The counts as JSON (the bin's report, RELIABILITY.md's figures).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "scenes": self.scenes, "steps": self.steps, "contact_steps": self.contact_steps,
            "unconverged_steps": self.unconverged_steps, "vjps": self.vjps, "jacobians": self.jacobians,
            "nonfinite_states": self.nonfinite_states, "nonfinite_gradients": self.nonfinite_gradients,
            "nonfinite_jacobians": self.nonfinite_jacobians, "blowups": self.blowups, "errors": self.errors, "first_errors": self.first_errors,
            "params_refused": self.params_refused, "panics": self.panics, "examples": self.examples,
        })
    }
}

/// A model the sweep draws from and how its states are drawn.
struct Base {
    name: &'static str,
    model: Model,
    kind: Draw,
}

#[derive(Clone, Copy)]
enum Draw {
    /// random joint configuration and velocities (arms, trees)
    Joints,
    /// the prism: its rest pose perturbed (positions ±2 cm, rotations ±0.05 rad), velocities ±0.5; `ground`:
    /// lowered / raised around touching
    Prism { ground: bool },
    /// free bodies on a plane (MJCF): placed touching / grazing / resting with random tilt (see `contact_state`)
    Contact,
}

const BOX: &str = r#"<mujoco><worldbody><geom name="floor" type="plane" size="5 5 0.1"/>
  <body name="box" pos="0 0 0.1"><freejoint/><geom name="box" type="box" size="0.1 0.1 0.1" mass="1"/></body>
  </worldbody></mujoco>"#;
const SPHERE: &str = r#"<mujoco><worldbody><geom name="floor" type="plane" size="5 5 0.1"/>
  <body name="ball" pos="0 0 0.1"><freejoint/><geom name="ball" type="sphere" size="0.1" mass="1"/></body>
  </worldbody></mujoco>"#;
const CAPSULE: &str = r#"<mujoco><worldbody><geom name="floor" type="plane" size="5 5 0.1"/>
  <body name="pill" pos="0 0 0.1"><freejoint/><geom name="pill" type="capsule" size="0.05 0.15" mass="1"/></body>
  </worldbody></mujoco>"#;
const STACK: &str = r#"<mujoco><worldbody><geom name="floor" type="plane" size="5 5 0.1"/>
  <body name="low" pos="0 0 0.1"><freejoint/><geom name="low" type="box" size="0.1 0.1 0.1" mass="1"/></body>
  <body name="high" pos="0 0 0.3"><freejoint/><geom name="high" type="box" size="0.1 0.1 0.1" mass="0.5"/></body>
  </worldbody></mujoco>"#;

fn bases(solver: &str) -> Result<Vec<Base>, String> {
    let g = Vec3::new(0.0, 0.0, -9.81);
    let e = |e: torsion_model::ModelError| e.to_string();
    let joints = |name, model| Base { name, model, kind: Draw::Joints };
    let mjcf = |name, xml: &str| -> Result<Base, String> {
        Ok(Base { name, model: load_mjcf_str(xml, name, None).map_err(e)?, kind: Draw::Contact })
    };
    // Baxter's left arm (7 hinges with limits) when example-robot-data is installed
    let baxter = || baxter_left_arm().ok().map(|m| joints("baxter_left_arm", m));
    let arm = || two_link_arm(0.8, 0.5, 1.0, g, 0.01).map_err(e);
    Ok(match solver {
        "xpbd" => [Some(joints("two_link_arm", arm()?)), baxter()].into_iter().flatten().collect(),
        "featherstone" => {
            [Some(joints("two_link_arm", arm()?)), Some(joints("floating_tree", floating_tree())), baxter()]
                .into_iter()
                .flatten()
                .collect()
        }
        "tensegrity" => vec![
            Base { name: "prism", model: tensegrity_prism(), kind: Draw::Prism { ground: false } },
            Base { name: "prism_on_ground", model: tensegrity_prism_on_ground(), kind: Draw::Prism { ground: true } },
        ],
        "ncp" | "lcp" => {
            vec![mjcf("box", BOX)?, mjcf("sphere", SPHERE)?, mjcf("capsule", CAPSULE)?, mjcf("stack", STACK)?]
        }
        _ => return Err(format!("unknown solver '{solver}' (one of {})", SOLVERS.join(", "))),
    })
}

/// Run `scenes` scenes of `solver` (one of [`SOLVERS`]) from `seed`; `tick` is called after each scene.
pub fn sweep(solver: &str, scenes: usize, seed: u64, mut tick: impl FnMut()) -> Result<SweepCounts, String> {
    let bases = bases(solver)?;
    let mut c = SweepCounts::default();
    for k in 0..scenes {
        // one seed per scene: an example's seed reproduces it alone
        let scene_seed = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (k as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03);
        let base = &bases[k % bases.len()];
        let r = catch_unwind(AssertUnwindSafe(|| match solver {
            "xpbd" => {
                let s = XpbdSolver::new(XpbdOptions { iterations: 10, ..Default::default() });
                scene(&s, base, scene_seed, &mut c, xpbd_state)
            }
            "featherstone" | "tensegrity" => scene(&FeatherstoneSolver::default(), base, scene_seed, &mut c, gen_state),
            "ncp" => scene(&NcpSolver::new(NcpOptions::default()), base, scene_seed, &mut c, gen_state),
            _ => scene(&LcpSolver::default(), base, scene_seed, &mut c, gen_state),
        }));
        c.scenes += 1;
        if let Err(p) = r {
            c.panics += 1;
            let msg = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
            c.example(format!("{solver} {} seed {scene_seed:#x}: panic {}", base.name, msg.unwrap_or_default()));
        }
        tick();
    }
    Ok(c)
}

fn finite(x: &[f64]) -> bool {
    x.iter().all(|v| v.is_finite())
}

/// Uniform in [a, b).
fn unif(r: &mut XorShift, a: f64, b: f64) -> f64 {
    a + (b - a) * r.u()
}

/// A value at a switch with probability 1/2 (0, or ±1e-12 / ±1e-8 around it), else uniform in ±`scale`.
fn near_zero(r: &mut XorShift, scale: f64) -> f64 {
    match (r.u() * 8.0) as usize {
        0 | 1 => 0.0,
        2 => 1e-12 * r.sym(),
        3 => 1e-8 * r.sym(),
        _ => scale * r.sym(),
    }
}

/// One scene: random parameters, state, controls, dt; `STEPS` steps with `step_vjp` after each, the Jacobians
/// at the first state.
fn scene<S: DiffSolver>(
    solver: &S,
    base: &Base,
    seed: u64,
    c: &mut SweepCounts,
    draw: fn(&Model, Draw, &mut XorShift) -> S::State,
) {
    let mut r = XorShift(seed | 1);
    let mut model = base.model.clone();
    randomize_params(&mut model, &mut r, c);
    let tag = |what: &str| format!("{} {} seed {seed:#x}: {what}", solver.name(), base.name);
    let s0 = draw(&model, base.kind, &mut r);
    // dt log-uniform in [1e-4, 1e-2] s, one scene in four in [1e-2, 1] s (the largest step the API accepts)
    let dt = if r.u() < 0.75 { 10f64.powf(unif(&mut r, -4.0, -2.0)) } else { 10f64.powf(unif(&mut r, -2.0, 0.0)) };
    let nc = solver.control_dim(&model);
    let nu = model.nu();
    let tau = [0.0, 0.1, 1.0, 10.0][(r.u() * 4.0) as usize];
    // hinge-only models: one scene in four pushes each joint with ± its dry friction (the stick / slip switch)
    let at_friction = model.dof_joints().len() == model.nv() && r.u() < 0.25;
    let controls: Vec<Control> = (0..STEPS)
        .map(|_| {
            let row: Vec<f64> = (0..nc)
                .map(|i| match i {
                    // cable actuators: ctrlrange ±100 and beyond (clamped)
                    i if i + nu >= nc => 150.0 * r.sym(),
                    i if at_friction => {
                        model.joint_frictionloss[i] * r.sym().signum() * (1.0 + near_zero(&mut r, 1e-6))
                    }
                    _ => near_zero(&mut r, tau),
                })
                .collect();
            let mut u = Control::zeros(0);
            set_control_row(&mut u, &row, nu);
            u
        })
        .collect();
    // gradients w.r.t. up to 8 random parameters of the table
    let n_par = model.param_table().len();
    let mut sel: Vec<usize> = (0..8).map(|_| (r.u() * n_par as f64) as usize).collect();
    sel.sort_unstable();
    sel.dedup();
    let sel = ParamSelection { indices: sel };

    let mut ws = match solver.workspace(&model) {
        Ok(ws) => ws,
        Err(e) => return c.error("workspace", &e, &tag("")),
    };
    let mut jac = StepJacobians::for_solver(solver, &model, &sel);
    match solver.step_jacobians_into(&model, &s0, &controls[0], dt, &sel, &mut ws, &mut jac) {
        Ok(()) => {
            c.jacobians += 1;
            if ![&jac.a, &jac.b, &jac.c].iter().all(|m: &&DMatrix<f64>| finite(m.as_slice())) {
                c.nonfinite_jacobians += 1;
                c.example(tag("non-finite Jacobian"));
            }
        }
        Err(e) => c.error("jacobians", &e, &tag("")),
    }
    let mut rec = solver.record(&model);
    let (mut s, mut out) = (s0.clone(), s0.clone());
    let n_amb = s0.encode().len();
    let (mut g_u, mut g_theta) = (vec![0.0; nc], vec![0.0; sel.len()]);
    for u in &controls {
        let info = match solver.step(&model, &s, u, dt, &mut out, &mut ws, Some(&mut rec)) {
            Ok(info) => info,
            Err(e) => return c.error("step", &e, &tag("")),
        };
        c.steps += 1;
        c.contact_steps += usize::from(info.contacts > 0);
        c.unconverged_steps += usize::from(!info.converged);
        let flat = out.encode();
        if !finite(&flat) {
            c.nonfinite_states += 1;
            return c.example(tag("non-finite state without an error"));
        }
        let mut g_out = solver.zero_grad(&model);
        g_out.add_encoded(&(0..n_amb).map(|_| r.sym()).collect::<Vec<_>>());
        let mut g_s = solver.zero_grad(&model);
        g_u.fill(0.0);
        g_theta.fill(0.0);
        match solver.step_vjp(&model, &rec, &g_out, &mut g_s, &mut g_u, &sel, &mut g_theta, &mut ws) {
            Ok(()) => {
                c.vjps += 1;
                if !(finite(&g_s.encode()) && finite(&g_u) && finite(&g_theta)) {
                    c.nonfinite_gradients += 1;
                    c.example(tag("non-finite step_vjp"));
                }
            }
            Err(e) => c.error("step_vjp", &e, &tag("")),
        }
        if flat.iter().any(|x| x.abs() > BLOWUP) {
            c.blowups += 1;
            return;
        }
        std::mem::swap(&mut s, &mut out);
    }
}

/// Random parameters within their documented ranges (params.rs): every moving body's mass and inertia scaled
/// together by [0.5, 2]; shape friction in [0, 1.5] (0 one time in 4), restitution in [0, 1] (0 one time in
/// 4); joint damping in [0, 2], armature in [0, 0.05], friction loss in [0, 2] (0 one time in 2); cable
/// stiffness and damping scaled by [0.5, 2]. Anchors, springs, actuator and linear-contact terms keep theirs.
fn randomize_params(model: &mut Model, r: &mut XorShift, c: &mut SweepCounts) {
    let t = model.param_table();
    let old = model.param_vector();
    let mut body_scale = vec![1.0; model.body_count()];
    body_scale.iter_mut().for_each(|f| *f = unif(r, 0.5, 2.0));
    let values: Vec<f64> = t
        .kinds
        .iter()
        .zip(&old)
        .map(|(k, &v)| match *k {
            ParamKind::BodyMass(b) | ParamKind::BodyInertia(b, _) => v * body_scale[b],
            ParamKind::ShapeFriction(_) => {
                [0.0, unif(r, 0.0, 1.5), unif(r, 0.0, 1.5), unif(r, 0.0, 1.5)][(r.u() * 4.0) as usize]
            }
            ParamKind::ShapeRestitution(_) => {
                if r.u() < 0.25 {
                    0.0
                } else {
                    r.u()
                }
            }
            ParamKind::JointPassive(_, 0) => unif(r, 0.0, 2.0),
            ParamKind::JointPassive(_, 1) => unif(r, 0.0, 0.05),
            ParamKind::JointPassive(_, _) => {
                if r.u() < 0.5 {
                    0.0
                } else {
                    unif(r, 0.0, 2.0)
                }
            }
            ParamKind::TendonStiffness(_) | ParamKind::TendonDamping(_) => v * unif(r, 0.5, 2.0),
            _ => v,
        })
        .collect();
    if model.params_set(&ParamSelection::all(model), &values).is_err() {
        c.params_refused += 1;
    }
}

/// Generalized state: joints at random (quaternions random unit, hinges / slides in ±π / ±1), velocities ±3
/// (or at a stick / slip switch: 0, ±1e-12, ±1e-8); the prism and contact scenes as their [`Draw`] says.
fn gen_state(model: &Model, kind: Draw, r: &mut XorShift) -> GenState {
    let nv = model.nv();
    match kind {
        Draw::Joints => {
            let q = random_q(model, r);
            let v = (0..nv).map(|_| near_zero(r, 3.0)).collect();
            GenState::new(q, v)
        }
        Draw::Prism { ground } => {
            let mut s = GenState::new(model.qpos0.clone(), vec![0.0; nv]);
            s.act = vec![0.0; model.na()];
            let flat = r.u() < 0.5;
            let lift = if ground { [0.0, 1e-12, -1e-12, 1e-8, -1e-3, 0.01][(r.u() * 6.0) as usize] } else { 0.0 };
            // tangent: 6 per free joint (position, rotation), then the velocities, then the activations
            let d: Vec<f64> = (0..<GenState as StateSpace>::tangent_dim(model))
                .map(|i| match i {
                    i if i >= 2 * nv => unif(r, 0.0, 1.0),
                    i if i >= nv => near_zero(r, 0.5),
                    // on the ground: the bottom caps exactly at `lift` above the floor (heights and tilts kept)
                    i if i % 6 == 2 && ground => lift,
                    i if i % 6 < 3 => 0.02 * r.sym(),
                    _ if ground && flat => 0.0,
                    _ => 0.05 * r.sym(),
                })
                .collect();
            s.retract(model, &d)
        }
        Draw::Contact => contact_state(model, r),
    }
}

/// Free bodies (7 q, 6 v each) over the plane z = 0, each at its touching height for a random orientation
/// (tilts up to 0.6 rad, or exactly flat / on an edge), offset by 0, ±1e-12, ±1e-8, −1e-4 (penetrating) or
/// a gap up to 5 cm; linear velocities normal 0 / ±1e-9 / ±1 m/s and tangential 0 / grazing / sliding;
/// angular ±2 rad/s or 0. A second body (the stack) sits on the first body's top face (boxes: flat).
fn contact_state(model: &Model, r: &mut XorShift) -> GenState {
    let nb = model.joint_count();
    let mut q = vec![];
    let mut v = vec![];
    let mut floor = 0.0;
    for b in 0..nb {
        let kind = &model.shapes.iter().find(|s| s.body == b + 1).expect("a geom per body").kind;
        let rot = match (r.u() * 4.0) as usize {
            _ if b > 0 => Quat::identity(),
            0 => Quat::identity(),
            1 => Quat::from_axis_angle(&Vec3::x(), std::f64::consts::FRAC_PI_4),
            _ => Quat::from_axis_angle(&Vec3::new(r.sym(), r.sym(), 0.0).normalize(), 0.6 * r.u()),
        };
        let low = support_below(kind, &rot);
        let gap = match (r.u() * 6.0) as usize {
            0 => 0.0,
            1 => 1e-12 * r.sym(),
            2 => 1e-8 * r.sym(),
            3 => -1e-4,
            _ => 0.05 * r.u(),
        };
        let z = floor + low + gap;
        floor = z + low; // the next body rests on this one's top (boxes, flat)
        q.extend_from_slice(&[0.02 * r.sym(), 0.02 * r.sym(), z]);
        q.extend_from_slice(&rot.to_array());
        let vn = [0.0, 1e-9 * r.sym(), -r.u(), r.u()][(r.u() * 4.0) as usize];
        let vt = [0.0, 1e-9, 1e-3, r.u()][(r.u() * 4.0) as usize];
        let dir = r.sym() * std::f64::consts::PI;
        v.extend_from_slice(&[vt * dir.cos(), vt * dir.sin(), vn]);
        let w = if r.u() < 0.5 { 0.0 } else { 2.0 };
        v.extend((0..3).map(|_| w * r.sym()));
    }
    GenState::new(q, v)
}

/// Depth of a shape's lowest point below its centre for orientation `rot`: the support in −z.
fn support_below(kind: &torsion_model::shape::ShapeKind, rot: &Quat) -> f64 {
    use torsion_model::shape::ShapeKind;
    let m = rot.to_mat();
    match *kind {
        ShapeKind::Sphere { radius } => radius,
        ShapeKind::Capsule { radius, half_length } => radius + half_length * m[(2, 2)].abs(),
        ShapeKind::Box { half_extents } => (0..3).map(|i| half_extents[i] * m[(2, i)].abs()).sum(),
        _ => 0.1,
    }
}

/// Random joint configuration: hinges ±π, slides ±1 m, ball / free joints a random unit quaternion (free
/// positions ±1 m).
fn random_q(model: &Model, r: &mut XorShift) -> Vec<f64> {
    let mut q = vec![];
    let quat = |r: &mut XorShift| Quat::new(r.sym(), r.sym(), r.sym(), r.sym() + 0.1).normalize().to_array();
    for t in &model.joint_type {
        match t {
            JointType::Ball => q.extend_from_slice(&quat(r)),
            JointType::Free => {
                q.extend((0..3).map(|_| r.sym()));
                q.extend_from_slice(&quat(r));
            }
            JointType::Prismatic => q.push(r.sym()),
            t => q.extend((0..t.nq()).map(|_| std::f64::consts::PI * r.sym())),
        }
    }
    q
}

/// XPBD (maximal) state: a random joint configuration placed by forward kinematics, body velocities ±1 m/s and
/// ±3 rad/s (or 0).
fn xpbd_state(model: &Model, _: Draw, r: &mut XorShift) -> torsion_model::MaximalState {
    let mut s = model.state_at(&random_q(model, r)).expect("a configuration of the model's joints");
    for b in 0..s.v.len() {
        if !model.body_fixed[b] {
            s.v[b] = Vec3::new(near_zero(r, 1.0), near_zero(r, 1.0), near_zero(r, 1.0));
            s.w[b] = Vec3::new(near_zero(r, 3.0), near_zero(r, 3.0), near_zero(r, 3.0));
        }
    }
    s
}
