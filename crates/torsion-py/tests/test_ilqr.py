"""Issue 19 item 2's Python reach: `torsion.ilqr` on the generalized-coordinate solvers reaches the figures of the
Rust tests (crates/torsion-opt/tests/ilqr.rs): the 2-link arm's swing-up under Featherstone and the box push
under ncp; the sampled iLQG variant; the tensegrity solver; errors in Python terms."""
import numpy as np
import pytest

import torsion

HALF_PI = np.pi / 2


def monotone(h):
    return all(b <= a for a, b in zip(h, h[1:]))


def test_arm_swing_up_under_featherstone():
    # as arm_swing_up_under_featherstone: hanging -> upright in 2 s, |u1| <= 6, |u2| <= 3 N·m, from zero controls
    m = torsion.Model.two_link_arm(0.5, 0.5, 1.0, (0.0, -9.8, 0.0), 0.02)
    lo, hi = [-6.0, -3.0], [6.0, 3.0]
    r = torsion.ilqr(m, torsion.FeatherstoneSolver(), [-HALF_PI, 0, 0, 0], 100, x_ref=[HALF_PI, 0, 0, 0],
                     q=np.zeros(4), r=[1e-2, 1e-2], qf=[1000.0, 1000.0, 100.0, 100.0], u_min=lo, u_max=hi,
                     iterations=200)
    xt = r.states[-1]
    err, verr = np.hypot(xt[0] - HALF_PI, xt[1]), np.hypot(xt[2], xt[3])
    on_bound = int(np.isclose(r.controls, lo).sum() + np.isclose(r.controls, hi).sum())
    print(f"arm swing-up: {r.iterations} iterations ({r.stop}), cost {r.cost_history[0]:.4e} -> "
          f"{r.cost_history[-1]:.4e}, |q - q*| {err:.2e} rad, |v| {verr:.2e} rad/s, {on_bound} entries on a bound")
    assert r.controls.shape == (100, 2) and r.states.shape == (101, 4) and r.gains.shape == (100, 2, 4)
    assert monotone(r.cost_history)
    assert (r.controls >= lo).all() and (r.controls <= hi).all() and on_bound > 0
    assert err < 0.02 and verr < 0.1
    # the nominal is the open-loop rollout of the returned controls
    xs = torsion.rollout(m, torsion.FeatherstoneSolver(), r.states[0], r.controls)
    assert np.abs(xs - r.states).max() < 1e-12


BOX = """<mujoco><option timestep="0.02"/><worldbody><geom type="plane" size="5 5 0.1" friction="0.5"/>
  <body pos="0 0 0.1"><freejoint/><geom type="box" size="0.1 0.1 0.1" mass="1" friction="0.5"/></body>
  </worldbody></mujoco>"""


def test_box_push_to_a_spot_under_ncp():
    # as box_push_to_a_spot_under_ncp: a 1 kg box pushed by |F_x|, |F_y| <= 15 N to (0.3, 0.1) m at rest in 0.6 s
    m = torsion.load_mjcf(BOX)
    solver = torsion.NcpSolver()
    x0 = [0.0, 0.0, 0.0999, 1.0, 0.0, 0.0, 0.0] + [0.0] * 6
    goal = [0.3, 0.1, 0.0999, 1.0, 0.0, 0.0, 0.0] + [0.0] * 6
    qf = [10.0, 10.0, 10.0, 1e4, 1e4, 0.0, 1.0, 1.0, 1.0, 100.0, 100.0, 0.0]
    hi = [0.0, 0.0, 0.0, 15.0, 15.0, 0.0]
    lo = [0.0, 0.0, 0.0, -15.0, -15.0, 0.0]
    r = torsion.ilqr(m, solver, x0, 30, x_ref=goal, r=[0.0, 0.0, 0.0, 1e-3, 1e-3, 0.0], qf=qf, u_min=lo,
                     u_max=hi, u_init=[0.0, 0.0, 0.0, 6.0, 0.0, 0.0], iterations=50)
    xt = r.states[-1]
    err, speed = np.hypot(xt[0] - 0.3, xt[1] - 0.1), np.hypot(xt[10], xt[11])
    print(f"box push (ncp): {r.iterations} iterations ({r.stop}), cost {r.cost_history[0]:.4e} -> "
          f"{r.cost_history[-1]:.4e}, position error {err:.2e} m, speed {speed:.2e} m/s")
    assert monotone(r.cost_history)
    assert (r.controls >= lo).all() and (r.controls <= hi).all()
    assert err < 0.01 and speed < 0.05


