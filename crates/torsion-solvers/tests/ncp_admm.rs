//! The ADMM QP / QCQP (spec 001 §3.6) and their implicit derivatives (§3.8, §3.9): solutions against exact
//! references and KKT conditions; VJP / JVP against central finite differences of an exact solve (the E0
//! random family) and of the solver itself (general P, pyramids, the QP).
use nalgebra::DMatrix;
use torsion_diff::gradcheck::XorShift;
use torsion_solvers::ncp::exact::qcqp_diagonal_exact;
use torsion_solvers::ncp::{Admm, AdmmOptions, ConstraintSet, FrictionSet, ReducedKkt};

/// The E0 family: 4 contacts, P = diag(exp(U[−10, 10])), q ~ U[−1, 1]⁸, r = μ λ_n with μ, λ_n ~ U[0, 1].
fn e0(rng: &mut XorShift) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let d: Vec<f64> = (0..8).map(|_| (20.0 * rng.u() - 10.0).exp()).collect();
    let q: Vec<f64> = (0..8).map(|_| rng.sym()).collect();
    let r: Vec<f64> = (0..4).map(|_| rng.u() * rng.u()).collect();
    (d, q, r)
}

fn loss_grad(z: &[f64]) -> Vec<f64> {
    z.iter().map(|v| v - 1.0).collect()
}
fn loss(z: &[f64]) -> f64 {
    0.5 * z.iter().map(|v| (v - 1.0) * (v - 1.0)).sum::<f64>()
}

fn solve(p: &DMatrix<f64>, q: &[f64], set: ConstraintSet) -> Vec<f64> {
    let mut admm = Admm::new(q.len());
    let info = admm.solve(p, q, set, None, &AdmmOptions::default(), None).unwrap();
    assert!(info.converged, "{info:?}");
    admm.solution().to_vec()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// ADMM (polished) reproduces the exact solution of the diagonal family, and the implicit gradient of an MSE
/// loss w.r.t. (q, diag P, r) matches central differences of the exact solve: the benchmark's targets (median
/// ≤ 1e-7, worst ≤ 1e-4) over 300 problems.
#[test]
fn qcqp_e0_family_solution_and_gradients() {
    let mut rng = XorShift(0x5eed_1234_abcd_0001);
    let (mut errs, mut sol_err) = (vec![], 0.0f64);
    for _ in 0..300 {
        let (d, q, r) = e0(&mut rng);
        let p = DMatrix::from_diagonal(&nalgebra::DVector::from_column_slice(&d));
        let set = ConstraintSet::Friction { kind: FrictionSet::Cone, r: &r };
        let z = solve(&p, &q, set);
        let ze = qcqp_diagonal_exact(&d, &q, &r);
        let scale = ze.iter().fold(1e-3f64, |m, v| m.max(v.abs()));
        sol_err = sol_err.max(z.iter().zip(&ze).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max) / scale);
        let kkt = ReducedKkt::new(&p, &q, &z, set).unwrap();
        let (mut qb, mut pb, mut rb) = (vec![0.0; 8], DMatrix::zeros(8, 8), vec![0.0; 4]);
        kkt.vjp(&loss_grad(&z), &mut qb, Some(&mut pb), &mut rb);
        let an: Vec<f64> = qb.iter().copied().chain((0..8).map(|i| pb[(i, i)])).chain(rb.iter().copied()).collect();
        // fourth-order central differences of the exact solve, relative steps (h = 1e-4|θ|: truncation
        // O(h⁴), round-off O(ε/h) ≈ 1e-12, far below the 1e-8 noise of a plain central difference at 1e-6)
        let theta: Vec<f64> = q.iter().chain(&d).chain(&r).copied().collect();
        let eval = |th: &[f64]| loss(&qcqp_diagonal_exact(&th[8..16], &th[..8], &th[16..]));
        let fd = torsion_diff::gradcheck::fd4_gradient(eval, &theta, 1e-4);
        let num = an.iter().zip(&fd).map(|(a, b)| (a - b).powi(2)).sum::<f64>().sqrt();
        let den = fd.iter().map(|v| v * v).sum::<f64>().sqrt().max(1e-12);
        errs.push(num / den);
        if num / den > 1e-3 {
            eprintln!("BAD {:.1e}: d {d:?}\n q {q:?}\n r {r:?}\n z {z:?}\n ze {ze:?}\n an {an:?}\n fd {fd:?}\n active {:?} nu {:?} sizes {:?}", num/den, kkt.active(), kkt.nu, kkt.sizes());
        }
    }
    let worst = errs.iter().fold(0.0f64, |m, &v| m.max(v));
    let med = median(&mut errs);
    eprintln!(
        "E0 family, 300 problems: solution vs exact {sol_err:.1e}; gradient vs FD median {med:.1e} worst {worst:.1e}"
    );
    assert!(sol_err < 1e-9, "solution {sol_err:e}");
    assert!(med < 1e-7 && worst < 1e-4, "gradient median {med:e} worst {worst:e}");
}

