//! The velocity-level contact step by extended staggered projections (spec 001 §3.2–3.5, Algorithm 1 cleaned):
//! ```text
//! v^p = v + Δt M⁻¹ τ(q, v, u) (+ Δt ω × v_l, free joints)   τ = u − c(q, v) + passive (damping, springs)
//! G = J M⁻¹ Jᵀ = YᵀY, Y = L⁻ᵀ Jᵀ (M = Lᵀ L sparse over the DoF tree, M⁻¹ never formed; delassus.rs): G_n, G_t, G_nt
//! b_n = J_n v^p + r − K e ,  r = ε ⊙ J_n v if φ ≤ 0 or ε > 0 and J_n v Δt + φ ≤ 0 (closing), else φ/Δt
//! b_t = J_t v^p
//! repeat n_step:  λ_n ← QP_ADMM(G_n, b_n + G_nt λ_t)   λ_t ← QCQP_ADMM(G_t, b_t + G_ntᵀ λ_n, r = μ ⊙ λ_n)
//! v⁺ = v^p + M⁻¹ (J_nᵀ λ_n + J_tᵀ λ_t) ,  q⁺ = q ⊕ Δt v⁺  (semi-implicit, on the manifold; a free joint moves
//! its origin straight along its world velocity and carries that velocity into the new body frame, as MuJoCo's
//! Euler integrator: `joints::add_free_frame_term`, `joints::advance_into`)
//! ```
//! Impulses λ in N·s. ε: Newton restitution per contact (the pair's, `ContactFrame::restitution`; applied at
//! every active contact, §3.11 item 11); K e: optional
//! Baumgarte on the penetration e = max(0, −φ) (§3.3); φ⁺/Δt with φ⁺ = max(φ, 0): a contact detected with a gap
//! may close it within the step but not act across it (speculative contact; no force at a distance); one that
//! would close it within the step gets the restitution law from its approach velocity, whatever the gap
//! (docs/decisions.md: it may bounce up to one step early). The
//! friction set is the exact disk (default) or a pyramid (§3.11 item 9). Warm starts by persistent contact id.
//! Every step reports its ADMM results and the NCP residuals of §3.9; failures are reported, never hidden.
//! Contacts sharing no moving body tree form independent problems (islands), solved one by one.
use super::admm::{Admm, AdmmInfo, AdmmOptions};
use super::delassus::{assemble, ContactPattern};
use super::kinematics::{body_joints, contact_jacobians, ContactFrame, ContactGeom};
use super::sets::{ConstraintSet, FrictionSet};
use crate::generalized::{GenState, WarmImpulse};
use crate::solver::SolverError;
use nalgebra::DMatrix;
use std::collections::HashMap;
use torsion_dynamics::gyroscopic::implicit_gyroscopic;
use torsion_dynamics::joints::{add_free_frame_term, advance_into};
use torsion_dynamics::ltl::{dof_parents, ltl_in_place, ltl_solve_in_place};
use torsion_dynamics::passive::passive_forces_in;
use torsion_dynamics::{crba_into, forward_kinematics, nonlinear_effects, DynData, DynModel};
use torsion_math::Scalar;
use torsion_model::Model;

#[derive(Clone, Debug)]
pub struct NcpOptions {
    /// staggered passes (paper: n_step ∈ [3, 10]); the maximum when `tolerance` > 0
    pub n_step: usize,
    /// stop early when max |Δλ| ≤ tolerance · (1 + max |λ|) (spec 001 §3.5, optional criterion); 0 = always
    /// n_step passes (the paper; a static tape for the gradients)
    pub tolerance: f64,
    /// Baumgarte gain K (1/s); 0 = off
    pub baumgarte: f64,
    pub friction_set: FrictionSet,
    pub admm: AdmmOptions,
    /// apply the model's joint damping and springs (explicitly)
    pub passive: bool,
    /// collision detection (the `Solver` path); default: speculative margin 0.01 m (contacts within 1 cm are
    /// found, and may close their gap within the step but not act across it)
    pub collision: torsion_collision::CollisionOptions,
    /// how the step is differentiated (`tangent.rs`)
    pub gradient: NcpGradient,
}

