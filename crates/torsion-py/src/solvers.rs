//! `torsion.XpbdSolver` and `torsion.FeatherstoneSolver` and the flat NumPy state layouts:
//! XPBD: per body (fixed bodies included) [x(3) q(4: w, x, y, z) v(3) w(3)] = 13 × body_count, world frame;
//! tangent: 12 per *dynamic* body [x δq v w] (δq through the left exponential map).
//! Featherstone, Ncp, Lcp and Tensegrity (contact): [q (nq), v (nv), act (na)]; tangent [δq (nv), v (nv), act]
//! (q perturbed through joint integration). `TensegritySolver` is a preset (docs/decisions.md, as the CLI's
//! `--solver tensegrity`): Featherstone on the model with spec 003's linear contact model switched on
//! ([`SolverRef::model`] makes that copy), or the ncp stepper on the same rods.
use crate::arrays::{out, read, vec1};
use crate::model::PyModel;
use crate::{guard, model_err};
use numpy::PyArrayDyn;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use std::borrow::Cow;
use std::sync::Mutex;
use torsion_model::{Control, LinearContact, MaximalState, Model, StateSpace};
use torsion_solvers::featherstone::FeatherstoneWorkspace;
use torsion_solvers::lcp::{LcpOptions, LcpSolver, LcpWorkspace, PgsOptions, PositionUpdate};
use torsion_solvers::ncp::{FrictionSet, NcpGradient, NcpOptions, NcpSimWorkspace, NcpSolver};
use torsion_solvers::xpbd::XpbdWorkspace;
use torsion_solvers::{
    DiffSolver, FeatherstoneOptions, FeatherstoneSolver, GenState, Ordering, XpbdOptions, XpbdSolver,
};

/// A solver whose state flattens to one f64 vector: the state space's own encoding (`StateSpace`).
pub(crate) trait Codec: DiffSolver + Sync
where
    Self::State: Send,
{
    fn state_dim(&self, m: &Model) -> usize {
        Self::State::ambient_dim(m)
    }
    /// `a` has `state_dim` entries (checked by the caller)
    fn decode(&self, m: &Model, a: &[f64]) -> Self::State {
        StateSpace::decode(m, a).expect("flat state length checked by the caller")
    }
    fn encode(&self, s: &Self::State, out: &mut [f64]) {
        s.encode_into(out)
    }
    /// g += a for a state gradient and a flat row `a` (same layout as the state)
    fn add_flat(&self, g: &mut Self::State, a: &[f64]) {
        g.add_encoded(a)
    }
    /// The state holds a part that flat rows do not: the contact warm start (`GenState::warm`)
    fn has_warm(&self) -> bool {
        false
    }
    /// Give `to` the warm start of `from` (no-op without one)
    fn carry_warm(&self, _from: &Self::State, _to: &mut Self::State) {}
    /// Where the unit quaternions (w, x, y, z) start in a flat state: the q part's ([`q_quat_slots`])
    fn quat_slots(&self, m: &Model) -> Vec<usize> {
        q_quat_slots(m)
    }
    /// A flat control row (`control_dim` entries, checked by the caller) into `u`: all generalized forces /
    /// torques by default
    fn control_into(&self, _m: &Model, row: &[f64], u: &mut Control) {
        u.joint_torque.clear();
        u.joint_torque.extend_from_slice(row);
        u.ctrl.clear();
    }
}

/// XPBD: every body's orientation, entries 3..7 of its 13.
impl Codec for XpbdSolver {
    fn quat_slots(&self, m: &Model) -> Vec<usize> {
        (0..m.body_count()).map(|b| 13 * b + 3).collect()
    }
}

/// How far a quaternion's norm may be from 1 in a state or q given from Python: room for float32 round-off
/// (~1e-7) and for central-difference probes of the ambient gradient (steps up to 1e-4, which leave the unit
/// sphere by design); beyond it the input is refused, not normalised (docs/decisions.md "Python boundary").
pub(crate) const QUAT_TOL: f64 = 1e-4;

/// Where the quaternions start in a joint-position vector q of `m`: ball joints at their q start, free
/// joints 3 further (after the position).
pub(crate) fn q_quat_slots(m: &Model) -> Vec<usize> {
    let starts = m.joint_q_start();
    (0..m.joint_count())
        .filter_map(|j| match m.joint_type[j] {
            torsion_model::JointType::Ball => Some(starts[j]),
            torsion_model::JointType::Free => Some(starts[j] + 3),
            _ => None,
        })
        .collect()
}

/// Refuse a quaternion of `v` (at `slots`) whose norm is off 1 by more than [`QUAT_TOL`], naming `name`.
pub(crate) fn check_quats(v: &[f64], slots: &[usize], name: &str) -> PyResult<()> {
    for &k in slots {
        let n = v[k..k + 4].iter().map(|x| x * x).sum::<f64>().sqrt();
        if (n - 1.0).abs() > QUAT_TOL {
            return Err(PyValueError::new_err(format!(
                "{name}: the quaternion at entries {k}..{} has norm {n}; it must be a unit quaternion (w, x, y, z) \
                 within {QUAT_TOL} (normalise it)",
                k + 4
            )));
        }
    }
    Ok(())
}

