//! Derivatives of RNEA and ABA w.r.t. (q, v, a/τ) in tangent coordinates (q perturbed through
//! `joints::integrate`, Pinocchio's convention). The public entry points use the analytic algorithms
//! (`rnea_derivatives`, `aba_derivatives` modules: Carpentier & Mansard 2018, every joint type); the `*_dual`
//! functions keep the reference they are tested against: forward-mode duals of the *same* generic algorithms
//! (one Dual64 pass per input direction, exact but ≈ 20–30× slower).
use crate::aba_derivatives::{aba_derivatives_into, AbaDerivatives};
use crate::data::{DynData, DynError, DynModel};
use crate::joints::integrate;
use crate::passive::{passive_forces, passive_forces_in};
use crate::rnea_derivatives::{rnea_derivatives_into, RneaDerivatives};
use crate::{aba, rnea};
use nalgebra::DMatrix;
use num_dual::Dual64;
use torsion_model::Model;

/// (∂f/∂q, ∂f/∂v, ∂f/∂third) for f = RNEA(q, v, a) or ABA(q, v, τ).
pub struct Derivatives {
    pub d_dq: DMatrix<f64>,
    pub d_dv: DMatrix<f64>,
    pub d_dthird: DMatrix<f64>,
}

/// The signature of `rnea` and `aba` on duals.
pub type DualAlgorithm =
    fn(&DynModel<Dual64>, &[Dual64], &[Dual64], &[Dual64], &mut DynData<Dual64>) -> Result<Vec<Dual64>, DynError>;

/// Dual-number Jacobians of `f(q, v, w)` (RNEA or ABA) on a dual model: one pass per tangent direction.
pub fn dual_derivatives(
    dm: &DynModel<Dual64>,
    q: &[f64],
    v: &[f64],
    w: &[f64],
    f: DualAlgorithm,
) -> Result<Derivatives, DynError> {
    let lift = |x: &[f64]| x.iter().map(|&v| Dual64::from(v)).collect::<Vec<_>>();
    let (qd, vd, wd) = (lift(q), lift(v), lift(w));
    dm.check_q(&qd)?;
    dm.check_v("v", &vd)?;
    dm.check_v("third argument", &wd)?;
    let nv = dm.nv;
    let mut d = DynData::new(dm);
    let mut out = [DMatrix::zeros(nv, nv), DMatrix::zeros(nv, nv), DMatrix::zeros(nv, nv)];
    for which in 0..3 {
        for k in 0..nv {
            let (mut q2, mut v2, mut w2) = (qd.clone(), vd.clone(), wd.clone());
            match which {
                0 => {
                    let mut dv = vec![Dual64::from(0.0); nv];
                    dv[k].eps = 1.0;
                    q2 = integrate(dm, &qd, &dv);
                }
                1 => v2[k].eps = 1.0,
                _ => w2[k].eps = 1.0,
            }
            let r = f(dm, &q2, &v2, &w2, &mut d)?;
            for i in 0..nv {
                out[which][(i, k)] = r[i].eps;
            }
        }
    }
    let [d_dq, d_dv, d_dthird] = out;
    Ok(Derivatives { d_dq, d_dv, d_dthird })
}

/// ∂τ/∂q, ∂τ/∂v, ∂τ/∂a of inverse dynamics (analytic).
pub fn rnea_derivatives(model: &Model, q: &[f64], v: &[f64], a: &[f64]) -> Result<Derivatives, DynError> {
    let dm: DynModel<f64> = DynModel::from_model(model)?;
    let mut d = DynData::new(&dm);
    let mut out = RneaDerivatives::new(dm.nv);
    rnea_derivatives_into(&dm, q, v, a, &mut d, &mut out)?;
    Ok(Derivatives { d_dq: out.d_dq, d_dv: out.d_dv, d_dthird: out.d_da })
}

/// ∂q̈/∂q, ∂q̈/∂v, ∂q̈/∂τ of forward dynamics (analytic).
pub fn aba_derivatives(model: &Model, q: &[f64], v: &[f64], tau: &[f64]) -> Result<Derivatives, DynError> {
    let dm: DynModel<f64> = DynModel::from_model(model)?;
    let mut d = DynData::new(&dm);
    let mut out = AbaDerivatives::new(dm.nv);
    aba_derivatives_into(&dm, q, v, tau, &mut d, &mut out)?;
    Ok(Derivatives { d_dq: out.d_dq, d_dv: out.d_dv, d_dthird: out.d_dtau })
}

