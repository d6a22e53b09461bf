//! The LCP stepper `lcp` (spec 004 §3.2, §3.4, §3.6; issue 17 items 2, 4) as a `Solver` / `DiffSolver` on
//! `GenState`: collision detection at q_t, the shared contact layer's prelude (M = LᵀL, v* = S(v), J, the Delassus
//! matrix A = J M⁻¹ Jᵀ and the offsets), then
//! 1. the **impact** (§3.4, Eq. 7–8, Δt = 0), only when some contact bounces: a normal with ε > 0 approaching
//!    faster than the bounce threshold (u⁻ = J_n v < −v_bounce, §3.10 item 4) and touching or closing within the
//!    step (φ ≤ 0 or u⁻ Δt + φ ≤ 0); b' = (1 + ε) u⁻ on those rows, J_n v + φ⁺/Δt on the other normals, J_t v on
//!    the frictions (ẽ = 0); v ← v + M⁻¹ Jᵀ f (docs/decisions.md spec 004 D7);
//! 2. the **step**: v* = S(v) from the (struck) velocity, the boxed LCP with b = J v* (+ φ⁺/Δt on the normals, the
//!    shared prelude's offsets), v_{t+1} = v* + M⁻¹ Jᵀ f;
//! 3. the position update (D1): parallel q_{t+1} = q_t ⊕ Δt v_t (default, the paper's), or semi-implicit
//!    q_{t+1} = q_t ⊕ Δt v_{t+1}.
//!
//! Each LCP is solved by `solve_chain` (Jade's Dantzig, then PGS) with the validity check; no valid answer is a
//! `SolverError::NoSolution`, never a frictionless step. Derivatives (§3.6, D9): one Dual64 pass of the same generic
//! prelude per input direction, through each LCP the implicit JVP at its active set (`backward::lcp_jvp`), contact
//! geometry carried by `contact::anchor::Anchor` with the contact set held fixed. No CCD yet (issue 17 item 3).
use super::active_set::Class;
use super::backward::{lcp_jvp, LcpTangent};
use super::pgs::PgsOptions;
use super::problem::{contact_rows, lcp_system, BoxedLcp};
use super::solution::LcpSolverKind;
use super::{solve_chain, ChainOptions, ChainSolution};
use crate::contact::anchor::Anchor;
use crate::contact::frames::{body_joints, detect_into, pair_source, ContactFrame, ContactGeom};
use crate::contact::prelude::{apply_impulses, dyn_err, prelude, Prelude, PreludeOptions, StepInputs};
use crate::generalized::{
    dual_tangent, recorded, transposed_jacobian_product, wrench_vjp, ContactWarmStart, DynCache, GenState, WarmImpulse,
    WrenchTerm,
};
use crate::solver::{check_grad_sizes, DiffSolver, Solver, SolverError, StepInfo, StepJacobians};
use nalgebra::DMatrix;
use num_dual::Dual64;
use torsion_collision::{CollisionWorld, Contacts};
use torsion_dynamics::joints::{advance_into, integrate};
use torsion_dynamics::{forward_kinematics, DynData, DynModel};
use torsion_math::{Quat, Scalar, Vec3};
use torsion_model::params::ParamKind;
use torsion_model::{Control, JointType, Model, ParamSelection, Shape};

const NAME: &str = "lcp";

/// The position update (spec 004 §6 D1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PositionUpdate {
    /// q_{t+1} = q_t ⊕ Δt v_t (Jade / Nimble; ∂q_{t+1}/∂v_t = Δt I; resting contacts stay put)
    #[default]
    Parallel,
    /// q_{t+1} = q_t ⊕ Δt v_{t+1} (DART; the other generalized-coordinate steppers')
    SemiImplicit,
}

/// Options of the LCP stepper.
#[derive(Clone, Debug)]
pub struct LcpOptions {
    /// the LCP solvers: Jade's Dantzig, then PGS (D10), here with 10,000 sweeps (stacks: rank-deficient A, where
    /// Jade's Dantzig may fail and PGS converges slowly)
    pub chain: ChainOptions,
    pub position: PositionUpdate,
    /// approach speed (m/s) above which a contact with ε > 0 bounces (DART: 0.1; D7)
    pub bounce_threshold: f64,
    /// collision detection; default: speculative margin 0.01 m, as ncp
    pub collision: torsion_collision::CollisionOptions,
    /// apply the model's joint damping and springs (explicitly) in v*
    pub passive: bool,
    /// Baumgarte gain (1/s) on the penetration; 0 = off (the spec's reference code has no correction)
    pub baumgarte: f64,
}

