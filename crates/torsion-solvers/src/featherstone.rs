//! Semi-implicit Euler in generalized coordinates (no contact yet):
//! (M + A + h D) a = u − c(q, v) − D v − K (q − q_ref), v' = v + h a, q' = q ⊕ h v' (on the manifold for ball /
//! free joints); A = armature, D = joint damping (implicit, as MuJoCo's Euler integrator: h D enters ABA as
//! armature, so stiff damping on light links stays stable), K = hinge/slide joint springs (explicit). Same `Solver` / `DiffSolver` contract as XPBD.
//! Derivatives: forward-mode duals of the same generic step (one Dual64 pass per input direction); the
//! VJP uses the same Jacobians (analytic Carpentier–Mansard derivatives are the planned fast path).
use crate::solver::{DiffSolver, Solver, SolverError, StepInfo, StepJacobians};
use nalgebra::{DMatrix, DVector};
use num_dual::Dual64;
use torsion_dynamics::joints::{difference, integrate};
use torsion_dynamics::{aba, DynData, DynModel};
use torsion_math::Scalar;
use torsion_model::{Control, JointType, Model, ParamSelection};

/// Generalized state: q (nq, layouts of `JointType::nq`) and v (nv).
#[derive(Clone, Debug, PartialEq)]
pub struct GenState {
    pub q: Vec<f64>,
    pub v: Vec<f64>,
}

impl GenState {
    /// At rest at the model's reference configuration (`Model::neutral_q`).
    pub fn rest(model: &Model) -> Self {
        GenState { q: model.neutral_q(), v: vec![0.0; model.nv()] }
    }
}

#[derive(Clone, Debug)]
pub struct FeatherstoneOptions {
    /// apply the model's viscous joint damping −d v (implicitly)
    pub joint_damping: bool,
}

impl Default for FeatherstoneOptions {
    fn default() -> Self {
        FeatherstoneOptions { joint_damping: true }
    }
}

#[derive(Clone, Debug, Default)]
pub struct FeatherstoneSolver {
    pub options: FeatherstoneOptions,
}

pub struct FeatherstoneWorkspace {
    dm: DynModel<f64>,
    data: DynData<f64>,
}

/// The step's inputs, for `step_vjp`.
pub struct FeatherstoneRecord {
    s: Option<GenState>,
    u: Vec<f64>,
    dt: f64,
}

/// Per-DoF passive terms of the step (from the model and the options).
#[derive(Clone, Debug)]
pub struct Passive {
    pub armature: Vec<f64>,
    pub damping: Vec<f64>,
    /// (q index, stiffness, rest position) of each sprung 1-DoF joint, by DoF
    pub spring: Vec<Option<(usize, f64, f64)>>,
}

impl Passive {
    pub fn from_model(model: &Model, damping: bool) -> Self {
        let nv = model.nv();
        let mut p = Passive { armature: vec![0.0; nv], damping: vec![0.0; nv], spring: vec![None; nv] };
        let (qs, vs) = (model.joint_q_start(), model.joint_v_start());
        for j in 0..model.joint_count() {
            let t = model.joint_type[j];
            for i in 0..t.dof() {
                p.armature[vs[j] + i] = model.joint_armature[j];
                if damping {
                    p.damping[vs[j] + i] = model.joint_damping[j];
                }
            }
            if t.dof() == 1 && model.joint_stiffness[j] != 0.0 {
                p.spring[vs[j]] = Some((qs[j], model.joint_stiffness[j], model.joint_springref[j]));
            }
        }
        p
    }
}