/// A count argument given as a Python int: ≥ `min`, named in the error (instead of pyo3's "can't convert
/// negative int to unsigned").
pub(crate) fn count(v: i64, name: &str, min: usize) -> PyResult<usize> {
    match usize::try_from(v) {
        Ok(n) if n >= min => Ok(n),
        _ => Err(PyValueError::new_err(format!("{name} must be an integer ≥ {min}, got {v}"))),
    }
}

/// The Featherstone integrator named `name` (MuJoCo's names; "implicit" runs as implicitfast).
fn integrator_arg(name: &str) -> PyResult<torsion_model::Integrator> {
    match torsion_model::Integrator::from_name(name) {
        Some((i, _)) => Ok(i),
        None => Err(PyValueError::new_err(format!(
            "integrator={name:?}: expected 'Euler', 'RK4', 'implicitfast' or 'implicit'"
        ))),
    }
}

/// Featherstone's row is [u (nv), ctrl (nu)]: generalized forces, then the actuators' controls.
impl Codec for FeatherstoneSolver {
    fn control_into(&self, m: &Model, row: &[f64], u: &mut Control) {
        let (tq, ctrl) = row.split_at(m.nv());
        u.joint_torque.clear();
        u.joint_torque.extend_from_slice(tq);
        u.ctrl.clear();
        u.ctrl.extend_from_slice(ctrl);
    }
}

impl Codec for NcpSolver {
    fn has_warm(&self) -> bool {
        true
    }
    fn carry_warm(&self, from: &GenState, to: &mut GenState) {
        to.warm.clone_from(&from.warm);
    }
}

/// The lcp stepper's state carries the contact warm start too (its tangent frames' continuity).
impl Codec for LcpSolver {
    fn has_warm(&self) -> bool {
        true
    }
    fn carry_warm(&self, from: &GenState, to: &mut GenState) {
        to.warm.clone_from(&from.warm);
    }
}

/// Workspace cached per solver object for the model it was last used with (by model id).
pub(crate) type Cache<W> = Mutex<Option<(u64, W)>>;

/// XpbdSolver(iterations=30, compliance=0.0, substeps=1, ordering="gauss_seidel", jacobi_relaxation=1.0,
/// limits=True, springs=True)
///
/// XPBD / PBD articulated bodies in maximal coordinates (spec 000): per step `substeps` sub-steps of
/// `iterations` projection sweeps (ordering "gauss_seidel" or "jacobi", relaxation for Jacobi), compliance α
/// (0 = PBD), joint limits and springs on or off. State: 13 floats per body [x(3), q(4: w, x, y, z), v(3), ω(3)]
/// (world frame); controls: one torque per joint (N·m). Exact gradients (hand-written adjoint).
#[pyclass(name = "XpbdSolver", module = "torsion", frozen)]
pub struct PyXpbd {
    pub solver: XpbdSolver,
    pub cache: Cache<XpbdWorkspace>,
}

/// FeatherstoneSolver(joint_damping=True, integrator="Euler")
///
/// Generalized coordinates (ABA; implicit joint damping when `joint_damping`; free joints as MuJoCo's), stepped by
/// `integrator`: "Euler" (MuJoCo's semi-implicit Euler), "RK4" (MuJoCo's, orientations by Runge–Kutta–Munthe-Kaas)
/// or "implicitfast" ("implicit" runs as implicitfast); the model file's choice is `Model.integrator`. State: [q (nq), v (nv)]; controls: one generalized force per DoF (N or N·m), then one
/// control per MJCF actuator (MuJoCo ctrl: joint and cable actuators, `Model.nu`, file order; their forces add
/// to the generalized forces). Exact gradients (analytic A, B; dual passes for the model parameters).
#[pyclass(name = "FeatherstoneSolver", module = "torsion", frozen)]
pub struct PyFeatherstone {
    pub solver: FeatherstoneSolver,
    pub cache: Cache<FeatherstoneWorkspace>,
}

/// NcpSolver(n_step=10, friction_set="cone", baumgarte=0.0, tolerance=0.0, margin=0.01, passive=True,
/// gradient="auto", package_dirs=[])
///
/// Frictional contact in generalized coordinates (spec 001): collision detection from the model's shapes
/// (`margin`: speculative contact distance, m; `package_dirs`: where `package://` meshes are found), an impact
/// solve with restitution then the step's, each by `n_step` staggered QP / QCQP passes (friction_set "cone", "box"
/// or "diamond"; `tolerance` > 0 stops early), optional Baumgarte gain (1/s), joint damping and springs when
/// `passive`. μ and ε are the model's `shape_friction[·]` / `shape_restitution[·]` parameters. State: [q, v];
/// controls: one generalized force per DoF. `gradient`: "auto", "fixed_point" or "cascade" (docs/gradients.md).
#[pyclass(name = "NcpSolver", module = "torsion", frozen)]
pub struct PyNcp {
    pub solver: NcpSolver,
    pub cache: Cache<NcpSimWorkspace>,
}

