//! `cargo bench -p torsion-collision --bench detect`: time `CollisionWorld::detect` for n = 10, 100, 1000 boxes
//! (0.2 m cubes; also 10 000) over a ground plane, resting on a grid or jumbled (random heights, orientations, overlaps),
//! with the sweep-and-prune broad phase and the naive all-pairs reference. Prints per-call µs (best of 5 runs), contacts found and
//! narrow-phase pairs; numbers go to BENCHMARKS.md.
use std::time::Instant;
use torsion_collision::{BroadPhase, CollisionOptions, CollisionWorld, Contacts};
use torsion_math::{Mat3, Quat, Vec3};
use torsion_model::builder::ModelBuilder;
use torsion_model::{Model, Shape, ShapeKind};

fn scene(n: usize) -> Model {
    let mut b = ModelBuilder::new("boxes");
    b.add_fixed_body("world", Vec3::zeros(), Quat::identity());
    for k in 0..n {
        b.add_body(&format!("box{k}"), 1.0, Mat3::identity());
    }
    let mut m = b.build().expect("model");
    let shape =
        |name: String, body: usize, kind: ShapeKind| Shape::new(name, body, kind, (Vec3::zeros(), Quat::identity()));
    m.shapes.push(shape("floor".into(), 0, ShapeKind::Plane { half_extents: [0.0, 0.0] }));
    for k in 0..n {
        m.shapes.push(shape(format!("box{k}"), k + 1, ShapeKind::Box { half_extents: Vec3::new(0.1, 0.1, 0.1) }));
    }
    m
}

fn resting(n: usize) -> Vec<(Vec3, Quat)> {
    let side = (n as f64).sqrt().ceil() as usize;
    let mut p = vec![(Vec3::zeros(), Quat::identity())];
    p.extend((0..n).map(|k| (Vec3::new(0.3 * (k % side) as f64, 0.3 * (k / side) as f64, 0.099), Quat::identity())));
    p
}

fn jumbled(n: usize) -> Vec<(Vec3, Quat)> {
    let mut s = 7u64;
    let mut rnd = || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (s >> 11) as f64 / (1u64 << 53) as f64
    };
    let side = (n as f64).sqrt().ceil() * 0.25;
    let mut p = vec![(Vec3::zeros(), Quat::identity())];
    for _ in 0..n {
        let x = Vec3::new(rnd() * side, rnd() * side, 0.09 + rnd() * 0.3);
        let axis = Vec3::new(rnd() - 0.5, rnd() - 0.5, rnd() - 0.5).normalize();
        p.push((x, Quat::from_axis_angle(&axis, rnd() * 3.0)));
    }
    p
}

/// (µs per call, contacts, narrow-phase pairs)
fn time(m: &Model, poses: &[(Vec3, Quat)], bp: BroadPhase) -> (f64, usize, usize) {
    let mut w = CollisionWorld::new(m, CollisionOptions { broad_phase: bp, ..Default::default() }).expect("world");
    let mut c = Contacts::default();
    w.detect(poses, &mut c).expect("detect"); // warm up (allocations, SAP order)
    let reps = (200_000 / poses.len()).clamp(20, 20_000);
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..reps {
            w.detect(poses, &mut c).expect("detect");
        }
        best = best.min(t.elapsed().as_secs_f64() / reps as f64);
    }
    (best * 1e6, c.len(), w.last_pair_count())
}

fn main() {
    println!("| scene | n boxes | broad phase | µs / detect | contacts | pairs to narrow phase |");
    println!("|---|---|---|---|---|---|");
    for (name, gen) in [("resting grid", resting as fn(usize) -> Vec<(Vec3, Quat)>), ("jumbled", jumbled)] {
        for n in [10, 100, 1000, 10_000] {
            let m = scene(n);
            let p = gen(n);
            for bp in [BroadPhase::SweepAndPrune, BroadPhase::AllPairs] {
                let (us, nc, np) = time(&m, &p, bp);
                println!("| {name} | {n} | {bp:?} | {us:.1} | {nc} | {np} |");
            }
        }
    }
}
