//! The XML tree (includes expanded, each element with its file and line), attribute access through default
//! classes, and poses (orientation forms, `fromto`) under the compiler's angle settings.
use super::{Compiler, ORIENT};
use crate::error::ModelError;
use crate::extras::Attrs;
use crate::io::transform::Tf;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use torsion_math::{Mat3, Quat, Vec3};

// ---------------------------------------------------------------------------------------------------------
// XML tree with includes expanded

/// One XML element, with the file and line it comes from.
pub(super) struct El {
    pub(super) tag: String,
    pub(super) attrs: Vec<(String, String)>,
    pub(super) children: Vec<El>,
    pub(super) file: Rc<str>,
    pub(super) line: u32,
}

impl El {
    pub(super) fn get(&self, a: &str) -> Option<&str> {
        self.attrs.iter().find(|(k, _)| k == a).map(|(_, v)| v.as_str())
    }
    pub(super) fn desc(&self) -> String {
        match self.get("name") {
            Some(n) => format!("{} '{n}'", self.tag),
            None => format!("<{}>", self.tag),
        }
    }
    pub(super) fn err(&self, problem: impl std::fmt::Display) -> ModelError {
        perr(&self.file, &self.desc(), format!("{problem} (line {})", self.line))
    }
    pub(super) fn elements<'a>(&'a self, tag: &'a str) -> impl Iterator<Item = &'a El> + 'a {
        self.children.iter().filter(move |c| c.tag == tag)
    }
}

pub(super) fn perr(file: &str, element: &str, problem: String) -> ModelError {
    ModelError::Parse { file: file.to_string(), element: element.to_string(), problem }
}

pub(super) fn parse_tree(
    text: &str,
    label: &str,
    dir: &Path,
    main_dir: &Path,
    stack: &mut Vec<PathBuf>,
) -> Result<El, ModelError> {
    let opt = roxmltree::ParsingOptions { allow_dtd: true, ..Default::default() };
    let doc = roxmltree::Document::parse_with_options(text, opt).map_err(|e| perr(label, "XML", e.to_string()))?;
    crate::io::check_depth(&doc, label)?;
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
        let text = crate::io::read_xml(&path, &path.display().to_string())
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
pub(super) struct Item<'a> {
    pub(super) el: &'a El,
    pub(super) def: &'a [(String, String)],
}

impl<'a> Item<'a> {
    pub(super) fn get(&self, a: &str) -> Option<&'a str> {
        self.el.get(a).or_else(|| self.def.iter().find(|(k, _)| k == a).map(|(_, v)| v.as_str()))
    }
    /// Own attributes, then the class's that the element does not set.
    pub(super) fn attrs(&self) -> Attrs {
        let mut out = self.el.attrs.clone();
        out.extend(self.def.iter().filter(|(k, _)| self.el.get(k).is_none()).cloned());
        out
    }
    pub(super) fn err(&self, problem: impl std::fmt::Display) -> ModelError {
        self.el.err(problem)
    }
    /// The numbers of attribute `a` = `v`, checking their count is in `min..=max`.
    pub(super) fn parse(&self, a: &str, v: &str, min: usize, max: usize) -> Result<Vec<f64>, ModelError> {
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
    pub(super) fn nums(&self, a: &str, min: usize, max: usize) -> Result<Option<Vec<f64>>, ModelError> {
        self.get(a).map(|v| self.parse(a, v, min, max)).transpose()
    }
    /// A MuJoCo vector attribute that may be given partly: `base` (built-in default), its first entries
    /// overwritten by the class's value, then by the element's own (`size="0.1"` over a class `size="0.05 0.2"`
    /// gives (0.1, 0.2)).
    pub(super) fn nums_over(&self, a: &str, base: &[f64]) -> Result<Vec<f64>, ModelError> {
        let mut out = base.to_vec();
        let class = self.def.iter().find(|(k, _)| k == a).map(|(_, v)| v.as_str());
        for v in [class, self.el.get(a)].into_iter().flatten() {
            let x = self.parse(a, v, 1, base.len())?;
            out[..x.len()].copy_from_slice(&x);
        }
        Ok(out)
    }
    pub(super) fn f64_or(&self, a: &str, default: f64) -> Result<f64, ModelError> {
        Ok(self.nums(a, 1, 1)?.map_or(default, |v| v[0]))
    }
    pub(super) fn v3(&self, a: &str) -> Result<Option<Vec3>, ModelError> {
        Ok(self.nums(a, 3, 3)?.map(|v| Vec3::new(v[0], v[1], v[2])))
    }
    pub(super) fn int_or(&self, a: &str, default: i64) -> Result<i64, ModelError> {
        match self.get(a) {
            None => Ok(default),
            Some(v) => v.trim().parse().map_err(|_| self.err(format!("{a}=\"{v}\": not an integer"))),
        }
    }
    pub(super) fn bool_opt(&self, a: &str) -> Result<Option<bool>, ModelError> {
        match self.get(a) {
            None => Ok(None),
            Some("true") => Ok(Some(true)),
            Some("false") => Ok(Some(false)),
            Some(v) => Err(self.err(format!("{a}=\"{v}\": expected true or false"))),
        }
    }
    /// true / false / auto (None).
    pub(super) fn tri(&self, a: &str) -> Result<Option<bool>, ModelError> {
        match self.get(a) {
            Some("auto") => Ok(None),
            _ => self.bool_opt(a),
        }
    }
}

/// Shortest rotation taking +z to `v` (MuJoCo `mjuu_z2quat`: π about x for −z).
pub(super) fn z2quat(v: &Vec3) -> Quat {
    let a = Vec3::z().cross(v);
    let s = a.norm();
    let axis = if s < 1e-10 { Vec3::x() } else { a / s };
    Quat::from_axis_angle(&axis, s.atan2(v.z))
}

impl Compiler {
    pub(super) fn angle(&self) -> f64 {
        if self.angle_deg {
            std::f64::consts::PI / 180.0
        } else {
            1.0
        }
    }

    /// The orientation attributes of `it` (own ones, else the class's); None if there are none.
    pub(super) fn orientation(&self, it: &Item) -> Result<Option<Quat>, ModelError> {
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
    pub(super) fn pose(&self, it: &Item) -> Result<Tf, ModelError> {
        Ok(Tf { p: it.v3("pos")?.unwrap_or_default(), q: self.orientation(it)?.unwrap_or_else(Quat::identity) })
    }

    /// `fromto` → (pose with z along the segment, half-length), if set.
    pub(super) fn fromto(&self, it: &Item) -> Result<Option<(Tf, f64)>, ModelError> {
        let Some(v) = it.nums("fromto", 6, 6)? else { return Ok(None) };
        let (a, b) = (Vec3::new(v[0], v[1], v[2]), Vec3::new(v[3], v[4], v[5]));
        let d = b - a;
        if d.norm() < 1e-10 {
            return Err(it.err("fromto: the two end points coincide"));
        }
        Ok(Some((Tf { p: (a + b) * 0.5, q: z2quat(&d) }, 0.5 * d.norm())))
    }
}