/// LcpSolver(position="parallel", bounce_threshold=0.1, chain=("jade", "pgs"), pgs_sweeps=10000, margin=0.01,
/// passive=True, baumgarte=0.0, package_dirs=[], ccd=None)
///
/// Frictional contact in generalized coordinates as a boxed LCP (spec 004, Jade): collision detection from the
/// model's shapes (`margin`: speculative contact distance, m; `package_dirs`: folders where `package://` meshes are
/// found), an impact LCP at Δt = 0 when a contact with restitution ε > 0 approaches faster than `bounce_threshold`
/// (m/s), then the step's LCP with friction boxed by μ times the normal impulse. Each LCP is solved by the `chain`
/// of solvers: ("jade",) Jade's modified Dantzig alone or ("jade", "pgs") with projected Gauss–Seidel (at most
/// `pgs_sweeps` sweeps) after a failed Jade solve; every answer is validity-checked and no valid answer raises
/// SimulationError (never a frictionless step). `torsion.step(..., return_info=True)` reports which solver answered
/// ("lcp/jade" or "lcp/pgs"). `position`: "parallel" (q' = q ⊕ Δt v, the paper's) or "semi_implicit"
/// (q' = q ⊕ Δt v'). `ccd`: continuous collision detection with time-of-impact backtracking (spec 004 §3.5, §3.7;
/// TOI-aware gradients): None = on with the parallel update, the only one it supports, off with semi_implicit;
/// False = discrete detection (DCD). `passive`: joint damping and springs; `baumgarte`: penetration correction
/// gain (1/s, 0 = off).
/// μ and ε are the model's `shape_friction[·]` / `shape_restitution[·]` parameters (differentiable). State: [q, v];
/// controls: one generalized force per DoF (N or N·m). Gradients: implicit differentiation of each LCP at its
/// active set (docs/gradients.md).
#[pyclass(name = "LcpSolver", module = "torsion", frozen)]
pub struct PyLcp {
    pub solver: LcpSolver,
    pub cache: Cache<LcpWorkspace>,
}

/// TensegritySolver(contact="linear", contact_params=None, joint_damping=True, integrator="Euler", ncp=None)
///
/// Tensegrity robots (spec 003; SUPERball's MJCF loads unchanged): free rods, spring-damper cables between
/// sites, first-order motor filters and rod contact, the preset the CLI runs as `--solver tensegrity`.
/// `contact="linear"`: the Featherstone stepper (semi-implicit Euler, `integrator`, implicit joint damping when
/// `joint_damping`) with spec 003 §3.6's linear contact model on the model's rod (capsule / cylinder) and plane
/// geoms; its five parameters β (Baumgarte fraction per step, [0, 1]), e (restitution, [−1, 1]), γ (sliding damping,
/// [0, 1]), μ (Coulomb coefficient, ≥ 0), ε (spin damping, [0, 1]) are `contact_params` (5,), else the model's
/// (MJCF `<custom><numeric name="torsion_linear_contact">`), else (0.5, 0, 0.5, 0.5, 0.005); they are the
/// differentiable parameters "contact_beta", "contact_e", "contact_gamma", "contact_mu", "contact_eps" of
/// `rollout_vjp` / `step_jacobians` (`param_names`). `contact="ncp"`: the exact-cone ncp stepper (spec 001; `ncp`:
/// an NcpSolver for its options, default NcpSolver()) on the same rods with the shapes' μ / ε
/// (`shape_friction[·]`, `shape_restitution[·]`); it does not simulate cables or actuators yet, so a model with
/// them is refused (ValueError). State: [q (nq), v (nv), act (na)] (rods: free joints, MuJoCo's qpos / qvel);
/// controls: [u (nv) generalized forces, N or N·m; ctrl (nu) the actuators' controls, MuJoCo ctrl] for "linear",
/// u (nv) for "ncp". Every call runs on a copy of `model` with the contact model set (the model is not changed).
#[pyclass(name = "TensegritySolver", module = "torsion", frozen)]
pub struct PyTensegrity {
    /// the Featherstone stepper of `contact="linear"`
    pub solver: FeatherstoneSolver,
    pub cache: Cache<FeatherstoneWorkspace>,
    /// the contact parameters given to the constructor (None: the model's, else the defaults)
    pub params: Option<LinearContact>,
    /// `contact="ncp"`: its stepper
    pub ncp: Option<NcpSolver>,
    pub ncp_cache: Cache<NcpSimWorkspace>,
}

