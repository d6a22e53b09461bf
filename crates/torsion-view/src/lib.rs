//! torsion-view: the trajectory viewer (issue 18). [`page`] writes ONE self-contained HTML file that plays back
//! one or more trajectories of a model offline from `file://`: three.js (vendored, `vendor/three/`, decision in
//! docs/decisions.md) and the viewer script (`assets/viewer.js`) inlined, the model's shapes ([`scene`]) and the
//! trajectories ([`Trajectory`], the JSON of `torsion simulate`) inlined as JSON. The page is [`STYLE`] and
//! [`section`] in a bare frame; a larger page (the experiment report, `torsion experiment NAME --html`) embeds the
//! same section (one viewer per page: the section's element ids are fixed).
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use torsion_model::{Model, ShapeKind};

const TEMPLATE: &str = include_str!("../assets/page.html");
const SECTION: &str = include_str!("../assets/section.html");
/// The viewer section's style sheet: goes in the `<style>` of any page holding a [`section`]; the page gives
/// `#torsion-viewer` its height.
pub const STYLE: &str = include_str!("../assets/viewer.css");
const VIEWER_JS: &str = include_str!("../assets/viewer.js");
const THREE_CORE: &str = include_str!("../vendor/three/three.core.min.js");
const THREE_MODULE: &str = include_str!("../vendor/three/three.module.min.js");
const ORBIT_CONTROLS: &str = include_str!("../vendor/three/OrbitControls.min.js");

/// The colours of the overlaid trajectories, in order (cycled).
pub const PALETTE: [&str; 6] = ["#4e79a7", "#e15759", "#59a14f", "#f28e2b", "#b07aa1", "#76b7b2"];

/// Errors naming the trajectory file and field, or the shape.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    #[error("{file}: {problem}")]
    Trajectory { file: String, problem: String },
    #[error("shape '{shape}' (body '{body}'): mesh {file}: {problem}")]
    Mesh { shape: String, body: String, file: String, problem: String },
    #[error("{0}")]
    Input(String),
    #[error("writing {path}: {source}")]
    Io { path: String, source: std::io::Error },
}

/// One contact of a step: world point, unit normal (from body B to body A) and the normal impulse over the step.
#[derive(Clone, Debug, PartialEq)]
pub struct ContactPoint {
    pub point: [f64; 3],
    pub normal: [f64; 3],
    /// N·s
    pub impulse_n: f64,
}

/// A recorded trajectory (the keys of `torsion simulate`'s JSON that the viewer reads).
#[derive(Clone, Debug, Default)]
pub struct Trajectory {
    /// legend label (the file name for `torsion view`)
    pub name: String,
    pub time: Vec<f64>,
    pub joint_names: Vec<String>,
    /// per step, the joint angles / generalized coordinates (plotted)
    pub joint_angles: Vec<Vec<f64>>,
    /// per step, each body's COM frame in the world: [x y z qw qx qy qz]
    pub body_poses: Vec<Vec<[f64; 7]>>,
    /// per step, the contacts (`torsion simulate --solver ncp`), when recorded
    pub contacts: Option<Vec<Vec<ContactPoint>>>,
    /// per step, each cable's tension (N), when recorded
    pub cable_tensions: Option<Vec<Vec<f64>>>,
}

fn field<'a>(j: &'a Value, key: &str, file: &str) -> Result<&'a Value, ViewError> {
    j.get(key).ok_or_else(|| ViewError::Trajectory { file: file.into(), problem: format!("no \"{key}\" key") })
}

fn numbers(v: &Value, what: &dyn Fn() -> String, file: &str) -> Result<Vec<f64>, ViewError> {
    let bad =
        || ViewError::Trajectory { file: file.into(), problem: format!("{} must be an array of numbers", what()) };
    v.as_array().ok_or_else(bad)?.iter().map(|x| x.as_f64().filter(|x| x.is_finite()).ok_or_else(bad)).collect()
}

fn rows<'a>(v: &'a Value, key: &str, file: &str) -> Result<&'a Vec<Value>, ViewError> {
    v.as_array()
        .ok_or_else(|| ViewError::Trajectory { file: file.into(), problem: format!("\"{key}\" must be an array") })
}

