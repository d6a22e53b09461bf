//! Machinery shared by the steppers that work in (q, v) (Featherstone, contact), so that no stepper borrows it
//! from a sibling (issue 13): the dynamics parameters they read, the tangent of a dual-number configuration, and
//! Jᵀḡ for a step's transition Jacobians. Their state space, [`GenState`] with its contact warm start and its
//! manifold maps (`StateSpace`), lives in `torsion-model` beside `MaximalState` and is re-exported here.
use crate::solver::{SolverError, StepJacobians};
use nalgebra::DMatrix;
use num_dual::Dual64;
use torsion_dynamics::external::wrench_cotangent_into;
use torsion_dynamics::{forward_kinematics, DynData, DynModel};
use torsion_model::joint_maps::{ambient_to_tangent_into, tangent_to_ambient_into};
use torsion_model::params::ParamKind;
pub use torsion_model::{ContactWarmStart, GenState, WarmImpulse};
use torsion_model::{JointType, Model, ParamTable};

/// The parameters `DynModel::build` reads (masses, inertias, joint anchors), in one fixed order: each
/// with its kind and current value, read straight from the model's fields. The one walker behind the
/// stepper's parameter table and its per-step refresh.
pub(crate) fn dyn_params(model: &Model, mut f: impl FnMut(ParamKind, f64)) {
    for b in 0..model.body_count() {
        if !model.body_fixed[b] {
            f(ParamKind::BodyMass(b), model.body_mass[b]);
            for (i, &(r, c)) in torsion_model::params::INERTIA_IDX.iter().enumerate() {
                f(ParamKind::BodyInertia(b, i), model.body_inertia[b][(r, c)]);
            }
        }
    }
    for j in 0..model.joint_count() {
        for a in 0..3 {
            f(ParamKind::AnchorParent(j, a), model.joint_anchor_parent[j][a]);
        }
        for a in 0..3 {
            f(ParamKind::AnchorChild(j, a), model.joint_anchor_child[j][a]);
        }
    }
}

/// [`dyn_params`]' kinds as a table (without names: the model's full `param_table` formats a name per entry,
/// which the stepper does not need).
pub(crate) fn dyn_param_table(model: &Model) -> ParamTable {
    let mut kinds = Vec::with_capacity(7 * model.body_count() + 6 * model.joint_count());
    dyn_params(model, |k, _| kinds.push(k));
    ParamTable { names: vec![], kinds }
}

/// A stepper's f64 dynamics model kept at the model's current parameter values: θ (`dyn_params`) is compared at
/// every `refresh` and the model rebuilt only when it changed (allocates then only); a model with another
/// parameter count is an error. The one θ comparison of Featherstone and the contact steppers, each calling it at
/// each step, so a `params_set` after their workspace was built reaches the step (issue 13).
pub(crate) struct DynCache {
    theta: Vec<f64>,
}

impl DynCache {
    /// The cache for the model's current values (its dynamics model: `DynModel::from_model`).
    pub(crate) fn new(model: &Model) -> Self {
        let mut theta = vec![];
        dyn_params(model, |_, v| theta.push(v));
        DynCache { theta }
    }

    /// Rebuild `dm` if the model's parameters changed since the last call (gravity is the caller's); returns
    /// whether it did.
    pub(crate) fn refresh(
        &mut self,
        model: &Model,
        dm: &mut DynModel<f64>,
    ) -> Result<bool, torsion_dynamics::DynError> {
        let (mut changed, mut i, mut len) = (false, 0, 0);
        let theta = &mut self.theta;
        dyn_params(model, |_, v| {
            if i < theta.len() {
                changed |= theta[i] != v;
                theta[i] = v;
            }
            i += 1;
            len += 1;
        });
        if len != self.theta.len() {
            return Err(torsion_dynamics::DynError::Shape {
                what: "model parameters (the workspace was built for another model)",
                got: len,
                expected: self.theta.len(),
            });
        }
        if changed {
            let gravity = dm.gravity;
            *dm = DynModel::from_model(model)?;
            dm.gravity = gravity;
        }
        Ok(changed)
    }
}

/// The f64 dynamics model at the model's current values, without the name table.
pub(crate) fn dyn_model_f64(
    model: &Model,
) -> Result<(DynModel<f64>, ParamTable, Vec<f64>), torsion_dynamics::DynError> {
    let table = dyn_param_table(model);
    let theta: Vec<f64> = table.kinds.iter().map(|&k| model.param_get(k)).collect();
    let dm = DynModel::build(model, &table, &theta)?;
    Ok((dm, table, theta))
}