/// One step on any scalar; `u` has nv generalized forces. Sets `dm.armature` to A + h D.
pub fn step_generic<T: Scalar>(
    dm: &mut DynModel<T>,
    passive: &Passive,
    q: &[T],
    v: &[T],
    u: &[T],
    dt: f64,
    d: &mut DynData<T>,
) -> Result<(Vec<T>, Vec<T>), torsion_dynamics::DynError> {
    let tau: Vec<T> = (0..dm.nv)
        .map(|k| {
            let mut t = u[k] - v[k] * T::c(passive.damping[k]);
            if let Some((iq, kk, r)) = passive.spring[k] {
                t -= (q[iq] - T::c(r)) * T::c(kk);
            }
            t
        })
        .collect();
    for k in 0..dm.nv {
        dm.armature[k] = T::c(passive.armature[k] + dt * passive.damping[k]);
    }
    let acc = aba(dm, q, v, &tau, d)?;
    let h = T::c(dt);
    let v1: Vec<T> = (0..dm.nv).map(|k| v[k] + acc[k] * h).collect();
    let dq: Vec<T> = v1.iter().map(|x| *x * h).collect();
    Ok((integrate(dm, q, &dq), v1))
}

impl FeatherstoneSolver {
    fn damping(&self, model: &Model) -> Passive {
        Passive::from_model(model, self.options.joint_damping)
    }
    fn check(&self, model: &Model, s: &GenState, u: &Control, dt: f64) -> Result<(), SolverError> {
        let bad = |problem: String| SolverError::BadInput { solver: "featherstone", problem };
        if s.q.len() != model.nq() || s.v.len() != model.nv() {
            return Err(bad(format!(
                "state has nq {}, nv {}; model needs {}, {}",
                s.q.len(),
                s.v.len(),
                model.nq(),
                model.nv()
            )));
        }
        if u.joint_torque.len() != model.nv() {
            return Err(bad(format!(
                "control has {} entries; the featherstone solver takes one generalized force per DoF (nv = {})",
                u.joint_torque.len(),
                model.nv()
            )));
        }
        if !(dt > 0.0 && dt.is_finite()) {
            return Err(bad(format!("dt must be positive, got {dt}")));
        }
        Ok(())
    }
    fn dyn_err(e: torsion_dynamics::DynError) -> SolverError {
        SolverError::Unsupported { solver: "featherstone", problem: e.to_string() }
    }

    /// Dual-number Jacobian of the step w.r.t. (tangent state, controls, selected θ), in tangent coordinates.
    fn jacobian(
        &self,
        model: &Model,
        s: &GenState,
        u: &[f64],
        dt: f64,
        sel: &ParamSelection,
    ) -> Result<DMatrix<f64>, SolverError> {
        let table = model.param_table();
        let theta = model.param_vector();
        let nv = model.nv();
        let damping = self.damping(model);
        let mut dmf: DynModel<f64> = DynModel::from_model(model).map_err(Self::dyn_err)?;
        let mut df = DynData::new(&dmf);
        let (q1, _) = step_generic(&mut dmf, &damping, &s.q, &s.v, u, dt, &mut df).map_err(Self::dyn_err)?;
        let ncols = 2 * nv + nv + sel.len();
        let mut jac = DMatrix::zeros(2 * nv, ncols);
        let lift = |x: &[f64]| x.iter().map(|&v| Dual64::from(v)).collect::<Vec<_>>();
        let q0d = lift(&s.q);
        let q1d = lift(&q1);
        for col in 0..ncols {
            let mut th = lift(&theta);
            let mut vd = lift(&s.v);
            let mut ud = lift(u);
            let mut qd = q0d.clone();
            if col < nv {
                let mut e = vec![Dual64::from(0.0); nv];
                e[col].eps = 1.0;
                let dm0: DynModel<Dual64> = DynModel::build(model, &table, &th).map_err(Self::dyn_err)?;
                qd = integrate(&dm0, &q0d, &e);
            } else if col < 2 * nv {
                vd[col - nv].eps = 1.0;
            } else if col < 3 * nv {
                ud[col - 2 * nv].eps = 1.0;
            } else {
                th[sel.indices[col - 3 * nv]].eps = 1.0;
            }
            let mut dm: DynModel<Dual64> = DynModel::build(model, &table, &th).map_err(Self::dyn_err)?;
            let mut d = DynData::new(&dm);
            let (qn, vn) = step_generic(&mut dm, &damping, &qd, &vd, &ud, dt, &mut d).map_err(Self::dyn_err)?;
            let dq = difference(&dm, &q1d, &qn);
            for i in 0..nv {
                jac[(i, col)] = dq[i].eps;
                jac[(nv + i, col)] = vn[i].eps;
            }
        }
        Ok(jac)
    }
}

