//! Passive forces (MuJoCo's qfrc_passive): viscous joint damping −d v, the joint spring −k (q − springref) of
//! hinge and slide joints, and the inertia-box fluid forces (`fluid.rs`) when the model has a fluid density or
//! viscosity. Ball / free joint springs are not supported yet. Also the cables and their actuators
//! ([`cable_forces_into`], [`activation_step`]; spec 003 §3.3–3.4), generic over the scalar: their parameters
//! ride in `DynModel::cables`, so a dual θ differentiates them with the rest of the step.
use crate::data::DynError;
use torsion_math::scalar::cv;
use torsion_math::spatial::{ang, lin, stack, V6};
use torsion_math::{Scalar, Vec3};
use torsion_model::tendon::{Transmission as ModelTransmission, MIN_CABLE_LENGTH};
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

/// One actuator on the scalar: force clamp(gain · w + affine bias, forcerange) on its transmission.
#[derive(Clone, Debug)]
pub struct ActuatorTerm<T: Scalar> {
    pub transmission: Transmission,
    pub gain: T,
    pub bias: [f64; 3],
    /// force clamp (gear folded in), None: unlimited
    pub forcerange: Option<(f64, f64)>,
    /// filter time constant τ and the activation index; None: w = the clamped control
    pub filter: Option<(T, usize)>,
    pub ctrlrange: Option<(f64, f64)>,
}

/// An actuator's transmission in the step's coordinates: a cable index, or a 1-DoF joint's (q index, v index).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transmission {
    Cable(usize),
    Joint { iq: usize, iv: usize },
}

/// The model's cables and actuators (cable and joint transmissions) on the scalar T (part of `DynModel`, so a dual θ carries the
/// tangents of `tendon_stiffness`, `tendon_damping`, `actuator_gain`, `actuator_timeconst`).
#[derive(Clone, Debug, Default)]
pub struct Cables<T: Scalar> {
    pub cable: Vec<CableTerm<T>>,
    pub actuator: Vec<ActuatorTerm<T>>,
    /// activation states (Model::na)
    pub na: usize,
    /// per cable, the actuators on it (indices into `actuator`, in order; `Cables::build` fills it)
    pub on_cable: Vec<Vec<usize>>,
}

impl<T: Scalar> Cables<T> {
    /// From the model's values, then the cable entries of θ (table order) over them.
    pub fn build(model: &Model, table: &torsion_model::ParamTable, theta: &[T]) -> Self {
        use torsion_model::ParamKind as K;
        let act_index = model.act_index();
        let (qs, vs) = (model.joint_q_start(), model.joint_v_start());
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
                    transmission: match a.transmission {
                        ModelTransmission::Cable(c) => Transmission::Cable(c),
                        ModelTransmission::Joint(j) => Transmission::Joint { iq: qs[j], iv: vs[j] },
                    },
                    gain: T::c(a.gain),
                    bias: a.bias,
                    forcerange: a.forcerange,
                    filter: a.timeconst.zip(*ai).map(|(t, i)| (T::c(t), i)),
                    ctrlrange: a.ctrlrange,
                })
                .collect(),
            na: model.na(),
            on_cable: vec![],
        };
        c.on_cable = (0..c.cable.len())
            .map(|ci| {
                (0..c.actuator.len()).filter(|&ai| c.actuator[ai].transmission == Transmission::Cable(ci)).collect()
            })
            .collect();
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
                    transmission: a.transmission,
                    gain: l(&a.gain),
                    bias: a.bias,
                    forcerange: a.forcerange,
                    filter: a.filter.map(|(t, i)| (l(&t), i)),
                    ctrlrange: a.ctrlrange,
                })
                .collect(),
            na: self.na,
            on_cable: self.on_cable.clone(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.cable.is_empty()
    }

    /// Copy the model's current cable and actuator parameters (a stepper's per-step refresh, same model
    /// structure; no allocation).
    pub fn set_params(&mut self, model: &Model) {
        for (c, mc) in self.cable.iter_mut().zip(&model.cables) {
            c.stiffness = T::c(mc.stiffness);
            c.damping = T::c(mc.damping);
        }
        for (a, ma) in self.actuator.iter_mut().zip(&model.cable_actuators) {
            a.gain = T::c(ma.gain);
            if let (Some(f), Some(t)) = (a.filter.as_mut(), ma.timeconst) {
                f.0 = T::c(t);
            }
        }
    }
}

