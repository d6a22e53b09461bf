"""torsion.sysid: system identification of robot arms from recorded motion (issue 14 items 4, 5).

A :class:`Problem` is a model, named parameters (start values, transforms, bounds, priors), one or more
recordings (q, optionally v, and τ; lengths and rates may differ), a residual and a solver::

    pb = torsion.sysid.Problem(model)                       # every link's 10 inertial parameters free
    pb.param("damping[*]", value=0.1, transform="softplus", bounds=(0, None))
    pb.add_recording(q, tau, dt=0.005, v=v)
    result = pb.fit()                                       # estimates, standard errors, history, base parameters
    result.save("fit")                                      # fit.json (+ fit.png with matplotlib)

Residuals are objects: :class:`Regressor` (the inverse-dynamics regressor least squares for arms,
``torsion_opt::sysid::arm``) and :class:`Shooting` (the simulation error over windows with multiple shooting,
``torsion_opt::sysid::shooting``, on any generalized-coordinate solver, contact included)::

    pb = torsion.sysid.Problem(model, residual=torsion.sysid.Shooting(window=25, sigma_v=1e-2))
    pb.param("joint_damping[*]", value=0.1, transform="softplus")  # any names of model.param_names
    pb.add_recording(q, u, dt=0.005, v=v)                           # q, v: (T + 1, ·); u: (T, control_dim)
    result = pb.fit()

Solvers likewise: :class:`LevenbergMarquardt` (bounded, on the normal equations, exact Jacobians). Fits run
in Rust with the GIL released.

:func:`fit_ray` splits the recordings across Ray workers: each computes its shard's normal-equation pieces
(G = AᵀA, b = Aᵀτ, c = τᵀτ) and the driver sums them and solves. Problems and models pickle.
"""
import json
import os
import sys

import numpy as np

from . import _torsion
from ._torsion import Model

__all__ = [
    "LevenbergMarquardt",
    "Problem",
    "Regressor",
    "Result",
    "Shooting",
    "fit_ray",
    "log_cholesky_params",
    "log_cholesky_theta",
]

_BODY_TRANSFORMS = ("linear", "log_cholesky", "fixed")
_SCALAR_TRANSFORMS = ("identity", "log", "softplus", "sigmoid")


class Regressor:
    """Regressor(cutoff_hz=10.0, stride=1, coulomb_vs=0.02, filter_tau=False, linear_warm_start=True)

    The inverse-dynamics regressor residual for arms (hinge / slider joints): τ = Y(q, v, v̇) π + diag(v) d +
    diag(tanh(v / coulomb_vs)) f, with q and v low-passed by a zero-phase Butterworth filter at `cutoff_hz` (Hz),
    v̇ by central differences, every `stride`-th filtered sample kept; `filter_tau` filters τ too;
    `linear_warm_start` starts log-Cholesky bodies from the linear fit. The data enter once (a Gram), so an
    iteration costs O(parameters³), not O(samples).
    """

    def __init__(self, cutoff_hz=10.0, stride=1, coulomb_vs=0.02, filter_tau=False, linear_warm_start=True):
        self.cutoff_hz = float(cutoff_hz)
        self.stride = int(stride)
        self.coulomb_vs = float(coulomb_vs)
        self.filter_tau = bool(filter_tau)
        self.linear_warm_start = bool(linear_warm_start)

    def _core(self, model):
        """The Rust problem of `model` with these options."""
        return _torsion._ArmProblem(model, cutoff_hz=self.cutoff_hz, stride=self.stride,
                                    coulomb_vs=self.coulomb_vs, filter_tau=self.filter_tau,
                                    linear_warm_start=self.linear_warm_start)

    def __repr__(self):
        return (f"Regressor(cutoff_hz={self.cutoff_hz}, stride={self.stride}, coulomb_vs={self.coulomb_vs}, "
                f"filter_tau={self.filter_tau}, linear_warm_start={self.linear_warm_start})")


