//! The contact problem of one step in generalized coordinates, shared by the contact solvers (spec 001 §3.1–3.3,
//! docs/decisions.md rows 9a, 17, "Issue 20: the long-chain scaling cliff"), on any scalar (f64 for the step,
//! duals for its tangents): the factor M = Lᵀ L (or the articulated-body factorisation on deep trees),
//! the smooth update S(v), the contact Jacobians, the Delassus blocks G = J M⁻¹ Jᵀ and the offsets of the impact
//! and of the step, the impact's restitution and the impulse application. Free of any one solver's options
//! (`PreludeOptions`); the solver of the impulses (ncp's staggered ADMM passes, an LCP) is the caller's.
use super::buffers::reshape_zeroed;
use super::delassus::{assemble_from_columns, assemble_with, ContactPattern, DelassusScratch, IslandBlocks};
use super::frames::{contact_rows, ContactGeom};
use crate::solver::SolverError;
use nalgebra::DMatrix;
use torsion_dynamics::aba::aba_solve_factored_into;
use torsion_dynamics::fluid::FluidBodies;
use torsion_dynamics::gyroscopic::implicit_gyroscopic;
use torsion_dynamics::joints::add_free_frame_term;
use torsion_dynamics::ltl::{dof_parents_with, ltl_in_place, ltl_solve_in_place, TreeMatrix, NO_DOF};
use torsion_dynamics::passive::passive_forces_into;
use torsion_dynamics::{aba_into, crba_tree_into, forward_kinematics, nonlinear_effects_into, DynData, DynModel};
use torsion_math::Scalar;
use torsion_model::Model;

/// What the contact problem takes from a solver's options.
#[derive(Clone, Copy, Debug)]
pub struct PreludeOptions {
    /// the solver's name, for its errors
    pub solver: &'static str,
    /// apply the model's joint damping and springs (explicitly) in S
    pub passive: bool,
    /// Baumgarte gain K (1/s) on the penetration; 0 = off
    pub baumgarte: f64,
}

/// A contact step's input sizes (q: nq, v: nv, nv generalized forces `u`), else the named solver's `BadInput`.
pub fn check_sizes(
    solver: &'static str,
    nq: usize,
    nv: usize,
    q: &[f64],
    v: &[f64],
    u: &[f64],
) -> Result<(), SolverError> {
    if q.len() != nq || v.len() != nv || u.len() != nv {
        return Err(SolverError::BadInput {
            solver,
            problem: format!(
                "state (q {}, v {}) and controls ({}) must have nq = {nq}, nv = {nv}, nv entries",
                q.len(),
                v.len(),
                u.len()
            ),
        });
    }
    Ok(())
}

/// A dynamics error as the named solver's.
pub fn dyn_err(solver: &'static str) -> impl Fn(torsion_dynamics::DynError) -> SolverError {
    move |e| SolverError::Unsupported { solver, problem: e.to_string() }
}

/// How the prelude applies M⁻¹ (the same M, armature included; the results agree to round-off).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MassSolve {
    /// `Ltl` unless a DoF has more than [`ABA_DEPTH`] ancestors, then `Aba` (issue 20: a 1,000-link chain)
    #[default]
    Auto,
    /// M = Lᵀ L, Featherstone's LTL over the DoF tree: O(Σ depth²) to factorise, O(Σ depth) per solve — cheap for
    /// free bodies and arms, O(n³) for a chain of n links (M is dense there)
    Ltl,
    /// the articulated-body factorisation (ABA's U, D⁻¹; Featherstone 2008 §7.3) in O(n), M⁻¹ x in O(n) per
    /// solve (`aba::aba_solve_factored_into`), M⁻¹ Jᵀ per contact row: O(n k) for k contacts, no n × n matrix
    Aba,
}

/// `MassSolve::Auto` takes the articulated-body solve once a DoF has more ancestors than this.
pub const ABA_DEPTH: usize = 64;

