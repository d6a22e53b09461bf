//! The Rust side of `torsion.sysid` (issue 14 items 4, 5): `_ArmProblem` wraps `torsion_opt::ArmProblem` (the
//! inverse-dynamics regressor residual, Levenberg–Marquardt on the normal equations with bounds, standard
//! errors); the Python module (python/torsion/sysid.py) holds the declarative problem (so that it pickles) and
//! builds this object from it. Fits and Gram stacking release the GIL. The per-shard pieces of the normal
//! equations (G = AᵀA, b = Aᵀτ, c = τᵀτ, rows) come out as NumPy arrays and go back into `fit(gram=…)`, which is
//! how the Ray path splits recordings across workers.
use crate::arrays::{mat2, out, read, vec1};
use crate::guard;
use crate::model::PyModel;
use nalgebra::{DMatrix, DVector};
use numpy::PyArrayDyn;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use torsion_dynamics::log_cholesky::{params_from_theta, theta_from_params};
use torsion_dynamics::regressor::N_INERTIAL;
use torsion_opt::{ArmProblem, BaseParams, Gram, Inertial, LmOptions, Param, Recording, ScalarSpec, SysidError};

pub(crate) fn sysid_err(e: SysidError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

fn transform(name: &str, what: &str) -> PyResult<Param> {
    Ok(match name {
        "identity" | "none" => Param::Identity,
        "log" => Param::Log,
        "softplus" => Param::Softplus,
        "sigmoid" => Param::Sigmoid,
        _ => {
            return Err(PyValueError::new_err(format!(
                "{what}: transform '{name}' unknown (expected 'identity', 'log', 'softplus' or 'sigmoid')"
            )))
        }
    })
}

/// A scalar parameter's spec as `torsion.sysid.Problem` declares it, a dict read by key: start `value`,
/// `transform` ("identity", "log", "softplus", "sigmoid"), bounds `lower` / `upper` on the physical value,
/// Gaussian `prior` (mean, sigma) or None, `fixed` (kept at `value`). Taken by `_ArmProblem.set_scalar` and
/// `_ShootingProblem.set_param`; [`ScalarArgs::spec`] checks it.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub(crate) struct ScalarArgs {
    value: f64,
    #[pyo3(default = "identity".to_string())]
    transform: String,
    #[pyo3(default = f64::NEG_INFINITY)]
    lower: f64,
    #[pyo3(default = f64::INFINITY)]
    upper: f64,
    #[pyo3(default)]
    prior: Option<(f64, f64)>,
    #[pyo3(default)]
    fixed: bool,
}

impl ScalarArgs {
    /// The spec of parameter `name`, checked (errors name the parameter).
    pub(crate) fn spec(&self, name: &str) -> PyResult<ScalarSpec> {
        let ScalarArgs { value, lower, upper, prior, fixed, .. } = *self;
        let t = transform(&self.transform, name)?;
        if !value.is_finite() || lower.is_nan() || upper.is_nan() || lower > upper {
            return Err(PyValueError::new_err(format!(
                "'{name}': value {value} must be finite and bounds [{lower}, {upper}] ordered"
            )));
        }
        if let Some((_, sd)) = prior {
            if sd.is_nan() || sd <= 0.0 {
                return Err(PyValueError::new_err(format!("'{name}': prior sigma must be > 0, got {sd}")));
            }
        }
        Ok(ScalarSpec { value, transform: t, lower, upper, prior, fixed })
    }
}

/// A recording as `torsion.sysid.Problem` holds it (`_Recording`), read by attribute: `name` (for error
/// messages), `dt` the step / sample period (s), `q`, `tau` (measured torques, or the controls applied over each
/// step for the shooting residual), `v` or None. Taken by both problems' `add_recording`.
#[derive(FromPyObject)]
pub(crate) struct RecordingArgs<'py> {
    pub name: String,
    pub dt: f64,
    pub q: Bound<'py, PyAny>,
    pub tau: Bound<'py, PyAny>,
    pub v: Option<Bound<'py, PyAny>>,
}

/// `dt` of recording `name`, checked: > 0 and finite.
pub(crate) fn recording_dt(name: &str, dt: f64) -> PyResult<f64> {
    if !(dt > 0.0 && dt.is_finite()) {
        return Err(PyValueError::new_err(format!("recording '{name}': dt must be > 0, got {dt}")));
    }
    Ok(dt)
}

