//! The QCQP solver benchmark of spec 001 §4 E0 / issue 5 item 9 (BENCHMARKS.md "Contact QCQP"): the paper's random
//! family — 4 contacts (8 variables), P = diag(exp(U[−10, 10])), q ~ U[−1, 1]⁸, λ_n, μ ~ U[0, 1]⁴ (r = μ λ_n),
//! tolerance 1e-10 — solved by our ADMM (code settings + Newton polish; also without the polish) and by Clarabel
//! (interior point, the same problem as 4 second-order cones), and differentiated by our reduced-KKT VJP of an
//! MSE loss to a target of ones. Per problem: forward µs, backward µs (KKT build + factorisation + VJP), the
//! solution's error against the exact solve (P is diagonal), and the gradient's relative error against
//! fourth-order central differences of the exact solve. Median / p90 / worst over the family, single thread.
//! Usage: cargo run --release -p torsion-bench --bin qcqp -- [--problems N]
use clarabel::algebra::CscMatrix;
use clarabel::solver::{DefaultSettingsBuilder, DefaultSolver, IPSolver, SupportedConeT};
use nalgebra::DMatrix;
use serde_json::json;
use std::hint::black_box;
use std::time::Instant;
use torsion_diff::gradcheck::XorShift;
use torsion_solvers::ncp::exact::qcqp_diagonal_exact;
use torsion_solvers::ncp::{Admm, AdmmOptions, ConstraintSet, FrictionSet, ReducedKkt};

/// Median per-call µs of `f` (batches of ~0.2 ms, 9 repeats).
fn time_us(mut f: impl FnMut()) -> f64 {
    let t = Instant::now();
    let mut n = 0;
    while t.elapsed().as_secs_f64() < 2e-4 || n < 2 {
        f();
        n += 1;
    }
    let mut v: Vec<f64> = (0..9)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..n {
                f();
            }
            t.elapsed().as_secs_f64() * 1e6 / n as f64
        })
        .collect();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[4]
}

fn stats(mut v: Vec<f64>) -> serde_json::Value {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let at = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
    json!({"median": at(0.5), "p90": at(0.9), "worst": v[v.len() - 1], "mean": v.iter().sum::<f64>() / v.len() as f64})
}

