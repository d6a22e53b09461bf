//! `torsion simulate`: load a URDF, step a solver, write joint angles / velocities and body poses per step.
use anyhow::{bail, Context, Result};
use clap::Args;
use serde_json::json;
use std::path::PathBuf;
use torsion_math::{Quat, Vec3};
use torsion_model::io::urdf::{load_urdf, UrdfOptions};
use torsion_model::{Control, ControlLayout, JointType, LinearContact, MaximalState, Model};
use torsion_solvers::lcp::stepper::{LcpOptions, LcpSolver, LcpWorkspace};
use torsion_solvers::ncp::{NcpOptions, NcpSimWorkspace, NcpSolver};
use torsion_solvers::{FeatherstoneSolver, GenState, Ordering, Solver, XpbdOptions, XpbdSolver};

/// The model file and the URDF chain options (`simulate`, `dynamics`).
#[derive(Args, Debug)]
pub struct ModelArgs {
    /// URDF or MJCF (.xml) file, or a model name (`torsion models` lists them: panda, dm_control/hopper, …)
    #[arg(long)]
    pub model: PathBuf,
    /// first link of the chain to simulate (becomes the fixed base)
    #[arg(long)]
    arm_root: Option<String>,
    /// last link of the chain (the joints below it and off the chain are locked at 0, their links welded in)
    #[arg(long)]
    arm_tip: Option<String>,
    /// with --arm-tip: drop the links off the chain instead of welding them in (locked at 0)
    #[arg(long)]
    drop_off_chain: bool,
}

impl ModelArgs {
    /// A registered model name (when no such file exists), MJCF for a `.xml` file, else URDF with the chain
    /// options.
    pub fn load(&self) -> Result<Model> {
        let name = self.model.to_string_lossy();
        let registered = torsion_model::io::MODELS.iter().any(|e| e.name == name) || name.starts_with("dm_control/");
        if registered && !self.model.exists() {
            if self.arm_root.is_some() || self.arm_tip.is_some() {
                bail!("--arm-root / --arm-tip apply to URDF files; model '{name}' is loaded by name");
            }
            return Ok(torsion_model::io::load_model(&name)?);
        }
        if self.model.extension().is_some_and(|e| e == "xml") {
            return Ok(torsion_model::io::mjcf::load_mjcf(&self.model)?);
        }
        let opts =
            UrdfOptions { root: self.arm_root.clone(), tip: self.arm_tip.clone(), drop_off_chain: self.drop_off_chain };
        Ok(load_urdf(&self.model, &opts)?)
    }
}

/// Trajectory rows recorded by both stepping paths: time, joint angles, joint velocities, body poses.
#[derive(Default)]
struct Trajectory {
    t: Vec<f64>,
    ang: Vec<Vec<f64>>,
    vel: Vec<Vec<f64>>,
    poses: Vec<Vec<Vec<f64>>>,
}

impl Trajectory {
    /// One row; `poses` gives each body's (x, q) as [x y z qw qx qy qz].
    fn push(&mut self, time: f64, ang: Vec<f64>, vel: Vec<f64>, poses: impl Iterator<Item = (Vec3, Quat)>) {
        self.t.push(time);
        self.ang.push(ang);
        self.vel.push(vel);
        self.poses.push(
            poses
                .map(|(x, q)| {
                    let q = q.to_array();
                    vec![x.x, x.y, x.z, q[0], q[1], q[2], q[3]]
                })
                .collect(),
        );
    }

    /// The output JSON (with the path's own `extra` entries) written to `--out`.
    fn write<const N: usize>(
        self,
        a: &SimulateArgs,
        model: &Model,
        dt: f64,
        extra: [Option<(&str, serde_json::Value)>; N],
    ) -> Result<()> {
        let mut out = json!({
            "model": a.src.model.display().to_string(), "solver": a.solver, "dt": dt, "steps": a.steps,
            "gravity": [model.gravity.x, model.gravity.y, model.gravity.z],
            "joint_names": model.joint_name, "body_names": model.body_name,
            "time": self.t, "joint_angles": self.ang, "joint_velocities": self.vel,
            "body_poses": self.poses, "body_pose_layout": "x y z qw qx qy qz (COM frame, world)",
        });
        for (k, v) in extra.into_iter().flatten() {
            out[k] = v;
        }
        write_out(&a.out, serde_json::to_string(&out)?).with_context(|| format!("writing {}", a.out.display()))?;
        eprintln!("wrote {} ({} steps, {} joints)", a.out.display(), a.steps, model.joint_count());
        Ok(())
    }
}

