//! Featherstone parameter gradients on the Panda (example-robot-data, 7-DoF chain), for BENCHMARKS.md
//! "Featherstone reverse-mode parameter gradients" (issue 14 item 1): per step, release, one thread,
//!   * `step`: `Solver::step` with the workspace reused, no record, and with a record (a tape's forward step);
//!   * the kernels inside: the step's ABA, the reverse step's λ solve and inverse-dynamics reverse sweep;
//!   * `step_vjp` with k = 0, 7 (masses), 49 (masses + COM inertias), 70 (the first 70 dynamics parameters:
//!     masses, inertias, then joint anchors) and all parameters of the table, at the states of a trajectory
//!     (the record filled by an untimed `step` before each timed call);
//!   * the cost ratio (`rollout` + `rollout_vjp` with all parameters) / `rollout` over T steps, and the same
//!     with the forward pass's records kept (`rollout_tape` + `tape_vjp`, issue 14 item 7).
//!
//! Only public API (the tape rows need torsion-diff's `rollout_tape`, since issue 14 item 7). Median over `--repeats` repeats;
//! `step` and the kernels in this thread's CPU time (`cpu_time`: the shared machine's load does not stretch it), the
//! rollouts in wall and CPU time, the per-call `step_vjp` rows in wall time.
//! Usage: cargo run --release -p torsion-bench --bin featherstone_param_grad -- [--repeats N] [--steps T]
use std::hint::black_box;
use std::time::Instant;
use torsion_bench::thread_cpu_s;
use torsion_diff::{rollout, rollout_tape, rollout_vjp, tape_vjp};
use torsion_dynamics::{aba_into, DynData, DynModel};
use torsion_model::io::{example_robot_data_dir, load_urdf, robots::PANDA_URDF, UrdfOptions};
use torsion_model::{Control, Model, ParamSelection};
use torsion_solvers::{DiffSolver, FeatherstoneSolver, GenState, Solver};

