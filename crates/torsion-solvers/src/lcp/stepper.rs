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
//! geometry carried by `contact::anchor::Anchor` with the contact set held fixed.
//!
//! **CCD / TOI backtracking** (§3.5, §3.7; `LcpOptions::ccd`, on by default; D4–D6): a step is a chain of
//! sub-steps. Each starts with collision detection and the impact g (Eq. 8, Δt = 0) when a *touching* contact
//! (φ ≤ `touch`) approaches (restitution on those faster than the bounce threshold, plastic below it) or a
//! *speculative* one would cross within the step (the other contacts of a touching pair, which the CCD does not
//! search, or of every pair once the impacts are capped: b = J_n v + φ/t_rem, D5), then
//! `ccd::first_impact` searches the sub-step's position path q ⊕ s h v⁺ for the first time of impact t*; the smooth
//! sub-step f (the DCD step above without its speculative bounce) runs to t* (the next sub-step starts in contact
//! and strikes it) or to the step's end. At most `max_impacts` impacts per step, the rest by DCD; an impact within
//! `min_substep` of the end is left to the next step (Zeno guard). Gradients (§3.8): t* is differentiated through
//! the gap at the TOI, φ(q ⊕ t* v⁺) = 0 ⇒ dt* = −(∂φ/∂x · dx) / (dφ/dt), the gap's derivative carried by the anchor of
//! the impacting contact; each sub-step's length is a dual number (t*, and Δt − Σ t* for the last), so the chain
//! rule of Eq. 6 is the same forward-mode pass as the rest.
use super::active_set::Class;
use super::backward::{JvpFactor, LcpTangent};
use super::ccd::{first_impact, CcdOptions, CcdScratch};
use super::dense::{copy_vec, zeroed};
use super::pgs::PgsOptions;
use super::problem::{lcp_system_into, BoxedLcp};
use super::solution::LcpSolverKind;
use super::{solve_chain_into, ChainOptions, ChainScratch, ChainSolution};
use crate::contact::anchor::Anchor;
use crate::contact::buffers::{copy_matrix, reshape_zeroed};
use crate::contact::frames::{body_joints, detect_into, pair_source, ContactFrame, ContactGeom};
use crate::contact::prelude::{
    apply_impulses_into, check_sizes, dyn_err, prelude_into_dt, Prelude, PreludeOptions, StepInputs,
};
use crate::contact::warm::warm_impulse;
use crate::contact::ContactStep;
use crate::generalized::{
    check_nq, dual_tangent, transposed_jacobian_product_with, wrench_vjp, ContactWarmStart, DynCache, GenState,
    ProductScratch, StepInput, WrenchTerm,
};
use crate::solver::{check_grad_sizes, DiffSolver, Solver, SolverError, StepInfo, StepJacobians};
use nalgebra::{DMatrix, DVector};
use num_dual::Dual64;
use torsion_collision::{CollisionWorld, Contacts};
use torsion_dynamics::joints::{advance_into, integrate_scaled_into};
use torsion_dynamics::{forward_kinematics, DynData, DynModel};
use torsion_math::{Quat, Scalar, Vec3};
use torsion_model::params::ParamKind;
use torsion_model::{Control, JointType, Model, ParamSelection, ParamTable, Shape};

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
    /// the LCP solvers: Jade's Dantzig, then PGS (D10), here with 10,000 sweeps and tolerance 1e-9 (stacks:
    /// rank-deficient A, where Jade's Dantzig may fail and PGS converges slowly; a stack landed exactly by CCD
    /// stalls PGS at a natural-map residual ~2e-10 · ‖b‖, far inside the validity check's 1e-6)
    pub chain: ChainOptions,
    pub position: PositionUpdate,
    /// approach speed (m/s) above which a contact with ε > 0 bounces (DART: 0.1; D7)
    pub bounce_threshold: f64,
    /// collision detection; default: speculative margin 0.01 m and box faces completed, as ncp (docs/decisions.md row 2)
    pub collision: torsion_collision::CollisionOptions,
    /// apply the model's joint damping and springs (explicitly) in v*
    pub passive: bool,
    /// Baumgarte gain (1/s) on the penetration; 0 = off (the spec's reference code has no correction)
    pub baumgarte: f64,
    /// continuous collision detection and TOI backtracking (on by default; needs the parallel update)
    pub ccd: CcdOptions,
}

