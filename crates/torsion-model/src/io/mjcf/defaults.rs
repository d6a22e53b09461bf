//! The `<compiler>`, `<option>` (flags), `<default>` and `<asset>` sections.
use super::parse::{El, Item};
use super::{Compiler, FromGeom, ACTUATORS};
use crate::error::ModelError;
use std::path::Path;

impl Compiler {
    pub(super) fn read_compiler(&mut self, c: &El) -> Result<(), ModelError> {
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

    pub(super) fn read_option(&mut self, c: &El) -> Result<(), ModelError> {
        let it = Item { el: c, def: &[] };
        let nonneg = |k: &str| -> Result<f64, ModelError> {
            let v = it.f64_or(k, 0.0)?;
            if v < 0.0 {
                return Err(c.err(format!("{k} must be ≥ 0, got {v}")));
            }
            Ok(v)
        };
        for (k, v) in &c.attrs {
            match k.as_str() {
                "timestep" => {
                    self.dt = it.f64_or(k, 0.002)?;
                    if !(self.dt > 0.0 && self.dt.is_finite()) {
                        return Err(c.err(format!("timestep must be positive, got {}", self.dt)));
                    }
                }
                "integrator" => match crate::Integrator::from_name(v) {
                    Some((i, mapped)) => {
                        self.integrator = i;
                        if mapped {
                            self.warn(format!("option@integrator=\"{v}\" runs as {i} (no Coriolis derivatives)"));
                        }
                    }
                    None => {
                        return Err(c.err(format!("integrator=\"{v}\": expected Euler, RK4, implicit or implicitfast")))
                    }
                },
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
    pub(super) fn read_flags(&mut self, e: &El) -> Result<(), ModelError> {
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
                ("frictionloss", false) => self.flags.frictionloss = false,
                // MuJoCo ≤ 3.2: springs, dampers and fluid forces together
                ("passive", false) => (self.flags.spring, self.flags.damper, self.flags.fluid) = (false, false, false),
                // all constraints: contacts, limits and friction loss (equality constraints are never applied)
                ("constraint", false) => {
                    (self.flags.contact, self.flags.limit, self.flags.frictionloss) = (false, false, false)
                }
                (
                    "gravity" | "contact" | "limit" | "spring" | "damper" | "passive" | "constraint" | "frictionloss",
                    true,
                ) => {}
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
                    "equality" | "actuation" | "clampctrl" | "warmstart" | "midphase" | "refsafe" | "sensor"
                    | "autoreset" | "nativeccd" | "island" | "multiccd",
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

    pub(super) fn read_default(&mut self, d: &El, parent: Option<&str>) -> Result<(), ModelError> {
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
            if kind == "actuator" {
                shortcut_default(&c.tag, e);
            }
        }
        self.defaults.insert(name.clone(), class);
        for c in d.elements("default") {
            self.read_default(c, Some(&name))?;
        }
        Ok(())
    }

    pub(super) fn read_assets(&mut self, a: &El) -> Result<(), ModelError> {
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
                    let path = dir.join(file);
                    if !path.is_file() {
                        return Err(c.err(format!("mesh file {} not found", path.display())));
                    }
                    self.meshes.insert(name, path.display().to_string());
                }
                "texture" | "material" => {}
                t => self.warn(format!("asset/{t} ignored")),
            }
        }
        Ok(())
    }
}

/// MuJoCo writes every actuator shortcut in a default class into the one general actuator default: a
/// `<motor>`, `<position kp kv>` or `<velocity kv>` default also sets gaintype / gainprm / biastype / biasprm
/// (so a `<general>` of that class inherits the servo; checked against MuJoCo's compiled `actuator_gainprm`).
fn shortcut_default(tag: &str, e: &mut Vec<(String, String)>) {
    let num = |e: &Vec<(String, String)>, k: &str| {
        e.iter().find(|(a, _)| a == k).and_then(|(_, v)| v.split_whitespace().next()?.parse::<f64>().ok())
    };
    let (gain, bias) = match tag {
        "motor" => {
            e.retain(|(a, _)| a != "kp" && a != "kv");
            (1.0, None)
        }
        "position" => {
            let (kp, kv) = (num(e, "kp").unwrap_or(1.0), num(e, "kv").unwrap_or(0.0));
            (kp, Some(format!("0 {} {}", -kp, -kv)))
        }
        "velocity" => {
            let kv = num(e, "kv").unwrap_or(1.0);
            (kv, Some(format!("0 0 {}", -kv)))
        }
        _ => return,
    };
    let mut set = |k: &str, v: String| match e.iter_mut().find(|(a, _)| a == k) {
        Some(slot) => slot.1 = v,
        None => e.push((k.to_string(), v)),
    };
    set("gaintype", "fixed".into());
    set("gainprm", format!("{gain}"));
    set("biastype", if bias.is_some() { "affine" } else { "none" }.into());
    set("biasprm", bias.unwrap_or_else(|| "0 0 0".into()));
}
