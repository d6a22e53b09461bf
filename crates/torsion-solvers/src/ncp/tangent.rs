//! Transition Jacobians of the contact step by forward mode (spec 001 §3.10 proposal: "forward mode,
//! propagating tangents through the same reduced KKT systems"): one Dual64 pass of the *same* generic smooth code
//! (`staggered::prelude`: M, v^p, contact Jacobians, Delassus blocks, offsets; the impulse application; the
//! manifold integration) per input direction, and through each staggered pass the implicit JVP of the QP and
//! the QCQP at their recorded solutions (`backward::ReducedKkt`, factorised once per pass and shared by all
//! directions) — the cascade — or, when the passes converged or the contacts are redundant, the implicit JVP of
//! the fixed point (`fixed_point.rs`, `NcpOptions::gradient`), chosen and computed island by island on the
//! islands' Delassus blocks (each island stops its passes on its own; issue 15). The warm start's tangent is
//! stopped (spec 001 §3.10 default). Contact points move with body A
//! (material points) and normals / tangents with body B; the contact set itself is held fixed (a new or lost
//! contact is a non-smooth point, docs/gradients.md). A selected contact-material parameter
//! (`shape_friction[·]` / `shape_restitution[·]`) seeds the μ / ε tangent of exactly the contacts whose pair
//! value it supplies (`contact::frames::pair_source`); the dynamics model is then not rebuilt.
use super::backward::{KktScratch, ReducedKkt};
use super::fixed_point::FixedPointKkt;
use super::sets::{friction_gauge, ConstraintSet};
use super::staggered::{
    dyn_err, island_blocks, IslandTape, NcpGradient, NcpOptions, NcpReport, NcpSolver, NcpWorkspace, PhaseTape,
};
use crate::contact::anchor::Anchor;
use crate::contact::buffers::reshape_zeroed;
use crate::contact::delassus::uf_root;
use crate::contact::frames::{pair_source, ContactFrame, ContactGeom};
use crate::contact::prelude::{
    apply_impulses_into, prelude_into, restitution_impulses_into, Prelude, PreludeOptions, StepInputs,
};
use crate::contact::ContactStep;
use crate::generalized::{dual_tangent, GenState};
use crate::solver::SolverError;
use adjoint::Terms;
use nalgebra::DMatrix;
use num_dual::{Derivative, Dual64, DualSVec64};
use torsion_dynamics::joints::{advance_into, integrate_scaled_into};
use torsion_dynamics::ltl::NO_DOF;
use torsion_dynamics::{forward_kinematics, DynData, DynModel};
use torsion_math::Scalar;
use torsion_model::params::ParamKind;
use torsion_model::{Model, ParamSelection, ParamTable, Shape};

#[path = "adjoint.rs"]
mod adjoint;

/// ∂(q⁺, v⁺)/∂(·) in tangent coordinates (rows: 2nv).
#[derive(Clone, Debug)]
pub struct NcpJacobians {
    /// w.r.t. the state (tangent q, v): 2nv × 2nv
    pub a: DMatrix<f64>,
    /// w.r.t. the generalized forces: 2nv × nv
    pub b: DMatrix<f64>,
    /// w.r.t. the selected model parameters (`Model::param_table`): 2nv × |sel|
    pub c: DMatrix<f64>,
    /// w.r.t. each contact's friction coefficient: 2nv × nc
    pub d_mu: DMatrix<f64>,
    /// w.r.t. a common shift of every contact's restitution ε (= ∂/∂ε when all contacts share one ε): 2nv
    pub d_restitution: Vec<f64>,
}

fn lift<T: Scalar>(x: &[f64]) -> Vec<T> {
    x.iter().map(|&v| T::c(v)).collect()
}

/// `out` ← `x` lifted to duals with zero tangents (refilled in place).
fn lift_into<T: Scalar>(x: &[f64], out: &mut Vec<T>) {
    out.clear();
    out.extend(x.iter().map(|&v| T::c(v)));
}

/// The forward-mode scalars of the tangent passes: `LANES` directions per pass (Dual64: one; `Vector`: the
/// grouped state / control directions, whose real parts a pass then computes once for all its lanes).
trait Lanes: Scalar {
    fn lane(&self, j: usize) -> f64;
    fn set_lane(&mut self, j: usize, v: f64);
}

impl Lanes for Dual64 {
    fn lane(&self, _: usize) -> f64 {
        self.eps
    }
    fn set_lane(&mut self, _: usize, v: f64) {
        self.eps = v;
    }
}

impl<const N: usize> Lanes for DualSVec64<N> {
    fn lane(&self, j: usize) -> f64 {
        self.eps.0.as_ref().map_or(0.0, |e| e[j])
    }
    fn set_lane(&mut self, j: usize, v: f64) {
        match self.eps.0.as_mut() {
            Some(e) => e[j] = v,
            None => {
                let mut e = nalgebra::SVector::<f64, N>::zeros();
                e[j] = v;
                self.eps = Derivative::some(e);
            }
        }
    }
}

/// The grouped passes' scalar: `LANES` directions each (measured: BENCHMARKS.md, "ncp tangent passes").
type Vector = DualSVec64<LANES>;
const LANES: usize = 8;

/// What one lane of a pass seeds: `kind` 0, 1, 2 (q, v, u) at `seeds` (one DoF per component; rows to the
/// column of their component's seed), or kind 3, one direction `all` (every row): a parameter (its dynamics
/// model is the pass's; a contact material seeds μ / ε of the contacts it supplies, `mat`), a contact's μ, ε.
#[derive(Clone, Copy)]
struct Lane<'a> {
    kind: usize,
    seeds: &'a [usize],
    all: Option<usize>,
    mat: Option<ParamKind>,
    mu: Option<usize>,
    eps: bool,
}

const NO_LANE: Lane<'static> = Lane { kind: 3, seeds: &[], all: None, mat: None, mu: None, eps: false };

/// A pass's buffers on the scalar T.
struct PassBufs<T: Scalar> {
    d: Option<DynData<T>>,
    pre: Prelude<T>,
    q0: Vec<T>,
    q: Vec<T>,
    e: Vec<T>,
    v: Vec<T>,
    u: Vec<T>,
    geoms: Vec<ContactGeom<T>>,
    /// μ's tangents, lane by lane: `dmu[j nc + i]`
    dmu: Vec<f64>,
    ln: Vec<T>,
    lt: Vec<T>,
    pn: Vec<T>,
    pt: Vec<T>,
    vplus: Vec<T>,
    q1: Vec<T>,
    v1: Vec<T>,
    /// the reverse mode's velocity of one residual term (`adjoint.rs`)
    vt: Vec<T>,
}

impl<T: Scalar> Default for PassBufs<T> {
    fn default() -> Self {
        PassBufs {
            d: None,
            pre: Prelude::default(),
            q0: vec![],
            q: vec![],
            e: vec![],
            v: vec![],
            u: vec![],
            geoms: vec![],
            dmu: vec![],
            ln: vec![],
            lt: vec![],
            pn: vec![],
            pt: vec![],
            vplus: vec![],
            q1: vec![],
            v1: vec![],
            vt: vec![],
        }
    }
}

impl<T: Scalar> PassBufs<T> {
    /// v⁺ = v^p + M⁻¹Jᵀλ at the buffers' impulses (`ln`, `lt`; v^p without contacts), then (q⁺, v⁺) from `q` by
    /// the manifold integration (spec 001 §3.1): the end of a tangent pass and of an adjoint pass.
    fn advance(&mut self, dm: &DynModel<T>, dt: f64, contacts: bool) {
        if contacts {
            apply_impulses_into(&self.pre, &self.ln, &self.lt, &mut self.vplus);
        } else {
            self.vplus.clone_from(&self.pre.vp);
        }
        self.q1.clone_from(&self.q);
        self.v1.clone_from(&self.vplus);
        advance_into(dm, &self.q, &self.vplus, T::c(dt), &mut self.q1, &mut self.v1);
    }
}

