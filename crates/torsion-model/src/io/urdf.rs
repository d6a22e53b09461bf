//! URDF loader: a URDF file → [`Model`] (spec 000 §4.7 for the Baxter left arm).
//!
//! Values come from `urdf-rs`; `roxmltree` is used beside it only to check what `urdf-rs` cannot report
//! (element presence, numbers it would silently drop, line numbers), so that every error is a
//! [`ModelError::Parse`] naming the file, the element (`link 'left_wrist'`, `joint 'left_s0'`) and the problem.
//!
//! Mapping (see the conventions in `model.rs`):
//! - Body frame: origin at the COM of the (merged) link, orientation of the URDF link frame; the inertia is
//!   taken about the COM in link-frame axes (I = R I_in Rᵀ with R from `<inertial><origin rpy>`).
//! - Fixed joints are merged into their parent body (mass, COM, parallel-axis inertia, all in the parent link
//!   frame); joints leaving a merged link are re-expressed in the parent link frame.
//! - The root link is a fixed (infinite-mass) body. Without [`UrdfOptions::root`] it is the URDF root, at the
//!   world origin with identity orientation, and anything fixed to it merges into it.
//! - With `root` (and optionally `tip`) the model is the subtree below `root`. With a `tip`, only the joints on
//!   the chain root → tip move: every other joint of the subtree is locked at its zero (the URDF's reference
//!   pose) and the links beyond it are welded into the body they hang from, as fixed joints are — the gripper,
//!   fingers and sensors below the tip, and dummies or whole branches hanging off chain links (Pinocchio's
//!   `buildReducedModel` with those joints locked at q = 0; docs/decisions.md). [`UrdfOptions::drop_off_chain`]
//!   drops them instead (the bare chain of spec 000 §4.7). Links outside the subtree of `root` are not loaded
//!   (locked to the fixed base, they do not change the dynamics). The base body is named after `root` and is
//!   placed at its zero-configuration world pose from the URDF root; its frame moves down the leading fixed
//!   joints of the path to the link the first moving joint hangs from (for Baxter `torso` → `left_arm_mount`, so
//!   the base sits at the mount pose and s0's anchor is its URDF origin, exactly as spec 000 §4.7 builds it).
//!   Fixed joints further down the path merge as above.
//! - Joints: revolute / continuous → [`JointType::Revolute`], prismatic → [`JointType::Prismatic`]; floating,
//!   planar and spherical are rejected (off the chain, locked, any type is welded). `<mimic>` is ignored (the
//!   joint stays independent; its `joint` must exist). Limits are `Some((lower, upper))` for revolute and prismatic (`<limit>` is
//!   required there; URDF 1.2 omitted bounds → `None`), `None` for continuous; damping from `<dynamics damping>`
//!   (0 if absent), friction loss (MuJoCo's `frictionloss`, dry friction) from `<dynamics friction>` (0 if absent), effort from `<limit effort>` (∞ if absent), no spring.
//! - Gravity (0, 0, −9.81), dt 0.01, joints in breadth-first (parent-before-child) order from the root.
//! - `<collision>` geometries of the kept links become [`Model::shapes`] (box, sphere, cylinder and capsule with
//!   their axis along the shape z, mesh by file name, `<mesh scale>` ignored), posed in the body (COM) frame,
//!   with MuJoCo's default friction and contype = conaffinity = 1. `qpos0` = [`Model::zero_q`]; armature,
//!   stiffness and spring reference are 0.
use super::packages::PackageSearch;
use super::transform::Tf;
use crate::builder::JointDesc;
use crate::error::ModelError;
use crate::model::{JointType, Model};
use crate::shape::{Shape, ShapeKind};
use std::collections::{HashMap, HashSet, VecDeque};
use std::path::Path;
use torsion_math::{Mat3, Quat, Vec3};

