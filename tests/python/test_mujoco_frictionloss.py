"""Joint dry friction (MuJoCo `frictionloss`, issue 14 item 2) and damping / armature: torsion's Featherstone stepper
against MuJoCo's mj_step on a 3-joint chain (two hinges, one slide; axes horizontal-plane so gravity does not load
them) driven by motors with random piecewise-constant torques of the order of the friction losses (so joints stick
and slip), MuJoCo's Euler integrator, contacts and limits off, 200 steps.

torsion solves dry friction as a hard velocity-level box (stuck DoF: v' = 0 exactly). MuJoCo's is a soft
constraint: a stuck DoF reaches J a = (1 − d) J a0 + d a_ref with a_ref = −b v, b = 2 / (d_max · timeconst), and
impedance d ≤ 0.9999 (mjMAXIMP). With the stiffest setting it allows (dof_solref timeconst 2h/d_max, so that
a_ref = −v/h; dof_solimp d = 0.9999; Newton, tolerance 1e-12) its stuck velocity is (1 − d) v* = 1e-4 v* instead of
0 and the rest agrees: the comparison is stated with that regularisation and with MuJoCo's defaults (solref 0.02 1,
solimp 0.9 0.95: visibly soft). Measured: stiffest 3.4e-5 (99.2% same stick / slip), defaults 8.8e-4 (74.7%),
frictionless 1.1e-16, friction's own effect 0.475. Checks: stiffest MuJoCo vs torsion max |Δqpos| ≤ 1e-4 after 200 steps, the same
stick / slip pattern per step (|qvel| < 1e-6 ⇔ stuck) on ≥ 98% of the joint-steps, the frictionless model agreeing
to ≤ 1e-9 (so the rest of the step is the same), and friction mattering (its effect on qpos ≫ the difference)."""
import json, os, subprocess, sys, tempfile

import numpy as np
import mujoco

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_mujoco import torsion_bin  # noqa: E402

STEPS = 200
DT = 0.005

CHAIN = """<mujoco model="friction_chain">
  <option timestep="0.005" gravity="0 0 -9.81"/>
  <worldbody>
    <body name="a"><joint name="h1" axis="0 0 1" damping="0.2" armature="0.02" frictionloss="{f1}"/>
      <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.05" mass="1"/>
      <body pos="0.5 0 0"><joint name="h2" axis="0 0 1" damping="0.1" armature="0.01" frictionloss="{f2}"/>
        <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.04" mass="0.7"/>
        <body pos="0.4 0 0"><joint name="s" type="slide" axis="1 0 0" damping="0.3" armature="0.05"
          frictionloss="{f3}"/><geom type="sphere" size="0.08" mass="0.5"/></body>
      </body>
    </body>
  </worldbody>
  <actuator><motor joint="h1"/><motor joint="h2"/><motor joint="s"/></actuator>
</mujoco>"""
FRICTION = (0.3, 0.2, 0.5)


def mujoco_run(path, q0, v0, ctrl, stiff):
    m = mujoco.MjModel.from_xml_path(path)
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    m.opt.tolerance, m.opt.iterations = 1e-12, 1000
    if stiff:
        dmax = 0.9999
        m.dof_solref[:] = [2 * m.opt.timestep / dmax, 1.0]
        m.dof_solimp[:] = [dmax, dmax, 0.001, 0.5, 2.0]
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = q0, v0
    qs, vs = [], []
    for k in range(STEPS):
        d.ctrl[:] = ctrl[k]
        mujoco.mj_step(m, d)
        qs.append(d.qpos.copy())
        vs.append(d.qvel.copy())
    return np.array(qs), np.array(vs)


def torsion_run(path, q0, v0, ctrl):
    with tempfile.TemporaryDirectory() as tmp:
        out, cf = os.path.join(tmp, "t.json"), os.path.join(tmp, "ctrl.json")
        json.dump(ctrl.tolist(), open(cf, "w"))
        subprocess.run([torsion_bin(), "simulate", "--model", path, "--solver", "featherstone", "--dt", repr(DT),
                        "--steps", str(STEPS), "--controls", cf, "--q0", ",".join(repr(float(x)) for x in q0),
                        "--v0", ",".join(repr(float(x)) for x in v0), "--out", out], check=True,
                       stderr=subprocess.DEVNULL)
        t = json.load(open(out))
        return np.array(t["joint_angles"][1:]), np.array(t["joint_velocities"][1:])


def main():
    tmp = tempfile.mkdtemp()
    rough, smooth = os.path.join(tmp, "rough.xml"), os.path.join(tmp, "smooth.xml")
    open(rough, "w").write(CHAIN.format(f1=FRICTION[0], f2=FRICTION[1], f3=FRICTION[2]))
    open(smooth, "w").write(CHAIN.format(f1=0, f2=0, f3=0))
    rng = np.random.default_rng(7)
    q0 = rng.uniform(-0.3, 0.3, 3)
    v0 = np.array([0.4, -0.3, 0.0])
    # torques held for 20 steps, each within ±2× the joint's friction loss: some below it (stick), some above
    ctrl = np.repeat(rng.uniform(-2, 2, (STEPS // 20, 3)) * np.array(FRICTION), 20, axis=0)
    bad = False
    qt, vt = torsion_run(rough, q0, v0, ctrl)
    q0s, _ = torsion_run(smooth, q0, v0, ctrl)
    qm0, _ = mujoco_run(smooth, q0, v0, ctrl, stiff=True)
    e0 = float(np.max(np.abs(q0s[-1] - qm0[-1])))
    effect = float(np.max(np.abs(qt[-1] - q0s[-1])))
    print(f"frictionless chain, {STEPS} steps: torsion vs mj_step max |Δqpos| = {e0:.1e}")
    bad |= not e0 <= 1e-9
    stuck_t = np.abs(vt) < 1e-9
    print(f"torsion: {stuck_t.mean():.0%} of joint-steps stuck (|v| < 1e-9); friction moves the final qpos by "
          f"{effect:.3f}")
    for label, stiff in [("stiffest MuJoCo (solref 2h/0.9999 1, solimp d = 0.9999)", True),
                         ("MuJoCo defaults (solref 0.02 1, solimp 0.9 0.95)", False)]:
        qm, vm = mujoco_run(rough, q0, v0, ctrl, stiff)
        err = float(np.max(np.abs(qt[-1] - qm[-1])))
        err_all = float(np.max(np.abs(qt - qm)))
        dv = float(np.max(np.abs(vt[-1] - vm[-1])))
        same = float(np.mean((np.abs(vm) < 1e-4) == stuck_t))
        print(f"{label}: max |Δqpos| after {STEPS} steps {err:.1e} (over the trajectory {err_all:.1e}), final "
              f"|Δqvel| {dv:.1e}, the same stick/slip on {same:.1%} of the joint-steps "
              f"(MuJoCo stuck velocities up to {np.max(np.abs(vm[stuck_t])) if stuck_t.any() else 0:.1e})")
        if stiff:
            bad |= not (err <= 1e-4 and same >= 0.98 and effect > 100 * err)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