impl Solver for FeatherstoneSolver {
    type State = GenState;
    type Workspace = FeatherstoneWorkspace;
    type Record = FeatherstoneRecord;
    fn name(&self) -> &'static str {
        "featherstone"
    }
    fn workspace(&self, model: &Model) -> Result<FeatherstoneWorkspace, SolverError> {
        let dm = DynModel::from_model(model).map_err(Self::dyn_err)?;
        let data = DynData::new(&dm);
        Ok(FeatherstoneWorkspace { dm, data })
    }
    fn record(&self, _model: &Model) -> FeatherstoneRecord {
        FeatherstoneRecord { s: None, u: vec![], dt: 0.0 }
    }
    fn step(
        &self,
        model: &Model,
        s: &GenState,
        u: &Control,
        dt: f64,
        out: &mut GenState,
        ws: &mut FeatherstoneWorkspace,
        rec: Option<&mut FeatherstoneRecord>,
    ) -> Result<StepInfo, SolverError> {
        self.check(model, s, u, dt)?;
        // parameters may have changed since the workspace was built
        ws.dm = DynModel::from_model(model).map_err(Self::dyn_err)?;
        let (q, v) = step_generic(&mut ws.dm, &self.damping(model), &s.q, &s.v, &u.joint_torque, dt, &mut ws.data)
            .map_err(Self::dyn_err)?;
        if q.iter().chain(&v).any(|x| !x.is_finite()) {
            return Err(SolverError::NonFinite { solver: "featherstone", what: "(q or v)".into() });
        }
        out.q = q;
        out.v = v;
        if let Some(r) = rec {
            r.s = Some(s.clone());
            r.u = u.joint_torque.clone();
            r.dt = dt;
        }
        Ok(StepInfo::default())
    }
}

impl DiffSolver for FeatherstoneSolver {
    fn step_vjp(
        &self,
        model: &Model,
        rec: &FeatherstoneRecord,
        g_out: &GenState,
        g_s: &mut GenState,
        g_u: &mut [f64],
        g_theta: &mut [f64],
        _ws: &mut FeatherstoneWorkspace,
    ) -> Result<(), SolverError> {
        let s = rec.s.as_ref().ok_or_else(|| SolverError::BadInput {
            solver: "featherstone",
            problem: "step_vjp needs a record filled by step".into(),
        })?;
        let nv = model.nv();
        let sel = ParamSelection::all(model);
        let jac = self.jacobian(model, s, &rec.u, rec.dt, &sel)?;
        // output cotangent in tangent coordinates: the q part of g_out is ambient → tangent at the output
        let mut dm: DynModel<f64> = DynModel::from_model(model).map_err(Self::dyn_err)?;
        let mut d = DynData::new(&dm);
        let (q1, _) =
            step_generic(&mut dm, &self.damping(model), &s.q, &s.v, &rec.u, rec.dt, &mut d).map_err(Self::dyn_err)?;
        let gq_t = ambient_to_tangent(model, &q1, &g_out.q);
        let mut g = DVector::zeros(2 * nv);
        for i in 0..nv {
            g[i] = gq_t[i];
            g[nv + i] = g_out.v[i];
        }
        let r = jac.transpose() * g;
        // tangent cotangent of the input q → ambient (pseudo-inverse of the tangent map, consistent with
        // `grad_to_tangent`): ḡ_q = G (Gᵀ G)⁻¹ g_t, which for unit quaternions is G·4 g_t/… (see tangent_to_ambient)
        let gq_in = tangent_to_ambient(model, &s.q, &r.as_slice()[..nv]);
        for i in 0..g_s.q.len() {
            g_s.q[i] += gq_in[i];
        }
        for i in 0..nv {
            g_s.v[i] += r[nv + i];
            g_u[i] += r[2 * nv + i];
        }
        for (k, &i) in sel.indices.iter().enumerate() {
            g_theta[i] += r[3 * nv + k];
        }
        Ok(())
    }