/// Random dense SPD P (condition ~1e3), every friction set and the orthant: KKT conditions at the solution, the
/// VJP against central differences of the solver itself, and VJP/JVP duality.
#[test]
fn general_problems_kkt_and_gradients() {
    let mut rng = XorShift(0x0bad_cafe_0000_0042);
    for (kind, nc) in [
        (Some(FrictionSet::Cone), 3),
        (Some(FrictionSet::BoxPyramid), 3),
        (Some(FrictionSet::DiamondPyramid), 3),
        (None, 5),
    ] {
        let mut worst: f64 = 0.0;
        let mut count = 0;
        for _ in 0..40 {
            let n = if kind.is_some() { 2 * nc } else { nc };
            let a = DMatrix::from_fn(n, n, |_, _| rng.sym());
            let p = &a * a.transpose() + DMatrix::identity(n, n) * 0.05;
            let q: Vec<f64> = (0..n).map(|_| 2.0 * rng.sym()).collect();
            let r: Vec<f64> = (0..nc).map(|_| 0.2 + rng.u()).collect();
            let set = match kind {
                Some(k) => ConstraintSet::Friction { kind: k, r: &r },
                None => ConstraintSet::Nonneg,
            };
            let z = solve(&p, &q, set);
            assert!(set.violation(&z) < 1e-12);
            let kkt = ReducedKkt::new(&p, &q, &z, set).unwrap();
            let nr = if kind.is_some() { nc } else { 0 };
            let zb: Vec<f64> = (0..n).map(|_| rng.sym()).collect();
            let (mut qb, mut pb, mut rb) = (vec![0.0; n], DMatrix::zeros(n, n), vec![0.0; nr]);
            kkt.vjp(&zb, &mut qb, Some(&mut pb), &mut rb);
            // duality: ⟨z̄, J dθ⟩ = ⟨Jᵀ z̄, dθ⟩
            let dq: Vec<f64> = (0..n).map(|_| rng.sym()).collect();
            let dr: Vec<f64> = (0..nr).map(|_| rng.sym()).collect();
            // a symmetric perturbation (P is a Delassus matrix: the solver reads it as symmetric)
            let dp0 = DMatrix::from_fn(n, n, |_, _| rng.sym());
            let dp = &dp0 + dp0.transpose();
            let dz = kkt.jvp(Some(&dp), &dq, &dr);
            let lhs: f64 = zb.iter().zip(&dz).map(|(a, b)| a * b).sum();
            let rhs: f64 = qb.iter().zip(&dq).map(|(a, b)| a * b).sum::<f64>()
                + rb.iter().zip(&dr).map(|(a, b)| a * b).sum::<f64>()
                + pb.iter().zip(dp.iter()).map(|(a, b)| a * b).sum::<f64>();
            assert!((lhs - rhs).abs() <= 1e-9 * (1.0 + lhs.abs()), "{kind:?}: duality {lhs} vs {rhs}");
            // central differences of the solver along the random direction (skip the rare problems whose
            // active set changes within ±h: a non-smooth point)
            let h = 1e-6;
            let eval = |s: f64| {
                let pp = &p + &dp * s;
                let qq: Vec<f64> = q.iter().zip(&dq).map(|(a, b)| a + s * b).collect();
                let rr: Vec<f64> = r.iter().zip(&dr).map(|(a, b)| a + s * b).collect();
                let set2 = match kind {
                    Some(k) => ConstraintSet::Friction { kind: k, r: &rr },
                    None => ConstraintSet::Nonneg,
                };
                let z = solve(&pp, &qq, set2);
                let k = ReducedKkt::new(&pp, &qq, &z, set2).unwrap();
                (z, k.sizes())
            };
            let ((zp, sp), (zm, sm)) = (eval(h), eval(-h));
            if sp != kkt.sizes() || sm != kkt.sizes() {
                continue;
            }
            count += 1;
            let fd: Vec<f64> = zp.iter().zip(&zm).map(|(a, b)| (a - b) / (2.0 * h)).collect();
            let e = fd.iter().zip(&dz).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max)
                / fd.iter().fold(1e-9f64, |m, v| m.max(v.abs()));
            worst = worst.max(e);
            if e > 1e-6 {
                eprintln!("BADG {kind:?} {e:.1e}: z {z:?}\n r {r:?}\n nu {:?} sizes {:?} resid {:.1e}\n dz {dz:?}\n fd {fd:?}", kkt.nu, kkt.sizes(), kkt.last_residual.get());
            }
        }
        eprintln!("{kind:?}: JVP vs FD of the solver over {count} problems: worst {worst:.1e}");
        assert!(count >= 30, "{kind:?}: too many non-smooth samples ({count} of 40)");
        assert!(worst < 1e-6, "{kind:?}: {worst:e}");
    }
}

