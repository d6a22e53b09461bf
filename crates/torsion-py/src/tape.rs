//! `torsion.rollout_tape` (issue 14 item 7's Python reach): a forward rollout that keeps every step's record
//! (`torsion_diff::rollout_tape`), and its reverse pass `RolloutTape.vjp` (`torsion_diff::tape_vjp`), which reads
//! those records instead of re-running each step as `rollout_vjp` does. Memory: one step record per step.
use crate::arrays::{mat2, out};
use crate::model::{selection, PyModel};
use crate::sim::{control_rows, grad_out, solver_model, PyRolloutGrad};
use crate::solvers::{state_vec, Codec, SolverRef};
use crate::{guard, solver_err};
use numpy::PyArrayDyn;
use pyo3::prelude::*;
use torsion_diff::Tape;
use torsion_model::{Control, Model};
use torsion_solvers::ncp::NcpSolver;
use torsion_solvers::{FeatherstoneSolver, LcpSolver, XpbdSolver};

enum Taped {
    Xpbd(XpbdSolver, Tape<XpbdSolver>),
    Fs(FeatherstoneSolver, Tape<FeatherstoneSolver>),
    Ncp(NcpSolver, Tape<NcpSolver>),
    Lcp(LcpSolver, Tape<LcpSolver>),
}

/// `each!(taped, |solver, tape| expr)`: `expr` with the concrete solver and its tape.
macro_rules! each {
    ($t:expr, |$s:ident, $tp:ident| $body:expr) => {
        match $t {
            Taped::Xpbd($s, $tp) => $body,
            Taped::Fs($s, $tp) => $body,
            Taped::Ncp($s, $tp) => $body,
            Taped::Lcp($s, $tp) => $body,
        }
    };
}

/// A rollout with every step's record kept (`torsion.rollout_tape`): `states` (T + 1, state_dim), x0 first, as
/// `rollout` returns them; `vjp(dloss_dstates, param_names=None)` is `rollout_vjp` on them without re-running the
/// steps. Holds its own copy of the model and solver as they were at the rollout.
#[pyclass(name = "RolloutTape", module = "torsion")]
pub struct PyRolloutTape {
    model: Model,
    taped: Taped,
    controls: Vec<Control>,
    nu: usize,
    /// the rollout's states (T + 1, state_dim), x0 first
    #[pyo3(get)]
    states: Py<PyArrayDyn<f64>>,
}

/// `forward`'s result: a copy of the solver, its tape, the controls, their width nu, the flat states.
type Forward<S> = (S, Tape<S>, Vec<Control>, usize, Vec<f64>);

/// T steps of `s` from `x0` keeping the records; the states as one flat (T + 1) × n buffer.
fn forward<S: Codec + Clone>(
    py: Python<'_>,
    s: &S,
    m: &Model,
    x0: &Bound<'_, PyAny>,
    controls: &Bound<'_, PyAny>,
    dt: f64,
) -> PyResult<Forward<S>>
where
    S::State: Send + Sync,
    S::Record: Send,
{
    let s0 = state_vec(s, m, x0, "x0")?;
    let (n, nu) = (s.state_dim(m), s.control_dim(m));
    let (t_len, us) = mat2(controls, "controls", None, nu)?;
    let ctl = control_rows(s, m, &us, t_len, nu);
    let tape = py.detach(|| guard(|| torsion_diff::rollout_tape(s, m, &s0, &ctl, dt).map_err(solver_err)))?;
    let mut flat = vec![0.0; (t_len + 1) * n];
    for (t, st) in tape.states.iter().enumerate() {
        s.encode(st, &mut flat[t * n..(t + 1) * n]);
    }
    Ok((s.clone(), tape, ctl, nu, flat))
}

