"""Cost of a trajectory-loss gradient w.r.t. model parameters (issue 14 item 7; BENCHMARKS.md "sysid cost").

Panda of example-robot-data (chain panda_link0 → panda_link8, hand welded), Featherstone, 10 s at 1 kHz: gravity
compensation + PD torques tracking the sysid-arm training references (bench/sysid/data/panda.npz, from
bench/sysid/gen.py), computed once in closed loop and replayed open loop from the recorded initial state; loss
L = Σ_t ‖q_t − q_t^data‖². Timed, median of --repeats, one process:
  * torsion `rollout` (forward) and `rollout_vjp` with k = 0, 7, 49, 70 and all parameters (`param_names` = the
    first k of `model.param_names()`: masses, inertias, joint anchors, ...), from Python (the installed `torsion`);
  * the same gradient on the forward pass's records: `rollout_tape` (the forward rollout keeping each step's
    record) + `RolloutTape.vjp` (no step re-run; issue 14 item 7);
  * one MuJoCo rollout of the same 10 s (`mujoco.rollout`, the stripped URDF of bench/sysid/panda_mj.py), and the
    forward-difference cost (k + 1) × that rollout;
  * the goal of the issue: the gradient w.r.t. all parameters ≤ 3 torsion forward rollouts, ≥ 20× cheaper than FD
    at k = 70.
Writes results/sysid_cost.json. Usage: python3 bench/sysid_cost.py [--repeats 3] [--seconds 10]
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench", "sysid"))


def timed(f, repeats):
    f()
    v = []
    for _ in range(repeats):
        t = time.perf_counter()
        out = f()
        v.append(time.perf_counter() - t)
    return statistics.median(v), out


def main():
    import mujoco
    import mujoco.rollout
    import torsion

    import panda_mj

    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=10.0)
    a = ap.parse_args()
    z = np.load(os.path.join(ROOT, "bench/sysid/data/panda.npz"))
    dt = float(z["dt"])
    n = min(int(round(a.seconds / dt)), len(z["train_t"]) - 1)
    urdf = panda_mj.panda_urdf()
    model = torsion.load_urdf(urdf, arm_root="panda_link0", arm_tip="panda_link8")
    solver = torsion.FeatherstoneSolver()
    nq = model.nq
    x0 = np.concatenate([z["train_q_true"][0], z["train_v_true"][0]])
    # controls: gravity compensation + a tenth of the servos' PD gains (explicit damping: h kv / I < 2) on the
    # sysid-arm references, computed once in closed loop with torsion's step, then replayed open loop (the same
    # bounded trajectory; MuJoCo's torques alone drift off without frictionloss)
    ref = z["train_ctrl"][:n]
    x = x0.copy()
    controls = np.zeros((n, model.nv))
    for t in range(n):
        q, v = x[:nq], x[nq:]
        controls[t] = torsion.gravity(model, q) + 0.1 * panda_mj.KP * (ref[t] - q) - 0.1 * panda_mj.KV * v
        x = torsion.step(model, solver, x, controls[t], dt=dt)
    qdata = z["train_q_true"][: n + 1]
    qdata = np.vstack([qdata, qdata[-1:]])[: n + 1]

    t_fwd, states = timed(lambda: torsion.rollout(model, solver, x0, controls, dt=dt), a.repeats)
    t_tape, tape = timed(lambda: torsion.rollout_tape(model, solver, x0, controls, dt=dt), a.repeats)
    assert np.array_equal(tape.states, states)
    g = np.zeros_like(states)
    g[:, :nq] = 2.0 * (states[:, :nq] - qdata)
    names = list(model.param_names)
    rows = []
    for k in [0, 7, 49, 70, len(names)]:
        sel = names[:k]
        t_vjp, _ = timed(lambda: torsion.rollout_vjp(model, solver, states, controls, g, param_names=sel, dt=dt),
                         a.repeats)
        t_tvjp, _ = timed(lambda: tape.vjp(g, param_names=sel), a.repeats)
        rows.append({"k": k, "rollout_vjp_s": t_vjp, "rollout_plus_vjp_s": t_fwd + t_vjp,
                     "in_forward_rollouts": (t_fwd + t_vjp) / t_fwd, "tape_vjp_s": t_tvjp,
                     "tape_plus_vjp_s": t_tape + t_tvjp, "tape_in_forward_rollouts": (t_tape + t_tvjp) / t_fwd})

    m = panda_mj.spec().compile()
    d = mujoco.MjData(m)
    state0 = np.zeros(mujoco.mj_stateSize(m, mujoco.mjtState.mjSTATE_FULLPHYSICS))
    d.qpos[:], d.qvel[:] = z["train_q_true"][0], z["train_v_true"][0]
    mujoco.mj_getState(m, d, state0, mujoco.mjtState.mjSTATE_FULLPHYSICS)
    ctrl = z["train_ctrl"][:n][None]
    t_mj, _ = timed(lambda: mujoco.rollout.rollout(m, d, state0[None], ctrl), a.repeats)
    for r in rows:
        r["mujoco_fd_s"] = (r["k"] + 1) * t_mj
        r["fd_over_torsion"] = r["mujoco_fd_s"] / r["rollout_plus_vjp_s"]
        r["fd_over_tape"] = r["mujoco_fd_s"] / r["tape_plus_vjp_s"]
    out = {"steps": n, "dt": dt, "torsion_rollout_s": t_fwd, "torsion_rollout_tape_s": t_tape,
           "mujoco_rollout_s": t_mj, "parameters_all": len(names),
           "rows": rows, "repeats": a.repeats, "mujoco_version": mujoco.__version__}
    os.makedirs(os.path.join(ROOT, "results"), exist_ok=True)
    json.dump(out, open(os.path.join(ROOT, "results/sysid_cost.json"), "w"), indent=1)
    print(f"{n} steps: torsion rollout {t_fwd:.3f} s, rollout_tape {t_tape:.3f} s, MuJoCo rollout {t_mj:.3f} s")
    print(f"{'k':>5} {'rollout+vjp (s)':>16} {'× rollout':>10} {'tape+vjp (s)':>13} {'× rollout':>10} "
          f"{'MuJoCo FD (s)':>14} {'FD / ours':>10} {'FD / tape':>10}")
    for r in rows:
        print(f"{r['k']:>5} {r['rollout_plus_vjp_s']:>16.3f} {r['in_forward_rollouts']:>10.2f} "
              f"{r['tape_plus_vjp_s']:>13.3f} {r['tape_in_forward_rollouts']:>10.2f} "
              f"{r['mujoco_fd_s']:>14.3f} {r['fd_over_torsion']:>10.2f} {r['fd_over_tape']:>10.2f}")


if __name__ == "__main__":
    main()