/// The tangent (at q1, right perturbation) of the first-order variation carried by the dual parts of `x`
/// (x.re = q1): rotation 2 vec(q̄1 ⊗ ẋ), free-joint translation R1ᵀ ṗ (the first-order `difference`).
pub(crate) fn dual_tangent(kind: JointType, q1: &[f64], x: &[Dual64]) -> [f64; 6] {
    let rot = |r: &[f64], dr: &[Dual64]| {
        let r1 = torsion_math::Quat::new(r[0], r[1], r[2], r[3]);
        let dq = torsion_math::Quat::new(dr[0].eps, dr[1].eps, dr[2].eps, dr[3].eps);
        r1.conj().mul(&dq).v * 2.0
    };
    let mut t = [0.0; 6];
    match kind {
        JointType::Ball => t[..3].copy_from_slice(rot(q1, x).as_slice()),
        JointType::Free => {
            t[..3].copy_from_slice(rot(&q1[3..7], &x[3..7]).as_slice());
            let r1 = torsion_math::Quat::new(q1[3], q1[4], q1[5], q1[6]);
            let dp = r1.rotate_inv(&torsion_math::Vec3::new(x[0].eps, x[1].eps, x[2].eps));
            t[3..6].copy_from_slice(dp.as_slice());
        }
        JointType::Revolute | JointType::Prismatic => t[0] = x[0].eps,
        JointType::Fixed => {}
    }
    t
}

/// The buffers of [`transposed_jacobian_product_with`].
#[derive(Debug, Default)]
pub(crate) struct ProductScratch {
    gq_t: Vec<f64>,
    g: Vec<f64>,
    ra: Vec<f64>,
    rb: Vec<f64>,
    rc: Vec<f64>,
    gq_in: Vec<f64>,
}

/// ḡ_in += Jᵀ ḡ_out for a generalized-coordinate step with transition Jacobians (A, B, C) in tangent
/// coordinates: the output cotangent's q part (ambient at q1) is taken to the tangent space, and the input's back
/// to ambient at q (consistent with `grad_to_tangent`). Shared by the Featherstone and the contact steppers. `sc`:
/// the caller's buffers (a workspace's, or `ProductScratch::default()` for a one-off product): no allocation
/// once they have grown.
#[allow(clippy::too_many_arguments)]
pub(crate) fn transposed_jacobian_product_with(
    model: &Model,
    q: &[f64],
    q1: &[f64],
    jac: &StepJacobians,
    g_out: &GenState,
    g_s: &mut GenState,
    g_u: &mut [f64],
    g_theta: &mut [f64],
    sc: &mut ProductScratch,
) {
    let nv = model.nv();
    sc.gq_t.resize(nv, 0.0);
    ambient_to_tangent_into(model, q1, &g_out.q, &mut sc.gq_t);
    sc.g.clear();
    sc.g.extend(sc.gq_t.iter().chain(&g_out.v).chain(&g_out.act).copied());
    // Mᵀ g, each entry summed in row order (as nalgebra's gemv of the transposed matrix)
    let tmul = |m: &DMatrix<f64>, g: &[f64], out: &mut Vec<f64>| {
        out.clear();
        out.extend((0..m.ncols()).map(|c| {
            (0..m.nrows()).fold(0.0, |acc, j| if j == 0 { m[(j, c)] * g[j] } else { acc + m[(j, c)] * g[j] })
        }));
    };
    tmul(&jac.a, &sc.g, &mut sc.ra);
    tmul(&jac.b, &sc.g, &mut sc.rb);
    tmul(&jac.c, &sc.g, &mut sc.rc);
    add_input_cotangents(model, q, &sc.ra, &sc.rb, &sc.rc, g_s, g_u, g_theta, &mut sc.gq_in);
}