/// Which part of the URDF tree to load.
#[derive(Clone, Debug, Default)]
pub struct UrdfOptions {
    /// Link that becomes the fixed base (default: the URDF root link).
    pub root: Option<String>,
    /// Last moving link: only the joints of the chain `root` → `tip` move; the rest of the subtree below `root`
    /// is welded at its zero pose (default: the whole subtree below `root` moves).
    pub tip: Option<String>,
    /// With `tip`: drop the links off the chain (below the tip, or hanging off chain links) instead of welding
    /// them in (default false: welded, Pinocchio's reduced-model semantics).
    pub drop_off_chain: bool,
}

/// Load a URDF file (the error messages name `path`).
pub fn load_urdf(path: &Path, opts: &UrdfOptions) -> Result<Model, ModelError> {
    let file = path.display().to_string();
    let text = super::read_xml(path, &file)?;
    let mut m = load(&text, &file, opts, Some(path))?;
    m.source_file = Some(path.to_path_buf());
    Ok(m)
}

/// Load URDF text; `file_label` stands for the file in error messages.
pub fn load_urdf_str(text: &str, file_label: &str, opts: &UrdfOptions) -> Result<Model, ModelError> {
    load(text, file_label, opts, None)
}

/// `path`: the file, if any: plain mesh names must exist in its folder, `package://` names are checked by
/// [`PackageSearch::check_at_load`].
fn load(text: &str, file_label: &str, opts: &UrdfOptions, path: Option<&Path>) -> Result<Model, ModelError> {
    let f = file_label;
    let dir = path.and_then(Path::parent);
    let packages = path.map(|p| PackageSearch::new(&[], Some(p)));
    let side = precheck(text, f)?;
    let robot = urdf_rs::read_from_string(text).map_err(|e| perr(f, &side.robot, e.to_string()))?;
    let rname = &side.robot;

    // --- the link tree
    let nl = robot.links.len();
    let mut idx: HashMap<&str, usize> = HashMap::new();
    for (k, l) in robot.links.iter().enumerate() {
        if idx.insert(l.name.as_str(), k).is_some() {
            return Err(side.err(f, &link_el(&l.name), "link defined twice".into()));
        }
    }
    let mut parent_joint: Vec<Option<usize>> = vec![None; nl];
    let mut child_joints: Vec<Vec<usize>> = vec![vec![]; nl];
    let mut joint_names = HashSet::new();
    for jt in &robot.joints {
        joint_names.insert(jt.name.as_str());
    }
    for (j, target) in &side.mimic {
        if !joint_names.contains(target.as_str()) {
            return Err(side.err(
                f,
                &joint_el(j),
                format!("<mimic joint=\"{target}\">: no joint '{target}' in {rname}"),
            ));
        }
    }
    let mut joint_names = HashSet::new();
    let mut ends = Vec::with_capacity(robot.joints.len());
    for (j, jt) in robot.joints.iter().enumerate() {
        let el = joint_el(&jt.name);
        if !joint_names.insert(jt.name.as_str()) {
            return Err(side.err(f, &el, "joint defined twice".into()));
        }
        let find = |role: &str, name: &str| {
            idx.get(name).copied().ok_or_else(|| side.err(f, &el, format!("{role} link '{name}' is not defined")))
        };
        let (p, c) = (find("parent", &jt.parent.link)?, find("child", &jt.child.link)?);
        if p == c {
            return Err(side.err(f, &el, format!("parent and child are the same link '{}'", jt.child.link)));
        }
        if let Some(k) = parent_joint[c] {
            let other = &robot.joints[k].name;
            return Err(side.err(f, &el, format!("child link '{}' already has parent joint '{other}'", jt.child.link)));
        }
        parent_joint[c] = Some(j);
        child_joints[p].push(j);
        ends.push((p, c));
    }
    let roots: Vec<usize> = (0..nl).filter(|&k| parent_joint[k].is_none()).collect();
    let [urdf_root] = roots[..] else {
        let names: Vec<&str> = roots.iter().map(|&k| robot.links[k].name.as_str()).collect();
        return Err(perr(
            f,
            rname,
            format!("expected one root link (a link no joint has as child), found {}: {names:?}", roots.len()),
        ));
    };

    // --- world poses of every link frame at the zero configuration (breadth-first from the URDF root)
    let mut world = vec![Tf::identity(); nl];
    let mut reached = vec![false; nl];
    let mut queue = VecDeque::from([urdf_root]);
    reached[urdf_root] = true;
    while let Some(l) = queue.pop_front() {
        for &j in &child_joints[l] {
            let c = ends[j].1;
            world[c] = world[l].mul(&Tf::pose(&robot.joints[j].origin));
            reached[c] = true;
            queue.push_back(c);
        }
    }
    if let Some(k) = (0..nl).find(|&k| !reached[k]) {
        return Err(side.err(
            f,
            &link_el(&robot.links[k].name),
            format!("not reachable from the root link '{}' (kinematic loop)", robot.links[urdf_root].name),
        ));
    }

    // --- which links to keep: base link, the kept set, the base frame's link (see the module docs)
    let find_link = |role: &str, name: &str| {
        idx.get(name).copied().ok_or_else(|| side.err(f, &link_el(name), format!("{role} link not found in {rname}")))
    };
    let base = match &opts.root {
        Some(r) => find_link("root", r)?,
        None => urdf_root,
    };
    // keep: the subtree below the base; on_chain: the links whose parent joint may move (all of them without tip)
    let mut keep = vec![false; nl];
    let mut queue = VecDeque::from([base]);
    keep[base] = true;
    while let Some(l) = queue.pop_front() {
        for &j in &child_joints[l] {
            keep[ends[j].1] = true;
            queue.push_back(ends[j].1);
        }
    }
    let mut on_chain = keep.clone();
    let mut base_frame = base;
    if let Some(t) = &opts.tip {
        let tip = find_link("tip", t)?;
        let mut path = vec![tip];
        let mut l = tip;
        while l != base {
            let Some(j) = parent_joint[l] else {
                return Err(side.err(
                    f,
                    &link_el(t),
                    format!("tip link is not below the root link '{}'", robot.links[base].name),
                ));
            };
            l = ends[j].0;
            path.push(l);
        }
        path.reverse(); // base … tip
        on_chain = vec![false; nl];
        for &l in &path {
            on_chain[l] = true;
        }
        if opts.drop_off_chain {
            keep.clone_from(&on_chain);
        }
        for w in path.windows(2) {
            match parent_joint[w[1]] {
                Some(j) if robot.joints[j].joint_type == urdf_rs::JointType::Fixed => base_frame = w[1],
                _ => break,
            }
        }
    }

    // --- bodies = groups of links joined by fixed joints, created breadth-first from the base
    let mut group = vec![usize::MAX; nl];
    let mut body_link = vec![base]; // link naming each body
    let mut frame_link = vec![base_frame]; // link whose frame is the body frame
    let mut members: Vec<Vec<usize>> = vec![vec![base]];
    let mut moving: Vec<usize> = vec![]; // URDF joint of each model joint (its child body = index + 1)
    group[base] = 0;
    let mut queue = VecDeque::from([base]);
    while let Some(l) = queue.pop_front() {
        for &j in &child_joints[l] {
            let c = ends[j].1;
            if !keep[c] {
                continue;
            }
            use urdf_rs::JointType as U;
            let jt = &robot.joints[j];
            // a joint off the chain is locked at its zero: its child is welded (merged) like a fixed joint's
            let locked = !on_chain[c];
            match jt.joint_type {
                _ if locked => {
                    group[c] = group[l];
                    members[group[l]].push(c);
                }
                U::Fixed => {
                    group[c] = group[l];
                    members[group[l]].push(c);
                }
                U::Revolute | U::Continuous | U::Prismatic => {
                    group[c] = body_link.len();
                    body_link.push(c);
                    frame_link.push(c);
                    members.push(vec![c]);
                    moving.push(j);
                }
                ref other => {
                    let ty = format!("{other:?}").to_lowercase();
                    return Err(side.err(
                        f,
                        &joint_el(&jt.name),
                        format!("unsupported joint type '{ty}' (supported: revolute, continuous, prismatic, fixed)"),
                    ));
                }
            }
            queue.push_back(c);
        }
    }
    // link frame → its body's frame
    let in_body = |l: usize| world[frame_link[group[l]]].inv().mul(&world[l]);

    // --- model
    let mut m = Model::empty(&robot.name);
    m.gravity = Vec3::new(0.0, 0.0, -9.81);
    m.dt = 0.01;
    for (b, mem) in members.iter().enumerate() {
        let name = &robot.links[body_link[b]].name;
        if b == 0 {
            let pose0 = (world[base_frame].p, world[base_frame].q);
            m.push_body(name.clone(), true, f64::INFINITY, Mat3::zeros(), Vec3::zeros(), pose0);
            continue;
        }
        let (mass, com, inertia) = merge_inertials(&robot, mem, &in_body, &side, f)?;
        m.push_body(name.clone(), false, mass, inertia, com, (Vec3::zeros(), Quat::identity()));
    }
    for (k, &j) in moving.iter().enumerate() {
        let jt = &robot.joints[j];
        let el = joint_el(&jt.name);
        let (p, c) = ends[j];
        let xj = in_body(p).mul(&Tf::pose(&jt.origin)); // joint frame in the parent body frame
        let axis = Vec3::from(jt.axis.xyz.0);
        if axis.norm() <= 1e-12 {
            return Err(side.err(f, &el, "zero-length <axis xyz>".into()));
        }
        let (kind, limited) = match jt.joint_type {
            urdf_rs::JointType::Prismatic => (JointType::Prismatic, true),
            urdf_rs::JointType::Revolute => (JointType::Revolute, true),
            _ => (JointType::Revolute, false),
        };
        let limit = if !limited {
            None
        } else if !side.with_limit.contains(&jt.name) {
            let problem = "missing <limit> (required for revolute and prismatic; continuous is the unlimited hinge)";
            return Err(side.err(f, &el, problem.into()));
        } else {
            let (lo, hi) = (jt.limit.lower, jt.limit.upper);
            if lo > hi {
                return Err(side.err(f, &el, format!("<limit> lower {lo} > upper {hi}")));
            }
            (lo.is_finite() && hi.is_finite()).then_some((lo, hi))
        };
        debug_assert_eq!(group[c], k + 1);
        m.push_joint(JointDesc {
            name: jt.name.clone(),
            kind,
            parent: group[p],
            child: group[c],
            anchor_parent: xj.p - m.body_com[group[p]],
            anchor_child: -m.body_com[group[c]],
            frame_parent: xj.q,
            frame_child: Quat::identity(),
            axis: axis.normalize(),
            limit,
            damping: jt.dynamics.as_ref().map_or(0.0, |d| d.damping),
            effort: if side.with_effort.contains(&jt.name) { jt.limit.effort } else { f64::INFINITY },
            spring: None,
            armature: 0.0,
            stiffness: 0.0,
            springref: 0.0,
            // `<dynamics friction>`: Coulomb friction, MuJoCo's frictionloss (the Featherstone stepper's dry friction)
            frictionloss: jt.dynamics.as_ref().map_or(0.0, |d| d.friction),
        });
    }
    for (b, mem) in members.iter().enumerate() {
        for &l in mem {
            for (k, c) in robot.links[l].collision.iter().enumerate() {
                let x = in_body(l).mul(&Tf::pose(&c.origin));
                let kind = match &c.geometry {
                    urdf_rs::Geometry::Box { size } => ShapeKind::Box { half_extents: Vec3::from(size.0) * 0.5 },
                    urdf_rs::Geometry::Cylinder { radius, length } => {
                        ShapeKind::Cylinder { radius: *radius, half_length: 0.5 * length }
                    }
                    urdf_rs::Geometry::Capsule { radius, length } => {
                        ShapeKind::Capsule { radius: *radius, half_length: 0.5 * length }
                    }
                    urdf_rs::Geometry::Sphere { radius } => ShapeKind::Sphere { radius: *radius },
                    urdf_rs::Geometry::Mesh { filename, .. } => ShapeKind::Mesh { file: filename.clone() },
                };
                let lname = &robot.links[l].name;
                // mesh files are checked here (the names are kept: the contact solver resolves them again with
                // its own package_dirs); a package found nowhere is left to it (docs/decisions.md)
                if let (Some(dir), Some(packages), urdf_rs::Geometry::Mesh { filename, .. }) =
                    (dir, &packages, &c.geometry)
                {
                    let plain = filename.strip_prefix("file://").unwrap_or(filename);
                    if !filename.starts_with("package://") && !dir.join(plain).is_file() {
                        let p = dir.join(plain);
                        return Err(side.err(f, &link_el(lname), format!("mesh file {} not found", p.display())));
                    }
                    packages.check_at_load(filename).map_err(|e| side.err(f, &link_el(lname), e))?;
                }
                let name = c.name.clone().unwrap_or_else(|| format!("{lname}/collision{k}"));
                m.shapes.push(Shape::new(name, b, kind, (x.p - m.body_com[b], x.q)));
            }
        }
    }
    // adjacent links (a joint's parent and child bodies) never collide, as URDF tools expect (docs/decisions.md)
    m.contact_exclude = (0..m.joint_count()).map(|j| (m.joint_parent[j], m.joint_child[j])).collect();
    m.qpos0 = m.zero_q();
    m.body_pose0 = m.forward_kinematics(&m.zero_q())?;
    m.validate()?;
    Ok(m)
}

