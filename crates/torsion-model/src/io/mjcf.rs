//! MJCF (MuJoCo XML) loader: an MJCF file → [`Model`], read with `roxmltree`.
//!
//! Every error is a [`ModelError::Parse`] naming the file (the included file where the element lives), the
//! element (`joint 'hip'`, or `<geom>` when unnamed) and the problem with the element's line.
//!
//! Mapping (see the conventions in `model.rs`):
//! - `<worldbody>` is the fixed body 0, named "world", at the origin; its geoms and sites attach to it.
//! - Body frame: origin at the COM of the (merged) body, orientation of the MJCF body frame; inertia about the
//!   COM in those axes. [`Model::body_com`] is the COM in the MJCF body frame (so the MJCF body frame sits at
//!   x − R c). The COM comes from `<inertial>` (`pos`, `quat`/…, `diaginertia` or `fullinertia`) or, when the
//!   body has none (`<compiler inertiafromgeom="auto">`, the default; "true" always uses geoms, "false" never),
//!   from its geoms as MuJoCo computes it: mass = `mass` or `density` (default 1000) × volume for sphere,
//!   capsule (cylinder + two hemispheres), cylinder, box, ellipsoid; combined by the parallel-axis theorem; only
//!   geoms whose `group` is within `<compiler inertiagrouprange>` (default 0 5) count. A mesh geom that counts
//!   is an error ("mesh inertia not supported") unless the body has an explicit `<inertial>`. Planes are only
//!   allowed in static bodies. `<compiler settotalmass>` rescales every body's mass and inertia.
//! - A body without joints is welded to its parent and merged into it (mass, COM, parallel-axis inertia; its
//!   geoms, sites and child bodies re-expressed in the parent's frame), like URDF fixed joints; bodies welded to
//!   the world merge into body 0 (their mass is then irrelevant). A body with k > 1 joints becomes a chain of k
//!   bodies: the first k − 1 are *virtual* (mass 0, inertia 0, named "body/joint", frame = the MJCF body frame)
//!   and carry one joint each in file order, the last one is the real body and carries the last joint.
//! - Joints (hinge → [`JointType::Revolute`], slide → Prismatic, ball → Ball, free / `<freejoint>` → Free):
//!   with `P` the parent (our body, COM frame), `T` the pose of the child's MJCF body frame in `P`'s MJCF frame
//!   and `com_P`, `com_C` the COMs: `joint_anchor_parent` = T.p + T.q·pos − com_P, `joint_frame_parent` = T.q,
//!   `joint_anchor_child` = pos − com_C, `joint_frame_child` = identity, `joint_axis` = the unit `axis` (in
//!   the MJCF body frame). Joints after the first of one body hang from the previous virtual body (T = identity,
//!   com_P = 0). A hinge `ref` sets `joint_frame_child` = Rot(axis, ref) and a slide `ref` adds axis·ref to
//!   `joint_anchor_child`, so that q = `ref` (= `qpos0`) places the body as written, as MuJoCo does (its joint
//!   displacement is q − qpos0). Free joints (top-level bodies only, alone in their body) put the joint frame
//!   at the world origin (`joint_anchor_parent` 0, frames identity) and at the body origin on the child side
//!   (`joint_anchor_child` = −com_C), so q = (body origin position, body orientation) in the world, as MuJoCo's
//!   qpos; `qpos0` = the declared pose. Ball joints keep `joint_axis` = their (unused) axis.
//! - Limits: `limited="true"`, or `auto` (the default, with `<compiler autolimits="true">`) and a non-zero
//!   `range` → `joint_limit` (rad for hinges, m for slides, (0, max angle) for balls; free joints are never
//!   limited). `damping`, `armature`, `stiffness`, `springref`, `frictionloss` are read; `joint_effort` is ∞.
//! - Angles: `<compiler angle>` (default "degree", as MuJoCo) applies to `euler`, `axisangle`, hinge and ball
//!   `range`, hinge `ref` and `springref`; `<compiler eulerseq>` (default "xyz"; lower case = intrinsic axes,
//!   upper case = extrinsic). Orientations: `quat` (w x y z), `axisangle`, `euler`, `xyaxes`, `zaxis` (the
//!   shortest rotation taking z to it), at most one per element; `fromto` on capsule, cylinder, box and
//!   ellipsoid geoms (and sites) sets the centre, z along the segment and the half-length (MuJoCo: box and
//!   ellipsoid x, y half-sizes = size[0]).
//! - `<default>` classes: the top-level one is "main", nested classes inherit, `class` on an element or the
//!   nearest `childclass` of its bodies / frames selects one. Defaulted: joint, geom, site, tendon and
//!   actuators (all actuator kinds share one default, the element's own attributes win). `<inertial>`, bodies
//!   and `<freejoint>` are not defaulted.
//! - `<option timestep gravity density viscosity wind>` → [`Model::dt`], [`Model::gravity`] (MuJoCo defaults 0.002,
//!   (0, 0, −9.81)), the fluid fields; `<flag>`s honoured or rejected (`read_flags`, docs/decisions.md).
//! - `<include file>`: resolved relative to the including file's folder, then the main file's folder; the
//!   children of the included `<mujoco>` replace the include. With [`load_mjcf_str`] and no `base_dir`,
//!   relative includes resolve against the current directory.
//! - Shapes: every geom (including visual-only ones, contype = conaffinity = 0) becomes a [`Shape`] of the body
//!   it merged into, in file order (MuJoCo's geom order): sphere, capsule, cylinder, box, plane, ellipsoid, mesh
//!   (the `<asset><mesh file>` path, joined to `<compiler meshdir>` / `assetdir` and the model folder; `scale` is
//!   ignored with a warning). hfield and sdf geoms are skipped with a warning. `friction` (sliding, torsional,
//!   rolling) is kept; MJCF has no restitution attribute, so `Shape::restitution` is 0 (set it in code or by
//!   the parameter `shape_restitution[geom]`). Explicit `<contact><pair>` overrides and `<exclude>` are not
//!   modelled (warned below): pairs combine their two geoms' values (docs/decisions.md, spec 001).
//! - Kept for later in [`Model::extras`]: sites (name, body, pose), actuators (`motor`, `position`, `velocity`,
//!   `general`, … with target, gear, ctrlrange, ctrllimited and all attributes), tendons (`fixed`, `spatial`,
//!   raw). Joint order: parent before child (MJCF body pre-order, joints in file order, = MuJoCo's joint order).
//!
//! Reported once each in `extras.warnings` ("… ignored"): other `option` attributes and children, physics attributes not modelled (`geom@condim`, `geom@solref`, `joint@solreflimit`,
//! `body@mocap`, …), `contact`, `equality`, `sensor`, `keyframe`, `custom`, `extension`, `deformable`
//! children, hfield/skin assets, `compiler` options without an effect here (boundmass, balanceinertia, …),
//! composite/flexcomp/replicate/attach/plugin in bodies, unknown elements. Ignored silently (visual or
//! bookkeeping only): `visual`, `statistic`, `size`, `camera`, `light`, `texture`, `material`, the
//! attributes `rgba`, `material`, `group` (except for the inertia group range), `user`, and site
//! `type`/`size`, compiler `texturedir`, `strippath`, `discardvisual`, `fusestatic`, `usethread`,
//! `exactmeshinertia`, `coordinate="local"` (`"global"` is an error).
use super::transform::Tf;
use crate::error::ModelError;
use crate::extras::{Actuator, ActuatorTarget, Attrs, ModelExtras, Site, Tendon, TendonKind};
use crate::model::{JointType, Model};
use crate::shape::{Shape, ShapeKind, DEFAULT_FRICTION};
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use torsion_math::{Mat3, Quat, Vec3};

