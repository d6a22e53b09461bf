//! The named, flat view of differentiable model quantities (design.md §1 `Params` / `ModelGrad`).
//!
//! Every dynamic body contributes its mass and the 6 entries of its inertia; every joint its two anchors
//! r (parent side) and t (child side), 3 entries each (= link geometry); every spring its 6 constants; every
//! shape its contact material: sliding friction `shape_friction[shape]` (= `friction[0]`) and Newton restitution
//! `shape_restitution[shape]` (read by the contact solvers, which combine a pair's two shapes by the maximum;
//! the other solvers do not read them: their columns are zero). Shapes are named by `Shape::name`; a name
//! that several shapes share gets the shape's index appended (`shape_friction[geom#3]`) so every entry has one
//! name. Cables contribute `tendon_stiffness[cable]` and `tendon_damping[cable]`, their actuators
//! `actuator_gain[actuator]` and, for filter actuators, `actuator_timeconst[actuator]` (spec 003's k/m, c/m, b, a:
//! see `tendon.rs`); the linear contact model (`Model::tensegrity_contact`) its 5 global `contact_beta`, `contact_e`,
//! `contact_gamma`, `contact_mu`, `contact_eps`. Every joint with DoFs has its passive terms `joint_damping[joint]`
//! (viscous, N·m·s/rad or N·s/m), `joint_armature[joint]` (kg·m² or kg) and `joint_frictionloss[joint]` (MuJoCo's
//! dry friction, N·m or N), one value shared by the joint's DoFs as MuJoCo's; read by the Featherstone stepper.
//! Joint axes and limits are not differentiable. A `ModelGrad` is a `Vec<f64>` of the table's length.
use crate::error::ModelError;
use crate::model::Model;

pub const INERTIA_NAMES: [&str; 6] = ["ixx", "ixy", "ixz", "iyy", "iyz", "izz"];
/// (row, col) of each inertia entry.
pub const INERTIA_IDX: [(usize, usize); 6] = [(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)];
pub const AXIS_NAMES: [&str; 3] = ["x", "y", "z"];
pub const SPRING_NAMES: [&str; 6] = ["k", "alpha1", "alpha2", "l1", "l2", "x_rest"];
/// The per-joint passive parameters, in the order of [`ParamKind::JointPassive`]'s field index and of the
/// `joint_passive` slots of [`scatter_params`].
pub const JOINT_PASSIVE_NAMES: [&str; 3] = ["joint_damping", "joint_armature", "joint_frictionloss"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    BodyMass(usize),
    /// body, entry index into [`INERTIA_IDX`]
    BodyInertia(usize, usize),
    /// joint, axis
    AnchorParent(usize, usize),
    AnchorChild(usize, usize),
    /// joint, field index into [`SPRING_NAMES`]
    Spring(usize, usize),
    /// shape: sliding friction coefficient `shapes[k].friction[0]` (≥ 0)
    ShapeFriction(usize),
    /// shape: Newton restitution coefficient `shapes[k].restitution` (∈ [0, 1])
    ShapeRestitution(usize),
    /// cable k: stiffness `cables[k].stiffness` (`tendon_stiffness[name]`, N/m; spec 003's k, k/m per rod mass)
    TendonStiffness(usize),
    /// cable k: damping `cables[k].damping` (`tendon_damping[name]`, N·s/m; spec 003's c)
    TendonDamping(usize),
    /// actuator a (cable or joint): gain `cable_actuators[a].gain` (`actuator_gain[name]`, gear folded in; spec
    /// 003's b = gain / k)
    ActuatorGain(usize),
    /// cable actuator a (filter): time constant τ (`actuator_timeconst[name]`, s; spec 003's a = Δt / τ)
    ActuatorTimeconst(usize),
    /// the linear contact model's parameter k ∈ 0..5 (β, e, γ, μ, ε; `Model::tensegrity_contact`, names
    /// `tendon::LINEAR_CONTACT_NAMES`), read by the Featherstone stepper's contact kernel
    LinearContact(usize),
    /// joint j, field f into [`JOINT_PASSIVE_NAMES`]: 0 viscous damping `joint_damping[j]`, 1 armature
    /// `joint_armature[j]`, 2 dry friction `joint_frictionloss[j]` (shared by the joint's DoFs; physical values
    /// are ≥ 0, a friction loss ≤ 0 is no friction; only finiteness is validated, so differences may cross 0)
    JointPassive(usize, usize),
}

