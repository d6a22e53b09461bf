//! Passive forces (MuJoCo's qfrc_passive): viscous joint damping −d v, the joint spring −k (q − springref) of
//! hinge and slide joints, and the inertia-box fluid forces (`fluid.rs`) when the model has a fluid density or
//! viscosity. Ball / free joint springs are not supported yet. Also the cables and their actuators
//! ([`cable_forces_into`], [`activation_step`]; spec 003 §3.3–3.4), generic over the scalar: their parameters
//! ride in `DynModel::cables`, so a dual θ differentiates them with the rest of the step.
use crate::data::DynError;
use torsion_math::scalar::cv;
use torsion_math::spatial::{ang, lin, stack, V6};
use torsion_math::{Scalar, Vec3};
use torsion_model::tendon::MIN_CABLE_LENGTH;
use torsion_model::{JointType, Model};

/// The passive generalized forces (nv) at (q, v); builds a dynamics model only when the fluid forces need one.
pub fn passive_forces<T: Scalar>(model: &Model, q: &[T], v: &[T]) -> Result<Vec<T>, DynError> {
    if crate::fluid::FluidBodies::new(model).on() {
        let dm: crate::DynModel<T> = crate::DynModel::from_model(model)?;
        let mut d = crate::DynData::new(&dm);
        passive_forces_in(model, &dm, &mut d, q, v)
    } else {
        joint_passive(model, q, v)
    }
}

/// [`passive_forces`] with the caller's dynamics model and scratch (a stepper's: its θ, or its dual θ for a
/// tangent pass), so the fluid forces neither rebuild a model nor lose θ's tangent. `d` is used as scratch.
pub fn passive_forces_in<T: Scalar>(
    model: &Model,
    dm: &crate::DynModel<T>,
    d: &mut crate::DynData<T>,
    q: &[T],
    v: &[T],
) -> Result<Vec<T>, DynError> {
    let mut f = vec![T::zero(); model.nv()];
    passive_forces_into(model, dm, d, &crate::fluid::FluidBodies::new(model), q, v, &mut f)?;
    Ok(f)
}

/// [`passive_forces_in`] written into `f` (nv entries) with the caller's fluid data (`FluidBodies::new(model)`,
/// built once): no allocation.
pub fn passive_forces_into<T: Scalar>(
    model: &Model,
    dm: &crate::DynModel<T>,
    d: &mut crate::DynData<T>,
    fluid: &crate::fluid::FluidBodies,
    q: &[T],
    v: &[T],
    f: &mut [T],
) -> Result<(), DynError> {
    joint_passive_into(model, &dm.q_start, &dm.v_start, q, v, f)?;
    if fluid.on() {
        crate::fluid::fluid_forces_into(fluid, dm, q, v, d, f)?;
    }
    Ok(())
}

/// Joint damping and hinge / slide springs.
fn joint_passive<T: Scalar>(model: &Model, q: &[T], v: &[T]) -> Result<Vec<T>, DynError> {
    let mut f = vec![T::zero(); model.nv()];
    joint_passive_into(model, &model.joint_q_start(), &model.joint_v_start(), q, v, &mut f)?;
    Ok(f)
}

/// [`joint_passive`] into `f` (overwritten), with the joints' q / v offsets `qs`, `vs`.
fn joint_passive_into<T: Scalar>(
    model: &Model,
    qs: &[usize],
    vs: &[usize],
    q: &[T],
    v: &[T],
    f: &mut [T],
) -> Result<(), DynError> {
    f.fill(T::zero());
    for j in 0..model.joint_count() {
        let t = model.joint_type[j];
        for i in 0..t.dof() {
            f[vs[j] + i] -= v[vs[j] + i] * T::c(model.joint_damping[j]);
        }
        let k = model.joint_stiffness[j];
        if k != 0.0 {
            match t {
                JointType::Revolute | JointType::Prismatic => {
                    f[vs[j]] -= (q[qs[j]] - T::c(model.joint_springref[j])) * T::c(k);
                }
                _ => {
                    return Err(DynError::Unsupported(format!(
                        "joint '{}': stiffness on {t:?} joints is not supported yet",
                        model.joint_name[j]
                    )))
                }
            }
        }
    }
    Ok(())
}

// ----- cables and their actuators (spec 003 §3.3–3.4; MuJoCo semantics in torsion-model `tendon.rs`)