/// The fit's settings as `torsion.sysid.LevenbergMarquardt` holds them, read by attribute.
#[derive(FromPyObject)]
pub(crate) struct LmArgs {
    max_iter: usize,
    lambda0: f64,
    ftol: f64,
}

impl From<LmArgs> for LmOptions {
    fn from(LmArgs { max_iter, lambda0, ftol }: LmArgs) -> Self {
        LmOptions { max_iter, lambda0, ftol }
    }
}

pub(crate) fn rows(data: Vec<f64>, cols: usize) -> Vec<Vec<f64>> {
    data.chunks(cols.max(1)).map(<[f64]>::to_vec).collect()
}

/// _ArmProblem(model, cutoff_hz=10.0, stride=1, coulomb_vs=0.02, filter_tau=False, linear_warm_start=True)
///
/// The inverse-dynamics regressor problem of `model` (hinge / slider joints): every moving body's 10 inertial
/// parameters free (linear) from the model's values, damping and dry friction free from 0. `cutoff_hz`: the
/// zero-phase Butterworth cut-off of q and v; `stride`: keep every stride-th filtered sample; `coulomb_vs`: the
/// velocity scale of the smoothed sign (rad/s); `filter_tau`: filter τ too; `linear_warm_start`: log-Cholesky
/// bodies start from the linear fit. Built by `torsion.sysid.Problem`; not meant to be used directly.
#[pyclass(name = "_ArmProblem", module = "torsion._torsion")]
pub struct PyArmProblem {
    inner: ArmProblem,
}

#[pymethods]
impl PyArmProblem {
    #[new]
    #[pyo3(signature = (model, cutoff_hz=10.0, stride=1, coulomb_vs=0.02, filter_tau=false, linear_warm_start=true))]
    fn new(
        model: PyRef<'_, PyModel>,
        cutoff_hz: f64,
        stride: usize,
        coulomb_vs: f64,
        filter_tau: bool,
        linear_warm_start: bool,
    ) -> PyResult<Self> {
        if !(cutoff_hz > 0.0 && cutoff_hz.is_finite()) {
            return Err(PyValueError::new_err(format!("cutoff_hz must be > 0, got {cutoff_hz}")));
        }
        if !(coulomb_vs > 0.0 && coulomb_vs.is_finite()) {
            return Err(PyValueError::new_err(format!("coulomb_vs must be > 0, got {coulomb_vs}")));
        }
        if stride == 0 {
            return Err(PyValueError::new_err("stride must be ≥ 1"));
        }
        let mut inner = guard(|| ArmProblem::new(&model.inner).map_err(sysid_err))?;
        inner.options.cutoff_hz = cutoff_hz;
        inner.options.stride = stride;
        inner.options.coulomb_vs = coulomb_vs;
        inner.options.filter_tau = filter_tau;
        inner.options.linear_warm_start = linear_warm_start;
        Ok(PyArmProblem { inner })
    }