impl Default for LcpOptions {
    fn default() -> Self {
        LcpOptions {
            chain: ChainOptions {
                pgs: Some(PgsOptions { max_sweeps: 10_000, ..Default::default() }),
                ..Default::default()
            },
            position: PositionUpdate::Parallel,
            bounce_threshold: 0.1,
            collision: torsion_collision::CollisionOptions { margin: 0.01, ..Default::default() },
            passive: true,
            baumgarte: 0.0,
        }
    }
}

/// The LCP stepper.
#[derive(Clone, Debug, Default)]
pub struct LcpSolver {
    pub options: LcpOptions,
}

impl LcpSolver {
    pub fn new(options: LcpOptions) -> Self {
        LcpSolver { options }
    }

    fn prelude_options(&self) -> PreludeOptions {
        PreludeOptions { solver: NAME, passive: self.options.passive, baumgarte: self.options.baumgarte }
    }
}

/// One solved LCP of a step, kept for its derivative.
#[derive(Clone, Debug)]
pub struct SolvedLcp {
    pub lcp: BoxedLcp,
    pub answer: ChainSolution,
}

/// What the last step solved.
#[derive(Clone, Debug, Default)]
pub struct LcpReport {
    pub contacts: usize,
    /// per contact: bounced in the impact
    pub bounce: Vec<bool>,
    /// the impact's LCP (when some contact bounced)
    pub impact: Option<SolvedLcp>,
    /// the step's LCP (when there are contacts)
    pub step: Option<SolvedLcp>,
}

impl LcpReport {
    fn solves(&self) -> impl Iterator<Item = &SolvedLcp> {
        self.impact.iter().chain(self.step.iter())
    }
}

/// Step workspace: the dynamics model and buffers, the collision world and the last contact set and report.
pub struct LcpWorkspace {
    pub dm: DynModel<f64>,
    /// keeps `dm` at the model's current parameter values (`refresh` at every step)
    cache: DynCache,
    pub d: DynData<f64>,
    pub body_joint: Vec<usize>,
    pub world: CollisionWorld,
    pub contacts: Contacts,
    /// the contacts of the last step, as the stepper saw them
    pub frames: Vec<ContactFrame>,
    pub report: LcpReport,
    /// the bodies' world poses for collision detection
    poses: Vec<(Vec3, Quat)>,
    /// the body wrenches' generalized forces and their q-columns (`Control::body_wrench`)
    wrench: WrenchTerm,
}

/// What `step` saves for `step_vjp`.
#[derive(Clone, Debug, Default)]
pub struct LcpRecord {
    s: Option<GenState>,
    /// the generalized forces the step took (u + the body wrenches' Σ J_bᵀ w_b) and the wrenches
    u: Vec<f64>,
    wrench: Vec<f64>,
    dt: f64,
    frames: Vec<ContactFrame>,
}

fn collision_err(e: torsion_collision::CollisionError) -> SolverError {
    crate::contact::frames::collision_err(NAME)(e)
}

fn lcp_err(e: super::problem::LcpError) -> SolverError {
    SolverError::BadInput { solver: NAME, problem: e.to_string() }
}

/// u_k = J_n(k) v and the bounce set of the impact (see the module doc): ε > 0, u_k < −v_bounce, touching or closing
/// within the step. Decided on values; held fixed in the tangent passes (docs/gradients.md).
fn bounce_set(pre: &Prelude<f64>, contacts: &[ContactGeom<f64>], v: &[f64], dt: f64, threshold: f64) -> Vec<bool> {
    (0..contacts.len())
        .map(|k| {
            let c = &contacts[k];
            let u: f64 = (0..v.len()).map(|j| pre.jn[(k, j)] * v[j]).sum();
            c.restitution > 0.0 && u < -threshold && (c.distance <= 0.0 || u * dt + c.distance <= 0.0)
        })
        .collect()
}

/// The impact's offsets (§3.4 Eq. 7–8 with restitution on bouncing normals only): b'_n = (1 + ε) J_n v on bouncing
/// normals, J_n v + φ⁺/Δt on the others, b'_t = J_t v; on any scalar.
fn impact_offsets<T: Scalar>(
    pre: &Prelude<T>,
    contacts: &[ContactGeom<T>],
    v: &[T],
    dt: f64,
    bounce: &[bool],
) -> (Vec<T>, Vec<T>) {
    let dot = |j: &DMatrix<T>, r: usize| (0..v.len()).fold(T::zero(), |acc, k| acc + j[(r, k)] * v[k]);
    let bn = (0..contacts.len())
        .map(|k| {
            let u = dot(&pre.jn, k);
            let c = &contacts[k];
            if bounce[k] {
                (T::one() + c.restitution) * u
            } else if c.distance.re() > 0.0 {
                u + c.distance / T::c(dt)
            } else {
                u
            }
        })
        .collect();
    let bt = (0..2 * contacts.len()).map(|r| dot(&pre.jt, r)).collect();
    (bn, bt)
}

