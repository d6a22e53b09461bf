"""API round trips: loading, building, parameters, solvers, shapes."""
import copy

import numpy as np
import pytest

import torsion
from conftest import PEND_URDF, controls

URDF = PEND_URDF

MJCF = """<mujoco model="slider"><worldbody><body name="cart" pos="0 0 1">
  <joint name="slide" type="slide" axis="1 0 0"/><geom type="box" size="0.1 0.1 0.1" mass="1"/>
  <body name="pole"><joint name="hinge" type="hinge" axis="0 1 0"/>
    <geom type="capsule" fromto="0 0 0 0 0 0.5" size="0.02" mass="0.2"/></body>
</body></worldbody></mujoco>"""


def test_two_link_arm_properties(arm):
    assert arm.body_count == 3 and arm.joint_count == 2 and arm.nq == 2 and arm.nv == 2
    assert arm.body_name == ["base", "link1", "link2"]
    assert arm.joint_type == ["revolute", "revolute"]
    assert arm.body_fixed == [True, False, False] and arm.body_dynamic == [1, 2]
    np.testing.assert_array_equal(arm.gravity, [0.0, -9.8, 0.0])
    assert arm.dt == 0.01
    assert "body_mass[link1]" in arm.param_names
    assert "Model('two_link_arm'" in repr(arm)


def test_params_round_trip(arm):
    names = arm.params_select("body_mass[")
    assert names == ["body_mass[link1]", "body_mass[link2]"]
    np.testing.assert_array_equal(arm.params_get(names), [1.0, 1.0])
    arm.params_set(names, np.array([1.5, 0.7]))
    np.testing.assert_array_equal(arm.params_get(names), [1.5, 0.7])
    np.testing.assert_array_equal(arm.body_mass[1:], [1.5, 0.7])
    all_values = arm.params_get()
    assert all_values.shape == (len(arm.param_names),) and all_values.dtype == np.float64
    arm.params_set(None, all_values * 1.0)
    np.testing.assert_array_equal(arm.params_get(), all_values)
    m2 = arm.with_params(["body_mass[link1]"], [3.0])
    assert m2.params_get(["body_mass[link1]"])[0] == 3.0 and arm.params_get(["body_mass[link1]"])[0] == 1.5
    m3 = copy.deepcopy(arm)
    m3.params_set(["body_mass[link2]"], [9.0])
    assert arm.params_get(["body_mass[link2]"])[0] == 0.7


def test_urdf_string_and_file(tmp_path):
    m = torsion.Model.from_urdf_string(URDF)
    assert m.joint_name == ["shoulder", "elbow"] and m.nq == 2
    p = tmp_path / "pend.urdf"
    p.write_text(URDF)
    m2 = torsion.load_urdf(str(p), arm_root="base", arm_tip="arm")
    assert m2.joint_name == ["shoulder"]
    m3 = torsion.Model.from_urdf(p)
    np.testing.assert_array_equal(m3.params_get(), m.params_get())


def test_mjcf_string_and_file(tmp_path):
    m = torsion.Model.from_mjcf_string(MJCF)
    assert m.joint_type == ["prismatic", "revolute"] and m.nv == 2
    p = tmp_path / "slider.xml"
    p.write_text(MJCF)
    assert torsion.load_mjcf(str(p)).nv == 2


def test_qpos0_is_the_default_state():
    xml = """<mujoco><option density="1000" viscosity="0.01"><flag contact="disable"/></option><worldbody>
      <body pos="0.1 -0.2 1" quat="0 1 0 0"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
    </worldbody></mujoco>"""
    m = torsion.Model.from_mjcf_string(xml)
    np.testing.assert_array_equal(m.qpos0, [0.1, -0.2, 1, 0, 1, 0, 0])
    assert not m.qpos0.flags.writeable
    assert (m.fluid_density, m.fluid_viscosity, m.contact_enabled) == (1000.0, 0.01, False)
    for s in (torsion.FeatherstoneSolver(), torsion.NcpSolver()):
        np.testing.assert_array_equal(s.initial_state(m)[:7], m.qpos0)


def test_baxter_left_arm():
    try:
        m = torsion.Model.baxter_left_arm()
    except ValueError as e:
        pytest.skip(str(e))
    assert m.joint_name[0] == "left_s0" and m.nv == 7


def test_builder():
    b = torsion.ModelBuilder("pendulum", gravity=(0, 0, -9.81), dt=0.005)
    base = b.add_fixed_body("base")
    link = b.add_body("link", 1.0, np.diag([0.01, 0.01, 0.001]), com=(0, 0, -0.5))
    b.add_joint("hinge", "revolute", base, link, anchor_child=(0, 0, 0.5), axis=(0, 1, 0))
    m = b.build()
    assert m.dt == 0.005 and m.nq == 1 and m.body_name == ["base", "link"]
    with pytest.raises(ValueError, match="already called"):
        b.build()
    s = torsion.FeatherstoneSolver()
    x = torsion.rollout(m, s, s.initial_state(m, [0.3]), np.zeros((50, 1)))
    assert x.shape == (51, 2) and x[-1, 0] < 0.3  # swings back


