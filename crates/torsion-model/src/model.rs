//! The static model (Newton's `Model`, MuJoCo's `mjModel`): bodies, joints, gravity, dt.
//!
//! Body frames have their origin at the COM and the orientation of the link frame they come from (URDF link
//! frame); the inertia is expressed about the COM in that frame. A joint is described symmetrically by its
//! joint frame seen from the parent body (anchor `r` + orientation) and from the child body (anchor `t` +
//! orientation), as Newton's `joint_X_p` / `joint_X_c`; the axis is given in the joint frame. This is the
//! data of spec 000 §3.0 (r, t, b, a, n^P, n^C) and also what a generalized-coordinate solver needs.
use crate::error::ModelError;
use crate::extras::ModelExtras;
use crate::shape::Shape;
use crate::state::MaximalState;
use torsion_math::{Mat3, Quat, Vec3};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JointType {
    /// one rotational DoF about `joint_axis` (URDF revolute / continuous)
    Revolute,
    /// one translational DoF along `joint_axis`
    Prismatic,
    /// no DoF (loaders merge fixed joints into the parent; a builder may still create them)
    Fixed,
    /// three rotational DoF (point coincidence only); q = unit quaternion (w, x, y, z) of the child joint
    /// frame relative to the parent's, v = angular velocity in the child joint frame
    Ball,
    /// six DoF (floating base / loose object); q = (x, y, z, qw, qx, qy, qz): position of the child joint frame
    /// in the parent joint frame and its orientation; v = (ω, v) in the child joint frame (body frame,
    /// angular first, as Featherstone and Pinocchio's local convention)
    Free,
}

impl JointType {
    /// velocity dimension nv
    pub fn dof(&self) -> usize {
        match self {
            JointType::Revolute | JointType::Prismatic => 1,
            JointType::Fixed => 0,
            JointType::Ball => 3,
            JointType::Free => 6,
        }
    }
    /// configuration dimension nq
    pub fn nq(&self) -> usize {
        match self {
            JointType::Ball => 4,
            JointType::Free => 7,
            t => t.dof(),
        }
    }
}

/// Series-elastic counterbalance spring on a hinge (spec 000 §3.11, Eq. 31 with the θ-dependent length fix):
/// τ_s = sign · sin(γ) · (l1 l2 / x) · k (x − x_rest), γ = π − α1 − α2 − θ,
/// x = sqrt(l1² + l2² + 2 l1 l2 cos γ)   (literal paper form: x without θ, flag `literal`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JointSpring {
    /// stiffness, N/m
    pub k: f64,
    /// fixed geometric angle, rad
    pub alpha1: f64,
    /// offset angle, rad
    pub alpha2: f64,
    /// lever arms of the attachment points from the pivot, m
    pub l1: f64,
    pub l2: f64,
    /// spring rest length, m
    pub x_rest: f64,
    /// +1 or −1: sign of the torque about the joint axis (spec 000 §3.11 leaves it open)
    pub sign: f64,
    /// use the printed Eq. 31 (x independent of θ) instead of the corrected one
    pub literal: bool,
}

#[derive(Clone, Debug)]
pub struct Model {
    pub name: String,
    /// gravity, world, m/s²
    pub gravity: Vec3,
    /// default time step, s
    pub dt: f64,
    /// the integrator the model asks for (MJCF `<option integrator>`; default Euler); the CLI's default, a
    /// solver's options choose (`FeatherstoneOptions::integrator`)
    pub integrator: crate::Integrator,

    /// body names; shape (body_count,)
    pub body_name: Vec<String>,
    /// mass, kg (fixed bodies: ignored, treated as infinite). A non-fixed body with mass 0 *and* inertia 0 is a
    /// *virtual* body: a massless link between two joints of one MJCF body (the MJCF loader names it
    /// "body/joint", places it at the MJCF body frame with `body_com` 0, and always gives it a child joint
    /// towards a massive body); `validate` accepts it. Maximal-coordinate solvers cannot move such a body.
    pub body_mass: Vec<f64>,
    /// inertia about the COM in the body frame, kg·m² (symmetric positive definite)
    pub body_inertia: Vec<Mat3>,
    /// fixed (infinite-mass) bodies: the world and robot bases
    pub body_fixed: Vec<bool>,
    /// COM position in the source link frame, m (to recover link poses: x_link = x − R c)
    pub body_com: Vec<Vec3>,
    /// COM pose (world) at the zero configuration; the pose of fixed bodies is always this one
    pub body_pose0: Vec<(Vec3, Quat)>,

