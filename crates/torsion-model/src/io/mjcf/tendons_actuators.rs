//! `<tendon>` and `<actuator>` sections: all kept raw in the model's extras; two-site `<spatial>` tendons become
//! [`Cable`]s, and `<motor>` / `<position>` / `<velocity>` / `<general>` actuators on them or on hinge / slide
//! joints [`CableActuator`]s (MuJoCo semantics in `tendon.rs`; gear, ctrlrange, forcerange). An actuator on a
//! ball or free joint is an error. Not simulated (warned, extras only, so ctrl indices then differ from
//! MuJoCo's): fixed tendons, spatial tendons through more than two sites or around geoms, tendon limits /
//! friction loss / armature, actuators on sites or bodies, the shortcuts intvelocity / damper / cylinder /
//! muscle / adhesion, position `dampratio` / `timeconst`, dynamics other than `none` / `filter`, gain types
//! other than `fixed`, bias types other than `none` / `affine`; activation limits and `actearly` are ignored
//! (warned).
use super::parse::El;
use super::{Compiler, MBody, ACTUATORS};
use crate::error::ModelError;
use crate::extras::{Actuator, ActuatorTarget, Tendon, TendonKind};
use crate::model::Model;
use crate::tendon::{Cable, CableActuator, Transmission};
use torsion_math::Vec3;

impl Compiler {
    // ----- tendons and actuators

