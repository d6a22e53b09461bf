"""The contact stepper (spec 001) from Python: an MJCF box dropped on a plane lands, slides and stops; the rollout
gradient through sliding contact (controls; the shapes' friction parameters) matches finite differences; bad options
and out-of-range contact parameters raise."""
import os
import subprocess
import sys
import sysconfig

import numpy as np
import pytest

import torsion
from conftest import rel_err

MU = 0.3
XML = f"""<mujoco><option timestep="0.01" gravity="0 0 -9.81"/><worldbody>
<geom name="floor" type="plane" size="5 5 0.1" friction="{MU}"/>
<body pos="0 0 0.2"><freejoint/><geom name="box" type="box" size="0.1 0.1 0.1" mass="2" friction="{MU}"/></body>
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


def pushed_slide(m, s):
    """The box sliding at 1.5 m/s under a 1 N push for 12 steps: x0, controls, states, dL/dstates of L = final x."""
    x0 = s.initial_state(m, q=[0, 0, 0.0999, 1, 0, 0, 0], v=[0, 0, 0, 1.5, 0, 0])
    u = np.zeros((12, 6))
    u[:, 3] = 1.0
    xs = torsion.rollout(m, s, x0, u)
    dl = np.zeros_like(xs)
    dl[-1, 0] = 1.0
    return x0, u, xs, dl


@pytest.mark.parametrize("gradient", ["auto", "cascade"])
def test_sliding_gradient_matches_finite_differences(box, gradient):
    # four corners sliding: the impulses are redundant, so 'auto' takes the cascade (the fixed point's
    # minimum-norm sharing of λ_n differs from the executed passes' by ~4e-5 here, docs/gradients.md)
    s = torsion.NcpSolver(gradient=gradient)
    x0, u, xs, dl = pushed_slide(box, s)
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
        torsion.NcpSolver(n_step=0)
    with pytest.raises(ValueError):
        torsion.NcpSolver(gradient="unrolled")


MATERIAL = ["shape_friction[floor]", "shape_restitution[floor]", "shape_friction[box]", "shape_restitution[box]"]


def test_contact_material_parameters_are_listed(box):
    names = box.param_names
    assert all(n in names for n in MATERIAL)
    assert box.params_select("shape_") == MATERIAL
    np.testing.assert_array_equal(box.params_get(MATERIAL), [MU, 0.0, MU, 0.0])
    with pytest.raises(ValueError, match="restitution"):
        box.params_set(["shape_restitution[floor]"], [1.5])
    with pytest.raises(ValueError, match="friction"):
        box.params_set(["shape_friction[box]"], [-0.1])
    np.testing.assert_array_equal(box.params_get(MATERIAL), [MU, 0.0, MU, 0.0])


def test_friction_parameter_gradient_matches_finite_differences(box):
    # the box's friction (0.4) is the larger: it sets the pair's μ, the floor's has no effect
    m = box.with_params(["shape_friction[box]"], [0.4])
    s = torsion.NcpSolver()
    x0, u, xs, dl = pushed_slide(m, s)
    names = ["shape_friction[box]", "shape_friction[floor]"]
    g = torsion.rollout_vjp(m, s, xs, u, dl, param_names=names)
    f = lambda mu: torsion.rollout(m.with_params(["shape_friction[box]"], [mu]), s, x0, u)[-1, 0]
    h = 1e-6
    num = (f(0.4 + h) - f(0.4 - h)) / (2 * h)
    assert num < -1e-3  # more friction, shorter slide
    assert rel_err(g.params[:1], [num]) < 1e-6
    assert g.params[1] == 0.0


BOXES = """<mujoco><option timestep="0.01"/><worldbody><geom type="plane" size="5 5 0.1" friction="0.5"/>
<body pos="0 0 0.2"><freejoint/><geom type="box" size="0.1 0.1 0.1" mass="1" friction="0.5"/></body>
<body pos="1 0 0.1"><freejoint/><geom type="box" size="0.1 0.1 0.1" mass="1" friction="0.5"/></body>
<body pos="1 0 0.3"><freejoint/><geom type="box" size="0.1 0.1 0.1" mass="1" friction="0.5"/></body>
</worldbody></mujoco>"""


def _boxes():
    m = torsion.Model.from_mjcf_string(BOXES, "boxes.xml")
    s = torsion.NcpSolver()
    c, h = np.cos(0.1), np.sin(0.1) / np.sqrt(1.25)
    q = [0, 0, 0.103, 1, 0, 0, 0, 1, 0, 0.0999, 1, 0, 0, 0, 1.02, 0.01, 0.33, c, h, 0.5 * h, 0]
    v = [0, 0, 0.5, 1.5, 0.2, -0.5] + [0] * 6 + [0.3, 0, 0, 0.1, 0, -0.4]
    x0 = s.initial_state(m, q=q, v=v)
    us = [np.zeros((50, 18)) for _ in range(3)]
    for b, u in enumerate(us):
        u[:, 3] = 0.5 * b  # box a pushed along x, differently per item
        u[:, 9] = -0.3 * b  # box b pushed (sticks below μ m g)
    return m, s, x0, us


def test_contact_rollouts_are_deterministic():
    """The warm start is part of the state inside Rust (design.md §3): the same solver reused, a fresh one, and
    `rollout_batch` give bit-identical trajectories."""
    m, s, x0, us = _boxes()
    a = torsion.rollout(m, s, x0, us[0])
    assert np.array_equal(a, torsion.rollout(m, s, x0, us[0])), "same solver, second call"
    assert np.array_equal(a, torsion.rollout(m, torsion.NcpSolver(), x0, us[0])), "fresh solver"
    batch = torsion.rollout_batch(m, s, np.stack([x0] * 3), np.stack(us))
    for b in range(3):
        np.testing.assert_array_equal(batch[b], torsion.rollout(m, s, x0, us[b]))
    # one step starts cold: the same as the first step of a rollout, whatever ran before
    np.testing.assert_array_equal(torsion.step(m, s, x0, us[0][0]), a[1])


def test_batch_is_identical_with_1_and_2_threads(tmp_path):
    script = f"""
