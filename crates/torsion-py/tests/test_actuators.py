"""Issue 21 item 2: MJCF actuators from Python. FeatherstoneSolver's controls are [u (nv), ctrl (nu)]: a rollout
of a position / velocity servo model with controls (T, nv + nu) equals mj_step (Euler), and B's ctrl columns
match finite differences."""
import numpy as np
import pytest

import torsion
from conftest import rel_err

SERVOS = """<mujoco><option timestep="0.005"/><worldbody>
  <body><joint name="h1" axis="0 1 0" damping="0.1"/><geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.05" mass="1"/>
    <body pos="0.5 0 0"><joint name="s" type="slide" axis="1 0 0"/><geom size="0.1" mass="0.5"/></body></body>
  </worldbody><actuator><position name="p" joint="h1" kp="30" kv="2" gear="2" ctrlrange="-1 1"/>
  <velocity name="v" joint="s" kv="4" forcerange="-3 3"/></actuator></mujoco>"""


def test_servo_rollout_matches_mj_step_and_b_has_ctrl_columns():
    m = torsion.load_mjcf(SERVOS)
    solver = torsion.FeatherstoneSolver()
    assert (m.nv, m.nu, m.na, m.actuator_name) == (2, 2, 0, ["p", "v"])
    assert solver.control_dim(m) == m.nv + m.nu
    rng = np.random.default_rng(0)
    T = 100
    ctrl = rng.uniform(-1.5, 1.5, (T, m.nu))  # outside ctrlrange too
    u = np.hstack([np.zeros((T, m.nv)), ctrl])
    x0 = np.array([0.2, -0.1, 0.3, 0.5])
    xs = torsion.rollout(m, solver, x0, u)
    mujoco = pytest.importorskip("mujoco")
    mm = mujoco.MjModel.from_xml_string(SERVOS)
    mm.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    d = mujoco.MjData(mm)
    d.qpos[:], d.qvel[:] = x0[:2], x0[2:]
    for k in range(T):
        d.ctrl[:] = ctrl[k]
        mujoco.mj_step(mm, d)
    assert np.abs(xs[-1, :2] - d.qpos).max() < 1e-12
    # B = ∂x'/∂[u, ctrl] vs central differences inside the clamps
    x, uk = xs[10], np.array([0.0, 0.0, 0.3, 0.2])
    _, b, _ = torsion.step_jacobians(m, solver, x, uk)
    assert b.shape == (4, 4)
    fd = np.zeros_like(b)
    for i in range(4):
        e = np.zeros(4)
        e[i] = 1e-6
        fd[:, i] = (torsion.step(m, solver, x, uk + e) - torsion.step(m, solver, x, uk - e)) / 2e-6
    assert rel_err(b, fd) < 1e-6
    assert np.abs(b[:, 2]).max() > 0  # the servo's control moves the state
    with pytest.raises(ValueError, match=r"u: expected shape \(4,\)"):
        torsion.step(m, solver, x, uk[:3])
