//! Semi-implicit Euler in generalized coordinates (no contact):
//! (M + A + h D) a = u − c(q, v) − D v − K (q − q_ref), v' = v + h a, q' = q ⊕ h v' (on the manifold for ball
//! joints; a free joint as MuJoCo's Euler: its origin moves straight along its world velocity,
//! `joints::advance_into`; a loose body's gyroscopic torque implicit, `gyroscopic.rs`). A = armature, D = joint
//! damping (implicit, as MuJoCo's Euler integrator: h D enters ABA as armature, so stiff damping on light links
//! stays stable), K = hinge/slide joint springs (explicit). Cables and their motor filters (spec 003 §3.3–3.5,
//! `passive::cable_forces_into`) enter u explicitly from the activation act, then act' = act + h (ctrl − act)/τ
//! (MuJoCo's Euler); the state carries act, the control the actuators' ctrl. Spec 003's linear contact model for
//! rods (`Model::tensegrity_contact`, `tensegrity_contact.rs`) enters u the same way, forces held for one step. Same `Solver` / `DiffSolver`
//! contract as XPBD.
//! Derivatives: A and B from the analytic ABA derivatives (Carpentier–Mansard, `aba_derivatives`: ∂q̈/∂q,
//! ∂q̈/∂v, M̃⁻¹ in one sweep plus a Cholesky) chained through the step and the per-joint integration map
//! (its small Jacobians by dual numbers of `advance_joint`); C (w.r.t. θ) by forward-mode duals of the same
//! generic step, one Dual64 pass per parameter. `step_jacobians_dual` keeps the all-dual reference (one
//! pass per input direction), against which the analytic path is tested. The VJP uses the same Jacobians.
use crate::generalized::{dual_tangent, dyn_model_f64, dyn_params, recorded, transposed_jacobian_product};
use crate::solver::{check_grad_sizes, DiffSolver, Solver, SolverError, StepInfo, StepJacobians};
use nalgebra::DMatrix;
use num_dual::Dual64;
use torsion_dynamics::aba_derivatives::{aba_derivatives_into, AbaDerivatives};
use torsion_dynamics::fluid::{fluid_derivatives, fluid_forces_into, FluidBodies};
use torsion_dynamics::gyroscopic::{gyroscopic_joint, implicit_gyroscopic, is_loose_free_joint, loose_body_inertia};
use torsion_dynamics::joints::{
    add_free_frame_term, advance_into, advance_joint, difference, integrate, integrate_joint,
};
use torsion_dynamics::passive::{activation_step, cable_forces_into};
use torsion_dynamics::tensegrity_contact::linear_contact_forces_into;
use torsion_dynamics::{aba_into, DynData, DynModel};
use torsion_math::scalar::cv;
use torsion_math::{Scalar, Vec3};
/// the state space (`torsion_model::GenState`), re-exported where callers found it before it moved
pub use torsion_model::{ContactWarmStart, GenState, WarmImpulse};
use torsion_model::{Control, JointType, Model, ParamSelection, ParamTable};

#[derive(Clone, Debug)]
pub struct FeatherstoneOptions {
    /// apply the model's viscous joint damping −d v (implicitly)
    pub joint_damping: bool,
}

impl Default for FeatherstoneOptions {
    fn default() -> Self {
        FeatherstoneOptions { joint_damping: true }
    }
}

#[derive(Clone, Debug, Default)]
pub struct FeatherstoneSolver {
    pub options: FeatherstoneOptions,
}

/// Reused across steps: the f64 dynamics model (rebuilt only when θ changed), its scratch, the passive terms
/// and the step's buffers. Structural model data (topology, joint types, axes, joint frames, fixed bodies)
/// is taken when the workspace is built; θ (masses, inertias, anchors), gravity, armature, damping and
/// springs are refreshed at every step.
pub struct FeatherstoneWorkspace {
    dm: DynModel<f64>,
    data: DynData<f64>,
    /// the parameters `DynModel::build` reads, without the name table
    table: ParamTable,
    /// θ the model was built from, and the buffer refreshed each step
    theta: Vec<f64>,
    theta_now: Vec<f64>,
    passive: Passive,
    tau: Vec<f64>,
    acc: Vec<f64>,
}

impl FeatherstoneWorkspace {
    /// Bring the dynamics model and the passive terms up to date with `model` (allocates only when θ
    /// changed since the last call).
    fn refresh(&mut self, model: &Model, damping: bool) -> Result<(), torsion_dynamics::DynError> {
        let mut changed = false;
        let mut i = 0;
        let theta = &mut self.theta_now;
        dyn_params(model, |_, v| {
            changed |= theta[i] != v;
            theta[i] = v;
            i += 1;
        });
        if changed {
            self.dm = DynModel::build(model, &self.table, &self.theta_now)?;
            std::mem::swap(&mut self.theta, &mut self.theta_now);
            self.theta_now.copy_from_slice(&self.theta);
        }
        self.dm.gravity = cv(&model.gravity);
        // the cable and contact_* entries of θ are not in the workspace's table: take them from the model
        self.dm.cables.set_params(model);
        if let (Some(t), Some(lc)) = (self.dm.tensegrity_contact.as_mut(), model.tensegrity_contact.as_ref()) {
            t.set_params(lc);
        }
        self.passive.fill(model, damping);
        Ok(())
    }
}

/// The step's inputs, for `step_vjp`.
pub struct FeatherstoneRecord {
    s: Option<GenState>,
    u: Control,
    dt: f64,
}

/// Per-DoF passive terms of the step (from the model and the options).
#[derive(Clone, Debug)]
pub struct Passive {
    pub armature: Vec<f64>,
    pub damping: Vec<f64>,
    /// (q index, stiffness, rest position) of each sprung 1-DoF joint, by DoF
    pub spring: Vec<Option<(usize, f64, f64)>>,
    /// the fluid model's per-body boxes (explicit force, `torsion_dynamics::fluid`)
    pub fluid: FluidBodies,
}

impl Passive {
    pub fn from_model(model: &Model, damping: bool) -> Self {
        let nv = model.nv();
        let mut p = Passive {
            armature: vec![0.0; nv],
            damping: vec![0.0; nv],
            spring: vec![None; nv],
            fluid: FluidBodies::new(model),
        };
        p.fill(model, damping);
        p
    }

    /// Refill in place (sizes from `from_model` on the same model); no allocation.
    pub fn fill(&mut self, model: &Model, damping: bool) {
        let (mut qs, mut vs) = (0, 0);
        for j in 0..model.joint_count() {
            let t = model.joint_type[j];
            for i in 0..t.dof() {
                self.armature[vs + i] = model.joint_armature[j];
                self.damping[vs + i] = if damping { model.joint_damping[j] } else { 0.0 };
                self.spring[vs + i] = None;
            }
            if t.dof() == 1 && model.joint_stiffness[j] != 0.0 {
                self.spring[vs] = Some((qs, model.joint_stiffness[j], model.joint_springref[j]));
            }
            qs += t.nq();
            vs += t.dof();
        }
        self.fluid.fill(model);
    }
}

