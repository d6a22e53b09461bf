//! Simulation and its derivatives from Python: `step`, `rollout`, `rollout_batch` (rayon, GIL released),
//! `rollout_vjp`, `step_jacobians`, `trajectory_jacobians`, and the Rust-side step timer used by the
//! overhead benchmark. States are flat rows in the solver's layout (solvers.rs); controls are (T, nu) with
//! nu = `solver.control_dim(model)` (one torque per joint for XPBD, one generalized force per DoF then the
//! actuators' ctrl for Featherstone: `Codec::control_into`); Jacobians are in tangent coordinates.
use crate::arrays::{alloc, batched, check_alloc, mat2, out, out_mats, vec1};
use crate::model::{selection, PyModel};
use crate::solvers::{check_quats, count, dispatch, solver_ref, state_vec, Cache, Codec};
use crate::{guard, solver_err};
use numpy::PyArrayDyn;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rayon::prelude::*;
use torsion_model::{Control, Model, ParamSelection};
use torsion_solvers::{DiffSolver, Solver};

/// The largest time step accepted from Python (s): far above any stable step of these integrators for a robot
/// (MuJoCo's default is 0.002 s), it refuses unit mistakes (ms given as s) and nonsense such as 1e6.
pub(crate) const MAX_DT: f64 = 1.0;

/// `dt` (or the model's), checked: 0 < dt ≤ [`MAX_DT`].
pub(crate) fn check_dt(dt: f64) -> PyResult<f64> {
    if !(dt > 0.0 && dt <= MAX_DT) {
        return Err(PyValueError::new_err(format!("dt must be in (0, {MAX_DT}] s, got {dt}")));
    }
    Ok(dt)
}

pub(crate) fn dt_of(m: &Model, dt: Option<f64>) -> PyResult<f64> {
    check_dt(dt.unwrap_or(m.dt))
}

/// A flat state x (state_dim,) and a control row u (control_dim,), checked.
fn state_and_control<S: Codec>(
    s: &S,
    m: &Model,
    x: &Bound<'_, PyAny>,
    u: &Bound<'_, PyAny>,
) -> PyResult<(S::State, Control)>
where
    S::State: Send,
{
    let mut c = Control::zeros(0);
    s.control_into(m, &vec1(u, "u", s.control_dim(m))?, &mut c);
    Ok((state_vec(s, m, x, "x")?, c))
}

/// The parameters of the Jacobians' C: the named ones (default none).
fn jacobian_selection(m: &Model, names: Option<&[String]>) -> PyResult<ParamSelection> {
    selection(m, Some(names.unwrap_or(&[])))
}

/// `t_len` controls from the rows of a flat (t_len, nu) array.
pub(crate) fn control_rows<S: Codec>(s: &S, m: &Model, us: &[f64], t_len: usize, nu: usize) -> Vec<Control>
where
    S::State: Send,
{
    (0..t_len)
        .map(|t| {
            let mut c = Control::zeros(0);
            s.control_into(m, &us[t * nu..(t + 1) * nu], &mut c);
            c
        })
        .collect()
}

/// External body wrenches from Python (`wrench=`; MuJoCo's `xfrc_applied`, `Control::body_wrench`): per body a
/// world-frame force then torque at the COM, 6 per body (body_count rows, the world body's included). `per_step`:
/// (T, body_count, 6), one row per step; otherwise (body_count, 6), the same at every step.
pub(crate) struct Wrench {
    data: Vec<f64>,
    per_step: bool,
    width: usize,
}

impl Wrench {
    /// Step t's wrenches (6 × body_count).
    fn row(&self, t: usize) -> &[f64] {
        if self.per_step {
            &self.data[t * self.width..(t + 1) * self.width]
        } else {
            &self.data
        }
    }
    /// `u.body_wrench` = step t's wrenches (or none)
    fn fill(w: Option<&Self>, t: usize, u: &mut Control) {
        u.body_wrench.clear();
        if let Some(w) = w {
            u.body_wrench.extend_from_slice(w.row(t));
        }
    }
}