/// Clamp to a range (MuJoCo ctrlrange / forcerange): the value itself inside [lo, hi] (derivative 1), the
/// constant bound outside (derivative 0); at a bound exactly the value (one-sided derivative from inside).
fn clamp_ctrl<T: Scalar>(u: T, range: Option<(f64, f64)>) -> T {
    match range {
        Some((lo, _)) if u.re() < lo => T::c(lo),
        Some((_, hi)) if u.re() > hi => T::c(hi),
        _ => u,
    }
}

impl<T: Scalar> ActuatorTerm<T> {
    /// The actuator's force on its transmission (MuJoCo `actuator_force` × gear) at transmission length ℓ and
    /// velocity ℓ̇: clamp(gain · w + bias₀ + bias₁ ℓ + bias₂ ℓ̇, forcerange), w = act (filter) or clamp(ctrl).
    pub fn force(&self, ai: usize, l: T, ldot: T, act: &[T], ctrl: &[T]) -> T {
        clamp_ctrl(self.force_unclamped(ai, l, ldot, act, ctrl), self.forcerange)
    }

    /// [`ActuatorTerm::force`] before the forcerange clamp.
    fn force_unclamped(&self, ai: usize, l: T, ldot: T, act: &[T], ctrl: &[T]) -> T {
        let w = match self.filter {
            Some((_, k)) => act[k],
            None => clamp_ctrl(ctrl.get(ai).copied().unwrap_or(T::zero()), self.ctrlrange),
        };
        self.gain * w + T::c(self.bias[0]) + l * T::c(self.bias[1]) + ldot * T::c(self.bias[2])
    }
}

/// ∂τ/∂q̇ of each joint-transmission actuator at (q, v, act, ctrl), for the implicit-in-velocity integrator
/// (MuJoCo `implicitfast`, `mjd_actuator_vel`): (v index, bias₂) where the force is inside forcerange, 0 where it is
/// clamped (gear folded into bias₂). The velocity derivative is a constant, so it carries no tangent.
pub fn joint_actuator_velocity_derivatives<T: Scalar>(
    cab: &Cables<T>,
    q: &[T],
    v: &[T],
    act: &[T],
    ctrl: &[T],
    mut out: impl FnMut(usize, f64),
) {
    for (ai, a) in cab.actuator.iter().enumerate() {
        let Transmission::Joint { iq, iv } = a.transmission else { continue };
        let f = a.force_unclamped(ai, q[iq], v[iv], act, ctrl).re();
        let clamped = matches!(a.forcerange, Some((lo, hi)) if f < lo || f > hi);
        out(iv, if clamped { 0.0 } else { a.bias[2] });
    }
}

/// τ += the joint-transmission actuators' forces (MuJoCo qfrc_actuator = gear · actuator_force on the joint's
/// DoF) at (q, v, act, ctrl); ℓ = q, ℓ̇ = q̇ of the joint (gear folded into the terms). `ctrl` may be empty
/// (zero controls). No heap allocation.
pub fn joint_actuator_forces_into<T: Scalar>(
    cab: &Cables<T>,
    q: &[T],
    v: &[T],
    act: &[T],
    ctrl: &[T],
    tau: &mut [T],
) -> Result<(), DynError> {
    if !ctrl.is_empty() && ctrl.len() != cab.actuator.len() {
        return Err(DynError::Shape { what: "ctrl", got: ctrl.len(), expected: cab.actuator.len() });
    }
    if act.len() != cab.na {
        return Err(DynError::Shape { what: "act", got: act.len(), expected: cab.na });
    }
    for (ai, a) in cab.actuator.iter().enumerate() {
        if let Transmission::Joint { iq, iv } = a.transmission {
            tau[iv] += a.force(ai, q[iq], v[iv], act, ctrl);
        }
    }
    Ok(())
}