fn panda() -> Model {
    let dir = example_robot_data_dir().expect("example-robot-data (pip install example-robot-data)");
    let opts = UrdfOptions { root: Some("panda_link0".into()), tip: Some("panda_link8".into()), drop_off_chain: true };
    load_urdf(&dir.join(PANDA_URDF), &opts).unwrap()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// Per-step cost of the dynamics kernels the step and its reverse step are made of (public torsion-dynamics API,
/// the model's own parameters, at the trajectory's states): the step's ABA (`aba_into`: kinematics + 3 sweeps), the
/// reverse step's λ solve on the kept factorization (`aba_solve_factored_into`) and its inverse-dynamics reverse
/// sweep (`regressor_vjp_into`: kinematics, RNEA forward, the sweep for q, v and every π).
fn breakdown(dm: &DynModel<f64>, states: &[GenState], us: &[Control], repeats: usize) {
    use torsion_dynamics::aba::aba_solve_factored_into;
    use torsion_dynamics::regressor::{regressor_vjp_into, RneaAdjoint};
    let (n, nv) = (us.len(), dm.nv);
    let mut d = DynData::new(dm);
    let mut adj = RneaAdjoint::new(dm);
    let (mut qdd, mut lam) = (vec![0.0; nv], vec![0.0; nv]);
    let x: Vec<f64> = (0..nv).map(|i| 0.1 * (i as f64 + 1.0)).collect();
    let time = |f: &mut dyn FnMut(usize)| {
        median(
            (0..repeats)
                .map(|_| {
                    let t = thread_cpu_s();
                    for k in 0..n {
                        f(k);
                    }
                    (thread_cpu_s() - t) * 1e6 / n as f64
                })
                .collect(),
        )
    };
    let aba_us =
        time(&mut |k| aba_into(dm, &states[k].q, &states[k].v, &us[k].joint_torque, &mut d, &mut qdd).unwrap());
    let solve_us = time(&mut |k| {
        aba_into(dm, &states[k].q, &states[k].v, &us[k].joint_torque, &mut d, &mut qdd).unwrap();
        aba_solve_factored_into(dm, &mut d, &x, &mut lam).unwrap();
    }) - aba_us;
    let vjp_us = time(&mut |k| {
        regressor_vjp_into(dm, &states[k].q, &states[k].v, &qdd, &x, &mut d, &mut adj).unwrap();
    });
    black_box((&qdd, &lam, &adj.dq));
    println!("| kernel: aba_into | {aba_us:.2} µs |");
    println!("| kernel: aba_solve_factored_into | {solve_us:.2} µs |");
    println!("| kernel: regressor_vjp_into | {vjp_us:.2} µs |");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str, default: usize| {
        args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).map_or(default, |v| v.parse().unwrap())
    };
    let (repeats, t_len) = (arg("--repeats", 5), arg("--steps", 1000));
    let m = panda();
    let solver = FeatherstoneSolver::default();
    let (nq, nv, dt) = (m.nq(), m.nv(), 1e-3);
    let q0: Vec<f64> = (0..nq).map(|i| 0.3 * ((i as f64) * 1.3).sin()).collect();
    let s0 = GenState::new(q0, vec![0.0; nv]);
    // controls: gravity compensation + PD on a slow sinusoidal reference, computed in closed loop once, then
    // replayed open loop (the same trajectory; bounded motion)
    let dm = DynModel::<f64>::from_model(&m).unwrap();
    let mut dd = DynData::new(&dm);
    let mut ws0 = solver.workspace(&m).unwrap();
    let (mut s, mut next) = (s0.clone(), s0.clone());
    let mut us = Vec::with_capacity(t_len);
    for t in 0..t_len {
        let tt = t as f64 * dt;
        let g = torsion_dynamics::gravity(&dm, &s.q, &mut dd).unwrap();
        let u: Vec<f64> = (0..nv)
            .map(|i| {
                let r = s0.q[i] + 0.3 * (2.0 * tt + i as f64).sin();
                g[i] + 50.0 * (r - s.q[i]) - 5.0 * s.v[i]
            })
            .collect();
        us.push(Control::from_torques(&u));
        solver.step(&m, &s, &us[t], dt, &mut next, &mut ws0, None).unwrap();
        std::mem::swap(&mut s, &mut next);
    }
    let states = rollout(&solver, &m, &s0, &us, dt).unwrap();
    let dynamics = ParamSelection::dynamics(&m);
    let sels = [
        ("0", ParamSelection::none()),
        ("7 (masses)", ParamSelection::by_prefix(&m, "body_mass[")),
        ("49 (masses + inertias)", ParamSelection::by_prefix(&m, "body_")),
        ("70 (dynamics, first 70)", ParamSelection { indices: dynamics.indices[..70].to_vec() }),
        ("all", ParamSelection::all(&m)),
    ];
    println!(
        "Panda chain (nq = nv = {nv}, {} parameters), dt = {dt}, T = {t_len}, median of {repeats}",
        sels[4].1.len()
    );
    // step
    let mut ws = solver.workspace(&m).unwrap();
    let mut out = s0.clone();
    let step_us = median(
        (0..repeats)
            .map(|_| {
                let t = thread_cpu_s();
                for k in 0..t_len {
                    solver.step(&m, &states[k], &us[k], dt, &mut out, &mut ws, None).unwrap();
                }
                (thread_cpu_s() - t) * 1e6 / t_len as f64
            })
            .collect(),
    );
    println!("| step | {step_us:.2} µs |");
    // the tape's forward step: the same with a record (inputs, q̈, v̂, q1, the ABA factorization copied)
    let mut rec = solver.record(&m);
    let step_rec_us = median(
        (0..repeats)
            .map(|_| {
                let t = thread_cpu_s();
                for k in 0..t_len {
                    solver.step(&m, &states[k], &us[k], dt, &mut out, &mut ws, Some(&mut rec)).unwrap();
                }
                (thread_cpu_s() - t) * 1e6 / t_len as f64
            })
            .collect(),
    );
    println!("| step with a record | {step_rec_us:.2} µs |");
    breakdown(&dm, &states, &us, repeats);
    let g_out = GenState::new(vec![0.1; nq], vec![0.1; nv]);
    for (name, sel) in &sels {
        let (mut gs, mut gu, mut gt) = (solver.zero_grad(&m), vec![0.0; nv], vec![0.0; sel.len()]);
        let n = t_len;
        let us_per = median(
            (0..repeats)
                .map(|_| {
                    let mut total = 0.0;
                    for k in 0..n {
                        solver.step(&m, &states[k], &us[k], dt, &mut out, &mut ws, Some(&mut rec)).unwrap();
                        let t = Instant::now();
                        solver.step_vjp(&m, &rec, &g_out, &mut gs, &mut gu, sel, &mut gt, &mut ws).unwrap();
                        total += t.elapsed().as_secs_f64();
                    }
                    total * 1e6 / n as f64
                })
                .collect(),
        );
        black_box(&gt);
        println!("| step_vjp, k = {name} | {us_per:.2} µs |");
    }
    // rollout vs rollout + rollout_vjp vs rollout_tape + tape_vjp (all parameters), loss Σ_t |q_t|² / 2; the
    // three interleaved in each repeat (a loaded machine drifts between blocks of runs)
    let all = &sels[4].1;
    let dl = |_: usize, s: &GenState, g: &mut GenState| {
        for (a, b) in g.q.iter_mut().zip(&s.q) {
            *a += b;
        }
    };
    // per repeat: wall and this thread's CPU time of each (the shared machine's load stretches the wall clock)
    let (mut w, mut c) = ([vec![], vec![], vec![]], [vec![], vec![], vec![], vec![], vec![]]);
    for _ in 0..repeats {
        let (t, c0) = (Instant::now(), thread_cpu_s());
        black_box(rollout(&solver, &m, &s0, &us, dt).unwrap());
        w[0].push(t.elapsed().as_secs_f64());
        c[0].push(thread_cpu_s() - c0);
        let (t, c0) = (Instant::now(), thread_cpu_s());
        let st = rollout(&solver, &m, &s0, &us, dt).unwrap();
        black_box(rollout_vjp(&solver, &m, &st, &us, dt, all, dl).unwrap().g_theta);
        w[1].push(t.elapsed().as_secs_f64());
        c[1].push(thread_cpu_s() - c0);
        let (t, c0) = (Instant::now(), thread_cpu_s());
        let tp = rollout_tape(&solver, &m, &s0, &us, dt).unwrap();
        let c1 = thread_cpu_s();
        black_box(tape_vjp(&solver, &m, &tp, &us, all, dl).unwrap().g_theta);
        let c2 = thread_cpu_s();
        drop(tp);
        w[2].push(t.elapsed().as_secs_f64());
        c[2].push(thread_cpu_s() - c0);
        c[3].push(c1 - c0);
        c[4].push(c2 - c1);
    }
    let [ro, both, tape] = w.map(median);
    println!(
        "| rollout, T = {t_len} | {:.2} ms | rollout + rollout_vjp (all {} parameters) | {:.2} ms | ratio {:.2} |",
        ro * 1e3,
        all.len(),
        both * 1e3,
        both / ro
    );
    println!("| rollout_tape + tape_vjp (all parameters) | {:.2} ms | ratio {:.2} |", tape * 1e3, tape / ro);
    let [ro, both, tape, fwd, bwd] = c.map(median);
    println!(
        "| CPU time: rollout {:.2} ms | + rollout_vjp {:.2} ms = {:.2} | rollout_tape + tape_vjp {:.2} ms = {:.2} \
         (rollout_tape {:.2}, tape_vjp {:.2}, tape freed {:.2}) |",
        ro * 1e3,
        both * 1e3,
        both / ro,
        tape * 1e3,
        tape / ro,
        fwd / ro,
        bwd / ro,
        (tape - fwd - bwd) / ro
    );
}