/// What every pass of one call reads.
struct PassCtx<'a> {
    model: &'a Model,
    s: &'a GenState,
    u: &'a [f64],
    dt: f64,
    contacts: &'a [ContactFrame],
    anchors: &'a [Anchor],
    mu_src: &'a [Option<ParamKind>],
    eps_src: &'a [Option<ParamKind>],
    body_joint: &'a [usize],
    mass_solve: crate::contact::prelude::MassSolve,
    /// the step's prelude (f64) and tape, the solves' derivatives
    g: &'a Prelude<f64>,
    tape: &'a super::staggered::Tape,
    whole: bool,
    po: &'a crate::contact::prelude::PreludeOptions,
    impact: &'a PhaseJvp,
    step: &'a PhaseJvp,
    /// the step's output state, each DoF's component
    next: &'a GenState,
    comp: &'a [usize],
}

impl PassCtx<'_> {
    /// A pass's step inputs on T (its seeded q, v, u and contact geometry).
    fn inputs<'a, T: Scalar>(
        &'a self,
        dm: &'a DynModel<T>,
        q: &'a [T],
        v: &'a [T],
        u: &'a [T],
        contacts: &'a [ContactGeom<T>],
    ) -> StepInputs<'a, T> {
        StepInputs { model: self.model, dm, body_joint: self.body_joint, q, v, u, dt: self.dt, contacts, o: self.po }
    }
}

/// One tangent pass on T (its lanes: `lanes`, at most T's): the smooth code on T, the solves' tangents
/// lane by lane, the integration; each lane's rows into `cols` (`dir_of`: scratch, `LANES` × nv, all
/// `usize::MAX` between passes).
fn run_pass<T: Lanes>(
    c: &PassCtx,
    dm: &DynModel<T>,
    b: &mut PassBufs<T>,
    sc: &mut JvpScratch,
    lanes: &[Lane],
    dir_of: &mut [usize],
    cols: &mut DMatrix<f64>,
) -> Result<(), SolverError> {
    let (nv, nc) = (dm.nv, c.contacts.len());
    seed_pass(c, dm, b, lanes, dir_of, true)?;
    let d = b.d.as_mut().expect("seeded");
    let x = c.inputs(dm, &b.q, &b.v, &b.u, &b.geoms);
    let pre = &mut b.pre;
    let nl = lanes.len();
    if c.tape.has_impact {
        // the impact's impulses and restitution, then the step from S(v + M⁻¹ Jᵀ P)
        let g = PhaseGrads { contacts: c.contacts, g: c.g, dg: pre, whole: c.whole, dmu: &b.dmu };
        c.impact.jvp(&c.tape.impact, &g, &pre.bn_impact, &pre.bt_impact, nl, sc, &mut b.ln, &mut b.lt);
        restitution_impulses_into(&b.geoms, &b.ln, &b.lt, &mut b.pn, &mut b.pt);
        pre.after_impact(&x, d, &b.pn, &b.pt)?;
    }
    let g = PhaseGrads { contacts: c.contacts, g: c.g, dg: pre, whole: c.whole, dmu: &b.dmu };
    c.step.jvp(&c.tape.step, &g, &pre.bn, &pre.bt, nl, sc, &mut b.ln, &mut b.lt);
    b.advance(dm, c.dt, nc > 0);
    // each lane's rows into the column of the direction seeded in their component (every row: `all`)
    for (j, l) in lanes.iter().enumerate() {
        let col = |k: usize| l.all.unwrap_or(dir_of[j * nv + c.comp[k]]);
        lane_rows(dm, c.next, &b.q1, &b.v1, j, |k| col(k) == usize::MAX, |r, k, x| cols[(r, col(k))] = x);
    }
    unseed(c, lanes, dir_of, nv);
    Ok(())
}

/// The first part of a pass: the lanes' seeds (`dir_of` ← each lane's direction in each seeded component), the
/// kinematics, the contacts' geometry (μ, ε seeded), the prelude on T (`delassus`: with the island blocks) and the
/// μ tangents lane by lane (`b.dmu`).
fn seed_pass<T: Lanes>(
    c: &PassCtx,
    dm: &DynModel<T>,
    b: &mut PassBufs<T>,
    lanes: &[Lane],
    dir_of: &mut [usize],
    delassus: bool,
) -> Result<(), SolverError> {
    let nv = dm.nv;
    for (j, l) in lanes.iter().enumerate() {
        for &k in l.seeds {
            dir_of[j * nv + c.comp[k]] = l.kind * nv + k;
        }
    }
    lift_into(&c.s.q, &mut b.q0);
    b.q.clone_from(&b.q0);
    if lanes.iter().any(|l| l.kind == 0) {
        b.e.clear();
        b.e.resize(nv, T::zero());
        for (j, l) in lanes.iter().enumerate().filter(|(_, l)| l.kind == 0) {
            l.seeds.iter().for_each(|&k| b.e[k].set_lane(j, 1.0));
        }
        integrate_scaled_into(dm, &b.q0, &b.e, T::one(), &mut b.q);
    }
    lift_into(&c.s.v, &mut b.v);
    lift_into(c.u, &mut b.u);
    for (j, l) in lanes.iter().enumerate() {
        let x = match l.kind {
            1 => &mut b.v,
            2 => &mut b.u,
            _ => continue,
        };
        l.seeds.iter().for_each(|&k| x[k].set_lane(j, 1.0));
    }
    let d = b.d.get_or_insert_with(|| DynData::new(dm));
    forward_kinematics(dm, &b.q, d);
    b.geoms.clear();
    for (i, (ct, an)) in c.contacts.iter().zip(c.anchors).enumerate() {
        let mut g = an.geom(ct, &d.o_m[ct.body_a], &d.o_m[ct.body_b]);
        for (j, l) in lanes.iter().enumerate() {
            if l.mu == Some(i) || (l.mat.is_some() && l.mat == c.mu_src[i]) {
                g.mu.set_lane(j, 1.0);
            }
            if l.eps || (l.mat.is_some() && l.mat == c.eps_src[i]) {
                g.restitution.set_lane(j, 1.0);
            }
        }
        b.geoms.push(g);
    }
    let x = c.inputs(dm, &b.q, &b.v, &b.u, &b.geoms);
    let pre = &mut b.pre;
    // the islands' blocks only (the dense G when the islands are not split)
    pre.dense = c.whole && delassus;
    pre.delassus = delassus;
    pre.mass_solve = c.mass_solve;
    prelude_into(&x, d, pre)?;
    b.dmu.clear();
    for j in 0..lanes.len() {
        b.dmu.extend(b.geoms.iter().map(|g| g.mu.lane(j)));
    }
    Ok(())
}

/// `dir_of` back to `usize::MAX` after a pass.
fn unseed(c: &PassCtx, lanes: &[Lane], dir_of: &mut [usize], nv: usize) {
    for (j, l) in lanes.iter().enumerate() {
        for &k in l.seeds {
            dir_of[j * nv + c.comp[k]] = usize::MAX;
        }
    }
}

