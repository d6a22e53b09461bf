//! The generalized-coordinate state space shared by the steppers that work in (q, v) (Featherstone, contact):
//! the state with its contact warm start, the manifold maps (retract, local difference, ambient ↔ tangent
//! gradients), the tangent of a dual-number configuration, and Jᵀḡ for a step's transition Jacobians — so no
//! stepper borrows them from a sibling (issue 13).
use crate::solver::StepJacobians;
use nalgebra::DVector;
use num_dual::Dual64;
use torsion_dynamics::joints::{difference, integrate};
use torsion_dynamics::DynModel;
use torsion_model::params::ParamKind;
use torsion_model::{JointType, Model, ParamSelection, ParamTable};

/// Generalized state: q (nq, layouts of `JointType::nq`) and v (nv), and the contact warm start.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GenState {
    pub q: Vec<f64>,
    pub v: Vec<f64>,
    /// the contact impulses of the step that produced this state, the next contact step's warm start (design.md
    /// §3: an explicit input and output of a step, never hidden solver state). Not differentiated (spec 001
    /// §3.10: stop-gradient) and not in the tangent or flat encodings; contact-free steppers leave it empty.
    pub warm: ContactWarmStart,
}

impl GenState {
    /// (q, v) with no warm start.
    pub fn new(q: Vec<f64>, v: Vec<f64>) -> Self {
        GenState { q, v, warm: ContactWarmStart::default() }
    }
    /// At rest at the model's reference configuration (`Model::neutral_q`).
    pub fn rest(model: &Model) -> Self {
        GenState::new(model.neutral_q(), vec![0.0; model.nv()])
    }
}

/// One contact's impulses (N·s) by persistent contact id: normal λ_n and the two tangential λ_t along the
/// tangents (t1, n × t1) of that step, with t1 (world) — the next step's frame continues from it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WarmImpulse {
    pub id: u64,
    pub normal: f64,
    pub tangent: [f64; 2],
    pub t1: [f64; 3],
}

/// Contact impulses sorted by id (looked up by binary search; refilled in place, so a step allocates nothing
/// once its capacity has grown).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ContactWarmStart {
    impulses: Vec<WarmImpulse>,
}

impl ContactWarmStart {
    /// The impulses of contact `id`, if it has any.
    pub fn get(&self, id: u64) -> Option<&WarmImpulse> {
        self.impulses.binary_search_by_key(&id, |w| w.id).ok().map(|k| &self.impulses[k])
    }
    /// All impulses, sorted by id.
    pub fn as_slice(&self) -> &[WarmImpulse] {
        &self.impulses
    }
    pub fn len(&self) -> usize {
        self.impulses.len()
    }
    pub fn is_empty(&self) -> bool {
        self.impulses.is_empty()
    }
    pub fn clear(&mut self) {
        self.impulses.clear();
    }
    /// Replace the contents by `it` (any order; of repeated ids the one sorting first is kept).
    pub fn fill(&mut self, it: impl IntoIterator<Item = WarmImpulse>) {
        self.impulses.clear();
        self.impulses.extend(it);
        // unstable sort: in place, no allocation
        self.impulses.sort_unstable_by(|a, b| a.id.cmp(&b.id));
        self.impulses.dedup_by_key(|w| w.id);
    }
}

impl FromIterator<WarmImpulse> for ContactWarmStart {
    fn from_iter<I: IntoIterator<Item = WarmImpulse>>(it: I) -> Self {
        let mut w = ContactWarmStart::default();
        w.fill(it);
        w
    }
}

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

/// The f64 dynamics model at the model's current values, without the name table.
pub(crate) fn dyn_model_f64(
    model: &Model,
) -> Result<(DynModel<f64>, ParamTable, Vec<f64>), torsion_dynamics::DynError> {
    let table = dyn_param_table(model);
    let theta: Vec<f64> = table.kinds.iter().map(|&k| model.param_get(k)).collect();
    let dm = DynModel::build(model, &table, &theta)?;
    Ok((dm, table, theta))
}

