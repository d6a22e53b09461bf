#!/usr/bin/env python3
"""The seed's QCQP solver (github.com/quentinll/diffqcqp, C++ / Eigen behind pybind11) on the spec 001 E0 family,
timed in the same run as torsion's (BENCHMARKS.md "Contact (spec 001)", issue 5 item 9).

Problems: exactly those of crates/torsion-bench/src/bin/qcqp.rs (the same xorshift stream and draw order):
4 contacts / 8 variables, P = diag(exp(U[-10, 10])), q ~ U[-1, 1]^8, lambda_n, mu ~ U[0, 1]^4 (r = mu lambda_n;
qcqp.rs draws r as the product of the two uniforms, lambda_n first), warm start ~ U[0, 1]^8, tolerance 1e-10,
the seed's defaults otherwise (mu_prox 1e-7, max_iter 1000, adaptive rho).
  * forward: solveQCQP(P, q, l_n, mu, warm_start, 1e-10, 1e-7, 1000, True), per call;
  * backward: solveDerivativesQCQP(P, q, l_n, mu, l, grad_l) for the MSE loss to a target of ones
    (grad_l = l - 1), per call; the gradient is assembled as the seed's PyTorch layer does (qcqp.py, QCQPFn2:
    grad_q = -dl, grad_P = -dl l^T, grad_l_n = E2 dgamma, grad_mu = E1 dgamma);
  * per problem the median of 9 timed batches of about 0.2 ms (qcqp.rs's rule), statistics over the family;
  * solution error vs the exact solve (P is diagonal: per contact a 1-D root, ported from
    torsion_solvers::ncp::exact), relative to max(1e-3, |z*|_inf);
  * gradient error w.r.t. (q, diag P, lambda_n, mu) vs fourth-order central differences of the exact solve
    (torsion's qcqp.rs measures w.r.t. (q, diag P, r); the same loss and the same FD rule).
Times go through the pybind11 call (numpy -> Eigen argument conversion and the returned vector's allocation
included), the way the seed's layer calls it; single thread.
With --torsion BIN (default target/release/qcqp when it exists: cargo build --release -p torsion-bench --features clarabel) the script then runs torsion's benchmark on the
same problems and prints both sides.

Building the module (nothing here builds it). Offline, without CMake, one g++ command is enough (about 2 minutes):
    pip install pybind11                      # 3.x; numpy must be installed
    git clone https://github.com/quentinll/diffqcqp && cd diffqcqp     # tested at 3ed4b47 (2023-06-14)
    g++ -O3 -DNDEBUG -DEIGEN_INITIALIZE_MATRICES_BY_NAN -shared -fPIC -std=c++14 -I/usr/include/eigen3 \
        $(python3 -m pybind11 --includes) pybindings.cpp qcqplib/Solver.cpp \
        -o diffqcqp$(python3-config --extension-suffix)
(-O3 -DNDEBUG is CMake's Release, what the repository's setup.py builds; the define is its CMakeLists'.) With
CMake instead: replace `add_subdirectory(pybind11)` in CMakeLists.txt by `find_package(pybind11 CONFIG REQUIRED)`
(the pybind11 git submodule is not needed then) and build with -DCMAKE_BUILD_TYPE=Release
-Dpybind11_DIR=$(python3 -m pybind11 --cmakedir).

Usage:  python3 bench/diffqcqp_e0.py --module-dir PATH/TO/diffqcqp [--problems N] [--torsion BIN] [--out F.json]
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

MASK = (1 << 64) - 1


class Rng:
    """xorshift64 of qcqp.rs: u() in [0, 1)."""

    def __init__(self, seed):
        self.s = seed

    def u(self):
        s = self.s
        s ^= (s << 13) & MASK
        s ^= s >> 7
        s ^= (s << 17) & MASK
        self.s = s
        return (s >> 11) / float(1 << 53)


def exact(d, q, r):
    """z* of min 1/2 z^T diag(d) z + q^T z s.t. |z_(i)| <= r_i (torsion_solvers::ncp::exact, same bisection)."""
    z = np.zeros(len(q))
    for i, ri in enumerate(r):
        d1, d2, g1, g2 = d[2 * i], d[2 * i + 1], q[2 * i], q[2 * i + 1]
        if ri <= 0.0:
            continue
        at = lambda nu: (-g1 / (d1 + nu), -g2 / (d2 + nu))
        u1, u2 = at(0.0)
        if np.hypot(u1, u2) <= ri:
            z[2 * i], z[2 * i + 1] = u1, u2
            continue
        lo, hi = 0.0, np.hypot(g1, g2) / ri
        for _ in range(2000):
            mid = 0.5 * (lo + hi)
            if mid <= lo or mid >= hi:
                break
            a, b = at(mid)
            if np.hypot(a, b) - ri > 0.0:
                lo = mid
            else:
                hi = mid
        a, b = at(0.5 * (lo + hi))
        s = ri / np.hypot(a, b)
        z[2 * i], z[2 * i + 1] = a * s, b * s
    return z


def loss(z):
    return 0.5 * float(np.sum((z - 1.0) ** 2))


def time_us(f):
    """Median per-call microseconds over 9 batches of about 0.2 ms (qcqp.rs's time_us)."""
    t = time.perf_counter()
    n = 0
    while time.perf_counter() - t < 2e-4 or n < 2:
        f()
        n += 1
    v = []
    for _ in range(9):
        t = time.perf_counter()
        for _ in range(n):
            f()
        v.append((time.perf_counter() - t) * 1e6 / n)
    return sorted(v)[4]


def stats(v):
    v = sorted(v)
    at = lambda p: v[int(round((len(v) - 1) * p))]
    return {"median": at(0.5), "p90": at(0.9), "worst": v[-1], "mean": float(np.mean(v))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--module-dir", required=True, help="folder holding the built diffqcqp*.so")
    ap.add_argument("--problems", type=int, default=300)
    ap.add_argument("--torsion", default=None, help="torsion's qcqp benchmark binary (default target/release/qcqp)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    sys.path.insert(0, os.path.abspath(a.module_dir))
    import diffqcqp  # noqa: E402

    rng = Rng(0xE0E0_1234_5678_9ABC)
    fwd, bwd, sol_err, grad_err = [], [], [], []
    for _ in range(a.problems):
        d = np.array([np.exp(20.0 * rng.u() - 10.0) for _ in range(8)])
        q = np.array([2.0 * rng.u() - 1.0 for _ in range(8)])
        ln, mu = np.zeros(4), np.zeros(4)
        for i in range(4):
            ln[i] = rng.u()
            mu[i] = rng.u()
        warm = np.array([rng.u() for _ in range(8)])
        P = np.diag(d)
        ze = exact(d, q, ln * mu)
        scale = max(1e-3, float(np.max(np.abs(ze))))

        solve = lambda: diffqcqp.solveQCQP(P, q, ln, mu, warm, 1e-10, 1e-7, 1000, True)
        z = np.asarray(solve()).ravel()
        sol_err.append(float(np.max(np.abs(z - ze))) / scale)
        fwd.append(time_us(solve))

        gl = z - 1.0
        back = lambda: diffqcqp.solveDerivativesQCQP(P, q, ln, mu, z, gl)
        e1, e2, dlg = back()
        bwd.append(time_us(back))
        dlg = np.asarray(dlg).ravel()
        dgamma, dl = dlg[:4], dlg[4:]
        an = np.concatenate([-dl, -dl * z, np.asarray(e2) @ dgamma, np.asarray(e1) @ dgamma])
        theta = np.concatenate([q, d, ln, mu])

        def at(th):
            return loss(exact(th[8:16], th[:8], th[16:20] * th[20:24]))

        fd = np.zeros(24)
        for i in range(24):
            h = 1e-4 * max(abs(theta[i]), 1e-3)
            f = []
            for s in (1.0, -1.0, 2.0, -2.0):
                t = theta.copy()
                t[i] += s * h
                f.append(at(t))
            fd[i] = (8.0 * (f[0] - f[1]) - (f[2] - f[3])) / (12.0 * h)
        grad_err.append(float(np.linalg.norm(an - fd) / max(np.linalg.norm(fd), 1e-12)))

    out = {
        "problems": a.problems,
        "diffqcqp": {
            "forward_us": stats(fwd),
            "backward_us": stats(bwd),
            "solution_rel_error": stats(sol_err),
            "gradient_rel_error": stats(grad_err),
        },
    }
    tb = a.torsion or ("target/release/qcqp" if os.path.exists("target/release/qcqp") else None)
    if tb:
        r = subprocess.run([tb, "--problems", str(a.problems)], capture_output=True, text=True, check=True)
        out["torsion"] = json.loads(r.stdout)
    try:
        out["loadavg"] = os.getloadavg()
    except OSError:
        pass
    print(json.dumps(out, indent=1))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1)
    rows = [("forward us", "forward_us"), ("backward us", "backward_us"), ("solution error", "solution_rel_error"),
            ("gradient error", "gradient_rel_error")]
    print(f"{'':16s} {'diffqcqp med / p90 / worst':>36s} {'torsion med / p90 / worst':>36s}", file=sys.stderr)
    for name, k in rows:
        s = out["diffqcqp"][k]
        line = f"{name:16s} {s['median']:10.3g} {s['p90']:10.3g} {s['worst']:10.3g}     "
        if "torsion" in out:
            t = out["torsion"][k]
            line += f"{t['median']:10.3g} {t['p90']:10.3g} {t['worst']:10.3g}"
        print(line, file=sys.stderr)


if __name__ == "__main__":
    main()
