"""torsion: differentiable physics for robotics research (Python bindings of the Rust engine).

State layouts (rows of every state array):
  XpbdSolver:         per body (fixed bodies included) [x(3), q(4: w, x, y, z), v(3), w(3)], world frame
                      -> 13 * model.body_count; tangent: 12 per dynamic body [x, dq (left exp map), v, w].
  FeatherstoneSolver, NcpSolver, LcpSolver (contact), TensegritySolver: [q (nq), v (nv), act (na)]; tangent
                      [dq (nv, joint integration), v (nv), act (na)].
Controls are (T, solver.control_dim(model)): one torque per joint (XPBD) or per DoF (Ncp, Lcp), then for
Featherstone and Tensegrity the actuators' controls (nu). Trajectory optimisation: `ilqr`; a rollout that keeps
its step records for the reverse pass: `rollout_tape`.
Arrays: float64, or float32 up-cast exactly (results are float64); other dtypes raise TypeError.
Jacobians are in tangent coordinates. The PyTorch integration lives in `torsion.autograd` (imports torch);
system identification in `torsion.sysid`.
"""
from ._torsion import (
    FeatherstoneSolver,
    IlqrResult,
    LcpSolver,
    Model,
    ModelBuilder,
    NcpSolver,
    RolloutGrad,
    RolloutTape,
    SimulationError,
    StepInfo,
    TensegritySolver,
    XpbdSolver,
    aba,
    aba_derivatives,
    aba_param_derivatives,
    bench_step_rust,
    crba,
    gravity,
    ilqr,
    load_mjcf,
    load_urdf,
    nonlinear_effects,
    passive_forces,
    rnea,
    rnea_derivatives,
    rnea_param_derivatives,
    rollout,
    rollout_batch,
    rollout_tape,
    rollout_vjp,
    step,
    step_jacobians,
    trajectory_jacobians,
)
from ._torsion import _view_html

from . import models  # noqa: E402  (torsion.models.list() / torsion.models.load(name))
from . import sysid  # noqa: E402  (torsion.sysid: system identification, issue 14)

__version__ = "0.1.0"

__all__ = [
    "FeatherstoneSolver",
    "IlqrResult",
    "LcpSolver",
    "Model",
    "ModelBuilder",
    "NcpSolver",
    "RolloutGrad",
    "RolloutTape",
    "SimulationError",
    "StepInfo",
    "TensegritySolver",
    "XpbdSolver",
    "aba",
    "aba_derivatives",
    "aba_param_derivatives",
    "bench_step_rust",
    "crba",
    "gravity",
    "ilqr",
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
    "rollout_tape",
    "rollout_vjp",
    "step",
    "step_jacobians",
    "sysid",
    "trajectory_jacobians",
    "view",
    "ViewPage",
]


class ViewPage(str):
    """ViewPage(path, html): the path of a viewer page written by `view` (a str, so it opens like a path) and its
    `html` text; in Jupyter it shows the page inline (an iframe with the HTML in `srcdoc`, nothing fetched)."""

    def __new__(cls, path, html):
        self = super().__new__(cls, str(path))
        self.html = html
        return self

    def _repr_html_(self):
        import html as _html

        return (
            '<iframe style="width: 100%; height: 640px; border: 1px solid #ccc" '
            f'srcdoc="{_html.escape(self.html, quote=True)}"></iframe>'
        )


def view(model, states, path=None, solver=None, dt=None, names=None, title=None, package_dirs=()):
    """Write the trajectory viewer page (one self-contained HTML file, three.js inlined; issue 18) and return its
    path as a `ViewPage` (shown inline in Jupyter).

    states: a (T + 1, state_dim) array of a rollout (x0 first), or a list of them (overlaid, each with its
    colour and a legend entry, labelled by `names`). solver: the solver whose state layout `states` use
    (default: FeatherstoneSolver when the width is nq + nv + na, else XpbdSolver). dt: the time step (default the
    model's). path: the HTML file (default: a new file in the temporary folder). title: the page's title (default
    the model's name). package_dirs: folders where `package://` meshes are found (as for NcpSolver).
    """
    import os
    import tempfile

    import numpy as np

    arrays = list(states) if isinstance(states, (list, tuple)) else [states]
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    if solver is None:
        width = arrays[0].shape[-1] if arrays and arrays[0].ndim == 2 else None
        solver = FeatherstoneSolver() if width == model.nq + model.nv + model.na else XpbdSolver()
    html = _view_html(model, arrays, solver, dt=dt, names=None if names is None else list(names), title=title,
                      package_dirs=[os.fspath(d) for d in package_dirs])
    if path is None:
        fd, path = tempfile.mkstemp(prefix="torsion-view-", suffix=".html")
        os.close(fd)
    path = os.fspath(path)
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(html)
    return ViewPage(path, html)
