//! Model shapes → parry shapes, each with its fixed pose in the body (COM) frame.
//!
//! parry's cylinder has its axis along y while ours (MJCF/URDF convention, `torsion_model::shape`) is along z, so
//! cylinders get an extra rotation of +90° about x in their local pose. Planes are parry half-spaces (the plane z = 0
//! of the shape frame, solid below, normal +z); MuJoCo's plane half-sizes are for rendering only, so planes are
//! infinite here as in MuJoCo. Ellipsoids have no parry primitive: they become the convex hull of
//! [`ELLIPSOID_RINGS`] × [`ELLIPSOID_SEGMENTS`] points sampled on the surface (an inscribed polytope: the surface
//! is under-estimated by at most r·(1 − cos(π / segments)) ≈ 0.9% of the largest radius). Meshes are the convex
//! hull of their vertices ([`crate::mesh`]).
use crate::error::CollisionError;
use crate::mesh::{MeshHulls, MeshPolicy};
use parry3d_f64::math::{Pose, Vector};
use parry3d_f64::shape::SharedShape;
use torsion_math::{Quat, Vec3};
use torsion_model::{Shape, ShapeKind};

/// Latitude rings (poles excluded) of the sampled ellipsoid hull.
pub const ELLIPSOID_RINGS: usize = 11;
/// Points per ring of the sampled ellipsoid hull.
pub const ELLIPSOID_SEGMENTS: usize = 24;

/// torsion (nalgebra) vector → parry (glam) vector.
#[inline]
pub fn to_parry(v: &Vec3) -> Vector {
    Vector::new(v.x, v.y, v.z)
}

/// parry (glam) vector → torsion (nalgebra) vector.
#[inline]
pub fn from_parry(v: Vector) -> Vec3 {
    Vec3::new(v.x, v.y, v.z)
}

/// torsion pose (position, quaternion (w, x, y, z), local → world) → parry pose.
#[inline]
pub fn pose_to_parry(x: &Vec3, q: &Quat) -> Pose {
    let r = parry3d_f64::math::Rotation::from_xyzw(q.v.x, q.v.y, q.v.z, q.w);
    Pose::from_parts(to_parry(x), r)
}

/// A parry shape ready for queries, with its pose in the body frame.
pub(crate) struct BuiltShape {
    pub shape: SharedShape,
    /// shape → body (COM frame), including the cylinder axis fix
    pub local: Pose,
    pub is_plane: bool,
}

fn positive(s: &Shape, index: usize, field: &'static str, value: f64) -> Result<f64, CollisionError> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(CollisionError::BadSize { shape: s.name.clone(), index, field, value })
    }
}

/// Points on the surface of an ellipsoid with semi-axes `r` (see the module doc).
pub fn ellipsoid_points(r: &Vec3) -> Vec<Vector> {
    use std::f64::consts::PI;
    let mut pts = vec![Vector::new(0.0, 0.0, r.z), Vector::new(0.0, 0.0, -r.z)];
    for i in 1..=ELLIPSOID_RINGS {
        let th = PI * i as f64 / (ELLIPSOID_RINGS + 1) as f64;
        for j in 0..ELLIPSOID_SEGMENTS {
            let ph = 2.0 * PI * j as f64 / ELLIPSOID_SEGMENTS as f64;
            pts.push(Vector::new(r.x * th.sin() * ph.cos(), r.y * th.sin() * ph.sin(), r.z * th.cos()));
        }
    }
    pts
}

/// Build the parry shape of `model.shapes[index]`. `Ok(None)`: a mesh skipped under [`MeshPolicy::Skip`], with the
/// reason pushed to `warnings`.
pub(crate) fn build_shape(
    s: &Shape,
    index: usize,
    mesh_policy: MeshPolicy,
    meshes: &mut MeshHulls,
    warnings: &mut Vec<String>,
) -> Result<Option<BuiltShape>, CollisionError> {
    let (p, q) = &s.pose;
    if !(p.iter().all(|x| x.is_finite()) && q.to_array().iter().all(|x| x.is_finite()) && q.norm() > 1e-9) {
        return Err(CollisionError::BadShapePose { shape: s.name.clone(), index });
    }
    let mut local = pose_to_parry(p, &q.normalize());
    let mut is_plane = false;
    let shape = match &s.kind {
        ShapeKind::Sphere { radius } => SharedShape::ball(positive(s, index, "radius", *radius)?),
        ShapeKind::Capsule { radius, half_length } => {
            let r = positive(s, index, "radius", *radius)?;
            if !(half_length.is_finite() && *half_length >= 0.0) {
                return Err(CollisionError::BadSize {
                    shape: s.name.clone(),
                    index,
                    field: "half_length",
                    value: *half_length,
                });
            }
            SharedShape::capsule_z(*half_length, r)
        }
        ShapeKind::Cylinder { radius, half_length } => {
            let r = positive(s, index, "radius", *radius)?;
            let h = positive(s, index, "half_length", *half_length)?;
            // parry's cylinder axis is y: rotate y → z (+90° about x)
            let fix = parry3d_f64::math::Rotation::from_axis_angle(Vector::X, std::f64::consts::FRAC_PI_2);
            local *= Pose::from_rotation(fix);
            SharedShape::cylinder(h, r)
        }
        ShapeKind::Box { half_extents: e } => {
            positive(s, index, "half_extents.x", e.x)?;
            positive(s, index, "half_extents.y", e.y)?;
            positive(s, index, "half_extents.z", e.z)?;
            SharedShape::cuboid(e.x, e.y, e.z)
        }
        ShapeKind::Plane { .. } => {
            is_plane = true;
            SharedShape::halfspace(Vector::Z)
        }
        ShapeKind::Ellipsoid { radii: r } => {
            positive(s, index, "radii.x", r.x)?;
            positive(s, index, "radii.y", r.y)?;
            positive(s, index, "radii.z", r.z)?;
            SharedShape::convex_hull(&ellipsoid_points(r)).ok_or_else(|| CollisionError::BadSize {
                shape: s.name.clone(),
                index,
                field: "radii (convex hull failed)",
                value: r.min(),
            })?
        }
        ShapeKind::Mesh { file } => {
            let hull = meshes.hull(file);
            match (hull, mesh_policy) {
                (Ok(h), _) => h,
                (Err(reason), MeshPolicy::Error) => {
                    return Err(CollisionError::Mesh { shape: s.name.clone(), index, file: file.clone(), reason })
                }
                (Err(reason), MeshPolicy::Skip) => {
                    warnings.push(format!("shape '{}' (index {index}) skipped: mesh '{file}': {reason}", s.name));
                    return Ok(None);
                }
            }
        }
    };
    Ok(Some(BuiltShape { shape, local, is_plane }))
}