/// Load an MJCF file (errors name `path`, or the included file they occur in).
pub fn load_mjcf(path: &Path) -> Result<Model, ModelError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| perr(&file, "file", format!("cannot read: {e}")))?;
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    load_mjcf_str(&text, &file, Some(&base))
}

/// Load MJCF text; `file_label` stands for the file in error messages, `base_dir` is the folder relative
/// `<include>`s and mesh files are resolved against.
pub fn load_mjcf_str(text: &str, file_label: &str, base_dir: Option<&Path>) -> Result<Model, ModelError> {
    let base = base_dir.map(Path::to_path_buf).unwrap_or_default();
    let mut stack = vec![];
    let root = parse_tree(text, file_label, &base, &base, &mut stack)?;
    Compiler::new(base).compile(&root)
}

// ---------------------------------------------------------------------------------------------------------
// XML tree with includes expanded

/// One XML element, with the file and line it comes from.
struct El {
    tag: String,
    attrs: Vec<(String, String)>,
    children: Vec<El>,
    file: Rc<str>,
    line: u32,
}

impl El {
    fn get(&self, a: &str) -> Option<&str> {
        self.attrs.iter().find(|(k, _)| k == a).map(|(_, v)| v.as_str())
    }
    fn desc(&self) -> String {
        match self.get("name") {
            Some(n) => format!("{} '{n}'", self.tag),
            None => format!("<{}>", self.tag),
        }
    }
    fn err(&self, problem: impl std::fmt::Display) -> ModelError {
        perr(&self.file, &self.desc(), format!("{problem} (line {})", self.line))
    }
    fn elements<'a>(&'a self, tag: &'a str) -> impl Iterator<Item = &'a El> + 'a {
        self.children.iter().filter(move |c| c.tag == tag)
    }
}

fn perr(file: &str, element: &str, problem: String) -> ModelError {
    ModelError::Parse { file: file.to_string(), element: element.to_string(), problem }
}

fn parse_tree(
    text: &str,
    label: &str,
    dir: &Path,
    main_dir: &Path,
    stack: &mut Vec<PathBuf>,
) -> Result<El, ModelError> {
    let opt = roxmltree::ParsingOptions { allow_dtd: true, ..Default::default() };
    let doc = roxmltree::Document::parse_with_options(text, opt).map_err(|e| perr(label, "XML", e.to_string()))?;
    let root = doc.root_element();
    if root.tag_name().name() != "mujoco" {
        return Err(perr(label, "XML", format!("the root element is <{}>, expected <mujoco>", root.tag_name().name())));
    }
    let file: Rc<str> = label.into();
    convert(&doc, root, &file, dir, main_dir, stack)
}

fn convert(
    doc: &roxmltree::Document,
    node: roxmltree::Node,
    file: &Rc<str>,
    dir: &Path,
    main_dir: &Path,
    stack: &mut Vec<PathBuf>,
) -> Result<El, ModelError> {
    let line = |n: roxmltree::Node| doc.text_pos_at(n.range().start).row;
    let mut el = El {
        tag: node.tag_name().name().to_string(),
        attrs: node.attributes().map(|a| (a.name().to_string(), a.value().to_string())).collect(),
        children: vec![],
        file: file.clone(),
        line: line(node),
    };
    for c in node.children().filter(|c| c.is_element()) {
        if !c.has_tag_name("include") {
            el.children.push(convert(doc, c, file, dir, main_dir, stack)?);
            continue;
        }
        let inc = El { tag: "include".into(), attrs: vec![], children: vec![], file: file.clone(), line: line(c) };
        let Some(name) = c.attribute("file") else { return Err(inc.err("missing file attribute")) };
        let inc_err = |p: String| perr(file, &format!("include '{name}'"), format!("{p} (line {})", line(c)));
        let first = dir.join(name);
        let path = if !first.is_file() && main_dir.join(name).is_file() { main_dir.join(name) } else { first };
        let text = std::fs::read_to_string(&path)
            .map_err(|e| inc_err(format!("cannot read included file {}: {e}", path.display())))?;
        let canon = path.canonicalize().unwrap_or_else(|_| path.clone());
        if stack.contains(&canon) || stack.len() > 32 {
            return Err(inc_err(format!("include cycle through {}", path.display())));
        }
        stack.push(canon);
        let sub_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let sub = parse_tree(&text, &path.display().to_string(), &sub_dir, main_dir, stack)?;
        stack.pop();
        el.children.extend(sub.children);
    }
    Ok(el)
}

// ---------------------------------------------------------------------------------------------------------
// Attribute access with default classes

/// An element seen through its default class: own attributes first, then the class's.
#[derive(Clone, Copy)]
struct Item<'a> {
    el: &'a El,
    def: &'a [(String, String)],
}

impl<'a> Item<'a> {
    fn get(&self, a: &str) -> Option<&'a str> {
        self.el.get(a).or_else(|| self.def.iter().find(|(k, _)| k == a).map(|(_, v)| v.as_str()))
    }
    /// Own attributes, then the class's that the element does not set.
    fn attrs(&self) -> Attrs {
        let mut out = self.el.attrs.clone();
        out.extend(self.def.iter().filter(|(k, _)| self.el.get(k).is_none()).cloned());
        out
    }
    fn err(&self, problem: impl std::fmt::Display) -> ModelError {
        self.el.err(problem)
    }
    /// The numbers of attribute `a` = `v`, checking their count is in `min..=max`.
    fn parse(&self, a: &str, v: &str, min: usize, max: usize) -> Result<Vec<f64>, ModelError> {
        let mut out = Vec::with_capacity(max);
        for t in v.split_whitespace() {
            match t.parse::<f64>() {
                Ok(x) if x.is_finite() => out.push(x),
                _ => return Err(self.err(format!("{a}=\"{v}\": '{t}' is not a finite number"))),
            }
        }
        if out.len() < min || out.len() > max {
            let want = if min == max { format!("{min}") } else { format!("{min} to {max}") };
            return Err(self.err(format!("{a}=\"{v}\": expected {want} number(s), got {}", out.len())));
        }
        Ok(out)
    }
    /// `n` numbers with `min ≤ n ≤ max`, if the attribute is set.
    fn nums(&self, a: &str, min: usize, max: usize) -> Result<Option<Vec<f64>>, ModelError> {
        self.get(a).map(|v| self.parse(a, v, min, max)).transpose()
    }
    /// A MuJoCo vector attribute that may be given partly: `base` (built-in default), its first entries
    /// overwritten by the class's value, then by the element's own (`size="0.1"` over a class `size="0.05 0.2"`
    /// gives (0.1, 0.2)).
    fn nums_over(&self, a: &str, base: &[f64]) -> Result<Vec<f64>, ModelError> {
        let mut out = base.to_vec();
        let class = self.def.iter().find(|(k, _)| k == a).map(|(_, v)| v.as_str());
        for v in [class, self.el.get(a)].into_iter().flatten() {
            let x = self.parse(a, v, 1, base.len())?;
            out[..x.len()].copy_from_slice(&x);
        }
        Ok(out)
    }
    fn f64_or(&self, a: &str, default: f64) -> Result<f64, ModelError> {
        Ok(self.nums(a, 1, 1)?.map_or(default, |v| v[0]))
    }
    fn v3(&self, a: &str) -> Result<Option<Vec3>, ModelError> {
        Ok(self.nums(a, 3, 3)?.map(|v| Vec3::new(v[0], v[1], v[2])))
    }
    fn int_or(&self, a: &str, default: i64) -> Result<i64, ModelError> {
        match self.get(a) {
            None => Ok(default),
            Some(v) => v.trim().parse().map_err(|_| self.err(format!("{a}=\"{v}\": not an integer"))),
        }
    }
    fn bool_opt(&self, a: &str) -> Result<Option<bool>, ModelError> {
        match self.get(a) {
            None => Ok(None),
            Some("true") => Ok(Some(true)),
            Some("false") => Ok(Some(false)),
            Some(v) => Err(self.err(format!("{a}=\"{v}\": expected true or false"))),
        }
    }
    /// true / false / auto (None).
    fn tri(&self, a: &str) -> Result<Option<bool>, ModelError> {
        match self.get(a) {
            Some("auto") => Ok(None),
            _ => self.bool_opt(a),
        }
    }
}

