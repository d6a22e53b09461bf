//! The generalized-coordinate view of a `Model` (built from the differentiable parameter vector θ, so
//! derivatives w.r.t. masses, inertias and joint placements come from the same code) and the per-call
//! scratch `DynData`.
use crate::joints::JointModel;
use nalgebra::Matrix3;
use thiserror::Error;
use torsion_math::scalar::cv;
use torsion_math::spatial::{inertia_at_com, Inertia, Se3, M6, V6};
use torsion_math::{Scalar, Vec3};
use torsion_model::params::scatter_params;
use torsion_model::{JointType, Model, ParamTable};

#[derive(Debug, Error)]
pub enum DynError {
    #[error("dynamics: unsupported model: {0}")]
    Unsupported(String),
    #[error("dynamics: {what} has length {got}, expected {expected}")]
    Shape { what: &'static str, got: usize, expected: usize },
}

/// Per joint: parent body, child body, the constant placements of the joint frame in both bodies, the joint
/// model; per body: spatial inertia at its COM. Bodies are indexed as in the Model.
#[derive(Clone, Debug)]
pub struct DynModel<T: Scalar> {
    pub nq: usize,
    pub nv: usize,
    pub parent: Vec<usize>,
    pub child: Vec<usize>,
    /// X_{P←Jp}: joint frame in the parent body frame
    pub x_pj: Vec<Se3<T>>,
    /// X_{Jc←C}: child body frame in the child joint frame (inverse of the joint frame seen from the child)
    pub x_jc: Vec<Se3<T>>,
    pub joint: Vec<JointModel<T>>,
    pub q_start: Vec<usize>,
    pub v_start: Vec<usize>,
    pub inertia: Vec<M6<T>>,
    /// fixed root bodies: their world placement; other roots are not allowed
    pub root_pose: Vec<Option<Se3<T>>>,
    pub gravity: Vec3<T>,
    /// the diagonal ABA / CRBA / RNEA add to M (per DoF): the model's armature, or what a stepper sets (the
    /// Featherstone step: armature + h · damping)
    pub armature: Vec<T>,
    /// the viscous damping RNEA / ABA apply (per DoF): zero unless a caller sets it
    pub damping: Vec<T>,
    /// the model's per-DoF passive parameters from θ (`joint_damping`, `joint_armature`, `joint_frictionloss`,
    /// each joint's value on its DoFs): what the steppers read; the algorithms read `armature` / `damping`
    pub dof_damping: Vec<T>,
    pub dof_armature: Vec<T>,
    pub dof_frictionloss: Vec<T>,
    pub nb: usize,
    /// cables and cable actuators (`passive::cable_forces_into`), their parameters on T
    pub cables: crate::passive::Cables<T>,
    /// spec 003's linear contact model for rods (`tensegrity_contact.rs`), its parameters on T; None = off
    pub tensegrity_contact: Option<crate::tensegrity_contact::LinearContactTerm<T>>,
}

/// q and v are laid out by the model's joints in order (`q_start` / `v_start` are the running sums).
impl<T: Scalar> torsion_model::JointLayout for DynModel<T> {
    fn joint_count(&self) -> usize {
        self.joint.len()
    }
    fn joint_kind(&self, j: usize) -> JointType {
        self.joint[j].kind
    }
}

impl<T: Scalar> DynModel<T> {
    /// Build from the model and a full parameter vector θ (table order of `Model::param_table`).
    pub fn build(model: &Model, table: &ParamTable, theta: &[T]) -> Result<Self, DynError> {
        let nb = model.body_count();
        let nj = model.joint_count();
        let mut mass = vec![T::zero(); nb];
        let mut ic = vec![Matrix3::<T>::zeros(); nb];
        let mut r: Vec<Vec3<T>> = model.joint_anchor_parent.iter().map(cv).collect();
        let mut t: Vec<Vec3<T>> = model.joint_anchor_child.iter().map(cv).collect();
        for k in 0..nb {
            mass[k] = T::c(if model.body_fixed[k] { 0.0 } else { model.body_mass[k] });
        }
        let mut no_springs: Vec<Option<[T; 6]>> = vec![];
        let mut jp: Vec<[T; 3]> = (0..nj)
            .map(|j| [model.joint_damping[j], model.joint_armature[j], model.joint_frictionloss[j]].map(T::c))
            .collect();
        scatter_params(table, |i| theta[i], &mut mass, &mut ic, &mut r, &mut t, &mut no_springs, &mut jp);
        let dof = |f: usize| -> Vec<T> {
            (0..nj).flat_map(|j| std::iter::repeat_n(jp[j][f], model.joint_type[j].dof())).collect()
        };
        let mut is_child = vec![false; nb];
        for j in 0..nj {
            is_child[model.joint_child[j]] = true;
        }
        let mut root_pose = vec![None; nb];
        for k in 0..nb {
            if model.body_fixed[k] {
                let (x, q) = model.body_pose0[k];
                root_pose[k] = Some(Se3::new(cv_mat(&q.to_mat()), cv(&x)));
            } else if !is_child[k] {
                return Err(DynError::Unsupported(format!(
                    "body '{}' has no joint: in generalized coordinates a loose body needs a free joint",
                    model.body_name[k]
                )));
            }
        }
        let mut x_pj = Vec::with_capacity(nj);
        let mut x_jc = Vec::with_capacity(nj);
        let mut joint = Vec::with_capacity(nj);
        for j in 0..nj {
            x_pj.push(Se3::new(cv_mat(&model.joint_frame_parent[j].to_mat()), r[j]));
            let cj = Se3::new(cv_mat(&model.joint_frame_child[j].to_mat()), t[j]);
            x_jc.push(cj.inverse());
            joint.push(JointModel::new(model.joint_type[j], &cv(&model.joint_axis[j]), &cj));
        }
        let inertia = (0..nb).map(|k| inertia_at_com(mass[k], &ic[k])).collect();
        let _ = JointType::Fixed;
        Ok(DynModel {
            nq: model.nq(),
            nv: model.nv(),
            parent: model.joint_parent.clone(),
            child: model.joint_child.clone(),
            x_pj,
            x_jc,
            joint,
            q_start: model.joint_q_start(),
            v_start: model.joint_v_start(),
            inertia,
            root_pose,
            gravity: cv(&model.gravity),
            armature: dof(1),
            damping: vec![T::zero(); model.nv()],
            dof_damping: dof(0),
            dof_armature: dof(1),
            dof_frictionloss: dof(2),
            nb,
            cables: crate::passive::Cables::build(model, table, theta),
            tensegrity_contact: crate::tensegrity_contact::LinearContactTerm::build(model, table, theta)?,
        })
    }