/// Mass, COM and inertia about the COM of the links `mem`, in the body frame (`in_body` maps a link frame to
/// it): COM = Σ mᵢ cᵢ / M, I = Σ Rᵢ Iᵢ Rᵢᵀ + mᵢ (|dᵢ|² E − dᵢ dᵢᵀ), dᵢ = cᵢ − COM (parallel-axis theorem).
fn merge_inertials(
    robot: &urdf_rs::Robot,
    mem: &[usize],
    in_body: &dyn Fn(usize) -> Tf,
    side: &Side,
    f: &str,
) -> Result<(f64, Vec3, Mat3), ModelError> {
    let parts: Vec<(f64, Vec3, Mat3)> = mem
        .iter()
        .map(|&l| {
            let ine = &robot.links[l].inertial;
            let x = in_body(l).mul(&Tf::pose(&ine.origin));
            let i = &ine.inertia;
            let il = Mat3::new(i.ixx, i.ixy, i.ixz, i.ixy, i.iyy, i.iyz, i.ixz, i.iyz, i.izz);
            let r = x.q.to_mat();
            (ine.mass.value, x.p, r * il * r.transpose())
        })
        .collect();
    if let Some(k) = (0..mem.len()).find(|&k| parts[k].0 < 0.0) {
        let el = link_el(&robot.links[mem[k]].name);
        return Err(side.err(f, &el, format!("negative <inertial><mass> {}", parts[k].0)));
    }
    let name = &robot.links[mem[0]].name;
    let el = link_el(name);
    let mass: f64 = parts.iter().map(|p| p.0).sum();
    if !(mass > 0.0 && mass.is_finite()) {
        let what = if side.with_inertial.contains(name) { "" } else { " (the link has no <inertial>)" };
        let merged = if mem.len() > 1 { " (with the links fixed to it)" } else { "" };
        return Err(side.err(
            f,
            &el,
            format!("missing or zero <inertial><mass>{what}: a moving link needs mass > 0{merged}, got {mass}"),
        ));
    }
    let com = parts.iter().map(|p| p.1 * p.0).sum::<Vec3>() / mass;
    let inertia = parts.iter().fold(Mat3::zeros(), |acc, (mi, ci, ii)| {
        let d = ci - com;
        acc + ii + (Mat3::identity() * d.dot(&d) - d * d.transpose()) * *mi
    });
    let inertia = (inertia + inertia.transpose()) * 0.5;
    if inertia.cholesky().is_none() || inertia.iter().any(|v| !v.is_finite()) {
        return Err(side.err(
            f,
            &el,
            format!("inertia not positive definite (about the COM, link frame): {:?}", inertia.as_slice()),
        ));
    }
    if let Some(p) = super::inertia_problem(mass, &inertia) {
        let merged = if mem.len() > 1 { " (with the links fixed to it)" } else { "" };
        return Err(side.err(f, &el, format!("{p}{merged}")));
    }
    Ok((mass, com, inertia))
}