/// (λ_n, λ_t) of a λ in the (n, t1, t2) layout, on any scalar.
fn split<T: Scalar>(lambda: &[T]) -> (Vec<T>, Vec<T>) {
    let nc = lambda.len() / 3;
    ((0..nc).map(|i| lambda[3 * i]).collect(), (0..2 * nc).map(|r| lambda[3 * (r / 2) + 1 + r % 2]).collect())
}

/// Solve an LCP with the chain; no valid answer is an error naming the phase and every attempt.
fn solve(lcp: BoxedLcp, o: &ChainOptions, phase: &str) -> Result<SolvedLcp, SolverError> {
    match solve_chain(&lcp, o) {
        Ok(answer) => Ok(SolvedLcp { lcp, answer }),
        Err(f) => Err(SolverError::NoSolution {
            solver: NAME,
            problem: format!(
                "the {phase} LCP ({} contacts): {f}; attempts: {:?}",
                lcp.len() / 3,
                f.attempts.iter().map(|a| (a.solver, a.failure.clone(), a.validity.worst)).collect::<Vec<_>>()
            ),
        }),
    }
}

/// The position and velocity update (D1) on any scalar: parallel q1 = q ⊕ h v (the pre-step velocity), v1 = v⁺
/// in the new body frame (free and ball joints' angular and body-frame linear parts turned by Exp(h ω)ᵀ);
/// semi-implicit: `advance_into` from v⁺ (MuJoCo's Euler for free joints).
pub fn advance<T: Scalar>(
    dm: &DynModel<T>,
    position: PositionUpdate,
    q: &[T],
    v: &[T],
    vplus: &[T],
    h: T,
    q1: &mut [T],
    v1: &mut [T],
) {
    if position == PositionUpdate::SemiImplicit {
        advance_into(dm, q, vplus, h, q1, v1);
        return;
    }
    advance_into(dm, q, v, h, q1, v1);
    for (j, jm) in dm.joint.iter().enumerate() {
        let vs = dm.v_start[j];
        match jm.kind {
            JointType::Free | JointType::Ball => {
                let e = Quat::exp(&(Vec3::new(v[vs], v[vs + 1], v[vs + 2]) * h));
                let w = e.rotate_inv(&Vec3::new(vplus[vs], vplus[vs + 1], vplus[vs + 2]));
                v1[vs..vs + 3].copy_from_slice(&[w.x, w.y, w.z]);
                if jm.kind == JointType::Free {
                    let u = e.rotate_inv(&Vec3::new(vplus[vs + 3], vplus[vs + 4], vplus[vs + 5]));
                    v1[vs + 3..vs + 6].copy_from_slice(&[u.x, u.y, u.z]);
                }
            }
            _ => v1[vs..vs + jm.nv].copy_from_slice(&vplus[vs..vs + jm.nv]),
        }
    }
}

impl LcpSolver {
    /// The contacts at configuration q, as contact frames; tangents continue from the t1 of the same contact in
    /// `warm`.
    pub fn detect(
        &self,
        model: &Model,
        ws: &mut LcpWorkspace,
        q: &[f64],
        warm: &ContactWarmStart,
    ) -> Result<(), SolverError> {
        let LcpWorkspace { dm, cache, d, world, contacts, frames, poses, .. } = ws;
        // the dynamics model at the current parameters (the joint anchors place the bodies)
        cache.refresh(model, dm).map_err(dyn_err(NAME))?;
        detect_into(NAME, model, world, dm, d, q, warm, poses, contacts, frames)
    }

    fn check(&self, ws: &LcpWorkspace, s: &GenState, u: &[f64], dt: f64) -> Result<(), SolverError> {
        let (nq, nv) = (ws.dm.nq, ws.dm.nv);
        let bad = |problem: String| SolverError::BadInput { solver: NAME, problem };
        if s.q.len() != nq || s.v.len() != nv || u.len() != nv {
            return Err(bad(format!(
                "state (q {}, v {}) and controls ({}) must have nq = {nq}, nv = {nv}, nv entries",
                s.q.len(),
                s.v.len(),
                u.len()
            )));
        }
        if !s.act.is_empty() {
            return Err(bad("actuator activations are not supported by the lcp stepper yet".into()));
        }
        if !(dt.is_finite() && dt > 0.0) {
            return Err(bad(format!("time step {dt} is not a finite positive number")));
        }
        if s.q.iter().chain(&s.v).chain(u).any(|x| !x.is_finite()) {
            return Err(bad("state or controls not finite".into()));
        }
        Ok(())
    }