/// The joint-transmission actuators' local derivatives at (q, v, ctrl), for the analytic Jacobian: per joint
/// actuator (v index, ∂τ/∂q, ∂τ/∂v, ∂τ/∂ctrl) by one Dual64 pass each of the same [`ActuatorTerm::force`]
/// (no second copy of the law; filter actuators are not covered: the stepper uses dual passes for na > 0).
pub fn joint_actuator_derivatives(
    cab: &Cables<f64>,
    q: &[f64],
    v: &[f64],
    ctrl: &[f64],
    mut out: impl FnMut(usize, usize, [f64; 3]),
) {
    use num_dual::Dual64;
    for (ai, a) in cab.actuator.iter().enumerate() {
        let Transmission::Joint { iq, iv } = a.transmission else { continue };
        let ad = ActuatorTerm::<Dual64> {
            transmission: a.transmission,
            gain: Dual64::from(a.gain),
            bias: a.bias,
            forcerange: a.forcerange,
            filter: None,
            ctrlrange: a.ctrlrange,
        };
        let u = ctrl.get(ai).copied().unwrap_or(0.0);
        let mut d = [0.0; 3];
        for (k, dk) in d.iter_mut().enumerate() {
            let mut x = [Dual64::from(q[iq]), Dual64::from(v[iv]), Dual64::from(u)];
            x[k].eps = 1.0;
            // a one-entry ctrl slice at index 0 carries this actuator's control
            *dk = ad.force(0, x[0], x[1], &[], &[x[2]]).eps;
        }
        out(ai, iv, d);
    }
}