    pub joint_name: Vec<String>,
    pub joint_type: Vec<JointType>,
    /// parent body index; shape (joint_count,); joints are ordered parent-before-child (topological)
    pub joint_parent: Vec<usize>,
    pub joint_child: Vec<usize>,
    /// r: parent COM → joint point, parent body frame, m
    pub joint_anchor_parent: Vec<Vec3>,
    /// t: child COM → joint point, child body frame, m
    pub joint_anchor_child: Vec<Vec3>,
    /// joint frame orientation seen from the parent body frame
    pub joint_frame_parent: Vec<Quat>,
    /// joint frame orientation seen from the child body frame (equal to the parent's at joint position 0)
    pub joint_frame_child: Vec<Quat>,
    /// unit axis in the joint frame
    pub joint_axis: Vec<Vec3>,
    /// position limits [lo, hi] (rad or m); None = unlimited (not differentiable)
    pub joint_limit: Vec<Option<(f64, f64)>>,
    /// viscous damping, N·m·s/rad (URDF `dynamics damping`; kept, applied only where a solver says so)
    pub joint_damping: Vec<f64>,
    /// effort limit, N·m (informative)
    pub joint_effort: Vec<f64>,
    /// optional spring element on a hinge
    pub joint_spring: Vec<Option<JointSpring>>,
    /// MuJoCo armature (reflected rotor inertia), kg·m² or kg, added to the mass-matrix diagonal of each of the
    /// joint's DoFs; shape (joint_count,); 0 for URDF / builder models
    pub joint_armature: Vec<f64>,
    /// MuJoCo joint stiffness, N·m/rad or N/m: τ = −k (q − springref) on 1-DoF joints (MuJoCo also springs
    /// ball/free joints towards qpos0; that is kept here but not defined for solvers yet); shape (joint_count,)
    pub joint_stiffness: Vec<f64>,
    /// spring reference position (rad or m) of 1-DoF joints, 0 for others; shape (joint_count,)
    pub joint_springref: Vec<f64>,
    /// MuJoCo dry friction loss, N·m or N: a per-DoF box |f| ≤ frictionloss on the joint's velocity (applied by
    /// the Featherstone stepper, `joint_friction.rs`); shape (joint_count,)
    pub joint_frictionloss: Vec<f64>,
    /// reference configuration, layout of [`Model::nq`] (MuJoCo `qpos0`): the configuration in which the model
    /// file places the bodies (free joints at the declared body pose, ball joints identity, hinge/slide 0 or
    /// their MJCF `ref`); equals [`Model::neutral_q`] for URDF and builder models
    pub qpos0: Vec<f64>,
    /// fluid density ρ, kg/m³ (MuJoCo `option density`): quadratic drag of MuJoCo's inertia-box fluid model
    /// (torsion-dynamics `fluid.rs`); 0 = off
    pub fluid_density: f64,
    /// fluid dynamic viscosity β, Pa·s (MuJoCo `option viscosity`): Stokes drag of the same model; 0 = off
    pub fluid_viscosity: f64,
    /// fluid velocity in the world, m/s (MuJoCo `option wind`); the fluid forces act on the body velocity
    /// relative to it
    pub wind: Vec3,
    /// whether contact-capable solvers detect contacts (MJCF `<flag contact="disable"/>` or
    /// `constraint="disable"` clear it); true for URDF and builder models
    pub contact_enabled: bool,
    /// collision / visual shapes attached to bodies (MJCF geoms, URDF collisions), in file order
    pub shapes: Vec<Shape>,
    /// body pairs whose shapes never collide, any order (MJCF `<contact><exclude>` style); the URDF loader lists
    /// every joint's (parent, child) pair: adjacent links never collide, the fixed base included (docs/decisions.md)
    pub contact_exclude: Vec<(usize, usize)>,
    /// the file the model was loaded from (set by `load_urdf`); `package://` mesh names are also looked up in
    /// the folders above it
    pub source_file: Option<std::path::PathBuf>,
    /// spring-damper cables between body points (MJCF two-site `<spatial>` tendons; spec 003 §3.4, `tendon.rs`)
    pub cables: Vec<crate::tendon::Cable>,
    /// actuators on cables and hinge / slide joints (MJCF `<motor>` / `<position>` / `<velocity>` / `<general>`;
    /// spec 003 §3.3, `tendon.rs`): the controls (nu) and activation states (na) of the generalized-coordinate
    /// steppers
    pub cable_actuators: Vec<crate::tendon::CableActuator>,
    /// spec 003 §3.6's linear contact model (β, e, γ, μ, ε) for capsule / cylinder rods against planes and each
    /// other, applied by the Featherstone stepper; None = off (MJCF `<custom><numeric
    /// name="torsion_linear_contact" data="β e γ μ ε"/>`, `builder::tensegrity_prism_on_ground`)
    pub tensegrity_contact: Option<crate::tendon::LinearContact>,
    /// sites, actuators, tendons (raw, as parsed) and loader warnings
    pub extras: ModelExtras,
}

