//! The velocity-level contact step by extended staggered projections (spec 001 §3.2–3.5, Algorithm 1 cleaned):
//! ```text
//! v^p = v + Δt M⁻¹ τ(q, v, u)                          τ = u − c(q, v) + passive (damping, springs)
//! G = J M⁻¹ Jᵀ via Y = L⁻¹ Jᵀ (L: Cholesky of M, M⁻¹ never formed), blocks G_n, G_t, G_nt
//! b_n = J_n (v^p + ε v) − K e + φ⁺/Δt ,  b_t = J_t v^p
//! repeat n_step:  λ_n ← QP_ADMM(G_n, b_n + G_nt λ_t)   λ_t ← QCQP_ADMM(G_t, b_t + G_ntᵀ λ_n, r = μ ⊙ λ_n)
//! v⁺ = v^p + M⁻¹ (J_nᵀ λ_n + J_tᵀ λ_t) ,  q⁺ = q ⊕ Δt v⁺  (semi-implicit, on the manifold)
//! ```
//! Impulses λ in N·s. ε: Newton restitution (applied at every active contact, §3.11 item 11); K e: optional
//! Baumgarte on the penetration e = max(0, −φ) (§3.3); φ⁺/Δt with φ⁺ = max(φ, 0): a contact detected with a gap
//! may close it within the step but not act across it (speculative contact; no force at a distance). The
//! friction set is the exact disk (default) or a pyramid (§3.11 item 9). Warm starts by persistent contact id.
//! Every step reports its ADMM results and the NCP residuals of §3.9; failures are reported, never hidden.
use super::admm::{Admm, AdmmInfo, AdmmOptions};
use super::kinematics::{body_joints, contact_jacobians, ContactFrame};
use super::sets::{ConstraintSet, FrictionSet};
use crate::featherstone::GenState;
use crate::solver::SolverError;
use nalgebra::DMatrix;
use std::collections::HashMap;
use torsion_dynamics::joints::integrate_joint;
use torsion_dynamics::passive::passive_forces;
use torsion_dynamics::{crba_into, forward_kinematics, nonlinear_effects, DynData, DynModel};
use torsion_math::linalg::{cholesky_in_place, cholesky_solve_in_place};
use torsion_model::Model;

#[derive(Clone, Debug)]
pub struct NcpOptions {
    /// staggered passes (paper: n_step ∈ [3, 10]); the maximum when `tolerance` > 0
    pub n_step: usize,
    /// stop early when max |Δλ| ≤ tolerance · (1 + max |λ|) (spec 001 §3.5, optional criterion); 0 = always
    /// n_step passes (the paper; a static tape for the gradients)
    pub tolerance: f64,
    /// Newton restitution ε ∈ [0, 1]
    pub restitution: f64,
    /// Baumgarte gain K (1/s); 0 = off
    pub baumgarte: f64,
    pub friction_set: FrictionSet,
    pub admm: AdmmOptions,
    /// apply the model's joint damping and springs (explicitly)
    pub passive: bool,
}

impl Default for NcpOptions {
    fn default() -> Self {
        NcpOptions {
            n_step: 10,
            tolerance: 0.0,
            restitution: 0.0,
            baumgarte: 0.0,
            friction_set: FrictionSet::Cone,
            admm: AdmmOptions::default(),
            passive: true,
        }
    }
}

/// NCP residuals of a step (spec 001 §3.9), maxima over the contacts.
#[derive(Clone, Debug, Default)]
pub struct NcpResiduals {
    /// |min(λ_n, J_n v⁺ + ε J_n v + b)|
    pub signorini: f64,
    /// friction-set violation of λ_t (radius μ λ_n)
    pub cone: f64,
    /// sliding contacts: ‖λ_t + μ λ_n u_t / ‖u_t‖‖ (disk; pyramids: not evaluated)
    pub mdp_sliding: f64,
    /// sticking contacts (‖λ_t‖ < μ λ_n): ‖u_t‖
    pub mdp_sticking: f64,
}

