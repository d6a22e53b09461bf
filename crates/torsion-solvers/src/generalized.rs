//! Machinery shared by the steppers that work in (q, v) (Featherstone, contact), so that no stepper borrows it
//! from a sibling (issue 13): the dynamics parameters they read, the tangent of a dual-number configuration, and
//! Jᵀḡ for a step's transition Jacobians. Their state space, [`GenState`] with its contact warm start and its
//! manifold maps (`StateSpace`), lives in `torsion-model` beside `MaximalState` and is re-exported here.
use crate::solver::{SolverError, StepJacobians};
use nalgebra::DMatrix;
use num_dual::Dual64;
use torsion_dynamics::DynModel;
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

/// ḡ_in += Jᵀ ḡ_out for a generalized-coordinate step with transition Jacobians (A, B, C) in tangent
/// coordinates: the output cotangent's q part (ambient at q1) is taken to the tangent space, and the input's back
/// to ambient at q (consistent with `grad_to_tangent`). Shared by the Featherstone and the contact steppers.
#[allow(clippy::too_many_arguments)]
pub(crate) fn transposed_jacobian_product(
    model: &Model,
    q: &[f64],
    q1: &[f64],
    jac: &StepJacobians,
    g_out: &GenState,
    g_s: &mut GenState,
    g_u: &mut [f64],
    g_theta: &mut [f64],
) {
    let mut sc = ProductScratch::default();
    transposed_jacobian_product_with(model, q, q1, jac, g_out, g_s, g_u, g_theta, &mut sc)
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

/// [`transposed_jacobian_product`] with reused buffers: no allocation once they have grown.
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
    let (ra, rb, rc) = (&sc.ra, &sc.rb, &sc.rc);
    sc.gq_in.resize(q.len(), 0.0);
    tangent_to_ambient_into(model, q, &ra[..nv], &mut sc.gq_in);
    for (a, b) in g_s.q.iter_mut().zip(&sc.gq_in) {
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

/// The input state that `step` recorded for `step_vjp`.
pub(crate) fn recorded<'a>(s: &'a Option<GenState>, solver: &'static str) -> Result<&'a GenState, SolverError> {
    s.as_ref().ok_or_else(|| SolverError::BadInput { solver, problem: "step_vjp needs a record filled by step".into() })
}