impl Model {
    pub fn empty(name: &str) -> Self {
        Model {
            name: name.to_string(),
            gravity: Vec3::new(0.0, 0.0, -9.8),
            dt: 0.01,
            integrator: crate::Integrator::SemiImplicitEuler,
            body_name: vec![],
            body_mass: vec![],
            body_inertia: vec![],
            body_fixed: vec![],
            body_com: vec![],
            body_pose0: vec![],
            joint_name: vec![],
            joint_type: vec![],
            joint_parent: vec![],
            joint_child: vec![],
            joint_anchor_parent: vec![],
            joint_anchor_child: vec![],
            joint_frame_parent: vec![],
            joint_frame_child: vec![],
            joint_axis: vec![],
            joint_limit: vec![],
            joint_damping: vec![],
            joint_effort: vec![],
            joint_spring: vec![],
            joint_armature: vec![],
            joint_stiffness: vec![],
            joint_springref: vec![],
            joint_frictionloss: vec![],
            qpos0: vec![],
            fluid_density: 0.0,
            fluid_viscosity: 0.0,
            wind: Vec3::zeros(),
            contact_enabled: true,
            shapes: vec![],
            contact_exclude: vec![],
            source_file: None,
            cables: vec![],
            cable_actuators: vec![],
            tensegrity_contact: None,
            extras: ModelExtras::default(),
        }
    }
    pub fn body_count(&self) -> usize {
        self.body_name.len()
    }
    pub fn joint_count(&self) -> usize {
        self.joint_name.len()
    }
    /// Append one body's row of the `body_*` columns (the one place that writes them: builder and loaders);
    /// returns its index.
    pub fn push_body(
        &mut self,
        name: String,
        fixed: bool,
        mass: f64,
        inertia: Mat3,
        com: Vec3,
        pose0: (Vec3, Quat),
    ) -> usize {
        self.body_name.push(name);
        self.body_fixed.push(fixed);
        self.body_mass.push(mass);
        self.body_inertia.push(inertia);
        self.body_com.push(com);
        self.body_pose0.push(pose0);
        self.body_count() - 1
    }
    /// Append one joint's row of the `joint_*` columns (the one place that writes them: builder and loaders; the
    /// destructuring names every field, so a new column cannot be missed); returns its index. `qpos0` is the
    /// caller's.
    pub fn push_joint(&mut self, d: crate::builder::JointDesc) -> usize {
        let crate::builder::JointDesc {
            name,
            kind,
            parent,
            child,
            anchor_parent,
            anchor_child,
            frame_parent,
            frame_child,
            axis,
            limit,
            damping,
            effort,
            spring,
            armature,
            stiffness,
            springref,
            frictionloss,
        } = d;
        self.joint_name.push(name);
        self.joint_type.push(kind);
        self.joint_parent.push(parent);
        self.joint_child.push(child);
        self.joint_anchor_parent.push(anchor_parent);
        self.joint_anchor_child.push(anchor_child);
        self.joint_frame_parent.push(frame_parent);
        self.joint_frame_child.push(frame_child);
        self.joint_axis.push(axis);
        self.joint_limit.push(limit);
        self.joint_damping.push(damping);
        self.joint_effort.push(effort);
        self.joint_spring.push(spring);
        self.joint_armature.push(armature);
        self.joint_stiffness.push(stiffness);
        self.joint_springref.push(springref);
        self.joint_frictionloss.push(frictionloss);
        self.joint_count() - 1
    }
    /// Indices of the non-fixed bodies (the ones a maximal-coordinate solver moves).
    pub fn dynamic_bodies(&self) -> Vec<usize> {
        (0..self.body_count()).filter(|&k| !self.body_fixed[k]).collect()
    }
    pub fn body_index(&self, name: &str) -> Option<usize> {
        self.body_name.iter().position(|n| n == name)
    }
    pub fn joint_index(&self, name: &str) -> Option<usize> {
        self.joint_name.iter().position(|n| n == name)
    }
    /// Hinge axis in the parent body frame (b of spec 000 §3.0).
    pub fn joint_axis_parent(&self, j: usize) -> Vec3 {
        self.joint_frame_parent[j].rotate(&self.joint_axis[j])
    }
    /// Hinge axis in the child body frame (a).
    pub fn joint_axis_child(&self, j: usize) -> Vec3 {
        self.joint_frame_child[j].rotate(&self.joint_axis[j])
    }
    /// Angle reference vector ⟂ axis in the joint frame: e_x unless the axis is (anti)parallel to it.
    pub fn joint_reference(&self, j: usize) -> Vec3 {
        perpendicular(&self.joint_axis[j])
    }
    /// Reference vectors n^P, n^C (spec 000 §3.6): they coincide in the world at joint angle 0.
    pub fn joint_refs(&self, j: usize) -> (Vec3, Vec3) {
        let n = self.joint_reference(j);
        (self.joint_frame_parent[j].rotate(&n), self.joint_frame_child[j].rotate(&n))
    }

