"""sysid-contact data (issue 14 item 6): a box thrown onto a table and pushed across it, simulated by MuJoCo.

A 10 cm box (mass M, friction μ with the table, which has none of its own: MuJoCo takes the larger of the pair,
as torsion does) is thrown down flat from 5 cm above the table at 1 m/s, bounces (ε), then from t₀ = 0.35 s is pushed back and
forth by a known horizontal force F(t) = (4 sin 3(t − t₀), sin 5(t − t₀)) N through its centre (stick and slip,
|v| < 0.9 m/s: μ, m). A horizontal velocity at the bounces would tip the box over (the friction impulse spins it at
~20 rad/s), so the throw is vertical (two motors on the free
joint's world x, y forces: MuJoCo's `ctrl`, so its sysid toolbox replays it). The push makes the mass observable
(gravity alone scales with it, spec 001 §3.11 item 10).

MuJoCo's contact is soft, torsion's `ncp` is hard (Signorini + Newton restitution). The data's contact is made as
stiff and as close to a restitution law as MuJoCo allows: elliptic cone, condim 3, solimp (0.99, 0.999, 0.001),
solref (τ = 5 ms, ζ = 0.3) at a 0.5 ms step (τ = 2 ms bounces 10–20 % below the formula and chatters more); a linear spring–damper of damping ratio ζ rebounds with
ε(ζ) = exp(−π ζ / √(1 − ζ²)) ("eps_formula"). MuJoCo's constraint impedance makes the actual bounce differ, so the
truth for ε is also measured from the noise-free data ("eps_measured": mean over the first bounces of −v_z after
contact / v_z before, velocities 4 ms outside the contact phase), and their difference is the floor this mapping
sets (here 0.371, 0.388 vs 0.372). The other part of that floor: while it slides, MuJoCo's soft box rocks and
yaws on its four corners (|ω| up to ~5 rad/s, hops of ~2 mm, tilt ~0.01 rad; at any ζ, τ, impratio tried),
where the hard contact keeps it flat; and the contact lasts ~τ instead of an instant. The rocking grows with the
sliding speed (a push of 3 + 2 sin 3t N, 2.6 m/s: ~5 rad/s, 2–4 mm hops, the mean friction force down to 0.1 mg),
hence the back-and-forth push (|ω| < 2 rad/s, hops < 0.4 mm).

Saved every 4th step (dt = 2 ms), 2 s: q (7: position, quaternion w x y z), v in torsion's free-joint convention
(body-frame ω, then body-frame linear velocity; MuJoCo's qvel is world linear, body angular), the push per step
(world x, y), with N(0, σ²) noise on q (σ_q = 1e-4) and v (σ_v = 1e-3), seed 5. Writes
tests/data/sysid/box_contact.npz (float64, ~0.2 MB; the experiment's full and quick runs both read it).
Usage: python3 bench/sysid/gen_contact.py
"""
import os

import mujoco
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MASS, MU, ZETA = 0.8, 0.3, 0.3
TAU_REF, STEP, EVERY, SECONDS = 0.005, 0.0005, 4, 2.0
SIGMA_Q, SIGMA_V, SEED = 1e-4, 1e-3, 5
HALF = 0.05


def xml(mass=MASS, mu=MU, zeta=ZETA):
    return f"""<mujoco model="box_table">
<option timestep="{STEP}" gravity="0 0 -9.81" cone="elliptic" integrator="implicitfast"/>
<default><geom condim="3" solimp="0.99 0.999 0.001" solref="{TAU_REF} {zeta}"/></default>
<worldbody>
<geom name="table" type="plane" size="20 20 0.1" friction="0 0 0"/>
<body name="box" pos="0 0 {HALF + 0.05}"><freejoint name="free"/>
<geom name="boxg" type="box" size="{HALF} {HALF} {HALF}" mass="{mass}" friction="{mu} 0 0"/></body>
</worldbody>
<actuator><motor name="fx" joint="free" gear="1 0 0 0 0 0"/><motor name="fy" joint="free" gear="0 1 0 0 0 0"/></actuator>
<sensor><framepos name="pos" objtype="body" objname="box"/><framequat name="quat" objtype="body" objname="box"/></sensor>
</mujoco>"""