/// Lane j of joint `jt`'s q⁺ (`q1`) in the tangent at `next.q` (`dual_tangent`).
fn lane_tangent<T: Lanes>(dm: &DynModel<T>, jt: usize, next: &GenState, q1: &[T], j: usize) -> [f64; 6] {
    let (qs, jm) = (dm.q_start[jt], &dm.joint[jt]);
    let x: [Dual64; 7] = std::array::from_fn(|i| match q1.get(qs + i).filter(|_| i < jm.nq) {
        Some(x) => Dual64::new(x.re(), x.lane(j)),
        None => Dual64::from(0.0),
    });
    dual_tangent(jm.kind, &next.q[qs..qs + jm.nq], &x[..jm.nq])
}

/// Lane j's output rows (q⁺ in the tangent at `next.q`: rows 0..nv, v⁺: rows nv..2nv) from the pass's `q1`, `v1`:
/// `f(row, dof, value)` for each row of a DoF (its joint's first DoF for q⁺) where `skip(dof)` is false.
fn lane_rows<T: Lanes>(
    dm: &DynModel<T>,
    next: &GenState,
    q1: &[T],
    v1: &[T],
    j: usize,
    skip: impl Fn(usize) -> bool,
    mut f: impl FnMut(usize, usize, f64),
) {
    for jt in 0..dm.parent.len() {
        let (vs, jm) = (dm.v_start[jt], &dm.joint[jt]);
        if jm.nv == 0 || skip(vs) {
            continue;
        }
        let t = lane_tangent(dm, jt, next, q1, j);
        for r in 0..jm.nv {
            f(vs + r, vs, t[r]);
        }
    }
    for k in (0..dm.nv).filter(|&k| !skip(k)) {
        f(dm.nv + k, k, v1[k].lane(j));
    }
}

/// The buffers of the tangent Jacobians, reused from call to call (design.md §7: no heap allocation once the
/// workspace has seen the step's contact count). The dual dynamics models are built once per parameter values:
/// the base one (θ lifted) and, per selected non-material parameter, one with that parameter's tangent seeded
/// (kept, one per parameter; rebuilt only when the model's parameter values change).
pub(crate) struct TangentWorkspace {
    table: ParamTable,
    theta: Vec<f64>,
    /// θ of the dual models below
    built_theta: Vec<f64>,
    base_dm: Option<DynModel<Dual64>>,
    param_dm: Vec<Option<DynModel<Dual64>>>,
    /// the base model on the grouped passes' scalar (θ lifted)
    vec_dm: Option<DynModel<Vector>>,
    /// the passes' buffers, the reverse mode's
    bufs: PassScratch,
    adj: adjoint::AdjointScratch,
    /// the step's output state
    pub(crate) next: GenState,
    anchors: Vec<Anchor>,
    mu: Vec<f64>,
    mu_src: Vec<Option<ParamKind>>,
    eps_src: Vec<Option<ParamKind>>,
    impact: PhaseJvp,
    step: PhaseJvp,
    /// ∂(q⁺, v⁺) per direction: state (2nv), controls (nv), selected parameters, μ per contact, ε
    pub(crate) cols: DMatrix<f64>,
    /// group the state / control directions by component (default; off only to compare, `set_grouped_tangents`)
    group: bool,
    groups: Groups,
    /// `step_vjp` by reverse mode (`NcpWorkspace::set_reverse_vjp`); the last call took it
    reverse: bool,
    reversed: bool,
    /// the dual passes of the last call
    passes: usize,
}

/// The passes' mutable buffers (taken out of the workspace while the passes read it).
#[derive(Default)]
struct PassScratch {
    /// one direction (Dual64), `LANES` directions (`Vector`)
    one: PassBufs<Dual64>,
    lanes: PassBufs<Vector>,
    jvp: JvpScratch,
    /// the direction a pass seeds in each component, lane by lane: `dir_of[j nv + comp]` (`usize::MAX`: none)
    dir_of: Vec<usize>,
}

/// The DoFs' components for one step: trees (λ) joined by a contact. A direction seeded at a DoF changes only
/// its component's rows this step (the contact islands are independent problems, M is block diagonal over
/// trees), so one dual pass seeds one direction in every component, and `3 n_max` passes give every state /
/// control column (n_max: the largest component's DoF count) instead of `3 nv`.
#[derive(Default)]
struct Groups {
    /// each DoF's component (a representative DoF) and its rank in it
    comp: Vec<usize>,
    rank: Vec<usize>,
    /// the DoFs of each rank (ascending): `dofs[start[r]..start[r + 1]]`
    start: Vec<usize>,
    dofs: Vec<usize>,
    n_max: usize,
    /// scratch: the union-find over tree roots, each component's size
    up: Vec<usize>,
    size: Vec<usize>,
}

impl Groups {
    /// The components of the step's prelude (`pre.lambda`, the contacts' `pattern.roots`); one component of every
    /// DoF unless `split`.
    fn fill(&mut self, pre: &Prelude<f64>, nv: usize, split: bool) {
        let split = split && pre.lambda.len() == nv;
        let (up, comp) = (&mut self.up, &mut self.comp);
        up.clear();
        up.extend(0..nv);
        comp.clear();
        if split {
            // each DoF's tree root (λ(k) < k), then the roots a contact joins
            for k in 0..nv {
                let p = pre.lambda[k];
                comp.push(if p == NO_DOF { k } else { comp[p] });
            }
            for r in pre.pattern.roots.iter().filter(|r| r[0] != NO_DOF && r[1] != NO_DOF) {
                let (x, y) = (uf_root(up, r[0]), uf_root(up, r[1]));
                up[x.max(y)] = x.min(y);
            }
            for k in 0..nv {
                comp[k] = uf_root(up, comp[k]);
            }
        } else {
            comp.resize(nv, 0);
        }
        self.size.clear();
        self.size.resize(nv, 0);
        self.rank.clear();
        for &c in comp.iter() {
            self.rank.push(self.size[c]);
            self.size[c] += 1;
        }
        self.n_max = self.size.iter().copied().max().unwrap_or(0);
        // the DoFs by rank (a counting sort)
        self.start.clear();
        self.start.resize(self.n_max + 1, 0);
        self.rank.iter().for_each(|&r| self.start[r + 1] += 1);
        for r in 0..self.n_max {
            self.start[r + 1] += self.start[r];
        }
        self.dofs.clear();
        self.dofs.resize(nv, 0);
        self.size.iter_mut().for_each(|n| *n = 0);
        for k in 0..nv {
            let r = self.rank[k];
            self.dofs[self.start[r] + self.size[r]] = k;
            self.size[r] += 1;
        }
    }
}

impl NcpWorkspace {
    /// Group the tangent Jacobians' state / control directions by component (`Groups`; the default) or run one
    /// dual pass per direction (off: only to compare or time the two; the same Jacobians to round-off).
    pub fn set_grouped_tangents(&mut self, on: bool) {
        if let Some(t) = self.tan.as_mut() {
            t.group = on;
        }
    }

    /// `step_vjp` by reverse mode (default; `adjoint.rs`) or by the forward Jacobians (off: only to compare or
    /// time the two; the same products to round-off).
    pub fn set_reverse_vjp(&mut self, on: bool) {
        if let Some(t) = self.tan.as_mut() {
            t.reverse = on;
        }
    }

    pub(crate) fn reverse_vjp(&self) -> bool {
        self.tan.as_ref().is_none_or(|t| t.reverse)
    }

    /// The last `step_vjp` took the reverse mode (not: reverse mode off, an impact, or a cascade island on
    /// redundant impulses, which take the forward Jacobians).
    pub fn last_vjp_reversed(&self) -> bool {
        self.tan.as_ref().is_some_and(|t| t.reversed)
    }