/// The step's inputs on one scalar: (q, v, act) and the controls (u: nv generalized forces, ctrl: the cable
/// actuators' controls, nu or empty).
pub struct StepIn<'a, T: Scalar> {
    pub q: &'a [T],
    pub v: &'a [T],
    pub act: &'a [T],
    pub u: &'a [T],
    pub ctrl: &'a [T],
}

/// (q1, v1, act1) of [`step_generic`].
pub type StepOut<T> = (Vec<T>, Vec<T>, Vec<T>);

/// One step on any scalar; `u` has nv generalized forces. Sets `dm.armature` to A + h D. Returns (q1, v1, act1).
pub fn step_generic<T: Scalar>(
    dm: &mut DynModel<T>,
    passive: &Passive,
    x: &StepIn<T>,
    dt: f64,
    d: &mut DynData<T>,
) -> Result<StepOut<T>, torsion_dynamics::DynError> {
    let (mut tau, mut acc) = (vec![T::zero(); dm.nv], vec![T::zero(); dm.nv]);
    let (mut q1, mut v1, mut act1) = (x.q.to_vec(), vec![T::zero(); dm.nv], x.act.to_vec());
    step_generic_into(dm, passive, x, dt, d, &mut tau, &mut acc, &mut q1, &mut v1, &mut act1)?;
    Ok((q1, v1, act1))
}

/// [`step_generic`] into preallocated buffers: `tau`, `acc` (nv scratch), `q1` (nq), `v1` (nv), `act1` (na); no
/// heap allocation. The cable forces (`passive::cable_forces_into`) enter τ explicitly with the fluid's, from
/// act (not act1), and act1 is act's explicit Euler step (`passive::activation_step`), as MuJoCo's Euler.
#[allow(clippy::too_many_arguments)]
pub fn step_generic_into<T: Scalar>(
    dm: &mut DynModel<T>,
    passive: &Passive,
    x: &StepIn<T>,
    dt: f64,
    d: &mut DynData<T>,
    tau: &mut [T],
    acc: &mut [T],
    q1: &mut [T],
    v1: &mut [T],
    act1: &mut [T],
) -> Result<(), torsion_dynamics::DynError> {
    let StepIn { q, v, act, u, ctrl } = *x;
    dm.check_v("u", u)?;
    dm.check_v("v1 (output)", v1)?;
    dm.check_q(q1)?;
    for k in 0..dm.nv {
        let mut t = u[k] - v[k] * T::c(passive.damping[k]);
        if let Some((iq, kk, r)) = passive.spring[k] {
            t -= (q[iq] - T::c(r)) * T::c(kk);
        }
        tau[k] = t;
        dm.armature[k] = T::c(passive.armature[k] + dt * passive.damping[k]);
    }
    fluid_forces_into(&passive.fluid, dm, q, v, d, tau)?;
    cable_forces_into(&dm.cables, dm, q, v, act, ctrl, d, tau)?;
    if dm.tensegrity_contact.is_some() {
        // spec 003 §3.6 from the velocity the step reaches without contact, v̂ = v + h q̈(τ) (§6 item 7)
        aba_into(dm, q, v, tau, d, acc)?;
        for k in 0..dm.nv {
            acc[k] = v[k] + acc[k] * T::c(dt);
        }
        linear_contact_forces_into(dm, q, acc, dt, d, tau)?;
    }
    if act1.len() != act.len() {
        return Err(torsion_dynamics::DynError::Shape { what: "act1 (output)", got: act1.len(), expected: act.len() });
    }
    activation_step(&dm.cables, act, ctrl, dt, act1);
    aba_into(dm, q, v, tau, d, acc)?;
    let h = T::c(dt);
    // v̂ = v + h q̈ (+ the free joints' frame term), then (q1, v1) from v̂ (MuJoCo's Euler for free joints)
    for k in 0..dm.nv {
        acc[k] = v[k] + acc[k] * h;
    }
    implicit_gyroscopic(dm, v, h, acc);
    add_free_frame_term(dm, v, h, acc);
    advance_into(dm, q, acc, h, q1, v1);
    Ok(())
}

impl FeatherstoneSolver {
    fn damping(&self, model: &Model) -> Passive {
        Passive::from_model(model, self.options.joint_damping)
    }
    fn check(&self, model: &Model, s: &GenState, u: &Control, dt: f64) -> Result<(), SolverError> {
        let bad = |problem: String| SolverError::BadInput { solver: "featherstone", problem };
        if s.q.len() != model.nq() || s.v.len() != model.nv() {
            return Err(bad(format!(
                "state has nq {}, nv {}; model needs {}, {}",
                s.q.len(),
                s.v.len(),
                model.nq(),
                model.nv()
            )));
        }
        if u.joint_torque.len() != model.nv() {
            return Err(bad(format!(
                "control has {} entries; the featherstone solver takes one generalized force per DoF (nv = {}; \
                 `Control::to_per_dof` converts a per-joint control)",
                u.joint_torque.len(),
                model.nv()
            )));
        }
        if s.act.len() != model.na() {
            return Err(bad(format!(
                "state has {} activations; the model's filter actuators need na = {} (`GenState::rest` / `with_act`)",
                s.act.len(),
                model.na()
            )));
        }
        if !u.ctrl.is_empty() && u.ctrl.len() != model.nu() {
            return Err(bad(format!(
                "control has {} actuator controls (ctrl); the model has {} cable actuators (or pass none: zeros)",
                u.ctrl.len(),
                model.nu()
            )));
        }
        if !(dt > 0.0 && dt.is_finite()) {
            return Err(bad(format!("dt must be positive, got {dt}")));
        }
        Ok(())
    }
    fn dyn_err(e: torsion_dynamics::DynError) -> SolverError {
        SolverError::Unsupported { solver: "featherstone", problem: e.to_string() }
    }

    /// All-dual reference Jacobian of the step w.r.t. (tangent state, controls, selected θ), in tangent
    /// coordinates: one Dual64 pass of the generic step per column. Rows (q, v, act), columns (q, v, act),
    /// (u, ctrl), θ (`Dims`).
    fn jacobian_dual(
        &self,
        model: &Model,
        s: &GenState,
        u: &Control,
        dt: f64,
        sel: &ParamSelection,
    ) -> Result<DMatrix<f64>, SolverError> {
        let n = Dims::of(model);
        let mut jac = DMatrix::zeros(n.nx, n.nx + n.ncu + sel.len());
        self.state_columns_dual(model, s, u, dt, &mut jac)?;
        self.theta_columns_dual(model, s, u, dt, sel, &mut jac)?;
        Ok(jac)
    }