/// What [`cable_forces_into`] writes.
pub enum CableOut<'a, T> {
    /// τ += Σ_cables J_Lᵀ f (nv entries): the step's generalized forces
    Tau(&'a mut [T]),
    /// each cable's tension −f (N, ≥ 0 when it pulls; 0 for a cable shorter than `MIN_CABLE_LENGTH`): for
    /// recording (the viewer colours cables by it)
    Tensions(&'a mut [T]),
}

/// The cables at (q, v, act, ctrl), written as `out` says: f = spring (dead band) − c L̇ + Σ actuators (gain · w +
/// bias), with L = |x_B − x_A|; [`CableOut::Tau`]: τ += J_Lᵀ f with J_L = ûᵀ (J_B − J_A), applied as the point
/// forces ∓f û at the two ends (body wrenches, then τ += Sᵀ f in a backward sweep as `fluid.rs`);
/// [`CableOut::Tensions`]: −f per cable, from the same kernel. At L < `MIN_CABLE_LENGTH` the direction û is 0 (no
/// force, no NaN). `ctrl` may be empty (zero controls). Uses `d`'s kinematics and force scratch; no heap allocation.
#[allow(clippy::too_many_arguments)]
pub fn cable_forces_into<T: Scalar>(
    cab: &Cables<T>,
    dm: &crate::DynModel<T>,
    q: &[T],
    v: &[T],
    act: &[T],
    ctrl: &[T],
    d: &mut crate::DynData<T>,
    out: CableOut<'_, T>,
) -> Result<(), DynError> {
    match &out {
        CableOut::Tensions(t) if t.len() != cab.cable.len() => {
            return Err(DynError::Shape { what: "tensions (output)", got: t.len(), expected: cab.cable.len() });
        }
        CableOut::Tau(_) if cab.is_empty() => return Ok(()),
        _ => {}
    }
    // the inputs' shapes, then the kinematics `cable_tension` reads: forward kinematics and the body velocities
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
    }
    crate::data::body_velocities(dm, d, v);
    let tau = match out {
        CableOut::Tau(tau) => tau,
        CableOut::Tensions(t) => {
            for (ci, t) in t.iter_mut().enumerate() {
                *t = cable_tension(cab, ci, d, act, ctrl).map_or(T::zero(), |(f, _)| -f);
            }
            return Ok(());
        }
    };
    for f in d.f.iter_mut() {
        *f = V6::zeros();
    }
    for (ci, c) in cab.cable.iter().enumerate() {
        let Some((f, u)) = cable_tension(cab, ci, d, act, ctrl) else { continue };
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

/// Cable `ci`'s axial force f (N; the force on its B end is f û, on its A end −f û, so f < 0 pulls the ends
/// together) and direction û = (x_B − x_A)/L, at the kinematics in `d` (forward kinematics and body velocities
/// done): spring with the dead band, damping, and the actuators on the cable. None below `MIN_CABLE_LENGTH`.
fn cable_tension<T: Scalar>(
    cab: &Cables<T>,
    ci: usize,
    d: &crate::DynData<T>,
    act: &[T],
    ctrl: &[T],
) -> Option<(T, nalgebra::Vector3<T>)> {
    let c = &cab.cable[ci];
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
        return None;
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
    for &ai in &cab.on_cable[ci] {
        f += cab.actuator[ai].force(ai, l, ldot, act, ctrl);
    }
    Some((f, u))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The joint actuators' local derivatives (∂τ/∂q, ∂τ/∂v, ∂τ/∂ctrl) against central differences of the force
    /// kernel: a geared position servo inside its clamps, with its control just outside ctrlrange, and with its
    /// force just outside forcerange (both: zero derivatives through the clamped quantity).
    #[test]
    fn joint_actuator_derivatives_match_central_differences() {
        let xml = r#"<mujoco><worldbody><body><joint name="h"/><geom size=".1" mass="1"/></body></worldbody>
            <actuator><position joint="h" kp="20" kv="3" gear="2" ctrlrange="-1 1" forcerange="-3 3"/></actuator>
            </mujoco>"#;
        let m = torsion_model::io::mjcf::load_mjcf_str(xml, "p.xml", None).unwrap();
        let cab = Cables::<f64>::build(&m, &m.param_table(), &m.param_vector());
        // τ = 2 clamp(20 clamp(c) − 40 q − 6 q̇, ±3): (q, q̇, c) inside, c above 1, force above 3 (= 3.001)
        for (x, zero) in [([0.1, 0.2, 0.3], [false; 3]), ([0.45, 0.2, 1.001], [false, false, true])]
            .into_iter()
            .chain([([0.1, 0.05, (3.001 + 4.0 + 0.3) / 20.0], [true; 3])])
        {
            let tau = |x: [f64; 3]| {
                let mut t = [0.0];
                joint_actuator_forces_into(&cab, &x[..1], &x[1..2], &[], &x[2..], &mut t).unwrap();
                t[0]
            };
            let mut got = [0.0; 3];
            joint_actuator_derivatives(&cab, &x[..1], &x[1..2], &x[2..], |a, iv, d| {
                assert_eq!((a, iv), (0, 0));
                got = d;
            });
            for k in 0..3 {
                let (mut p, mut n) = (x, x);
                p[k] += 1e-6;
                n[k] -= 1e-6;
                let fd = (tau(p) - tau(n)) / 2e-6;
                assert!((got[k] - fd).abs() <= 1e-6 * fd.abs().max(1.0), "{x:?} ∂{k}: {} vs {fd}", got[k]);
                assert_eq!(got[k] == 0.0, zero[k], "{x:?} ∂{k}");
            }
        }
    }

    /// Cable tensions (the viewer's recording) are the force kernel's: at rest with no activation, tension =
    /// k (L − l_hi) of each pretensioned prism cable, L from the model's own kinematics; a cable shorter than
    /// `MIN_CABLE_LENGTH` reads 0; and the tensions are what `cable_forces_into` applies (τ = Σ J_Lᵀ f with f = −t).
    #[test]
    fn cable_tensions_are_the_force_kernels() {
        let m = torsion_model::builder::tensegrity_prism();
        let dm = crate::DynModel::<f64>::from_model(&m).unwrap();
        let mut d = crate::DynData::new(&dm);
        let (q, v) = (m.qpos0.clone(), vec![0.0; m.nv()]);
        let act = vec![0.0; m.na()];
        let mut t = vec![0.0; m.cables.len()];
        cable_forces_into(&dm.cables, &dm, &q, &v, &act, &[], &mut d, CableOut::Tensions(&mut t)).unwrap();
        let pose = m.forward_kinematics(&q).unwrap();
        for (c, ti) in m.cables.iter().zip(&t) {
            let x = |e: usize| pose[c.body[e]].0 + pose[c.body[e]].1.rotate(&c.site[e]);
            let l = (x(1) - x(0)).norm();
            let bias: f64 = m
                .cable_actuators
                .iter()
                .filter(|a| a.cable() == m.cable_index(&c.name))
                .map(|a| a.bias[0] + a.bias[1] * l)
                .sum();
            let expected = c.stiffness * (l - c.springlength.1).max(0.0) - bias;
            assert!((ti - expected).abs() <= 1e-9 * expected.abs().max(1.0), "{}: {ti} vs {expected}", c.name);
            assert!(*ti > 0.0, "{}: pretensioned", c.name);
        }
        let mut tau = vec![0.0; m.nv()];
        cable_forces_into(&dm.cables, &dm, &q, &v, &act, &[], &mut d, CableOut::Tau(&mut tau)).unwrap();
        assert!(tau.iter().any(|x| x.abs() > 1e-6), "the cables pull");
        let mut short = vec![0.0; m.cables.len() + 1];
        assert!(cable_forces_into(&dm.cables, &dm, &q, &v, &act, &[], &mut d, CableOut::Tensions(&mut short)).is_err());
    }
}
