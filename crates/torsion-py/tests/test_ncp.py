"""The contact stepper (spec 001) from Python: an MJCF box dropped on a plane lands, slides and stops; the rollout
gradient through sliding contact matches finite differences; bad options raise."""
import numpy as np
import pytest

import torsion
from conftest import rel_err

MU = 0.3
XML = f"""<mujoco><option timestep="0.01" gravity="0 0 -9.81"/><worldbody>
<geom type="plane" size="5 5 0.1" friction="{MU}"/>
<body pos="0 0 0.2"><freejoint/><geom type="box" size="0.1 0.1 0.1" mass="2" friction="{MU}"/></body>
</worldbody></mujoco>"""


@pytest.fixture
def box():
    return torsion.Model.from_mjcf_string(XML, "box.xml")


def test_box_lands_slides_and_stops(box):
    s = torsion.NcpSolver()
    x0 = s.initial_state(box, q=[0, 0, 0.15, 1, 0, 0, 0], v=[0, 0, 0, 1.0, 0, 0])
    xs = torsion.rollout(box, s, x0, np.zeros((150, 6)))
    assert xs.shape == (151, 13)
    assert abs(xs[-1, 2] - 0.1) < 2e-3  # resting on the floor
    assert np.abs(xs[-1, 7:]).max() < 1e-6  # at rest
    assert 0.1 < xs[-1, 0] < 0.5


def test_sliding_gradient_matches_finite_differences(box):
    s = torsion.NcpSolver()
    x0 = s.initial_state(box, q=[0, 0, 0.0999, 1, 0, 0, 0], v=[0, 0, 0, 1.5, 0, 0])
    u = np.zeros((12, 6))
    u[:, 3] = 1.0
    xs = torsion.rollout(box, s, x0, u)
    dl = np.zeros_like(xs)
    dl[-1, 0] = 1.0  # L = final x
    g = torsion.rollout_vjp(box, s, xs, u, dl, param_names=[])
    f = lambda uu: torsion.rollout(box, s, x0, uu.reshape(u.shape))[-1, 0]
    h = 1e-6
    num = np.zeros(u.size)
    for i in range(u.size):
        d = np.zeros(u.size)
        d[i] = h
        num[i] = (f(u.ravel() + d) - f(u.ravel() - d)) / (2 * h)
    assert rel_err(g.controls.ravel(), num) < 1e-6


def test_bad_options_raise():
    with pytest.raises(ValueError):
        torsion.NcpSolver(friction_set="square")
    with pytest.raises(ValueError):
        torsion.NcpSolver(restitution=1.5)
    with pytest.raises(ValueError):
        torsion.NcpSolver(n_step=0)
