//! Geometric shapes attached to bodies (MJCF `<geom>`, URDF `<collision>`), stored for collision detection, and
//! the mass properties of solid shapes (used by the MJCF loader to compute inertia from geoms as MuJoCo does).
use torsion_math::{Mat3, Quat, Vec3};

/// One shape attached to a body.
#[derive(Clone, Debug, PartialEq)]
pub struct Shape {
    /// MJCF geom name / URDF collision name (loaders generate one when the file has none)
    pub name: String,
    /// index of the body it is attached to (0 = world for MJCF)
    pub body: usize,
    /// pose of the shape frame in the body frame (the COM frame of the body, see `model.rs`): position, m, and
    /// orientation (w, x, y, z), shape → body
    pub pose: (Vec3, Quat),
    pub kind: ShapeKind,
    /// MuJoCo friction (sliding, torsional, rolling); loaders default to MuJoCo's (1, 0.005, 0.0001)
    pub friction: [f64; 3],
    /// Newton restitution coefficient ε ∈ [0, 1] (torsion's; MJCF and URDF have no such attribute, loaders set
    /// 0): the contact solvers use the larger of a pair's two values, like the sliding friction. Set it in code
    /// or through the parameter `shape_restitution[name]` (`Model::param_set_by_name`).
    pub restitution: f64,
    /// MuJoCo collision bitmasks: two shapes may collide if `contype` of one ANDs `conaffinity` of the other
    pub contype: u32,
    pub conaffinity: u32,
}

impl Shape {
    /// A shape with the loaders' defaults: MuJoCo's friction (`DEFAULT_FRICTION`), restitution 0, and collision
    /// bitmasks contype = conaffinity = 1 (collides with everything).
    pub fn new(name: impl Into<String>, body: usize, kind: ShapeKind, pose: (Vec3, Quat)) -> Self {
        Shape {
            name: name.into(),
            body,
            pose,
            kind,
            friction: DEFAULT_FRICTION,
            restitution: 0.0,
            contype: 1,
            conaffinity: 1,
        }
    }
}

/// Shape geometry in its own frame. Capsules and cylinders have their axis along the shape-frame z.
#[derive(Clone, Debug, PartialEq)]
pub enum ShapeKind {
    /// radius, m
    Sphere { radius: f64 },
    /// radius and half-length of the cylindrical part (the caps add `radius` at each end), m
    Capsule { radius: f64, half_length: f64 },
    /// radius and half-length, m
    Cylinder { radius: f64, half_length: f64 },
    /// half-extents along x, y, z, m
    Box { half_extents: Vec3 },
    /// the plane z = 0 of the shape frame, normal +z; half-extents in x and y for rendering (0 = infinite)
    Plane { half_extents: [f64; 2] },
    /// semi-axes along x, y, z, m
    Ellipsoid { radii: Vec3 },
    /// a mesh file (path as resolved by the loader; URDF `package://` names are kept verbatim)
    Mesh { file: String },
}

impl ShapeKind {
    /// Volume in m³ of the solid shape; `None` for planes and meshes (not computed here).
    pub fn volume(&self) -> Option<f64> {
        use std::f64::consts::PI;
        match *self {
            ShapeKind::Sphere { radius: r } => Some(4.0 / 3.0 * PI * r * r * r),
            ShapeKind::Capsule { radius: r, half_length: h } => Some(PI * r * r * (2.0 * h + 4.0 / 3.0 * r)),
            ShapeKind::Cylinder { radius: r, half_length: h } => Some(PI * r * r * 2.0 * h),
            ShapeKind::Box { half_extents: e } => Some(8.0 * e.x * e.y * e.z),
            ShapeKind::Ellipsoid { radii: a } => Some(4.0 / 3.0 * PI * a.x * a.y * a.z),
            ShapeKind::Plane { .. } | ShapeKind::Mesh { .. } => None,
        }
    }