    /// The f64 step (q1) and the lifted inputs (q, q1, v, act, u, ctrl; ctrl padded to nu).
    #[allow(clippy::type_complexity)]
    fn dual_inputs(&self, model: &Model, s: &GenState, u: &Control, dt: f64) -> Result<[Vec<Dual64>; 6], SolverError> {
        let passive = self.damping(model);
        let (mut dmf, _, _) = dyn_model_f64(model).map_err(Self::dyn_err)?;
        let mut df = DynData::new(&dmf);
        let ctrl = padded_ctrl(model, u);
        let x = StepIn { q: &s.q, v: &s.v, act: &s.act, u: &u.joint_torque, ctrl: &ctrl };
        let (q1, _, _) = step_generic(&mut dmf, &passive, &x, dt, &mut df).map_err(Self::dyn_err)?;
        let lift = |x: &[f64]| x.iter().map(|&v| Dual64::from(v)).collect::<Vec<_>>();
        Ok([lift(&s.q), lift(&q1), lift(&s.v), lift(&s.act), lift(&u.joint_torque), lift(&ctrl)])
    }

    /// Writes the dual parts of a step's output (tangent at q1) into column `col`.
    fn write_column(
        dm: &DynModel<Dual64>,
        q1d: &[Dual64],
        out: (&[Dual64], &[Dual64], &[Dual64]),
        col: usize,
        jac: &mut DMatrix<f64>,
    ) {
        let nv = dm.nv;
        let dq = difference(dm, q1d, out.0);
        for i in 0..nv {
            jac[(i, col)] = dq[i].eps;
            jac[(nv + i, col)] = out.1[i].eps;
        }
        for (i, a) in out.2.iter().enumerate() {
            jac[(2 * nv + i, col)] = a.eps;
        }
    }

    /// Columns of (tangent q, v, act, u, ctrl) of the Jacobian by dual passes; the dual model (all tangents
    /// zero) is built once and shared by the columns.
    fn state_columns_dual(
        &self,
        model: &Model,
        s: &GenState,
        u: &Control,
        dt: f64,
        jac: &mut DMatrix<f64>,
    ) -> Result<(), SolverError> {
        let n = Dims::of(model);
        let nv = n.nv;
        let passive = self.damping(model);
        let (_, table, theta) = dyn_model_f64(model).map_err(Self::dyn_err)?;
        let [q0d, q1d, v0d, a0d, u0d, c0d] = self.dual_inputs(model, s, u, dt)?;
        let lift = |x: &[f64]| x.iter().map(|&v| Dual64::from(v)).collect::<Vec<_>>();
        let mut dm: DynModel<Dual64> = DynModel::build(model, &table, &lift(&theta)).map_err(Self::dyn_err)?;
        let mut d = DynData::new(&dm);
        let (mut tau, mut acc) = (vec![Dual64::from(0.0); nv], vec![Dual64::from(0.0); nv]);
        let (mut qn, mut vn, mut an) = (q0d.clone(), vec![Dual64::from(0.0); nv], a0d.clone());
        for col in 0..n.nx + n.ncu {
            let (mut qd, mut vd, mut ad, mut ud, mut cd) =
                (q0d.clone(), v0d.clone(), a0d.clone(), u0d.clone(), c0d.clone());
            if col < nv {
                let mut e = vec![Dual64::from(0.0); nv];
                e[col].eps = 1.0;
                qd = integrate(&dm, &q0d, &e);
            } else if col < 2 * nv {
                vd[col - nv].eps = 1.0;
            } else if col < n.nx {
                ad[col - 2 * nv].eps = 1.0;
            } else if col < n.nx + nv {
                ud[col - n.nx].eps = 1.0;
            } else {
                cd[col - n.nx - nv].eps = 1.0;
            }
            let x = StepIn { q: &qd, v: &vd, act: &ad, u: &ud, ctrl: &cd };
            step_generic_into(&mut dm, &passive, &x, dt, &mut d, &mut tau, &mut acc, &mut qn, &mut vn, &mut an)
                .map_err(Self::dyn_err)?;
            Self::write_column(&dm, &q1d, (&qn, &vn, &an), col, jac);
        }
        Ok(())
    }

    /// Columns of the selected θ by dual passes, one dual model per parameter (the cable parameters ride in
    /// `DynModel::cables`).
    fn theta_columns_dual(
        &self,
        model: &Model,
        s: &GenState,
        u: &Control,
        dt: f64,
        sel: &ParamSelection,
        jac: &mut DMatrix<f64>,
    ) -> Result<(), SolverError> {
        if sel.is_empty() {
            return Ok(());
        }
        let n = Dims::of(model);
        let table = model.param_table();
        let theta = model.param_vector();
        let passive = self.damping(model);
        let [q0d, q1d, vd, ad, ud, cd] = self.dual_inputs(model, s, u, dt)?;
        let lift = |x: &[f64]| x.iter().map(|&v| Dual64::from(v)).collect::<Vec<_>>();
        let mut th = lift(&theta);
        let x = StepIn { q: &q0d, v: &vd, act: &ad, u: &ud, ctrl: &cd };
        for (k, &i) in sel.indices.iter().enumerate() {
            if table.kinds[i].is_contact_material() {
                continue; // not read by the contact-free dynamics: a zero column
            }
            th[i].eps = 1.0;
            let mut dm: DynModel<Dual64> = DynModel::build(model, &table, &th).map_err(Self::dyn_err)?;
            th[i].eps = 0.0;
            let mut d = DynData::new(&dm);
            let (qn, vn, an) = step_generic(&mut dm, &passive, &x, dt, &mut d).map_err(Self::dyn_err)?;
            Self::write_column(&dm, &q1d, (&qn, &vn, &an), n.nx + n.ncu + k, jac);
        }
        Ok(())
    }

    /// Jacobian of the step w.r.t. (tangent state, controls, selected θ) in tangent coordinates, and the
    /// next configuration q1: columns 0..3nv analytic (`aba_derivatives` chained through the step and the
    /// integration map), θ columns by dual passes.
    /// Models with cables or the linear contact model: every column by dual passes (`jacobian_dual`;
    /// docs/gradients.md).
    fn jacobian(
        &self,
        model: &Model,
        s: &GenState,
        u: &Control,
        dt: f64,
        sel: &ParamSelection,
    ) -> Result<(DMatrix<f64>, Vec<f64>), SolverError> {
        if !model.cables.is_empty() || model.tensegrity_contact.is_some() {
            let jac = self.jacobian_dual(model, s, u, dt, sel)?;
            let [_, q1, ..] = self.dual_inputs(model, s, u, dt)?;
            return Ok((jac, q1.iter().map(|x| x.re).collect()));
        }
        let nv = model.nv();
        let mut jac = DMatrix::zeros(2 * nv, 3 * nv + sel.len());
        let q1 = self.state_columns(model, s, &u.joint_torque, dt, &mut jac)?;
        self.theta_columns_dual(model, s, u, dt, sel, &mut jac)?;
        Ok((jac, q1))
    }

