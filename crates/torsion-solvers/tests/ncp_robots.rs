//! Contact on real URDF robots (issue 21 item 1): the whole Baxter (COLLADA collision meshes) and the Panda (STL),
//! from example-robot-data, build their collision worlds with default options (`package://` resolved above the
//! URDF), report no contact between adjacent links at their default configuration, and step under the ncp solver.
use torsion_collision::{CollisionOptions, CollisionWorld, Contacts};
use torsion_model::io::robots::{example_robot_data_dir, BAXTER_URDF, PANDA_URDF};
use torsion_model::io::{load_urdf, UrdfOptions};
use torsion_model::{Control, Model, ShapeKind};
use torsion_solvers::featherstone::GenState;
use torsion_solvers::ncp::{NcpOptions, NcpSolver};
use torsion_solvers::Solver;

fn robot(rel: &str) -> Model {
    let dir = example_robot_data_dir()
        .expect("example-robot-data not found (pip install example-robot-data or set TORSION_ROBOTS_DIR)");
    load_urdf(&dir.join(rel), &UrdfOptions::default()).unwrap()
}

/// Body pairs joined by a joint (adjacent links).
fn adjacent(m: &Model, a: usize, b: usize) -> bool {
    (0..m.joint_count()).any(|j| {
        let (p, c) = (m.joint_parent[j], m.joint_child[j]);
        (p, c) == (a, b) || (p, c) == (b, a)
    })
}

/// Collision world and contacts at the default configuration; the adjacent pairs that would touch there without
/// the URDF adjacency filter (`Model::contact_exclude`).
fn check(m: &Model, mesh_ext: &str, min_meshes: usize) -> (usize, Vec<String>) {
    let meshes = m
        .shapes
        .iter()
        .filter(|s| matches!(&s.kind, ShapeKind::Mesh { file } if file.to_ascii_lowercase().ends_with(mesh_ext)))
        .count();
    assert!(meshes >= min_meshes, "{}: {meshes} {mesh_ext} collision meshes", m.name);
    let opts = CollisionOptions { margin: 0.01, ..Default::default() };
    let mut w = CollisionWorld::new(m, opts.clone()).unwrap();
    assert!(w.warnings().is_empty(), "{:?}", w.warnings());
    assert!((0..m.shapes.len()).all(|i| w.is_collidable(i)));
    let p = m.forward_kinematics(&m.qpos0).unwrap();
    let mut c = Contacts::default();
    w.detect(&p, &mut c).unwrap();
    for k in c.iter() {
        assert!(
            !adjacent(m, k.body_a, k.body_b),
            "adjacent contact {} – {}",
            m.body_name[k.body_a],
            m.body_name[k.body_b]
        );
    }
    // the same pose without the adjacency list: adjacent links touch (what the filter removes)
    let mut raw = m.clone();
    raw.contact_exclude.clear();
    let mut w = CollisionWorld::new(&raw, opts).unwrap();
    w.detect(&p, &mut c).unwrap();
    let mut removed: Vec<String> = c
        .iter()
        .filter(|k| adjacent(m, k.body_a, k.body_b))
        .map(|k| format!("{} – {}", m.body_name[k.body_a], m.body_name[k.body_b]))
        .collect();
    removed.dedup();
    assert!(!removed.is_empty(), "{}: some adjacent links touch at the default configuration", m.name);
    (meshes, removed)
}

/// Step under the ncp solver (through the `Solver` trait) from rest at the default configuration.
fn step(m: &Model, steps: usize) -> GenState {
    let solver = NcpSolver::new(NcpOptions::default());
    let mut ws = solver.workspace(m).unwrap();
    let mut s = GenState::new(m.qpos0.clone(), vec![0.0; m.nv()]);
    let mut next = s.clone();
    let u = Control::from_torques(&vec![0.0; m.nv()]);
    for k in 0..steps {
        solver.step(m, &s, &u, 0.01, &mut next, &mut ws, None).unwrap_or_else(|e| panic!("step {k}: {e}"));
        std::mem::swap(&mut s, &mut next);
    }
    assert!(s.q.iter().chain(&s.v).all(|x| x.is_finite()));
    s
}

#[test]
fn baxter_dae_meshes_step_under_ncp() {
    let m = robot(BAXTER_URDF);
    let (meshes, removed) = check(&m, ".dae", 2); // torso and pedestal; the arms have primitives
    eprintln!("baxter: {meshes} DAE collision meshes; adjacent pairs touching without the filter: {removed:?}");
    let s = step(&m, 5);
    eprintln!("baxter after 5 steps: max |v| {}", s.v.iter().fold(0.0f64, |a, v| a.max(v.abs())));
}

#[test]
fn panda_stl_meshes_step_under_ncp() {
    let m = robot(PANDA_URDF);
    let (meshes, removed) = check(&m, ".stl", 9);
    eprintln!("panda: {meshes} STL collision meshes; adjacent pairs touching without the filter: {removed:?}");
    let s = step(&m, 5);
    eprintln!("panda after 5 steps: max |v| {}", s.v.iter().fold(0.0f64, |a, v| a.max(v.abs())));
}
