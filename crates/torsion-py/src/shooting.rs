//! The Rust side of `torsion.sysid.Shooting` (issue 14 item 4: the simulation-error residual over windows with
//! multiple shooting): `_ShootingProblem` wraps `torsion_opt::ShootingProblem` for the generalized-coordinate
//! solvers (Featherstone, ncp, lcp; TensegritySolver through its model copy). Built by `torsion.sysid.Problem`
//! from its declarative specs; fits release the GIL.
use crate::arrays::{mat2, out, vec1};
use crate::guard;
use crate::model::PyModel;
use crate::solvers::{solver_ref, SolverRef};
use crate::sysid::{fit_dict, recording_dt, rows, sysid_err, LmArgs, RecordingArgs, ScalarArgs};
use numpy::PyArrayDyn;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use torsion_model::{GenState, Model};
use torsion_opt::{LmOptions, ShootingOptions, ShootingProblem, Trajectory};
use torsion_solvers::ncp::NcpSolver;
use torsion_solvers::{DiffSolver, FeatherstoneSolver, LcpSolver};

enum Inner {
    Fs(ShootingProblem<FeatherstoneSolver>),
    Ncp(ShootingProblem<NcpSolver>),
    Lcp(ShootingProblem<LcpSolver>),
}

/// `each!(inner, |pb| expr)`: `expr` with the concrete problem.
macro_rules! each {
    ($e:expr, |$p:ident| $body:expr) => {
        match $e {
            Inner::Fs($p) => $body,
            Inner::Ncp($p) => $body,
            Inner::Lcp($p) => $body,
        }
    };
}

/// _ShootingProblem(model, solver, names, window=20, sigma_q=1e-3, sigma_v=None)
///
/// The multiple-shooting simulation residual of `model` under `solver` for the model parameters `names` (each
/// free from the model's value): windows of `window` steps start from the recorded state and are simulated
/// under the recorded controls; residual rows (q̂ − q)/sigma_q and, with `sigma_v`, (v̂ − v)/sigma_v. Built by
/// `torsion.sysid.Problem(model, residual=torsion.sysid.Shooting(...))`; not meant to be used directly.
#[pyclass(name = "_ShootingProblem", module = "torsion._torsion")]
pub struct PyShootingProblem {
    inner: Inner,
}

#[pymethods]
impl PyShootingProblem {
    #[new]
    #[pyo3(signature = (model, solver, names, window=20, sigma_q=1e-3, sigma_v=None))]
    fn new(
        model: PyRef<'_, PyModel>,
        solver: &Bound<'_, PyAny>,
        names: Vec<String>,
        window: usize,
        sigma_q: f64,
        sigma_v: Option<f64>,
    ) -> PyResult<Self> {
        if window == 0 {
            return Err(PyValueError::new_err("window must be ≥ 1 step"));
        }
        for (what, s) in [("sigma_q", Some(sigma_q)), ("sigma_v", sigma_v)] {
            if let Some(s) = s.filter(|s| !(s.is_finite() && *s > 0.0)) {
                return Err(PyValueError::new_err(format!("{what} must be finite and > 0, got {s}")));
            }
        }
        let sref = solver_ref(solver)?;
        let m = sref.model(&model.inner)?.into_owned();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let o = ShootingOptions { window, sigma_q, sigma_v };
        let inner = match sref {
            SolverRef::Fs(p) => Inner::Fs(problem(p.solver.clone(), m, &refs, &o)?),
            SolverRef::Tens(p) => Inner::Fs(problem(p.solver.clone(), m, &refs, &o)?),
            SolverRef::Ncp(p) => Inner::Ncp(problem(p.solver.clone(), m, &refs, &o)?),
            SolverRef::TensNcp(_, s) => Inner::Ncp(problem(s.clone(), m, &refs, &o)?),
            SolverRef::Lcp(p) => Inner::Lcp(problem(p.solver.clone(), m, &refs, &o)?),
            SolverRef::Xpbd(_) => {
                return Err(PyTypeError::new_err(
                    "Shooting: XpbdSolver's maximal-coordinate states are not recorded joint data; use \
                     FeatherstoneSolver, NcpSolver, LcpSolver or TensegritySolver",
                ))
            }
        };
        Ok(PyShootingProblem { inner })
    }

    /// The parameter names, in order.
    #[getter]
    fn names(&self) -> Vec<String> {
        each!(&self.inner, |pb| pb.names.clone())
    }

    /// Every parameter of the model the solver runs, (names, values) in table order (`Model.param_names`;
    /// TensegritySolver's copy adds the contact parameters).
    fn model_params(&self) -> (Vec<String>, Vec<f64>) {
        each!(&self.inner, |pb| {
            let sel = torsion_model::ParamSelection::all(&pb.model);
            (pb.model.param_table().names, pb.model.params_get(&sel))
        })
    }

