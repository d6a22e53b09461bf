"""Derivatives from Python against central finite differences (float64): rollout VJPs (x0, controls,
parameters), step and trajectory Jacobians (A, B, C) in tangent coordinates, dynamics derivatives.
The worst relative errors are printed (pytest -s) and asserted <= 1e-6."""
import numpy as np
import pytest

import torsion
from conftest import controls, fd, moving_state, rel_err, three_link

TOL = 1e-6
T = 10
Q0 = np.array([0.3, -0.5, 0.8])
PARAMS = ["body_mass[l1]", "body_mass[l3]", "body_inertia[l2].ixy", "joint_anchor_child[j2].x"]


@pytest.fixture
def tl():
    return three_link()


def report(what, err):
    print(f"\n  {what}: max rel err {err:.2e}")
    assert err <= TOL, f"{what}: {err:.3e}"


def weights(shape, seed=1):
    return np.random.default_rng(seed).standard_normal(shape)


def weighted_rollout(arm, solver):
    """x0, controls, the rollout's states and random loss weights w (L = sum(w * states))."""
    x0 = moving_state(arm, solver, Q0)
    u = controls(T, 3)
    xs = torsion.rollout(arm, solver, x0, u)
    return x0, u, xs, weights(xs.shape)


def test_rollout_vjp_controls_and_params(tl, solver):
    arm = tl
    x0, u, xs, w = weighted_rollout(arm, solver)
    loss = lambda m, x, uu: float(np.sum(w * torsion.rollout(m, solver, x, uu)))
    g = torsion.rollout_vjp(arm, solver, xs, u, w, param_names=PARAMS)
    assert g.param_names == PARAMS
    num_u = fd(lambda d: loss(arm, x0, u + d.reshape(u.shape)), np.zeros(u.size), 1e-6)
    report(f"{type(solver).__name__} dL/du", rel_err(g.controls.ravel(), num_u))
    p0 = arm.params_get(PARAMS)
    num_p = fd(lambda p: loss(arm.with_params(PARAMS, p), x0, u), p0, 1e-6)
    report(f"{type(solver).__name__} dL/dtheta", rel_err(g.params, num_p))


def test_rollout_vjp_initial_state_tangent(tl, solver):
    arm = tl
    x0, u, xs, w = weighted_rollout(arm, solver)
    g = torsion.rollout_vjp(arm, solver, xs, u, w)
    f = lambda d: float(np.sum(w * torsion.rollout(arm, solver, solver.retract(arm, x0, d), u)))
    num = fd(f, np.zeros(solver.tangent_dim(arm)), 1e-6)
    report(f"{type(solver).__name__} dL/dx0 (tangent)", rel_err(g.x0_tangent, num))
    np.testing.assert_allclose(solver.grad_to_tangent(arm, x0, g.x0), g.x0_tangent, atol=1e-12)


def test_featherstone_x0_ambient(tl):
    arm = tl
    s = torsion.FeatherstoneSolver()
    x0, u, xs, w = weighted_rollout(arm, s)
    g = torsion.rollout_vjp(arm, s, xs, u, w)
    num = fd(lambda x: float(np.sum(w * torsion.rollout(arm, s, x, u))), x0, 1e-6)
    report("featherstone dL/dx0 (ambient)", rel_err(g.x0, num))


def test_step_jacobians(tl, solver):
    arm = tl
    x = moving_state(arm, solver, Q0)
    u = np.array([1.5, -2.0, 0.7])
    A, B, C = torsion.step_jacobians(arm, solver, x, u, PARAMS)
    nt = solver.tangent_dim(arm)
    assert A.shape == (nt, nt) and B.shape == (nt, 3) and C.shape == (nt, len(PARAMS))
    y = torsion.step(arm, solver, x, u)
    diff = lambda z: solver.local_diff(arm, y, z)
    name = type(solver).__name__
    report(f"{name} A", rel_err(A, fd(lambda d: diff(torsion.step(arm, solver, solver.retract(arm, x, d), u)),
                                       np.zeros(nt))))
    report(f"{name} B", rel_err(B, fd(lambda uu: diff(torsion.step(arm, solver, x, uu)), u)))
    p0 = arm.params_get(PARAMS)
    report(f"{name} C", rel_err(C, fd(lambda p: diff(torsion.step(arm.with_params(PARAMS, p), solver, x, u)), p0)))


def test_trajectory_jacobians_match_steps(tl, solver):
    arm = tl
    u = controls(6, 3)
    xs = torsion.rollout(arm, solver, moving_state(arm, solver, Q0), u)
    A, B, C = torsion.trajectory_jacobians(arm, solver, xs, u, PARAMS[:2])
    assert A.shape[0] == 6 and C.shape[2] == 2
    for t in range(6):
        a, b, c = torsion.step_jacobians(arm, solver, xs[t], u[t], PARAMS[:2])
        np.testing.assert_array_equal(A[t], a)
        np.testing.assert_array_equal(B[t], b)
        np.testing.assert_array_equal(C[t], c)
    # the chained Jacobians give the sensitivity of the final state to the first control
    S = B[0]
    for t in range(1, 6):
        S = A[t] @ S
    num = fd(lambda d: solver.local_diff(arm, xs[-1], torsion.rollout(arm, solver, xs[0], u + np.vstack(
        [d, np.zeros((5, 3))]))[-1]), np.zeros(3))
    report(f"{type(solver).__name__} chained dx_T/du_0", rel_err(S, num))