/// ḡ_in += the row products ḡᵀA (`ra`: the state's tangent q, v, then the activations), ḡᵀB (`rb`), ḡᵀC (`rc`)
/// of a step, the q part taken back to ambient at q (`gq_in`: scratch). The tail of
/// [`transposed_jacobian_product_with`]; the contact stepper's reverse mode computes the row products directly.
#[allow(clippy::too_many_arguments)]
pub(crate) fn add_input_cotangents(
    model: &Model,
    q: &[f64],
    ra: &[f64],
    rb: &[f64],
    rc: &[f64],
    g_s: &mut GenState,
    g_u: &mut [f64],
    g_theta: &mut [f64],
    gq_in: &mut Vec<f64>,
) {
    let nv = model.nv();
    gq_in.resize(q.len(), 0.0);
    tangent_to_ambient_into(model, q, &ra[..nv], gq_in);
    for (a, b) in g_s.q.iter_mut().zip(gq_in.iter()) {
        *a += b;
    }
    for i in 0..nv {
        g_s.v[i] += ra[nv + i];
    }
    // the activations (rows / columns after v) and the actuator controls (after the nv generalized forces)
    for (i, a) in g_s.act.iter_mut().enumerate() {
        *a += ra[2 * nv + i];
    }
    for (i, x) in rb.iter().enumerate() {
        g_u[i] += x;
    }
    for (g, r) in g_theta.iter_mut().zip(rc.iter()) {
        *g += r;
    }
}

/// A contact stepper's input state against the model before detection (its sizes in full: `check_sizes`): an
/// error naming `solver` when q has not the model's nq entries.
pub(crate) fn check_nq(solver: &'static str, model: &Model, s: &GenState) -> Result<(), SolverError> {
    if s.q.len() != model.nq() {
        return Err(SolverError::BadInput {
            solver,
            problem: format!("state has nq {}, the model needs {}", s.q.len(), model.nq()),
        });
    }
    Ok(())
}

/// What a contact stepper's `step` records for `step_vjp` and `wrench_vjp` (ncp and lcp): the input state, the
/// generalized forces the step took (u + the body wrenches' Σ J_bᵀ w_b), the wrenches and the time step. Saved in
/// its own buffers: no allocation once they have grown.
#[derive(Clone, Debug, Default)]
pub struct StepInput {
    s: Option<GenState>,
    pub(crate) u: Vec<f64>,
    pub(crate) wrench: Vec<f64>,
    pub(crate) dt: f64,
}

impl StepInput {
    /// Save the step's input state `s`, its generalized forces `u`, the body wrenches and `dt`.
    pub(crate) fn save(&mut self, s: &GenState, u: &[f64], wrench: &[f64], dt: f64) {
        match &mut self.s {
            Some(x) => x.copy_from(s),
            None => self.s = Some(s.clone()),
        }
        self.u.clear();
        self.u.extend_from_slice(u);
        self.wrench.clear();
        self.wrench.extend_from_slice(wrench);
        self.dt = dt;
    }

    /// The recorded input state (an error naming `solver` when `step` has not filled the record).
    pub(crate) fn state(&self, solver: &'static str) -> Result<&GenState, SolverError> {
        self.s
            .as_ref()
            .ok_or_else(|| SolverError::BadInput { solver, problem: "step_vjp needs a record filled by step".into() })
    }
}

/// `DiffSolver::wrench_vjp` of the generalized-coordinate steppers: ḡ_w += J_b(q) ḡ_u (the first nv entries of
/// the control cotangent: the generalized forces) at the recorded q, with the stepper's f64 dynamics buffers.
pub(crate) fn wrench_vjp(
    solver: &'static str,
    dm: &DynModel<f64>,
    d: &mut DynData<f64>,
    q: &[f64],
    g_u: &[f64],
    g_w: &mut [f64],
) -> Result<(), SolverError> {
    let bad = |problem: String| SolverError::BadInput { solver, problem };
    if q.len() != dm.nq || g_u.len() < dm.nv {
        return Err(bad(format!(
            "wrench_vjp: q has {} entries (needs {}), g_u {} (needs ≥ {})",
            q.len(),
            dm.nq,
            g_u.len(),
            dm.nv
        )));
    }
    forward_kinematics(dm, q, d);
    wrench_cotangent_into(dm, d, &g_u[..dm.nv], g_w).map_err(|e| bad(e.to_string()))
}

/// External body wrenches in a stepper whose generalized forces u enter additively (the contact steppers; issue 13
/// item 6): the step takes u_eff = u + Σ_b J_b(q)ᵀ w_b, so ∂s'/∂q gains B ∂τ_ext/∂q and ḡ_w = J_b ḡ_u
/// ([`wrench_vjp`]). Buffers grow on first use, then nothing is allocated.
#[derive(Default)]
pub(crate) struct WrenchTerm {
    u_eff: Vec<f64>,
    lam: Vec<f64>,
    row: Vec<f64>,
    /// ∂τ_ext/∂q (nv × nv, tangent coordinates)
    dtau: DMatrix<f64>,
}