/// The smooth part of a step on any scalar T (f64 for the step, duals for its tangents): the sparse factor
/// M = Lᵀ L (Featherstone's LTL over the DoF tree λ; or, for deep trees, the articulated-body factorisation and
/// M⁻¹ Jᵀ per contact row, `MassSolve`), v^p, the contact Jacobians on each contact's support, the
/// Delassus blocks per island (assembled from their non-zero 3 × 3 blocks only) and the QP / QCQP offsets; with
/// `dense` (the default) also J and G as dense matrices over all contacts (the Jacobians' tangent passes, the LCP).
pub struct Prelude<T: Scalar> {
    /// also fill the dense `jn`, `jt`, `gn`, `gt`, `gnt` (default true); false: they are left 0 × 0 and nothing
    /// of size nc × nv or nc × nc is touched (per-island work only, issue 15 item 2)
    pub dense: bool,
    /// assemble the Delassus blocks (default true); false: `blocks` (and the dense G) are left as they were —
    /// the reverse-mode passes read only M, v^p, the rows and the offsets (`ncp::adjoint`)
    pub delassus: bool,
    /// how M⁻¹ is applied (default `Auto`)
    pub mass_solve: MassSolve,
    /// this step applies M⁻¹ by the articulated-body solve (`l` is then empty, `minv_jt` holds M⁻¹ Jᵀ)
    pub aba: bool,
    /// M = Lᵀ L (`MassSolve::Ltl`), on the DoF tree only (Σ (depth + 1) entries, no nv × nv matrix)
    pub l: TreeMatrix<T>,
    /// λ(i), the parent DoF (`ltl::dof_parents`)
    pub lambda: Vec<usize>,
    /// each contact's DoFs and the contact islands
    pub pattern: ContactPattern,
    pub vp: Vec<T>,
    /// J_n, J_t, J_t on the supports: `rows[3 (pattern.start[c] + p) + m]`, row m (n, t1, t2) of contact c at
    /// its p-th support DoF (`frames::contact_rows`)
    pub rows: Vec<T>,
    /// G_n, G_t, G_nt of each island (`pattern.islands[k]`: `blocks[k]`; entries beyond the island count are
    /// stale buffers kept for reuse)
    pub blocks: Vec<IslandBlocks<T>>,
    pub jn: DMatrix<T>,
    pub jt: DMatrix<T>,
    pub gn: DMatrix<T>,
    pub gt: DMatrix<T>,
    pub gnt: DMatrix<T>,
    /// the step's offsets (from v^p)
    pub bn: Vec<T>,
    pub bt: Vec<T>,
    /// the impact's offsets (from v; empty when no contact has ε > 0)
    pub bn_impact: Vec<T>,
    pub bt_impact: Vec<T>,
    /// `aba`: M⁻¹ J_rᵀ of each contact row r = 3c + m (n, t1, t2), nv entries each
    pub minv_jt: Vec<T>,
    scratch: PreludeScratch<T>,
}

/// Buffers of `prelude_into` and `after_impact` (reused from step to step).
struct PreludeScratch<T: Scalar> {
    bias: Vec<T>,
    passive: Vec<T>,
    /// v + M⁻¹ Jᵀ P after an impact
    struck: Vec<T>,
    /// the model's fluid data (built at the first step)
    fluid: Option<FluidBodies>,
    delassus: DelassusScratch<T>,
    /// `dof_parents_with`'s scratch
    body_last: Vec<usize>,
    /// the articulated-body solve's: zero v and τ, ABA's output, a right-hand side, a solution
    zeros: Vec<T>,
    qdd: Vec<T>,
    w: Vec<T>,
    x: Vec<T>,
}

impl<T: Scalar> Default for Prelude<T> {
    /// Empty buffers for `prelude_into` (sized by its first call).
    fn default() -> Self {
        let e = || DMatrix::from_vec(0, 0, Vec::new());
        Prelude {
            dense: true,
            delassus: true,
            mass_solve: MassSolve::Auto,
            aba: false,
            l: TreeMatrix::default(),
            lambda: vec![],
            pattern: ContactPattern::default(),
            vp: vec![],
            rows: vec![],
            blocks: vec![],
            jn: e(),
            jt: e(),
            gn: e(),
            gt: e(),
            gnt: e(),
            bn: vec![],
            bt: vec![],
            bn_impact: vec![],
            bt_impact: vec![],
            minv_jt: vec![],
            scratch: PreludeScratch {
                bias: vec![],
                passive: vec![],
                struck: vec![],
                fluid: None,
                delassus: DelassusScratch::default(),
                body_last: vec![],
                zeros: vec![],
                qdd: vec![],
                w: vec![],
                x: vec![],
            },
        }
    }
}

