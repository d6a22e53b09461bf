"""Issue 16 item 7: `torsion.TensegritySolver` from Python. SUPERball (the shared MJCF, loaded unchanged) under
the linear contact model: rollout_vjp w.r.t. the controls (cable motors) and the five contact parameters
(β, e, γ, μ, ε) against central differences on a short rolling trajectory; the rollout equals the Rust path
(FeatherstoneSolver on the file with the parameters as its custom numeric) bit for bit and the CLI's `torsion
simulate --solver tensegrity` to round-off; contact="ncp" on cable-free rods equals NcpSolver."""
import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

import torsion
from conftest import rel_err

ROOT = pathlib.Path(__file__).resolve().parents[3]
CONTACT = ["contact_beta", "contact_e", "contact_gamma", "contact_mu", "contact_eps"]
P = np.array([0.4, 0.2, 0.3, 0.6, 0.005])


def superball():
    return torsion.models.load("superball")


def rot(qw):
    """Rotation matrix of a unit quaternion (w, x, y, z)."""
    w, x, y, z = qw
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def rolling_state(m, solver):
    """SUPERball at its rest pose lowered 3 mm (its three lower caps 2 mm into the floor), rolling as one rigid
    body: CoM velocity (0.8, 0.3, 0) m/s, angular velocity (0, 0.5, 0) rad/s about the CoM (each rod's free joint:
    world linear velocity, body-frame angular velocity, MuJoCo's qvel). Slow enough that no cap reaches the Coulomb
    cap (there γ's column is 0: docs/gradients.md) in the 15 steps."""
    x = solver.initial_state(m)
    q = x[: m.nq].copy()
    q[2::7] -= 3e-3
    pos = q.reshape(6, 7)[:, :3]
    c = pos.mean(axis=0)
    w = np.array([0.0, 0.5, 0.0])
    v = np.zeros(m.nv)
    for k in range(6):
        v[6 * k: 6 * k + 3] = np.array([0.8, 0.3, 0.0]) + np.cross(w, pos[k] - c)
        v[6 * k + 3: 6 * k + 6] = rot(q[7 * k + 3: 7 * k + 7]).T @ w
    return solver.initial_state(m, q, v)


def test_superball_rollout_vjp_matches_central_differences_wrt_controls_and_contact_parameters():
    m = superball()
    assert "contact_beta" not in m.param_names  # the file loads unchanged: contact model off
    solver = torsion.TensegritySolver(contact="linear", contact_params=P)
    assert solver.contact == "linear" and solver.contact_params_for(m) == pytest.approx(P.tolist())
    nv, nu, na = m.nv, m.nu, m.na
    assert (nu, na) == (24, 24) and solver.control_dim(m) == nv + nu and solver.state_dim(m) == m.nq + nv + na
    x0 = rolling_state(m, solver)
    T = 15
    rng = np.random.default_rng(3)
    u = np.zeros((T, nv + nu))
    u[:, nv:] = rng.uniform(-60, 60, (T, nu))  # motor controls (ctrlrange ±100: no clamp)
    w = rng.standard_normal(solver.state_dim(m))
    loss = lambda xs: float((xs[1:] @ w).sum())
    xs = torsion.rollout(m, solver, x0, u)
    assert np.isfinite(xs).all()
    lowest = xs[:, 2:m.nq:7].min()  # rod centres stay up: it rolls on its lower caps
    assert lowest > 0.3, lowest
    dl = np.zeros_like(xs)
    dl[1:] = w
    g = torsion.rollout_vjp(m, solver, xs, u, dl, param_names=CONTACT)
    assert g.param_names == CONTACT
    # the five contact parameters, one by one (central differences, h relative to the value)
    fd = []
    for k in range(5):
        h = 1e-6 * max(abs(P[k]), 1e-2)
        pp, pm = P.copy(), P.copy()
        pp[k] += h
        pm[k] -= h
        lp = loss(torsion.rollout(m, torsion.TensegritySolver(contact_params=pp), x0, u))
        lm = loss(torsion.rollout(m, torsion.TensegritySolver(contact_params=pm), x0, u))
        fd.append((lp - lm) / (2 * h))
    errs = [abs(a - b) / max(abs(b), 1e-12) for a, b in zip(g.params, fd)]
    print("contact parameters: analytic", g.params, "FD", fd, "rel errors", errs)
    assert min(abs(b) for b in fd) > 0.1  # each parameter acts on the trajectory
    # the Rust path: the same model with the parameters in the file (custom numeric) under FeatherstoneSolver
    xml = pathlib.Path(ROOT / "crates/torsion-model/tests/data/mjcf/superball.xml").read_text()
    numeric = '<custom><numeric name="torsion_linear_contact" data="' + " ".join(map(str, P)) + '"/></custom>'
    mc = torsion.load_mjcf(xml.replace("</mujoco>", numeric + "</mujoco>"))
    assert np.array_equal(torsion.rollout(mc, torsion.FeatherstoneSolver(), x0, u), xs)
    assert not np.array_equal(torsion.rollout(m, torsion.FeatherstoneSolver(), x0, u), xs)  # contact acts
    assert max(errs) < 1e-6, errs
    # the controls, along random directions (every entry of the (T, nv + nu) gradient takes part)
    cerr = []
    for seed in range(3):
        d = np.random.default_rng(10 + seed).standard_normal(u.shape)
        h = 1e-4
        slope = (loss(torsion.rollout(m, solver, x0, u + h * d)) - loss(torsion.rollout(m, solver, x0, u - h * d))) / (
            2 * h)
        cerr.append(abs(float((g.controls * d).sum()) - slope) / abs(slope))
    print("controls: directional rel errors", cerr)
    assert max(cerr) < 1e-6, cerr
    # the parameters' default selection includes the contact parameters (the solver's model copy)
    assert set(CONTACT) <= set(torsion.rollout_vjp(m, solver, xs, u, dl).param_names)
    assert "contact_beta" not in m.param_names  # the model itself is unchanged