/// `wrench` checked: (body_count, 6), or (t_len, body_count, 6) when `t_len` is given (a rollout); refused for
/// XPBD (maximal coordinates take no body wrenches, as in Rust).
fn wrench_arg(
    m: &Model,
    sref: &crate::solvers::SolverRef<'_>,
    wrench: Option<&Bound<'_, PyAny>>,
    t_len: Option<usize>,
) -> PyResult<Option<Wrench>> {
    let Some(w) = wrench else { return Ok(None) };
    if matches!(sref, crate::solvers::SolverRef::Xpbd(_)) {
        return Err(PyValueError::new_err(
            "wrench: XpbdSolver takes no external body wrenches (use FeatherstoneSolver, NcpSolver or LcpSolver)",
        ));
    }
    let nb = m.body_count();
    let a = crate::arrays::read(w, "wrench")?;
    let per_step = match (a.shape.as_slice(), t_len) {
        ([b, 6], _) if *b == nb => false,
        ([t, b, 6], Some(tl)) if *t == tl && *b == nb => true,
        _ => {
            let want = match t_len {
                Some(t) => format!("({nb}, 6) or ({t}, {nb}, 6)"),
                None => format!("({nb}, 6)"),
            };
            return Err(PyValueError::new_err(format!(
                "wrench: expected shape {want} (per body of model.body_count = {nb}: force then torque, world \
                 frame, at the COM), got {:?}",
                a.shape
            )));
        }
    };
    Ok(Some(Wrench { data: a.data, per_step, width: 6 * nb }))
}

/// The solver behind `obj` (`solver_ref`), the model it steps (`SolverRef::model`: `m` or TensegritySolver's copy)
/// and the time step `dt` (default the model's), checked.
pub(crate) fn solver_model<'a, 'm>(
    obj: &'a Bound<'_, PyAny>,
    m: &'m Model,
    dt: Option<f64>,
) -> PyResult<(crate::solvers::SolverRef<'a>, std::borrow::Cow<'m, Model>, f64)> {
    let sref = solver_ref(obj)?;
    let mm = sref.model(m)?;
    let dt = dt_of(&mm, dt)?;
    Ok((sref, mm, dt))
}

/// Run `f` with the solver's cached workspace for this model (built on first use; a fresh one if the cache is
/// busy in another thread).
/// `m` is the model the solver steps (`SolverRef::model` of `model`: the same for a given model id and solver).
pub(crate) fn with_ws<S: Codec, R>(
    s: &S,
    cache: &Cache<S::Workspace>,
    model: &PyModel,
    m: &Model,
    f: impl FnOnce(&mut S::Workspace) -> PyResult<R>,
) -> PyResult<R>
where
    S::State: Send,
{
    match cache.try_lock() {
        Ok(mut g) => {
            let hit = matches!(g.as_ref(), Some((id, _)) if *id == model.id);
            if !hit {
                *g = None;
                let ws = guard(|| s.workspace(m).map_err(solver_err))?;
                *g = Some((model.id, ws));
            }
            match g.as_mut() {
                Some((_, ws)) => f(ws),
                None => Err(PyValueError::new_err("workspace cache")),
            }
        }
        Err(_) => {
            let mut ws = guard(|| s.workspace(m).map_err(solver_err))?;
            f(&mut ws)
        }
    }
}