    /// Columns 0..3nv of the Jacobian (analytic, [`state_columns_into`]) into `jac`; returns q1. Builds its own
    /// workspace: the allocation-free path is [`FeatherstoneSolver::transition_jacobians_into`].
    fn state_columns(
        &self,
        model: &Model,
        s: &GenState,
        u: &[f64],
        dt: f64,
        jac: &mut DMatrix<f64>,
    ) -> Result<Vec<f64>, SolverError> {
        let nv = model.nv();
        let mut ws = self.workspace(model)?;
        let mut tj = TransitionJacobians::new(model);
        let FeatherstoneWorkspace { dm, data, passive, .. } = &mut ws;
        state_columns_into(dm, data, passive, s, u, dt, &mut tj).map_err(Self::dyn_err)?;
        jac.columns_mut(0, 3 * nv).copy_from(&tj.ab);
        Ok(tj.q1)
    }

    /// The transition Jacobians A = ∂(q', v')/∂(q, v) and B = ∂(q', v')/∂u (tangent coordinates) into `out`,
    /// reusing the step's workspace (its dynamics model is refreshed from `model` as in `step`): no heap
    /// allocation. The same analytic path as `step_jacobians` (which builds a workspace per call).
    pub fn transition_jacobians_into(
        &self,
        model: &Model,
        s: &GenState,
        u: &Control,
        dt: f64,
        ws: &mut FeatherstoneWorkspace,
        out: &mut TransitionJacobians,
    ) -> Result<(), SolverError> {
        self.check(model, s, u, dt)?;
        let nv = model.nv();
        if !model.cables.is_empty() || model.tensegrity_contact.is_some() {
            return Err(SolverError::Unsupported {
                solver: "featherstone",
                problem: "transition_jacobians_into does not cover cables or the linear contact model yet: use \
                          step_jacobians"
                    .into(),
            });
        }
        if ws.tau.len() != nv || out.ab.nrows() != 2 * nv || out.ab.ncols() != 3 * nv || out.q1.len() != model.nq() {
            return Err(SolverError::BadInput {
                solver: "featherstone",
                problem: "workspace or Jacobian buffers built for a different model".into(),
            });
        }
        ws.refresh(model, self.options.joint_damping).map_err(Self::dyn_err)?;
        let FeatherstoneWorkspace { dm, data, passive, .. } = ws;
        state_columns_into(dm, data, passive, s, &u.joint_torque, dt, out).map_err(Self::dyn_err)
    }
}

/// (J_q, J_v, K_v) of one joint's position / velocity update (`advance_jacobians`), `[r][c]` indexing.
type IntegrationJacobians = ([[f64; 6]; 6], [[f64; 6]; 6], [[f64; 6]; 6]);

/// [A | B] of one step and the buffers to compute it (allocate once per model with [`TransitionJacobians::new`]).
pub struct TransitionJacobians {
    /// [A | B], 2nv × 3nv: rows (tangent q', v'), columns (tangent q, v, then the nv controls)
    pub ab: DMatrix<f64>,
    /// the step's next configuration q'
    pub q1: Vec<f64>,
    ad: AbaDerivatives,
    tau: Vec<f64>,
    v1: Vec<f64>,
    /// per joint: (J_q, J_v, K_v) of the position / velocity update (ball and free joints)
    integ: Vec<IntegrationJacobians>,
    /// (joint, first DoF, DoFs) of the ball and free joints
    multi: Vec<(usize, usize, usize)>,
}

impl TransitionJacobians {
    pub fn new(model: &Model) -> Self {
        let nv = model.nv();
        TransitionJacobians {
            ab: DMatrix::zeros(2 * nv, 3 * nv),
            q1: vec![0.0; model.nq()],
            ad: AbaDerivatives::new(nv),
            tau: vec![0.0; nv],
            v1: vec![0.0; nv],
            integ: vec![([[0.0; 6]; 6], [[0.0; 6]; 6], [[0.0; 6]; 6]); model.joint_count()],
            multi: (0..model.joint_count())
                .zip(model.joint_v_start())
                .map(|(j, vs)| (j, vs, model.joint_type[j].dof()))
                .filter(|&(_, _, n)| n > 1)
                .collect(),
        }
    }
    /// A = ∂(q', v')/∂(q, v), 2nv × 2nv.
    pub fn a(&self) -> nalgebra::DMatrixView<'_, f64> {
        let n2 = self.ab.nrows();
        self.ab.columns(0, n2)
    }
    /// B = ∂(q', v')/∂u, 2nv × nv.
    pub fn b(&self) -> nalgebra::DMatrixView<'_, f64> {
        let n2 = self.ab.nrows();
        self.ab.columns(n2, n2 / 2)
    }
}

