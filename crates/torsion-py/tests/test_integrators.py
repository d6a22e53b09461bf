"""Issue 20 item 3 from Python: FeatherstoneSolver(integrator=...) and Model.integrator; RK4 keeps a pendulum's
energy where semi-implicit Euler drifts; the RK4 rollout gradient matches central differences; bad names and
unsupported combinations raise naming the cause."""
import numpy as np
import pytest

import torsion
from conftest import fd, rel_err

PEND = """<mujoco model="pend"><option timestep="0.01" integrator="{integrator}" gravity="0 0 -9.81"/><worldbody>
  <body name="pole"><joint name="hinge" type="hinge" axis="0 1 0" {extra}/>
    <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.02" mass="1"/></body></worldbody></mujoco>"""


def test_model_integrator_is_the_files_and_the_solver_takes_it():
    m = torsion.load_mjcf(PEND.format(integrator="RK4", extra=""))
    assert m.integrator == "RK4"
    assert torsion.load_mjcf(PEND.format(integrator="implicitfast", extra="")).integrator == "implicitfast"
    assert torsion.load_mjcf(PEND.format(integrator="Euler", extra="")).integrator == "Euler"
    s = torsion.FeatherstoneSolver(integrator=m.integrator)
    assert s.integrator == "RK4" and "RK4" in repr(s)
    assert torsion.FeatherstoneSolver().integrator == "Euler"
    assert torsion.FeatherstoneSolver(integrator="implicit").integrator == "implicitfast"
    with pytest.raises(ValueError, match="integrator"):
        torsion.FeatherstoneSolver(integrator="rk4")


def test_rk4_is_more_accurate_than_euler():
    """2 s of the undamped pendulum from 1 rad at Δt 10 ms against RK4 at Δt 1 ms: RK4's angle error stays below
    1e-5 rad (measured 3.0e-7), Euler's is over 1000× larger (1.6e-2): the integrator really is the one named."""
    m = torsion.load_mjcf(PEND.format(integrator="Euler", extra=""))
    x0 = np.array([1.0, 0.0])
    ref = torsion.rollout(m, torsion.FeatherstoneSolver(integrator="RK4"), x0, np.zeros((2000, 1)), dt=1e-3)[::10]
    err = {}
    for name in ["Euler", "RK4"]:
        xs = torsion.rollout(m, torsion.FeatherstoneSolver(integrator=name), x0, np.zeros((200, 1)))
        err[name] = np.abs(xs[:, 0] - ref[:, 0]).max()
    assert err["RK4"] < 1e-5 and err["Euler"] > 1000 * err["RK4"], err


def test_rk4_rollout_gradient_matches_central_differences():
    m = torsion.load_mjcf(PEND.format(integrator="RK4", extra='damping="0.1"'))
    s = torsion.FeatherstoneSolver(integrator="RK4")
    x0 = np.array([0.7, -0.3])
    u = 0.2 * np.sin(np.arange(30.0))[:, None]

    def loss(uu):
        xs = torsion.rollout(m, s, x0, uu.reshape(-1, 1))
        return np.sum(xs[:, 0] ** 2) + 0.1 * np.sum(xs[:, 1])

    xs = torsion.rollout(m, s, x0, u)
    g_states = np.zeros_like(xs)
    g_states[:, 0] = 2 * xs[:, 0]
    g_states[:, 1] = 0.1
    g = torsion.rollout_vjp(m, s, xs, u, g_states, param_names=[])
    num = fd(lambda uu: np.array([loss(uu)]), u.ravel()).ravel()
    assert rel_err(np.asarray(g.controls).ravel(), num) < 1e-6


def test_unsupported_combination_is_refused_with_its_cause():
    m = torsion.load_mjcf(PEND.format(integrator="RK4", extra='frictionloss="0.1"'))
    s = torsion.FeatherstoneSolver(integrator="RK4")
    with pytest.raises(ValueError, match="friction loss"):
        torsion.step(m, s, np.array([0.3, 0.0]), np.zeros(1))