class Shooting:
    """Shooting(window=20, solver=None, sigma_q=1e-3, sigma_v=None)

    The simulation-error residual with multiple shooting (issue 14 item 4): each recording is cut into windows
    of `window` steps; a window starts from the recorded state (q, v) of its first sample and is simulated by
    `solver` (default ``torsion.FeatherstoneSolver()``; NcpSolver, LcpSolver and TensegritySolver too) under the
    recorded controls; the residual rows are (q̂ − q) / sigma_q (rad or m) and, with `sigma_v`, (v̂ − v) / sigma_v.
    The Jacobian is exact (forward sensitivities of the solver's step Jacobians), O(T · parameters). The
    parameters are named entries of ``model.param_names`` (masses, inertias, damping, friction, contact ...),
    declared with :meth:`Problem.param`; none is free until declared.
    """

    def __init__(self, window=20, solver=None, sigma_q=1e-3, sigma_v=None):
        from ._torsion import FeatherstoneSolver

        self.window = int(window)
        self.solver = FeatherstoneSolver() if solver is None else solver
        self.sigma_q = float(sigma_q)
        self.sigma_v = None if sigma_v is None else float(sigma_v)
        if self.window < 1 or not self.sigma_q > 0 or (self.sigma_v is not None and not self.sigma_v > 0):
            raise ValueError(f"Shooting: window ≥ 1, sigma_q > 0 and sigma_v > 0 (or None) needed, got {self!r}")

    def _core(self, model, names=()):
        """The Rust problem of `model` for the parameters `names`."""
        return _torsion._ShootingProblem(model, self.solver, list(names), window=self.window, sigma_q=self.sigma_q,
                                         sigma_v=self.sigma_v)

    def __repr__(self):
        return (f"Shooting(window={self.window}, solver={self.solver!r}, sigma_q={self.sigma_q}, "
                f"sigma_v={self.sigma_v})")


class LevenbergMarquardt:
    """LevenbergMarquardt(max_iter=100, lambda0=1e-3, ftol=1e-12)

    Levenberg–Marquardt with Marquardt's diagonal damping (initial `lambda0`, relative to diag JᵀJ), box bounds by
    an active set and projection, at most `max_iter` accepted steps; stops when an accepted step lowers the cost
    by less than `ftol` relative.
    """

    def __init__(self, max_iter=100, lambda0=1e-3, ftol=1e-12):
        self.max_iter = int(max_iter)
        self.lambda0 = float(lambda0)
        self.ftol = float(ftol)
        if self.max_iter < 0 or not self.lambda0 > 0 or not self.ftol >= 0:
            raise ValueError(f"LevenbergMarquardt: max_iter ≥ 0, lambda0 > 0, ftol ≥ 0 needed, got {self!r}")

    def __repr__(self):
        return f"LevenbergMarquardt(max_iter={self.max_iter}, lambda0={self.lambda0}, ftol={self.ftol})"


def log_cholesky_theta(pi):
    """The log-Cholesky coordinates θ (10,) of a physically consistent body `pi` (10,) = π = (m, m cx, m cy, m cz,
    Ixx, Ixy, Iyy, Ixz, Iyz, Izz at the body origin); ValueError when π is not physically consistent."""
    return _torsion._log_cholesky_theta(pi)


def log_cholesky_params(theta):
    """π (10,) of the log-Cholesky coordinates `theta` (10,): physically consistent for every θ."""
    return _torsion._log_cholesky_params(theta)


class _Recording:
    """A recording as both Rust problems' `add_recording` read it (by attribute: name, dt, q, tau, v)."""

    def __init__(self, name, dt, q, tau, v):
        self.name, self.dt, self.q, self.tau, self.v = name, dt, q, tau, v


def _scalar_spec(value, transform, bounds, prior, fixed):
    """A scalar parameter's spec dict, as `_ArmProblem.set_scalar` / `_ShootingProblem.set_param` read it
    (`ScalarArgs` in sysid.rs); `bounds` (lower, upper), None for no bound on a side."""
    lo, hi = (None, None) if bounds is None else bounds
    return {
        "value": float(value),
        "transform": transform or "identity",
        "lower": -np.inf if lo is None else float(lo),
        "upper": np.inf if hi is None else float(hi),
        "prior": None if prior is None else (float(prior[0]), float(prior[1])),
        "fixed": bool(fixed),
    }