/// The inputs of a step's contact problem, shared by `prelude` and `Prelude::after_impact`.
pub struct StepInputs<'a, T: Scalar> {
    pub model: &'a Model,
    pub dm: &'a DynModel<T>,
    /// the joint moving each body (`frames::body_joints`)
    pub body_joint: &'a [usize],
    pub q: &'a [T],
    pub v: &'a [T],
    /// nv generalized forces
    pub u: &'a [T],
    pub dt: f64,
    pub contacts: &'a [ContactGeom<T>],
    pub o: &'a PreludeOptions,
}

/// G = YᵀY with Y = L⁻ᵀ Jᵀ (M = Lᵀ L); v^p = S(v) (`smooth_velocity`) and the step's offsets
/// (`step_offsets`); with a contact of ε > 0, the impact's offsets from v (`impact_offsets`).
pub fn prelude<T: Scalar>(x: &StepInputs<T>, d: &mut DynData<T>) -> Result<Prelude<T>, SolverError> {
    let mut pre = Prelude::default();
    prelude_into(x, d, &mut pre)?;
    Ok(pre)
}

/// [`prelude`] into `pre`, reusing its buffers (no allocation once they have grown to the step's size: the
/// contact-dependent ones grow only when a step has more contacts than any before).
pub fn prelude_into<T: Scalar>(x: &StepInputs<T>, d: &mut DynData<T>, pre: &mut Prelude<T>) -> Result<(), SolverError> {
    prelude_into_dt(x, T::c(x.dt), d, pre)
}

/// [`prelude`] over a time step `dt` on the scalar T (`x.dt` ignored): a sub-step whose length depends on the
/// inputs (a time of impact, spec 004 §3.7–3.8) carries its derivative. `dt` = 0 is an impact (Eq. 8): v^p = v,
/// and no gap term in the offsets (nothing closes in no time).
pub fn prelude_dt<T: Scalar>(x: &StepInputs<T>, dt: T, d: &mut DynData<T>) -> Result<Prelude<T>, SolverError> {
    let mut pre = Prelude::default();
    prelude_into_dt(x, dt, d, &mut pre)?;
    Ok(pre)
}

