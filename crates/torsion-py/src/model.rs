//! `torsion.Model` (load URDF / MJCF, build in code, named differentiable parameters) and
//! `torsion.ModelBuilder`.
use crate::arrays::{out, read, vec1};
use crate::sim::check_dt;
use crate::{guard, missing_file, model_err};
use numpy::PyArrayDyn;
use pyo3::exceptions::{PyFileNotFoundError, PyIndexError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use torsion_math::{Mat3, Quat, Vec3};
use torsion_model::builder::{JointDesc, ModelBuilder};
use torsion_model::io::urdf::UrdfOptions;
use torsion_model::{JointType, Model, ParamSelection};

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A robot model: bodies, joints, shapes and named differentiable parameters (`param_names`). Load one with
/// `torsion.models.load(name)`, `Model.from_urdf(path)`, `Model.from_mjcf(path)` or build one with `ModelBuilder`.
#[pyclass(name = "Model", module = "torsion")]
pub struct PyModel {
    pub inner: Model,
    /// Identity keying the solvers' cached workspaces: new on every write (structure, gravity, parameters), as
    /// the contact steppers' workspaces hold the dynamics model built from the parameters (ncp, lcp).
    pub id: u64,
    /// How the model was made, for pickling (`__reduce__`): a model built with `ModelBuilder` has none
    pub recipe: Option<Recipe>,
}

/// A loader call that remakes a model (its parameters, gravity and dt are pickled beside it).
#[derive(Clone, Debug)]
pub enum Recipe {
    Urdf { path: PathBuf, root: Option<String>, tip: Option<String>, drop_off_chain: bool },
    UrdfText { text: String, root: Option<String>, tip: Option<String>, label: String, drop_off_chain: bool },
    Mjcf { path: PathBuf },
    MjcfText { text: String, label: String },
    TwoLink { l1: f64, l2: f64, mass: f64, gravity: [f64; 3], dt: f64 },
    FloatingTree,
    Baxter { drop_off_chain: bool },
    Named { name: String },
}

impl PyModel {
    pub fn new(inner: Model) -> Self {
        PyModel { inner, id: NEXT_ID.fetch_add(1, Ordering::Relaxed), recipe: None }
    }
    fn made_by(mut self, r: Recipe) -> Self {
        self.recipe = Some(r);
        self
    }
}

/// The selection of `names` (None: the whole table, in table order).
pub(crate) fn selection(model: &Model, names: Option<&[String]>) -> PyResult<ParamSelection> {
    match names {
        None => Ok(ParamSelection::all(model)),
        Some(n) => {
            let refs: Vec<&str> = n.iter().map(String::as_str).collect();
            ParamSelection::by_names(model, &refs).map_err(model_err)
        }
    }
}

fn vec3(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec3> {
    let v = vec1(obj, name, 3)?;
    Ok(Vec3::new(v[0], v[1], v[2]))
}

fn quat(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Quat> {
    let v = vec1(obj, name, 4)?;
    let n = v.iter().map(|x| x * x).sum::<f64>().sqrt();
    if !(n > 1e-12 && n.is_finite()) {
        return Err(PyValueError::new_err(format!("{name}: quaternion (w, x, y, z) must be nonzero and finite")));
    }
    Ok(Quat::new(v[0] / n, v[1] / n, v[2] / n, v[3] / n))
}

fn joint_type_name(t: JointType) -> &'static str {
    match t {
        JointType::Revolute => "revolute",
        JointType::Prismatic => "prismatic",
        JointType::Fixed => "fixed",
        JointType::Ball => "ball",
        JointType::Free => "free",
    }
}

#[pymethods]
impl PyModel {
    /// Load the URDF file at `path` (str or path); `root` / `tip` select the arm chain root → tip (root becomes
    /// the fixed base; the joints off the chain are locked at 0 and their links welded in, or dropped with
    /// `drop_off_chain`). Raises FileNotFoundError for a missing file, ValueError naming the file and element for
    /// a malformed one.
    #[staticmethod]
    #[pyo3(signature = (path, root=None, tip=None, drop_off_chain=false))]
    fn from_urdf(path: PathBuf, root: Option<String>, tip: Option<String>, drop_off_chain: bool) -> PyResult<Self> {
        missing_file(&path)?;
        guard(|| {
            let o = UrdfOptions { root, tip, drop_off_chain };
            let m = PyModel::new(torsion_model::io::urdf::load_urdf(&path, &o).map_err(model_err)?);
            let UrdfOptions { root, tip, drop_off_chain } = o;
            Ok(m.made_by(Recipe::Urdf { path: std::path::absolute(&path).unwrap_or(path), root, tip, drop_off_chain }))
        })
    }
    /// Load URDF `text` (`label` names it in error messages); `root`, `tip` and `drop_off_chain` as for
    /// `from_urdf`.
    #[staticmethod]
    #[pyo3(signature = (text, root=None, tip=None, label="<string>", drop_off_chain=false))]
    fn from_urdf_string(
        text: &str,
        root: Option<String>,
        tip: Option<String>,
        label: &str,
        drop_off_chain: bool,
    ) -> PyResult<Self> {
        guard(|| {
            let o = UrdfOptions { root, tip, drop_off_chain };
            let m = PyModel::new(torsion_model::io::urdf::load_urdf_str(text, label, &o).map_err(model_err)?);
            let UrdfOptions { root, tip, drop_off_chain } = o;
            Ok(m.made_by(Recipe::UrdfText { text: text.into(), root, tip, label: label.into(), drop_off_chain }))
        })
    }
    /// Load the MJCF (MuJoCo XML) file at `path` (str or path); includes resolve against its folder.
    #[staticmethod]
    fn from_mjcf(path: PathBuf) -> PyResult<Self> {
        missing_file(&path)?;
        guard(|| {
            let m = PyModel::new(torsion_model::io::mjcf::load_mjcf(&path).map_err(model_err)?);
            Ok(m.made_by(Recipe::Mjcf { path: std::path::absolute(&path).unwrap_or(path) }))
        })
    }
    /// Load MJCF `text` (`label` names it in error messages; includes resolve against the working directory).
    #[staticmethod]
    #[pyo3(signature = (text, label="<string>"))]
    fn from_mjcf_string(text: &str, label: &str) -> PyResult<Self> {
        guard(|| {
            let m = PyModel::new(torsion_model::io::mjcf::load_mjcf_str(text, label, None).map_err(model_err)?);
            Ok(m.made_by(Recipe::MjcfText { text: text.into(), label: label.into() }))
        })
    }
    /// The planar two-link arm of spec 000 §4.1: hinges about z, uniform rods of lengths l1, l2 (m) and `mass`
    /// (kg) each, `gravity` (3,) in m/s² (default (0, −9.8, 0)), time step `dt` (s).
    #[staticmethod]
    #[pyo3(signature = (l1=0.8, l2=0.5, mass=1.0, gravity=None, dt=0.01))]
    fn two_link_arm(l1: f64, l2: f64, mass: f64, gravity: Option<&Bound<'_, PyAny>>, dt: f64) -> PyResult<Self> {
        let g = match gravity {
            Some(g) => vec3(g, "gravity")?,
            None => Vec3::new(0.0, -9.8, 0.0),
        };
        for (name, v) in [("l1", l1), ("l2", l2), ("mass", mass)] {
            if !(v > 0.0 && v.is_finite()) {
                return Err(PyValueError::new_err(format!("{name} must be positive and finite, got {v}")));
            }
        }
        check_dt(dt)?;
        guard(|| {
            let m = PyModel::new(torsion_model::builder::two_link_arm(l1, l2, mass, g, dt).map_err(model_err)?);
            Ok(m.made_by(Recipe::TwoLink { l1, l2, mass, gravity: [g.x, g.y, g.z], dt }))
        })
    }
    /// A floating tree with every joint type (free root, ball, prismatic, revolute branch).
    #[staticmethod]
    fn floating_tree() -> PyResult<Self> {
        guard(|| Ok(PyModel::new(torsion_model::builder::floating_tree()).made_by(Recipe::FloatingTree)))
    }
    /// The Baxter left arm (torso → left_hand_link, 7 hinges) from pip's example-robot-data, gripper and
    /// sensors welded to the hand; `drop_off_chain=True`: the bare arm of spec 000 §4.7 (gripper dropped).
    #[staticmethod]
    #[pyo3(signature = (drop_off_chain=false))]
    fn baxter_left_arm(drop_off_chain: bool) -> PyResult<Self> {
        use torsion_model::io::robots::{baxter_left_arm, baxter_left_arm_spec000};
        let load = if drop_off_chain { baxter_left_arm_spec000 } else { baxter_left_arm };
        guard(|| Ok(PyModel::new(load().map_err(model_err)?).made_by(Recipe::Baxter { drop_off_chain })))
    }

    /// the model's name (URDF robot / MJCF model name)
    #[getter]
    fn name(&self) -> String {
        self.inner.name.clone()
    }
    /// the file's integrator (MJCF `<option integrator>`: 'Euler', 'RK4' or 'implicitfast'; URDF and built-in models
    /// 'Euler'); FeatherstoneSolver(integrator=model.integrator) steps with it
    #[getter]
    fn integrator(&self) -> &'static str {
        self.inner.integrator.name()
    }
    /// number of bodies (fixed ones included)
    #[getter]
    fn body_count(&self) -> usize {
        self.inner.body_count()
    }
    /// number of joints
    #[getter]
    fn joint_count(&self) -> usize {
        self.inner.joint_count()
    }
    /// configuration dimension (generalized coordinates)
    #[getter]
    fn nq(&self) -> usize {
        self.inner.nq()
    }
    /// velocity dimension (generalized coordinates)
    #[getter]
    fn nv(&self) -> usize {
        self.inner.nv()
    }
    /// actuator controls (MuJoCo nu: MJCF motor / position / velocity / general on hinge / slide joints and
    /// cables, file order); FeatherstoneSolver's controls are [generalized forces (nv), ctrl (nu)]
    #[getter]
    fn nu(&self) -> usize {
        self.inner.nu()
    }
    /// actuator activation states (MuJoCo na: filter actuators), part of FeatherstoneSolver's state after v
    #[getter]
    fn na(&self) -> usize {
        self.inner.na()
    }
    /// actuator names, ctrl order
    #[getter]
    fn actuator_name(&self) -> Vec<String> {
        self.inner.cable_actuators.iter().map(|a| a.name.clone()).collect()
    }
    /// body names, body order
    #[getter]
    fn body_name(&self) -> Vec<String> {
        self.inner.body_name.clone()
    }
    /// per body: fixed to the world
    #[getter]
    fn body_fixed(&self) -> Vec<bool> {
        self.inner.body_fixed.clone()
    }
    /// indices of the non-fixed bodies (the XPBD tangent layout lists these)
    #[getter]
    fn body_dynamic(&self) -> Vec<usize> {
        self.inner.dynamic_bodies()
    }
    /// body masses, kg (fixed bodies: inf)
    #[getter]
    fn body_mass<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
        out(py, &[self.inner.body_count()], self.inner.body_mass.clone())
    }
    /// joint names, joint order
    #[getter]
    fn joint_name(&self) -> Vec<String> {
        self.inner.joint_name.clone()
    }
    /// per joint: 'revolute', 'prismatic', 'fixed', 'ball' or 'free'
    #[getter]
    fn joint_type(&self) -> Vec<&'static str> {
        self.inner.joint_type.iter().map(|&t| joint_type_name(t)).collect()
    }
    /// gravity, world frame, m/s²
    #[getter]
    fn gravity<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
        out(py, &[3], self.inner.gravity.as_slice().to_vec())
    }
    #[setter]
    fn set_gravity(&mut self, g: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inner.gravity = vec3(g, "gravity")?;
        self.id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
    /// default time step, s (used when a call passes no dt)
    #[getter]
    fn dt(&self) -> f64 {
        self.inner.dt
    }
    #[setter]
    fn set_dt(&mut self, dt: f64) -> PyResult<()> {
        self.inner.dt = check_dt(dt)?;
        Ok(())
    }
    /// the model's default configuration qpos0 (nq,), read-only: for MJCF where the file places the bodies
    /// (free joints at the declared pose, hinge/slide `ref`), for URDF / builder models the zero configuration;
    /// what `initial_state` uses when no q is given
    #[getter]
    fn qpos0<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
        let a = out(py, &[self.inner.nq()], self.inner.neutral_q())?;
        a.getattr("flags")?.setattr("writeable", false)?;
        Ok(a)
    }
    /// fluid density, kg/m³ (MuJoCo's inertia-box fluid model)
    #[getter]
    fn fluid_density(&self) -> f64 {
        self.inner.fluid_density
    }
    /// fluid viscosity, Pa·s (MuJoCo's inertia-box fluid model)
    #[getter]
    fn fluid_viscosity(&self) -> f64 {
        self.inner.fluid_viscosity
    }
    /// wind velocity (3,), m/s (MuJoCo's inertia-box fluid model)
    #[getter]
    fn wind(&self) -> [f64; 3] {
        [self.inner.wind.x, self.inner.wind.y, self.inner.wind.z]
    }
    /// whether contact solvers detect contacts (MJCF `<flag contact="disable"/>` clears it)
    #[getter]
    fn contact_enabled(&self) -> bool {
        self.inner.contact_enabled
    }
    /// the reference configuration q (nq,): the same values as `qpos0`
    fn neutral_q<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
        out(py, &[self.inner.nq()], self.inner.neutral_q())
    }

    /// Every differentiable parameter name, in table order (`body_mass[link]`, `body_inertia[link].ixy`,
    /// `joint_anchor_parent[joint].x`, `joint_anchor_child[joint].z`, `joint_spring[joint].k`,
    /// `shape_friction[shape]`, `shape_restitution[shape]`, ...).
    #[getter]
    fn param_names(&self) -> Vec<String> {
        self.inner.param_table().names
    }
    /// The parameter names starting with `prefix` (e.g. "body_mass["), in table order; a prefix that matches
    /// nothing raises ValueError listing the parameter families.
    fn params_select(&self, prefix: &str) -> PyResult<Vec<String>> {
        let t = self.inner.param_table();
        let names: Vec<String> =
            ParamSelection::by_prefix(&self.inner, prefix).indices.iter().map(|&i| t.names[i].clone()).collect();
        if names.is_empty() {
            let mut families: Vec<&str> = vec![];
            for f in t.names.iter().map(|n| n.split('[').next().unwrap_or(n)) {
                if !families.contains(&f) {
                    families.push(f);
                }
            }
            return Err(PyValueError::new_err(format!(
                "params_select({prefix:?}): no parameter name starts with it; the model's parameters are {} \
                 (e.g. \"body_mass[\"; model.param_names lists them all)",
                families.join(", ")
            )));
        }
        Ok(names)
    }
    /// Values (k,) of the k parameters in `names` (all, in table order, if None).
    #[pyo3(signature = (names=None))]
    fn params_get<'py>(&self, py: Python<'py>, names: Option<Vec<String>>) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
        let sel = selection(&self.inner, names.as_deref())?;
        let v = self.inner.params_get(&sel);
        out(py, &[v.len()], v)
    }
    /// Write `values` (k,) to the k parameters in `names` (all if None), all or nothing: every value finite and
    /// every name given once, then the model is validated (mass > 0, inertia SPD, shape friction ≥ 0, restitution
    /// in [0, 1]); unchanged on error.
    #[pyo3(signature = (names, values))]
    fn params_set(&mut self, names: Option<Vec<String>>, values: &Bound<'_, PyAny>) -> PyResult<()> {
        let sel = selection(&self.inner, names.as_deref())?;
        let v = vec1(values, "values", sel.len())?;
        guard(|| self.inner.params_set(&sel, &v).map_err(model_err))?;
        self.id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
    /// A copy of the model with `values` (k,) written to the k parameters in `names` (all if None).
    #[pyo3(signature = (names, values))]
    fn with_params(&self, names: Option<Vec<String>>, values: &Bound<'_, PyAny>) -> PyResult<PyModel> {
        let mut m = PyModel { inner: self.inner.clone(), id: self.id, recipe: self.recipe.clone() };
        m.params_set(names, values)?;
        Ok(m)
    }
    /// An independent copy.
    fn copy(&self) -> PyModel {
        PyModel { recipe: self.recipe.clone(), ..PyModel::new(self.inner.clone()) }
    }
    /// Pickling (Ray, multiprocessing): the loader call that made the model (a file path is pickled as an
    /// absolute path, so the file must be readable where the model is unpickled), then every parameter, gravity
    /// and dt written back. A model built with `ModelBuilder` does not pickle (TypeError).
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let me = slf.borrow();
        let Some(r) = &me.recipe else {
            return Err(PyTypeError::new_err(
                "a Model built with ModelBuilder does not pickle (load it from a file or text, or by name, instead)",
            ));
        };
        let (kind, args): (&str, Bound<'py, PyAny>) = match r.clone() {
            Recipe::Urdf { path, root, tip, drop_off_chain } => {
                ("urdf", (path, root, tip, drop_off_chain).into_pyobject(py)?.into_any())
            }
            Recipe::UrdfText { text, root, tip, label, drop_off_chain } => {
                ("urdf_text", (text, root, tip, label, drop_off_chain).into_pyobject(py)?.into_any())
            }
            Recipe::Mjcf { path } => ("mjcf", (path,).into_pyobject(py)?.into_any()),
            Recipe::MjcfText { text, label } => ("mjcf_text", (text, label).into_pyobject(py)?.into_any()),
            Recipe::TwoLink { l1, l2, mass, gravity, dt } => {
                ("two_link", (l1, l2, mass, gravity.to_vec(), dt).into_pyobject(py)?.into_any())
            }
            Recipe::FloatingTree => ("floating_tree", ().into_pyobject(py)?.into_any()),
            Recipe::Baxter { drop_off_chain } => ("baxter", (drop_off_chain,).into_pyobject(py)?.into_any()),
            Recipe::Named { name } => ("named", (name,).into_pyobject(py)?.into_any()),
        };
        let m = &me.inner;
        let params = m.params_get(&ParamSelection::all(m));
        let g = m.gravity;
        let restore = py.import("torsion._torsion")?.getattr("_model_restore")?;
        (restore, (kind, args, params, vec![g.x, g.y, g.z], m.dt)).into_pyobject(py).map(|t| t.into_any())
    }
    fn __copy__(&self) -> PyModel {
        self.copy()
    }
    fn __deepcopy__(&self, _memo: &Bound<'_, PyAny>) -> PyModel {
        self.copy()
    }
    fn __repr__(&self) -> String {
        format!(
            "Model('{}', body_count={}, joint_count={}, nq={}, nv={}, params={})",
            self.inner.name,
            self.inner.body_count(),
            self.inner.joint_count(),
            self.inner.nq(),
            self.inner.nv(),
            self.inner.param_table().len()
        )
    }
}

