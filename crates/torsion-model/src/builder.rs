//! Building models in code (small robots, tests, experiments).
use crate::error::ModelError;
use crate::model::{JointSpring, JointType, Model};
use torsion_math::{Mat3, Quat, Vec3};

pub struct ModelBuilder {
    m: Model,
}

/// A hinge/prismatic/… joint description for [`ModelBuilder::add_joint`].
#[derive(Clone, Debug)]
pub struct JointDesc {
    pub name: String,
    pub kind: JointType,
    pub parent: usize,
    pub child: usize,
    /// r: parent COM → joint point, parent body frame
    pub anchor_parent: Vec3,
    /// t: child COM → joint point, child body frame
    pub anchor_child: Vec3,
    pub frame_parent: Quat,
    pub frame_child: Quat,
    /// unit axis in the joint frame
    pub axis: Vec3,
    pub limit: Option<(f64, f64)>,
    pub damping: f64,
    pub effort: f64,
    pub spring: Option<JointSpring>,
    /// MuJoCo armature, stiffness, spring reference and friction loss (`Model::joint_armature` …); 0 from
    /// [`JointDesc::hinge`]
    pub armature: f64,
    pub stiffness: f64,
    pub springref: f64,
    pub frictionloss: f64,
}

impl JointDesc {
    /// A hinge about `axis` (joint frame = both body frames' orientation at angle 0).
    pub fn hinge(name: &str, parent: usize, child: usize, r: Vec3, t: Vec3, axis: Vec3) -> Self {
        JointDesc {
            name: name.into(),
            kind: JointType::Revolute,
            parent,
            child,
            anchor_parent: r,
            anchor_child: t,
            frame_parent: Quat::identity(),
            frame_child: Quat::identity(),
            axis: axis.normalize(),
            limit: None,
            damping: 0.0,
            effort: f64::INFINITY,
            spring: None,
            armature: 0.0,
            stiffness: 0.0,
            springref: 0.0,
            frictionloss: 0.0,
        }
    }
}

impl ModelBuilder {
    pub fn new(name: &str) -> Self {
        Self { m: Model::empty(name) }
    }
    pub fn gravity(mut self, g: Vec3) -> Self {
        self.m.gravity = g;
        self
    }
    pub fn dt(mut self, dt: f64) -> Self {
        self.m.dt = dt;
        self
    }
    /// A fixed (infinite-mass) body at a given pose; returns its index.
    pub fn add_fixed_body(&mut self, name: &str, x: Vec3, q: Quat) -> usize {
        self.m.push_body(name.into(), true, f64::INFINITY, Mat3::zeros(), Vec3::zeros(), (x, q))
    }
    /// A dynamic body (its pose is set from the joints by forward kinematics in `build`).
    pub fn add_body(&mut self, name: &str, mass: f64, inertia: Mat3) -> usize {
        self.m.push_body(name.into(), false, mass, inertia, Vec3::zeros(), (Vec3::zeros(), Quat::identity()))
    }
    /// Initial pose of a free (jointless) body; bodies placed by joints get theirs from forward kinematics.
    pub fn set_body_pose0(&mut self, b: usize, x: Vec3, q: Quat) {
        self.m.body_pose0[b] = (x, q);
    }
    pub fn set_body_com(&mut self, b: usize, c: Vec3) {
        self.m.body_com[b] = c;
    }
    pub fn add_joint(&mut self, d: JointDesc) -> usize {
        self.m.push_joint(d)
    }
    /// Validate, place every dynamic body by forward kinematics at joint position 0, return the model.
    /// `qpos0` is the neutral configuration; new joints have no armature, stiffness or friction loss.
    pub fn build(mut self) -> Result<Model, ModelError> {
        self.m.qpos0 = self.m.zero_q();
        self.m.validate()?;
        let pose = self.m.forward_kinematics(&self.m.zero_q())?;
        self.m.body_pose0 = pose;
        Ok(self.m)
    }
}

/// Inertia of a uniform thin rod of length `l` and mass `m` along body x (spec 000 §4.1: I = m l²/12
/// transverse), with a small axial term so the tensor stays positive definite.
pub fn rod_inertia(m: f64, l: f64, radius: f64) -> Mat3 {
    let it = m * l * l / 12.0 + m * radius * radius / 4.0;
    let ia = 0.5 * m * radius * radius;
    Mat3::from_diagonal(&Vec3::new(ia, it, it))
}