#[derive(Args, Debug)]
pub struct SimulateArgs {
    #[command(flatten)]
    src: ModelArgs,
    /// initial joint positions, comma separated (default zeros)
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    q0: Option<Vec<f64>>,
    /// featherstone / ncp / lcp: initial generalized velocities (nv, torsion's convention: a free joint's (ω, v) in
    /// its body frame), comma separated (default zeros)
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    v0: Option<Vec<f64>>,
    /// constant joint torques, comma separated (default zeros)
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    torque: Option<Vec<f64>>,
    /// featherstone: the actuators' controls (MuJoCo ctrl: joint and cable actuators, in file order), a JSON
    /// array with one array of nu numbers per step (row k drives the step from state k; spec 003 §3.3); default
    /// zeros. `--torque` generalized forces add to the actuator forces
    #[arg(long, value_name = "FILE")]
    controls: Option<PathBuf>,
    /// time step, s (default: the model's: MJCF `timestep`, 0.01 for URDF)
    #[arg(long)]
    dt: Option<f64>,
    #[arg(long, default_value_t = 100)]
    steps: usize,
    /// time stepper: xpbd, featherstone, ncp (contact, exact friction cone), lcp (contact, Jade's boxed LCP;
    /// spec 004), tensegrity (featherstone with spec 003's linear contact model for rods switched on)
    #[arg(long, default_value = "xpbd")]
    solver: String,
    /// tensegrity: the linear contact model's β, e, γ, μ, ε (spec 003 §3.6), comma separated; default the
    /// model's `torsion_linear_contact` custom numeric, else the defaults (0.5, 0, 0.5, 0.5, 0.005)
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    contact_params: Option<Vec<f64>>,
    /// lcp: discrete collision detection only (DCD), no continuous collision detection / time-of-impact
    /// backtracking (on by default, spec 004 §3.5, §3.7)
    #[arg(long)]
    no_ccd: bool,
    /// XPBD projection iterations
    #[arg(long, default_value_t = 30)]
    iterations: usize,
    /// XPBD compliance α
    #[arg(long, default_value_t = 0.0)]
    compliance: f64,
    #[arg(long, default_value_t = 1)]
    substeps: usize,
    /// Jacobi instead of Gauss–Seidel projection
    #[arg(long)]
    jacobi: bool,
    /// disable joint limits
    #[arg(long)]
    no_limits: bool,
    /// featherstone: do not apply the model's joint damping
    #[arg(long)]
    no_damping: bool,
    /// featherstone: the time integrator, MuJoCo's names: Euler (semi-implicit), RK4, implicitfast (implicit runs
    /// as implicitfast). Default: the model's (MJCF `<option integrator>`; Euler for URDF)
    #[arg(long, value_name = "NAME")]
    integrator: Option<String>,
    /// gravity magnitude along −z, m/s² (default: the model's, 9.81 for URDF)
    #[arg(long)]
    gravity: Option<f64>,
    /// ncp, lcp: a folder where `package://NAME/…` mesh names are looked up (as DIR/NAME/… or DIR/…); repeatable.
    /// Searched before ROS_PACKAGE_PATH, the folders above the model file and example-robot-data's install
    #[arg(long = "package-dir", value_name = "DIR")]
    package_dirs: Vec<PathBuf>,
    /// output JSON (its folder is created; `results/` is ignored by git)
    #[arg(short, long, default_value = "results/traj.json")]
    out: PathBuf,
}

/// Joint rates θ̇_j = (ω_C − ω_P)·e_j with e_j the world hinge axis (spec 000 §3.6).
fn joint_rates(m: &Model, s: &MaximalState) -> Vec<f64> {
    (0..m.joint_count())
        .map(|j| {
            if m.joint_type[j] != JointType::Revolute {
                return 0.0;
            }
            let (p, c) = (m.joint_parent[j], m.joint_child[j]);
            (s.w[c] - s.w[p]).dot(&s.q[p].rotate(&m.joint_axis_parent(j)))
        })
        .collect()
}

