"""Issue 12 item 7: passive joint forces (damping, springs) from Python, `aba(..., include_passive=True)` and its
derivatives (FD-checked), `load_mjcf` from a path or XML text; item 6: URDF chains weld what hangs off them."""
import numpy as np
import pytest

import torsion
from conftest import PEND_URDF, fd, rel_err

# a cart (slide, damping 0.4) carrying a pole (hinge: damping 0.3, stiffness 5, springref 0.2 rad)
MJCF = """
  <mujoco model="sprung"><compiler angle="radian"/><worldbody><body name="cart" pos="0 0 1">
  <joint name="slide" type="slide" axis="1 0 0" damping="0.4"/><geom type="box" size="0.1 0.1 0.1" mass="1"/>
  <body name="pole"><joint name="hinge" type="hinge" axis="0 1 0" damping="0.3" stiffness="5" springref="0.2"/>
    <geom type="capsule" fromto="0 0 0 0.3 0 0.5" size="0.02" mass="0.2"/></body>
</body></worldbody></mujoco>"""
DAMPING, STIFFNESS, SPRINGREF = np.array([0.4, 0.3]), np.array([0.0, 5.0]), np.array([0.0, 0.2])

Q, V, TAU = np.array([0.1, -0.7]), np.array([0.5, -1.2]), np.array([0.3, -0.2])


@pytest.fixture
def sprung():
    return torsion.load_mjcf(MJCF)


def test_passive_forces_are_the_models_damping_and_springs(sprung):
    p = torsion.passive_forces(sprung, Q, V)
    np.testing.assert_allclose(p, -DAMPING * V - STIFFNESS * (Q - SPRINGREF), rtol=0, atol=1e-15)
    with pytest.raises(ValueError, match="v"):
        torsion.passive_forces(sprung, Q, V[:1])


def test_passive_forces_match_mujoco(sprung):
    mujoco = pytest.importorskip("mujoco")
    mm = mujoco.MjModel.from_xml_string(MJCF)
    d = mujoco.MjData(mm)
    d.qpos[:], d.qvel[:] = Q, V
    d.qfrc_applied[:] = TAU
    mujoco.mj_forward(mm, d)
    assert rel_err(torsion.passive_forces(sprung, Q, V), d.qfrc_passive) < 1e-12
    # MuJoCo's qacc includes the passive forces: so does aba(include_passive=True)
    assert rel_err(torsion.aba(sprung, Q, V, TAU, include_passive=True), d.qacc) < 1e-10


def test_aba_include_passive(sprung):
    p = torsion.passive_forces(sprung, Q, V)
    plain = torsion.aba(sprung, Q, V, TAU)
    np.testing.assert_array_equal(plain, torsion.aba(sprung, Q, V, TAU, include_passive=False))
    with_p = torsion.aba(sprung, Q, V, TAU, include_passive=True)
    np.testing.assert_allclose(with_p, torsion.aba(sprung, Q, V, TAU + p), rtol=0, atol=1e-14)
    m = torsion.crba(sprung, Q)
    want = np.linalg.solve(m, TAU + p - torsion.nonlinear_effects(sprung, Q, V))
    assert rel_err(with_p, want) < 1e-12
    assert np.abs(with_p - plain).max() > 0.1  # the damping and the spring act


def test_aba_derivatives_include_passive_match_finite_differences(sprung):
    f = lambda q, v, t: torsion.aba(sprung, q, v, t, include_passive=True)
    dq, dv, dt = torsion.aba_derivatives(sprung, Q, V, TAU, include_passive=True)
    # hinge and slide: the tangent coordinates are the coordinates
    errs = [rel_err(dq, fd(lambda x: f(x, V, TAU), Q)), rel_err(dv, fd(lambda x: f(Q, x, TAU), V)),
            rel_err(dt, fd(lambda x: f(Q, V, x), TAU))]
    print("passive-inclusive dABA/d(q, v, tau) vs FD:", ", ".join(f"{e:.1e}" for e in errs))
    assert max(errs) < 1e-6, errs
    np.testing.assert_allclose(dt, np.linalg.inv(torsion.crba(sprung, Q)), rtol=1e-10, atol=1e-12)
    plain = torsion.aba_derivatives(sprung, Q, V, TAU)
    assert rel_err(plain[1], dv) > 1e-2  # default False keeps the passive-free derivatives
    np.testing.assert_array_equal(plain[1], torsion.aba_derivatives(sprung, Q, V, TAU, include_passive=False)[1])


def test_load_mjcf_from_text_or_path(tmp_path):
    m = torsion.load_mjcf(MJCF)  # leading whitespace, then '<'
    assert m.joint_name == ["slide", "hinge"]
    p = tmp_path / "sprung.xml"
    p.write_text(MJCF)
    for arg in (str(p), p):
        np.testing.assert_array_equal(torsion.load_mjcf(arg).params_get(), m.params_get())
    with pytest.raises(FileNotFoundError, match=r"nope\.xml: no such file \(read as a path"):
        torsion.load_mjcf(str(tmp_path / "nope.xml"))
    with pytest.raises(ValueError, match="<MJCF text>"):
        torsion.load_mjcf("<mujoco><worldbody><body><joint type='nonsense'/></body></worldbody></mujoco>")
    with pytest.raises(TypeError, match="path or MJCF XML text"):
        torsion.load_mjcf(3)


URDF = PEND_URDF


def test_urdf_chain_welds_below_the_tip_unless_dropped(tmp_path):
    p = tmp_path / "pend.urdf"
    p.write_text(URDF)
    welded = torsion.load_urdf(str(p), arm_root="base", arm_tip="arm")
    assert welded.joint_name == ["shoulder"]
    np.testing.assert_allclose(welded.body_mass[1:], [3.0], rtol=0, atol=1e-15)  # forearm locked at 0, welded
    # same as the whole pendulum with the elbow held at 0: g(q) of the shoulder
    whole = torsion.Model.from_urdf_string(URDF)
    assert rel_err(torsion.gravity(welded, [0.4]), torsion.gravity(whole, [0.4, 0.0])[:1]) < 1e-14
    dropped = torsion.load_urdf(str(p), arm_root="base", arm_tip="arm", drop_off_chain=True)
    np.testing.assert_array_equal(dropped.body_mass[1:], [2.0])
    s = torsion.Model.from_urdf_string(URDF, root="base", tip="arm", drop_off_chain=True)
    np.testing.assert_array_equal(s.body_mass, dropped.body_mass)


def test_baxter_left_arm_with_and_without_gripper():
    try:
        welded = torsion.Model.baxter_left_arm()
    except ValueError as e:
        pytest.skip(str(e))
    bare = torsion.Model.baxter_left_arm(drop_off_chain=True)
    assert welded.joint_name == bare.joint_name and welded.nv == 7
    # the gripper (0.3 kg), its fingers and tips (0.06 kg), 5 hand sensors and 3 arm dummies (0.1 g each)
    assert abs(welded.body_mass[1:].sum() - bare.body_mass[1:].sum() - (0.3 + 0.06 + 8e-4)) < 1e-12