/// One cable on the scalar: end bodies and points (COM frame, model data), stiffness and damping (θ).
#[derive(Clone, Debug)]
pub struct CableTerm<T: Scalar> {
    pub body: [usize; 2],
    pub site: [Vec3<T>; 2],
    pub stiffness: T,
    pub damping: T,
    /// dead band [lo, hi] of the rest length
    pub springlength: (f64, f64),
}

/// One cable actuator on the scalar: force gain · w (+ affine bias) along its cable.
#[derive(Clone, Debug)]
pub struct ActuatorTerm<T: Scalar> {
    pub cable: usize,
    pub gain: T,
    pub bias: [f64; 3],
    /// filter time constant τ and the activation index; None: w = the clamped control
    pub filter: Option<(T, usize)>,
    pub ctrlrange: Option<(f64, f64)>,
}

/// The model's cables and cable actuators on the scalar T (part of `DynModel`, so a dual θ carries the
/// tangents of `tendon_stiffness`, `tendon_damping`, `actuator_gain`, `actuator_timeconst`).
#[derive(Clone, Debug, Default)]
pub struct Cables<T: Scalar> {
    pub cable: Vec<CableTerm<T>>,
    pub actuator: Vec<ActuatorTerm<T>>,
    /// activation states (Model::na)
    pub na: usize,
}

impl<T: Scalar> Cables<T> {
    /// From the model's values, then the cable entries of θ (table order) over them.
    pub fn build(model: &Model, table: &torsion_model::ParamTable, theta: &[T]) -> Self {
        use torsion_model::ParamKind as K;
        let act_index = model.act_index();
        let mut c = Cables {
            cable: model
                .cables
                .iter()
                .map(|c| CableTerm {
                    body: c.body,
                    site: [cv(&c.site[0]), cv(&c.site[1])],
                    stiffness: T::c(c.stiffness),
                    damping: T::c(c.damping),
                    springlength: c.springlength,
                })
                .collect(),
            actuator: model
                .cable_actuators
                .iter()
                .zip(&act_index)
                .map(|(a, ai)| ActuatorTerm {
                    cable: a.cable,
                    gain: T::c(a.gain),
                    bias: a.bias,
                    filter: a.timeconst.zip(*ai).map(|(t, i)| (T::c(t), i)),
                    ctrlrange: a.ctrlrange,
                })
                .collect(),
            na: model.na(),
        };
        for (i, k) in table.kinds.iter().enumerate() {
            match *k {
                K::TendonStiffness(j) => c.cable[j].stiffness = theta[i],
                K::TendonDamping(j) => c.cable[j].damping = theta[i],
                K::ActuatorGain(j) => c.actuator[j].gain = theta[i],
                K::ActuatorTimeconst(j) => {
                    if let Some(f) = c.actuator[j].filter.as_mut() {
                        f.0 = theta[i]
                    }
                }
                _ => {}
            }
        }
        c
    }

