#!/usr/bin/env python3
"""One MPC optimisation iteration of pbd-mpc-torques (spec 000 §4.4): torsion vs the references of ../shared/bench.

Same problem on every side (exported by the torsion binary): the Baxter left arm at rest at the experiment's centre
pose, the first 3 torques and targets (angles, Eq. 24 world angular velocities) of the experiment's Featherstone
reference. One iteration = value + gradient w.r.t. the horizon's torques of the Eq. 26 loss:
  * 1-step loss, weights (1, 0.02, 0)      -> 7 torques;
  * 3-step loss, weights (1, 0.02, 2e-7)   -> 21 torques (summed over the 3 steps, mean over steps x joints).
  * torsion : crates/torsion-bench, binary `xpbd_mpc` (pbd_mpc::Mpc: XPBD step with records, hand-written adjoint);
  * PyTorch : $TORSION_SHARED_BENCH/pbd_torch.py's PBD.step / joint_angles, eager autograd (float64, 1 thread);
  * JAX     : $TORSION_SHARED_BENCH/pbd_jax.py's PBD.step / joint_angles, jit(value_and_grad) (float64, 1 thread).
The reference scripts are imported unchanged; only the loss (Eq. 26, as in the experiment) is written here. Every
process is pinned to one CPU (taskset -c 0) when taskset exists. The agreement of the losses and gradients is
reported. A full MPC step of the experiment is 80 (1-step) or 120 (3-step) such iterations.

Usage:  python3 bench/xpbd_mpc.py [--repeats N] [--torch-repeats N] [--jax-repeats N] [--skip-torch] [--skip-jax]
                                  [--out results.json]
Env: TORSION_SHARED_BENCH (default: ../shared/bench relative to the repository root).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def die(msg):
    print(f'xpbd_mpc.py: {msg}', file=sys.stderr)
    sys.exit(2)


def shared_bench_dir():
    d = os.path.abspath(os.environ.get('TORSION_SHARED_BENCH') or os.path.join(ROOT, '..', 'shared', 'bench'))
    if not all(os.path.isfile(os.path.join(d, f)) for f in ('pbd_torch.py', 'pbd_jax.py')):
        die(f'pbd_torch.py / pbd_jax.py not found in {d}; set TORSION_SHARED_BENCH')
    return d


def pin():
    return ['taskset', '-c', '0'] if shutil.which('taskset') else []


def run(cmd, env=None, label=''):
    print(f'[{label}] $ {" ".join(cmd)}', file=sys.stderr, flush=True)
    p = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-4000:] + p.stderr[-4000:])
        die(f'{label} failed (exit {p.returncode})')
    return p.stdout


# ---- the reference side (run in a child process: `xpbd_mpc.py --child torch|jax PROBLEM REPEATS OUT`) ----------
def child(kind, problem_path, repeats, out_path):
    with open(problem_path) as f:
        P = json.load(f)
    sys.path.insert(0, shared_bench_dir())
    res = {}
    if kind == 'torch':
        import torch
        import pbd_torch as ref
        torch.set_num_threads(1)
        T = lambda a: torch.tensor(a, dtype=torch.float64)
        sim = ref.PBD(ref.build_baxter())
        state = ([T(r) for r in P['x']], [T(r) for r in P['v']], [T(r) for r in P['q']], [T(r) for r in P['w']])
        tA, tW, uprev = T(P['target_angles']), T(P['target_omega']), T(P['u_prev'])

        def loss(U, lam):
            x, v, q, w = state
            L = 0.0
            for k in range(U.shape[0]):
                x, v, q, w = sim.step(x, v, q, w, U[k])
                p = sim.joint_angles(q)
                L = L + lam[0] * ((p - tA[k]) ** 2).sum()
                L = L + lam[1] * sum(((w[b] - tW[k][b]) ** 2).sum() for b in range(1, 8))
                L = L + lam[2] * ((U[k] - (uprev if k == 0 else U[k - 1])) ** 2).sum()
            return L / (U.shape[0] * 7)

        for name, h in (('one_step', 1), ('three_step', 3)):
            lam = P['weights'][name]
            ts = []
            for _ in range(repeats):
                U = T(P['u'][:h]).requires_grad_(True)
                t0 = time.perf_counter()
                L = loss(U, lam)
                L.backward()
                ts.append(time.perf_counter() - t0)
            res[name] = dict(s_all=ts, s_median=sorted(ts)[len(ts) // 2], loss=L.item(), grad=U.grad.flatten().tolist())
        res['version'] = torch.__version__
    else:
        import numpy as np
        import jax
        jax.config.update('jax_enable_x64', True)
        import jax.numpy as jnp
        import pbd_jax as ref
        sim = ref.PBD(ref.build_baxter(), layout='list')
        A = lambda a: jnp.asarray(np.array(a, dtype=np.float64))
        state = (tuple(A(r) for r in P['x']), tuple(A(r) for r in P['v']), tuple(A(r) for r in P['q']),
                 tuple(A(r) for r in P['w']))
        tA, tW, uprev = A(P['target_angles']), A(P['target_omega']), A(P['u_prev'])

        def make(h, lam):
            def loss(U):
                x, v, q, w = state
                L = 0.0
                for k in range(h):
                    x, v, q, w = sim.step(x, v, q, w, U[k])
                    p = sim.joint_angles(q)
                    L = L + lam[0] * jnp.sum((p - tA[k]) ** 2)
                    L = L + lam[1] * sum(jnp.sum((w[b] - tW[k][b]) ** 2) for b in range(1, 8))
                    L = L + lam[2] * jnp.sum((U[k] - (uprev if k == 0 else U[k - 1])) ** 2)
                return L / (h * 7)
            return jax.jit(jax.value_and_grad(loss))

        for name, h in (('one_step', 1), ('three_step', 3)):
            U = A(P['u'][:h])
            t0 = time.perf_counter()
            f = make(h, P['weights'][name]).lower(U).compile()
            comp = time.perf_counter() - t0
            ts = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                L, g = f(U)
                g.block_until_ready()
                ts.append(time.perf_counter() - t0)
            res[name] = dict(s_all=ts, s_median=sorted(ts)[len(ts) // 2], compile_s=comp, loss=float(L),
                             grad=np.asarray(g).flatten().tolist())
        res['version'] = jax.__version__
    with open(out_path, 'w') as f:
        json.dump(res, f)


def rel_err(a, b):
    scale = max(abs(x) for x in b)
    return max(abs(x - y) for x, y in zip(a, b)) / scale


def main():
    if len(sys.argv) > 1 and sys.argv[1] == '--child':
        return child(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--repeats', type=int, default=201)
    ap.add_argument('--torch-repeats', type=int, default=5)
    ap.add_argument('--jax-repeats', type=int, default=51)
    ap.add_argument('--skip-torch', action='store_true')
    ap.add_argument('--skip-jax', action='store_true')
    ap.add_argument('--out', default=os.path.join(ROOT, 'target', 'bench', 'xpbd_mpc.json'))
    a = ap.parse_args()
    shared_bench_dir()
    run(['cargo', 'build', '--release', '-q', '-p', 'torsion-bench', '--bin', 'xpbd_mpc'], label='torsion build')
    with tempfile.TemporaryDirectory() as tmp:
        prob = os.path.join(tmp, 'problem.json')
        ours = json.loads(run(pin() + [os.path.join(ROOT, 'target', 'release', 'xpbd_mpc'), '--repeats',
                                       str(a.repeats), '--export', prob], label='torsion'))
        refs = {}
        for kind, skip, reps in (('torch', a.skip_torch, a.torch_repeats), ('jax', a.skip_jax, a.jax_repeats)):
            if skip:
                continue
            out = os.path.join(tmp, kind + '.json')
            env = dict(os.environ, OMP_NUM_THREADS='1', XLA_FLAGS='--xla_cpu_multi_thread_eigen=false')
            run(pin() + [sys.executable, os.path.abspath(__file__), '--child', kind, prob, str(reps), out], env=env,
                label=kind)
            with open(out) as f:
                refs[kind] = json.load(f)
    table = {}
    for name in ('one_step', 'three_step'):
        row = dict(torsion_us=ours[name]['us_median'])
        for kind, r in refs.items():
            row[f'{kind}_us'] = r[name]['s_median'] * 1e6
            row[f'{kind}_ratio'] = row[f'{kind}_us'] / row['torsion_us']
            row[f'{kind}_loss_rel_diff'] = abs(r[name]['loss'] - ours[name]['loss']) / abs(ours[name]['loss'])
            row[f'{kind}_grad_rel_err'] = rel_err(ours[name]['grad'], r[name]['grad'])
            if 'compile_s' in r[name]:
                row['jax_compile_s'] = r[name]['compile_s']
        table[name] = row
    res = dict(torsion=ours, references={k: {n: {kk: vv for kk, vv in v.items() if kk != 'grad'} if isinstance(v, dict) else v
                                              for n, v in r.items()} for k, r in refs.items()}, table=table,
               loadavg=os.getloadavg())
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, 'w') as f:
        json.dump(res, f, indent=1)
    print('| MPC iteration (value + gradient) | torsion | ' + ' | '.join(refs) + ' | ratios |')
    for name, row in table.items():
        cells = [f"{row[k + '_us'] / 1e3:.3g} ms" for k in refs]
        ratios = [f"{k} / torsion {row[k + '_ratio']:,.0f}x (loss diff {row[k + '_loss_rel_diff']:.1e}, grad err {row[k + '_grad_rel_err']:.1e})" for k in refs]
        print(f"| {name} | {row['torsion_us']:.1f} us | " + ' | '.join(cells) + ' | ' + '; '.join(ratios) + ' |')
    print(f'wrote {a.out}')


if __name__ == '__main__':
    main()