/// Which derivative of the staggered iteration the Jacobians return.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NcpGradient {
    /// the fixed point's for redundant impulses with a sticking contact, and for converged passes (last max
    /// |Δλ| ≤ 1e-9 (1 + max |λ|)) with unique impulses; the cascade's otherwise
    #[default]
    Auto,
    /// implicit derivative of the NCP solution, one coupled KKT system (`fixed_point.rs`): the derivative of
    /// the physics whatever the pass count; with redundant impulses (≥ 3 coplanar contacts) and sliding, the
    /// minimum-norm choice among equivalent impulses, which the executed passes need not make
    FixedPoint,
    /// chain rule through every executed QP / QCQP pass (spec 001 §3.10): the derivative of the truncated
    /// iteration as executed
    Cascade,
}

impl Default for NcpOptions {
    fn default() -> Self {
        NcpOptions {
            n_step: 10,
            tolerance: 0.0,
            baumgarte: 0.0,
            friction_set: FrictionSet::Cone,
            admm: AdmmOptions::default(),
            passive: true,
            collision: torsion_collision::CollisionOptions { margin: 0.01, ..Default::default() },
            gradient: NcpGradient::Auto,
        }
    }
}

/// NCP residuals of a step (spec 001 §3.9), maxima over the contacts.
#[derive(Clone, Debug, Default)]
pub struct NcpResiduals {
    /// |min(λ_n, J_n v⁺ + r − K e)| (the QP's slack; r: restitution or gap term of `prelude`)
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
    /// per staggered pass: the QP's and the QCQP's ADMM results (solved per contact island; merged: iterations,
    /// residuals, ρ the maxima, refactorisations the sum, converged / polished for all islands)
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

/// Buffers reused across steps (resized when the number of contacts grows); no state carried from one step to
/// the next (the warm start is in `GenState::warm`).
pub struct NcpWorkspace {
    pub(crate) dm: DynModel<f64>,
    d: DynData<f64>,
    pub(crate) body_joint: Vec<usize>,
    pub(crate) tape: Tape,
    /// solve each contact island on its own (default; the same problem, as G is block diagonal over islands —
    /// off only to time or compare against the unsplit problem)
    pub split_islands: bool,
    islands: Vec<Island>,
    /// one QP / QCQP solver per island size (n, 2n)
    admm: HashMap<usize, (Admm, Admm)>,
    buf: StepBuffers,
}

/// The impulses of the staggered passes and their previous values, the disk radii.
#[derive(Default)]
struct StepBuffers {
    ln: Vec<f64>,
    lt: Vec<f64>,
    ln_old: Vec<f64>,
    lt_old: Vec<f64>,
    r: Vec<f64>,
}

/// One island's problem: its contacts, its blocks of G_n and G_t, and the gathered q, warm start and radii.
#[derive(Default)]
struct Island {
    idx: Vec<usize>,
    gn: DMatrix<f64>,
    gt: DMatrix<f64>,
    q: Vec<f64>,
    warm: Vec<f64>,
    r: Vec<f64>,
}

impl Island {
    /// The island's contacts and (unless it is the whole problem) its blocks of G_n and G_t.
    fn gather(&mut self, idx: &[usize], gn: &DMatrix<f64>, gt: &DMatrix<f64>, whole: bool) {
        self.idx.clear();
        self.idx.extend_from_slice(idx);
        if whole {
            return;
        }
        let m = idx.len();
        self.gn.resize_mut(m, m, 0.0);
        self.gt.resize_mut(2 * m, 2 * m, 0.0);
        for (b, &j) in idx.iter().enumerate() {
            for (a, &i) in idx.iter().enumerate() {
                self.gn[(a, b)] = gn[(i, j)];
                for (s, t) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                    self.gt[(2 * a + s, 2 * b + t)] = gt[(2 * i + s, 2 * j + t)];
                }
            }
        }
    }
    /// q and the warm start of the island from the global vectors (`w` entries per contact).
    fn load(&mut self, g: &[f64], x: &[f64], w: usize) {
        self.q.clear();
        self.warm.clear();
        for &i in &self.idx {
            self.q.extend_from_slice(&g[w * i..w * i + w]);
            self.warm.extend_from_slice(&x[w * i..w * i + w]);
        }
    }
    /// The island's solution into the global vector.
    fn store(&self, z: &[f64], x: &mut [f64], w: usize) {
        for (a, &i) in self.idx.iter().enumerate() {
            x[w * i..w * i + w].copy_from_slice(&z[w * a..w * a + w]);
        }
    }
}