/// Shortest rotation taking +z to `v` (MuJoCo `mjuu_z2quat`: π about x for −z).
fn z2quat(v: &Vec3) -> Quat {
    let a = Vec3::z().cross(v);
    let s = a.norm();
    let axis = if s < 1e-10 { Vec3::x() } else { a / s };
    Quat::from_axis_angle(&axis, s.atan2(v.z))
}

/// Mass, COM and inertia about the COM of parts (mᵢ, cᵢ, Iᵢ about cᵢ), all in one frame.
fn combine(parts: &[(f64, Vec3, Mat3)]) -> (f64, Vec3, Mat3) {
    let mass: f64 = parts.iter().map(|p| p.0).sum();
    if mass <= 0.0 {
        return (0.0, Vec3::zeros(), parts.iter().map(|p| p.2).sum());
    }
    let com = parts.iter().map(|p| p.1 * p.0).sum::<Vec3>() / mass;
    let i = parts.iter().fold(Mat3::zeros(), |acc, (m, c, i)| {
        let d = c - com;
        acc + i + (Mat3::identity() * d.dot(&d) - d * d.transpose()) * *m
    });
    (mass, com, (i + i.transpose()) * 0.5)
}

// ---------------------------------------------------------------------------------------------------------
// The compiler

const ACTUATORS: [&str; 9] =
    ["general", "motor", "position", "velocity", "intvelocity", "damper", "cylinder", "muscle", "adhesion"];
const ORIENT: [&str; 5] = ["quat", "axisangle", "euler", "xyaxes", "zaxis"];
const POSE: [&str; 6] = ["pos", "quat", "axisangle", "euler", "xyaxes", "zaxis"];
/// Attributes each element kind uses (beyond name/class) and the ones ignored silently; others are warned about.
const JOINT_USED: [&str; 13] = [
    "type",
    "pos",
    "axis",
    "range",
    "limited",
    "damping",
    "armature",
    "stiffness",
    "springref",
    "frictionloss",
    "ref",
    "name",
    "class",
];
const GEOM_USED: [&str; 15] = [
    "fluidshape",
    "fluidcoef",
    "type",
    "size",
    "fromto",
    "mass",
    "density",
    "friction",
    "contype",
    "conaffinity",
    "group",
    "mesh",
    "name",
    "class",
    "hfield",
];
const SITE_USED: [&str; 5] = ["fromto", "name", "class", "type", "size"];
const SILENT: [&str; 4] = ["rgba", "material", "user", "group"];

/// What the `<option><flag>`s leave on (all on by default).
#[derive(Clone, Copy)]
struct Flags {
    gravity: bool,
    contact: bool,
    limit: bool,
    spring: bool,
    damper: bool,
    fluid: bool,
}

impl Default for Flags {
    fn default() -> Self {
        Flags { gravity: true, contact: true, limit: true, spring: true, damper: true, fluid: true }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum FromGeom {
    Auto,
    Always,
    Never,
}

struct Compiler {
    model_dir: PathBuf,
    angle_deg: bool,
    eulerseq: [u8; 3],
    from_geom: FromGeom,
    inertia_groups: (i64, i64),
    autolimits: bool,
    meshdir: Option<String>,
    settotalmass: Option<f64>,
    dt: f64,
    gravity: Vec3,
    /// `option density` (kg/m³), `viscosity` (Pa·s), `wind` (m/s)
    density: f64,
    viscosity: f64,
    wind: Vec3,
    flags: Flags,
    /// class → element kind ("joint", "geom", "site", "tendon", "actuator", …) → attributes
    defaults: HashMap<String, HashMap<String, Vec<(String, String)>>>,
    meshes: HashMap<String, String>,
    extras: RefCell<ModelExtras>,
}

/// A parsed MJCF body (before merging), frames relative to the parent MJCF body frame.
struct MBody<'a> {
    el: &'a El,
    name: String,
    parent: usize,
    tf: Tf,
    joints: Vec<MJoint<'a>>,
    geoms: Vec<MGeom<'a>>,
    sites: Vec<(String, Tf)>,
    inertial: Option<(f64, Vec3, Mat3)>,
}

struct MJoint<'a> {
    el: &'a El,
    name: String,
    kind: JointType,
    pos: Vec3,
    axis: Vec3,
    limit: Option<(f64, f64)>,
    damping: f64,
    armature: f64,
    stiffness: f64,
    springref: f64,
    frictionloss: f64,
    reference: f64,
}

struct MGeom<'a> {
    el: &'a El,
    name: String,
    kind: ShapeKind,
    tf: Tf,
    /// mass and inertia about the centre (body axes); None: a mesh (not computed)
    mass: Option<(f64, Mat3)>,
    counts: bool,
    friction: [f64; 3],
    contype: u32,
    conaffinity: u32,
}

impl Compiler {
    fn new(model_dir: PathBuf) -> Self {
        Compiler {
            model_dir,
            angle_deg: true,
            eulerseq: *b"xyz",
            from_geom: FromGeom::Auto,
            inertia_groups: (0, 5),
            autolimits: true,
            meshdir: None,
            settotalmass: None,
            dt: 0.002,
            gravity: Vec3::new(0.0, 0.0, -9.81),
            density: 0.0,
            viscosity: 0.0,
            wind: Vec3::zeros(),
            flags: Flags::default(),
            defaults: HashMap::from([("main".to_string(), HashMap::new())]),
            meshes: HashMap::new(),
            extras: RefCell::new(ModelExtras::default()),
        }
    }

    fn warn(&self, w: String) {
        self.extras.borrow_mut().warn(w);
    }

    /// Warn about the attributes of `it` outside `used` and the silent list.
    fn check_attrs(&self, it: &Item, kind: &str, used: &[&str]) {
        for (k, _) in it.attrs() {
            if !used.contains(&k.as_str()) && !SILENT.contains(&k.as_str()) && !POSE.contains(&k.as_str()) {
                self.warn(format!("{kind}@{k} ignored"));
            }
        }
    }

    /// `el` seen through default class `cls` (its own `class` attribute wins) for element kind `kind`.
    fn item<'a>(&'a self, el: &'a El, kind: &str, cls: &str) -> Result<Item<'a>, ModelError> {
        let name = el.get("class").unwrap_or(cls);
        let class = self.defaults.get(name).ok_or_else(|| el.err(format!("unknown default class '{name}'")))?;
        Ok(Item { el, def: class.get(kind).map_or(&[][..], |v| v.as_slice()) })
    }

    fn angle(&self) -> f64 {
        if self.angle_deg {
            std::f64::consts::PI / 180.0
        } else {
            1.0
        }
    }