/// T steps from `s0` (`torsion_diff::rollout_each`), every state written into `buf` ((T + 1) × n, row-major).
#[allow(clippy::too_many_arguments)]
fn rollout_into<S: Codec>(
    s: &S,
    m: &Model,
    s0: &S::State,
    us: &[f64],
    (t_len, nu): (usize, usize),
    dt: f64,
    ws: &mut S::Workspace,
    buf: &mut [f64],
    wrench: Option<&Wrench>,
) -> Result<(), torsion_solvers::SolverError>
where
    S::State: Send,
{
    let n = s.state_dim(m);
    s.encode(s0, &mut buf[..n]);
    let fill = |t: usize, u: &mut Control| {
        s.control_into(m, &us[t * nu..(t + 1) * nu], u);
        Wrench::fill(wrench, t, u);
    };
    torsion_diff::rollout_each(s, m, s0, t_len, dt, ws, fill, |t, st| s.encode(st, &mut buf[t * n..(t + 1) * n]))
}

/// States decoded from flat rows of a trajectory, each given the contact warm start its step had in the rollout
/// (flat rows do not hold it): the steps re-run in order from the cold first state, so step t starts from the
/// impulses of step t − 1, as `rollout` did. No-op for states without a warm start.
fn rewarm<S: Codec>(
    s: &S,
    m: &Model,
    st: &mut [S::State],
    ctl: &[Control],
    dt: f64,
) -> Result<(), torsion_solvers::SolverError>
where
    S::State: Send,
{
    if st.len() < 2 || !s.has_warm() {
        return Ok(());
    }
    let mut ws = s.workspace(m)?;
    let mut next = st[0].clone();
    for t in 0..(st.len() - 1).min(ctl.len()) {
        s.step(m, &st[t], &ctl[t], dt, &mut next, &mut ws, None)?;
        s.carry_warm(&next, &mut st[t + 1]);
    }
    Ok(())
}

/// What one step did (`torsion.step(..., return_info=True)`): the solver that produced it, its iterations,
/// contacts, residual and convergence.
#[pyclass(name = "StepInfo", module = "torsion", frozen, get_all)]
pub struct PyStepInfo {
    /// the solver that produced the step: "xpbd", "featherstone", "ncp", or for LcpSolver the LCP solver that
    /// answered: "lcp/jade", or "lcp/pgs" when some LCP of the step needed the PGS fallback
    solver: String,
    /// iterations made: XPBD projection sweeps, ncp staggered passes, lcp pivots / sweeps (impact and step
    /// LCPs), 0 for a direct solve (Featherstone)
    iterations: usize,
    /// contacts in the step (contact solvers; 0 otherwise)
    contacts: usize,
    /// the step's convergence measure at its end: ncp the largest NCP residual, lcp the largest validity residual
    /// (bounds, friction box, complementarity); 0 for a direct solve
    residual: f64,
    /// every inner solve met its tolerance (lcp: every LCP answered validly)
    converged: bool,
}

#[pymethods]
impl PyStepInfo {
    fn __repr__(&self) -> String {
        format!(
            "StepInfo(solver='{}', iterations={}, contacts={}, residual={:e}, converged={})",
            self.solver,
            self.iterations,
            self.contacts,
            self.residual,
            if self.converged { "True" } else { "False" }
        )
    }
}

