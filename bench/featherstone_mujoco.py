"""One semi-implicit Featherstone step and its transition Jacobians (A, B) vs MuJoCo's mj_step and
mjd_transitionFD, in one run (BENCHMARKS.md "Featherstone step and transition Jacobians vs MuJoCo").

Builds and runs crates/torsion-bench/src/bin/featherstone_mujoco.rs (hopper, cheetah, humanoid from the cached
dm_control suite XMLs), then times MuJoCo on the same XMLs with contacts, limits, frictionloss and equality
disabled (the dynamics torsion's stepper has), single thread, median of repeats:
  * mj_step per call at MuJoCo's own integrator setting (reported), in a Python loop (includes the binding's
    call overhead) and through mujoco.rollout (C++ loop, no per-call Python overhead);
  * mjd_transitionFD(m, d, eps=1e-6, flg_centered=False/True, A, B, None, None) per call.
Accuracy (hopper, cheetah; no free joint, so both use (qpos-tangent, qvel) coordinates): our A and B against
MuJoCo's centered FD at the same state with MuJoCo set to Euler (our B's ctrl columns: the MJCF's actuators are
loaded; a B without them is mapped through the gear, B_ctrl = B G, G[dof(trnid), a] = gear[a, 0]), and our
A/B against central/forward FD of our own step.
Usage: python3 bench/featherstone_mujoco.py [--repeats N]
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import mujoco
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUITE = os.path.join(ROOT, "target", "dm_control_suite", "1.0.50")
D = mujoco.mjtDisableBit


def load(name):
    m = mujoco.MjModel.from_xml_path(os.path.join(SUITE, f"{name}.xml"))
    m.opt.disableflags |= D.mjDSBL_CONTACT | D.mjDSBL_LIMIT | D.mjDSBL_FRICTIONLOSS | D.mjDSBL_EQUALITY
    return m


def median_us(f, repeats, calls):
    f()
    v = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(calls):
            f()
        v.append((time.perf_counter() - t) * 1e6 / calls)
    return statistics.median(v)


def set_state(m, d, q, v):
    mujoco.mj_resetData(m, d)
    d.qpos[:] = q
    d.qvel[:] = v
    d.ctrl[:] = 0
    mujoco.mj_forward(m, d)


def time_mujoco(name, q, v, repeats):
    m = load(name)
    d = mujoco.MjData(m)
    integ = mujoco.mjtIntegrator(m.opt.integrator).name
    set_state(m, d, q, v)
    qpos0, qvel0 = d.qpos.copy(), d.qvel.copy()

    def step():
        d.qpos[:] = qpos0  # keep the state near the benchmark point
        d.qvel[:] = qvel0
        mujoco.mj_step(m, d)

    def reset_only():
        d.qpos[:] = qpos0
        d.qvel[:] = qvel0

    step_py = median_us(step, repeats, 200) - median_us(reset_only, repeats, 200)
    step_rollout = None
    try:
        from mujoco import rollout

        set_state(m, d, q, v)
        nstate = mujoco.mj_stateSize(m, mujoco.mjtState.mjSTATE_FULLPHYSICS)
        s0 = np.zeros((1, nstate))
        mujoco.mj_getState(m, d, s0[0], mujoco.mjtState.mjSTATE_FULLPHYSICS)
        nstep = 200
        ctrl = np.zeros((1, nstep, m.nu))
        rollout.rollout(m, d, s0, ctrl)
        vals = []
        for _ in range(repeats):
            t = time.perf_counter()
            rollout.rollout(m, d, s0, ctrl)
            vals.append((time.perf_counter() - t) * 1e6 / nstep)
        step_rollout = statistics.median(vals)
    except Exception as e:  # noqa: BLE001 (older bindings without rollout)
        print(f"# mujoco.rollout unavailable: {e}", file=sys.stderr)
    nx, nu = 2 * m.nv + m.na, m.nu
    A = np.zeros((nx, nx))
    B = np.zeros((nx, nu))
    fd = {}
    for centered in (False, True):
        set_state(m, d, q, v)
        fd[centered] = median_us(
            lambda: mujoco.mjd_transitionFD(m, d, 1e-6, centered, A, B, None, None), max(5, repeats // 3), 20
        )
    return dict(integrator=integ, step_py=step_py, step_rollout=step_rollout, fd_fwd=fd[False], fd_cen=fd[True])


def accuracy(name, r):
    """Our A, B against MuJoCo's centered FD (Euler) at the same state."""
    m = load(name)
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    d = mujoco.MjData(m)
    set_state(m, d, np.array(r["q"]), np.array(r["v"]))
    nv = m.nv
    A = np.zeros((2 * nv, 2 * nv))
    B = np.zeros((2 * nv, m.nu))
    mujoco.mjd_transitionFD(m, d, 1e-6, True, A, B, None, None)
    # the step itself
    mujoco.mj_step(m, d)
    dstep = max(np.abs(d.qpos - r["q_next"]).max(), np.abs(d.qvel - r["v_next"]).max())
    ours_a = np.array(r["A"])
    ours_b = np.array(r["B"])
    if ours_b.shape[1] == nv + m.nu:
        ours_bc = ours_b[:, nv:]  # our B has the actuators' ctrl columns (the MJCF's <actuator>s are loaded)
    else:
        g = np.zeros((nv, m.nu))
        for a in range(m.nu):
            j = m.actuator_trnid[a, 0]
            g[m.jnt_dofadr[j], a] = m.actuator_gear[a, 0]
        ours_bc = ours_b @ g
    return dict(
        a_err=np.abs(ours_a - A).max(), b_err=np.abs(ours_bc - B).max(), a_max=np.abs(A).max(),
        b_max=np.abs(B).max(), step_err=dstep,
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=31)
    args = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "torsion-bench", "--bin", "featherstone_mujoco"],
                   cwd=ROOT, check=True)
    out = subprocess.run([os.path.join(ROOT, "target", "release", "featherstone_mujoco"), "--repeats",
                          str(args.repeats)], cwd=ROOT, check=True, capture_output=True, text=True).stdout
    ours = {r["name"]: r for r in json.loads(out)["models"]}
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    print(f"# {cpu}; mujoco {mujoco.__version__}; {time.strftime('%Y-%m-%d')}; single thread\n")
    print("| model | nv | MuJoCo integrator | ours step µs | mj_step µs (py loop / rollout) | step ratio | "
          "ours A,B µs (analytic) | ours A,B µs (all-dual) | mjd_transitionFD fwd µs | centered µs | "
          "speed-up vs fwd / centered |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    acc_rows = []
    for name, r in ours.items():
        mj = time_mujoco(name, np.array(r["q"]), np.array(r["v"]), args.repeats)
        mj_step = min(x for x in (mj["step_py"], mj["step_rollout"]) if x is not None)
        roll = f"{mj['step_rollout']:.2f}" if mj["step_rollout"] is not None else "–"
        print(f"| {name} | {r['nv']} | {mj['integrator']} | {r['step_us']:.2f} | {mj['step_py']:.2f} / {roll} | "
              f"{mj_step / r['step_us']:.1f}× faster | {r['jac_us']:.1f} | {r['jac_dual_us']:.0f} | "
              f"{mj['fd_fwd']:.1f} | {mj['fd_cen']:.1f} | {mj['fd_fwd'] / r['jac_us']:.1f}× / "
              f"{mj['fd_cen'] / r['jac_us']:.1f}× |")
        if "A" in r:
            acc_rows.append((name, accuracy(name, r), r))
        else:
            acc_rows.append((name, None, r))
    print("\n| model | step vs mj_step (Euler) max abs | A vs MuJoCo centered FD max abs (max abs A) | "
          "B (ctrl) vs MuJoCo centered FD max abs (max abs B) | ours vs own FD, forward: A / B | "
          "central: A / B | analytic vs all-dual: A / B |")
    print("|---|---|---|---|---|---|---|")
    for name, a, r in acc_rows:
        f, c, x = r["fd_forward_max_abs"], r["fd_central_max_abs"], r["analytic_vs_dual_max_abs"]
        mj = (f"{a['step_err']:.1e} | {a['a_err']:.1e} ({a['a_max']:.2f}) | {a['b_err']:.1e} ({a['b_max']:.3f})"
              if a else "– (free joint: different velocity coordinates) | – | –")
        print(f"| {name} | {mj} | {f['A']:.1e} / {f['B']:.1e} | {c['A']:.1e} / {c['B']:.1e} | "
              f"{x['A']:.1e} / {x['B']:.1e} |")
    print("\nheap allocations per step call:", {n: r["step_allocs"] for n, r in ours.items()})


if __name__ == "__main__":
    main()
