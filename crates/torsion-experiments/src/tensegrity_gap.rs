//! The sim gap behind tensegrity-roll / tensegrity-3bar's transfer (issue 19): the same open-loop controls replayed
//! in torsion's identified engine and in MuJoCo from MuJoCo's rest, sampled every [`SUB`] steps (10 ms).
//! - Open loop: the CoM distance per control interval (compounding and chaos included).
//! - Teacher-forced: from MuJoCo's state at each interval's start torsion runs the interval; its error at the end
//!   (CoM velocity, the feet's positions, activations) against MuJoCo's, with MuJoCo's own change of CoM velocity
//!   over the interval as the scale: the model's error per interval, no compounding.
//! - Feet (the rods' cap centres): in contact when the cap's lowest point is within [`CONTACT_TOL`] of the ground
//!   (z = 0), sliding when in contact and its horizontal speed exceeds [`SLIDE_SPEED`]; counted per 10 ms sample of
//!   the teacher-forced runs in both simulators, with the (torsion, MuJoCo) stick / slide confusion.
//! - Air: the same controls with gravity 0 and the robot [`AIR_LIFT`] up, teacher-forced as above, twice: with
//!   every contact off in both simulators (MuJoCo's `<flag contact="disable"/>`, torsion's linear contact off: the
//!   cables at their rest-length changes and the motor filter alone) and with the rods' mutual contacts on
//!   (superball.xml's; the ground far away).
use crate::result::ExperimentError;
use crate::tensegrity_noncontact_id::controls;
use crate::tensegrity_roll::{Layout, MujocoSim, TorsionSim, TransferConfig};
use nalgebra::DVector;
use serde_json::{json, Value};
use torsion_math::{Quat, Vec3};
use torsion_model::{JointType, Model, ShapeKind};
use torsion_opt::ilqr::Dynamics;

/// Engine / MuJoCo steps per sample (10 ms at SUPERball's 1 ms).
pub const SUB: usize = 10;
/// A cap touches when its lowest point is this close to the ground (m).
pub const CONTACT_TOL: f64 = 2e-3;
/// A touching cap slides above this horizontal speed (m/s).
pub const SLIDE_SPEED: f64 = 0.02;
/// The air replay's lift (m).
pub const AIR_LIFT: f64 = 5.0;

fn fail(s: impl Into<String>) -> ExperimentError {
    ExperimentError::Failed(s.into())
}

/// The rods' end caps on the flat (qpos, qvel, act) state (MuJoCo's: free joints' linear velocity in the world
/// frame, angular in the body frame).
pub struct Feet {
    /// (q start, qvel start (flat), cap centre in the body frame, radius)
    caps: Vec<(usize, usize, Vec3, f64)>,
}

/// One cap at one state.
#[derive(Clone, Copy, Debug)]
pub struct Foot {
    pub pos: Vec3,
    /// the cap's lowest point above the ground (m)
    pub height: f64,
    /// horizontal speed of the cap centre (m/s)
    pub slip: f64,
}

impl Feet {
    pub fn new(m: &Model) -> Result<Feet, ExperimentError> {
        let (qs, vs) = (m.joint_q_start(), m.joint_v_start());
        let mut caps = vec![];
        for s in &m.shapes {
            let ShapeKind::Capsule { radius, half_length } = s.kind else { continue };
            let j = (0..m.joint_count())
                .find(|&j| m.joint_child[j] == s.body && m.joint_type[j] == JointType::Free)
                .ok_or_else(|| fail(format!("{}: rod geom '{}' is not on a free body", m.name, s.name)))?;
            let (x, q) = s.pose;
            let axis = q.rotate(&Vec3::z());
            for e in [-1.0, 1.0] {
                caps.push((qs[j], m.nq() + vs[j], x + axis * (e * half_length), radius));
            }
        }
        if caps.is_empty() {
            return Err(fail(format!("{}: no capsule rods", m.name)));
        }
        Ok(Feet { caps })
    }
    pub fn len(&self) -> usize {
        self.caps.len()
    }
    pub fn is_empty(&self) -> bool {
        self.caps.is_empty()
    }
    pub fn eval(&self, x: &[f64]) -> Vec<Foot> {
        self.caps
            .iter()
            .map(|&(q, v, e, r)| {
                let rot = Quat::new(x[q + 3], x[q + 4], x[q + 5], x[q + 6]);
                let pos = Vec3::new(x[q], x[q + 1], x[q + 2]) + rot.rotate(&e);
                let w = Vec3::new(x[v + 3], x[v + 4], x[v + 5]);
                let vel = Vec3::new(x[v], x[v + 1], x[v + 2]) + rot.rotate(&w.cross(&e));
                Foot { pos, height: pos.z - r, slip: (vel.x * vel.x + vel.y * vel.y).sqrt() }
            })
            .collect()
    }
}