#[derive(Clone, Copy)]
pub(crate) enum SolverRef<'a> {
    Xpbd(&'a PyXpbd),
    Fs(&'a PyFeatherstone),
    Ncp(&'a PyNcp),
    Lcp(&'a PyLcp),
    /// TensegritySolver(contact="linear")
    Tens(&'a PyTensegrity),
    /// TensegritySolver(contact="ncp"): its NcpSolver
    TensNcp(&'a PyTensegrity, &'a NcpSolver),
}

impl SolverRef<'_> {
    /// The model this solver steps: `m` itself, or for TensegritySolver a copy with its contact model set
    /// ("linear": the constructor's parameters, else the model's, else the defaults; "ncp": the linear model off,
    /// a model with cables or actuators refused).
    pub(crate) fn model<'m>(&self, m: &'m Model) -> PyResult<Cow<'m, Model>> {
        match self {
            SolverRef::Tens(p) => {
                let lc = p.params.or(m.tensegrity_contact).unwrap_or_default();
                if m.tensegrity_contact == Some(lc) {
                    return Ok(Cow::Borrowed(m));
                }
                let mut c = m.clone();
                c.tensegrity_contact = Some(lc);
                Ok(Cow::Owned(c))
            }
            SolverRef::TensNcp(..) => {
                if !m.cables.is_empty() || m.nu() > 0 {
                    return Err(PyValueError::new_err(format!(
                        "TensegritySolver(contact='ncp'): model '{}' has {} cables and {} actuators; the ncp stepper \
                         does not simulate cables or actuators yet (use contact='linear')",
                        m.name,
                        m.cables.len(),
                        m.nu()
                    )));
                }
                if m.tensegrity_contact.is_none() {
                    return Ok(Cow::Borrowed(m));
                }
                let mut c = m.clone();
                c.tensegrity_contact = None;
                Ok(Cow::Owned(c))
            }
            _ => Ok(Cow::Borrowed(m)),
        }
    }
}

pub(crate) fn solver_ref<'a>(obj: &'a Bound<'_, PyAny>) -> PyResult<SolverRef<'a>> {
    if let Ok(s) = obj.cast::<PyXpbd>() {
        return Ok(SolverRef::Xpbd(s.get()));
    }
    if let Ok(s) = obj.cast::<PyFeatherstone>() {
        return Ok(SolverRef::Fs(s.get()));
    }
    if let Ok(s) = obj.cast::<PyNcp>() {
        return Ok(SolverRef::Ncp(s.get()));
    }
    if let Ok(s) = obj.cast::<PyLcp>() {
        return Ok(SolverRef::Lcp(s.get()));
    }
    if let Ok(s) = obj.cast::<PyTensegrity>() {
        let p = s.get();
        return Ok(match &p.ncp {
            Some(n) => SolverRef::TensNcp(p, n),
            None => SolverRef::Tens(p),
        });
    }
    Err(PyTypeError::new_err(format!(
        "solver: expected torsion.XpbdSolver, torsion.FeatherstoneSolver, torsion.NcpSolver, torsion.LcpSolver or \
         torsion.TensegritySolver, got {}",
        obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
    )))
}

/// `dispatch!(solver_ref, |s, cache| expr)`: run `expr` with the concrete solver and its workspace cache.
macro_rules! dispatch {
    ($r:expr, |$s:ident, $c:ident| $body:expr) => {
        match $r {
            $crate::solvers::SolverRef::Xpbd(p) => {
                let $s = &p.solver;
                let $c = &p.cache;
                $body
            }
            $crate::solvers::SolverRef::Fs(p) => {
                let $s = &p.solver;
                let $c = &p.cache;
                $body
            }
            $crate::solvers::SolverRef::Ncp(p) => {
                let $s = &p.solver;
                let $c = &p.cache;
                $body
            }
            $crate::solvers::SolverRef::Lcp(p) => {
                let $s = &p.solver;
                let $c = &p.cache;
                $body
            }
            $crate::solvers::SolverRef::Tens(p) => {
                let $s = &p.solver;
                let $c = &p.cache;
                $body
            }
            $crate::solvers::SolverRef::TensNcp(p, n) => {
                let $s = n;
                let $c = &p.ncp_cache;
                $body
            }
        }
    };
}
pub(crate) use dispatch;

/// Check a flat state's length.
pub(crate) fn state_vec<S: Codec>(s: &S, m: &Model, obj: &Bound<'_, PyAny>, name: &str) -> PyResult<S::State>
where
    S::State: Send,
{
    let v = vec1(obj, name, s.state_dim(m))?;
    check_quats(&v, &s.quat_slots(m), name)?;
    Ok(s.decode(m, &v))
}

fn tangent_ops<S: Codec>(s: &S, m: &Model, x: &Bound<'_, PyAny>, other: &Bound<'_, PyAny>, op: u8) -> PyResult<Vec<f64>>
where
    S::State: Send,
{
    let st = state_vec(s, m, x, "x")?;
    guard(|| match op {
        0 => {
            let d = vec1(other, "d", s.tangent_dim(m))?;
            let r = s.retract(m, &st, &d);
            let mut o = vec![0.0; s.state_dim(m)];
            s.encode(&r, &mut o);
            Ok(o)
        }
        1 => {
            let o = state_vec(s, m, other, "other")?;
            Ok(s.local_diff(m, &st, &o))
        }
        _ => {
            let g = s.decode(m, &vec1(other, "g", s.state_dim(m))?); // a gradient: no unit quaternions
            Ok(s.grad_to_tangent(m, &st, &g))
        }
    })
}

/// The `#[pymethods]` block of a solver class: `extra` (its constructor, getters, `initial_state`, ...) and the
/// shared dimension and tangent-space methods. `generalized` adds the [q, v] `initial_state` of the
/// generalized-coordinate solvers.
macro_rules! solver_methods {
    ($ty:ty, generalized, { $($extra:tt)* }) => {
        solver_methods!($ty, {
            $($extra)*
            /// The flat state [q, v, act] (nq + nv + na,) for `model` with q (nq,; default: the model's reference
            /// configuration `model.qpos0`), v (nv,; default 0) and the actuators' activations 0.
            #[pyo3(signature = (model, q=None, v=None))]
            fn initial_state<'py>(
                &self,
                py: Python<'py>,
                model: PyRef<'_, PyModel>,
                q: Option<&Bound<'py, PyAny>>,
                v: Option<&Bound<'py, PyAny>>,
            ) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
                let m = &model.inner;
                let mut o = match q {
                    Some(q) => vec1(q, "q", m.nq())?,
                    None => m.neutral_q(),
                };
                check_quats(&o, &q_quat_slots(m), "q")?;
                match v {
                    Some(v) => o.extend(vec1(v, "v", m.nv())?),
                    None => o.extend(std::iter::repeat_n(0.0, m.nv())),
                }
                o.extend(std::iter::repeat_n(0.0, m.na()));
                out(py, &[o.len()], o)
            }
        });
    };
    ($ty:ty, { $($extra:tt)* }) => {
        solver_methods!(@tangent $ty, { $($extra)* }, [
            (retract, d, 0, " x ⊕ d for `model`: move the state x (state_dim,) along a tangent vector d (tangent_dim,)"),
            (local_diff, other, 1, " other ⊖ x for `model` in tangent coordinates (tangent_dim,), x and other (state_dim,)\n (inverse of retract to first order)"),
            (grad_to_tangent, g, 2, " g, an ambient state gradient (state_dim,) at x (state_dim,) of `model` → the tangent gradient\n (tangent_dim,)"),
        ]);
    };
    (@tangent $ty:ty, { $($extra:tt)* }, [$(($name:ident, $arg:ident, $op:literal, $doc:literal),)*]) => {
        #[pymethods]
        impl $ty {
            $($extra)*
            /// length of the flat state vector for `model` (state_dim)
            fn state_dim(&self, model: PyRef<'_, PyModel>) -> usize {
                self.solver.state_dim(&model.inner)
            }
            /// length of the tangent state for `model` (tangent_dim: rows of A, B, C)
            fn tangent_dim(&self, model: PyRef<'_, PyModel>) -> usize {
                self.solver.tangent_dim(&model.inner)
            }
            /// entries of one control row for `model` (control_dim)
            fn control_dim(&self, model: PyRef<'_, PyModel>) -> usize {
                self.solver.control_dim(&model.inner)
            }
            $(
                #[doc = $doc]
                fn $name<'py>(
                    &self,
                    py: Python<'py>,
                    model: PyRef<'_, PyModel>,
                    x: &Bound<'py, PyAny>,
                    $arg: &Bound<'py, PyAny>,
                ) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
                    let v = tangent_ops(&self.solver, &model.inner, x, $arg, $op)?;
                    out(py, &[v.len()], v)
                }
            )*
        }
    };
}

