"""Cross-check of torsion's generalized-coordinate dynamics against MuJoCo (pip `mujoco`) on dm_control's
cartpole, acrobot, hopper, cheetah and humanoid (the suite XMLs, unchanged): the joint-space inertia M
(mj_fullM, armature included), the bias qfrc_bias, and the forward acceleration qacc with contacts, joint limits,
frictionloss, equality constraints and actuation disabled (passive damping and joint springs stay on), at 20
random (qpos, qvel, qfrc_applied) per model. Max relative error <= 1e-9 (normwise per quantity).
MuJoCo's free-joint velocity is (linear in world axes, angular in body axes); torsion's is (angular, linear) in
the body frame: the test converts with v_t = T v_mj, M_mj = T' M_t T, bias_mj = T'(c_t + M_t Tdot v_mj),
qacc_mj = T^-1 (a_t - Tdot v_mj)."""
import glob, json, os, subprocess, sys, tempfile

import numpy as np
import mujoco

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOL = 1e-9
NPOINTS = 20
MODELS = ["cartpole", "acrobot", "hopper", "cheetah", "humanoid"]


def suite_dir():
    env = os.environ.get("TORSION_DM_CONTROL_DIR")
    if env:
        return env
    hits = sorted(glob.glob(os.path.join(ROOT, "target", "dm_control_suite", "*")))
    if hits:
        return hits[-1]
    raise RuntimeError("dm_control suite XMLs not found: run the Rust tests first (they download them) "
                       "or set TORSION_DM_CONTROL_DIR")


def torsion_bin():
    exe = os.environ.get("TORSION_BIN") or os.path.join(ROOT, "target", "release", "torsion")
    if not os.path.exists(exe):
        subprocess.run(["cargo", "build", "--release", "-p", "torsion-cli"], cwd=ROOT, check=True)
    return exe


def rel(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-12))


def quat_mat(q):
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def random_state(m, rng):
    q = m.qpos0.copy()
    for j in range(m.njnt):
        a = m.jnt_qposadr[j]
        t = m.jnt_type[j]
        if t == mujoco.mjtJoint.mjJNT_FREE:
            q[a:a + 3] += rng.uniform(-0.3, 0.3, 3)
            qq = rng.normal(size=4)
            q[a + 3:a + 7] = qq / np.linalg.norm(qq)
        elif t == mujoco.mjtJoint.mjJNT_BALL:
            qq = rng.normal(size=4)
            q[a:a + 4] = qq / np.linalg.norm(qq)
        else:
            q[a] += rng.uniform(-0.8, 0.8)
    return q, rng.uniform(-1, 1, m.nv), rng.uniform(-2, 2, m.nv)


def transform(m, q, qvel):
    """T (v_torsion = T v_mj) and Tdot v_mj for free joints (identity elsewhere)."""
    T = np.eye(m.nv)
    Tdv = np.zeros(m.nv)
    for j in range(m.njnt):
        if m.jnt_type[j] != mujoco.mjtJoint.mjJNT_FREE:
            continue
        a, d = m.jnt_qposadr[j], m.jnt_dofadr[j]
        R = quat_mat(q[a + 3:a + 7])
        T[d:d + 6, d:d + 6] = 0
        T[d:d + 3, d + 3:d + 6] = np.eye(3)      # ω_body = qvel[3:6]
        T[d + 3:d + 6, d:d + 3] = R.T            # v_body = Rᵀ v_world
        w, vb = qvel[d + 3:d + 6], R.T @ qvel[d:d + 3]
        Tdv[d + 3:d + 6] = -np.cross(w, vb)      # d/dt(Rᵀ) v_world = −ω × v_body
    return T, Tdv


def swimmer_xml(root):
    """A swimmer-like chain in a fluid (density 3000, viscosity 0.1, wind): capsule links on hinges, a free or
    planar (slide x, slide y, hinge z) root; the last link has an off-axis sphere (a non-diagonal inertia)."""
    joints = {"free": '<freejoint name="root"/>',
              "planar": '<joint name="rx" type="slide" axis="1 0 0"/><joint name="ry" type="slide" axis="0 1 0"/>'
                        '<joint name="rz" type="hinge" axis="0 0 1"/>'}[root]
    link = '<geom type="capsule" fromto="0 0 0 0.1 0 0" size="0.02"/>'
    return f"""<mujoco model="swimmer_{root}"><option timestep="0.002" density="3000" viscosity="0.1" wind="0.2 -0.1 0.05"/>
<worldbody><body name="b0" pos="0 0 0.5">{joints}{link}
  <body name="b1" pos="0.1 0 0"><joint name="j1" type="hinge" axis="0 0 1" damping="0.01"/>{link}
    <body name="b2" pos="0.1 0 0"><joint name="j2" type="hinge" axis="0 1 0"/>{link}
      <body name="b3" pos="0.1 0 0"><joint name="j3" type="hinge" axis="0 0 1"/>{link}
        <geom type="sphere" size="0.025" pos="0.06 0.03 0.01"/></body></body></body></body>
</worldbody></mujoco>"""


def with_flag(name, flag):
    """A dm_control suite model with <flag .../> added to its <option> (written beside it, includes resolve)."""
    text = open(os.path.join(suite_dir(), name + ".xml")).read()
    if "<option" in text:
        head, rest = text.split("<option", 1)
        attrs, tail = rest.split(">", 1)
        if attrs.endswith("/"):
            text = head + "<option" + attrs[:-1] + ">" + flag + "</option>" + tail
        else:
            text = head + "<option" + attrs + ">" + flag + tail
    else:
        text = text.replace(">", "><option>" + flag + "</option>", 1)
    return text


