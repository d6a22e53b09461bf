//! The measured data of `pbd-mpc-torques` (§4.6 substitute): the excitation, the nominal and "real" models, the
//! 1 kHz Featherstone reference downsampled to 100 Hz, and the PBD state re-synchronised to a measurement.
use super::*;
use crate::result::ExperimentError;
use torsion_dynamics::{crba, gravity, DynData, DynModel};
use torsion_math::Vec3;
use torsion_model::io::robots::baxter_left_arm_spec000;
use torsion_model::{Control, MaximalState, Model};
use torsion_solvers::{FeatherstoneSolver, GenState, Solver};

/// The excitation (decision, docs/decisions.md): centre pose, amplitudes (rad), frequencies (Hz); PD gains
/// Kp = ω_n² M_ii(q_c), Kd = 2 ζ ω_n M_ii(q_c) of the "real" model.
pub const Q_CENTRE: [f64; 7] = [0.0, -0.4, 0.0, 1.0, 0.0, 0.6, 0.0];
pub const AMPLITUDE: [f64; 7] = [0.3, 0.3, 0.4, 0.4, 0.5, 0.4, 0.5];
pub const FREQUENCY: [f64; 7] = [0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5];
pub const PD_OMEGA: f64 = 15.0;
pub const PD_ZETA: f64 = 1.0;
/// the reality gap (§4.6)
pub const GAP_MASS_SCALE: f64 = 1.05;
pub const GAP_DAMPING: f64 = 0.7;
pub const GAP_ENCODER_NOISE: f64 = 1e-4;

/// The nominal model both simulators share: Baxter left arm of spec 000 §4.7 (bare chain, gripper dropped),
/// g = 9.8 (§4.0), no joint damping.
pub fn nominal_model() -> Result<Model, ExperimentError> {
    let mut m = baxter_left_arm_spec000()?;
    m.gravity = Vec3::new(0.0, 0.0, -9.8);
    m.joint_damping.iter_mut().for_each(|d| *d = 0.0);
    Ok(m)
}

/// The "real" robot: the nominal model, or with the reality gap (+5 % link masses, damping 0.7).
pub fn real_model(nominal: &Model, gap: bool) -> Model {
    let mut m = nominal.clone();
    if gap {
        for k in m.dynamic_bodies() {
            m.body_mass[k] *= GAP_MASS_SCALE;
        }
        m.joint_damping.iter_mut().for_each(|d| *d = GAP_DAMPING);
    }
    m
}

/// The measured trajectory (100 Hz): T + 1 samples of angles and rates, T interval torques.
#[derive(Clone, Debug)]
pub struct Reference {
    pub q: Vec<Vec<f64>>,
    pub qd: Vec<Vec<f64>>,
    /// ground truth: the mean applied torque over each 10 ms interval
    pub u: Vec<Vec<f64>>,
    /// angles as the estimator sees them (with encoder noise in the gap variant)
    pub q_meas: Vec<Vec<f64>>,
}

fn desired(t: f64) -> ([f64; 7], [f64; 7]) {
    let (mut q, mut v) = ([0.0; 7], [0.0; 7]);
    for i in 0..7 {
        let w = std::f64::consts::TAU * FREQUENCY[i];
        q[i] = Q_CENTRE[i] + AMPLITUDE[i] * (1.0 - (w * t).cos());
        v[i] = AMPLITUDE[i] * w * (w * t).sin();
    }
    (q, v)
}

/// Simulate the "real" robot with Featherstone at 1 kHz for `steps` PBD steps and downsample (§4.6).
pub fn reference(nominal: &Model, gap: bool, steps: usize) -> Result<Reference, ExperimentError> {
    let real = real_model(nominal, gap);
    let nj = real.joint_count();
    if nj != 7 {
        return Err(ExperimentError::Failed(format!("expected the 7-joint Baxter arm, got {nj} joints")));
    }
    let fail = |e: torsion_dynamics::DynError| ExperimentError::Failed(e.to_string());
    let dm = DynModel::from_model(&real).map_err(fail)?;
    let mut dd = DynData::new(&dm);
    let mdiag = crba(&dm, &Q_CENTRE, &mut dd).map_err(fail)?;
    let kp: Vec<f64> = (0..nj).map(|i| PD_OMEGA * PD_OMEGA * mdiag[(i, i)]).collect();
    let kd: Vec<f64> = (0..nj).map(|i| 2.0 * PD_ZETA * PD_OMEGA * mdiag[(i, i)]).collect();
    let fs = FeatherstoneSolver::default(); // applies the model's joint damping (0.7 in the gap variant)
    let mut ws = fs.workspace(&real)?;
    let h = DT / SUBSTEPS as f64;
    let mut s = GenState::new(Q_CENTRE.to_vec(), vec![0.0; nj]);
    let mut next = s.clone();
    let mut r = Reference { q: vec![], qd: vec![], u: vec![], q_meas: vec![] };
    let mut noise = torsion_opt::ilqr::sampled::Normal::new(0x5EED_0006);
    let mut u = vec![0.0; nj];
    for k in 0..=steps {
        r.q.push(s.q.clone());
        r.qd.push(s.v.clone());
        r.q_meas.push(s.q.iter().map(|&q| if gap { q + noise.scaled(GAP_ENCODER_NOISE) } else { q }).collect());
        if k == steps {
            break;
        }
        let mut mean = vec![0.0; nj];
        for i in 0..SUBSTEPS {
            let (qd, vd) = desired((k * SUBSTEPS + i) as f64 * h);
            let g = gravity(&dm, &s.q, &mut dd).map_err(fail)?;
            for j in 0..nj {
                u[j] = g[j] + kp[j] * (qd[j] - s.q[j]) + kd[j] * (vd[j] - s.v[j]);
                mean[j] += u[j] / SUBSTEPS as f64;
            }
            fs.step(&real, &s, &Control::from_torques(&u), h, &mut next, &mut ws, None)?;
            std::mem::swap(&mut s, &mut next);
        }
        r.u.push(mean);
    }
    Ok(r)
}

/// The PBD state of the measured robot at joint angles `q` and rates `qd` (body poses by forward kinematics,
/// angular velocities by Eq. 24, COM velocities by the rigid-body chain): the "re-synchronised" state.
pub fn measured_state(model: &Model, q: &[f64], qd: &[f64]) -> Result<MaximalState, ExperimentError> {
    let mut s = model.state_at(q)?;
    for (j, &rate) in qd.iter().enumerate().take(model.joint_count()) {
        let (p, c) = (model.joint_parent[j], model.joint_child[j]);
        let e = s.q[p].rotate(&model.joint_axis_parent(j));
        s.w[c] = s.w[p] + e * rate;
        let a = s.x[p] + s.q[p].rotate(&model.joint_anchor_parent[j]);
        s.v[c] = s.v[p] + s.w[p].cross(&(a - s.x[p])) + s.w[c].cross(&(s.x[c] - a));
    }
    Ok(s)
}
