"""torsion's Featherstone stepper with MJCF actuators against MuJoCo's mj_step (issue 21 item 2): dm_control's
cartpole, acrobot, hopper and cheetah with their actuators on (contacts, joint limits, frictionloss and equality
off, MuJoCo's Euler integrator, as test_mujoco_step.py), plus a hand-written model with position and velocity
servos, gear ≠ 1, forcerange and a filter actuator; random controls drawn from 1.5 × ctrlrange (so inside and
outside it: MuJoCo clamps them), fed to `torsion simulate --controls`; 200 steps, max |qpos difference| ≤ 1e-9."""
import json, os, subprocess, sys, tempfile

import numpy as np
import mujoco

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_mujoco import suite_dir, torsion_bin  # noqa: E402
from test_mujoco_step import to_torsion_v  # noqa: E402

TOL = 1e-9
STEPS = 200

SERVOS = """<mujoco model="servos">
  <option timestep="0.005" gravity="0 0 -9.81"/>
  <default><default class="pd"><position kp="30" kv="2" ctrlrange="-1 1"/></default></default>
  <worldbody>
    <body name="a"><joint name="h1" axis="0 1 0" damping="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.05" mass="1"/>
      <body pos="0.5 0 0"><joint name="s" type="slide" axis="1 0 0"/><geom type="sphere" size="0.1" mass="0.5"/>
        <body><joint name="h2" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 0 0 -0.4" size="0.04" mass="0.7"/>
          <body pos="0 0 -0.4"><joint name="h3" axis="1 0 0"/><geom type="box" size="0.05 0.1 0.02" mass="0.3"/></body>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <position name="p" class="pd" joint="h1" gear="2"/>
    <velocity name="v" joint="s" kv="4" forcerange="-3 3" ctrlrange="-2 2"/>
    <motor name="m" joint="h2" gear="-1.5" ctrlrange="-2 2" forcerange="-1 1.5"/>
    <general name="g" joint="h3" gear="0.7" dyntype="filter" dynprm="0.05" gainprm="2" biastype="affine"
             biasprm="0.1 -3 -0.5" ctrlrange="-1 1"/>
  </actuator>
</mujoco>"""


def run_path(path, seed=3, integrator="Euler", steps=STEPS):
    """(max |Δqpos| after `steps` steps, how far the state moved, nu, share of controls outside ctrlrange) with
    MuJoCo's `integrator` (Euler, RK4, implicitfast) on both sides."""
    m = mujoco.MjModel.from_xml_path(path)
    m.opt.disableflags |= (mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT
                           | mujoco.mjtDisableBit.mjDSBL_FRICTIONLOSS | mujoco.mjtDisableBit.mjDSBL_EQUALITY)
    m.opt.integrator = {"Euler": mujoco.mjtIntegrator.mjINT_EULER, "RK4": mujoco.mjtIntegrator.mjINT_RK4,
                        "implicitfast": mujoco.mjtIntegrator.mjINT_IMPLICITFAST}[integrator]
    d = mujoco.MjData(m)
    rng = np.random.default_rng(seed)
    q0 = m.qpos0 + rng.uniform(-0.3, 0.3, m.nq)
    for j in range(m.njnt):
        a = m.jnt_qposadr[j]
        if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
            q0[a + 3:a + 7] /= np.linalg.norm(q0[a + 3:a + 7])
        elif m.jnt_type[j] == mujoco.mjtJoint.mjJNT_BALL:
            q0[a:a + 4] /= np.linalg.norm(q0[a:a + 4])
    v0 = rng.uniform(-0.5, 0.5, m.nv)
    lo = np.where(m.actuator_ctrllimited, m.actuator_ctrlrange[:, 0], -1.0)
    hi = np.where(m.actuator_ctrllimited, m.actuator_ctrlrange[:, 1], 1.0)
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    ctrl = mid + 1.5 * half * rng.uniform(-1, 1, (steps, m.nu))
    outside = float(np.mean((ctrl < lo) | (ctrl > hi))) if m.nu else 0.0
    d.qpos[:], d.qvel[:] = q0, v0
    vt = to_torsion_v(m, q0, v0)
    for k in range(steps):
        d.ctrl[:] = ctrl[k]
        mujoco.mj_step(m, d)
    with tempfile.TemporaryDirectory() as tmp:
        out, cf = os.path.join(tmp, "t.json"), os.path.join(tmp, "ctrl.json")
        json.dump(ctrl.tolist(), open(cf, "w"))
        subprocess.run([torsion_bin(), "simulate", "--model", path, "--solver", "featherstone", "--integrator", integrator,
                        "--dt", repr(m.opt.timestep), "--steps", str(steps), "--controls", cf,
                        "--q0", ",".join(repr(float(x)) for x in q0), "--v0", ",".join(repr(float(x)) for x in vt),
                        "--out", out], check=True, stderr=subprocess.DEVNULL)
        q = np.array(json.load(open(out))["joint_angles"][-1])
    return float(np.max(np.abs(q - d.qpos))), float(np.max(np.abs(d.qpos - q0))), m.nu, outside


def main():
    bad = False
    tmp = tempfile.mkdtemp()
    servos = os.path.join(tmp, "servos.xml")
    open(servos, "w").write(SERVOS)
    cases = [(n, os.path.join(suite_dir(), n + ".xml")) for n in ["cartpole", "acrobot", "hopper", "cheetah"]]
    for name, path in cases + [("servos (position, velocity, gear, forcerange, filter)", servos)]:
        err, moved, nu, outside = run_path(path)
        print(f"{name}: {nu} actuators, {STEPS} steps of random controls ({outside:.0%} outside ctrlrange) vs "
              f"mj_step: max |Δqpos| = {err:.1e} (the state moved by {moved:.2f})")
        bad |= not err <= TOL
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