impl ParamKind {
    /// A contact-material parameter (shape friction / restitution): read by the contact solvers only, never by
    /// the rigid-body dynamics (`scatter_params` ignores it).
    pub fn is_contact_material(&self) -> bool {
        matches!(self, ParamKind::ShapeFriction(_) | ParamKind::ShapeRestitution(_))
    }
    /// A parameter of the linear contact model (read by torsion-dynamics `tensegrity_contact.rs`).
    pub fn is_linear_contact(&self) -> bool {
        matches!(self, ParamKind::LinearContact(_))
    }
    /// A cable or cable-actuator parameter (read by the cable kernel, `torsion_dynamics::passive`, not by
    /// `scatter_params`).
    pub fn is_cable(&self) -> bool {
        matches!(
            self,
            ParamKind::TendonStiffness(_)
                | ParamKind::TendonDamping(_)
                | ParamKind::ActuatorGain(_)
                | ParamKind::ActuatorTimeconst(_)
        )
    }
}

#[derive(Clone, Debug)]
pub struct ParamTable {
    pub names: Vec<String>,
    pub kinds: Vec<ParamKind>,
}

impl ParamTable {
    pub fn len(&self) -> usize {
        self.names.len()
    }
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
    pub fn index(&self, name: &str) -> Result<usize, ModelError> {
        self.names.iter().position(|n| n == name).ok_or_else(|| ModelError::UnknownParam(name.to_string()))
    }
}

/// A subset of the parameter table (indices into it), e.g. the quantities one identification optimises.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ParamSelection {
    pub indices: Vec<usize>,
}

impl ParamSelection {
    pub fn none() -> Self {
        Self { indices: vec![] }
    }
    pub fn all(model: &Model) -> Self {
        Self { indices: (0..model.param_table().len()).collect() }
    }
    /// Every parameter but the contact material: the quantities the rigid-body dynamics reads (masses, inertias,
    /// joint anchors, springs).
    pub fn dynamics(model: &Model) -> Self {
        let t = model.param_table();
        Self { indices: (0..t.len()).filter(|&i| !t.kinds[i].is_contact_material()).collect() }
    }
    pub fn by_names(model: &Model, names: &[&str]) -> Result<Self, ModelError> {
        let t = model.param_table();
        Ok(Self { indices: names.iter().map(|n| t.index(n)).collect::<Result<_, _>>()? })
    }
    /// Every parameter whose name starts with `prefix` (e.g. "body_mass[" or "joint_spring[left_s1]").
    pub fn by_prefix(model: &Model, prefix: &str) -> Self {
        let t = model.param_table();
        Self { indices: (0..t.len()).filter(|&i| t.names[i].starts_with(prefix)).collect() }
    }
    pub fn len(&self) -> usize {
        self.indices.len()
    }
    pub fn is_empty(&self) -> bool {
        self.indices.is_empty()
    }
}