    fn step_jacobians(
        &self,
        model: &Model,
        s: &GenState,
        u: &Control,
        dt: f64,
        sel: &ParamSelection,
    ) -> Result<StepJacobians, SolverError> {
        self.check(model, s, u, dt)?;
        let nv = model.nv();
        let jac = self.jacobian(model, s, &u.joint_torque, dt, sel)?;
        Ok(StepJacobians {
            a: jac.columns(0, 2 * nv).into_owned(),
            b: jac.columns(2 * nv, nv).into_owned(),
            c: jac.columns(3 * nv, sel.len()).into_owned(),
        })
    }

    fn tangent_dim(&self, model: &Model) -> usize {
        2 * model.nv()
    }
    fn retract(&self, model: &Model, s: &GenState, d: &[f64]) -> GenState {
        let nv = model.nv();
        let dm: DynModel<f64> = DynModel::from_model(model).expect("model accepted by the solver");
        GenState { q: integrate(&dm, &s.q, &d[..nv]), v: s.v.iter().zip(&d[nv..]).map(|(a, b)| a + b).collect() }
    }
    fn local_diff(&self, model: &Model, s: &GenState, other: &GenState) -> Vec<f64> {
        let dm: DynModel<f64> = DynModel::from_model(model).expect("model accepted by the solver");
        let mut d = difference(&dm, &s.q, &other.q);
        d.extend(other.v.iter().zip(&s.v).map(|(a, b)| a - b));
        d
    }
    fn grad_to_tangent(&self, model: &Model, s: &GenState, g: &GenState) -> Vec<f64> {
        let mut t = ambient_to_tangent(model, &s.q, &g.q);
        t.extend_from_slice(&g.v);
        t
    }
    fn zero_grad(&self, model: &Model) -> GenState {
        GenState { q: vec![0.0; model.nq()], v: vec![0.0; model.nv()] }
    }
}

/// ∂q/∂δ at δ = 0 for q ⊕ δ, per joint: 1 for 1-DoF joints; ½ q ⊗ [0, δ] for quaternions (right perturbation);
/// R for a free joint's position. Returns Gᵀ ḡ (ambient → tangent).
fn ambient_to_tangent(model: &Model, q: &[f64], g: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; model.nv()];
    let (qs, vs) = (model.joint_q_start(), model.joint_v_start());
    for j in 0..model.joint_count() {
        let (a, b) = (qs[j], vs[j]);
        match model.joint_type[j] {
            JointType::Revolute | JointType::Prismatic => out[b] = g[a],
            JointType::Fixed => {}
            JointType::Ball => out[b..b + 3].copy_from_slice(&quat_grad(&q[a..a + 4], &g[a..a + 4])),
            JointType::Free => {
                let r = torsion_math::Quat::new(q[a + 3], q[a + 4], q[a + 5], q[a + 6]);
                let gp = r.rotate_inv(&torsion_math::Vec3::new(g[a], g[a + 1], g[a + 2]));
                out[b..b + 3].copy_from_slice(&quat_grad(&q[a + 3..a + 7], &g[a + 3..a + 7]));
                out[b + 3..b + 6].copy_from_slice(gp.as_slice());
            }
        }
    }
    out
}

