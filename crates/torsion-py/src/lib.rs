//! The `torsion` Python extension module (`torsion._torsion`; the pure-Python package in `python/torsion`
//! re-exports it and adds the optional PyTorch integration). Every entry point checks array shapes, dtypes and
//! finite values, time steps, counts and unit quaternions up front (docs/decisions.md "Python boundary"),
//! turns every Rust error into a Python exception with its message, and catches panics (`guard`), so nothing
//! user-supplied can crash the interpreter.
use pyo3::exceptions::{PyFileNotFoundError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};

mod arrays;
mod control;
mod dynamics;
mod model;
mod shooting;
mod sim;
mod solvers;
mod sysid;
mod tape;
mod view;

pyo3::create_exception!(
    torsion,
    SimulationError,
    PyRuntimeError,
    "A step failed: its state went non-finite, or (LcpSolver) no LCP solver found a valid answer."
);

/// Model errors: unknown parameters, bad values, malformed files (the message names the file and element).
pub(crate) fn model_err(e: torsion_model::ModelError) -> PyErr {
    match e {
        torsion_model::ModelError::UnknownParam(n) => PyValueError::new_err(format!(
            "unknown parameter name '{n}' (model.param_names lists them all; model.params_select(prefix) selects \
             a family, e.g. \"body_mass[\")"
        )),
        e => PyValueError::new_err(e.to_string()),
    }
}

pub(crate) fn solver_err(e: torsion_solvers::SolverError) -> PyErr {
    match e {
        torsion_solvers::SolverError::NonFinite { .. } | torsion_solvers::SolverError::NoSolution { .. } => {
            SimulationError::new_err(e.to_string())
        }
        _ => PyValueError::new_err(e.to_string()),
    }
}

pub(crate) fn dyn_err(e: torsion_dynamics::DynError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

pub(crate) fn missing_file(path: &std::path::Path) -> PyResult<()> {
    if path.is_file() {
        Ok(())
    } else {
        Err(PyFileNotFoundError::new_err(format!("{}: no such file", path.display())))
    }
}

/// Run `f`, turning a panic (an engine bug, never expected on any input) into a RuntimeError.
pub(crate) fn guard<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            Err(PyRuntimeError::new_err(format!("torsion internal error (please report): {msg}")))
        }
    }
}

#[pymodule]
fn _torsion(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("SimulationError", m.py().get_type::<SimulationError>())?;
    model::register(m)?;
    solvers::register(m)?;
    sim::register(m)?;
    dynamics::register(m)?;
    sysid::register(m)?;
    shooting::register(m)?;
    control::register(m)?;
    tape::register(m)?;
    view::register(m)?;
    Ok(())
}