    /// The names of p, in order: `body[B].m`, `body[B].mx` … per moving body, `damping[J]`, `coulomb[J]` per DoF.
    #[getter]
    fn names(&self) -> Vec<String> {
        self.inner.names()
    }
    /// The moving bodies' names (children of joints, in joint order).
    #[getter]
    fn body_names(&self) -> Vec<String> {
        self.inner.body_names.clone()
    }
    /// The DoF names (joint names; `joint.k` for multi-DoF joints).
    #[getter]
    fn dof_names(&self) -> Vec<String> {
        self.inner.dof_names.clone()
    }
    /// p at the start values (np,).
    fn p0<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
        let p = self.inner.p0();
        out(py, &[p.len()], p)
    }

    /// Body `k` (index into `body_names`): `mode` "fixed", "linear" or "log_cholesky"; `value` (10,) its start π
    /// (default: unchanged); `prior_mean`, `prior_sigma` (10,) a Gaussian prior on π (both or neither).
    #[pyo3(signature = (k, mode, value=None, prior_mean=None, prior_sigma=None))]
    fn set_body(
        &mut self,
        k: usize,
        mode: &str,
        value: Option<&Bound<'_, PyAny>>,
        prior_mean: Option<&Bound<'_, PyAny>>,
        prior_sigma: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let name = self.inner.body_names.get(k).cloned().ok_or_else(|| {
            PyValueError::new_err(format!("body index {k} out of range ({} bodies)", self.inner.bodies.len()))
        })?;
        let mode = match mode {
            "fixed" => Inertial::Fixed,
            "linear" => Inertial::Linear,
            "log_cholesky" => Inertial::LogCholesky,
            _ => {
                return Err(PyValueError::new_err(format!(
                    "body '{name}': transform '{mode}' unknown (expected 'linear', 'log_cholesky' or 'fixed')"
                )))
            }
        };
        let arr = |o: &Bound<'_, PyAny>, what: &str| -> PyResult<[f64; N_INERTIAL]> {
            let v = vec1(o, &format!("body '{name}' {what}"), N_INERTIAL)?;
            Ok(std::array::from_fn(|i| v[i]))
        };
        if let Some(v) = value {
            self.inner.pi0[k] = arr(v, "value")?;
        }
        self.inner.pi_prior[k] = match (prior_mean, prior_sigma) {
            (None, None) => None,
            (Some(m), Some(s)) => {
                let sd = arr(s, "prior sigma")?;
                if sd.iter().any(|v| *v <= 0.0) {
                    return Err(PyValueError::new_err(format!("body '{name}': prior sigma entries must be > 0")));
                }
                Some((arr(m, "prior mean")?, sd))
            }
            _ => return Err(PyValueError::new_err(format!("body '{name}': a prior needs both a mean and a sigma"))),
        };
        if mode == Inertial::LogCholesky {
            theta_from_params(&self.inner.pi0[k]).map_err(|e| {
                PyValueError::new_err(format!("body '{name}': the start π is not physically consistent ({e})"))
            })?;
        }
        self.inner.inertial[k] = mode;
        Ok(())
    }

    /// The scalar parameter `name` ("damping[J]" or "coulomb[J]"): its `spec` ([`ScalarArgs`]).
    fn set_scalar(&mut self, name: &str, spec: ScalarArgs) -> PyResult<()> {
        let names = self.inner.names();
        let off = N_INERTIAL * self.inner.bodies.len();
        let nv = self.inner.nv();
        let i = names[off..].iter().position(|n| n == name).ok_or_else(|| {
            PyValueError::new_err(format!(
                "unknown scalar parameter '{name}' (expected one of: {})",
                names[off..].join(", ")
            ))
        })?;
        let spec = spec.spec(name)?;
        if i < nv {
            self.inner.damping[i] = spec;
        } else {
            self.inner.coulomb[i - nv] = spec;
        }
        Ok(())
    }

    /// Add a recording ([`RecordingArgs`]): `q` (T, nq), `tau` (T, nv) measured joint torques, `dt` its sample
    /// period (s), `v` (T, nv) measured velocities or None (the derivative of the filtered q).
    fn add_recording(&mut self, rec: RecordingArgs<'_>) -> PyResult<()> {
        let RecordingArgs { name, dt, q, tau, v } = rec;
        let nv = self.inner.nv();
        let (t_len, qd) = mat2(&q, &format!("recording '{name}' q"), None, nv)?;
        let (_, td) = mat2(&tau, &format!("recording '{name}' tau"), Some(t_len), nv)?;
        let vd = match v {
            Some(v) => Some(rows(mat2(&v, &format!("recording '{name}' v"), Some(t_len), nv)?.1, nv)),
            None => None,
        };
        let dt = recording_dt(&name, dt)?;
        self.inner.recordings.push(Recording { name, dt, q: rows(qd, nv), v: vd, tau: rows(td, nv) });
        Ok(())
    }

    /// The per-shard pieces of the normal equations over this problem's recordings: (G (np, np) = AᵀA,
    /// b (np,) = Aᵀτ, c = τᵀτ, rows), A the stacked regressor rows. Sums of these over shards give the Gram of
    /// all their recordings (`fit(gram=…)`). GIL released.
    fn gram<'py>(&self, py: Python<'py>) -> PyResult<GramParts<'py>> {
        let pb = &self.inner;
        let g = py.detach(|| {
            guard(|| {
                let prep = pb.recordings.iter().map(|r| pb.prepare(r)).collect::<Result<Vec<_>, _>>();
                prep.and_then(|p| pb.gram(&p, false)).map_err(sysid_err)
            })
        })?;
        gram_out(py, &g)
    }

    /// Fit (Levenberg–Marquardt on the normal equations with the settings of `lm` ([`LmArgs`]); `progress`: a
    /// progress bar on stderr). `gram`: a list of (G, b, c, rows) pieces to fit on instead of this problem's
    /// recordings (the Ray driver). GIL released. Returns a dict: names, p, std_errors, sigma2, history, path,
    /// iterations, rmse, time_stack_s, time_solve_s, warm_started_bodies, gram (the summed (G, b, c, rows)).
    #[pyo3(signature = (lm, progress=false, gram=None))]
    fn fit<'py>(
        &self,
        py: Python<'py>,
        lm: LmArgs,
        progress: bool,
        gram: Option<Vec<GramIn<'py>>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let lm = LmOptions::from(lm);
        let np = self.inner.np();
        let shards = match gram {
            None => None,
            Some(parts) => {
                let mut out = vec![];
                for (i, (g, b, c, rows)) in parts.iter().enumerate() {
                    let (_, gd) = mat2(g, &format!("gram[{i}] G"), Some(np), np)?;
                    let bd = vec1(b, &format!("gram[{i}] b"), np)?;
                    out.push((DMatrix::from_row_slice(np, np, &gd), DVector::from_vec(bd), *c, *rows));
                }
                if out.is_empty() {
                    return Err(PyValueError::new_err("gram: an empty list of shards"));
                }
                Some(out)
            }
        };
        let pb = &self.inner;
        let fit = py.detach(|| {
            guard(|| match shards {
                None => pb.fit(&lm, progress).map_err(sysid_err),
                Some(s) => {
                    let t0 = std::time::Instant::now();
                    let g = Gram::from_sums(s.iter().map(|(g, b, c, r)| (g, b, *c, *r)));
                    let mut f = pb.fit_gram(g, &lm, progress).map_err(sysid_err)?;
                    f.time_solve_s = t0.elapsed().as_secs_f64();
                    Ok(f)
                }
            })
        })?;
        let d =
            fit_dict(py, &fit.names, &fit.p, &fit.std_errors, fit.sigma2, (&fit.history, &fit.path), fit.iterations)?;
        d.set_item("rmse", fit.rmse)?;
        d.set_item("time_stack_s", fit.time_stack_s)?;
        d.set_item("time_solve_s", fit.time_solve_s)?;
        d.set_item("warm_started_bodies", fit.warm_started_bodies)?;
        d.set_item("gram", gram_out(py, &fit.gram)?)?;
        Ok(d)
    }

    /// The fitted model on a recording (held-out data): `q` (T, nq), `tau` (T, nv), `dt`, `v` (T, nv) or None, the
    /// parameters `p` (np,). Returns (rmse, tau (K, nv), tau_hat (K, nv)) at the K samples the filter keeps.
    #[pyo3(signature = (p, dt, q, tau, v=None))]
    fn evaluate<'py>(
        &self,
        py: Python<'py>,
        p: &Bound<'py, PyAny>,
        dt: f64,
        q: &Bound<'py, PyAny>,
        tau: &Bound<'py, PyAny>,
        v: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<(f64, Arr<'py>, Arr<'py>)> {
        let pv = vec1(p, "p", self.inner.np())?;
        let mut tmp = PyArmProblem { inner: self.inner.clone() };
        tmp.inner.recordings.clear();
        let (q, tau, v) = (q.clone(), tau.clone(), v.cloned());
        tmp.add_recording(RecordingArgs { name: "evaluate".into(), dt, q, tau, v })?;
        let pb = &tmp.inner;
        let nv = pb.nv();
        let (rmse, kept, pred) = py.detach(|| {
            guard(|| {
                let prep = pb.prepare(&pb.recordings[0]).map_err(sysid_err)?;
                let g = pb.gram(std::slice::from_ref(&prep), false).map_err(sysid_err)?;
                let pred = pb.predict(&prep, &pv).map_err(sysid_err)?;
                Ok((g.rmse(&pv), prep.tau.concat(), pred.concat()))
            })
        })?;
        let k = kept.len() / nv.max(1);
        Ok((rmse, out(py, &[k, nv], kept)?, out(py, &[k, nv], pred)?))
    }

    fn __repr__(&self) -> String {
        format!(
            "_ArmProblem({} bodies, {} DoFs, {} parameters, {} recordings)",
            self.inner.bodies.len(),
            self.inner.nv(),
            self.inner.np(),
            self.inner.recordings.len()
        )
    }
}

