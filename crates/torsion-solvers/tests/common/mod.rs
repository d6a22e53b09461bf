//! Small test robots built in code, floor contact frames and parameter finite differences shared by the tests.
#![allow(dead_code)]
use nalgebra::DMatrix;
use torsion_math::{Mat3, Quat, Vec3};
use torsion_model::builder::{JointDesc, ModelBuilder};
use torsion_model::{JointSpring, MaximalState, Model};
use torsion_model::{JointType, ParamSelection};
use torsion_solvers::contact::ContactGeom;
use torsion_solvers::ncp::ContactFrame;

pub fn inertia(a: f64, b: f64, c: f64, xy: f64, xz: f64, yz: f64) -> Mat3 {
    Mat3::new(a, xy, xz, xy, b, yz, xz, yz, c)
}

/// A 3-link spatial arm: full inertia tensors, non-parallel axes, a tilted joint frame, limits on joint 2.
pub fn three_link(limit: Option<(f64, f64)>, spring: bool) -> Model {
    let mut b = ModelBuilder::new("three_link").gravity(Vec3::new(0.0, 0.0, -9.8)).dt(0.01);
    let base = b.add_fixed_body("base", Vec3::new(0.1, -0.2, 0.3), Quat::from_rpy(0.1, 0.2, 0.3));
    let l1 = b.add_body("l1", 2.0, inertia(0.05, 0.04, 0.03, 0.001, -0.002, 0.0015));
    let l2 = b.add_body("l2", 1.5, inertia(0.03, 0.035, 0.02, -0.001, 0.0005, 0.001));
    let l3 = b.add_body("l3", 0.8, inertia(0.01, 0.012, 0.008, 0.0002, 0.0001, -0.0003));
    let mut j1 = JointDesc::hinge("j1", base, l1, Vec3::new(0.05, 0.0, 0.1), Vec3::new(0.0, 0.01, -0.15), Vec3::z());
    j1.frame_parent = Quat::from_rpy(0.0, 0.3, 0.0);
    b.add_joint(j1);
    let mut j2 = JointDesc::hinge(
        "j2",
        l1,
        l2,
        Vec3::new(0.02, 0.0, 0.15),
        Vec3::new(-0.12, 0.01, 0.0),
        Vec3::new(0.0, 1.0, 0.2).normalize(),
    );
    j2.limit = limit;
    if spring {
        j2.spring = Some(JointSpring {
            k: 300.0,
            alpha1: 0.3,
            alpha2: 0.7,
            l1: 0.1,
            l2: 0.05,
            x_rest: 0.08,
            sign: 1.0,
            literal: false,
        });
    }
    b.add_joint(j2);
    let mut j3 = JointDesc::hinge("j3", l2, l3, Vec3::new(0.12, 0.0, 0.01), Vec3::new(0.0, 0.0, 0.08), Vec3::x());
    j3.frame_child = Quat::from_rpy(0.0, -std::f64::consts::FRAC_PI_2, 0.0);
    j3.frame_parent = Quat::from_rpy(0.0, -std::f64::consts::FRAC_PI_2, 0.0);
    b.add_joint(j3);
    b.build().unwrap()
}

/// A moving state: joint positions q, then body velocities consistent-ish with a rigid motion.
pub fn moving_state(m: &Model, q: &[f64], spin: f64) -> MaximalState {
    let mut s = m.state_at(q).unwrap();
    for k in m.dynamic_bodies() {
        s.w[k] = Vec3::new(0.3 * spin, -0.5 * spin, 0.7 * spin) * (k as f64);
        s.v[k] = Vec3::new(0.1, 0.2, -0.1) * (k as f64) * spin;
    }
    s
}

/// Deterministic pseudo-random numbers in [-1, 1].
pub fn rng(seed: u64) -> impl FnMut() -> f64 {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15).wrapping_add(1);
    move || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }
}

/// A world and `n` free cubes of half-extent `he` (body k + 1, joint `free{k}`), box k of mass `mass(k)`.
pub fn free_boxes(n: usize, gravity: Vec3, dt: f64, he: f64, mass: impl Fn(usize) -> f64) -> Model {
    let mut b = ModelBuilder::new("boxes").gravity(gravity).dt(dt);
    let w = b.add_fixed_body("world", Vec3::zeros(), Quat::identity());
    for k in 0..n {
        let m = mass(k);
        add_free_body(&mut b, w, &format!("box{k}"), &format!("free{k}"), m, box_inertia(m, he));
    }
    b.build().unwrap()
}

/// Inertia of a solid cube of mass `m` and half-extent `he` about its centre.
pub fn box_inertia(m: f64, he: f64) -> Mat3 {
    Mat3::from_diagonal_element(m * (2.0 * he) * (2.0 * he) / 6.0)
}

/// A body attached to `world` by a free joint.
pub fn add_free_body(b: &mut ModelBuilder, world: usize, name: &str, joint: &str, mass: f64, inertia: Mat3) -> usize {
    let body = b.add_body(name, mass, inertia);
    let mut j = JointDesc::hinge(joint, world, body, Vec3::zeros(), Vec3::zeros(), Vec3::z());
    j.kind = JointType::Free;
    b.add_joint(j);
    body
}

/// A contact of body `body` with the world plane z = 0 at `p` (normal +z, tangents x, y, distance p.z).
pub fn floor_frame(body: usize, p: Vec3, mu: f64, restitution: f64, id: u64) -> ContactFrame {
    ContactFrame::new(
        ContactGeom {
            body_a: body,
            body_b: 0,
            point: p,
            normal: Vec3::z(),
            tangents: [Vec3::x(), Vec3::y()],
            distance: p.z,
            mu,
            restitution,
        },
        id,
    )
}

/// Central differences (step 1e-7) of `f(model with the selected parameters θ + d)` w.r.t. d.
pub fn fd_params(m: &Model, sel: &ParamSelection, f: impl Fn(&Model) -> Vec<f64>) -> DMatrix<f64> {
    // the selection's values (any selection, not only `all`)
    let theta = m.params_get(sel);
    torsion_diff::fd_jacobian(
        |d| {
            let mut mm = m.clone();
            let th: Vec<f64> = theta.iter().zip(d).map(|(a, b)| a + b).collect();
            mm.params_set(sel, &th).unwrap();
            f(&mm)
        },
        sel.len(),
        1e-7,
    )
}
