#!/usr/bin/env python3
"""XPBD on the Baxter left arm (spec 000 §4.7): torsion vs the references of ../shared/bench, timed in one run.

Same problem on every side: 7 links (hand lumped into the wrist), 30 Gauss-Seidel iterations, dt 0.01, no joint
limits, g = 9.8, the seeded torques U0 (100 x 7, torch.randn with seed 0).
  * torsion  : crates/torsion-bench, binary `xpbd_baxter` (Solver::step with a reused workspace; rollout +
               rollout_vjp with the hand-written adjoint), built and run by `cargo run --release`;
  * PyTorch  : $TORSION_SHARED_BENCH/pbd_torch.py, the seed's own approach (eager autograd, float64, 1 thread);
  * JAX      : $TORSION_SHARED_BENCH/pbd_jax.py, the same algorithm jit-compiled (float64, 1 thread:
               XLA_FLAGS=--xla_cpu_multi_thread_eigen=false, taskset -c 0).
Figures: forward time per step, and forward + backward of the 100-step rollout of L = sum(phi_T^2) w.r.t. all
700 torques. Every process is pinned to one CPU (taskset -c 0) when taskset exists. torsion runs twice, before
and after the references (a second's run is easily disturbed by other load on a shared machine); the table uses
the run with the lower forward + backward median and the notes give both.

Usage:  python3 bench/xpbd_baxter.py [--torch-steps N] [--torch-repeats N] [--jax-repeats N] [--repeats N]
                                     [--skip-torch] [--skip-jax] [--out results.json]
The full PyTorch run (100 steps) takes about 5 minutes and 7 GB; --torch-steps 10 times 10 steps and scales the
forward + backward figure to 100 steps (said so in the table). JAX compiles for 1-2 minutes.
Env: TORSION_SHARED_BENCH (default: ../shared/bench relative to the repository root).
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOAL_FWD_US = 45.0
GOAL_FWD_BWD_MS = 50.0
GOAL_VS_TORCH = 3000.0
GOAL_VS_JAX = 30.0


def die(msg):
    print(f'xpbd_baxter.py: {msg}', file=sys.stderr)
    sys.exit(2)


def shared_bench_dir():
    d = os.environ.get('TORSION_SHARED_BENCH') or os.path.join(ROOT, '..', 'shared', 'bench')
    d = os.path.abspath(d)
    missing = [f for f in ('pbd_torch.py', 'pbd_jax.py') if not os.path.isfile(os.path.join(d, f))]
    if missing:
        die(f'reference scripts {missing} not found in {d}; set TORSION_SHARED_BENCH to the folder holding '
            f'pbd_torch.py and pbd_jax.py (default: ../shared/bench relative to the repository root {ROOT})')
    return d


def pin():
    return ['taskset', '-c', '0'] if shutil.which('taskset') else []


def run(cmd, env=None, label=''):
    print(f'[{label}] $ {" ".join(cmd)}', file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-4000:] + p.stderr[-4000:])
        die(f'{label} failed (exit {p.returncode})')
    print(f'[{label}] done in {dt:.1f} s', file=sys.stderr, flush=True)
    return p.stdout, dt


def machine():
    cpu = 'unknown'
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('model name'):
                    cpu = line.split(':', 1)[1].strip()
                    break
    except OSError:
        pass
    def out(cmd):
        try:
            return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout.strip()
        except OSError:
            return 'n/a'
    return dict(nproc=os.cpu_count(), cpu=cpu, os=platform.platform(), python=platform.python_version(),
                rustc=out(['rustc', '--version']), date=datetime.datetime.now().astimezone().isoformat(timespec='seconds'))


def ours(repeats):
    out, _ = run(pin() + ['cargo', 'run', '--release', '-q', '-p', 'torsion-bench', '--bin', 'xpbd_baxter', '--',
                          '--repeats', str(repeats)], label='torsion')
    r = json.loads(out)
    r['_loadavg_after'] = os.getloadavg()
    return r


def torch_ref(shared, steps, repeats):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'torch.json')
        env = dict(os.environ, PBD_STEPS=str(steps), PBD_REPEATS=str(repeats), OMP_NUM_THREADS='1')
        _, wall = run(pin() + [sys.executable, os.path.join(shared, 'pbd_torch.py'), path], env=env, label='pytorch')
        with open(path) as f:
            r = json.load(f)
    r['_wall_s'] = wall
    return r


def jax_ref(shared, repeats):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'jax.json')
        env = dict(os.environ, REPEATS=str(repeats), XLA_FLAGS='--xla_cpu_multi_thread_eigen=false',
                   OMP_NUM_THREADS='1')
        _, wall = run(pin() + [sys.executable, os.path.join(shared, 'pbd_jax.py'), path], env=env, label='jax')
        with open(path) as f:
            r = json.load(f)
    r['_wall_s'] = wall
    return r


def fmt_time(s):
    if s >= 1.0:
        return f'{s:.3g} s'
    if s >= 1e-3:
        return f'{s * 1e3:.3g} ms'
    return f'{s * 1e6:.3g} µs'


def fmt_ratio(x):
    return f'{x:,.0f}×' if x >= 100 else f'{x:.3g}×'


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--repeats', type=int, default=31, help='torsion: timed repeats (median)')
    ap.add_argument('--torch-steps', type=int, default=100, help='PyTorch: rollout length (PBD_STEPS)')
    ap.add_argument('--torch-repeats', type=int, default=1, help='PyTorch: repeats (PBD_REPEATS)')
    ap.add_argument('--jax-repeats', type=int, default=5, help='JAX: repeats (REPEATS)')
    ap.add_argument('--skip-torch', action='store_true')
    ap.add_argument('--skip-jax', action='store_true')
    ap.add_argument('--out', default=os.path.join(ROOT, 'target', 'bench', 'xpbd_baxter.json'),
                    help='combined results (JSON)')
    a = ap.parse_args()
    shared = None if (a.skip_torch and a.skip_jax) else shared_bench_dir()

    m = machine()
    res = dict(machine=m, command=' '.join([os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:]),
               shared_bench=shared)
    run(['cargo', 'build', '--release', '-q', '-p', 'torsion-bench', '--bin', 'xpbd_baxter'], label='torsion build')
    runs = [ours(a.repeats)]
    if not a.skip_torch:
        res['pytorch'] = torch_ref(shared, a.torch_steps, a.torch_repeats)
    if not a.skip_jax:
        res['jax'] = jax_ref(shared, a.jax_repeats)
    runs.append(ours(a.repeats))
    res['torsion_runs'] = runs
    res['torsion'] = o = min(runs, key=lambda r: r['rollout_fwd_bwd']['ms_median'])

    # ---- figures (seconds) -------------------------------------------------------------------------------------
    T = o['settings']['steps']
    f_ours = o['forward']['us_per_step_median'] * 1e-6
    b_ours = o['rollout_fwd_bwd']['ms_median'] * 1e-3
    fwd_runs = ' / '.join(f"{r['forward']['us_per_step_median']:.1f}" for r in runs)
    bwd_runs = ' / '.join(f"{r['rollout_fwd_bwd']['ms_median']:.2f}" for r in runs)
    notes = [f'torsion ran before and after the references: forward {fwd_runs} µs per step, forward + backward '
             f'{bwd_runs} ms (medians of {a.repeats}); the table shows run {runs.index(o) + 1}.']
    t_f = t_b = j_f = j_b = None
    if 'pytorch' in res:
        p = res['pytorch']
        n = p['meta']['nsteps']
        t_f = p['forward_nograd']['ms_per_step'] * 1e-3
        t_b = p['rollout_100_fwd_bwd']['total_s'] * T / n
        if n != T:
            notes.append(f'PyTorch ran {n} steps (PBD_STEPS={n}, {a.torch_repeats} repeat(s)); its forward + '
                         f'backward of {n} steps, {fmt_time(p["rollout_100_fwd_bwd"]["total_s"])}, is scaled by '
                         f'{T}/{n} to the {T}-step figure (the tape grows linearly with the steps).')
    if 'jax' in res:
        j = res['jax']
        j_f = j['forward']['ms_per_step_scan_median'] * 1e-3
        j_b = j['rollout_100_value_and_grad']['total_s_median']
        notes.append(f'JAX forward: the jitted 100-step rollout (lax.scan) / 100; a Python loop over a jitted '
                     f'single step costs {fmt_time(j["forward"]["ms_per_step_python_loop_of_jit_step_median"] * 1e-3)}'
                     f' per step. JAX compile times (not in the figures): forward rollout '
                     f'{j["compile_s"]["forward_rollout_100"]:.1f} s, value_and_grad '
                     f'{j["compile_s"]["value_and_grad_rollout_100"]:.1f} s.')

    def cell(x):
        return '–' if x is None else fmt_time(x)

    def ratio(x, y):
        return '–' if x is None else fmt_ratio(x / y)

    lines = []
    lines.append(f'| figure (median, 1 thread) | torsion | PyTorch (eager autograd) | JAX (jit) | PyTorch / torsion '
                 f'| JAX / torsion |')
    lines.append('|---|---|---|---|---|---|')
    lines.append(f'| forward, per step | {cell(f_ours)} | {cell(t_f)} | {cell(j_f)} | {ratio(t_f, f_ours)} '
                 f'| {ratio(j_f, f_ours)} |')
    lines.append(f'| forward + backward, {T}-step rollout, ∂L/∂u (700 torques) | {cell(b_ours)} | {cell(t_b)} '
                 f'| {cell(j_b)} | {ratio(t_b, b_ours)} | {ratio(j_b, b_ours)} |')
    table = '\n'.join(lines)

    # agreement (same algorithm, same torques)
    v = o['vs_pytorch_reference']
    agree = [f'torsion vs the PyTorch reference trajectory (pbd_torch_ref.npz): final angles within '
             f'{v["final_angles_max_abs_diff_rad"]:.1e} rad, loss rel. diff {v["loss_rel_diff"]:.1e}, gradient rel. '
             f'err {v["grad_rel_err"]:.1e}; loss {o["rollout_fwd_bwd"]["loss"]:.12g}, gradient norm '
             f'{o["rollout_fwd_bwd"]["grad_norm"]:.12g}.']
    if 'pytorch' in res and res['pytorch']['meta']['nsteps'] == T:
        p = res['pytorch']['rollout_100_fwd_bwd']
        agree.append(f'PyTorch in this run: loss {p["loss"]:.12g}, gradient norm {p["grad_norm"]:.12g}.')
    if 'jax' in res and 'vs_torch' in res['jax']:
        jv = res['jax']['vs_torch']
        agree.append(f'JAX in this run: loss {res["jax"]["rollout_100_value_and_grad"]["loss"]:.12g}, gradient norm '
                     f'{res["jax"]["rollout_100_value_and_grad"]["grad_norm"]:.12g} (final angles vs torch '
                     f'{jv["final_angles_max_abs_diff"]:.1e} rad).')

    goals = [f'forward ≤ {GOAL_FWD_US:g} µs per step: {f_ours * 1e6:.1f} µs — {"met" if f_ours * 1e6 <= GOAL_FWD_US else "NOT met"}',
             f'{T}-step forward + backward ≤ {GOAL_FWD_BWD_MS:g} ms: {b_ours * 1e3:.1f} ms — '
             f'{"met" if b_ours * 1e3 <= GOAL_FWD_BWD_MS else "NOT met"}']
    if t_b is not None:
        goals.append(f'≥ {GOAL_VS_TORCH:,.0f}× PyTorch (forward + backward): {fmt_ratio(t_b / b_ours)} — '
                     f'{"met" if t_b / b_ours >= GOAL_VS_TORCH else "NOT met"}')
    if j_b is not None:
        goals.append(f'≥ {GOAL_VS_JAX:g}× JAX (forward + backward): {fmt_ratio(j_b / b_ours)} — '
                     f'{"met" if j_b / b_ours >= GOAL_VS_JAX else "NOT met"}')
    res['summary'] = dict(forward_s_per_step=dict(torsion=f_ours, pytorch=t_f, jax=j_f),
                          fwd_bwd_100_s=dict(torsion=b_ours, pytorch=t_b, jax=j_b), goals=goals, notes=notes)

    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, 'w') as f:
        json.dump(res, f, indent=1)

    print(f'## XPBD, Baxter left arm (spec 000)\n')
    print(f'{m["date"]}; {m["nproc"]} CPUs ({m["cpu"]}); {m["rustc"]}; Python {m["python"]}'
          + (f'; torch {res["pytorch"]["meta"]["torch"]}' if 'pytorch' in res else '')
          + (f'; jax {res["jax"]["meta"]["jax"]}' if 'jax' in res else '') + '\n')
    print(table + '\n')
    for n in notes:
        print(f'- {n}')
    for s in agree:
        print(f'- {s}')
    print(f'- torsion heap allocations per step: {o["forward"]["heap_allocations_per_step"]:g} (step), '
          f'{o["rollout_fwd_bwd"]["heap_allocations_per_step_with_record_and_step_vjp"]:g} (step with record + step_vjp)')
    print('\nGoals:')
    for g in goals:
        print(f'- {g}')
    print(f'\n(results: {os.path.relpath(a.out, ROOT)})')


if __name__ == '__main__':
    main()
