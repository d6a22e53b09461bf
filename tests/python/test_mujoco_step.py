"""torsion's Featherstone semi-implicit stepper against MuJoCo's mj_step (Euler integrator with implicit joint
damping) on dm_control's cartpole, acrobot, hopper and cheetah with contacts, joint limits, frictionloss and
actuation disabled, MuJoCo set to its Euler integrator: 200 steps from a perturbed qpos0 at the models' own timestep; max |qpos difference|.
Free joints (humanoid; a spinning, tumbling box in flight): torsion steps a free joint as MuJoCo's Euler does
(the origin moves straight along its world velocity; issue 12 — before, the SE(3) exponential of the body twist
bent the path into a helix and grew |v|), so these match too, from a nonzero initial velocity (converted from
MuJoCo's (v_world, ω_body) to torsion's body-frame (ω, v)). A loose body's gyroscopic torque is implicit in torsion
(linearised backward Euler, `gyroscopic.rs`: never adds energy), as MuJoCo's implicit integrator treats it: the
spinning box (COM at its origin) is compared with mjINT_IMPLICIT."""
import json, os, subprocess, sys, tempfile

import numpy as np
import mujoco

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_mujoco import suite_dir, swimmer_xml, torsion_bin  # noqa: E402

TOL = 1e-9
STEPS = 200


SPIN_BOX = """<mujoco model="spin_box">
  <option timestep="0.002" gravity="0 0 -9.81"/>
  <worldbody>
    <body name="box" pos="0 0 1">
      <freejoint/>
      <geom type="box" size="0.2 0.1 0.05" mass="1.5"/>
    </body>
  </worldbody>
</mujoco>"""


def to_torsion_v(m, q, qvel):
    """MuJoCo's qvel (free joints: world linear, body angular) → torsion's (free joints: (ω, v) in the body frame)."""
    from test_mujoco import transform  # noqa: E402
    T, _ = transform(m, q, qvel)
    return T @ qvel


def run(name, xml=None, spin=False, implicit=False):
    path = os.path.join(suite_dir(), name + ".xml")
    if xml is not None:
        path = os.path.join(suite_dir(), f"_torsion_{name}_{os.getpid()}.xml")
        open(path, "w").write(xml)
    try:
        return run_path(path, spin, implicit)
    finally:
        if xml is not None:
            os.remove(path)


def run_path(path, spin=False, implicit=False):
    m = mujoco.MjModel.from_xml_path(path)
    m.opt.disableflags |= (mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT
                           | mujoco.mjtDisableBit.mjDSBL_FRICTIONLOSS | mujoco.mjtDisableBit.mjDSBL_EQUALITY
                           | mujoco.mjtDisableBit.mjDSBL_ACTUATION)
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER  # cartpole / acrobot ask for RK4; we compare Euler
    if implicit:  # a loose body: torsion treats its gyroscopic torque implicitly, as MuJoCo's implicit integrator
        m.opt.integrator = mujoco.mjtIntegrator.mjINT_IMPLICIT
    d = mujoco.MjData(m)
    rng = np.random.default_rng(2)
    q0 = m.qpos0 + rng.uniform(-0.3, 0.3, m.nq)
    for j in range(m.njnt):  # unit quaternions
        a = m.jnt_qposadr[j]
        if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
            q0[a + 3:a + 7] /= np.linalg.norm(q0[a + 3:a + 7])
        elif m.jnt_type[j] == mujoco.mjtJoint.mjJNT_BALL:
            q0[a:a + 4] /= np.linalg.norm(q0[a:a + 4])
    v0 = rng.uniform(-2, 2, m.nv) if spin else np.zeros(m.nv)
    if spin:  # a fast tumble about all three axes
        for j in range(m.njnt):
            if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
                v0[m.jnt_dofadr[j] + 3:m.jnt_dofadr[j] + 6] = [12.0, -7.0, 9.0]
    d.qpos[:], d.qvel[:] = q0, v0
    vt = to_torsion_v(m, q0, v0)
    for _ in range(STEPS):
        mujoco.mj_step(m, d)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "t.json")
        subprocess.run([torsion_bin(), "simulate", "--model", path, "--solver", "featherstone", "--integrator", "Euler",
                        "--dt", repr(m.opt.timestep),
                        "--steps", str(STEPS), "--q0", ",".join(repr(float(x)) for x in q0),
                        "--v0", ",".join(repr(float(x)) for x in vt), "--out", out], check=True,
                       stderr=subprocess.DEVNULL)
        q = np.array(json.load(open(out))["joint_angles"][-1])
    return float(np.max(np.abs(q - d.qpos))), float(np.max(np.abs(d.qpos - q0)))


