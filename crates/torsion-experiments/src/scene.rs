//! The experiment's scene for the `--html` report's viewer (issue 18 item 2): the one shared recorder every
//! experiment with a physical scene uses to keep the trajectories of its runs (the identified / optimised one and
//! its reference) in the viewer's form ([`torsion_view::Trajectory`]: body poses per frame, contacts with their
//! normal impulses for the contact steppers, cable tensions where the model has cables). Kept in the result
//! ([`crate::ExperimentResult::scene`]), not in NAME.json (docs/decisions.md).
use crate::result::ExperimentError;
use torsion_math::{Quat, Vec3};
use torsion_model::{GenState, Model};
use torsion_solvers::contact::frames::ContactFrame;
use torsion_solvers::lcp::problem::Row;
use torsion_solvers::lcp::stepper::{LcpWorkspace, SolvedLcp};
use torsion_view::{ContactPoint, Trajectory};

/// A model and its recorded runs, overlaid in the report's viewer (legend: each trajectory's name).
pub struct SceneView {
    pub model: Model,
    pub trajectories: Vec<Trajectory>,
    /// the model's geometry for the viewer (`torsion_view::scene`), made when the scene is: mesh files written
    /// by an experiment into a temporary folder are read before it goes
    geometry: serde_json::Value,
}

fn view_error(e: torsion_view::ViewError) -> ExperimentError {
    ExperimentError::Failed(format!("scene viewer: {e}"))
}

impl SceneView {
    pub fn new(model: Model, trajectories: Vec<Trajectory>) -> Result<Self, ExperimentError> {
        let geometry = torsion_view::scene(&model, &torsion_view::ViewOptions::default()).map_err(view_error)?;
        Ok(SceneView { model, trajectories, geometry })
    }

    /// The viewer section for the report page (`torsion_view::section`).
    pub fn section(&self) -> Result<String, ExperimentError> {
        torsion_view::section_with_scene(&self.geometry, &self.model, &self.trajectories).map_err(view_error)
    }
}

/// Records one run of `model` frame by frame into a [`Trajectory`].
pub struct Recorder<'a> {
    model: &'a Model,
    traj: Trajectory,
    /// the cable kernel's model and data (models with cables)
    cables: Option<(torsion_dynamics::DynModel<f64>, torsion_dynamics::DynData<f64>)>,
}

impl<'a> Recorder<'a> {
    /// An empty recording named `name` (the legend label).
    pub fn new(name: &str, model: &'a Model) -> Result<Self, ExperimentError> {
        let cables = if model.cables.is_empty() {
            None
        } else {
            let dm = torsion_dynamics::DynModel::<f64>::from_model(model)
                .map_err(|e| ExperimentError::Failed(format!("cable model: {e}")))?;
            let d = torsion_dynamics::DynData::new(&dm);
            Some((dm, d))
        };
        let traj = Trajectory {
            name: name.into(),
            joint_names: model.joint_name.clone(),
            cable_tensions: cables.as_ref().map(|_| vec![]),
            ..Default::default()
        };
        Ok(Recorder { model, traj, cables })
    }

    /// One frame at time `t` from world poses (x, q) of every body (COM frames) and plotted coordinates.
    pub fn poses(&mut self, t: f64, poses: impl IntoIterator<Item = (Vec3, Quat)>, coords: &[f64]) {
        let row = poses
            .into_iter()
            .map(|(x, q)| {
                let q = q.to_array();
                [x.x, x.y, x.z, q[0], q[1], q[2], q[3]]
            })
            .collect();
        self.traj.time.push(t);
        self.traj.joint_angles.push(coords.to_vec());
        self.traj.body_poses.push(row);
        if let Some(c) = &mut self.traj.contacts {
            c.push(vec![]);
        }
    }

    /// One frame of a generalized-coordinate run: poses by forward kinematics, the coordinates q plotted, the
    /// cable tensions (models with cables) by the steppers' own kernel under the controls `ctrl` of the step that
    /// led to `s` (empty: none).
    pub fn gen(&mut self, t: f64, s: &GenState, ctrl: &[f64]) -> Result<(), ExperimentError> {
        let fk = self.model.forward_kinematics(&s.q)?;
        self.poses(t, fk, &s.q);
        if let (Some((dm, d)), Some(rows)) = (&mut self.cables, &mut self.traj.cable_tensions) {
            let mut out = vec![0.0; self.model.cables.len()];
            let na = self.model.na();
            let act = if s.act.len() == na { s.act.clone() } else { vec![0.0; na] };
            let tensions = torsion_dynamics::passive::CableOut::Tensions(&mut out);
            torsion_dynamics::passive::cable_forces_into(&dm.cables, dm, &s.q, &s.v, &act, ctrl, d, tensions)
                .map_err(|e| ExperimentError::Failed(format!("cable tensions: {e}")))?;
            rows.push(out);
        }
        Ok(())
    }

    /// The contacts of the step that led to the last frame: each frame's point and normal with its normal
    /// impulse over the step (N·s; `impulse_n[i]` for `frames[i]`, 0 where missing).
    pub fn contacts(&mut self, frames: &[ContactFrame], impulse_n: &[f64]) {
        let n = self.traj.time.len();
        let rows = self.traj.contacts.get_or_insert_with(|| vec![vec![]; n]);
        let row: Vec<ContactPoint> = frames
            .iter()
            .enumerate()
            .map(|(i, f)| ContactPoint {
                point: [f.point.x, f.point.y, f.point.z],
                normal: [f.normal.x, f.normal.y, f.normal.z],
                impulse_n: impulse_n.get(i).copied().unwrap_or(0.0),
            })
            .collect();
        if let Some(last) = rows.last_mut() {
            *last = row;
        }
    }

    /// The frames recorded so far.
    pub fn len(&self) -> usize {
        self.traj.time.len()
    }

    pub fn is_empty(&self) -> bool {
        self.traj.time.is_empty()
    }

    /// The recorded trajectory (cable tensions left out unless every frame has them: frames added by
    /// [`Recorder::poses`] carry none).
    pub fn finish(mut self) -> Trajectory {
        if self.traj.cable_tensions.as_ref().is_some_and(|c| c.len() != self.traj.time.len()) {
            self.traj.cable_tensions = None;
        }
        self.traj
    }
}

/// The normal impulses of the lcp stepper's last step, one per contact frame (its k-th normal row is the k-th
/// contact, spec 004 D3): the step LCP's plus the impact's when one ran.
pub fn lcp_normal_impulses(ws: &LcpWorkspace) -> Vec<f64> {
    let normals = |s: &Option<SolvedLcp>| -> Vec<f64> {
        s.as_ref().map_or(vec![], |s| {
            s.lcp
                .rows
                .iter()
                .zip(s.answer.solution.lambda.iter())
                .filter(|(r, _)| matches!(r, Row::Normal))
                .map(|(_, l)| *l)
                .collect()
        })
    };
    let (step, impact) = (normals(&ws.report.step), normals(&ws.report.impact));
    (0..ws.frames.len()).map(|i| step.get(i).copied().unwrap_or(0.0) + impact.get(i).copied().unwrap_or(0.0)).collect()
}
