//! The contact problem of one step in generalized coordinates, shared by the contact solvers (spec 001 §3.1–3.3,
//! docs/decisions.md rows 9a, 17), on any scalar (f64 for the step, duals for its tangents): the factor M = Lᵀ L,
//! the smooth update S(v), the contact Jacobians, the Delassus blocks G = J M⁻¹ Jᵀ and the offsets of the impact
//! and of the step, the impact's restitution and the impulse application. Free of any one solver's options
//! (`PreludeOptions`); the solver of the impulses (ncp's staggered ADMM passes, an LCP) is the caller's.
use super::delassus::{assemble, ContactPattern};
use super::frames::{contact_jacobians, ContactGeom};
use crate::solver::SolverError;
use nalgebra::DMatrix;
use torsion_dynamics::gyroscopic::implicit_gyroscopic;
use torsion_dynamics::joints::add_free_frame_term;
use torsion_dynamics::ltl::{dof_parents, ltl_in_place, ltl_solve_in_place};
use torsion_dynamics::passive::passive_forces_in;
use torsion_dynamics::{crba_into, forward_kinematics, nonlinear_effects, DynData, DynModel};
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

/// A dynamics error as the named solver's.
pub fn dyn_err(solver: &'static str) -> impl Fn(torsion_dynamics::DynError) -> SolverError {
    move |e| SolverError::Unsupported { solver, problem: e.to_string() }
}

/// The smooth part of a step on any scalar T (f64 for the step, duals for its tangents): the sparse factor
/// M = Lᵀ L (Featherstone's LTL over the DoF tree λ), v^p, the contact Jacobians, the Delassus blocks (dense
/// matrices, assembled from their non-zero blocks only) and the QP / QCQP offsets.
pub struct Prelude<T: Scalar> {
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
    /// the step's offsets (from v^p)
    pub bn: Vec<T>,
    pub bt: Vec<T>,
    /// the impact's offsets (from v; empty when no contact has ε > 0)
    pub bn_impact: Vec<T>,
    pub bt_impact: Vec<T>,
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
    let StepInputs { model, dm, body_joint, q, v, u, dt, contacts, o } = *x;
    let nv = dm.nv;
    let mut l = DMatrix::zeros(nv, nv);
    crba_into(dm, q, d, &mut l).map_err(dyn_err(o.solver))?;
    let mut lambda = vec![];
    dof_parents(dm, &mut lambda);
    if !ltl_in_place(&mut l, &lambda) {
        return Err(SolverError::BadInput {
            solver: o.solver,
            problem: "the joint-space inertia matrix is not positive definite".into(),
        });
    }
    let vp = smooth_velocity(model, dm, d, &l, &lambda, q, v, u, dt, o)?;
    let nc = contacts.len();
    let (mut jn, mut jt) = (DMatrix::zeros(nc, nv), DMatrix::zeros(2 * nc, nv));
    forward_kinematics(dm, q, d);
    contact_jacobians(dm, d, body_joint, contacts, &mut jn, &mut jt);
    // Y = L⁻ᵀ Jᵀ on each contact's DoFs, G = YᵀY on the pairs sharing a tree: M⁻¹ is never formed (spec 001 §3.1)
    let pattern = ContactPattern::new(dm, &lambda, body_joint, contacts);
    let (mut gn, mut gt, mut gnt) =
        (DMatrix::zeros(nc, nc), DMatrix::zeros(2 * nc, 2 * nc), DMatrix::zeros(nc, 2 * nc));
    assemble(&l, &lambda, &jn, &jt, &pattern, &mut gn, &mut gt, &mut gnt);
    let mut pre = Prelude {
        l,
        lambda,
        pattern,
        vp,
        jn,
        jt,
        gn,
        gt,
        gnt,
        bn: vec![],
        bt: vec![],
        bn_impact: vec![],
        bt_impact: vec![],
    };
    pre.step_offsets(contacts, dt, o);
    if contacts.iter().any(|c| c.restitution.re() > 0.0) {
        pre.impact_offsets(contacts, v, dt);
    }
    Ok(pre)
}

/// The smooth velocity update S (spec 001 §3.2): v^p = v + Δt M⁻¹ τ(q, v, u) with M = Lᵀ L factorised, the
/// implicit gyroscopic torque of loose free bodies and the free joints' frame term.
#[allow(clippy::too_many_arguments)]
fn smooth_velocity<T: Scalar>(
    model: &Model,
    dm: &DynModel<T>,
    d: &mut DynData<T>,
    l: &DMatrix<T>,
    lambda: &[usize],
    q: &[T],
    v: &[T],
    u: &[T],
    dt: f64,
    o: &PreludeOptions,
) -> Result<Vec<T>, SolverError> {
    let nv = dm.nv;
    let bias = nonlinear_effects(dm, q, v, d).map_err(dyn_err(o.solver))?;
    let passive =
        if o.passive { passive_forces_in(model, dm, d, q, v).map_err(dyn_err(o.solver))? } else { vec![T::zero(); nv] };
    let mut vp: Vec<T> = (0..nv).map(|k| u[k] - bias[k] + passive[k]).collect();
    ltl_solve_in_place(l, lambda, &mut vp);
    let h = T::c(dt);
    for k in 0..nv {
        vp[k] = v[k] + h * vp[k];
    }
    implicit_gyroscopic(dm, v, h, &mut vp);
    add_free_frame_term(dm, v, h, &mut vp);
    Ok(vp)
}