impl Model {
    /// The full differentiable-parameter table, in a fixed order.
    pub fn param_table(&self) -> ParamTable {
        let mut names = vec![];
        let mut kinds = vec![];
        for b in 0..self.body_count() {
            if self.body_fixed[b] {
                continue;
            }
            names.push(format!("body_mass[{}]", self.body_name[b]));
            kinds.push(ParamKind::BodyMass(b));
            for (i, n) in INERTIA_NAMES.iter().enumerate() {
                names.push(format!("body_inertia[{}].{n}", self.body_name[b]));
                kinds.push(ParamKind::BodyInertia(b, i));
            }
        }
        for j in 0..self.joint_count() {
            for (a, n) in AXIS_NAMES.iter().enumerate() {
                names.push(format!("joint_anchor_parent[{}].{n}", self.joint_name[j]));
                kinds.push(ParamKind::AnchorParent(j, a));
            }
            for (a, n) in AXIS_NAMES.iter().enumerate() {
                names.push(format!("joint_anchor_child[{}].{n}", self.joint_name[j]));
                kinds.push(ParamKind::AnchorChild(j, a));
            }
            if self.joint_spring[j].is_some() {
                for (f, n) in SPRING_NAMES.iter().enumerate() {
                    names.push(format!("joint_spring[{}].{n}", self.joint_name[j]));
                    kinds.push(ParamKind::Spring(j, f));
                }
            }
        }
        for j in 0..self.joint_count() {
            if self.joint_type[j].dof() == 0 {
                continue;
            }
            for (f, n) in JOINT_PASSIVE_NAMES.iter().enumerate() {
                names.push(format!("{n}[{}]", self.joint_name[j]));
                kinds.push(ParamKind::JointPassive(j, f));
            }
        }
        for k in 0..self.shapes.len() {
            let n = self.shape_param_name(k);
            names.push(format!("shape_friction[{n}]"));
            kinds.push(ParamKind::ShapeFriction(k));
            names.push(format!("shape_restitution[{n}]"));
            kinds.push(ParamKind::ShapeRestitution(k));
        }
        for (k, c) in self.cables.iter().enumerate() {
            names.push(format!("tendon_stiffness[{}]", c.name));
            kinds.push(ParamKind::TendonStiffness(k));
            names.push(format!("tendon_damping[{}]", c.name));
            kinds.push(ParamKind::TendonDamping(k));
        }
        for (k, a) in self.cable_actuators.iter().enumerate() {
            names.push(format!("actuator_gain[{}]", a.name));
            kinds.push(ParamKind::ActuatorGain(k));
            if a.timeconst.is_some() {
                names.push(format!("actuator_timeconst[{}]", a.name));
                kinds.push(ParamKind::ActuatorTimeconst(k));
            }
        }
        if self.tensegrity_contact.is_some() {
            for (k, n) in crate::tendon::LINEAR_CONTACT_NAMES.iter().enumerate() {
                names.push(n.to_string());
                kinds.push(ParamKind::LinearContact(k));
            }
        }
        ParamTable { names, kinds }
    }

    /// The name of shape k inside parameter names: its `name`, or `name#k` when another shape has the same name.
    pub fn shape_param_name(&self, k: usize) -> String {
        let name = &self.shapes[k].name;
        if self.shapes.iter().enumerate().any(|(i, s)| i != k && s.name == *name) {
            format!("{name}#{k}")
        } else {
            name.clone()
        }
    }

    pub fn param_get(&self, k: ParamKind) -> f64 {
        match k {
            ParamKind::BodyMass(b) => self.body_mass[b],
            ParamKind::BodyInertia(b, i) => {
                let (r, c) = INERTIA_IDX[i];
                self.body_inertia[b][(r, c)]
            }
            ParamKind::AnchorParent(j, a) => self.joint_anchor_parent[j][a],
            ParamKind::AnchorChild(j, a) => self.joint_anchor_child[j][a],
            ParamKind::Spring(j, f) => {
                let s = self.joint_spring[j].as_ref().expect("spring parameter of a joint without spring");
                [s.k, s.alpha1, s.alpha2, s.l1, s.l2, s.x_rest][f]
            }
            ParamKind::ShapeFriction(k) => self.shapes[k].friction[0],
            ParamKind::ShapeRestitution(k) => self.shapes[k].restitution,
            ParamKind::TendonStiffness(k) => self.cables[k].stiffness,
            ParamKind::TendonDamping(k) => self.cables[k].damping,
            ParamKind::ActuatorGain(k) => self.cable_actuators[k].gain,
            ParamKind::ActuatorTimeconst(k) => self.cable_actuators[k].timeconst.unwrap_or(0.0),
            ParamKind::LinearContact(k) => self.tensegrity_contact.map_or(0.0, |c| c.get(k)),
            ParamKind::JointPassive(j, f) => self.joint_passive_fields()[f][j],
        }
    }

