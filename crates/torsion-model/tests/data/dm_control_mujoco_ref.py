"""Reference values for crates/torsion-model/tests/mjcf.rs, measured with MuJoCo (pip `mujoco`).

Usage: python3 dm_control_mujoco_ref.py SUITE_DIR > dm_control_mujoco_ref.json
SUITE_DIR holds dm_control/suite/*.xml (+ common/) of the dm-control wheel named in `dm_control` below.

Per model: counts, option values, total mass, and per *weld group* (a MuJoCo body with joints and the
jointless bodies welded to it, which the torsion loader merges into one body; named by the body with the
joints): mass, COM (world) and inertia about the COM (world axes), body frame orientation, at qpos0 and at a
random configuration; per joint: type, qpos0, limits and the joint anchor/axis in the world at qpos0.
"""
import json
import sys

import mujoco
import numpy as np

MODELS = ["cartpole", "acrobot", "hopper", "cheetah", "humanoid"]


def groups(m, d):
    out = {}
    for root in range(1, m.nbody):
        if m.body_weldid[root] != root:
            continue
        members = [b for b in range(1, m.nbody) if m.body_weldid[b] == root]
        mass = sum(m.body_mass[b] for b in members)
        com = sum(m.body_mass[b] * d.xipos[b] for b in members) / mass
        inertia = np.zeros((3, 3))
        for b in members:
            r = d.ximat[b].reshape(3, 3)
            dd = d.xipos[b] - com
            inertia += r @ np.diag(m.body_inertia[b]) @ r.T + m.body_mass[b] * (dd @ dd * np.eye(3) - np.outer(dd, dd))
        name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, root)
        out[name] = {
            "members": [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b) for b in members],
            "mass": float(mass),
            "com": com.tolist(),
            "inertia": inertia.reshape(-1).tolist(),
            "xquat": d.xquat[root].tolist(),
        }
    return out


def measure(path, seed):
    m = mujoco.MjModel.from_xml_path(path)
    d = mujoco.MjData(m)
    d.qpos[:] = m.qpos0
    mujoco.mj_forward(m, d)
    types = {0: "free", 1: "ball", 2: "slide", 3: "hinge"}
    joints = []
    for j in range(m.njnt):
        t = int(m.jnt_type[j])
        a = m.jnt_qposadr[j]
        n = {0: 7, 1: 4, 2: 1, 3: 1}[t]
        joints.append({
            "name": mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j),
            "type": types[t],
            "body": mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, m.jnt_bodyid[j]),
            "qpos0": m.qpos0[a:a + n].tolist(),
            "limited": bool(m.jnt_limited[j]),
            "range": m.jnt_range[j].tolist(),
            "damping": float(m.dof_damping[m.jnt_dofadr[j]]),
            "armature": float(m.dof_armature[m.jnt_dofadr[j]]),
            "frictionloss": float(m.dof_frictionloss[m.jnt_dofadr[j]]),
            "stiffness": float(m.jnt_stiffness[j]),
            "springref": m.qpos_spring[a:a + n].tolist(),
            "xanchor": d.xanchor[j].tolist(),
            "xaxis": d.xaxis[j].tolist(),
        })
    res = {
        "nq": m.nq, "nv": m.nv, "nbody": m.nbody, "njnt": m.njnt, "ngeom": m.ngeom, "nsite": m.nsite,
        "nu": m.nu, "timestep": float(m.opt.timestep), "gravity": m.opt.gravity.tolist(),
        "total_mass": float(sum(m.body_mass)),
        "qpos0": m.qpos0.tolist(),
        "joints": joints,
        "groups0": groups(m, d),
    }
    # a random configuration
    rng = np.random.RandomState(seed)
    q = m.qpos0.copy()
    for j in range(m.njnt):
        a, t = m.jnt_qposadr[j], m.jnt_type[j]
        if t == 0:
            q[a:a + 3] += rng.uniform(-1, 1, 3)
            u = rng.normal(size=4)
            q[a + 3:a + 7] = u / np.linalg.norm(u)
        elif t == 1:
            u = rng.normal(size=4)
            q[a:a + 4] = u / np.linalg.norm(u)
        else:
            q[a] += rng.uniform(-0.7, 0.7)
    d.qpos[:] = q
    mujoco.mj_forward(m, d)
    res["qpos_random"] = q.tolist()
    res["groups_random"] = groups(m, d)
    return res


def main():
    suite = sys.argv[1]
    out = {
        "mujoco": mujoco.__version__,
        "dm_control": "1.0.50",
        "models": {name: measure(f"{suite}/{name}.xml", 7 + k) for k, name in enumerate(MODELS)},
    }
    json.dump(out, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
