//! The boxed LCP solvers of spec 004 (issue 17 item 1): each against the enumeration oracle on random frictional
//! LCPs with 1–4 contacts, validity rates of the baseline Dantzig, PGS and Jade's Dantzig on 1000 random LCPs with
//! 3–6 contacts (§4.3, §4.5), and the Nimble failure case (a free box sliding at 2 m/s with μ = 0.16 on its four
//! corners, assembled from the shared contact layer): Jade finds the valid sliding solution.
use nalgebra::DVector;
use torsion_dynamics::{DynData, DynModel};
use torsion_math::{Mat3, Quat, Vec3};
use torsion_model::builder::{JointDesc, ModelBuilder};
use torsion_model::JointType;
use torsion_solvers::contact::frames::body_joints;
use torsion_solvers::contact::prelude::{apply_impulses, prelude, StepInputs};
use torsion_solvers::contact::{ContactGeom, PreludeOptions};
use torsion_solvers::lcp::oracle::enumerate;
use torsion_solvers::lcp::problem::split_impulses;
use torsion_solvers::lcp::random::random_contact_lcp;
use torsion_solvers::lcp::*;

const VTOL: f64 = 1e-6;

fn rel(a: &DVector<f64>, b: &DVector<f64>) -> f64 {
    (a - b).amax() / b.amax().max(1.0)
}

/// Against the oracle (all active sets, 1–4 contacts): where the oracle finds a unique solution, every valid
/// answer equals it (λ and w); Jade answers every problem the oracle solves.
#[test]
fn solvers_match_the_oracle() {
    let o = JadeOptions::default();
    let p = PgsOptions::default();
    let (mut solvable, mut unique) = (0, 0);
    let mut valid = [0usize; 3];
    let mut worst: f64 = 0.0;
    let mut jade_missed = vec![];
    for seed in 0..400u64 {
        let k = 1 + (seed % 4) as usize;
        let lcp = random_contact_lcp(seed, k);
        let all = enumerate(&lcp, VTOL).unwrap();
        if all.solutions.is_empty() {
            continue;
        }
        solvable += 1;
        let answers = [solve_baseline(&lcp, &o), solve_pgs(&lcp, &p, None), solve_jade(&lcp, &o)];
        for (c, s) in answers.iter().enumerate() {
            // the validity report is the checker's, run on every solve
            assert_eq!(s.validity, lcp.check(&s.lambda, VTOL));
            if s.ok() {
                valid[c] += 1;
            }
        }
        if !answers[2].ok() {
            jade_missed.push(seed);
        }
        if all.solutions.len() == 1 {
            unique += 1;
            let want = &all.solutions[0];
            for s in answers.iter().filter(|s| s.ok()) {
                let e = rel(&s.lambda, &want.lambda).max(rel(&s.w, &want.w));
                worst = worst.max(e);
                assert!(e < 1e-5, "seed {seed}: {:?} differs from the oracle by {e:e}", s.solver);
            }
        }
    }
    eprintln!(
        "oracle: {solvable} solvable ({unique} unique); valid: baseline {}, PGS {}, Jade {}; worst |Δλ|, |Δw| vs oracle {worst:.1e}; Jade missed {jade_missed:?}",
        valid[0], valid[1], valid[2]
    );
    assert!(solvable > 300 && unique > 100);
    // Jade answers (almost) every problem the oracle solves, and more than the baseline and PGS
    assert!(jade_missed.len() * 100 <= solvable, "Jade missed {} of {solvable}", jade_missed.len());
    assert!(valid[2] > valid[0] && valid[2] >= valid[1]);
}