import sys, numpy as np
sys.path.insert(0, {str(__import__('pathlib').Path(__file__).parent)!r})
import test_ncp
import torsion
m, s, x0, us = test_ncp._boxes()
np.save(sys.argv[1], torsion.rollout_batch(m, s, np.stack([x0] * 3), np.stack(us)))
"""
    outs = []
    for n in (1, 2):
        f = tmp_path / f"batch{n}.npy"
        env = dict(os.environ, RAYON_NUM_THREADS=str(n))
        subprocess.run([sys.executable, "-c", script, str(f)], env=env, check=True)
        outs.append(np.load(f))
    np.testing.assert_array_equal(outs[0], outs[1])
    m, s, x0, us = _boxes()
    np.testing.assert_array_equal(outs[0][1], torsion.rollout(m, s, x0, us[1]))


def test_package_dirs_find_meshes_of_a_copied_urdf(tmp_path, monkeypatch):
    # the Panda URDF copied out of example-robot-data: its package:// meshes are found only through package_dirs
    share = os.path.join(sysconfig.get_paths()["purelib"], "cmeel.prefix", "share")
    urdf = os.path.join(share, "example-robot-data", "robots", "panda_description", "urdf", "panda.urdf")
    if not os.path.isfile(urdf):
        pytest.skip("example-robot-data is not installed")
    copy = tmp_path / "panda.urdf"
    copy.write_text(open(urdf).read())
    monkeypatch.setenv("TORSION_ROBOTS_DIR", str(tmp_path / "no-robots"))  # no example-robot-data fallback
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)
    m = torsion.load_urdf(str(copy))
    u = np.zeros((3, m.nv))
    s = torsion.NcpSolver()
    with pytest.raises(Exception, match="package_dirs"):
        torsion.rollout(m, s, s.initial_state(m), u)
    s = torsion.NcpSolver(package_dirs=[share])
    xs = torsion.rollout(m, s, s.initial_state(m), u)
    assert xs.shape == (4, m.nq + m.nv) and np.isfinite(xs).all()
