"""SUPERball steps and one contact identification vs MuJoCo, in one run (BENCHMARKS.md "Tensegrity: SUPERball vs
MuJoCo", issue 16 item 8).

Builds and runs crates/torsion-bench/src/bin/tensegrity.rs (torsion: per-step time of 2000-step rollouts in the air
and rolling, and the 1-throw contact fit of `tensegrity-contact-id` with its wall time and residual evaluations),
then times MuJoCo on the same MJCF files, single thread:
  * air: superball_air.xml, the same 2000 seeded 1 ms controls from qpos0; rolling: superball.xml from the first
    test throw's state (tests/data/tensegrity/throw_quick.npz), zero controls; per step through mujoco.rollout
    (C loop, one call for the 2000 steps; wall time and the thread's CPU time, `time.thread_time`) and a Python
    loop of mj_step; the ratios by wall time (`*_ratio`) and by CPU time (`*_ratio_cpu`, against the binary's
    `*_cpu_us`: what a loaded machine inflates least);
  * the same fit by finite differences over MuJoCo: the one-step residuals of the same pairs (every `stride`-th
    step of throw_train) by mj_step from each ground-truth state, and their Jacobian w.r.t. 5 contact parameters
    (geom friction: sliding, torsional, rolling; solref: time constant, damping ratio) by central differences
    (10 more steps per pair) — priced at the fit's own numbers of Jacobian and trial evaluations. Each batch of pairs
    goes through mujoco.rollout (nstep = 1, the C loop) per parameter setting.
Usage: python3 bench/tensegrity_mujoco.py [--repeats N] [--stride S] [--profile release|test]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import mujoco
import numpy as np
from mujoco import rollout

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench", "tensegrity"))
import gt  # noqa: E402  (the ground truth generator: model paths, controls, XorShift)

FULL = mujoco.mjtState.mjSTATE_FULLPHYSICS


def state_of(m, d):
    s = np.zeros(mujoco.mj_stateSize(m, FULL))
    mujoco.mj_getState(m, d, s, FULL)
    return s


def time_mujoco(m, qpos, qvel, ctrl, repeats):
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = qpos, qvel
    mujoco.mj_forward(m, d)
    s0 = state_of(m, d)[None, :]
    steps = ctrl.shape[0]
    c = ctrl[None, :, :]
    rollout.rollout(m, d, s0, c)
    vals, cpu = [], []
    for _ in range(repeats):
        t, tc = time.perf_counter(), time.thread_time()
        rollout.rollout(m, d, s0, c)
        vals.append((time.perf_counter() - t) * 1e6 / steps)
        cpu.append((time.thread_time() - tc) * 1e6 / steps)
    roll, roll_cpu = statistics.median(vals), statistics.median(cpu)
    vals = []
    for _ in range(max(3, repeats // 3)):
        mujoco.mj_setState(m, d, s0[0], FULL)
        t = time.perf_counter()
        for k in range(steps):
            d.ctrl[:] = ctrl[k]
            mujoco.mj_step(m, d)
        vals.append((time.perf_counter() - t) * 1e6 / steps)
    return roll, statistics.median(vals), roll_cpu


def fd_fit_cost(stride, fit, repeats):
    """Seconds for the fit's Jacobian and trial evaluations by central FD over MuJoCo (module doc)."""
    m = mujoco.MjModel.from_xml_path(gt.BALL)
    tr = np.load(os.path.join(ROOT, "bench", "tensegrity", "data", "throw_train.npz"))
    d = mujoco.MjData(m)
    states = []
    for t in range(0, tr["qpos"].shape[0] - 1, stride):
        d.qpos[:], d.qvel[:], d.act[:] = tr["qpos"][t], tr["qvel"][t], tr["act"][t]
        mujoco.mj_forward(m, d)
        states.append(state_of(m, d))
    s0 = np.array(states)
    ctrl = np.zeros((len(states), 1, m.nu))
    base = (m.geom_friction.copy(), m.geom_solref.copy())

    def perturbed(k, h):
        m.geom_friction[:], m.geom_solref[:] = base
        if k < 3:
            m.geom_friction[:, k] += h
        else:
            m.geom_solref[:, k - 3] += h
        out = rollout.rollout(m, d, s0, ctrl)
        m.geom_friction[:], m.geom_solref[:] = base
        return out

    def jacobian():
        rollout.rollout(m, d, s0, ctrl)
        for k in range(5):
            for h in (1e-6, -1e-6):
                perturbed(k, h)

    jacobian()
    tj = statistics.median([timed(jacobian) for _ in range(max(3, repeats // 3))])
    tt = statistics.median([timed(lambda: rollout.rollout(m, d, s0, ctrl)) for _ in range(max(3, repeats // 3))])
    # priced at the C loop's own cost per step (`tt` / pairs): the binding's first rollout after a model change is
    # ~20x slower (measured), which `jacobian_s` includes
    steps = (11 * fit["jac_evals"] + fit["trial_evals"]) * len(states)
    total = steps * tt / len(states)
    return dict(pairs=len(states), jacobian_s=tj, trial_s=tt, mj_steps=steps, step_us=tt / len(states) * 1e6,
                total_s=total, total_s_through_binding=fit["jac_evals"] * tj + fit["trial_evals"] * tt)


def timed(f):
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=11)
    ap.add_argument("--stride", type=int, default=5)
    ap.add_argument("--profile", default="release", help="cargo profile of the torsion binary (release, or test: "
                    "opt-level 2 without LTO, when a release build is too slow to make)")
    a = ap.parse_args(argv)
    load = os.getloadavg()
    subprocess.run(["cargo", "build", "--profile", a.profile, "-q", "-p", "torsion-bench", "--bin", "tensegrity"],
                   cwd=ROOT, check=True)
    exe = os.path.join(ROOT, "target", "release" if a.profile == "release" else "debug", "tensegrity")
    ours = json.loads(subprocess.run(["taskset", "-c", "0", exe, "--repeats", str(a.repeats), "--stride",
                                      str(a.stride)], capture_output=True, text=True, check=True).stdout)
    os.sched_setaffinity(0, {0})
    air = mujoco.MjModel.from_xml_path(gt.AIR)
    ctrl = gt.controls(air, ours["steps"], 1, gt.SEED_TRAIN)
    air_roll, air_py, air_cpu = time_mujoco(air, air.qpos0, np.zeros(air.nv), ctrl, a.repeats)
    ball = mujoco.MjModel.from_xml_path(gt.BALL)
    z = np.load(os.path.join(ROOT, "tests", "data", "tensegrity", "throw_quick.npz"))
    ball_roll, ball_py, ball_cpu = time_mujoco(ball, z["test_qpos0"][0], z["test_qvel0"][0], np.zeros((ours["steps"], ball.nu)),
                                     a.repeats)
    res = dict(ours=ours, mujoco=dict(air_rollout_us=air_roll, air_pyloop_us=air_py, roll_rollout_us=ball_roll,
                                      roll_pyloop_us=ball_py, air_rollout_cpu_us=air_cpu,
                                      roll_rollout_cpu_us=ball_cpu, version=mujoco.__version__),
               load_before=load, load_after=os.getloadavg(), profile=a.profile)
    res["air_ratio"] = min(air_roll, air_py) / ours["air_step_us"]
    res["roll_ratio"] = min(ball_roll, ball_py) / ours["roll_step_us"]
    # the same by CPU time (this thread's: what a loaded machine inflates least; the C loop runs in this thread)
    res["air_ratio_cpu"] = air_cpu / ours["air_step_cpu_us"]
    res["roll_ratio_cpu"] = ball_cpu / ours["roll_step_cpu_us"]
    if "wall_s" in ours["fit"]:
        res["fd_fit"] = fd_fit_cost(a.stride, ours["fit"], a.repeats)
        res["fit_ratio"] = res["fd_fit"]["total_s"] / ours["fit"]["wall_s"]
    print(json.dumps(res, indent=1))
    os.makedirs(os.path.join(ROOT, "target", "bench"), exist_ok=True)
    with open(os.path.join(ROOT, "target", "bench", "tensegrity.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