impl Tf {
    /// URDF `<origin xyz rpy>` (R = Rz(y) Ry(p) Rx(r)).
    fn pose(o: &urdf_rs::Pose) -> Self {
        Tf { p: Vec3::from(o.xyz.0), q: Quat::from_rpy(o.rpy[0], o.rpy[1], o.rpy[2]) }
    }
}

fn perr(file: &str, element: &str, problem: String) -> ModelError {
    ModelError::Parse { file: file.to_string(), element: element.to_string(), problem }
}
fn link_el(name: &str) -> String {
    format!("link '{name}'")
}
fn joint_el(name: &str) -> String {
    format!("joint '{name}'")
}

/// What the XML pre-check learned beyond `urdf-rs` (which fills absent elements with defaults).
struct Side {
    /// `robot 'name'`
    robot: String,
    /// line of each `link 'x'` / `joint 'x'` element
    line: HashMap<String, u32>,
    with_inertial: HashSet<String>,
    with_limit: HashSet<String>,
    with_effort: HashSet<String>,
    /// (joint, `<mimic joint>`) pairs
    mimic: Vec<(String, String)>,
}

impl Side {
    /// A parse error on `element`, with its line number when known.
    fn err(&self, file: &str, element: &str, problem: String) -> ModelError {
        match self.line.get(element) {
            Some(l) => perr(file, element, format!("{problem} (line {l})")),
            None => perr(file, element, problem),
        }
    }
}

