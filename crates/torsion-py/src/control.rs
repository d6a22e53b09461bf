//! `torsion.ilqr` (issue 19 item 2's Python reach): `torsion_opt::ilqr` on any generalized-coordinate solver
//! (Featherstone, ncp, lcp, tensegrity) with the quadratic tracking cost (`QuadraticTracking`: weights in the
//! solver's tangent coordinates), box-constrained controls, and the sample-based iLQG variant (`sampled=True`).
//! Runs with the GIL released; bad input is a ValueError naming the argument, a failed step a SimulationError.
use crate::arrays::{out, out_mats, read, F64Arr};
use crate::model::PyModel;
use crate::solvers::{check_quats, count, Codec, SolverRef};
use crate::{guard, solver_err};
use nalgebra::{DMatrix, DVector};
use numpy::PyArrayDyn;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use torsion_model::{GenState, Model};
use torsion_opt::{Ilqr, IlqrError, IlqrOptions, IlqrStop, QuadraticTracking, SampledOptions, SolverDynamics};
use torsion_solvers::DiffSolver;

fn ilqr_err(e: IlqrError) -> PyErr {
    match e {
        IlqrError::Solver(s) => solver_err(s),
        e => PyValueError::new_err(e.to_string()),
    }
}

/// What `torsion.ilqr` returns. The local policy around the nominal is u_t = controls[t] + gains[t] (x ⊖ states[t])
/// (tangent coordinates: `solver.local_diff(model, states[t], x)`).
#[pyclass(name = "IlqrResult", module = "torsion", frozen, get_all)]
pub struct PyIlqrResult {
    /// the optimised open-loop controls (T, control_dim)
    controls: Py<PyArrayDyn<f64>>,
    /// the nominal states they reach from x0 (T + 1, state_dim), x0 first
    states: Py<PyArrayDyn<f64>>,
    /// the cost: initial, then after each accepted iteration (iLQR) or each iteration (sampled)
    cost_history: Py<PyArrayDyn<f64>>,
    /// the feedback gains K_t of the last backward pass (T, control_dim, tangent_dim)
    gains: Py<PyArrayDyn<f64>>,
    /// the feedforward terms k_t of the last backward pass (T, control_dim)
    feedforward: Py<PyArrayDyn<f64>>,
    /// iterations run
    iterations: usize,
    /// why it stopped: "cost_converged", "gradient_converged", "regularisation_limit", "max_iter" (iLQR), or
    /// "iterations" (sampled)
    stop: &'static str,
    /// sampled: the policy covariance Σ_t per step (T, control_dim, control_dim); None for iLQR
    sigma: Option<Py<PyArrayDyn<f64>>>,
    /// sampled: dynamics steps taken (samples × T per iteration plus the nominal and line-search rollouts);
    /// iLQR: None
    dynamics_steps: Option<usize>,
}

#[pymethods]
impl PyIlqrResult {
    fn __repr__(&self) -> String {
        format!("IlqrResult(iterations={}, stop='{}')", self.iterations, self.stop)
    }
}

/// A weight: (n,) diagonal or (n, n) full; `default` on the diagonal when None.
fn weight(obj: Option<&Bound<'_, PyAny>>, name: &str, n: usize, default: f64) -> PyResult<DMatrix<f64>> {
    let Some(o) = obj else { return Ok(DMatrix::from_diagonal_element(n, n, default)) };
    let a = read(o, name)?;
    match a.shape.as_slice() {
        [k] if *k == n => Ok(DMatrix::from_diagonal(&DVector::from_column_slice(&a.data))),
        [r, c] if *r == n && *c == n => Ok(DMatrix::from_row_slice(n, n, &a.data)),
        s => Err(PyValueError::new_err(format!("{name}: expected shape ({n},) (diagonal) or ({n}, {n}), got {s:?}"))),
    }
}

