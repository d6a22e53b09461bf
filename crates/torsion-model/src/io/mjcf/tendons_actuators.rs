//! `<tendon>` and `<actuator>` sections (kept in the model's extras).
use super::parse::El;
use super::{Compiler, MBody, ACTUATORS};
use crate::error::ModelError;
use crate::extras::{Actuator, ActuatorTarget, Tendon, TendonKind};
use crate::model::Model;

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
