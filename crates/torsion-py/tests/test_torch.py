"""PyTorch integration: loss.backward() through rollouts; torch.autograd.gradcheck in float64."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torsion  # noqa: E402
import torsion.autograd  # noqa: E402

NAMES = ["body_mass[link1]", "body_mass[link2]", "body_inertia[link2].izz"]


def test_gradcheck_featherstone(arm):
    s = torsion.FeatherstoneSolver()
    x0 = torch.tensor(s.initial_state(arm, [0.4, -0.7], [0.2, 0.1]), dtype=torch.float64, requires_grad=True)
    u = torch.tensor(0.3 * np.random.default_rng(0).standard_normal((8, 2)), requires_grad=True)
    p = torch.tensor(arm.params_get(NAMES), requires_grad=True)
    f = lambda x, uu, pp: torsion.autograd.rollout(arm, s, x, uu, pp, NAMES)
    assert torch.autograd.gradcheck(f, (x0, u, p), eps=1e-6, atol=1e-7, rtol=1e-6)


def test_gradcheck_xpbd_controls_params(arm):
    s = torsion.XpbdSolver()
    x0 = torch.tensor(s.initial_state(arm, [0.4, -0.7]), dtype=torch.float64)
    u = torch.tensor(0.3 * np.random.default_rng(1).standard_normal((6, 2)), requires_grad=True)
    p = torch.tensor(arm.params_get(NAMES), requires_grad=True)
    f = lambda uu, pp: torsion.autograd.rollout(arm, s, x0, uu, pp, NAMES)
    assert torch.autograd.gradcheck(f, (u, p), eps=1e-6, atol=1e-7, rtol=1e-6)


def test_gradcheck_xpbd_initial_state():
    """x0 of the dynamic bodies (ambient, quaternions included) on a 3-D arm away from non-smooth points."""
    from conftest import moving_state, three_link

    m = three_link()
    s = torsion.XpbdSolver()
    x0 = torch.tensor(moving_state(m, s, [0.3, -0.5, 0.8]))
    fixed, dyn = x0[:13], x0[13:].clone().requires_grad_(True)
    u = torch.tensor(0.3 * np.random.default_rng(2).standard_normal((5, 3)), requires_grad=True)
    f = lambda xd, uu: torsion.autograd.rollout(m, s, torch.cat([fixed, xd]), uu)
    assert torch.autograd.gradcheck(f, (dyn, u), eps=1e-6, atol=1e-5, rtol=1e-5)


def test_backward_matches_rollout_vjp(arm):
    s = torsion.XpbdSolver()
    x0np = s.initial_state(arm, [0.1, 0.2])
    unp = np.full((10, 2), 0.2)
    u = torch.tensor(unp, requires_grad=True)
    states = torsion.autograd.rollout(arm, s, x0np, u)
    assert states.shape == (11, s.state_dim(arm)) and states.dtype == torch.float64
    loss = (states[:, :3] ** 2).sum()
    loss.backward()
    xs = torsion.rollout(arm, s, x0np, unp)
    g = np.zeros_like(xs)
    g[:, :3] = 2 * xs[:, :3]
    ref = torsion.rollout_vjp(arm, s, xs, unp, g, param_names=[])
    np.testing.assert_allclose(u.grad.numpy(), ref.controls, rtol=1e-12, atol=1e-14)


def test_float32_inputs_give_float32_outputs(arm):
    s = torsion.FeatherstoneSolver()
    x0 = torch.tensor(s.initial_state(arm), dtype=torch.float32, requires_grad=True)
    u = torch.zeros((4, 2), dtype=torch.float32, requires_grad=True)
    out = torsion.autograd.rollout(arm, s, x0, u)
    assert out.dtype == torch.float32
    out.sum().backward()
    assert x0.grad.dtype == torch.float32 and u.grad.shape == (4, 2)


def test_params_without_names_raise(arm):
    with pytest.raises(ValueError):
        torsion.autograd.rollout(arm, torsion.FeatherstoneSolver(), np.zeros(4), np.zeros((2, 2)),
                                 params=torch.ones(2))


def test_other_tensor_dtypes_raise(arm):
    """The NumPy paths' rule: float64, float32 (up-cast) accepted; other dtypes a TypeError naming the argument."""
    s = torsion.FeatherstoneSolver()
    x0 = torch.tensor(s.initial_state(arm))
    with pytest.raises(TypeError, match="controls: expected a float64 \\(or float32, up-cast\\) tensor"):
        torsion.autograd.rollout(arm, s, x0, torch.zeros((3, 2), dtype=torch.float16))