/// [A | B] analytically. With M̃ = M + A + hD and q̈ = M̃⁻¹(u − c − Dv − K(q − r)):
/// ∂v1/∂q = h ∂q̈/∂q, ∂v1/∂v = I + h ∂q̈/∂v, ∂v1/∂u = h M̃⁻¹, and per joint q1 = q ⊕ h v1 gives
/// ∂q1/∂q = J_q + J_w h ∂v1/∂q, ∂q1/∂(v, u) = J_w h ∂v1/∂(v, u) (J_q = J_w = 1 for 1-DoF joints). `dm` is the
/// step's model: its armature is set to A + hD as `step_generic_into` does, and its damping (zero for the step,
/// which applies −Dv explicitly) is D only while RNEA's ∂τ/∂v needs it. No heap allocation without fluid forces
/// (with them: ∂τ_fluid/∂(q, v) through a dual copy of the model per call).
fn state_columns_into(
    dm: &mut DynModel<f64>,
    d: &mut DynData<f64>,
    passive: &Passive,
    s: &GenState,
    u: &[f64],
    dt: f64,
    out: &mut TransitionJacobians,
) -> Result<(), torsion_dynamics::DynError> {
    let nv = dm.nv;
    let TransitionJacobians { ab: jac, q1, ad, tau, v1, integ, multi } = out;
    for k in 0..nv {
        dm.armature[k] = passive.armature[k] + dt * passive.damping[k];
        dm.damping[k] = passive.damping[k];
        tau[k] = u[k];
        if let Some((iq, kk, r)) = passive.spring[k] {
            tau[k] -= (s.q[iq] - r) * kk;
        }
    }
    fluid_forces_into(&passive.fluid, dm, &s.q, &s.v, d, tau)?;
    let res = aba_derivatives_into(dm, &s.q, &s.v, tau, d, ad);
    dm.damping.iter_mut().for_each(|x| *x = 0.0);
    res?;
    if passive.fluid.on() {
        // explicit fluid force: ∂q̈/∂(q, v) += M̃⁻¹ ∂τ_fluid/∂(q, v), the latter by duals of the same kernel
        // (allocates: a dual copy of the model per call)
        let (mut fq, mut fv) = (DMatrix::zeros(nv, nv), DMatrix::zeros(nv, nv));
        fluid_derivatives(&passive.fluid, &dm.lift(), &s.q, &s.v, fq.as_mut_slice(), fv.as_mut_slice())?;
        ad.d_dq += &ad.d_dtau * fq;
        ad.d_dv += &ad.d_dtau * fv;
    }
    gyroscopic_rows(dm, &s.v, dt, ad);
    let h = dt;
    let n2 = 2 * nv;
    // velocity rows, column by column (contiguous): [h ∂q̈/∂q | I + h ∂q̈/∂v | h M̃⁻¹], springs through
    // ∂q̈/∂τ = M̃⁻¹
    {
        let js = jac.as_mut_slice();
        let (dq, dv, dt_) = (ad.d_dq.as_slice(), ad.d_dv.as_slice(), ad.d_dtau.as_slice());
        for c in 0..nv {
            let ks = passive.spring[c].map(|(_, kk, _)| kk).unwrap_or(0.0);
            let src = c * nv..(c + 1) * nv;
            let (cq, cv_, cu) = (c * n2 + nv, (nv + c) * n2 + nv, (2 * nv + c) * n2 + nv);
            for ((o, &x), &y) in js[cq..cq + nv].iter_mut().zip(&dq[src.clone()]).zip(&dt_[src.clone()]) {
                *o = h * (x - ks * y);
            }
            for (o, &x) in js[cv_..cv_ + nv].iter_mut().zip(&dv[src.clone()]) {
                *o = h * x;
            }
            js[cv_ + c] += 1.0;
            for (o, &x) in js[cu..cu + nv].iter_mut().zip(&dt_[src]) {
                *o = h * x;
            }
        }
    }
    // the free joints' frame term h ω × v_l: v̂ = v + h q̈ + h (0, ω × v_l), its v columns
    for k in 0..nv {
        v1[k] = s.v[k] + h * ad.qdd[k];
    }
    for &(j, vs, _) in multi.iter() {
        if dm.joint[j].kind != JointType::Free {
            continue;
        }
        let (w, vl) = (Vec3::new(s.v[vs], s.v[vs + 1], s.v[vs + 2]), Vec3::new(s.v[vs + 3], s.v[vs + 4], s.v[vs + 5]));
        let c = w.cross(&vl) * h;
        for i in 0..3 {
            v1[vs + 3 + i] += c[i];
            // ∂(h ω × v_l)/∂ω_i = h e_i × v_l, ∂/∂v_l,i = h ω × e_i
            let e = Vec3::ith(i, 1.0);
            let (dw, dv) = (e.cross(&vl) * h, w.cross(&e) * h);
            for r in 0..3 {
                jac[(nv + vs + 3 + r, nv + vs + i)] += dw[r];
                jac[(nv + vs + 3 + r, nv + vs + 3 + i)] += dv[r];
            }
        }
    }
    // per joint (q1, v1) = advance(q, v̂): the small Jacobians of the multi-DoF joints (J_q, J_v, K_v)
    for j in 0..dm.parent.len() {
        let (qs, vs, jm) = (dm.q_start[j], dm.v_start[j], &dm.joint[j]);
        let n = jm.nv;
        let mut v1j = [0.0; 6];
        advance_joint(jm.kind, &s.q[qs..qs + jm.nq], &v1[vs..vs + n], h, &mut q1[qs..qs + jm.nq], &mut v1j[..n]);
        if n > 1 {
            integ[j] = advance_jacobians(jm.kind, &s.q[qs..qs + jm.nq], &v1[vs..vs + n], h, &q1[qs..qs + jm.nq]);
        }
    }
    // per column: q rows = h × v̂ rows (1-DoF joints), J_v ∂v̂ on the multi-DoF joints' rows; then the free
    // joints' v rows K_v ∂v̂
    let js = jac.as_mut_slice();
    for c in 0..3 * nv {
        let (qrows, vrows) = js[c * n2..(c + 1) * n2].split_at_mut(nv);
        for (o, &x) in qrows.iter_mut().zip(vrows.iter()) {
            *o = h * x;
        }
        for &(j, vs, n) in multi.iter() {
            let (_, jv, kv) = &integ[j];
            let mut vv = [0.0; 6];
            for r in 0..n {
                let (mut aq, mut av) = (0.0, 0.0);
                for k in 0..n {
                    aq += jv[r][k] * vrows[vs + k];
                    av += kv[r][k] * vrows[vs + k];
                }
                qrows[vs + r] = aq;
                vv[r] = av;
            }
            vrows[vs..vs + n].copy_from_slice(&vv[..n]);
        }
    }
    for j in 0..dm.parent.len() {
        let (vs, n) = (dm.v_start[j], dm.joint[j].nv);
        if n == 1 {
            jac[(vs, vs)] += 1.0;
        } else if n > 1 {
            let jq = &integ[j].0;
            for r in 0..n {
                for k in 0..n {
                    jac[(vs + r, vs + k)] += jq[r][k];
                }
            }
        }
    }
    Ok(())
}

/// The loose bodies' implicit gyroscopic update (`gyroscopic::implicit_gyroscopic`) on q̈ and its derivatives:
/// per loose free joint, q̃ = g(v_j, q̈_j) with (G_v, G_a) by duals of `gyroscopic_joint`, so ∂q̃/∂x = G_a ∂q̈_j/∂x
/// (+ G_v on the joint's own v columns). No heap allocation.
fn gyroscopic_rows(dm: &DynModel<f64>, v: &[f64], h: f64, ad: &mut AbaDerivatives) {
    let nv = dm.nv;
    for j in 0..dm.parent.len() {
        if !is_loose_free_joint(dm, j) {
            continue;
        }
        let vs = dm.v_start[j];
        let (ic, c) = loose_body_inertia(dm, j);
        let (icd, cd) = (ic.map(Dual64::from), c.map(Dual64::from));
        // x = (v_j, q̈_j) ↦ q̃_j = (g(v_j, v_j + h q̈_j) − v_j) / h
        let x: [f64; 12] = std::array::from_fn(|k| if k < 6 { v[vs + k] } else { ad.qdd[vs + k - 6] });
        let (mut gv, mut ga) = ([[0.0; 6]; 6], [[0.0; 6]; 6]);
        let mut acc = [0.0; 6];
        for k in 0..12 {
            let mut xd: [Dual64; 12] = std::array::from_fn(|i| Dual64::from(x[i]));
            xd[k].eps = 1.0;
            let hd = Dual64::from(h);
            let mut vh: [Dual64; 6] = std::array::from_fn(|i| xd[i] + hd * xd[6 + i]);
            gyroscopic_joint(&icd, &cd, &xd[..6], hd, &mut vh);
            for r in 0..6 {
                let a = (vh[r] - xd[r]) / hd;
                acc[r] = a.re;
                if k < 6 {
                    gv[r][k] = a.eps;
                } else {
                    ga[r][k - 6] = a.eps;
                }
            }
        }
        ad.qdd[vs..vs + 6].copy_from_slice(&acc);
        for m in [&mut ad.d_dq, &mut ad.d_dv, &mut ad.d_dtau] {
            let ms = m.as_mut_slice();
            for col in 0..nv {
                let rows = &mut ms[col * nv + vs..col * nv + vs + 6];
                let old: [f64; 6] = std::array::from_fn(|i| rows[i]);
                for r in 0..6 {
                    rows[r] = (0..6).map(|k| ga[r][k] * old[k]).sum();
                }
            }
        }
        for r in 0..6 {
            for k in 0..6 {
                ad.d_dv[(vs + r, vs + k)] += gv[r][k];
            }
        }
    }
}