/// A PSD (rank-deficient) Delassus matrix: the proximal ADMM still converges, and the backward solve returns
/// a finite least-squares gradient (a cube on four corners: G_n of rank 3).
#[test]
fn singular_delassus() {
    // four corner normals of a unit cube resting on a plane: J_n rows [1, y_i, −x_i] on (v_z, ω_x, ω_y)
    let corners = [(0.5, 0.5), (-0.5, 0.5), (-0.5, -0.5), (0.5, -0.5)];
    let j = DMatrix::from_fn(4, 3, |i, c| [1.0, corners[i].1, -corners[i].0][c]);
    let minv = DMatrix::from_diagonal(&nalgebra::DVector::from_column_slice(&[1.0, 6.0, 6.0]));
    let g = &j * minv * j.transpose();
    let q = vec![-0.1; 4];
    let z = solve(&g, &q, ConstraintSet::Nonneg);
    let kkt = ReducedKkt::new(&g, &q, &z, ConstraintSet::Nonneg).unwrap();
    let (mut qb, mut rb) = (vec![0.0; 4], vec![]);
    kkt.vjp(&[1.0, 1.0, 1.0, 1.0], &mut qb, None, &mut rb);
    assert!(qb.iter().all(|v| v.is_finite()), "{qb:?}");
    // the velocity change J M⁻¹ Jᵀ λ (what the physics sees) makes the constraint exactly tight: G z + q = 0
    let res =
        (&g * nalgebra::DVector::from_column_slice(&z)).iter().zip(&q).map(|(a, b)| (a + b).abs()).fold(0.0, f64::max);
    assert!(res < 1e-9, "{res}");
    // the problem is symmetric under the corners' rotation: the Newton polish takes the minimum-norm step on this
    // singular problem, so it does not move along G's null space (issue 12: before, a spread of 1.0e-5 along
    // (1, −1, 1, −1); now ADMM's own 2e-10)
    let spread = z.iter().fold(f64::NEG_INFINITY, |m, v| m.max(*v)) - z.iter().fold(f64::INFINITY, |m, v| m.min(*v));
    eprintln!("singular Delassus: λ {z:?}, spread {spread:.1e}, residual {res:.1e}");
    assert!(spread < 1e-8, "asymmetric impulses {z:?}");
}

#[test]
fn bad_inputs_are_errors() {
    let mut admm = Admm::new(2);
    let p = DMatrix::identity(2, 2);
    assert!(admm.solve(&p, &[1.0], ConstraintSet::Nonneg, None, &AdmmOptions::default(), None).is_err());
    assert!(admm.solve(&p, &[f64::NAN, 1.0], ConstraintSet::Nonneg, None, &AdmmOptions::default(), None).is_err());
    let r = [-1.0];
    let set = ConstraintSet::Friction { kind: FrictionSet::Cone, r: &r };
    assert!(admm.solve(&p, &[1.0, 1.0], set, None, &AdmmOptions::default(), None).is_err());
    let neg = DMatrix::from_diagonal_element(2, 2, -1.0);
    assert!(admm.solve(&neg, &[1.0, 1.0], ConstraintSet::Nonneg, None, &AdmmOptions::default(), None).is_err());
}