/// A rollout of `solver` on `model` that keeps every step's record for the reverse pass: x0 (state_dim,),
/// controls (T, control_dim), `dt` in s (default `model.dt`). Returns a RolloutTape: `.states` (T + 1, state_dim)
/// equal to `rollout`'s, and `.vjp(dloss_dstates, param_names=None)` → RolloutGrad equal to `rollout_vjp`'s (to
/// round-off) without re-running the steps. Memory: one step record per step (Featherstone: a few nv-sized
/// vectors; contact solvers: the step's contact frames too). GIL released; errors as `rollout`.
#[pyfunction]
#[pyo3(signature = (model, solver, x0, controls, dt=None))]
fn rollout_tape(
    py: Python<'_>,
    model: PyRef<'_, PyModel>,
    solver: &Bound<'_, PyAny>,
    x0: &Bound<'_, PyAny>,
    controls: &Bound<'_, PyAny>,
    dt: Option<f64>,
) -> PyResult<PyRolloutTape> {
    let (sref, m, dt) = solver_model(solver, &model.inner, dt)?;
    let m = m.into_owned();
    macro_rules! taped {
        ($variant:ident, $solver:expr) => {{
            let (s, t, c, nu, f) = forward(py, $solver, &m, x0, controls, dt)?;
            let n = s.state_dim(&m);
            (Taped::$variant(s, t), c, nu, f, n)
        }};
    }
    let (taped, ctl, nu, flat, n) = match sref {
        SolverRef::Xpbd(p) => taped!(Xpbd, &p.solver),
        SolverRef::Fs(p) => taped!(Fs, &p.solver),
        SolverRef::Tens(p) => taped!(Fs, &p.solver),
        SolverRef::Ncp(p) => taped!(Ncp, &p.solver),
        SolverRef::TensNcp(_, s) => taped!(Ncp, s),
        SolverRef::Lcp(p) => taped!(Lcp, &p.solver),
    };
    let t_len = ctl.len();
    Ok(PyRolloutTape { model: m, taped, controls: ctl, nu, states: out(py, &[t_len + 1, n], flat)?.unbind() })
}

#[pymethods]
impl PyRolloutTape {
    /// Reverse mode through the taped rollout: dloss_dstates (T + 1, state_dim) = ∂L/∂states (ambient);
    /// `param_names`: the parameters to return gradients for (None: all of the model's table). Returns a
    /// RolloutGrad (x0, x0_tangent, controls, params), equal to `rollout_vjp` on the same states to round-off.
    /// GIL released.
    #[pyo3(signature = (dloss_dstates, param_names=None))]
    fn vjp(
        &self,
        py: Python<'_>,
        dloss_dstates: &Bound<'_, PyAny>,
        param_names: Option<Vec<String>>,
    ) -> PyResult<PyRolloutGrad> {
        let m = &self.model;
        let sel = selection(m, param_names.as_deref())?;
        let names = param_names.unwrap_or_else(|| m.param_table().names);
        let t_len = self.controls.len();
        each!(&self.taped, |s, tape| {
            let n = s.state_dim(m);
            let (_, gs) = mat2(dloss_dstates, "dloss_dstates", Some(t_len + 1), n)?;
            let g = py.detach(|| {
                guard(|| {
                    torsion_diff::tape_vjp(s, m, tape, &self.controls, &sel, |t, _, g| {
                        s.add_flat(g, &gs[t * n..(t + 1) * n])
                    })
                    .map_err(solver_err)
                })
            })?;
            grad_out(py, s, m, g, (t_len, self.nu), names, None)
        })
    }
    /// steps taped (T)
    fn __len__(&self) -> usize {
        self.controls.len()
    }
    fn __repr__(&self) -> String {
        let solver = each!(&self.taped, |s, _t| torsion_solvers::Solver::name(s));
        format!("RolloutTape({} steps, solver '{solver}', model '{}')", self.controls.len(), self.model.name)
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(rollout_tape, m)?)?;
    m.add_class::<PyRolloutTape>()?;
    Ok(())
}