/// The first child element `<tag>` of `n`.
fn child<'a, 'i>(n: roxmltree::Node<'a, 'i>, tag: &str) -> Option<roxmltree::Node<'a, 'i>> {
    n.children().find(|c| c.has_tag_name(tag))
}

const JOINT_TYPES: [&str; 7] = ["revolute", "continuous", "prismatic", "fixed", "floating", "planar", "spherical"];

/// Numeric attributes (element, attribute, count) that `urdf-rs` reads; checked wherever they appear.
const NUMBERS: [(&str, &str, usize); 25] = [
    ("origin", "xyz", 3),
    ("origin", "rpy", 3),
    ("mass", "value", 1),
    ("inertia", "ixx", 1),
    ("inertia", "ixy", 1),
    ("inertia", "ixz", 1),
    ("inertia", "iyy", 1),
    ("inertia", "iyz", 1),
    ("inertia", "izz", 1),
    ("axis", "xyz", 3),
    ("limit", "lower", 1),
    ("limit", "upper", 1),
    ("limit", "effort", 1),
    ("limit", "velocity", 1),
    ("dynamics", "damping", 1),
    ("dynamics", "friction", 1),
    ("box", "size", 3),
    ("cylinder", "radius", 1),
    ("cylinder", "length", 1),
    ("capsule", "radius", 1),
    ("capsule", "length", 1),
    ("sphere", "radius", 1),
    ("mesh", "scale", 3),
    ("color", "rgba", 4),
    ("mimic", "multiplier", 1),
];

