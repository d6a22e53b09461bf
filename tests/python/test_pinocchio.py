"""Cross-check of torsion's generalized-coordinate dynamics against Pinocchio (pip `pin`) on the Baxter (both
arms, whole URDF; and its left arm `--arm-root torso --arm-tip left_hand_link` against Pinocchio's
`buildReducedModel` with every other joint locked at 0) and Panda URDFs of example-robot-data: M (CRBA), RNEA, g, bias, ABA and the RNEA / ABA
derivatives at 20 random (q, v, a, tau) each, and the derivatives w.r.t. the 10 inertial parameters per body
(the joint-torque regressor and dABA/dpi, carried between the two libraries' body frames). Max relative error <= 1e-10 (normwise per quantity).
torsion is called through `torsion dynamics` (JSON). Run by scripts/test.sh."""
import glob, json, os, site, subprocess, sys, tempfile

import numpy as np
import pinocchio as pin

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOL = 1e-10
NPOINTS = 20


def robots_dir():
    env = os.environ.get("TORSION_ROBOTS_DIR")
    if env:
        return env
    for sp in site.getsitepackages() + [site.getusersitepackages()]:
        hits = glob.glob(os.path.join(sp, "cmeel.prefix", "share", "example-robot-data", "robots"))
        if hits:
            return hits[0]
    raise RuntimeError("example-robot-data not found: pip install example-robot-data")


def torsion_bin():
    exe = os.environ.get("TORSION_BIN") or os.path.join(ROOT, "target", "release", "torsion")
    if not os.path.exists(exe):
        subprocess.run(["cargo", "build", "--release", "-p", "torsion-cli"], cwd=ROOT, check=True)
    return exe


def rel(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-12))


def inertia_map(X):
    """T (10 x 10) with pi_pin = T pi_ours for one body's inertial parameters (m, h, I at the origin, Pinocchio's
    order) given in our body frame, X = Pinocchio joint frame <- our body frame. The map is linear; its columns
    are differences of se3Action on a well-defined base point."""
    base = np.array([1.0, 0, 0, 0, 1, 0, 1, 0, 0, 1])
    act = lambda p: pin.Inertia.FromDynamicParameters(p).se3Action(X).toDynamicParameters()
    a0 = act(base)
    return np.column_stack([act(base + np.eye(10)[i]) - a0 for i in range(10)])


def inertial_derivatives(model, data, out, r, q, v, a, tau, P):
    """Reference for torsion's regressor (dRNEA/dpi) and dABA/dpi = -M^-1 Y(q, v, qdd) from Pinocchio's
    computeJointTorqueRegressor, carried from Pinocchio's joint frames to torsion's body frames."""
    nb = len(out["body_names"])
    pin.forwardKinematics(model, data, q)
    oMi = [data.oMi[i].copy() for i in range(model.njoints)]
    y = pin.computeJointTorqueRegressor(model, data, q, v, a).copy()
    M = pin.crba(model, data, q)
    M = np.triu(M) + np.triu(M, 1).T
    qdd = pin.aba(model, data, q, v, tau)
    yf = -np.linalg.solve(M, pin.computeJointTorqueRegressor(model, data, q, v, qdd))
    ref_y, ref_f = np.zeros((model.nv, 10 * nb)), np.zeros((model.nv, 10 * nb))
    for j, name in enumerate(out["joint_names"]):
        b = out["joint_child"][j]
        jid = model.getJointId(name)
        pose = r["body_pose"][b]
        X = oMi[jid].inverse() * pin.SE3(np.array(pose["rot"]), np.array(pose["pos"]))
        T = inertia_map(X)
        cols = slice(10 * (jid - 1), 10 * jid)
        ref_y[:, 10 * b:10 * b + 10] = P.T @ y[:, cols] @ T
        ref_f[:, 10 * b:10 * b + 10] = P.T @ yf[:, cols] @ T
    return dict(regressor=ref_y, daba_dpi=ref_f)


ARM = dict(root="torso", tip="left_hand_link", joints=[f"left_{n}" for n in ("s0", "s1", "e0", "e1", "w0", "w1", "w2")])


def reduced(model, keep):
    """Pinocchio's buildReducedModel: every joint but `keep` locked at the neutral configuration (q = 0)."""
    lock = [model.getJointId(n) for n in model.names[1:] if n not in keep]
    return pin.buildReducedModel(model, lock, pin.neutral(model))