/// One step of `solver` on `model`: x (state_dim,) and u (control_dim,) → the next state (state_dim,); with
/// `return_info=True` the tuple (next state, StepInfo). `dt`: time step in s (default `model.dt`). Contact
/// steppers start it cold (no warm start: a flat state does not hold one), so the same x and u always give the
/// same result. `wrench`: external body wrenches (body_count, 6) (MuJoCo's `xfrc_applied`: per body a world-frame
/// force then torque at its COM; FeatherstoneSolver, NcpSolver, LcpSolver). Raises ValueError for a wrong shape,
/// TypeError for a wrong dtype or solver, SimulationError when the step goes non-finite or (LcpSolver) no LCP
/// solver finds a valid answer.
#[pyfunction]
#[pyo3(signature = (model, solver, x, u, dt=None, return_info=false, wrench=None))]
#[allow(clippy::too_many_arguments)]
fn step<'py>(
    py: Python<'py>,
    model: PyRef<'_, PyModel>,
    solver: &Bound<'py, PyAny>,
    x: &Bound<'py, PyAny>,
    u: &Bound<'py, PyAny>,
    dt: Option<f64>,
    return_info: bool,
    wrench: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let (sref, mm, dt) = solver_model(solver, &model.inner, dt)?;
    let m = &*mm;
    let w = wrench_arg(m, &sref, wrench, None)?;
    dispatch!(sref, |s, c| {
        let (st, mut u) = state_and_control(s, m, x, u)?;
        Wrench::fill(w.as_ref(), 0, &mut u);
        let mut o = st.clone();
        let info =
            with_ws(s, c, &model, m, |ws| guard(|| s.step(m, &st, &u, dt, &mut o, ws, None).map_err(solver_err)))?;
        let mut v = vec![0.0; s.state_dim(m)];
        s.encode(&o, &mut v);
        let next = out(py, &[v.len()], v)?.into_any();
        if !return_info {
            return Ok(next);
        }
        let info = PyStepInfo {
            solver: info.solver.to_string(),
            iterations: info.iterations,
            contacts: info.contacts,
            residual: info.residual,
            converged: info.converged,
        };
        Ok((next, Bound::new(py, info)?).into_pyobject(py)?.into_any())
    })
}

/// Rollout of `solver` on `model`: x0 (state_dim,) and controls (T, control_dim) → states (T + 1, state_dim),
/// x0 first. `dt`: time step in s (default `model.dt`). `wrench`: external body wrenches, (T, body_count, 6) per
/// step or (body_count, 6) at every step (as for `step`). Contact steppers carry their warm start from step to
/// step. Raises ValueError / TypeError naming the argument for a wrong shape / dtype, SimulationError when a step
/// fails.
#[pyfunction]
#[pyo3(signature = (model, solver, x0, controls, dt=None, wrench=None))]
fn rollout<'py>(
    py: Python<'py>,
    model: PyRef<'_, PyModel>,
    solver: &Bound<'py, PyAny>,
    x0: &Bound<'py, PyAny>,
    controls: &Bound<'py, PyAny>,
    dt: Option<f64>,
    wrench: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
    let (sref, mm, dt) = solver_model(solver, &model.inner, dt)?;
    let m = &*mm;
    dispatch!(sref, |s, c| {
        let s0 = state_vec(s, m, x0, "x0")?;
        let nu = s.control_dim(m);
        let (t_len, us) = mat2(controls, "controls", None, nu)?;
        let w = wrench_arg(m, &sref, wrench, Some(t_len))?;
        let n = s.state_dim(m);
        let mut buf = alloc(&[t_len + 1, n], "rollout states")?;
        with_ws(s, c, &model, m, |ws| {
            py.detach(|| {
                guard(|| rollout_into(s, m, &s0, &us, (t_len, nu), dt, ws, &mut buf, w.as_ref()).map_err(solver_err))
            })
        })?;
        out(py, &[t_len + 1, n], buf)
    })
}