def check(name, xml=None):
    path = os.path.join(suite_dir(), name + ".xml")
    if xml is not None:
        path = os.path.join(suite_dir(), f"_torsion_{name}_{os.getpid()}.xml")
        open(path, "w").write(xml)
    try:
        return check_path(path)
    finally:
        if xml is not None:
            os.remove(path)


def check_path(path):
    m = mujoco.MjModel.from_xml_path(path)
    m.opt.disableflags |= (mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT
                           | mujoco.mjtDisableBit.mjDSBL_FRICTIONLOSS | mujoco.mjtDisableBit.mjDSBL_EQUALITY
                           | mujoco.mjtDisableBit.mjDSBL_ACTUATION)
    d = mujoco.MjData(m)
    rng = np.random.default_rng(1)
    pts = [random_state(m, rng) for _ in range(NPOINTS)]
    Ts = [transform(m, q, v) for q, v, _ in pts]
    inp = dict(q=[p[0].tolist() for p in pts],
               v=[(T @ p[1]).tolist() for p, (T, _) in zip(pts, Ts)],
               a=[np.zeros(m.nv).tolist() for _ in pts],
               tau=[(np.linalg.inv(T).T @ p[2]).tolist() for p, (T, _) in zip(pts, Ts)])
    with tempfile.TemporaryDirectory() as tmp:
        ip, op = os.path.join(tmp, "in.json"), os.path.join(tmp, "out.json")
        json.dump(inp, open(ip, "w"))
        subprocess.run([torsion_bin(), "dynamics", "--model", path, "--input", ip, "--out", op], check=True)
        out = json.load(open(op))
    assert out["nv"] == m.nv and out["nq"] == m.nq, (out["nv"], m.nv)
    worst = {}
    for (q, v, f), (T, Tdv), r in zip(pts, Ts, out["points"]):
        d.qpos[:], d.qvel[:], d.qfrc_applied[:] = q, v, f
        d.ctrl[:] = 0
        mujoco.mj_forward(m, d)
        M = np.zeros((m.nv, m.nv))
        if hasattr(d, "qM"):
            mujoco.mj_fullM(m, M, d.qM)
        else:  # MuJoCo >= 3.4 / 4: mj_fullM(m, d, dst)
            mujoco.mj_fullM(m, d, M)
        Mt = np.array(r["M"])
        ours = dict(M=T.T @ Mt @ T, bias=T.T @ (np.array(r["nle"]) + Mt @ Tdv),
                    qacc=np.linalg.solve(T, np.array(r["aba_passive"]) - Tdv), passive=T.T @ np.array(r["passive"]))
        ref = dict(M=M, bias=d.qfrc_bias.copy(), qacc=d.qacc.copy(), passive=d.qfrc_passive.copy())
        if not np.any(ref["passive"]):
            ours.pop("passive"), ref.pop("passive")
        for k in ref:
            worst[k] = max(worst.get(k, 0.0), rel(ours[k], ref[k]))
    return worst


# extra cases: (label, name, XML text)
EXTRA = [("cheetah with <flag gravity=\"disable\"/>", "cheetah", lambda: with_flag("cheetah", '<flag gravity="disable"/>')),
         ("humanoid with <flag gravity=\"disable\"/>", "humanoid", lambda: with_flag("humanoid", '<flag gravity="disable"/>')),
         ("swimmer chain, free root, fluid", "swimmer_free", lambda: swimmer_xml("free")),
         ("swimmer chain, planar root, fluid", "swimmer_planar", lambda: swimmer_xml("planar"))]


def check_qpos0(name):
    """torsion's qpos0 (`dynamics` output) equals MuJoCo's model.qpos0."""
    path = os.path.join(suite_dir(), name + ".xml")
    m = mujoco.MjModel.from_xml_path(path)
    with tempfile.TemporaryDirectory() as tmp:
        ip, op = os.path.join(tmp, "in.json"), os.path.join(tmp, "out.json")
        json.dump(dict(q=[m.qpos0.tolist()], v=[np.zeros(m.nv).tolist()], a=[np.zeros(m.nv).tolist()],
                       tau=[np.zeros(m.nv).tolist()]), open(ip, "w"))
        subprocess.run([torsion_bin(), "dynamics", "--model", path, "--input", ip, "--out", op], check=True)
        out = json.load(open(op))
    return float(np.max(np.abs(np.array(out["qpos0"]) - m.qpos0)))


def main():
    failed = False
    for label, name, xml in EXTRA:
        w = check(name, xml())
        print(f"{label}: max relative error vs MuJoCo {mujoco.__version__} over {NPOINTS} points:",
              ", ".join(f"{k} {v:.1e}" for k, v in w.items()))
        if not all(v <= TOL for v in w.values()):
            print(f"  FAIL (> {TOL:g})")
            failed = True
    e = check_qpos0("humanoid")
    print(f"humanoid qpos0 vs MuJoCo model.qpos0: max |diff| {e:.1e}")
    failed |= not e <= 1e-12
    for name in MODELS:
        w = check(name)
        print(f"{name}: max relative error vs MuJoCo {mujoco.__version__} over {NPOINTS} points:",
              ", ".join(f"{k} {v:.1e}" for k, v in w.items()))
        if not all(v <= TOL for v in w.values()):
            print(f"  FAIL (> {TOL:g})")
            failed = True
    sys.exit(1 if failed else 0)


def test_mujoco_cross_check():
    for name in MODELS:
        w = check(name)
        assert all(v <= TOL for v in w.values()), (name, w)


def test_mujoco_flags_fluid_qpos0():
    for label, name, xml in EXTRA:
        w = check(name, xml())
        assert "passive" in w or "gravity" in label, (label, w)
        assert all(v <= TOL for v in w.values()), (label, w)
    assert check_qpos0("humanoid") <= 1e-12


if __name__ == "__main__":
    main()