    /// From the model's current parameter values.
    pub fn from_model(model: &Model) -> Result<Self, DynError> {
        let table = model.param_table();
        let theta: Vec<T> = model.param_vector().iter().map(|&v| T::c(v)).collect();
        Self::build(model, &table, &theta)
    }

    /// The same model on another scalar (constants lifted, zero tangents), e.g. f64 → Dual64 for a
    /// derivative pass of a kernel at the model's current values.
    pub fn lift<U: Scalar>(&self) -> DynModel<U> {
        let se3 = |x: &Se3<T>| Se3::new(x.rot.map(|v| U::c(v.re())), x.pos.map(|v| U::c(v.re())));
        let vec = |x: &[T]| x.iter().map(|v| U::c(v.re())).collect::<Vec<U>>();
        DynModel {
            nq: self.nq,
            nv: self.nv,
            parent: self.parent.clone(),
            child: self.child.clone(),
            x_pj: self.x_pj.iter().map(se3).collect(),
            x_jc: self.x_jc.iter().map(se3).collect(),
            joint: self
                .joint
                .iter()
                .map(|jm| JointModel::new(jm.kind, &jm.axis.map(|v| U::c(v.re())), &se3(&jm.x_jc).inverse()))
                .collect(),
            q_start: self.q_start.clone(),
            v_start: self.v_start.clone(),
            inertia: self.inertia.iter().map(|i| i.map(|v| U::c(v.re()))).collect(),
            root_pose: self.root_pose.iter().map(|p| p.as_ref().map(se3)).collect(),
            gravity: self.gravity.map(|v| U::c(v.re())),
            armature: vec(&self.armature),
            damping: vec(&self.damping),
            dof_damping: vec(&self.dof_damping),
            dof_armature: vec(&self.dof_armature),
            dof_frictionloss: vec(&self.dof_frictionloss),
            nb: self.nb,
            cables: self.cables.lift(),
            tensegrity_contact: self.tensegrity_contact.as_ref().map(|c| c.lift()),
        }
    }