impl Default for LcpOptions {
    fn default() -> Self {
        LcpOptions {
            chain: ChainOptions {
                pgs: Some(PgsOptions { max_sweeps: 10_000, tol: 1e-9, ..Default::default() }),
                stall_every: 100,
                ..Default::default()
            },
            position: PositionUpdate::Parallel,
            bounce_threshold: 0.1,
            collision: torsion_collision::CollisionOptions {
                margin: 0.01,
                complete_box_faces: true,
                ..Default::default()
            },
            passive: true,
            baumgarte: 0.0,
            ccd: CcdOptions::default(),
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

impl SolvedLcp {
    /// Storage for a solve.
    fn empty() -> Self {
        SolvedLcp { lcp: BoxedLcp::empty(), answer: ChainSolution::empty() }
    }
}

/// What the last step solved.
#[derive(Clone, Debug, Default)]
pub struct LcpReport {
    pub contacts: usize,
    /// per contact: bounced in the impact
    pub bounce: Vec<bool>,
    /// the contacts in the impact LCP (DCD: all when some bounce; CCD: the sub-step's, touching and speculative, when one is struck)
    pub impact_set: Vec<usize>,
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
    /// the sub-steps of the last step (one without CCD or impact)
    pub tape: Vec<Segment>,
    /// time-of-impact searches' buffers and count
    pub ccd: CcdScratch,
    /// the bodies' world poses for collision detection
    poses: Vec<(Vec3, Quat)>,
    /// the body wrenches' generalized forces and their q-columns (`Control::body_wrench`)
    wrench: WrenchTerm,
    buf: StepBuffers,
    /// the Jacobians' tangent passes (built at the first derivative)
    tan: Option<Box<TangentScratch>>,
}

impl LcpWorkspace {
    /// The output state of the step of the last Jacobians (`LcpSolver::jacobians_into`, `step_vjp`).
    pub fn jacobians_state(&self) -> Option<&GenState> {
        self.tan.as_ref().map(|t| &t.next)
    }

    /// The singular active-set systems the steps' LCP solves and the Jacobians' LCP derivatives (one per solved
    /// LCP and call, whatever the directions) met so far (D11).
    pub fn singular_solves(&self) -> usize {
        self.buf.chain.singular_solves() + self.tan.as_ref().map_or(0, |t| t.singular)
    }

    /// Of [`LcpWorkspace::singular_solves`], the steps' LCP solves'.
    pub fn singular_step_solves(&self) -> usize {
        self.buf.chain.singular_solves()
    }
}

/// The buffers of `step` (design.md §7: no heap allocation in a step once they have grown to the largest contact
/// set and sub-step count seen).
#[derive(Default)]
struct StepBuffers {
    pre: Prelude<f64>,
    geoms: Vec<ContactGeom<f64>>,
    /// offsets, impulses (λ_n, λ_t) and v⁺ of a solve
    bn: Vec<f64>,
    bt: Vec<f64>,
    ln: Vec<f64>,
    lt: Vec<f64>,
    vplus: Vec<f64>,
    /// the generalized forces of the step (u + the body wrenches')
    uj: Vec<f64>,
    /// `step_jacobians_into`'s step input (its Jacobians are those of a recorded step)
    input: StepInput,
    /// the state at a sub-step's start, after its impact, at its end
    x: GenState,
    start: GenState,
    next: GenState,
    /// the impacting pairs of the step
    pairs: Vec<(usize, usize)>,
    /// the shape pairs with a touching contact at a sub-step's start (their other contacts are speculative, D5)
    touching_pairs: Vec<[usize; 2]>,
    /// earlier steps' sub-steps and solved LCPs, kept for their storage
    segments: Vec<Segment>,
    lcps: Vec<SolvedLcp>,
    /// the LCP chain's buffers
    chain: ChainScratch,
}

/// One sub-step of a step (spec 004 §3.7), kept for its derivative: from (q, v) the impact g on touching contacts
/// (CCD), then the smooth sub-step f of length h from (q, v⁺).
#[derive(Clone, Debug, Default)]
pub struct Segment {
    pub q: Vec<f64>,
    pub v: Vec<f64>,
    /// v after the impact g (= v without one)
    pub v_struck: Vec<f64>,
    /// the contacts detected at q
    pub frames: Vec<ContactFrame>,
    /// the impact g (CCD only): `impact`, `bounce`, `impact_set`
    pub g: LcpReport,
    /// the smooth sub-step f (DCD: its speculative impact too)
    pub f: LcpReport,
    pub h: f64,
    /// the sub-step ends at this time of impact
    pub toi: Option<Toi>,
}

/// A time of impact ending a sub-step: the impacting pair's contact at the TOI configuration (the next sub-step's
/// start), whose gap φ defines t* (§3.8).
#[derive(Clone, Debug)]
pub struct Toi {
    pub shapes: (usize, usize),
    pub contact: ContactFrame,
}

/// What `step` saves for `step_vjp` (the step is re-run from it, detection and CCD included).
pub type LcpRecord = StepInput;

fn collision_err(e: torsion_collision::CollisionError) -> SolverError {
    crate::contact::frames::collision_err(NAME)(e)
}

fn lcp_err(e: super::problem::LcpError) -> SolverError {
    SolverError::BadInput { solver: NAME, problem: e.to_string() }
}

/// u_k = J_n(k) v and the bounce set of the DCD impact (see the module doc): ε > 0, u_k < −v_bounce, touching or
/// closing within the step. Decided on values; held fixed in the tangent passes (docs/gradients.md).
fn bounce_set(
    pre: &Prelude<f64>,
    contacts: &[ContactGeom<f64>],
    v: &[f64],
    dt: f64,
    threshold: f64,
    bounce: &mut Vec<bool>,
) {
    bounce.clear();
    bounce.extend((0..contacts.len()).map(|k| {
        let c = &contacts[k];
        let u: f64 = (0..v.len()).map(|j| pre.jn[(k, j)] * v[j]).sum();
        c.restitution > 0.0 && u < -threshold && (c.distance <= 0.0 || u * dt + c.distance <= 0.0)
    }));
}

/// The CCD impact g (§3.4, D5): (bounce, impact set). A sub-step's contacts are touching (φ ≤ `touch`) or
/// speculative (of a pair the CCD does not search: one already touching, or any once the impacts are capped); the
/// impact LCP holds them all when a touching one approaches (u_k < −`touch_speed`) or a speculative one would cross
/// within the rest of the step t_rem (u_k t_rem + φ_k < 0). Restitution on touching contacts approaching faster
/// than the bounce threshold (ε > 0), plastic (b' = u) on the others. Decided on values; held fixed in the tangent
/// passes.
fn impact_set(
    pre: &Prelude<f64>,
    contacts: &[ContactGeom<f64>],
    v: &[f64],
    rem: f64,
    o: &LcpOptions,
    report: &mut LcpReport,
) {
    let u = |k: usize| -> f64 { (0..v.len()).map(|j| pre.jn[(k, j)] * v[j]).sum() };
    let touching = |k: usize| contacts[k].distance <= o.ccd.touch;
    let nc = contacts.len();
    report.bounce.clear();
    report.bounce.extend((0..nc).map(|k| touching(k) && contacts[k].restitution > 0.0 && u(k) < -o.bounce_threshold));
    let struck =
        (0..nc).any(|k| if touching(k) { u(k) < -o.ccd.touch_speed } else { u(k) * rem + contacts[k].distance < 0.0 });
    report.impact_set.clear();
    if struck {
        report.impact_set.extend(0..nc);
    }
}

/// The impact's offsets (§3.4 Eq. 7–8 with restitution on bouncing normals only): b'_n = (1 + ε) J_n v on bouncing
/// normals, J_n v + φ⁺/h on the others where `gap_row` (DCD: all; the CCD impact: its speculative rows, h = t_rem,
/// D5), J_n v elsewhere and at h = 0; b'_t = J_t v; on any scalar, into (bn, bt) (refilled in place).
#[allow(clippy::too_many_arguments)]
fn impact_offsets<T: Scalar>(
    pre: &Prelude<T>,
    contacts: &[ContactGeom<T>],
    v: &[T],
    h: T,
    bounce: &[bool],
    gap_row: impl Fn(usize) -> bool,
    bn: &mut Vec<T>,
    bt: &mut Vec<T>,
) {
    let dot = |j: &DMatrix<T>, r: usize| (0..v.len()).fold(T::zero(), |acc, k| acc + j[(r, k)] * v[k]);
    bn.clear();
    bn.extend((0..contacts.len()).map(|k| {
        let u = dot(&pre.jn, k);
        let c = &contacts[k];
        if bounce[k] {
            (T::one() + c.restitution) * u
        } else if c.distance.re() > 0.0 && h.re() > 0.0 && gap_row(k) {
            u + c.distance / h
        } else {
            u
        }
    }));
    bt.clear();
    bt.extend((0..2 * contacts.len()).map(|r| dot(&pre.jt, r)));
}

/// (λ_n, λ_t) of a λ in the (n, t1, t2) layout, on any scalar, into (ln, lt) (refilled in place).
fn split_into<T: Scalar>(lambda: &[T], ln: &mut Vec<T>, lt: &mut Vec<T>) {
    let nc = lambda.len() / 3;
    ln.clear();
    ln.extend((0..nc).map(|i| lambda[3 * i]));
    lt.clear();
    lt.extend((0..2 * nc).map(|r| lambda[3 * (r / 2) + 1 + r % 2]));
}

/// `dst` ← `src`, reusing `dst`'s storage (a derived `clone_from` would allocate).
/// An empty report of `nc` contacts; its solved LCPs go to `lcps` for reuse.
fn reset_report(r: &mut LcpReport, nc: usize, lcps: &mut Vec<SolvedLcp>) {
    r.contacts = nc;
    r.bounce.clear();
    r.impact_set.clear();
    lcps.extend([r.impact.take(), r.step.take()].into_iter().flatten());
}

/// The last step's report: the impact of `g` (CCD: the last sub-step's impact; DCD: the step's speculative one) and
/// the step LCP of `f`, copied into `dst`'s storage.
fn copy_report(dst: &mut LcpReport, g: &LcpReport, f: &LcpReport, lcps: &mut Vec<SolvedLcp>) {
    dst.contacts = f.contacts;
    dst.bounce.clone_from(&g.bounce);
    dst.impact_set.clone_from(&g.impact_set);
    copy_solved(&mut dst.impact, &g.impact, lcps);
    copy_solved(&mut dst.step, &f.step, lcps);
}

/// The last step's sub-steps to the spare ones (their storage is reused).
fn recycle_tape(ws: &mut LcpWorkspace) {
    let LcpWorkspace { tape, buf, .. } = ws;
    buf.segments.append(tape);
}

/// `dst` ← a copy of `src` in reused storage (`dst`'s, or one from `lcps`; an emptied one goes to `lcps`).
fn copy_solved(dst: &mut Option<SolvedLcp>, src: &Option<SolvedLcp>, lcps: &mut Vec<SolvedLcp>) {
    let Some(s) = src else {
        lcps.extend(dst.take());
        return;
    };
    let d = dst.get_or_insert_with(|| lcps.pop().unwrap_or_else(SolvedLcp::empty));
    copy_matrix(&mut d.lcp.a, &s.lcp.a);
    copy_vec(&mut d.lcp.b, &s.lcp.b);
    d.lcp.rows.clone_from(&s.lcp.rows);
    let (da, sa) = (&mut d.answer, &s.answer);
    da.failed.clone_from(&sa.failed);
    da.min_norm = sa.min_norm;
    da.solution.copy_from(&sa.solution);
}

/// Assemble the LCP of `contacts` with offsets (bn, bt) in reused storage and solve it with the chain; no valid
/// answer is an error naming the phase and every attempt.
#[allow(clippy::too_many_arguments)]
fn solve_contacts(
    pre: &Prelude<f64>,
    contacts: &[ContactGeom<f64>],
    bn: &[f64],
    bt: &[f64],
    lcps: &mut Vec<SolvedLcp>,
    chain: &mut ChainScratch,
    o: &ChainOptions,
    phase: &str,
) -> Result<SolvedLcp, SolverError> {
    let mut s = lcps.pop().unwrap_or_else(SolvedLcp::empty);
    s.lcp.assign_contacts(pre, contacts, bn, bt).map_err(lcp_err)?;
    match solve_chain_into(&s.lcp, o, chain, &mut s.answer) {
        Ok(()) => Ok(s),
        Err(f) => Err(SolverError::NoSolution {
            solver: NAME,
            problem: format!(
                "the {phase} LCP ({} contacts): {f}; attempts: {:?}",
                s.lcp.len() / 3,
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
        check_sizes(NAME, nq, nv, &s.q, &s.v, u)?;
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

    /// The CCD impact g at (q, v), Δt = 0 (§3.4, Eq. 8), on the sub-step's contacts (`impact_set`; `rem`: the rest of the
    /// step, t_rem): v⁺, and the impact's LCP in `report` (v⁺ = v when nothing is struck).
    #[allow(clippy::too_many_arguments)]
    fn impact_value(
        &self,
        model: &Model,
        ws: &mut LcpWorkspace,
        q: &[f64],
        v: &[f64],
        u: &[f64],
        rem: f64,
        contacts: &[ContactFrame],
        report: &mut LcpReport,
        vs: &mut Vec<f64>,
    ) -> Result<(), SolverError> {
        let o = &self.options;
        let nc = contacts.len();
        reset_report(report, nc, &mut ws.buf.lcps);
        vs.clear();
        vs.extend_from_slice(v);
        if nc == 0 {
            return Ok(());
        }
        ws.dm.gravity = torsion_math::scalar::cv(&model.gravity);
        let po = self.prelude_options();
        let LcpWorkspace { dm, d, body_joint, buf, .. } = ws;
        let StepBuffers { pre, geoms, bn, bt, ln, lt, lcps, chain, .. } = buf;
        geoms.clear();
        geoms.extend(contacts.iter().map(|c| c.geom.clone()));
        let x = StepInputs { model, dm, body_joint, q, v, u, dt: 0.0, contacts: geoms, o: &po };
        prelude_into_dt(&x, 0.0, d, pre)?;
        impact_set(pre, geoms, v, rem, o, report);
        if report.impact_set.is_empty() {
            return Ok(());
        }
        let touch = o.ccd.touch;
        impact_offsets(pre, geoms, v, rem, &report.bounce, |k| geoms[k].distance > touch, bn, bt);
        let imp = solve_contacts(pre, geoms, bn, bt, lcps, chain, &o.chain, "impact")?;
        split_into(imp.answer.solution.lambda.as_slice(), ln, lt);
        report.impact = Some(imp);
        // Δt = 0: v^p = v, so v⁺ = v + M⁻¹ Jᵀ λ
        apply_impulses_into(pre, ln, lt, vs);
        Ok(())
    }

    /// The smooth sub-step f from (s.q, s.v) over h = `x.dt` with the given contacts (`dcd_impact`: with the DCD
    /// speculative bounce first), into `out` and `report`.
    fn smooth_value(
        &self,
        x: &ContactStep,
        ws: &mut LcpWorkspace,
        dcd_impact: bool,
        report: &mut LcpReport,
        out: &mut GenState,
    ) -> Result<(), SolverError> {
        let ContactStep { model, s, u, dt: h, contacts } = *x;
        let o = &self.options;
        ws.dm.gravity = torsion_math::scalar::cv(&model.gravity);
        let po = self.prelude_options();
        let nc = contacts.len();
        reset_report(report, nc, &mut ws.buf.lcps);
        let LcpWorkspace { dm, d, body_joint, buf, .. } = ws;
        let StepBuffers { pre, geoms, bn, bt, ln, lt, vplus, lcps, chain, .. } = buf;
        geoms.clear();
        geoms.extend(contacts.iter().map(|c| c.geom.clone()));
        let x = StepInputs { model, dm, body_joint, q: &s.q, v: &s.v, u, dt: h, contacts: geoms, o: &po };
        prelude_into_dt(&x, h, d, pre)?;
        if nc > 0 {
            if dcd_impact {
                bounce_set(pre, geoms, &s.v, h, o.bounce_threshold, &mut report.bounce);
            } else {
                report.bounce.resize(nc, false);
            }
            if report.bounce.iter().any(|&b| b) {
                impact_offsets(pre, geoms, &s.v, h, &report.bounce, |_| true, bn, bt);
                let imp = solve_contacts(pre, geoms, bn, bt, lcps, chain, &o.chain, "impact")?;
                split_into(imp.answer.solution.lambda.as_slice(), ln, lt);
                pre.after_impact_dt(&x, h, d, ln, lt)?;
                report.impact = Some(imp);
                report.impact_set.extend(0..nc);
            }
            let st = solve_contacts(pre, geoms, &pre.bn, &pre.bt, lcps, chain, &o.chain, "step")?;
            split_into(st.answer.solution.lambda.as_slice(), ln, lt);
            apply_impulses_into(pre, ln, lt, vplus);
            out.warm.fill(contacts.iter().enumerate().map(|(i, c)| warm_impulse(c, ln[i], [lt[2 * i], lt[2 * i + 1]])));
            report.step = Some(st);
        } else {
            vplus.clone_from(&pre.vp);
            out.warm.clear();
        }
        out.q.resize(dm.nq, 0.0);
        out.v.resize(dm.nv, 0.0);
        out.act.clear();
        advance(dm, o.position, &s.q, &s.v, vplus, h, &mut out.q, &mut out.v);
        if out.q.iter().chain(&out.v).any(|x| !x.is_finite()) {
            return Err(SolverError::NonFinite { solver: NAME, what: "(q or v)".into() });
        }
        Ok(())
    }

    /// One DCD step with the given contacts `x.contacts` (from collision detection at `x.s.q`), no CCD; the solved
    /// LCPs go to `ws.report` and the one-segment `ws.tape`.
    pub fn step_with_contacts(
        &self,
        x: &ContactStep,
        ws: &mut LcpWorkspace,
        out: &mut GenState,
    ) -> Result<StepInfo, SolverError> {
        let ContactStep { s, u, dt, contacts, .. } = *x;
        self.check(ws, s, u, dt)?;
        recycle_tape(ws);
        let mut seg = ws.buf.segments.pop().unwrap_or_default();
        self.smooth_value(x, ws, true, &mut seg.f, out)?;
        reset_report(&mut seg.g, 0, &mut ws.buf.lcps);
        seg.q.clone_from(&s.q);
        seg.v.clone_from(&s.v);
        seg.v_struck.clone_from(&s.v);
        seg.frames.clear();
        seg.frames.extend_from_slice(contacts);
        (seg.h, seg.toi) = (dt, None);
        ws.tape.push(seg);
        let LcpWorkspace { tape, report, buf, .. } = ws;
        copy_report(report, &tape[0].f, &tape[0].f, &mut buf.lcps);
        Ok(step_info(tape))
    }

    /// One step from collision detection at `s.q`: DCD (`ccd.enabled = false`) or with CCD / TOI backtracking
    /// (§3.7, see the module doc), detection at each sub-step's start.
    fn run_step(
        &self,
        model: &Model,
        ws: &mut LcpWorkspace,
        s: &GenState,
        u: &[f64],
        dt: f64,
        out: &mut GenState,
    ) -> Result<StepInfo, SolverError> {
        check_nq(NAME, model, s)?;
        if !self.options.ccd.enabled {
            self.detect(model, ws, &s.q, &s.warm)?;
            let frames = std::mem::take(&mut ws.frames);
            let info = self.step_with_contacts(&ContactStep { model, s, u, dt, contacts: &frames }, ws, out);
            ws.frames = frames;
            return info;
        }
        self.check(ws, s, u, dt)?;
        if self.options.position != PositionUpdate::Parallel {
            return Err(SolverError::BadInput {
                solver: NAME,
                problem: "CCD follows the parallel position update (spec 004 D1); with the semi-implicit update set \
                          ccd.enabled = false (DCD)"
                    .into(),
            });
        }
        recycle_tape(ws);
        let (mut x, mut next) = (std::mem::take(&mut ws.buf.x), std::mem::take(&mut ws.buf.next));
        let mut pairs = std::mem::take(&mut ws.buf.pairs);
        x.copy_from(s);
        pairs.clear();
        let r = self.substeps(model, ws, &mut x, &mut next, &mut pairs, u, dt);
        if r.is_ok() {
            out.copy_from(&x);
        }
        (ws.buf.x, ws.buf.next, ws.buf.pairs) = (x, next, pairs);
        r?;
        let LcpWorkspace { tape, report, buf, .. } = ws;
        let last = tape.last().expect("one segment");
        copy_report(report, &last.g, &last.f, &mut buf.lcps);
        Ok(step_info(tape))
    }

    /// The sub-steps of a CCD step from `x` (left at the step's end; `next`: a buffer), each impacting pair in
    /// `pairs`, into `ws.tape`.
    #[allow(clippy::too_many_arguments)]
    fn substeps(
        &self,
        model: &Model,
        ws: &mut LcpWorkspace,
        x: &mut GenState,
        next: &mut GenState,
        pairs: &mut Vec<(usize, usize)>,
        u: &[f64],
        dt: f64,
    ) -> Result<(), SolverError> {
        let o = &self.options.ccd;
        let mut t_rem = dt;
        for k in 0..=o.max_impacts {
            self.detect(model, ws, &x.q, &x.warm)?;
            // the impacting pair's closest contact is touching by construction of t* (φ := min(φ, 0): parry's
            // manifold distance of two polyhedra may exceed the TOI root's GJK distance)
            if let Some(&(a, b)) = pairs.last() {
                let of_pair = |c: &ContactFrame| c.shapes == Some([a, b]) || c.shapes == Some([b, a]);
                let closest = (0..ws.frames.len())
                    .filter(|&i| of_pair(&ws.frames[i]))
                    .min_by(|&i, &j| ws.frames[i].distance.total_cmp(&ws.frames[j].distance));
                if let Some(i) = closest {
                    ws.frames[i].distance = ws.frames[i].distance.min(0.0);
                }
            }
            // the touching contacts, and the speculative ones (D5): the others of a pair that touches (the CCD does
            // not search it) or, once the impacts are capped, of every pair (the rest of the step is DCD). A gap of
            // a searched pair is the CCD's (an LCP row on it would sit at its mode switch, b ≈ 0, by construction
            // of t*)
            let capped = k == o.max_impacts;
            let LcpWorkspace { frames, buf, .. } = &mut *ws;
            let touching = &mut buf.touching_pairs;
            touching.clear();
            touching.extend(frames.iter().filter(|c| c.distance <= o.touch).filter_map(|c| c.shapes));
            frames.retain(|c| capped || c.distance <= o.touch || c.shapes.is_some_and(|p| touching.contains(&p)));
            let frames = std::mem::take(&mut ws.frames);
            let mut seg = ws.buf.segments.pop().unwrap_or_default();
            let r = self.impact_value(model, ws, &x.q, &x.v, u, t_rem, &frames, &mut seg.g, &mut seg.v_struck);
            let toi = match r {
                Ok(()) if !capped => first_impact(model, &ws.world, &ws.dm, &x.q, &seg.v_struck, t_rem, o, &mut ws.ccd)
                    .map(|t| t.filter(|i| (1.0 - i.s) * t_rem > o.min_substep)),
                Ok(()) => Ok(None),
                Err(e) => Err(e),
            };
            let toi = match toi {
                Ok(t) => t,
                Err(e) => {
                    ws.frames = frames;
                    return Err(e);
                }
            };
            let h = toi.map_or(t_rem, |i| i.s * t_rem);
            let mut start = std::mem::take(&mut ws.buf.start);
            start.copy_from(x);
            start.v.clone_from(&seg.v_struck);
            let at = ContactStep { model, s: &start, u, dt: h, contacts: &frames };
            let r = self.smooth_value(&at, ws, false, &mut seg.f, next);
            ws.buf.start = start;
            seg.q.clone_from(&x.q);
            seg.v.clone_from(&x.v);
            seg.frames.clone_from(&frames);
            (seg.h, seg.toi) = (h, None);
            ws.tape.push(seg);
            ws.frames = frames;
            r?;
            std::mem::swap(x, next);
            match toi {
                Some(i) => pairs.push(i.shapes),
                None => break,
            }
            t_rem -= h;
        }
        // each impacting pair's contact at the TOI configuration: its closest detected contact there
        for (k, &(a, b)) in pairs.iter().enumerate() {
            let c = ws.tape[k + 1]
                .frames
                .iter()
                .filter(|c| c.shapes == Some([a, b]) || c.shapes == Some([b, a]))
                .min_by(|p, q| p.distance.total_cmp(&q.distance))
                .cloned()
                .ok_or_else(|| SolverError::NoSolution {
                    solver: NAME,
                    problem: format!(
                        "CCD: no contact of shapes '{}' and '{}' detected at their time of impact",
                        model.shapes[a].name, model.shapes[b].name
                    ),
                })?;
            ws.tape[k].toi = Some(Toi { shapes: (a, b), contact: c });
        }
        Ok(())
    }

    /// The Jacobians of the step `step` recorded in `rec`, re-run from its input (detection and CCD as configured),
    /// into `out` (rows: 2nv tangent coordinates): A w.r.t. (q, v), B w.r.t. the nv generalized forces, C w.r.t. the
    /// selected parameters (dynamics parameters and the contact materials `shape_friction[·]`,
    /// `shape_restitution[·]`, seeded on the contacts whose pair value they supply, `pair_source`); the step's output
    /// state: [`LcpWorkspace::jacobians_state`]. No heap allocation once the workspace has held as large a step but
    /// the dual dynamics models, rebuilt when the model's parameters change.
    pub fn jacobians_into(
        &self,
        model: &Model,
        ws: &mut LcpWorkspace,
        rec: &LcpRecord,
        sel: &ParamSelection,
        out: &mut StepJacobians,
    ) -> Result<(), SolverError> {
        let (s, u, dt) = (rec.state(NAME)?, &rec.u[..], rec.dt);
        let mut tan = ws.tan.take().unwrap_or_else(|| Box::new(TangentScratch::new(model)));
        tan.next.copy_from(s);
        let r = self.run_step(model, ws, s, u, dt, &mut tan.next).and_then(|_| {
            let po = self.prelude_options();
            let tape = std::mem::take(&mut ws.tape);
            let r = self.tape_jacobians(model, ws, &mut tan, &tape, s, u, dt, sel, &po, out);
            ws.tape = tape;
            r
        });
        ws.tan = Some(tan);
        r
    }

    /// The Jacobians of the step recorded in `tape` (ending at `tan.next`) into `out`: one Dual64 pass per
    /// direction through every sub-step — impact g, time of impact t* (§3.8), smooth sub-step f of dual length —
    /// in `tan`'s buffers, each solved LCP's derivative factorised once for every direction (`JvpFactor`).
    #[allow(clippy::too_many_arguments)]
    fn tape_jacobians(
        &self,
        model: &Model,
        ws: &LcpWorkspace,
        tan: &mut TangentScratch,
        tape: &[Segment],
        s: &GenState,
        u: &[f64],
        dt: f64,
        sel: &ParamSelection,
        po: &PreludeOptions,
        out: &mut StepJacobians,
    ) -> Result<(), SolverError> {
        let o = &self.options;
        let nv = ws.dm.nv;
        tan.models(model, sel)?;
        let TangentScratch { table, base_dm, param_dm, segs, jvp, singular, d0, d, cols, b, next, .. } = tan;
        let base_dm = base_dm.as_ref().expect("built by models");
        let source = |c: &ContactFrame, val: fn(&Shape) -> f64, v: f64| -> Option<usize> {
            let s = c.shapes?;
            let (a, b) = (model.shapes.get(s[0])?, model.shapes.get(s[1])?);
            let k = pair_source(s, val(a), val(b));
            (val(&model.shapes[k]) == v).then_some(k)
        };
        // per segment: anchors at its start, material sources, and for a TOI the impacting contact's anchor at the
        // TOI configuration with the gap's rate dφ/dt there; each solved LCP's derivative, factorised
        let d0 = d0.get_or_insert_with(|| DynData::new(&ws.dm));
        let d = d.get_or_insert_with(|| DynData::new(base_dm));
        if segs.len() < tape.len() {
            segs.resize_with(tape.len(), SegTangent::default);
        }
        if jvp.len() < 3 * tape.len() {
            jvp.resize_with(3 * tape.len(), JvpFactor::default);
        }
        for (k, (seg, st)) in tape.iter().zip(segs.iter_mut()).enumerate() {
            forward_kinematics(&ws.dm, &seg.q, d0);
            st.anchors.clear();
            st.anchors.extend(seg.frames.iter().map(|c| Anchor::new(c, &d0.o_m[c.body_a], &d0.o_m[c.body_b])));
            st.mu_src.clear();
            st.mu_src
                .extend(seg.frames.iter().map(|c| source(c, |s| s.friction[0], c.mu).map(ParamKind::ShapeFriction)));
            st.eps_src.clear();
            st.eps_src.extend(
                seg.frames.iter().map(|c| source(c, |s| s.restitution, c.restitution).map(ParamKind::ShapeRestitution)),
            );
            st.toi = match &seg.toi {
                Some(t) => {
                    let c = &t.contact;
                    forward_kinematics(&ws.dm, &tape[k + 1].q, d0);
                    let an = Anchor::new(c, &d0.o_m[c.body_a], &d0.o_m[c.body_b]);
                    lift_into(&seg.q, &mut b.q);
                    lift_into(&seg.v_struck, &mut b.vs);
                    let phi = b.gap_along(base_dm, d, &an, c, Dual64::new(seg.h, 1.0));
                    // grazing (dφ/dt → 0): t* is not differentiable; its derivative is dropped (D8)
                    Some((an, if phi.eps < -1e-12 { phi.eps } else { f64::NEG_INFINITY }))
                }
                None => None,
            };
            for (f, solved) in jvp[3 * k..3 * k + 3].iter_mut().zip([&seg.g.impact, &seg.f.impact, &seg.f.step]) {
                if let Some(x) = solved {
                    let sol = &x.answer.solution;
                    f.factor(&x.lcp, &sol.lambda, &sol.classes).map_err(lcp_err)?;
                    *singular += f.singular as usize;
                }
            }
        }
        let ndir = 3 * nv + sel.len();
        reshape_zeroed(cols, 2 * nv, ndir);
        for dir in 0..ndir {
            let param = (dir >= 3 * nv).then(|| sel.indices[dir - 3 * nv]);
            let mat = param.map(|i| table.kinds[i]).filter(|k| k.is_contact_material());
            let dm = match param {
                Some(i) if mat.is_none() => param_dm[i].as_ref().expect("built by models"),
                _ => base_dm,
            };
            lift_into(&s.q, &mut b.q);
            if dir < nv {
                lift_into(&s.q, &mut b.q0);
                b.e.clear();
                b.e.resize(nv, Dual64::from(0.0));
                b.e[dir].eps = 1.0;
                integrate_scaled_into(dm, &b.q0, &b.e, Dual64::from(1.0), &mut b.q);
            }
            lift_into(&s.v, &mut b.v);
            if (nv..2 * nv).contains(&dir) {
                b.v[dir - nv].eps = 1.0;
            }
            lift_into(u, &mut b.u);
            if (2 * nv..3 * nv).contains(&dir) {
                b.u[dir - 2 * nv].eps = 1.0;
            }
            let mut used = Dual64::from(0.0);
            for (k, (seg, st)) in tape.iter().zip(segs.iter()).enumerate() {
                forward_kinematics(dm, &b.q, d);
                b.geoms.clear();
                for (i, (c, an)) in seg.frames.iter().zip(&st.anchors).enumerate() {
                    let mut g = an.geom(c, &d.o_m[c.body_a], &d.o_m[c.body_b]);
                    if mat.is_some() && mat == st.mu_src[i] {
                        g.mu.eps = 1.0;
                    }
                    if mat.is_some() && mat == st.eps_src[i] {
                        g.restitution.eps = 1.0;
                    }
                    b.geoms.push(g);
                }
                let PassBufs { pre, q, v, u: uu, vs, geoms, bn, bt, lam, pn, pt, lcp, .. } = &mut *b;
                // the impact g (Δt = 0)
                match &seg.g.impact {
                    Some(imp) => {
                        let zero = Dual64::from(0.0);
                        let x = StepInputs {
                            model,
                            dm,
                            body_joint: &ws.body_joint,
                            q,
                            v,
                            u: uu,
                            dt: 0.0,
                            contacts: geoms,
                            o: po,
                        };
                        prelude_into_dt(&x, zero, d, pre)?;
                        let (rem, touch) = (Dual64::from(dt) - used, o.ccd.touch);
                        let speculative = |k: usize| seg.frames[k].distance > touch;
                        impact_offsets(pre, geoms, v, rem, &seg.g.bounce, speculative, bn, bt);
                        lcp.tangent(imp, &mut jvp[3 * k], pre, geoms, bn, bt, lam);
                        split_into(lam, pn, pt);
                        apply_impulses_into(pre, pn, pt, vs);
                    }
                    None => vs.clone_from(v),
                }
                // the sub-step's length: t* through the gap at the TOI (φ(q ⊕ t* v⁺) = 0), or what is left
                let h = match &st.toi {
                    Some((an, rate)) => {
                        let c = &seg.toi.as_ref().expect("toi").contact;
                        let phi = b.gap_along(dm, d, an, c, Dual64::from(seg.h));
                        // rate = −∞ when grazing: the derivative of t* is dropped
                        Dual64::new(seg.h, -phi.eps / rate)
                    }
                    None => Dual64::from(dt) - used,
                };
                used += h;
                let PassBufs { pre, q, u: uu, vs, geoms, bn, bt, lam, pn, pt, vplus, q1, v1, lcp, .. } = &mut *b;
                // the smooth sub-step f (DCD: its speculative impact first)
                let x = StepInputs {
                    model,
                    dm,
                    body_joint: &ws.body_joint,
                    q,
                    v: vs,
                    u: uu,
                    dt: h.re,
                    contacts: geoms,
                    o: po,
                };
                prelude_into_dt(&x, h, d, pre)?;
                if let Some(imp) = &seg.f.impact {
                    impact_offsets(pre, geoms, vs, h, &seg.f.bounce, |_| true, bn, bt);
                    lcp.tangent(imp, &mut jvp[3 * k + 1], pre, geoms, bn, bt, lam);
                    split_into(lam, pn, pt);
                    pre.after_impact_dt(&x, h, d, pn, pt)?;
                }
                match &seg.f.step {
                    Some(stp) => {
                        lcp.tangent(stp, &mut jvp[3 * k + 2], pre, geoms, &pre.bn, &pre.bt, lam);
                        split_into(lam, pn, pt);
                        apply_impulses_into(pre, pn, pt, vplus);
                    }
                    None => vplus.clone_from(&pre.vp),
                }
                q1.clone_from(q);
                v1.clone_from(vplus);
                advance(dm, o.position, q, vs, vplus, h, q1, v1);
                std::mem::swap(&mut b.q, &mut b.q1);
                std::mem::swap(&mut b.v, &mut b.v1);
            }
            for j in 0..dm.parent.len() {
                let (qs, vs, jm) = (dm.q_start[j], dm.v_start[j], &dm.joint[j]);
                let t = dual_tangent(jm.kind, &next.q[qs..qs + jm.nq], &b.q[qs..qs + jm.nq]);
                for r in 0..jm.nv {
                    cols[(vs + r, dir)] = t[r];
                }
            }
            for k in 0..nv {
                cols[(nv + k, dir)] = b.v[k].eps;
            }
        }
        for (m, c0, n) in [(&mut out.a, 0, 2 * nv), (&mut out.b, 2 * nv, nv), (&mut out.c, 3 * nv, sel.len())] {
            reshape_zeroed(m, 2 * nv, n);
            m.copy_from(&cols.columns(c0, n));
        }
        Ok(())
    }
}

/// The tangent passes' buffers (`LcpSolver::jacobians_into`), kept in the workspace: the parameter table, the dual
/// dynamics models (the base one and each selected parameter's, rebuilt only when θ changed since they were
/// built), per sub-step its anchors, material sources and TOI, each solved LCP's derivative, one pass's buffers.
pub(crate) struct TangentScratch {
    table: ParamTable,
    theta: Vec<f64>,
    built_theta: Vec<f64>,
    th: Vec<Dual64>,
    base_dm: Option<DynModel<Dual64>>,
    param_dm: Vec<Option<DynModel<Dual64>>>,
    segs: Vec<SegTangent>,
    /// per sub-step: its impact g's, its impact f's, its step's
    jvp: Vec<JvpFactor>,
    /// the singular LCP derivatives factorised so far (D11)
    singular: usize,
    d0: Option<DynData<f64>>,
    d: Option<DynData<Dual64>>,
    cols: DMatrix<f64>,
    b: PassBufs,
    /// the step's output state
    next: GenState,
    /// `step_vjp`'s Jacobians and product buffers
    jac: StepJacobians,
    prod: ProductScratch,
}

/// What every pass reads of one sub-step: its contacts' anchors and material sources, the TOI's anchor and rate.
#[derive(Default)]
struct SegTangent {
    anchors: Vec<Anchor>,
    mu_src: Vec<Option<ParamKind>>,
    eps_src: Vec<Option<ParamKind>>,
    toi: Option<(Anchor, f64)>,
}

/// One tangent pass's buffers.
#[derive(Default)]
struct PassBufs {
    pre: Prelude<Dual64>,
    q0: Vec<Dual64>,
    e: Vec<Dual64>,
    q: Vec<Dual64>,
    v: Vec<Dual64>,
    u: Vec<Dual64>,
    /// v after the impact g
    vs: Vec<Dual64>,
    geoms: Vec<ContactGeom<Dual64>>,
    bn: Vec<Dual64>,
    bt: Vec<Dual64>,
    lam: Vec<Dual64>,
    pn: Vec<Dual64>,
    pt: Vec<Dual64>,
    vplus: Vec<Dual64>,
    q1: Vec<Dual64>,
    v1: Vec<Dual64>,
    lcp: LcpTangentBufs,
}

impl TangentScratch {
    fn new(model: &Model) -> Self {
        TangentScratch {
            table: model.param_table(),
            theta: vec![],
            built_theta: vec![],
            th: vec![],
            base_dm: None,
            param_dm: vec![],
            segs: vec![],
            jvp: vec![],
            singular: 0,
            d0: None,
            d: None,
            cols: DMatrix::from_vec(0, 0, vec![]),
            b: PassBufs::default(),
            next: GenState::new(vec![], vec![]),
            jac: StepJacobians::zeros(0, 0, 0),
            prod: ProductScratch::default(),
        }
    }

    /// The dual dynamics models at the model's θ with its gravity: the base one, and one per selected dynamics
    /// parameter (seeded); rebuilt (allocating) when θ changed since they were built, reused otherwise.
    fn models(&mut self, model: &Model, sel: &ParamSelection) -> Result<(), SolverError> {
        if sel.indices.iter().any(|&i| i >= self.table.len()) {
            return Err(SolverError::BadInput {
                solver: NAME,
                problem: "the parameter selection does not match the model".into(),
            });
        }
        let table = &self.table;
        self.theta.clear();
        self.theta.extend(table.kinds.iter().map(|&k| model.param_get(k)));
        let build = |th: &[Dual64]| -> Result<DynModel<Dual64>, SolverError> {
            let mut dm = DynModel::build(model, table, th).map_err(dyn_err(NAME))?;
            dm.gravity = torsion_math::scalar::cv(&model.gravity);
            Ok(dm)
        };
        lift_into(&self.theta, &mut self.th);
        if self.base_dm.is_none() || self.built_theta != self.theta {
            self.base_dm = Some(build(&self.th)?);
            self.param_dm.clear();
            self.param_dm.resize_with(table.len(), || None);
            self.built_theta.clone_from(&self.theta);
        }
        for &i in &sel.indices {
            if self.param_dm[i].is_none() && !table.kinds[i].is_contact_material() {
                self.th[i].eps = 1.0;
                let dm = build(&self.th);
                self.th[i].eps = 0.0;
                self.param_dm[i] = Some(dm?);
            }
        }
        let g = torsion_math::scalar::cv(&model.gravity);
        self.base_dm.iter_mut().chain(self.param_dm.iter_mut().flatten()).for_each(|dm| dm.gravity = g);
        Ok(())
    }
}

impl PassBufs {
    /// The gap φ of contact `c` (its anchor `an`) at q ⊕ t v (the parallel position path; q, v: the buffers'
    /// `q`, `vs`), on duals.
    fn gap_along(
        &mut self,
        dm: &DynModel<Dual64>,
        d: &mut DynData<Dual64>,
        an: &Anchor,
        c: &ContactFrame,
        t: Dual64,
    ) -> Dual64 {
        self.q1.clone_from(&self.q);
        self.v1.clone_from(&self.vs);
        advance_into(dm, &self.q, &self.vs, t, &mut self.q1, &mut self.v1);
        forward_kinematics(dm, &self.q1, d);
        an.geom(c, &d.o_m[c.body_a], &d.o_m[c.body_b]).distance
    }
}

/// `jac` taken out of its place (left empty: no allocation).
fn take_jac(jac: &mut StepJacobians) -> StepJacobians {
    std::mem::replace(jac, StepJacobians::zeros(0, 0, 0))
}

/// `out` ← `x` lifted to duals with zero tangents (refilled in place).
fn lift_into(x: &[f64], out: &mut Vec<Dual64>) {
    out.clear();
    out.extend(x.iter().map(|&v| Dual64::from(v)));
}

/// The buffers of [`LcpTangentBufs::tangent`]: the dual LCP (A, b) and its tangent (dA, db, dμ).
#[derive(Default)]
struct LcpTangentBufs {
    a: DMatrix<Dual64>,
    b: DVector<Dual64>,
    da: DMatrix<f64>,
    db: DVector<f64>,
    dmu: Vec<f64>,
}

impl LcpTangentBufs {
    /// λ + ε dλ of a solved LCP (over all the contacts: an impact set is all or none) along the tangent carried by
    /// the dual parts of the prelude, the offsets and μ (§3.6: the implicit derivative at the answer's active set,
    /// `backward::JvpFactor`, factorised at `solved` by the caller), into `out`.
    #[allow(clippy::too_many_arguments)]
    fn tangent(
        &mut self,
        solved: &SolvedLcp,
        f: &mut JvpFactor,
        pre: &Prelude<Dual64>,
        geoms: &[ContactGeom<Dual64>],
        bn: &[Dual64],
        bt: &[Dual64],
        out: &mut Vec<Dual64>,
    ) {
        lcp_system_into(pre, bn, bt, &mut self.a, &mut self.b);
        reshape_zeroed(&mut self.da, self.a.nrows(), self.a.ncols());
        self.da.zip_apply(&self.a, |x, y| *x = y.eps);
        zeroed(&mut self.db, self.b.len());
        self.db.zip_apply(&self.b, |x, y| *x = y.eps);
        let m = self.b.len();
        self.dmu.clear();
        self.dmu.extend((0..m).map(|r| if r % 3 == 0 { 0.0 } else { geoms[r / 3].mu.eps }));
        let sol = &solved.answer.solution;
        f.jvp(&solved.lcp, &sol.lambda, &LcpTangent { da: &self.da, db: &self.db, dmu: &self.dmu });
        out.clear();
        out.extend((0..m).map(|i| Dual64::new(sol.lambda[i], f.dl[i])));
    }
}

/// The step's report over its sub-steps: the solver that answered (PGS if any solve needed it), pivots / sweeps of
/// every attempt, the worst validity residual, the most contacts of a sub-step.
fn step_info(tape: &[Segment]) -> StepInfo {
    let mut info = StepInfo::new("lcp/jade");
    for seg in tape {
        info.contacts = info.contacts.max(seg.f.contacts);
        for s in seg.g.solves().chain(seg.f.solves()) {
            let sol = &s.answer.solution;
            if sol.solver == LcpSolverKind::Pgs {
                info.solver = "lcp/pgs";
            }
            info.iterations += sol.iterations;
            let v = &sol.validity;
            info.residual = info.residual.max(v.max_bound).max(v.max_findex).max(v.max_complementarity);
            info.converged &= sol.ok();
        }
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
            tape: vec![],
            ccd: CcdScratch::default(),
            buf: StepBuffers::default(),
            poses: vec![],
            wrench: WrenchTerm::default(),
            tan: None,
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
        ws.cache.refresh(model, &mut ws.dm).map_err(dyn_err(NAME))?;
        let mut uj = std::mem::take(&mut ws.buf.uj);
        uj.clear();
        uj.extend_from_slice(ws.wrench.effective(&ws.dm, &mut ws.d, &s.q, u).map_err(dyn_err(NAME))?);
        if let Some(r) = rec {
            r.save(s, &uj, &u.body_wrench, dt);
        }
        let info = self.run_step(model, ws, s, &uj, dt, out);
        ws.buf.uj = uj;
        info
    }
}

impl DiffSolver for LcpSolver {
    /// Jᵀ ḡ with J from the tangent Jacobians of the step re-run from the recorded state (detection and CCD
    /// included: both depend on the state alone).
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
        let s = rec.state(NAME)?;
        check_grad_sizes(NAME, model.nv(), g_u, sel, g_theta)?;
        let mut jac = ws.tan.as_mut().map_or_else(|| StepJacobians::zeros(0, 0, 0), |t| take_jac(&mut t.jac));
        let r = self.jacobians_into(model, ws, rec, sel, &mut jac);
        let tan = ws.tan.as_mut().expect("built by jacobians_into");
        let r = r.and_then(|()| {
            ws.wrench.add_state_columns(&ws.dm, &mut ws.d, &s.q, &rec.wrench, &mut jac).map_err(dyn_err(NAME))?;
            transposed_jacobian_product_with(model, &s.q, &tan.next.q, &jac, g_out, g_s, g_u, g_theta, &mut tan.prod);
            Ok(())
        });
        tan.jac = jac;
        r
    }

    /// The step from s (detection, CCD as configured) in the caller's workspace, then the tangent Jacobians.
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
        ws.cache.refresh(model, &mut ws.dm).map_err(dyn_err(NAME))?;
        let mut input = std::mem::take(&mut ws.buf.input);
        let r = match ws.wrench.effective(&ws.dm, &mut ws.d, &s.q, u) {
            Ok(uj) => {
                input.save(s, uj, &u.body_wrench, dt);
                self.jacobians_into(model, ws, &input, sel, out)
            }
            Err(e) => Err(dyn_err(NAME)(e)),
        };
        ws.buf.input = input;
        r?;
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
        let s = rec.state(NAME)?;
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
pub(crate) mod tests {
    use super::*;

    fn mjcf(xml: &str) -> Model {
        torsion_model::io::mjcf::load_mjcf_str(xml, "scene.xml", None).unwrap()
    }

    /// (A, B, C) of `step_jacobians` (collision detection inside) against central differences of `Solver::step`
    /// (contacts re-detected at every perturbed input; h = 1e-5: collision detection's rounding, ~1e-12 m, would
    /// show at 1e-6 through 1/h): the worst relative error max |an − fd| / max(1, max |fd|) of each block, and the
    /// step's report.
    pub(crate) fn vs_fd(
        solver: &LcpSolver,
        m: &Model,
        s: &GenState,
        u: &[f64],
        sel: &ParamSelection,
    ) -> ([f64; 3], LcpReport) {
        vs_fd_from(solver, m, s, u, sel, 0)
    }

    /// [`vs_fd`] with A's columns from `k0` on (nv: the velocity columns only).
    fn vs_fd_from(
        solver: &LcpSolver,
        m: &Model,
        s: &GenState,
        u: &[f64],
        sel: &ParamSelection,
        k0: usize,
    ) -> ([f64; 3], LcpReport) {
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
        for k in k0..n + nv + ns {
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
        let a = (jac.a.columns(k0, n - k0).into_owned(), fd[0].columns(k0, n - k0).into_owned());
        ([err(&a.0, &a.1), err(&jac.b, &fd[1]), err(&jac.c, &fd[2])], report)
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
            // CCD follows the parallel update (D1): the semi-implicit one is DCD
            let ccd = CcdOptions { enabled: position == PositionUpdate::Parallel, ..Default::default() };
            let solver = LcpSolver::new(LcpOptions { position, ccd, ..Default::default() });
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

    /// A unit-mass cube (half size 0.1 m) on the floor at the origin, and a second one of half size `half` whose
    /// centre is `blue_x` along x; μ 0.16; both `depth` deep (1e-4 m: a position perturbation keeps every corner
    /// touching).
    fn two_cubes(blue_x: f64, half: f64, depth: f64) -> Model {
        let (z, z0) = (half - depth, 0.1 - depth);
        mjcf(&format!(
            r#"<mujoco><worldbody><geom type="plane" size="50 50 0.1" friction="0.16"/>
            <body name="gray" pos="0 0 {z0}"><freejoint/><geom type="box" size="0.1 0.1 0.1" mass="1" friction="0.16"/></body>
            <body name="blue" pos="{blue_x} 0 {z}"><freejoint/><geom type="box" size="{half} {half} {half}" mass="1" friction="0.16"/></body>
            </worldbody></mujoco>"#
        ))
    }

    /// A cube at rest on four sticking corners (a rank-deficient Ã_SS: 12 rows, 6 motions) pushed within its
    /// friction beside a second cube sliding on the floor (the contact-compare cube push at step 10), and a smaller
    /// cube pressed face to face by the first (all sticking; its face's corners inside the first's face): A and B
    /// against central differences of `Solver::step` (DCD: a resting face sits at the CCD's struck-set switch for
    /// velocity perturbations, docs/gradients.md).
    #[test]
    fn cube_on_four_sticking_corners_jacobians_match_finite_differences() {
        let solver = LcpSolver::new(LcpOptions {
            ccd: CcdOptions { enabled: false, ..Default::default() },
            ..Default::default()
        });
        // (scene, gray's x velocity, controls): per cube the generalized forces on (ω, v) in its body frame
        let beside = (two_cubes(0.5, 0.1, 1e-4), 1.5, [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.02, 0.5, 0.3, 0.0]);
        let against =
            (two_cubes(0.1799, 0.08, 1e-4), 0.0, [0.0, 0.0, 0.01, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.1, 0.0]);
        for (name, (m, vx, u), contacts) in [("beside", beside, 8), ("against", against, 12)] {
            let mut v = vec![0.0; 12];
            v[3] = vx;
            let s = GenState::new(m.qpos0.clone(), v);
            let (e, r) = vs_fd(&solver, &m, &s, &u, &ParamSelection::none());
            eprintln!("cube on four corners ({name}): classes {:?}, A {:.1e}, B {:.1e}", classes(&r).1, e[0], e[1]);
            assert_eq!(r.contacts, contacts, "{name}: contacts");
            assert!(e[0] < 1e-6 && e[1] < 1e-6, "{name}: {e:?}");
        }
    }

    /// The contact-compare cube push (e = 0) at step 10: gray sliding at 1.84 m/s, blue at rest on its face 0.31 m
    /// ahead. Jade's Dantzig answers blue's redundant support (12 rows, 6 motions) with a vertex loading two
    /// diagonal corners (the other two λ_n = 0 = w_n); differentiated at those classes the rotation about the
    /// diagonal was free (entries 3 where FD gives 0; D11b). A's velocity columns and B against central
    /// differences (as contact-compare: blue rests exactly on the floor, φ = 0, where a position perturbation
    /// crosses the gap switch φ⁺/Δt).
    #[test]
    fn cube_push_resting_cube_jacobians_match_finite_differences() {
        let m = two_cubes(0.7, 0.1, 0.0);
        let mut s = GenState::new(m.qpos0.clone(), vec![0.0; 12]);
        s.v[3] = 2.0;
        let (u, solver) = ([0.0; 12], LcpSolver::default());
        let (mut ws, mut out) = (Solver::workspace(&solver, &m).unwrap(), s.clone());
        for _ in 0..10 {
            solver.step(&m, &s, &Control::from_torques(&u), 0.01, &mut out, &mut ws, None).unwrap();
            std::mem::swap(&mut s, &mut out);
        }
        let dcd = LcpSolver::new(LcpOptions {
            ccd: CcdOptions { enabled: false, ..Default::default() },
            ..Default::default()
        });
        let (e, r) = vs_fd_from(&dcd, &m, &s, &u, &ParamSelection::none(), 12);
        let sol = &r.step.as_ref().expect("the step LCP").answer.solution;
        let unloaded = (12..24).step_by(3).filter(|&i| sol.classes[i] == Class::N && sol.w[i].abs() < 1e-12).count();
        eprintln!(
            "cube push, step 10: blue's classes {:?}, A (v columns) {:.1e}, B {:.1e}",
            &sol.classes[12..],
            e[0],
            e[1]
        );
        assert!(unloaded > 0, "blue's answer is a vertex with unloaded corners: {:?}", sol.classes);
        assert!(e[0] < 1e-6 && e[1] < 1e-6, "{e:?}");
    }

    /// D7a's stall checks on the contact-compare cube push (e = 0, 150 steps): PGS answers the resting cubes' side
    /// contacts where Jade's Dantzig fails, and stalls above its tolerance on their redundant rows. With the checks
    /// (`ChainOptions::stall_every`, the default 100) each stall goes to the polish at once instead of after the 10,000
    /// sweeps of the cap: the same trajectory to 1e-9, in a tenth of the sweeps.
    #[test]
    fn pgs_stalls_go_to_the_polish_at_once() {
        let m = two_cubes(0.7, 0.1, 0.0);
        let run = |every: usize| {
            let mut o = LcpOptions::default();
            o.chain.stall_every = every;
            let solver = LcpSolver::new(o);
            let mut s = GenState::new(m.qpos0.clone(), vec![0.0; 12]);
            s.v[3] = 2.0;
            let (mut ws, mut out) = (Solver::workspace(&solver, &m).unwrap(), s.clone());
            let (mut sweeps, mut polished, mut capped) = (0, 0, 0);
            for _ in 0..150 {
                solver.step(&m, &s, &Control::from_torques(&[0.0; 12]), 0.01, &mut out, &mut ws, None).unwrap();
                for a in ws.report.solves().map(|x| &x.answer.solution).filter(|a| a.solver == LcpSolverKind::Pgs) {
                    sweeps += a.iterations;
                    polished += usize::from(a.polished);
                    capped += usize::from(a.iterations >= 10_000);
                }
                std::mem::swap(&mut s, &mut out);
            }
            eprintln!("stall checks every {every}: {sweeps} PGS sweeps, {polished} polished, {capped} at the cap");
            (s, sweeps, polished, capped)
        };
        let (a, sweeps_a, polished_a, capped_a) = run(0);
        let (b, sweeps_b, polished_b, capped_b) = run(100);
        let diff = a.q.iter().chain(&a.v).zip(b.q.iter().chain(&b.v)).fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
        eprintln!("final state difference {diff:.1e}");
        assert!(polished_a > 0 && capped_a > 0, "the scene's stalls ran to the cap without checks");
        assert!(polished_b > 0 && capped_b == 0, "{polished_b} polished, {capped_b} at the cap with checks");
        assert!(10 * sweeps_b < sweeps_a, "sweeps: {sweeps_b} with checks, {sweeps_a} without");
        assert!(diff < 1e-9, "trajectories differ by {diff:e}");
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
        // CCD: a time of impact mid-step, the plastic impact, then the balls pressed together by the controls (with
        // no force after a plastic impact the contact would sit at its mode switch, b = 0)
        let u = [0.0, 0.0, 0.0, 3.0, 0.0, 0.0, 0.0, 0.0, 0.0, -2.0, 0.0, 0.0];
        for ccd in [true, false] {
            let solver = LcpSolver::new(LcpOptions {
                ccd: CcdOptions { enabled: ccd, ..Default::default() },
                ..Default::default()
            });
            let (e, r) = vs_fd(&solver, &m, &s, &u, &ParamSelection::none());
            eprintln!("two balls (CCD {ccd}): classes {:?}, A {:.1e}, B {:.1e}", classes(&r), e[0], e[1]);
            assert_eq!(r.contacts, 1);
            assert!(e[0] < 1e-6 && e[1] < 1e-6, "{e:?}");
        }
    }

    /// The workspace's dual dynamics models follow the model's parameters (`TangentScratch::models`: rebuilt when θ
    /// changes): Jacobians and vjp in a workspace that served the model before a change of its masses, friction
    /// and restitution equal those of a fresh workspace, bit for bit, and differ from the unchanged model's.
    #[test]
    fn tangent_buffers_follow_parameter_changes() {
        let m = mjcf(BALL);
        let sel = ParamSelection::all(&m);
        let solver = LcpSolver::default();
        let s = GenState::new(m.qpos0.iter().enumerate().map(|(i, &q)| if i == 2 { 0.1005 } else { q }).collect(), {
            let mut v = vec![0.0; m.nv()];
            v[3] = 1.0;
            v[5] = -0.5;
            v
        });
        let u = Control::from_torques(&[0.0, 0.0, 0.0, 0.3, 0.0, 0.0]);
        let jac = |m: &Model, ws: &mut LcpWorkspace| {
            let mut out = StepJacobians::for_solver(&solver, m, &sel);
            solver.step_jacobians_into(m, &s, &u, 0.01, &sel, ws, &mut out).unwrap();
            let (mut rec, mut next) = (solver.record(m), s.clone());
            solver.step(m, &s, &u, 0.01, &mut next, ws, Some(&mut rec)).unwrap();
            let g_out = GenState::new(vec![0.2; m.nq()], vec![-0.1; m.nv()]);
            let (mut g_s, mut g_u, mut g_t) = (solver.zero_grad(m), vec![0.0; m.nv()], vec![0.0; sel.len()]);
            solver.step_vjp(m, &rec, &g_out, &mut g_s, &mut g_u, &sel, &mut g_t, ws).unwrap();
            (out, g_s, g_u, g_t)
        };
        let mut ws = Solver::workspace(&solver, &m).unwrap();
        let before = jac(&m, &mut ws);
        let mut m2 = m.clone();
        let vals: Vec<f64> = m.params_get(&sel).iter().map(|x| 1.1 * x + 0.01).collect();
        m2.params_set(&sel, &vals).unwrap();
        let reused = jac(&m2, &mut ws);
        let fresh = jac(&m2, &mut Solver::workspace(&solver, &m2).unwrap());
        let same = |x: &StepJacobians, y: &StepJacobians| x.a == y.a && x.b == y.b && x.c == y.c;
        assert!(same(&reused.0, &fresh.0) && reused.1 == fresh.1 && reused.2 == fresh.2 && reused.3 == fresh.3);
        assert!(!same(&before.0, &fresh.0) && before.3 != fresh.3, "the parameters changed nothing");
    }
}
