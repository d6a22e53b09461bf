//! The torsion side of `bench/contact_scaling.py` (issue 15; BENCHMARKS.md "Contact scaling") without the Python
//! extension: the same MJCF scenes (a floor and N free 0.2 m boxes, 1 kg, μ 0.5, Δt 5 ms; on a grid 0.5 m apart,
//! or in columns of 5), stepped by `NcpSolver` defaults through the `Solver` trait in a Rust loop, one workspace
//! per scene: "drop" = steps 0–100, "rest" = steps 100–300, per-step time = phase wall time / steps, median of
//! `--repeats`. Also the growth slope of the rest-phase time vs N (log-log least squares), the final state's
//! checksum (to compare builds bit for bit) and, per scene, one rest step's `step_vjp` (recorded step, all state
//! and control gradients, by reverse mode; also by the forward Jacobians, `step_vjp_forward_us`) and `step_jacobians_into`. Usage: cargo run --release -p torsion-bench --bin contact_scaling -- [--repeats N]
//! [--sizes 1,5,10,20,50] [--layouts grid,stacks] [--vjp-max 10] [--compare] (`--compare`: also the step without
//! the direct solve of issue 15 item 3, `config`, interleaved scene by scene; the rows name their configuration;
//! each row counts the passes, the direct solves and their fallbacks per phase)
use serde_json::json;
use std::time::Instant;
use torsion_bench::{loglog_slope as slope, median};
use torsion_model::io::mjcf::load_mjcf_str;
use torsion_model::{Control, Model, ParamSelection};
use torsion_solvers::ncp::{NcpOptions, NcpSolver};
use torsion_solvers::{DiffSolver, GenState, Solver, StepJacobians};

const H: f64 = 0.1;
const DT: f64 = 0.005;
const DROP: usize = 100;
const REST: usize = 200;

/// The scene of bench/contact_scaling.py (`scene_xml`).
fn scene_xml(n: usize, layout: &str) -> String {
    let mut bodies = vec![];
    if layout == "grid" {
        let side = (n as f64).sqrt().ceil() as usize;
        for i in 0..n {
            bodies.push((0.5 * (i % side) as f64, 0.5 * (i / side) as f64, H + 0.02));
        }
    } else {
        for c in 0..(n / 5).max(1) {
            for k in 0..5 {
                bodies.push((0.5 * c as f64, 0.0, H + k as f64 * (2.0 * H + 0.001) + 0.001));
            }
        }
    }
    let body_xml: String = bodies
        .iter()
        .enumerate()
        .map(|(i, (x, y, z))| {
            format!(
                r#"<body name="b{i}" pos="{x} {y} {z}"><freejoint/><geom type="box" size="{H} {H} {H}" mass="1" friction="0.5 0 0"/></body>"#
            )
        })
        .collect();
    format!(
        r#"<mujoco model="boxes_{layout}_{n}"><option timestep="{DT}" gravity="0 0 -9.81" cone="elliptic" integrator="Euler"/>
        <worldbody><geom name="floor" type="plane" size="50 50 0.1" friction="0.5 0 0"/>{body_xml}</worldbody></mujoco>"#
    )
}

/// What `roll` counts over its steps: staggered passes, island solves answered by the direct solve and those
/// where it was rejected (`StepInfo::fallbacks`).
#[derive(Default, Clone, Copy)]
struct Counts {
    passes: usize,
    direct: usize,
    fallbacks: usize,
}

/// Steps `steps` times from `s` (one workspace), returning the final state and the counts.
fn roll(
    solver: &NcpSolver,
    m: &Model,
    ws: &mut <NcpSolver as Solver>::Workspace,
    s: &GenState,
    steps: usize,
) -> (GenState, Counts) {
    let u = Control::from_torques(&vec![0.0; m.nv()]);
    let (mut a, mut b) = (s.clone(), s.clone());
    let mut c = Counts::default();
    for _ in 0..steps {
        let info = solver.step(m, &a, &u, DT, &mut b, ws, None).expect("step");
        c.passes += info.iterations;
        c.fallbacks += info.fallbacks;
        c.direct += ws.report.direct;
        std::mem::swap(&mut a, &mut b);
    }
    (a, c)
}

/// The solver and workspace of a configuration: "after" = `NcpSolver` defaults, "before" = the same without the
/// direct solve (`NcpOptions::direct` off: the ADMM passes with the per-island residual stop, session 5's step).
fn config(name: &str, m: &Model) -> (NcpSolver, <NcpSolver as Solver>::Workspace) {
    let mut o = NcpOptions::default();
    if name == "before" {
        o.direct = false;
    }
    let solver = NcpSolver::new(o);
    let ws = solver.workspace(m).expect("workspace");
    (solver, ws)
}