/// The islands' results of one solve as one: iterations, residuals and ρ: the maxima; refactorisations: the
/// sum; converged / polished: all of them.
fn merge_info(acc: &mut AdmmInfo, i: AdmmInfo, n: usize) {
    if n == 0 {
        *acc = i;
        return;
    }
    acc.iterations = acc.iterations.max(i.iterations);
    acc.converged &= i.converged;
    acc.primal_residual = acc.primal_residual.max(i.primal_residual);
    acc.dual_residual = acc.dual_residual.max(i.dual_residual);
    acc.kkt_residual = acc.kkt_residual.max(i.kkt_residual);
    acc.rho = acc.rho.max(i.rho);
    acc.refactorizations += i.refactorizations;
    acc.polished &= i.polished;
}

pub(crate) fn dyn_err(e: torsion_dynamics::DynError) -> SolverError {
    SolverError::Unsupported { solver: "ncp", problem: e.to_string() }
}

impl NcpSolver {
    pub fn new(options: NcpOptions) -> Self {
        NcpSolver { options }
    }

    /// Buffers of `step_with_contacts` (the `Solver` workspace adds collision detection).
    pub fn contact_workspace(&self, model: &Model) -> Result<NcpWorkspace, SolverError> {
        let dm = DynModel::from_model(model).map_err(dyn_err)?;
        let d = DynData::new(&dm);
        let mut body_joint = vec![];
        body_joints(&dm, &mut body_joint);
        Ok(NcpWorkspace {
            dm,
            d,
            body_joint,
            tape: Tape::default(),
            split_islands: true,
            islands: vec![],
            admm: HashMap::new(),
            buf: StepBuffers::default(),
        })
    }

    /// Check the step's inputs.
    pub(crate) fn check(
        &self,
        ws: &NcpWorkspace,
        s: &GenState,
        u: &[f64],
        dt: f64,
        contacts: &[ContactFrame],
    ) -> Result<(), SolverError> {
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
        for c in contacts {
            if c.body_a >= ws.dm.nb
                || c.body_b >= ws.dm.nb
                || !(c.mu >= 0.0 && c.mu.is_finite())
                || !(0.0..=1.0).contains(&c.restitution)
            {
                return Err(bad(format!(
                    "contact {}: bodies ({}, {}), μ = {} (≥ 0), ε = {} (in [0, 1])",
                    c.id, c.body_a, c.body_b, c.mu, c.restitution
                )));
            }
        }
        Ok(())
    }