    /// `f` on the tangent workspace, taken out of this one (built at the first call) and put back.
    fn with_tangent<R>(&mut self, model: &Model, f: impl FnOnce(&mut Self, &mut TangentWorkspace) -> R) -> R {
        let mut tan = self.tan.take().unwrap_or_else(|| Box::new(TangentWorkspace::new(model)));
        let r = f(self, &mut tan);
        self.tan = Some(tan);
        r
    }

    /// The dual passes of the last tangent Jacobians (`3 n_max` + the parameter / per-contact directions).
    pub fn tangent_passes(&self) -> usize {
        self.tan.as_ref().map_or(0, |t| t.passes)
    }
}

impl TangentWorkspace {
    pub(crate) fn new(model: &Model) -> Self {
        let e = || DMatrix::from_vec(0, 0, Vec::new());
        TangentWorkspace {
            table: model.param_table(),
            theta: vec![],
            built_theta: vec![],
            base_dm: None,
            param_dm: vec![],
            vec_dm: None,
            bufs: PassScratch::default(),
            adj: adjoint::AdjointScratch::default(),
            next: GenState::new(vec![], vec![]),
            anchors: vec![],
            mu: vec![],
            mu_src: vec![],
            eps_src: vec![],
            impact: PhaseJvp::default(),
            step: PhaseJvp::default(),
            cols: e(),
            group: true,
            reverse: true,
            reversed: false,
            groups: Groups::default(),
            passes: 0,
        }
    }
}

/// `m` ← lane j of the tangents of `x` (reusing `m`'s storage).
fn eps_into<T: Lanes>(x: &DMatrix<T>, j: usize, m: &mut DMatrix<f64>) {
    reshape_zeroed(m, x.nrows(), x.ncols());
    m.zip_apply(x, |a, b| *a = b.lane(j));
}

/// A dual dynamics model with the model's gravity.
fn with_gravity<T: Scalar>(mut dm: DynModel<T>, model: &Model) -> DynModel<T> {
    dm.gravity = torsion_math::scalar::cv(&model.gravity);
    dm
}

impl NcpSolver {
    /// One step (as `step_with_contacts`, whose result it also returns) and its tangent Jacobians, every column
    /// (`jacobians_into` with the per-contact `d_mu` / `d_restitution` directions).
    pub fn step_jacobians_with_contacts(
        &self,
        x: &ContactStep,
        ws: &mut NcpWorkspace,
        sel: &ParamSelection,
    ) -> Result<(NcpJacobians, GenState, NcpReport), SolverError> {
        let mut report = NcpReport::default();
        self.jacobians_into(x, ws, sel, true, &mut report)?;
        let tan = ws.tangent();
        let (nv, ns, nc) = (ws.dm.nv, sel.len(), x.contacts.len());
        let (cols, ndir) = (&tan.cols, 3 * nv + ns + nc + 1);
        let jac = NcpJacobians {
            a: cols.columns(0, 2 * nv).into_owned(),
            b: cols.columns(2 * nv, nv).into_owned(),
            c: cols.columns(3 * nv, ns).into_owned(),
            d_mu: cols.columns(3 * nv + ns, nc).into_owned(),
            d_restitution: cols.column(ndir - 1).iter().copied().collect(),
        };
        Ok((jac, tan.next.clone(), report))
    }

    /// The step (reported into `report`) and its tangent Jacobians into the workspace (`NcpWorkspace::tangent`:
    /// `cols`, the output state `next`), without allocation once the workspace has grown; `per_contact` = false
    /// skips the `d_mu` / `d_restitution` directions (left zero: the `DiffSolver` path reads only A, B, C).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn jacobians_into(
        &self,
        x: &ContactStep,
        ws: &mut NcpWorkspace,
        sel: &ParamSelection,
        per_contact: bool,
        report: &mut NcpReport,
    ) -> Result<(), SolverError> {
        ws.with_tangent(x.model, |ws, tw| self.jacobians_in(x, ws, tw, sel, per_contact, report))
    }

    /// The step (reported into `report`, its output into `tw.next`) and what every pass reads: the contact
    /// anchors, each solve's derivative (`PhaseJvp::build`), the material sources, the dual dynamics models, the
    /// components (`tw.groups`).
    fn prepare(
        &self,
        x: &ContactStep,
        ws: &mut NcpWorkspace,
        tw: &mut TangentWorkspace,
        sel: &ParamSelection,
        report: &mut NcpReport,
    ) -> Result<(), SolverError> {
        let ContactStep { model, s, contacts, .. } = *x;
        let next = &mut tw.next;
        next.q.clone_from(&s.q);
        next.v.clone_from(&s.v);
        next.act.clone_from(&s.act);
        next.warm.fill(s.warm.as_slice().iter().copied());
        // the step (its prelude's island blocks and its tape are what the derivatives below read)
        self.check_and_refresh(x, ws)?;
        self.step_refreshed(x, ws, next, report)?;
        let o = &self.options;
        if sel.indices.iter().any(|&i| i >= tw.table.len()) {
            return Err(SolverError::BadInput {
                solver: "ncp",
                problem: "the parameter selection does not match the model".into(),
            });
        }
        // contact anchors at the base state, in body frames (see `Anchor`; the step's scratch kinematics)
        forward_kinematics(&ws.dm, &s.q, &mut ws.d);
        let d0 = &ws.d;
        tw.anchors.clear();
        tw.anchors.extend(contacts.iter().map(|c| Anchor::new(c, &d0.o_m[c.body_a], &d0.o_m[c.body_b])));
        // the derivative of each solve (the impact's, the step's): of the converged fixed point (one coupled
        // system) or of the executed cascade (one reduced KKT system per recorded QP / QCQP); either is
        // factorised once and shared by every direction
        let tape = &ws.tape;
        tw.mu.clear();
        tw.mu.extend(contacts.iter().map(|c| c.mu));
        let whole = !ws.split_islands;
        if tape.has_impact {
            tw.impact.build(&ws.pre, whole, &tape.impact, &tw.mu, o)?;
        }
        tw.step.build(&ws.pre, whole, &tape.step, &tw.mu, o)?;
        let table = &tw.table;
        tw.theta.clear();
        tw.theta.extend(table.kinds.iter().map(|&k| model.param_get(k)));
        // the shape whose parameter supplies each contact's μ / ε (collision contacts whose value is still the
        // model's: a value overwritten by the caller is not a function of the shape parameters)
        let source = |c: &ContactFrame, val: fn(&Shape) -> f64, v: f64| -> Option<usize> {
            let s = c.shapes?;
            let (a, b) = (model.shapes.get(s[0])?, model.shapes.get(s[1])?);
            let k = pair_source(s, val(a), val(b));
            (val(&model.shapes[k]) == v).then_some(k)
        };
        tw.mu_src.clear();
        tw.mu_src.extend(contacts.iter().map(|c| source(c, |s| s.friction[0], c.mu).map(ParamKind::ShapeFriction)));
        tw.eps_src.clear();
        tw.eps_src.extend(
            contacts.iter().map(|c| source(c, |s| s.restitution, c.restitution).map(ParamKind::ShapeRestitution)),
        );
        // the dual models: rebuilt when θ changed since they were built (allocates), reused otherwise
        if tw.base_dm.is_none() || tw.vec_dm.is_none() || tw.built_theta != tw.theta {
            tw.base_dm = Some(with_gravity(DynModel::build(model, table, &lift(&tw.theta)).map_err(dyn_err)?, model));
            tw.vec_dm = Some(with_gravity(DynModel::build(model, table, &lift(&tw.theta)).map_err(dyn_err)?, model));
            tw.param_dm.clear();
            tw.param_dm.resize_with(table.len(), || None);
            tw.built_theta.clone_from(&tw.theta);
        }
        for &i in &sel.indices {
            if tw.param_dm[i].is_none() && !table.kinds[i].is_contact_material() {
                let mut th: Vec<Dual64> = lift(&tw.theta);
                th[i].eps = 1.0;
                tw.param_dm[i] = Some(with_gravity(DynModel::build(model, table, &th).map_err(dyn_err)?, model));
            }
        }
        let base_dm = tw.base_dm.as_mut().expect("built above");
        base_dm.gravity = torsion_math::scalar::cv(&model.gravity);
        let vec_dm = tw.vec_dm.as_mut().expect("built above");
        vec_dm.gravity = torsion_math::scalar::cv(&model.gravity);
        for &i in &sel.indices {
            if let Some(dm) = tw.param_dm[i].as_mut() {
                dm.gravity = torsion_math::scalar::cv(&model.gravity);
            }
        }
        tw.groups.fill(&ws.pre, ws.dm.nv, tw.group && ws.split_islands);
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn jacobians_in(
        &self,
        x: &ContactStep,
        ws: &mut NcpWorkspace,
        tw: &mut TangentWorkspace,
        sel: &ParamSelection,
        per_contact: bool,
        report: &mut NcpReport,
    ) -> Result<(), SolverError> {
        self.prepare(x, ws, tw, sel, report)?;
        let (nv, nc, ns) = (ws.dm.nv, x.contacts.len(), sel.len());
        let ndir = 3 * nv + ns + nc + 1;
        let mut cols = std::mem::replace(&mut tw.cols, DMatrix::zeros(0, 0));
        reshape_zeroed(&mut cols, 2 * nv, ndir);
        let rest = if per_contact { ndir - 3 * nv } else { ns };
        let mut b = std::mem::take(&mut tw.bufs);
        let po = self.options.prelude();
        let r = tw.forward_passes(x, ws, &po, sel, rest, &mut b, &mut cols);
        (tw.bufs, tw.cols) = (b, cols);
        tw.passes = r?;
        Ok(())
    }
}

