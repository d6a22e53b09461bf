"""MuJoCo's sysid toolbox (`mujoco.sysid`) on the sysid-contact data (issue 14 item 6).

Same data as the Rust experiment (tests/data/sysid/box_contact.npz from gen_contact.py: the noisy box pose and
velocity, the known push), same three parameters from the same start (m = 1.2 kg, μ = 0.15, ε = 0.6):
  * mass (the box geom's mass; the inertia follows, as MuJoCo derives it from the geom), μ (the box geom's sliding
    friction; the table has none), and the contact damping ratio ζ of solref (set on both geoms, so that the
    pair's mixed solref is (τ, ζ)), started at ζ(ε = 0.6) and reported as ε(ζ) = exp(−πζ/√(1 − ζ²));
  * the toolbox's default residual (`build_residual_fn`): one rollout of the push from the recorded initial
    state, compared with the recorded framepos + framequat sensors; one thread;
  * its default optimiser (`optimizer="mujoco"`: Gauss–Newton / LM, finite-difference Jacobians).
Writes bench/sysid/data/mujoco_contact_fit.json (`--quick`: the first 0.7 s, mujoco_contact_fit_quick.json):
wall time of `optimize`, the identified mass, μ, ζ, ε.
Usage: python3 bench/sysid/mujoco_contact_fit.py [--quick] [--max-iters N]
"""
import argparse
import json
import os
import sys
import time

import mujoco
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_contact  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
START = (1.2, 0.15, 0.6)
QUICK_S = 0.7


def zeta_of_eps(e):
    le = np.log(e)
    return float(-le / np.sqrt(np.pi ** 2 + le * le))


def main():
    from mujoco import sysid

    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--max-iters", type=int, default=30)
    a = ap.parse_args()
    z = np.load(os.path.join(ROOT, "tests/data/sysid/box_contact.npz"))
    dt = float(z["dt"][0])
    n = len(z["push"]) if not a.quick else int(round(QUICK_S / dt))
    t = np.arange(n + 1) * dt
    spec = mujoco.MjSpec.from_string(gen_contact.xml(mass=START[0], mu=START[1], zeta=zeta_of_eps(START[2])))
    model = spec.compile()
    params = sysid.ParameterDict()
    params.add(sysid.Parameter("mass", nominal=START[0], min_value=0.05, max_value=20.0,
                               modifier=lambda s, p: setattr(s.geom("boxg"), "mass", p.value[0])))
    params.add(sysid.Parameter("mu", nominal=START[1], min_value=0.0, max_value=2.0,
                               modifier=lambda s, p: setattr(s.geom("boxg"), "friction", [p.value[0], 0.0, 0.0])))

    def set_zeta(s, p):
        for g in ("boxg", "table"):
            s.geom(g).solref = [gen_contact.TAU_REF, p.value[0]]

    params.add(sysid.Parameter("zeta", nominal=zeta_of_eps(START[2]), min_value=0.01, max_value=0.99,
                               modifier=set_zeta))
    q0, v0 = z["q"][0], z["v"][0]
    # torsion's free-joint velocity (body ω, body linear) → MuJoCo's qvel (world linear, body ω)
    r = gen_contact.quat_mat(q0[3:7] / np.linalg.norm(q0[3:7]))
    qvel0 = np.concatenate([r @ v0[3:6], v0[:3]])
    state0 = sysid.create_initial_state(model, q0, qvel0)
    ctrl = np.vstack([z["push"][:n], z["push"][n - 1:n]])
    sensors = z["q"][: n + 1]
    ms = sysid.ModelSequences("box", spec, "contact", state0, sysid.TimeSeries(t, ctrl),
                              sysid.TimeSeries.from_names(t, sensors, model))
    residual_fn = sysid.build_residual_fn(models_sequences=[ms], n_threads=1)
    t0 = time.perf_counter()
    opt, res = sysid.optimize(initial_params=params, residual_fn=residual_fn, optimizer="mujoco", verbose=False,
                              max_iters=a.max_iters)
    wall = time.perf_counter() - t0
    v = opt.as_vector()
    out = {
        "wall_time_s": wall,
        "mass": float(v[0]),
        "mu": float(v[1]),
        "zeta": float(v[2]),
        "eps": gen_contact.eps_formula(float(v[2])),
        "start": list(START),
        "max_iters": a.max_iters,
        "seconds_of_data": n * dt,
        "final_objective": float(0.5 * np.sum(np.concatenate(residual_fn(v, opt)[0]) ** 2)),
        "mujoco_version": mujoco.__version__,
        "settings": "mujoco.sysid, optimizer='mujoco' (finite-difference Jacobians), residual: one rollout of the "
                    "push from the recorded initial state vs framepos + framequat sensors, n_threads=1",
    }
    os.makedirs(os.path.join(ROOT, "bench/sysid/data"), exist_ok=True)
    path = os.path.join(ROOT, "bench/sysid/data", "mujoco_contact_fit_quick.json" if a.quick else "mujoco_contact_fit.json")
    json.dump(out, open(path, "w"), indent=1)
    print(f"wrote {path}: {wall:.2f} s, mass {out['mass']:.4f}, mu {out['mu']:.4f}, eps {out['eps']:.4f}")


if __name__ == "__main__":
    main()