def test_dynamics_derivatives(tl):
    arm = tl
    q, v, acc, tau = Q0, np.array([0.5, 0.2, -0.3]), np.array([0.7, -1.1, 0.4]), np.array([0.1, -0.3, 0.2])
    dq, dv, da = torsion.rnea_derivatives(arm, q, v, acc)
    report("drnea/dq", rel_err(dq, fd(lambda z: torsion.rnea(arm, z, v, acc), q)))
    report("drnea/dv", rel_err(dv, fd(lambda z: torsion.rnea(arm, q, z, acc), v)))
    report("drnea/da", rel_err(da, fd(lambda z: torsion.rnea(arm, q, v, z), acc)))
    fq, fv, ft = torsion.aba_derivatives(arm, q, v, tau)
    report("daba/dq", rel_err(fq, fd(lambda z: torsion.aba(arm, z, v, tau), q)))
    report("daba/dv", rel_err(fv, fd(lambda z: torsion.aba(arm, q, z, tau), v)))
    report("daba/dtau", rel_err(ft, fd(lambda z: torsion.aba(arm, q, v, z), tau)))
    p0 = arm.params_get(PARAMS)
    pr = torsion.rnea_param_derivatives(arm, q, v, acc, PARAMS)
    report("drnea/dtheta", rel_err(pr, fd(lambda p: torsion.rnea(arm.with_params(PARAMS, p), q, v, acc), p0)))
    pa = torsion.aba_param_derivatives(arm, q, v, tau, PARAMS)
    report("daba/dtheta", rel_err(pa, fd(lambda p: torsion.aba(arm.with_params(PARAMS, p), q, v, tau), p0)))


def test_gravity_gradient_free_tree():
    """Ball / free joints: dRNEA/dq in tangent coordinates, FD through Featherstone's retract."""
    m = torsion.Model.floating_tree()
    s = torsion.FeatherstoneSolver()
    rng = np.random.default_rng(3)
    x = s.retract(m, s.initial_state(m), 0.3 * rng.standard_normal(2 * m.nv))
    q, v, acc = x[: m.nq], x[m.nq:], rng.standard_normal(m.nv)
    dq, dv, _ = torsion.rnea_derivatives(m, q, v, acc)
    qt = lambda d: s.retract(m, np.concatenate([q, v]), np.concatenate([d, np.zeros(m.nv)]))[: m.nq]
    report("free tree drnea/dq", rel_err(dq, fd(lambda d: torsion.rnea(m, qt(d), v, acc), np.zeros(m.nv))))
    report("free tree drnea/dv", rel_err(dv, fd(lambda z: torsion.rnea(m, q, z, acc), v)))


def test_featherstone_selected_params_path_matches_full(tl):
    """rollout_vjp for a parameter subset (per-step Jacobians, selected parameters only) equals the full-table
    adjoint (DiffSolver::step_vjp) restricted to the subset."""
    s = torsion.FeatherstoneSolver()
    x0, u, xs, w = weighted_rollout(tl, s)
    fast = torsion.rollout_vjp(tl, s, xs, u, w, param_names=PARAMS)
    full = torsion.rollout_vjp(tl, s, xs, u, w)
    idx = [full.param_names.index(n) for n in PARAMS]
    report("featherstone subset vs full-table adjoint: params", rel_err(fast.params, full.params[idx]) * 1e4)
    report("featherstone subset vs full-table adjoint: controls", rel_err(fast.controls, full.controls) * 1e4)
    report("featherstone subset vs full-table adjoint: x0", rel_err(fast.x0, full.x0) * 1e4)


def test_xpbd_x0_ambient_dynamic_bodies(tl):
    """The ambient x0 gradient (quaternion components included, no renormalisation) of the dynamic bodies;
    fixed bodies are constants of the step, their entries hold only the loss's direct term."""
    s = torsion.XpbdSolver()
    x0, u, xs, w = weighted_rollout(tl, s)
    g = torsion.rollout_vjp(tl, s, xs, u, w)
    num = fd(lambda x: float(np.sum(w * torsion.rollout(tl, s, x, u))), x0, 1e-6).ravel()
    dyn = np.concatenate([13 * k + np.arange(13) for k in tl.body_dynamic])
    report("xpbd dL/dx0 (ambient, dynamic bodies)", rel_err(g.x0[dyn], num[dyn]))
    fixed = np.concatenate([13 * k + np.arange(13) for k in range(tl.body_count) if tl.body_fixed[k]])
    np.testing.assert_array_equal(g.x0[fixed], w[0, fixed])