pub fn run(a: &SimulateArgs) -> Result<()> {
    let mut model = a.src.load()?;
    let dt = a.dt.unwrap_or(model.dt);
    if !(dt > 0.0 && dt.is_finite()) {
        bail!("--dt must be positive, got {dt}");
    }
    if let Some(g) = a.gravity {
        model.gravity = torsion_math::Vec3::new(0.0, 0.0, -g);
    }
    if !["xpbd", "featherstone", "ncp", "lcp", "tensegrity"].contains(&a.solver.as_str()) {
        bail!("--solver {}: available solvers: xpbd, featherstone, ncp, lcp, tensegrity", a.solver);
    }
    if a.contact_params.is_some() && a.solver != "tensegrity" {
        bail!("--contact-params applies to --solver tensegrity only");
    }
    // `tensegrity` is a preset of the Featherstone stepper (docs/decisions.md): cables, motor filters and the
    // linear contact model (spec 003 §3.3-3.6) in one step; the rods are free joints
    let tensegrity = a.solver == "tensegrity";
    if tensegrity {
        let lc = match &a.contact_params {
            Some(p) if p.len() == 5 => LinearContact::from_array([p[0], p[1], p[2], p[3], p[4]]),
            Some(p) => bail!("--contact-params has {} values, β, e, γ, μ, ε are 5", p.len()),
            None => model.tensegrity_contact.unwrap_or_default(),
        };
        lc.validate().with_context(|| "--contact-params")?;
        model.tensegrity_contact = Some(lc);
        // the contact model's geometry (rods and planes) is checked here, with the geom's name
        torsion_dynamics::DynModel::<f64>::from_model(&model)
            .map_err(|e| anyhow::anyhow!("{}: --solver tensegrity: {e}", a.src.model.display()))?;
    }
    let featherstone = a.solver == "featherstone" || tensegrity;
    if a.no_ccd && a.solver != "lcp" {
        bail!("--no-ccd applies to --solver lcp only");
    }
    let nq = model.nq();
    let q0 = a.q0.clone().unwrap_or_else(|| model.qpos0.clone());
    if q0.len() != nq {
        bail!("--q0 has {} values, the model needs {nq} (joints: {})", q0.len(), model.joint_name.join(", "));
    }
    // one torque per joint (XPBD) or per DoF (featherstone, ncp, lcp); equal for hinge-only models
    let layout = if a.solver == "xpbd" { ControlLayout::PerJoint } else { ControlLayout::PerDof };
    let nu = layout.dim(&model);
    let tau = a.torque.clone().unwrap_or_else(|| vec![0.0; nu]);
    if tau.len() != nu {
        bail!("--torque has {} values, the {} solver needs {nu}", tau.len(), a.solver);
    }
    if (!model.cables.is_empty() || a.controls.is_some()) && !featherstone {
        bail!(
            "{}: cables, cable actuators and --controls are simulated by --solver featherstone / tensegrity only \
             (issue 16)",
            a.src.model.display()
        );
    }
    if model.nu() > 0 && !featherstone {
        eprintln!(
            "warning: {}: the model's {} actuators are simulated by --solver featherstone / tensegrity only; the {} \
             solver ignores them (its controls are --torque)",
            a.src.model.display(),
            model.nu(),
            a.solver
        );
    }
    if model.joint_frictionloss.iter().any(|&f| f > 0.0) && !featherstone {
        eprintln!(
            "warning: {}: joint frictionloss (dry friction) is simulated by --solver featherstone only; the {} \
             solver ignores it",
            a.src.model.display(),
            a.solver
        );
    }
    let integrator = match a.integrator.as_deref() {
        None => model.integrator,
        Some(_) if !featherstone => {
            bail!(
                "--integrator applies to --solver featherstone / tensegrity (the {} solver has its own time stepping)",
                a.solver
            )
        }
        Some(n) => match torsion_model::Integrator::from_name(n) {
            Some((i, mapped)) => {
                if mapped {
                    eprintln!("warning: --integrator {n} runs as {i} (no Coriolis derivatives)");
                }
                i
            }
            None => bail!("--integrator {n}: expected Euler, RK4, implicit or implicitfast"),
        },
    };
    if featherstone {
        let solver = FeatherstoneSolver {
            options: torsion_solvers::FeatherstoneOptions { joint_damping: !a.no_damping, integrator },
        };
        return run_generalized(a, &model, &q0, &tau, &solver, |_| None);
    }
    if a.solver == "ncp" {
        let mut o = NcpOptions { passive: !a.no_damping, ..Default::default() };
        o.collision.package_dirs = a.package_dirs.clone();
        let solver = NcpSolver::new(o);
        for w in solver.initial_overlaps(&model, &q0)? {
            eprintln!("warning: {w}");
        }
        return run_generalized(a, &model, &q0, &tau, &solver, |ws| Some(ncp_contacts(ws)));
    }
    if a.solver == "lcp" {
        let mut o = LcpOptions { passive: !a.no_damping, ..Default::default() };
        o.ccd.enabled = !a.no_ccd;
        o.collision.package_dirs = a.package_dirs.clone();
        return run_generalized(a, &model, &q0, &tau, &LcpSolver::new(o), |ws| Some(lcp_contacts(ws)));
    }
    let solver = XpbdSolver::new(XpbdOptions {
        iterations: a.iterations,
        compliance: a.compliance,
        substeps: a.substeps,
        ordering: if a.jacobi { Ordering::Jacobi } else { Ordering::GaussSeidel },
        limits: !a.no_limits,
        ..Default::default()
    });
    let mut ws = solver.workspace(&model)?;
    if a.v0.is_some() {
        bail!("--v0 is for the generalized-coordinate solvers (featherstone, ncp, lcp)");
    }
    let mut s = model.state_at(&q0)?;
    let mut next = s.clone();
    let u = Control::from_torques(&tau);
    let (mut tr, mut viol) = (Trajectory::default(), vec![]);
    let mut record = |k: usize, s: &MaximalState| {
        let poses = (0..model.body_count()).map(|b| (s.x[b], s.q[b]));
        tr.push(k as f64 * dt, solver.joint_angles(&model, s), joint_rates(&model, s), poses);
        viol.push(solver.violations(&model, s).0);
    };
    record(0, &s);
    for k in 1..=a.steps {
        solver.step(&model, &s, &u, dt, &mut next, &mut ws, None).with_context(|| format!("step {k}"))?;
        std::mem::swap(&mut s, &mut next);
        record(k, &s);
    }
    tr.write(a, &model, dt, [Some(("max_position_violation", json!(viol)))])
}