/// For one ball or free joint, (q1, v1) = advance(q, v̂) (`joints::advance_joint`): J_q = ∂q1/∂δ for q ⊕ δ,
/// J_v = ∂q1/∂v̂ (tangent space at q1, right perturbations, as `integrate_joint` / `difference`) and
/// K_v = ∂v1/∂v̂ (v1 does not depend on q); by dual numbers of `advance_joint`, one pass per DoF. `[r][c]`.
fn advance_jacobians(kind: JointType, q: &[f64], vhat: &[f64], h: f64, q1: &[f64]) -> IntegrationJacobians {
    let n = vhat.len();
    let nq = q.len();
    let z = Dual64::from(0.0);
    let hd = Dual64::from(h);
    let mut qd = [z; 7];
    let mut vd = [z; 6];
    for i in 0..nq {
        qd[i] = Dual64::from(q[i]);
    }
    for i in 0..n {
        vd[i] = Dual64::from(vhat[i]);
    }
    let (mut jq, mut jv, mut kv) = ([[0.0; 6]; 6], [[0.0; 6]; 6], [[0.0; 6]; 6]);
    let (mut out, mut qp, mut vout) = ([z; 7], [z; 7], [z; 6]);
    for c in 0..n {
        // ∂/∂δ_c of advance(q ⊕ δ, v̂)
        let mut e = [z; 6];
        e[c].eps = 1.0;
        integrate_joint(kind, &qd[..nq], &e[..n], &mut qp[..nq]);
        advance_joint(kind, &qp[..nq], &vd[..n], hd, &mut out[..nq], &mut vout[..n]);
        let t = dual_tangent(kind, q1, &out[..nq]);
        for r in 0..n {
            jq[r][c] = t[r];
        }
        // ∂/∂v̂_c
        vd[c].eps = 1.0;
        advance_joint(kind, &qd[..nq], &vd[..n], hd, &mut out[..nq], &mut vout[..n]);
        vd[c].eps = 0.0;
        let t = dual_tangent(kind, q1, &out[..nq]);
        for r in 0..n {
            jv[r][c] = t[r];
            kv[r][c] = vout[r].eps;
        }
    }
    (jq, jv, kv)
}

/// Sizes of the step's Jacobian: state rows / columns nx = 2nv + na (tangent q, v, then the activations),
/// control columns ncu = nv + nu (generalized forces, then the cable actuators' controls).
#[derive(Clone, Copy, Debug)]
struct Dims {
    nv: usize,
    nx: usize,
    ncu: usize,
}

impl Dims {
    fn of(model: &Model) -> Self {
        let nv = model.nv();
        Dims { nv, nx: 2 * nv + model.na(), ncu: nv + model.nu() }
    }
}

/// The cable actuators' controls, zeros when `u.ctrl` is empty.
fn padded_ctrl(model: &Model, u: &Control) -> Vec<f64> {
    if u.ctrl.is_empty() {
        vec![0.0; model.nu()]
    } else {
        u.ctrl.clone()
    }
}

/// [∂/∂s (nx) | ∂/∂u (ncu) | ∂/∂θ_sel] → (A, B, C).
fn split_jacobian(jac: &DMatrix<f64>, n: Dims, nsel: usize) -> StepJacobians {
    StepJacobians {
        a: jac.columns(0, n.nx).into_owned(),
        b: jac.columns(n.nx, n.ncu).into_owned(),
        c: jac.columns(n.nx + n.ncu, nsel).into_owned(),
    }
}

impl FeatherstoneSolver {
    /// The transition Jacobians by dual numbers only (one Dual64 pass of the step per input direction): the
    /// reference the analytic `step_jacobians` is tested against, and a baseline for benchmarks.
    pub fn step_jacobians_dual(
        &self,
        model: &Model,
        s: &GenState,
        u: &Control,
        dt: f64,
        sel: &ParamSelection,
    ) -> Result<StepJacobians, SolverError> {
        self.check(model, s, u, dt)?;
        let jac = self.jacobian_dual(model, s, u, dt, sel)?;
        Ok(split_jacobian(&jac, Dims::of(model), sel.len()))
    }
}

impl Solver for FeatherstoneSolver {
    type State = GenState;
    type Workspace = FeatherstoneWorkspace;
    type Record = FeatherstoneRecord;
    fn name(&self) -> &'static str {
        "featherstone"
    }
    fn workspace(&self, model: &Model) -> Result<FeatherstoneWorkspace, SolverError> {
        let (dm, table, theta) = dyn_model_f64(model).map_err(Self::dyn_err)?;
        let data = DynData::new(&dm);
        let nv = model.nv();
        Ok(FeatherstoneWorkspace {
            dm,
            data,
            table,
            theta_now: theta.clone(),
            theta,
            passive: self.damping(model),
            tau: vec![0.0; nv],
            acc: vec![0.0; nv],
        })
    }
    fn record(&self, _model: &Model) -> FeatherstoneRecord {
        FeatherstoneRecord { s: None, u: Control::zeros(0), dt: 0.0 }
    }
    fn step(
        &self,
        model: &Model,
        s: &GenState,
        u: &Control,
        dt: f64,
        out: &mut GenState,
        ws: &mut FeatherstoneWorkspace,
        rec: Option<&mut FeatherstoneRecord>,
    ) -> Result<StepInfo, SolverError> {
        self.check(model, s, u, dt)?;
        if ws.theta.len() != ws.table.kinds.len() || ws.tau.len() != model.nv() {
            return Err(SolverError::BadInput {
                solver: "featherstone",
                problem: "workspace built for a different model".into(),
            });
        }
        // parameters may have changed since the workspace was built
        ws.refresh(model, self.options.joint_damping).map_err(Self::dyn_err)?;
        out.q.resize(model.nq(), 0.0);
        out.v.resize(model.nv(), 0.0);
        out.act.resize(model.na(), 0.0);
        let FeatherstoneWorkspace { dm, data, passive, tau, acc, .. } = ws;
        let x = StepIn { q: &s.q, v: &s.v, act: &s.act, u: &u.joint_torque, ctrl: &u.ctrl };
        step_generic_into(dm, passive, &x, dt, data, tau, acc, &mut out.q, &mut out.v, &mut out.act)
            .map_err(Self::dyn_err)?;
        if out.q.iter().chain(&out.v).chain(&out.act).any(|x| !x.is_finite()) {
            return Err(SolverError::NonFinite { solver: "featherstone", what: "(q or v)".into() });
        }
        // no contacts: no warm start to pass on
        out.warm.clear();
        if let Some(r) = rec {
            r.s = Some(s.clone());
            r.u.clone_from(u);
            r.dt = dt;
        }
        Ok(StepInfo::new("featherstone"))
    }
}