impl TangentWorkspace {
    /// What every pass of this call reads (after `NcpSolver::prepare`).
    fn ctx<'a>(&'a self, x: &ContactStep<'a>, ws: &'a NcpWorkspace, po: &'a PreludeOptions) -> PassCtx<'a> {
        PassCtx {
            model: x.model,
            s: x.s,
            u: x.u,
            dt: x.dt,
            contacts: x.contacts,
            anchors: &self.anchors,
            mu_src: &self.mu_src,
            eps_src: &self.eps_src,
            body_joint: &ws.body_joint,
            mass_solve: ws.mass_solve,
            g: &ws.pre,
            tape: &ws.tape,
            whole: !ws.split_islands,
            po,
            impact: &self.impact,
            step: &self.step,
            next: &self.next,
            comp: &self.groups.comp,
        }
    }

    /// The dynamics model and the contact material of a parameter direction (`None`: the base model): a
    /// contact-material parameter seeds μ / ε on the base model, another one has its own dual model.
    fn param_model(&self, param: Option<usize>) -> (&DynModel<Dual64>, Option<ParamKind>) {
        let mat = param.map(|i| self.table.kinds[i]).filter(|k| k.is_contact_material());
        match param {
            Some(i) if mat.is_none() => (self.param_dm[i].as_ref().expect("built by prepare"), None),
            _ => (self.base_dm.as_ref().expect("built by prepare"), mat),
        }
    }

    /// The Jacobians' tangent passes into `cols`: the state / control directions grouped by component (one lane
    /// seeds a direction in every component at once: their columns' rows are disjoint), `LANES` lanes a pass
    /// (not grouped: one Dual64 pass per direction, the Jacobians' first form, to compare), then the `rest`
    /// directions (parameters, per-contact μ and ε) one pass each. Returns the number of passes.
    #[allow(clippy::too_many_arguments)]
    fn forward_passes(
        &self,
        x: &ContactStep,
        ws: &NcpWorkspace,
        po: &PreludeOptions,
        sel: &ParamSelection,
        rest: usize,
        b: &mut PassScratch,
        cols: &mut DMatrix<f64>,
    ) -> Result<usize, SolverError> {
        let (nv, nc, ns) = (ws.dm.nv, x.contacts.len(), sel.len());
        let ndir = 3 * nv + ns + nc + 1;
        let c = self.ctx(x, ws, po);
        let gr = &self.groups;
        b.dir_of.clear();
        b.dir_of.resize(LANES * nv, usize::MAX);
        let grouped = 3 * gr.n_max;
        let vec_passes = grouped.div_ceil(LANES);
        let rank = |t: usize| (t / gr.n_max, &gr.dofs[gr.start[t % gr.n_max]..gr.start[t % gr.n_max + 1]]);
        for t in (0..grouped).filter(|_| !self.group) {
            let (kind, seeds) = rank(t);
            let (dm, lane) = (self.param_model(None).0, Lane { kind, seeds, ..NO_LANE });
            run_pass(&c, dm, &mut b.one, &mut b.jvp, &[lane], &mut b.dir_of, cols)?;
        }
        let vec_dm = self.vec_dm.as_ref().expect("built by prepare");
        for p in (0..vec_passes).filter(|_| self.group) {
            let lanes = grouped_lanes(gr, p, 3);
            run_pass(&c, vec_dm, &mut b.lanes, &mut b.jvp, &lanes.0[..lanes.1], &mut b.dir_of, cols)?;
        }
        for dir in 3 * nv..3 * nv + rest {
            let param = (dir < 3 * nv + ns).then(|| sel.indices[dir - 3 * nv]);
            let (dm, mat) = self.param_model(param);
            let mu = (3 * nv + ns..3 * nv + ns + nc).contains(&dir).then(|| dir - 3 * nv - ns);
            let lane = Lane { all: Some(dir), mat, mu, eps: dir == ndir - 1, ..NO_LANE };
            run_pass(&c, dm, &mut b.one, &mut b.jvp, &[lane], &mut b.dir_of, cols)?;
        }
        Ok(if self.group { vec_passes } else { grouped } + rest)
    }
}

/// The lanes of grouped pass `p` (and how many) over the first `kinds` kinds (q, v, u): lane j, direction
/// t = `LANES` p + j, is kind t / n_max at the DoFs of rank t % n_max.
fn grouped_lanes(gr: &Groups, p: usize, kinds: usize) -> ([Lane<'_>; LANES], usize) {
    let mut lanes = [NO_LANE; LANES];
    let n = (kinds * gr.n_max - LANES * p).min(LANES);
    for (j, l) in lanes[..n].iter_mut().enumerate() {
        let t = LANES * p + j;
        *l =
            Lane { kind: t / gr.n_max, seeds: &gr.dofs[gr.start[t % gr.n_max]..gr.start[t % gr.n_max + 1]], ..NO_LANE };
    }
    (lanes, n)
}

/// What a solve's tangents need beside its tape: the contacts, the step's prelude (f64: the islands' blocks)
/// and the direction's (duals: the blocks' tangents), the μ tangents.
struct PhaseGrads<'a, T: Scalar> {
    contacts: &'a [ContactFrame],
    g: &'a Prelude<f64>,
    dg: &'a Prelude<T>,
    /// the islands not split (`NcpWorkspace::split_islands` off): one island, the dense G
    whole: bool,
    /// lane by lane, as `PassBufs::dmu`
    dmu: &'a [f64],
}

/// The derivative of one solve of the staggered passes, island by island (`islands[..n]`, as the tape's): each
/// island's derivative is chosen and computed on its own blocks, as its value was (issue 15).
#[derive(Default)]
struct PhaseJvp {
    islands: Vec<IslandJvp>,
    n: usize,
}