    /// The orientation attributes of `it` (own ones, else the class's); None if there are none.
    fn orientation(&self, it: &Item) -> Result<Option<Quat>, ModelError> {
        let own: Vec<&str> = ORIENT.iter().copied().filter(|k| it.el.get(k).is_some()).collect();
        let src = if own.is_empty() { Item { el: it.el, def: it.def } } else { Item { el: it.el, def: &[] } };
        let set: Vec<&str> = ORIENT.iter().copied().filter(|k| src.get(k).is_some()).collect();
        if set.len() > 1 {
            return Err(it.err(format!("more than one orientation attribute ({})", set.join(", "))));
        }
        let Some(&key) = set.first() else { return Ok(None) };
        let tiny = |v: &Vec3| v.norm() < 1e-10;
        let q = match key {
            "quat" => {
                let v = src.nums(key, 4, 4)?.unwrap_or_default();
                let q = Quat::new(v[0], v[1], v[2], v[3]);
                if q.norm() < 1e-10 {
                    return Err(it.err("quat has zero norm"));
                }
                q.normalize()
            }
            "axisangle" => {
                let v = src.nums(key, 4, 4)?.unwrap_or_default();
                let a = Vec3::new(v[0], v[1], v[2]);
                if tiny(&a) {
                    return Err(it.err("axisangle has a zero-length axis"));
                }
                Quat::from_axis_angle(&a.normalize(), v[3] * self.angle())
            }
            "euler" => {
                let v = src.nums(key, 3, 3)?.unwrap_or_default();
                let mut q = Quat::identity();
                for (k, &c) in self.eulerseq.iter().enumerate() {
                    let axis = match c.to_ascii_lowercase() {
                        b'x' => Vec3::x(),
                        b'y' => Vec3::y(),
                        _ => Vec3::z(),
                    };
                    let r = Quat::from_axis_angle(&axis, v[k] * self.angle());
                    q = if c.is_ascii_lowercase() { q.mul(&r) } else { r.mul(&q) };
                }
                q.normalize()
            }
            "xyaxes" => {
                let v = src.nums(key, 6, 6)?.unwrap_or_default();
                let x = Vec3::new(v[0], v[1], v[2]);
                let y = Vec3::new(v[3], v[4], v[5]);
                if tiny(&x) {
                    return Err(it.err("xyaxes: zero-length x axis"));
                }
                let x = x.normalize();
                let y = y - x * x.dot(&y);
                if tiny(&y) {
                    return Err(it.err("xyaxes: y axis is zero or parallel to x"));
                }
                let y = y.normalize();
                Quat::from_mat(&Mat3::from_columns(&[x, y, x.cross(&y)]))
            }
            _ => {
                let z = src.v3(key)?.unwrap_or_default();
                if tiny(&z) {
                    return Err(it.err("zaxis has zero length"));
                }
                z2quat(&z)
            }
        };
        Ok(Some(q))
    }

    /// `pos` + orientation.
    fn pose(&self, it: &Item) -> Result<Tf, ModelError> {
        Ok(Tf { p: it.v3("pos")?.unwrap_or_default(), q: self.orientation(it)?.unwrap_or_else(Quat::identity) })
    }

    /// `fromto` → (pose with z along the segment, half-length), if set.
    fn fromto(&self, it: &Item) -> Result<Option<(Tf, f64)>, ModelError> {
        let Some(v) = it.nums("fromto", 6, 6)? else { return Ok(None) };
        let (a, b) = (Vec3::new(v[0], v[1], v[2]), Vec3::new(v[3], v[4], v[5]));
        let d = b - a;
        if d.norm() < 1e-10 {
            return Err(it.err("fromto: the two end points coincide"));
        }
        Ok(Some((Tf { p: (a + b) * 0.5, q: z2quat(&d) }, 0.5 * d.norm())))
    }

    // ----- sections

    fn compile(mut self, root: &El) -> Result<Model, ModelError> {
        for c in root.elements("compiler") {
            self.read_compiler(c)?;
        }
        for c in root.elements("option") {
            self.read_option(c)?;
        }
        for c in root.elements("default") {
            self.read_default(c, None)?;
        }
        for c in root.elements("asset") {
            self.read_assets(c)?;
        }
        for c in &root.children {
            match c.tag.as_str() {
                "compiler" | "option" | "default" | "asset" | "worldbody" | "tendon" | "actuator" => {}
                "visual" | "statistic" | "size" => {}
                "contact" | "equality" | "sensor" | "keyframe" | "custom" | "extension" | "deformable" => {
                    for e in &c.children {
                        self.warn(format!("{}/{} ignored", c.tag, e.tag));
                    }
                }
                t => self.warn(format!("{t} ignored")),
            }
        }
        let mut bodies = vec![MBody {
            el: root,
            name: "world".into(),
            parent: 0,
            tf: Tf::identity(),
            joints: vec![],
            geoms: vec![],
            sites: vec![],
            inertial: None,
        }];
        for w in root.elements("worldbody") {
            self.body_children(w, 0, Tf::identity(), "main", &mut bodies)?;
        }
        let name = root.get("model").unwrap_or("MuJoCo Model");
        let mut m = self.assemble(name, &bodies)?;
        self.read_tendons(root, &mut m)?;
        self.read_actuators(root, &mut m, &bodies)?;
        m.extras.warnings = std::mem::take(&mut self.extras.borrow_mut().warnings);
        m.validate().map_err(|e| root.err(format!("the loaded model is invalid: {e}")))?;
        Ok(m)
    }

    fn read_compiler(&mut self, c: &El) -> Result<(), ModelError> {
        let it = Item { el: c, def: &[] };
        for (k, v) in &c.attrs {
            match k.as_str() {
                "angle" => match v.as_str() {
                    "degree" => self.angle_deg = true,
                    "radian" => self.angle_deg = false,
                    _ => return Err(c.err(format!("angle=\"{v}\": expected degree or radian"))),
                },
                "eulerseq" => {
                    let b = v.as_bytes();
                    if b.len() != 3 || !b.iter().all(|c| b"xyzXYZ".contains(c)) {
                        return Err(c.err(format!("eulerseq=\"{v}\": expected 3 letters from xyzXYZ")));
                    }
                    self.eulerseq = [b[0], b[1], b[2]];
                }
                "inertiafromgeom" => {
                    self.from_geom = match v.as_str() {
                        "auto" => FromGeom::Auto,
                        "true" => FromGeom::Always,
                        "false" => FromGeom::Never,
                        _ => return Err(c.err(format!("inertiafromgeom=\"{v}\": expected true, false or auto"))),
                    }
                }
                "inertiagrouprange" => {
                    let r = it.nums(k, 2, 2)?.unwrap_or_default();
                    self.inertia_groups = (r[0] as i64, r[1] as i64);
                }
                "autolimits" => self.autolimits = it.bool_opt(k)?.unwrap_or(true),
                "meshdir" => self.meshdir = Some(v.clone()),
                "assetdir" => {
                    if self.meshdir.is_none() {
                        self.meshdir = Some(v.clone())
                    }
                }
                "settotalmass" => {
                    let s = it.f64_or(k, -1.0)?;
                    self.settotalmass = (s > 0.0).then_some(s);
                }
                "coordinate" if v == "global" => {
                    return Err(c.err("coordinate=\"global\" is not supported (only local coordinates)"))
                }
                "coordinate" | "texturedir" | "strippath" | "discardvisual" | "fusestatic" | "usethread"
                | "exactmeshinertia" => {}
                _ => self.warn(format!("compiler@{k} ignored")),
            }
        }
        for e in &c.children {
            self.warn(format!("compiler/{} ignored", e.tag));
        }
        Ok(())
    }

