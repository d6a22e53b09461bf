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
use crate::contact::frames::{pair_source, ContactFrame, ContactGeom};
use crate::contact::prelude::{apply_impulses_into, prelude_into, restitution_impulses_into, Prelude, StepInputs};
use crate::generalized::{dual_tangent, GenState};
use crate::solver::SolverError;
use nalgebra::DMatrix;
use num_dual::Dual64;
use torsion_dynamics::joints::{advance_into, integrate_scaled_into};
use torsion_dynamics::{forward_kinematics, DynData, DynModel};
use torsion_model::params::ParamKind;
use torsion_model::{Model, ParamSelection, ParamTable, Shape};

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

fn lift(x: &[f64]) -> Vec<Dual64> {
    x.iter().map(|&v| Dual64::from(v)).collect()
}

/// `out` ← `x` lifted to duals with zero tangents (refilled in place).
fn lift_into(x: &[f64], out: &mut Vec<Dual64>) {
    out.clear();
    out.extend(x.iter().map(|&v| Dual64::from(v)));
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
    d: Option<DynData<Dual64>>,
    pre: Prelude<Dual64>,
    /// the step's output state
    pub(crate) next: GenState,
    anchors: Vec<Anchor>,
    mu: Vec<f64>,
    mu_src: Vec<Option<ParamKind>>,
    eps_src: Vec<Option<ParamKind>>,
    q0: Vec<Dual64>,
    q: Vec<Dual64>,
    e: Vec<Dual64>,
    v: Vec<Dual64>,
    u: Vec<Dual64>,
    geoms: Vec<ContactGeom<Dual64>>,
    dmu: Vec<f64>,
    ln: Vec<Dual64>,
    lt: Vec<Dual64>,
    pn: Vec<Dual64>,
    pt: Vec<Dual64>,
    vplus: Vec<Dual64>,
    q1: Vec<Dual64>,
    v1: Vec<Dual64>,
    impact: PhaseJvp,
    step: PhaseJvp,
    jvp: JvpScratch,
    /// ∂(q⁺, v⁺) per direction: state (2nv), controls (nv), selected parameters, μ per contact, ε
    pub(crate) cols: DMatrix<f64>,
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
            d: None,
            pre: Prelude::default(),
            next: GenState::new(vec![], vec![]),
            anchors: vec![],
            mu: vec![],
            mu_src: vec![],
            eps_src: vec![],
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
            impact: PhaseJvp::default(),
            step: PhaseJvp::default(),
            jvp: JvpScratch::default(),
            cols: e(),
        }
    }
}

/// `m` ← the tangents of `x` (reusing `m`'s storage).
fn eps_into(x: &DMatrix<Dual64>, m: &mut DMatrix<f64>) {
    reshape_zeroed(m, x.nrows(), x.ncols());
    m.zip_apply(x, |a, b| *a = b.eps);
}

impl NcpSolver {
    /// One step (as `step_with_contacts`, whose result it also returns) and its tangent Jacobians, every column
    /// (`jacobians_into` with the per-contact `d_mu` / `d_restitution` directions).
    #[allow(clippy::too_many_arguments)]
    pub fn step_jacobians_with_contacts(
        &self,
        model: &Model,
        ws: &mut NcpWorkspace,
        s: &GenState,
        u: &[f64],
        dt: f64,
        contacts: &[ContactFrame],
        sel: &ParamSelection,
    ) -> Result<(NcpJacobians, GenState, NcpReport), SolverError> {
        let mut report = NcpReport::default();
        self.jacobians_into(model, ws, s, u, dt, contacts, sel, true, &mut report)?;
        let tan = ws.tangent();
        let (nv, ns, nc) = (ws.dm.nv, sel.len(), contacts.len());
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
        model: &Model,
        ws: &mut NcpWorkspace,
        s: &GenState,
        u: &[f64],
        dt: f64,
        contacts: &[ContactFrame],
        sel: &ParamSelection,
        per_contact: bool,
        report: &mut NcpReport,
    ) -> Result<(), SolverError> {
        let mut tan = ws.tan.take().unwrap_or_else(|| Box::new(TangentWorkspace::new(model)));
        let r = self.jacobians_in(model, ws, &mut tan, s, u, dt, contacts, sel, per_contact, report);
        ws.tan = Some(tan);
        r
    }