/// The planar 2-link arm of spec 000 §4.1: base at the origin, hinge axes along world z (horizontal plane),
/// uniform rods of mass `mass` along body x with the COM at mid-length.
pub fn two_link_arm(l1: f64, l2: f64, mass: f64, gravity: Vec3, dt: f64) -> Result<Model, ModelError> {
    let mut b = ModelBuilder::new("two_link_arm").gravity(gravity).dt(dt);
    let base = b.add_fixed_body("base", Vec3::zeros(), Quat::identity());
    let l1b = b.add_body("link1", mass, rod_inertia(mass, l1, 0.01));
    let l2b = b.add_body("link2", mass, rod_inertia(mass, l2, 0.01));
    b.set_body_com(l1b, Vec3::new(l1 / 2.0, 0.0, 0.0));
    b.set_body_com(l2b, Vec3::new(l2 / 2.0, 0.0, 0.0));
    let z = Vec3::z();
    b.add_joint(JointDesc::hinge("joint1", base, l1b, Vec3::zeros(), Vec3::new(-l1 / 2.0, 0.0, 0.0), z));
    b.add_joint(JointDesc::hinge("joint2", l1b, l2b, Vec3::new(l1 / 2.0, 0.0, 0.0), Vec3::new(-l2 / 2.0, 0.0, 0.0), z));
    b.build()
}

/// Test fixture for XPBD derivatives: [`two_link_arm`] (0.8 m, 0.5 m, 1 kg, gravity −9.8 y, Δt 10 ms) with thick
/// links (the thin rods' 1000:1 inertia ratio makes finite differences ill-conditioned) and its maximal state at
/// q = (0.4, −0.7) given an out-of-plane spin, so that the angular constraints are active (a planar state sits
/// on the ‖c‖ = 0 non-smooth point, docs/gradients.md).
pub fn spinning_thick_arm() -> (Model, crate::MaximalState) {
    let mut m = two_link_arm(0.8, 0.5, 1.0, Vec3::new(0.0, -9.8, 0.0), 0.01).expect("two-link arm");
    m.body_inertia[1] = Mat3::new(0.02, 0.001, 0.0, 0.001, 0.05, 0.002, 0.0, 0.002, 0.055);
    m.body_inertia[2] = Mat3::new(0.01, 0.0, 0.001, 0.0, 0.025, 0.0, 0.001, 0.0, 0.03);
    let mut s0 = m.state_at(&[0.4, -0.7]).expect("arm state");
    s0.w[1] = Vec3::new(0.3, -0.2, 1.5);
    s0.w[2] = Vec3::new(-0.4, 0.1, 0.5);
    (m, s0)
}

/// A floating tree with every joint type, for tests and examples: free root, a damped ball joint, a prismatic
/// joint, and a two-link revolute side branch (so that joints on different branches must not couple), full
/// inertias, tilted frames, non-vertical gravity, a joint spring and armature on the side branch.
pub fn floating_tree() -> Model {
    let i = |a: f64, b: f64, c: f64, d: f64| Mat3::new(a, d, 0.001, d, b, -0.002, 0.001, -0.002, c);
    let mut b = ModelBuilder::new("floating_tree").gravity(Vec3::new(0.3, -0.2, -9.81)).dt(0.01);
    let w = b.add_fixed_body("world", Vec3::new(0.1, 0.0, 0.2), Quat::from_rpy(0.1, -0.2, 0.3));
    let base = b.add_body("base", 3.0, i(0.1, 0.12, 0.08, 0.005));
    let arm = b.add_body("arm", 1.2, i(0.02, 0.03, 0.025, -0.001));
    let tip = b.add_body("tip", 0.5, i(0.004, 0.005, 0.003, 0.0002));
    let s1 = b.add_body("side1", 0.8, i(0.01, 0.012, 0.009, 0.001));
    let s2 = b.add_body("side2", 0.6, i(0.008, 0.006, 0.007, -0.0005));
    let mut f = JointDesc::hinge("free", w, base, Vec3::zeros(), Vec3::new(0.01, -0.02, 0.03), Vec3::z());
    f.kind = JointType::Free;
    b.add_joint(f);
    let mut ball =
        JointDesc::hinge("ball", base, arm, Vec3::new(0.2, 0.0, 0.1), Vec3::new(-0.15, 0.01, 0.0), Vec3::z());
    ball.kind = JointType::Ball;
    ball.frame_parent = Quat::from_rpy(0.2, 0.1, -0.3);
    ball.damping = 0.2;
    b.add_joint(ball);
    let mut pr = JointDesc::hinge(
        "slide",
        arm,
        tip,
        Vec3::new(0.15, 0.0, 0.0),
        Vec3::new(0.0, 0.0, -0.05),
        Vec3::new(1.0, 0.2, 0.1),
    );
    pr.kind = JointType::Prismatic;
    b.add_joint(pr);
    let mut h1 = JointDesc::hinge(
        "h1",
        base,
        s1,
        Vec3::new(-0.2, 0.1, 0.0),
        Vec3::new(0.0, 0.1, 0.02),
        Vec3::new(0.3, 1.0, 0.2),
    );
    h1.frame_child = Quat::from_rpy(-0.4, 0.2, 0.1);
    h1.damping = 0.1;
    b.add_joint(h1);
    b.add_joint(JointDesc::hinge("h2", s1, s2, Vec3::new(0.0, -0.1, 0.1), Vec3::new(0.05, 0.0, -0.1), Vec3::x()));
    let mut m = b.build().expect("valid example model");
    m.joint_stiffness[3] = 0.7;
    m.joint_springref[3] = -0.3;
    m.joint_armature[3] = 0.005;
    m.joint_armature[1] = 0.01;
    m
}

