"""MuJoCo ground truth for spec 003 (issue 16 item 5): SUPERball in the air (Exp. A, §4.1) and thrown (Exp. B, §4.2).

Data sets (one .npz per trajectory, under --out, default bench/tensegrity/data/):
  air_h{1,100}_{train,val,test00..test09}.npz: superball_air.xml (rod 0 welded at 3 m, rod–rod contact off, I11),
      24 cable controls i.i.d. U[ctrlrange] = U[-100, 100], redrawn every `hold` steps (1 ms or 100 ms), w_0 = 0
      (act = 0), 5000 steps at dt = 1 ms from qpos0. Only the 1 ms set has train / val (the paper trains on one
      trajectory); both intervals have 10 tests.
  throw_{train,val,train1..train4,test00..test09}.npz: superball.xml thrown from the settled rest pose: every rod
      gets the same linear velocity (U cos ψ, U sin ψ, v_z), U ~ U(2, 7) m/s, ψ ~ U(0, 2π), v_z ~ U(0, 1) m/s,
      zero angular velocity, zero controls, 5000 steps. train + train1..4 are the 5 training throws.
Each file: qpos (T+1, nq), qvel (T+1, nv), act (T+1, na), ctrl (T, nu), dt, seed, hold, the constants (body_mass,
body_inertia, tendon_stiffness, tendon_damping, tendon_lengthspring, actuator_gain, actuator_dynprm, ctrlrange,
gravity, rod_radius), model (file name) and mujoco_version. States are read from qpos / qvel after mj_step
(never xpos, spec 003 §3.1).

Random numbers: controls, headings and speeds come from `XorShift` below, the generator torsion's Rust side has
(torsion_diff::gradcheck::XorShift, seeded through splitmix64 as `TensegrityRng` in torsion-experiments), so the
Rust experiment regenerates every control sequence from its seed and the committed quick set stays small.

Settling (§4.2): superball.xml starts in its triangle-down rest geometry slightly off equilibrium; we step it with
zero controls until max |qvel| < 1e-5 (about 4400 steps, CoM z ≈ 0.7295 m), and throw from that state.
Calibration (§4.2, recorded): the model file is used unchanged (R = 0.02 m, friction 1 1 1, default solref /
solimp, pyramidal cone); `--calibrate N` prints the mean CoM path and the step where the CoM speed first drops
below 1 cm/s over N throws (spec: paper path 2.35 m, stops within 100–2000 steps).

Quick set (`--quick-set`, committed at tests/data/tensegrity/air_quick.npz, < 1 MB): the first QUICK_TRAIN steps of
air_h1_train (qpos, qvel, act, ctrl) and, for each interval and each of the 10 tests, qpos every CHECK_EVERY steps
(test_qpos_h{1,100}; test_seeds_h{1,100} name the control sequences) and the chaos floor there (test_floor_h{1,100}:
max |Δqpos| of MuJoCo against itself from qpos[0] moved by 1e-15). tests/python/test_tensegrity_gt.py
regenerates it and checks it is bit-identical.

Contact quick set (`--throw-quick-set`, committed at tests/data/tensegrity/throw_quick.npz): one-step pairs every
THROW_PAIR_STRIDE steps of the 5 training throws and the 10 test throws' first states and CoM every CHECK_EVERY
steps through step THROW_EVAL (`throw_quick_set`).

Network quick set (`--net-quick-set`, committed at tests/data/tensegrity/net_quick.npz): consecutive states (every
step, so the contacts' clock t_c of spec 003 §3.9 runs along them) of the first NET_QUICK_TRAIN steps of the
training throw and the first NET_QUICK_VAL of the validation throw, for tensegrity-mlp / tensegrity-residual.
Extra throws (`--net-throws N`, not committed): throw_net00..NN.npz with seeds SEED_NET + i, for the residual
network's 30- and 50-throw runs (H5's late drift).

3-bar set (`--bar3-quick-set`, committed at tests/data/tensegrity/bar3_quick.npz; spec 003 §4.6, decisions.md "The
3-bar"): tensegrity_3bar.xml (0.1 g) dropped from 0.2 m above its file pose, settled from the file pose, and driven
from that rest by `controls` (seed BAR3_SEED, 100 ms holds) × BAR3_SCALE; qpos every CHECK_EVERY steps
(`bar3_quick_set`).

Usage: python3 bench/tensegrity/gt.py [--out DIR] [--quick-set FILE] [--throw-quick-set FILE] [--net-quick-set FILE]
       [--bar3-quick-set FILE] [--net-throws N] [--calibrate N]
"""
import argparse, os, sys