    #[allow(clippy::too_many_arguments)]
    fn jacobians_in(
        &self,
        model: &Model,
        ws: &mut NcpWorkspace,
        tw: &mut TangentWorkspace,
        s: &GenState,
        u: &[f64],
        dt: f64,
        contacts: &[ContactFrame],
        sel: &ParamSelection,
        per_contact: bool,
        report: &mut NcpReport,
    ) -> Result<(), SolverError> {
        let next = &mut tw.next;
        next.q.clone_from(&s.q);
        next.v.clone_from(&s.v);
        next.act.clone_from(&s.act);
        next.warm.fill(s.warm.as_slice().iter().copied());
        // the step (its prelude's island blocks and its tape are what the derivatives below read)
        self.step_with_contacts_into(model, ws, s, u, dt, contacts, next, report)?;
        let o = &self.options;
        let po = o.prelude();
        let (nv, nc) = (ws.dm.nv, contacts.len());
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
        let with_gravity = |mut dm: DynModel<Dual64>| {
            dm.gravity = torsion_math::scalar::cv(&model.gravity);
            dm
        };
        // the dual models: rebuilt when θ changed since they were built (allocates), reused otherwise
        if tw.base_dm.is_none() || tw.built_theta != tw.theta {
            tw.base_dm = Some(with_gravity(DynModel::build(model, table, &lift(&tw.theta)).map_err(dyn_err)?));
            tw.param_dm.clear();
            tw.param_dm.resize_with(table.len(), || None);
            tw.built_theta.clone_from(&tw.theta);
        }
        for &i in &sel.indices {
            if tw.param_dm[i].is_none() && !table.kinds[i].is_contact_material() {
                let mut th = lift(&tw.theta);
                th[i].eps = 1.0;
                tw.param_dm[i] = Some(with_gravity(DynModel::build(model, table, &th).map_err(dyn_err)?));
            }
        }
        let base_dm = tw.base_dm.as_mut().expect("built above");
        base_dm.gravity = torsion_math::scalar::cv(&model.gravity);
        let base_dm = tw.base_dm.as_ref().expect("built above");
        let d = tw.d.get_or_insert_with(|| DynData::new(base_dm));
        let ndir = 3 * nv + sel.len() + nc + 1;
        reshape_zeroed(&mut tw.cols, 2 * nv, ndir);
        lift_into(&s.q, &mut tw.q0);
        for dir in 0..ndir {
            if !per_contact && dir >= 3 * nv + sel.len() {
                break;
            }
            let param = (3 * nv..3 * nv + sel.len()).contains(&dir).then(|| sel.indices[dir - 3 * nv]);
            // a contact-material parameter: seeds μ / ε below, the dynamics model is the base one
            let mat = param.map(|i| table.kinds[i]).filter(|k| k.is_contact_material());
            let dm = match param {
                Some(i) if mat.is_none() => {
                    let dm = tw.param_dm[i].as_mut().expect("built above");
                    dm.gravity = torsion_math::scalar::cv(&model.gravity);
                    &*dm
                }
                _ => base_dm,
            };
            let q = &mut tw.q;
            if dir < nv {
                tw.e.clear();
                tw.e.resize(nv, Dual64::from(0.0));
                tw.e[dir].eps = 1.0;
                q.clone_from(&tw.q0);
                integrate_scaled_into(dm, &tw.q0, &tw.e, Dual64::from(1.0), q);
            } else {
                q.clone_from(&tw.q0);
            }
            lift_into(&s.v, &mut tw.v);
            if (nv..2 * nv).contains(&dir) {
                tw.v[dir - nv].eps = 1.0;
            }
            lift_into(u, &mut tw.u);
            if (2 * nv..3 * nv).contains(&dir) {
                tw.u[dir - 2 * nv].eps = 1.0;
            }
            let mu_dir = (3 * nv + sel.len()..3 * nv + sel.len() + nc).contains(&dir).then(|| dir - 3 * nv - sel.len());
            forward_kinematics(dm, q, d);
            tw.geoms.clear();
            for (i, (c, an)) in contacts.iter().zip(&tw.anchors).enumerate() {
                let mut g = an.geom(c, &d.o_m[c.body_a], &d.o_m[c.body_b]);
                if mu_dir == Some(i) || (mat.is_some() && mat == tw.mu_src[i]) {
                    g.mu.eps = 1.0;
                }
                if dir == ndir - 1 || (mat.is_some() && mat == tw.eps_src[i]) {
                    g.restitution.eps = 1.0;
                }
                tw.geoms.push(g);
            }
            let x = StepInputs {
                model,
                dm,
                body_joint: &ws.body_joint,
                q,
                v: &tw.v,
                u: &tw.u,
                dt,
                contacts: &tw.geoms,
                o: &po,
            };
            let pre = &mut tw.pre;
            // the islands' blocks only (the dense G when the islands are not split)
            pre.dense = whole;
            pre.mass_solve = ws.mass_solve;
            prelude_into(&x, d, pre)?;
            tw.dmu.clear();
            tw.dmu.extend(tw.geoms.iter().map(|g| g.mu.eps));
            if tape.has_impact {
                // the impact's impulses and restitution, then the step from S(v + M⁻¹ Jᵀ P)
                let g = PhaseGrads { contacts, g: &ws.pre, dg: pre, whole, dmu: &tw.dmu };
                tw.impact.jvp(&tape.impact, &g, &pre.bn_impact, &pre.bt_impact, &mut tw.jvp, &mut tw.ln, &mut tw.lt);
                restitution_impulses_into(&tw.geoms, &tw.ln, &tw.lt, &mut tw.pn, &mut tw.pt);
                pre.after_impact(&x, d, &tw.pn, &tw.pt)?;
            }
            let g = PhaseGrads { contacts, g: &ws.pre, dg: pre, whole, dmu: &tw.dmu };
            tw.step.jvp(&tape.step, &g, &pre.bn, &pre.bt, &mut tw.jvp, &mut tw.ln, &mut tw.lt);
            if nc > 0 {
                apply_impulses_into(pre, &tw.ln, &tw.lt, &mut tw.vplus);
            } else {
                tw.vplus.clone_from(&pre.vp);
            }
            let vplus = &tw.vplus;
            tw.q1.clone_from(q);
            tw.v1.clone_from(vplus);
            advance_into(dm, q, vplus, Dual64::from(dt), &mut tw.q1, &mut tw.v1);
            let next = &tw.next;
            for j in 0..dm.parent.len() {
                let (qs, vs, jm) = (dm.q_start[j], dm.v_start[j], &dm.joint[j]);
                let t = dual_tangent(jm.kind, &next.q[qs..qs + jm.nq], &tw.q1[qs..qs + jm.nq]);
                for r in 0..jm.nv {
                    tw.cols[(vs + r, dir)] = t[r];
                }
            }
            for k in 0..nv {
                tw.cols[(nv + k, dir)] = tw.v1[k].eps;
            }
        }
        Ok(())
    }
}

