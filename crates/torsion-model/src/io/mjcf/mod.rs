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
//! - `<option timestep gravity density viscosity wind integrator>` → [`Model::dt`], [`Model::gravity`] (MuJoCo
//!   defaults 0.002, (0, 0, −9.81)), the fluid fields, [`Model::integrator`] (`implicit` runs as `implicitfast`,
//!   with a warning); `<flag>`s honoured or rejected (`read_flags`, docs/decisions.md).
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
//!   raw); two-site spatial tendons become `Model::cables`, and the motor / position / velocity / general
//!   actuators on them or on hinge / slide joints `Model::cable_actuators` (`tendons_actuators.rs`; ball / free
//!   joint actuators are an error). Joint order: parent before child (MJCF body pre-order, joints in file order, = MuJoCo's joint order).
//!
//! - `<custom><numeric name="torsion_linear_contact" data="β e γ μ ε"/>` turns spec 003's linear contact model on
//!   (`Model::tensegrity_contact`, `tendon::LinearContact`); without it the model is off.
//!
//! Reported once each in `extras.warnings` ("… ignored"): other `option` attributes and children, physics attributes not modelled (`geom@condim`, `geom@solref`, `joint@solreflimit`,
//! `body@mocap`, …), `contact`, `equality`, `sensor`, `keyframe`, `custom`, `extension`, `deformable`
//! children, hfield/skin assets, `compiler` options without an effect here (boundmass, balanceinertia, …),
//! composite/flexcomp/replicate/attach/plugin in bodies, unknown elements. Ignored silently (visual or
//! bookkeeping only): `visual`, `statistic`, `size`, `camera`, `light`, `texture`, `material`, the
//! attributes `rgba`, `material`, `group` (except for the inertia group range), `user`, and site
//! `type`/`size`, compiler `texturedir`, `strippath`, `discardvisual`, `fusestatic`, `usethread`,
//! `exactmeshinertia`, `coordinate="local"` (`"global"` is an error).
//!
//! Layout: this file holds the entry points and the `Compiler` (settings, section order); its methods live by
//! concern in `parse.rs` (XML tree, attributes, poses), `defaults.rs` (compiler / option / default / asset),
//! `bodies_joints.rs` (worldbody, joints, assembly), `geoms_inertia.rs`, `tendons_actuators.rs`.
mod bodies_joints;
mod defaults;
mod geoms_inertia;
mod parse;
mod tendons_actuators;

use crate::error::ModelError;
use crate::extras::ModelExtras;
use crate::io::transform::Tf;
use crate::model::{JointType, Model};
use crate::shape::ShapeKind;
use parse::{parse_tree, El, Item};
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use torsion_math::{Mat3, Vec3};

/// Load an MJCF file (errors name `path`, or the included file they occur in).
pub fn load_mjcf(path: &Path) -> Result<Model, ModelError> {
    let file = path.display().to_string();
    let text = crate::io::read_xml(path, &file)?;
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
    frictionloss: bool,
}

impl Default for Flags {
    fn default() -> Self {
        Flags { gravity: true, contact: true, limit: true, spring: true, damper: true, fluid: true, frictionloss: true }
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
    /// `option integrator`
    integrator: crate::Integrator,
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
            integrator: crate::Integrator::SemiImplicitEuler,
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
                        let lc = crate::tendon::LINEAR_CONTACT_CUSTOM;
                        if c.tag == "custom" && e.tag == "numeric" && e.get("name") == Some(lc) {
                            continue; // read below
                        }
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
        m.tensegrity_contact = read_linear_contact(root)?;
        m.extras.warnings = std::mem::take(&mut self.extras.borrow_mut().warnings);
        m.validate().map_err(|e| root.err(format!("the loaded model is invalid: {e}")))?;
        Ok(m)
    }
}

/// `<custom><numeric name="torsion_linear_contact" data="β e γ μ ε"/>` (a MuJoCo-valid element MuJoCo itself
/// ignores) turns spec 003's linear contact model on (`Model::tensegrity_contact`); absent: off.
fn read_linear_contact(root: &El) -> Result<Option<crate::tendon::LinearContact>, ModelError> {
    let name = crate::tendon::LINEAR_CONTACT_CUSTOM;
    let Some(e) = root.elements("custom").flat_map(|c| c.elements("numeric")).find(|e| e.get("name") == Some(name))
    else {
        return Ok(None);
    };
    let it = Item { el: e, def: &[] };
    let data = it.get("data").ok_or_else(|| e.err("needs data=\"β e γ μ ε\" (5 numbers)"))?;
    let v = it.parse("data", data, 5, 5)?;
    let lc = crate::tendon::LinearContact::from_array([v[0], v[1], v[2], v[3], v[4]]);
    lc.validate().map_err(|err| e.err(err))?;
    Ok(Some(lc))
}
