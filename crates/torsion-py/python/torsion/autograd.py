"""PyTorch integration: rollouts as a differentiable `torch.autograd.Function`.

    import torsion, torsion.autograd
    states = torsion.autograd.rollout(model, solver, x0, controls, params, param_names)  # (T + 1, n) tensor
    loss = f(states); loss.backward()   # x0.grad, controls.grad, params.grad

The forward pass runs `torsion.rollout` (on a copy of the model with `params` written to `param_names`); the
backward pass runs `torsion.rollout_vjp` with the incoming gradient as dL/dstates. Computation is in float64
on the CPU; results come back in the dtype and device of `x0`.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import torch

from . import _torsion


def _np(t: torch.Tensor, name: str = "tensor") -> np.ndarray:
    """float64 NumPy copy; float32 is up-cast exactly, other dtypes raise (the NumPy path's rule,
    docs/decisions.md "float32 from Python")."""
    if t.dtype not in (torch.float64, torch.float32):
        raise TypeError(f"{name}: expected a float64 (or float32, up-cast) tensor, got dtype {t.dtype}")
    return np.ascontiguousarray(t.detach().cpu().to(torch.float64).numpy())


class RolloutFunction(torch.autograd.Function):
    """apply(x0, controls, params, model, solver, param_names, dt) -> states (T + 1, n)."""

    @staticmethod
    def forward(ctx, x0, controls, params, model, solver, param_names, dt):  # type: ignore[override]
        """`torsion.rollout` of `solver` on `model` (a copy with `params` (k,) written to `param_names`, when given)
        from x0 (n,) under controls (T, nu) with time step dt (s; None: the model's)."""
        m = model if params is None else model.with_params(list(param_names), _np(params, "params"))
        u = _np(controls, "controls")
        states = _torsion.rollout(m, solver, _np(x0, "x0"), u, dt=dt)
        ctx.torsion = (m, solver, states, u, list(param_names) if param_names is not None else [], dt)
        ctx.meta = (x0.dtype, x0.device, controls.dtype, controls.device)
        if params is not None:
            ctx.pmeta = (params.dtype, params.device)
        return torch.from_numpy(states).to(dtype=x0.dtype, device=x0.device)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g):  # type: ignore[override]
        """`torsion.rollout_vjp` with g = dL/dstates (T + 1, n): the gradients of x0, controls and params."""
        m, solver, states, u, names, dt = ctx.torsion
        r = _torsion.rollout_vjp(m, solver, states, u, _np(g, "grad"), param_names=names, dt=dt)
        xd, xdev, ud, udev = ctx.meta
        gx = torch.from_numpy(r.x0).to(dtype=xd, device=xdev) if ctx.needs_input_grad[0] else None
        gu = torch.from_numpy(r.controls).to(dtype=ud, device=udev) if ctx.needs_input_grad[1] else None
        gp = None
        if ctx.needs_input_grad[2]:
            pd, pdev = ctx.pmeta
            gp = torch.from_numpy(r.params).to(dtype=pd, device=pdev)
        return gx, gu, gp, None, None, None, None


def rollout(
    model: _torsion.Model,
    solver,
    x0,
    controls,
    params: Optional[torch.Tensor] = None,
    param_names: Optional[Sequence[str]] = None,
    dt: Optional[float] = None,
) -> torch.Tensor:
    """Differentiable rollout of `solver` (any torsion solver) on `model`: x0 (n,), controls (T, nu), params (k,)
    for `param_names` -> states (T + 1, n); dt: time step in s (None: the model's). Tensors are float64 or float32
    (computed in float64; results come back in x0's dtype and device).

    Gradients flow to whichever of x0, controls, params require grad. The x0 gradient is ambient (one entry per
    state entry, as `RolloutGrad.x0`).
    """
    if (params is None) != (param_names is None):
        raise ValueError("give params and param_names together")
    x0 = torch.as_tensor(x0, dtype=torch.float64) if not isinstance(x0, torch.Tensor) else x0
    controls = torch.as_tensor(controls, dtype=torch.float64) if not isinstance(controls, torch.Tensor) else controls
    if params is not None and not isinstance(params, torch.Tensor):
        params = torch.as_tensor(params, dtype=torch.float64)
    if params is not None and params.shape != (len(param_names),):
        raise ValueError(f"params: expected shape ({len(param_names)},), got {tuple(params.shape)}")
    return RolloutFunction.apply(x0, controls, params, model, solver, param_names, dt)


__all__ = ["RolloutFunction", "rollout"]