/// Rows of width `w`: (w,) → one row, or (rows, w) → `rows` rows (checked against `want`).
fn rows_of(a: F64Arr, name: &str, w: usize, want: &[usize]) -> PyResult<Vec<Vec<f64>>> {
    match a.shape.as_slice() {
        [k] if *k == w => Ok(vec![a.data]),
        [r, k] if *k == w && want.contains(r) => Ok(a.data.chunks(w.max(1)).map(<[f64]>::to_vec).collect()),
        s => {
            let alts: Vec<String> = want.iter().map(|r| format!("({r}, {w})")).collect();
            Err(PyValueError::new_err(format!("{name}: expected shape ({w},) or {}, got {s:?}", alts.join(" or "))))
        }
    }
}

/// A control bound: None, or `nu` numbers (±inf allowed: no bound on that entry).
fn bound(v: Option<Vec<f64>>, name: &str, nu: usize) -> PyResult<Option<Vec<f64>>> {
    match v {
        Some(b) if b.len() != nu || b.iter().any(|x| x.is_nan()) => Err(PyValueError::new_err(format!(
            "{name}: expected {nu} numbers (control_dim; ±inf for no bound), got {} entries{}",
            b.len(),
            if b.iter().any(|x| x.is_nan()) { " with a NaN" } else { "" }
        ))),
        b => Ok(b),
    }
}

/// The problem as read from Python, in torsion_opt's own types: every generalized solver shares the [q, v, act]
/// state layout, so the states and the cost are decoded once, before the solver is dispatched.
struct Problem<'m> {
    x0: GenState,
    cost: QuadraticTracking<'m>,
    /// the initial guess, one control per step
    u_init: Vec<DVector<f64>>,
    dt: f64,
    options: IlqrOptions,
    sampled: Option<SampledOptions>,
}

/// The report's pieces, for the result object.
struct Outcome {
    controls: Vec<DVector<f64>>,
    states: Vec<GenState>,
    k: Vec<DVector<f64>>,
    gains: Vec<DMatrix<f64>>,
    cost_history: Vec<f64>,
    iterations: usize,
    stop: &'static str,
    sigma: Option<Vec<DMatrix<f64>>>,
    dynamics_steps: Option<usize>,
}

fn stop_name(s: IlqrStop) -> &'static str {
    match s {
        IlqrStop::CostConverged => "cost_converged",
        IlqrStop::GradientConverged => "gradient_converged",
        IlqrStop::RegularisationLimit => "regularisation_limit",
        IlqrStop::MaxIter => "max_iter",
    }
}

fn solve<S: Codec<State = GenState>>(s: &S, m: &Model, p: &mut Problem<'_>) -> Result<Outcome, IlqrError> {
    let mut dynamics = SolverDynamics::new(s, m, p.dt)?;
    let (nt, nu) = (s.tangent_dim(m), s.control_dim(m));
    let mut il = Ilqr::new(nt, nu, p.u_init.len(), &p.x0, p.options.clone())?;
    let (x0, u_init, cost) = (&p.x0, &p.u_init, &mut p.cost);
    Ok(match &p.sampled {
        None => {
            let r = il.solve(&mut dynamics, cost, x0, u_init)?;
            Outcome {
                controls: r.controls,
                states: r.states,
                k: r.k,
                gains: r.gains,
                cost_history: r.cost_history,
                iterations: r.iterations,
                stop: stop_name(r.stop),
                sigma: None,
                dynamics_steps: None,
            }
        }
        Some(so) => {
            let r = il.solve_sampled(&mut dynamics, cost, x0, u_init, so)?;
            Outcome {
                iterations: so.iterations,
                controls: r.controls,
                states: r.states,
                k: r.k,
                gains: r.gains,
                cost_history: r.cost_history,
                stop: "iterations",
                sigma: Some(r.sigma),
                dynamics_steps: Some(r.dynamics_steps),
            }
        }
    })
}