/// Per-sample foot counts of the teacher-forced runs: index 0 torsion, 1 MuJoCo.
#[derive(Default, Debug, Clone)]
pub struct FootStats {
    pub samples: usize,
    pub contact: [usize; 2],
    pub sliding: [usize; 2],
    /// among samples where both touch: [torsion slides][MuJoCo slides]
    pub confusion: [[usize; 2]; 2],
    /// samples where exactly one simulator touches
    pub contact_mismatch: usize,
    /// sum of slip speeds over touching samples
    pub slip_sum: [f64; 2],
}

impl FootStats {
    fn add(&mut self, a: &[Foot], b: &[Foot]) {
        for (fa, fb) in a.iter().zip(b) {
            self.samples += 1;
            let touch = [fa.height < CONTACT_TOL, fb.height < CONTACT_TOL];
            let slide = [fa.slip > SLIDE_SPEED, fb.slip > SLIDE_SPEED];
            for k in 0..2 {
                if touch[k] {
                    self.contact[k] += 1;
                    self.sliding[k] += slide[k] as usize;
                    self.slip_sum[k] += [fa.slip, fb.slip][k];
                }
            }
            if touch[0] && touch[1] {
                self.confusion[slide[0] as usize][slide[1] as usize] += 1;
            } else if touch[0] != touch[1] {
                self.contact_mismatch += 1;
            }
        }
    }
    fn json(&self) -> Value {
        let frac = |a: usize, b: usize| a as f64 / b.max(1) as f64;
        let both: usize = self.confusion.iter().flatten().sum();
        json!({
            "samples": self.samples,
            "contact_fraction": {"torsion": frac(self.contact[0], self.samples), "mujoco": frac(self.contact[1], self.samples)},
            "sliding_fraction_of_contact": {"torsion": frac(self.sliding[0], self.contact[0]), "mujoco": frac(self.sliding[1], self.contact[1])},
            "mean_slip_in_contact_m_s": {"torsion": self.slip_sum[0] / self.contact[0].max(1) as f64, "mujoco": self.slip_sum[1] / self.contact[1].max(1) as f64},
            "both_touch": {"samples": both, "stick_stick": self.confusion[0][0], "torsion_slides_mujoco_sticks": self.confusion[1][0],
                           "torsion_sticks_mujoco_slides": self.confusion[0][1], "slide_slide": self.confusion[1][1]},
            "contact_mismatch_fraction": frac(self.contact_mismatch, self.samples),
        })
    }
}