/// What a solve's tangents need beside its tape: the contacts, the step's prelude (f64: the islands' blocks)
/// and the direction's (duals: the blocks' tangents), the μ tangents.
struct PhaseGrads<'a> {
    contacts: &'a [ContactFrame],
    g: &'a Prelude<f64>,
    dg: &'a Prelude<Dual64>,
    /// the islands not split (`NcpWorkspace::split_islands` off): one island, the dense G
    whole: bool,
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
}

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
    /// `bn`, `bt`), island by island.
    #[allow(clippy::too_many_arguments)]
    fn jvp(
        &self,
        ph: &PhaseTape,
        g: &PhaseGrads,
        bn: &[Dual64],
        bt: &[Dual64],
        sc: &mut JvpScratch,
        ln_out: &mut Vec<Dual64>,
        lt_out: &mut Vec<Dual64>,
    ) {
        let nc = g.contacts.len();
        ln_out.clear();
        ln_out.extend((0..nc).map(|i| Dual64::from(ph.ln.get(i).copied().unwrap_or(0.0))));
        lt_out.clear();
        lt_out.extend((0..2 * nc).map(|k| Dual64::from(ph.lt.get(k).copied().unwrap_or(0.0))));
        for (k, (ij, it)) in self.islands[..self.n].iter().zip(&ph.islands).enumerate() {
            let gnt = island_blocks(g.g, g.whole, k).2;
            let (dgn, dgt, dgnt) = island_blocks(g.dg, g.whole, k);
            eps_into(dgn, &mut sc.dgn);
            eps_into(dgt, &mut sc.dgt);
            eps_into(dgnt, &mut sc.dgnt);
            let idx = &it.idx;
            sc.dbn.clear();
            sc.dbn.extend(idx.iter().map(|&i| bn[i].eps));
            sc.dbt.clear();
            sc.dbt.extend(idx.iter().flat_map(|&i| [bt[2 * i].eps, bt[2 * i + 1].eps]));
            sc.dmu.clear();
            sc.dmu.extend(idx.iter().map(|&i| g.dmu[i]));
            ij.jvp(it, gnt, sc);
            for (a, &i) in idx.iter().enumerate() {
                ln_out[i].eps = sc.dln[a];
                lt_out[2 * i].eps = sc.dlt[2 * a];
                lt_out[2 * i + 1].eps = sc.dlt[2 * a + 1];
            }
        }
    }
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
        // fixed point of an unconverged step (its SVD is skipped otherwise)
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
                // (and, sliding or not, where the direct solve answered: the passes' choice is not at stake)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ncp::NcpOptions;
    use torsion_math::{Mat3, Quat, Vec3};
    use torsion_model::builder::{JointDesc, ModelBuilder};
    use torsion_model::JointType;

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
                .map(|(i, &(x, y))| ContactFrame {
                    body_a: 1,
                    body_b: 0,
                    point: Vec3::new(x, y, -1e-4),
                    normal: Vec3::z(),
                    tangents: [Vec3::x(), Vec3::y()],
                    distance: -1e-4,
                    mu,
                    restitution: 0.0,
                    shapes: None,
                    id: i as u64,
                    radius: [0.0; 2],
                })
                .collect()
        };
        let solver = NcpSolver::new(NcpOptions::default());
        let u = [0.0, 0.0, 0.0, 0.5, -0.2, 0.0];
        let mut ws = solver.contact_workspace(&m).unwrap();
        let (jac, _, _) = solver
            .step_jacobians_with_contacts(&m, &mut ws, &s, &u, 0.01, &contacts(0.3), &ParamSelection::none())
            .unwrap();
        let v_next = |uu: &[f64], mu: f64| {
            let mut w = solver.contact_workspace(&m).unwrap();
            let mut o = s.clone();
            solver.step_with_contacts(&m, &mut w, &s, uu, 0.01, &contacts(mu), &mut o).unwrap();
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
