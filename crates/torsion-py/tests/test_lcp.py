"""The boxed-LCP contact stepper (spec 004, issue 17 item 5) from Python: a ball dropped on a plane lands and
rolls; the step info names the LCP solver that answered; rollout_vjp (controls, x0's velocity, the ball's friction
and mass) matches central finite differences; trajectory_jacobians and the torch path agree with it; bad options
raise."""
import numpy as np
import pytest

import torsion
from conftest import rel_err

XML = """<mujoco><option timestep="0.01" gravity="0 0 -9.81"/><worldbody>
<geom name="floor" type="plane" size="5 5 0.1" friction="0.2"/>
<body name="ball" pos="0 0 0.3"><freejoint/><geom name="ball" type="sphere" size="0.1" mass="1.3" friction="0.3"/>
</body></worldbody></mujoco>"""
T = 30
NAMES = ["shape_friction[ball]", "body_mass[ball]"]


@pytest.fixture
def ball():
    return torsion.Model.from_mjcf_string(XML, "ball.xml")


def dropped(m, s, u=None):
    """The ball released at 0.16 m (lands after ~8 steps) moving at 1 m/s: x0, controls (T, 6), states."""
    x0 = s.initial_state(m, q=[0, 0, 0.16, 1, 0, 0, 0], v=[0, 0, 0, 1.0, 0.2, 0])
    if u is None:
        u = np.zeros((T, 6))
        u[:, 3] = 0.4  # a push along x (N)
        u[:, 1] = 0.01  # a torque about y (N·m)
    return x0, u, torsion.rollout(m, s, x0, u)


def test_ball_lands_and_the_step_info_names_the_lcp_solver(ball):
    s = torsion.LcpSolver()
    x0, u, xs = dropped(ball, s)
    assert xs.shape == (T + 1, 13)
    # caught by the floor (radius 0.1; the parallel update lets the landing step sink by ~Δt·v until CCD) and
    # resting on it: v = [ω, body-frame linear]
    assert np.all(xs[:, 2] > 0.1 - 0.02) and np.ptp(xs[-10:, 2]) < 1e-9
    x1, info = torsion.step(ball, s, xs[-2], u[-1], return_info=True)
    assert isinstance(info, torsion.StepInfo)
    assert info.solver.startswith("lcp/") and info.solver in ("lcp/jade", "lcp/pgs"), info
    assert info.contacts == 1 and info.converged and info.residual < 1e-6, info
    np.testing.assert_array_equal(x1, torsion.step(ball, s, xs[-2], u[-1]))
    # in the air: no LCP solved, still named by the stepper
    _, air = torsion.step(ball, s, xs[0], u[0], return_info=True)
    assert air.contacts == 0 and air.iterations == 0 and air.solver.startswith("lcp/")
    assert "lcp/" in repr(info)


def loss_weights(n):
    """L = w · x_T: final position along x and z, final spin and velocities."""
    w = np.zeros(n)
    w[0], w[2], w[7], w[9], w[11] = 1.0, 0.5, -0.3, 0.2, 0.7
    return w


@pytest.mark.parametrize("position", ["parallel", "semi_implicit"])
def test_rollout_vjp_matches_central_differences(ball, position):
    # discrete detection: the sliding landing this test was written for (with CCD the ball lands exactly and rolls
    # without slipping, so ∂L/∂μ = 0; CCD's own gradients are checked by the Rust golden tests)
    s = torsion.LcpSolver(position=position, ccd=False)
    x0, u, xs = dropped(ball, s)
    w = loss_weights(xs.shape[1])
    dl = np.zeros_like(xs)
    dl[-1] = w
    g = torsion.rollout_vjp(ball, s, xs, u, dl, param_names=NAMES)
    h = 1e-6

    def num(f, p):
        p = np.asarray(p, dtype=float)
        out = np.zeros(p.size)
        for i in range(p.size):
            d = np.zeros(p.size)
            d[i] = h
            out[i] = (f(p + d) - f(p - d)) / (2 * h)
        return out

    loss_u = lambda uu: w @ torsion.rollout(ball, s, x0, uu.reshape(u.shape))[-1]
    e_u = rel_err(g.controls.ravel(), num(loss_u, u.ravel()))

    def loss_v(v):
        x = x0.copy()
        x[7:] = v
        return w @ torsion.rollout(ball, s, x, u)[-1]

    e_v = rel_err(g.x0[7:], num(loss_v, x0[7:]))
    theta = ball.params_get(NAMES)
    loss_p = lambda p: w @ torsion.rollout(ball.with_params(NAMES, p), s, x0, u)[-1]
    num_p = num(loss_p, theta)
    e_p = rel_err(g.params, num_p)
    print(f"lcp ({position}) rollout_vjp vs central FD: controls {e_u:.1e}, x0 velocity {e_v:.1e}, "
          f"params {e_p:.1e} (dL/dmu {g.params[0]:.6f}, dL/dmass {g.params[1]:.6f})")
    assert abs(g.params[0]) > 1e-3  # friction acts on the rolling ball
    assert max(e_u, e_v, e_p) <= 1e-6, (e_u, e_v, e_p)