    /// Configuration dimension: Σ nq over joints (see [`JointType::nq`] for each joint's layout).
    pub fn nq(&self) -> usize {
        self.joint_type.iter().map(|t| t.nq()).sum()
    }
    /// Velocity dimension: Σ nv over joints.
    pub fn nv(&self) -> usize {
        self.joint_type.iter().map(|t| t.dof()).sum()
    }
    /// Offset of each joint's entries in q and in v.
    pub fn joint_q_start(&self) -> Vec<usize> {
        self.joint_offsets(JointType::nq)
    }
    pub fn joint_v_start(&self) -> Vec<usize> {
        self.joint_offsets(JointType::dof)
    }
    /// Running sum of `size` over joints: the offset of each joint's block.
    fn joint_offsets(&self, size: impl Fn(&JointType) -> usize) -> Vec<usize> {
        self.joint_type
            .iter()
            .scan(0, |o, t| {
                let s = *o;
                *o += size(t);
                Some(s)
            })
            .collect()
    }
    /// The model's default configuration: [`Model::qpos0`] (for MJCF, where the file places the bodies), or
    /// [`Model::zero_q`] while `qpos0` does not have nq entries (a model under construction).
    pub fn neutral_q(&self) -> Vec<f64> {
        if self.qpos0.len() == self.nq() {
            return self.qpos0.clone();
        }
        self.zero_q()
    }