    fn read_option(&mut self, c: &El) -> Result<(), ModelError> {
        let it = Item { el: c, def: &[] };
        let nonneg = |k: &str| -> Result<f64, ModelError> {
            let v = it.f64_or(k, 0.0)?;
            if v < 0.0 {
                return Err(c.err(format!("{k} must be ≥ 0, got {v}")));
            }
            Ok(v)
        };
        for (k, _) in &c.attrs {
            match k.as_str() {
                "timestep" => {
                    self.dt = it.f64_or(k, 0.002)?;
                    if !(self.dt > 0.0 && self.dt.is_finite()) {
                        return Err(c.err(format!("timestep must be positive, got {}", self.dt)));
                    }
                }
                "gravity" => self.gravity = it.v3(k)?.unwrap_or_default(),
                "density" => self.density = nonneg(k)?,
                "viscosity" => self.viscosity = nonneg(k)?,
                "wind" => self.wind = it.v3(k)?.unwrap_or_default(),
                _ => self.warn(format!("option@{k} ignored")),
            }
        }
        for e in &c.children {
            if e.tag == "flag" {
                self.read_flags(e)?;
            } else {
                self.warn(format!("option/{} ignored", e.tag));
            }
        }
        Ok(())
    }

    /// `<option><flag …>` (MuJoCo's disable / enable bits), docs/decisions.md "MJCF flags": each flag that
    /// changes the dynamics torsion models is honoured, a flag that would switch on physics torsion does not
    /// model is an error, and a flag about something torsion never applies (or only about numerics) is
    /// accepted.
    fn read_flags(&mut self, e: &El) -> Result<(), ModelError> {
        for (k, v) in &e.attrs {
            let on = match v.as_str() {
                "enable" => true,
                "disable" => false,
                _ => return Err(e.err(format!("flag {k}=\"{v}\": expected enable or disable"))),
            };
            let reject = |why: &str| Err(e.err(format!("flag {k}={v}: {why}")));
            match (k.as_str(), on) {
                ("gravity", false) => self.flags.gravity = false,
                ("contact", false) => self.flags.contact = false,
                ("limit", false) => self.flags.limit = false,
                ("spring", false) => self.flags.spring = false,
                ("damper", false) => self.flags.damper = false,
                // MuJoCo ≤ 3.2: springs, dampers and fluid forces together
                ("passive", false) => (self.flags.spring, self.flags.damper, self.flags.fluid) = (false, false, false),
                // all constraints: contacts and limits (equality constraints and friction loss are never applied)
                ("constraint", false) => (self.flags.contact, self.flags.limit) = (false, false),
                ("gravity" | "contact" | "limit" | "spring" | "damper" | "passive" | "constraint", true) => {}
                ("frictionloss", true) => return reject("dry joint friction is not modelled"),
                ("equality", true) => return reject("equality constraints are not modelled"),
                ("eulerdamp", false) => {
                    return reject("torsion's Euler step always integrates joint damping implicitly")
                }
                ("filterparent", false) => return reject("parent-child contact filtering cannot be switched off"),
                ("override", true) => return reject("contact parameter overrides are not modelled"),
                ("sleep", true) => return reject("body sleeping is not modelled"),
                ("ipc", true) | ("speculative", true) => {
                    return reject("this MuJoCo contact-solver mode is not modelled")
                }
                // never applied by torsion (friction loss, equality, MJCF actuators, control clamping), or only
                // about numerics / diagnostics
                (
                    "frictionloss" | "equality" | "actuation" | "clampctrl" | "warmstart" | "midphase" | "refsafe"
                    | "sensor" | "autoreset" | "nativeccd" | "island" | "multiccd",
                    _,
                )
                | ("eulerdamp" | "filterparent", true)
                | (
                    "energy" | "fwdinv" | "invdiscrete" | "diagexact" | "override" | "sleep" | "ipc" | "speculative",
                    false,
                ) => {}
                ("energy" | "fwdinv" | "invdiscrete" | "diagexact", true) => {}
                _ => return Err(e.err(format!("flag {k}: unknown MuJoCo flag"))),
            }
        }
        Ok(())
    }

    fn read_default(&mut self, d: &El, parent: Option<&str>) -> Result<(), ModelError> {
        let name = match (d.get("class"), parent) {
            (Some(n), _) => n.to_string(),
            (None, None) => "main".to_string(),
            (None, Some(_)) => return Err(d.err("a nested <default> needs a class attribute")),
        };
        let mut class = match parent {
            Some(p) => self.defaults[p].clone(),
            None => self.defaults.remove(&name).unwrap_or_default(),
        };
        if parent.is_some() && self.defaults.contains_key(&name) {
            return Err(d.err(format!("default class '{name}' defined twice")));
        }
        for c in d.children.iter().filter(|c| c.tag != "default") {
            let kind = if ACTUATORS.contains(&c.tag.as_str()) { "actuator" } else { c.tag.as_str() };
            let e = class.entry(kind.to_string()).or_default();
            for (k, v) in &c.attrs {
                match e.iter_mut().find(|(a, _)| a == k) {
                    Some(slot) => slot.1 = v.clone(),
                    None => e.push((k.clone(), v.clone())),
                }
            }
        }
        self.defaults.insert(name.clone(), class);
        for c in d.elements("default") {
            self.read_default(c, Some(&name))?;
        }
        Ok(())
    }

    fn read_assets(&mut self, a: &El) -> Result<(), ModelError> {
        for c in &a.children {
            match c.tag.as_str() {
                "mesh" => {
                    let Some(file) = c.get("file") else {
                        self.warn("asset/mesh without file ignored".into());
                        continue;
                    };
                    let stem = Path::new(file).file_stem().map(|s| s.to_string_lossy().to_string());
                    let Some(name) = c.get("name").map(str::to_string).or(stem) else {
                        return Err(c.err("mesh without name"));
                    };
                    if c.get("scale").is_some() {
                        self.warn("mesh@scale ignored".into());
                    }
                    let dir = match &self.meshdir {
                        Some(d) => self.model_dir.join(d),
                        None => self.model_dir.clone(),
                    };
                    self.meshes.insert(name, dir.join(file).display().to_string());
                }
                "texture" | "material" => {}
                t => self.warn(format!("asset/{t} ignored")),
            }
        }
        Ok(())
    }

    // ----- bodies