SPHERE = """<mujoco model="spin_sphere">
  <option timestep="0.002" gravity="0 0 -9.81"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" friction="0.5 0 0"/>
    <body name="ball" pos="0 0 0.1">
      <freejoint/>
      <geom name="ball" type="sphere" size="0.1" mass="1" friction="0.5 0 0"/>
    </body>
  </worldbody>
</mujoco>"""


def quat_rot(q):
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def spinning_sphere():
    """Issue 12: a sphere (r 0.1 m, 1 kg) sliding at 2 m/s while spinning at 10 rad/s on the floor (μ 0.5, ε 0,
    Δt 2 ms, 1 s) with the contact stepper, beside mj_step (soft contact, elliptic cone). Before the free-joint
    fix torsion went 2.2 → 3.28 J and sank 39 mm. Checks: torsion's energy never grows and it does not sink;
    both end rolling with the same world velocity (angular momentum about the contact point) to 2 % of v0."""
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "spin_sphere.xml")
    open(path, "w").write(SPHERE)
    m = mujoco.MjModel.from_xml_path(path)
    m.opt.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    d = mujoco.MjData(m)
    steps = 500
    q0 = np.array([0, 0, 0.1, 1, 0, 0, 0.0])
    v0 = np.array([2.0, 0, 0, 10.0, 0, 0])  # MuJoCo: world linear, body angular
    d.qpos[:], d.qvel[:] = q0, v0
    for _ in range(steps):
        mujoco.mj_step(m, d)
    mj_v = d.qvel[:3].copy()
    mj_e = 0.5 * 1.0 * mj_v @ mj_v + 0.5 * 0.004 * d.qvel[3:] @ d.qvel[3:]
    out = os.path.join(tmp, "t.json")
    vt = to_torsion_v(m, q0, v0)
    subprocess.run([torsion_bin(), "simulate", "--model", path, "--solver", "ncp", "--dt", "0.002", "--steps", str(steps),
                    "--q0", ",".join(repr(float(x)) for x in q0), "--v0", ",".join(repr(float(x)) for x in vt),
                    "--out", out], check=True, stderr=subprocess.DEVNULL)
    tr = json.load(open(out))
    qs, vs = np.array(tr["joint_angles"]), np.array(tr["joint_velocities"])

    def energy(q, v):  # ½ m |v|² + ½ I |ω|² + m g z (I = 2/5 m r² = 0.004)
        return 0.5 * v[3:] @ v[3:] + 0.5 * 0.004 * v[:3] @ v[:3] + 9.81 * q[2]
    es = np.array([energy(q, v) for q, v in zip(qs, vs)])
    sink = float(np.max(0.1 - qs[:, 2]))
    t_v = quat_rot(qs[-1][3:7]) @ vs[-1][3:]
    dv = float(np.max(np.abs(t_v - mj_v)))
    print(f"spinning sphere, 1 s: torsion kinetic {es[0] - 9.81 * 0.1:.3f} → {es[-1] - 9.81 * qs[-1][2]:.3f} J (max energy "
          f"gain {np.max(np.diff(es)):.1e} J), sinking {sink:.1e} m; mj_step kinetic → {mj_e:.3f} J; final world velocity "
          f"torsion {np.round(t_v, 4)} vs MuJoCo {np.round(mj_v, 4)} (max diff {dv:.1e} m/s)")
    return np.max(np.diff(es)) <= 1e-9 and sink < 1e-6 and dv < 0.02 * 2.0


def main():
    bad = False
    cases = [(n, None, False, False) for n in ["cartpole", "acrobot", "hopper", "cheetah", "humanoid"]]
    cases += [("humanoid", None, True, False), ("spin_box", SPIN_BOX, True, True)]
    for name, xml, spin, implicit in cases:
        err, moved = run(name, xml, spin, implicit)
        name += " (spinning)" if spin else ""
        name += " vs MuJoCo's implicit integrator" if implicit else ""
        print(f"{name}: {STEPS} steps vs mj_step: max |Δqpos| = {err:.1e} (the state moved by {moved:.2f})")
        bad |= not err <= TOL
    for root in ["planar", "free"]:
        err, moved = run("swimmer_" + root, swimmer_xml(root))
        print(f"swimmer chain in a fluid ({root} root): {STEPS} steps vs mj_step: max |Δqpos| = {err:.1e} (moved {moved:.2f})")
        bad |= not err <= TOL
    bad |= not spinning_sphere()
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