/// [`rnea_derivatives`] by dual numbers of the generic RNEA (the reference).
pub fn rnea_derivatives_dual(model: &Model, q: &[f64], v: &[f64], a: &[f64]) -> Result<Derivatives, DynError> {
    dual_derivatives(&DynModel::from_model(model)?, q, v, a, rnea)
}

/// [`aba_derivatives`] by dual numbers of the generic ABA (the reference).
pub fn aba_derivatives_dual(model: &Model, q: &[f64], v: &[f64], tau: &[f64]) -> Result<Derivatives, DynError> {
    dual_derivatives(&DynModel::from_model(model)?, q, v, tau, aba)
}
/// (∂p/∂q, ∂p/∂v) of the passive joint forces p(q, v) (`passive::passive_forces`), q in tangent coordinates:
/// dual numbers of the same generic function, one pass per direction.
pub fn passive_derivatives(model: &Model, q: &[f64], v: &[f64]) -> Result<(DMatrix<f64>, DMatrix<f64>), DynError> {
    let dm: DynModel<Dual64> = DynModel::from_model(model)?;
    let lift = |x: &[f64]| x.iter().map(|&v| Dual64::from(v)).collect::<Vec<_>>();
    let (qd, vd) = (lift(q), lift(v));
    dm.check_q(&qd)?;
    dm.check_v("v", &vd)?;
    let nv = dm.nv;
    let mut d = DynData::new(&dm);
    let mut out = [DMatrix::zeros(nv, nv), DMatrix::zeros(nv, nv)];
    for (which, o) in out.iter_mut().enumerate() {
        for k in 0..nv {
            let mut dv = vec![Dual64::from(0.0); nv];
            dv[k].eps = 1.0;
            // the same dual model and scratch for every pass (the fluid forces need one)
            let p = if which == 0 {
                passive_forces_in(model, &dm, &mut d, &integrate(&dm, &qd, &dv), &vd)?
            } else {
                let v2: Vec<Dual64> = vd.iter().zip(&dv).map(|(a, b)| *a + *b).collect();
                passive_forces_in(model, &dm, &mut d, &qd, &v2)?
            };
            for i in 0..nv {
                o[(i, k)] = p[i].eps;
            }
        }
    }
    let [dq, dv] = out;
    Ok((dq, dv))
}

/// Derivatives of q̈ = ABA(q, v, τ + p(q, v)), the passive forces included: (∂ABA/∂q + M⁻¹ ∂p/∂q,
/// ∂ABA/∂v + M⁻¹ ∂p/∂v, M⁻¹), with ∂ABA/∂τ = M⁻¹ from the analytic ABA derivatives.
pub fn aba_derivatives_passive(model: &Model, q: &[f64], v: &[f64], tau: &[f64]) -> Result<Derivatives, DynError> {
    let dm: DynModel<f64> = DynModel::from_model(model)?;
    dm.check_q(q)?;
    dm.check_v("v", v)?;
    dm.check_v("tau", tau)?;
    let p = passive_forces(model, q, v)?;
    let t: Vec<f64> = tau.iter().zip(&p).map(|(a, b)| a + b).collect();
    let mut d = aba_derivatives(model, q, v, &t)?;
    let (pq, pv) = passive_derivatives(model, q, v)?;
    d.d_dq += &d.d_dthird * pq;
    d.d_dv += &d.d_dthird * pv;
    Ok(d)
}

/// ∂f/∂θ_sel (nv × |sel|) of f = RNEA(q, v, a) (`which_aba = false`) or ABA(q, v, τ) (`true`) w.r.t. the
/// selected model parameters (masses, COM inertias, joint anchors; `Model::param_table`; contact material:
/// zero columns), by dual numbers of the same generic algorithms (one pass per parameter).
pub fn param_derivatives(
    model: &Model,
    q: &[f64],
    v: &[f64],
    w: &[f64],
    sel: &torsion_model::ParamSelection,
    which_aba: bool,
) -> Result<DMatrix<f64>, DynError> {
    let table = model.param_table();
    let theta = model.param_vector();
    let lift = |x: &[f64]| x.iter().map(|&v| Dual64::from(v)).collect::<Vec<_>>();
    let (qd, vd, wd) = (lift(q), lift(v), lift(w));
    let mut out = DMatrix::zeros(model.nv(), sel.len());
    for (c, &i) in sel.indices.iter().enumerate() {
        if table.kinds[i].is_contact_material() {
            continue; // not read by the dynamics: a zero column
        }
        let mut th = lift(&theta);
        th[i].eps = 1.0;
        let dm: DynModel<Dual64> = DynModel::build(model, &table, &th)?;
        let mut d = DynData::new(&dm);
        let r = if which_aba { aba(&dm, &qd, &vd, &wd, &mut d)? } else { rnea(&dm, &qd, &vd, &wd, &mut d)? };
        for k in 0..model.nv() {
            out[(k, c)] = r[k].eps;
        }
    }
    Ok(out)
}