solver_methods!(PyXpbd, {
    /// XPBD / PBD in maximal coordinates (spec 000). ordering: "gauss_seidel" or "jacobi".
    #[new]
    #[pyo3(signature = (iterations=30, compliance=0.0, substeps=1, ordering="gauss_seidel", jacobi_relaxation=1.0, limits=true, springs=true))]
    fn new(
        iterations: i64,
        compliance: f64,
        substeps: i64,
        ordering: &str,
        jacobi_relaxation: f64,
        limits: bool,
        springs: bool,
    ) -> PyResult<Self> {
        let ordering = match ordering {
            "gauss_seidel" => Ordering::GaussSeidel,
            "jacobi" => Ordering::Jacobi,
            o => {
                return Err(PyValueError::new_err(format!("ordering: expected 'gauss_seidel' or 'jacobi', got '{o}'")))
            }
        };
        let (iterations, substeps) = (count(iterations, "iterations", 1)?, count(substeps, "substeps", 1)?);
        if !(compliance >= 0.0 && compliance.is_finite()) {
            return Err(PyValueError::new_err(format!("compliance must be ≥ 0, got {compliance}")));
        }
        if !(jacobi_relaxation > 0.0 && jacobi_relaxation <= 1.0) {
            return Err(PyValueError::new_err(format!("jacobi_relaxation must be in (0, 1], got {jacobi_relaxation}")));
        }
        let options = XpbdOptions { iterations, compliance, substeps, ordering, jacobi_relaxation, limits, springs };
        Ok(PyXpbd { solver: XpbdSolver::new(options), cache: Mutex::new(None) })
    }
    /// projection sweeps per sub-step
    #[getter]
    fn iterations(&self) -> usize {
        self.solver.options.iterations
    }
    /// compliance α (m/N; 0 = PBD)
    #[getter]
    fn compliance(&self) -> f64 {
        self.solver.options.compliance
    }
    /// sub-steps per step
    #[getter]
    fn substeps(&self) -> usize {
        self.solver.options.substeps
    }
    /// projection order: "gauss_seidel" or "jacobi"
    #[getter]
    fn ordering(&self) -> &'static str {
        match self.solver.options.ordering {
            Ordering::GaussSeidel => "gauss_seidel",
            Ordering::Jacobi => "jacobi",
        }
    }
    /// relaxation factor of the Jacobi ordering, in (0, 1]
    #[getter]
    fn jacobi_relaxation(&self) -> f64 {
        self.solver.options.jacobi_relaxation
    }
    /// joint limits enforced
    #[getter]
    fn limits(&self) -> bool {
        self.solver.options.limits
    }
    /// joint springs applied
    #[getter]
    fn springs(&self) -> bool {
        self.solver.options.springs
    }
    /// The flat state (13 × body_count,) of `model` with joint positions q (nq,; default `model.qpos0`; bodies
    /// placed by forward kinematics, at rest).
    #[pyo3(signature = (model, q=None))]
    fn initial_state<'py>(
        &self,
        py: Python<'py>,
        model: PyRef<'_, PyModel>,
        q: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
        let m = &model.inner;
        let q = match q {
            Some(q) => vec1(q, "q", m.nq())?,
            None => m.neutral_q(),
        };
        check_quats(&q, &q_quat_slots(m), "q")?;
        let s = guard(|| m.state_at(&q).map_err(model_err))?;
        let mut o = vec![0.0; self.solver.state_dim(m)];
        self.solver.encode(&s, &mut o);
        out(py, &[o.len()], o)
    }
    /// Hinge angles (rad, spec 000 §3.6) of `model` from states (..., state_dim) → (..., joint_count); 0 for
    /// non-hinges.
    fn joint_angles<'py>(
        &self,
        py: Python<'py>,
        model: PyRef<'_, PyModel>,
        states: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
        let m = &model.inner;
        let a = read(states, "states")?;
        let n = self.solver.state_dim(m);
        if a.shape.last() != Some(&n) {
            return Err(PyValueError::new_err(format!(
                "states: last axis must have {n} entries, got shape {:?}",
                a.shape
            )));
        }
        let nj = m.joint_count();
        let mut o = Vec::with_capacity(a.data.len() / n.max(1) * nj);
        for row in a.data.chunks(n.max(1)) {
            o.extend(self.solver.joint_angles(m, &MaximalState::from_ambient(row)));
        }
        let mut shape = a.shape.clone();
        *shape.last_mut().expect("non-empty") = nj;
        out(py, &shape, o)
    }
    fn __repr__(&self) -> String {
        format!("XpbdSolver({:?})", self.solver.options)
    }
});