/// Validity rates on 1000 random frictional LCPs with 3–6 contacts (spec 004 §4.3: the baseline fails on some,
/// Jade on none or fewer).
#[test]
fn validity_rates_on_random_lcps() {
    let o = JadeOptions::default();
    let p = PgsOptions::default();
    let n = 1000;
    let mut valid = [0usize; 3];
    let mut chain = 0;
    let mut times = [0f64; 3];
    let mut jade_fail = vec![];
    for seed in 0..n as u64 {
        let lcp = random_contact_lcp(50_000 + seed, 3 + (seed % 4) as usize);
        let t0 = std::time::Instant::now();
        let b = solve_baseline(&lcp, &o);
        let t1 = std::time::Instant::now();
        let g = solve_pgs(&lcp, &p, None);
        let t2 = std::time::Instant::now();
        let j = solve_jade(&lcp, &o);
        let t3 = std::time::Instant::now();
        times[0] += (t1 - t0).as_secs_f64();
        times[1] += (t2 - t1).as_secs_f64();
        times[2] += (t3 - t2).as_secs_f64();
        for (c, s) in [&b, &g, &j].iter().enumerate() {
            valid[c] += s.ok() as usize;
        }
        if !j.ok() {
            jade_fail.push((seed, j.failure.clone()));
        }
        chain += solve_chain(&lcp, &ChainOptions::default()).is_ok() as usize;
    }
    let rate = |k: usize| 100.0 * valid[k] as f64 / n as f64;
    eprintln!(
        "validity on {n} random LCPs (3–6 contacts): baseline Dantzig {:.1} %, PGS {:.1} %, Jade {:.1} %, chain Jade → PGS {:.1} %; mean solve {:.0} / {:.0} / {:.0} µs; Jade failures {:?}",
        rate(0),
        rate(1),
        rate(2),
        100.0 * chain as f64 / n as f64,
        1e6 * times[0] / n as f64,
        1e6 * times[1] / n as f64,
        1e6 * times[2] / n as f64,
        &jade_fail[..jade_fail.len().min(10)]
    );
    assert!(valid[0] < n, "the baseline fails on some (spec §4.3)");
    assert!(valid[2] > valid[0] && valid[2] >= valid[1], "Jade fails on fewer");
}

/// The chain reports which solver answered; a failure is an error with every attempt, never a frictionless answer.
#[test]
fn chain_reports_the_solver() {
    let lcp = random_contact_lcp(3, 3);
    let c = solve_chain(&lcp, &ChainOptions::default()).unwrap();
    assert_eq!(c.solution.solver, LcpSolverKind::JadeDantzig);
    assert!(c.failed.is_empty() && c.solution.ok());
    // an infeasible LCP: a normal row that can only push the wrong way (A = 0, b < 0)
    let bad = BoxedLcp::new(nalgebra::DMatrix::zeros(1, 1), DVector::from_element(1, -1.0), vec![Row::Normal]).unwrap();
    let e = solve_chain(&bad, &ChainOptions::default()).unwrap_err();
    assert_eq!(e.attempts.len(), 2);
    assert!(e.attempts.iter().all(|a| !a.ok()));
    assert!(e.to_string().contains("no valid solution"), "{e}");
    // a problem Jade's Dantzig does not solve (random scene 50 022, 5 contacts): PGS answers, and says so
    let lcp = random_contact_lcp(50_022, 5);
    let c = solve_chain(&lcp, &ChainOptions::default()).unwrap();
    assert_eq!(c.solution.solver, LcpSolverKind::Pgs);
    assert!(c.solution.ok() && c.failed.len() == 1 && c.failed[0].0 == LcpSolverKind::JadeDantzig, "{:?}", c.failed);
    // without the PGS fallback the chain fails, naming Jade's failure
    let e = solve_chain(&lcp, &ChainOptions { pgs: None, ..Default::default() }).unwrap_err();
    assert_eq!(e.attempts.len(), 1);
    assert_eq!(e.attempts[0].solver, LcpSolverKind::JadeDantzig);
}