/// ∂f/∂π (nv × 10·bodies) of f = RNEA(q, v, a) (`which_aba = false`: the joint-torque regressor Y) or
/// ABA(q, v, τ) (`true`: −M⁻¹ Y(q, v, q̈)) w.r.t. the 10 inertial parameters of every body (mass, first
/// moment, rotational inertia about the body frame origin; `regressor::INERTIAL_NAMES`, bodies in model order).
pub fn inertial_param_derivatives(
    model: &Model,
    q: &[f64],
    v: &[f64],
    w: &[f64],
    which_aba: bool,
) -> Result<DMatrix<f64>, DynError> {
    let dm: DynModel<f64> = DynModel::from_model(model)?;
    let mut d = DynData::new(&dm);
    if which_aba {
        crate::regressor::aba_inertial_derivatives(&dm, q, v, w, &mut d)
    } else {
        crate::regressor::joint_torque_regressor(&dm, q, v, w, &mut d)
    }
}

/// q ⊕ (+h e_k) and q ⊕ (−h e_k): the two points of a central difference along tangent direction k (tests).
#[cfg(test)]
pub(crate) fn tangent_step_pair(dm: &DynModel<f64>, q: &[f64], k: usize, h: f64) -> (Vec<f64>, Vec<f64>) {
    let mut e = vec![0.0; dm.nv];
    e[k] = h;
    let qp = integrate(dm, q, &e);
    e[k] = -h;
    (qp, integrate(dm, q, &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Central finite differences on the manifold (q ⊕ ±h e_k) against the dual-number derivatives.
    #[test]
    fn derivatives_match_finite_differences_on_the_manifold() {
        let m = torsion_model::builder::floating_tree();
        let q = torsion_model::builder::example_configuration(&m, 5);
        let v: Vec<f64> = (0..m.nv()).map(|i| ((i * 7 + 3) % 11) as f64 / 5.0 - 1.0).collect();
        let tau: Vec<f64> = (0..m.nv()).map(|i| ((i * 5 + 1) % 7) as f64 / 3.0 - 1.0).collect();
        let der = aba_derivatives(&m, &q, &v, &tau).unwrap();
        let dm: DynModel<f64> = DynModel::from_model(&m).unwrap();
        let mut d = DynData::new(&dm);
        let h = 1e-6;
        let mut worst: f64 = 0.0;
        for k in 0..dm.nv {
            let (qp, qm) = tangent_step_pair(&dm, &q, k, h);
            let ap = aba(&dm, &qp, &v, &tau, &mut d).unwrap();
            let am = aba(&dm, &qm, &v, &tau, &mut d).unwrap();
            for i in 0..dm.nv {
                let fd = (ap[i] - am[i]) / (2.0 * h);
                worst = worst.max((fd - der.d_dq[(i, k)]).abs() / (1.0 + fd.abs()));
            }
        }
        assert!(worst < 1e-6, "∂ABA/∂q on the manifold: {worst:e}");
    }

    /// q̈ = ABA(q, v, τ + p(q, v)) with damping on every joint and springs on the hinges and slides: the
    /// passive-inclusive derivatives (and ∂p/∂(q, v)) against central differences on the manifold.
    #[test]
    fn passive_inclusive_aba_derivatives_match_finite_differences() {
        let mut m = torsion_model::builder::floating_tree();
        for j in 0..m.joint_count() {
            m.joint_damping[j] = 0.3 + 0.1 * j as f64;
            if matches!(m.joint_type[j], torsion_model::JointType::Revolute | torsion_model::JointType::Prismatic) {
                m.joint_stiffness[j] = 2.0 + j as f64;
                m.joint_springref[j] = 0.1 * j as f64;
            }
        }
        let q = torsion_model::builder::example_configuration(&m, 9);
        let v: Vec<f64> = (0..m.nv()).map(|i| ((i * 7 + 3) % 11) as f64 / 5.0 - 1.0).collect();
        let tau: Vec<f64> = (0..m.nv()).map(|i| ((i * 5 + 1) % 7) as f64 / 3.0 - 1.0).collect();
        let an = aba_derivatives_passive(&m, &q, &v, &tau).unwrap();
        let (pq, pv) = passive_derivatives(&m, &q, &v).unwrap();
        assert!(pq.amax() > 1.0 && pv.amax() > 0.2, "springs and damping act");
        let dm: DynModel<f64> = DynModel::from_model(&m).unwrap();
        let mut d = DynData::new(&dm);
        let mut f = |q: &[f64], v: &[f64], t: &[f64]| {
            let p = passive_forces(&m, q, v).unwrap();
            let t: Vec<f64> = t.iter().zip(&p).map(|(a, b)| a + b).collect();
            (aba(&dm, q, v, &t, &mut d).unwrap(), p)
        };
        let h = 1e-6;
        let nv = dm.nv;
        let (mut fd, mut fdp) = (
            [DMatrix::zeros(nv, nv), DMatrix::zeros(nv, nv), DMatrix::zeros(nv, nv)],
            [DMatrix::zeros(nv, nv), DMatrix::zeros(nv, nv)],
        );
        for k in 0..nv {
            let mut e = vec![0.0; nv];
            for s in [1.0, -1.0] {
                e[k] = s * h;
                let qs = integrate(&dm, &q, &e);
                let vs: Vec<f64> = v.iter().zip(&e).map(|(a, b)| a + b).collect();
                let ts: Vec<f64> = tau.iter().zip(&e).map(|(a, b)| a + b).collect();
                for (which, (a, p)) in [f(&qs, &v, &tau), f(&q, &vs, &tau), f(&q, &v, &ts)].into_iter().enumerate() {
                    for i in 0..nv {
                        fd[which][(i, k)] += s * a[i] / (2.0 * h);
                        if which < 2 {
                            fdp[which][(i, k)] += s * p[i] / (2.0 * h);
                        }
                    }
                }
            }
        }
        let rel = |a: &DMatrix<f64>, b: &DMatrix<f64>| (a - b).amax() / b.amax().max(1e-12);
        let errs = [
            rel(&an.d_dq, &fd[0]),
            rel(&an.d_dv, &fd[1]),
            rel(&an.d_dthird, &fd[2]),
            rel(&pq, &fdp[0]),
            rel(&pv, &fdp[1]),
        ];
        eprintln!("passive-inclusive ∂ABA/∂(q, v, τ), ∂p/∂(q, v) vs FD: {:?}", errs.map(|e| format!("{e:.1e}")));
        assert!(errs.iter().all(|&e| e < 1e-6), "{errs:?}");
        // without passive forces the plain derivatives differ (the test can fail)
        let plain = aba_derivatives(&m, &q, &v, &tau).unwrap();
        assert!(rel(&plain.d_dv, &fd[1]) > 1e-3);
    }

    /// ∂RNEA/∂θ and ∂ABA/∂θ (all parameters of the Baxter arm: masses, inertias, anchors) against central
    /// differences of the model parameters.
    #[test]
    fn param_derivatives_match_central_differences() {
        let m = torsion_model::io::robots::baxter_left_arm().expect("example-robot-data");
        let q = [0.3, -0.5, 0.2, 1.1, -0.4, 0.6, 0.1];
        let v = [0.2, -0.1, 0.3, 0.5, -0.2, 0.1, 0.4];
        let w = [1.0, -2.0, 0.5, 0.3, 0.2, -0.1, 0.05];
        let sel = torsion_model::ParamSelection::dynamics(&m);
        let theta = m.param_vector();
        for which_aba in [false, true] {
            let an = param_derivatives(&m, &q, &v, &w, &sel, which_aba).unwrap();
            let (mut worst, scale): (f64, f64) = (0.0, an.amax());
            for (c, &i) in sel.indices.iter().enumerate() {
                // relative step: the wrist's inertia entries are ~1e-6..1e-4
                let h = 1e-6 * theta[i].abs().max(1e-3);
                let eval = |s: f64| {
                    let mut mm = m.clone();
                    let mut th = theta.clone();
                    th[i] += s;
                    mm.params_set(&torsion_model::ParamSelection::all(&m), &th).unwrap();
                    let dm: DynModel<f64> = DynModel::from_model(&mm).unwrap();
                    let mut d = DynData::new(&dm);
                    if which_aba {
                        aba(&dm, &q, &v, &w, &mut d).unwrap()
                    } else {
                        rnea(&dm, &q, &v, &w, &mut d).unwrap()
                    }
                };
                let (p, n) = (eval(h), eval(-h));
                for k in 0..7 {
                    worst = worst.max(((p[k] - n[k]) / (2.0 * h) - an[(k, c)]).abs() / scale);
                }
            }
            eprintln!("∂{}/∂θ ({} parameters) vs FD: {worst:.1e}", if which_aba { "ABA" } else { "RNEA" }, sel.len());
            // normwise relative error (docs/gradients.md convention)
            assert!(worst < 1e-6, "∂{}/∂θ vs FD: {worst:e}", if which_aba { "ABA" } else { "RNEA" });
        }
    }
}