solver_methods!(PyFeatherstone, generalized, {
    /// Generalized coordinates stepped by `integrator` ("Euler", "RK4", "implicitfast"; implicit joint damping
    /// when `joint_damping`). RK4 refuses joint friction loss and the linear rod contact at the first step;
    /// implicitfast refuses fluid forces, cables and tendon actuators (ValueError naming the cause).
    #[new]
    #[pyo3(signature = (joint_damping=true, integrator="Euler"))]
    fn new(joint_damping: bool, integrator: &str) -> PyResult<Self> {
        let integrator = integrator_arg(integrator)?;
        Ok(PyFeatherstone {
            solver: FeatherstoneSolver { options: FeatherstoneOptions { joint_damping, integrator } },
            cache: Mutex::new(None),
        })
    }
    /// joint damping applied (implicitly)
    #[getter]
    fn joint_damping(&self) -> bool {
        self.solver.options.joint_damping
    }
    /// the integrator: 'Euler', 'RK4' or 'implicitfast'
    #[getter]
    fn integrator(&self) -> &'static str {
        self.solver.options.integrator.name()
    }
    fn __repr__(&self) -> String {
        format!(
            "FeatherstoneSolver(joint_damping={}, integrator={:?})",
            self.solver.options.joint_damping,
            self.solver.options.integrator.name()
        )
    }
});

