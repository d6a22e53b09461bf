"""torsion's Featherstone semi-implicit stepper against MuJoCo's mj_step (Euler integrator with implicit joint
damping) on dm_control's cartpole, acrobot, hopper and cheetah with contacts, joint limits, frictionloss and
actuation disabled, MuJoCo set to its Euler integrator: 200 steps from a perturbed qpos0 at the models' own timestep; max |qpos difference|.
(Humanoid is left out: MuJoCo integrates a free joint's position with the world-frame linear velocity, torsion
with the SE(3) exponential, as Pinocchio; the two differ at O(h²) per step.)"""
import json, os, subprocess, sys, tempfile

import numpy as np
import mujoco

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_mujoco import suite_dir, swimmer_xml, torsion_bin  # noqa: E402

TOL = 1e-9
STEPS = 200


def run(name, xml=None):
    path = os.path.join(suite_dir(), name + ".xml")
    if xml is not None:
        path = os.path.join(suite_dir(), f"_torsion_{name}_{os.getpid()}.xml")
        open(path, "w").write(xml)
    try:
        return run_path(path)
    finally:
        if xml is not None:
            os.remove(path)


def run_path(path):
    m = mujoco.MjModel.from_xml_path(path)
    m.opt.disableflags |= (mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT
                           | mujoco.mjtDisableBit.mjDSBL_FRICTIONLOSS | mujoco.mjtDisableBit.mjDSBL_EQUALITY
                           | mujoco.mjtDisableBit.mjDSBL_ACTUATION)
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER  # cartpole / acrobot ask for RK4; we compare Euler
    d = mujoco.MjData(m)
    rng = np.random.default_rng(2)
    q0 = m.qpos0 + rng.uniform(-0.3, 0.3, m.nq)
    d.qpos[:] = q0
    for _ in range(STEPS):
        mujoco.mj_step(m, d)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "t.json")
        subprocess.run([torsion_bin(), "simulate", "--model", path, "--solver", "featherstone", "--dt", repr(m.opt.timestep),
                        "--steps", str(STEPS), "--q0", ",".join(repr(float(x)) for x in q0), "--out", out], check=True,
                       stderr=subprocess.DEVNULL)
        q = np.array(json.load(open(out))["joint_angles"][-1])
    return float(np.max(np.abs(q - d.qpos))), float(np.max(np.abs(d.qpos - q0)))


def main():
    bad = False
    for name in ["cartpole", "acrobot", "hopper", "cheetah"]:
        err, moved = run(name)
        print(f"{name}: {STEPS} steps vs mj_step: max |Δqpos| = {err:.1e} (the state moved by {moved:.2f})")
        bad |= not err <= TOL
    err, moved = run("swimmer_planar", swimmer_xml("planar"))
    print(f"swimmer chain in a fluid (planar root): {STEPS} steps vs mj_step: max |Δqpos| = {err:.1e} (moved {moved:.2f})")
    bad |= not err <= TOL
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