    fn param_set_unchecked(&mut self, k: ParamKind, v: f64) {
        match k {
            ParamKind::BodyMass(b) => self.body_mass[b] = v,
            ParamKind::BodyInertia(b, i) => {
                let (r, c) = INERTIA_IDX[i];
                self.body_inertia[b][(r, c)] = v;
                self.body_inertia[b][(c, r)] = v;
            }
            ParamKind::AnchorParent(j, a) => self.joint_anchor_parent[j][a] = v,
            ParamKind::AnchorChild(j, a) => self.joint_anchor_child[j][a] = v,
            ParamKind::Spring(j, f) => {
                if let Some(s) = self.joint_spring[j].as_mut() {
                    match f {
                        0 => s.k = v,
                        1 => s.alpha1 = v,
                        2 => s.alpha2 = v,
                        3 => s.l1 = v,
                        4 => s.l2 = v,
                        _ => s.x_rest = v,
                    }
                }
            }
            ParamKind::ShapeFriction(k) => self.shapes[k].friction[0] = v,
            ParamKind::ShapeRestitution(k) => self.shapes[k].restitution = v,
            ParamKind::TendonStiffness(k) => self.cables[k].stiffness = v,
            ParamKind::TendonDamping(k) => self.cables[k].damping = v,
            ParamKind::ActuatorGain(k) => self.cable_actuators[k].gain = v,
            ParamKind::ActuatorTimeconst(k) => {
                if let Some(t) = self.cable_actuators[k].timeconst.as_mut() {
                    *t = v
                }
            }
            ParamKind::LinearContact(k) => {
                if let Some(c) = self.tensegrity_contact.as_mut() {
                    c.set(k, v)
                }
            }
            ParamKind::JointPassive(j, 0) => self.joint_damping[j] = v,
            ParamKind::JointPassive(j, 1) => self.joint_armature[j] = v,
            ParamKind::JointPassive(j, _) => self.joint_frictionloss[j] = v,
        }
    }

    /// The per-joint passive arrays in [`JOINT_PASSIVE_NAMES`] order (damping, armature, frictionloss).
    pub fn joint_passive_fields(&self) -> [&[f64]; 3] {
        [&self.joint_damping, &self.joint_armature, &self.joint_frictionloss]
    }

    /// All parameter values, in table order.
    pub fn param_vector(&self) -> Vec<f64> {
        self.param_table().kinds.iter().map(|&k| self.param_get(k)).collect()
    }

    /// Values of a selection.
    pub fn params_get(&self, sel: &ParamSelection) -> Vec<f64> {
        let t = self.param_table();
        sel.indices.iter().map(|&i| self.param_get(t.kinds[i])).collect()
    }

    /// Write the values of a selection, all or nothing: every value must be finite and every parameter named once
    /// (checked before any is written), then the model is validated (mass > 0, inertia SPD, shape friction ≥ 0,
    /// restitution in [0, 1]) and restored on error.
    pub fn params_set(&mut self, sel: &ParamSelection, values: &[f64]) -> Result<(), ModelError> {
        if values.len() != sel.len() {
            return Err(ModelError::ParamLength { got: values.len(), expected: sel.len() });
        }
        let t = self.param_table();
        // every value is checked before any is written (all-or-nothing, issue 20)
        if let Some((&i, v)) = sel.indices.iter().zip(values).find(|(_, v)| !v.is_finite()) {
            return Err(ModelError::Invalid(format!("parameter '{}' set to non-finite value {v}", t.names[i])));
        }
        for (k, &i) in sel.indices.iter().enumerate() {
            if sel.indices[..k].contains(&i) {
                return Err(ModelError::Invalid(format!("parameter '{}' given twice", t.names[i])));
            }
        }
        let backup = self.clone();
        for (&i, &v) in sel.indices.iter().zip(values) {
            self.param_set_unchecked(t.kinds[i], v);
        }
        if let Err(e) = self.validate_with(false) {
            *self = backup;
            return Err(e);
        }
        Ok(())
    }

