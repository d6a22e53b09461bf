//! Issue 19 item 1 (spec 003 §3.8–3.9, §4.3–4.4): a learned contact model trained through the stepper with the
//! one-step loss. The network (`torsion_opt::Mlp`, 29 → … → 6) maps each active contact's features
//! (`torsion_dynamics::contact_features`) to a force and torque; they enter the Featherstone step as external body
//! wrenches, alone (H4: the step's model has its linear contact model off) or on top of the frozen linear model
//! (H5, residual). The gradient of ½‖x̂_{t+1} − x_{t+1}‖² w.r.t. the network's parameters runs back through the
//! step (`step_vjp`, then `wrench_vjp`), the output → wrench map's adjoint and the network's backward: the
//! engine's own reverse mode, no second copy of the physics. Features are data (teacher forcing): computed once
//! along a recorded trajectory, with the contacts' memory t_c.
use crate::result::ExperimentError;
use torsion_dynamics::contact_features::{
    add_output_wrench, contact_samples_into, output_wrench_vjp, ContactClock, ContactSample, OUTPUTS,
};
use torsion_dynamics::external::WRENCH_DIM;
use torsion_dynamics::{DynData, DynModel};
use torsion_model::{Control, GenState, Model, ParamSelection};
use torsion_opt::{Mlp, MlpWork};
use torsion_solvers::{DiffSolver, FeatherstoneSolver, Solver};

/// The active contacts' samples at every state of a recorded trajectory (the clock runs along it), detected with
/// `detect`'s linear contact model (its geometry and activity test; its parameters do not matter here).
pub fn samples_along(detect: &Model, states: &[GenState], dt: f64) -> Result<Vec<Vec<ContactSample>>, ExperimentError> {
    let dm = DynModel::<f64>::from_model(detect).map_err(|e| ExperimentError::Failed(e.to_string()))?;
    if dm.tensegrity_contact.is_none() {
        return Err(ExperimentError::Failed("samples_along: the model has no linear contact model (its rods)".into()));
    }
    let (mut d, mut clock) = (DynData::new(&dm), ContactClock::new(&dm));
    states
        .iter()
        .map(|s| {
            let mut out = Vec::new();
            contact_samples_into(&dm, &s.q, &s.v, dt, &mut d, &mut clock, &mut out)
                .map_err(|e| ExperimentError::Failed(e.to_string()))?;
            Ok(out)
        })
        .collect()
}

/// One step's inputs to [`OneStep`]: the state, the control (its body wrenches are replaced by the network's), the
/// active contacts' samples at `s`, the time step.
#[derive(Clone, Copy)]
pub struct StepInput<'a> {
    pub s: &'a GenState,
    pub u: &'a Control,
    pub samples: &'a [ContactSample],
    pub dt: f64,
}

/// The one-step trainer's buffers for one model (the step's: linear contact on for H5, off for H4).
pub struct OneStep {
    pub solver: FeatherstoneSolver,
    ws: <FeatherstoneSolver as Solver>::Workspace,
    rec: <FeatherstoneSolver as Solver>::Record,
    mlp_ws: MlpWork,
    wrench: Vec<f64>,
    g_w: Vec<f64>,
    g_u: Vec<f64>,
    y: [f64; OUTPUTS],
    /// the step's control (the caller's plus the network's wrenches), the prediction and the gradients: reused
    uw: Control,
    pred: GenState,
    g_out: GenState,
    g_s: GenState,
}

impl OneStep {
    pub fn new(model: &Model, net: &Mlp) -> Result<Self, ExperimentError> {
        let solver = FeatherstoneSolver::default();
        let ws = solver.workspace(model).map_err(|e| ExperimentError::Failed(e.to_string()))?;
        let rec = solver.record(model);
        let nw = WRENCH_DIM * model.body_count();
        Ok(OneStep {
            g_u: vec![0.0; solver.control_dim(model)],
            ws,
            rec,
            mlp_ws: net.workspace(),
            wrench: vec![0.0; nw],
            g_w: vec![0.0; nw],
            y: [0.0; OUTPUTS],
            uw: Control::zeros(0),
            pred: GenState::default(),
            g_out: solver.zero_grad(model),
            g_s: solver.zero_grad(model),
            solver,
        })
    }

    /// The step from `x.s` under `x.u` plus the network's contact wrenches at `x.samples` (those of `x.s`), into
    /// `out`.
    pub fn predict(
        &mut self,
        model: &Model,
        net: &Mlp,
        x: &StepInput,
        out: &mut GenState,
        record: bool,
    ) -> Result<(), ExperimentError> {
        self.wrench.iter_mut().for_each(|w| *w = 0.0);
        for c in x.samples {
            net.forward(&c.x, &mut self.mlp_ws, &mut self.y);
            add_output_wrench(c, &self.y, &mut self.wrench);
        }
        self.uw.joint_torque.clone_from(&x.u.joint_torque);
        self.uw.ctrl.clone_from(&x.u.ctrl);
        self.uw.body_wrench.clone_from(&self.wrench);
        let rec = if record { Some(&mut self.rec) } else { None };
        self.solver
            .step(model, x.s, &self.uw, x.dt, out, &mut self.ws, rec)
            .map_err(|e| ExperimentError::Failed(e.to_string()))?;
        Ok(())
    }