    /// One step with the given contacts (from collision detection at `s.q`); the solved LCPs go to `ws.report`.
    #[allow(clippy::too_many_arguments)]
    pub fn step_with_contacts(
        &self,
        model: &Model,
        ws: &mut LcpWorkspace,
        s: &GenState,
        u: &[f64],
        dt: f64,
        contacts: &[ContactFrame],
        out: &mut GenState,
    ) -> Result<StepInfo, SolverError> {
        ws.cache.refresh(model, &mut ws.dm).map_err(dyn_err(NAME))?;
        self.check(ws, s, u, dt)?;
        let o = &self.options;
        ws.dm.gravity = torsion_math::scalar::cv(&model.gravity);
        let geoms: Vec<ContactGeom<f64>> = contacts.iter().map(ContactGeom::from_frame).collect();
        let po = self.prelude_options();
        let LcpWorkspace { dm, d, body_joint, report, .. } = ws;
        let x = StepInputs { model, dm, body_joint, q: &s.q, v: &s.v, u, dt, contacts: &geoms, o: &po };
        let mut pre = prelude(&x, d)?;
        let nc = contacts.len();
        *report = LcpReport { contacts: nc, ..Default::default() };
        let mut vplus = pre.vp.clone();
        if nc > 0 {
            report.bounce = bounce_set(&pre, &geoms, &s.v, dt, o.bounce_threshold);
            if report.bounce.iter().any(|&b| b) {
                let (bn, bt) = impact_offsets(&pre, &geoms, &s.v, dt, &report.bounce);
                let (a, b) = lcp_system(&pre, &bn, &bt);
                let imp = solve(BoxedLcp::new(a, b, contact_rows(&geoms)).map_err(lcp_err)?, &o.chain, "impact")?;
                let (pn, pt) = split(imp.answer.solution.lambda.as_slice());
                pre.after_impact(&x, d, &pn, &pt)?;
                report.impact = Some(imp);
            }
            let (a, b) = lcp_system(&pre, &pre.bn, &pre.bt);
            let st = solve(BoxedLcp::new(a, b, contact_rows(&geoms)).map_err(lcp_err)?, &o.chain, "step")?;
            let (ln, lt) = split(st.answer.solution.lambda.as_slice());
            vplus = apply_impulses(&pre, &ln, &lt);
            out.warm.fill(contacts.iter().enumerate().map(|(i, c)| WarmImpulse {
                id: c.id,
                normal: ln[i],
                tangent: [lt[2 * i], lt[2 * i + 1]],
                t1: c.tangents[0].into(),
            }));
            report.step = Some(st);
        } else {
            out.warm.clear();
        }
        out.q.resize(dm.nq, 0.0);
        out.v.resize(dm.nv, 0.0);
        out.act.clear();
        advance(dm, o.position, &s.q, &s.v, &vplus, dt, &mut out.q, &mut out.v);
        if out.q.iter().chain(&out.v).any(|x| !x.is_finite()) {
            return Err(SolverError::NonFinite { solver: NAME, what: "(q or v)".into() });
        }
        Ok(step_info(report))
    }