def test_solvers_options():
    s = torsion.XpbdSolver(iterations=10, compliance=1e-6, substeps=2, ordering="jacobi", jacobi_relaxation=0.5,
                           limits=False, springs=False)
    assert (s.iterations, s.compliance, s.substeps, s.ordering, s.jacobi_relaxation, s.limits, s.springs) == (
        10, 1e-6, 2, "jacobi", 0.5, False, False)
    assert torsion.FeatherstoneSolver(joint_damping=False).joint_damping is False
    assert torsion.XpbdSolver().iterations == 30


def test_layouts_and_step(arm, solver):
    n = solver.state_dim(arm)
    assert n == (13 * 3 if isinstance(solver, torsion.XpbdSolver) else 4)
    assert solver.tangent_dim(arm) == (24 if isinstance(solver, torsion.XpbdSolver) else 4)
    assert solver.control_dim(arm) == 2
    x0 = solver.initial_state(arm, np.array([0.4, -0.7]))
    assert x0.shape == (n,)
    u = controls(15, 2)
    xs = torsion.rollout(arm, solver, x0, u)
    assert xs.shape == (16, n) and xs.dtype == np.float64
    np.testing.assert_array_equal(xs[0], x0)
    x = x0
    for t in range(15):
        x = torsion.step(arm, solver, x, u[t])
        np.testing.assert_array_equal(x, xs[t + 1])
    # lists are accepted, explicit dt is honoured
    assert torsion.step(arm, solver, list(x0), [0.0, 0.0], dt=0.02).shape == (n,)


def test_xpbd_joint_angles_match_featherstone_start(arm):
    s = torsion.XpbdSolver()
    x0 = s.initial_state(arm, [0.4, -0.7])
    np.testing.assert_allclose(s.joint_angles(arm, x0), [0.4, -0.7], atol=1e-12)
    xs = torsion.rollout(arm, s, x0, np.zeros((5, 2)))
    assert s.joint_angles(arm, xs).shape == (6, 2)


def test_featherstone_free_joint_controls_per_dof():
    m = torsion.Model.floating_tree()
    s = torsion.FeatherstoneSolver()
    assert s.control_dim(m) == m.nv and s.state_dim(m) == m.nq + m.nv
    x0 = s.initial_state(m)
    u = np.zeros((5, m.nv))
    xs = torsion.rollout(m, s, x0, u, dt=1e-3)
    g = torsion.rollout_vjp(m, s, xs, u, np.ones_like(xs), dt=1e-3)
    assert g.controls.shape == (5, m.nv) and g.x0_tangent.shape == (2 * m.nv,)


def test_dynamics_shapes_and_identities(arm):
    q, v, tau = np.array([0.3, -0.4]), np.array([0.5, 0.2]), np.array([0.1, -0.3])
    M = torsion.crba(arm, q)
    assert M.shape == (2, 2)
    np.testing.assert_allclose(M, M.T, atol=1e-14)
    a = torsion.aba(arm, q, v, tau)
    np.testing.assert_allclose(torsion.rnea(arm, q, v, a), tau, atol=1e-12)
    np.testing.assert_allclose(torsion.gravity(arm, q), torsion.rnea(arm, q, np.zeros(2), np.zeros(2)), atol=1e-14)
    c = torsion.nonlinear_effects(arm, q, v)
    np.testing.assert_allclose(M @ a + c, tau, atol=1e-12)
    dq, dv, da = torsion.rnea_derivatives(arm, q, v, a)
    np.testing.assert_allclose(da, M, atol=1e-12)
    _, _, dtau = torsion.aba_derivatives(arm, q, v, tau)
    np.testing.assert_allclose(dtau, np.linalg.inv(M), atol=1e-10)


def test_params_select_unknown_prefix_raises():
    arm = torsion.Model.two_link_arm()
    with pytest.raises(ValueError, match="body_mass"):
        arm.params_select("nope[")


def test_solver_classes_document_themselves():
    # help(torsion.NcpSolver) shows the arguments and what the state and controls are
    for cls, arg in [(torsion.XpbdSolver, "iterations"), (torsion.FeatherstoneSolver, "joint_damping"),
                     (torsion.NcpSolver, "friction_set")]:
        doc = cls.__doc__ or ""
        assert arg in doc and "controls" in doc, (cls, doc)
