"""torsion: differentiable physics for robotics research (Python bindings of the Rust engine).

State layouts (rows of every state array):
  XpbdSolver:         per body (fixed bodies included) [x(3), q(4: w, x, y, z), v(3), w(3)], world frame
                      -> 13 * model.body_count; tangent: 12 per dynamic body [x, dq (left exp map), v, w].
  FeatherstoneSolver, NcpSolver (contact): [q (nq), v (nv)]; tangent [dq (nv, joint integration), v (nv)].
Controls are (T, solver.control_dim(model)): one torque per joint (XPBD) or per DoF (Featherstone, Ncp).
Jacobians are in tangent coordinates. The PyTorch integration lives in `torsion.autograd` (imports torch).
"""
from ._torsion import (
    FeatherstoneSolver,
    Model,
    ModelBuilder,
    NcpSolver,
    RolloutGrad,
    SimulationError,
    XpbdSolver,
    aba,
    aba_derivatives,
    aba_param_derivatives,
    bench_step_rust,
    crba,
    gravity,
    load_mjcf,
    load_urdf,
    nonlinear_effects,
    passive_forces,
    rnea,
    rnea_derivatives,
    rnea_param_derivatives,
    rollout,
    rollout_batch,
    rollout_vjp,
    step,
    step_jacobians,
    trajectory_jacobians,
)

from . import models  # noqa: E402  (torsion.models.list() / torsion.models.load(name))

__version__ = "0.1.0"

__all__ = [
    "FeatherstoneSolver",
    "Model",
    "ModelBuilder",
    "NcpSolver",
    "RolloutGrad",
    "SimulationError",
    "XpbdSolver",
    "aba",
    "aba_derivatives",
    "aba_param_derivatives",
    "bench_step_rust",
    "crba",
    "gravity",
    "load_mjcf",
    "load_urdf",
    "models",
    "nonlinear_effects",
    "passive_forces",
    "rnea",
    "rnea_derivatives",
    "rnea_param_derivatives",
    "rollout",
    "rollout_batch",
    "rollout_vjp",
    "step",
    "step_jacobians",
    "trajectory_jacobians",
]