import numpy as np
import mujoco

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MJCF = os.path.join(ROOT, "crates", "torsion-model", "tests", "data", "mjcf")
AIR, BALL = os.path.join(MJCF, "superball_air.xml"), os.path.join(MJCF, "superball.xml")
BAR3 = os.path.join(MJCF, "tensegrity_3bar.xml")
STEPS = 5000
M64 = (1 << 64) - 1
# seeds: air train / val (1 ms), air tests 1 ms and 100 ms, throws
SEED_TRAIN, SEED_VAL = 1000, 1001
SEEDS_TEST = {1: [2000 + i for i in range(10)], 100: [3000 + i for i in range(10)]}
SEED_THROW = 4000
QUICK_TRAIN, CHECK_EVERY = 300, 100
# throws in seed order (SEED_THROW + index); the 5 training throws; the contact quick set's pair stride and horizon
THROW_NAMES = ["train", "val", "train1", "train2", "train3", "train4"] + [f"test{i:02d}" for i in range(10)]
THROW_TRAIN = ["train", "train1", "train2", "train3", "train4"]
THROW_PAIR_STRIDE, THROW_EVAL, SCENE_EVERY = 125, 4000, 20
SETTLE_TOL, SETTLE_MAX = 1e-5, 20000
# the network quick set's consecutive steps (train, val) and the extra throws' first seed
NET_QUICK_TRAIN, NET_QUICK_VAL, SEED_NET = 500, 200, 5000
# the 3-bar set: drop height (m) and steps; the actuated run's seed, hold (100 ms), control scale and steps
BAR3_DROP, BAR3_DROP_STEPS = 0.2, 3000
BAR3_SEED, BAR3_HOLD, BAR3_SCALE, BAR3_ACT_STEPS = 6000, 100, 0.1, 2000


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


class XorShift:
    """xorshift64 (13, 7, 17) as torsion_diff::gradcheck::XorShift, state = splitmix64(seed)."""

    def __init__(self, seed):
        self.s = splitmix64(seed) or 1

    def u(self):
        s = self.s
        s ^= (s << 13) & M64
        s ^= s >> 7
        s ^= (s << 17) & M64
        self.s = s
        return float(s >> 11) / float(1 << 53)


def controls(m, steps, hold, seed):
    """ctrl rows: each actuator i U[lo_i, hi_i) as lo + (hi − lo)·u, redrawn every `hold` steps."""
    rng = XorShift(seed)
    lo, hi = m.actuator_ctrlrange[:, 0], m.actuator_ctrlrange[:, 1]
    rows = np.zeros((steps, m.nu))
    for k in range(steps):
        if k % hold == 0:
            u = np.array([lo[i] + (hi[i] - lo[i]) * rng.u() for i in range(m.nu)])
        rows[k] = u
    return rows


def constants(m):
    return dict(
        body_mass=m.body_mass.copy(), body_inertia=m.body_inertia.copy(), tendon_stiffness=m.tendon_stiffness.copy(),
        tendon_damping=m.tendon_damping.copy(), tendon_lengthspring=m.tendon_lengthspring.copy(),
        actuator_gain=m.actuator_gainprm[:, 0].copy(), actuator_dynprm=m.actuator_dynprm[:, 0].copy(),
        ctrlrange=m.actuator_ctrlrange.copy(), gravity=m.opt.gravity.copy(), rod_radius=m.geom_size[m.geom_type == 3, 0],
        dt=m.opt.timestep, mujoco_version=mujoco.__version__)


def simulate(m, d, ctrl):
    qs, vs, acts = [d.qpos.copy()], [d.qvel.copy()], [d.act.copy()]
    for row in ctrl:
        d.ctrl[:] = row
        mujoco.mj_step(m, d)
        qs.append(d.qpos.copy())
        vs.append(d.qvel.copy())
        acts.append(d.act.copy())
    return np.array(qs), np.array(vs), np.array(acts)