/// The entries every fit's dict has (`Result` in sysid.py): names, p, std_errors, sigma2, history, path,
/// iterations.
pub(crate) fn fit_dict<'py>(
    py: Python<'py>,
    names: &[String],
    p: &[f64],
    std_errors: &[f64],
    sigma2: f64,
    (history, path): (&[f64], &[Vec<f64>]),
    iterations: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let n = p.len();
    d.set_item("names", names.to_vec())?;
    d.set_item("p", out(py, &[n], p.to_vec())?)?;
    d.set_item("std_errors", out(py, &[n], std_errors.to_vec())?)?;
    d.set_item("sigma2", sigma2)?;
    d.set_item("history", out(py, &[history.len()], history.to_vec())?)?;
    d.set_item("path", out(py, &[path.len(), n], path.concat())?)?;
    d.set_item("iterations", iterations)?;
    Ok(d)
}

type Arr<'py> = Bound<'py, PyArrayDyn<f64>>;
/// (G, b, c, rows) out, and in (any array-likes)
type GramParts<'py> = (Arr<'py>, Arr<'py>, f64, usize);
type GramIn<'py> = (Bound<'py, PyAny>, Bound<'py, PyAny>, f64, usize);

fn gram_out<'py>(py: Python<'py>, g: &Gram) -> PyResult<GramParts<'py>> {
    let n = g.g.nrows();
    Ok((crate::arrays::out_mat(py, &g.g)?, out(py, &[n], g.b.as_slice().to_vec())?, g.c, g.rows))
}