/// The contacts of the last ncp step (the viewer draws them): world point, unit normal (from body B to A),
/// the two bodies and the impulses over the step (N·s: normal, and the two tangential along the frame's t1, t2).
fn ncp_contacts(ws: &NcpSimWorkspace) -> serde_json::Value {
    let r = &ws.report;
    let v = |x: &Vec3| [x.x, x.y, x.z];
    let c: Vec<_> = ws
        .frames
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let impulse_t = [0, 1].map(|j| r.lambda_t.get(2 * i + j).copied().unwrap_or(0.0));
            json!({
                "point": v(&f.point), "normal": v(&f.normal), "bodies": [f.body_a, f.body_b],
                "impulse_n": r.lambda_n.get(i).copied().unwrap_or(0.0),
                "impulse_t": impulse_t,
            })
        })
        .collect();
    json!(c)
}

/// The lcp step's contacts for the viewer: points, normals, and the normal impulses of the step LCP plus the
/// impact's (`torsion_experiments::scene::lcp_normal_impulses`); friction impulses are not recorded (0).
fn lcp_contacts(ws: &LcpWorkspace) -> serde_json::Value {
    let normal = torsion_experiments::scene::lcp_normal_impulses(ws);
    let v = |x: &Vec3| [x.x, x.y, x.z];
    let c: Vec<_> = ws
        .frames
        .iter()
        .zip(normal)
        .map(|(f, n)| {
            json!({
                "point": v(&f.point), "normal": v(&f.normal), "bodies": [f.body_a, f.body_b],
                "impulse_n": n, "impulse_t": [0.0, 0.0],
            })
        })
        .collect();
    json!(c)
}