/// Batched rollouts of `solver` on `model` in parallel (rayon, all cores, GIL released): x0 (B, n) or (n,),
/// controls (B, T, nu) or (T, nu), params (B, k) or (k,) for `param_names` (k names) or None. Any unbatched
/// input is shared by every rollout; B must agree. `dt`: time step in s (default `model.dt`). Returns
/// (B, T + 1, n); entry b equals `rollout` on item b exactly.
#[pyfunction]
#[pyo3(signature = (model, solver, x0, controls, params=None, param_names=None, dt=None))]
#[allow(clippy::too_many_arguments)]
fn rollout_batch<'py>(
    py: Python<'py>,
    model: PyRef<'_, PyModel>,
    solver: &Bound<'py, PyAny>,
    x0: &Bound<'py, PyAny>,
    controls: &Bound<'py, PyAny>,
    params: Option<&Bound<'py, PyAny>>,
    param_names: Option<Vec<String>>,
    dt: Option<f64>,
) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
    let (sref, mm, dt) = solver_model(solver, &model.inner, dt)?;
    let m = &*mm;
    dispatch!(sref, |s, _c| {
        let (n, nu) = (s.state_dim(m), s.control_dim(m));
        let (bx, xs) = batched(x0, "x0", &[Some(n)])?;
        let (bu, us) = batched(controls, "controls", &[None, Some(nu)])?;
        let t_len = if bu.is_some() { us.shape[1] } else { us.shape[0] };
        let (sel, bp, ps) = match params {
            None => (ParamSelection::none(), None, None),
            Some(p) => {
                let names =
                    param_names.as_deref().ok_or_else(|| PyValueError::new_err("params given without param_names"))?;
                let sel = selection(m, Some(names))?;
                let (b, a) = batched(p, "params", &[Some(sel.len())])?;
                (sel, b, Some(a))
            }
        };
        let sizes: Vec<(&str, usize)> =
            [("x0", bx), ("controls", bu), ("params", bp)].into_iter().filter_map(|(k, b)| b.map(|b| (k, b))).collect();
        let b_len = sizes.first().map_or(1, |s| s.1);
        if let Some((k, b)) = sizes.iter().find(|s| s.1 != b_len) {
            return Err(PyValueError::new_err(format!(
                "batch sizes differ: {} has {b_len} items, {k} has {b}",
                sizes[0].0
            )));
        }
        let row = (t_len + 1) * n;
        let slots = s.quat_slots(m);
        for b in 0..bx.unwrap_or(1) {
            check_quats(&xs.data[b * n..(b + 1) * n], &slots, &format!("x0[{b}]"))?;
        }
        let mut buf = alloc(&[b_len, t_len + 1, n], "rollout_batch states")?;
        let item = |b: usize, dst: &mut [f64]| -> PyResult<()> {
            let x = if bx.is_some() { &xs.data[b * n..(b + 1) * n] } else { &xs.data[..] };
            let u = if bu.is_some() { &us.data[b * t_len * nu..(b + 1) * t_len * nu] } else { &us.data[..] };
            let owned;
            let mm = match &ps {
                None => m,
                Some(p) => {
                    let k = sel.len();
                    let v = if bp.is_some() { &p.data[b * k..(b + 1) * k] } else { &p.data[..] };
                    let mut c = m.clone();
                    c.params_set(&sel, v).map_err(|e| PyValueError::new_err(format!("params[{b}]: {e}")))?;
                    owned = c;
                    &owned
                }
            };
            let mut ws = s.workspace(mm).map_err(solver_err)?;
            let s0 = s.decode(mm, x);
            rollout_into(s, mm, &s0, u, (t_len, nu), dt, &mut ws, dst, None).map_err(solver_err)
        };
        py.detach(|| guard(|| buf.par_chunks_mut(row.max(1)).enumerate().try_for_each(|(b, dst)| item(b, dst))))?;
        out(py, &[b_len, t_len + 1, n], buf)
    })
}

/// Gradients of a trajectory loss L(states) given ∂L/∂states (`rollout_vjp`'s result): x0 (state_dim,),
/// x0_tangent (tangent_dim,), controls (T, control_dim), params (k,) for param_names.
#[pyclass(name = "RolloutGrad", module = "torsion", frozen, get_all)]
pub struct PyRolloutGrad {
    /// ∂L/∂x0, ambient (state_dim,)
    x0: Py<PyArrayDyn<f64>>,
    /// ∂L/∂x0 in tangent coordinates (tangent_dim,)
    x0_tangent: Py<PyArrayDyn<f64>>,
    /// ∂L/∂controls (T, control_dim)
    controls: Py<PyArrayDyn<f64>>,
    /// ∂L/∂θ for `param_names` (k,)
    params: Py<PyArrayDyn<f64>>,
    /// the parameter names of `params`, in order
    param_names: Vec<String>,
    /// ∂L/∂wrench in the shape `wrench` had ((T, body_count, 6), or (body_count, 6): summed over the steps);
    /// None without `wrench`
    wrench: Option<Py<PyArrayDyn<f64>>>,
}