fn loss(z: &[f64]) -> f64 {
    0.5 * z.iter().map(|v| (v - 1.0) * (v - 1.0)).sum::<f64>()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let problems = args
        .iter()
        .position(|a| a == "--problems")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000usize);
    let mut rng = XorShift(0xE0E0_1234_5678_9ABC);
    let (mut fwd, mut fwd_nopolish, mut bwd, mut clar) = (vec![], vec![], vec![], vec![]);
    let (mut sol_err, mut sol_err_nopolish, mut clar_err, mut grad_err, mut iters) =
        (vec![], vec![], vec![], vec![], vec![]);
    let opts = AdmmOptions { eps_abs: 1e-10, ..AdmmOptions::default() };
    let opts_np = AdmmOptions { polish: false, ..opts.clone() };
    let mut admm = Admm::new(8);
    for _ in 0..problems {
        let d: Vec<f64> = (0..8).map(|_| (20.0 * rng.u() - 10.0).exp()).collect();
        let q: Vec<f64> = (0..8).map(|_| 2.0 * rng.u() - 1.0).collect();
        let r: Vec<f64> = (0..4).map(|_| rng.u() * rng.u()).collect();
        let warm: Vec<f64> = (0..8).map(|_| rng.u()).collect();
        let p = DMatrix::from_diagonal(&nalgebra::DVector::from_column_slice(&d));
        let set = ConstraintSet::Friction { kind: FrictionSet::Cone, r: &r };
        let exact = qcqp_diagonal_exact(&d, &q, &r);
        let scale = exact.iter().fold(1e-3f64, |m, v| m.max(v.abs()));
        let err = |z: &[f64]| z.iter().zip(&exact).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max) / scale;
        // ours, without and with the polish
        let info = admm.solve(&p, &q, set, Some(&warm), &opts_np, None).unwrap();
        sol_err_nopolish.push(err(admm.solution()));
        fwd_nopolish.push(time_us(|| {
            admm.solve(&p, &q, set, Some(&warm), &opts_np, None).unwrap();
            black_box(admm.solution());
        }));
        iters.push(info.iterations as f64);
        admm.solve(&p, &q, set, Some(&warm), &opts, None).unwrap();
        let z = admm.solution().to_vec();
        sol_err.push(err(&z));
        fwd.push(time_us(|| {
            admm.solve(&p, &q, set, Some(&warm), &opts, None).unwrap();
            black_box(admm.solution());
        }));
        // backward: the MSE loss's gradient w.r.t. (q, diag P, r)
        let zbar: Vec<f64> = z.iter().map(|v| v - 1.0).collect();
        let mut grad = (vec![0.0; 8], DMatrix::zeros(8, 8), vec![0.0; 4]);
        bwd.push(time_us(|| {
            let kkt = ReducedKkt::new(&p, &q, &z, set).unwrap();
            let (mut qb, mut rb) = (vec![0.0; 8], vec![0.0; 4]);
            let mut pb = DMatrix::zeros(8, 8);
            kkt.vjp(&zbar, &mut qb, Some(&mut pb), &mut rb);
            grad = (qb, pb, rb);
        }));
        let an: Vec<f64> =
            grad.0.iter().copied().chain((0..8).map(|i| grad.1[(i, i)])).chain(grad.2.iter().copied()).collect();
        let theta: Vec<f64> = q.iter().chain(&d).chain(&r).copied().collect();
        let fd = torsion_diff::gradcheck::fd4_gradient(
            |a| loss(&qcqp_diagonal_exact(&a[8..16], &a[..8], &a[16..])),
            &theta,
            1e-4,
        );
        let num = an.iter().zip(&fd).map(|(a, b)| (a - b).powi(2)).sum::<f64>().sqrt();
        grad_err.push(num / fd.iter().map(|v| v * v).sum::<f64>().sqrt().max(1e-12));
        // Clarabel: s = b − A x ∈ SOC(3)⁴ with s_i = (r_i, x_2i, x_2i+1)
        let pc = CscMatrix::new(8, 8, (0..=8).collect(), (0..8).collect(), d.clone());
        let (mut colptr, mut rowval, mut nz) = (vec![0usize], vec![], vec![]);
        for j in 0..8 {
            rowval.push(3 * (j / 2) + 1 + j % 2);
            nz.push(-1.0);
            colptr.push(rowval.len());
        }
        let a = CscMatrix::new(12, 8, colptr, rowval, nz);
        let b: Vec<f64> = (0..12).map(|k| if k % 3 == 0 { r[k / 3] } else { 0.0 }).collect();
        let cones: Vec<SupportedConeT<f64>> = (0..4).map(|_| SupportedConeT::SecondOrderConeT(3)).collect();
        let settings = || {
            DefaultSettingsBuilder::default()
                .verbose(false)
                .tol_gap_abs(1e-10)
                .tol_gap_rel(1e-10)
                .tol_feas(1e-10)
                .build()
                .unwrap()
        };
        let mut s = DefaultSolver::new(&pc, &q, &a, &b, &cones, settings()).unwrap();
        s.solve();
        clar_err.push(err(&s.solution.x));
        clar.push(time_us(|| {
            let mut s = DefaultSolver::new(&pc, &q, &a, &b, &cones, settings()).unwrap();
            s.solve();
            black_box(&s.solution.x);
        }));
    }
    println!(
        "{}",
        json!({
            "problems": problems,
            "forward_us": stats(fwd), "forward_no_polish_us": stats(fwd_nopolish), "backward_us": stats(bwd),
            "clarabel_forward_us": stats(clar), "admm_iterations": stats(iters),
            "solution_rel_error": stats(sol_err), "solution_rel_error_no_polish": stats(sol_err_nopolish),
            "clarabel_solution_rel_error": stats(clar_err), "gradient_rel_error": stats(grad_err),
        })
    );
}