def _f64(x, name):
    a = np.asarray(x)
    if a.dtype.kind != "f":
        raise TypeError(f"{name}: expected a float64 (or float32, up-cast) array, got dtype {a.dtype}")
    return np.ascontiguousarray(a, dtype=np.float64)


class Problem:
    """Problem(model, residual=None, solver=None)

    An identification problem on `model` (a `torsion.Model`): `residual` (default `Regressor()`, or
    :class:`Shooting`), `solver` (default `LevenbergMarquardt()`). Regressor: at the start every moving body's 10
    inertial parameters are free from the model's values (transform "linear"), damping and dry friction
    ("coulomb") per DoF free from 0. Shooting: no parameter is free until :meth:`param` names it (any of
    ``model.param_names``). Name the parameters with :meth:`body` and :meth:`param`, add data with
    :meth:`add_recording`, then :meth:`fit`. Pickles (for Ray and multiprocessing): the model, the parameter
    specs, the recordings (a Shooting residual only where its solver pickles).
    """

    def __init__(self, model, residual=None, solver=None):
        if not isinstance(model, Model):
            raise TypeError(f"model: expected a torsion.Model, got {type(model).__name__}")
        residual = Regressor() if residual is None else residual
        solver = LevenbergMarquardt() if solver is None else solver
        if not isinstance(residual, (Regressor, Shooting)):
            raise TypeError(f"residual: expected torsion.sysid.Regressor or torsion.sysid.Shooting, got "
                            f"{type(residual).__name__}")
        if not isinstance(solver, LevenbergMarquardt):
            raise TypeError(f"solver: expected torsion.sysid.LevenbergMarquardt, got {type(solver).__name__}")
        self.model = model
        self.residual = residual
        self.solver = solver
        self._bodies = {}  # body name -> dict(transform, value, prior)
        self._scalars = {}  # parameter name -> spec dict of _ArmProblem.set_scalar / _ShootingProblem.set_param
        self._recordings = []
        self._built = None
        core = self._core()
        self._body_names = [] if self._shooting else list(core.body_names)
        self._names = list(core.names)

    # ---- declaration -------------------------------------------------------------------------------------
    @property
    def _shooting(self):
        return isinstance(self.residual, Shooting)

    @property
    def param_names(self):
        """Names of the parameter vector p. Regressor: ``body[B].m``, ``.mx``, ``.my``, ``.mz``, ``.ixx``,
        ``.ixy``, ``.iyy``, ``.ixz``, ``.iyz``, ``.izz`` per moving body B, then ``damping[J]`` and ``coulomb[J]``
        per DoF. Shooting: the model parameters declared with :meth:`param`, in declaration order."""
        return list(self._names)

    @property
    def body_names(self):
        """The moving bodies (children of joints), in joint order."""
        return list(self._body_names)

    @property
    def p0(self):
        """p (np,) at the start values (the model's inertial parameters unless :meth:`body` set others)."""
        return self._core().p0()

    @property
    def recordings(self):
        """The recordings' names, in order."""
        return [r.name for r in self._recordings]

    def body(self, name, transform="linear", value=None, prior=None):
        """Set how body `name`'s 10 inertial parameters π enter: `transform` "linear" (π itself), "log_cholesky"
        (π of the log-Cholesky coordinates: always physically consistent) or "fixed" (kept at its value);
        `value` (10,) the start π (default the model's); `prior` (mean (10,), sigma (10,)) a Gaussian prior on π.
        `name` "*" sets every body. Returns the problem (calls chain). Regressor residual only."""
        if self._shooting:
            raise ValueError("body: the Shooting residual names model parameters with param(), e.g. "
                             "param('body_mass[link1]', transform='log')")
        if transform not in _BODY_TRANSFORMS:
            raise ValueError(f"transform: '{transform}' unknown for a body (expected one of {_BODY_TRANSFORMS})")
        names = self._body_names if name == "*" else [name]
        old = dict(self._bodies)
        for n in names:
            if n not in self._body_names:
                raise ValueError(f"body '{n}' is not a moving body of the model (expected one of "
                                 f"{self._body_names})")
            spec = {"transform": transform,
                    "value": None if value is None else _f64(value, "value").copy(),
                    "prior": None if prior is None else (_f64(prior[0], "prior mean"), _f64(prior[1], "prior sigma"))}
            self._bodies[n] = spec
        return self._rebuild("_bodies", old)

    def param(self, name, value=None, transform=None, bounds=None, prior=None, fixed=False):
        """Set scalar parameter `name` ("damping[J]" or "coulomb[J]"; "damping[*]" / "coulomb[*]" for every DoF):
        start `value` (default 0), `transform` "identity", "log", "softplus" or "sigmoid" (default identity),
        `bounds` (lower, upper) on the physical value (None for no bound on a side), Gaussian `prior`
        (mean, sigma), `fixed` (kept at `value`). Returns the problem.

        Shooting residual: `name` is any of ``model.param_names`` ("body_mass[link1]", "joint_damping[j]",
        "shape_friction[box]", "contact_mu", ...) or a family "PREFIX[*]" (every name starting with "PREFIX[");
        declaring it frees it; `value` defaults to the model's current value."""
        if transform is not None and transform not in _SCALAR_TRANSFORMS:
            raise ValueError(f"transform: '{transform}' unknown (expected one of {_SCALAR_TRANSFORMS})")
        if self._shooting:
            return self._shooting_param(name, value, transform, bounds, prior, fixed)
        scalars = [n for n in self._names if not n.startswith("body[")]
        if name.endswith("[*]"):
            names = [n for n in scalars if n.startswith(name[:-2])]
        else:
            names = [name]
        if not names or any(n not in scalars for n in names):
            raise ValueError(f"name: unknown parameter '{name}' (expected one of {scalars}, or damping[*] / "
                             "coulomb[*])")
        old = dict(self._scalars)
        for n in names:
            self._scalars[n] = _scalar_spec(0.0 if value is None else value, transform, bounds, prior, fixed)
        return self._rebuild("_scalars", old)

    def _shooting_param(self, name, value, transform, bounds, prior, fixed):
        all_names, values = self.residual._core(self.model, []).model_params()
        names = [n for n in all_names if n.startswith(name[:-2])] if name.endswith("[*]") else [name]
        if not names or any(n not in all_names for n in names):
            raise ValueError(f"name: unknown parameter '{name}' (model.param_names lists them; 'PREFIX[*]' selects "
                             "a family, e.g. 'joint_damping[*]')")
        old = dict(self._scalars)
        current = dict(zip(all_names, values))
        for n in names:
            self._scalars[n] = _scalar_spec(current[n] if value is None else value, transform, bounds, prior, fixed)
        self._rebuild("_scalars", old)
        self._names = list(self._scalars)
        return self

    def _rebuild(self, attr, old):
        """Build the Rust problem now (its checks name the parameter); on error restore `attr` to `old`."""
        self._built = None
        try:
            self._core()
        except Exception:
            setattr(self, attr, old)
            self._built = None
            raise
        return self

    def add_recording(self, q, tau, dt, v=None, name=None):
        """Add a recording: `q` (T, nq) joint positions, `tau` (T, nv) measured joint torques, `dt` the sample
        period (s), `v` (T, nv) measured velocities or None (the derivative of the filtered q), `name` (default
        "recording K"). Recordings may differ in length and rate. Returns the problem.

        Shooting residual: `q` (T + 1, nq) and `v` (T + 1, nv) the recorded states (v required: windows start
        from them), `tau` (T, solver.control_dim(model)) the controls applied over each step, `dt` the step."""
        if self._shooting and v is None:
            raise ValueError("add_recording: the Shooting residual needs v (T + 1, nv): windows start at recorded "
                             "states")
        rec = _Recording(name or f"recording {len(self._recordings)}", float(dt), _f64(q, "q"), _f64(tau, "tau"),
                         None if v is None else _f64(v, "v"))
        core = self._core()
        core.add_recording(rec)  # checks shapes now, naming the recording
        self._recordings.append(rec)
        return self

    def with_recordings(self, indices):
        """A copy of the problem holding only the recordings at `indices` (a shard)."""
        out = Problem.__new__(Problem)
        out.__setstate__({**self.__getstate__(), "recordings": [self._recordings[i] for i in indices]})
        return out

    # ---- the Rust problem --------------------------------------------------------------------------------
    def _core(self):
        if self._built is not None:
            return self._built
        if self._shooting:
            core = self.residual._core(self.model, list(self._scalars))
            for n, kw in self._scalars.items():
                core.set_param(n, kw)
            for r in self._recordings:
                core.add_recording(r)
            self._built = core
            return core
        core = self.residual._core(self.model)
        names = list(core.body_names)
        for n, spec in self._bodies.items():
            pm, ps = spec["prior"] if spec["prior"] is not None else (None, None)
            core.set_body(names.index(n), spec["transform"], spec["value"], pm, ps)
        for n, kw in self._scalars.items():
            core.set_scalar(n, kw)
        for r in self._recordings:
            core.add_recording(r)
        self._built = core
        return core

    def __getstate__(self):
        return {"model": self.model, "residual": self.residual, "solver": self.solver, "bodies": self._bodies,
                "scalars": self._scalars, "recordings": self._recordings}

    def __setstate__(self, st):
        self.model, self.residual, self.solver = st["model"], st["residual"], st["solver"]
        self._bodies, self._scalars = dict(st["bodies"]), dict(st["scalars"])
        self._recordings = list(st["recordings"])
        self._built = None
        core = self._core()
        self._body_names = [] if self._shooting else list(core.body_names)
        self._names = list(core.names)

    # ---- solving -----------------------------------------------------------------------------------------
    def gram(self):
        """This problem's normal-equation pieces over its recordings, (G (np, np), b (np,), c, rows) with A the
        stacked regressor rows: G = AᵀA, b = Aᵀτ, c = τᵀτ. Pieces of disjoint shards add up (:meth:`fit_gram`)."""
        if self._shooting:
            raise ValueError("gram: the Shooting residual has no normal-equation pieces (Regressor only)")
        if not self._recordings:
            raise ValueError("gram: the problem has no recordings (add_recording)")
        return self._core().gram()

    def fit(self, progress=None):
        """Fit on the recordings and return a :class:`Result`. `progress`: a progress bar on stderr (default:
        when stderr is a terminal)."""
        if not self._recordings:
            raise ValueError("fit: the problem has no recordings (add_recording)")
        return self._fit(None, progress)

    def fit_gram(self, pieces, progress=None):
        """Fit on normal-equation `pieces` (a list of (G, b, c, rows) from :meth:`gram` of shards of the data,
        e.g. computed on other processes) and return a :class:`Result`; equal to :meth:`fit` over all the shards'
        recordings up to the summation's round-off. `progress` as for :meth:`fit`."""
        pieces = [(np.asarray(g, dtype=np.float64), np.asarray(b, dtype=np.float64), float(c), int(r))
                  for (g, b, c, r) in pieces]
        return self._fit(pieces, progress)

    def _fit(self, pieces, progress):
        if progress is None:
            progress = sys.stderr.isatty()
        s = self.solver
        if self._shooting:
            if not self._names:
                raise ValueError("fit: no parameter is free (declare them with param(name, ...))")
            d = self._core().fit(s, progress=bool(progress))
            r = self._recordings[0]
            q_hat = self._core().predict(d["p"])[0]
            return Result(d, {"recording": r.name, "dt": r.dt, "tau": r.q, "tau_hat": q_hat, "what": "q"})
        d = self._core().fit(s, progress=bool(progress), gram=pieces)
        fit_vs_data = None
        if self._recordings:
            r = self._recordings[0]
            _, tau, tau_hat = self._core().evaluate(d["p"], r.dt, r.q, r.tau, r.v)
            fit_vs_data = {"recording": r.name, "dt": r.dt * self.residual.stride, "tau": tau, "tau_hat": tau_hat}
        return Result(d, fit_vs_data)

    def evaluate(self, p, q, tau, dt, v=None):
        """The identified model on other data (held-out): `p` (np,) or a :class:`Result`, `q` (T, nq), `tau`
        (T, nv), `dt` (s), `v` (T, nv) or None. Returns a dict: rmse (N·m, per joint sample), tau and tau_hat
        (K, nv) at the K samples the filter keeps."""
        if isinstance(p, Result):
            p = p.p
        if self._shooting:
            raise ValueError("evaluate: Regressor only; for Shooting use predict(p)")
        rmse, t, th = self._core().evaluate(p, float(dt), _f64(q, "q"), _f64(tau, "tau"),
                                            None if v is None else _f64(v, "v"))
        return {"rmse": rmse, "tau": t, "tau_hat": th}

    def predict(self, p):
        """Shooting residual: the windows' predicted q at `p` (np,) or a :class:`Result`, one (T + 1, nq) array
        per recording (each window starts at its recorded state)."""
        if not self._shooting:
            raise ValueError("predict: Shooting residual only (Regressor: evaluate)")
        if isinstance(p, Result):
            p = p.p
        return self._core().predict(_f64(p, "p"))

    def __repr__(self):
        return (f"Problem(model='{self.model.name}', {len(self._names)} parameters, "
                f"{len(self._recordings)} recordings, {self.residual!r}, {self.solver!r})")


