//! Semi-implicit Euler in generalized coordinates (no contact):
//! (M + A + h D) a = u − c(q, v) − D v − K (q − q_ref), v' = v + h a, q' = q ⊕ h v' (on the manifold for ball
//! joints; a free joint as MuJoCo's Euler: its origin moves straight along its world velocity,
//! `joints::advance_into`; a loose body's gyroscopic torque implicit, `gyroscopic.rs`). A = armature, D = joint
//! damping (implicit, as MuJoCo's Euler integrator: h D enters ABA as armature, so stiff damping on light links
//! stays stable), K = hinge/slide joint springs (explicit); A, D and the joints' dry friction (MuJoCo
//! `frictionloss`: a per-DoF box on v', `joint_friction.rs`) are parameters of θ (`joint_armature[·]`,
//! `joint_damping[·]`, `joint_frictionloss[·]`). Cables and their motor filters (spec 003 §3.3–3.5,
//! `passive::cable_forces_into`) enter u explicitly from the activation act, then act' = act + h (ctrl − act)/τ
//! (MuJoCo's Euler); the state carries act, the control the actuators' ctrl. Spec 003's linear contact model for
//! rods (`Model::tensegrity_contact`, `tensegrity_contact.rs`) enters u the same way, forces held for one step. Same `Solver` / `DiffSolver`
//! contract as XPBD.
//! Derivatives: A and B from the analytic ABA derivatives (Carpentier–Mansard, `aba_derivatives`: ∂q̈/∂q,
//! ∂q̈/∂v, M̃⁻¹ in one sweep plus a Cholesky) chained through the step and the per-joint integration map
//! (its small Jacobians by dual numbers of `advance_joint`); C (w.r.t. θ) by forward-mode duals of the same
//! generic step, one Dual64 pass per parameter. `step_jacobians_dual` keeps the all-dual reference (one
//! pass per input direction), against which the analytic path is tested. The VJP uses the same Jacobians.
//! Integrators (`FeatherstoneOptions::integrator`, `integrators.rs`): this Euler step (default), RK4 and
//! implicitfast from the same acceleration kernel; their derivatives by dual passes (docs/decisions.md).
use crate::generalized::{
    dual_tangent, dyn_model_f64, transposed_jacobian_product_with, wrench_vjp, DynCache, ProductScratch,
};
use crate::integrators::{rk4_step_into, Rk4Scratch};
use crate::joint_friction::{FrictionMode, JointFriction};
use crate::solver::{check_grad_sizes, DiffSolver, Solver, SolverError, StepInfo, StepJacobians};
use nalgebra::DMatrix;
use num_dual::Dual64;
use torsion_dynamics::aba::{aba_factor_len, aba_factor_load, aba_factor_save, aba_solve_factored_into};
use torsion_dynamics::aba_derivatives::{aba_derivatives_into, AbaDerivatives};
use torsion_dynamics::external::{wrench_forces_into, wrench_state_vjp_into};
use torsion_dynamics::fluid::{fluid_derivatives, fluid_forces_into, FluidBodies};
use torsion_dynamics::gyroscopic::{gyroscopic_joint, implicit_gyroscopic, is_loose_free_joint, loose_body_inertia};
use torsion_dynamics::joints::{
    add_free_frame_term, advance_into, advance_joint, difference, integrate, integrate_joint,
};
use torsion_dynamics::passive::{
    activation_step, cable_forces_into, joint_actuator_derivatives, joint_actuator_forces_into,
    joint_actuator_velocity_derivatives, CableOut,
};
use torsion_dynamics::regressor::{regressor_vjp_into, regressor_vjp_pass, RneaAdjoint};
use torsion_dynamics::tensegrity_contact::linear_contact_accel_into;
use torsion_dynamics::{aba_into, forward_kinematics, DynData, DynModel};
use torsion_math::scalar::cv;
use torsion_math::{Scalar, Vec3};
use torsion_model::joint_maps::{ambient_to_tangent_into, tangent_to_ambient_into};
use torsion_model::params::{ParamKind, INERTIA_IDX};
/// the state space (`torsion_model::GenState`), re-exported where callers found it before it moved
pub use torsion_model::{ContactWarmStart, GenState, WarmImpulse};
use torsion_model::{Control, Integrator, JointType, Model, ParamSelection, Transmission};

#[derive(Clone, Debug)]
pub struct FeatherstoneOptions {
    /// apply the model's viscous joint damping −d v (implicitly under Euler and implicitfast)
    pub joint_damping: bool,
    /// the time integrator (`integrators.rs`, docs/decisions.md "Integrators"); default semi-implicit Euler
    /// (`Model::integrator` is what the model file asks for: the CLI's default)
    pub integrator: Integrator,
}

impl Default for FeatherstoneOptions {
    fn default() -> Self {
        FeatherstoneOptions { joint_damping: true, integrator: Integrator::SemiImplicitEuler }
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
    /// θ `dm` was built from, compared with the model's at each step (the contact steppers' `DynCache`)
    cache: DynCache,
    passive: Passive,
    /// the step's τ, q̈, dry-friction solve and RK4 stages (the generic step's scratch)
    sc: StepScratch<f64>,
    /// the reverse-mode step's and the workspace Jacobians' buffers (`step_vjp`, `step_jacobians_into`)
    adj: AdjointScratch,
    /// where `data`'s articulated-body factorization of M̃ is current
    factor: FactorTag,
}

/// The (q, armature A + hD) at which the last ABA on the workspace's `data` left its factorization of M̃, so
/// that `step_vjp` after `step` (as `rollout_vjp` calls them) solves with it (`aba::aba_solve_factored_into`).
#[derive(Default)]
struct FactorTag {
    valid: bool,
    q: Vec<f64>,
    armature: Vec<f64>,
}

impl FactorTag {
    fn set(&mut self, q: &[f64], armature: &[f64]) {
        self.q.clear();
        self.q.extend_from_slice(q);
        self.armature.clear();
        self.armature.extend_from_slice(armature);
        self.valid = true;
    }
    fn holds(&self, q: &[f64], armature: &[f64]) -> bool {
        self.valid && self.q == q && self.armature == armature
    }
}

impl FeatherstoneWorkspace {
    /// Bring the dynamics model and the passive terms up to date with `model` (allocates only when θ
    /// changed since the last call).
    fn refresh(&mut self, model: &Model, damping: bool) -> Result<(), torsion_dynamics::DynError> {
        if self.cache.refresh(model, &mut self.dm)? {
            self.factor.valid = false;
        }
        self.dm.gravity = cv(&model.gravity);
        self.dm.set_joint_passive(model);
        // the cable and contact_* entries of θ are not in the workspace's table: take them from the model
        self.dm.cables.set_params(model);
        if let (Some(t), Some(lc)) = (self.dm.tensegrity_contact.as_mut(), model.tensegrity_contact.as_ref()) {
            t.set_params(lc);
        }
        self.passive.fill(model, damping);
        Ok(())
    }
}

/// The step's inputs, for `step_vjp`, and what the Euler step computed on the way. `Solver::record` sizes every
/// buffer for the model, so a step fills a fresh record without allocating (a tape's records, issue 14 item 7).
pub struct FeatherstoneRecord {
    /// the step's input state, once `filled`
    s: GenState,
    filled: bool,
    u: Control,
    dt: f64,
    /// the Euler step's intermediates (RK4 keeps the inputs only: its derivatives take the dual passes): q̈, v̂
    /// after the gyroscopic update and frame term, q1, and the articulated-body factorization of M̃ its ABA left
    /// (`aba::aba_factor_save`); the reverse step starts from them instead of replaying the forward
    derived: bool,
    qdd: Vec<f64>,
    vpost: Vec<f64>,
    q1: Vec<f64>,
    factor: Vec<f64>,
    /// each DoF's dry-friction mode (stick / slide) at the step's solution
    fric_mode: Vec<FrictionMode>,
}

impl FeatherstoneRecord {
    /// Each DoF's dry-friction mode at the recorded step's solution (`Off` without friction loss).
    pub fn friction_modes(&self) -> &[FrictionMode] {
        &self.fric_mode
    }

    /// The recorded step's input state (an error before a step filled the record).
    fn input(&self) -> Result<&GenState, SolverError> {
        if self.filled {
            Ok(&self.s)
        } else {
            Err(SolverError::BadInput {
                solver: "featherstone",
                problem: "step_vjp needs a record filled by step".into(),
            })
        }
    }
}

/// Per-DoF passive terms of the step (from the model and the options).
#[derive(Clone, Debug)]
pub struct Passive {
    /// apply the joint damping (`FeatherstoneOptions::joint_damping`); its values, with the armature and the
    /// friction loss, are the dynamics model's `dof_*` (from θ)
    pub damping_on: bool,
    /// (q index, stiffness, rest position) of each sprung 1-DoF joint, by DoF
    pub spring: Vec<Option<(usize, f64, f64)>>,
    /// the fluid model's per-body boxes (explicit force, `torsion_dynamics::fluid`)
    pub fluid: FluidBodies,
    /// the step's integrator (`FeatherstoneOptions::integrator`)
    pub integrator: Integrator,
}

impl Passive {
    pub fn from_model(model: &Model, damping: bool) -> Self {
        let nv = model.nv();
        let mut p = Passive {
            damping_on: damping,
            spring: vec![None; nv],
            fluid: FluidBodies::new(model),
            integrator: Integrator::SemiImplicitEuler,
        };
        p.fill(model, damping);
        p
    }

