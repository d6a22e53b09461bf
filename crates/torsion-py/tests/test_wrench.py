"""External body wrenches from Python (issue 13 item 6; MuJoCo's xfrc_applied): `wrench=` on step / rollout /
rollout_vjp / step_jacobians for the generalized-coordinate solvers, ∂L/∂wrench against central differences,
the wrench's generalized force against the equivalent joint torques, shapes checked naming the argument, XPBD
refusing them."""
import numpy as np
import pytest

import torsion
from conftest import fd, rel_err, three_link

T = 6
SOLVERS = {
    "featherstone": torsion.FeatherstoneSolver,
    "ncp": torsion.NcpSolver,
    "lcp": lambda: torsion.LcpSolver(ccd=False),
}


def setup(solver_name, seed=0):
    m = three_link()
    s = SOLVERS[solver_name]()
    x0 = s.initial_state(m, [0.3, -0.2, 0.4], [0.5, -0.3, 0.2])
    rng = np.random.default_rng(seed)
    u = 0.3 * rng.standard_normal((T, m.nv))
    w = rng.standard_normal((T, m.body_count, 6))
    w[:, 0] = 0.0  # the fixed base: no effect
    return m, s, x0, u, w


@pytest.mark.parametrize("name", list(SOLVERS))
@pytest.mark.parametrize("per_step", [True, False])
def test_rollout_vjp_wrench_gradient_matches_central_differences(name, per_step):
    m, s, x0, u, w = setup(name)
    if not per_step:
        w = w[0]
    weights = np.random.default_rng(1).standard_normal((T + 1, s.state_dim(m)))

    def loss(wf):
        xs = torsion.rollout(m, s, x0, u, wrench=wf.reshape(w.shape))
        return np.sum(weights * xs)

    xs = torsion.rollout(m, s, x0, u, wrench=w)
    g = torsion.rollout_vjp(m, s, xs, u, weights, param_names=[], wrench=w)
    assert g.wrench.shape == w.shape
    num = fd(lambda wf: [loss(wf)], w.ravel(), h=1e-6)[0]
    err = rel_err(g.wrench.ravel(), num)
    print(f"{name} per_step={per_step}: dL/dwrench vs central FD rel err {err:.1e}")
    assert err < 1e-6, err
    # the controls' gradient is unchanged in form and still right with the wrench applied
    num_u = fd(lambda uf: [np.sum(weights * torsion.rollout(m, s, x0, uf.reshape(u.shape), wrench=w))], u.ravel())[0]
    assert rel_err(g.controls.ravel(), num_u) < 1e-6
    # without wrench= the gradient has none
    assert torsion.rollout_vjp(m, s, torsion.rollout(m, s, x0, u), u, weights, param_names=[]).wrench is None


@pytest.mark.parametrize("name", list(SOLVERS))
def test_a_wrench_acts_as_a_generalized_force(name):
    # a world torque on the last body enters the step exactly where the joint torques do (Σ_b J_bᵀ w_b)
    m, s, x0, u, _ = setup(name)
    last = m.body_count - 1
    w = np.zeros((m.body_count, 6))
    w[last, 3:] = [0.2, -0.4, 0.3]
    x1 = torsion.step(m, s, x0, u[0], wrench=w)
    # the generalized force of the wrench = the change of u that gives the same step: find it by B⁻¹ on the
    # velocity part (B's velocity rows, nv × nv, invertible), then check that step reproduces x1
    base = torsion.step(m, s, x0, u[0])
    _, b, _ = torsion.step_jacobians(m, s, x0, u[0])
    nv = m.nv
    du = np.linalg.solve(b[nv:, :nv], (x1 - base)[m.nq:])
    x1u = torsion.step(m, s, x0, u[0] + du)
    assert rel_err(x1u, x1) < 1e-6
    assert np.abs(du).max() > 1e-3  # the wrench did something
    # and the wrench on the fixed base (body 0) does nothing
    w0 = np.zeros((m.body_count, 6))
    w0[0] = 5.0
    np.testing.assert_array_equal(torsion.step(m, s, x0, u[0], wrench=w0), base)


def test_step_jacobians_with_a_wrench_match_central_differences():
    m, s, x0, u, w = setup("featherstone")
    a, b, _ = torsion.step_jacobians(m, s, x0, u[0], wrench=w[0])
    nv = m.nv
    # q-columns of A: the wrench's generalized force depends on q (Jacobian of the bodies)
    num = fd(lambda d: torsion.step(m, s, s.retract(m, x0, d), u[0], wrench=w[0]), np.zeros(2 * nv))
    # tangent of the output: q and v are both flat (hinges) here
    assert rel_err(a, num) < 1e-6, rel_err(a, num)
    a0, _, _ = torsion.step_jacobians(m, s, x0, u[0])
    assert np.abs(a - a0).max() > 1e-6  # the wrench changed A


def test_wrench_shapes_are_checked_and_xpbd_refuses():
    m, s, x0, u, w = setup("featherstone")
    nb = m.body_count
    with pytest.raises(ValueError, match=rf"wrench: expected shape \({nb}, 6\) or \({T}, {nb}, 6\)"):
        torsion.rollout(m, s, x0, u, wrench=w[:, :3])
    with pytest.raises(ValueError, match=rf"wrench: expected shape \({nb}, 6\)"):
        torsion.step(m, s, x0, u[0], wrench=w)
    with pytest.raises(ValueError, match=r"wrench: entry \[0, 1, 2\]"):
        bad = w.copy()
        bad[0, 1, 2] = np.nan
        torsion.rollout(m, s, x0, u, wrench=bad)
    xs = torsion.rollout(m, s, x0, u, wrench=w)
    with pytest.raises(ValueError, match="wrench: expected shape"):
        torsion.rollout_vjp(m, s, xs, u, np.ones_like(xs), wrench=w[:3])
    x = torsion.XpbdSolver()
    xm = three_link()
    with pytest.raises(ValueError, match="wrench: XpbdSolver takes no external body wrenches"):
        torsion.step(xm, x, x.initial_state(xm), np.zeros(x.control_dim(xm)), wrench=np.zeros((nb, 6)))