impl WrenchTerm {
    /// u + τ_ext(q, w) (`u` itself without wrenches). Needs nothing computed in `d`.
    pub(crate) fn effective<'a>(
        &'a mut self,
        dm: &DynModel<f64>,
        d: &mut DynData<f64>,
        q: &[f64],
        u: &'a torsion_model::Control,
    ) -> Result<&'a [f64], torsion_dynamics::DynError> {
        if u.body_wrench.is_empty() {
            return Ok(&u.joint_torque);
        }
        dm.check_q(q)?;
        self.u_eff.clone_from(&u.joint_torque);
        forward_kinematics(dm, q, d);
        torsion_dynamics::external::wrench_forces_into(dm, d, &u.body_wrench, &mut self.u_eff)?;
        Ok(&self.u_eff)
    }

    /// ḡᵀA[:, q] += (ḡᵀB) ∂τ_ext/∂q: the reverse of [`WrenchTerm::add_state_columns`] for the row products `rb`
    /// into `ra` (its first nv entries; nothing without wrenches).
    pub(crate) fn add_state_vjp(
        &mut self,
        dm: &DynModel<f64>,
        d: &mut DynData<f64>,
        q: &[f64],
        w: &[f64],
        rb: &[f64],
        ra: &mut [f64],
    ) -> Result<(), torsion_dynamics::DynError> {
        if w.is_empty() {
            return Ok(());
        }
        dm.check_q(q)?;
        forward_kinematics(dm, q, d);
        self.row.clear();
        self.row.resize(dm.nv, 0.0);
        torsion_dynamics::external::wrench_state_vjp_into(dm, d, w, &rb[..dm.nv], &mut self.row)?;
        for (a, r) in ra.iter_mut().zip(&self.row) {
            *a += r;
        }
        Ok(())
    }

    /// A[:, q] += B ∂τ_ext/∂q for the wrenches `w` at q (nothing without wrenches): row i of ∂τ_ext/∂q is
    /// ∂(e_iᵀ τ_ext)/∂q (`wrench_state_vjp_into`).
    pub(crate) fn add_state_columns(
        &mut self,
        dm: &DynModel<f64>,
        d: &mut DynData<f64>,
        q: &[f64],
        w: &[f64],
        jac: &mut StepJacobians,
    ) -> Result<(), torsion_dynamics::DynError> {
        if w.is_empty() {
            return Ok(());
        }
        let nv = dm.nv;
        dm.check_q(q)?;
        if self.dtau.shape() != (nv, nv) {
            self.dtau = DMatrix::zeros(nv, nv);
        }
        self.lam.clear();
        self.lam.resize(nv, 0.0);
        forward_kinematics(dm, q, d);
        for i in 0..nv {
            self.lam[i] = 1.0;
            self.row.clear();
            self.row.resize(nv, 0.0);
            torsion_dynamics::external::wrench_state_vjp_into(dm, d, w, &self.lam, &mut self.row)?;
            for k in 0..nv {
                self.dtau[(i, k)] = self.row[k];
            }
            self.lam[i] = 0.0;
        }
        let n = jac.a.nrows();
        for k in 0..nv {
            for i in 0..nv {
                let g = self.dtau[(i, k)];
                if g != 0.0 {
                    for r in 0..n {
                        jac.a[(r, k)] += jac.b[(r, i)] * g;
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::solver::DiffSolver;
    use torsion_diff::fd_jacobian;
    use torsion_model::{Control, ParamSelection};

    // the normwise relative error of docs/gradients.md
    use torsion_diff::rel_err as nrel;

    /// Central differences (step `h`) of L = ḡᵀ s' for one step (s, u) w.r.t. the selected parameters (through
    /// `Model::params_set`), the state (tangent, through `retract`) and the generalized forces: [θ, s, u], what
    /// `step_vjp` returns. Shared by the Featherstone and the joint-friction tests.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn loss_central_differences<S: DiffSolver<State = GenState>>(
        solver: &S,
        m: &Model,
        s: &GenState,
        u: &Control,
        dt: f64,
        sel: &ParamSelection,
        g_out: &GenState,
        h: f64,
    ) -> [Vec<f64>; 3] {
        let loss = |mm: &Model, ss: &GenState, uu: &Control| {
            let mut o = ss.clone();
            solver.step(mm, ss, uu, dt, &mut o, &mut solver.workspace(mm).unwrap(), None).unwrap();
            o.q.iter().zip(&g_out.q).chain(o.v.iter().zip(&g_out.v)).map(|(a, b)| a * b).sum::<f64>()
        };
        let theta = m.params_get(sel);
        let fd_t: Vec<f64> = (0..sel.len())
            .map(|i| {
                let ev = |d: f64| {
                    let mut mm = m.clone();
                    let mut th = theta.clone();
                    th[i] += d;
                    mm.params_set(sel, &th).unwrap();
                    loss(&mm, s, u)
                };
                (ev(h) - ev(-h)) / (2.0 * h)
            })
            .collect();
        let fd_s = fd_jacobian(|d| vec![loss(m, &solver.retract(m, s, d), u)], solver.tangent_dim(m), h);
        let fd_u = fd_jacobian(
            |d| {
                let uu: Vec<f64> = u.joint_torque.iter().zip(d).map(|(a, b)| a + b).collect();
                vec![loss(m, s, &Control::from_torques(&uu))]
            },
            m.nv(),
            h,
        );
        [fd_t, fd_s.as_slice().to_vec(), fd_u.as_slice().to_vec()]
    }

    /// Errors against central differences of L = ḡᵀ s' for a step under body wrenches `w`: the state and control
    /// gradients of `step_vjp`, `wrench_vjp`'s ∂L/∂w, and A of `step_jacobians` (FD step `h_a`). Shared by the
    /// Featherstone and the contact steppers' tests.
    pub(crate) fn wrench_gradient_errors<S: DiffSolver<State = GenState>>(
        solver: &S,
        m: &Model,
        s: &GenState,
        u0: &Control,
        w: &[f64],
        g_out: &GenState,
        h_a: f64,
    ) -> [f64; 4] {
        let dt = 0.01;
        let u = u0.clone().with_body_wrench(w);
        let mut ws = solver.workspace(m).unwrap();
        let mut rec = solver.record(m);
        let mut o = s.clone();
        solver.step(m, s, &u, dt, &mut o, &mut ws, Some(&mut rec)).unwrap();
        let (mut gs, mut gu, mut gw) = (solver.zero_grad(m), vec![0.0; m.nv()], vec![0.0; w.len()]);
        let sel = ParamSelection::none();
        solver.step_vjp(m, &rec, g_out, &mut gs, &mut gu, &sel, &mut [], &mut ws).unwrap();
        solver.wrench_vjp(m, &rec, &gu, &mut gw, &mut ws).unwrap();
        let next = |ss: &GenState, uu: &Control| {
            let mut o = ss.clone();
            solver.step(m, ss, uu, dt, &mut o, &mut solver.workspace(m).unwrap(), None).unwrap();
            o
        };
        let loss = |ss: &GenState, uu: &Control| {
            let o = next(ss, uu);
            o.q.iter().zip(&g_out.q).chain(o.v.iter().zip(&g_out.v)).map(|(a, b)| a * b).sum::<f64>()
        };
        let nt = solver.tangent_dim(m);
        let fd_s = fd_jacobian(|d| vec![loss(&solver.retract(m, s, d), &u)], nt, 1e-6);
        let gst = solver.grad_to_tangent(m, s, &gs);
        let shifted = |base: &[f64], d: &[f64]| -> Vec<f64> { base.iter().zip(d).map(|(a, b)| a + b).collect() };
        let fd_u = fd_jacobian(
            |d| vec![loss(s, &Control::from_torques(&shifted(&u.joint_torque, d)).with_body_wrench(w))],
            m.nv(),
            1e-6,
        );
        let fd_w = fd_jacobian(|d| vec![loss(s, &u0.clone().with_body_wrench(&shifted(w, d)))], w.len(), 1e-6);
        let jac = solver.step_jacobians(m, s, &u, dt, &sel).unwrap();
        let fa = fd_jacobian(|d| solver.local_diff(m, &o, &next(&solver.retract(m, s, d), &u)), nt, h_a);
        let e = [
            nrel(&gst, fd_s.as_slice()),
            nrel(&gu, fd_u.as_slice()),
            nrel(&gw, fd_w.as_slice()),
            (&jac.a - &fa).amax() / fa.amax(),
        ];
        eprintln!("{}: body wrench, state / u / w gradients and A vs central differences {e:?}", solver.name());
        e
    }

    /// A ball sliding and spinning on a plane under a body wrench (pressing, pushing, twisting; one contact, so its
    /// impulse is unique): the contact stepper's gradients with the wrenches' q-columns.
    fn check_sliding_ball_wrench<S: DiffSolver<State = GenState>>(solver: &S) -> [f64; 4] {
        let xml = r#"<mujoco><option timestep="0.01"/><worldbody><geom type="plane" size="5 5 0.1" friction="0.4"/>
            <body pos="0 0 0.2"><freejoint/><geom type="sphere" size="0.1" mass="1" friction="0.4"/></body>
            </worldbody></mujoco>"#;
        let m = torsion_model::io::mjcf::load_mjcf_str(xml, "ball.xml", None).unwrap();
        let s = GenState::new(vec![0.0, 0.0, 0.0999, 1.0, 0.0, 0.0, 0.0], vec![0.0, 0.0, 0.3, 1.0, 0.2, 0.0]);
        let mut w = vec![0.0; 6 * m.body_count()];
        let b = m.body_count() - 1;
        w[6 * b..6 * b + 6].copy_from_slice(&[1.5, -0.8, -4.0, 0.0, 0.0, 0.2]);
        let u0 = Control::from_torques(&[0.0, 0.0, 0.1, 0.5, -0.3, 0.0]);
        let g_out = GenState::new(vec![0.3, -0.5, 0.7, 0.2, -0.1, 0.4, 0.3], vec![0.6, -0.2, 0.5, -0.7, 0.4, 0.9]);
        wrench_gradient_errors(solver, &m, &s, &u0, &w, &g_out, 1e-6)
    }

    /// A parameter write after the workspace was built reaches the contact steppers' next step (`DynCache`): a
    /// pushed ball's step on the reused workspace equals a fresh workspace's, bit for bit, after its mass doubled.
    fn check_params_reach_step<S: DiffSolver<State = GenState>>(solver: &S) {
        let xml = r#"<mujoco><worldbody><geom type="plane" size="5 5 0.1" friction="0.4"/>
            <body pos="0 0 0.2"><freejoint/><geom type="sphere" size="0.1" mass="1" friction="0.4"/></body>
            </worldbody></mujoco>"#;
        let mut m = torsion_model::io::mjcf::load_mjcf_str(xml, "ball.xml", None).unwrap();
        let s = GenState::new(vec![0.0, 0.0, 0.0999, 1.0, 0.0, 0.0, 0.0], vec![0.0, 0.0, 0.3, 1.0, 0.2, 0.0]);
        let u = Control::from_torques(&[0.0, 0.0, 0.1, 2.0, -1.0, 0.5]);
        let mut ws = solver.workspace(&m).unwrap();
        let mut o = s.clone();
        solver.step(&m, &s, &u, 0.01, &mut o, &mut ws, None).unwrap();
        let sel = ParamSelection::by_prefix(&m, "body_mass[");
        let mass = m.params_get(&sel);
        m.params_set(&sel, &mass.iter().map(|x| 2.0 * x).collect::<Vec<_>>()).unwrap();
        let (mut reused, mut fresh) = (s.clone(), s.clone());
        solver.step(&m, &s, &u, 0.01, &mut reused, &mut ws, None).unwrap();
        solver.step(&m, &s, &u, 0.01, &mut fresh, &mut solver.workspace(&m).unwrap(), None).unwrap();
        assert_ne!(o.v, fresh.v, "{}: the mass matters", solver.name());
        assert_eq!(reused.v, fresh.v, "{}: a reused workspace sees the new mass", solver.name());
    }

    #[test]
    fn contact_steppers_see_parameter_writes() {
        check_params_reach_step(&crate::ncp::NcpSolver::new(crate::ncp::NcpOptions::default()));
        check_params_reach_step(&crate::lcp::LcpSolver::new(crate::lcp::LcpOptions::default()));
    }

    #[test]
    fn contact_steppers_body_wrench_gradients_match_central_differences() {
        for e in [
            check_sliding_ball_wrench(&crate::ncp::NcpSolver::new(crate::ncp::NcpOptions::default())),
            check_sliding_ball_wrench(&crate::lcp::LcpSolver::new(crate::lcp::LcpOptions::default())),
        ] {
            assert!(e.iter().all(|x| *x < 1e-6), "{e:?}");
        }
    }
}