fn arg<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).map(|s| s.as_str())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let repeats: usize = arg(&args, "--repeats").map_or(3, |s| s.parse().expect("--repeats N"));
    let sizes: Vec<usize> =
        arg(&args, "--sizes").unwrap_or("1,5,10,20,50").split(',').map(|s| s.parse().expect("--sizes 1,5,…")).collect();
    let layouts: Vec<&str> = arg(&args, "--layouts").unwrap_or("grid,stacks").split(',').collect();
    // step_vjp / step_jacobians: 3 n_max dual passes (n_max: the largest component's DoFs), each over every contact
    let vjp_max: usize = arg(&args, "--vjp-max").map_or(10, |s| s.parse().expect("--vjp-max N"));
    // --compare: "before" and "after" interleaved scene by scene (one binary, one run)
    let configs: Vec<&str> =
        if args.iter().any(|a| a == "--compare") { vec!["before", "after"] } else { vec!["after"] };
    let mut rows = vec![];
    let mut slopes = serde_json::Map::new();
    for layout in &layouts {
        let mut rest_times: Vec<Vec<f64>> = vec![vec![]; configs.len()];
        for &n in &sizes {
            let m = load_mjcf_str(&scene_xml(n, layout), "scene.xml", None).expect("scene");
            for (ci, name) in configs.iter().enumerate() {
                let (solver, mut ws) = config(name, &m);
                let s0 = GenState::new(m.qpos0.clone(), vec![0.0; m.nv()]);
                let (sr, drop_counts) = roll(&solver, &m, &mut ws, &s0, DROP);
                let (end, rest_counts) = roll(&solver, &m, &mut ws, &sr, REST);
                let (mut td, mut tr) = (vec![], vec![]);
                for _ in 0..repeats {
                    let t = Instant::now();
                    roll(&solver, &m, &mut ws, &s0, DROP);
                    td.push(t.elapsed().as_secs_f64() * 1e6 / DROP as f64);
                    let t = Instant::now();
                    roll(&solver, &m, &mut ws, &sr, REST);
                    tr.push(t.elapsed().as_secs_f64() * 1e6 / REST as f64);
                }
                let (drop_us, rest_us) = (median(&td), median(&tr));
                rest_times[ci].push(rest_us);
                let checksum: f64 =
                    end.q.iter().chain(&end.v).enumerate().map(|(i, x)| x * (1.0 + 1e-3 * i as f64)).sum();
                let zmin = (0..n).map(|b| end.q[7 * b + 2]).fold(f64::INFINITY, f64::min);
                let mut row = json!({
                    "config": name, "layout": layout, "n": n, "nv": m.nv(), "contacts": ws.frames.len(),
                    "drop_us": drop_us, "rest_us": rest_us,
                    "drop_passes_per_step": drop_counts.passes as f64 / DROP as f64,
                    "rest_passes_per_step": rest_counts.passes as f64 / REST as f64,
                    "drop_direct_per_step": drop_counts.direct as f64 / DROP as f64,
                    "rest_direct_per_step": rest_counts.direct as f64 / REST as f64,
                    "drop_fallbacks": drop_counts.fallbacks, "rest_fallbacks": rest_counts.fallbacks,
                    "final_checksum": format!("{checksum:.17e}"), "final_lowest_z": zmin,
                });
                if n <= vjp_max {
                    let u = Control::from_torques(&vec![0.0; m.nv()]);
                    let mut rec = solver.record(&m);
                    let mut out = sr.clone();
                    solver.step(&m, &sr, &u, DT, &mut out, &mut ws, Some(&mut rec)).expect("step");
                    let g = GenState::new(vec![0.0; m.nq()], vec![1.0; m.nv()]);
                    let (mut gs, mut gu, mut gth) = (sr.clone(), vec![0.0; m.nv()], vec![]);
                    let sel = ParamSelection::none();
                    // reverse mode (the default) and the forward Jacobians' product (`set_reverse_vjp(false)`:
                    // session 7's step_vjp), interleaved; then the workspace Jacobians
                    let (mut tv, mut tf, mut tj) = (vec![], vec![], vec![]);
                    let mut jac = StepJacobians::for_solver(&solver, &m, &sel);
                    for _ in 0..repeats {
                        for (reverse, t) in [(true, &mut tv), (false, &mut tf)] {
                            ws.ncp.set_reverse_vjp(reverse);
                            let t0 = Instant::now();
                            solver.step_vjp(&m, &rec, &g, &mut gs, &mut gu, &sel, &mut gth, &mut ws).expect("vjp");
                            t.push(t0.elapsed().as_secs_f64() * 1e6);
                        }
                        ws.ncp.set_reverse_vjp(true);
                        let t0 = Instant::now();
                        solver.step_jacobians_into(&m, &sr, &u, DT, &sel, &mut ws, &mut jac).expect("jacobians");
                        tj.push(t0.elapsed().as_secs_f64() * 1e6);
                    }
                    row["step_vjp_us"] = json!(median(&tv));
                    row["step_vjp_forward_us"] = json!(median(&tf));
                    row["step_jacobians_us"] = json!(median(&tj));
                    row["tangent_passes"] = json!(ws.ncp.tangent_passes());
                }
                eprintln!("{row}");
                rows.push(row);
            }
        }
        if sizes.len() > 1 {
            let ns: Vec<f64> = sizes.iter().map(|&n| n as f64).collect();
            for (ci, name) in configs.iter().enumerate() {
                slopes.insert(format!("{layout} {name}"), json!(slope(&ns, &rest_times[ci])));
            }
        }
    }
    println!("{}", serde_json::to_string_pretty(&json!({ "contact_scaling": rows, "rest_slope": slopes })).unwrap());
}