def air(m, hold, seed, steps=STEPS):
    assert m.opt.integrator == mujoco.mjtIntegrator.mjINT_EULER
    ctrl = controls(m, steps, hold, seed)
    d = mujoco.MjData(m)
    qpos, qvel, act = simulate(m, d, ctrl)
    assert d.ncon == 0, "the air model must not touch the floor"
    return dict(qpos=qpos, qvel=qvel, act=act, ctrl=ctrl, seed=seed, hold=hold, model="superball_air.xml",
                **constants(m))


def settle(m):
    """Zero controls from qpos0 until max |qvel| < SETTLE_TOL; returns (data, steps)."""
    d = mujoco.MjData(m)
    for k in range(SETTLE_MAX):
        mujoco.mj_step(m, d)
        if np.abs(d.qvel).max() < SETTLE_TOL:
            return d, k + 1
    raise RuntimeError(f"{m}: did not settle in {SETTLE_MAX} steps")


def throw(m, rest, seed, steps=STEPS):
    rng = XorShift(seed)
    speed, heading, vz = 2.0 + 5.0 * rng.u(), 2.0 * np.pi * rng.u(), rng.u()
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:], d.act[:] = rest.qpos, 0.0, rest.act
    for j in range(m.njnt):  # free joints: world linear velocity first (§3.1), body angular velocity zero
        d.qvel[6 * j:6 * j + 3] = [speed * np.cos(heading), speed * np.sin(heading), vz]
    mujoco.mj_forward(m, d)
    ctrl = np.zeros((steps, m.nu))
    qpos, qvel, act = simulate(m, d, ctrl)
    return dict(qpos=qpos, qvel=qvel, act=act, ctrl=ctrl, seed=seed, hold=0, model="superball.xml",
                throw_speed=speed, throw_heading=heading, throw_vz=vz, **constants(m))


def com_stats(m, tr):
    """CoM path length (m) and the first step with CoM speed < 1 cm/s (None if it keeps moving)."""
    nb = m.njnt
    com = np.mean([tr["qpos"][:, 7 * j:7 * j + 3] for j in range(nb)], axis=0)
    path = np.linalg.norm(np.diff(com, axis=0), axis=1).sum()
    speed = np.linalg.norm(np.diff(com, axis=0), axis=1) / m.opt.timestep
    slow = np.nonzero(speed < 0.01)[0]
    return path, (int(slow[0]) if len(slow) else None)


def chaos_floor(m, hold, seed, qpos, eps=1e-15):
    """max |qpos − qpos'| per step of MuJoCo against itself started from qpos[0] + eps (decisions.md, 100 ms)."""
    d = mujoco.MjData(m)
    d.qpos[0] += eps
    q2, _, _ = simulate(m, d, controls(m, STEPS, hold, seed))
    return np.abs(q2 - qpos).max(axis=1)


def quick_set(path):
    m = mujoco.MjModel.from_xml_path(AIR)
    tr = air(m, 1, SEED_TRAIN)
    out = dict(qpos=tr["qpos"][:QUICK_TRAIN + 1], qvel=tr["qvel"][:QUICK_TRAIN + 1], act=tr["act"][:QUICK_TRAIN + 1],
               ctrl=tr["ctrl"][:QUICK_TRAIN], train_seed=SEED_TRAIN, hold_train=1, check_every=CHECK_EVERY,
               steps=STEPS, model="superball_air.xml", **constants(m))
    for hold, seeds in SEEDS_TEST.items():
        out[f"test_seeds_h{hold}"] = np.array(seeds)
        qs = [air(m, hold, s)["qpos"] for s in seeds]
        out[f"test_qpos_h{hold}"] = np.array([q[::CHECK_EVERY] for q in qs])
        out[f"test_floor_h{hold}"] = np.array([chaos_floor(m, hold, s, q)[::CHECK_EVERY] for s, q in zip(seeds, qs)])
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    np.savez_compressed(path, **out)
    return out