    pub(super) fn read_tendons(&self, root: &El, m: &mut Model) -> Result<(), ModelError> {
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
                if let Some(n) = t.get("name") {
                    if m.extras.tendon_index(n).is_some() {
                        return Err(it.err(format!("tendon name '{n}' used twice")));
                    }
                }
                // dangling references: every joint of a fixed tendon, every site of a spatial one
                for c in &t.children {
                    let (role, found) = match (c.tag.as_str(), c.get("joint"), c.get("site")) {
                        ("joint", Some(j), _) => (("joint", j), m.joint_index(j).is_some()),
                        ("site", _, Some(s)) => (("site", s), m.extras.site_index(s).is_some()),
                        _ => continue,
                    };
                    if !found {
                        let tn = t.get("name").unwrap_or("");
                        return Err(c.err(format!("unknown {} '{}' in tendon '{tn}'", role.0, role.1)));
                    }
                }
                if kind == TendonKind::Spatial {
                    self.promote_cable(t, &it, m)?;
                } else {
                    self.warn("tendon/fixed kept in extras, not simulated".to_string());
                }
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

    pub(super) fn read_actuators(&self, root: &El, m: &mut Model, bodies: &[MBody]) -> Result<(), ModelError> {
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
                let name = a.get("name").map_or_else(|| format!("actuator{k}"), str::to_string);
                // tendon (cable) and 1-DoF joint transmissions are simulated; others are warned, extras only
                let tr = match &target {
                    ActuatorTarget::Tendon(t) => match m.cable_index(t) {
                        Some(c) => Some(Transmission::Cable(c)),
                        None => {
                            self.warn(format!("actuator on tendon '{t}' kept in extras: the tendon is not a cable"));
                            None
                        }
                    },
                    ActuatorTarget::Joint(j) => {
                        let ji = m.joint_index(j).expect("checked above");
                        if m.joint_type[ji].dof() != 1 {
                            return Err(it.err(format!(
                                "joint '{j}' is {:?}: actuators on ball and free joints are not supported (only hinge \
                                 and slide)",
                                m.joint_type[ji]
                            )));
                        }
                        Some(Transmission::Joint(ji))
                    }
                    _ => {
                        self.warn(format!(
                            "actuator '{name}' (site / body transmission) kept in extras, not simulated: the model's \
                             ctrl indices differ from MuJoCo's"
                        ));
                        None
                    }
                };
                if let Some(tr) = tr {
                    self.promote_actuator(&it, &a.tag, name.clone(), tr, gear[0], ctrllimited, range, m)?;
                }
                if a.get("name").is_some() && m.extras.actuators.iter().any(|x| x.name == name) {
                    return Err(it.err(format!("actuator name '{name}' used twice")));
                }
                m.extras.actuators.push(Actuator {
                    name,
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

    /// A two-site `<spatial>` tendon → a [`Cable`] (spec 003 §3.4); anything else is warned and skipped.
    fn promote_cable(&self, t: &El, it: &super::parse::Item, m: &mut Model) -> Result<(), ModelError> {
        let name = t.get("name").map_or_else(|| format!("tendon{}", m.extras.tendons.len()), str::to_string);
        let sites: Vec<&str> = t.children.iter().filter(|c| c.tag == "site").filter_map(|c| c.get("site")).collect();
        if sites.len() != 2 || t.children.len() != 2 {
            self.warn(format!("tendon/spatial '{name}' (not exactly two sites) kept in extras, not simulated"));
            return Ok(());
        }
        let mut body = [0; 2];
        let mut site = [Vec3::zeros(); 2];
        for (e, s) in sites.iter().enumerate() {
            let k = m.extras.site_index(s).ok_or_else(|| it.err(format!("unknown site '{s}'")))?;
            body[e] = m.extras.sites[k].body;
            site[e] = m.extras.sites[k].pose.0;
        }
        for a in ["frictionloss", "armature"] {
            if it.f64_or(a, 0.0)? != 0.0 {
                self.warn(format!("tendon@{a} ignored"));
            }
        }
        if it.tri("limited")? == Some(true) || (it.tri("limited")?.is_none() && it.get("range").is_some()) {
            self.warn("tendon@range ignored".to_string());
        }
        let stiffness = it.f64_or("stiffness", 0.0)?;
        let damping = it.f64_or("damping", 0.0)?;
        // MuJoCo: "-1 -1" (default) = the length at qpos0; one value = a plain spring (lo = hi)
        let sl = it.nums("springlength", 1, 2)?.unwrap_or(vec![-1.0, -1.0]);
        let springlength = if sl.len() == 1 {
            (sl[0], sl[0])
        } else if sl[0] == -1.0 && sl[1] == -1.0 {
            let pose = m.forward_kinematics(&m.neutral_q()).map_err(|e| it.err(e))?;
            let x = |e: usize| pose[body[e]].0 + pose[body[e]].1.rotate(&site[e]);
            let l = (x(1) - x(0)).norm();
            (l, l)
        } else {
            (sl[0], sl[1])
        };
        if stiffness < 0.0 || damping < 0.0 || springlength.0 > springlength.1 {
            return Err(it.err("stiffness and damping must be ≥ 0 and springlength lower ≤ upper"));
        }
        m.cables.push(Cable { name, body, site, stiffness, damping, springlength });
        Ok(())
    }

    /// A `<motor>` / `<position>` / `<velocity>` / `<general>` actuator on a cable or a 1-DoF joint → a
    /// [`CableActuator`] (MuJoCo's expansions of the shortcuts; gear folded in: gain × gear, affine bias ×
    /// (gear, gear², gear²), forcerange × gear; filter time constant dynprm[0]). Unsupported forms are warned
    /// and kept in extras only.
    #[allow(clippy::too_many_arguments)]
    fn promote_actuator(
        &self,
        it: &super::parse::Item,
        tag: &str,
        name: String,
        transmission: Transmission,
        gear: f64,
        ctrllimited: bool,
        range: (f64, f64),
        m: &mut Model,
    ) -> Result<(), ModelError> {
        let skip = |why: String| {
            self.warn(format!(
                "actuator '{name}' ({why}) kept in extras, not simulated: the model's ctrl indices differ from MuJoCo's"
            ));
            Ok(())
        };
        // (gainprm₀, biasprm₀..₂ or None for biastype none, filter τ)
        let (g0, b, mut timeconst): (f64, Option<[f64; 3]>, Option<f64>) = match tag {
            "motor" => (1.0, None, None),
            "position" => {
                if it.get("dampratio").is_some() {
                    return skip("position@dampratio".into());
                }
                if it.f64_or("timeconst", 0.0)? > 0.0 {
                    return skip("position@timeconst: dyntype filterexact".into());
                }
                // MuJoCo: kp defaults to the class's gainprm[0] (1), kv to 0
                let kp = match it.get("kp") {
                    Some(_) => it.f64_or("kp", 1.0)?,
                    None => it.nums_over("gainprm", &[1.0])?[0],
                };
                let kv = it.f64_or("kv", 0.0)?;
                (kp, Some([0.0, -kp, -kv]), None)
            }
            "velocity" => {
                let kv = it.f64_or("kv", 1.0)?;
                (kv, Some([0.0, 0.0, -kv]), None)
            }
            "general" => {
                let tc = match it.get("dyntype").unwrap_or("none") {
                    "none" => None,
                    "filter" => {
                        let tau = it.nums_over("dynprm", &[1.0; 1])?[0];
                        if tau <= 0.0 {
                            return Err(it.err(format!("dynprm: the filter time constant must be > 0, got {tau}")));
                        }
                        Some(tau)
                    }
                    d => return skip(format!("dyntype {d}")),
                };
                if it.get("gaintype").unwrap_or("fixed") != "fixed" {
                    return skip(format!("gaintype {}", it.get("gaintype").unwrap_or("")));
                }
                let g0 = it.nums_over("gainprm", &[1.0; 10])?[0];
                let b = match it.get("biastype").unwrap_or("none") {
                    "none" => None,
                    "affine" => {
                        let b = it.nums_over("biasprm", &[0.0; 10])?;
                        Some([b[0], b[1], b[2]])
                    }
                    bt => return skip(format!("biastype {bt}")),
                };
                (g0, b, tc)
            }
            other => return skip(format!("<{other}>")),
        };
        if tag != "general" {
            timeconst = None;
        }
        for a in ["actlimited", "actearly"] {
            if it.tri(a)? == Some(true) {
                self.warn(format!("actuator@{a} ignored"));
            }
        }
        let fr = it.nums("forcerange", 2, 2)?.map_or((0.0, 0.0), |r| (r[0], r[1]));
        let forcelimited = match it.tri("forcelimited")? {
            Some(b) => b,
            None => self.autolimits && fr != (0.0, 0.0),
        };
        if forcelimited && fr.0 > fr.1 {
            return Err(it.err(format!("forcerange lower {} must be ≤ upper {}", fr.0, fr.1)));
        }
        let forcerange = forcelimited.then(|| {
            let (a, b) = (gear * fr.0, gear * fr.1);
            (a.min(b), a.max(b))
        });
        let bias = b.map_or([0.0; 3], |b| [gear * b[0], gear * gear * b[1], gear * gear * b[2]]);
        let ctrlrange = ctrllimited.then_some(range);
        m.cable_actuators.push(CableActuator {
            name,
            transmission,
            gain: gear * g0,
            bias,
            forcerange,
            timeconst,
            ctrlrange,
        });
        Ok(())
    }
}
