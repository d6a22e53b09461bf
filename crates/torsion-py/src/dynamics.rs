//! Generalized-coordinate dynamics from Python: `crba`, `rnea`, `aba`, `gravity`, `nonlinear_effects`,
//! `passive_forces`, their derivatives w.r.t. (q, v, a/τ) in tangent coordinates, and w.r.t. named model
//! parameters. `include_passive` adds the model's joint damping and springs (torsion_dynamics::passive) to τ.
use crate::arrays::{out, out_mat, vec1};
use crate::model::{selection, PyModel};
use crate::{dyn_err, guard};
use numpy::PyArrayDyn;
use pyo3::prelude::*;
use torsion_dynamics::derivatives::{
    aba_derivatives as aba_d, aba_derivatives_passive, param_derivatives, rnea_derivatives as rnea_d,
};
use torsion_dynamics::passive::passive_forces as passive;
use torsion_dynamics::{DynData, DynError, DynModel};
use torsion_model::Model;

type Arr<'py> = Bound<'py, PyArrayDyn<f64>>;
/// The three (nv, nv) blocks of a derivative: ∂/∂q, ∂/∂v, ∂/∂(a or τ).
type Blocks<'py> = (Arr<'py>, Arr<'py>, Arr<'py>);
type Obj<'py> = Bound<'py, PyAny>;

fn dm(m: &Model) -> PyResult<(DynModel<f64>, DynData<f64>)> {
    guard(|| {
        let dm = DynModel::from_model(m).map_err(dyn_err)?;
        let d = DynData::new(&dm);
        Ok((dm, d))
    })
}

/// q (nq,), v (nv,) and a third vector `wn` (nv,) of the model.
fn qva(m: &Model, q: &Obj<'_>, v: &Obj<'_>, w: &Obj<'_>, wn: &str) -> PyResult<[Vec<f64>; 3]> {
    Ok([vec1(q, "q", m.nq())?, vec1(v, "v", m.nv())?, vec1(w, wn, m.nv())?])
}

/// q (nq,) and v (nv,) of the model.
fn qv(m: &Model, q: &Obj<'_>, v: &Obj<'_>) -> PyResult<(Vec<f64>, Vec<f64>)> {
    Ok((vec1(q, "q", m.nq())?, vec1(v, "v", m.nv())?))
}

/// `f` on the model's dynamics model and a fresh data (panics guarded), returned as an array of its length.
fn eval<'py>(
    py: Python<'py>,
    m: &Model,
    f: impl FnOnce(&DynModel<f64>, &mut DynData<f64>) -> Result<Vec<f64>, DynError>,
) -> PyResult<Arr<'py>> {
    let (dm, mut d) = dm(m)?;
    let r = guard(|| f(&dm, &mut d).map_err(dyn_err))?;
    out(py, &[r.len()], r)
}

/// The three (nv, nv) blocks of a derivative result.
fn blocks<'py>(py: Python<'py>, r: &torsion_dynamics::derivatives::Derivatives) -> PyResult<Blocks<'py>> {
    Ok((out_mat(py, &r.d_dq)?, out_mat(py, &r.d_dv)?, out_mat(py, &r.d_dthird)?))
}

/// Joint-space inertia matrix M(q) (nv, nv) of `model` at q (nq,) (kg, kg·m, kg·m² by joint type).
#[pyfunction]
fn crba<'py>(model: PyRef<'py, PyModel>, q: &Obj<'py>) -> PyResult<Arr<'py>> {
    let m = &model.inner;
    let q = vec1(q, "q", m.nq())?;
    let (dm, mut d) = dm(m)?;
    let mm = guard(|| torsion_dynamics::crba(&dm, &q, &mut d).map_err(dyn_err))?;
    out_mat(model.py(), &mm)
}

/// Inverse dynamics of `model`: τ = RNEA(q, v, a) (nv,) for q (nq,), v (nv,), a (nv,); N or N·m per DoF.
#[pyfunction]
fn rnea<'py>(model: PyRef<'py, PyModel>, q: &Obj<'py>, v: &Obj<'py>, a: &Obj<'py>) -> PyResult<Arr<'py>> {
    let m = &model.inner;
    let [q, v, a] = qva(m, q, v, a, "a")?;
    eval(model.py(), m, |dm, d| torsion_dynamics::rnea(dm, &q, &v, &a, d))
}

/// Forward dynamics of `model`: q̈ = ABA(q, v, tau) (nv,) for q (nq,), v (nv,), tau (nv,) (N or N·m); with
/// `include_passive`, ABA(q, v, tau + passive_forces(q, v)).
#[pyfunction]
#[pyo3(signature = (model, q, v, tau, include_passive=false))]
fn aba<'py>(
    model: PyRef<'py, PyModel>,
    q: &Obj<'py>,
    v: &Obj<'py>,
    tau: &Obj<'py>,
    include_passive: bool,
) -> PyResult<Arr<'py>> {
    let m = &model.inner;
    let [q, v, mut t] = qva(m, q, v, tau, "tau")?;
    eval(model.py(), m, |dm, d| {
        if include_passive {
            let p = passive(m, &q, &v)?;
            t.iter_mut().zip(&p).for_each(|(a, b)| *a += b);
        }
        torsion_dynamics::aba(dm, &q, &v, &t, d)
    })
}

/// Passive joint forces (nv,) of `model` at q (nq,), v (nv,): viscous damping −d v and hinge / slide springs
/// −k (q − springref), the model's `joint_damping`, `joint_stiffness`, `joint_springref`, and the inertia-box fluid forces when the model has a
/// fluid density or viscosity (MuJoCo's qfrc_passive).
#[pyfunction]
fn passive_forces<'py>(model: PyRef<'py, PyModel>, q: &Obj<'py>, v: &Obj<'py>) -> PyResult<Arr<'py>> {
    let m = &model.inner;
    let (q, v) = qv(m, q, v)?;
    let r = guard(|| passive(m, &q, &v).map_err(dyn_err))?;
    out(model.py(), &[r.len()], r)
}