impl DiffSolver for FeatherstoneSolver {
    /// Jᵀ ḡ with the analytic A, B and a dual pass per *selected* parameter (`sel`).
    #[allow(clippy::too_many_arguments)]
    fn step_vjp(
        &self,
        model: &Model,
        rec: &FeatherstoneRecord,
        g_out: &GenState,
        g_s: &mut GenState,
        g_u: &mut [f64],
        sel: &ParamSelection,
        g_theta: &mut [f64],
        _ws: &mut FeatherstoneWorkspace,
    ) -> Result<(), SolverError> {
        let s = recorded(&rec.s, "featherstone")?;
        check_grad_sizes("featherstone", self.control_dim(model), g_u, sel, g_theta)?;
        let (jac, q1) = self.jacobian(model, s, &rec.u, rec.dt, sel)?;
        let j = split_jacobian(&jac, Dims::of(model), sel.len());
        transposed_jacobian_product(model, &s.q, &q1, &j, g_out, g_s, g_u, g_theta);
        Ok(())
    }

    fn step_jacobians_into(
        &self,
        model: &Model,
        s: &GenState,
        u: &Control,
        dt: f64,
        sel: &ParamSelection,
        _ws: &mut FeatherstoneWorkspace,
        out: &mut StepJacobians,
    ) -> Result<(), SolverError> {
        self.check(model, s, u, dt)?;
        let (jac, _) = self.jacobian(model, s, u, dt, sel)?;
        out.assign(&split_jacobian(&jac, Dims::of(model), sel.len()));
        Ok(())
    }