T_PUSH = 0.35


def push(t):
    if t < T_PUSH:
        return np.zeros(2)
    s = t - T_PUSH
    return np.array([4.0 * np.sin(3.0 * s), 1.0 * np.sin(5.0 * s)])


def eps_formula(zeta):
    return float(np.exp(-np.pi * zeta / np.sqrt(1.0 - zeta * zeta)))


def simulate(mass=MASS, mu=MU, zeta=ZETA, seconds=SECONDS):
    """Every MuJoCo step: t, qpos, qvel, ctrl (the push held over each saved interval)."""
    m = mujoco.MjModel.from_xml_string(xml(mass, mu, zeta))
    d = mujoco.MjData(m)
    d.qvel[:3] = [0.0, 0.0, -1.0]
    n = int(round(seconds / STEP))
    ts, qs, vs, us, ncon = [], [], [], [], []
    for k in range(n + 1):
        ts.append(d.time)
        qs.append(d.qpos.copy())
        vs.append(d.qvel.copy())
        ncon.append(d.ncon)
        if k == n:
            break
        if k % EVERY == 0:
            d.ctrl[:] = push((k // EVERY) * STEP * EVERY)
        us.append(d.ctrl.copy())
        mujoco.mj_step(m, d)
    return m, np.array(ts), np.array(qs), np.array(vs), np.array(us), np.array(ncon)


def quat_mat(q):
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def to_torsion_v(q, v):
    """MuJoCo free qvel (world linear, body angular) → torsion (body angular, body linear)."""
    r = quat_mat(q[3:7])
    return np.concatenate([v[3:6], r.T @ v[:3]])


def measured_restitution(vz, ncon, bounces=3):
    """−v_z after / v_z before each of the first contact phases, 4 ms (8 steps) outside the phase."""
    out, k, n = [], 0, len(vz)
    while len(out) < bounces and k < n:
        if ncon[k] > 0 and (k == 0 or ncon[k - 1] == 0):
            e = k
            while e < n and ncon[e] > 0:
                e += 1
            if e >= n or vz[max(k - 8, 0)] > -0.3:
                break
            out.append(-vz[min(e + 8, n - 1)] / vz[max(k - 8, 0)])
            k = e
        k += 1
    return out


def main():
    m, ts, qs, vs, us, ncon = simulate()
    sl = slice(0, None, EVERY)
    q, v = qs[sl], vs[sl]
    vt = np.array([to_torsion_v(a, b) for a, b in zip(q, v)])
    u = us[::EVERY][: len(q) - 1]
    rng = np.random.default_rng(SEED)
    qn = q + SIGMA_Q * rng.standard_normal(q.shape)
    vn = vt + SIGMA_V * rng.standard_normal(vt.shape)
    eps_m = measured_restitution(vs[:, 2], ncon)
    out = os.path.join(ROOT, "tests/data/sysid/box_contact.npz")
    np.savez_compressed(
        out, dt=np.array([STEP * EVERY]), q=qn, v=vn, push=u, q_true=q, v_true=vt,
        mass=np.array([MASS]), mu=np.array([MU]), zeta=np.array([ZETA]), eps_formula=np.array([eps_formula(ZETA)]),
        eps_measured=np.array([np.mean(eps_m)]), eps_bounces=np.array(eps_m), half=np.array([HALF]),
        sigma_q=np.array([SIGMA_Q]), sigma_v=np.array([SIGMA_V]), mujoco_step=np.array([STEP]),
        solref=np.array([TAU_REF, ZETA]), solimp=np.array([0.99, 0.999, 0.001]),
        mujoco_version=np.array([mujoco.__version__]))
    print(f"{out}: {len(q)} samples, dt {STEP * EVERY}, ε formula {eps_formula(ZETA):.3f}, measured {eps_m}, "
          f"final x {q[-1, :3]}, max tilt {np.abs(q[:, 4:7]).max():.2e}, {os.path.getsize(out) / 1e3:.0f} kB")


if __name__ == "__main__":
    main()