/// Generalized gravity forces of `model`: g(q) = RNEA(q, 0, 0) (nv,) for q (nq,).
#[pyfunction]
fn gravity<'py>(model: PyRef<'py, PyModel>, q: &Obj<'py>) -> PyResult<Arr<'py>> {
    let m = &model.inner;
    let q = vec1(q, "q", m.nq())?;
    eval(model.py(), m, |dm, d| torsion_dynamics::gravity(dm, &q, d))
}

/// Bias forces of `model`: c(q, v) = RNEA(q, v, 0) (Coriolis, centrifugal, gravity) (nv,) for q (nq,), v (nv,).
#[pyfunction]
fn nonlinear_effects<'py>(model: PyRef<'py, PyModel>, q: &Obj<'py>, v: &Obj<'py>) -> PyResult<Arr<'py>> {
    let m = &model.inner;
    let (q, v) = qv(m, q, v)?;
    eval(model.py(), m, |dm, d| torsion_dynamics::nonlinear_effects(dm, &q, &v, d))
}

/// (∂τ/∂q, ∂τ/∂v, ∂τ/∂a) of RNEA of `model` at q (nq,), v (nv,), a (nv,), each (nv, nv); q in tangent
/// coordinates.
#[pyfunction]
fn rnea_derivatives<'py>(
    model: PyRef<'py, PyModel>,
    q: &Obj<'py>,
    v: &Obj<'py>,
    a: &Obj<'py>,
) -> PyResult<Blocks<'py>> {
    let m = &model.inner;
    let [q, v, a] = qva(m, q, v, a, "a")?;
    blocks(model.py(), &guard(|| rnea_d(m, &q, &v, &a).map_err(dyn_err))?)
}

/// (∂q̈/∂q, ∂q̈/∂v, ∂q̈/∂τ = M⁻¹) of ABA of `model` at q (nq,), v (nv,), tau (nv,), each (nv, nv); q in tangent
/// coordinates; `include_passive`: of q̈ = ABA(q, v, tau + passive_forces(q, v)).
#[pyfunction]
#[pyo3(signature = (model, q, v, tau, include_passive=false))]
fn aba_derivatives<'py>(
    model: PyRef<'py, PyModel>,
    q: &Obj<'py>,
    v: &Obj<'py>,
    tau: &Obj<'py>,
    include_passive: bool,
) -> PyResult<Blocks<'py>> {
    let m = &model.inner;
    let [q, v, t] = qva(m, q, v, tau, "tau")?;
    let f = if include_passive { aba_derivatives_passive } else { aba_d };
    blocks(model.py(), &guard(|| f(m, &q, &v, &t).map_err(dyn_err))?)
}

/// ∂RNEA/∂θ (`aba` false) or ∂ABA/∂θ (`aba` true), (nv, k), w.r.t. the named parameters.
fn param_jacobian<'py>(
    py: Python<'py>,
    m: &Model,
    [q, v, w]: [Vec<f64>; 3],
    param_names: &[String],
    aba: bool,
) -> PyResult<Arr<'py>> {
    let sel = selection(m, Some(param_names))?;
    let r = guard(|| param_derivatives(m, &q, &v, &w, &sel, aba).map_err(dyn_err))?;
    out_mat(py, &r)
}

/// `#[pyfunction] name(model, q, v, w, param_names)`: [`param_jacobian`] of RNEA (`aba` false, w = a) or ABA
/// (true, w = tau).
macro_rules! param_jacobian_fn {
    ($name:ident, $w:ident, $aba:literal, $doc:literal) => {
        #[doc = $doc]
        #[pyfunction]
        fn $name<'py>(
            model: PyRef<'py, PyModel>,
            q: &Obj<'py>,
            v: &Obj<'py>,
            $w: &Obj<'py>,
            param_names: Vec<String>,
        ) -> PyResult<Arr<'py>> {
            let m = &model.inner;
            param_jacobian(model.py(), m, qva(m, q, v, $w, stringify!($w))?, &param_names, $aba)
        }
    };
}
param_jacobian_fn!(
    rnea_param_derivatives,
    a,
    false,
    " ∂RNEA/∂θ (nv, k) of `model` at q (nq,), v (nv,), a (nv,) w.r.t. the k parameters named in `param_names`\n (masses, inertias, joint anchors)."
);
param_jacobian_fn!(
    aba_param_derivatives,
    tau,
    true,
    " ∂ABA/∂θ (nv, k) of `model` at q (nq,), v (nv,), tau (nv,) w.r.t. the k parameters named in `param_names`\n (masses, inertias, joint anchors)."
);

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(crba, m)?)?;
    m.add_function(wrap_pyfunction!(rnea, m)?)?;
    m.add_function(wrap_pyfunction!(aba, m)?)?;
    m.add_function(wrap_pyfunction!(passive_forces, m)?)?;
    m.add_function(wrap_pyfunction!(gravity, m)?)?;
    m.add_function(wrap_pyfunction!(nonlinear_effects, m)?)?;
    m.add_function(wrap_pyfunction!(rnea_derivatives, m)?)?;
    m.add_function(wrap_pyfunction!(aba_derivatives, m)?)?;
    m.add_function(wrap_pyfunction!(rnea_param_derivatives, m)?)?;
    m.add_function(wrap_pyfunction!(aba_param_derivatives, m)?)?;
    Ok(())
}
