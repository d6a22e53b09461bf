//! Geoms (shapes, contact masks, friction) and inertia: from `<inertial>` or from the geoms.
use super::parse::{El, Item};
use super::{Compiler, FromGeom, MBody, MGeom, GEOM_USED};
use crate::error::ModelError;
use crate::io::transform::Tf;
use crate::shape::{ShapeKind, DEFAULT_FRICTION};
use torsion_math::{Mat3, Quat, Vec3};

/// Mass, COM and inertia about the COM of parts (mᵢ, cᵢ, Iᵢ about cᵢ), all in one frame.
pub(super) fn combine(parts: &[(f64, Vec3, Mat3)]) -> (f64, Vec3, Mat3) {
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

impl Compiler {
    pub(super) fn geom<'a>(&self, el: &'a El, cls: &str, frame: &Tf) -> Result<Option<MGeom<'a>>, ModelError> {
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
    pub(super) fn inertial(&self, el: &El) -> Result<(f64, Vec3, Mat3), ModelError> {
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
    pub(super) fn body_mass(&self, b: &MBody) -> Result<(f64, Vec3, Mat3), ModelError> {
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
}