    /// One step with the given contacts (from collision detection at `s.q`). `u`: nv generalized forces.
    /// Warm-started from `s.warm` (by contact id); the step's impulses go to `out.warm`. Records the tape of the
    /// staggered passes in the workspace (for the tangent Jacobians).
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
        self.check(ws, s, u, dt, contacts)?;
        let o = &self.options;
        let nq = ws.dm.nq;
        ws.dm.gravity = torsion_math::scalar::cv(&model.gravity);
        let geoms: Vec<ContactGeom<f64>> = contacts.iter().map(ContactGeom::from_frame).collect();
        let pre = prelude(model, &ws.dm, &mut ws.d, &ws.body_joint, &s.q, &s.v, u, dt, &geoms, o)?;
        let nc = contacts.len();
        let mut report = NcpReport { contacts: nc, ..Default::default() };
        let mut vplus = pre.vp.clone();
        let mut npass = 0;
        if nc > 0 {
            let NcpWorkspace { tape, islands, admm, buf, split_islands, .. } = ws;
            // warm starts by contact id, from the input state
            buf.ln.clear();
            buf.ln.extend(contacts.iter().map(|c| s.warm.get(c.id).map_or(0.0, |w| w.normal)));
            buf.lt.clear();
            buf.lt.extend(contacts.iter().flat_map(|c| s.warm.get(c.id).map_or([0.0; 2], |w| w.tangent)));
            tape.lt_warm.clone_from(&buf.lt);
            buf.r.resize(nc, 0.0);
            // independent problems per island (the whole set when not split, or when it is one island)
            let all: Vec<Vec<usize>>;
            let groups = if *split_islands && pre.pattern.islands.len() > 1 {
                &pre.pattern.islands
            } else {
                all = vec![(0..nc).collect()];
                &all
            };
            let whole = groups.len() == 1;
            islands.truncate(groups.len());
            islands.resize_with(groups.len(), Island::default);
            for (isl, idx) in islands.iter_mut().zip(groups) {
                isl.gather(idx, &pre.gn, &pre.gt, whole);
            }
            for _ in 0..o.n_step.max(1) {
                let (ln, lt) = (&mut buf.ln, &mut buf.lt);
                buf.ln_old.clone_from(ln);
                buf.lt_old.clone_from(lt);
                if npass == tape.passes.len() {
                    tape.passes.push(Pass::default());
                }
                let pass = &mut tape.passes[npass];
                npass += 1;
                // QP: g_n = b_n + G_nt λ_t
                pass.g_n.clear();
                pass.g_n.extend((0..nc).map(|i| pre.bn[i] + (0..2 * nc).map(|k| pre.gnt[(i, k)] * lt[k]).sum::<f64>()));
                let mut info = AdmmInfo::default();
                for (n_isl, isl) in islands.iter_mut().enumerate() {
                    let m = isl.idx.len();
                    let (qp, _) = admm.entry(m).or_insert_with(|| (Admm::new(m), Admm::new(2 * m)));
                    isl.load(&pass.g_n, ln, 1);
                    let p = if whole { &pre.gn } else { &isl.gn };
                    merge_info(&mut info, qp.solve(p, &isl.q, ConstraintSet::Nonneg, Some(&isl.warm), &o.admm)?, n_isl);
                    isl.store(qp.solution(), ln, 1);
                }
                report.qp.push(info);
                // QCQP: g_t = b_t + G_ntᵀ λ_n, disks of radius μ λ_n
                pass.g_t.clear();
                pass.g_t.extend((0..2 * nc).map(|k| pre.bt[k] + (0..nc).map(|i| pre.gnt[(i, k)] * ln[i]).sum::<f64>()));
                for i in 0..nc {
                    buf.r[i] = contacts[i].mu * ln[i];
                }
                let mut info = AdmmInfo::default();
                for (n_isl, isl) in islands.iter_mut().enumerate() {
                    let m = isl.idx.len();
                    let (_, qcqp) = admm.entry(m).or_insert_with(|| (Admm::new(m), Admm::new(2 * m)));
                    isl.load(&pass.g_t, lt, 2);
                    isl.r.clear();
                    isl.r.extend(isl.idx.iter().map(|&i| buf.r[i]));
                    let p = if whole { &pre.gt } else { &isl.gt };
                    let set = ConstraintSet::Friction { kind: o.friction_set, r: &isl.r };
                    merge_info(&mut info, qcqp.solve(p, &isl.q, set, Some(&isl.warm), &o.admm)?, n_isl);
                    isl.store(qcqp.solution(), lt, 2);
                }
                report.qcqp.push(info);
                pass.lambda_n.clone_from(ln);
                pass.lambda_t.clone_from(lt);
                report.last_change = ln
                    .iter()
                    .zip(&buf.ln_old)
                    .chain(lt.iter().zip(&buf.lt_old))
                    .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
                let lmax = ln.iter().chain(lt.iter()).fold(0.0f64, |m, v| m.max(v.abs()));
                if o.tolerance > 0.0 && report.last_change <= o.tolerance * (1.0 + lmax) {
                    break;
                }
            }
            let (ln, lt) = (&buf.ln, &buf.lt);
            vplus = apply_impulses(&pre, ln, lt);
            report.residuals = residuals(&pre.jn, &pre.jt, &vplus, &pre.bn, &pre.vp, ln, lt, &buf.r, o);
            out.warm.fill(contacts.iter().enumerate().map(|(i, c)| WarmImpulse {
                id: c.id,
                normal: ln[i],
                tangent: [lt[2 * i], lt[2 * i + 1]],
                t1: c.tangents[0].into(),
            }));
            report.lambda_n = ln.clone();
            report.lambda_t = lt.clone();
        } else {
            out.warm.clear();
        }
        ws.tape.passes.truncate(npass);
        ws.tape.gn = pre.gn;
        ws.tape.gt = pre.gt;
        ws.tape.gnt = pre.gnt;
        ws.tape.bn = pre.bn;
        ws.tape.bt = pre.bt;
        // (q⁺, v⁺) from v⁺ in the step's frame: q⁺ = q ⊕ Δt v⁺ (free joints: MuJoCo's Euler, `joints::advance_into`)
        out.q.resize(nq, 0.0);
        out.v.resize(vplus.len(), 0.0);
        advance_into(&ws.dm, &s.q, &vplus, dt, &mut out.q, &mut out.v);
        if out.q.iter().chain(&out.v).any(|x| !x.is_finite()) {
            return Err(SolverError::NonFinite { solver: "ncp", what: "(q or v)".into() });
        }
        Ok(report)
    }
}

