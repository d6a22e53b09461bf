//! Internal consistency of the generalized-coordinate algorithms on the Baxter arm, Panda and a tree with
//! ball and free joints: CRBA = RNEA columns, ABA = M⁻¹(τ − c − g), and every derivative (dual numbers of
//! the same code) against central finite differences.
use nalgebra::{DMatrix, DVector};
use num_dual::Dual64;
use torsion_dynamics::{aba, crba, gravity, nonlinear_effects, rnea, DynData, DynModel};
use torsion_model::Model;

fn rng(seed: u64) -> impl FnMut() -> f64 {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15).wrapping_add(7);
    move || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }
}

use torsion_model::builder::{example_configuration, floating_tree};

fn random_config(m: &Model, r: &mut impl FnMut() -> f64) -> Vec<f64> {
    example_configuration(m, (r().abs() * 1e9) as u64)
}

fn models() -> Vec<Model> {
    let mut v = vec![floating_tree()];
    v.push(torsion_model::io::robots::baxter_left_arm().expect("example-robot-data"));
    v
}

#[test]
fn crba_rnea_aba_agree() {
    for m in models() {
        let dm: DynModel<f64> = DynModel::from_model(&m).unwrap();
        let mut d = DynData::new(&dm);
        let mut r = rng(1);
        for _ in 0..5 {
            let q = random_config(&m, &mut r);
            let v: Vec<f64> = (0..dm.nv).map(|_| r()).collect();
            let a: Vec<f64> = (0..dm.nv).map(|_| r()).collect();
            let mm = crba(&dm, &q, &mut d).unwrap();
            let nle = nonlinear_effects(&dm, &q, &v, &mut d).unwrap();
            let tau = rnea(&dm, &q, &v, &a, &mut d).unwrap();
            let pred = &mm * DVector::from_vec(a.clone()) + DVector::from_vec(nle.clone());
            let e1 = (pred - DVector::from_vec(tau.clone())).norm() / DVector::from_vec(tau.clone()).norm();
            let qdd = aba(&dm, &q, &v, &tau, &mut d).unwrap();
            let e2 = (DVector::from_vec(qdd) - DVector::from_vec(a.clone())).norm();
            assert!((mm.clone() - mm.transpose()).norm() < 1e-12);
            assert!(mm.clone().cholesky().is_some(), "M is positive definite");
            eprintln!("{}: |Ma + nle − rnea|/|τ| = {e1:.1e}, |aba(rnea(a)) − a| = {e2:.1e}", m.name);
            assert!(e1 < 1e-12 && e2 < 1e-10);
            let g = gravity(&dm, &q, &mut d).unwrap();
            assert!(g.iter().any(|x| x.abs() > 1e-3));
        }
    }
}

#[test]
fn dual_derivatives_match_finite_differences() {
    // ∂RNEA/∂(q, v, a) and ∂ABA/∂(q, v, τ) by duals of the same code vs central differences (q perturbed in
    // the parametrisation, then re-normalised inside the joint transforms)
    for m in models() {
        let dm: DynModel<f64> = DynModel::from_model(&m).unwrap();
        let dd: DynModel<Dual64> = DynModel::from_model(&m).unwrap();
        let d = DynData::new(&dm);
        let mut d2 = DynData::new(&dd);
        let mut r = rng(3);
        let q = random_config(&m, &mut r);
        let v: Vec<f64> = (0..dm.nv).map(|_| r()).collect();
        let tau: Vec<f64> = (0..dm.nv).map(|_| 3.0 * r()).collect();
        let lift = |x: &[f64], k: Option<usize>| -> Vec<Dual64> {
            x.iter()
                .enumerate()
                .map(|(i, &v)| if Some(i) == k { Dual64::from_re(v).derivative() } else { Dual64::from_re(v) })
                .collect()
        };
        let mut worst: f64 = 0.0;
        for which in 0..3 {
            let n = if which == 0 { dm.nq } else { dm.nv };
            for k in 0..n {
                let (qd, vd, td) = match which {
                    0 => (lift(&q, Some(k)), lift(&v, None), lift(&tau, None)),
                    1 => (lift(&q, None), lift(&v, Some(k)), lift(&tau, None)),
                    _ => (lift(&q, None), lift(&v, None), lift(&tau, Some(k))),
                };
                let out = aba(&dd, &qd, &vd, &td, &mut d2).unwrap();
                let outr = rnea(&dd, &qd, &vd, &td, &mut d2).unwrap();
                let h = if which == 2 { 1e-3 } else { 1e-5 };
                let eval = |s: f64| {
                    let (mut q2, mut v2, mut t2) = (q.clone(), v.clone(), tau.clone());
                    match which {
                        0 => q2[k] += s,
                        1 => v2[k] += s,
                        _ => t2[k] += s,
                    }
                    (
                        aba(&dm, &q2, &v2, &t2, &mut d.clone()).unwrap(),
                        rnea(&dm, &q2, &v2, &t2, &mut d.clone()).unwrap(),
                    )
                };
                let (ap, rp) = eval(h);
                let (am, rm) = eval(-h);
                let fd_a: Vec<f64> = ap.iter().zip(&am).map(|(a, b)| (a - b) / (2.0 * h)).collect();
                let fd_r: Vec<f64> = rp.iter().zip(&rm).map(|(a, b)| (a - b) / (2.0 * h)).collect();
                let da: Vec<f64> = out.iter().map(|x| x.eps).collect();
                let dr: Vec<f64> = outr.iter().map(|x| x.eps).collect();
                let scale = |x: &[f64]| x.iter().fold(1e-3f64, |m, v| m.max(v.abs()));
                let ea = da.iter().zip(&fd_a).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max) / scale(&fd_a);
                let er = dr.iter().zip(&fd_r).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max) / scale(&fd_r);
                worst = worst.max(ea).max(er);
            }
        }
        eprintln!("{}: dual vs FD derivatives of ABA and RNEA, worst rel err {worst:.1e}", m.name);
        assert!(worst < 1e-6);
        let _ = DMatrix::<f64>::zeros(0, 0);
    }
}