/// One island's derivative: the fixed point's, or the executed cascade's (the first `nk` pairs of `kkts`,
/// rebuilt in place from call to call); vectors in the island's contact order.
#[derive(Default)]
struct IslandJvp {
    /// the fixed point's system (`use_fp`) or none (the cascade)
    fp: FixedPointKkt,
    use_fp: bool,
    kkts: Vec<(ReducedKkt, ReducedKkt)>,
    nk: usize,
    r: Vec<f64>,
    mu: Vec<f64>,
    /// the cascade has a (numerically) singular reduced KKT system (redundant impulses): its chained product is
    /// round-off times the condition number, so reverse mode would not reproduce the forward one
    ill: bool,
}

/// Below this pivot ratio (`ReducedKkt::pivot_ratio`: ≈ 1e-12 when singular) a cascade's KKT system is singular.
const ILL_PIVOTS: f64 = 1e-9;

/// The buffers of `PhaseJvp::jvp`.
#[derive(Default)]
struct JvpScratch {
    dln: Vec<f64>,
    dlt: Vec<f64>,
    ln: Vec<f64>,
    lt: Vec<f64>,
    dbn: Vec<f64>,
    dbt: Vec<f64>,
    dmu: Vec<f64>,
    dgn: DMatrix<f64>,
    dgt: DMatrix<f64>,
    dgnt: DMatrix<f64>,
    dg_n: Vec<f64>,
    dg_t: Vec<f64>,
    dr: Vec<f64>,
    rhs: Vec<f64>,
    x: Vec<f64>,
    kkt: KktScratch,
}

impl PhaseJvp {
    /// Each island's derivative at the step's blocks (`g`: its prelude; `whole` as `PhaseGrads::whole`).
    fn build(
        &mut self,
        g: &Prelude<f64>,
        whole: bool,
        ph: &PhaseTape,
        mu: &[f64],
        o: &NcpOptions,
    ) -> Result<(), SolverError> {
        if self.islands.len() < ph.n {
            self.islands.resize_with(ph.n, IslandJvp::default);
        }
        self.n = ph.n;
        for (k, (ij, it)) in self.islands.iter_mut().zip(&ph.islands[..ph.n]).enumerate() {
            ij.mu.clear();
            ij.mu.extend(it.idx.iter().map(|&i| mu[i]));
            ij.build(island_blocks(g, whole, k), it, o)?;
        }
        Ok(())
    }

    /// The impulses with their tangents (into `ln_out`, `lt_out`, all contacts) for the offsets' tangents (dual
    /// `bn`, `bt`), island by island, lane by lane (`nl` lanes).
    #[allow(clippy::too_many_arguments)]
    fn jvp<T: Lanes>(
        &self,
        ph: &PhaseTape,
        g: &PhaseGrads<T>,
        bn: &[T],
        bt: &[T],
        nl: usize,
        sc: &mut JvpScratch,
        ln_out: &mut Vec<T>,
        lt_out: &mut Vec<T>,
    ) {
        let nc = g.contacts.len();
        ln_out.clear();
        ln_out.extend((0..nc).map(|i| T::c(ph.ln.get(i).copied().unwrap_or(0.0))));
        lt_out.clear();
        lt_out.extend((0..2 * nc).map(|k| T::c(ph.lt.get(k).copied().unwrap_or(0.0))));
        for (k, (ij, it)) in self.islands[..self.n].iter().zip(&ph.islands).enumerate() {
            let gnt = island_blocks(g.g, g.whole, k).2;
            let (dgn, dgt, dgnt) = island_blocks(g.dg, g.whole, k);
            let idx = &it.idx;
            for j in 0..nl {
                eps_into(dgn, j, &mut sc.dgn);
                eps_into(dgt, j, &mut sc.dgt);
                eps_into(dgnt, j, &mut sc.dgnt);
                sc.dbn.clear();
                sc.dbn.extend(idx.iter().map(|&i| bn[i].lane(j)));
                sc.dbt.clear();
                sc.dbt.extend(idx.iter().flat_map(|&i| [bt[2 * i].lane(j), bt[2 * i + 1].lane(j)]));
                sc.dmu.clear();
                sc.dmu.extend(idx.iter().map(|&i| g.dmu[j * nc + i]));
                ij.jvp(it, gnt, sc);
                for (a, &i) in idx.iter().enumerate() {
                    ln_out[i].set_lane(j, sc.dln[a]);
                    lt_out[2 * i].set_lane(j, sc.dlt[2 * a]);
                    lt_out[2 * i + 1].set_lane(j, sc.dlt[2 * a + 1]);
                }
            }
        }
    }
}

impl PhaseJvp {
    /// Some island's cascade has a singular KKT system (`IslandJvp::ill`): reverse mode is not taken.
    fn any_ill(&self) -> bool {
        self.islands[..self.n].iter().any(|i| i.ill)
    }

    /// Reverse mode of [`PhaseJvp::jvp`], island by island: for the impulses' cotangents `lnb`, `ltb` (all
    /// contacts), each island's residual terms into `terms` and μ̄ into `mu_bar` (`IslandJvp::vjp`). `g`: the
    /// step's prelude (the islands' G_nt).
    #[allow(clippy::too_many_arguments)]
    fn vjp(
        &self,
        ph: &PhaseTape,
        g: &Prelude<f64>,
        whole: bool,
        lnb: &[f64],
        ltb: &[f64],
        sc: &mut IslandVjpScratch,
        terms: &mut Terms,
        mu_bar: &mut [f64],
    ) {
        for (k, (ij, it)) in self.islands[..self.n].iter().zip(&ph.islands).enumerate() {
            sc.lnb.clear();
            sc.lnb.extend(it.idx.iter().map(|&i| lnb[i]));
            sc.ltb.clear();
            sc.ltb.extend(it.idx.iter().flat_map(|&i| [ltb[2 * i], ltb[2 * i + 1]]));
            ij.vjp(it, island_blocks(g, whole, k).2, sc, terms, mu_bar);
        }
    }
}

/// The buffers of `IslandJvp::vjp` (island order).
#[derive(Default)]
pub(super) struct IslandVjpScratch {
    lnb: Vec<f64>,
    ltb: Vec<f64>,
    lnp: Vec<f64>,
    yn: Vec<f64>,
    yt: Vec<f64>,
    rb: Vec<f64>,
    mub: Vec<f64>,
    x: Vec<f64>,
    kkt: KktScratch,
}