/// iLQR (Tassa, Erez & Todorov 2012; control limits by box QP, Tassa, Mansard & Todorov 2014) on `solver`'s
/// analytic transition Jacobians: optimise `horizon` controls from x0 (state_dim,) for the tracking cost
///
///     Σ_t ½ e_tᵀ Q e_t + ½ (u_t − u_ref,t)ᵀ R (u_t − u_ref,t)  +  ½ e_Tᵀ Q_f e_T,   e_t = x_t ⊖ x_ref,t
///
/// (tangent coordinates, `solver.local_diff(model, x_ref, x)`: tangent_dim entries, quaternions by their log).
/// Solvers: FeatherstoneSolver, NcpSolver, LcpSolver, TensegritySolver (states [q, v, act]). Arguments:
/// `x_ref`: the target state (state_dim,) or a reference trajectory (horizon + 1, state_dim) (default x0);
/// `q`, `qf`: running / terminal state weights, (tangent_dim,) diagonal or (tangent_dim, tangent_dim) (default 0
/// and 1); `r`: control weight, (control_dim,) or (control_dim, control_dim) (default 1e-3); `u_ref`: (control_dim,)
/// or (horizon, control_dim) (default 0); `u_init`: the initial guess, (control_dim,) or (horizon, control_dim)
/// (default 0; clamped to the box); `u_min`, `u_max`: control bounds, control_dim numbers each (±inf: none);
/// `iterations`: at most this many outer iterations; `tol_fun`, `tol_grad`: convergence tolerances (relative cost
/// reduction, feedforward size); `dt`: time step in s (default `model.dt`). `sampled=True`: the sample-based iLQG
/// of spec 003 §4.5 (no Jacobians: `samples` rollouts per iteration of the linear-Gaussian policy, dynamics fitted
/// by ridge regression, KL penalty weight `kl_weight`, first exploration noise `init_sigma`, RNG `seed`; exactly
/// `iterations` iterations). Returns an IlqrResult (controls, states, cost_history, gains, feedforward,
/// iterations, stop; sigma and dynamics_steps when sampled). Raises ValueError for bad shapes or options,
/// TypeError for XpbdSolver (maximal coordinates: no tracking cost), SimulationError when the first rollout fails.
#[pyfunction]
#[pyo3(signature = (model, solver, x0, horizon, x_ref=None, q=None, r=None, qf=None, u_ref=None, u_init=None,
                    u_min=None, u_max=None, iterations=100, tol_fun=1e-7, tol_grad=1e-4, sampled=false, samples=40,
                    kl_weight=0.005, init_sigma=1.0, seed=0, dt=None))]
