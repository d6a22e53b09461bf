"""MuJoCo's sysid toolbox (`mujoco.sysid`, pip `mujoco[sysid]`) on the sysid-arm data (issue 14 item 6).

Same data as the Rust experiment (bench/sysid/data/panda.npz from gen.py: the noisy q, v, τ of the training
motion and its servo references), same 84 parameters, same start:
  * per link panda_link1..7 a log-Cholesky θ (10 each; the convention of the toolbox's InertiaType.Pseudo and of
    torsion, in the frame at the start COM; our modifier, as the toolbox's recompiles with inertiafromgeom, which a
    geometry-free model fails), bounds θ₀ ± 3, from the start torsion uses (the truth's log-Cholesky coordinates in torsion's body frame ± 0.3,
    alternating: `start_inertials`), damping and frictionloss per joint from 0.1 (bounds [0, 10]);
  * the toolbox's residual: rollouts of the servo references from the recorded initial state, compared with the
    recorded joint-position, joint-velocity and actuator-force sensors (its default, `build_residual_fn`), one
    thread (`n_threads=1`, the issue's one-core comparison);
  * its default optimiser (`optimizer="mujoco"`: Gauss–Newton / LM with finite-difference Jacobians), at most
    `--max-iters` iterations.
Writes bench/sysid/data/mujoco_fit.json (`--quick`: the first `--quick-seconds` of the motion,
mujoco_fit_quick.json): wall time of `optimize`, and the identified link inertials (compiled model: m, COM and
inertia about the COM in the link frame), damping, frictionloss, from which the experiment computes
`mujoco_torque_prediction_rmse` on the held-out motion with its own pipeline.
Usage: python3 bench/sysid/mujoco_fit.py [--quick] [--max-iters N]
"""
import argparse
import json
import os
import sys
import time

import mujoco
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import panda_mj  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
START_OFFSET = 0.3


def theta_from_pi(p):
    """torsion's log_cholesky::theta_from_params (π = m, h, Ixx, Ixy, Iyy, Ixz, Iyz, Izz about the frame origin)."""
    m, hx, hy, hz, ixx, ixy, iyy, ixz, iyz, izz = p
    ht = 0.5 * (ixx + iyy + izz)
    j = np.array([[ht - ixx, -ixy, -ixz, hx], [-ixy, ht - iyy, -iyz, hy], [-ixz, -iyz, ht - izz, hz], [hx, hy, hz, m]])
    u = np.zeros((4, 4))
    for c in range(3, -1, -1):
        d = j[c, c] - sum(u[c, k] ** 2 for k in range(c + 1, 4))
        u[c, c] = np.sqrt(d)
        for r in range(c):
            u[r, c] = (j[r, c] - sum(u[r, k] * u[c, k] for k in range(c + 1, 4))) / u[c, c]
    ea = u[3, 3]
    n = u / ea
    return np.array([np.log(ea), np.log(n[0, 0]), np.log(n[1, 1]), np.log(n[2, 2]), n[0, 1], n[1, 2], n[0, 2],
                     n[0, 3], n[1, 3], n[2, 3]])


def pi_from_theta(th):
    a, d1, d2, d3, s12, s23, s13, t1, t2, t3 = th
    u = np.exp(a) * np.array([[np.exp(d1), s12, s13, t1], [0, np.exp(d2), s23, t2], [0, 0, np.exp(d3), t3],
                              [0, 0, 0, 1]])
    j = u @ u.T
    tr = np.trace(j[:3, :3])
    i = tr * np.eye(3) - j[:3, :3]
    return np.array([j[3, 3], j[0, 3], j[1, 3], j[2, 3], i[0, 0], i[0, 1], i[1, 1], i[0, 2], i[1, 2], i[2, 2]])


def pi_about_com(m, ic):
    return np.array([m, 0, 0, 0, ic[0, 0], ic[0, 1], ic[1, 1], ic[0, 2], ic[1, 2], ic[2, 2]])


def set_inertial(body, c_ref, th):
    """A body's inertial from log-Cholesky θ in the frame at c_ref (link frame, axes of the link)."""
    p = pi_from_theta(th)
    m, ct = p[0], p[1:4] / p[0]
    io = np.array([[p[4], p[5], p[7]], [p[5], p[6], p[8]], [p[7], p[8], p[9]]])
    set_body(body, m, c_ref + ct, io - m * (ct @ ct * np.eye(3) - np.outer(ct, ct)))


def set_body(body, m, c, ic):
    """mass, COM (link frame) and inertia about the COM (principal axes into body.inertia / iquat)."""
    w, v = np.linalg.eigh(0.5 * (ic + ic.T))
    if np.linalg.det(v) < 0:
        v[:, 0] = -v[:, 0]
    q = np.zeros(4)
    mujoco.mju_mat2Quat(q, v.ravel())
    body.explicitinertial = True
    body.mass = float(m)
    body.ipos = c
    body.fullinertia = np.full(6, np.nan)
    body.inertia = np.maximum(w, 1e-12)
    body.iquat = q


