//! Scene helpers shared by the integration tests: a ground plane on a fixed world body and free (jointless)
//! bodies carrying one shape each.
#![allow(dead_code)]
use torsion_collision::{CollisionOptions, CollisionWorld, Contacts};
use torsion_math::{Mat3, Quat, Vec3};
use torsion_model::builder::ModelBuilder;
use torsion_model::{Model, Shape, ShapeKind};

pub fn shape(name: &str, body: usize, kind: ShapeKind, pose: (Vec3, Quat)) -> Shape {
    Shape::new(name, body, kind, pose)
}

/// Body 0: fixed world with a ground plane z = 0 if `ground`; then one free body per entry of `kinds`.
pub fn scene(ground: bool, kinds: &[ShapeKind]) -> Model {
    let mut b = ModelBuilder::new("scene");
    let w = b.add_fixed_body("world", Vec3::zeros(), Quat::identity());
    for k in 0..kinds.len() {
        b.add_body(&format!("b{k}"), 1.0, Mat3::identity());
    }
    let mut m = b.build().expect("model");
    if ground {
        m.shapes.push(shape("floor", w, ShapeKind::Plane { half_extents: [0.0, 0.0] }, id()));
    }
    for (k, kind) in kinds.iter().enumerate() {
        m.shapes.push(shape(&format!("s{k}"), k + 1, kind.clone(), id()));
    }
    m
}

pub fn id() -> (Vec3, Quat) {
    (Vec3::zeros(), Quat::identity())
}

pub fn rot(axis: Vec3, angle: f64) -> Quat {
    Quat::from_axis_angle(&axis.normalize(), angle)
}

/// World poses: body 0 at identity, the others as given.
pub fn poses(bodies: &[(Vec3, Quat)]) -> Vec<(Vec3, Quat)> {
    let mut p = vec![id()];
    p.extend_from_slice(bodies);
    p
}

pub fn detect(m: &Model, opts: CollisionOptions, p: &[(Vec3, Quat)]) -> Contacts {
    let mut w = CollisionWorld::new(m, opts).expect("world");
    let mut c = Contacts::default();
    w.detect(p, &mut c).expect("detect");
    c
}

pub fn margin(m: f64) -> CollisionOptions {
    CollisionOptions { margin: m, ..Default::default() }
}

pub fn bx(x: f64, y: f64, z: f64) -> ShapeKind {
    ShapeKind::Box { half_extents: Vec3::new(x, y, z) }
}