    /// The zero configuration: 0 for 1-DoF joints, identity quaternions, free joints at the origin.
    pub fn zero_q(&self) -> Vec<f64> {
        let mut q = Vec::with_capacity(self.nq());
        for t in &self.joint_type {
            match t {
                JointType::Ball => q.extend_from_slice(&[1.0, 0.0, 0.0, 0.0]),
                JointType::Free => q.extend_from_slice(&[0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]),
                t => q.extend(std::iter::repeat_n(0.0, t.nq())),
            }
        }
        q
    }

    /// Generalized joint positions (layout of [`Model::nq`]) → world COM poses of every body (fixed and free
    /// root bodies keep `body_pose0`).
    pub fn forward_kinematics(&self, q: &[f64]) -> Result<Vec<(Vec3, Quat)>, ModelError> {
        let (mut pose, mut done) = (vec![], vec![]);
        self.forward_kinematics_into(q, &mut pose, &mut done)?;
        Ok(pose)
    }

    /// [`Model::forward_kinematics`] into `pose` with the scratch `done` (both refilled in place: no
    /// allocation once they have the body count's capacity).
    pub fn forward_kinematics_into(
        &self,
        q: &[f64],
        pose: &mut Vec<(Vec3, Quat)>,
        done: &mut Vec<bool>,
    ) -> Result<(), ModelError> {
        if q.len() != self.nq() {
            return Err(ModelError::Invalid(format!(
                "joint position vector has {} entries, the model needs {} (joints: {})",
                q.len(),
                self.nq(),
                self.joint_name.join(", ")
            )));
        }
        pose.clear();
        pose.extend_from_slice(&self.body_pose0);
        self.root_bodies_into(done);
        let mut iq = 0;
        for j in 0..self.joint_count() {
            let (p, c) = (self.joint_parent[j], self.joint_child[j]);
            if !done[p] {
                return Err(ModelError::Invalid(format!(
                    "joint '{}' appears before the joint that places its parent body '{}'",
                    self.joint_name[j], self.body_name[p]
                )));
            }
            let (xp, qp) = pose[p];
            let mut rel = Quat::identity();
            let mut slide = Vec3::zeros();
            match self.joint_type[j] {
                JointType::Revolute => {
                    rel = Quat::from_axis_angle(&self.joint_axis[j], q[iq]);
                    iq += 1
                }
                JointType::Prismatic => {
                    slide = self.joint_axis[j] * q[iq];
                    iq += 1
                }
                JointType::Ball => {
                    rel = Quat::new(q[iq], q[iq + 1], q[iq + 2], q[iq + 3]).normalize();
                    iq += 4
                }
                JointType::Free => {
                    slide = Vec3::new(q[iq], q[iq + 1], q[iq + 2]);
                    rel = Quat::new(q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6]).normalize();
                    iq += 7
                }
                JointType::Fixed => {}
            }
            // joint frame in world (parent side), then child frame = joint ∘ rel ∘ (child-side frame)⁻¹
            let qj = qp.mul(&self.joint_frame_parent[j]);
            let xj = xp + qp.rotate(&self.joint_anchor_parent[j]) + qj.rotate(&slide);
            let qc = qj.mul(&rel).mul(&self.joint_frame_child[j].conj()).normalize();
            let xc = xj - qc.rotate(&self.joint_anchor_child[j]);
            pose[c] = (xc, qc);
            done[c] = true;
        }
        Ok(())
    }

    /// A state at rest at joint positions `q` (see [`Model::forward_kinematics`]).
    pub fn state_at(&self, q: &[f64]) -> Result<MaximalState, ModelError> {
        let pose = self.forward_kinematics(q)?;
        let mut s = MaximalState::zeros(self.body_count());
        for (k, (x, r)) in pose.into_iter().enumerate() {
            s.x[k] = x;
            s.q[k] = r;
        }
        Ok(s)
    }

    /// Bodies placed by `body_pose0` rather than by a joint: fixed bodies and free (jointless) bodies.
    pub fn root_bodies(&self) -> Vec<bool> {
        let mut root = vec![];
        self.root_bodies_into(&mut root);
        root
    }

    /// [`Model::root_bodies`] into `root` (refilled in place).
    pub fn root_bodies_into(&self, root: &mut Vec<bool>) {
        root.clear();
        root.resize(self.body_count(), true);
        for &c in &self.joint_child {
            if c < root.len() && !self.body_fixed[c] {
                root[c] = false;
            }
        }
    }

    /// Number of one-DoF joints (entries of a joint-position vector).
    pub fn dof_joints(&self) -> Vec<usize> {
        (0..self.joint_count()).filter(|&j| self.joint_type[j].dof() == 1).collect()
    }

    /// Check the invariants every solver relies on; loaders and builders call it.
    pub fn validate(&self) -> Result<(), ModelError> {
        self.validate_with(true)
    }

    /// [`Model::validate`]; with `signs` false the joint constants (damping, armature, stiffness, frictionloss)
    /// need only be finite: `params_set` writes of an optimiser or a central difference may cross 0 (frictionloss
    /// 0 is where dry friction switches on), while the loaders and builders refuse negative values.
    pub(crate) fn validate_with(&self, signs: bool) -> Result<(), ModelError> {
        let nb = self.body_count();
        let nj = self.joint_count();
        let lens = [
            self.body_mass.len(),
            self.body_inertia.len(),
            self.body_fixed.len(),
            self.body_com.len(),
            self.body_pose0.len(),
        ];
        if lens.iter().any(|&l| l != nb) {
            return Err(ModelError::Invalid("body arrays have different lengths".into()));
        }
        let jl = [
            self.joint_type.len(),
            self.joint_parent.len(),
            self.joint_child.len(),
            self.joint_anchor_parent.len(),
            self.joint_anchor_child.len(),
            self.joint_frame_parent.len(),
            self.joint_frame_child.len(),
            self.joint_axis.len(),
            self.joint_limit.len(),
            self.joint_damping.len(),
            self.joint_effort.len(),
            self.joint_spring.len(),
            self.joint_armature.len(),
            self.joint_stiffness.len(),
            self.joint_springref.len(),
            self.joint_frictionloss.len(),
        ];
        if jl.iter().any(|&l| l != nj) {
            return Err(ModelError::Invalid("joint arrays have different lengths".into()));
        }
        if self.qpos0.len() != self.nq() {
            return Err(ModelError::Invalid(format!(
                "qpos0 has {} entries, the model needs nq = {}",
                self.qpos0.len(),
                self.nq()
            )));
        }
        if let Some(s) = self.shapes.iter().find(|s| s.body >= nb) {
            return Err(ModelError::Invalid(format!("shape '{}': body index {} out of range", s.name, s.body)));
        }
        if let Some((a, b)) = self.contact_exclude.iter().find(|&&(a, b)| a >= nb || b >= nb) {
            return Err(ModelError::Invalid(format!(
                "contact_exclude has the body pair ({a}, {b}) but the model has {nb} bodies"
            )));
        }
        for s in &self.shapes {
            let mu = s.friction[0];
            if !(mu >= 0.0 && mu.is_finite()) {
                return Err(ModelError::Invalid(format!(
                    "shape '{}': sliding friction (shape_friction) must be ≥ 0 and finite, got {mu}",
                    s.name
                )));
            }
            if !(0.0..=1.0).contains(&s.restitution) {
                return Err(ModelError::Invalid(format!(
                    "shape '{}': restitution (shape_restitution) must be in [0, 1], got {}",
                    s.name, s.restitution
                )));
            }
        }
        for (what, x) in [("fluid_density", self.fluid_density), ("fluid_viscosity", self.fluid_viscosity)] {
            if !(x >= 0.0 && x.is_finite()) {
                return Err(ModelError::Invalid(format!("{what} must be ≥ 0 and finite, got {x}")));
            }
        }
        if !self.wind.iter().all(|w| w.is_finite()) {
            return Err(ModelError::Invalid(format!("wind must be finite, got {:?}", self.wind.as_slice())));
        }
        for (f, vals) in self.joint_passive_fields().iter().enumerate() {
            // finite only: central differences of the parameters cross 0 (a friction loss ≤ 0 is no friction)
            if let Some((j, x)) = vals.iter().enumerate().find(|(_, x)| !x.is_finite()) {
                return Err(ModelError::Invalid(format!(
                    "joint '{}': {} must be finite, got {x}",
                    self.joint_name[j],
                    crate::params::JOINT_PASSIVE_NAMES[f]
                )));
            }
        }
        self.validate_cables()?;
        if !(self.dt > 0.0 && self.dt.is_finite()) {
            return Err(ModelError::Invalid(format!("dt must be positive and finite, got {}", self.dt)));
        }
        for k in 0..nb {
            if self.body_fixed[k] {
                continue;
            }
            let m = self.body_mass[k];
            if m == 0.0 && self.body_inertia[k] == Mat3::zeros() {
                continue; // virtual body
            }
            if !(m > 0.0 && m.is_finite()) {
                return Err(ModelError::Invalid(format!(
                    "body '{}': mass must be > 0 and finite, got {m}",
                    self.body_name[k]
                )));
            }
            let i = self.body_inertia[k];
            if (i - i.transpose()).norm() > 1e-12 * (1.0 + i.norm()) || i.cholesky().is_none() {
                return Err(ModelError::Invalid(format!(
                    "body '{}': inertia must be symmetric positive definite, got {:?}",
                    self.body_name[k],
                    i.as_slice()
                )));
            }
        }
        let mut placed = self.root_bodies();
        for j in 0..nj {
            let (p, c) = (self.joint_parent[j], self.joint_child[j]);
            if p >= nb || c >= nb || p == c {
                return Err(ModelError::Invalid(format!("joint '{}': bad parent/child indices", self.joint_name[j])));
            }
            if !placed[p] {
                return Err(ModelError::Invalid(format!(
                    "joint '{}': parent body '{}' is not placed by an earlier joint (joints must be ordered parent-first)",
                    self.joint_name[j], self.body_name[p]
                )));
            }
            if placed[c] && !self.body_fixed[c] {
                return Err(ModelError::Invalid(format!(
                    "joint '{}': child body '{}' already has a parent joint (kinematic loops are not supported)",
                    self.joint_name[j], self.body_name[c]
                )));
            }
            if self.body_fixed[c] {
                return Err(ModelError::Invalid(format!(
                    "joint '{}': child body '{}' is fixed",
                    self.joint_name[j], self.body_name[c]
                )));
            }
            placed[c] = true;
            let constants = [
                ("damping", self.joint_damping[j]),
                ("armature", self.joint_armature[j]),
                ("stiffness", self.joint_stiffness[j]),
                ("frictionloss", self.joint_frictionloss[j]),
            ];
            if let Some((what, v)) = constants.iter().find(|(_, v)| !(v.is_finite() && (!signs || *v >= 0.0))) {
                return Err(ModelError::Invalid(format!(
                    "joint '{}': {what} must be finite and ≥ 0, got {v}",
                    self.joint_name[j]
                )));
            }
            let a = self.joint_axis[j].norm();
            if self.joint_type[j].dof() == 1 && (a - 1.0).abs() > 1e-9 {
                return Err(ModelError::Invalid(format!("joint '{}': axis must be a unit vector", self.joint_name[j])));
            }
            if let Some((lo, hi)) = self.joint_limit[j] {
                if lo > hi || !lo.is_finite() || !hi.is_finite() {
                    return Err(ModelError::Invalid(format!(
                        "joint '{}': limit lower {lo} > upper {hi}",
                        self.joint_name[j]
                    )));
                }
            }
        }
        Ok(())
    }
}

/// A unit vector ⟂ `a` (e_x projected, or e_y if `a` ∥ e_x).
pub fn perpendicular(a: &Vec3) -> Vec3 {
    let a = a.normalize();
    let ex = Vec3::x();
    let base = if a.dot(&ex).abs() > 0.9 { Vec3::y() } else { ex };
    (base - a * a.dot(&base)).normalize()
}
