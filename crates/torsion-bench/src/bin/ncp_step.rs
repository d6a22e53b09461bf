//! One contact step (collision detection + staggered projections, spec 001 Alg. 1, default options: 10 passes,
//! exact cone) timed per call for BENCHMARKS.md "Contact step": a cube resting / sliding on a plane, and 20 boxes
//! dropped in a jumbled stack, and in 4 stacks of 5 (4 independent contact islands; also timed with the islands
//! not split) (timed after 100 settling steps, so most contacts are active). Single thread, median
//! of batches. The landing cube (1 m/s down, touching) is timed at its impact step: with ε = 0.5 a step makes the
//! impact solve before the step's (docs/decisions.md row 9a). Usage: cargo run --release -p torsion-bench --bin ncp_step [-- --no-polish]
use serde_json::json;
use std::time::Instant;
use torsion_model::io::mjcf::load_mjcf_str;
use torsion_model::Control;
use torsion_solvers::ncp::NcpSolver;
use torsion_solvers::GenState;
use torsion_solvers::Solver;

/// n boxes in `stacks` leaning columns 1 m apart
fn scene(n: usize, stacks: usize) -> String {
    let mut bodies = String::new();
    let per = n / stacks;
    for i in 0..n {
        // a leaning column: each box offset and turned a little
        let (s, k) = (i / per, i % per);
        let (x, y, z) = (0.03 * (k % 3) as f64 + s as f64, -0.02 * (k % 2) as f64, 0.11 + 0.21 * k as f64);
        bodies += &format!(
            r#"<body pos="{x} {y} {z}" euler="0 0 {}"><freejoint/><geom type="box" size="0.1 0.1 0.1" mass="1" friction="0.5"/></body>"#,
            0.3 * k as f64
        );
    }
    format!(
        r#"<mujoco><option timestep="0.005" gravity="0 0 -9.81"/><worldbody><geom type="plane" size="10 10 0.1" friction="0.5"/>{bodies}</worldbody></mujoco>"#
    )
}

fn main() {
    let polish = !std::env::args().any(|a| a == "--no-polish");
    let mut solver = NcpSolver::default();
    solver.options.admm.polish = polish;
    let mut out = vec![];
    for (name, n, stacks, vx, settle, split) in [
        ("cube resting", 1usize, 1usize, 0.0, 50usize, true),
        ("cube sliding", 1, 1, 2.0, 0, true),
        ("cube landing at 1 m/s, ε = 0", 1, 1, -1.0, 0, true),
        ("cube landing at 1 m/s, ε = 0.5 (impact solve)", 1, 1, -1.0, 0, true),
        ("cube resting, ε = 0.5", 1, 1, 0.0, 50, true),
        ("20 boxes, jumbled stack", 20, 1, 0.0, 100, true),
        ("20 boxes, 4 stacks of 5", 20, 4, 0.0, 100, true),
        ("20 boxes, 4 stacks of 5, islands not split", 20, 4, 0.0, 100, false),
    ] {
        let mut m = load_mjcf_str(&scene(n, stacks), "scene.xml", None).unwrap();
        if name.contains("ε = 0.5") {
            m.shapes.iter_mut().for_each(|s| s.restitution = 0.5);
        }
        let mut ws = solver.workspace(&m).unwrap();
        ws.ncp.split_islands = split;
        let mut s = GenState::new(m.qpos0.clone(), vec![0.0; m.nv()]);
        if n == 1 {
            s.q[2] = 0.0999;
            // landing: straight down (the free joint's linear velocity, body frame = world at identity)
            if vx < 0.0 {
                s.v[5] = vx;
            } else {
                s.v[3] = vx;
            }
        }
        let u = Control::from_torques(&vec![0.0; m.nv()]);
        let mut next = s.clone();
        for _ in 0..settle {
            solver.step(&m, &s, &u, 0.005, &mut next, &mut ws, None).unwrap();
            std::mem::swap(&mut s, &mut next);
        }
        solver.step(&m, &s, &u, 0.005, &mut next, &mut ws, None).unwrap();
        let contacts = ws.frames.len();
        let mut v: Vec<f64> = (0..15)
            .map(|_| {
                let t = Instant::now();
                let reps = if n == 1 { 400 } else { 10 };
                for _ in 0..reps {
                    solver.step(&m, &s, &u, 0.005, &mut next, &mut ws, None).unwrap();
                }
                t.elapsed().as_secs_f64() * 1e6 / reps as f64
            })
            .collect();
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let t = Instant::now();
        let mut w2 = solver.workspace(&m).unwrap();
        let reps = if n == 1 { 400 } else { 10 };
        for _ in 0..reps {
            solver.detect(&m, &mut w2, &s.q, &s.warm).unwrap();
        }
        let detect_us = t.elapsed().as_secs_f64() * 1e6 / reps as f64;
        let r = &ws.report;
        out.push(json!({
            "scene": name, "polish": polish, "bodies": n, "islands_split": split, "nv": m.nv(), "contacts": contacts, "step_us": v[7], "detect_us": detect_us,
            "impact_solve": r.impact.is_some(), "passes": r.qp.len(), "qp_iterations_mean": r.qp.iter().map(|i| i.iterations).sum::<usize>() as f64 / r.qp.len().max(1) as f64,
            "qcqp_iterations_mean": r.qcqp.iter().map(|i| i.iterations).sum::<usize>() as f64 / r.qcqp.len().max(1) as f64,
            "residuals": {"signorini": r.residuals.signorini, "cone": r.residuals.cone, "mdp_sliding": r.residuals.mdp_sliding, "mdp_sticking": r.residuals.mdp_sticking},
        }));
    }
    println!("{}", serde_json::to_string_pretty(&json!({ "ncp_step": out })).unwrap());
}