#[allow(clippy::too_many_arguments)]
fn ilqr<'py>(
    py: Python<'py>,
    model: PyRef<'_, PyModel>,
    solver: &Bound<'py, PyAny>,
    x0: &Bound<'py, PyAny>,
    horizon: i64,
    x_ref: Option<&Bound<'py, PyAny>>,
    q: Option<&Bound<'py, PyAny>>,
    r: Option<&Bound<'py, PyAny>>,
    qf: Option<&Bound<'py, PyAny>>,
    u_ref: Option<&Bound<'py, PyAny>>,
    u_init: Option<&Bound<'py, PyAny>>,
    u_min: Option<Vec<f64>>,
    u_max: Option<Vec<f64>>,
    iterations: i64,
    tol_fun: f64,
    tol_grad: f64,
    sampled: bool,
    samples: i64,
    kl_weight: f64,
    init_sigma: f64,
    seed: u64,
    dt: Option<f64>,
) -> PyResult<PyIlqrResult> {
    let (sref, mm, dt) = crate::sim::solver_model(solver, &model.inner, dt)?;
    if matches!(sref, SolverRef::Xpbd(_)) {
        return Err(PyTypeError::new_err(
            "ilqr: XpbdSolver's maximal-coordinate states have no tracking cost here; use FeatherstoneSolver, \
             NcpSolver, LcpSolver or TensegritySolver",
        ));
    }
    let m = &*mm;
    let horizon = count(horizon, "horizon", 1)?;
    let iterations = count(iterations, "iterations", 1)?;
    for (name, v) in [("tol_fun", tol_fun), ("tol_grad", tol_grad)] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(PyValueError::new_err(format!("{name} must be finite and ≥ 0, got {v}")));
        }
    }
    // every generalized solver shares the [q, v, act] layout: read it with Featherstone's codec
    let fs = torsion_solvers::FeatherstoneSolver::default();
    let (n, nt) = (fs.state_dim(m), fs.tangent_dim(m));
    let nu = crate::solvers::dispatch!(sref, |s, _c| s.control_dim(m));
    let x0 = crate::arrays::vec1(x0, "x0", n)?;
    let slots = fs.quat_slots(m);
    check_quats(&x0, &slots, "x0")?;
    let x_ref = match x_ref {
        None => vec![x0.clone()],
        Some(o) => rows_of(read(o, "x_ref")?, "x_ref", n, &[horizon + 1])?,
    };
    for (t, x) in x_ref.iter().enumerate() {
        check_quats(x, &slots, &format!("x_ref[{t}]"))?;
    }
    let u_ref = match u_ref {
        None => vec![],
        Some(o) => rows_of(read(o, "u_ref")?, "u_ref", nu, &[horizon])?,
    };
    let u_init = match u_init {
        None => vec![vec![0.0; nu]],
        Some(o) => rows_of(read(o, "u_init")?, "u_init", nu, &[horizon])?,
    };
    let options = IlqrOptions {
        max_iter: iterations,
        u_min: bound(u_min, "u_min", nu)?,
        u_max: bound(u_max, "u_max", nu)?,
        tol_fun,
        tol_grad,
        ..Default::default()
    };
    let sampled = sampled
        .then(|| -> PyResult<SampledOptions> {
            Ok(SampledOptions {
                iterations,
                samples: count(samples, "samples", 2)?,
                kl_weight,
                init_sigma,
                seed,
                ..Default::default()
            })
        })
        .transpose()?;
    let (q, r, qf) = (weight(q, "q", nt, 0.0)?, weight(r, "r", nu, 1e-3)?, weight(qf, "qf", nt, 1.0)?);
    let x0 = fs.decode(m, &x0);
    let mut cost = QuadraticTracking::diagonal(m, x0.clone(), &vec![0.0; nt], &vec![0.0; nu], &vec![0.0; nt]);
    cost.x_ref = x_ref.iter().map(|x| fs.decode(m, x)).collect();
    cost.u_ref = u_ref.iter().map(|u| DVector::from_column_slice(u)).collect();
    (cost.q, cost.r, cost.qf) = (q, r, qf);
    let u_init = (0..horizon).map(|t| DVector::from_column_slice(&u_init[t.min(u_init.len() - 1)])).collect();
    let mut pb = Problem { x0, cost, u_init, dt, options, sampled };
    let o = py.detach(|| {
        guard(|| {
            let res = match sref {
                SolverRef::Fs(p) => solve(&p.solver, m, &mut pb),
                SolverRef::Ncp(p) => solve(&p.solver, m, &mut pb),
                SolverRef::Lcp(p) => solve(&p.solver, m, &mut pb),
                SolverRef::Tens(p) => solve(&p.solver, m, &mut pb),
                SolverRef::TensNcp(_, s) => solve(s, m, &mut pb),
                SolverRef::Xpbd(_) => unreachable!("refused above"),
            };
            res.map_err(ilqr_err)
        })
    })?;
    let t = horizon;
    let mut xs = vec![0.0; (t + 1) * n];
    for (k, x) in o.states.iter().enumerate() {
        fs.encode(x, &mut xs[k * n..(k + 1) * n]);
    }
    let flat = |v: &[DVector<f64>]| v.iter().flat_map(|x| x.iter().copied()).collect::<Vec<f64>>();
    let gains: Vec<&DMatrix<f64>> = o.gains.iter().collect();
    let sigma = match &o.sigma {
        None => None,
        Some(sg) => Some(out_mats(py, &sg.iter().collect::<Vec<_>>(), nu, nu)?.unbind()),
    };
    Ok(PyIlqrResult {
        controls: out(py, &[t, nu], flat(&o.controls))?.unbind(),
        states: out(py, &[t + 1, n], xs)?.unbind(),
        cost_history: out(py, &[o.cost_history.len()], o.cost_history)?.unbind(),
        gains: out_mats(py, &gains, nu, nt)?.unbind(),
        feedforward: out(py, &[t, nu], flat(&o.k))?.unbind(),
        iterations: o.iterations,
        stop: o.stop,
        sigma,
        dynamics_steps: o.dynamics_steps,
    })
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(ilqr, m)?)?;
    m.add_class::<PyIlqrResult>()?;
    Ok(())
}