/// A deterministic configuration of any model (unit quaternions for ball / free joints), for tests.
pub fn example_configuration(model: &Model, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15).wrapping_add(7);
    let mut r = move || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    };
    let mut q = vec![];
    for t in &model.joint_type {
        match t {
            JointType::Ball => q.extend_from_slice(&Quat::new(r(), r(), r(), r()).normalize().to_array()),
            JointType::Free => {
                q.extend_from_slice(&[r(), r(), r()]);
                q.extend_from_slice(&Quat::new(r(), r(), r(), r()).normalize().to_array());
            }
            t => (0..t.nq()).for_each(|_| q.push(r())),
        }
    }
    q
}

/// The 3-bar tensegrity prism (spec 003 §4.0, its proposal; the paper gives no geometry): three capsule rods
/// (L = 1.684 m, r = 0.02 m, 10 kg, MuJoCo capsule inertia, body z along the rod) on free joints, bottom nodes
/// b_i on a circle of radius 1/√3 m at z = 1 m (unit triangle), top nodes t_i twisted by 150° at height
/// sqrt(L² − 2R²(1 − cos 150°)) above them, rod i from b_i to t_i; 9 cables (k = 10000 N/m, c = 1000 N·s/m, rest
/// length 0.95 × the built length: pretensioned): bottom triangle c0–c2, top triangle c3–c5, sides c6–c8 (b_i to
/// t_{i+1}); filter actuators a0–a2 on the side cables (gain 1000, τ = 1 s, ctrl in [−100, 100]: the SUPERball
/// motor); gravity 0.1 g (the paper's 3-bar experiment), Δt = 1 ms.
pub fn tensegrity_prism() -> Model {
    use crate::tendon::{Cable, CableActuator};
    let (len, radius, mass) = (1.684, 0.02, 10.0);
    let i = crate::shape::ShapeKind::Capsule { radius, half_length: len / 2.0 }.inertia_diag(mass).expect("capsule");
    let r = 1.0 / 3f64.sqrt();
    let twist = 150f64.to_radians();
    let h = (len * len - 2.0 * r * r * (1.0 - twist.cos())).sqrt();
    let node = |a: f64, z: f64| Vec3::new(r * a.cos(), r * a.sin(), z);
    let ang = |k: usize| 2.0 * std::f64::consts::PI * k as f64 / 3.0;
    let bottom: Vec<Vec3> = (0..3).map(|k| node(ang(k), 1.0)).collect();
    let top: Vec<Vec3> = (0..3).map(|k| node(ang(k) + twist, 1.0 + h)).collect();
    let mut b = ModelBuilder::new("tensegrity_prism").gravity(Vec3::new(0.0, 0.0, -0.981)).dt(0.001);
    let w = b.add_fixed_body("world", Vec3::zeros(), Quat::identity());
    let mut q0 = vec![];
    for k in 0..3 {
        let rod = b.add_body(&format!("rod{k}"), mass, Mat3::from_diagonal(&i));
        let mut f = JointDesc::hinge(&format!("rod{k}"), w, rod, Vec3::zeros(), Vec3::zeros(), Vec3::z());
        f.kind = JointType::Free;
        b.add_joint(f);
        let axis = (top[k] - bottom[k]).normalize();
        let c = (top[k] + bottom[k]) * 0.5;
        // shortest rotation taking body z onto the rod axis
        let ax = Vec3::z().cross(&axis);
        let q = Quat::from_axis_angle(&ax.normalize(), ax.norm().atan2(axis.z));
        q0.extend_from_slice(&[c.x, c.y, c.z]);
        q0.extend_from_slice(&q.to_array());
    }
    let mut m = b.build().expect("valid prism");
    m.qpos0 = q0;
    m.body_pose0 = m.forward_kinematics(&m.qpos0.clone()).expect("prism placement");
    // node k of rod i: 0 = bottom (−L/2 on body z), 1 = top
    let end = |e: usize| Vec3::new(0.0, 0.0, if e == 0 { -len / 2.0 } else { len / 2.0 });
    let pos = |rod: usize, e: usize| if e == 0 { bottom[rod] } else { top[rod] };
    let mut pairs = vec![];
    for k in 0..3 {
        pairs.push(((k, 0), ((k + 1) % 3, 0)));
    }
    for k in 0..3 {
        pairs.push(((k, 1), ((k + 1) % 3, 1)));
    }
    for k in 0..3 {
        pairs.push(((k, 0), ((k + 1) % 3, 1)));
    }
    for (c, ((ra, ea), (rb, eb))) in pairs.into_iter().enumerate() {
        let l = 0.95 * (pos(rb, eb) - pos(ra, ea)).norm();
        m.cables.push(Cable {
            name: format!("c{c}"),
            body: [ra + 1, rb + 1],
            site: [end(ea), end(eb)],
            stiffness: 10000.0,
            damping: 1000.0,
            springlength: (l, l),
        });
    }
    for a in 0..3 {
        m.cable_actuators.push(CableActuator {
            name: format!("a{a}"),
            transmission: crate::tendon::Transmission::Cable(6 + a),
            gain: 1000.0,
            bias: [0.0; 3],
            forcerange: None,
            timeconst: Some(1.0),
            ctrlrange: Some((-100.0, 100.0)),
        });
    }
    m.validate().expect("valid prism");
    m
}

