//! SUPERball steps and one contact identification, timed for BENCHMARKS.md "Tensegrity: SUPERball vs MuJoCo"
//! (bench/tensegrity_mujoco.py runs this and MuJoCo in one run; issue 16 item 8).
//!   * `air_step_us`: superball_air.xml (rod 0 welded, 24 cables, 24 filter actuators), a 2000-step rollout from
//!     qpos0 under the seeded 1 ms controls (`TensegrityRng` 1000, gt.py's training sequence), per step;
//!   * `roll_step_us`: superball.xml with the linear contact model (parameters `--params`, default the 1-throw
//!     fit's order of magnitude), a 2000-step rollout from the quick set's first test throw, per step;
//!   * `fit`: the 1-throw contact identification of `tensegrity-contact-id` (LM over the one-step pairs of
//!     throw_train, every `--stride`-th step, bench/tensegrity/data), its wall time, LM iterations and residual
//!     evaluations (the driver prices the same evaluations by finite differences over MuJoCo).
//!
//! Single thread; medians over `--repeats` rollouts, wall time and (`*_cpu_us`, `cpu_s`) this thread's CPU time, which a
//! loaded machine inflates much less. Writes JSON to stdout.
//! Usage: cargo run --release -p torsion-bench --bin tensegrity -- [--repeats N] [--stride S] [--only air|roll|fit]
use serde_json::json;
use std::time::Instant;
use torsion_bench::thread_cpu_s;
use torsion_experiments::tensegrity_contact_id as cid;
use torsion_experiments::tensegrity_noncontact_id::{controls, superball_air};
use torsion_model::{Control, GenState, LinearContact, Model};
use torsion_solvers::{FeatherstoneSolver, Solver};

fn arg(name: &str, default: usize) -> usize {
    let a: Vec<String> = std::env::args().collect();
    a.iter().position(|x| x == name).and_then(|i| a.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Median µs per step of `repeats` rollouts of `steps` steps from `s0` (controls row t of `ctrl`, nu per row):
/// wall time and this thread's CPU time.
fn time_rollout(m: &Model, s0: &GenState, ctrl: &[f64], steps: usize, repeats: usize) -> (f64, f64) {
    let solver = FeatherstoneSolver::default();
    let mut ws = solver.workspace(m).unwrap();
    let (nv, nu) = (m.nv(), m.nu());
    let mut u = Control::with_ctrl(&vec![0.0; nv], &vec![0.0; nu]);
    let (mut s, mut out) = (s0.clone(), s0.clone());
    let (wall, cpu): (Vec<f64>, Vec<f64>) = (0..repeats + 1)
        .map(|_| {
            s.clone_from(s0);
            let (t, c) = (Instant::now(), thread_cpu_s());
            for k in 0..steps {
                if nu > 0 {
                    u.ctrl.copy_from_slice(&ctrl[k * nu..(k + 1) * nu]);
                }
                solver.step(m, &s, &u, m.dt, &mut out, &mut ws, None).unwrap();
                std::mem::swap(&mut s, &mut out);
            }
            let per = 1e6 / steps as f64;
            (t.elapsed().as_secs_f64() * per, (thread_cpu_s() - c) * per)
        })
        .skip(1)
        .unzip();
    (median(wall), median(cpu))
}

fn main() {
    let repeats = arg("--repeats", 11);
    let stride = arg("--stride", cid::FULL_STRIDE);
    // `--only air|roll|fit`: that part alone (for profiling), the others null
    let args: Vec<String> = std::env::args().collect();
    let only = args.iter().position(|x| x == "--only").and_then(|i| args.get(i + 1)).cloned();
    let part = |p: &str| only.as_deref().is_none_or(|o| o == p);
    let steps = 2000;
    let air = superball_air().unwrap();
    let ctrl = controls(&air, steps, 1, 1000);
    let s_air = GenState::with_act(air.qpos0.clone(), vec![0.0; air.nv()], vec![0.0; air.na()]);
    let air_t = part("air").then(|| time_rollout(&air, &s_air, &ctrl, steps, repeats));
    let mut ball = cid::superball().unwrap();
    ball.tensegrity_contact = Some(LinearContact::from_array([0.5, 0.0, 0.5, 1.0, 0.005]));
    let (q0, v0) = cid::quick_test_start(&ball, 0).unwrap();
    let s_ball = GenState::with_act(q0.clone(), v0.clone(), vec![0.0; ball.na()]);
    let zeros = vec![0.0; steps * ball.nu()];
    let roll_t = part("roll").then(|| time_rollout(&ball, &s_ball, &zeros, steps, repeats));
    // one identification (1 throw): the experiment's own fit
    let solver = FeatherstoneSolver::default();
    let fit = match part("fit").then(|| cid::read_full_pairs(&ball, stride)) {
        None => json!(null),
        Some(Ok(pairs)) => {
            let pairs = pairs.first(1);
            let (t, c) = (Instant::now(), thread_cpu_s());
            let f = cid::fit(&solver, &ball, &pairs).unwrap();
            json!({"wall_s": t.elapsed().as_secs_f64(), "cpu_s": thread_cpu_s() - c, "pairs": pairs.len(), "stride": stride,
                   "lm_iterations": f.iterations, "jac_evals": f.jac_evals, "trial_evals": f.trial_evals,
                   "params": f.p, "loss_final": f.curve.last()})
        }
        Some(Err(e)) => json!({"error": e.to_string()}),
    };
    let out = json!({
        "steps": steps, "repeats": repeats,
        "air_step_us": air_t.map(|t| t.0), "roll_step_us": roll_t.map(|t| t.0),
        "air_step_cpu_us": air_t.map(|t| t.1), "roll_step_cpu_us": roll_t.map(|t| t.1),
        "roll_start": {"qpos": q0, "v": v0},
        "fit": fit,
    });
    println!("{out}");
}