    /// One step with the given contacts and its transition Jacobians (rows: 2nv tangent coordinates): A w.r.t.
    /// (q, v), B w.r.t. the nv generalized forces, C w.r.t. the selected parameters (dynamics parameters and the
    /// contact materials `shape_friction[·]`, `shape_restitution[·]`, seeded on the contacts whose pair value
    /// they supply, `pair_source`).
    #[allow(clippy::too_many_arguments)]
    pub fn jacobians_with_contacts(
        &self,
        model: &Model,
        ws: &mut LcpWorkspace,
        s: &GenState,
        u: &[f64],
        dt: f64,
        contacts: &[ContactFrame],
        sel: &ParamSelection,
    ) -> Result<(StepJacobians, GenState), SolverError> {
        let mut next = s.clone();
        self.step_with_contacts(model, ws, s, u, dt, contacts, &mut next)?;
        let o = &self.options;
        let po = self.prelude_options();
        let nv = ws.dm.nv;
        let mut d0 = DynData::new(&ws.dm);
        forward_kinematics(&ws.dm, &s.q, &mut d0);
        let anchors: Vec<Anchor> =
            contacts.iter().map(|c| Anchor::new(c, &d0.o_m[c.body_a], &d0.o_m[c.body_b])).collect();
        let table = model.param_table();
        let theta = model.param_vector();
        let source = |c: &ContactFrame, val: fn(&Shape) -> f64, v: f64| -> Option<usize> {
            let s = c.shapes?;
            let (a, b) = (model.shapes.get(s[0])?, model.shapes.get(s[1])?);
            let k = pair_source(s, val(a), val(b));
            (val(&model.shapes[k]) == v).then_some(k)
        };
        let mu_src: Vec<Option<ParamKind>> =
            contacts.iter().map(|c| source(c, |s| s.friction[0], c.mu).map(ParamKind::ShapeFriction)).collect();
        let eps_src: Vec<Option<ParamKind>> = contacts
            .iter()
            .map(|c| source(c, |s| s.restitution, c.restitution).map(ParamKind::ShapeRestitution))
            .collect();
        let lift = |x: &[f64]| -> Vec<Dual64> { x.iter().map(|&v| Dual64::from(v)).collect() };
        let with_gravity = |mut dm: DynModel<Dual64>| {
            dm.gravity = torsion_math::scalar::cv(&model.gravity);
            dm
        };
        let base_dm = with_gravity(DynModel::build(model, &table, &lift(&theta)).map_err(dyn_err(NAME))?);
        let ndir = 3 * nv + sel.len();
        let mut cols = DMatrix::zeros(2 * nv, ndir);
        let mut d = DynData::new(&base_dm);
        let report = &ws.report;
        for dir in 0..ndir {
            let param = (dir >= 3 * nv).then(|| sel.indices[dir - 3 * nv]);
            let mat = param.map(|i| table.kinds[i]).filter(|k| k.is_contact_material());
            let owned;
            let dm = match param {
                Some(i) if mat.is_none() => {
                    let mut th = lift(&theta);
                    th[i].eps = 1.0;
                    owned = with_gravity(DynModel::build(model, &table, &th).map_err(dyn_err(NAME))?);
                    &owned
                }
                _ => &base_dm,
            };
            let mut q = lift(&s.q);
            if dir < nv {
                let mut e = vec![Dual64::from(0.0); nv];
                e[dir].eps = 1.0;
                q = integrate(dm, &q, &e);
            }
            let mut v = lift(&s.v);
            if (nv..2 * nv).contains(&dir) {
                v[dir - nv].eps = 1.0;
            }
            let mut uu = lift(u);
            if (2 * nv..3 * nv).contains(&dir) {
                uu[dir - 2 * nv].eps = 1.0;
            }
            forward_kinematics(dm, &q, &mut d);
            let geoms: Vec<ContactGeom<Dual64>> = contacts
                .iter()
                .zip(&anchors)
                .enumerate()
                .map(|(i, (c, an))| {
                    let mut g = an.geom(c, &d.o_m[c.body_a], &d.o_m[c.body_b]);
                    if mat.is_some() && mat == mu_src[i] {
                        g.mu.eps = 1.0;
                    }
                    if mat.is_some() && mat == eps_src[i] {
                        g.restitution.eps = 1.0;
                    }
                    g
                })
                .collect();
            let x = StepInputs {
                model,
                dm,
                body_joint: &ws.body_joint,
                q: &q,
                v: &v,
                u: &uu,
                dt,
                contacts: &geoms,
                o: &po,
            };
            let mut pre = prelude(&x, &mut d)?;
            if let Some(imp) = &report.impact {
                let (bn, bt) = impact_offsets(&pre, &geoms, &v, dt, &report.bounce);
                let lambda = lcp_tangent(imp, &pre, &geoms, &bn, &bt)?;
                let (pn, pt) = split(&lambda);
                pre.after_impact(&x, &mut d, &pn, &pt)?;
            }
            let vplus = match &report.step {
                Some(st) => {
                    let lambda = lcp_tangent(st, &pre, &geoms, &pre.bn, &pre.bt)?;
                    let (ln, lt) = split(&lambda);
                    apply_impulses(&pre, &ln, &lt)
                }
                None => pre.vp.clone(),
            };
            let (mut q1, mut v1) = (q.clone(), vplus.clone());
            advance(dm, o.position, &q, &v, &vplus, Dual64::from(dt), &mut q1, &mut v1);
            for j in 0..dm.parent.len() {
                let (qs, vs, jm) = (dm.q_start[j], dm.v_start[j], &dm.joint[j]);
                let t = dual_tangent(jm.kind, &next.q[qs..qs + jm.nq], &q1[qs..qs + jm.nq]);
                for r in 0..jm.nv {
                    cols[(vs + r, dir)] = t[r];
                }
            }
            for k in 0..nv {
                cols[(nv + k, dir)] = v1[k].eps;
            }
        }
        let jac = StepJacobians {
            a: cols.columns(0, 2 * nv).into_owned(),
            b: cols.columns(2 * nv, nv).into_owned(),
            c: cols.columns(3 * nv, sel.len()).into_owned(),
        };
        Ok((jac, next))
    }
}