def test_sampled_ilqg_lowers_the_cost_without_jacobians():
    m = torsion.Model.two_link_arm(0.5, 0.5, 1.0, (0.0, -9.8, 0.0), 0.02)
    r = torsion.ilqr(m, torsion.FeatherstoneSolver(), [-1.2, 0.4, 0, 0], 30, x_ref=[0.5, -0.3, 0, 0],
                     q=[1.0, 1.0, 0.1, 0.1], r=[1e-2, 1e-2], qf=[50.0, 50.0, 5.0, 5.0], iterations=8, sampled=True,
                     samples=40, seed=1)
    print(f"sampled iLQG: cost {r.cost_history[0]:.4e} -> {r.cost_history[-1]:.4e}, "
          f"{r.dynamics_steps} dynamics steps")
    assert r.stop == "iterations" and r.sigma.shape == (30, 2, 2)
    assert r.dynamics_steps >= 8 * 40 * 30
    assert r.cost_history[-1] < 0.5 * r.cost_history[0]


def test_tensegrity_actuators_reach_a_reference_state():
    # SUPERball 0.5 m above its rest pose (no floor contact on the way): iLQR from zero controls finds motor
    # controls that reach the state 5 steps of reference controls reach
    m = torsion.models.load("superball")
    solver = torsion.TensegritySolver()
    nv, nu = m.nv, m.nu
    x0 = solver.initial_state(m)
    x0[2:m.nq:7] += 0.5
    u_ref = np.zeros((5, nv + nu))
    u_ref[:, nv:nv + 4] = 80.0
    target = torsion.rollout(m, solver, x0, u_ref)[-1]
    nt = solver.tangent_dim(m)
    r = torsion.ilqr(m, solver, x0, 5, x_ref=target, r=np.r_[np.zeros(nv), 1e-6 * np.ones(nu)],
                     qf=np.r_[1e4 * np.ones(nv), 10.0 * np.ones(nt - nv)],
                     u_min=np.r_[np.zeros(nv), -100 * np.ones(nu)], u_max=np.r_[np.zeros(nv), 100 * np.ones(nu)],
                     iterations=20)
    print(f"SUPERball actuators: {r.iterations} iterations ({r.stop}), cost {r.cost_history[0]:.3e} -> "
          f"{r.cost_history[-1]:.3e}")
    assert monotone(r.cost_history) and (r.controls[:, :nv] == 0).all()
    assert r.cost_history[-1] < 0.05 * r.cost_history[0]  # 5 ms of 1 s motor filters: mostly the activations


def test_errors_in_python_terms():
    m = torsion.Model.two_link_arm()
    fs = torsion.FeatherstoneSolver()
    with pytest.raises(TypeError, match="XpbdSolver"):
        torsion.ilqr(m, torsion.XpbdSolver(), np.zeros(4), 10)
    with pytest.raises(ValueError, match=r"u_min: expected 2 numbers"):
        torsion.ilqr(m, fs, np.zeros(4), 10, u_min=[-1.0])
    with pytest.raises(ValueError, match="control 1: u_min 2 > u_max 1"):
        torsion.ilqr(m, fs, np.zeros(4), 10, u_min=[-1.0, 2.0], u_max=[1.0, 1.0])
    with pytest.raises(ValueError, match=r"qf: expected shape \(4,\)"):
        torsion.ilqr(m, fs, np.zeros(4), 10, qf=[1.0, 1.0])
    with pytest.raises(ValueError, match=r"x_ref: expected shape \(4,\) or \(11, 4\)"):
        torsion.ilqr(m, fs, np.zeros(4), 10, x_ref=np.zeros((5, 4)))
    with pytest.raises(ValueError, match="horizon must be an integer"):
        torsion.ilqr(m, fs, np.zeros(4), 0)
    # unbounded entries: ±inf accepted
    r = torsion.ilqr(m, fs, np.zeros(4), 5, x_ref=[0.3, 0, 0, 0], u_min=[-np.inf, -1.0], u_max=[np.inf, 1.0],
                     iterations=3)
    assert np.isfinite(r.controls).all()