class Result:
    """The outcome of :meth:`Problem.fit`: `names`, `p` (estimates), `std_errors` (from σ² (JᵀJ + prior)⁻¹,
    0 for fixed entries), `sigma2`, `history` (cost ½‖r‖² after each accepted step, the start first), `path`
    (p after each accepted step), `iterations`, `rmse` (N·m on the fitted data), `time_stack_s`,
    `time_solve_s`, `gram` (G, b, c, rows) of the data. :meth:`base_parameters` gives the identifiable
    combinations; :meth:`save` writes JSON (+ PNG). Made by the fit from `d` (the Rust fit's dict) and
    `fit_vs_data` (measured and fitted τ of the first recording, for the plot)."""

    def __init__(self, d, fit_vs_data=None):
        self.names = list(d["names"])
        self.p = d["p"]
        self.std_errors = d["std_errors"]
        self.sigma2 = d["sigma2"]
        self.history = d["history"]
        self.path = d["path"]
        self.iterations = d["iterations"]
        self.rmse = d["rmse"]
        self.time_stack_s = d["time_stack_s"]
        self.time_solve_s = d["time_solve_s"]
        self.warm_started_bodies = d["warm_started_bodies"]
        self.gram = d["gram"]
        self.fit_vs_data = fit_vs_data

    @property
    def estimates(self):
        """The estimates as a dict name → value."""
        return dict(zip(self.names, self.p.tolist()))

    def base_parameters(self, tol=1e-5, p=None):
        """The identifiable (base) combinations β = p_B + K p_D of the fitted data (QR with column pivoting of
        the stacked regressor; `tol` the relative pivot threshold) at `p` (default the estimates). Returns a dict:
        names (of the independent entries), values β, independent, dependent (indices into p), K."""
        if self.gram is None:
            raise ValueError("base_parameters: the Regressor residual's (a Shooting fit has no regressor)")
        ind, dep, k = _torsion._base_parameters(self.gram[0], tol)
        p = self.p if p is None else np.asarray(p, dtype=np.float64)
        beta = p[ind] + (k @ p[dep] if len(dep) else 0.0)
        return {"names": [self.names[i] for i in ind], "values": beta, "independent": ind, "dependent": dep, "K": k}

    def to_dict(self):
        """A JSON-ready dict of the result (estimates, standard errors, history, path, base parameters)."""
        base = self.base_parameters() if self.gram is not None else {"names": [], "values": np.zeros(0)}
        return {
            "estimates": self.estimates,
            "std_errors": dict(zip(self.names, self.std_errors.tolist())),
            "sigma2": self.sigma2,
            "rmse": self.rmse,
            "iterations": self.iterations,
            "history": self.history.tolist(),
            "path": self.path.tolist(),
            "time_stack_s": self.time_stack_s,
            "time_solve_s": self.time_solve_s,
            "base_parameters": dict(zip(base["names"], base["values"].tolist())),
        }

    def save(self, path):
        """Write the result to `path` (JSON; ".json" added when missing) and, when matplotlib is installed, a PNG
        beside it (same name, ".png": cost history, parameter paths, fit vs data); without matplotlib the PNG is
        skipped with a message on stderr. Returns the list of files written."""
        path = os.fspath(path)
        base = path[:-5] if path.endswith(".json") else path
        folder = os.path.dirname(base)
        if folder:
            os.makedirs(folder, exist_ok=True)
        with open(base + ".json", "w", encoding="utf-8") as f:
            json.dump(self.to_dict(), f, indent=1)
        written = [base + ".json"]
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("torsion.sysid: matplotlib is not installed, PNG skipped (pip install matplotlib)", file=sys.stderr)
            return written
        fig, ax = plt.subplots(1, 3, figsize=(15, 4))
        ax[0].semilogy(self.history)
        ax[0].set(title="residual ½‖r‖²", xlabel="accepted step")
        scale = np.maximum(np.abs(self.path[-1]), 1e-9)
        ax[1].plot(self.path / scale)
        ax[1].set(title="parameter paths (÷ final |p|)", xlabel="accepted step")
        if self.fit_vs_data is not None:
            fv = self.fit_vs_data
            t = np.arange(len(fv["tau"])) * fv["dt"]
            for j in range(fv["tau"].shape[1]):
                ax[2].plot(t, fv["tau"][:, j], color=f"C{j}", lw=0.8)
                ax[2].plot(t, fv["tau_hat"][:, j], color=f"C{j}", ls="--", lw=0.8)
            ax[2].set(title=f"fit vs data ({fv['recording']}; dashed: fit)", xlabel="t (s)",
                      ylabel=fv.get("what", "τ"))
        fig.tight_layout()
        fig.savefig(base + ".png", dpi=100)
        plt.close(fig)
        written.append(base + ".png")
        return written

    def __repr__(self):
        return (f"Result({len(self.names)} parameters, {self.iterations} iterations, rmse {self.rmse:.3g}, "
                f"cost {self.history[0]:.3g} -> {self.history[-1]:.3g})")