impl IslandJvp {
    /// The island's derivative (`mu` set): the fixed point's or the cascade's, by `NcpOptions::gradient` and,
    /// for `Auto`, by the island's convergence and sticking (as a step of this island alone would choose).
    fn build(
        &mut self,
        g: (&DMatrix<f64>, &DMatrix<f64>, &DMatrix<f64>),
        it: &IslandTape,
        o: &NcpOptions,
    ) -> Result<(), SolverError> {
        let (gn, gt, gnt) = g;
        let (m, mu) = (it.idx.len(), &self.mu);
        let lmax = it.ln.iter().chain(&it.lt).fold(0.0f64, |m, v| m.max(v.abs()));
        let converged = it.converged || it.last_change <= 1e-9 * (1.0 + lmax);
        // a contact strictly inside its friction set with a normal impulse: the only case where Auto may need the
        // fixed point of an unconverged step (its factorisation is skipped otherwise)
        let (ln, lt) = (&it.ln, &it.lt);
        let may_stick = (0..m).any(|i| {
            let r = mu[i] * ln[i];
            r > 0.0 && friction_gauge(o.friction_set, lt[2 * i], lt[2 * i + 1]) < r * (1.0 - 1e-6)
        });
        self.use_fp = match o.gradient {
            NcpGradient::Cascade => false,
            // no contact, or no pass (a skipped impact: zero impulses, zero tangents)
            _ if m == 0 || it.passes.is_empty() => false,
            NcpGradient::Auto if !converged && !may_stick => false,
            grad => {
                let k = &mut self.fp;
                k.rebuild(gn, gt, gnt, &it.bn, &it.bt, ln, lt, mu, o.friction_set)?;
                // Auto: the fixed point where it is the step's derivative and the cascade may not be — redundant
                // impulses with a sticking contact (the passes' polished sub-problems move along their solution
                // sets, and their chained derivatives follow: 2.1e-4 off under a tilt, docs/gradients.md) — or
                // where both agree and it is cheaper (converged passes, unique impulses); the cascade otherwise
                // (redundant sliding impulses: the executed passes choose among equivalent λ_n, and so must
                // their derivative)
                // (and, sliding or not, where the direct solve answered: its result is not a pass of the cascade; the
                // retry after capped passes runs only on islands that hold a sticking contact, `direct::any_sticking`)
                let use_fp = it.direct || if k.rank_deficient { k.sticking } else { converged };
                grad == NcpGradient::FixedPoint || use_fp
            }
        };
        self.nk = 0;
        for p in it.passes.iter().filter(|_| !self.use_fp) {
            self.r.clear();
            self.r.extend((0..m).map(|i| mu[i] * p.lambda_n[i]));
            if self.nk == self.kkts.len() {
                self.kkts.push((ReducedKkt::with_capacity(m, 0), ReducedKkt::with_capacity(2 * m, 0)));
            }
            let (kn, kt) = &mut self.kkts[self.nk];
            kn.rebuild(gn, &p.g_n, &p.lambda_n, ConstraintSet::Nonneg)?;
            let set = ConstraintSet::Friction { kind: o.friction_set, r: &self.r };
            kt.rebuild(gt, &p.g_t, &p.lambda_t, set)?;
            self.nk += 1;
        }
        self.ill = self.kkts[..self.nk].iter().any(|(a, b)| a.pivot_ratio().min(b.pivot_ratio()) < ILL_PIVOTS);
        Ok(())
    }

    /// The island's impulse tangents into `sc.dln`, `sc.dlt` from the tangents gathered in `sc` (its blocks'
    /// `dgn`, `dgt`, `dgnt`, offsets' `dbn`, `dbt`, μ's `dmu`): at the fixed point, or through the executed passes
    /// (the warm start's tangent stopped). `gnt`: the island's G_nt.
    fn jvp(&self, it: &IslandTape, gnt: &DMatrix<f64>, sc: &mut JvpScratch) {
        let m = it.idx.len();
        let JvpScratch { dln, dlt, ln, lt, dbn, dbt, dmu, dgn, dgt, dgnt, dg_n, dg_t, dr, rhs, x, kkt } = sc;
        dln.clear();
        dln.resize(m, 0.0);
        dlt.clear();
        dlt.resize(2 * m, 0.0);
        ln.clear();
        ln.resize(m, 0.0);
        lt.clone_from(&it.lt_warm);
        if self.use_fp {
            self.fp.jvp_into(dgn, dgt, dgnt, dbn, dbt, dmu, dln, dlt, rhs, x);
            return;
        }
        for (p, (kn, kt)) in it.passes.iter().zip(&self.kkts[..self.nk]) {
            dg_n.clear();
            dg_n.extend(
                (0..m).map(|i| dbn[i] + (0..2 * m).map(|k| dgnt[(i, k)] * lt[k] + gnt[(i, k)] * dlt[k]).sum::<f64>()),
            );
            kn.jvp_into(Some(&*dgn), dg_n, &[], dln, kkt);
            ln.copy_from_slice(&p.lambda_n);
            dg_t.clear();
            dg_t.extend(
                (0..2 * m).map(|k| dbt[k] + (0..m).map(|i| dgnt[(i, k)] * ln[i] + gnt[(i, k)] * dln[i]).sum::<f64>()),
            );
            dr.clear();
            dr.extend((0..m).map(|i| dmu[i] * ln[i] + self.mu[i] * dln[i]));
            kt.jvp_into(Some(&*dgt), dg_t, dr, dlt, kkt);
            lt.copy_from_slice(&p.lambda_t);
        }
    }
}