/// What one contact step reports.
#[derive(Clone, Debug, Default)]
pub struct NcpReport {
    pub contacts: usize,
    /// per staggered pass: the QP's and the QCQP's ADMM results
    pub qp: Vec<AdmmInfo>,
    pub qcqp: Vec<AdmmInfo>,
    /// max |Δλ| of the last staggered pass (and the passes made: `qp.len()`)
    pub last_change: f64,
    pub residuals: NcpResiduals,
    pub lambda_n: Vec<f64>,
    pub lambda_t: Vec<f64>,
}

#[derive(Clone, Debug, Default)]
pub struct NcpSolver {
    pub options: NcpOptions,
}

/// Buffers reused across steps (resized when the number of contacts grows) and the warm-start memory.
pub struct NcpWorkspace {
    dm: DynModel<f64>,
    d: DynData<f64>,
    body_joint: Vec<usize>,
    m: DMatrix<f64>,
    jn: DMatrix<f64>,
    jt: DMatrix<f64>,
    /// previous step's impulses by contact id
    warm: HashMap<u64, (f64, [f64; 2])>,
}

fn dyn_err(e: torsion_dynamics::DynError) -> SolverError {
    SolverError::Unsupported { solver: "ncp", problem: e.to_string() }
}

impl NcpSolver {
    pub fn new(options: NcpOptions) -> Self {
        NcpSolver { options }
    }

    pub fn workspace(&self, model: &Model) -> Result<NcpWorkspace, SolverError> {
        let dm = DynModel::from_model(model).map_err(dyn_err)?;
        let d = DynData::new(&dm);
        let mut body_joint = vec![];
        body_joints(&dm, &mut body_joint);
        let nv = dm.nv;
        Ok(NcpWorkspace {
            dm,
            d,
            body_joint,
            m: DMatrix::zeros(nv, nv),
            jn: DMatrix::zeros(0, nv),
            jt: DMatrix::zeros(0, nv),
            warm: HashMap::new(),
        })
    }