    /// The same on another scalar (constants lifted, zero tangents).
    pub fn lift<U: Scalar>(&self) -> Cables<U> {
        let l = |x: &T| U::c(x.re());
        Cables {
            cable: self
                .cable
                .iter()
                .map(|c| CableTerm {
                    body: c.body,
                    site: [c.site[0].map(|x| l(&x)), c.site[1].map(|x| l(&x))],
                    stiffness: l(&c.stiffness),
                    damping: l(&c.damping),
                    springlength: c.springlength,
                })
                .collect(),
            actuator: self
                .actuator
                .iter()
                .map(|a| ActuatorTerm {
                    cable: a.cable,
                    gain: l(&a.gain),
                    bias: a.bias,
                    filter: a.filter.map(|(t, i)| (l(&t), i)),
                    ctrlrange: a.ctrlrange,
                })
                .collect(),
            na: self.na,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.cable.is_empty()
    }
}

fn clamp_ctrl<T: Scalar>(u: T, range: Option<(f64, f64)>) -> T {
    match range {
        Some((lo, _)) if u.re() < lo => T::c(lo),
        Some((_, hi)) if u.re() > hi => T::c(hi),
        _ => u,
    }
}

/// τ += Σ_cables J_Lᵀ f at (q, v, act, ctrl): f = spring (dead band) − c L̇ + Σ actuators (gain · w + bias), with
/// L = |x_B − x_A| and J_L = ûᵀ (J_B − J_A) applied as the point forces ∓f û at the two ends (body wrenches, then
/// τ += Sᵀ f in a backward sweep as `fluid.rs`). At L < `MIN_CABLE_LENGTH` the direction û is 0 (no force, no
/// NaN). `ctrl` may be empty (zero controls). Uses `d`'s kinematics and force scratch; no heap allocation.
#[allow(clippy::too_many_arguments)]
pub fn cable_forces_into<T: Scalar>(
    cab: &Cables<T>,
    dm: &crate::DynModel<T>,
    q: &[T],
    v: &[T],
    act: &[T],
    ctrl: &[T],
    d: &mut crate::DynData<T>,
    tau: &mut [T],
) -> Result<(), DynError> {
    if cab.is_empty() {
        return Ok(());
    }
    if act.len() != cab.na {
        return Err(DynError::Shape { what: "act", got: act.len(), expected: cab.na });
    }
    if !ctrl.is_empty() && ctrl.len() != cab.actuator.len() {
        return Err(DynError::Shape { what: "ctrl", got: ctrl.len(), expected: cab.actuator.len() });
    }
    dm.check_q(q)?;
    dm.check_v("v", v)?;
    crate::fk::forward_kinematics(dm, q, d);
    for k in 0..dm.nb {
        d.vel[k] = V6::zeros();
        d.f[k] = V6::zeros();
    }
    crate::data::body_velocities(dm, d, v);
    for (ci, c) in cab.cable.iter().enumerate() {
        // world end points and velocities (body velocity [ω; v] is body-frame at the COM)
        let end = |e: usize| {
            let b = c.body[e];
            let x = d.o_m[b].act_point(&c.site[e]);
            let vb = &d.vel[b];
            let xd = d.o_m[b].rot * (lin(vb) + ang(vb).cross(&c.site[e]));
            (x, xd)
        };
        let ((xa, va), (xb, vb)) = (end(0), end(1));
        let delta = xb - xa;
        let l2 = delta.dot(&delta);
        if l2.re() < MIN_CABLE_LENGTH * MIN_CABLE_LENGTH {
            continue;
        }
        let l = l2.sqrt();
        let u = delta / l;
        let ldot = u.dot(&(vb - va));
        let (lo, hi) = c.springlength;
        let mut f = if l.re() > hi {
            -(l - T::c(hi)) * c.stiffness
        } else if l.re() < lo {
            -(l - T::c(lo)) * c.stiffness
        } else {
            T::zero()
        };
        f -= ldot * c.damping;
        for (ai, a) in cab.actuator.iter().enumerate() {
            if a.cable != ci {
                continue;
            }
            let w = match a.filter {
                Some((_, k)) => act[k],
                None => clamp_ctrl(ctrl.get(ai).copied().unwrap_or(T::zero()), a.ctrlrange),
            };
            f += a.gain * w + T::c(a.bias[0]) + l * T::c(a.bias[1]) + ldot * T::c(a.bias[2]);
        }
        // force f û on B, −f û on A, as body wrenches [n; f] (body frame, at the COM)
        for (e, sign) in [(0usize, -1.0), (1, 1.0)] {
            let b = c.body[e];
            if dm.root_pose[b].is_some() {
                continue;
            }
            let fw = d.o_m[b].rot.transpose() * (u * (f * T::c(sign)));
            d.f[b] += stack(&c.site[e].cross(&fw), &fw);
        }
    }
    crate::data::wrenches_to_tau(dm, d, tau);
    Ok(())
}

/// The filter states after one explicit Euler step (MuJoCo `mj_Euler` after `mj_fwdActuation`, `actearly`
/// off): act1 = act + h (clamp(ctrl) − act)/τ per filter actuator. `ctrl` may be empty (zero controls).
pub fn activation_step<T: Scalar>(cab: &Cables<T>, act: &[T], ctrl: &[T], h: f64, act1: &mut [T]) {
    for (ai, a) in cab.actuator.iter().enumerate() {
        if let Some((tau, k)) = a.filter {
            let u = clamp_ctrl(ctrl.get(ai).copied().unwrap_or(T::zero()), a.ctrlrange);
            act1[k] = act[k] + (u - act[k]) * T::c(h) / tau;
        }
    }
}