/// ModelBuilder(name="model", gravity=None, dt=0.01)
///
/// Build a model in code: bodies, then joints between them, then `build()`. `name`: the model's name; `gravity`
/// (3,) in m/s² (default (0, 0, −9.81)); `dt`: the default time step (s).
#[pyclass(name = "ModelBuilder", module = "torsion")]
pub struct PyModelBuilder {
    b: Option<ModelBuilder>,
    bodies: usize,
}

impl PyModelBuilder {
    fn get(&mut self) -> PyResult<&mut ModelBuilder> {
        self.b.as_mut().ok_or_else(|| PyValueError::new_err("ModelBuilder: build() was already called"))
    }
}

fn joint_kind(kind: &str) -> PyResult<JointType> {
    Ok(match kind {
        "revolute" | "hinge" => JointType::Revolute,
        "prismatic" | "slide" => JointType::Prismatic,
        "fixed" => JointType::Fixed,
        "ball" => JointType::Ball,
        "free" => JointType::Free,
        k => {
            return Err(PyValueError::new_err(format!(
                "unknown joint kind '{k}' (revolute, prismatic, fixed, ball, free)"
            )))
        }
    })
}

#[pymethods]
impl PyModelBuilder {
    #[new]
    #[pyo3(signature = (name="model", gravity=None, dt=0.01))]
    fn new(name: &str, gravity: Option<&Bound<'_, PyAny>>, dt: f64) -> PyResult<Self> {
        let g = match gravity {
            Some(g) => vec3(g, "gravity")?,
            None => Vec3::new(0.0, 0.0, -9.81),
        };
        check_dt(dt)?;
        Ok(PyModelBuilder { b: Some(ModelBuilder::new(name).gravity(g).dt(dt)), bodies: 0 })
    }
    /// A fixed body called `name` at position x (3,; m) and orientation q (4,: w, x, y, z); returns its index.
    #[pyo3(signature = (name, x=None, q=None))]
    fn add_fixed_body(
        &mut self,
        name: &str,
        x: Option<&Bound<'_, PyAny>>,
        q: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<usize> {
        let x = x.map(|x| vec3(x, "x")).transpose()?.unwrap_or_else(Vec3::zeros);
        let q = q.map(|q| quat(q, "q")).transpose()?.unwrap_or_else(Quat::identity);
        let i = self.get()?.add_fixed_body(name, x, q);
        self.bodies += 1;
        Ok(i)
    }
    /// A dynamic body called `name`: mass (kg), inertia (3, 3) about the COM in the body frame (kg·m²), com (3,)
    /// the COM offset in the body frame (m, default 0); returns its index.
    #[pyo3(signature = (name, mass, inertia, com=None))]
    fn add_body(
        &mut self,
        name: &str,
        mass: f64,
        inertia: &Bound<'_, PyAny>,
        com: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<usize> {
        let a = read(inertia, "inertia")?;
        if a.shape != [3, 3] {
            return Err(PyValueError::new_err(format!("inertia: expected shape (3, 3), got {:?}", a.shape)));
        }
        if !(mass > 0.0 && mass.is_finite()) {
            return Err(PyValueError::new_err(format!("mass must be positive and finite, got {mass}")));
        }
        let i3 = Mat3::from_row_slice(&a.data);
        let com = com.map(|c| vec3(c, "com")).transpose()?;
        let b = self.get()?;
        let i = b.add_body(name, mass, i3);
        if let Some(c) = com {
            b.set_body_com(i, c);
        }
        self.bodies += 1;
        Ok(i)
    }
    /// A joint called `name` of `kind` ("revolute", "prismatic", "fixed", "ball", "free") from body `parent` to
    /// body `child` (indices); anchor_parent / anchor_child (3,) are the joint point from each body's COM in that
    /// body's frame (m), `axis` (3,) the hinge / slide axis (default z), `limit` (lower, upper) in rad or m,
    /// `damping` the viscous joint damping (N·m·s/rad or N·s/m); returns its index.
    #[pyo3(signature = (name, kind, parent, child, anchor_parent=None, anchor_child=None, axis=None, limit=None, damping=0.0))]
    #[allow(clippy::too_many_arguments)]
    fn add_joint(
        &mut self,
        name: &str,
        kind: &str,
        parent: usize,
        child: usize,
        anchor_parent: Option<&Bound<'_, PyAny>>,
        anchor_child: Option<&Bound<'_, PyAny>>,
        axis: Option<&Bound<'_, PyAny>>,
        limit: Option<(f64, f64)>,
        damping: f64,
    ) -> PyResult<usize> {
        let kind = joint_kind(kind)?;
        for (what, b) in [("parent", parent), ("child", child)] {
            if b >= self.bodies {
                return Err(PyIndexError::new_err(format!("{what} body {b} does not exist ({} bodies)", self.bodies)));
            }
        }
        let r = anchor_parent.map(|v| vec3(v, "anchor_parent")).transpose()?.unwrap_or_else(Vec3::zeros);
        let t = anchor_child.map(|v| vec3(v, "anchor_child")).transpose()?.unwrap_or_else(Vec3::zeros);
        let ax = axis.map(|v| vec3(v, "axis")).transpose()?.unwrap_or_else(Vec3::z);
        if !(damping >= 0.0 && damping.is_finite()) {
            return Err(PyValueError::new_err(format!("damping must be finite and ≥ 0, got {damping}")));
        }
        if let Some((lo, hi)) = limit {
            if !(lo.is_finite() && hi.is_finite() && lo <= hi) {
                return Err(PyValueError::new_err(format!(
                    "limit: expected finite (lower, upper), lower ≤ upper, got ({lo}, {hi})"
                )));
            }
        }
        if !(ax.norm() > 1e-12 && ax.norm().is_finite()) {
            return Err(PyValueError::new_err("axis must be nonzero and finite"));
        }
        let mut d = JointDesc::hinge(name, parent, child, r, t, ax);
        d.kind = kind;
        d.limit = limit;
        d.damping = damping;
        Ok(self.get()?.add_joint(d))
    }
    /// Validate and return the model (bodies placed by forward kinematics at q = 0).
    fn build(&mut self) -> PyResult<PyModel> {
        let b = self.b.take().ok_or_else(|| PyValueError::new_err("ModelBuilder: build() was already called"))?;
        guard(|| Ok(PyModel::new(b.build().map_err(model_err)?)))
    }
}

/// `load_urdf(path, arm_root=None, arm_tip=None, drop_off_chain=False)`
#[pyfunction]
#[pyo3(signature = (path, arm_root=None, arm_tip=None, drop_off_chain=false))]
fn load_urdf(
    path: PathBuf,
    arm_root: Option<String>,
    arm_tip: Option<String>,
    drop_off_chain: bool,
) -> PyResult<PyModel> {
    PyModel::from_urdf(path, arm_root, arm_tip, drop_off_chain)
}

/// `load_mjcf(x)`: MJCF text if `x` is a str that starts with '<' after whitespace, else a file path.
#[pyfunction]
fn load_mjcf(x: &Bound<'_, PyAny>) -> PyResult<PyModel> {
    if let Ok(s) = x.extract::<String>() {
        if s.trim_start().starts_with('<') {
            return PyModel::from_mjcf_string(&s, "<MJCF text>");
        }
    }
    let path: PathBuf = x.extract().map_err(|_| {
        PyTypeError::new_err(format!(
            "load_mjcf: expected a file path or MJCF XML text (a str starting with '<'), got {}",
            x.get_type().name().map_or_else(|_| "?".into(), |n| n.to_string())
        ))
    })?;
    if !path.is_file() {
        return Err(PyFileNotFoundError::new_err(format!(
            "load_mjcf: {}: no such file (read as a path: MJCF text must start with '<')",
            path.display()
        )));
    }
    PyModel::from_mjcf(path)
}

/// `_model_restore(kind, args, params, gravity, dt)`: unpickle a Model (`Model.__reduce__`): the loader `kind`
/// called with `args`, then all `params`, `gravity` and `dt` written back.
#[pyfunction]
fn _model_restore(
    kind: &str,
    args: &Bound<'_, PyAny>,
    params: &Bound<'_, PyAny>,
    gravity: &Bound<'_, PyAny>,
    dt: f64,
) -> PyResult<PyModel> {
    let mut m = match kind {
        "urdf" => {
            let (p, r, t, d): (PathBuf, Option<String>, Option<String>, bool) = args.extract()?;
            PyModel::from_urdf(p, r, t, d)?
        }
        "urdf_text" => {
            let (x, r, t, l, d): (String, Option<String>, Option<String>, String, bool) = args.extract()?;
            PyModel::from_urdf_string(&x, r, t, &l, d)?
        }
        "mjcf" => PyModel::from_mjcf(args.extract::<(PathBuf,)>()?.0)?,
        "mjcf_text" => {
            let (x, l): (String, String) = args.extract()?;
            PyModel::from_mjcf_string(&x, &l)?
        }
        "two_link" => {
            let (l1, l2, mass, g, dt): (f64, f64, f64, Bound<'_, PyAny>, f64) = args.extract()?;
            PyModel::two_link_arm(l1, l2, mass, Some(&g), dt)?
        }
        "floating_tree" => PyModel::floating_tree()?,
        "baxter" => PyModel::baxter_left_arm(args.extract::<(bool,)>()?.0)?,
        "named" => _load_model(&args.extract::<(String,)>()?.0)?,
        _ => return Err(PyValueError::new_err(format!("_model_restore: unknown model kind '{kind}'"))),
    };
    m.params_set(None, params)?;
    m.set_gravity(gravity)?;
    m.set_dt(dt)?;
    Ok(m)
}

/// `_load_model(name)`: a model by its registered name (`torsion.models.load`).
#[pyfunction]
fn _load_model(name: &str) -> PyResult<PyModel> {
    guard(|| {
        let m = PyModel::new(torsion_model::io::load_model(name).map_err(model_err)?);
        Ok(m.made_by(Recipe::Named { name: name.into() }))
    })
}

/// `_model_names()`: (name, description, source) of every registered model (`torsion.models.list`).
#[pyfunction]
fn _model_names() -> Vec<(&'static str, &'static str, String)> {
    use torsion_model::io::ModelSource;
    torsion_model::io::MODELS
        .iter()
        .map(|e| {
            let source = match e.source {
                ModelSource::Builtin => "builtin".to_string(),
                ModelSource::ExampleRobotData(p) => format!("example-robot-data:{p}"),
                ModelSource::DmControl(s) => format!("dm_control:{s}.xml"),
            };
            (e.name, e.description, source)
        })
        .collect()
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_load_model, m)?)?;
    m.add_function(wrap_pyfunction!(_model_restore, m)?)?;
    m.add_function(wrap_pyfunction!(_model_names, m)?)?;
    m.add_class::<PyModel>()?;
    m.add_class::<PyModelBuilder>()?;
    m.add_function(wrap_pyfunction!(load_urdf, m)?)?;
    m.add_function(wrap_pyfunction!(load_mjcf, m)?)?;
    Ok(())
}