impl IslandJvp {
    /// Reverse mode of [`IslandJvp::jvp`] (the same derivative, chosen in `build`): for the island's impulse
    /// cotangents `sc.lnb`, `sc.ltb`, the residual terms whose derivative at fixed λ is λ̄ᵀdλ (`Terms`, at the
    /// island's contacts): the fixed point's one (its minimum-norm solve transposed), or the cascade's two per executed
    /// pass, backwards through its reduced KKT systems (the warm start's cotangent dropped, as its tangent is
    /// stopped); μ̄ added into `mu_bar` (all contacts). `gnt`: the island's G_nt.
    fn vjp(
        &self,
        it: &IslandTape,
        gnt: &DMatrix<f64>,
        sc: &mut IslandVjpScratch,
        terms: &mut Terms,
        mu_bar: &mut [f64],
    ) {
        let (m, nc, idx) = (it.idx.len(), mu_bar.len(), &it.idx);
        let IslandVjpScratch { lnb, ltb, lnp, yn, yt, rb, mub, x, kkt } = sc;
        mub.clear();
        mub.resize(m, 0.0);
        if self.use_fp {
            self.fp.vjp_into(lnb, ltb, yn, yt, mub, x);
            terms.set(0, nc, idx, Some(yn), Some(yt), &it.ln, &it.lt);
        }
        for p in (0..self.nk).rev().filter(|_| !self.use_fp) {
            let (pass, (kn, kt)) = (&it.passes[p], &self.kkts[p]);
            // the QCQP: λ̄_t → y_t, r̄; then the cotangent of this pass's dλ_n (through g_t = b_t + G_ntᵀλ_n and
            // r = μ λ_n; the output's λ̄_n on the last pass)
            rb.clear();
            rb.resize(m, 0.0);
            kt.vjp_into(ltb, yt, rb, kkt);
            terms.set(2 * p + 1, nc, idx, None, Some(yt), &pass.lambda_n, &pass.lambda_t);
            let last = p + 1 == self.nk;
            lnp.clear();
            lnp.extend((0..m).map(|i| {
                let own = if last { lnb[i] } else { 0.0 };
                own - (0..2 * m).map(|k| gnt[(i, k)] * yt[k]).sum::<f64>() + self.mu[i] * rb[i]
            }));
            for i in 0..m {
                mub[i] += rb[i] * pass.lambda_n[i];
            }
            // the QP: y_n at the previous pass's λ_t (the warm start on the first); its cotangent through
            // g_n = b_n + G_nt λ_t
            kn.vjp_into(lnp, yn, &mut [], kkt);
            let lt_prev = if p == 0 { &it.lt_warm } else { &it.passes[p - 1].lambda_t };
            terms.set(2 * p, nc, idx, Some(yn), None, &pass.lambda_n, lt_prev);
            ltb.clear();
            ltb.extend((0..2 * m).map(|k| -(0..m).map(|i| gnt[(i, k)] * yn[i]).sum::<f64>()));
        }
        for (a, &i) in idx.iter().enumerate() {
            mu_bar[i] += mub[a];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ncp::NcpOptions;
    use torsion_math::{Mat3, Quat, Vec3};
    use torsion_model::builder::{JointDesc, ModelBuilder};
    use torsion_model::JointType;

    /// The grouped dual passes (`Groups`: one direction per component and pass) give the Jacobians of one pass
    /// per direction to round-off, on two stacks, tilted boxes landing on the floor and on each other, a box in
    /// free flight; with 3 × 6 × (the tallest stack) directions for the state and controls, `LANES` a pass, instead
    /// of one Dual64 pass for each of the 3 nv.
    #[test]
    fn grouped_tangent_passes_match_one_pass_per_direction() {
        use crate::solver::{DiffSolver, Solver, StepJacobians};
        use torsion_model::Control;
        let bx = |x: f64, y: f64, z: f64, e: (f64, f64)| {
            format!(
                r#"<body pos="{x} {y} {z}" euler="{} {} 0"><freejoint/><geom type="box" size="0.1 0.1 0.1" mass="1"
                friction="0.5"/></body>"#,
                e.0, e.1
            )
        };
        let mut bodies: Vec<String> = (0..3).map(|k| bx(0.0, 0.0, 0.1005 + 0.201 * k as f64, (0.0, 0.0))).collect();
        bodies.extend((0..2).map(|k| bx(0.6, 0.0, 0.1005 + 0.201 * k as f64, (0.0, 3.0))));
        // tilted: one edge first on the floor, one on another tilted box, one falling free of everything
        bodies.push(bx(1.2, 0.0, 0.13, (10.0, 5.0)));
        bodies.push(bx(1.8, 0.0, 0.14, (0.0, 12.0)));
        bodies.push(bx(1.83, 0.02, 0.38, (20.0, 0.0)));
        bodies.push(bx(2.6, 0.0, 1.0, (30.0, 10.0)));
        let xml = format!(
            r#"<mujoco><option timestep="0.005"/><worldbody><geom type="plane" size="9 9 0.1" friction="0.5"/>{}
            </worldbody></mujoco>"#,
            bodies.concat()
        );
        let m = torsion_model::io::mjcf::load_mjcf_str(&xml, "jumbled.xml", None).unwrap();
        let nv = m.nv();
        let solver = NcpSolver::new(NcpOptions::default());
        let mut ws = Solver::workspace(&solver, &m).unwrap();
        let mut s = GenState::new(m.qpos0.clone(), vec![0.0; nv]);
        let u = Control::from_torques(&(0..nv).map(|k| 0.1 * (k % 5) as f64 - 0.2).collect::<Vec<_>>());
        for _ in 0..12 {
            let mut o = s.clone();
            solver.step(&m, &s, &u, 0.005, &mut o, &mut ws, None).unwrap();
            s = o;
        }
        let masses = ParamSelection::by_prefix(&m, "body_mass[").indices;
        let sel = ParamSelection { indices: vec![masses[0], masses[6]] };
        let mut jac = [StepJacobians::zeros(0, 0, 0), StepJacobians::zeros(0, 0, 0)];
        for (grouped, j) in [true, false].into_iter().zip(jac.iter_mut()) {
            ws.ncp.set_grouped_tangents(grouped);
            solver.step_jacobians_into(&m, &s, &u, 0.005, &sel, &mut ws, j).unwrap();
            let passes = ws.ncp.tangent_passes();
            let expected = if grouped { (3 * 18usize).div_ceil(LANES) + 2 } else { 3 * nv + 2 };
            assert_eq!(passes, expected, "dual passes (grouped: {grouped})");
        }
        let islands = ws.ncp.island_count();
        assert!(islands >= 4, "contact islands: {islands}");
        // the tilted box on the other: in contact with it (one island of two boxes)
        assert!(ws.frames.iter().any(|c| c.body_a.min(c.body_b) == 7 && c.body_a.max(c.body_b) == 8), "no box-box");
        for (name, g, f) in [("A", &jac[0].a, &jac[1].a), ("B", &jac[0].b, &jac[1].b), ("C", &jac[0].c, &jac[1].c)] {
            let scale = f.amax().max(1e-300);
            let err = (g - f).amax() / scale;
            eprintln!("{name}: grouped vs one pass per direction {err:.2e} (max |{name}| {scale:.2e})");
            assert!(err <= 1e-12, "{name}: grouped vs one pass per direction {err:e} (max |{name}| {scale:e})");
            assert!(f.iter().all(|x| x.is_finite()) && scale > 0.0, "{name} is zero or not finite");
        }
    }

    /// ∂v⁺/∂u and ∂v⁺/∂μ of a box sliding on three contacts against central differences (the full set of
    /// checks — state, parameters, restitution, impacts — is in tests/ncp_gradients.rs).
    #[test]
    fn control_and_friction_columns_match_finite_differences() {
        let mut b = ModelBuilder::new("box").gravity(Vec3::new(0.0, 0.0, -9.81)).dt(0.01);
        let w = b.add_fixed_body("world", Vec3::zeros(), Quat::identity());
        let bx = b.add_body("box", 1.5, Mat3::from_diagonal_element(0.01));
        let mut j = JointDesc::hinge("free", w, bx, Vec3::zeros(), Vec3::zeros(), Vec3::z());
        j.kind = JointType::Free;
        b.add_joint(j);
        let m = b.build().unwrap();
        let s = GenState::new(vec![0.0, 0.0, 0.0999, 1.0, 0.0, 0.0, 0.0], vec![0.0, 0.0, 0.0, 1.0, 0.5, 0.0]);
        let contacts = |mu: f64| -> Vec<ContactFrame> {
            [(-0.1, -0.1), (0.1, -0.1), (0.0, 0.1)]
                .iter()
                .enumerate()
                .map(|(i, &(x, y))| {
                    ContactFrame::new(
                        ContactGeom {
                            body_a: 1,
                            body_b: 0,
                            point: Vec3::new(x, y, -1e-4),
                            normal: Vec3::z(),
                            tangents: [Vec3::x(), Vec3::y()],
                            distance: -1e-4,
                            mu,
                            restitution: 0.0,
                        },
                        i as u64,
                    )
                })
                .collect()
        };
        let solver = NcpSolver::new(NcpOptions::default());
        let u = [0.0, 0.0, 0.0, 0.5, -0.2, 0.0];
        let mut ws = solver.contact_workspace(&m).unwrap();
        let (jac, _, _) = solver
            .step_jacobians_with_contacts(
                &ContactStep::new(&m, &s, &u, 0.01, &contacts(0.3)),
                &mut ws,
                &ParamSelection::none(),
            )
            .unwrap();
        let v_next = |uu: &[f64], mu: f64| {
            let mut w = solver.contact_workspace(&m).unwrap();
            let mut o = s.clone();
            solver.step_with_contacts(&ContactStep::new(&m, &s, uu, 0.01, &contacts(mu)), &mut w, &mut o).unwrap();
            o.v
        };
        let h = 1e-6;
        let mut worst: f64 = 0.0;
        for k in 0..6 {
            let (mut up, mut um) = (u, u);
            up[k] += h;
            um[k] -= h;
            let (p, q) = (v_next(&up, 0.3), v_next(&um, 0.3));
            for r in 0..6 {
                worst = worst.max(((p[r] - q[r]) / (2.0 * h) - jac.b[(6 + r, k)]).abs());
            }
        }
        let (p, q) = (v_next(&u, 0.3 + h), v_next(&u, 0.3 - h));
        for r in 0..6 {
            worst = worst.max(((p[r] - q[r]) / (2.0 * h) - jac.d_mu.row(6 + r).sum()).abs());
        }
        assert!(worst < 1e-7, "∂v⁺/∂(u, μ) vs FD: {worst:e}");
    }
}