def test_trajectory_jacobians_and_torch_agree_with_rollout_vjp(ball):
    s = torsion.LcpSolver()
    x0, u, xs = dropped(ball, s)
    w = loss_weights(xs.shape[1])
    dl = np.zeros_like(xs)
    dl[-1] = w
    g = torsion.rollout_vjp(ball, s, xs, u, dl, param_names=[])
    a, b, _ = torsion.trajectory_jacobians(ball, s, xs, u)
    assert a.shape == (T, 12, 12) and b.shape == (T, 12, 6)
    # the chain rule through the tangent Jacobians: λ_T = tangent of w at x_T, λ_t = A_tᵀ λ_{t+1}
    lam = s.grad_to_tangent(ball, xs[-1], w)
    gu = np.zeros_like(u)
    for t in reversed(range(T)):
        gu[t] = b[t].T @ lam
        lam = a[t].T @ lam
    assert rel_err(gu, g.controls) < 1e-9
    torch = pytest.importorskip("torch")
    autograd = pytest.importorskip("torsion.autograd")
    ut = torch.tensor(u, requires_grad=True)
    states = autograd.rollout(ball, s, torch.tensor(x0), ut)
    (states[-1] @ torch.tensor(w)).backward()
    assert rel_err(ut.grad.numpy(), g.controls) < 1e-12


@pytest.mark.parametrize("make", [torsion.LcpSolver, torsion.NcpSolver, torsion.FeatherstoneSolver])
def test_parameter_writes_reach_a_solver_with_a_cached_workspace(ball, make):
    """A solver keeps its workspace per model; writing a parameter (params_set, with_params) must not leave the
    contact steppers on the old masses (before: the cached dynamics model was reused, the mass change ignored)."""
    s = make()
    x0, u, xs = dropped(ball, s)
    heavy = ball.with_params(["body_mass[ball]"], [2.6])
    np.testing.assert_array_equal(torsion.rollout(heavy, s, x0, u), torsion.rollout(heavy, make(), x0, u))
    ball.params_set(["body_mass[ball]"], [0.7])
    np.testing.assert_array_equal(torsion.rollout(ball, s, x0, u), torsion.rollout(ball, make(), x0, u))
    assert np.abs(torsion.rollout(ball, s, x0, u) - xs).max() > 1e-3  # the push moves a lighter ball further


def test_options_and_errors(ball):
    s = torsion.LcpSolver(position="semi_implicit", bounce_threshold=0.2, chain=("jade",), margin=0.02)
    assert (s.position, s.bounce_threshold, s.chain, s.margin) == ("semi_implicit", 0.2, ["jade"], 0.02)
    assert torsion.LcpSolver().chain == ["jade", "pgs"]
    assert (torsion.LcpSolver().ccd, s.ccd, torsion.LcpSolver(ccd=False).ccd) == (True, False, False)
    with pytest.raises(ValueError, match="ccd"):
        torsion.LcpSolver(position="semi_implicit", ccd=True)
    x0, u, xs = dropped(ball, s)  # Jade's Dantzig alone answers these LCPs
    assert abs(xs[-1, 2] - 0.1) < 2e-3  # semi-implicit: lands at the contact distance
    with pytest.raises(ValueError, match="chain"):
        torsion.LcpSolver(chain=("pgs",))
    with pytest.raises(ValueError, match="position"):
        torsion.LcpSolver(position="explicit")
    with pytest.raises(ValueError, match="bounce_threshold"):
        torsion.LcpSolver(bounce_threshold=-1.0)
    with pytest.raises(TypeError, match="restitution"):
        torsion.LcpSolver(restitution=0.5)  # ε is the shapes' parameter, not an option
    with pytest.raises(ValueError, match="u: expected shape \\(6,\\)"):
        torsion.step(ball, s, x0, np.zeros(7))


def test_restitution_parameter_bounces(ball):
    """ε from the model's parameter: the ball dropped from 0.3 m bounces with ε = 0.8 and not with ε = 0."""
    s = torsion.LcpSolver()
    x0 = s.initial_state(ball, q=[0, 0, 0.3, 1, 0, 0, 0])
    u = np.zeros((40, 6))
    flat = torsion.rollout(ball, s, x0, u)
    bouncy = torsion.rollout(ball.with_params(["shape_restitution[ball]"], [0.8]), s, x0, u)
    assert flat[:, 12].max() < 1e-6 < 0.5 < bouncy[:, 12].max()  # upward speed after the impact
