"""Python-binding overhead and batched-rollout throughput (BENCHMARKS.md "Python bindings").

1. Per-call overhead of `torsion.step` from Python (XPBD with 1 iteration: a short step, so that the step's own
   run-to-run spread does not hide the binding cost): the Python call (NumPy in, NumPy out, solver workspace cached
   per solver object) against `Solver::step` timed inside Rust with a prebuilt workspace
   (`torsion.bench_step_rust`, same model, state and control), in one run; medians of repeats.
2. Batched rollouts: `torsion.rollout_batch` (rayon over all cores, GIL released) against a Python loop of
   `torsion.rollout` over the same items; results checked equal.
Needs: pip install ./crates/torsion-py example-robot-data.   Usage: python3 bench/python_overhead.py [--repeats N]
"""
import argparse
import os
import platform
import statistics
import time

import numpy as np

import torsion


def per_call(model, solver, x, u, n):
    torsion.step(model, solver, x, u)
    t0 = time.perf_counter()
    for _ in range(n):
        torsion.step(model, solver, x, u)
    return (time.perf_counter() - t0) / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--calls", type=int, default=20000)
    args = ap.parse_args()
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"numpy {np.__version__}")
    arm = torsion.Model.two_link_arm()
    baxter = torsion.Model.baxter_left_arm()
    q_b = np.array([0.0, -0.5, 0.0, 1.0, 0.0, 0.5, 0.0])
    print("\n| model | solver | Rust step µs | Python step µs | added µs |")
    print("|---|---|---|---|---|")
    for mname, model, q in [("two-link arm", arm, np.array([0.4, -0.7])), ("Baxter left arm", baxter, q_b)]:
        solvers = [("featherstone", torsion.FeatherstoneSolver()), ("xpbd (1 it.)", torsion.XpbdSolver(iterations=1)),
                   ("xpbd (30 it.)", torsion.XpbdSolver())]
        for sname, solver in solvers:
            x = solver.initial_state(model, q)
            u = np.zeros(solver.control_dim(model))
            n = max(args.calls // 10, 1000) if "30" in sname else args.calls
            rust, py = [], []
            for _ in range(args.repeats):  # interleaved, so both see the same machine load
                rust.append(torsion.bench_step_rust(model, solver, x, u, n))
                py.append(per_call(model, solver, x, u, n))
            r, p = statistics.median(rust), statistics.median(py)
            print(f"| {mname} | {sname} | {r * 1e6:.2f} | {p * 1e6:.2f} | {(p - r) * 1e6:.2f} |")

    print("\n| batch | solver | items × steps | Python loop s | rollout_batch s | speed-up | equal |")
    print("|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    for sname, solver, b, t in [("featherstone", torsion.FeatherstoneSolver(), 256, 500),
                                ("xpbd (30 it.)", torsion.XpbdSolver(), 32, 200)]:
        x0s = np.stack([solver.initial_state(baxter, q_b + 0.1 * rng.standard_normal(7)) for _ in range(b)])
        us = 2.0 * rng.standard_normal((b, t, 7))
        loop, batch = [], []
        for _ in range(max(args.repeats // 2, 1)):
            t0 = time.perf_counter()
            seq = [torsion.rollout(baxter, solver, x0s[i], us[i]) for i in range(b)]
            t1 = time.perf_counter()
            out = torsion.rollout_batch(baxter, solver, x0s, us)
            t2 = time.perf_counter()
            loop.append(t1 - t0)
            batch.append(t2 - t1)
        equal = all(np.array_equal(out[i], seq[i]) for i in range(b))
        lo, ba = statistics.median(loop), statistics.median(batch)
        print(f"| Baxter | {sname} | {b} × {t} | {lo:.3f} | {ba:.3f} | {lo / ba:.2f}× | {equal} |")


if __name__ == "__main__":
    main()
