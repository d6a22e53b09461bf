//! Transition Jacobians of the contact step by forward mode (spec 001 §3.10 proposal: "forward mode,
//! propagating tangents through the same reduced KKT systems"): one Dual64 pass of the *same* generic smooth code
//! (`staggered::prelude`: M, v^p, contact Jacobians, Delassus blocks, offsets; the impulse application; the
//! manifold integration) per input direction, and through each staggered pass the implicit JVP of the QP and
//! the QCQP at their recorded solutions (`backward::ReducedKkt`, factorised once per pass and shared by all
//! directions) — the cascade — or, when the passes converged or the contacts are redundant, the implicit JVP of
//! the fixed point (`fixed_point.rs`, `NcpOptions::gradient`). The warm start's tangent is stopped (spec 001
//! §3.10 default). Contact points move with body A
//! (material points) and normals / tangents with body B; the contact set itself is held fixed (a new or lost
//! contact is a non-smooth point, docs/gradients.md). A selected contact-material parameter
//! (`shape_friction[·]` / `shape_restitution[·]`) seeds the μ / ε tangent of exactly the contacts whose pair
//! value it supplies (`contact::frames::pair_source`); the dynamics model is then not rebuilt.
use super::backward::ReducedKkt;
use super::fixed_point::FixedPointKkt;
use super::sets::{friction_gauge, ConstraintSet};
use super::staggered::{dyn_err, NcpGradient, NcpOptions, NcpReport, NcpSolver, NcpWorkspace, PhaseTape, Tape};
use crate::contact::anchor::Anchor;
use crate::contact::frames::{pair_source, ContactFrame, ContactGeom};
use crate::contact::prelude::{apply_impulses, prelude, restitution_impulses, StepInputs};
use crate::generalized::{dual_tangent, GenState};
use crate::solver::SolverError;
use nalgebra::DMatrix;
use num_dual::Dual64;
use torsion_dynamics::joints::{advance_into, integrate};
use torsion_dynamics::{forward_kinematics, DynData, DynModel};
use torsion_model::params::ParamKind;
use torsion_model::{Model, ParamSelection, Shape};

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
fn eps_mat(m: &DMatrix<Dual64>) -> DMatrix<f64> {
    m.map(|x| x.eps)
}