    /// Set one parameter by name.
    pub fn param_set_by_name(&mut self, name: &str, v: f64) -> Result<(), ModelError> {
        let sel = ParamSelection::by_names(self, &[name])?;
        self.params_set(&sel, &[v])
    }
}

/// Write a parameter vector θ (table order) into per-body masses and COM inertias and per-joint anchors r / t
/// and spring constants, and per-joint passive terms `joint_passive[j]` = (damping, armature, frictionloss)
/// ([`JOINT_PASSIVE_NAMES`]; an empty slice skips them): the one place where θ is decoded (used by every solver's
/// θ → data step). Contact material entries are skipped (the contact solvers read them per contact,
/// `ncp/tangent.rs`).
#[allow(clippy::too_many_arguments)]
pub fn scatter_params<T: torsion_math::Scalar>(
    table: &ParamTable,
    theta: impl Fn(usize) -> T,
    mass: &mut [T],
    inertia: &mut [torsion_math::Mat3<T>],
    anchor_parent: &mut [torsion_math::Vec3<T>],
    anchor_child: &mut [torsion_math::Vec3<T>],
    spring: &mut [Option<[T; 6]>],
    joint_passive: &mut [[T; 3]],
) {
    for (i, k) in table.kinds.iter().enumerate() {
        let v = theta(i);
        match *k {
            ParamKind::BodyMass(b) => mass[b] = v,
            ParamKind::BodyInertia(b, e) => {
                let (r, c) = INERTIA_IDX[e];
                inertia[b][(r, c)] = v;
                inertia[b][(c, r)] = v;
            }
            ParamKind::AnchorParent(j, a) => anchor_parent[j][a] = v,
            ParamKind::AnchorChild(j, a) => anchor_child[j][a] = v,
            ParamKind::Spring(j, f) => {
                if let Some(s) = spring.get_mut(j).and_then(|s| s.as_mut()) {
                    s[f] = v
                }
            }
            ParamKind::JointPassive(j, f) => {
                if let Some(p) = joint_passive.get_mut(j) {
                    p[f] = v
                }
            }
            // contact material: the contact solvers; cables and the linear contact model: `DynModel::build`
            ParamKind::ShapeFriction(_)
            | ParamKind::ShapeRestitution(_)
            | ParamKind::TendonStiffness(_)
            | ParamKind::TendonDamping(_)
            | ParamKind::ActuatorGain(_)
            | ParamKind::ActuatorTimeconst(_)
            | ParamKind::LinearContact(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn box_on_floor() -> Model {
        let xml = r#"<mujoco><worldbody><geom name="floor" type="plane" size="5 5 0.1" friction="0.3"/>
            <body name="b" pos="0 0 0.2"><freejoint/><geom type="box" size="0.1 0.1 0.1" mass="1"/></body>
            </worldbody></mujoco>"#;
        crate::io::mjcf::load_mjcf_str(xml, "box.xml", None).unwrap()
    }

    #[test]
    fn shape_material_parameters_by_name() {
        let mut m = box_on_floor();
        let t = m.param_table();
        let names = ["shape_friction[floor]", "shape_restitution[floor]", "shape_friction[b/geom0]"];
        for n in names {
            assert!(t.names.iter().any(|x| x == n), "{n} in {:?}", t.names);
        }
        let sel = ParamSelection::by_names(&m, &names).unwrap();
        assert_eq!(m.params_get(&sel), vec![0.3, 0.0, 1.0]);
        m.params_set(&sel, &[0.5, 0.25, 0.7]).unwrap();
        assert_eq!((m.shapes[0].friction[0], m.shapes[0].restitution, m.shapes[1].friction[0]), (0.5, 0.25, 0.7));
        // out of range: a clear error naming the parameter and the shape, the model unchanged
        for (n, v) in [("shape_friction[floor]", -0.1), ("shape_restitution[floor]", 1.5)] {
            let e = m.param_set_by_name(n, v).unwrap_err().to_string();
            assert!(e.contains(&n[..n.find('[').unwrap()]) && e.contains("'floor'"), "{e}");
        }
        assert_eq!((m.shapes[0].friction[0], m.shapes[0].restitution), (0.5, 0.25));
        assert!(ParamSelection::by_prefix(&m, "body_mass[").len() == 1);
        assert_eq!(ParamSelection::by_prefix(&m, "shape_").len(), 4);
    }

    /// Joint damping, armature and friction loss: one entry per joint with DoFs, read and written through the
    /// model's per-joint arrays, validated (≥ 0) with an error naming the parameter and the joint.
    #[test]
    fn joint_passive_parameters_by_name() {
        let xml = r#"<mujoco><worldbody><body name="a"><joint name="h" axis="0 1 0" damping="0.2" armature="0.01"
            frictionloss="0.3"/><geom size="0.1" mass="1"/><body pos="1 0 0"><joint name="s" type="slide"/>
            <geom size="0.1" mass="1"/></body></body></worldbody></mujoco>"#;
        let mut m = crate::io::mjcf::load_mjcf_str(xml, "passive.xml", None).unwrap();
        let names = ["joint_damping[h]", "joint_armature[h]", "joint_frictionloss[h]", "joint_frictionloss[s]"];
        let sel = ParamSelection::by_names(&m, &names).unwrap();
        assert_eq!(m.params_get(&sel), vec![0.2, 0.01, 0.3, 0.0]);
        m.params_set(&sel, &[0.5, 0.02, 0.7, 0.1]).unwrap();
        assert_eq!((m.joint_damping[0], m.joint_armature[0], m.joint_frictionloss[0]), (0.5, 0.02, 0.7));
        assert_eq!(m.joint_frictionloss[1], 0.1);
        m.joint_frictionloss[1] = f64::INFINITY;
        let e = m.validate().unwrap_err().to_string();
        assert!(e.contains("joint_frictionloss") && e.contains("'s'"), "{e}");
        m.joint_frictionloss[1] = 0.1;
        assert_eq!(ParamSelection::by_prefix(&m, "joint_armature[").len(), 2);
        // what scatter_params writes per joint (damping, armature, frictionloss)
        let t = m.param_table();
        let th = m.param_vector();
        let (mut mass, mut ic) = (vec![0.0; m.body_count()], vec![torsion_math::Mat3::zeros(); m.body_count()]);
        let (mut r, mut tt) = (m.joint_anchor_parent.clone(), m.joint_anchor_child.clone());
        let mut jp = vec![[0.0; 3]; m.joint_count()];
        scatter_params(&t, |i| th[i], &mut mass, &mut ic, &mut r, &mut tt, &mut [], &mut jp);
        assert_eq!(jp, vec![[0.5, 0.02, 0.7], [0.0, 0.0, 0.1]]);
    }

    #[test]
    fn shared_shape_names_get_their_index() {
        let mut m = box_on_floor();
        let mut s = m.shapes[1].clone();
        s.name = "floor".into();
        m.shapes.push(s);
        let t = m.param_table();
        assert!(t.index("shape_friction[floor#0]").is_ok() && t.index("shape_restitution[floor#2]").is_ok());
        assert!(t.index("shape_friction[floor]").is_err());
        let unique: std::collections::HashSet<_> = t.names.iter().collect();
        assert_eq!(unique.len(), t.len());
    }
}