def _shard_gram(problem):
    return problem.gram()


def fit_ray(problem, num_shards=None, address=None, progress=None):
    """Fit `problem` with its recordings split across Ray workers: each worker computes its shard's
    normal-equation pieces (:meth:`Problem.gram`), the driver sums them and solves (:meth:`Problem.fit_gram`);
    the result equals ``problem.fit()`` up to the summation's round-off. `num_shards`: how many shards (default
    one per recording, at most the cluster's CPUs); `address`: the cluster to join when Ray is not initialised
    yet (None: a local one; "auto" or "ray://host:10001" for an existing cluster, see README); `progress` as for
    :meth:`Problem.fit`. Raises ImportError when ray is not installed (pip install ray)."""
    try:
        import ray
    except ImportError as e:
        raise ImportError("torsion.sysid.fit_ray needs Ray: pip install ray") from e
    n = len(problem.recordings)
    if n == 0:
        raise ValueError("fit_ray: the problem has no recordings (add_recording)")
    if not ray.is_initialized():
        ray.init(address=address)
    if num_shards is None:
        num_shards = min(n, max(1, int(ray.cluster_resources().get("CPU", 1))))
    num_shards = max(1, min(int(num_shards), n))
    shards = [list(range(k, n, num_shards)) for k in range(num_shards)]
    task = ray.remote(_shard_gram)
    pieces = ray.get([task.remote(problem.with_recordings(s)) for s in shards])
    return problem.fit_gram(pieces, progress=progress)
