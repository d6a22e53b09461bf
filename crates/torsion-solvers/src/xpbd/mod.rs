//! XPBD / PBD articulated rigid bodies in maximal coordinates (spec 000): one body per link, hinge joints as
//! positional + angular constraints with limits, Gauss–Seidel (default) or Jacobi projection, optional XPBD
//! compliance and substeps. Differentiated exactly as executed (all iterations): reverse mode by hand-written
//! adjoints beside each kernel, forward mode by running the same generic step on dual numbers.
pub mod angles;
pub mod data;
pub mod joints;
pub mod predict;
pub mod spring;
pub mod step;

use crate::solver::{check_grad_sizes, DiffSolver, Solver, SolverError, StepInfo, StepJacobians};
use data::XpbdData;
use num_dual::Dual64;
use step::{Scratch, XpbdRecord};
use torsion_math::quat::{tangent_pull, tangent_push};
use torsion_math::{Quat, Scalar, Vec3};
use torsion_model::state::TANGENT_PER_BODY;
use torsion_model::{Control, JointType, MaximalState, Model, ParamSelection, ParamTable};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ordering {
    /// sequential projections, corrections applied at once (spec 000 §6.1, recommended)
    GaussSeidel,
    /// corrections of one iteration summed per body and scaled by relaxation / (joints touching the body)
    Jacobi,
}

#[derive(Clone, Debug)]
pub struct XpbdOptions {
    /// projection iterations per (sub)step (paper: 30)
    pub iterations: usize,
    /// compliance α (m/N, rad/(N·m)); α̃ = α/h². 0 = the paper's rigid PBD
    pub compliance: f64,
    /// substeps per step (paper: 1)
    pub substeps: usize,
    pub ordering: Ordering,
    /// Jacobi relaxation factor ω_r ∈ (0, 1]
    pub jacobi_relaxation: f64,
    /// enforce joint limits (spec 000 §3.5)
    pub limits: bool,
    /// apply the model's joint springs (spec 000 §3.11)
    pub springs: bool,
}

