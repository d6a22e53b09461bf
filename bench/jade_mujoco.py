"""Jade's LCP solvers and the lcp step vs MuJoCo on the same thin-plate scenes, in one run (BENCHMARKS.md "Jade:
boxed-LCP solvers and the lcp step", issue 17 item 8).

Builds and runs crates/torsion-bench/src/bin/jade_lcp.rs (release): solve times of baseline Dantzig, Jade's
Dantzig and PGS on random frictional LCPs with 3-6 contacts, and the lcp step (CCD and DCD) on the jade-thin-plate
grasp-and-lift (100 steps, Δt = 0.01). It writes the scenes' MJCF (target/bench/jade_thin_plate_t*.xml); MuJoCo then
steps the same XML with the same controls (applied as qfrc_applied on the base and finger dofs), its defaults
otherwise (soft contacts, pyramidal cone, Euler), single thread: time per mj_step in a Python loop (the binding's
call overhead included) and through mujoco.rollout is not used (the controls are state feedback). Slip and
penetration (min contact dist after mj_forward) as the experiment measures them.
Usage: python3 bench/jade_mujoco.py [--repeats N] [--profile release|test] [--no-build]
(--no-build: run target/<profile dir>/jade_lcp as built, without cargo; build it first with
`cargo build --release -p torsion-bench --bin jade_lcp`, which is slow on a loaded machine).
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import time

import mujoco

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
G, DT, STEPS, CLOSE = 9.81, 0.01, 100, 20
LIFTED, PLATE = 0.5 + 2 * 0.05, 0.1


def control(k, v0, f):
    force, vref = (f, 0.0) if k < CLOSE else (1.0, 0.1)
    return [LIFTED * G + (LIFTED + PLATE) * (vref - v0) / DT * 0.5, force, -force]


def mujoco_run(xml, f, repeats):
    m = mujoco.MjModel.from_xml_path(xml)
    d = mujoco.MjData(m)
    times, out = [], None
    for _ in range(repeats):
        mujoco.mj_resetData(m, d)
        mujoco.mj_forward(m, d)
        z0, b0 = d.qpos[5], d.qpos[0]
        elapsed, pen = 0.0, 0.0
        for k in range(STEPS):
            d.qfrc_applied[:3] = control(k, d.qvel[0], f)
            t = time.perf_counter()
            mujoco.mj_step(m, d)
            elapsed += time.perf_counter() - t
            mujoco.mj_forward(m, d)
            if d.ncon:
                pen = max(pen, -min(d.contact.dist[: d.ncon]))
        times.append(elapsed * 1e6 / STEPS)
        out = {"plate_rise_m": d.qpos[5] - z0, "slip_m": (d.qpos[0] - b0) - (d.qpos[5] - z0), "max_penetration_m": pen}
    out["step_us"] = statistics.median(times)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--profile", default="release", help="cargo profile of the torsion binary (release; test: opt-level 2, no LTO)")
    ap.add_argument("--no-build", action="store_true", help="run the built binary without cargo")
    a = ap.parse_args()
    env = dict(os.environ)
    cmd = ["cargo", "run", "--profile", a.profile, "-q", "-p", "torsion-bench", "--bin", "jade_lcp", "--", "--repeats", str(a.repeats)]
    if a.no_build:
        profile_dir = {"dev": "debug", "test": "debug"}.get(a.profile, a.profile)
        cmd = [os.path.join(ROOT, "target", profile_dir, "jade_lcp"), "--repeats", str(a.repeats)]
    ours = json.loads(subprocess.run(["taskset", "-c", "0"] + cmd, cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout)
    mj = []
    for t in [0.02, 0.002]:
        for f in [1.0, 10.0]:
            r = mujoco_run(os.path.join(ROOT, "target", "bench", f"jade_thin_plate_t{t}.xml"), f, a.repeats)
            mj.append({"thickness_m": t, "force_n": f, **r})
    res = {"torsion": ours, "torsion_profile": a.profile, "mujoco": mj, "loadavg": os.getloadavg(), "mujoco_version": mujoco.__version__, "python": platform.python_version(),
           "nproc": os.cpu_count(), "date": time.strftime("%Y-%m-%d")}
    # within-run ratios (the machine is shared: absolute times move with its load, ratios much less)
    res["ratios"] = {
        "jade_over_baseline": [r["jade_dantzig_us"] / r["baseline_dantzig_us"] for r in ours["lcp_solvers"]],
        "pgs_over_baseline": [r["pgs_us"] / r["baseline_dantzig_us"] for r in ours["lcp_solvers"]],
        "ccd_over_dcd": [c["step_us"] / d["step_us"] for c, d in zip(ours["lcp_step_thin_plate"][0::2], ours["lcp_step_thin_plate"][1::2])],
        "ccd_over_mujoco": [c["step_us"] / m["step_us"] for c, m in zip(ours["lcp_step_thin_plate"][0::2], mj)],
    }
    os.makedirs(os.path.join(ROOT, "target", "bench"), exist_ok=True)
    with open(os.path.join(ROOT, "target", "bench", "jade_mujoco.json"), "w") as fh:
        json.dump(res, fh, indent=1)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    os.sched_setaffinity(0, {0})
    main()