    /// One step with the given contacts (from collision detection at `s.q`). `u`: nv generalized forces.
    #[allow(clippy::too_many_arguments)]
    pub fn step_with_contacts(
        &self,
        model: &Model,
        ws: &mut NcpWorkspace,
        s: &GenState,
        u: &[f64],
        dt: f64,
        contacts: &[ContactFrame],
        out: &mut GenState,
    ) -> Result<NcpReport, SolverError> {
        let o = &self.options;
        let bad = |problem: String| SolverError::BadInput { solver: "ncp", problem };
        let (nq, nv) = (ws.dm.nq, ws.dm.nv);
        if s.q.len() != nq || s.v.len() != nv || u.len() != nv {
            return Err(bad(format!(
                "state (q {}, v {}) and controls ({}) must have nq = {nq}, nv = {nv}, nv entries",
                s.q.len(),
                s.v.len(),
                u.len()
            )));
        }
        if !(dt > 0.0 && dt.is_finite()) {
            return Err(bad(format!("dt must be positive, got {dt}")));
        }
        if !(0.0..=1.0).contains(&o.restitution) {
            return Err(bad(format!("restitution must be in [0, 1], got {}", o.restitution)));
        }
        for c in contacts {
            if c.body_a >= ws.dm.nb || c.body_b >= ws.dm.nb || !(c.mu >= 0.0 && c.mu.is_finite()) {
                return Err(bad(format!("contact {}: bodies ({}, {}), μ = {}", c.id, c.body_a, c.body_b, c.mu)));
            }
        }
        ws.dm.gravity = torsion_math::scalar::cv(&model.gravity);
        // free velocity v^p = v + Δt M⁻¹ τ
        crba_into(&ws.dm, &s.q, &mut ws.d, &mut ws.m).map_err(dyn_err)?;
        let bias = nonlinear_effects(&ws.dm, &s.q, &s.v, &mut ws.d).map_err(dyn_err)?;
        let passive = if o.passive { passive_forces(model, &s.q, &s.v).map_err(dyn_err)? } else { vec![0.0; nv] };
        if !cholesky_in_place(&mut ws.m) {
            return Err(bad("the joint-space inertia matrix is not positive definite".into()));
        }
        let mut vp: Vec<f64> = (0..nv).map(|k| u[k] - bias[k] + passive[k]).collect();
        cholesky_solve_in_place(&ws.m, &mut vp);
        for k in 0..nv {
            vp[k] = s.v[k] + dt * vp[k];
        }
        let nc = contacts.len();
        let mut report = NcpReport { contacts: nc, ..Default::default() };
        let mut vplus = vp.clone();
        if nc > 0 {
            forward_kinematics(&ws.dm, &s.q, &mut ws.d);
            ws.jn.resize_mut(nc, nv, 0.0);
            ws.jt.resize_mut(2 * nc, nv, 0.0);
            contact_jacobians(&ws.dm, &ws.d, &ws.body_joint, contacts, &mut ws.jn, &mut ws.jt);
            // Y = L⁻¹ Jᵀ (3nc columns: normals then tangents), G = YᵀY
            let mut y = DMatrix::zeros(nv, 3 * nc);
            for r in 0..nc {
                for k in 0..nv {
                    y[(k, r)] = ws.jn[(r, k)];
                }
            }
            for r in 0..2 * nc {
                for k in 0..nv {
                    y[(k, nc + r)] = ws.jt[(r, k)];
                }
            }
            lower_solve_columns(&ws.m, &mut y);
            let g = y.transpose() * &y;
            let gn = g.view((0, 0), (nc, nc)).into_owned();
            let gt = g.view((nc, nc), (2 * nc, 2 * nc)).into_owned();
            let gnt = g.view((0, nc), (nc, 2 * nc)).into_owned();
            let jv = |j: &DMatrix<f64>, x: &[f64]| j * nalgebra::DVector::from_column_slice(x);
            let (jvp, jv0) = (jv(&ws.jn, &vp), jv(&ws.jn, &s.v));
            let bn: Vec<f64> = (0..nc)
                .map(|i| {
                    let c = &contacts[i];
                    let e = (-c.distance).max(0.0);
                    jvp[i] + o.restitution * jv0[i] - o.baumgarte * e + c.distance.max(0.0) / dt
                })
                .collect();
            let bt: Vec<f64> = jv(&ws.jt, &vp).iter().copied().collect();
            // warm starts by contact id
            let mut ln: Vec<f64> = contacts.iter().map(|c| ws.warm.get(&c.id).map_or(0.0, |w| w.0)).collect();
            let mut lt: Vec<f64> = contacts.iter().flat_map(|c| ws.warm.get(&c.id).map_or([0.0; 2], |w| w.1)).collect();
            let (mut qp, mut qcqp) = (Admm::new(nc), Admm::new(2 * nc));
            let mut r = vec![0.0; nc];
            for _ in 0..o.n_step.max(1) {
                let (ln_old, lt_old) = (ln.clone(), lt.clone());
                let gn_q: Vec<f64> =
                    (0..nc).map(|i| bn[i] + (0..2 * nc).map(|k| gnt[(i, k)] * lt[k]).sum::<f64>()).collect();
                report.qp.push(qp.solve(&gn, &gn_q, ConstraintSet::Nonneg, Some(&ln), &o.admm)?);
                ln.copy_from_slice(qp.solution());
                let gt_q: Vec<f64> =
                    (0..2 * nc).map(|k| bt[k] + (0..nc).map(|i| gnt[(i, k)] * ln[i]).sum::<f64>()).collect();
                for i in 0..nc {
                    r[i] = contacts[i].mu * ln[i];
                }
                let set = ConstraintSet::Friction { kind: o.friction_set, r: &r };
                report.qcqp.push(qcqp.solve(&gt, &gt_q, set, Some(&lt), &o.admm)?);
                lt.copy_from_slice(qcqp.solution());
                report.last_change =
                    ln.iter().zip(&ln_old).chain(lt.iter().zip(&lt_old)).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
                let lmax = ln.iter().chain(&lt).fold(0.0f64, |m, v| m.max(v.abs()));
                if o.tolerance > 0.0 && report.last_change <= o.tolerance * (1.0 + lmax) {
                    break;
                }
            }
            // v⁺ = v^p + M⁻¹ (J_nᵀ λ_n + J_tᵀ λ_t)
            let mut f = vec![0.0; nv];
            for k in 0..nv {
                f[k] = (0..nc).map(|i| ws.jn[(i, k)] * ln[i]).sum::<f64>()
                    + (0..2 * nc).map(|i| ws.jt[(i, k)] * lt[i]).sum::<f64>();
            }
            cholesky_solve_in_place(&ws.m, &mut f);
            for k in 0..nv {
                vplus[k] = vp[k] + f[k];
            }
            report.residuals = residuals(&ws.jn, &ws.jt, &vplus, &bn, &jvp, &ln, &lt, &r, o);
            ws.warm.clear();
            for (i, c) in contacts.iter().enumerate() {
                ws.warm.insert(c.id, (ln[i], [lt[2 * i], lt[2 * i + 1]]));
            }
            report.lambda_n = ln;
            report.lambda_t = lt;
        } else {
            ws.warm.clear();
        }
        // q⁺ = q ⊕ Δt v⁺
        out.q.resize(nq, 0.0);
        out.v.clear();
        out.v.extend_from_slice(&vplus);
        let mut dq = [0.0; 6];
        for j in 0..ws.dm.parent.len() {
            let (qs, vs, jm) = (ws.dm.q_start[j], ws.dm.v_start[j], &ws.dm.joint[j]);
            for i in 0..jm.nv {
                dq[i] = dt * vplus[vs + i];
            }
            integrate_joint(jm.kind, &s.q[qs..qs + jm.nq], &dq[..jm.nv], &mut out.q[qs..qs + jm.nq]);
        }
        if out.q.iter().chain(&out.v).any(|x| !x.is_finite()) {
            return Err(SolverError::NonFinite { solver: "ncp", what: "(q or v)".into() });
        }
        Ok(report)
    }
}

