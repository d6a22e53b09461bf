"""Every entry point given wrong inputs raises an ordinary Python exception: never a crash, never a caught
panic ("torsion internal error")."""
import numpy as np
import pytest

import torsion

BAD = [None, "x", 3, np.zeros(0), np.full(3, np.nan), np.zeros((2, 2, 2)), np.array(["a", "b"]),
       np.zeros(4, dtype=np.complex128), np.full(39, 1e308), [[1.0, 2.0], [3.0]]]


def calls(model, solver):
    x = solver.initial_state(model)
    n, nu = x.size, solver.control_dim(model)
    u = np.zeros((3, nu))
    xs = torsion.rollout(model, solver, x, u)
    q, v = model.neutral_q(), np.zeros(model.nv)
    return [
        (torsion.step, [model, solver, x, u[0]]),
        (torsion.rollout, [model, solver, x, u]),
        (torsion.rollout_batch, [model, solver, x, u]),
        (torsion.rollout_vjp, [model, solver, xs, u, np.ones_like(xs)]),
        (torsion.step_jacobians, [model, solver, x, u[0]]),
        (torsion.trajectory_jacobians, [model, solver, xs, u]),
        (solver.retract, [model, x, np.zeros(solver.tangent_dim(model))]),
        (solver.local_diff, [model, x, x]),
        (solver.grad_to_tangent, [model, x, x]),
        (torsion.crba, [model, q]),
        (torsion.rnea, [model, q, v, v]),
        (torsion.aba, [model, q, v, v]),
        (torsion.gravity, [model, q]),
        (torsion.nonlinear_effects, [model, q, v]),
        (torsion.rnea_derivatives, [model, q, v, v]),
        (torsion.aba_derivatives, [model, q, v, v]),
        (model.params_set, [None, model.params_get()]),
    ]


@pytest.mark.parametrize("which", ["arm_xpbd", "arm_featherstone", "tree_featherstone"])
def test_bad_arguments_raise(which):
    model = torsion.Model.floating_tree() if which.startswith("tree") else torsion.Model.two_link_arm()
    solver = torsion.XpbdSolver() if which.endswith("xpbd") else torsion.FeatherstoneSolver()
    for f, args in calls(model, solver):
        f(*args)  # the valid call works
        for i in range(len(args)):
            for bad in BAD:
                a = list(args)
                a[i] = bad
                try:
                    f(*a)
                except (TypeError, ValueError, IndexError, torsion.SimulationError) as e:
                    assert "internal error" not in str(e), (f.__name__, i, bad, e)
                except RuntimeError as e:  # a caught panic would land here
                    pytest.fail(f"{f.__name__} arg {i} = {bad!r}: {e}")