def start_inertials(true_rows):
    """The start of sysid_arm.rs: per link (k), torsion's body frame = link frame at the true COM, π* = (m, 0,
    I_c), θ* ± 0.3 ((3k + i) even: +), back to (m, COM, I about the COM) in the link frame."""
    out = []
    for k, row in enumerate(true_rows):
        m, c, ic = row[0], row[1:4], row[4:13].reshape(3, 3)
        th = theta_from_pi([m, 0, 0, 0, ic[0, 0], ic[0, 1], ic[1, 1], ic[0, 2], ic[1, 2], ic[2, 2]])
        th = th + START_OFFSET * np.array([1.0 if (3 * k + i) % 2 == 0 else -1.0 for i in range(10)])
        p = pi_from_theta(th)
        m0, h = p[0], p[1:4]
        ct = h / m0
        io = np.array([[p[4], p[5], p[7]], [p[5], p[6], p[8]], [p[7], p[8], p[9]]])
        icom = io - m0 * (ct @ ct * np.eye(3) - np.outer(ct, ct))
        out.append((m0, c + ct, icom))
    return out


def main():
    from mujoco import sysid

    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--quick-seconds", type=float, default=2.0)
    ap.add_argument("--max-iters", type=int, default=20)
    a = ap.parse_args()
    z = np.load(os.path.join(ROOT, "bench/sysid/data/panda.npz"))
    n = len(z["train_t"]) if not a.quick else int(a.quick_seconds / float(z["dt"]))
    t = z["train_t"][:n]
    spec = panda_mj.spec(damping=np.full(7, 0.1), frictionloss=np.full(7, 0.1))
    # log-Cholesky values are consistent, but eigen round-off can break A + B ≥ C of a thin body by 1e-17
    spec.compiler.balanceinertia = True
    # the common start; compiling once makes the spec's panda_link7 the fused link (fusestatic edits the spec)
    model = spec.compile()
    true_rows = z["link_inertials"]
    starts = start_inertials(true_rows)
    for k, b in enumerate(panda_mj.BODIES):
        m0, c0, i0 = starts[k]
        body = spec.body(b)
        set_body(body, m0, c0, i0)
    model = spec.compile()
    start_check = np.abs(panda_mj.link_inertials(model)[:, 0] - np.array([s[0] for s in starts])).max()

    params = sysid.ParameterDict()
    # the toolbox's InertiaType.Pseudo modifier recompiles with inertiafromgeom on (`_infer_inertial`), which a
    # model without geoms (the DAE meshes stripped) cannot pass; the same log-Cholesky θ through our modifier
    for k, b in enumerate(panda_mj.BODIES):
        m0, c0, i0 = starts[k]
        th0 = theta_from_pi(pi_about_com(m0, i0))
        params.add(sysid.Parameter(f"{b}_theta", nominal=th0, min_value=th0 - 3.0, max_value=th0 + 3.0,
                                   modifier=lambda s, p, b=b, c0=c0: set_inertial(s.body(b), c0, p.value)))
    for j in panda_mj.JOINTS:
        params.add(sysid.Parameter(f"{j}_damping", nominal=0.1, min_value=0.0, max_value=10.0,
                                   modifier=lambda s, p, j=j: setattr(s.joint(j), "damping", [p.value[0], 0.0, 0.0])))
        params.add(sysid.Parameter(f"{j}_frictionloss", nominal=0.1, min_value=0.0, max_value=10.0,
                                   modifier=lambda s, p, j=j: setattr(s.joint(j), "frictionloss", p.value[0])))
    d = mujoco.MjData(model)
    state0 = sysid.create_initial_state(model, z["train_q"][0], z["train_v"][0], d.act)
    sensors = np.concatenate([z["train_q"][:n], z["train_v"][:n], z["train_tau"][:n]], axis=1)
    ms = sysid.ModelSequences("panda", spec, "train", state0, sysid.TimeSeries(t, z["train_ctrl"][:n]),
                              sysid.TimeSeries.from_names(t, sensors, model))
    residual_fn = sysid.build_residual_fn(models_sequences=[ms], n_threads=1)
    t0 = time.perf_counter()
    opt, res = sysid.optimize(initial_params=params, residual_fn=residual_fn, optimizer="mujoco", verbose=False,
                              max_iters=a.max_iters)
    wall = time.perf_counter() - t0
    fitted = sysid.apply_param_modifiers(opt, spec.copy() if hasattr(spec, "copy") else spec)
    out = {
        "wall_time_s": wall,
        "link_inertials": panda_mj.link_inertials(fitted).tolist(),
        "damping": fitted.dof_damping.tolist(),
        "frictionloss": fitted.dof_frictionloss.tolist(),
        "parameters": int(opt.size),
        "max_iters": a.max_iters,
        "seconds_of_data": float(t[-1] - t[0] + float(z["dt"])),
        "start_mass_check": float(start_check),
        "final_objective": float(0.5 * np.sum(np.concatenate(residual_fn(opt.as_vector(), opt)[0]) ** 2)),
        "mujoco_version": mujoco.__version__,
        "settings": "mujoco.sysid, optimizer='mujoco' (finite-difference Jacobians), residual: rollouts of the servo "
                    "references vs jointpos + jointvel + actuatorfrc sensors, n_threads=1, InertiaType.Pseudo per link",
    }
    path = os.path.join(ROOT, "bench/sysid/data", "mujoco_fit_quick.json" if a.quick else "mujoco_fit.json")
    json.dump(out, open(path, "w"), indent=1)
    print(f"wrote {path}: {wall:.2f} s, damping {np.round(out['damping'], 3)}, frictionloss "
          f"{np.round(out['frictionloss'], 3)}")


if __name__ == "__main__":
    main()