def check(urdf, derivatives=True, arm=None):
    """arm: dict(root, tip, joints): torsion's chain extraction (`--arm-root/--arm-tip`, off-chain links welded)
    against Pinocchio's reduced model of the whole URDF with every other joint locked at 0."""
    model = pin.buildModelFromUrdf(urdf)
    if arm:
        model = reduced(model, arm["joints"])
    data = model.createData()
    rng = np.random.default_rng(0)
    nv = model.nv
    assert model.nq == nv, "only revolute / prismatic joints expected here"
    pts = dict(q=rng.uniform(-1, 1, (NPOINTS, nv)), v=rng.uniform(-1, 1, (NPOINTS, nv)),
               a=rng.uniform(-1, 1, (NPOINTS, nv)), tau=rng.uniform(-5, 5, (NPOINTS, nv)))
    # torsion orders joints its own way: map by name; the points are given in torsion's order
    chain = ["--arm-root", arm["root"], "--arm-tip", arm["tip"]] if arm else []
    with tempfile.TemporaryDirectory() as tmp:
        inp = os.path.join(tmp, "in.json")
        outp = os.path.join(tmp, "out.json")
        # first call to learn torsion's joint order
        json.dump({k: v[:1].tolist() for k, v in pts.items()}, open(inp, "w"))
        subprocess.run([torsion_bin(), "dynamics", "--model", urdf, "--input", inp, "--out", outp] + chain, check=True)
        names = json.load(open(outp))["joint_names"]
        perm = [model.joints[model.getJointId(n)].idx_v for n in names]  # torsion index -> pinocchio v index
        assert sorted(perm) == list(range(nv)), (names, list(model.names))
        json.dump({k: v.tolist() for k, v in pts.items()}, open(inp, "w"))
        cmd = [torsion_bin(), "dynamics", "--model", urdf, "--input", inp, "--out", outp] + chain
        subprocess.run(cmd + (["--derivatives"] if derivatives else []), check=True)
        out = json.load(open(outp))
    P = np.zeros((nv, nv))
    for k, p in enumerate(perm):
        P[p, k] = 1.0  # x_pin = P x_torsion
    worst = {}
    for i, r in enumerate(out["points"]):
        q, v, a, tau = (P @ pts[k][i] for k in ("q", "v", "a", "tau"))
        M = pin.crba(model, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        ref = dict(M=P.T @ M @ P, rnea=P.T @ pin.rnea(model, data, q, v, a),
                   g=P.T @ pin.computeGeneralizedGravity(model, data, q),
                   nle=P.T @ pin.nonLinearEffects(model, data, q, v), aba=P.T @ pin.aba(model, data, q, v, tau))
        if derivatives:
            dq, dv, da = pin.computeRNEADerivatives(model, data, q, v, a)
            ref.update(drnea_dq=P.T @ dq @ P, drnea_dv=P.T @ dv @ P, drnea_da=P.T @ (np.triu(da) + np.triu(da, 1).T) @ P)
            dq, dv, dt = pin.computeABADerivatives(model, data, q, v, tau)
            ref.update(daba_dq=P.T @ dq @ P, daba_dv=P.T @ dv @ P, daba_dtau=P.T @ dt @ P)
            ref.update(inertial_derivatives(model, data, out, r, q, v, a, tau, P))
        for k, val in ref.items():
            worst[k] = max(worst.get(k, 0.0), rel(r[k], val))
    return worst


CASES = [("baxter", "baxter_description/urdf/baxter.urdf", None), ("panda", "panda_description/urdf/panda.urdf", None),
         ("baxter left arm (others locked)", "baxter_description/urdf/baxter.urdf", ARM)]


def main():
    rd = robots_dir()
    failed = False
    for name, urdf, arm in CASES:
        worst = check(os.path.join(rd, urdf), arm=arm)
        print(f"{name}: max relative error vs Pinocchio {pin.__version__} over {NPOINTS} points:",
              ", ".join(f"{k} {v:.1e}" for k, v in worst.items()))
        bad = {k: v for k, v in worst.items() if not v <= TOL}
        if bad:
            print(f"  FAIL (> {TOL:g}): {bad}")
            failed = True
    sys.exit(1 if failed else 0)


def test_pinocchio_cross_check():
    rd = robots_dir()
    for name, urdf, arm in CASES[:2]:
        worst = check(os.path.join(rd, urdf), arm=arm)
        assert all(v <= TOL for v in worst.values()), (urdf, worst)


def test_arm_chain_is_pinocchios_reduced_model():
    """issue 12 item 6: the Baxter left-arm chain welds the gripper, fingers, sensors and dummies (locked at 0)."""
    worst = check(os.path.join(robots_dir(), CASES[2][1]), arm=ARM)
    assert all(v <= TOL for v in worst.values()), worst


if __name__ == "__main__":
    main()