def test_step_jacobians_and_initial_state():
    m = superball()
    solver = torsion.TensegritySolver()
    x0 = solver.initial_state(m)
    assert x0.shape == (m.nq + m.nv + m.na,) and np.allclose(x0[: m.nq], m.qpos0) and not x0[m.nq:].any()
    u = np.zeros(solver.control_dim(m))
    a, b, c = torsion.step_jacobians(m, solver, rolling_state(m, solver), u, param_names=CONTACT)
    nt = solver.tangent_dim(m)
    assert a.shape == (nt, nt) and b.shape == (nt, m.nv + m.nu) and c.shape == (nt, 5)
    assert np.abs(c[:, 0]).max() > 0  # β acts on the caps in the floor
    batch = torsion.rollout_batch(m, solver, x0, np.zeros((3, 5, len(u))))
    assert np.array_equal(batch[1], torsion.rollout(m, solver, x0, np.zeros((5, len(u)))))


def torsion_bin():
    for c in [os.environ.get("TORSION_BIN"), ROOT / "target/release/torsion", ROOT / "target/debug/torsion"]:
        if c and pathlib.Path(c).is_file():
            return str(c)
    return None


def test_rollout_equals_the_cli(tmp_path):
    exe = torsion_bin()
    if exe is None:
        pytest.skip("no torsion binary (cargo build -p torsion-cli, or set TORSION_BIN)")
    m = superball()
    steps = 300
    rng = np.random.default_rng(5)
    ctrl = rng.uniform(-100, 100, (steps, m.nu))
    (tmp_path / "ctrl.json").write_text(json.dumps(ctrl.tolist()))
    out = tmp_path / "traj.json"
    run = subprocess.run([exe, "simulate", "--model", "superball", "--solver", "tensegrity", "--steps", str(steps),
                          "--contact-params", ",".join(str(p) for p in P), "--controls", str(tmp_path / "ctrl.json"),
                          "--out", str(out)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    j = json.loads(out.read_text())
    solver = torsion.TensegritySolver(contact_params=P)
    xs = torsion.rollout(m, solver, solver.initial_state(m), np.hstack([np.zeros((steps, m.nv)), ctrl]))
    q_cli, v_cli = np.array(j["joint_angles"]), np.array(j["joint_velocities"])
    act_cli = np.array(j["actuator_activations"])
    diff = max(np.abs(xs[:, : m.nq] - q_cli).max(), np.abs(xs[:, m.nq: m.nq + m.nv] - v_cli).max(),
               np.abs(xs[:, m.nq + m.nv:] - act_cli).max())
    moved = np.abs(xs[-1, : m.nq] - xs[0, : m.nq]).max()
    print(f"{steps} steps: max |Python - CLI| {diff:.1e}; the robot moved {moved:.3f}")
    # the same Rust step in two separately compiled binaries: equal to round-off (4e-13 m after 300 steps; the
    # in-process Rust path is bit for bit, see the FD test)
    assert diff < 1e-10 and moved > 1e-3


RODS = """<mujoco><option timestep="0.002"/><worldbody><geom name="floor" type="plane" size="5 5 0.1"/>
  <body name="a" pos="0 0 0.0195"><freejoint/><geom name="a" type="capsule" fromto="-0.5 0 0 0.5 0 0" size="0.02"
    mass="2"/></body>
  <body name="b" pos="0 0.5 0.3" quat="0.924 0 0.383 0"><freejoint/><geom name="b" type="capsule"
    fromto="-0.5 0 0 0.5 0 0" size="0.02" mass="2"/></body></worldbody></mujoco>"""


def test_ncp_option_equals_ncp_solver_and_refuses_cables():
    m = torsion.load_mjcf(RODS)
    solver = torsion.TensegritySolver(contact="ncp", ncp=torsion.NcpSolver(n_step=12))
    assert solver.contact == "ncp" and solver.contact_params_for(m) is None
    x0 = solver.initial_state(m, v=np.tile([0.5, 0.1, 0.0, 0.0, 0.0, 1.0], 2))
    u = np.zeros((40, solver.control_dim(m)))
    assert np.array_equal(torsion.rollout(m, solver, x0, u), torsion.rollout(m, torsion.NcpSolver(n_step=12), x0, u))
    with pytest.raises(ValueError, match="does not simulate cables or actuators"):
        torsion.rollout(superball(), solver, np.zeros(solver.state_dim(superball())), np.zeros((1, 36)))
    with pytest.raises(ValueError, match="contact_params"):
        torsion.TensegritySolver(contact="ncp", contact_params=P)
    with pytest.raises(ValueError, match="contact_mu must be in"):
        torsion.TensegritySolver(contact_params=[0.5, 0.0, 0.5, -1.0, 0.0])
    with pytest.raises(ValueError, match="expected 'linear' or 'ncp'"):
        torsion.TensegritySolver(contact="soft")
    with pytest.raises(ValueError, match=r"contact_params: expected shape \(5,\)"):
        torsion.TensegritySolver(contact_params=[0.5, 0.0])
