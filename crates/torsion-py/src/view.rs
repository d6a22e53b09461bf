//! `torsion.view` (issue 18 item 3): state arrays of a rollout → the viewer page of `torsion-view`. The Python
//! side (`torsion/__init__.py`, `view`) writes the file and gives Jupyter an iframe (`_repr_html_`).
use crate::arrays::read;
use crate::model::PyModel;
use crate::model_err;
use crate::solvers::{solver_ref, Codec, SolverRef};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use torsion_model::{MaximalState, Model};

/// One state array (T + 1, state_dim) → a viewer trajectory: body poses (XPBD: the state's own; featherstone /
/// ncp: forward kinematics of q) and joint coordinates (XPBD: hinge angles; others: q), time k·dt.
fn trajectory(
    m: &Model,
    sref: &SolverRef,
    obj: &Bound<'_, PyAny>,
    name: String,
    dt: f64,
) -> PyResult<torsion_view::Trajectory> {
    let a = read(obj, &name)?;
    let n = match sref {
        SolverRef::Xpbd(p) => p.solver.state_dim(m),
        SolverRef::Fs(p) => p.solver.state_dim(m),
        SolverRef::Ncp(p) => p.solver.state_dim(m),
        SolverRef::Lcp(p) => p.solver.state_dim(m),
        SolverRef::Tens(p) | SolverRef::TensNcp(p, _) => p.solver.state_dim(m),
    };
    if a.ndim() != 2 || a.shape[1] != n || a.shape[0] == 0 {
        return Err(PyValueError::new_err(format!(
            "{name}: expected states of shape (T + 1, {n}) for this solver and model, got {:?}",
            a.shape
        )));
    }
    let mut t = torsion_view::Trajectory { name, joint_names: m.joint_name.clone(), ..Default::default() };
    let pose = |x: torsion_math::Vec3, q: torsion_math::Quat| {
        let q = q.to_array();
        [x.x, x.y, x.z, q[0], q[1], q[2], q[3]]
    };
    for (k, row) in a.data.chunks(n).enumerate() {
        t.time.push(k as f64 * dt);
        match sref {
            SolverRef::Xpbd(p) => {
                let s = MaximalState::from_ambient(row);
                t.body_poses.push((0..m.body_count()).map(|b| pose(s.x[b], s.q[b])).collect());
                t.joint_angles.push(p.solver.joint_angles(m, &s));
            }
            SolverRef::Fs(_) | SolverRef::Ncp(_) | SolverRef::Lcp(_) | SolverRef::Tens(_) | SolverRef::TensNcp(..) => {
                let q = &row[..m.nq()];
                let fk = m.forward_kinematics(q).map_err(model_err)?;
                t.body_poses.push(fk.into_iter().map(|(x, q)| pose(x, q)).collect());
                t.joint_angles.push(q.to_vec());
            }
        }
    }
    Ok(t)
}

/// The viewer page (HTML text) for one or more state arrays of `model` under `solver`'s layout; `names` label
/// them in the legend (default "states 0", …); `package_dirs` as for NcpSolver (mesh lookup).
#[pyfunction]
#[pyo3(signature = (model, states, solver, dt=None, names=None, title=None, package_dirs=Vec::new()))]
#[allow(clippy::too_many_arguments)]
fn _view_html(
    model: PyRef<'_, PyModel>,
    states: Vec<Bound<'_, PyAny>>,
    solver: &Bound<'_, PyAny>,
    dt: Option<f64>,
    names: Option<Vec<String>>,
    title: Option<String>,
    package_dirs: Vec<std::path::PathBuf>,
) -> PyResult<String> {
    let m = &model.inner;
    let dt = dt.unwrap_or(m.dt);
    if !(dt > 0.0 && dt.is_finite()) {
        return Err(PyValueError::new_err(format!("dt must be positive and finite, got {dt}")));
    }
    if let Some(n) = &names {
        if n.len() != states.len() {
            return Err(PyValueError::new_err(format!("{} names for {} state arrays", n.len(), states.len())));
        }
    }
    let sref = solver_ref(solver)?;
    let trajs = states
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let name = names.as_ref().map_or_else(|| format!("states {i}"), |n| n[i].clone());
            trajectory(m, &sref, s, name, dt)
        })
        .collect::<PyResult<Vec<_>>>()?;
    let opts = torsion_view::ViewOptions { title, package_dirs };
    torsion_view::page(m, &trajs, &opts).map_err(|e| PyValueError::new_err(e.to_string()))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_view_html, m)?)?;
    Ok(())
}