#[pymethods]
impl PyRolloutGrad {
    fn __repr__(&self) -> String {
        format!("RolloutGrad(x0, x0_tangent, controls, params: {} names)", self.param_names.len())
    }
}

/// Reverse mode through a rollout of `solver` on `model`: states (T + 1, n) from `rollout`, controls (T, nu),
/// dloss_dstates (T + 1, n) = ∂L/∂states (ambient). `param_names`: the parameters to return gradients for
/// (None: all). `dt`: the rollout's time step in s (default `model.dt`). `wrench`: the rollout's external body
/// wrenches ((T, body_count, 6) or (body_count, 6), as for `rollout`). Returns a RolloutGrad (x0, x0_tangent,
/// controls, params, and wrench = ∂L/∂wrench when `wrench` was given).
#[pyfunction]
#[pyo3(signature = (model, solver, states, controls, dloss_dstates, param_names=None, dt=None, wrench=None))]
#[allow(clippy::too_many_arguments)]
fn rollout_vjp<'py>(
    py: Python<'py>,
    model: PyRef<'_, PyModel>,
    solver: &Bound<'py, PyAny>,
    states: &Bound<'py, PyAny>,
    controls: &Bound<'py, PyAny>,
    dloss_dstates: &Bound<'py, PyAny>,
    param_names: Option<Vec<String>>,
    dt: Option<f64>,
    wrench: Option<&Bound<'py, PyAny>>,
) -> PyResult<PyRolloutGrad> {
    let (sref, mm, dt) = solver_model(solver, &model.inner, dt)?;
    let m = &*mm;
    let sel = selection(m, param_names.as_deref())?;
    let names = match param_names {
        Some(n) => n,
        None => m.param_table().names,
    };
    dispatch!(sref, |s, _c| {
        let (n, nu) = (s.state_dim(m), s.control_dim(m));
        let (t_len, us) = mat2(controls, "controls", None, nu)?;
        let (_, xs) = mat2(states, "states", Some(t_len + 1), n)?;
        let (_, gs) = mat2(dloss_dstates, "dloss_dstates", Some(t_len + 1), n)?;
        let w = wrench_arg(m, &sref, wrench, Some(t_len))?;
        let mut st: Vec<_> = xs.chunks(n.max(1)).take(t_len + 1).map(|r| s.decode(m, r)).collect();
        let mut ctl = control_rows(s, m, &us, t_len, nu);
        for (t, u) in ctl.iter_mut().enumerate() {
            Wrench::fill(w.as_ref(), t, u);
        }
        let g = py.detach(|| {
            guard(|| {
                rewarm(s, m, &mut st, &ctl, dt).map_err(solver_err)?;
                torsion_diff::rollout_vjp(s, m, &st, &ctl, dt, &sel, |t, _, g| s.add_flat(g, &gs[t * n..(t + 1) * n]))
                    .map_err(solver_err)
            })
        })?;
        grad_out(py, s, m, g, (t_len, nu), names, w.as_ref())
    })
}