fn vec3(v: &Value, what: &dyn Fn() -> String, file: &str) -> Result<[f64; 3], ViewError> {
    let x = numbers(v, what, file)?;
    x.try_into()
        .map_err(|_| ViewError::Trajectory { file: file.into(), problem: format!("{} must have 3 numbers", what()) })
}

impl Trajectory {
    /// Parse `torsion simulate`'s JSON; `file` names it in errors (and is the legend label).
    pub fn from_json(text: &str, file: &str) -> Result<Self, ViewError> {
        let err = |problem: String| ViewError::Trajectory { file: file.into(), problem };
        let j: Value = serde_json::from_str(text).map_err(|e| err(format!("not JSON: {e}")))?;
        let time = numbers(field(&j, "time", file)?, &|| "\"time\"".into(), file)?;
        let n = time.len();
        if n == 0 {
            return Err(err("\"time\" is empty".into()));
        }
        let joint_names = match j.get("joint_names") {
            Some(v) => rows(v, "joint_names", file)?
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    s.as_str().map(String::from).ok_or_else(|| err(format!("joint_names[{i}] is not a string")))
                })
                .collect::<Result<_, _>>()?,
            None => vec![],
        };
        let per_step = |key: &str| -> Result<&Vec<Value>, ViewError> {
            let r = rows(field(&j, key, file)?, key, file)?;
            if r.len() != n {
                return Err(err(format!("\"{key}\" has {} rows, \"time\" has {n}", r.len())));
            }
            Ok(r)
        };
        let joint_angles = per_step("joint_angles")?
            .iter()
            .enumerate()
            .map(|(k, r)| numbers(r, &|| format!("joint_angles[{k}]"), file))
            .collect::<Result<Vec<_>, _>>()?;
        let body_poses = per_step("body_poses")?
            .iter()
            .enumerate()
            .map(|(k, r)| {
                rows(r, "body_poses", file)?
                    .iter()
                    .enumerate()
                    .map(|(b, p)| {
                        let x = numbers(p, &|| format!("body_poses[{k}][{b}]"), file)?;
                        <[f64; 7]>::try_from(x)
                            .map_err(|_| err(format!("body_poses[{k}][{b}] must have 7 numbers (x y z qw qx qy qz)")))
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .collect::<Result<Vec<_>, _>>()?;
        let contacts = match j.get("contacts") {
            None => None,
            Some(_) => Some(
                per_step("contacts")?
                    .iter()
                    .enumerate()
                    .map(|(k, r)| {
                        rows(r, "contacts", file)?
                            .iter()
                            .enumerate()
                            .map(|(c, v)| {
                                let at = |key: &'static str| move || format!("contacts[{k}][{c}].{key}");
                                Ok(ContactPoint {
                                    point: vec3(field(v, "point", file)?, &at("point"), file)?,
                                    normal: vec3(field(v, "normal", file)?, &at("normal"), file)?,
                                    impulse_n: field(v, "impulse_n", file)?
                                        .as_f64()
                                        .ok_or_else(|| err(format!("contacts[{k}][{c}].impulse_n must be a number")))?,
                                })
                            })
                            .collect::<Result<Vec<_>, ViewError>>()
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            ),
        };
        let cable_tensions = match j.get("cable_tensions") {
            None => None,
            Some(_) => Some(
                per_step("cable_tensions")?
                    .iter()
                    .enumerate()
                    .map(|(k, r)| numbers(r, &|| format!("cable_tensions[{k}]"), file))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
        };
        Ok(Self { name: file.into(), time, joint_names, joint_angles, body_poses, contacts, cable_tensions })
    }

    /// Read and parse a trajectory file (legend label: its file name).
    pub fn read(path: &Path) -> Result<Self, ViewError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| ViewError::Trajectory { file: file.clone(), problem: format!("cannot read: {e}") })?;
        let mut t = Self::from_json(&text, &file)?;
        t.name = path.file_name().map_or(file, |n| n.to_string_lossy().into_owned());
        Ok(t)
    }

    /// Check the trajectory against the model: every step poses all the model's bodies.
    fn check(&self, model: &Model) -> Result<(), ViewError> {
        let nb = model.body_count();
        if let Some((k, r)) = self.body_poses.iter().enumerate().find(|(_, r)| r.len() != nb) {
            return Err(ViewError::Trajectory {
                file: self.name.clone(),
                problem: format!(
                    "body_poses[{k}] has {} bodies, the model '{}' has {nb}: wrong --model?",
                    r.len(),
                    model.name
                ),
            });
        }
        if let Some(t) = &self.cable_tensions {
            if let Some((k, r)) = t.iter().enumerate().find(|(_, r)| r.len() != model.cables.len()) {
                return Err(ViewError::Trajectory {
                    file: self.name.clone(),
                    problem: format!(
                        "cable_tensions[{k}] has {} values, the model has {} cables",
                        r.len(),
                        model.cables.len()
                    ),
                });
            }
        }
        Ok(())
    }

    fn to_json(&self, colour: &str) -> Value {
        let contacts = self.contacts.as_ref().map(|c| {
            c.iter()
                .map(|row| row.iter().map(|c| json!([c.point, c.normal, c.impulse_n])).collect::<Vec<_>>())
                .collect::<Vec<_>>()
        });
        json!({
            "name": self.name, "colour": colour, "time": self.time, "joint_names": self.joint_names,
            "joint_angles": self.joint_angles, "body_poses": self.body_poses, "contacts": contacts,
            "cable_tensions": self.cable_tensions,
        })
    }
}

/// Where mesh files are looked up (`package://` names; see `torsion_collision::mesh::PackageSearch`).
#[derive(Clone, Debug, Default)]
pub struct ViewOptions {
    /// page title (default: the model's name)
    pub title: Option<String>,
    pub package_dirs: Vec<PathBuf>,
}

/// The model's geometry for the page: each shape with its body and pose in the body's COM frame (a mesh as the
/// convex hull the collision layer uses, vertices and triangles), the cables' end sites, the body names.
pub fn scene(model: &Model, opts: &ViewOptions) -> Result<Value, ViewError> {
    let mut shapes = vec![];
    for s in &model.shapes {
        let (p, q) = &s.pose;
        let q = q.to_array();
        let mut j = json!({ "name": s.name, "body": s.body, "pos": [p.x, p.y, p.z], "quat": q });
        let geom = match &s.kind {
            ShapeKind::Sphere { radius } => json!({ "kind": "sphere", "radius": radius }),
            ShapeKind::Capsule { radius, half_length } => {
                json!({ "kind": "capsule", "radius": radius, "half_length": half_length })
            }
            ShapeKind::Cylinder { radius, half_length } => {
                json!({ "kind": "cylinder", "radius": radius, "half_length": half_length })
            }
            ShapeKind::Box { half_extents: e } => json!({ "kind": "box", "half_extents": [e.x, e.y, e.z] }),
            ShapeKind::Plane { half_extents } => json!({ "kind": "plane", "half_extents": half_extents }),
            ShapeKind::Ellipsoid { radii: r } => json!({ "kind": "ellipsoid", "radii": [r.x, r.y, r.z] }),
            ShapeKind::Mesh { file } => {
                let merr = |problem: String| ViewError::Mesh {
                    shape: s.name.clone(),
                    body: model.body_name[s.body].clone(),
                    file: file.clone(),
                    problem,
                };
                let pts =
                    torsion_collision::mesh::load_mesh_vertices(file, &opts.package_dirs, model.source_file.as_deref())
                        .map_err(merr)?;
                let (v, t) = parry3d_f64::transformation::convex_hull(&pts);
                if t.is_empty() {
                    return Err(merr(format!("degenerate convex hull of {} vertices", pts.len())));
                }
                let v: Vec<f64> = v.iter().flat_map(|p| [p.x, p.y, p.z]).collect();
                let t: Vec<u32> = t.into_iter().flatten().collect();
                json!({ "kind": "mesh", "vertices": v, "triangles": t })
            }
        };
        for (k, v) in geom.as_object().into_iter().flatten() {
            j[k] = v.clone();
        }
        shapes.push(j);
    }
    let cables: Vec<Value> = model
        .cables
        .iter()
        .map(|c| json!({ "name": c.name, "body": c.body, "site": [[c.site[0].x, c.site[0].y, c.site[0].z], [c.site[1].x, c.site[1].y, c.site[1].z]] }))
        .collect();
    // each moving joint's frame in its child body's (COM) frame: the child pose ∘ (anchor, frame) is the joint
    // frame after the joint's motion (`Model::forward_kinematics`), drawn as axes on demand
    let joints: Vec<Value> = (0..model.joint_count())
        .filter(|&j| model.joint_type[j] != torsion_model::JointType::Fixed)
        .map(|j| {
            let (p, q) = (model.joint_anchor_child[j], model.joint_frame_child[j].to_array());
            json!({ "name": model.joint_name[j], "body": model.joint_child[j], "pos": [p.x, p.y, p.z], "quat": q })
        })
        .collect();
    Ok(
        json!({ "model": model.name, "body_names": model.body_name, "shapes": shapes, "cables": cables, "joints": joints }),
    )
}

/// The number of shape meshes the page creates: the world's shapes (body 0) once, every other shape once per
/// trajectory (the page's `torsionViewer.meshCount`).
pub fn mesh_count(model: &Model, trajectories: usize) -> usize {
    let world = model.shapes.iter().filter(|s| s.body == 0).count();
    world + (model.shapes.len() - world) * trajectories
}

fn escape_html(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// `template` with each `{{KEY}}` replaced by its value in `values`.
fn fill(template: &str, values: &[(&str, &str)], extra: usize) -> String {
    let mut out = String::with_capacity(template.len() + extra);
    let mut rest = template;
    while let Some(i) = rest.find("{{") {
        out.push_str(&rest[..i]);
        let j = rest[i..].find("}}").map(|j| i + j).expect("template placeholders are closed");
        let key = &rest[i + 2..j];
        let v = values.iter().find(|(k, _)| *k == key);
        out.push_str(v.unwrap_or_else(|| panic!("unknown template placeholder {key}")).1);
        rest = &rest[j + 2..];
    }
    out.push_str(rest);
    out
}

/// The viewer for `trajectories` (at least one, overlaid with a legend) of `model` as one `<div
/// id="torsion-viewer">` with its scripts and data inlined, to embed in a page whose `<style>` holds [`STYLE`].
pub fn section(model: &Model, trajectories: &[Trajectory], opts: &ViewOptions) -> Result<String, ViewError> {
    section_with_scene(&scene(model, opts)?, model, trajectories)
}

/// [`section`] with the model's geometry already made by [`scene`] (its mesh files read then).
pub fn section_with_scene(scene: &Value, model: &Model, trajectories: &[Trajectory]) -> Result<String, ViewError> {
    if trajectories.is_empty() {
        return Err(ViewError::Input("no trajectory to show".into()));
    }
    for t in trajectories {
        t.check(model)?;
    }
    let trajs: Vec<Value> =
        trajectories.iter().enumerate().map(|(i, t)| t.to_json(PALETTE[i % PALETTE.len()])).collect();
    let data = json!({ "scene": scene, "trajectories": trajs });
    // inside <script> only "</" could end the element early; "<\/" is the same JSON string
    let data = serde_json::to_string(&data).expect("JSON of numbers and strings").replace("</", "<\\/");
    let extra = data.len() + THREE_CORE.len() + THREE_MODULE.len() + ORBIT_CONTROLS.len() + VIEWER_JS.len();
    Ok(fill(
        SECTION,
        &[
            ("THREE_CORE", THREE_CORE),
            ("THREE_MODULE", THREE_MODULE),
            ("ORBIT_CONTROLS", ORBIT_CONTROLS),
            ("DATA", &data),
            ("VIEWER", VIEWER_JS),
        ],
        extra,
    ))
}

/// The HTML page for `trajectories` (at least one) of `model`: [`section`] filling the window.
pub fn page(model: &Model, trajectories: &[Trajectory], opts: &ViewOptions) -> Result<String, ViewError> {
    let section = section(model, trajectories, opts)?;
    let title = escape_html(opts.title.as_deref().unwrap_or(&model.name));
    Ok(fill(TEMPLATE, &[("TITLE", &title), ("STYLE", STYLE), ("SECTION", &section)], section.len() + 4096))
}

/// Write [`page`] to `path` (its folder is created).
pub fn write_page(
    path: &Path,
    model: &Model,
    trajectories: &[Trajectory],
    opts: &ViewOptions,
) -> Result<(), ViewError> {
    let html = page(model, trajectories, opts)?;
    let io = |source| ViewError::Io { path: path.display().to_string(), source };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    std::fs::write(path, html).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRAJ: &str = r#"{"time":[0,0.1],"joint_names":["j"],"joint_angles":[[0],[0.1]],
        "body_poses":[[[0,0,0,1,0,0,0],[0,0,1,1,0,0,0]],[[0,0,0,1,0,0,0],[0,0,0.9,1,0,0,0]]],
        "contacts":[[],[{"point":[0,0,0],"normal":[0,0,1],"impulse_n":0.5}]]}"#;

    #[test]
    fn inlined_scripts_cannot_close_their_element() {
        for (name, s) in [
            ("three.core", THREE_CORE),
            ("three.module", THREE_MODULE),
            ("orbit", ORBIT_CONTROLS),
            ("viewer", VIEWER_JS),
        ] {
            let s = s.to_ascii_lowercase();
            assert!(!s.contains("</script") && !s.contains("<!--"), "{name} contains </script or <!--");
        }
    }

    #[test]
    fn parses_simulate_json_with_contacts() {
        let t = Trajectory::from_json(TRAJ, "a.json").unwrap();
        assert_eq!(t.body_poses[1][1][2], 0.9);
        assert_eq!(t.contacts.as_ref().unwrap()[1][0].impulse_n, 0.5);
    }

    #[test]
    fn errors_name_the_file_and_field() {
        let bad = TRAJ.replace("[0,0,0.9,1,0,0,0]", "[0,0,0.9]");
        let e = Trajectory::from_json(&bad, "a.json").unwrap_err().to_string();
        assert!(e.contains("a.json") && e.contains("body_poses[1][1]") && e.contains("7 numbers"), "{e}");
        let e = Trajectory::from_json(r#"{"time":[0]}"#, "b.json").unwrap_err().to_string();
        assert!(e.contains("b.json") && e.contains("joint_angles"), "{e}");
    }

    #[test]
    fn section_embeds_in_a_larger_page_and_the_page_is_that_section() {
        let g = torsion_math::Vec3::new(0.0, 0.0, -9.81);
        let m = torsion_model::builder::two_link_arm(1.0, 1.0, 1.0, g, 0.01).unwrap();
        let t = Trajectory {
            name: "run </script> & co".into(),
            time: vec![0.0],
            joint_angles: vec![vec![0.0; m.joint_count()]],
            body_poses: vec![vec![[0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]; m.body_count()]],
            ..Default::default()
        };
        let opts = ViewOptions::default();
        let s = section(&m, std::slice::from_ref(&t), &opts).unwrap();
        // one element with its scripts: no document frame of its own, nothing left of the templates
        assert!(s.trim_start().starts_with("<div id=\"torsion-viewer\">") && s.trim_end().ends_with("</div>"));
        for frame in ["<html", "<head", "<body", "<!DOCTYPE", "{{"] {
            assert!(!s.contains(frame), "the section holds {frame}");
        }
        // the data cannot close its <script>: the legend label's "</" is escaped
        assert!(s.contains("run <\\/script> & co") && s.matches("</script>").count() == 5);
        let p = page(&m, &[t], &opts).unwrap();
        assert!(p.contains(&s) && p.contains(STYLE.trim()));
        assert!(section(&m, &[], &opts).unwrap_err().to_string().contains("no trajectory"));
    }

    #[test]
    fn page_is_self_contained_and_checks_the_body_count() {
        let g = torsion_math::Vec3::new(0.0, 0.0, -9.81);
        let m = torsion_model::builder::two_link_arm(1.0, 1.0, 1.0, g, 0.01).unwrap();
        let pose = [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0];
        let t = Trajectory {
            name: "a.json".into(),
            time: vec![0.0],
            joint_angles: vec![vec![0.0; m.joint_count()]],
            body_poses: vec![vec![pose; m.body_count()]],
            ..Default::default()
        };
        let html = page(&m, std::slice::from_ref(&t), &ViewOptions::default()).unwrap();
        // nothing fetched: no src / href / import from the network
        for net in ["src=\"http", "href=\"http", "from\"http", "import(\"http"] {
            assert!(!html.contains(net), "the page fetches {net}");
        }
        assert!(!html.contains("{{"));
        assert!(html.contains("SPDX-License-Identifier: MIT") && html.contains("torsionViewer"));
        let mut short = t;
        short.body_poses[0].pop();
        let e = page(&m, &[short], &ViewOptions::default()).unwrap_err().to_string();
        assert!(e.contains("a.json") && e.contains("body_poses[0]") && e.contains("wrong --model"), "{e}");
    }
}