/// [`prelude_dt`] into `pre`, reusing its buffers as [`prelude_into`].
pub fn prelude_into_dt<T: Scalar>(
    x: &StepInputs<T>,
    dt: T,
    d: &mut DynData<T>,
    pre: &mut Prelude<T>,
) -> Result<(), SolverError> {
    let StepInputs { model, dm, body_joint, q, v, u, contacts, o, .. } = *x;
    let nv = dm.nv;
    dof_parents_with(dm, &mut pre.lambda, &mut pre.scratch.body_last);
    pre.aba = match pre.mass_solve {
        MassSolve::Ltl => false,
        MassSolve::Aba => true,
        MassSolve::Auto => deeper_than(&pre.lambda, ABA_DEPTH, &mut pre.scratch.body_last),
    };
    if pre.aba {
        pre.l.clear();
        // (ABA checks q's size; the world poses for the contact rows after it)
        aba_factor(dm, q, d, &mut pre.scratch, o)?;
        forward_kinematics(dm, q, d);
    } else {
        // M's entries on the DoF tree: O(Σ depth), not nv² (issue 15 item 2)
        pre.l.reshape(&pre.lambda);
        crba_tree_into(dm, q, d, &mut pre.l).map_err(dyn_err(o.solver))?;
        if !ltl_in_place(&mut pre.l, &pre.lambda) {
            return Err(not_positive_definite(q, v, o));
        }
    }
    let Prelude { aba, l, lambda, vp, scratch, .. } = pre;
    smooth_velocity(model, dm, d, *aba, l, lambda, q, v, u, dt, o, scratch, vp)?;
    let nc = contacts.len();
    // `d.o_m` is at q: `crba_tree_into` / `forward_kinematics` ran the kinematics (the smooth velocity only reads it)
    pre.pattern.fill(dm, &pre.lambda, body_joint, contacts);
    contact_rows(dm, d, body_joint, contacts, &pre.pattern, &mut pre.rows);
    let (jr, gr) = if pre.dense { ((nc, nv), nc) } else { ((0, 0), 0) };
    reshape_zeroed(&mut pre.jn, jr.0, jr.1);
    reshape_zeroed(&mut pre.jt, 2 * jr.0, jr.1);
    if pre.dense {
        for c in 0..nc {
            for (p, &k) in pre.pattern.support(c).iter().enumerate() {
                let r = 3 * (pre.pattern.start[c] + p);
                pre.jn[(c, k)] = pre.rows[r];
                pre.jt[(2 * c, k)] = pre.rows[r + 1];
                pre.jt[(2 * c + 1, k)] = pre.rows[r + 2];
            }
        }
    } else {
        reshape_zeroed(&mut pre.gn, gr, gr);
        reshape_zeroed(&mut pre.gt, gr, gr);
        reshape_zeroed(&mut pre.gnt, gr, gr);
    }
    let Prelude { aba, dense, delassus, l, lambda, rows, pattern, blocks, gn, gt, gnt, minv_jt, scratch, .. } = pre;
    let full = if *dense { Some((gn, gt, gnt)) } else { None };
    if *aba {
        // M⁻¹ J_rᵀ per contact row by the articulated-body solve (O(nv) each), G = J (M⁻¹ Jᵀ) on the islands
        minv_jt.clear();
        minv_jt.resize(3 * nc * nv, T::zero());
        let (w, xs) = (&mut scratch.w, &mut scratch.x);
        w.clear();
        w.resize(nv, T::zero());
        xs.resize(nv, T::zero());
        for c in 0..nc {
            let sup = pattern.support(c);
            for m in 0..3 {
                for (p, &k) in sup.iter().enumerate() {
                    w[k] = rows[3 * (pattern.start[c] + p) + m];
                }
                aba_solve_factored_into(dm, d, w, xs).map_err(dyn_err(o.solver))?;
                let r = 3 * c + m;
                minv_jt[r * nv..(r + 1) * nv].copy_from_slice(xs);
                sup.iter().for_each(|&k| w[k] = T::zero());
            }
        }
        if *delassus {
            assemble_from_columns(rows, pattern, minv_jt, nv, blocks, full);
        }
    } else if *delassus {
        // Y = L⁻ᵀ Jᵀ on each contact's DoFs, G = YᵀY on the pairs sharing a tree: M⁻¹ is never formed (spec 001
        // §3.1)
        assemble_with(l, lambda, rows, pattern, blocks, full, &mut scratch.delassus);
    }
    pre.step_offsets(contacts, dt, o);
    pre.bn_impact.clear();
    pre.bt_impact.clear();
    if contacts.iter().any(|c| c.restitution.re() > 0.0) {
        pre.impact_offsets(contacts, v, dt);
    }
    Ok(())
}

/// Some DoF has more than `limit` ancestors (λ(i) < i: depths in one pass; `depth`: scratch).
fn deeper_than(lambda: &[usize], limit: usize, depth: &mut Vec<usize>) -> bool {
    depth.clear();
    for i in 0..lambda.len() {
        let k = if lambda[i] == NO_DOF { 0 } else { depth[lambda[i]] + 1 };
        if k > limit {
            return true;
        }
        depth.push(k);
    }
    false
}