    /// one generalized force per DoF (`ControlLayout::PerDof`), then one control per cable actuator (nu)
    fn control_dim(&self, model: &Model) -> usize {
        model.nv() + model.nu()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use torsion_diff::{fd_jacobian, rel_err};
    use torsion_model::builder::two_link_arm;

    /// Transition Jacobians against central differences (the free/ball/prismatic tree and the Baxter rollout
    /// are in tests/featherstone.rs).
    #[test]
    fn step_jacobians_match_central_differences() {
        let mut m = two_link_arm(0.8, 0.5, 1.0, torsion_math::Vec3::new(0.0, -9.8, 0.0), 0.01).unwrap();
        m.joint_damping = vec![0.3, 0.1];
        let solver = FeatherstoneSolver::default();
        let s0 = GenState::new(vec![0.4, -0.7], vec![1.0, -0.5]);
        let u = Control::from_torques(&[0.7, -0.3]);
        let jac = solver.step_jacobians(&m, &s0, &u, 0.01, &ParamSelection::all(&m)).unwrap();
        let next = |s: &GenState, uu: &[f64]| {
            let mut o = s.clone();
            let mut ws = solver.workspace(&m).unwrap();
            solver.step(&m, s, &Control::from_torques(uu), 0.01, &mut o, &mut ws, None).unwrap();
            o
        };
        let base = next(&s0, &u.joint_torque);
        let fa =
            fd_jacobian(|d| solver.local_diff(&m, &base, &next(&solver.retract(&m, &s0, d), &u.joint_torque)), 4, 1e-6);
        let fb = fd_jacobian(|d| solver.local_diff(&m, &base, &next(&s0, &[0.7 + d[0], -0.3 + d[1]])), 2, 1e-6);
        assert!(rel_err(jac.a.as_slice(), fa.as_slice()) < 1e-7, "A");
        assert!(rel_err(jac.b.as_slice(), fb.as_slice()) < 1e-7, "B");
    }

    /// The analytic A, B (ABA derivatives chained through the step and the integration map) against the
    /// all-dual reference, on a free + ball + slide + sprung, damped hinge tree at a generic state.
    /// A loose box (anisotropic inertia, COM off the joint origin) spinning about no principal axis: the
    /// implicit gyroscopic update and the free joint's MuJoCo-Euler advance in the analytic A / B equal the
    /// all-dual reference and central differences.
    #[test]
    fn loose_spinning_body_jacobians_match_duals_and_finite_differences() {
        let xml = r#"<mujoco><option gravity="0 0 -9.81"/><worldbody><body name="b" pos="0 0 1"><freejoint/>
            <geom type="box" size="0.2 0.1 0.05" pos="0.03 -0.02 0.01" mass="1.5"/>
            <geom type="sphere" size="0.05" pos="-0.1 0.05 0" mass="0.4"/></body></worldbody></mujoco>"#;
        let m = torsion_model::io::mjcf::load_mjcf_str(xml, "loose.xml", None).unwrap();
        let r = torsion_math::Quat::exp(&torsion_math::Vec3::new(0.4, -0.2, 0.7)).to_array();
        let s0 = GenState::new(vec![0.1, -0.2, 1.0, r[0], r[1], r[2], r[3]], vec![6.0, -4.0, 5.0, 0.5, -1.0, 2.0]);
        let u = Control::from_torques(&[0.3, -0.2, 0.1, 1.0, 0.0, -2.0]);
        let solver = FeatherstoneSolver::default();
        let sel = ParamSelection::by_prefix(&m, "body_mass[");
        let an = solver.step_jacobians(&m, &s0, &u, 0.01, &sel).unwrap();
        let du = solver.step_jacobians_dual(&m, &s0, &u, 0.01, &sel).unwrap();
        let err = |a: &DMatrix<f64>, b: &DMatrix<f64>| (a - b).amax() / b.amax().max(1.0);
        assert!(err(&an.a, &du.a) < 1e-12, "A vs duals {}", err(&an.a, &du.a));
        assert!(err(&an.b, &du.b) < 1e-12, "B vs duals {}", err(&an.b, &du.b));
        let next = |s: &GenState, uu: &Control| {
            let mut o = s.clone();
            let mut ws = solver.workspace(&m).unwrap();
            solver.step(&m, s, uu, 0.01, &mut o, &mut ws, None).unwrap();
            o
        };
        let base = next(&s0, &u);
        let fa = fd_jacobian(|d| solver.local_diff(&m, &base, &next(&solver.retract(&m, &s0, d), &u)), 12, 1e-5);
        let fb = fd_jacobian(
            |d| {
                let uu: Vec<f64> = u.joint_torque.iter().zip(d).map(|(a, b)| a + b).collect();
                solver.local_diff(&m, &base, &next(&s0, &Control::from_torques(&uu)))
            },
            6,
            1e-6,
        );
        let (ea, eb) = (rel_err(an.a.as_slice(), fa.as_slice()), rel_err(an.b.as_slice(), fb.as_slice()));
        eprintln!("loose spinning body: A vs FD {ea:.1e}, B vs FD {eb:.1e}");
        assert!(ea < 1e-6 && eb < 1e-6, "A {ea:e} B {eb:e}");
    }

    #[test]
    fn analytic_jacobians_match_dual_reference() {
        let mut m = torsion_model::builder::floating_tree();
        let q = torsion_model::builder::example_configuration(&m, 9);
        let s = GenState::new(q, (0..m.nv()).map(|i| ((i * 7 + 3) % 11) as f64 / 5.0 - 1.0).collect());
        let u = Control::from_torques(&(0..m.nv()).map(|i| ((i * 5 + 1) % 7) as f64 / 3.0 - 1.0).collect::<Vec<_>>());
        let solver = FeatherstoneSolver::default();
        let sel = ParamSelection::all(&m);
        let an = solver.step_jacobians(&m, &s, &u, 0.01, &sel).unwrap();
        let du = solver.step_jacobians_dual(&m, &s, &u, 0.01, &sel).unwrap();
        let err = |a: &DMatrix<f64>, b: &DMatrix<f64>| (a - b).amax() / b.amax().max(1.0);
        assert!(err(&an.a, &du.a) < 1e-12, "A {}", err(&an.a, &du.a));
        assert!(err(&an.b, &du.b) < 1e-12, "B {}", err(&an.b, &du.b));
        assert_eq!(an.c, du.c);
        // the workspace step (refreshed θ, in-place buffers) equals the allocating generic step
        let mut ws = solver.workspace(&m).unwrap();
        let mut out = s.clone();
        m.body_mass[2] = 1.5;
        solver.step(&m, &s, &u, 0.01, &mut out, &mut ws, None).unwrap();
        let mut dm = DynModel::from_model(&m).unwrap();
        let mut d = DynData::new(&dm);
        let x = StepIn { q: &s.q, v: &s.v, act: &[], u: &u.joint_torque, ctrl: &[] };
        let (q1, v1, _) = step_generic(&mut dm, &Passive::from_model(&m, true), &x, 0.01, &mut d).unwrap();
        assert_eq!((out.q, out.v), (q1, v1));
    }

    /// With MuJoCo's fluid forces on (density, viscosity, wind), the analytic A, B against central differences
    /// of the step and against the all-dual reference, on the free + ball + slide + hinge tree.
    #[test]
    fn fluid_step_jacobians_match_central_differences() {
        let mut m = torsion_model::builder::floating_tree();
        (m.fluid_density, m.fluid_viscosity) = (3000.0, 0.1);
        m.wind = torsion_math::Vec3::new(0.3, -0.2, 0.1);
        let solver = FeatherstoneSolver::default();
        let s0 = GenState::new(
            torsion_model::builder::example_configuration(&m, 4),
            (0..m.nv()).map(|i| ((i * 7 + 3) % 11) as f64 / 4.0 - 1.2).collect(),
        );
        let nv = m.nv();
        let u0: Vec<f64> = (0..nv).map(|i| (i % 3) as f64 - 1.0).collect();
        let dt = 0.01;
        let next = |s: &GenState, uu: &[f64]| {
            let mut o = s.clone();
            let mut ws = solver.workspace(&m).unwrap();
            solver.step(&m, s, &Control::from_torques(uu), dt, &mut o, &mut ws, None).unwrap();
            o
        };
        let base = next(&s0, &u0);
        // the fluid changes the step
        let mut still = m.clone();
        (still.fluid_density, still.fluid_viscosity) = (0.0, 0.0);
        let mut o = s0.clone();
        solver
            .step(&still, &s0, &Control::from_torques(&u0), dt, &mut o, &mut solver.workspace(&still).unwrap(), None)
            .unwrap();
        let dv = o.v.iter().zip(&base.v).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        assert!(dv > 1e-3, "fluid effect on v' {dv}");
        let jac = solver.step_jacobians(&m, &s0, &Control::from_torques(&u0), dt, &ParamSelection::none()).unwrap();
        let fa = fd_jacobian(|d| solver.local_diff(&m, &base, &next(&solver.retract(&m, &s0, d), &u0)), 2 * nv, 1e-6);
        let ea = rel_err(jac.a.as_slice(), fa.as_slice());
        let du = solver.step_jacobians_dual(&m, &s0, &Control::from_torques(&u0), dt, &ParamSelection::none()).unwrap();
        let ed = (&jac.a - &du.a).amax() / du.a.amax();
        println!("fluid transition Jacobian A: rel err vs FD {ea:.1e}, vs dual {ed:.1e}");
        assert!(ea < 1e-6, "A vs FD {ea:e}");
        assert!(ed < 1e-12, "A vs dual {ed:e}");
    }

    /// The workspace path `transition_jacobians_into` equals `step_jacobians` at two successive states and
    /// after a parameter change (buffers reused, θ refreshed), and the step after it is unchanged (the
    /// workspace's damping is restored).
    #[test]
    fn workspace_jacobians_equal_step_jacobians() {
        let mut m = torsion_model::builder::floating_tree();
        let solver = FeatherstoneSolver::default();
        let mut ws = solver.workspace(&m).unwrap();
        let mut tj = TransitionJacobians::new(&m);
        let none = ParamSelection::none();
        for seed in [3, 9] {
            if seed == 9 {
                m.body_mass[1] *= 1.3;
            }
            let q = torsion_model::builder::example_configuration(&m, seed);
            let s = GenState::new(q, (0..m.nv()).map(|i| ((i * 7 + seed as usize) % 11) as f64 / 5.0 - 1.0).collect());
            let u = Control::from_torques(&(0..m.nv()).map(|i| (i % 3) as f64 - 1.0).collect::<Vec<_>>());
            solver.transition_jacobians_into(&m, &s, &u, 0.01, &mut ws, &mut tj).unwrap();
            let r = solver.step_jacobians(&m, &s, &u, 0.01, &none).unwrap();
            assert_eq!(tj.a(), r.a);
            assert_eq!(tj.b(), r.b);
            let mut out = s.clone();
            solver.step(&m, &s, &u, 0.01, &mut out, &mut ws, None).unwrap();
            let mut fresh = solver.workspace(&m).unwrap();
            let mut out2 = s.clone();
            solver.step(&m, &s, &u, 0.01, &mut out2, &mut fresh, None).unwrap();
            assert_eq!(out, out2);
            assert_eq!(tj.q1, out.q);
        }
        let wrong = TransitionJacobians::new(&two_link_arm(0.8, 0.5, 1.0, torsion_math::Vec3::zeros(), 0.01).unwrap());
        let s = GenState::rest(&m);
        let u = Control::from_torques(&vec![0.0; m.nv()]);
        assert!(solver.transition_jacobians_into(&m, &s, &u, 0.01, &mut ws, &mut { wrong }).is_err());
    }
}