/// One staggered pass as executed: the QP's linear term and solution, the QCQP's and its solution.
#[derive(Clone, Debug, Default)]
pub(crate) struct Pass {
    pub g_n: Vec<f64>,
    pub lambda_n: Vec<f64>,
    pub g_t: Vec<f64>,
    pub lambda_t: Vec<f64>,
}

/// What the tangent Jacobians need from the last forward step.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tape {
    /// λ_t before the first pass (the warm start; its gradient is stopped, spec 001 §3.10)
    pub lt_warm: Vec<f64>,
    pub passes: Vec<Pass>,
    pub gn: DMatrix<f64>,
    pub gt: DMatrix<f64>,
    /// the coupling block and the offsets (for the fixed-point derivative)
    pub gnt: DMatrix<f64>,
    pub bn: Vec<f64>,
    pub bt: Vec<f64>,
}

/// The smooth part of a step on any scalar T (f64 for the step, duals for its tangents): the sparse factor
/// M = Lᵀ L (Featherstone's LTL over the DoF tree λ), v^p, the contact Jacobians, the Delassus blocks (dense
/// matrices, assembled from their non-zero blocks only) and the QP / QCQP offsets.
pub(crate) struct Prelude<T: Scalar> {
    pub l: DMatrix<T>,
    /// λ(i), the parent DoF (`ltl::dof_parents`)
    pub lambda: Vec<usize>,
    /// each contact's DoFs and the contact islands
    pub pattern: ContactPattern,
    pub vp: Vec<T>,
    pub jn: DMatrix<T>,
    pub jt: DMatrix<T>,
    pub gn: DMatrix<T>,
    pub gt: DMatrix<T>,
    pub gnt: DMatrix<T>,
    pub bn: Vec<T>,
    pub bt: Vec<T>,
}

/// v^p = v + Δt M⁻¹ τ; G = YᵀY with Y = L⁻ᵀ Jᵀ (M = Lᵀ L); b_n = J_n v^p + r − K e with r = ε J_n v for a
/// contact touching (φ ≤ 0) or, with ε > 0, closing within the step (J_n v Δt + φ ≤ 0), r = φ/Δt otherwise;
/// b_t = J_t v^p.
#[allow(clippy::too_many_arguments)]
pub(crate) fn prelude<T: Scalar>(
    model: &Model,
    dm: &DynModel<T>,
    d: &mut DynData<T>,
    body_joint: &[usize],
    q: &[T],
    v: &[T],
    u: &[T],
    dt: f64,
    contacts: &[ContactGeom<T>],
    o: &NcpOptions,
) -> Result<Prelude<T>, SolverError> {
    let nv = dm.nv;
    let mut l = DMatrix::zeros(nv, nv);
    crba_into(dm, q, d, &mut l).map_err(dyn_err)?;
    let bias = nonlinear_effects(dm, q, v, d).map_err(dyn_err)?;
    let passive = if o.passive { passive_forces_in(model, dm, d, q, v).map_err(dyn_err)? } else { vec![T::zero(); nv] };
    let mut lambda = vec![];
    dof_parents(dm, &mut lambda);
    if !ltl_in_place(&mut l, &lambda) {
        return Err(SolverError::BadInput {
            solver: "ncp",
            problem: "the joint-space inertia matrix is not positive definite".into(),
        });
    }
    let mut vp: Vec<T> = (0..nv).map(|k| u[k] - bias[k] + passive[k]).collect();
    ltl_solve_in_place(&l, &lambda, &mut vp);
    let h = T::c(dt);
    for k in 0..nv {
        vp[k] = v[k] + h * vp[k];
    }
    implicit_gyroscopic(dm, v, h, &mut vp);
    add_free_frame_term(dm, v, h, &mut vp);
    let nc = contacts.len();
    let (mut jn, mut jt) = (DMatrix::zeros(nc, nv), DMatrix::zeros(2 * nc, nv));
    forward_kinematics(dm, q, d);
    contact_jacobians(dm, d, body_joint, contacts, &mut jn, &mut jt);
    // Y = L⁻ᵀ Jᵀ on each contact's DoFs, G = YᵀY on the pairs sharing a tree: M⁻¹ is never formed (spec 001 §3.1)
    let pattern = ContactPattern::new(dm, &lambda, body_joint, contacts);
    let (mut gn, mut gt, mut gnt) =
        (DMatrix::zeros(nc, nc), DMatrix::zeros(2 * nc, 2 * nc), DMatrix::zeros(nc, 2 * nc));
    assemble(&l, &lambda, &jn, &jt, &pattern, &mut gn, &mut gt, &mut gnt);
    let row_dot = |j: &DMatrix<T>, r: usize, c: usize, x: &[T]| -> T {
        pattern.support(c).iter().fold(T::zero(), |acc, &k| acc + j[(r, k)] * x[k])
    };
    let bn = (0..nc)
        .map(|i| {
            let c = &contacts[i];
            let zero = T::zero();
            let e = if c.distance.re() < 0.0 { -c.distance } else { zero };
            let gap = if c.distance.re() > 0.0 { c.distance } else { zero };
            // restitution from the approach velocity v_n = J_n v whatever the gap (docs/decisions.md): touching
            // (φ ≤ 0), or with ε > 0 closing within the step (v_n Δt + φ ≤ 0, a primal branch): J_n v⁺ ≥ −ε v_n
            // (closing: = max(−ε v_n, −φ⁺/Δt), as v_n ≤ −φ⁺/Δt ≤ 0: it bounces from where it is); a gap not
            // closed this step: J_n v⁺ ≥ −φ⁺/Δt (no restitution, nor force, at a distance). Touching contacts keep
            // ε v_n on both signs of v_n: smooth at rest (v_n = 0), where a switch would put every resting contact
            // with ε > 0 on a kink. With ε = 0 exactly, J_n v⁺ ≥ −φ⁺/Δt: a closing contact lands on the surface
            // instead of stopping up to |v_n| Δt short of it (held at a distance, the boxes of a jumbled stack
            // hovered, and the friction solves stopped converging)
            let vn = row_dot(&jn, i, i, v);
            let closing = c.restitution.re() > 0.0 && vn.re() * dt + gap.re() <= 0.0;
            let reach = if gap.re() <= 0.0 || closing { c.restitution * vn } else { gap / h };
            row_dot(&jn, i, i, &vp) + reach - T::c(o.baumgarte) * e
        })
        .collect();
    let bt = (0..2 * nc).map(|r| row_dot(&jt, r, r / 2, &vp)).collect();
    Ok(Prelude { l, lambda, pattern, vp, jn, jt, gn, gt, gnt, bn, bt })
}