/// The Python RolloutGrad of a reverse pass over T = `t_len` steps with `nu` controls per step (`w`: the
/// rollout's wrenches, or None).
pub(crate) fn grad_out<S: Codec>(
    py: Python<'_>,
    s: &S,
    m: &Model,
    g: torsion_diff::RolloutGrad<S::State>,
    (t_len, nu): (usize, usize),
    names: Vec<String>,
    w: Option<&Wrench>,
) -> PyResult<PyRolloutGrad>
where
    S::State: Send,
{
    let n = s.state_dim(m);
    let mut x0 = vec![0.0; n];
    s.encode(&g.g_s0, &mut x0);
    let gu: Vec<f64> = g.g_u.concat();
    let gw = match w {
        None => None,
        Some(w) if w.per_step => Some(out(py, &[t_len, w.width / 6, 6], g.g_wrench.concat())?.unbind()),
        Some(w) => {
            let mut sum = vec![0.0; w.width];
            for gt in &g.g_wrench {
                sum.iter_mut().zip(gt).for_each(|(a, b)| *a += b);
            }
            Some(out(py, &[w.width / 6, 6], sum)?.unbind())
        }
    };
    let gp = g.g_theta;
    let k = gp.len();
    Ok(PyRolloutGrad {
        wrench: gw,
        x0: out(py, &[n], x0)?.unbind(),
        x0_tangent: out(py, &[g.g_s0_tangent.len()], g.g_s0_tangent)?.unbind(),
        controls: out(py, &[t_len, nu], gu)?.unbind(),
        params: out(py, &[k], gp)?.unbind(),
        param_names: names,
    })
}

/// Transition Jacobians of one step of `solver` on `model` in tangent coordinates at x (state_dim,) and
/// u (control_dim,): A = ∂x'/∂x (nt, nt), B = ∂x'/∂u (nt, nu), C = ∂x'/∂θ (nt, k) for `param_names` (default
/// none); nt = solver.tangent_dim(model). `dt`: time step in s (default `model.dt`). `wrench`: external body
/// wrenches (body_count, 6) held during the step (A then includes their dependence on q; their own Jacobian is
/// B's generalized-force columns times Jᵀ of the bodies, which `rollout_vjp(..., wrench=)` applies).
#[pyfunction]
#[pyo3(signature = (model, solver, x, u, param_names=None, dt=None, wrench=None))]
#[allow(clippy::too_many_arguments)]
fn step_jacobians<'py>(
    py: Python<'py>,
    model: PyRef<'_, PyModel>,
    solver: &Bound<'py, PyAny>,
    x: &Bound<'py, PyAny>,
    u: &Bound<'py, PyAny>,
    param_names: Option<Vec<String>>,
    dt: Option<f64>,
    wrench: Option<&Bound<'py, PyAny>>,
) -> PyResult<Abc<'py>> {
    let (sref, mm, dt) = solver_model(solver, &model.inner, dt)?;
    let m = &*mm;
    let sel = jacobian_selection(m, param_names.as_deref())?;
    let w = wrench_arg(m, &sref, wrench, None)?;
    dispatch!(sref, |s, _c| {
        let (st, mut u) = state_and_control(s, m, x, u)?;
        Wrench::fill(w.as_ref(), 0, &mut u);
        let j = py.detach(|| guard(|| s.step_jacobians(m, &st, &u, dt, &sel).map_err(solver_err)))?;
        Ok((crate::arrays::out_mat(py, &j.a)?, crate::arrays::out_mat(py, &j.b)?, crate::arrays::out_mat(py, &j.c)?))
    })
}