def throw_quick_set(path):
    """The contact experiment's quick set (tensegrity-contact-id, < 400 KB): one-step pairs (q_t, v_t, q_{t+1}, v_{t+1}) every
    THROW_PAIR_STRIDE steps of the 5 training throws (pair_throw: 0 = train, 1..4 = train1..4), and for the 10 test
    throws their first state and the CoM every CHECK_EVERY steps through step THROW_EVAL (test_com), with the
    CoM path length over all 5000 steps (test_path), the first step with CoM speed < 1 cm/s (test_stop, -1: none) and
    test 0's qpos every SCENE_EVERY steps (test0_qpos, the viewer's MuJoCo side)."""
    ball = mujoco.MjModel.from_xml_path(BALL)
    rest, n_settle = settle(ball)
    out = dict(model="superball.xml", settle_steps=n_settle, check_every=CHECK_EVERY, eval_steps=THROW_EVAL,
               scene_every=SCENE_EVERY,
               pair_stride=THROW_PAIR_STRIDE, **constants(ball))
    pq, pq1, pv, pv1, pt, ps = [], [], [], [], [], []
    for i, name in enumerate(THROW_TRAIN):
        tr = throw(ball, rest, SEED_THROW + THROW_NAMES.index(name))
        for t in range(0, STEPS, THROW_PAIR_STRIDE):
            pq.append(tr["qpos"][t]); pq1.append(tr["qpos"][t + 1]); pv.append(tr["qvel"][t]); pv1.append(tr["qvel"][t + 1]); pt.append(i); ps.append(t)
    out.update(pair_qpos=np.array(pq), pair_qpos1=np.array(pq1), pair_qvel=np.array(pv), pair_qvel1=np.array(pv1), pair_throw=np.array(pt),
               pair_step=np.array(ps))
    q0, v0, com, paths, stops = [], [], [], [], []
    for i in range(10):
        tr = throw(ball, rest, SEED_THROW + THROW_NAMES.index(f"test{i:02d}"))
        q0.append(tr["qpos"][0]); v0.append(tr["qvel"][0])
        if i == 0:  # the scene's MuJoCo side
            out["test0_qpos"] = tr["qpos"][:THROW_EVAL + 1:SCENE_EVERY]
        c = np.mean([tr["qpos"][:, 7 * j:7 * j + 3] for j in range(ball.njnt)], axis=0)
        com.append(c[:THROW_EVAL + 1:CHECK_EVERY])
        length, stop = com_stats(ball, tr)
        paths.append(length); stops.append(-1 if stop is None else stop)
    out.update(test_qpos0=np.array(q0), test_qvel0=np.array(v0), test_com=np.array(com), test_path=np.array(paths),
               test_stop=np.array(stops))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    np.savez_compressed(path, **out)
    return out


def net_quick_set(path):
    """The learned contact models' quick set (tensegrity-mlp / -residual, < 500 KB): qpos / qvel of the training
    throw's first NET_QUICK_TRAIN + 1 states and the validation throw's first NET_QUICK_VAL + 1, every step."""
    ball = mujoco.MjModel.from_xml_path(BALL)
    rest, n_settle = settle(ball)
    out = dict(model="superball.xml", settle_steps=n_settle, **constants(ball))
    for name, n in [("train", NET_QUICK_TRAIN), ("val", NET_QUICK_VAL)]:
        tr = throw(ball, rest, SEED_THROW + THROW_NAMES.index(name))
        out[f"{name}_qpos"], out[f"{name}_qvel"] = tr["qpos"][:n + 1], tr["qvel"][:n + 1]
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    np.savez_compressed(path, **out)
    return out