/// λ + ε dλ of a solved LCP along the tangent carried by the dual parts of the prelude, the offsets and μ
/// (§3.6: the implicit derivative at the answer's active set, `backward::lcp_jvp`).
fn lcp_tangent(
    solved: &SolvedLcp,
    pre: &Prelude<Dual64>,
    geoms: &[ContactGeom<Dual64>],
    bn: &[Dual64],
    bt: &[Dual64],
) -> Result<Vec<Dual64>, SolverError> {
    let (a, b) = lcp_system(pre, bn, bt);
    let da = a.map(|x| x.eps);
    let db = b.map(|x| x.eps);
    let dmu: Vec<f64> = (0..b.len()).map(|r| if r % 3 == 0 { 0.0 } else { geoms[r / 3].mu.eps }).collect();
    let sol = &solved.answer.solution;
    let (dl, _, _) = lcp_jvp(&solved.lcp, &sol.lambda, &sol.classes, &LcpTangent { da: &da, db: &db, dmu: &dmu })
        .map_err(lcp_err)?;
    Ok((0..b.len()).map(|i| Dual64::new(sol.lambda[i], dl[i])).collect())
}

/// The step's report: the solver that answered (PGS if any solve needed it), pivots / sweeps of every attempt,
/// the worst validity residual.
fn step_info(r: &LcpReport) -> StepInfo {
    let mut info = StepInfo::new("lcp/jade");
    info.contacts = r.contacts;
    for s in r.solves() {
        let sol = &s.answer.solution;
        if sol.solver == LcpSolverKind::Pgs {
            info.solver = "lcp/pgs";
        }
        info.iterations += sol.iterations;
        let v = &sol.validity;
        info.residual = info.residual.max(v.max_bound).max(v.max_findex).max(v.max_complementarity);
        info.converged &= sol.ok();
    }
    info
}

impl Solver for LcpSolver {
    type State = GenState;
    type Workspace = LcpWorkspace;
    type Record = LcpRecord;

    fn name(&self) -> &'static str {
        NAME
    }

    fn workspace(&self, model: &Model) -> Result<LcpWorkspace, SolverError> {
        let dm = DynModel::from_model(model).map_err(dyn_err(NAME))?;
        let d = DynData::new(&dm);
        let mut body_joint = vec![];
        body_joints(&dm, &mut body_joint);
        Ok(LcpWorkspace {
            dm,
            cache: DynCache::new(model),
            d,
            body_joint,
            world: CollisionWorld::new(model, self.options.collision.clone()).map_err(collision_err)?,
            contacts: Contacts::default(),
            frames: vec![],
            report: LcpReport::default(),
            poses: vec![],
            wrench: WrenchTerm::default(),
        })
    }

    fn record(&self, _model: &Model) -> LcpRecord {
        LcpRecord::default()
    }

    fn step(
        &self,
        model: &Model,
        s: &GenState,
        u: &Control,
        dt: f64,
        out: &mut GenState,
        ws: &mut LcpWorkspace,
        rec: Option<&mut LcpRecord>,
    ) -> Result<StepInfo, SolverError> {
        if s.q.len() != model.nq() {
            return Err(SolverError::BadInput {
                solver: NAME,
                problem: format!("state has nq {}, the model needs {}", s.q.len(), model.nq()),
            });
        }
        self.detect(model, ws, &s.q, &s.warm)?;
        ws.cache.refresh(model, &mut ws.dm).map_err(dyn_err(NAME))?;
        let uj = ws.wrench.effective(&ws.dm, &mut ws.d, &s.q, u).map_err(dyn_err(NAME))?.to_vec();
        let frames = std::mem::take(&mut ws.frames);
        if let Some(r) = rec {
            r.s = Some(s.clone());
            r.u.clone_from(&uj);
            r.wrench.clone_from(&u.body_wrench);
            r.dt = dt;
            r.frames.clone_from(&frames);
        }
        let info = self.step_with_contacts(model, ws, s, &uj, dt, &frames, out);
        ws.frames = frames;
        info
    }
}

impl DiffSolver for LcpSolver {
    /// Jᵀ ḡ with J from the tangent Jacobians at the recorded state and contact frames.
    #[allow(clippy::too_many_arguments)]
    fn step_vjp(
        &self,
        model: &Model,
        rec: &LcpRecord,
        g_out: &GenState,
        g_s: &mut GenState,
        g_u: &mut [f64],
        sel: &ParamSelection,
        g_theta: &mut [f64],
        ws: &mut LcpWorkspace,
    ) -> Result<(), SolverError> {
        let s = recorded(&rec.s, NAME)?;
        check_grad_sizes(NAME, model.nv(), g_u, sel, g_theta)?;
        let (mut jac, next) = self.jacobians_with_contacts(model, ws, s, &rec.u, rec.dt, &rec.frames, sel)?;
        ws.wrench.add_state_columns(&ws.dm, &mut ws.d, &s.q, &rec.wrench, &mut jac).map_err(dyn_err(NAME))?;
        transposed_jacobian_product(model, &s.q, &next.q, &jac, g_out, g_s, g_u, g_theta);
        Ok(())
    }

