"""SUPERball in the air (spec 003 §4.1, issue 16 item 2): torsion's Featherstone stepper with cables (tendon
spring-dampers) and motor filters (general actuators, dyntype filter) against MuJoCo's mj_step (Euler) on the
unchanged `superball_air.xml`: one rod welded in the air, five free rods, 24 cables, 24 actuators driven by random
controls U[-100, 100] held for 1 ms and for 100 ms, 5000 steps at dt = 1 ms. Reports the max |qpos difference|
(positions in m, quaternions) and the activations' difference.
1 ms controls: below 1e-9 over all 5000 steps (the issue's "Done when"). 100 ms controls: below 1e-9 over the
first 1000 steps; later a cable collapses to ~0.1 mm (spec 003 §3.5) and the motion is chaotic: MuJoCo against
itself from qpos0 perturbed by 1e-15 m diverges to the same size (`chaos_floor`), so no f64 engine that is not
bit-identical to MuJoCo can hold 1e-9 there; the test asserts ours stays within 100x that floor."""
import json, os, subprocess, sys, tempfile

import numpy as np
import mujoco

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# the committed copy of ../shared/models/superball_air.xml (unchanged)
MODEL = os.environ.get("SUPERBALL_AIR", os.path.join(ROOT, "crates", "torsion-model", "tests", "data", "mjcf", "superball_air.xml"))
TOL = 1e-9


def torsion_bin():
    return os.environ.get("TORSION_BIN", os.path.join(ROOT, "target", "release", "torsion"))


def controls(m, steps, hold, seed):
    rng = np.random.default_rng(seed)
    lo, hi = m.actuator_ctrlrange[:, 0], m.actuator_ctrlrange[:, 1]
    rows = []
    for k in range(steps):
        if k % hold == 0:
            u = rng.uniform(lo, hi)
        rows.append(u.copy())
    return np.array(rows)


def mujoco_rollout(m, u, eps=0.0):
    d = mujoco.MjData(m)
    d.qpos[0] += eps
    qs, acts = [d.qpos.copy()], [d.act.copy()]
    for row in u:
        d.ctrl[:] = row
        mujoco.mj_step(m, d)
        qs.append(d.qpos.copy())
        acts.append(d.act.copy())
    assert d.ncon == 0, "the air model must not touch the floor"
    return np.array(qs), np.array(acts)


def run(hold, steps=5000, seed=0):
    m = mujoco.MjModel.from_xml_path(MODEL)
    assert m.opt.integrator == mujoco.mjtIntegrator.mjINT_EULER
    u = controls(m, steps, hold, seed)
    ref, ref_act = mujoco_rollout(m, u)
    with tempfile.TemporaryDirectory() as tmp:
        cfile, out = os.path.join(tmp, "u.json"), os.path.join(tmp, "traj.json")
        json.dump(u.tolist(), open(cfile, "w"))
        subprocess.run([torsion_bin(), "simulate", "--model", MODEL, "--solver", "featherstone", "--steps", str(steps),
                        "--controls", cfile, "--out", out], check=True, capture_output=True)
        r = json.load(open(out))
    ours, our_act = np.array(r["joint_angles"]), np.array(r["actuator_activations"])
    assert ours.shape == ref.shape, (ours.shape, ref.shape)
    pos = np.concatenate([np.arange(7 * j, 7 * j + 3) for j in range(m.njnt)])
    err_pos = np.abs(ours[:, pos] - ref[:, pos]).max(axis=1)
    err_q = np.abs(ours - ref).max(axis=1)
    err_act = np.abs(our_act - ref_act).max()
    travel = np.abs(ref[:, pos] - ref[0, pos]).max()
    # chaos floor: MuJoCo against itself from qpos[0] moved by 1e-15 m
    floor = np.abs(mujoco_rollout(m, u, 1e-15)[0] - ref).max(axis=1)
    return err_pos, err_q, err_act, travel, floor


def test_superball_air_matches_mujoco():
    for hold in (1, 100):
        err_pos, err_q, err_act, travel, floor = run(hold)
        print(f"hold {hold:3d} ms: max |dpos| step 1000 {err_pos[1000]:.2e}, step 5000 {err_pos[5000]:.2e}, "
              f"max over steps {err_pos.max():.2e} m; max |dqpos| {err_q.max():.2e}; max |dact| {err_act:.2e}; "
              f"rods travel {travel:.3f} m; MuJoCo vs MuJoCo(+1e-15) max {floor.max():.2e}")
        assert travel > 0.1, "the controls must move the rods"
        assert err_act < TOL
        if hold == 1:
            assert err_pos.max() < TOL and err_q.max() < TOL, hold
        else:
            assert err_q[:1001].max() < TOL, err_q[:1001].max()
            assert err_q.max() < 100 * max(floor.max(), 1e-12), (err_q.max(), floor.max())


if __name__ == "__main__":
    test_superball_air_matches_mujoco()
    print("ok")