    /// The children of a body or frame element `el` belonging to body `me`; `frame` = pose of `el`'s frame in
    /// the body frame, `cls` = active child class.
    fn body_children<'a>(
        &self,
        el: &'a El,
        me: usize,
        frame: Tf,
        cls: &str,
        bodies: &mut Vec<MBody<'a>>,
    ) -> Result<(), ModelError> {
        for c in &el.children {
            match c.tag.as_str() {
                "body" => {
                    let it = Item { el: c, def: &[] };
                    for (k, _) in &c.attrs {
                        if !POSE.contains(&k.as_str()) && !["name", "childclass", "user"].contains(&k.as_str()) {
                            self.warn(format!("body@{k} ignored"));
                        }
                    }
                    let child_cls = c.get("childclass").unwrap_or(cls);
                    if !self.defaults.contains_key(child_cls) {
                        return Err(c.err(format!("unknown default class '{child_cls}'")));
                    }
                    let k = bodies.len();
                    let name = c.get("name").map_or_else(|| format!("body{k}"), str::to_string);
                    let tf = frame.mul(&self.pose(&it)?);
                    bodies.push(MBody {
                        el: c,
                        name,
                        parent: me,
                        tf,
                        joints: vec![],
                        geoms: vec![],
                        sites: vec![],
                        inertial: None,
                    });
                    self.body_children(c, k, Tf::identity(), child_cls, bodies)?;
                }
                "frame" => {
                    let it = Item { el: c, def: &[] };
                    let child_cls = c.get("childclass").unwrap_or(cls);
                    if !self.defaults.contains_key(child_cls) {
                        return Err(c.err(format!("unknown default class '{child_cls}'")));
                    }
                    self.body_children(c, me, frame.mul(&self.pose(&it)?), child_cls, bodies)?;
                }
                "joint" | "freejoint" => {
                    if me == 0 {
                        return Err(c.err("joints are not allowed in <worldbody>"));
                    }
                    if el.tag == "frame" {
                        return Err(c.err("joints are not allowed in <frame>"));
                    }
                    let j = self.joint(c, cls)?;
                    bodies[me].joints.push(j);
                }
                "geom" => {
                    if let Some(g) = self.geom(c, cls, &frame)? {
                        bodies[me].geoms.push(g);
                    }
                }
                "site" => {
                    let it = self.item(c, "site", cls)?;
                    self.check_attrs(&it, "site", &SITE_USED);
                    let tf = match self.fromto(&it)? {
                        Some((tf, _)) => tf,
                        None => self.pose(&it)?,
                    };
                    let name = c.get("name").map_or_else(|| format!("site{}", bodies[me].sites.len()), str::to_string);
                    bodies[me].sites.push((name, frame.mul(&tf)));
                }
                "inertial" => {
                    if me != 0 {
                        bodies[me].inertial = Some(self.inertial(c)?);
                    }
                }
                "camera" | "light" => {}
                t => self.warn(format!("{}/{t} ignored", el.tag)),
            }
        }
        Ok(())
    }

    fn joint<'a>(&self, el: &'a El, cls: &str) -> Result<MJoint<'a>, ModelError> {
        let free_el = el.tag == "freejoint";
        let it = if free_el { Item { el, def: &[] } } else { self.item(el, "joint", cls)? };
        if free_el {
            for (k, _) in &el.attrs {
                if !["name", "group", "align"].contains(&k.as_str()) {
                    self.warn(format!("freejoint@{k} ignored"));
                }
            }
        } else {
            self.check_attrs(&it, "joint", &JOINT_USED);
        }
        let kind = match if free_el { "free" } else { it.get("type").unwrap_or("hinge") } {
            "hinge" => JointType::Revolute,
            "slide" => JointType::Prismatic,
            "ball" => JointType::Ball,
            "free" => JointType::Free,
            t => return Err(it.err(format!("unknown joint type '{t}' (expected hinge, slide, ball or free)"))),
        };
        let axis = it.v3("axis")?.unwrap_or_else(Vec3::z);
        if axis.norm() < 1e-10 {
            return Err(it.err("zero-length axis"));
        }
        let angular = matches!(kind, JointType::Revolute | JointType::Ball);
        let scale = if angular { self.angle() } else { 1.0 };
        let range = it.nums("range", 2, 2)?.map(|r| (r[0] * scale, r[1] * scale));
        let limited = match it.tri("limited")? {
            Some(b) => b,
            None => self.autolimits && range.is_some_and(|r| r != (0.0, 0.0)),
        };
        let limit = match (kind, limited) {
            (_, false) => None,
            (JointType::Free, true) => {
                self.warn("joint free limits ignored".into());
                None
            }
            (JointType::Ball, true) => {
                let (_, hi) = range.unwrap_or((0.0, 0.0));
                if hi <= 0.0 {
                    return Err(it.err(format!("limited ball joint needs range=\"0 max\" with max > 0, got {hi}")));
                }
                Some((0.0, hi))
            }
            (_, true) => {
                let (lo, hi) = range.unwrap_or((0.0, 0.0));
                if lo >= hi {
                    return Err(it.err(format!("limited joint: range lower {lo} must be below upper {hi}")));
                }
                Some((lo, hi))
            }
        };
        let one_dof = kind.dof() == 1;
        let nonneg = |a: &str| -> Result<f64, ModelError> {
            let v = it.f64_or(a, 0.0)?;
            if v < 0.0 {
                return Err(it.err(format!("{a} must be ≥ 0, got {v}")));
            }
            Ok(v)
        };
        Ok(MJoint {
            el,
            name: el.get("name").unwrap_or("").to_string(),
            kind,
            pos: it.v3("pos")?.unwrap_or_default(),
            axis: axis.normalize(),
            limit,
            damping: nonneg("damping")?,
            armature: nonneg("armature")?,
            stiffness: nonneg("stiffness")?,
            frictionloss: nonneg("frictionloss")?,
            springref: if one_dof { it.f64_or("springref", 0.0)? * scale } else { 0.0 },
            reference: if one_dof { it.f64_or("ref", 0.0)? * scale } else { 0.0 },
        })
    }

    fn geom<'a>(&self, el: &'a El, cls: &str, frame: &Tf) -> Result<Option<MGeom<'a>>, ModelError> {
        let it = self.item(el, "geom", cls)?;
        self.check_attrs(&it, "geom", &GEOM_USED);
        let ty = it.get("type").unwrap_or("sphere");
        match it.get("fluidshape") {
            None | Some("none") => {}
            Some("ellipsoid") if self.flags.fluid && (self.density > 0.0 || self.viscosity > 0.0) => {
                return Err(it.err(
                    "fluidshape=\"ellipsoid\": MuJoCo's ellipsoid fluid model is not modelled (only the default \
                     inertia-box model; remove fluidshape)",
                ))
            }
            Some("ellipsoid") => {}
            Some(v) => return Err(it.err(format!("fluidshape=\"{v}\": expected none or ellipsoid"))),
        }
        let size = it.nums_over("size", &[0.0; 3])?;
        let fromto = self.fromto(&it)?;
        if fromto.is_some() && !["capsule", "cylinder", "box", "ellipsoid"].contains(&ty) {
            return Err(it.err(format!("fromto requires a capsule, cylinder, box or ellipsoid geom, not '{ty}'")));
        }
        let (tf, half) = match fromto {
            Some((tf, h)) => (tf, Some(h)),
            None => (self.pose(&it)?, None),
        };
        // size[k], which must be > 0
        let s = |k: usize| -> Result<f64, ModelError> {
            match size.get(k) {
                Some(&v) if v > 0.0 => Ok(v),
                _ => Err(it.err(format!("{ty} geom needs size[{k}] > 0 (size=\"{}\")", it.get("size").unwrap_or("")))),
            }
        };
        let kind = match ty {
            "sphere" => ShapeKind::Sphere { radius: s(0)? },
            "capsule" => ShapeKind::Capsule { radius: s(0)?, half_length: half.map_or_else(|| s(1), Ok)? },
            "cylinder" => ShapeKind::Cylinder { radius: s(0)?, half_length: half.map_or_else(|| s(1), Ok)? },
            "box" | "ellipsoid" => {
                let e = match half {
                    Some(h) => Vec3::new(s(0)?, s(0)?, h),
                    None => Vec3::new(s(0)?, s(1)?, s(2)?),
                };
                if ty == "box" {
                    ShapeKind::Box { half_extents: e }
                } else {
                    ShapeKind::Ellipsoid { radii: e }
                }
            }
            "plane" => ShapeKind::Plane { half_extents: [size[0], size[1]] },
            "mesh" => {
                let Some(mesh) = it.get("mesh") else { return Err(it.err("mesh geom without mesh attribute")) };
                let Some(file) = self.meshes.get(mesh) else {
                    return Err(it.err(format!("mesh '{mesh}' is not defined in <asset>")));
                };
                ShapeKind::Mesh { file: file.clone() }
            }
            "hfield" | "sdf" => {
                self.warn(format!("geom type {ty} ignored"));
                return Ok(None);
            }
            t => {
                return Err(it.err(format!(
                    "unknown geom type '{t}' (expected plane, sphere, capsule, ellipsoid, cylinder, box, mesh, hfield or sdf)"
                )))
            }
        };
        let mass = match kind.volume() {
            None => None,
            Some(vol) => {
                let m = match it.nums("mass", 1, 1)? {
                    Some(v) => v[0],
                    None => it.f64_or("density", 1000.0)? * vol,
                };
                if m < 0.0 {
                    return Err(it.err(format!("negative mass {m}")));
                }
                Some((m, kind.inertia_in(m, &tf.q).unwrap_or_default()))
            }
        };
        let group = it.int_or("group", 0)?;
        let f = it.nums_over("friction", &DEFAULT_FRICTION)?;
        let friction = [f[0], f[1], f[2]];
        let mask = |a: &str| -> Result<u32, ModelError> {
            let v = it.int_or(a, 1)?;
            u32::try_from(v).map_err(|_| it.err(format!("{a}=\"{v}\": expected a non-negative 32-bit integer")))
        };
        Ok(Some(MGeom {
            el,
            name: el.get("name").unwrap_or("").to_string(),
            counts: !matches!(kind, ShapeKind::Plane { .. })
                && group >= self.inertia_groups.0
                && group <= self.inertia_groups.1,
            kind,
            tf: frame.mul(&tf),
            mass: mass.map(|(m, i)| {
                let r = frame.q.to_mat();
                (m, r * i * r.transpose())
            }),
            friction,
            contype: mask("contype")?,
            conaffinity: mask("conaffinity")?,
        }))
    }

    /// `<inertial>` → (mass, COM, inertia about the COM in body axes).
    fn inertial(&self, el: &El) -> Result<(f64, Vec3, Mat3), ModelError> {
        let it = Item { el, def: &[] };
        let pos = it.v3("pos")?.ok_or_else(|| it.err("missing pos"))?;
        let mass = it.nums("mass", 1, 1)?.ok_or_else(|| it.err("missing mass"))?[0];
        if mass < 0.0 {
            return Err(it.err(format!("negative mass {mass}")));
        }
        let q = self.orientation(&it)?;
        let i = match (it.v3("diaginertia")?, it.nums("fullinertia", 6, 6)?) {
            (Some(d), None) => {
                let r = q.unwrap_or_else(Quat::identity).to_mat();
                r * Mat3::from_diagonal(&d) * r.transpose()
            }
            (None, Some(f)) => {
                if q.is_some() {
                    return Err(it.err("fullinertia cannot be combined with an orientation"));
                }
                Mat3::new(f[0], f[3], f[4], f[3], f[1], f[5], f[4], f[5], f[2])
            }
            (Some(_), Some(_)) => return Err(it.err("both diaginertia and fullinertia")),
            (None, None) => return Err(it.err("missing diaginertia or fullinertia")),
        };
        Ok((mass, pos, i))
    }

    /// Mass, COM and inertia of one MJCF body in its own frame.
    fn body_mass(&self, b: &MBody) -> Result<(f64, Vec3, Mat3), ModelError> {
        let use_inertial = match self.from_geom {
            FromGeom::Never => true,
            FromGeom::Always => false,
            FromGeom::Auto => b.inertial.is_some(),
        };
        if use_inertial {
            return Ok(b.inertial.unwrap_or((0.0, Vec3::zeros(), Mat3::zeros())));
        }
        let mut parts = vec![];
        for g in b.geoms.iter().filter(|g| g.counts) {
            let Some((m, i)) = g.mass else {
                return Err(g.el.err(format!(
                    "mesh inertia not supported: give body '{}' an explicit <inertial> (or put the geom in a \
                     group outside <compiler inertiagrouprange>)",
                    b.name
                )));
            };
            parts.push((m, g.tf.p, i));
        }
        Ok(combine(&parts))
    }

    // ----- assembly

    fn assemble(&self, name: &str, bodies: &[MBody]) -> Result<Model, ModelError> {
        let nb = bodies.len();
        let mut own = vec![(0.0, Vec3::zeros(), Mat3::zeros())];
        for b in &bodies[1..] {
            own.push(self.body_mass(b)?);
        }
        if let Some(total) = self.settotalmass {
            let sum: f64 = own.iter().map(|o| o.0).sum();
            if sum > 0.0 {
                for o in &mut own {
                    o.0 *= total / sum;
                    o.2 *= total / sum;
                }
            }
        }
        // weld groups: root MJCF body (one with joints, or the world) and the pose of each body in its root
        let mut root = vec![0; nb];
        let mut in_root = vec![Tf::identity(); nb];
        for b in 1..nb {
            let p = bodies[b].parent;
            if bodies[b].joints.is_empty() {
                root[b] = root[p];
                in_root[b] = in_root[p].mul(&bodies[b].tf);
            } else {
                root[b] = b;
            }
        }
        let fluid = self.flags.fluid && (self.density > 0.0 || self.viscosity > 0.0);
        for b in 1..nb {
            if fluid && root[b] != b && root[b] != 0 && own[b].0 > 0.0 {
                self.warn(format!(
                    "fluid forces: body '{}' is welded into '{}', whose one inertia box includes it (MuJoCo: a box \
                     per body)",
                    bodies[b].name, bodies[root[b]].name
                ));
            }
        }
        let mut parts: Vec<Vec<(f64, Vec3, Mat3)>> = vec![vec![]; nb];
        for b in 1..nb {
            let (t, (m, c, i)) = (in_root[b], own[b]);
            let r = t.q.to_mat();
            parts[root[b]].push((m, t.p + t.q.rotate(&c), r * i * r.transpose()));
        }
        let group: Vec<(f64, Vec3, Mat3)> = parts.iter().map(|p| combine(p)).collect();
        let com = |r: usize| if r == 0 { Vec3::zeros() } else { group[r].1 };

        let mut m = Model::empty(name);
        m.gravity = self.gravity;
        m.dt = self.dt;
        if self.flags.fluid {
            (m.fluid_density, m.fluid_viscosity, m.wind) = (self.density, self.viscosity, self.wind);
        }
        m.body_name.push("world".into());
        m.body_mass.push(f64::INFINITY);
        m.body_inertia.push(Mat3::zeros());
        m.body_fixed.push(true);
        m.body_com.push(Vec3::zeros());
        m.body_pose0.push((Vec3::zeros(), Quat::identity()));
        let mut ours = vec![0usize; nb]; // our (real) body of each group root
        let mut names: HashSet<String> = HashSet::from(["world".to_string()]);
        let mut joint_names: HashSet<String> = HashSet::new();
        for b in 1..nb {
            if !names.insert(bodies[b].name.clone()) {
                return Err(bodies[b].el.err(format!("body name '{}' used twice", bodies[b].name)));
            }
            if root[b] != b {
                continue;
            }
            let mb = &bodies[b];
            let (mass, c, inertia) = group[b];
            if !(mass > 0.0 && mass.is_finite()) || inertia.cholesky().is_none() {
                return Err(mb.el.err(format!(
                    "a moving body needs mass > 0 and a positive definite inertia (with the bodies welded to it), \
                     got mass {mass}, inertia {:?}",
                    inertia.as_slice()
                )));
            }
            let p = mb.parent;
            let tpb = in_root[p].mul(&mb.tf); // child MJCF frame in the parent group root's frame
            let k = mb.joints.len();
            let mut prev = ours[root[p]];
            for (i, j) in mb.joints.iter().enumerate() {
                let last = i + 1 == k;
                let jname = if j.name.is_empty() { format!("joint{}", m.joint_count()) } else { j.name.clone() };
                if !joint_names.insert(jname.clone()) {
                    return Err(j.el.err(format!("joint name '{jname}' used twice")));
                }
                let bname = if last { mb.name.clone() } else { format!("{}/{jname}", mb.name) };
                if !last && !names.insert(bname.clone()) {
                    return Err(j.el.err(format!("virtual body name '{bname}' clashes with a body name")));
                }
                let child_com = if last { c } else { Vec3::zeros() };
                m.body_name.push(bname);
                m.body_mass.push(if last { mass } else { 0.0 });
                m.body_inertia.push(if last { inertia } else { Mat3::zeros() });
                m.body_fixed.push(false);
                m.body_com.push(child_com);
                m.body_pose0.push((Vec3::zeros(), Quat::identity()));
                let child = m.body_count() - 1;
                let (mut ap, mut fp) = if i == 0 {
                    (tpb.p + tpb.q.rotate(&j.pos) - com(root[p]), tpb.q)
                } else {
                    (j.pos, Quat::identity())
                };
                let (mut ac, mut fc) = (j.pos - child_com, Quat::identity());
                match j.kind {
                    JointType::Free => {
                        if p != 0 {
                            return Err(j
                                .el
                                .err("a free joint is only allowed in a top-level body (child of <worldbody>)"));
                        }
                        if k != 1 {
                            return Err(j.el.err("a free joint must be the only joint of its body"));
                        }
                        (ap, fp, ac) = (Vec3::zeros(), Quat::identity(), -child_com);
                        m.qpos0.extend_from_slice(&[tpb.p.x, tpb.p.y, tpb.p.z]);
                        m.qpos0.extend_from_slice(&tpb.q.to_array());
                    }
                    JointType::Ball => m.qpos0.extend_from_slice(&[1.0, 0.0, 0.0, 0.0]),
                    JointType::Revolute => {
                        fc = Quat::from_axis_angle(&j.axis, j.reference);
                        m.qpos0.push(j.reference);
                    }
                    JointType::Prismatic => {
                        ac += j.axis * j.reference;
                        m.qpos0.push(j.reference);
                    }
                    JointType::Fixed => {}
                }
                m.joint_name.push(jname);
                m.joint_type.push(j.kind);
                m.joint_parent.push(prev);
                m.joint_child.push(child);
                m.joint_anchor_parent.push(ap);
                m.joint_anchor_child.push(ac);
                m.joint_frame_parent.push(fp);
                m.joint_frame_child.push(fc);
                m.joint_axis.push(j.axis);
                m.joint_limit.push(j.limit);
                m.joint_damping.push(j.damping);
                m.joint_effort.push(f64::INFINITY);
                m.joint_spring.push(None);
                m.joint_armature.push(j.armature);
                m.joint_stiffness.push(j.stiffness);
                m.joint_springref.push(j.springref);
                m.joint_frictionloss.push(j.frictionloss);
                prev = child;
            }
            ours[b] = prev;
        }
        // shapes and sites, re-expressed in their body's COM frame
        for (b, mb) in bodies.iter().enumerate() {
            let (r, t) = (root[b], in_root[b]);
            for (k, g) in mb.geoms.iter().enumerate() {
                if r != 0 && matches!(g.kind, ShapeKind::Plane { .. }) {
                    return Err(g.el.err("plane geoms are only allowed in static bodies"));
                }
                let x = t.mul(&g.tf);
                m.shapes.push(Shape {
                    name: if g.name.is_empty() { format!("{}/geom{k}", mb.name) } else { g.name.clone() },
                    body: ours[r],
                    pose: (x.p - com(r), x.q),
                    kind: g.kind.clone(),
                    friction: g.friction,
                    restitution: 0.0,
                    contype: g.contype,
                    conaffinity: g.conaffinity,
                });
            }
            for (name, tf) in &mb.sites {
                let x = t.mul(tf);
                m.extras.sites.push(Site { name: name.clone(), body: ours[r], pose: (x.p - com(r), x.q) });
            }
        }
        let q0 = m.qpos0.clone();
        m.body_pose0 = m.forward_kinematics(&q0)?;
        // the <flag>s (read_flags)
        let f = self.flags;
        if !f.gravity {
            m.gravity = Vec3::zeros();
        }
        m.contact_enabled = f.contact;
        if !f.limit {
            m.joint_limit.iter_mut().for_each(|l| *l = None);
        }
        if !f.spring {
            m.joint_stiffness.iter_mut().for_each(|k| *k = 0.0);
        }
        if !f.damper {
            m.joint_damping.iter_mut().for_each(|d| *d = 0.0);
        }
        Ok(m)
    }

    // ----- tendons and actuators

    fn read_tendons(&self, root: &El, m: &mut Model) -> Result<(), ModelError> {
        for sec in root.elements("tendon") {
            for t in &sec.children {
                let kind = match t.tag.as_str() {
                    "fixed" => TendonKind::Fixed,
                    "spatial" => TendonKind::Spatial,
                    other => {
                        self.warn(format!("tendon/{other} ignored"));
                        continue;
                    }
                };
                let it = self.item(t, "tendon", "main")?;
                let k = m.extras.tendons.len();
                m.extras.tendons.push(Tendon {
                    name: t.get("name").map_or_else(|| format!("tendon{k}"), str::to_string),
                    kind,
                    attrs: it.attrs(),
                    elements: t.children.iter().map(|c| (c.tag.clone(), c.attrs.clone())).collect(),
                });
            }
        }
        Ok(())
    }

    fn read_actuators(&self, root: &El, m: &mut Model, bodies: &[MBody]) -> Result<(), ModelError> {
        for sec in root.elements("actuator") {
            for a in &sec.children {
                if !ACTUATORS.contains(&a.tag.as_str()) {
                    self.warn(format!("actuator/{} ignored", a.tag));
                    continue;
                }
                let it = self.item(a, "actuator", "main")?;
                let target = if let Some(j) = it.el.get("joint").or(it.el.get("jointinparent")) {
                    if m.joint_index(j).is_none() {
                        return Err(it.err(format!("unknown joint '{j}'")));
                    }
                    ActuatorTarget::Joint(j.into())
                } else if let Some(t) = it.el.get("tendon") {
                    if m.extras.tendon_index(t).is_none() {
                        return Err(it.err(format!("unknown tendon '{t}'")));
                    }
                    ActuatorTarget::Tendon(t.into())
                } else if let Some(s) = it.el.get("site") {
                    if m.extras.site_index(s).is_none() {
                        return Err(it.err(format!("unknown site '{s}'")));
                    }
                    ActuatorTarget::Site(s.into())
                } else if let Some(b) = it.el.get("body") {
                    if !bodies.iter().any(|x| x.name == b) {
                        return Err(it.err(format!("unknown body '{b}'")));
                    }
                    ActuatorTarget::Body(b.into())
                } else {
                    return Err(it.err("no transmission target (joint, tendon, site or body)"));
                };
                let g = it.nums_over("gear", &[1.0, 0.0, 0.0, 0.0, 0.0, 0.0])?;
                let gear = [g[0], g[1], g[2], g[3], g[4], g[5]];
                let range = it.nums("ctrlrange", 2, 2)?.map_or((0.0, 0.0), |r| (r[0], r[1]));
                let ctrllimited = match it.tri("ctrllimited")? {
                    Some(b) => b,
                    None => self.autolimits && range != (0.0, 0.0),
                };
                if ctrllimited && range.0 >= range.1 {
                    return Err(it.err(format!("ctrlrange lower {} must be below upper {}", range.0, range.1)));
                }
                let k = m.extras.actuators.len();
                m.extras.actuators.push(Actuator {
                    name: a.get("name").map_or_else(|| format!("actuator{k}"), str::to_string),
                    kind: a.tag.clone(),
                    target,
                    gear,
                    ctrlrange: range,
                    ctrllimited,
                    attrs: it.attrs(),
                });
            }
        }
        Ok(())
    }
}