/// s ⊕ d on the generalized-coordinate manifold: q ⊕ d_q per joint (`joints::integrate`), v + d_v. The warm
/// start is not a coordinate: a perturbed state keeps it.
pub fn retract(model: &Model, s: &GenState, d: &[f64]) -> GenState {
    let nv = model.nv();
    let (dm, _, _) = dyn_model_f64(model).expect("model accepted by the solver");
    GenState {
        q: integrate(&dm, &s.q, &d[..nv]),
        v: s.v.iter().zip(&d[nv..]).map(|(a, b)| a + b).collect(),
        warm: s.warm.clone(),
    }
}

/// other ⊖ s in tangent coordinates (`joints::difference`, exact logs for ball and free joints).
pub fn local_diff(model: &Model, s: &GenState, other: &GenState) -> Vec<f64> {
    let (dm, _, _) = dyn_model_f64(model).expect("model accepted by the solver");
    let mut d = difference(&dm, &s.q, &other.q);
    d.extend(other.v.iter().zip(&s.v).map(|(a, b)| a - b));
    d
}

/// An ambient gradient (∂L/∂q, ∂L/∂v) at s in tangent coordinates.
pub fn grad_to_tangent(model: &Model, s: &GenState, g: &GenState) -> Vec<f64> {
    let mut t = ambient_to_tangent(model, &s.q, &g.q);
    t.extend_from_slice(&g.v);
    t
}

/// A zero gradient of a state (nq, nv).
pub fn zero_grad(model: &Model) -> GenState {
    GenState::new(vec![0.0; model.nq()], vec![0.0; model.nv()])
}

/// Zero a gradient in place.
pub fn clear_grad(g: &mut GenState) {
    g.q.iter_mut().chain(g.v.iter_mut()).for_each(|x| *x = 0.0);
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

/// ∂q/∂δ at δ = 0 for q ⊕ δ, per joint: 1 for 1-DoF joints; ½ q ⊗ [0, δ] for quaternions (right perturbation);
/// R for a free joint's position. Returns Gᵀ ḡ (ambient → tangent).
/// ḡ_in += Jᵀ ḡ_out for a generalized-coordinate step with transition Jacobians (A, B, C) in tangent
/// coordinates: the output cotangent's q part (ambient at q1) is taken to the tangent space, and the input's back
/// to ambient at q (consistent with `grad_to_tangent`). Shared by the Featherstone and the contact steppers.
#[allow(clippy::too_many_arguments)]
pub(crate) fn transposed_jacobian_product(
    model: &Model,
    q: &[f64],
    q1: &[f64],
    jac: &StepJacobians,
    sel: &ParamSelection,
    g_out: &GenState,
    g_s: &mut GenState,
    g_u: &mut [f64],
    g_theta: &mut [f64],
) {
    let nv = model.nv();
    let gq_t = ambient_to_tangent(model, q1, &g_out.q);
    let g = DVector::from_iterator(2 * nv, gq_t.iter().copied().chain(g_out.v.iter().copied()));
    let (ra, rb, rc) = (jac.a.transpose() * &g, jac.b.transpose() * &g, jac.c.transpose() * &g);
    let gq_in = tangent_to_ambient(model, q, &ra.as_slice()[..nv]);
    for (a, b) in g_s.q.iter_mut().zip(&gq_in) {
        *a += b;
    }
    for i in 0..nv {
        g_s.v[i] += ra[nv + i];
        g_u[i] += rb[i];
    }
    for (k, &i) in sel.indices.iter().enumerate() {
        g_theta[i] += rc[k];
    }
}

pub(crate) fn ambient_to_tangent(model: &Model, q: &[f64], g: &[f64]) -> Vec<f64> {
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
pub(crate) fn tangent_to_ambient(model: &Model, q: &[f64], gt: &[f64]) -> Vec<f64> {
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