/// The articulated-body factorisation of M̃(q) (armature included) into `d`: ABA at zero velocity and forces
/// (its U, D⁻¹ and placements depend on q alone). A non-finite result is the LTL's error.
fn aba_factor<T: Scalar>(
    dm: &DynModel<T>,
    q: &[T],
    d: &mut DynData<T>,
    sc: &mut PreludeScratch<T>,
    o: &PreludeOptions,
) -> Result<(), SolverError> {
    let nv = dm.nv;
    sc.zeros.clear();
    sc.zeros.resize(nv, T::zero());
    sc.qdd.resize(nv, T::zero());
    aba_into(dm, q, &sc.zeros, &sc.zeros, d, &mut sc.qdd).map_err(dyn_err(o.solver))?;
    // (the free-fall acceleration M̃⁻¹ (−g(q)): not finite when a pivot is not)
    if sc.qdd.iter().any(|a| !a.re().is_finite()) {
        return Err(not_positive_definite(q, &sc.zeros, o));
    }
    Ok(())
}

/// The error of a joint-space inertia matrix that is not positive definite (far from the origin, |q| ~ 1e7 m,
/// round-off alone makes it indefinite: then it says the step has diverged).
fn not_positive_definite<T: Scalar>(q: &[T], v: &[T], o: &PreludeOptions) -> SolverError {
    let big = |x: &[T]| x.iter().fold(0.0f64, |m, x| m.max(x.re().abs()));
    let (qm, vm) = (big(q), big(v));
    let why = if qm > 1e6 || vm > 1e6 {
        format!(" (the step diverged: |q| up to {qm:.3e}, |v| up to {vm:.3e} before the contact solve)")
    } else {
        String::new()
    };
    SolverError::BadInput {
        solver: o.solver,
        problem: format!("the joint-space inertia matrix is not positive definite{why}"),
    }
}

/// The smooth velocity update S (spec 001 §3.2): v^p = v + Δt M⁻¹ τ(q, v, u) with M = Lᵀ L factorised, the
/// implicit gyroscopic torque of loose free bodies and the free joints' frame term; into `vp`.
#[allow(clippy::too_many_arguments)]
fn smooth_velocity<T: Scalar>(
    model: &Model,
    dm: &DynModel<T>,
    d: &mut DynData<T>,
    aba: bool,
    l: &TreeMatrix<T>,
    lambda: &[usize],
    q: &[T],
    v: &[T],
    u: &[T],
    h: T,
    o: &PreludeOptions,
    sc: &mut PreludeScratch<T>,
    vp: &mut Vec<T>,
) -> Result<(), SolverError> {
    let nv = dm.nv;
    if h.re() == 0.0 {
        // an impact (Δt = 0): no smooth forces
        vp.clear();
        vp.extend_from_slice(v);
        return Ok(());
    }
    sc.bias.resize(nv, T::zero());
    nonlinear_effects_into(dm, q, v, d, &mut sc.bias).map_err(dyn_err(o.solver))?;
    sc.passive.clear();
    sc.passive.resize(nv, T::zero());
    if o.passive {
        let fluid = sc.fluid.get_or_insert_with(|| FluidBodies::new(model));
        fluid.fill(model);
        passive_forces_into(model, dm, d, fluid, q, v, &mut sc.passive).map_err(dyn_err(o.solver))?;
    }
    let (bias, passive) = (&sc.bias, &sc.passive);
    vp.clear();
    vp.extend((0..nv).map(|k| u[k] - bias[k] + passive[k]));
    if aba {
        sc.x.resize(nv, T::zero());
        aba_solve_factored_into(dm, d, vp, &mut sc.x).map_err(dyn_err(o.solver))?;
        vp.copy_from_slice(&sc.x);
    } else {
        ltl_solve_in_place(l, lambda, vp);
    }
    for k in 0..nv {
        vp[k] = v[k] + h * vp[k];
    }
    implicit_gyroscopic(dm, v, h, vp);
    add_free_frame_term(dm, v, h, vp);
    Ok(())
}