    /// Principal moments (diagonal inertia about the centre, shape axes) of a uniform solid of mass `mass`, with
    /// MuJoCo's formulas (`user_objects.cc`): a capsule is a cylinder plus two hemispheres sharing its density.
    /// `None` for planes and meshes.
    pub fn inertia_diag(&self, mass: f64) -> Option<Vec3> {
        match *self {
            ShapeKind::Sphere { radius: r } => {
                let i = 0.4 * mass * r * r;
                Some(Vec3::new(i, i, i))
            }
            ShapeKind::Capsule { radius: r, half_length: hl } => {
                let h = 2.0 * hl;
                // mass split by volume: sphere (both caps) vs cylinder
                let ms = mass * (4.0 * r) / (4.0 * r + 3.0 * h);
                let mc = mass - ms;
                let ic = mc * (3.0 * r * r + h * h) / 12.0;
                let is = 0.4 * ms * r * r;
                // hemispheres moved to the ends: about the centre their transverse moment adds m h (3r + 2h) / 8
                let it = ic + is + ms * h * (3.0 * r + 2.0 * h) / 8.0;
                Some(Vec3::new(it, it, 0.5 * mc * r * r + is))
            }
            ShapeKind::Cylinder { radius: r, half_length: hl } => {
                let h = 2.0 * hl;
                let it = mass * (3.0 * r * r + h * h) / 12.0;
                Some(Vec3::new(it, it, 0.5 * mass * r * r))
            }
            ShapeKind::Box { half_extents: e } => {
                let (x, y, z) = (e.x * e.x, e.y * e.y, e.z * e.z);
                Some(Vec3::new(y + z, x + z, x + y) * (mass / 3.0))
            }
            ShapeKind::Ellipsoid { radii: a } => {
                let (x, y, z) = (a.x * a.x, a.y * a.y, a.z * a.z);
                Some(Vec3::new(y + z, x + z, x + y) * (mass / 5.0))
            }
            ShapeKind::Plane { .. } | ShapeKind::Mesh { .. } => None,
        }
    }

    /// Inertia tensor about the centre in the frame where the shape has orientation `q`: R diag Rᵀ.
    pub fn inertia_in(&self, mass: f64, q: &Quat) -> Option<Mat3> {
        let d = self.inertia_diag(mass)?;
        let r = q.to_mat();
        Some(r * Mat3::from_diagonal(&d) * r.transpose())
    }
}

/// MuJoCo's default geom friction (sliding, torsional, rolling).
pub const DEFAULT_FRICTION: [f64; 3] = [1.0, 0.005, 0.0001];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capsule_is_cylinder_plus_sphere() {
        let (r, hl) = (0.3, 0.5);
        let cap = ShapeKind::Capsule { radius: r, half_length: hl };
        let cyl = ShapeKind::Cylinder { radius: r, half_length: hl };
        let sph = ShapeKind::Sphere { radius: r };
        let v = cap.volume().unwrap();
        assert!((v - cyl.volume().unwrap() - sph.volume().unwrap()).abs() < 1e-12);
        // zero length: a sphere
        let c0 = ShapeKind::Capsule { radius: r, half_length: 0.0 };
        assert!((c0.inertia_diag(2.0).unwrap() - sph.inertia_diag(2.0).unwrap()).norm() < 1e-12);
        // axial moment: cylinder part + sphere part with their volume shares
        let d = 1000.0;
        let (mc, ms) = (d * cyl.volume().unwrap(), d * sph.volume().unwrap());
        let i = cap.inertia_diag(d * v).unwrap();
        assert!((i.z - (0.5 * mc * r * r + 0.4 * ms * r * r)).abs() < 1e-9 * i.z);
    }

    #[test]
    fn box_and_ellipsoid() {
        let b = ShapeKind::Box { half_extents: Vec3::new(0.5, 1.0, 1.5) };
        assert!((b.volume().unwrap() - 6.0).abs() < 1e-12);
        let i = b.inertia_diag(12.0).unwrap();
        // m (ly² + lz²) / 12 with full lengths 1, 2, 3
        assert!((i - Vec3::new(12.0 * 13.0 / 12.0, 12.0 * 10.0 / 12.0, 12.0 * 5.0 / 12.0)).norm() < 1e-12);
        let e = ShapeKind::Ellipsoid { radii: Vec3::new(1.0, 1.0, 1.0) };
        let s = ShapeKind::Sphere { radius: 1.0 };
        assert!((e.inertia_diag(3.0).unwrap() - s.inertia_diag(3.0).unwrap()).norm() < 1e-12);
        assert!(ShapeKind::Plane { half_extents: [0.0, 0.0] }.volume().is_none());
    }
}