solver_methods!(PyNcp, generalized, {
    /// Velocity-level frictional contact by staggered projections (spec 001): collision detection from the
    /// model's shapes, an ADMM QP (normal impulses) and QCQP (exact Coulomb disk, or a pyramid), `n_step`
    /// passes, restitution by an impact solve from the pre-step velocity, optional Baumgarte gain (1/s), speculative contact margin (m). A pair's
    /// friction and restitution are the larger of its two shapes' parameters `shape_friction[shape]`,
    /// `shape_restitution[shape]` (model parameters, differentiable). `gradient`: 'auto', 'fixed_point' (implicit
    /// derivative of the NCP solution) or 'cascade' (chain rule through the executed passes), docs/gradients.md.
    /// `package_dirs`: folders (str or path) where `package://NAME/…` mesh names are looked up first (as
    /// DIR/NAME/… or DIR/…), before ROS_PACKAGE_PATH, the folders above the model file and example-robot-data.
    #[new]
    #[pyo3(signature = (n_step=10, friction_set="cone", baumgarte=0.0, tolerance=0.0, margin=0.01, passive=true,
                        gradient="auto", package_dirs=Vec::new()))]
    #[pyo3(text_signature = "(n_step=10, friction_set='cone', baumgarte=0.0, tolerance=0.0, margin=0.01, \
                             passive=True, gradient='auto', package_dirs=())")]
    #[allow(clippy::too_many_arguments)]
    fn new(
        n_step: i64,
        friction_set: &str,
        baumgarte: f64,
        tolerance: f64,
        margin: f64,
        passive: bool,
        gradient: &str,
        package_dirs: Vec<std::path::PathBuf>,
    ) -> PyResult<Self> {
        let gradient = match gradient {
            "auto" => NcpGradient::Auto,
            "fixed_point" => NcpGradient::FixedPoint,
            "cascade" => NcpGradient::Cascade,
            o => return Err(PyValueError::new_err(format!("gradient: 'auto', 'fixed_point' or 'cascade', got '{o}'"))),
        };
        let friction_set = match friction_set {
            "cone" => FrictionSet::Cone,
            "box" => FrictionSet::BoxPyramid,
            "diamond" => FrictionSet::DiamondPyramid,
            o => return Err(PyValueError::new_err(format!("friction_set: 'cone', 'box' or 'diamond', got '{o}'"))),
        };
        let n_step = count(n_step, "n_step", 1)?;
        let ok = [margin, baumgarte, tolerance].iter().all(|v| v.is_finite() && *v >= 0.0);
        if !ok {
            return Err(PyValueError::new_err(format!(
                "margin, baumgarte and tolerance must be finite and ≥ 0, got {margin}, {baumgarte}, {tolerance}"
            )));
        }
        let mut o = NcpOptions { n_step, friction_set, baumgarte, tolerance, passive, gradient, ..Default::default() };
        o.collision.margin = margin;
        o.collision.package_dirs = package_dirs;
        Ok(PyNcp { solver: NcpSolver::new(o), cache: Mutex::new(None) })
    }
    /// staggered QP / QCQP passes per solve
    #[getter]
    fn n_step(&self) -> usize {
        self.solver.options.n_step
    }
    /// friction set: "cone", "box" or "diamond"
    #[getter]
    fn friction_set(&self) -> &'static str {
        match self.solver.options.friction_set {
            FrictionSet::Cone => "cone",
            FrictionSet::BoxPyramid => "box",
            FrictionSet::DiamondPyramid => "diamond",
        }
    }
    fn __repr__(&self) -> String {
        let o = &self.solver.options;
        format!("NcpSolver(n_step={}, friction_set='{}')", o.n_step, self.friction_set())
    }
});

solver_methods!(PyLcp, generalized, {
    /// See the class docstring: position, bounce_threshold, chain, pgs_sweeps, margin, passive, baumgarte,
    /// package_dirs, ccd.
    #[new]
    #[pyo3(signature = (position="parallel", bounce_threshold=0.1, chain=vec!["jade".to_string(), "pgs".to_string()],
                        pgs_sweeps=10_000, margin=0.01, passive=true, baumgarte=0.0, package_dirs=Vec::new(),
                        ccd=None))]
    #[pyo3(text_signature = "(position='parallel', bounce_threshold=0.1, chain=('jade', 'pgs'), pgs_sweeps=10000, \
                             margin=0.01, passive=True, baumgarte=0.0, package_dirs=(), ccd=None)")]
    #[allow(clippy::too_many_arguments)]
    fn new(
        position: &str,
        bounce_threshold: f64,
        chain: Vec<String>,
        pgs_sweeps: i64,
        margin: f64,
        passive: bool,
        baumgarte: f64,
        package_dirs: Vec<std::path::PathBuf>,
        ccd: Option<bool>,
    ) -> PyResult<Self> {
        let position = match position {
            "parallel" => PositionUpdate::Parallel,
            "semi_implicit" => PositionUpdate::SemiImplicit,
            o => {
                return Err(PyValueError::new_err(format!(
                    "position: expected 'parallel' or 'semi_implicit', got '{o}'"
                )))
            }
        };
        let pgs_sweeps = count(pgs_sweeps, "pgs_sweeps", 1)?;
        let mut o = LcpOptions::default();
        o.chain.pgs = match chain.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
            ["jade"] => None,
            ["jade", "pgs"] => Some(PgsOptions { max_sweeps: pgs_sweeps, ..o.chain.pgs.unwrap_or_default() }),
            _ => {
                return Err(PyValueError::new_err(format!(
                    "chain: expected ('jade',) or ('jade', 'pgs') (Jade's Dantzig, then PGS after a failed solve), \
                     got {chain:?}"
                )))
            }
        };
        for (name, v) in [("bounce_threshold", bounce_threshold), ("margin", margin), ("baumgarte", baumgarte)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(PyValueError::new_err(format!("{name} must be finite and ≥ 0, got {v}")));
            }
        }
        o.ccd.enabled = match (ccd, position) {
            (Some(true), PositionUpdate::SemiImplicit) => {
                return Err(PyValueError::new_err(
                    "ccd: time-of-impact backtracking needs position='parallel' (pass ccd=False or None with \
                     'semi_implicit')",
                ))
            }
            (Some(c), _) => c,
            (None, p) => p == PositionUpdate::Parallel,
        };
        o.position = position;
        o.bounce_threshold = bounce_threshold;
        o.passive = passive;
        o.baumgarte = baumgarte;
        o.collision.margin = margin;
        o.collision.package_dirs = package_dirs;
        Ok(PyLcp { solver: LcpSolver::new(o), cache: Mutex::new(None) })
    }
    /// the position update: "parallel" or "semi_implicit"
    #[getter]
    fn position(&self) -> &'static str {
        match self.solver.options.position {
            PositionUpdate::Parallel => "parallel",
            PositionUpdate::SemiImplicit => "semi_implicit",
        }
    }
    /// approach speed (m/s) above which a contact with restitution > 0 bounces
    #[getter]
    fn bounce_threshold(&self) -> f64 {
        self.solver.options.bounce_threshold
    }
    /// the LCP solvers tried in order: ("jade",) or ("jade", "pgs")
    #[getter]
    fn chain(&self) -> Vec<&'static str> {
        match self.solver.options.chain.pgs {
            Some(_) => vec!["jade", "pgs"],
            None => vec!["jade"],
        }
    }
    /// speculative contact distance, m
    #[getter]
    fn margin(&self) -> f64 {
        self.solver.options.collision.margin
    }
    /// continuous collision detection (time-of-impact backtracking) on
    #[getter]
    fn ccd(&self) -> bool {
        self.solver.options.ccd.enabled
    }
    fn __repr__(&self) -> String {
        let o = &self.solver.options;
        format!(
            "LcpSolver(position='{}', bounce_threshold={}, chain=({}), margin={}, ccd={})",
            self.position(),
            o.bounce_threshold,
            match self.chain().as_slice() {
                [one] => format!("'{one}',"),
                all => all.iter().map(|c| format!("'{c}'")).collect::<Vec<_>>().join(", "),
            },
            o.collision.margin,
            if o.ccd.enabled { "True" } else { "False" }
        )
    }
});