impl NcpSolver {
    /// One step (as `step_with_contacts`, whose result it also returns) and its tangent Jacobians.
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
        self.jacobians(model, ws, s, u, dt, contacts, sel, true)
    }

    /// As `step_jacobians_with_contacts`; `per_contact` = false skips the `d_mu` / `d_restitution` directions
    /// (left zero: the `DiffSolver` path reads only A, B, C).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn jacobians(
        &self,
        model: &Model,
        ws: &mut NcpWorkspace,
        s: &GenState,
        u: &[f64],
        dt: f64,
        contacts: &[ContactFrame],
        sel: &ParamSelection,
        per_contact: bool,
    ) -> Result<(NcpJacobians, GenState, NcpReport), SolverError> {
        let mut next = s.clone();
        let report = self.step_with_contacts(model, ws, s, u, dt, contacts, &mut next)?;
        let o = &self.options;
        let po = o.prelude();
        let (nv, nc) = (ws.dm.nv, contacts.len());
        // contact anchors at the base state, in body frames (see `Anchor`)
        let mut d0 = DynData::new(&ws.dm);
        forward_kinematics(&ws.dm, &s.q, &mut d0);
        let anchors: Vec<Anchor> =
            contacts.iter().map(|c| Anchor::new(c, &d0.o_m[c.body_a], &d0.o_m[c.body_b])).collect();
        // the derivative of each solve (the impact's, the step's): of the converged fixed point (one coupled
        // system) or of the executed cascade (one reduced KKT system per recorded QP / QCQP); either is
        // factorised once and shared by every direction
        let tape = &ws.tape;
        let mu: Vec<f64> = contacts.iter().map(|c| c.mu).collect();
        let impact = if tape.has_impact { Some(PhaseJvp::new(tape, &tape.impact, &mu, o)?) } else { None };
        let step = PhaseJvp::new(tape, &tape.step, &mu, o)?;
        let table = model.param_table();
        let theta = model.param_vector();
        // the shape whose parameter supplies each contact's μ / ε (collision contacts whose value is still the
        // model's: a value overwritten by the caller is not a function of the shape parameters)
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
        let with_gravity = |mut dm: DynModel<Dual64>| {
            dm.gravity = torsion_math::scalar::cv(&model.gravity);
            dm
        };
        let base_dm = with_gravity(DynModel::build(model, &table, &lift(&theta)).map_err(dyn_err)?);
        let ndir = 3 * nv + sel.len() + nc + 1;
        let mut cols = DMatrix::zeros(2 * nv, ndir);
        let mut d = DynData::new(&base_dm);
        for dir in 0..ndir {
            if !per_contact && dir >= 3 * nv + sel.len() {
                break;
            }
            let param = (3 * nv..3 * nv + sel.len()).contains(&dir).then(|| sel.indices[dir - 3 * nv]);
            // a contact-material parameter: seeds μ / ε below, the dynamics model is the base one
            let mat = param.map(|i| table.kinds[i]).filter(|k| k.is_contact_material());
            let owned;
            let dm = match param {
                Some(i) if mat.is_none() => {
                    let mut th = lift(&theta);
                    th[i].eps = 1.0;
                    owned = with_gravity(DynModel::build(model, &table, &th).map_err(dyn_err)?);
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
            let mu_dir = (3 * nv + sel.len()..3 * nv + sel.len() + nc).contains(&dir).then(|| dir - 3 * nv - sel.len());
            forward_kinematics(dm, &q, &mut d);
            let geoms: Vec<ContactGeom<Dual64>> = contacts
                .iter()
                .zip(&anchors)
                .enumerate()
                .map(|(i, (c, an))| {
                    let mut g = an.geom(c, &d.o_m[c.body_a], &d.o_m[c.body_b]);
                    if mu_dir == Some(i) || (mat.is_some() && mat == mu_src[i]) {
                        g.mu.eps = 1.0;
                    }
                    if dir == ndir - 1 || (mat.is_some() && mat == eps_src[i]) {
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
            let (dgn, dgt, dgnt) = (eps_mat(&pre.gn), eps_mat(&pre.gt), eps_mat(&pre.gnt));
            let dmu: Vec<f64> = geoms.iter().map(|g| g.mu.eps).collect();
            let g = PhaseGrads { contacts, gnt: &tape.gnt, dgn: &dgn, dgt: &dgt, dgnt: &dgnt, dmu: &dmu };
            if let Some(imp) = &impact {
                // the impact's impulses and restitution, then the step from S(v + M⁻¹ Jᵀ P)
                let (ln, lt) = imp.jvp(&tape.impact, &g, &pre.bn_impact, &pre.bt_impact);
                let (pn, pt) = restitution_impulses(&geoms, &ln, &lt);
                pre.after_impact(&x, &mut d, &pn, &pt)?;
            }
            let (lnd, ltd) = step.jvp(&tape.step, &g, &pre.bn, &pre.bt);
            let vplus = if nc > 0 { apply_impulses(&pre, &lnd, &ltd) } else { pre.vp.clone() };
            let (mut q1, mut v1) = (q.clone(), vplus.clone());
            advance_into(dm, &q, &vplus, Dual64::from(dt), &mut q1, &mut v1);
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
        let ns = sel.len();
        let jac = NcpJacobians {
            a: cols.columns(0, 2 * nv).into_owned(),
            b: cols.columns(2 * nv, nv).into_owned(),
            c: cols.columns(3 * nv, ns).into_owned(),
            d_mu: cols.columns(3 * nv + ns, nc).into_owned(),
            d_restitution: cols.column(ndir - 1).iter().copied().collect(),
        };
        Ok((jac, next, report))
    }
}

/// What a solve's tangents need beside its tape: the contacts, G_nt and the direction's block and μ tangents.
struct PhaseGrads<'a> {
    contacts: &'a [ContactFrame],
    gnt: &'a DMatrix<f64>,
    dgn: &'a DMatrix<f64>,
    dgt: &'a DMatrix<f64>,
    dgnt: &'a DMatrix<f64>,
    dmu: &'a [f64],
}

/// The derivative of one solve of the staggered passes: the fixed point's, or the executed cascade's.
struct PhaseJvp {
    fp: Option<FixedPointKkt>,
    kkts: Vec<(ReducedKkt, ReducedKkt)>,
}

impl PhaseJvp {
    fn new(tape: &Tape, ph: &PhaseTape, mu: &[f64], o: &NcpOptions) -> Result<Self, SolverError> {
        let nc = mu.len();
        let lmax = ph.ln.iter().chain(&ph.lt).fold(0.0f64, |m, v| m.max(v.abs()));
        let converged = ph.last_change <= 1e-9 * (1.0 + lmax);
        // a contact strictly inside its friction set with a normal impulse: the only case where Auto may need the
        // fixed point of an unconverged step (its SVD is skipped otherwise)
        let (ln, lt) = (&ph.ln, &ph.lt);
        let may_stick = (0..nc).any(|i| {
            let r = mu[i] * ln[i];
            r > 0.0 && friction_gauge(o.friction_set, lt[2 * i], lt[2 * i + 1]) < r * (1.0 - 1e-6)
        });
        let fp = match o.gradient {
            NcpGradient::Cascade => None,
            _ if nc == 0 => None,
            NcpGradient::Auto if !converged && !may_stick => None,
            g => {
                let k = FixedPointKkt::new(&tape.gn, &tape.gt, &tape.gnt, &ph.bn, &ph.bt, ln, lt, mu, o.friction_set)?;
                // Auto: the fixed point where it is the step's derivative and the cascade may not be — redundant
                // impulses with a sticking contact (the passes' polished sub-problems move along their solution
                // sets, and their chained derivatives follow: 2.1e-4 off under a tilt, docs/gradients.md) — or
                // where both agree and it is cheaper (converged passes, unique impulses); the cascade otherwise
                // (redundant sliding impulses: the executed passes choose among equivalent λ_n, and so must
                // their derivative)
                let use_fp = if k.rank_deficient { k.sticking } else { converged };
                (g == NcpGradient::FixedPoint || use_fp).then_some(k)
            }
        };
        let mut kkts = Vec::with_capacity(ph.passes.len());
        for p in ph.passes.iter().filter(|_| fp.is_none()) {
            let r: Vec<f64> = (0..nc).map(|i| mu[i] * p.lambda_n[i]).collect();
            let kn = ReducedKkt::new(&tape.gn, &p.g_n, &p.lambda_n, ConstraintSet::Nonneg)?;
            let set = ConstraintSet::Friction { kind: o.friction_set, r: &r };
            let kt = ReducedKkt::new(&tape.gt, &p.g_t, &p.lambda_t, set)?;
            kkts.push((kn, kt));
        }
        Ok(PhaseJvp { fp, kkts })
    }

    /// The impulses with their tangents for the offsets' tangents (dual `bn`, `bt`): at the fixed point, or
    /// through the staggered passes (the warm start's tangent stopped).
    fn jvp(&self, ph: &PhaseTape, g: &PhaseGrads, bn: &[Dual64], bt: &[Dual64]) -> (Vec<Dual64>, Vec<Dual64>) {
        let nc = g.contacts.len();
        let (mut dln, mut dlt) = (vec![0.0; nc], vec![0.0; 2 * nc]);
        let (mut ln, mut lt) = (vec![0.0; nc], ph.lt_warm.clone());
        let dbn: Vec<f64> = bn.iter().map(|v| v.eps).collect();
        let dbt: Vec<f64> = bt.iter().map(|v| v.eps).collect();
        if let Some(fp) = &self.fp {
            (dln, dlt) = fp.jvp(g.dgn, g.dgt, g.dgnt, &dbn, &dbt, g.dmu);
            ln.copy_from_slice(&ph.ln);
            lt.copy_from_slice(&ph.lt);
        }
        let (gnt, dgnt) = (g.gnt, g.dgnt);
        for (p, (kn, kt)) in ph.passes.iter().zip(&self.kkts) {
            let dg_n: Vec<f64> = (0..nc)
                .map(|i| dbn[i] + (0..2 * nc).map(|k| dgnt[(i, k)] * lt[k] + gnt[(i, k)] * dlt[k]).sum::<f64>())
                .collect();
            dln = kn.jvp(Some(g.dgn), &dg_n, &[]);
            ln.copy_from_slice(&p.lambda_n);
            let dg_t: Vec<f64> = (0..2 * nc)
                .map(|k| dbt[k] + (0..nc).map(|i| dgnt[(i, k)] * ln[i] + gnt[(i, k)] * dln[i]).sum::<f64>())
                .collect();
            let dr: Vec<f64> = (0..nc).map(|i| g.dmu[i] * ln[i] + g.contacts[i].mu * dln[i]).collect();
            dlt = kt.jvp(Some(g.dgt), &dg_t, &dr);
            lt.copy_from_slice(&p.lambda_t);
        }
        (
            (0..nc).map(|i| Dual64::new(ln[i], dln[i])).collect(),
            (0..2 * nc).map(|k| Dual64::new(lt[k], dlt[k])).collect(),
        )
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