    /// Refill `dof_damping`, `dof_armature`, `dof_frictionloss` from the model's current values (a stepper's
    /// per-step refresh; sizes from `build` on the same model, no allocation).
    pub fn set_joint_passive(&mut self, model: &Model) {
        let mut k = 0;
        for j in 0..self.joint.len() {
            for _ in 0..self.joint[j].nv {
                self.dof_damping[k] = T::c(model.joint_damping[j]);
                self.dof_armature[k] = T::c(model.joint_armature[j]);
                self.dof_frictionloss[k] = T::c(model.joint_frictionloss[j]);
                k += 1;
            }
        }
    }

    pub fn check_q(&self, q: &[T]) -> Result<(), DynError> {
        if q.len() != self.nq {
            return Err(DynError::Shape { what: "q", got: q.len(), expected: self.nq });
        }
        Ok(())
    }
    pub fn check_v(&self, what: &'static str, v: &[T]) -> Result<(), DynError> {
        if v.len() != self.nv {
            return Err(DynError::Shape { what, got: v.len(), expected: self.nv });
        }
        Ok(())
    }
}

fn cv_mat<T: Scalar>(m: &Matrix3<f64>) -> Matrix3<T> {
    m.map(|v| T::c(v))
}

/// Scratch for the algorithms (allocated once per model; no algorithm allocates per call).
#[derive(Clone, Debug)]
pub struct DynData<T: Scalar> {
    /// X_{P←C}(q) per joint
    pub x_pc: Vec<Se3<T>>,
    /// world placement of each body frame (filled by `forward_kinematics`, CRBA and the derivatives; RNEA and
    /// ABA only need `x_pc` and leave it as it was)
    pub o_m: Vec<Se3<T>>,
    pub vel: Vec<V6<T>>,
    pub acc: Vec<V6<T>>,
    pub f: Vec<V6<T>>,
    pub ia: Vec<M6<T>>,
    pub pa: Vec<V6<T>>,
    /// joint motion subspace columns in the child frame (per joint, up to 6)
    pub s: Vec<[V6<T>; 6]>,
    /// (sin q, cos q) per revolute joint
    pub(crate) sincos: Vec<(T, T)>,
    /// ABA: the bias acceleration v × v_J per body
    pub(crate) cbias: Vec<V6<T>>,
    /// ABA per joint: U = I_A S (nv columns), D⁻¹ (top-left nv × nv), u = τ − Sᵀ p_A (first nv entries)
    pub(crate) aba_u: Vec<[V6<T>; 6]>,
    pub(crate) aba_dinv: Vec<M6<T>>,
    pub(crate) aba_uvec: Vec<V6<T>>,
    /// the joint that moves each body (usize::MAX for roots) and the joint above each joint (usize::MAX
    /// below a root)
    pub(crate) body_joint: Vec<usize>,
    pub(crate) parent_joint: Vec<usize>,
    /// `external.rs` per body: the subtree sums of the wrenches (world, at the origin) and of their q-terms, and
    /// the spatial velocities of a cotangent
    pub(crate) ext_f: Vec<V6<T>>,
    pub(crate) ext_k: Vec<V6<T>>,
    pub(crate) ext_v: Vec<V6<T>>,
    /// world-frame scratch of CRBA and the analytic derivatives (Carpentier & Mansard 2018), per body:
    /// composite inertia, its velocity variation Ẏ + (h ×̄) = [[Q, 0], [[k]×, 0]] (as Q, k), velocity,
    /// acceleration with the gravity, force
    pub(crate) oy: Vec<Inertia<T>>,
    pub(crate) doy_q: Vec<Matrix3<T>>,
    pub(crate) doy_k: Vec<Vec3<T>>,
    pub(crate) ov: Vec<V6<T>>,
    pub(crate) oa_gf: Vec<V6<T>>,
    pub(crate) of: Vec<V6<T>>,
    /// per DoF (6 × nv): world-frame joint columns J, ∂v/∂q, ∂a/∂q, ∂a/∂v, ∂f/∂a (= Y J), ∂f/∂q, ∂f/∂v and
    /// the angular part of Ẏᵀ J (its linear part is zero)
    pub(crate) jac: Vec<V6<T>>,
    pub(crate) dvdq: Vec<V6<T>>,
    pub(crate) dadq: Vec<V6<T>>,
    pub(crate) dadv: Vec<V6<T>>,
    pub(crate) dfda: Vec<V6<T>>,
    pub(crate) dfdq: Vec<V6<T>>,
    pub(crate) dfdv: Vec<V6<T>>,
    pub(crate) dytj: Vec<Vec3<T>>,
    /// a zero nv-vector (gravity and bias run RNEA with it)
    pub(crate) zero_nv: Vec<T>,
    /// per rod of the linear contact model: in contact this step (`tensegrity_contact.rs`)
    pub(crate) rod_contact: Vec<bool>,
    /// per rod: the broad phase's bounding sphere and speed bounds at this step (`tensegrity_contact::RodBound`)
    pub(crate) rod_bound: Vec<crate::tensegrity_contact::RodBound>,
    /// the contact step's v̂ and τ_c (nv each; empty without the linear contact model)
    pub(crate) contact_v: Vec<T>,
    pub(crate) contact_tau: Vec<T>,
}

impl<T: Scalar> DynData<T> {
    pub fn new(dm: &DynModel<T>) -> Self {
        let nb = dm.nb;
        let nj = dm.parent.len();
        let nv = dm.nv;
        let nrod = dm.tensegrity_contact.as_ref().map_or(0, |c| c.rods.len());
        let ncv = if dm.tensegrity_contact.is_some() { nv } else { 0 };
        let z6 = vec![V6::zeros(); nv];
        DynData {
            x_pc: vec![Se3::identity(); nj],
            o_m: vec![Se3::identity(); nb],
            vel: vec![V6::zeros(); nb],
            acc: vec![V6::zeros(); nb],
            f: vec![V6::zeros(); nb],
            ia: vec![M6::zeros(); nb],
            pa: vec![V6::zeros(); nb],
            s: vec![[V6::zeros(); 6]; nj],
            sincos: vec![(T::zero(), T::one()); nj],
            cbias: vec![V6::zeros(); nb],
            ext_f: vec![V6::zeros(); nb],
            ext_k: vec![V6::zeros(); nb],
            ext_v: vec![V6::zeros(); nb],
            aba_u: vec![[V6::zeros(); 6]; nj],
            aba_dinv: vec![M6::zeros(); nj],
            aba_uvec: vec![V6::zeros(); nj],
            body_joint: vec![usize::MAX; nb],
            parent_joint: vec![usize::MAX; nj],
            oy: vec![Inertia::zeros(); nb],
            doy_q: vec![Matrix3::zeros(); nb],
            doy_k: vec![Vec3::zeros(); nb],
            ov: vec![V6::zeros(); nb],
            oa_gf: vec![V6::zeros(); nb],
            of: vec![V6::zeros(); nb],
            jac: z6.clone(),
            dvdq: z6.clone(),
            dadq: z6.clone(),
            dadv: z6.clone(),
            dfda: z6.clone(),
            dfdq: z6.clone(),
            dfdv: z6,
            dytj: vec![Vec3::zeros(); nv],
            zero_nv: vec![T::zero(); nv],
            rod_contact: vec![false; nrod],
            rod_bound: vec![Default::default(); nrod],
            contact_v: vec![T::zero(); ncv],
            contact_tau: vec![T::zero(); ncv],
        }
    }
}

/// τ += Sᵀ f for body wrenches `d.f` (body frames, at the body origins), each subtree's wrench carried to its
/// parent (the backward pass of RNEA for external or passive wrenches: fluid forces, cable forces); `d.f` is
/// consumed (accumulated into the parents). Expects `d.x_pc` from forward kinematics.
pub fn wrenches_to_tau<T: Scalar>(dm: &DynModel<T>, d: &mut DynData<T>, tau: &mut [T]) {
    for j in (0..dm.parent.len()).rev() {
        let (p, c) = (dm.parent[j], dm.child[j]);
        let jm = &dm.joint[j];
        for i in 0..jm.nv {
            tau[dm.v_start[j] + i] += jm.s[i].dot(&d.f[c]);
        }
        if dm.root_pose[p].is_none() {
            let fp = d.x_pc[j].act_force(&d.f[c]);
            d.f[p] += fp;
        }
    }
}

/// Body velocities [ω; v] in each body's frame (at the body origin) from generalized velocities v, root to leaves
/// (RNEA's forward pass without accelerations); bodies not moved by a joint keep `d.vel`. Expects `d.x_pc` from
/// forward kinematics.
pub fn body_velocities<T: Scalar>(dm: &DynModel<T>, d: &mut DynData<T>, v: &[T]) {
    for j in 0..dm.parent.len() {
        let (p, c) = (dm.parent[j], dm.child[j]);
        let jm = &dm.joint[j];
        let mut vc = d.x_pc[j].inv_act_motion(&d.vel[p]);
        for i in 0..jm.nv {
            vc += jm.s[i] * v[dm.v_start[j] + i];
        }
        d.vel[c] = vc;
    }
}