impl<T: Scalar> Prelude<T> {
    /// f += J_nᵀ λ_n + J_tᵀ λ_t (each contact's rows on its support).
    pub fn add_jt(&self, ln: &[T], lt: &[T], f: &mut [T]) {
        for i in 0..ln.len() {
            let s0 = self.pattern.start[i];
            for (p, &k) in self.pattern.support(i).iter().enumerate() {
                let r = &self.rows[3 * (s0 + p)..3 * (s0 + p) + 3];
                f[k] += r[0] * ln[i] + r[1] * lt[2 * i] + r[2] * lt[2 * i + 1];
            }
        }
    }

    /// Row m (0: n, 1: t1, 2: t2) of contact c's Jacobian times x.
    pub fn row_dot(&self, m: usize, c: usize, x: &[T]) -> T {
        let s0 = self.pattern.start[c];
        self.pattern
            .support(c)
            .iter()
            .enumerate()
            .fold(T::zero(), |acc, (p, &k)| acc + self.rows[3 * (s0 + p) + m] * x[k])
    }

    /// The step's offsets from v^p (docs/decisions.md row 9a): b_n = J_n v^p + φ⁺/Δt − K e (a gap may close
    /// within the step but not be acted across; touching: J_n v⁺ ≥ K e), b_t = J_t v^p. Restitution is not here:
    /// it is the impact's (`impact_offsets`, `restitution_impulses`), applied before the smooth forces.
    fn step_offsets(&mut self, contacts: &[ContactGeom<T>], h: T, o: &PreludeOptions) {
        let (mut bn, mut bt) = (std::mem::take(&mut self.bn), std::mem::take(&mut self.bt));
        bn.clear();
        bn.extend((0..contacts.len()).map(|i| {
            let c = &contacts[i];
            let zero = T::zero();
            let e = if c.distance.re() < 0.0 { -c.distance } else { zero };
            let gap = if c.distance.re() > 0.0 && h.re() > 0.0 { c.distance / h } else { zero };
            self.row_dot(0, i, &self.vp) + gap - T::c(o.baumgarte) * e
        }));
        bt.clear();
        bt.extend((0..2 * contacts.len()).map(|r| self.row_dot(1 + r % 2, r / 2, &self.vp)));
        (self.bn, self.bt) = (bn, bt);
    }

    /// The impact's offsets from the pre-step velocity v (no smooth forces): b_n = J_n v + ρ, ρ = 0 for a contact
    /// touching (φ ≤ 0) or, with ε > 0, closing within the step (J_n v Δt + φ⁺ ≤ 0, a primal branch: it is struck
    /// from where it is), ρ = φ⁺/Δt otherwise; b_t = J_t v.
    fn impact_offsets(&mut self, contacts: &[ContactGeom<T>], v: &[T], h: T) {
        let dt = h.re();
        let (mut bn, mut bt) = (std::mem::take(&mut self.bn_impact), std::mem::take(&mut self.bt_impact));
        bn.clear();
        bn.extend((0..contacts.len()).map(|i| {
            let c = &contacts[i];
            let vn = self.row_dot(0, i, v);
            let gap = if c.distance.re() > 0.0 { c.distance } else { T::zero() };
            let struck = gap.re() <= 0.0 || (c.restitution.re() > 0.0 && vn.re() * dt + gap.re() <= 0.0);
            if struck || dt <= 0.0 {
                vn
            } else {
                vn + gap / h
            }
        }));
        bt.clear();
        bt.extend((0..2 * contacts.len()).map(|r| self.row_dot(1 + r % 2, r / 2, v)));
        (self.bn_impact, self.bt_impact) = (bn, bt);
    }

    /// After the impact: v^p = S(v + M⁻¹ Jᵀ P) for the impact's impulses P (`restitution_impulses`), and the
    /// step's offsets from it.
    pub fn after_impact(
        &mut self,
        x: &StepInputs<T>,
        d: &mut DynData<T>,
        pn: &[T],
        pt: &[T],
    ) -> Result<(), SolverError> {
        self.after_impact_dt(x, T::c(x.dt), d, pn, pt)
    }

