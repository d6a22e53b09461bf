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

#[test]
fn urdf_chain_equals_the_whole_robot_with_the_other_joints_locked() {
    // issue 12 item 6 (Pinocchio's buildReducedModel): the Baxter left-arm chain (gripper, fingers, sensors
    // welded) has the whole URDF's dynamics restricted to the arm with every other joint at q = v = a = 0:
    // M_chain = M_whole[arm, arm], RNEA_chain = RNEA_whole[arm], hence ABA too
    use torsion_model::io::{example_robot_data_dir, load_urdf, robots::BAXTER_URDF, UrdfOptions};
    let path = example_robot_data_dir().expect("example-robot-data").join(BAXTER_URDF);
    let whole = load_urdf(&path, &UrdfOptions::default()).unwrap();
    let opts = UrdfOptions { root: Some("torso".into()), tip: Some("left_hand_link".into()), ..Default::default() };
    let arm = load_urdf(&path, &opts).unwrap();
    let (dw, da): (DynModel<f64>, DynModel<f64>) =
        (DynModel::from_model(&whole).unwrap(), DynModel::from_model(&arm).unwrap());
    let (mut ww, mut wa) = (DynData::new(&dw), DynData::new(&da));
    // arm joint k ↔ whole-model dof (all hinges or slides: q index = v index)
    let (qs, vs) = (whole.joint_q_start(), whole.joint_v_start());
    let idx: Vec<usize> = arm.joint_name.iter().map(|n| whole.joint_index(n).unwrap()).collect();
    assert!(idx.iter().all(|&j| qs[j] == vs[j]));
    let mut r = rng(3);
    let mut worst = [0.0f64; 3];
    for _ in 0..10 {
        let [q, v, a, tau]: [Vec<f64>; 4] = std::array::from_fn(|_| (0..7).map(|_| r()).collect());
        let mut qw = whole.neutral_q();
        let (mut vw, mut aw) = (vec![0.0; dw.nv], vec![0.0; dw.nv]);
        for k in 0..7 {
            qw[qs[idx[k]]] = q[k];
            vw[vs[idx[k]]] = v[k];
            aw[vs[idx[k]]] = a[k];
        }
        let sub = |x: &[f64]| -> Vec<f64> { idx.iter().map(|&j| x[vs[j]]).collect() };
        let mw = crba(&dw, &qw, &mut ww).unwrap();
        let msub = DMatrix::from_fn(7, 7, |i, j| mw[(vs[idx[i]], vs[idx[j]])]);
        let ma = crba(&da, &q, &mut wa).unwrap();
        let rw = sub(&rnea(&dw, &qw, &vw, &aw, &mut ww).unwrap());
        let ra = rnea(&da, &q, &v, &a, &mut wa).unwrap();
        let cw = sub(&nonlinear_effects(&dw, &qw, &vw, &mut ww).unwrap());
        let want = msub.clone().lu().solve(&(DVector::from_vec(tau.clone()) - DVector::from_vec(cw))).unwrap();
        let got = DVector::from_vec(aba(&da, &q, &v, &tau, &mut wa).unwrap());
        let rel = |a: f64, b: f64| a / b.max(1e-12);
        worst[0] = worst[0].max(rel((&ma - &msub).amax(), msub.amax()));
        worst[1] = worst[1]
            .max(rel((DVector::from_vec(ra) - DVector::from_vec(rw.clone())).amax(), DVector::from_vec(rw).amax()));
        worst[2] = worst[2].max(rel((&got - &want).amax(), want.amax()));
    }
    eprintln!(
        "Baxter arm chain vs whole URDF, other joints locked: M {:.1e}, RNEA {:.1e}, ABA {:.1e}",
        worst[0], worst[1], worst[2]
    );
    assert!(worst.iter().all(|&e| e < 1e-12), "{worst:?}");
}