solver_methods!(PyTensegrity, generalized, {
    /// See the class docstring: contact ("linear" or "ncp"), contact_params (β, e, γ, μ, ε), joint_damping,
    /// integrator, ncp (an NcpSolver whose options contact="ncp" uses).
    #[new]
    #[pyo3(signature = (contact="linear", contact_params=None, joint_damping=true, integrator="Euler", ncp=None))]
    #[pyo3(text_signature = "(contact='linear', contact_params=None, joint_damping=True, integrator='Euler', \
                             ncp=None)")]
    fn new(
        contact: &str,
        contact_params: Option<&Bound<'_, PyAny>>,
        joint_damping: bool,
        integrator: &str,
        ncp: Option<PyRef<'_, PyNcp>>,
    ) -> PyResult<Self> {
        let integrator = integrator_arg(integrator)?;
        let params = match contact_params {
            None => None,
            Some(p) => {
                let v = vec1(p, "contact_params", 5)?;
                let lc = LinearContact::from_array([v[0], v[1], v[2], v[3], v[4]]);
                lc.validate().map_err(|e| PyValueError::new_err(format!("contact_params: {e}")))?;
                Some(lc)
            }
        };
        let ncp =
            match contact {
                "linear" if ncp.is_some() => {
                    return Err(PyValueError::new_err("ncp: options of the ncp stepper apply to contact='ncp' only"))
                }
                "linear" => None,
                "ncp" if params.is_some() => return Err(PyValueError::new_err(
                    "contact_params: the linear model's β, e, γ, μ, ε apply to contact='linear'; under contact='ncp' \
                     μ and ε are the model's shape_friction[·] / shape_restitution[·] parameters",
                )),
                "ncp" => Some(ncp.map_or_else(|| NcpSolver::new(NcpOptions::default()), |n| n.solver.clone())),
                o => return Err(PyValueError::new_err(format!("contact: expected 'linear' or 'ncp', got '{o}'"))),
            };
        Ok(PyTensegrity {
            solver: FeatherstoneSolver { options: FeatherstoneOptions { joint_damping, integrator } },
            cache: Mutex::new(None),
            params,
            ncp,
            ncp_cache: Mutex::new(None),
        })
    }
    /// the contact model: "linear" (spec 003 §3.6) or "ncp" (exact Coulomb cone, spec 001)
    #[getter]
    fn contact(&self) -> &'static str {
        if self.ncp.is_some() {
            "ncp"
        } else {
            "linear"
        }
    }
    /// the constructor's (β, e, γ, μ, ε), or None (the model's, else the defaults)
    #[getter]
    fn contact_params(&self) -> Option<[f64; 5]> {
        self.params.map(|c| [c.beta, c.e, c.gamma, c.mu, c.eps])
    }
    /// the linear contact parameters (β, e, γ, μ, ε) this solver uses on `model` (None under contact="ncp")
    fn contact_params_for(&self, model: PyRef<'_, PyModel>) -> Option<[f64; 5]> {
        if self.ncp.is_some() {
            return None;
        }
        let c = self.params.or(model.inner.tensegrity_contact).unwrap_or_default();
        Some([c.beta, c.e, c.gamma, c.mu, c.eps])
    }
    /// the integrator of contact="linear": 'Euler', 'RK4' or 'implicitfast'
    #[getter]
    fn integrator(&self) -> &'static str {
        self.solver.options.integrator.name()
    }
    fn __repr__(&self) -> String {
        match self.contact_params() {
            Some(p) => format!("TensegritySolver(contact='{}', contact_params={p:?})", self.contact()),
            None => format!("TensegritySolver(contact='{}')", self.contact()),
        }
    }
});

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyXpbd>()?;
    m.add_class::<PyFeatherstone>()?;
    m.add_class::<PyNcp>()?;
    m.add_class::<PyLcp>()?;
    m.add_class::<PyTensegrity>()?;
    Ok(())
}