def bar3_quick_set(path):
    """The 3-bar's set (spec 003 §4.6, tests/data/tensegrity/bar3_quick.npz, < 100 KB): tensegrity_3bar.xml
    (1) dropped from its file pose raised by BAR3_DROP m, zero controls, BAR3_DROP_STEPS steps: qpos every
    CHECK_EVERY steps; (2) settled from the file pose (rest_qpos / rest_qvel / rest_act, settle_steps);
    (3) an actuated run from that rest: the 3 motors' controls from `controls` (seed BAR3_SEED, held BAR3_HOLD
    steps) times BAR3_SCALE, BAR3_ACT_STEPS steps: qpos every CHECK_EVERY steps."""
    m = mujoco.MjModel.from_xml_path(BAR3)
    out = dict(model="tensegrity_3bar.xml", check_every=CHECK_EVERY, drop_height=BAR3_DROP, drop_steps=BAR3_DROP_STEPS,
               act_seed=BAR3_SEED, act_hold=BAR3_HOLD, act_scale=BAR3_SCALE, act_steps=BAR3_ACT_STEPS, **constants(m))
    d = mujoco.MjData(m)
    for j in range(m.njnt):
        d.qpos[7 * j + 2] += BAR3_DROP
    q, _, _ = simulate(m, d, np.zeros((BAR3_DROP_STEPS, m.nu)))
    out["drop_qpos"] = q[::CHECK_EVERY]
    rest, n_settle = settle(m)
    out.update(rest_qpos=rest.qpos.copy(), rest_qvel=rest.qvel.copy(), rest_act=rest.act.copy(), settle_steps=n_settle)
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:], d.act[:] = rest.qpos, rest.qvel, rest.act
    mujoco.mj_forward(m, d)
    ctrl = controls(m, BAR3_ACT_STEPS, BAR3_HOLD, BAR3_SEED) * BAR3_SCALE
    q, _, _ = simulate(m, d, ctrl)
    out["act_qpos"] = q[::CHECK_EVERY]
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    np.savez_compressed(path, **out)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "tensegrity", "data"))
    ap.add_argument("--quick-set", default=None, help="write only the quick set to this .npz")
    ap.add_argument("--throw-quick-set", default=None, help="write only the contact quick set to this .npz")
    ap.add_argument("--net-quick-set", default=None, help="write only the network quick set to this .npz")
    ap.add_argument("--bar3-quick-set", default=None, help="write only the 3-bar set to this .npz")
    ap.add_argument("--net-throws", type=int, default=0, help="write only N extra throws throw_net00.. to --out")
    ap.add_argument("--calibrate", type=int, default=0, help="throw N times and print the CoM statistics")
    a = ap.parse_args(argv)
    if a.quick_set:
        quick_set(a.quick_set)
        print(f"wrote {a.quick_set}")
        return
    if a.throw_quick_set:
        throw_quick_set(a.throw_quick_set)
        print(f"wrote {a.throw_quick_set}")
        return
    if a.bar3_quick_set:
        bar3_quick_set(a.bar3_quick_set)
        print(f"wrote {a.bar3_quick_set}")
        return
    if a.net_quick_set:
        net_quick_set(a.net_quick_set)
        print(f"wrote {a.net_quick_set}")
        return
    ball = mujoco.MjModel.from_xml_path(BALL)
    rest, n_settle = settle(ball)
    if a.net_throws:
        os.makedirs(a.out, exist_ok=True)
        for i in range(a.net_throws):
            tr = throw(ball, rest, SEED_NET + i)
            tr.update(settle_steps=n_settle, settle_tol=SETTLE_TOL)
            np.savez_compressed(os.path.join(a.out, f"throw_net{i:02d}.npz"), **tr)
        print(f"wrote {a.net_throws} throws throw_net00.. to {a.out}")
        return
    print(f"settled in {n_settle} steps: max |qvel| {np.abs(rest.qvel).max():.1e}, "
          f"CoM z {np.mean([rest.qpos[7 * j + 2] for j in range(ball.njnt)]):.4f} m")
    if a.calibrate:
        st = [com_stats(ball, throw(ball, rest, SEED_THROW + 100 + i)) for i in range(a.calibrate)]
        paths = [p for p, _ in st]
        stops = [s for _, s in st]
        print(f"{a.calibrate} throws: mean CoM path {np.mean(paths):.3f} m (paper 2.35 m); stop steps {stops}")
        return
    os.makedirs(a.out, exist_ok=True)
    m = mujoco.MjModel.from_xml_path(AIR)
    sets = {"air_h1_train": (1, SEED_TRAIN), "air_h1_val": (1, SEED_VAL)}
    for hold, seeds in SEEDS_TEST.items():
        sets.update({f"air_h{hold}_test{i:02d}": (hold, s) for i, s in enumerate(seeds)})
    for name, (hold, seed) in sets.items():
        np.savez_compressed(os.path.join(a.out, name + ".npz"), **air(m, hold, seed))
    paths = []
    for i, name in enumerate(THROW_NAMES):
        tr = throw(ball, rest, SEED_THROW + i)
        tr.update(settle_steps=n_settle, settle_tol=SETTLE_TOL)
        paths.append(com_stats(ball, tr))
        np.savez_compressed(os.path.join(a.out, f"throw_{name}.npz"), **tr)
    print(f"wrote {len(sets) + len(THROW_NAMES)} trajectories to {a.out}; throws: mean CoM path "
          f"{np.mean([p for p, _ in paths]):.3f} m, stop steps {[s for _, s in paths]}")


if __name__ == "__main__":
    sys.exit(main())