/// Check the `<link>`, `<joint>` and `<material>` children of `<robot>` for what `urdf-rs` would reject
/// without naming the element, or accept silently: missing names and required children, unknown joint types,
/// malformed numbers. Also records element presence and line numbers.
fn precheck(text: &str, f: &str) -> Result<Side, ModelError> {
    let opt = roxmltree::ParsingOptions { allow_dtd: true, ..Default::default() };
    let doc = roxmltree::Document::parse_with_options(text, opt).map_err(|e| perr(f, "XML", e.to_string()))?;
    super::check_depth(&doc, f)?;
    let robot = doc.root_element();
    if robot.tag_name().name() != "robot" {
        return Err(perr(f, "XML", format!("the root element is <{}>, expected <robot>", robot.tag_name().name())));
    }
    // URDF ≥ 1.2 makes the velocity limit optional
    let v12 = robot
        .attribute("version")
        .and_then(|v| v.trim().split_once('.'))
        .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)))
        .is_some_and(|v| v >= (1, 2));
    let line = |n: roxmltree::Node| doc.text_pos_at(n.range().start).row;
    let mut side = Side {
        robot: format!("robot '{}'", robot.attribute("name").unwrap_or("")),
        line: HashMap::new(),
        with_inertial: HashSet::new(),
        with_limit: HashSet::new(),
        with_effort: HashSet::new(),
        mimic: vec![],
    };
    for node in robot.children().filter(|n| n.is_element()) {
        let tag = node.tag_name().name();
        if !["link", "joint", "material"].contains(&tag) {
            continue;
        }
        let Some(name) = node.attribute("name") else {
            return Err(perr(f, &format!("<{tag}> at line {}", line(node)), "missing name attribute".into()));
        };
        let el = format!("{tag} '{name}'");
        side.line.insert(el.clone(), line(node));
        let err = |problem: String, n: roxmltree::Node| perr(f, &el, format!("{problem} (line {})", line(n)));
        // <a><b> path of a descendant, for messages
        let path = |e: roxmltree::Node| -> String {
            let mut tags: Vec<String> =
                e.ancestors().take_while(|a| *a != node).map(|a| format!("<{}>", a.tag_name().name())).collect();
            tags.reverse();
            tags.concat()
        };
        for e in node.descendants().filter(|e| e.is_element() && *e != node) {
            for &(_, attr, n) in NUMBERS.iter().filter(|(t, _, _)| e.has_tag_name(*t)) {
                let Some(v) = e.attribute(attr) else { continue };
                let toks: Vec<&str> = v.split_whitespace().collect();
                if let Some(bad) = toks.iter().find(|t| !t.parse::<f64>().is_ok_and(f64::is_finite)) {
                    return Err(err(format!("{} {attr}=\"{v}\": '{bad}' is not a finite number", path(e)), e));
                }
                if toks.len() != n {
                    return Err(err(
                        format!("{} {attr}=\"{v}\": expected {n} number(s), got {}", path(e), toks.len()),
                        e,
                    ));
                }
                // geometry sizes > 0; joint damping and friction ≥ 0
                let positive = ["box", "cylinder", "capsule", "sphere"].contains(&e.tag_name().name());
                let nonneg = e.has_tag_name("dynamics");
                let bad = |t: &&str| t.parse::<f64>().is_ok_and(|x| (positive && x <= 0.0) || (nonneg && x < 0.0));
                if (positive || nonneg) && toks.iter().any(bad) {
                    let want = if positive { "must be > 0" } else { "must be ≥ 0" };
                    return Err(err(format!("{} {attr}=\"{v}\": {attr} {want}", path(e)), e));
                }
            }
        }
        // required attribute `attr` of the child `tag` of `e`, when that child is present
        let need = |e: roxmltree::Node, tag: &str, attr: &str| match child(e, tag) {
            Some(c) if c.attribute(attr).is_none() => {
                Err(err(format!("{}<{tag}> has no {attr} attribute", path(c)), c))
            }
            _ => Ok(()),
        };
        if tag == "link" {
            if let Some(ine) = child(node, "inertial") {
                side.with_inertial.insert(name.to_string());
                for t in ["mass", "inertia"] {
                    if child(ine, t).is_none() {
                        return Err(err(format!("<inertial> has no <{t}>"), ine));
                    }
                }
                need(ine, "mass", "value")?;
                for a in ["ixx", "ixy", "ixz", "iyy", "iyz", "izz"] {
                    need(ine, "inertia", a)?;
                }
            }
        } else if tag == "joint" {
            match node.attribute("type") {
                None => return Err(err("missing type attribute".into(), node)),
                Some(t) if !JOINT_TYPES.contains(&t) => {
                    return Err(err(
                        format!("unknown joint type '{t}' (expected one of {})", JOINT_TYPES.join(", ")),
                        node,
                    ))
                }
                _ => {}
            }
            for role in ["parent", "child"] {
                if child(node, role).and_then(|c| c.attribute("link")).is_none() {
                    return Err(err(format!("missing <{role} link=\"…\">"), node));
                }
            }
            need(node, "axis", "xyz")?;
            if let Some(m) = child(node, "mimic") {
                let Some(target) = m.attribute("joint") else {
                    return Err(err("<mimic> has no joint attribute".into(), m));
                };
                side.mimic.push((name.to_string(), target.to_string()));
            }
            if let Some(l) = child(node, "limit") {
                side.with_limit.insert(name.to_string());
                if l.attribute("effort").is_some() {
                    side.with_effort.insert(name.to_string());
                }
                if !v12 {
                    need(node, "limit", "velocity")?;
                }
            }
        }
    }
    Ok(side)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collisions_become_shapes_in_the_com_frame() {
        let text = r#"<robot name="r">
          <link name="base"><collision><geometry><box size="1 2 3"/></geometry></collision></link>
          <link name="arm">
            <inertial><origin xyz="0.5 0 0"/><mass value="1"/>
              <inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>
            <collision name="rod"><origin xyz="0.5 0 0" rpy="0 1.5707963267948966 0"/>
              <geometry><cylinder radius="0.1" length="1"/></geometry></collision>
            <collision><geometry><mesh filename="package://r/arm.stl"/></geometry></collision>
          </link>
          <link name="tip">
            <inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>
            <collision><geometry><sphere radius="0.2"/></geometry></collision>
          </link>
          <joint name="j" type="continuous"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/></joint>
          <joint name="f" type="fixed"><origin xyz="1 0 0"/><parent link="arm"/><child link="tip"/></joint>
        </robot>"#;
        let m = load_urdf_str(text, "r.urdf", &UrdfOptions::default()).unwrap();
        assert_eq!(m.shapes.len(), 4);
        assert_eq!(m.shapes[0].kind, ShapeKind::Box { half_extents: Vec3::new(0.5, 1.0, 1.5) });
        assert_eq!(m.shapes[0].body, 0);
        // arm (COM x = 0.5) + tip (x = 1) merged: COM at x = 0.75 (link frame), so the rod centre is at −0.25
        let com = m.body_com[1];
        assert!((com - Vec3::new(0.75, 0.0, 0.0)).norm() < 1e-12);
        let rod = &m.shapes[1];
        assert_eq!((rod.name.as_str(), rod.body), ("rod", 1));
        assert_eq!(rod.kind, ShapeKind::Cylinder { radius: 0.1, half_length: 0.5 });
        assert!((rod.pose.0 - Vec3::new(-0.25, 0.0, 0.0)).norm() < 1e-12);
        assert!((rod.pose.1.rotate(&Vec3::z()) - Vec3::x()).norm() < 1e-12);
        assert_eq!(m.shapes[2].kind, ShapeKind::Mesh { file: "package://r/arm.stl".into() });
        assert_eq!(m.shapes[2].name, "arm/collision1");
        assert_eq!(m.shapes[3].kind, ShapeKind::Sphere { radius: 0.2 });
        assert!((m.shapes[3].pose.0 - Vec3::new(0.25, 0.0, 0.0)).norm() < 1e-12);
        assert_eq!(m.qpos0, m.zero_q());
        assert_eq!((m.joint_armature[0], m.joint_stiffness[0]), (0.0, 0.0));
    }
}