/// v⁺ = v^p + M⁻¹ (J_nᵀ λ_n + J_tᵀ λ_t) on any scalar.
pub(crate) fn apply_impulses<T: Scalar>(pre: &Prelude<T>, ln: &[T], lt: &[T]) -> Vec<T> {
    let nv = pre.vp.len();
    let mut f = vec![T::zero(); nv];
    for i in 0..ln.len() {
        for &k in pre.pattern.support(i) {
            f[k] += pre.jn[(i, k)] * ln[i] + pre.jt[(2 * i, k)] * lt[2 * i] + pre.jt[(2 * i + 1, k)] * lt[2 * i + 1];
        }
    }
    ltl_solve_in_place(&pre.l, &pre.lambda, &mut f);
    (0..nv).map(|k| pre.vp[k] + f[k]).collect()
}

/// NCP residuals (§3.9) at v⁺: Signorini on u_n + (b_n − J_n v^p) (the same offsets as the QP), the friction
/// set, and maximum dissipation for sliding / sticking contacts.
#[allow(clippy::too_many_arguments)]
fn residuals(
    jn: &DMatrix<f64>,
    jt: &DMatrix<f64>,
    vplus: &[f64],
    bn: &[f64],
    vp: &[f64],
    ln: &[f64],
    lt: &[f64],
    r: &[f64],
    o: &NcpOptions,
) -> NcpResiduals {
    let v = nalgebra::DVector::from_column_slice(vplus);
    let (un, ut) = (jn * &v, jt * &v);
    let vpv = nalgebra::DVector::from_column_slice(vp);
    let jvp = jn * &vpv;
    let mut res = NcpResiduals::default();
    // slip below 1e-9 of the contact velocities before and after the impulses counts as sticking (a contact at
    // rest may sit on the disk's boundary: then u_t / ‖u_t‖ is round-off)
    let scale_v =
        un.iter().chain(ut.iter()).chain(jvp.iter()).chain((jt * &vpv).iter()).fold(1e-12f64, |m, x| m.max(x.abs()));
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