    /// ½‖x̂_{t+1} − x_{t+1}‖² over q and v, and (if `g` is given) its gradient w.r.t. the network's parameters
    /// accumulated into `g`.
    pub fn loss(
        &mut self,
        model: &Model,
        net: &Mlp,
        x: &StepInput,
        target: &GenState,
        g: Option<&mut [f64]>,
    ) -> Result<f64, ExperimentError> {
        let mut pred = std::mem::take(&mut self.pred);
        let r = self.predict(model, net, x, &mut pred, g.is_some());
        self.pred = pred;
        r?;
        self.solver.clear_grad(&mut self.g_out);
        let mut l = 0.0;
        for (i, (a, b)) in self.pred.q.iter().zip(&target.q).enumerate() {
            self.g_out.q[i] = a - b;
            l += 0.5 * (a - b) * (a - b);
        }
        for (i, (a, b)) in self.pred.v.iter().zip(&target.v).enumerate() {
            self.g_out.v[i] = a - b;
            l += 0.5 * (a - b) * (a - b);
        }
        let Some(g) = g else { return Ok(l) };
        self.solver.clear_grad(&mut self.g_s);
        self.g_u.iter_mut().for_each(|x| *x = 0.0);
        self.g_w.iter_mut().for_each(|x| *x = 0.0);
        let none = ParamSelection::none();
        let se = |e: torsion_solvers::SolverError| ExperimentError::Failed(e.to_string());
        self.solver
            .step_vjp(model, &self.rec, &self.g_out, &mut self.g_s, &mut self.g_u, &none, &mut [], &mut self.ws)
            .map_err(se)?;
        self.solver.wrench_vjp(model, &self.rec, &self.g_u, &mut self.g_w, &mut self.ws).map_err(se)?;
        let mut g_y = [0.0; OUTPUTS];
        for c in x.samples {
            output_wrench_vjp(c, &self.g_w, &mut g_y);
            net.forward(&c.x, &mut self.mlp_ws, &mut self.y);
            net.backward(&mut self.mlp_ws, &g_y, g, None);
        }
        Ok(l)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use torsion_diff::rel_err;
    use torsion_opt::Activation;

    /// The 3-bar prism on the ground, dropped with a spin so several rod ends touch: the one-step loss's gradient
    /// w.r.t. 40 of the network's parameters against central differences of the loss, as the contact network
    /// alone (H4: linear model off in the step) and as a residual on the linear model (H5).
    #[test]
    fn one_step_gradient_matches_central_differences() {
        let detect = torsion_model::builder::tensegrity_prism_on_ground();
        let dt = 1e-3;
        let mut s = GenState::new(detect.qpos0.clone(), vec![0.0; detect.nv()]);
        s.act = vec![0.0; detect.na()];
        for (i, v) in s.v.iter_mut().enumerate() {
            *v = 0.3 * ((i * 5 % 7) as f64 - 3.0) / 3.0;
        }
        let samples = samples_along(&detect, std::slice::from_ref(&s), dt).unwrap().remove(0);
        assert!(samples.len() >= 2, "contacts: {}", samples.len());
        let mut net = Mlp::new(&[29, 16, 16, 6], Activation::Tanh, 7);
        // outputs of order newtons: scale the last layer
        let nl = net.n_params();
        for p in &mut net.params[nl - (16 * 6 + 6)..] {
            *p *= 5.0;
        }
        let u = Control::with_ctrl(&vec![0.0; detect.nv()], &vec![0.0; detect.nu()]);
        let mut target = s.clone();
        target.q[2] += 1e-4;
        target.v[0] += 0.01;
        for residual in [false, true] {
            let mut model = detect.clone();
            if !residual {
                model.tensegrity_contact = None;
            }
            let mut os = OneStep::new(&model, &net).unwrap();
            let mut g = vec![0.0; net.n_params()];
            let x = StepInput { s: &s, u: &u, samples: &samples, dt };
            os.loss(&model, &net, &x, &target, Some(&mut g)).unwrap();
            let idx: Vec<usize> = (0..40).map(|k| (k * 97 + 13) % net.n_params()).collect();
            let h = 1e-6;
            let fd: Vec<f64> = idx
                .iter()
                .map(|&i| {
                    let (mut a, mut b) = (net.clone(), net.clone());
                    a.params[i] += h;
                    b.params[i] -= h;
                    let la = os.loss(&model, &a, &x, &target, None).unwrap();
                    let lb = os.loss(&model, &b, &x, &target, None).unwrap();
                    (la - lb) / (2.0 * h)
                })
                .collect();
            let an: Vec<f64> = idx.iter().map(|&i| g[i]).collect();
            let e = rel_err(&an, &fd);
            eprintln!(
                "residual = {residual}: one-step gradient vs FD {e:.1e} (|g| {:.2e})",
                an.iter().map(|x| x * x).sum::<f64>().sqrt()
            );
            assert!(e < 1e-6, "residual = {residual}: {e:.1e}");
        }
    }
}
