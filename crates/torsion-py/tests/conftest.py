import numpy as np
import pytest

import torsion


def rel_err(a, n):
    """Normwise relative error max|a - n| / max|n| (as torsion_diff::rel_err)."""
    a, n = np.asarray(a, dtype=float).ravel(), np.asarray(n, dtype=float).ravel()
    scale = np.abs(n).max() if n.size else 0.0
    err = np.abs(a - n).max() if n.size else 0.0
    return err / scale if scale > 0 else err


def fd(f, x, h=1e-6):
    """Central differences of f (array-valued) w.r.t. the flat vector x: columns = inputs."""
    x = np.asarray(x, dtype=float)
    cols = []
    for i in range(x.size):
        d = np.zeros_like(x)
        d.flat[i] = h
        cols.append((np.asarray(f(x + d)) - np.asarray(f(x - d))).ravel() / (2 * h))
    return np.stack(cols, axis=-1)


@pytest.fixture
def arm():
    return torsion.Model.two_link_arm(0.8, 0.5, 1.0, (0.0, -9.8, 0.0), 0.01)


@pytest.fixture(params=["xpbd", "featherstone"])
def solver(request):
    return torsion.XpbdSolver() if request.param == "xpbd" else torsion.FeatherstoneSolver()


def controls(t_len, nu, seed=0):
    rng = np.random.default_rng(seed)
    return 0.5 * rng.standard_normal((t_len, nu))


def three_link():
    """A 3-D three-link arm with non-parallel hinge axes (as crates/torsion-solvers/tests/common): planar
    models sit exactly on XPBD's non-smooth point (angular constraints satisfied exactly, docs/gradients.md)."""
    b = torsion.ModelBuilder("three_link", gravity=(0.0, 0.0, -9.8), dt=0.01)
    base = b.add_fixed_body("base", x=(0.1, -0.2, 0.3))
    inertia = lambda a, b_, c, d, e, f: np.array([[a, d, e], [d, b_, f], [e, f, c]])
    l1 = b.add_body("l1", 2.0, inertia(0.05, 0.04, 0.03, 0.001, -0.002, 0.0015))
    l2 = b.add_body("l2", 1.5, inertia(0.03, 0.035, 0.02, -0.001, 0.0005, 0.001))
    l3 = b.add_body("l3", 0.8, inertia(0.01, 0.012, 0.008, 0.0002, 0.0001, -0.0003))
    b.add_joint("j1", "revolute", base, l1, (0.05, 0.0, 0.1), (0.0, 0.01, -0.15), (0.0, 0.0, 1.0))
    b.add_joint("j2", "revolute", l1, l2, (0.02, 0.0, 0.15), (-0.12, 0.01, 0.0), (0.0, 1.0, 0.2))
    b.add_joint("j3", "revolute", l2, l3, (0.12, 0.0, 0.02), (-0.1, 0.0, 0.01), (1.0, 0.0, 0.3))
    return b.build()


def moving_state(model, solver, q, spin=1.0):
    """A state with velocities (XPBD: per-body twists inconsistent with the joints, as the Rust tests' moving_state)."""
    if isinstance(solver, torsion.XpbdSolver):
        x = solver.initial_state(model, q).reshape(model.body_count, 13)
        for k in model.body_dynamic:
            x[k, 10:13] = np.array([0.3, -0.5, 0.7]) * spin * k
            x[k, 7:10] = np.array([0.1, 0.2, -0.1]) * spin * k
        return x.ravel()
    return solver.initial_state(model, q, spin * np.linspace(0.3, -0.4, model.nv))


# a two-link pendulum (shoulder, elbow) used by the API and passive-force tests
PEND_URDF = """<robot name="pend">
  <link name="base"/>
  <link name="arm"><inertial><origin xyz="0 0 -0.25"/><mass value="2.0"/>
    <inertia ixx="0.05" ixy="0" ixz="0" iyy="0.05" iyz="0" izz="0.001"/></inertial></link>
  <link name="forearm"><inertial><origin xyz="0 0 -0.2"/><mass value="1.0"/>
    <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.001"/></inertial></link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="arm"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="10" velocity="5"/></joint>
  <joint name="elbow" type="continuous"><parent link="arm"/><child link="forearm"/>
    <origin xyz="0 0 -0.5"/><axis xyz="0 1 0"/></joint>
</robot>"""