/// The Nimble failure case (issue 17, spec §4.3): a free 1 kg box (half size 0.1 m) sliding along x at 2 m/s on its
/// four bottom corners, μ = 0.16, g = 9.81, Δt = 0.01. The LCP from the shared contact layer has a valid frictional
/// solution (A has rank 3 on the normals: λ_n is not unique); Jade finds one, and the box decelerates by μ g Δt.
#[test]
fn sliding_box_four_contacts_jade_is_valid() {
    let (he, mu, g, dt) = (0.1, 0.16, 9.81, 0.01);
    let mut b = ModelBuilder::new("box").gravity(Vec3::new(0.0, 0.0, -g)).dt(dt);
    let w = b.add_fixed_body("world", Vec3::zeros(), Quat::identity());
    let bx = b.add_body("box", 1.0, Mat3::from_diagonal_element(4.0 * he * he / 6.0));
    let mut j = JointDesc::hinge("free", w, bx, Vec3::zeros(), Vec3::zeros(), Vec3::z());
    j.kind = JointType::Free;
    b.add_joint(j);
    let m = b.build().unwrap();
    let dm = DynModel::<f64>::from_model(&m).unwrap();
    let mut d = DynData::new(&dm);
    let mut bj = vec![];
    body_joints(&dm, &mut bj);
    let mut q = m.qpos0.clone();
    q[2] = he;
    let mut v = vec![0.0; dm.nv];
    v[3] = 2.0; // free joint: (ω, v)
    let u = vec![0.0; dm.nv];
    let contacts: Vec<ContactGeom<f64>> = [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)]
        .iter()
        .map(|&(x, y)| ContactGeom {
            body_a: 1,
            body_b: 0,
            point: Vec3::new(x * he, y * he, 0.0),
            normal: Vec3::z(),
            tangents: [Vec3::x(), Vec3::y()],
            distance: 0.0,
            mu,
            restitution: 0.0,
        })
        .collect();
    let po = PreludeOptions { solver: "lcp-test", passive: false, baumgarte: 0.0 };
    let x = StepInputs { model: &m, dm: &dm, body_joint: &bj, q: &q, v: &v, u: &u, dt, contacts: &contacts, o: &po };
    let pre = prelude(&x, &mut d).unwrap();
    let lcp = BoxedLcp::from_prelude(&pre, &contacts, Offsets::Step).unwrap();
    assert_eq!(lcp.len(), 12);
    let o = JadeOptions::default();
    let base = solve_baseline(&lcp, &o);
    let pgs = solve_pgs(&lcp, &PgsOptions::default(), None);
    let jade = solve_jade(&lcp, &o);
    eprintln!(
        "sliding box: baseline {:?} ({:?}), PGS {:?} ({} sweeps), Jade {:?} ({} pivots)",
        base.failure, base.validity.worst, pgs.failure, pgs.iterations, jade.failure, jade.iterations
    );
    assert!(jade.ok(), "{:?} {:?}", jade.failure, jade.validity);
    // the baseline's frozen bounds fail here (Nimble's failure, which it then hid behind a frictionless solve)
    assert!(!base.ok(), "the baseline Dantzig is expected to fail on this LCP");
    let (ln, lt) = split_impulses(&jade.lambda);
    let vplus = apply_impulses(&pre, &ln, &lt);
    let want = 2.0 - mu * g * dt;
    assert!((vplus[3] - want).abs() < 1e-9, "v_x⁺ = {} (want {want})", vplus[3]);
    assert!(vplus[5].abs() < 1e-9 && vplus[4].abs() < 1e-9, "no vertical or lateral velocity: {vplus:?}");
    // the frictionless answer would keep v_x = 2: the solution is frictional
    let (sn, st) = (ln.iter().sum::<f64>(), lt.iter().step_by(2).sum::<f64>());
    assert!((st + mu * sn).abs() < 1e-9 * sn, "total friction −μ Σλ_n: {st} vs {}", -mu * sn);
}

/// The baseline is a sound Dantzig where its frozen bounds do not matter: with μ = 0 on the same random scenes it
/// answers (almost) every LCP, so its failures above come from the frozen friction bounds (spec §3.9).
#[test]
fn baseline_answers_frictionless_lcps() {
    let o = JadeOptions::default();
    let n = 300;
    let (mut base, mut jade) = (0, 0);
    for seed in 0..n as u64 {
        let l = random_contact_lcp(50_000 + seed, 3 + (seed % 4) as usize);
        let rows = l
            .rows
            .iter()
            .map(|r| match *r {
                Row::Friction { normal, .. } => Row::Friction { normal, mu: 0.0 },
                x => x,
            })
            .collect();
        let l = BoxedLcp::new(l.a.clone(), l.b.clone(), rows).unwrap();
        base += solve_baseline(&l, &o).ok() as usize;
        jade += solve_jade(&l, &o).ok() as usize;
    }
    eprintln!("μ = 0: baseline {base} / {n}, Jade {jade} / {n}");
    assert!(base * 100 >= 99 * n && jade * 100 >= 99 * n, "baseline {base}, Jade {jade} of {n}");
}