/// Gᵀ ḡ for G δ = ½ q ⊗ [0, δ].
fn quat_grad(q: &[f64], g: &[f64]) -> [f64; 3] {
    let q = torsion_math::Quat::new(q[0], q[1], q[2], q[3]);
    let gq = torsion_math::Quat::new(g[0], g[1], g[2], g[3]);
    // ½ q ⊗ [0, δ] = ½(−qv·δ, qw δ + qv × δ);  gᵀ(...) = ½ δ·(−gw qv + qw gv + gv × qv)
    let t = (-q.v * gq.w + gq.v * q.w + gq.v.cross(&q.v)) * 0.5;
    [t.x, t.y, t.z]
}

/// Tangent cotangent → ambient: G (GᵀG)⁻¹ g_t (GᵀG = ¼ I for unit quaternions, RᵀR = I for positions), so
/// that `ambient_to_tangent` of the result gives g_t back.
fn tangent_to_ambient(model: &Model, q: &[f64], gt: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; model.nq()];
    let (qs, vs) = (model.joint_q_start(), model.joint_v_start());
    let push = |q: &[f64], d: &[f64]| {
        let qq = torsion_math::Quat::new(q[0], q[1], q[2], q[3]);
        let r = qq.mul(&torsion_math::Quat::new(0.0, d[0], d[1], d[2])).scale(2.0);
        r.to_array()
    };
    for j in 0..model.joint_count() {
        let (a, b) = (qs[j], vs[j]);
        match model.joint_type[j] {
            JointType::Revolute | JointType::Prismatic => out[a] = gt[b],
            JointType::Fixed => {}
            JointType::Ball => out[a..a + 4].copy_from_slice(&push(&q[a..a + 4], &gt[b..b + 3])),
            JointType::Free => {
                let r = torsion_math::Quat::new(q[a + 3], q[a + 4], q[a + 5], q[a + 6]);
                let gp = r.rotate(&torsion_math::Vec3::new(gt[b + 3], gt[b + 4], gt[b + 5]));
                out[a..a + 3].copy_from_slice(gp.as_slice());
                out[a + 3..a + 7].copy_from_slice(&push(&q[a + 3..a + 7], &gt[b..b + 3]));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use torsion_diff::{fd_jacobian, rel_err};
    use torsion_model::builder::two_link_arm;

    /// Transition Jacobians against central differences (the free/ball/prismatic tree and the Baxter rollout
    /// are in tests/featherstone.rs).
    #[test]
    fn step_jacobians_match_central_differences() {
        let mut m = two_link_arm(0.8, 0.5, 1.0, torsion_math::Vec3::new(0.0, -9.8, 0.0), 0.01).unwrap();
        m.joint_damping = vec![0.3, 0.1];
        let solver = FeatherstoneSolver::default();
        let s0 = GenState { q: vec![0.4, -0.7], v: vec![1.0, -0.5] };
        let u = Control::from_torques(&[0.7, -0.3]);
        let jac = solver.step_jacobians(&m, &s0, &u, 0.01, &ParamSelection::all(&m)).unwrap();
        let next = |s: &GenState, uu: &[f64]| {
            let mut o = s.clone();
            let mut ws = solver.workspace(&m).unwrap();
            solver.step(&m, s, &Control::from_torques(uu), 0.01, &mut o, &mut ws, None).unwrap();
            o
        };
        let base = next(&s0, &u.joint_torque);
        let fa =
            fd_jacobian(|d| solver.local_diff(&m, &base, &next(&solver.retract(&m, &s0, d), &u.joint_torque)), 4, 1e-6);
        let fb = fd_jacobian(|d| solver.local_diff(&m, &base, &next(&s0, &[0.7 + d[0], -0.3 + d[1]])), 2, 1e-6);
        assert!(rel_err(jac.a.as_slice(), fa.as_slice()) < 1e-7, "A");
        assert!(rel_err(jac.b.as_slice(), fb.as_slice()) < 1e-7, "B");
    }
}