    /// Collision detection at s.q in the caller's workspace, then the tangent Jacobians.
    #[allow(clippy::too_many_arguments)]
    fn step_jacobians_into(
        &self,
        model: &Model,
        s: &GenState,
        u: &Control,
        dt: f64,
        sel: &ParamSelection,
        ws: &mut LcpWorkspace,
        out: &mut StepJacobians,
    ) -> Result<(), SolverError> {
        self.detect(model, ws, &s.q, &s.warm)?;
        ws.cache.refresh(model, &mut ws.dm).map_err(dyn_err(NAME))?;
        let uj = ws.wrench.effective(&ws.dm, &mut ws.d, &s.q, u).map_err(dyn_err(NAME))?.to_vec();
        let frames = std::mem::take(&mut ws.frames);
        let r = self.jacobians_with_contacts(model, ws, s, &uj, dt, &frames, sel);
        ws.frames = frames;
        out.assign(&r?.0);
        ws.wrench.add_state_columns(&ws.dm, &mut ws.d, &s.q, &u.body_wrench, out).map_err(dyn_err(NAME))?;
        Ok(())
    }

    fn wrench_vjp(
        &self,
        model: &Model,
        rec: &LcpRecord,
        g_u: &[f64],
        g_w: &mut [f64],
        ws: &mut LcpWorkspace,
    ) -> Result<(), SolverError> {
        let _ = model;
        let s = recorded(&rec.s, NAME)?;
        wrench_vjp(NAME, &ws.dm, &mut ws.d, &s.q, g_u, g_w)
    }

    fn control_dim(&self, model: &Model) -> usize {
        model.nv()
    }
}