/// The 3-bar prism of [`tensegrity_prism`] standing on a floor with spec 003 §3.6's linear contact model on
/// (default parameters, `LinearContact::default`): a plane geom "floor" on the world, a capsule geom per rod
/// (radius 0.02 m, the rod's length), and the prism lowered so its bottom nodes' caps touch z = 0 (depth 0).
pub fn tensegrity_prism_on_ground() -> Model {
    use crate::shape::{Shape, ShapeKind};
    let (len, radius) = (1.684, 0.02);
    let mut m = tensegrity_prism();
    let shape =
        |name: String, body: usize, kind: ShapeKind| Shape::new(name, body, kind, (Vec3::zeros(), Quat::identity()));
    m.shapes.push(shape("floor".into(), 0, ShapeKind::Plane { half_extents: [0.0, 0.0] }));
    for k in 0..3 {
        m.shapes.push(shape(format!("rod{k}"), k + 1, ShapeKind::Capsule { radius, half_length: len / 2.0 }));
    }
    // bottom nodes at z = 1 (tensegrity_prism): down to z = radius
    for k in 0..3 {
        m.qpos0[7 * k + 2] -= 1.0 - radius;
    }
    m.body_pose0 = m.forward_kinematics(&m.qpos0.clone()).expect("prism placement");
    m.tensegrity_contact = Some(crate::tendon::LinearContact::default());
    m.validate().expect("valid prism");
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn two_link_fk_places_links() {
        let m = two_link_arm(1.0, 0.5, 1.0, Vec3::zeros(), 0.01).unwrap();
        let p = m.forward_kinematics(&[std::f64::consts::FRAC_PI_2, 0.0]).unwrap();
        assert!((p[1].0 - Vec3::new(0.0, 0.5, 0.0)).norm() < 1e-12);
        assert!((p[2].0 - Vec3::new(0.0, 1.25, 0.0)).norm() < 1e-12);
        let t = m.param_table();
        assert_eq!(t.len(), 2 * 7 + 2 * 6 + 2 * 3); // + damping, armature, frictionloss per joint
        assert!(t.index("joint_anchor_parent[joint2].x").is_ok());
        let mut m2 = m.clone();
        assert!(m2.param_set_by_name("body_mass[link1]", -1.0).is_err());
        assert_eq!(m2.body_mass[1], 1.0);
        assert_eq!(m.qpos0, m.zero_q());
        assert_eq!(m.joint_armature, [0.0, 0.0]);
    }

    /// Negative or non-finite joint damping (and armature, stiffness, friction loss) is refused by `validate`
    /// (issue 20: a builder damping of −5 or NaN was accepted).
    #[test]
    fn negative_or_nan_joint_constants_are_refused() {
        let m = two_link_arm(1.0, 0.5, 1.0, Vec3::zeros(), 0.01).unwrap();
        for v in [-5.0, f64::NAN, f64::INFINITY] {
            for field in 0..4 {
                let mut b = m.clone();
                let col =
                    [&mut b.joint_damping, &mut b.joint_armature, &mut b.joint_stiffness, &mut b.joint_frictionloss];
                col.into_iter().nth(field).unwrap()[1] = v;
                let e = b.validate().unwrap_err().to_string();
                // negative: "must be finite and ≥ 0"; non-finite: the earlier finite check of the joint parameters
                let reason = if v.is_finite() { "≥ 0" } else { "must be finite" };
                assert!(e.contains("joint 'joint2'") && e.contains(reason), "{e}");
            }
        }
    }
}