/// Y ← L⁻¹ Y column by column (L lower, from `cholesky_in_place`).
fn lower_solve_columns(l: &DMatrix<f64>, y: &mut DMatrix<f64>) {
    let n = l.nrows();
    for mut col in y.column_iter_mut() {
        for j in 0..n {
            let v = col[j] / l[(j, j)];
            col[j] = v;
            for i in j + 1..n {
                col[i] -= l[(i, j)] * v;
            }
        }
    }
}

/// NCP residuals (§3.9) at v⁺: Signorini on u_n + ε J_n v + (b_n − J_n v^p − ε J_n v) (the same offsets as the
/// QP), the friction set, and maximum dissipation for sliding / sticking contacts.
#[allow(clippy::too_many_arguments)]
fn residuals(
    jn: &DMatrix<f64>,
    jt: &DMatrix<f64>,
    vplus: &[f64],
    bn: &[f64],
    jvp: &nalgebra::DVector<f64>,
    ln: &[f64],
    lt: &[f64],
    r: &[f64],
    o: &NcpOptions,
) -> NcpResiduals {
    let v = nalgebra::DVector::from_column_slice(vplus);
    let (un, ut) = (jn * &v, jt * &v);
    let mut res = NcpResiduals::default();
    let scale_v = un.iter().chain(ut.iter()).fold(1e-12f64, |m, x| m.max(x.abs()));
    for i in 0..ln.len() {
        // the QP's slack: G_n λ_n + g_n = J_n v⁺ + (b_n − J_n v^p)
        let slack = un[i] + (bn[i] - jvp[i]);
        res.signorini = res.signorini.max(ln[i].min(slack).abs());
        let w = [lt[2 * i], lt[2 * i + 1]];
        let set = ConstraintSet::Friction { kind: o.friction_set, r: &r[i..i + 1] };
        res.cone = res.cone.max(set.violation(&w).max(0.0));
        let (u1, u2) = (ut[2 * i], ut[2 * i + 1]);
        let us = u1.hypot(u2);
        if o.friction_set == FrictionSet::Cone {
            if w[0].hypot(w[1]) < r[i] * (1.0 - 1e-6) {
                // inside the disk: the contact must stick
                res.mdp_sticking = res.mdp_sticking.max(us);
            } else if us > 1e-9 * scale_v {
                // on the boundary and sliding: λ_t opposes the slip
                let e = (w[0] + r[i] * u1 / us).hypot(w[1] + r[i] * u2 / us);
                res.mdp_sliding = res.mdp_sliding.max(e);
            }
        }
    }
    res
}