    /// [`Prelude::after_impact`] over a time step `dt` on the scalar T (`x.dt` ignored, as [`prelude_dt`]).
    pub fn after_impact_dt(
        &mut self,
        x: &StepInputs<T>,
        dt: T,
        d: &mut DynData<T>,
        pn: &[T],
        pt: &[T],
    ) -> Result<(), SolverError> {
        let StepInputs { model, dm, q, v, u, contacts, o, .. } = *x;
        let mut struck = std::mem::take(&mut self.scratch.struck);
        impulse_velocity(self, v, pn, pt, &mut struck);
        let Prelude { aba, l, lambda, vp, scratch, .. } = self;
        // the articulated-body factorisation again (O(n)): the caller may have used `d` since the prelude
        let r = if *aba { aba_factor(dm, q, d, scratch, o) } else { Ok(()) };
        let r = r.and_then(|()| smooth_velocity(model, dm, d, *aba, l, lambda, q, &struck, u, dt, o, scratch, vp));
        self.scratch.struck = struck;
        r?;
        self.step_offsets(contacts, dt, o);
        Ok(())
    }
}

/// The impact's impulses from its compression impulses P_c (spec 001 eq. (3) as amended, docs/decisions.md row
/// 9a): P = (1 + ε) ⊙ P_c per contact, normal and friction alike (Poisson's hypothesis). With one ε per island it
/// never adds kinetic energy; with unequal ε (a bouncy ball on a box resting on the floor) the restitution may
/// push a body into a resting contact, and the step's solve takes that velocity out (tested, tests/ncp_energy.rs).
pub fn restitution_impulses<T: Scalar>(contacts: &[ContactGeom<T>], ln: &[T], lt: &[T]) -> (Vec<T>, Vec<T>) {
    let (mut pn, mut pt) = (vec![], vec![]);
    restitution_impulses_into(contacts, ln, lt, &mut pn, &mut pt);
    (pn, pt)
}

/// [`restitution_impulses`] into `pn`, `pt` (refilled in place).
pub fn restitution_impulses_into<T: Scalar>(
    contacts: &[ContactGeom<T>],
    ln: &[T],
    lt: &[T],
    pn: &mut Vec<T>,
    pt: &mut Vec<T>,
) {
    let one = T::one();
    pn.clear();
    pn.extend((0..ln.len()).map(|i| (one + contacts[i].restitution) * ln[i]));
    pt.clear();
    pt.extend((0..lt.len()).map(|k| (one + contacts[k / 2].restitution) * lt[k]));
}

/// base + M⁻¹ (J_nᵀ λ_n + J_tᵀ λ_t) on any scalar, into `out`.
fn impulse_velocity<T: Scalar>(pre: &Prelude<T>, base: &[T], ln: &[T], lt: &[T], out: &mut Vec<T>) {
    let nv = base.len();
    out.clear();
    out.resize(nv, T::zero());
    let f = out;
    if pre.aba {
        // Σ_r (M⁻¹ J_rᵀ) λ_r over the contact rows
        for i in 0..ln.len() {
            let w = [ln[i], lt[2 * i], lt[2 * i + 1]];
            for (m, wm) in w.iter().enumerate() {
                let col = &pre.minv_jt[(3 * i + m) * nv..(3 * i + m + 1) * nv];
                for k in 0..nv {
                    f[k] += col[k] * *wm;
                }
            }
        }
        for k in 0..nv {
            f[k] = base[k] + f[k];
        }
        return;
    }
    pre.add_jt(ln, lt, f);
    ltl_solve_in_place(&pre.l, &pre.lambda, f);
    for k in 0..nv {
        f[k] = base[k] + f[k];
    }
}

/// v⁺ = v^p + M⁻¹ (J_nᵀ λ_n + J_tᵀ λ_t) on any scalar.
pub fn apply_impulses<T: Scalar>(pre: &Prelude<T>, ln: &[T], lt: &[T]) -> Vec<T> {
    let mut out = vec![];
    apply_impulses_into(pre, ln, lt, &mut out);
    out
}

/// [`apply_impulses`] into `out` (refilled in place).
pub fn apply_impulses_into<T: Scalar>(pre: &Prelude<T>, ln: &[T], lt: &[T], out: &mut Vec<T>) {
    impulse_velocity(pre, &pre.vp, ln, lt, out)
}