/// _base_parameters(G, tol=1e-5): the identifiable (base) combinations of a Gram G (np, np) (QR with column
/// pivoting, Gautier 1990): (independent indices, dependent indices, K (rank, np − rank)), β = p_B + K p_D.
#[pyfunction]
#[pyo3(signature = (g, tol=1e-5))]
fn _base_parameters<'py>(
    py: Python<'py>,
    g: &Bound<'py, PyAny>,
    tol: f64,
) -> PyResult<(Vec<usize>, Vec<usize>, Arr<'py>)> {
    let a = read(g, "G")?;
    let n = a.shape.first().copied().unwrap_or(0);
    if a.shape != [n, n] {
        return Err(PyValueError::new_err(format!("G: expected a square matrix, got shape {:?}", a.shape)));
    }
    let gm = DMatrix::from_row_slice(n, n, &a.data);
    let b = guard(|| Ok(BaseParams::from_gram(&gm, tol)))?;
    Ok((b.independent, b.dependent, crate::arrays::out_mat(py, &b.k)?))
}

/// _log_cholesky_theta(pi): the log-Cholesky coordinates θ (10,) of a physically consistent π (10,) (m, m c,
/// I at the body origin); ValueError when π is not physically consistent.
#[pyfunction]
fn _log_cholesky_theta<'py>(py: Python<'py>, pi: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
    let v = vec1(pi, "pi", N_INERTIAL)?;
    let th = theta_from_params(&std::array::from_fn(|i| v[i])).map_err(PyValueError::new_err)?;
    out(py, &[N_INERTIAL], th.to_vec())
}

/// _log_cholesky_params(theta): π (10,) of the log-Cholesky coordinates `theta` (10,) (always physically
/// consistent).
#[pyfunction]
fn _log_cholesky_params<'py>(py: Python<'py>, theta: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
    let v = vec1(theta, "theta", N_INERTIAL)?;
    out(py, &[N_INERTIAL], params_from_theta(&std::array::from_fn(|i| v[i])).to_vec())
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyArmProblem>()?;
    m.add_function(wrap_pyfunction!(_base_parameters, m)?)?;
    m.add_function(wrap_pyfunction!(_log_cholesky_theta, m)?)?;
    m.add_function(wrap_pyfunction!(_log_cholesky_params, m)?)?;
    Ok(())
}