/// One replay's figures (module doc).
#[derive(Debug, Clone)]
pub struct Replay {
    pub label: String,
    /// open loop: |CoM_torsion − CoM_MuJoCo| at each interval's end (m)
    pub com_error: Vec<f64>,
    /// open loop: CoM x-velocity over the horizon, torsion / MuJoCo (m/s)
    pub x_velocity: [f64; 2],
    /// teacher-forced, per interval: |Δ v_com| torsion vs MuJoCo at the end, MuJoCo's |v_com(end) − v_com(start)|
    pub tf_vcom_error: Vec<f64>,
    pub tf_vcom_change: Vec<f64>,
    /// teacher-forced, per interval: mean cap position error at the end (m): ground, air without contacts, air
    /// with the rods' mutual contacts
    pub tf_foot_error: Vec<f64>,
    pub air_foot_error: Vec<f64>,
    pub air_rods_foot_error: Vec<f64>,
    /// teacher-forced: the largest activation error (ground)
    pub act_error: f64,
    pub feet: FootStats,
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

impl Replay {
    pub fn json(&self) -> Value {
        let at = |v: &[f64], k: usize| v.get(k.min(v.len().saturating_sub(1))).copied().unwrap_or(f64::NAN);
        json!({
            "label": self.label,
            "open_loop_com_error_m": {"at_0.5s": at(&self.com_error, 4), "at_1s": at(&self.com_error, 9), "end": at(&self.com_error, usize::MAX), "per_interval": self.com_error},
            "open_loop_x_velocity": {"torsion": self.x_velocity[0], "mujoco": self.x_velocity[1]},
            "teacher_forced": {
                "mean_vcom_error_m_s": mean(&self.tf_vcom_error),
                "mean_vcom_change_mujoco_m_s": mean(&self.tf_vcom_change),
                "relative_vcom_error": self.tf_vcom_error.iter().sum::<f64>() / self.tf_vcom_change.iter().sum::<f64>().max(1e-300),
                "mean_foot_error_m": mean(&self.tf_foot_error),
                "max_act_error": self.act_error,
                "per_interval_vcom_error": self.tf_vcom_error,
            },
            "air_teacher_forced_foot_error_m": {"no_contacts": {"mean": mean(&self.air_foot_error), "per_interval": self.air_foot_error},
                                                "rod_rod_contacts": {"mean": mean(&self.air_rods_foot_error), "per_interval": self.air_rods_foot_error}},
            "feet": self.feet.json(),
        })
    }
}

/// The replays' simulators: torsion (identified, `model`) and MuJoCo on the ground and in the air, stepping
/// [`SUB`] steps per call.
pub struct GapSims {
    ground: (TorsionSim, MujocoSim),
    air: (TorsionSim, MujocoSim),
    air_rods: (TorsionSim, MujocoSim),
    layout: Layout,
    feet: Feet,
    /// samples per control interval
    per: usize,
    /// MuJoCo's rest (ground) and the same lifted by AIR_LIFT (air)
    pub x0: Vec<f64>,
    x0_air: Vec<f64>,
}

impl GapSims {
    pub fn new(cfg: &TransferConfig, model: &Model) -> Result<Self, ExperimentError> {
        if !cfg.hold.is_multiple_of(SUB) {
            return Err(fail(format!("{}: control interval {} steps is not a multiple of {SUB}", cfg.name, cfg.hold)));
        }
        let mj =
            |xml: &str, g: Vec3, settle| MujocoSim::start(xml, &cfg.model_label, g, model, SUB, &cfg.actuated, settle);
        let ground_mj = mj(&cfg.model_xml, model.gravity, cfg.settle)?;
        let mut air_rods = model.clone();
        air_rods.gravity = Vec3::zeros();
        let mut air_model = air_rods.clone();
        air_model.tensegrity_contact = None;
        let air_rods_mj = mj(&cfg.model_xml, Vec3::zeros(), (0.0, 1))?;
        let air_mj = mj(&contact_disabled(&cfg.model_xml, &cfg.model_label)?, Vec3::zeros(), (0.0, 1))?;
        let layout = Layout::new(model)?;
        let x0 = ground_mj.x0.clone();
        let mut x0_air = x0.clone();
        for q in model.joint_q_start() {
            x0_air[q + 2] += AIR_LIFT;
        }
        Ok(GapSims {
            ground: (TorsionSim::new(model.clone(), SUB, &cfg.actuated)?, ground_mj),
            air: (TorsionSim::new(air_model, SUB, &cfg.actuated)?, air_mj),
            air_rods: (TorsionSim::new(air_rods, SUB, &cfg.actuated)?, air_rods_mj),
            feet: Feet::new(model)?,
            layout,
            per: cfg.hold / SUB,
            x0,
            x0_air,
        })
    }