    /// p (np,) at the start values.
    fn p0<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
        let p: Vec<f64> = each!(&self.inner, |pb| pb.params.iter().map(|s| s.value).collect());
        out(py, &[p.len()], p)
    }

    /// Parameter `name` (one of `names`): its `spec` ([`ScalarArgs`]).
    fn set_param(&mut self, name: &str, spec: ScalarArgs) -> PyResult<()> {
        let spec = spec.spec(name)?;
        each!(&mut self.inner, |pb| {
            let k = pb.names.iter().position(|n| n == name).ok_or_else(|| {
                PyValueError::new_err(format!("unknown parameter '{name}' (expected one of: {})", pb.names.join(", ")))
            })?;
            pb.params[k] = spec;
            Ok(())
        })
    }

    /// Add a recording ([`RecordingArgs`]): `q` (T + 1, nq), `v` (T + 1, nv) recorded states (`v` required),
    /// `tau` (T, control_dim) the controls applied over each step (generalized forces), `dt` the step (s).
    fn add_recording(&mut self, rec: RecordingArgs<'_>) -> PyResult<()> {
        let RecordingArgs { name, dt, q, tau: u, v } = rec;
        let dt = recording_dt(&name, dt)?;
        let v = v.ok_or_else(|| PyValueError::new_err(format!("recording '{name}': the shooting residual needs v")))?;
        each!(&mut self.inner, |pb| {
            let (nq, nv, nu) = (pb.model.nq(), pb.model.nv(), pb.solver.control_dim(&pb.model));
            let (n, qd) = mat2(&q, &format!("recording '{name}' q"), None, nq)?;
            if n < 2 {
                return Err(PyValueError::new_err(format!("recording '{name}': q needs ≥ 2 rows, got {n}")));
            }
            let (_, vd) = mat2(&v, &format!("recording '{name}' v"), Some(n), nv)?;
            let (_, ud) = mat2(&u, &format!("recording '{name}' u (one row fewer than q)"), Some(n - 1), nu)?;
            let (q, v, u) = (rows(qd, nq), rows(vd, nv), rows(ud, nu));
            pb.recordings.push(Trajectory { name, dt, q, v, u, wrench: vec![] });
            Ok(())
        })
    }

    /// Fit (bounded Levenberg–Marquardt on JᵀJ with the exact Jacobian and the settings of `lm` ([`LmArgs`]);
    /// `progress`: a bar on stderr). GIL released. Returns a dict: names, p, std_errors, sigma2, history, path,
    /// iterations, rmse (unweighted q error of the windows), time_solve_s (the fit's wall time).
    #[pyo3(signature = (lm, progress=false))]
    fn fit<'py>(&self, py: Python<'py>, lm: LmArgs, progress: bool) -> PyResult<Bound<'py, PyDict>> {
        let lm = LmOptions::from(lm);
        let inner = &self.inner;
        let fit = py.detach(|| guard(|| each!(inner, |pb| pb.fit(&lm, progress)).map_err(sysid_err)))?;
        let d =
            fit_dict(py, &fit.names, &fit.p, &fit.std_errors, fit.sigma2, (&fit.history, &fit.path), fit.iterations)?;
        d.set_item("rmse", fit.rmse_q)?;
        d.set_item("time_stack_s", 0.0)?;
        d.set_item("time_solve_s", fit.wall_time_s)?;
        d.set_item("warm_started_bodies", 0)?;
        d.set_item("gram", py.None())?;
        Ok(d)
    }

    /// The windows' predicted q at parameters `p` (np,): one (T + 1, nq) array per recording (each window starts
    /// at its recorded state). GIL released.
    fn predict<'py>(&self, py: Python<'py>, p: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyArrayDyn<f64>>>> {
        let (np, nq) = each!(&self.inner, |pb| (pb.names.len(), pb.model.nq()));
        let pv = vec1(p, "p", np)?;
        let inner = &self.inner;
        let pred = py.detach(|| guard(|| each!(inner, |pb| pb.predict(&pv)).map_err(sysid_err)))?;
        pred.iter().map(|w| out(py, &[w.len(), nq], w.iter().flat_map(|s| s.q.iter().copied()).collect())).collect()
    }

    fn __repr__(&self) -> String {
        each!(&self.inner, |pb| format!(
            "_ShootingProblem({} parameters, {} recordings, window {})",
            pb.names.len(),
            pb.recordings.len(),
            pb.options.window
        ))
    }
}

/// The problem of `names` on `m` under solver `s` with options `o`.
fn problem<S: DiffSolver<State = GenState>>(
    s: S,
    m: Model,
    names: &[&str],
    o: &ShootingOptions,
) -> PyResult<ShootingProblem<S>> {
    let mut pb = ShootingProblem::new(s, m, names).map_err(sysid_err)?;
    pb.options = o.clone();
    Ok(pb)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyShootingProblem>()?;
    Ok(())
}
