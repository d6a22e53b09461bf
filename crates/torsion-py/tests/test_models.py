"""Models by name (issue 21 item 3): torsion.models.list() / load(name), the same names as the CLI."""
import numpy as np
import pytest

import torsion


def test_list_has_the_documented_names():
    names = {e["name"] for e in torsion.models.list()}
    assert {"panda", "baxter_left_arm", "superball", "dm_control/hopper", "two_link_arm"} <= names
    for e in torsion.models.list():
        assert set(e) == {"name", "description", "source"}


def test_load_by_name_steps():
    m = torsion.models.load("panda")
    assert m.nv > 0
    solver = torsion.FeatherstoneSolver()
    x0 = solver.initial_state(m, np.zeros(m.nq))
    xs = torsion.rollout(m, solver, x0, np.zeros((3, solver.control_dim(m))))
    assert xs.shape[0] == 4 and np.all(np.isfinite(xs))
    hopper = torsion.models.load("dm_control/hopper")
    assert hopper.dt == pytest.approx(0.005)


def test_bad_names_raise():
    with pytest.raises(ValueError, match="unknown model name 'pandaa'.*panda"):
        torsion.models.load("pandaa")
    with pytest.raises(TypeError):
        torsion.models.load(3)