/// The classes of the last step's LCPs (impact, step), for tests and reports.
pub fn classes(r: &LcpReport) -> (Option<&[Class]>, Option<&[Class]>) {
    (
        r.impact.as_ref().map(|s| s.answer.solution.classes.as_slice()),
        r.step.as_ref().map(|s| s.answer.solution.classes.as_slice()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mjcf(xml: &str) -> Model {
        torsion_model::io::mjcf::load_mjcf_str(xml, "scene.xml", None).unwrap()
    }

    /// (A, B, C) of `step_jacobians` (collision detection inside) against central differences of `Solver::step`
    /// (contacts re-detected at every perturbed input; h = 1e-5: collision detection's rounding, ~1e-12 m, would
    /// show at 1e-6 through 1/h): the worst relative error max |an − fd| / max(1, max |fd|) of each block, and the
    /// step's report.
    fn vs_fd(solver: &LcpSolver, m: &Model, s: &GenState, u: &[f64], sel: &ParamSelection) -> ([f64; 3], LcpReport) {
        let dt = 0.01;
        let jac = solver.step_jacobians(m, s, &Control::from_torques(u), dt, sel).unwrap();
        let next = |mm: &Model, st: &GenState, uu: &[f64]| {
            let mut ws = Solver::workspace(solver, mm).unwrap();
            let mut o = st.clone();
            solver.step(mm, st, &Control::from_torques(uu), dt, &mut o, &mut ws, None).unwrap();
            (o, ws.report)
        };
        let (base, report) = next(m, s, u);
        let (n, nv, ns, h) = (2 * m.nv(), m.nv(), sel.len(), 1e-5);
        let mut fd = [DMatrix::zeros(n, n), DMatrix::zeros(n, nv), DMatrix::zeros(n, ns)];
        for k in 0..n + nv + ns {
            let side = |sign: f64| {
                if k < n {
                    let mut d = vec![0.0; n];
                    d[k] = sign * h;
                    next(m, &solver.retract(m, s, &d), u).0
                } else if k < n + nv {
                    let mut uu = u.to_vec();
                    uu[k - n] += sign * h;
                    next(m, s, &uu).0
                } else {
                    let mut mm = m.clone();
                    let mut vals = m.params_get(sel);
                    vals[k - n - nv] += sign * h;
                    mm.params_set(sel, &vals).unwrap();
                    next(&mm, s, u).0
                }
            };
            let (p, q) = (solver.local_diff(m, &base, &side(1.0)), solver.local_diff(m, &base, &side(-1.0)));
            let (blk, col) = if k < n {
                (0, k)
            } else if k < n + nv {
                (1, k - n)
            } else {
                (2, k - n - nv)
            };
            for r in 0..n {
                fd[blk][(r, col)] = (p[r] - q[r]) / (2.0 * h);
            }
        }
        let err = |an: &DMatrix<f64>, f: &DMatrix<f64>| {
            if an.is_empty() {
                0.0
            } else {
                (an - f).amax() / f.amax().max(1.0)
            }
        };
        ([err(&jac.a, &fd[0]), err(&jac.b, &fd[1]), err(&jac.c, &fd[2])], report)
    }

    const BALL: &str = r#"<mujoco><worldbody><geom name="floor" type="plane" size="5 5 0.1" friction="0.2"/>
        <body name="ball"><freejoint/><geom name="ball" type="sphere" size="0.1" mass="1.3" friction="0.3"/></body>
        </worldbody></mujoco>"#;

    /// A ball sliding and spinning on a plane (friction at its bound, both position updates), pushed by the
    /// controls: A, B and C (the ball's friction μ and mass) against central differences (≤ 1e-6).
    #[test]
    fn sliding_ball_jacobians_match_finite_differences() {
        let m = mjcf(BALL);
        let sel = ParamSelection::by_names(&m, &["shape_friction[ball]", "body_mass[ball]"]).unwrap();
        let s = GenState::new(vec![0.1, -0.2, 0.0995, 1.0, 0.0, 0.0, 0.0], vec![0.4, -0.3, 1.1, 1.2, -0.5, -0.05]);
        let u = [0.02, -0.01, 0.03, 0.5, 0.2, -0.4];
        for position in [PositionUpdate::Parallel, PositionUpdate::SemiImplicit] {
            let solver = LcpSolver::new(LcpOptions { position, ..Default::default() });
            let (e, r) = vs_fd(&solver, &m, &s, &u, &sel);
            let cl = classes(&r).1.unwrap().to_vec();
            eprintln!("sliding ball ({position:?}): classes {cl:?}, A {:.1e}, B {:.1e}, C {:.1e}", e[0], e[1], e[2]);
            assert!(matches!(cl[1], Class::Nh | Class::Nl) && cl[0] == Class::C, "sliding: {cl:?}");
            assert!(e.iter().all(|&x| x < 1e-6), "{e:?}");
        }
    }

    /// A ball striking the plane at an angle with ε = 0.5 (the impact LCP, then the step's): A, B and C (the
    /// ball's restitution ε and friction μ, the pair's larger values) against central differences (≤ 1e-6).
    #[test]
    fn bouncing_ball_jacobians_match_finite_differences() {
        let mut m = mjcf(BALL);
        m.param_set_by_name("shape_restitution[ball]", 0.5).unwrap();
        m.param_set_by_name("shape_friction[ball]", 0.4).unwrap();
        let sel = ParamSelection::by_names(&m, &["shape_restitution[ball]", "shape_friction[ball]"]).unwrap();
        let s = GenState::new(vec![0.0, 0.0, 0.1004, 1.0, 0.0, 0.0, 0.0], vec![0.3, 0.2, -0.5, 1.5, 0.4, -2.0]);
        let u = [0.0, 0.01, 0.0, 0.3, 0.0, 0.1];
        let (e, r) = vs_fd(&LcpSolver::default(), &m, &s, &u, &sel);
        assert!(r.impact.is_some() && r.bounce == [true], "the ball bounces: {:?}", r.bounce);
        eprintln!("bouncing ball: classes {:?}, A {:.1e}, B {:.1e}, C {:.1e}", classes(&r), e[0], e[1], e[2]);
        assert!(e.iter().all(|&x| x < 1e-6), "{e:?}");
    }

    /// Two balls meeting off-centre with sliding friction (sphere–sphere, the normal on the line of centres):
    /// A and B against central differences.
    #[test]
    fn two_balls_off_centre_jacobians_match_finite_differences() {
        let m = mjcf(
            r#"<mujoco><option gravity="0 0 0"/><worldbody>
            <body><freejoint/><geom type="sphere" size="0.1" mass="1" friction="0.2"/></body>
            <body><freejoint/><geom type="sphere" size="0.12" mass="2" friction="0.2"/></body>
            </worldbody></mujoco>"#,
        );
        let s = GenState::new(
            vec![0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.215, 0.05, 0.02, 1.0, 0.0, 0.0, 0.0],
            vec![0.5, 0.0, 1.0, 2.0, 0.3, 0.0, 0.0, -0.2, 0.0, -0.5, 0.0, 0.1],
        );
        let (e, r) = vs_fd(&LcpSolver::default(), &m, &s, &[0.0; 12], &ParamSelection::none());
        eprintln!("two balls: classes {:?}, A {:.1e}, B {:.1e}", classes(&r), e[0], e[1]);
        assert_eq!(r.contacts, 1);
        assert!(e[0] < 1e-6 && e[1] < 1e-6, "{e:?}");
    }
}