/// The generalized-coordinate steppers (featherstone: semi-implicit Euler with ABA; ncp: contact by staggered
/// projections, spec 001); body poses from forward kinematics. `contacts` reads the step's contacts from the
/// workspace (ncp; `None` for featherstone): recorded per row under "contacts", row 0 (the initial state) empty.
fn run_generalized<S: Solver<State = GenState>>(
    a: &SimulateArgs,
    model: &Model,
    q0: &[f64],
    tau: &[f64],
    solver: &S,
    contacts: impl Fn(&S::Workspace) -> Option<serde_json::Value>,
) -> Result<()> {
    let dt = a.dt.unwrap_or(model.dt);
    let mut ws = solver.workspace(model)?;
    let v0 = a.v0.clone().unwrap_or_else(|| vec![0.0; model.nv()]);
    if v0.len() != model.nv() {
        bail!("--v0 has {} values, the model needs nv = {}", v0.len(), model.nv());
    }
    let mut s = GenState::with_act(q0.to_vec(), v0, vec![0.0; model.na()]);
    let mut next = s.clone();
    let mut u = Control::from_torques(tau);
    let ctrl = match &a.controls {
        Some(p) => read_controls(p, model.nu(), a.steps)?,
        None => vec![],
    };
    // contacts: recorded when the solver has them (row 0, the initial state, has none)
    let (mut tr, mut act, mut cs) = (Trajectory::default(), vec![], vec![json!([])]);
    let with_contacts = contacts(&ws).is_some();
    // cable tensions for the viewer (models with cables): at each recorded state, with the controls of the step
    // that led to it (none at row 0), by the stepper's own cable kernel
    let mut cables = if model.cables.is_empty() {
        None
    } else {
        let dm = torsion_dynamics::DynModel::<f64>::from_model(model)?;
        let d = torsion_dynamics::DynData::new(&dm);
        Some((dm, d, vec![]))
    };
    let mut record = |k: usize, s: &GenState, ctrl: &[f64]| -> Result<()> {
        act.push(s.act.clone());
        let fk = model.forward_kinematics(&s.q)?;
        tr.push(k as f64 * dt, s.q.clone(), s.v.clone(), fk.into_iter());
        if let Some((dm, d, rows)) = cables.as_mut() {
            let mut t = vec![0.0; model.cables.len()];
            let out = torsion_dynamics::passive::CableOut::Tensions(&mut t);
            torsion_dynamics::passive::cable_forces_into(&dm.cables, dm, &s.q, &s.v, &s.act, ctrl, d, out)?;
            rows.push(t);
        }
        Ok(())
    };
    record(0, &s, &[])?;
    for k in 1..=a.steps {
        if let Some(row) = ctrl.get(k - 1) {
            u.ctrl.clone_from(row);
        }
        solver.step(model, &s, &u, dt, &mut next, &mut ws, None).with_context(|| format!("step {k}"))?;
        std::mem::swap(&mut s, &mut next);
        record(k, &s, &u.ctrl)?;
        cs.extend(contacts(&ws));
    }
    let extra = with_contacts.then(|| ("contacts", json!(cs)));
    let tensions = cables.map(|(_, _, rows)| ("cable_tensions", json!(rows)));
    tr.write(a, model, dt, [Some(("actuator_activations", json!(act))), extra, tensions])
}

/// `--controls FILE`: a JSON array of at least `steps` rows of `nu` numbers.
fn read_controls(path: &std::path::Path, nu: usize, steps: usize) -> Result<Vec<Vec<f64>>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let rows: Vec<Vec<f64>> = serde_json::from_str(&text).with_context(|| {
        format!("{}: expected a JSON array of arrays of numbers (one row per step)", path.display())
    })?;
    if rows.len() < steps {
        bail!("{}: {} rows of controls for {steps} steps", path.display(), rows.len());
    }
    if let Some((k, r)) = rows.iter().enumerate().find(|(_, r)| r.len() != nu) {
        bail!("{}: row {k} has {} controls, the model has {nu} actuators (nu)", path.display(), r.len());
    }
    Ok(rows)
}

/// Write the output JSON, creating its folder.
fn write_out(path: &std::path::Path, text: String) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(path, text)?;
    Ok(())
}
