//! Jade's LCP solvers and the `lcp` step for BENCHMARKS.md "Jade: boxed-LCP solvers and the lcp step" (issue 17
//! item 8), driven by bench/jade_mujoco.py (which steps the same thin-plate scenes in MuJoCo in the same run):
//! 1. solve time of baseline Dantzig, Jade's Dantzig and PGS (default options) on random frictional LCPs with 3–6
//!    contacts (`lcp::random::random_contact_lcp`, the seeds of jade-sliding-prisms), median per solve, and each
//!    solver's validity rate on them;
//! 2. the `lcp` step (CCD on, and DCD) on the jade-thin-plate scenes (one tip per finger, 100 steps of grasp and
//!    lift at 1 N and 10 N, 0.002 m and 0.02 m): mean time per step of the rollout, median of repeats; slip and
//!    penetration as the experiment measures them.
//!
//! Writes the scenes' MJCF to target/bench/jade_thin_plate_t{t}.xml and prints one JSON object.
//! Usage: cargo run --release -p torsion-bench --bin jade_lcp [-- --repeats N]
use serde_json::json;
use std::time::Instant;
use torsion_experiments::jade_thin_plate::{control, scene, scene_xml, DT, FORCES, STEPS, THICKNESS};
use torsion_solvers::lcp::random::random_contact_lcp;
use torsion_solvers::lcp::{solve_baseline, solve_jade, solve_pgs, BoxedLcp, JadeOptions, PgsOptions};
use torsion_solvers::{GenState, LcpOptions, LcpSolver, Solver};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Median µs per solve of `f` over the LCPs (each timed over `calls` calls), and its validity rate.
fn time_solver(lcps: &[BoxedLcp], calls: usize, f: impl Fn(&BoxedLcp) -> bool) -> (f64, f64) {
    let mut t = vec![];
    let mut ok = 0;
    for l in lcps {
        ok += f(l) as usize;
        let s = Instant::now();
        for _ in 0..calls {
            std::hint::black_box(f(std::hint::black_box(l)));
        }
        t.push(s.elapsed().as_secs_f64() * 1e6 / calls as f64);
    }
    (median(t), ok as f64 / lcps.len() as f64)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let repeats = args.iter().position(|a| a == "--repeats").map_or(5, |i| args[i + 1].parse().unwrap());
    let jo = JadeOptions::default();
    let po = PgsOptions::default();
    let mut solvers = vec![];
    for contacts in 3..=6usize {
        // the seeds of jade-sliding-prisms' random set (70000 + s, 3 + s mod 4)
        let lcps: Vec<BoxedLcp> = (0..1000u64)
            .filter(|s| 3 + (s % 4) as usize == contacts)
            .map(|s| random_contact_lcp(70000 + s, contacts))
            .collect();
        let (base, base_ok) = time_solver(&lcps, 20, |l| solve_baseline(l, &jo).ok());
        let (jade, jade_ok) = time_solver(&lcps, 20, |l| solve_jade(l, &jo).ok());
        let (pgs, pgs_ok) = time_solver(&lcps, 5, |l| solve_pgs(l, &po, None).ok());
        solvers.push(json!({"contacts": contacts, "lcps": lcps.len(), "lcp_size": 3 * contacts,
            "baseline_dantzig_us": base, "jade_dantzig_us": jade, "pgs_us": pgs,
            "valid": {"baseline_dantzig": base_ok, "jade_dantzig": jade_ok, "pgs": pgs_ok}}));
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench");
    std::fs::create_dir_all(&dir).unwrap();
    let mut steps = vec![];
    for t in THICKNESS {
        std::fs::write(dir.join(format!("jade_thin_plate_t{t}.xml")), scene_xml(t, 1)).unwrap();
        let m = scene(t, 1).unwrap();
        for f in FORCES {
            for ccd in [true, false] {
                let mut o = LcpOptions::default();
                o.ccd.enabled = ccd;
                let solver = LcpSolver::new(o);
                let mut ws = solver.workspace(&m).unwrap();
                let mut per_step = vec![];
                let (mut rise, mut base_rise, mut pen, mut failure) = (0.0, 0.0, 0f64, None);
                for _ in 0..repeats {
                    let mut s = GenState::new(m.qpos0.clone(), vec![0.0; m.nv()]);
                    let mut out = s.clone();
                    let (z0, b0) = (s.q[5], s.q[0]);
                    let mut elapsed = 0.0;
                    pen = 0.0;
                    for k in 0..STEPS {
                        let u = control(k, &s, f);
                        let st = Instant::now();
                        let r = solver.step(&m, &s, &u, DT, &mut out, &mut ws, None);
                        elapsed += st.elapsed().as_secs_f64();
                        if let Err(e) = r {
                            failure = Some(format!("step {k}: {e}"));
                            break;
                        }
                        std::mem::swap(&mut s, &mut out);
                        solver.detect(&m, &mut ws, &s.q, &s.warm).unwrap();
                        pen = pen.max(ws.frames.iter().map(|c| -c.distance).fold(0.0, f64::max));
                    }
                    per_step.push(elapsed * 1e6 / STEPS as f64);
                    rise = s.q[5] - z0;
                    base_rise = s.q[0] - b0;
                }
                steps.push(json!({"thickness_m": t, "force_n": f, "ccd": ccd, "step_us": median(per_step),
                    "plate_rise_m": rise, "slip_m": base_rise - rise, "max_penetration_m": pen, "failure": failure}));
            }
        }
    }
    println!("{}", json!({"lcp_solvers": solvers, "lcp_step_thin_plate": steps, "repeats": repeats}));
}