impl Default for XpbdOptions {
    fn default() -> Self {
        XpbdOptions {
            iterations: 30,
            compliance: 0.0,
            substeps: 1,
            ordering: Ordering::GaussSeidel,
            jacobi_relaxation: 1.0,
            limits: true,
            springs: true,
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct XpbdSolver {
    pub options: XpbdOptions,
}

/// Solver scratch (allocated once by `workspace`).
pub struct XpbdWorkspace {
    pub(crate) table: ParamTable,
    pub(crate) data: XpbdData<f64>,
    pub(crate) scratch: Scratch<f64>,
    pub(crate) grad: step::VjpScratch,
    /// ∂L/∂θ over the whole table (the adjoint's), gathered into the selected entries by `step_vjp`
    pub(crate) g_theta_full: Vec<f64>,
    /// the dual-number buffers of `step_jacobians_into`
    pub(crate) tangent: TangentScratch,
}

/// The buffers of the forward-mode Jacobians (one Dual64 pass of the generic step per direction), sized by the
/// model once, so `step_jacobians_into` allocates nothing (design.md §7).
pub(crate) struct TangentScratch {
    dyn_bodies: Vec<usize>,
    /// the base inputs lifted (zero tangents) and the seeded ones of one direction
    s0: MaximalState<Dual64>,
    sd: MaximalState<Dual64>,
    out: MaximalState<Dual64>,
    u: Vec<Dual64>,
    theta: Vec<Dual64>,
    data: XpbdData<Dual64>,
    scratch: Scratch<Dual64>,
}

impl TangentScratch {
    fn new(model: &Model, table: &ParamTable) -> Self {
        let s0 = MaximalState::<f64>::zeros(model.body_count()).lift::<Dual64>();
        let theta = vec![Dual64::from(0.0); table.len()];
        TangentScratch {
            dyn_bodies: model.dynamic_bodies(),
            sd: s0.clone(),
            out: s0.clone(),
            s0,
            u: vec![Dual64::from(0.0); model.joint_count()],
            data: XpbdData::build(model, table, &theta),
            theta,
            scratch: Scratch::new(model),
        }
    }
}

/// `dst` ← `src` element by element (no allocation: the shapes match by construction).
fn copy_state(dst: &mut MaximalState<Dual64>, src: &MaximalState<Dual64>) {
    dst.x.copy_from_slice(&src.x);
    dst.q.copy_from_slice(&src.q);
    dst.v.copy_from_slice(&src.v);
    dst.w.copy_from_slice(&src.w);
}

impl XpbdSolver {
    pub fn new(options: XpbdOptions) -> Self {
        Self { options }
    }

    fn check(&self, model: &Model) -> Result<(), SolverError> {
        if self.options.iterations == 0 && model.joint_count() > 0 {
            return Err(SolverError::BadInput { solver: "xpbd", problem: "iterations must be ≥ 1".into() });
        }
        if self.options.substeps == 0 {
            return Err(SolverError::BadInput { solver: "xpbd", problem: "substeps must be ≥ 1".into() });
        }
        if !(self.options.compliance >= 0.0 && self.options.compliance.is_finite()) {
            return Err(SolverError::BadInput { solver: "xpbd", problem: "compliance must be ≥ 0".into() });
        }
        for k in (0..model.body_count()).filter(|&k| !model.body_fixed[k]) {
            if model.body_mass[k] <= 0.0 {
                return Err(SolverError::Unsupported {
                    solver: "xpbd",
                    problem: format!(
                        "body '{}' has zero mass: XPBD needs a positive mass on every moving body",
                        model.body_name[k]
                    ),
                });
            }
        }
        for j in 0..model.joint_count() {
            match model.joint_type[j] {
                JointType::Revolute | JointType::Ball => {}
                t => {
                    return Err(SolverError::Unsupported {
                        solver: "xpbd",
                        problem: format!(
                            "joint '{}' is {:?}: the XPBD solver implements hinge (and ball) joints as in spec 000",
                            model.joint_name[j], t
                        ),
                    })
                }
            }
            if model.body_fixed[model.joint_child[j]] {
                return Err(SolverError::Unsupported {
                    solver: "xpbd",
                    problem: format!("joint '{}' has a fixed child body", model.joint_name[j]),
                });
            }
        }
        Ok(())
    }

    fn check_inputs(&self, model: &Model, s: &MaximalState, u: &Control, dt: f64) -> Result<(), SolverError> {
        let nb = model.body_count();
        if s.x.len() != nb || s.q.len() != nb || s.v.len() != nb || s.w.len() != nb {
            return Err(SolverError::BadInput {
                solver: "xpbd",
                problem: format!("state has {} bodies, model has {nb}", s.x.len()),
            });
        }
        if !u.body_wrench.is_empty() {
            return Err(SolverError::Unsupported {
                solver: "xpbd",
                problem: "external body wrenches (`Control::body_wrench`): use a generalized-coordinate solver \
                          (featherstone, ncp, lcp)"
                    .into(),
            });
        }
        if u.joint_torque.len() != model.joint_count() {
            return Err(SolverError::BadInput {
                solver: "xpbd",
                problem: format!(
                    "control has {} joint torques, model has {} joints",
                    u.joint_torque.len(),
                    model.joint_count()
                ),
            });
        }
        if !(dt > 0.0 && dt.is_finite()) {
            return Err(SolverError::BadInput { solver: "xpbd", problem: format!("dt must be positive, got {dt}") });
        }
        Ok(())
    }

    /// Run the generic step on any scalar type (f64 or duals) with a given parameter vector; no record.
    pub fn step_generic<T: Scalar>(
        &self,
        model: &Model,
        table: &ParamTable,
        theta: &[T],
        s: &MaximalState<T>,
        u: &[T],
        dt: f64,
    ) -> MaximalState<T> {
        let d = XpbdData::build(model, table, theta);
        let mut scratch = Scratch::new(model);
        let mut out = s.clone();
        step::step(model, &self.options, &d, s, u, dt, &mut out, &mut scratch, None);
        out
    }

    /// Body poses → joint angles (spec 000 §3.6) for every hinge, in joint order (0 for ball joints).
    pub fn joint_angles<T: Scalar>(&self, model: &Model, s: &MaximalState<T>) -> Vec<T> {
        (0..model.joint_count())
            .map(|j| {
                if model.joint_type[j] != JointType::Revolute {
                    return T::zero();
                }
                let b = torsion_math::scalar::cv(&model.joint_axis_parent(j));
                let (np, nc) = model.joint_refs(j);
                angles::hinge_angle(
                    &s.q[model.joint_parent[j]],
                    &s.q[model.joint_child[j]],
                    &b,
                    &torsion_math::scalar::cv(&np),
                    &torsion_math::scalar::cv(&nc),
                )
            })
            .collect()
    }

    /// Adjoint of [`XpbdSolver::joint_angles`]: accumulate Σ_j ḡ_j ∂φ_j/∂q into `g_state.q`.
    pub fn joint_angles_vjp(&self, model: &Model, s: &MaximalState, g_angles: &[f64], g_state: &mut MaximalState) {
        for j in 0..model.joint_count() {
            if model.joint_type[j] != JointType::Revolute || g_angles[j] == 0.0 {
                continue;
            }
            let (p, c) = (model.joint_parent[j], model.joint_child[j]);
            let (np, nc) = model.joint_refs(j);
            let (mut gqa, mut gqb) = (g_state.q[p], g_state.q[c]);
            angles::hinge_angle_vjp(
                &s.q[p],
                &s.q[c],
                &model.joint_axis_parent(j),
                &np,
                &nc,
                g_angles[j],
                &mut gqa,
                &mut gqb,
            );
            g_state.q[p] = gqa;
            g_state.q[c] = gqb;
        }
    }

    /// Joint constraint violations of a state: (max ‖c_pos‖, max ‖b_w × a_w‖) over all joints.
    pub fn violations(&self, model: &Model, s: &MaximalState) -> (f64, f64) {
        step::violations(model, s)
    }
}

impl Solver for XpbdSolver {
    type State = MaximalState;
    type Workspace = XpbdWorkspace;
    type Record = XpbdRecord;
    fn name(&self) -> &'static str {
        "xpbd"
    }
    fn workspace(&self, model: &Model) -> Result<XpbdWorkspace, SolverError> {
        self.check(model)?;
        let table = model.param_table();
        let theta = model.param_vector();
        Ok(XpbdWorkspace {
            data: XpbdData::build(model, &table, &theta),
            tangent: TangentScratch::new(model, &table),
            table,
            scratch: Scratch::new(model),
            grad: step::VjpScratch::new(model),
            g_theta_full: vec![0.0; theta.len()],
        })
    }
    fn record(&self, model: &Model) -> XpbdRecord {
        XpbdRecord::new(model, &self.options)
    }
    fn step(
        &self,
        model: &Model,
        s: &MaximalState,
        u: &Control,
        dt: f64,
        out: &mut MaximalState,
        ws: &mut XpbdWorkspace,
        rec: Option<&mut XpbdRecord>,
    ) -> Result<StepInfo, SolverError> {
        self.check_inputs(model, s, u, dt)?;
        // refresh the derived data from the model's current parameters (no allocation)
        ws.data.refresh(model, &ws.table);
        let info = step::step(model, &self.options, &ws.data, s, &u.joint_torque, dt, out, &mut ws.scratch, rec);
        for k in 0..out.x.len() {
            if !(out.x[k].iter().all(|v| v.is_finite()) && out.w[k].iter().all(|v| v.is_finite())) {
                return Err(SolverError::NonFinite {
                    solver: "xpbd",
                    what: format!("(body '{}')", model.body_name[k]),
                });
            }
        }
        Ok(info)
    }
}

impl DiffSolver for XpbdSolver {
    #[allow(clippy::too_many_arguments)]
    fn step_vjp(
        &self,
        model: &Model,
        rec: &XpbdRecord,
        g_out: &MaximalState,
        g_s: &mut MaximalState,
        g_u: &mut [f64],
        sel: &ParamSelection,
        g_theta: &mut [f64],
        ws: &mut XpbdWorkspace,
    ) -> Result<(), SolverError> {
        check_grad_sizes("xpbd", model.joint_count(), g_u, sel, g_theta)?;
        if ws.g_theta_full.len() != ws.table.len() || sel.indices.iter().any(|&i| i >= ws.table.len()) {
            return Err(SolverError::BadInput {
                solver: "xpbd",
                problem: "the parameter selection or workspace does not match the model".into(),
            });
        }
        ws.data.refresh(model, &ws.table);
        // the hand-written adjoint covers the whole table at the cost of one reverse pass
        ws.g_theta_full.fill(0.0);
        step::step_vjp(
            model,
            &self.options,
            &ws.data,
            &ws.table,
            rec,
            g_out,
            g_s,
            g_u,
            &mut ws.g_theta_full,
            &mut ws.grad,
        );
        for (g, &i) in g_theta.iter_mut().zip(&sel.indices) {
            *g += ws.g_theta_full[i];
        }
        Ok(())
    }

    /// One Dual64 forward pass per input direction (tangent state, each control, each selected parameter).
    #[allow(clippy::too_many_arguments)]
    fn step_jacobians_into(
        &self,
        model: &Model,
        s: &MaximalState,
        u: &Control,
        dt: f64,
        sel: &ParamSelection,
        ws: &mut XpbdWorkspace,
        out: &mut StepJacobians,
    ) -> Result<(), SolverError> {
        self.check(model)?;
        self.check_inputs(model, s, u, dt)?;
        let XpbdWorkspace { table, tangent: ts, .. } = ws;
        if ts.theta.len() != table.len() || ts.s0.x.len() != s.x.len() || sel.indices.iter().any(|&i| i >= table.len())
        {
            return Err(SolverError::BadInput {
                solver: "xpbd",
                problem: "the parameter selection or workspace does not match the model".into(),
            });
        }
        let n = ts.dyn_bodies.len() * TANGENT_PER_BODY;
        let nu = model.joint_count();
        let ns = sel.len();
        if out.a.shape() != (n, n) || out.b.shape() != (n, nu) || out.c.shape() != (n, ns) {
            *out = StepJacobians::zeros(n, nu, ns);
        }
        // the base inputs, lifted with zero tangents
        let lift3 = |v: &Vec3| Vec3::new(Dual64::from(v.x), Dual64::from(v.y), Dual64::from(v.z));
        for k in 0..s.x.len() {
            ts.s0.x[k] = lift3(&s.x[k]);
            ts.s0.v[k] = lift3(&s.v[k]);
            ts.s0.w[k] = lift3(&s.w[k]);
            let q = &s.q[k];
            ts.s0.q[k] = Quat::new(Dual64::from(q.w), Dual64::from(q.v.x), Dual64::from(q.v.y), Dual64::from(q.v.z));
        }
        for col in 0..n + nu + ns {
            copy_state(&mut ts.sd, &ts.s0);
            for (d, &v) in ts.u.iter_mut().zip(&u.joint_torque) {
                *d = Dual64::from(v);
            }
            for (d, &k) in ts.theta.iter_mut().zip(&table.kinds) {
                *d = Dual64::from(model.param_get(k));
            }
            let (sd, ud, td) = (&mut ts.sd, &mut ts.u, &mut ts.theta);
            // the column of `out` this direction fills
            let (jac, c) = if col < n {
                (&mut out.a, col)
            } else if col < n + nu {
                (&mut out.b, col - n)
            } else {
                (&mut out.c, col - n - nu)
            };
            if col < n {
                let (bi, e) = (col / TANGENT_PER_BODY, col % TANGENT_PER_BODY);
                let k = ts.dyn_bodies[bi];
                let mut unit = Vec3::zeros();
                unit[e % 3] = 1.0;
                match e / 3 {
                    0 => sd.x[k][e % 3].eps = 1.0,
                    1 => {
                        let qd = tangent_push(&s.q[k], &unit);
                        for (i, c) in qd.to_array().iter().enumerate() {
                            set_eps_q(&mut sd.q[k], i, *c);
                        }
                    }
                    2 => sd.v[k][e % 3].eps = 1.0,
                    _ => sd.w[k][e % 3].eps = 1.0,
                }
            } else if col < n + nu {
                ud[col - n].eps = 1.0;
            } else if table.kinds[sel.indices[col - n - nu]].is_contact_material() {
                jac.column_mut(c).fill(0.0); // not read by XPBD: a zero column
                continue;
            } else {
                td[sel.indices[col - n - nu]].eps = 1.0;
            }
            // the generic step on duals (as `step_generic`, in the workspace's buffers)
            ts.data.fill(model, table, td);
            copy_state(&mut ts.out, sd);
            step::step(model, &self.options, &ts.data, sd, ud, dt, &mut ts.out, &mut ts.scratch, None);
            let o = &ts.out;
            for (bi, &k) in ts.dyn_bodies.iter().enumerate() {
                let r = bi * TANGENT_PER_BODY;
                let qre = Quat::new(o.q[k].w.re, o.q[k].v.x.re, o.q[k].v.y.re, o.q[k].v.z.re);
                let qdot = Quat::new(o.q[k].w.eps, o.q[k].v.x.eps, o.q[k].v.y.eps, o.q[k].v.z.eps);
                let dq = tangent_pull(&qre, &qdot);
                for i in 0..3 {
                    jac[(r + i, c)] = o.x[k][i].eps;
                    jac[(r + 3 + i, c)] = dq[i];
                    jac[(r + 6 + i, c)] = o.v[k][i].eps;
                    jac[(r + 9 + i, c)] = o.w[k][i].eps;
                }
            }
        }
        Ok(())
    }
}

fn set_eps_q(q: &mut Quat<Dual64>, i: usize, e: f64) {
    match i {
        0 => q.w.eps = e,
        1 => q.v.x.eps = e,
        2 => q.v.y.eps = e,
        _ => q.v.z.eps = e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use torsion_diff::{fd_jacobian, gradcheck, rel_err};
    #[test]
    fn step_jacobians_and_joint_angle_vjp_match_central_differences() {
        // thick links, out-of-plane spin: angular constraints active (planar states sit on the ‖c‖ = 0
        // non-smooth point)
        let (m, s0) = torsion_model::builder::spinning_thick_arm();
        let solver = XpbdSolver::default();
        let u = Control::from_torques(&[0.7, -0.3]);
        let jac = solver.step_jacobians(&m, &s0, &u, 0.01, &ParamSelection::none()).unwrap();
        let next = |s: &MaximalState, uu: &[f64]| {
            let mut o = s.clone();
            let mut ws = solver.workspace(&m).unwrap();
            solver.step(&m, s, &Control::from_torques(uu), 0.01, &mut o, &mut ws, None).unwrap();
            o
        };
        let base = next(&s0, &u.joint_torque);
        // strongly curved: FD converges as h² (7e-4, 1.4e-5, 1.4e-7 at h = 1e-5, 1e-6, 1e-7)
        let fa = fd_jacobian(
            |d| solver.local_diff(&m, &base, &next(&solver.retract(&m, &s0, d), &u.joint_torque)),
            24,
            1e-7,
        );
        let fb = fd_jacobian(|d| solver.local_diff(&m, &base, &next(&s0, &[0.7 + d[0], -0.3 + d[1]])), 2, 1e-6);
        let (ea, eb) = (rel_err(jac.a.as_slice(), fa.as_slice()), rel_err(jac.b.as_slice(), fb.as_slice()));
        assert!(ea < 1e-6 && eb < 1e-6, "A {ea:e} B {eb:e}");
        // joint angles
        let mut g = solver.zero_grad(&m);
        solver.joint_angles_vjp(&m, &s0, &[0.6, -1.1], &mut g);
        let c = gradcheck(
            |d| {
                let a = solver.joint_angles(&m, &solver.retract(&m, &s0, d));
                0.6 * a[0] - 1.1 * a[1]
            },
            &solver.grad_to_tangent(&m, &s0, &g),
            1e-6,
        );
        assert!(c.max_rel_err < 1e-7, "{:e}", c.max_rel_err);
    }
}