    /// Refill in place (sizes from `from_model` on the same model); no allocation.
    pub fn fill(&mut self, model: &Model, damping: bool) {
        self.damping_on = damping;
        let (mut qs, mut vs) = (0, 0);
        for j in 0..model.joint_count() {
            let t = model.joint_type[j];
            for i in 0..t.dof() {
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

    /// The viscous damping the step applies on DoF k (zero when switched off).
    pub fn damping<T: Scalar>(&self, dm: &DynModel<T>, k: usize) -> T {
        if self.damping_on {
            dm.dof_damping[k]
        } else {
            T::zero()
        }
    }

    /// M̃'s diagonal term of DoF k: armature + h · damping (implicit damping; RK4: the armature only, its
    /// stages are explicit).
    pub fn armature<T: Scalar>(&self, dm: &DynModel<T>, k: usize, h: f64) -> T {
        match self.integrator {
            Integrator::Rk4 => dm.dof_armature[k],
            _ => dm.dof_armature[k] + self.damping(dm, k) * T::c(h),
        }
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
    /// external body wrenches (`Control::body_wrench`: 6 per body, or empty)
    pub wrench: &'a [T],
}

/// (q1, v1, act1) of [`step_generic`].
pub type StepOut<T> = (Vec<T>, Vec<T>, Vec<T>);

/// Where a step is differentiated: the model, the input state and control, the time step (the Jacobians of
/// [`FeatherstoneSolver::step_jacobians_dual`], [`FeatherstoneSolver::param_jacobian`] and their kernels).
#[derive(Clone, Copy)]
pub struct StepPoint<'a> {
    pub model: &'a Model,
    pub s: &'a GenState,
    pub u: &'a Control,
    pub dt: f64,
}

impl<'a> StepPoint<'a> {
    pub fn new(model: &'a Model, s: &'a GenState, u: &'a Control, dt: f64) -> Self {
        StepPoint { model, s, u, dt }
    }
}

/// The generic step's scratch: `tau`, `acc` (nv), the dry-friction solve's buffers, RK4's stages (used under
/// `Integrator::Rk4` only); allocated once, then reused by every step: [`step_generic_into`] (the dual passes)
/// and the f64 step of [`FeatherstoneWorkspace`].
pub struct StepScratch<T: Scalar> {
    tau: Vec<T>,
    acc: Vec<T>,
    fric: JointFriction<T>,
    rk: Rk4Scratch<T>,
}

impl<T: Scalar> StepScratch<T> {
    pub fn new(nq: usize, nv: usize, na: usize) -> Self {
        let z = || vec![T::zero(); nv];
        StepScratch { tau: z(), acc: z(), fric: JointFriction::new(nv), rk: Rk4Scratch::new(nq, nv, na) }
    }
}

/// One step on any scalar; `u` has nv generalized forces. Sets `dm.armature` to A + h D. Returns (q1, v1, act1).
pub fn step_generic<T: Scalar>(
    dm: &mut DynModel<T>,
    passive: &Passive,
    x: &StepIn<T>,
    dt: f64,
    d: &mut DynData<T>,
) -> Result<StepOut<T>, torsion_dynamics::DynError> {
    let mut sc = StepScratch::new(x.q.len(), dm.nv, x.act.len());
    let (mut q1, mut v1, mut act1) = (x.q.to_vec(), vec![T::zero(); dm.nv], x.act.to_vec());
    step_generic_into(dm, passive, x, dt, d, &mut sc, &mut q1, &mut v1, &mut act1)?;
    Ok((q1, v1, act1))
}

/// [`step_generic`] into preallocated buffers `q1` (nq), `v1` (nv), `act1` (na) with the scratch `sc`
/// ([`StepScratch::new`]): no heap allocation. The cable forces (`passive::cable_forces_into`) enter τ explicitly
/// with the fluid's, from act (not act1), and act1 is act's explicit Euler step (`passive::activation_step`), as
/// MuJoCo's Euler.
#[allow(clippy::too_many_arguments)]
pub fn step_generic_into<T: Scalar>(
    dm: &mut DynModel<T>,
    passive: &Passive,
    x: &StepIn<T>,
    dt: f64,
    d: &mut DynData<T>,
    sc: &mut StepScratch<T>,
    q1: &mut [T],
    v1: &mut [T],
    act1: &mut [T],
) -> Result<(), torsion_dynamics::DynError> {
    let StepScratch { tau, acc, fric, rk } = sc;
    if passive.integrator == Integrator::Rk4 {
        return rk4_step_into(dm, passive, x, dt, d, rk, tau, acc, fric, q1, v1, act1);
    }
    step_accel_into(dm, passive, x, dt, d, tau, acc, q1, v1, act1, fric)?;
    advance_step(dm, x.q, x.v, dt, acc, q1, v1);
    Ok(())
}

/// The first half of [`step_generic_into`]: τ (controls, passive, fluid and cable forces), act1, and
/// q̈ = M̃⁻¹(τ − c + τ_fric) into `acc` with the joints' dry friction τ_fric solved at the step's velocity level
/// (`joint_friction.rs`; the reverse-mode step replays it). M̃ = M + A + hD (Euler), + h(−∂τ_act/∂q̇) of the joint
/// actuators (implicitfast), M + A (an RK4 stage: damping explicit).
#[allow(clippy::too_many_arguments)]
pub(crate) fn step_accel_into<T: Scalar>(
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
    fric: &mut JointFriction<T>,
) -> Result<(), torsion_dynamics::DynError> {
    let StepIn { q, v, act, u, ctrl, wrench } = *x;
    dm.check_v("u", u)?;
    dm.check_v("v1 (output)", v1)?;
    dm.check_q(q1)?;
    for k in 0..dm.nv {
        let mut t = u[k] - v[k] * passive.damping(dm, k);
        if let Some((iq, kk, r)) = passive.spring[k] {
            t -= (q[iq] - T::c(r)) * T::c(kk);
        }
        tau[k] = t;
        dm.armature[k] = passive.armature(dm, k, dt);
    }
    if !wrench.is_empty() {
        // Σ_b J_bᵀ w_b enters exactly where u does, so its cotangent is J_b ḡ_u (`generalized::wrench_vjp`)
        forward_kinematics(dm, q, d);
        wrench_forces_into(dm, d, wrench, tau)?;
    }
    fluid_forces_into(&passive.fluid, dm, q, v, d, tau)?;
    cable_forces_into(&dm.cables, dm, q, v, act, ctrl, d, CableOut::Tau(tau))?;
    joint_actuator_forces_into(&dm.cables, q, v, act, ctrl, tau)?;
    if passive.integrator == Integrator::ImplicitFast {
        // MuJoCo implicitfast: M − h ∂τ/∂q̇ (no Coriolis terms); joint transmissions: diagonal
        let arm = &mut dm.armature;
        joint_actuator_velocity_derivatives(&dm.cables, q, v, act, ctrl, |iv, g| arm[iv] -= T::c(dt * g));
    }
    if act1.len() != act.len() {
        return Err(torsion_dynamics::DynError::Shape { what: "act1 (output)", got: act1.len(), expected: act.len() });
    }
    activation_step(&dm.cables, act, ctrl, dt, act1);
    aba_into(dm, q, v, tau, d, acc)?;
    // spec 003 §3.6 from the velocity the step reaches without contact, v̂ = v + h q̈(τ) (§6 item 7), then
    // q̈ += M̃⁻¹ τ_c with this ABA's factorization
    linear_contact_accel_into(dm, q, v, dt, d, tau, acc)?;
    // dry friction on the velocity this q̈ reaches, with the factorization of M̃ the ABA left
    fric.solve_into(dm, d, v, dt, acc)
}

/// The second half of [`step_generic_into`]: from q̈ in `acc`, v̂ = v + h q̈ (in place), the loose bodies' implicit
/// gyroscopic update and the free joints' frame term, then (q1, v1) from v̂ (MuJoCo's Euler for free joints).
fn advance_step<T: Scalar>(dm: &DynModel<T>, q: &[T], v: &[T], dt: f64, acc: &mut [T], q1: &mut [T], v1: &mut [T]) {
    let h = T::c(dt);
    for k in 0..dm.nv {
        acc[k] = v[k] + acc[k] * h;
    }
    implicit_gyroscopic(dm, v, h, acc);
    add_free_frame_term(dm, v, h, acc);
    advance_into(dm, q, acc, h, q1, v1);
}

impl FeatherstoneSolver {
    /// A solver with the given integrator (the other options at their defaults).
    pub fn with_integrator(integrator: Integrator) -> Self {
        FeatherstoneSolver { options: FeatherstoneOptions { integrator, ..Default::default() } }
    }
    fn damping(&self, model: &Model) -> Passive {
        let mut p = Passive::from_model(model, self.options.joint_damping);
        p.integrator = self.options.integrator;
        p
    }
    /// What the integrator does not cover (docs/decisions.md "Integrators"): RK4 refuses the joints' friction
    /// loss and spec 003's linear contact (both act on the step's velocity, not on a stage derivative);
    /// implicitfast refuses fluid forces, cables and cable actuators (their velocity derivatives are not
    /// diagonal in the DoFs; MuJoCo includes them). Checked when the workspace is built and at every step.
    fn check_integrator(&self, model: &Model) -> Result<(), SolverError> {
        let refuse = |what: &str| {
            Err(SolverError::Unsupported {
                solver: "featherstone",
                problem: format!("integrator {} does not support {what}", self.options.integrator),
            })
        };
        match self.options.integrator {
            Integrator::SemiImplicitEuler => Ok(()),
            Integrator::Rk4 => {
                if let Some(j) = model.joint_frictionloss.iter().position(|&f| f != 0.0) {
                    return refuse(&format!(
                        "joint friction loss (joint '{}' has frictionloss {}; use Euler or implicitfast)",
                        model.joint_name[j], model.joint_frictionloss[j]
                    ));
                }
                if model.tensegrity_contact.is_some() {
                    return refuse("the linear contact model (torsion_linear_contact; use Euler)");
                }
                Ok(())
            }
            Integrator::ImplicitFast => {
                if model.fluid_density > 0.0 || model.fluid_viscosity > 0.0 {
                    return refuse("fluid forces (option density / viscosity; use Euler or RK4)");
                }
                if !model.cables.is_empty()
                    || model.cable_actuators.iter().any(|a| matches!(a.transmission, Transmission::Cable(_)))
                {
                    return refuse("cables (spatial tendons) or tendon actuators (use Euler or RK4)");
                }
                Ok(())
            }
        }
    }
    /// Whether the step is the Euler step the analytic Jacobians and the reverse-mode VJP are derived for: Euler,
    /// and implicitfast without actuators (then the same step). Otherwise every derivative takes the dual passes
    /// of the generic step (docs/gradients.md "Integrators").
    fn euler_like(&self, model: &Model) -> bool {
        match self.options.integrator {
            Integrator::SemiImplicitEuler => true,
            Integrator::ImplicitFast => model.cable_actuators.is_empty(),
            Integrator::Rk4 => false,
        }
    }
    fn check(&self, model: &Model, s: &GenState, u: &Control, dt: f64) -> Result<(), SolverError> {
        self.check_integrator(model)?;
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
                "control has {} actuator controls (ctrl); the model has {} actuators (or pass none: zeros)",
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
    fn jacobian_dual(&self, at: StepPoint, sel: &ParamSelection) -> Result<DMatrix<f64>, SolverError> {
        let model = at.model;
        let n = Dims::of(model);
        let mut jac = DMatrix::zeros(n.nx, n.nx + n.ncu + sel.len());
        self.state_columns_dual(at, &mut jac)?;
        self.theta_columns_dual(at, sel, &mut jac)?;
        Ok(jac)
    }

    /// The f64 step (q1) and the lifted inputs (q, q1, v, act, u, ctrl, body wrenches; ctrl padded to nu).
    #[allow(clippy::type_complexity)]
    fn dual_inputs(&self, at: StepPoint) -> Result<[Vec<Dual64>; 7], SolverError> {
        let StepPoint { model, s, u, dt } = at;
        let passive = self.damping(model);
        let (mut dmf, _, _) = dyn_model_f64(model).map_err(Self::dyn_err)?;
        let mut df = DynData::new(&dmf);
        let ctrl = padded_ctrl(model, u);
        let x = StepIn { q: &s.q, v: &s.v, act: &s.act, u: &u.joint_torque, ctrl: &ctrl, wrench: &u.body_wrench };
        let (q1, _, _) = step_generic(&mut dmf, &passive, &x, dt, &mut df).map_err(Self::dyn_err)?;
        let lift = |x: &[f64]| x.iter().map(|&v| Dual64::from(v)).collect::<Vec<_>>();
        Ok([lift(&s.q), lift(&q1), lift(&s.v), lift(&s.act), lift(&u.joint_torque), lift(&ctrl), lift(&u.body_wrench)])
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
    fn state_columns_dual(&self, at: StepPoint, jac: &mut DMatrix<f64>) -> Result<(), SolverError> {
        let StepPoint { model, dt, .. } = at;
        let n = Dims::of(model);
        let nv = n.nv;
        let passive = self.damping(model);
        let (_, table, theta) = dyn_model_f64(model).map_err(Self::dyn_err)?;
        let [q0d, q1d, v0d, a0d, u0d, c0d, wd] = self.dual_inputs(at)?;
        let lift = |x: &[f64]| x.iter().map(|&v| Dual64::from(v)).collect::<Vec<_>>();
        let mut dm: DynModel<Dual64> = DynModel::build(model, &table, &lift(&theta)).map_err(Self::dyn_err)?;
        let mut d = DynData::new(&dm);
        let mut sc = StepScratch::new(model.nq(), nv, model.na());
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
            let x = StepIn { q: &qd, v: &vd, act: &ad, u: &ud, ctrl: &cd, wrench: &wd };
            step_generic_into(&mut dm, &passive, &x, dt, &mut d, &mut sc, &mut qn, &mut vn, &mut an)
                .map_err(Self::dyn_err)?;
            Self::write_column(&dm, &q1d, (&qn, &vn, &an), col, jac);
        }
        Ok(())
    }

    /// Columns of the selected θ by dual passes, one dual model per parameter (the cable parameters ride in
    /// `DynModel::cables`).
    fn theta_columns_dual(
        &self,
        at: StepPoint,
        sel: &ParamSelection,
        jac: &mut DMatrix<f64>,
    ) -> Result<(), SolverError> {
        let StepPoint { model, dt, .. } = at;
        if sel.is_empty() {
            return Ok(());
        }
        let n = Dims::of(model);
        let table = model.param_table();
        let theta = model.param_vector();
        let passive = self.damping(model);
        let [q0d, q1d, vd, ad, ud, cd, wd] = self.dual_inputs(at)?;
        let lift = |x: &[f64]| x.iter().map(|&v| Dual64::from(v)).collect::<Vec<_>>();
        let mut th = lift(&theta);
        let x = StepIn { q: &q0d, v: &vd, act: &ad, u: &ud, ctrl: &cd, wrench: &wd };
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
    /// Models with cables or the linear contact model, and the integrators other than Euler (`euler_like`):
    /// every column by dual passes (`jacobian_dual`; docs/gradients.md).
    fn jacobian(&self, at: StepPoint, sel: &ParamSelection) -> Result<(DMatrix<f64>, Vec<f64>), SolverError> {
        let StepPoint { model, u, .. } = at;
        if !model.cables.is_empty()
            || model.na() > 0
            || model.tensegrity_contact.is_some()
            || !u.body_wrench.is_empty()
            || !self.euler_like(model)
        {
            let jac = self.jacobian_dual(at, sel)?;
            let [_, q1, ..] = self.dual_inputs(at)?;
            return Ok((jac, q1.iter().map(|x| x.re).collect()));
        }
        let (nv, nu) = (model.nv(), model.nu());
        let mut jac = DMatrix::zeros(2 * nv, 3 * nv + nu + sel.len());
        let q1 = self.state_columns(at, &mut jac)?;
        self.theta_columns_dual(at, sel, &mut jac)?;
        Ok((jac, q1))
    }

    /// Columns 0..3nv + nu of the Jacobian (analytic, [`state_columns_into`]) into `jac`; returns q1. Builds its own
    /// workspace: the allocation-free path is [`FeatherstoneSolver::transition_jacobians_into`].
    fn state_columns(&self, at: StepPoint, jac: &mut DMatrix<f64>) -> Result<Vec<f64>, SolverError> {
        let StepPoint { model, s, u, dt } = at;
        let nv = model.nv();
        let mut ws = self.workspace(model)?;
        let mut tj = TransitionJacobians::new(model);
        let FeatherstoneWorkspace { dm, data, passive, .. } = &mut ws;
        state_columns_into(dm, data, passive, s, &u.joint_torque, &u.ctrl, dt, &mut tj).map_err(Self::dyn_err)?;
        jac.columns_mut(0, 3 * nv + model.nu()).copy_from(&tj.ab);
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
        if !model.cables.is_empty() || model.na() > 0 || model.tensegrity_contact.is_some() || !self.euler_like(model) {
            return Err(SolverError::Unsupported {
                solver: "featherstone",
                problem: format!(
                    "transition_jacobians_into covers the Euler step without cables, filter actuators or the linear \
                     contact model (here: integrator {}): use step_jacobians",
                    self.options.integrator
                ),
            });
        }
        if ws.sc.tau.len() != nv
            || out.ab.nrows() != 2 * nv
            || out.ab.ncols() != 3 * nv + model.nu()
            || out.q1.len() != model.nq()
        {
            return Err(SolverError::BadInput {
                solver: "featherstone",
                problem: "workspace or Jacobian buffers built for a different model".into(),
            });
        }
        ws.refresh(model, self.options.joint_damping).map_err(Self::dyn_err)?;
        ws.factor.valid = false;
        let FeatherstoneWorkspace { dm, data, passive, .. } = ws;
        state_columns_into(dm, data, passive, s, &u.joint_torque, &u.ctrl, dt, out).map_err(Self::dyn_err)
    }
}

impl FeatherstoneSolver {
    /// Whether the reverse-mode path (`AdjointScratch`) covers the model: no cables or cable actuators and no fluid
    /// forces (those keep Jᵀ ḡ with the dual-number / analytic Jacobian, docs/gradients.md). Errors on a selection
    /// that indexes past the parameter table the workspace was built with.
    fn reverse_mode(
        &self,
        model: &Model,
        ws: &FeatherstoneWorkspace,
        sel: &ParamSelection,
    ) -> Result<bool, SolverError> {
        if ws.sc.tau.len() != model.nv() || ws.adj.q1.len() != model.nq() {
            return Err(SolverError::BadInput {
                solver: "featherstone",
                problem: "workspace built for a different model".into(),
            });
        }
        if let Some(&i) = sel.indices.iter().find(|&&i| i >= ws.adj.kinds.len()) {
            return Err(SolverError::BadInput {
                solver: "featherstone",
                problem: format!("parameter selection index {i} past the table's {} entries", ws.adj.kinds.len()),
            });
        }
        Ok(self.euler_like(model)
            && model.cables.is_empty()
            && model.cable_actuators.is_empty()
            && model.tensegrity_contact.is_none()
            && !ws.passive.fluid.on())
    }
}

/// π index (`regressor::INERTIAL_NAMES`: m, hx, hy, hz, ixx, ixy, iyy, ixz, iyz, izz) of each model inertia entry
/// ([`INERTIA_IDX`] order: ixx, ixy, ixz, iyy, iyz, izz). Body frames are COM frames, so π_b = (m, 0, I_c).
const PI_OF_INERTIA: [usize; 6] = [4, 5, 7, 6, 8, 9];

/// The reverse-mode step (issue 14): buffers allocated once with the workspace. With ḡ = (ḡ_q1, ḡ_v1) in tangent
/// coordinates at q1: ḡ_v̂ = J_vᵀ ḡ_q1 + K_vᵀ ḡ_v1 and ḡ_q = J_qᵀ ḡ_q1 (the integration map), the free joints'
/// frame term and the loose bodies' implicit gyroscopic update transposed (small dual passes per joint), ḡ_q̈ =
/// h ḡ_v̂, λ = M̃⁻¹ ḡ_q̈ (one ABA solve: zero velocity and gravity, M̃ = M + A + hD as in the step), ḡ_u = λ, and
/// with q̈ = M̃⁻¹(u − Dv − K(q − r) − c): ḡ_(q, v, θ) −= ∂(λᵀ ID(q, v, q̈))/∂(q, v, θ) from one reverse sweep
/// (`regressor::regressor_vjp_into`), + the passive terms −Kλ, −Dλ. O(n) per step for any selection.
pub(crate) struct AdjointScratch {
    /// the kinds of the model's full parameter table (what `ParamSelection` indexes)
    kinds: Vec<ParamKind>,
    rnea: RneaAdjoint<f64>,
    /// A, B for `step_jacobians_into`
    tj: TransitionJacobians,
    qdd: Vec<f64>,
    /// v̂ after the gyroscopic update and the frame term (what `advance_joint` takes)
    vpost: Vec<f64>,
    q1: Vec<f64>,
    v1: Vec<f64>,
    act1: Vec<f64>,
    /// the output cotangent (tangent at q1) and the input's (tangent at q), v, v̂, q̈, λ (= ḡ_u)
    gq1t: Vec<f64>,
    gv1: Vec<f64>,
    gqt: Vec<f64>,
    gv: Vec<f64>,
    gvhat: Vec<f64>,
    gqdd: Vec<f64>,
    lam: Vec<f64>,
    zero: Vec<f64>,
    gq_amb: Vec<f64>,
    integ: Vec<IntegrationJacobians>,
    /// loose bodies: ∂L/∂(their COM inertia entries) per body and ∂L/∂(child anchor) per joint through the
    /// implicit gyroscopic update
    gyro_i: Vec<[f64; 6]>,
    gyro_t: Vec<[f64; 3]>,
    /// ∂(λᵀτ)/∂(parent, child anchor) per joint (`RneaAdjoint::anchor_grads`)
    anchor: Vec<(Vec3<f64>, Vec3<f64>)>,
    /// one row of C (`step_jacobians_into`)
    row: Vec<f64>,
    /// the dry-friction solve of `forward`, then the stick constraints' adjoint (`JointFriction::prepare`), and
    /// each DoF's friction mode at the step's solution
    fric: JointFriction<f64>,
    mode: Vec<FrictionMode>,
}

impl AdjointScratch {
    fn new(model: &Model, dm: &DynModel<f64>) -> Self {
        let (nq, nv, nj) = (model.nq(), model.nv(), model.joint_count());
        let kinds = model.param_table().kinds;
        let z = || vec![0.0; nv];
        AdjointScratch {
            row: vec![0.0; kinds.len()],
            kinds,
            rnea: RneaAdjoint::new(dm),
            tj: TransitionJacobians::new(model),
            qdd: z(),
            vpost: z(),
            q1: vec![0.0; nq],
            v1: z(),
            act1: vec![0.0; model.na()],
            gq1t: z(),
            gv1: z(),
            gqt: z(),
            gv: z(),
            gvhat: z(),
            gqdd: z(),
            lam: z(),
            zero: z(),
            gq_amb: vec![0.0; nq],
            integ: vec![([[0.0; 6]; 6], [[0.0; 6]; 6], [[0.0; 6]; 6]); nj],
            gyro_i: vec![[0.0; 6]; model.body_count()],
            gyro_t: vec![[0.0; 3]; nj],
            anchor: vec![(Vec3::zeros(), Vec3::zeros()); nj],
            fric: JointFriction::new(nv),
            mode: vec![FrictionMode::Off; nv],
        }
    }

    /// Replay the step at (s, u) (the same kernels: `step_accel_into`, `advance_step`): q̈, v̂, q1, and the
    /// integration map's Jacobians of the multi-DoF joints. Leaves `dm.armature` = A + hD.
    #[allow(clippy::too_many_arguments)]
    fn forward(
        &mut self,
        dm: &mut DynModel<f64>,
        d: &mut DynData<f64>,
        passive: &Passive,
        tau: &mut [f64],
        s: &GenState,
        u: &Control,
        dt: f64,
    ) -> Result<(), torsion_dynamics::DynError> {
        let x = StepIn { q: &s.q, v: &s.v, act: &s.act, u: &u.joint_torque, ctrl: &u.ctrl, wrench: &u.body_wrench };
        #[rustfmt::skip]
        step_accel_into(dm, passive, &x, dt, d, tau, &mut self.qdd, &mut self.q1, &mut self.v1, &mut self.act1, &mut self.fric)?;
        self.mode.copy_from_slice(&self.fric.mode_dof);
        self.vpost.copy_from_slice(&self.qdd);
        advance_step(dm, &s.q, &s.v, dt, &mut self.vpost, &mut self.q1, &mut self.v1);
        self.integration_jacobians(dm, s, dt);
        Ok(())
    }

    /// [`AdjointScratch::forward`] from what `step` recorded (q̈, v̂, q1), without replaying it; sets
    /// `dm.armature` = A + hD as the step did.
    #[allow(clippy::too_many_arguments)]
    fn load_record(
        &mut self,
        dm: &mut DynModel<f64>,
        passive: &Passive,
        s: &GenState,
        dt: f64,
        qdd: &[f64],
        vpost: &[f64],
        q1: &[f64],
        mode: &[FrictionMode],
    ) {
        for k in 0..dm.nv {
            dm.armature[k] = passive.armature(dm, k, dt);
        }
        self.mode.copy_from_slice(mode);
        self.qdd.copy_from_slice(qdd);
        self.vpost.copy_from_slice(vpost);
        self.q1.copy_from_slice(q1);
        self.integration_jacobians(dm, s, dt);
    }

    /// (J_q, J_v, K_v) of the multi-DoF joints' update at (q, v̂) (`advance_jacobians`).
    fn integration_jacobians(&mut self, dm: &DynModel<f64>, s: &GenState, dt: f64) {
        for j in 0..dm.parent.len() {
            let (qs, vs, jm) = (dm.q_start[j], dm.v_start[j], &dm.joint[j]);
            if jm.nv > 1 {
                let (qj, q1j) = (&s.q[qs..qs + jm.nq], &self.q1[qs..qs + jm.nq]);
                self.integ[j] = advance_jacobians(jm.kind, qj, &self.vpost[vs..vs + jm.nv], dt, q1j);
            }
        }
    }

    /// After [`AdjointScratch::forward`], with the output cotangent in (`gq1t`, `gv1`): the input's into `gqt`
    /// (tangent at q), `gv`, `lam` (= ḡ_u), and g_theta += ḡ_θ for the parameters `sel` (table indices).
    #[allow(clippy::too_many_arguments)]
    fn backward(
        &mut self,
        dm: &mut DynModel<f64>,
        d: &mut DynData<f64>,
        passive: &Passive,
        factor: &mut FactorTag,
        s: &GenState,
        dt: f64,
        sel: &[usize],
        g_theta: &mut [f64],
    ) -> Result<(), torsion_dynamics::DynError> {
        let h = dt;
        let (q, v) = (&s.q[..], &s.v[..]);
        // the integration map (q1, v1) = advance(q, v̂)
        for j in 0..dm.parent.len() {
            let (vs, n) = (dm.v_start[j], dm.joint[j].nv);
            if n == 1 {
                self.gvhat[vs] = h * self.gq1t[vs] + self.gv1[vs];
                self.gqt[vs] = self.gq1t[vs];
            } else if n > 1 {
                let (jq, jv, kv) = &self.integ[j];
                for c in 0..n {
                    let (mut a, mut b) = (0.0, 0.0);
                    for r in 0..n {
                        a += jv[r][c] * self.gq1t[vs + r] + kv[r][c] * self.gv1[vs + r];
                        b += jq[r][c] * self.gq1t[vs + r];
                    }
                    self.gvhat[vs + c] = a;
                    self.gqt[vs + c] = b;
                }
            }
        }
        self.gv.fill(0.0);
        for j in 0..dm.parent.len() {
            if dm.joint[j].kind != JointType::Free {
                continue;
            }
            let vs = dm.v_start[j];
            // the frame term v̂_l += h ω × v_l
            let (w, vl) = (Vec3::new(v[vs], v[vs + 1], v[vs + 2]), Vec3::new(v[vs + 3], v[vs + 4], v[vs + 5]));
            let g = Vec3::new(self.gvhat[vs + 3], self.gvhat[vs + 4], self.gvhat[vs + 5]);
            let (gw, gl) = (vl.cross(&g) * h, g.cross(&w) * h);
            for i in 0..3 {
                self.gv[vs + i] += gw[i];
                self.gv[vs + 3 + i] += gl[i];
            }
            if is_loose_free_joint(dm, j) {
                self.gyro_vjp(dm, j, v, h);
            }
        }
        // v̂ = v + h q̈
        for k in 0..dm.nv {
            self.gv[k] += self.gvhat[k];
            self.gqdd[k] = h * self.gvhat[k];
        }
        // λ = M̃⁻¹ ḡ_q̈ (dm.armature = A + hD): with the step's factorization when `data` still holds it, else ABA
        // with zero velocity and gravity (which leaves the same factorization)
        let factored = factor.holds(q, &dm.armature);
        if factored {
            aba_solve_factored_into(dm, d, &self.gqdd, &mut self.lam)?;
        } else {
            let g0 = dm.gravity;
            dm.gravity = Vec3::zeros();
            let res = aba_into(dm, q, &self.zero, &self.gqdd, d, &mut self.lam);
            dm.gravity = g0;
            res?;
            factor.set(q, &dm.armature);
        }
        // the stuck DoFs' velocity constraints v_S + h q̈_S = 0 (`JointFriction::project_adjoint`): λ_S = 0
        self.fric.prepare(dm, d, &self.mode)?;
        self.fric.project_adjoint(&mut self.lam, &mut self.gv, h);
        for k in 0..dm.nv {
            self.gv[k] -= passive.damping(dm, k) * self.lam[k];
            if let Some((_, kk, _)) = passive.spring[k] {
                self.gqt[k] -= kk * self.lam[k];
            }
        }
        if factored {
            // `d.x_pc` is at q already (the factorization's ABA)
            regressor_vjp_pass(dm, v, &self.qdd, &self.lam, d, &mut self.rnea);
        } else {
            regressor_vjp_into(dm, q, v, &self.qdd, &self.lam, d, &mut self.rnea)?;
        }
        for k in 0..dm.nv {
            self.gqt[k] -= self.rnea.dq[k];
            self.gv[k] -= self.rnea.dv[k];
        }
        if !sel.is_empty() {
            // once per joint, not per anchor entry
            for (j, a) in self.anchor.iter_mut().enumerate() {
                *a = self.rnea.anchor_grads(dm, d, j);
            }
        }
        for (g, &i) in g_theta.iter_mut().zip(sel) {
            *g += match self.kinds[i] {
                ParamKind::BodyMass(b) => -self.rnea.pi[b][0],
                ParamKind::BodyInertia(b, e) => -self.rnea.pi[b][PI_OF_INERTIA[e]] + self.gyro_i[b][e],
                ParamKind::AnchorParent(j, a) => -self.anchor[j].0[a],
                ParamKind::AnchorChild(j, a) => -self.anchor[j].1[a] + self.gyro_t[j][a],
                ParamKind::JointPassive(j, f) => self.joint_passive_grad(dm, passive, v, h, j, f),
                // springs (joint_spring) are XPBD's; contact material: the contact solvers; cables: not this path
                _ => 0.0,
            };
        }
        Ok(())
    }

    /// ∂L/∂(damping, armature, frictionloss of joint j) (f = 0, 1, 2) from the residual M̃ q̈ + c − τ − τ_fric = 0
    /// with M̃ = M + A + hD, τ ∋ −D v and τ_fric,k = −s f on a sliding DoF: summed over the joint's DoFs,
    /// −λ_k (v_k + h q̈_k), −λ_k q̈_k, −λ_k s (zero on stuck DoFs, where λ_k = 0, and without friction).
    fn joint_passive_grad(&self, dm: &DynModel<f64>, passive: &Passive, v: &[f64], h: f64, j: usize, f: usize) -> f64 {
        let vs = dm.v_start[j];
        (vs..vs + dm.joint[j].nv)
            .map(|k| match f {
                0 if passive.damping_on => -self.lam[k] * (v[k] + h * self.qdd[k]),
                1 => -self.lam[k] * self.qdd[k],
                2 => match self.mode[k] {
                    FrictionMode::Slide(sg) => -self.lam[k] * sg,
                    _ => 0.0,
                },
                _ => 0.0,
            })
            .sum()
    }

    /// The loose body of free joint j: v̂ ← g(v_j, v̂_j; I_c, c) (`gyroscopic_joint`) transposed by 21 dual
    /// directions (v_j, v̂_j before the update, the 6 COM inertia entries, the 3 child-anchor entries: c = −R t in
    /// the joint frame). Replaces `gvhat`'s rows by the cotangent before the update, adds to `gv`, fills `gyro_*`.
    fn gyro_vjp(&mut self, dm: &DynModel<f64>, j: usize, v: &[f64], h: f64) {
        let vs = dm.v_start[j];
        let (ic, c) = loose_body_inertia(dm, j);
        let rot = dm.x_jc[j].rot;
        let gbar: [f64; 6] = std::array::from_fn(|i| self.gvhat[vs + i]);
        let vpre: [f64; 6] = std::array::from_fn(|i| v[vs + i] + h * self.qdd[vs + i]);
        let hd = Dual64::from(h);
        let mut gpre = [0.0; 6];
        for k in 0..21 {
            let mut vd: [Dual64; 6] = std::array::from_fn(|i| Dual64::from(v[vs + i]));
            let mut xd: [Dual64; 6] = std::array::from_fn(|i| Dual64::from(vpre[i]));
            let mut icd = ic.map(Dual64::from);
            let mut cd = c.map(Dual64::from);
            if k < 6 {
                vd[k].eps = 1.0;
                // v enters v̂ = v + h q̈ too, but that path is the caller's: here only g's own v argument
            } else if k < 12 {
                xd[k - 6].eps = 1.0;
            } else if k < 18 {
                let (r, cc) = INERTIA_IDX[k - 12];
                let mut e = nalgebra::Matrix3::<f64>::zeros();
                e[(r, cc)] = 1.0;
                e[(cc, r)] = 1.0;
                let de = rot * e * rot.transpose();
                for (a, b) in icd.iter_mut().zip(de.iter()) {
                    a.eps = *b;
                }
            } else {
                let dc = -rot.column(k - 18);
                for (a, b) in cd.iter_mut().zip(dc.iter()) {
                    a.eps = *b;
                }
            }
            gyroscopic_joint(&icd, &cd, &vd, hd, &mut xd);
            let dot: f64 = (0..6).map(|i| xd[i].eps * gbar[i]).sum();
            match k {
                0..6 => self.gv[vs + k] += dot,
                6..12 => gpre[k - 6] = dot,
                12..18 => self.gyro_i[dm.child[j]][k - 12] = dot,
                _ => self.gyro_t[j][k - 18] = dot,
            }
        }
        self.gvhat[vs..vs + 6].copy_from_slice(&gpre);
    }
}

/// (J_q, J_v, K_v) of one joint's position / velocity update (`advance_jacobians`), `[r][c]` indexing.
type IntegrationJacobians = ([[f64; 6]; 6], [[f64; 6]; 6], [[f64; 6]; 6]);

/// [A | B] of one step and the buffers to compute it (allocate once per model with [`TransitionJacobians::new`]).
pub struct TransitionJacobians {
    /// [A | B], 2nv × (3nv + nu): rows (tangent q', v'), columns (tangent q, v, then the controls: the nv
    /// generalized forces and the nu actuator `ctrl`s, `control_dim`)
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
    /// the step's dry-friction solve (its stick set projects the derivatives)
    fric: JointFriction<f64>,
}

impl TransitionJacobians {
    pub fn new(model: &Model) -> Self {
        let nv = model.nv();
        TransitionJacobians {
            ab: DMatrix::zeros(2 * nv, 3 * nv + model.nu()),
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
            fric: JointFriction::new(nv),
        }
    }
    /// A = ∂(q', v')/∂(q, v), 2nv × 2nv.
    pub fn a(&self) -> nalgebra::DMatrixView<'_, f64> {
        let n2 = self.ab.nrows();
        self.ab.columns(0, n2)
    }
    /// B = ∂(q', v')/∂(u, ctrl), 2nv × (nv + nu).
    pub fn b(&self) -> nalgebra::DMatrixView<'_, f64> {
        let n2 = self.ab.nrows();
        self.ab.columns(n2, self.ab.ncols() - n2)
    }
}

/// [A | B] analytically. With M̃ = M + A + hD and q̈ = M̃⁻¹(u − c − Dv − K(q − r)):
/// ∂v1/∂q = h ∂q̈/∂q, ∂v1/∂v = I + h ∂q̈/∂v, ∂v1/∂u = h M̃⁻¹, and per joint q1 = q ⊕ h v1 gives
/// ∂q1/∂q = J_q + J_w h ∂v1/∂q, ∂q1/∂(v, u) = J_w h ∂v1/∂(v, u) (J_q = J_w = 1 for 1-DoF joints). `dm` is the
/// step's model: its armature is set to A + hD as `step_generic_into` does, and its damping (zero for the step,
/// which applies −Dv explicitly) is D only while RNEA's ∂τ/∂v needs it. No heap allocation without fluid forces
/// (with them: ∂τ_fluid/∂(q, v) through a dual copy of the model per call).
#[allow(clippy::too_many_arguments)]
fn state_columns_into(
    dm: &mut DynModel<f64>,
    d: &mut DynData<f64>,
    passive: &Passive,
    s: &GenState,
    u: &[f64],
    ctrl: &[f64],
    dt: f64,
    out: &mut TransitionJacobians,
) -> Result<(), torsion_dynamics::DynError> {
    let nv = dm.nv;
    let TransitionJacobians { ab: jac, q1, ad, tau, v1, integ, multi, fric } = out;
    for k in 0..nv {
        dm.armature[k] = passive.armature(dm, k, dt);
        dm.damping[k] = passive.damping(dm, k);
        tau[k] = u[k];
        if let Some((iq, kk, r)) = passive.spring[k] {
            tau[k] -= (s.q[iq] - r) * kk;
        }
    }
    fluid_forces_into(&passive.fluid, dm, &s.q, &s.v, d, tau)?;
    joint_actuator_forces_into(&dm.cables, &s.q, &s.v, &s.act, ctrl, tau)?;
    // dry friction: its force at the step's solution joins τ (`v1` as scratch for q̈ without it)
    let friction = dm.dof_frictionloss.iter().any(|&f| f > 0.0);
    if friction {
        let res = aba_into(dm, &s.q, &s.v, tau, d, v1).and_then(|_| fric.solve_into(dm, d, &s.v, dt, v1));
        if res.is_err() {
            dm.damping.iter_mut().for_each(|x| *x = 0.0);
        }
        res?;
        for k in 0..nv {
            tau[k] += fric.force[k];
        }
    }
    let res = aba_derivatives_into(dm, &s.q, &s.v, tau, d, ad);
    dm.damping.iter_mut().for_each(|x| *x = 0.0);
    res?;
    // joint actuators' bias (servos): ∂q̈/∂(q, v) += M̃⁻¹ ∂τ_act/∂(q, v), one column each (1-DoF joints:
    // the tangent index of q is the v index)
    joint_actuator_derivatives(&dm.cables, &s.q, &s.v, ctrl, |_, iv, [dq, dv, _]| {
        for r in 0..nv {
            let x = ad.d_dtau[(r, iv)];
            ad.d_dq[(r, iv)] += dq * x;
            ad.d_dv[(r, iv)] += dv * x;
        }
    });
    if passive.fluid.on() {
        // explicit fluid force: ∂q̈/∂(q, v) += M̃⁻¹ ∂τ_fluid/∂(q, v), the latter by duals of the same kernel
        // (allocates: a dual copy of the model per call)
        let (mut fq, mut fv) = (DMatrix::zeros(nv, nv), DMatrix::zeros(nv, nv));
        fluid_derivatives(&passive.fluid, &dm.lift(), &s.q, &s.v, fq.as_mut_slice(), fv.as_mut_slice())?;
        ad.d_dq += &ad.d_dtau * fq;
        ad.d_dv += &ad.d_dtau * fv;
    }
    if friction {
        // stuck DoFs: q̈ on the constraint v_S + h q̈_S = 0 (sliding ones: a constant force)
        fric.project_jacobian(ad, dt);
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
    // joint actuators (no state): ctrl enters only through τ, so ∂x'/∂ctrl_a = ∂x'/∂u_iv · ∂τ_iv/∂ctrl_a (zero
    // where ctrlrange or forcerange clamps)
    let js = jac.as_mut_slice();
    js[3 * nv * n2..].fill(0.0);
    joint_actuator_derivatives(&dm.cables, &s.q, &s.v, ctrl, |a, iv, [_, _, g]| {
        let (src, dst) = js.split_at_mut((3 * nv + a) * n2);
        for (o, &x) in dst[..n2].iter_mut().zip(&src[(2 * nv + iv) * n2..(2 * nv + iv + 1) * n2]) {
            *o = x * g;
        }
    });
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
/// control columns ncu = nv + nu (generalized forces, then the actuators' controls).
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

/// The actuators' controls, zeros when `u.ctrl` is empty.
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
    pub fn step_jacobians_dual(&self, at: StepPoint, sel: &ParamSelection) -> Result<StepJacobians, SolverError> {
        self.check(at.model, at.s, at.u, at.dt)?;
        let jac = self.jacobian_dual(at, sel)?;
        Ok(split_jacobian(&jac, Dims::of(at.model), sel.len()))
    }

    /// C alone: the selected θ columns of `step_jacobians` (rows: tangent q, v, act), without the state and
    /// control columns — for one-step (teacher-forced) identification, where A and B are not needed. Models with
    /// cables or the linear contact model: one Dual64 pass per parameter (the same passes `step_jacobians` makes
    /// for C) instead of one per input direction.
    pub fn param_jacobian(&self, at: StepPoint, sel: &ParamSelection) -> Result<DMatrix<f64>, SolverError> {
        let StepPoint { model, s, u, dt } = at;
        self.check(model, s, u, dt)?;
        let n = Dims::of(model);
        if !model.cables.is_empty() || model.na() > 0 || model.tensegrity_contact.is_some() || !u.body_wrench.is_empty()
        {
            let mut jac = DMatrix::zeros(n.nx, n.nx + n.ncu + sel.len());
            self.theta_columns_dual(at, sel, &mut jac)?;
            return Ok(jac.columns(n.nx + n.ncu, sel.len()).into_owned());
        }
        let (jac, _) = self.jacobian(at, sel)?;
        Ok(jac.columns(jac.ncols() - sel.len(), sel.len()).into_owned())
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
        self.check_integrator(model)?;
        let (dm, _, _) = dyn_model_f64(model).map_err(Self::dyn_err)?;
        let data = DynData::new(&dm);
        let adj = AdjointScratch::new(model, &dm);
        let nv = model.nv();
        Ok(FeatherstoneWorkspace {
            dm,
            data,
            cache: DynCache::new(model),
            passive: self.damping(model),
            sc: StepScratch::new(model.nq(), nv, model.na()),
            adj,
            factor: FactorTag { valid: false, q: Vec::with_capacity(model.nq()), armature: Vec::with_capacity(nv) },
        })
    }
    /// Every buffer at its size for `model` (body wrenches: at the first step that has them).
    fn record(&self, model: &Model) -> FeatherstoneRecord {
        let (nq, nv) = (model.nq(), model.nv());
        FeatherstoneRecord {
            s: GenState::with_act(Vec::with_capacity(nq), Vec::with_capacity(nv), Vec::with_capacity(model.na())),
            filled: false,
            u: Control {
                joint_torque: Vec::with_capacity(nv),
                ctrl: Vec::with_capacity(model.nu()),
                body_wrench: vec![],
            },
            dt: 0.0,
            derived: false,
            qdd: vec![0.0; nv],
            vpost: vec![0.0; nv],
            q1: vec![0.0; nq],
            factor: vec![0.0; aba_factor_len(model.joint_type.iter().map(|t| t.dof()))],
            fric_mode: vec![FrictionMode::Off; nv],
        }
    }
    fn step(
        &self,
        model: &Model,
        s: &GenState,
        u: &Control,
        dt: f64,
        out: &mut GenState,
        ws: &mut FeatherstoneWorkspace,
        mut rec: Option<&mut FeatherstoneRecord>,
    ) -> Result<StepInfo, SolverError> {
        self.check(model, s, u, dt)?;
        if ws.sc.tau.len() != model.nv() {
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
        let FeatherstoneWorkspace { dm, data, passive, sc, factor, .. } = ws;
        let StepScratch { tau, acc, fric, rk } = sc;
        let x = StepIn { q: &s.q, v: &s.v, act: &s.act, u: &u.joint_torque, ctrl: &u.ctrl, wrench: &u.body_wrench };
        if passive.integrator == Integrator::Rk4 {
            // the record keeps the inputs only: RK4's derivatives take the dual passes (`euler_like`)
            factor.valid = false;
            rk4_step_into(dm, passive, &x, dt, data, rk, tau, acc, fric, &mut out.q, &mut out.v, &mut out.act)
                .map_err(Self::dyn_err)?;
            if let Some(r) = rec.as_deref_mut() {
                r.derived = false;
            }
            return self.finish_step(s, u, dt, out, rec, StepInfo::new("featherstone"));
        }
        // `step_generic_into` in its two halves, so that a record keeps q̈
        step_accel_into(dm, passive, &x, dt, data, tau, acc, &mut out.q, &mut out.v, &mut out.act, fric)
            .map_err(Self::dyn_err)?;
        factor.set(&s.q, &dm.armature);
        if let Some(r) = rec.as_deref_mut() {
            r.qdd.clone_from(acc);
            r.fric_mode.clone_from(&fric.mode_dof);
            r.factor.resize(aba_factor_len(dm.joint.iter().map(|j| j.nv)), 0.0);
            aba_factor_save(dm, data, &mut r.factor).map_err(Self::dyn_err)?;
            r.derived = true;
        }
        let info = StepInfo { iterations: fric.iterations, converged: fric.converged, ..StepInfo::new("featherstone") };
        advance_step(dm, &s.q, &s.v, dt, acc, &mut out.q, &mut out.v);
        if let Some(r) = rec.as_deref_mut() {
            r.vpost.clone_from(&ws.sc.acc);
            r.q1.clone_from(&out.q);
        }
        self.finish_step(s, u, dt, out, rec, info)
    }
}

impl FeatherstoneSolver {
    /// The end of `step`: the finite check, no warm start (no contacts), the record's inputs.
    fn finish_step(
        &self,
        s: &GenState,
        u: &Control,
        dt: f64,
        out: &mut GenState,
        rec: Option<&mut FeatherstoneRecord>,
        info: StepInfo,
    ) -> Result<StepInfo, SolverError> {
        if out.q.iter().chain(&out.v).chain(&out.act).any(|x| !x.is_finite()) {
            return Err(SolverError::NonFinite { solver: "featherstone", what: "(q or v)".into() });
        }
        out.warm.clear();
        if let Some(r) = rec {
            // field by field: a derived `clone_from` reallocates; these reuse the record's buffers
            r.s.q.clone_from(&s.q);
            r.s.v.clone_from(&s.v);
            r.s.act.clone_from(&s.act);
            r.filled = true;
            r.u.joint_torque.clone_from(&u.joint_torque);
            r.u.ctrl.clone_from(&u.ctrl);
            r.u.body_wrench.clone_from(&u.body_wrench);
            r.dt = dt;
        }
        Ok(info)
    }
}

impl DiffSolver for FeatherstoneSolver {
    /// Reverse mode in O(n) per step whatever the selection (`AdjointScratch`: the step's cotangent through the
    /// integration map, λ = M̃⁻ᵀ ḡ_q̈, then one reverse sweep of inverse dynamics for q, v and every parameter);
    /// no heap allocation. Models with cables or fluid forces, RK4, implicitfast with actuators (`euler_like`): Jᵀ ḡ
    /// with the Jacobian of `step_jacobians` (dual passes of the same generic step).
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
        ws: &mut FeatherstoneWorkspace,
    ) -> Result<(), SolverError> {
        let s = rec.input()?;
        check_grad_sizes("featherstone", self.control_dim(model), g_u, sel, g_theta)?;
        if self.reverse_mode(model, ws, sel)? {
            let (u, dt) = (&rec.u, rec.dt);
            self.check(model, s, u, dt)?;
            if g_out.q.len() != model.nq() || g_out.v.len() != model.nv() || g_s.q.len() != model.nq() {
                return Err(SolverError::BadInput {
                    solver: "featherstone",
                    problem: format!(
                        "step_vjp gradients: g_out has nq {}, nv {}, g_s nq {}; the model needs {}, {}",
                        g_out.q.len(),
                        g_out.v.len(),
                        g_s.q.len(),
                        model.nq(),
                        model.nv()
                    ),
                });
            }
            ws.refresh(model, self.options.joint_damping).map_err(Self::dyn_err)?;
            let FeatherstoneWorkspace { dm, data, passive, sc, adj, factor, .. } = ws;
            let sized = rec.qdd.len() == model.nv() && rec.q1.len() == model.nq() && rec.fric_mode.len() == model.nv();
            if rec.derived && sized {
                adj.load_record(dm, passive, s, dt, &rec.qdd, &rec.vpost, &rec.q1, &rec.fric_mode);
                // the step's factorization of M̃ (a tape's record: `data` holds another step's)
                aba_factor_load(dm, &rec.factor, data).map_err(Self::dyn_err)?;
                factor.set(&s.q, &dm.armature);
            } else {
                adj.forward(dm, data, passive, &mut sc.tau, s, u, dt).map_err(Self::dyn_err)?;
                factor.set(&s.q, &dm.armature);
            }
            ambient_to_tangent_into(dm, &adj.q1, &g_out.q, &mut adj.gq1t);
            adj.gv1.copy_from_slice(&g_out.v);
            adj.backward(dm, data, passive, factor, s, dt, &sel.indices, g_theta).map_err(Self::dyn_err)?;
            if !u.body_wrench.is_empty() {
                // ∂(λᵀ τ_ext)/∂q: the wrenches are fixed in the world while the bodies move
                forward_kinematics(dm, &s.q, data);
                wrench_state_vjp_into(dm, data, &u.body_wrench, &adj.lam, &mut adj.gqt).map_err(Self::dyn_err)?;
            }
            tangent_to_ambient_into(dm, &s.q, &adj.gqt, &mut adj.gq_amb);
            for (a, b) in g_s.q.iter_mut().zip(&adj.gq_amb) {
                *a += b;
            }
            for (a, b) in g_s.v.iter_mut().zip(&adj.gv) {
                *a += b;
            }
            for (a, b) in g_u.iter_mut().zip(&adj.lam) {
                *a += b;
            }
            return Ok(());
        }
        let (jac, q1) = self.jacobian(StepPoint::new(model, s, &rec.u, rec.dt), sel)?;
        let j = split_jacobian(&jac, Dims::of(model), sel.len());
        let mut sc = ProductScratch::default();
        transposed_jacobian_product_with(model, &s.q, &q1, &j, g_out, g_s, g_u, g_theta, &mut sc);
        Ok(())
    }

    fn step_jacobians_into(
        &self,
        model: &Model,
        s: &GenState,
        u: &Control,
        dt: f64,
        sel: &ParamSelection,
        ws: &mut FeatherstoneWorkspace,
        out: &mut StepJacobians,
    ) -> Result<(), SolverError> {
        self.check(model, s, u, dt)?;
        // with body wrenches, A takes the dual passes (the analytic A has no ∂τ_ext/∂q)
        if self.reverse_mode(model, ws, sel)? && u.body_wrench.is_empty() {
            // A, B analytic (`state_columns_into`); C row by row: row r of C is the parameter VJP of e_r
            let (nv, k) = (model.nv(), sel.len());
            let shapes =
                [(out.a.shape(), (2 * nv, 2 * nv)), (out.b.shape(), (2 * nv, nv)), (out.c.shape(), (2 * nv, k))];
            if let Some((got, want)) = shapes.iter().find(|(g, w)| g != w) {
                return Err(SolverError::BadInput {
                    solver: "featherstone",
                    problem: format!(
                        "step_jacobians_into buffers: a {got:?} where {want:?} is needed (`StepJacobians::for_solver`)"
                    ),
                });
            }
            ws.refresh(model, self.options.joint_damping).map_err(Self::dyn_err)?;
            let FeatherstoneWorkspace { dm, data, passive, sc, adj, factor, .. } = ws;
            factor.valid = false;
            state_columns_into(dm, data, passive, s, &u.joint_torque, &u.ctrl, dt, &mut adj.tj)
                .map_err(Self::dyn_err)?;
            out.a.copy_from(&adj.tj.a());
            out.b.copy_from(&adj.tj.b());
            if k > 0 {
                adj.forward(dm, data, passive, &mut sc.tau, s, u, dt).map_err(Self::dyn_err)?;
                factor.set(&s.q, &dm.armature);
                for r in 0..2 * nv {
                    adj.gq1t.fill(0.0);
                    adj.gv1.fill(0.0);
                    if r < nv {
                        adj.gq1t[r] = 1.0;
                    } else {
                        adj.gv1[r - nv] = 1.0;
                    }
                    let mut row = std::mem::take(&mut adj.row);
                    row[..k].fill(0.0);
                    let res = adj.backward(dm, data, passive, factor, s, dt, &sel.indices, &mut row[..k]);
                    for (c, x) in row[..k].iter().enumerate() {
                        out.c[(r, c)] = *x;
                    }
                    adj.row = row;
                    res.map_err(Self::dyn_err)?;
                }
            }
            return Ok(());
        }
        let (jac, _) = self.jacobian(StepPoint::new(model, s, u, dt), sel)?;
        out.assign(&split_jacobian(&jac, Dims::of(model), sel.len()));
        Ok(())
    }

    fn wrench_vjp(
        &self,
        model: &Model,
        rec: &FeatherstoneRecord,
        g_u: &[f64],
        g_w: &mut [f64],
        ws: &mut FeatherstoneWorkspace,
    ) -> Result<(), SolverError> {
        let s = rec.input()?;
        ws.refresh(model, self.options.joint_damping).map_err(Self::dyn_err)?;
        wrench_vjp("featherstone", &ws.dm, &mut ws.data, &s.q, g_u, g_w)
    }

    /// one generalized force per DoF (`ControlLayout::PerDof`), then one control per actuator (nu: joint and
    /// cable transmissions)
    fn control_dim(&self, model: &Model) -> usize {
        model.nv() + model.nu()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generalized::tests::loss_central_differences;
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

    /// The models of the reverse-mode checks: the two-link arm (damped, one sprung joint, armature), the
    /// free + ball + slide + hinge tree (damped, armature), a loose spinning body (implicit gyroscopic update) and
    /// the Baxter arm of example-robot-data; each with a generic state, control and output cotangent.
    fn reverse_cases() -> Vec<(&'static str, Model, GenState, Control, GenState)> {
        let mut arm = two_link_arm(0.8, 0.5, 1.0, torsion_math::Vec3::new(0.0, -9.8, 0.0), 0.01).unwrap();
        arm.joint_damping = vec![0.3, 0.1];
        arm.joint_armature = vec![0.02, 0.01];
        arm.joint_stiffness = vec![2.0, 0.0];
        arm.joint_springref = vec![0.1, 0.0];
        let mut tree = torsion_model::builder::floating_tree();
        for (j, (d, a)) in tree.joint_damping.iter_mut().zip(tree.joint_armature.iter_mut()).enumerate() {
            (*d, *a) = (0.05 + 0.02 * j as f64, 0.01 * j as f64);
        }
        let xml = r#"<mujoco><option gravity="0 0 -9.81"/><worldbody><body name="b" pos="0 0 1"><freejoint/>
            <geom type="box" size="0.2 0.1 0.05" pos="0.03 -0.02 0.01" mass="1.5"/>
            <geom type="sphere" size="0.05" pos="-0.1 0.05 0" mass="0.4"/></body></worldbody></mujoco>"#;
        let loose = torsion_model::io::mjcf::load_mjcf_str(xml, "loose.xml", None).unwrap();
        let baxter = torsion_model::io::robots::baxter_left_arm().expect("example-robot-data");
        let mut out = vec![];
        for (name, m, seed) in
            [("two-link arm", arm, 1), ("floating tree", tree, 9), ("loose body", loose, 4), ("baxter", baxter, 3)]
        {
            let q = if name == "loose body" {
                let r = torsion_math::Quat::exp(&torsion_math::Vec3::new(0.4, -0.2, 0.7)).to_array();
                vec![0.1, -0.2, 1.0, r[0], r[1], r[2], r[3]]
            } else if name == "two-link arm" {
                vec![0.4, -0.7]
            } else {
                torsion_model::builder::example_configuration(&m, seed)
            };
            let nv = m.nv();
            let v: Vec<f64> = (0..nv).map(|i| ((i * 7 + 3) % 11) as f64 / 2.0 - 2.5).collect();
            let u: Vec<f64> = (0..nv).map(|i| ((i * 5 + 1) % 7) as f64 / 3.0 - 1.0).collect();
            let gq: Vec<f64> = (0..m.nq()).map(|i| ((i * 3 + 2) % 5) as f64 / 2.0 - 1.0).collect();
            let gv: Vec<f64> = (0..nv).map(|i| ((i * 11 + 4) % 7) as f64 / 3.0 - 1.0).collect();
            out.push((name, m, GenState::new(q, v), Control::from_torques(&u), GenState::new(gq, gv)));
        }
        out
    }

    fn fmt(e: &[f64]) -> String {
        e.iter().map(|x| format!("{x:.1e}")).collect::<Vec<_>>().join(" / ")
    }

    // the normwise relative error of docs/gradients.md
    use torsion_diff::rel_err as nrel;

    /// The reverse-mode `step_vjp` (every parameter, the state, the controls) equals Jᵀ ḡ with J the all-dual
    /// reference Jacobian (`step_jacobians_dual`), and `step_jacobians_into`'s C (built row by row from the same
    /// reverse sweep) and A, B equal the reference, at two successive calls on one workspace.
    #[test]
    fn reverse_mode_vjp_matches_dual_jacobian_transpose() {
        let solver = FeatherstoneSolver::default();
        let dt = 0.01;
        for (name, m, s, u, g_out) in reverse_cases() {
            let sel = ParamSelection::all(&m);
            let k = sel.len();
            let dual = solver.step_jacobians_dual(StepPoint::new(&m, &s, &u, dt), &sel).unwrap();
            let mut o = s.clone();
            let mut ws = solver.workspace(&m).unwrap();
            solver.step(&m, &s, &u, dt, &mut o, &mut ws, None).unwrap();
            let (mut rs, mut ru, mut rt) = (solver.zero_grad(&m), vec![0.0; m.nv()], vec![0.0; k]);
            let mut sc = ProductScratch::default();
            transposed_jacobian_product_with(&m, &s.q, &o.q, &dual, &g_out, &mut rs, &mut ru, &mut rt, &mut sc);
            let mut rec = solver.record(&m);
            let mut jac = StepJacobians::for_solver(&solver, &m, &sel);
            for _ in 0..2 {
                solver.step(&m, &s, &u, dt, &mut o, &mut ws, Some(&mut rec)).unwrap();
                let (mut gs, mut gu, mut gt) = (solver.zero_grad(&m), vec![0.0; m.nv()], vec![0.0; k]);
                solver.step_vjp(&m, &rec, &g_out, &mut gs, &mut gu, &sel, &mut gt, &mut ws).unwrap();
                let e = [nrel(&gt, &rt), nrel(&gs.q, &rs.q), nrel(&gs.v, &rs.v), nrel(&gu, &ru)];
                solver.step_jacobians_into(&m, &s, &u, dt, &sel, &mut ws, &mut jac).unwrap();
                let ej = [
                    nrel(jac.a.as_slice(), dual.a.as_slice()),
                    nrel(jac.b.as_slice(), dual.b.as_slice()),
                    nrel(jac.c.as_slice(), dual.c.as_slice()),
                ];
                eprintln!("{name} ({k} parameters): VJP vs Jᵀḡ θ/q/v/u {}; A/B/C vs duals {}", fmt(&e), fmt(&ej));
                assert!(e.iter().chain(&ej).all(|x| *x < 1e-10), "{name}: {e:?} {ej:?}");
                // a workspace that never stepped (no factorization of M̃ to reuse): the same gradient
                let mut fresh = solver.workspace(&m).unwrap();
                let (mut fs, mut fu, mut ft) = (solver.zero_grad(&m), vec![0.0; m.nv()], vec![0.0; k]);
                solver.step_vjp(&m, &rec, &g_out, &mut fs, &mut fu, &sel, &mut ft, &mut fresh).unwrap();
                let ef = [nrel(&ft, &gt), nrel(&fs.q, &gs.q), nrel(&fs.v, &gs.v), nrel(&fu, &gu)];
                assert!(ef.iter().all(|x| *x < 1e-12), "{name}: fresh workspace {ef:?}");
            }
        }
    }

    /// The reverse-mode parameter, state and control gradients of L = ḡᵀ s' against central differences of the
    /// step (parameters through `Model::params_set`, the state through `retract`). Every joint damped and with
    /// armature (`joint_damping[·]`, `joint_armature[·]` in the selection); friction loss stays 0 here (a one-sided
    /// parameter at its bound: `joint_friction_*` tests).
    #[test]
    fn reverse_mode_vjp_matches_central_differences() {
        let solver = FeatherstoneSolver::default();
        let dt = 0.01;
        for (name, mut m, s, u, g_out) in reverse_cases() {
            for j in 0..m.joint_count() {
                m.joint_damping[j] = m.joint_damping[j].max(0.04 + 0.01 * j as f64);
                m.joint_armature[j] = m.joint_armature[j].max(0.01);
            }
            let mut sel = ParamSelection::dynamics(&m);
            let kinds = m.param_table().kinds;
            sel.indices.retain(|&i| !matches!(kinds[i], ParamKind::JointPassive(_, 2)));
            assert!(sel.indices.iter().any(|&i| matches!(kinds[i], ParamKind::JointPassive(_, 0 | 1))));
            let mut ws = solver.workspace(&m).unwrap();
            let mut rec = solver.record(&m);
            let mut o = s.clone();
            solver.step(&m, &s, &u, dt, &mut o, &mut ws, Some(&mut rec)).unwrap();
            let (mut gs, mut gu, mut gt) = (solver.zero_grad(&m), vec![0.0; m.nv()], vec![0.0; sel.len()]);
            solver.step_vjp(&m, &rec, &g_out, &mut gs, &mut gu, &sel, &mut gt, &mut ws).unwrap();
            let [fd_t, fd_s, fd_u] = loss_central_differences(&solver, &m, &s, &u, dt, &sel, &g_out, 1e-6);
            let gst = solver.grad_to_tangent(&m, &s, &gs);
            let e = [nrel(&gt, &fd_t), nrel(&gst, &fd_s), nrel(&gu, &fd_u)];
            eprintln!("{name} ({} parameters): reverse mode θ/s/u vs central differences {}", sel.len(), fmt(&e));
            assert!(e.iter().all(|x| *x < 1e-6), "{name}: {e:?}");
        }
    }

    /// External body wrenches (issue 13 item 6) on the floating tree and the loose body: the reverse-mode state and
    /// control gradients (with ∂(λᵀ τ_ext)/∂q), `wrench_vjp` and the dual-pass A against central differences; a
    /// wrench on a free body equals the generalized force J_bᵀ w applied as u.
    #[test]
    fn body_wrench_gradients_match_central_differences() {
        let solver = FeatherstoneSolver::default();
        for (name, m, s, u0, g_out) in
            reverse_cases().into_iter().filter(|c| c.0 == "floating tree" || c.0 == "loose body")
        {
            let w: Vec<f64> = (0..6 * m.body_count()).map(|i| ((i * 7 % 11) as f64 - 5.0) * 0.3).collect();
            let (mut o, mut o0) = (s.clone(), s.clone());
            solver
                .step(&m, &s, &u0.clone().with_body_wrench(&w), 0.01, &mut o, &mut solver.workspace(&m).unwrap(), None)
                .unwrap();
            solver.step(&m, &s, &u0, 0.01, &mut o0, &mut solver.workspace(&m).unwrap(), None).unwrap();
            assert!(o.v.iter().zip(&o0.v).any(|(a, b)| (a - b).abs() > 1e-3), "{name}: the wrenches act");
            let e = crate::generalized::tests::wrench_gradient_errors(&solver, &m, &s, &u0, &w, &g_out, 1e-5);
            assert!(e.iter().all(|x| *x < 1e-6), "{name}: {e:?}");
        }
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
        let du = solver.step_jacobians_dual(StepPoint::new(&m, &s0, &u, 0.01), &sel).unwrap();
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

    /// A hinge–slide–hinge chain with a position servo (kp, kv, gear 2, ctrlrange), a velocity servo (forcerange)
    /// and a geared motor (ctrlrange, forcerange): the analytic A and B (B in (u, ctrl) space) equal the all-dual
    /// reference and central differences, inside the clamps and just outside them, where the clamped actuator's
    /// ctrl column (and a saturated servo's bias terms) are zero (docs/gradients.md "Actuators").
    #[test]
    fn joint_actuator_jacobians_match_duals_and_finite_differences() {
        let xml = r#"<mujoco><option timestep="0.01"/><worldbody>
            <body name="a"><joint name="h1" axis="0 1 0" damping="0.2"/>
            <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.05" mass="1"/>
            <body pos="0.5 0 0"><joint name="s" type="slide" axis="1 0 0"/><geom size=".1" mass="0.5"/>
            <body><joint name="h2" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 0 0 -0.4" size="0.04" mass="0.7"/>
            </body></body></body></worldbody>
            <actuator><position name="p" joint="h1" kp="20" kv="3" gear="2" ctrlrange="-1 1"/>
            <velocity name="v" joint="s" kv="4" forcerange="-5 5"/>
            <motor name="m" joint="h2" gear="1.5" ctrlrange="-2 2" forcerange="-1 1"/></actuator></mujoco>"#;
        let m = torsion_model::io::mjcf::load_mjcf_str(xml, "servo.xml", None).unwrap();
        assert_eq!((m.nv(), m.nu(), m.na()), (3, 3, 0));
        let solver = FeatherstoneSolver::default();
        let (dt, tq) = (0.01, [0.1, -0.2, 0.05]);
        let next = |s: &GenState, c: &[f64]| {
            let mut o = s.clone();
            let mut ws = solver.workspace(&m).unwrap();
            let u = Control::with_ctrl(&c[..3], &c[3..]);
            solver.step(&m, s, &u, dt, &mut o, &mut ws, None).unwrap();
            o
        };
        // (v, ctrl, which ctrl columns must vanish): inside all clamps; p's ctrl just above its range; m's force
        // just above its range; the velocity servo's force just below −5 (its bias saturated too)
        let cases: [([f64; 3], [f64; 3], [bool; 3]); 4] = [
            ([0.3, 0.2, -0.4], [0.3, 0.5, 0.4], [false; 3]),
            ([0.3, 0.2, -0.4], [1.001, 0.5, 0.4], [true, false, false]),
            ([0.3, 0.2, -0.4], [0.999, 0.5, 1.001], [false, false, true]),
            ([0.3, 1.4, -0.4], [0.3, 0.14975, 0.999], [false, true, false]),
        ];
        for (k, (v, ctrl, zero)) in cases.iter().enumerate() {
            let s0 = GenState::new(vec![0.1, 0.05, -0.3], v.to_vec());
            let c0: Vec<f64> = tq.iter().chain(ctrl).copied().collect();
            let u = Control::with_ctrl(&tq, ctrl);
            let sel = ParamSelection::all(&m);
            let an = solver.step_jacobians(&m, &s0, &u, dt, &sel).unwrap();
            let du = solver.step_jacobians_dual(StepPoint::new(&m, &s0, &u, dt), &sel).unwrap();
            let err = |a: &DMatrix<f64>, b: &DMatrix<f64>| (a - b).amax() / b.amax().max(1.0);
            assert!(err(&an.a, &du.a) < 1e-12 && err(&an.b, &du.b) < 1e-12, "case {k}: analytic vs duals");
            // the workspace paths (iLQR, rollouts) give the same A and B, ctrl columns included, bit for bit
            let mut ws = solver.workspace(&m).unwrap();
            let mut tj = TransitionJacobians::new(&m);
            solver.transition_jacobians_into(&m, &s0, &u, dt, &mut ws, &mut tj).unwrap();
            assert_eq!(
                (tj.a(), tj.b()),
                (an.a.columns(0, 6), an.b.columns(0, 6)),
                "case {k}: transition_jacobians_into"
            );
            let mut sj = StepJacobians::for_solver(&solver, &m, &sel);
            solver.step_jacobians_into(&m, &s0, &u, dt, &sel, &mut ws, &mut sj).unwrap();
            assert_eq!((&sj.a, &sj.b), (&an.a, &an.b), "case {k}: step_jacobians_into");
            let base = next(&s0, &c0);
            let fa = fd_jacobian(|d| solver.local_diff(&m, &base, &next(&solver.retract(&m, &s0, d), &c0)), 6, 1e-6);
            let fb = fd_jacobian(
                |d| {
                    let c: Vec<f64> = c0.iter().zip(d).map(|(a, b)| a + b).collect();
                    solver.local_diff(&m, &base, &next(&s0, &c))
                },
                6,
                1e-6,
            );
            let (ea, eb) = (rel_err(an.a.as_slice(), fa.as_slice()), rel_err(an.b.as_slice(), fb.as_slice()));
            eprintln!("servo case {k}: A vs FD {ea:.1e}, B vs FD {eb:.1e}");
            assert!(ea < 1e-6 && eb < 1e-6, "case {k}: A {ea:e} B {eb:e}");
            for (a, &z) in zero.iter().enumerate() {
                let col = an.b.column(3 + a).amax();
                assert_eq!(col == 0.0, z, "case {k}: ctrl column {a} = {col}");
            }
        }
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
        let du = solver.step_jacobians_dual(StepPoint::new(&m, &s, &u, 0.01), &sel).unwrap();
        let err = |a: &DMatrix<f64>, b: &DMatrix<f64>| (a - b).amax() / b.amax().max(1.0);
        assert!(err(&an.a, &du.a) < 1e-12, "A {}", err(&an.a, &du.a));
        assert!(err(&an.b, &du.b) < 1e-12, "B {}", err(&an.b, &du.b));
        // C is the reverse sweep's now (row by row), no longer the same dual passes as the reference
        assert!(err(&an.c, &du.c) < 1e-12, "C {}", err(&an.c, &du.c));
        // the workspace step (refreshed θ, in-place buffers) equals the allocating generic step
        let mut ws = solver.workspace(&m).unwrap();
        let mut out = s.clone();
        m.body_mass[2] = 1.5;
        solver.step(&m, &s, &u, 0.01, &mut out, &mut ws, None).unwrap();
        let mut dm = DynModel::from_model(&m).unwrap();
        let mut d = DynData::new(&dm);
        let x = StepIn { q: &s.q, v: &s.v, act: &[], u: &u.joint_torque, ctrl: &[], wrench: &[] };
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
        let du = solver
            .step_jacobians_dual(StepPoint::new(&m, &s0, &Control::from_torques(&u0), dt), &ParamSelection::none())
            .unwrap();
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
