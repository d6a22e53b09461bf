//! Bodies, frames, sites and joints of `<worldbody>`, and their assembly into the model (multi-joint bodies →
//! virtual bodies, merged inertia).
use super::geoms_inertia::combine;
use super::parse::{El, Item};
use super::{Compiler, MBody, MJoint, JOINT_USED, POSE, SITE_USED};
use crate::builder::JointDesc;
use crate::error::ModelError;
use crate::extras::Site;
use crate::io::transform::Tf;
use crate::model::{JointType, Model};
use crate::shape::{Shape, ShapeKind};
use std::collections::HashSet;
use torsion_math::{Mat3, Quat, Vec3};

impl Compiler {
    // ----- bodies

    /// The children of a body or frame element `el` belonging to body `me`; `frame` = pose of `el`'s frame in
    /// the body frame, `cls` = active child class.
    pub(super) fn body_children<'a>(
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

    pub(super) fn joint<'a>(&self, el: &'a El, cls: &str) -> Result<MJoint<'a>, ModelError> {
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

    // ----- assembly

    pub(super) fn assemble(&self, name: &str, bodies: &[MBody]) -> Result<Model, ModelError> {
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
        m.integrator = self.integrator;
        if self.flags.fluid {
            (m.fluid_density, m.fluid_viscosity, m.wind) = (self.density, self.viscosity, self.wind);
        }
        m.push_body(
            "world".into(),
            true,
            f64::INFINITY,
            Mat3::zeros(),
            Vec3::zeros(),
            (Vec3::zeros(), Quat::identity()),
        );
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
            if let Some(p) = crate::io::inertia_problem(mass, &inertia) {
                return Err(mb.el.err(format!("{p} (with the bodies welded to it)")));
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
                let (bm, bi) = if last { (mass, inertia) } else { (0.0, Mat3::zeros()) };
                let child = m.push_body(bname, false, bm, bi, child_com, (Vec3::zeros(), Quat::identity()));
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
                m.push_joint(JointDesc {
                    name: jname,
                    kind: j.kind,
                    parent: prev,
                    child,
                    anchor_parent: ap,
                    anchor_child: ac,
                    frame_parent: fp,
                    frame_child: fc,
                    axis: j.axis,
                    limit: j.limit,
                    damping: j.damping,
                    effort: f64::INFINITY,
                    spring: None,
                    armature: j.armature,
                    stiffness: j.stiffness,
                    springref: j.springref,
                    frictionloss: j.frictionloss,
                });
                prev = child;
            }
            ours[b] = prev;
        }
        // shapes and sites, re-expressed in their body's COM frame; explicit geom names are unique
        let mut geom_names = HashSet::new();
        for mb in bodies {
            for g in mb.geoms.iter().filter(|g| !g.name.is_empty()) {
                if !geom_names.insert(g.name.as_str()) {
                    return Err(g.el.err(format!("geom name '{}' used twice", g.name)));
                }
            }
        }
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
        if !f.frictionloss {
            m.joint_frictionloss.iter_mut().for_each(|x| *x = 0.0);
        }
        Ok(m)
    }
}