    /// Replay `controls` (one per interval, the actuated ones) from MuJoCo's rest (module doc).
    pub fn replay(
        &mut self,
        label: &str,
        controls: &[DVector<f64>],
        interval_s: f64,
    ) -> Result<Replay, ExperimentError> {
        let err = |e: torsion_opt::ilqr::IlqrError| fail(format!("sim gap '{label}': {e}"));
        let (per, l, feet) = (self.per, &self.layout, &self.feet);
        let mut r = Replay {
            label: label.into(),
            com_error: vec![],
            x_velocity: [0.0; 2],
            tf_vcom_error: vec![],
            tf_vcom_change: vec![],
            tf_foot_error: vec![],
            air_foot_error: vec![],
            air_rods_foot_error: vec![],
            act_error: 0.0,
            feet: FootStats::default(),
        };
        let foot_error = |a: &[f64], b: &[f64]| {
            mean(&feet.eval(a).iter().zip(feet.eval(b)).map(|(x, y)| (x.pos - y.pos).norm()).collect::<Vec<_>>())
        };
        for env in 0..3 {
            let air = env > 0;
            let ((eng, mj), x0) = match env {
                0 => (&mut self.ground, &self.x0),
                1 => (&mut self.air, &self.x0_air),
                _ => (&mut self.air_rods, &self.x0_air),
            };
            // MuJoCo's open-loop trajectory, one state per sample
            let mut traj = vec![x0.clone()];
            let mut next = vec![];
            for u in controls {
                for _ in 0..per {
                    mj.step(traj.last().unwrap_or(x0), u.as_slice(), &mut next).map_err(err)?;
                    traj.push(next.clone());
                }
            }
            // teacher-forced: each interval from MuJoCo's start
            let mut y = vec![];
            for (t, u) in controls.iter().enumerate() {
                let mut x = traj[t * per].clone();
                for k in 1..=per {
                    eng.step(&x, u.as_slice(), &mut y).map_err(|e| {
                        fail(format!("sim gap '{label}', teacher-forced, env {env}, interval {t}, sample {k}: {e}"))
                    })?;
                    std::mem::swap(&mut x, &mut y);
                    if !air {
                        r.feet.add(&feet.eval(&x), &feet.eval(&traj[t * per + k]));
                    }
                }
                let (end, start) = (&traj[(t + 1) * per], &traj[t * per]);
                if air {
                    [&mut r.air_foot_error, &mut r.air_rods_foot_error][env - 1].push(foot_error(&x, end));
                    continue;
                }
                r.tf_vcom_error.push((l.com_velocity(&x) - l.com_velocity(end)).norm());
                r.tf_vcom_change.push((l.com_velocity(end) - l.com_velocity(start)).norm());
                r.tf_foot_error.push(foot_error(&x, end));
                let a0 = l.nq + l.nv;
                let da = x[a0..].iter().zip(&end[a0..]).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
                r.act_error = r.act_error.max(da);
            }
            if air {
                continue;
            }
            // open loop in torsion
            let mut x = x0.clone();
            for (t, u) in controls.iter().enumerate() {
                for _ in 0..per {
                    eng.step(&x, u.as_slice(), &mut y).map_err(err)?;
                    std::mem::swap(&mut x, &mut y);
                }
                r.com_error.push((l.com(&x) - l.com(&traj[(t + 1) * per])).norm());
            }
            let span = controls.len() as f64 * interval_s;
            let last = traj.last().unwrap_or(x0);
            r.x_velocity = [(l.com(&x).x - l.com(x0).x) / span, (l.com(last).x - l.com(x0).x) / span];
        }
        Ok(r)
    }
}

/// The MJCF text with every contact disabled (`<flag contact="disable"/>` in its self-closing `<option …/>`).
fn contact_disabled(xml: &str, label: &str) -> Result<String, ExperimentError> {
    let i = xml.find("<option").ok_or_else(|| fail(format!("{label}: no <option> element")))?;
    let j = i + xml[i..].find('>').ok_or_else(|| fail(format!("{label}: unterminated <option>")))?;
    if !xml[..j].ends_with('/') {
        return Err(fail(format!("{label}: <option> is not self-closing")));
    }
    Ok(format!("{}><flag contact=\"disable\"/></option>{}", &xml[..j - 1], &xml[j + 1..]))
}

/// Random controls in the actuators' range, redrawn every interval (gt.py's generator, `controls`).
pub fn random_controls(m: &Model, actuated: &[usize], horizon: usize, seed: u64) -> Vec<DVector<f64>> {
    let c = controls(m, horizon, 1, seed);
    let nu = m.nu();
    (0..horizon).map(|t| DVector::from_iterator(actuated.len(), actuated.iter().map(|&i| c[t * nu + i]))).collect()
}

/// The replays of a transfer run: the engine- and MuJoCo-trained policies, zero controls and random ±range
/// controls (seed 7), each summarised (module doc), and the means per group.
pub fn measure(
    cfg: &TransferConfig,
    model: &Model,
    sets: &[(String, Vec<DVector<f64>>)],
) -> Result<Value, ExperimentError> {
    let mut sims = GapSims::new(cfg, model)?;
    let interval = cfg.interval_s(model.dt);
    let mut all = sets.to_vec();
    all.push(("zero controls".into(), vec![DVector::zeros(cfg.actuated.len()); cfg.horizon]));
    all.push(("random ±range, seed 7".into(), random_controls(model, &cfg.actuated, cfg.horizon, 7)));
    let mut out = vec![];
    for (label, u) in &all {
        let r = sims.replay(label, u, interval)?;
        out.push(r.json());
    }
    Ok(json!({
        "settings": format!("every replay from MuJoCo's rest, sampled every {SUB} steps; feet = the rods' cap centres, touching within {CONTACT_TOL} m of the ground, sliding above {SLIDE_SPEED} m/s; air: gravity 0, lifted {AIR_LIFT} m"),
        "replays": out,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensegrity_roll::superball_config;
    use torsion_model::LinearContact;

    /// The gap on a short segment (0.5 s of random ±100 controls on SUPERball from MuJoCo's rest; the cables at the
    /// file's constants, which the identification recovers, and the quick identification's contact parameters): in
    /// the air without contacts (the cables at ±100 rest-length changes and the motor filter alone) torsion follows
    /// MuJoCo to within 1e-6 m per interval and the activations agree to 1e-9; on the ground the same intervals
    /// depart by orders of magnitude more: the transfer gap is the contact model's.
    #[test]
    fn replay_gap_is_the_contact_not_the_cables() {
        let mut cfg = superball_config(true).unwrap();
        cfg.horizon = 5;
        let mut m = torsion_model::io::mjcf::load_mjcf_str(&cfg.model_xml, &cfg.model_label, None).unwrap();
        m.tensegrity_contact = Some(LinearContact::from_array([0.0, -0.189, 0.472, 0.838, 0.01]));
        let mut sims = GapSims::new(&cfg, &m).unwrap();
        let u = random_controls(&m, &cfg.actuated, cfg.horizon, 7);
        let r = sims.replay("random", &u, cfg.interval_s(m.dt)).unwrap();
        eprintln!("{}", serde_json::to_string_pretty(&r.json()).unwrap());
        let (air, rods, ground) = (mean(&r.air_foot_error), mean(&r.air_rods_foot_error), mean(&r.tf_foot_error));
        assert!(r.act_error < 1e-9, "{}", r.act_error);
        assert!(air < 1e-6 && ground > 100.0 * air, "air {air:e}, air with rod contacts {rods:e}, ground {ground:e}");
    }

    /// Which contact component carries the gap (docs/EXPERIMENTS.md, tensegrity-roll "Why the policies do not
    /// transfer"): the MuJoCo-trained policies of a cached full run (`TORSION_TRANSFER_CACHE`, sizes as
    /// `TORSION_TRANSFER_SIZE`) replayed teacher-forced on the ground with the quick identification, four ways:
    /// as is; MuJoCo's contacts at condim 3 (no torsional / rolling friction, which the linear model lacks); the rods'
    /// mutual contacts off in both (contype 2 / conaffinity 1 on the rods, the floor 1 / 2); both changes.
    /// `cargo test --release -p torsion-experiments --lib tensegrity_gap::tests::contact_components -- --ignored
    /// --nocapture`
    #[test]
    #[ignore]
    fn contact_components() {
        let id = crate::tensegrity_roll::identify_quick().unwrap();
        for cfg in [superball_config(false).unwrap(), crate::tensegrity_3bar::config(false).unwrap()] {
            let cfg = cfg.sized_from_env().unwrap();
            let load = |xml: &str| {
                let mut m = torsion_model::io::mjcf::load_mjcf_str(xml, &cfg.model_label, None).unwrap();
                id.apply(&mut m).unwrap();
                m
            };
            let base = load(&cfg.model_xml);
            let x0 = GapSims::new(&cfg, &base).unwrap().x0;
            let path = crate::tensegrity_roll::policy_cache(&cfg).expect("TORSION_TRANSFER_CACHE");
            let pols = crate::tensegrity_roll::load_policies(&path, &x0).expect("cached MuJoCo-trained policies");
            let condim3 = cfg.model_xml.replace("condim=\"6\"", "condim=\"3\"");
            let no_rods = cfg
                .model_xml
                .replacen("friction=\"1 1 1\"", "friction=\"1 1 1\" contype=\"2\" conaffinity=\"1\"", 1)
                .replacen("type=\"plane\"", "type=\"plane\" contype=\"1\" conaffinity=\"2\"", 1);
            let both = no_rods.replace("condim=\"6\"", "condim=\"3\"");
            for (label, mj_xml, eng_xml) in [
                ("as is", &cfg.model_xml, &cfg.model_xml),
                ("MuJoCo condim 3", &condim3, &cfg.model_xml),
                ("rod-rod contacts off", &no_rods, &no_rods),
                ("condim 3, rod-rod off", &both, &no_rods),
            ] {
                let mut c = cfg.clone();
                c.model_xml = mj_xml.clone();
                let mut sims = GapSims::new(&c, &load(eng_xml)).unwrap();
                let dx = sims.x0.iter().zip(&x0).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
                for (k, p) in pols.iter().enumerate() {
                    let r = match sims.replay(label, &p.controls, cfg.interval_s(base.dt)) {
                        Ok(r) => r,
                        Err(e) => {
                            eprintln!("{} | {label} | MuJoCo-trained seed {} | failed: {e}", cfg.name, k + 1);
                            continue;
                        }
                    };
                    let rel = r.tf_vcom_error.iter().sum::<f64>() / r.tf_vcom_change.iter().sum::<f64>();
                    eprintln!(
                        "{} | {label} | MuJoCo-trained seed {} | rest Δ {dx:.1e} | teacher-forced: v_com error {:.4} m/s \
                         (relative {rel:.3}), foot error {:.4} m | open loop x-velocity torsion {:.3} / MuJoCo {:.3} m/s | \
                         contact fraction {:.3} / {:.3}, sliding {:.3} / {:.3}",
                        cfg.name,
                        k + 1,
                        mean(&r.tf_vcom_error),
                        mean(&r.tf_foot_error),
                        r.x_velocity[0],
                        r.x_velocity[1],
                        r.feet.contact[0] as f64 / r.feet.samples as f64,
                        r.feet.contact[1] as f64 / r.feet.samples as f64,
                        r.feet.sliding[0] as f64 / r.feet.contact[0].max(1) as f64,
                        r.feet.sliding[1] as f64 / r.feet.contact[1].max(1) as f64,
                    );
                }
            }
        }
    }
}