/// (A, B, C) of `solver` on `model` at every step of a trajectory (steps in parallel): states (T + 1, n) or
/// (T, n), controls (T, nu) → A (T, nt, nt), B (T, nt, nu), C (T, nt, k) for `param_names` (k names, default
/// none). `dt`: time step in s (default `model.dt`).
#[pyfunction]
#[pyo3(signature = (model, solver, states, controls, param_names=None, dt=None))]
#[allow(clippy::too_many_arguments)]
fn trajectory_jacobians<'py>(
    py: Python<'py>,
    model: PyRef<'_, PyModel>,
    solver: &Bound<'py, PyAny>,
    states: &Bound<'py, PyAny>,
    controls: &Bound<'py, PyAny>,
    param_names: Option<Vec<String>>,
    dt: Option<f64>,
) -> PyResult<Abc<'py>> {
    let (sref, mm, dt) = solver_model(solver, &model.inner, dt)?;
    let m = &*mm;
    let sel = jacobian_selection(m, param_names.as_deref())?;
    dispatch!(sref, |s, _c| {
        let (n, nu, nt) = (s.state_dim(m), s.control_dim(m), s.tangent_dim(m));
        let (t_len, us) = mat2(controls, "controls", None, nu)?;
        let (rows, xs) = mat2(states, "states", None, n)?;
        check_alloc(&[t_len, nt, nt + nu + sel.len()], "trajectory_jacobians (A, B, C)")?;
        if rows != t_len && rows != t_len + 1 {
            return Err(PyValueError::new_err(format!(
                "states: expected {} or {} rows for {t_len} controls, got {rows}",
                t_len,
                t_len + 1
            )));
        }
        let mut st: Vec<_> = (0..rows).map(|t| s.decode(m, &xs[t * n..(t + 1) * n])).collect();
        let ctl = control_rows(s, m, &us, t_len, nu);
        let js = py.detach(|| {
            guard(|| {
                // each step from the warm start it had in the rollout, then the steps in parallel
                rewarm(s, m, &mut st, &ctl, dt).map_err(solver_err)?;
                (0..t_len)
                    .into_par_iter()
                    .map(|t| s.step_jacobians(m, &st[t], &ctl[t], dt, &sel).map_err(solver_err))
                    .collect::<PyResult<Vec<_>>>()
            })
        })?;
        let a: Vec<_> = js.iter().map(|j| &j.a).collect();
        let b: Vec<_> = js.iter().map(|j| &j.b).collect();
        let c: Vec<_> = js.iter().map(|j| &j.c).collect();
        Ok((out_mats(py, &a, nt, nt)?, out_mats(py, &b, nt, nu)?, out_mats(py, &c, nt, sel.len())?))
    })
}

/// (A, B, C)
type Abc<'py> = (Bound<'py, PyArrayDyn<f64>>, Bound<'py, PyArrayDyn<f64>>, Bound<'py, PyArrayDyn<f64>>);

/// Seconds per step of `solver` on `model` called inside the engine with a prebuilt workspace (the reference for
/// the Python-call overhead benchmark): `n` steps from the same x (state_dim,) and u (control_dim,), time step
/// `dt` in s (default `model.dt`).
#[pyfunction]
#[pyo3(signature = (model, solver, x, u, n=10000, dt=None))]
fn bench_step_rust(
    model: PyRef<'_, PyModel>,
    solver: &Bound<'_, PyAny>,
    x: &Bound<'_, PyAny>,
    u: &Bound<'_, PyAny>,
    n: i64,
    dt: Option<f64>,
) -> PyResult<f64> {
    let (sref, mm, dt) = solver_model(solver, &model.inner, dt)?;
    let m = &*mm;
    let n = count(n, "n", 1)?;
    dispatch!(sref, |s, _c| {
        let (st, u) = state_and_control(s, m, x, u)?;
        let mut ws = s.workspace(m).map_err(solver_err)?;
        let mut o = st.clone();
        guard(|| {
            s.step(m, &st, &u, dt, &mut o, &mut ws, None).map_err(solver_err)?;
            let t0 = std::time::Instant::now();
            for _ in 0..n {
                s.step(m, std::hint::black_box(&st), &u, dt, &mut o, &mut ws, None).map_err(solver_err)?;
            }
            Ok(t0.elapsed().as_secs_f64() / n.max(1) as f64)
        })
    })
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(step, m)?)?;
    m.add_function(wrap_pyfunction!(rollout, m)?)?;
    m.add_function(wrap_pyfunction!(rollout_batch, m)?)?;
    m.add_function(wrap_pyfunction!(rollout_vjp, m)?)?;
    m.add_function(wrap_pyfunction!(step_jacobians, m)?)?;
    m.add_function(wrap_pyfunction!(trajectory_jacobians, m)?)?;
    m.add_function(wrap_pyfunction!(bench_step_rust, m)?)?;
    m.add_class::<PyRolloutGrad>()?;
    m.add_class::<PyStepInfo>()?;
    Ok(())
}