impl<T: Scalar> Prelude<T> {
    fn row_dot(&self, j: &DMatrix<T>, r: usize, c: usize, x: &[T]) -> T {
        self.pattern.support(c).iter().fold(T::zero(), |acc, &k| acc + j[(r, k)] * x[k])
    }

    /// The step's offsets from v^p (docs/decisions.md row 9a): b_n = J_n v^p + φ⁺/Δt − K e (a gap may close
    /// within the step but not be acted across; touching: J_n v⁺ ≥ K e), b_t = J_t v^p. Restitution is not here:
    /// it is the impact's (`impact_offsets`, `restitution_impulses`), applied before the smooth forces.
    fn step_offsets(&mut self, contacts: &[ContactGeom<T>], dt: f64, o: &PreludeOptions) {
        let h = T::c(dt);
        let bn = (0..contacts.len())
            .map(|i| {
                let c = &contacts[i];
                let zero = T::zero();
                let e = if c.distance.re() < 0.0 { -c.distance } else { zero };
                let gap = if c.distance.re() > 0.0 { c.distance } else { zero };
                self.row_dot(&self.jn, i, i, &self.vp) + gap / h - T::c(o.baumgarte) * e
            })
            .collect();
        let bt = (0..2 * contacts.len()).map(|r| self.row_dot(&self.jt, r, r / 2, &self.vp)).collect();
        (self.bn, self.bt) = (bn, bt);
    }

    /// The impact's offsets from the pre-step velocity v (no smooth forces): b_n = J_n v + ρ, ρ = 0 for a contact
    /// touching (φ ≤ 0) or, with ε > 0, closing within the step (J_n v Δt + φ⁺ ≤ 0, a primal branch: it is struck
    /// from where it is), ρ = φ⁺/Δt otherwise; b_t = J_t v.
    fn impact_offsets(&mut self, contacts: &[ContactGeom<T>], v: &[T], dt: f64) {
        let h = T::c(dt);
        let bn = (0..contacts.len())
            .map(|i| {
                let c = &contacts[i];
                let vn = self.row_dot(&self.jn, i, i, v);
                let gap = if c.distance.re() > 0.0 { c.distance } else { T::zero() };
                let struck = gap.re() <= 0.0 || (c.restitution.re() > 0.0 && vn.re() * dt + gap.re() <= 0.0);
                if struck {
                    vn
                } else {
                    vn + gap / h
                }
            })
            .collect();
        let bt = (0..2 * contacts.len()).map(|r| self.row_dot(&self.jt, r, r / 2, v)).collect();
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
        let StepInputs { model, dm, q, v, u, dt, contacts, o, .. } = *x;
        let struck = impulse_velocity(self, v, pn, pt);
        self.vp = smooth_velocity(model, dm, d, &self.l, &self.lambda, q, &struck, u, dt, o)?;
        self.step_offsets(contacts, dt, o);
        Ok(())
    }
}

/// The impact's impulses from its compression impulses P_c (spec 001 eq. (3) as amended, docs/decisions.md row
/// 9a): P = (1 + ε) ⊙ P_c per contact, normal and friction alike (Poisson's hypothesis). With one ε per island it
/// never adds kinetic energy; with unequal ε (a bouncy ball on a box resting on the floor) the restitution may
/// push a body into a resting contact, and the step's solve takes that velocity out (tested, tests/ncp_energy.rs).
pub fn restitution_impulses<T: Scalar>(contacts: &[ContactGeom<T>], ln: &[T], lt: &[T]) -> (Vec<T>, Vec<T>) {
    let one = T::one();
    (
        (0..ln.len()).map(|i| (one + contacts[i].restitution) * ln[i]).collect(),
        (0..lt.len()).map(|k| (one + contacts[k / 2].restitution) * lt[k]).collect(),
    )
}

/// base + M⁻¹ (J_nᵀ λ_n + J_tᵀ λ_t) on any scalar.
fn impulse_velocity<T: Scalar>(pre: &Prelude<T>, base: &[T], ln: &[T], lt: &[T]) -> Vec<T> {
    let nv = base.len();
    let mut f = vec![T::zero(); nv];
    for i in 0..ln.len() {
        for &k in pre.pattern.support(i) {
            f[k] += pre.jn[(i, k)] * ln[i] + pre.jt[(2 * i, k)] * lt[2 * i] + pre.jt[(2 * i + 1, k)] * lt[2 * i + 1];
        }
    }
    ltl_solve_in_place(&pre.l, &pre.lambda, &mut f);
    (0..nv).map(|k| base[k] + f[k]).collect()
}

/// v⁺ = v^p + M⁻¹ (J_nᵀ λ_n + J_tᵀ λ_t) on any scalar.
pub fn apply_impulses<T: Scalar>(pre: &Prelude<T>, ln: &[T], lt: &[T]) -> Vec<T> {
    impulse_velocity(pre, &pre.vp, ln, lt)
}
