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
use torsion_solvers::contact::prelude::{apply_impulses, prelude, Prelude, StepInputs};
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

/// A free 0.2 m box (1 kg) on its four bottom corners at rest height, moving at `vx` along x, μ = 0.16, g = 9.81,
/// Δt = 0.01: the step's prelude and its boxed LCP (12 rows: four corners, a redundant support).
fn box_on_four_corners(vx: f64) -> (Prelude<f64>, BoxedLcp) {
    let (he, mu, g, dt) = (0.1, MU_BOX, 9.81, 0.01);
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
    v[3] = vx; // free joint: (ω, v)
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
    (pre, lcp)
}

/// μ of `box_on_four_corners`
const MU_BOX: f64 = 0.16;

/// The Nimble failure case (issue 17, spec §4.3): a free 1 kg box (half size 0.1 m) sliding along x at 2 m/s on its
/// four bottom corners, μ = 0.16, g = 9.81, Δt = 0.01. The LCP from the shared contact layer has a valid frictional
/// solution (A has rank 3 on the normals: λ_n is not unique); Jade finds one, and the box decelerates by μ g Δt.
#[test]
fn sliding_box_four_contacts_jade_is_valid() {
    let (mu, g, dt) = (MU_BOX, 9.81, 0.01);
    let (pre, lcp) = box_on_four_corners(2.0);
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

// ---- the stepper `lcp` (issue 17 items 2, 4) ----

use torsion_model::{Control, GenState, Model, ParamSelection};
use torsion_solvers::lcp::stepper::advance;
use torsion_solvers::{DiffSolver, Solver, StepInfo};

fn mjcf(xml: &str) -> Model {
    torsion_model::io::mjcf::load_mjcf_str(xml, "scene.xml", None).unwrap()
}

/// Steps of the `lcp` stepper through the `Solver` contract: the states and each step's report.
fn run(solver: &LcpSolver, m: &Model, s0: &GenState, dt: f64, steps: usize) -> (Vec<GenState>, Vec<StepInfo>) {
    let mut ws = Solver::workspace(solver, m).unwrap();
    let (mut states, mut infos) = (vec![s0.clone()], vec![]);
    let u = Control::zeros(m.nv());
    for _ in 0..steps {
        let mut out = s0.clone();
        infos.push(solver.step(m, states.last().unwrap(), &u, dt, &mut out, &mut ws, None).unwrap());
        states.push(out);
    }
    (states, infos)
}

/// The stepper with CCD off (DCD, `--no-ccd`).
fn dcd() -> LcpSolver {
    LcpSolver::new(LcpOptions { ccd: CcdOptions { enabled: false, ..Default::default() }, ..Default::default() })
}

/// A ball (radius 0.1 m, 1 kg) on a vertical slide joint above a floor plane, no gravity, restitution ε.
fn ball_on_slide(eps: f64) -> Model {
    let mut m = mjcf(
        r#"<mujoco><option gravity="0 0 0"/><worldbody><geom type="plane" size="5 5 0.1"/>
        <body><joint type="slide" axis="0 0 1"/><geom type="sphere" size="0.1" mass="1"/></body>
        </worldbody></mujoco>"#,
    );
    m.shapes.iter_mut().for_each(|s| s.restitution = eps);
    m
}

/// Golden test (issue 17, spec §3.8), CCD off: a ball with gap d = 5 mm approaching at 1 m/s hits the floor in the
/// middle of a 10 ms step. The DCD answer (no time of impact) is dq_{t+1}/dd = +1 exactly (the truth with CCD is
/// −1, item 3), for a plastic (ε = 0) and an elastic (ε = 1) ball; the elastic ball leaves at +1 m/s with
/// dv_{t+1}/dv_t = −1 and dv_{t+1}/dd = 0.
#[test]
fn golden_ball_mid_step_impact_without_ccd() {
    let (d, u, dt) = (0.005, 1.0, 0.01);
    for eps in [0.0, 1.0] {
        let m = ball_on_slide(eps);
        let solver = dcd();
        let s = GenState::new(vec![0.1 + d], vec![-u]);
        let (states, infos) = run(&solver, &m, &s, dt, 1);
        assert_eq!(infos[0].contacts, 1);
        let jac = solver.step_jacobians(&m, &s, &Control::zeros(1), dt, &ParamSelection::none()).unwrap();
        eprintln!("ball ε = {eps}: q⁺ {:.6}, v⁺ {:.6}, A = {}", states[1].q[0], states[1].v[0], jac.a);
        assert!((jac.a[(0, 0)] - 1.0).abs() < 1e-8, "dq⁺/dd = {} (DCD: +1)", jac.a[(0, 0)]);
        assert!((jac.a[(0, 1)] - dt).abs() < 1e-8, "dq⁺/dv = Δt (parallel update)");
        if eps == 1.0 {
            assert!((states[1].v[0] - u).abs() < 1e-12, "elastic bounce: v⁺ = {}", states[1].v[0]);
            assert!((jac.a[(1, 1)] + 1.0).abs() < 1e-8 && jac.a[(1, 0)].abs() < 1e-8, "dv⁺/(d, v) = {}", jac.a);
        } else {
            // plastic: the gap closes at the end of the step, v⁺ = −d/Δt
            assert!((states[1].v[0] + d / dt).abs() < 1e-12, "v⁺ = {}", states[1].v[0]);
            assert!((jac.a[(1, 0)] + 1.0 / dt).abs() < 1e-6 && jac.a[(1, 1)].abs() < 1e-8, "{}", jac.a);
        }
    }
}

/// Two equal balls (radius 0.1 m, 1 kg) on slide joints along x, no gravity, no friction.
fn two_balls(eps: f64) -> Model {
    let mut m = mjcf(
        r#"<mujoco><option gravity="0 0 0"/><worldbody>
        <body><joint type="slide" axis="1 0 0"/><geom type="sphere" size="0.1" mass="1" friction="0"/></body>
        <body><joint type="slide" axis="1 0 0"/><geom type="sphere" size="0.1" mass="1" friction="0"/></body>
        </worldbody></mujoco>"#,
    );
    m.shapes.iter_mut().for_each(|s| s.restitution = eps);
    m
}

/// The two balls' state sensitivity ∂x_T/∂x_0 (4 × 4, tangent) over the unforced steps from `states`: the
/// product of the steps' A.
fn chained_sensitivity(solver: &LcpSolver, m: &Model, states: &[GenState], dt: f64) -> nalgebra::DMatrix<f64> {
    let mut sens = nalgebra::DMatrix::<f64>::identity(4, 4);
    let mut ws = Solver::workspace(solver, m).unwrap();
    let mut jac = torsion_solvers::StepJacobians::zeros(4, 2, 0);
    for s in states {
        solver.step_jacobians_into(m, s, &Control::zeros(2), dt, &ParamSelection::none(), &mut ws, &mut jac).unwrap();
        sens = &jac.a * sens;
    }
    sens
}

/// Golden test (issue 17, Nimble issue #97), as far as the DCD stepper gives it: two equal balls, elastic
/// head-on (x1 = 0, x2 = 0.2155, v0 = 1, u0 = 0), 40 steps of 1 ms. The velocities swap exactly and the chained step
/// Jacobians give ∂(v1, v2)_f/∂(x1, x2, v0, u0) = ((0, 0, 0, 1), (0, 0, 1, 0)) to 1e-8 (Nimble: (…, 0.9175,
/// 0.0825)); ∂x2_f/∂(·), the DCD answer (the truth (1, 0, 1, 0) needs the time of impact, item 3), against central
/// differences of the rollout.
#[test]
fn golden_two_balls_elastic_head_on() {
    let (dt, steps) = (0.001, 40);
    let m = two_balls(1.0);
    let solver = dcd();
    let rollout = |x: [f64; 4]| run(&solver, &m, &GenState::new(vec![x[0], x[1]], vec![x[2], x[3]]), dt, steps).0;
    let x0 = [0.0, 0.2155, 1.0, 0.0];
    let states = rollout(x0);
    let last = states.last().unwrap();
    assert!((last.v[0] - 0.0).abs() < 1e-12 && (last.v[1] - 1.0).abs() < 1e-12, "velocities {:?}", last.v);
    let sens = chained_sensitivity(&solver, &m, &states[..steps], dt);
    eprintln!("two balls: ∂(x1, x2, v1, v2)_f/∂(x1, x2, v0, u0) =\n{sens}");
    for (r, want) in [(2, [0.0, 0.0, 0.0, 1.0]), (3, [0.0, 0.0, 1.0, 0.0])] {
        for c in 0..4 {
            assert!((sens[(r, c)] - want[c]).abs() < 1e-8, "∂v{}_f/∂x0[{c}] = {}", r - 1, sens[(r, c)]);
        }
    }
    let h = 1e-7;
    for c in 0..4 {
        let (mut p, mut q) = (x0, x0);
        p[c] += h;
        q[c] -= h;
        let fd = (rollout(p).last().unwrap().q[1] - rollout(q).last().unwrap().q[1]) / (2.0 * h);
        assert!((fd - sens[(1, c)]).abs() < 1e-6 * fd.abs().max(1.0), "∂x2_f/∂x0[{c}]: {} vs FD {fd}", sens[(1, c)]);
    }
}

/// A free box (half size 0.1 m, 1 kg) on a plane, friction μ on both shapes.
fn box_on_plane(mu: f64) -> Model {
    mjcf(&format!(
        r#"<mujoco><worldbody><geom type="plane" size="50 50 0.1" friction="{mu}"/>
        <body><freejoint/><geom type="box" size="0.1 0.1 0.1" mass="1" friction="{mu}"/></body>
        </worldbody></mujoco>"#
    ))
}

fn box_state(vx: f64) -> GenState {
    GenState::new(vec![0.0, 0.0, 0.1, 1.0, 0.0, 0.0, 0.0], vec![0.0, 0.0, 0.0, vx, 0.0, 0.0])
}

/// Nimble's failure case (issue 17, spec §4.3): a free box sliding at 2 m/s on a plane, μ = 0.16, g = 9.81,
/// Δt = 0.01, 150 steps. Friction acts in every step: v_x drops by μ g Δt per step (to 1e-8) until the box
/// stops, then stays 0; every step reports a valid LCP answered by Jade's Dantzig with its 4 contacts (Nimble:
/// frictionless in 150 of 150 steps).
#[test]
fn nimble_sliding_box_has_friction_every_step() {
    let (mu, g, dt) = (0.16, 9.81, 0.01);
    let m = box_on_plane(mu);
    let (states, infos) = run(&LcpSolver::default(), &m, &box_state(2.0), dt, 150);
    let dv = mu * g * dt;
    let mut sliding = 0;
    for k in 0..150 {
        let (v0, v1) = (states[k].v[3], states[k + 1].v[3]);
        let want = if v0 > dv { v0 - dv } else { 0.0 };
        assert!((v1 - want).abs() < 1e-8, "step {k}: v_x {v0} → {v1} (want {want})");
        sliding += (v0 > dv) as usize;
        let i = &infos[k];
        assert!(i.converged && i.solver == "lcp/jade" && i.contacts == 4, "step {k}: {i:?}");
        assert!(states[k + 1].v[5].abs() < 1e-9 && (states[k + 1].q[2] - 0.1).abs() < 1e-9, "step {k} z");
    }
    eprintln!("sliding box: friction in all {sliding} sliding steps, stopped at x = {:.6}", states[150].q[0]);
    assert_eq!(sliding, (2.0 / dv).floor() as usize);
}

/// A sliding box stops at the analytic distance of the discrete dynamics (parallel update: x_{k+1} = x_k + Δt v_k
/// with v_k = v0 − k μ g Δt while positive), within Δt v0 of the continuous v0² / (2 μ g); a box at rest stays put.
#[test]
fn box_stops_at_the_analytic_distance_and_rests() {
    let (mu, g, dt, v0) = (0.5, 9.81, 0.01, 1.0);
    let m = box_on_plane(mu);
    let (states, _) = run(&LcpSolver::default(), &m, &box_state(v0), dt, 60);
    let a = mu * g * dt;
    let discrete: f64 = (0..).map(|k| v0 - k as f64 * a).take_while(|&v| v > 0.0).map(|v| v * dt).sum();
    let x = states.last().unwrap().q[0];
    eprintln!("stopping distance {x:.9} (discrete {discrete:.9}, continuous {:.6})", v0 * v0 / (2.0 * mu * g));
    assert!((x - discrete).abs() < 1e-8);
    assert!((x - v0 * v0 / (2.0 * mu * g)).abs() < dt * v0);
    let (rest, _) = run(&LcpSolver::default(), &m, &box_state(0.0), dt, 200);
    let drift = rest.iter().map(|s| s.q[0].abs() + s.q[1].abs() + (s.q[2] - 0.1).abs()).fold(0.0, f64::max);
    assert!(drift < 1e-12, "resting box drifts {drift:e}");
}

/// Three 0.2 m boxes (μ 0.5) stacked on a plane with 1 mm gaps between them.
fn three_box_stack() -> Model {
    let mut xml = String::from(r#"<mujoco><worldbody><geom type="plane" size="5 5 0.1" friction="0.5"/>"#);
    for k in 0..3 {
        xml += &format!(
            r#"<body pos="0 0 {}"><freejoint/><geom type="box" size="0.1 0.1 0.1" mass="1" friction="0.5"/></body>"#,
            0.1 + 0.201 * k as f64
        );
    }
    xml += "</worldbody></mujoco>";
    mjcf(&xml)
}

/// A stack of three 0.2 m boxes dropped from 1 mm gaps (g = 9.81, Δt = 0.01, 300 steps) settles and stays: no
/// sliding, no tilt, no motion; every LCP valid; with CCD no penetration beyond the root tolerance.
#[test]
fn stack_of_three_boxes_is_stable() {
    let m = three_box_stack();
    let s0 = GenState::new(m.qpos0.clone(), vec![0.0; m.nv()]);
    let (states, infos) = run(&LcpSolver::default(), &m, &s0, 0.01, 300);
    assert!(infos.iter().all(|i| i.converged));
    let pgs = infos.iter().filter(|i| i.solver == "lcp/pgs").count();
    eprintln!("stack: {pgs} of 300 steps answered by PGS, the rest by Jade's Dantzig");
    assert!(infos.iter().all(|i| i.solver == "lcp/pgs" || i.solver == "lcp/jade"));
    let last = states.last().unwrap();
    let mut worst_pen: f64 = 0.0;
    for s in &states {
        for k in 0..3 {
            let z = s.q[7 * k + 2];
            let floor = if k == 0 { 0.1 } else { s.q[7 * (k - 1) + 2] + 0.2 };
            worst_pen = worst_pen.max(floor - z);
        }
    }
    let drift = (0..3).map(|k| last.q[7 * k].abs() + last.q[7 * k + 1].abs()).fold(0.0, f64::max);
    let tilt = (0..3).map(|k| last.q[7 * k + 4].abs() + last.q[7 * k + 5].abs()).fold(0.0, f64::max);
    let speed = last.v.iter().fold(0.0f64, |a, v| a.max(v.abs()));
    eprintln!("stack: penetration ≤ {worst_pen:.2e} m, drift {drift:.1e} m, tilt {tilt:.1e}, |v| {speed:.1e}");
    // CCD lands the boxes exactly; the stalled PGS answers (tolerance 1e-9) leave ~1e-9 m/s
    assert!(drift < 1e-8 && tilt < 1e-8 && speed < 1e-8);
    // CCD (default): the landings are found at their times of impact, no penetration beyond the root tolerance
    // (DCD: up to Δt |v_z| of the step before, the parallel update's overshoot, docs/decisions.md spec 004 D1)
    assert!(worst_pen <= 1e-9, "penetration {worst_pen:e}");
}

/// The two position updates (D1): parallel moves with the pre-step velocity, semi-implicit with the new one.
#[test]
fn position_update_options() {
    let m = ball_on_slide(0.0);
    let dm = DynModel::<f64>::from_model(&m).unwrap();
    let (mut q1, mut v1) = (vec![0.0], vec![0.0]);
    advance(&dm, PositionUpdate::Parallel, &[1.0], &[2.0], &[3.0], 0.1, &mut q1, &mut v1);
    assert!((q1[0] - 1.2).abs() < 1e-15 && v1[0] == 3.0);
    advance(&dm, PositionUpdate::SemiImplicit, &[1.0], &[2.0], &[3.0], 0.1, &mut q1, &mut v1);
    assert!((q1[0] - 1.3).abs() < 1e-15 && v1[0] == 3.0);
}

/// No valid LCP answer is a reported error, never a frictionless step: the same stack with the chain cut to Jade's
/// Dantzig alone (no PGS) stops at the first LCP Jade cannot answer with `SolverError::NoSolution`, naming the
/// LCP and the attempt.
#[test]
fn invalid_lcp_is_a_reported_error() {
    let m = three_box_stack();
    let mut o = LcpOptions::default();
    o.chain.pgs = None;
    let solver = LcpSolver::new(o);
    let mut ws = Solver::workspace(&solver, &m).unwrap();
    let mut s = GenState::new(m.qpos0.clone(), vec![0.0; m.nv()]);
    let u = Control::zeros(m.nv());
    let mut err = None;
    for _ in 0..300 {
        let mut out = s.clone();
        match solver.step(&m, &s, &u, 0.01, &mut out, &mut ws, None) {
            Ok(_) => s = out,
            Err(e) => {
                err = Some(e);
                break;
            }
        }
    }
    let e = err.expect("Jade's Dantzig alone fails on some LCP of the stack");
    let msg = e.to_string();
    eprintln!("{msg}");
    assert!(matches!(e, torsion_solvers::SolverError::NoSolution { solver: "lcp", .. }));
    assert!(msg.contains("step LCP") && msg.contains("JadeDantzig"), "{msg}");
}

/// `step_vjp` through `torsion_diff::rollout_vjp`: a ball (μ 0.4, ε 0.5 on the ball, floor lower) thrown at the
/// floor while moving sideways with backspin (sliding) bounces three times in 25 steps of 10 ms; ∂(x_T + z_T)/∂(v0, u_3, μ, ε) against
/// central differences of the rollout.
#[test]
fn rollout_gradient_matches_finite_differences() {
    let mut m = mjcf(
        r#"<mujoco><worldbody><geom name="floor" type="plane" size="50 50 0.1" friction="0.2"/>
        <body name="ball"><freejoint/><geom name="ball" type="sphere" size="0.1" mass="1" friction="0.4"/></body>
        </worldbody></mujoco>"#,
    );
    m.param_set_by_name("shape_restitution[ball]", 0.5).unwrap();
    let sel = ParamSelection::by_names(&m, &["shape_friction[ball]", "shape_restitution[ball]"]).unwrap();
    let solver = LcpSolver::default();
    let (dt, steps) = (0.01, 25);
    let s0 = GenState::new(vec![0.0, 0.0, 0.13, 1.0, 0.0, 0.0, 0.0], vec![0.0, -40.0, 0.0, 1.5, 0.2, -1.0]);
    let controls: Vec<Control> =
        (0..steps).map(|t| Control::from_torques(&[0.0, 0.0, 0.0, 0.2 + 0.01 * t as f64, 0.0, 0.0])).collect();
    let loss = |mm: &Model, s0: &GenState, c: &[Control]| {
        let last = &torsion_diff::rollout(&solver, mm, s0, c, dt).unwrap()[steps];
        last.q[0] + last.q[2]
    };
    let states = torsion_diff::rollout(&solver, &m, &s0, &controls, dt).unwrap();
    let mut ws = Solver::workspace(&solver, &m).unwrap();
    let mut bounces = 0;
    for (t, s) in states[..steps].iter().enumerate() {
        let mut o = s.clone();
        solver.step(&m, s, &controls[t], dt, &mut o, &mut ws, None).unwrap();
        bounces += ws.tape.iter().filter(|g| g.g.impact.is_some() || g.f.impact.is_some()).count();
    }
    let g = torsion_diff::rollout_vjp(&solver, &m, &states, &controls, dt, &sel, |t, _, gs: &mut GenState| {
        if t == steps {
            gs.q[0] += 1.0;
            gs.q[2] += 1.0;
        }
    })
    .unwrap();
    let h = 1e-6;
    let mut worst: f64 = 0.0;
    for k in [3, 5] {
        let (mut sp, mut sm) = (s0.clone(), s0.clone());
        sp.v[k] += h;
        sm.v[k] -= h;
        let fd = (loss(&m, &sp, &controls) - loss(&m, &sm, &controls)) / (2.0 * h);
        worst = worst.max((g.g_s0.v[k] - fd).abs() / fd.abs().max(1.0));
    }
    let (mut cp, mut cm) = (controls.clone(), controls.clone());
    cp[3].joint_torque[3] += h;
    cm[3].joint_torque[3] -= h;
    let fd = (loss(&m, &s0, &cp) - loss(&m, &s0, &cm)) / (2.0 * h);
    worst = worst.max((g.g_u[3][3] - fd).abs() / fd.abs().max(1.0));
    for (i, name) in ["shape_friction[ball]", "shape_restitution[ball]"].iter().enumerate() {
        let v = m.params_get(&ParamSelection::by_names(&m, &[*name]).unwrap())[0];
        let (mut mp, mut mm) = (m.clone(), m.clone());
        mp.param_set_by_name(name, v + h).unwrap();
        mm.param_set_by_name(name, v - h).unwrap();
        let fd = (loss(&mp, &s0, &controls) - loss(&mm, &s0, &controls)) / (2.0 * h);
        eprintln!("∂L/∂{name}: {} vs FD {fd}", g.g_theta[i]);
        worst = worst.max((g.g_theta[i] - fd).abs() / fd.abs().max(1.0));
    }
    eprintln!("rollout gradient ({bounces} impact steps): worst relative error vs FD {worst:.1e}");
    assert!(bounces >= 2, "{bounces} impacts");
    assert!(worst < 1e-6, "{worst:e}");
}

/// Bad input to the stepper is an error naming what is wrong, never a panic: a state of the wrong size, a
/// non-positive or non-finite Δt, a non-finite velocity.
#[test]
fn stepper_bad_inputs_are_errors() {
    let m = box_on_plane(0.5);
    let solver = torsion_solvers::LcpSolver::default();
    let mut ws = Solver::workspace(&solver, &m).unwrap();
    let u = Control::zeros(6);
    let good = box_state(1.0);
    let mut out = good.clone();
    let mut short = good.clone();
    short.q.pop();
    let mut nan = good.clone();
    nan.v[3] = f64::NAN;
    for (s, dt, what) in
        [(&short, 0.01, "nq"), (&good, 0.0, "time step"), (&good, f64::NAN, "time step"), (&nan, 0.01, "not finite")]
    {
        let e = solver.step(&m, s, &u, dt, &mut out, &mut ws, None).unwrap_err();
        assert!(matches!(e, torsion_solvers::SolverError::BadInput { solver: "lcp", .. }), "{e}");
        assert!(e.to_string().contains(what), "{e}");
    }
}

// ---- CCD / time-of-impact backtracking (issue 17 items 3, 4; spec 004 §3.5, §3.7, §3.8) ----

/// Golden test (issue 17, spec §3.8) with CCD: the ball of `golden_ball_mid_step_impact_without_ccd` (gap d = 5 mm,
/// 1 m/s, Δt = 10 ms) strikes the floor at t* = d/u mid-step. Elastic: q_{t+1} = r + (Δt − t*) u, so
/// dq_{t+1}/dd = −1 (DCD: +1), dq_{t+1}/dv_t = −Δt, dv_{t+1}/dd = 0, dv_{t+1}/dv_t = −1; plastic: it stops at the
/// floor, q_{t+1} = r, all four 0. Exact to 1e-8, and against central differences of the step.
#[test]
fn golden_ball_mid_step_impact_with_ccd() {
    let (d, u, dt) = (0.005, 1.0, 0.01);
    for eps in [1.0, 0.0] {
        let m = ball_on_slide(eps);
        let solver = LcpSolver::default();
        let s = GenState::new(vec![0.1 + d], vec![-u]);
        let mut ws = Solver::workspace(&solver, &m).unwrap();
        let mut next = s.clone();
        solver.step(&m, &s, &Control::zeros(1), dt, &mut next, &mut ws, None).unwrap();
        assert_eq!(ws.tape.len(), 2, "one impact: two sub-steps");
        assert!((ws.tape[0].h - d / u).abs() < 1e-12, "t* = {} (d/u = {})", ws.tape[0].h, d / u);
        let jac = solver.step_jacobians(&m, &s, &Control::zeros(1), dt, &ParamSelection::none()).unwrap();
        eprintln!("CCD ball ε = {eps}: q⁺ {:.9}, v⁺ {:.9}, A = {}", next.q[0], next.v[0], jac.a);
        let want = if eps == 1.0 {
            assert!((next.q[0] - (0.1 + (dt - d / u) * u)).abs() < 1e-12 && (next.v[0] - u).abs() < 1e-12);
            [[-1.0, -dt], [0.0, -1.0]]
        } else {
            assert!((next.q[0] - 0.1).abs() < 1e-12 && next.v[0].abs() < 1e-12, "{:?}", next);
            [[0.0; 2]; 2]
        };
        for (r, row) in want.iter().enumerate() {
            for (c, w) in row.iter().enumerate() {
                assert!((jac.a[(r, c)] - w).abs() < 1e-8, "A[{r},{c}] = {} (want {w})", jac.a[(r, c)]);
            }
        }
        let h = 1e-6;
        for c in 0..2 {
            let mut step = |sign: f64| {
                let mut x = s.clone();
                if c == 0 {
                    x.q[0] += sign * h;
                } else {
                    x.v[0] += sign * h;
                }
                let mut o = x.clone();
                solver.step(&m, &x, &Control::zeros(1), dt, &mut o, &mut ws, None).unwrap();
                o
            };
            let (p, q) = (step(1.0), step(-1.0));
            for (r, fd) in [(p.q[0] - q.q[0]) / (2.0 * h), (p.v[0] - q.v[0]) / (2.0 * h)].into_iter().enumerate() {
                assert!(
                    (fd - jac.a[(r, c)]).abs() < 1e-6 * fd.abs().max(1.0),
                    "A[{r},{c}] {} vs FD {fd}",
                    jac.a[(r, c)]
                );
            }
        }
    }
}

/// Golden test (issue 17, Nimble issue #97) with CCD: two equal balls, elastic head-on, x1 = 0, x2 = 0.2155,
/// v0 = 1, u0 = 0, T = 1 s in 100 steps of 10 ms (impact at t = 15.5 ms, mid-step). The chained step Jacobians give
/// ∂x2_f/∂(x1, x2, v0, u0) = (1, 0, 1, 0) (Nimble: (0.75, 0.25, 0.9175, 0.0825)), ∂x1_f = (0, 1, 0, 1),
/// ∂(v1, v2)_f = ((0, 0, 0, 1), (0, 0, 1, 0)), exact to 1e-8; against central differences of the rollout.
#[test]
fn golden_two_balls_elastic_head_on_with_ccd() {
    let (dt, steps) = (0.01, 100);
    let m = two_balls(1.0);
    let solver = LcpSolver::default();
    let rollout = |x: [f64; 4]| run(&solver, &m, &GenState::new(vec![x[0], x[1]], vec![x[2], x[3]]), dt, steps).0;
    let x0 = [0.0, 0.2155, 1.0, 0.0];
    let states = rollout(x0);
    let last = states.last().unwrap();
    assert!(last.v[0].abs() < 1e-12 && (last.v[1] - 1.0).abs() < 1e-12, "velocities {:?}", last.v);
    assert!((last.q[0] - 0.0155).abs() < 1e-12 && (last.q[1] - 1.2).abs() < 1e-12, "positions {:?}", last.q);
    let sens = chained_sensitivity(&solver, &m, &states[..steps], dt);
    eprintln!("two balls (CCD): ∂(x1, x2, v1, v2)_f/∂(x1, x2, v0, u0) =\n{sens}");
    let want = [[0.0, 1.0, 0.0, 1.0], [1.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0, 0.0]];
    for (r, row) in want.iter().enumerate() {
        for (c, w) in row.iter().enumerate() {
            assert!((sens[(r, c)] - w).abs() < 1e-8, "∂x_f[{r}]/∂x0[{c}] = {}", sens[(r, c)]);
        }
    }
    let h = 1e-7;
    for c in 0..4 {
        let (mut p, mut q) = (x0, x0);
        p[c] += h;
        q[c] -= h;
        let (a, b) = (rollout(p), rollout(q));
        let fd = (a.last().unwrap().q[1] - b.last().unwrap().q[1]) / (2.0 * h);
        assert!((fd - sens[(1, c)]).abs() < 1e-6 * fd.abs().max(1.0), "∂x2_f/∂x0[{c}]: {} vs FD {fd}", sens[(1, c)]);
    }
}

/// A tilted free box (μ 0.4, ε 0.3) dropping at 3 m/s with 2 cm to go (g = 9.81, Δt = 10 ms): its lowest corner
/// strikes the plane mid-step (box–plane TOI along the rotating path). No penetration beyond the root tolerance,
/// and the step's A, B, C (μ, ε, mass) against central differences (≤ 1e-6).
#[test]
fn tilted_box_strikes_the_plane_mid_step() {
    let mut m = mjcf(
        r#"<mujoco><worldbody><geom type="plane" size="5 5 0.1" friction="0.2"/>
        <body name="box"><freejoint/><geom name="box" type="box" size="0.1 0.15 0.05" mass="1.5" friction="0.4"/></body>
        </worldbody></mujoco>"#,
    );
    m.param_set_by_name("shape_restitution[box]", 0.3).unwrap();
    let sel =
        ParamSelection::by_names(&m, &["shape_friction[box]", "shape_restitution[box]", "body_mass[box]"]).unwrap();
    let rot = torsion_math::Quat::exp(&Vec3::new(0.3, 0.2, 0.1));
    let lowest = [-1.0, 1.0]
        .iter()
        .flat_map(|&a| [-1.0, 1.0].map(move |b| (a, b)))
        .flat_map(|(a, b)| [-1.0, 1.0].map(move |c| rot.rotate(&Vec3::new(0.1 * a, 0.15 * b, 0.05 * c)).z))
        .fold(f64::INFINITY, f64::min);
    let s = GenState::new(
        vec![0.0, 0.0, 0.02 - lowest, rot.w, rot.v.x, rot.v.y, rot.v.z],
        vec![0.5, -0.3, 0.2, 0.4, 0.1, -3.0],
    );
    let solver = LcpSolver::default();
    let mut ws = Solver::workspace(&solver, &m).unwrap();
    let mut next = s.clone();
    solver.step(&m, &s, &Control::zeros(6), 0.01, &mut next, &mut ws, None).unwrap();
    let toi: f64 = ws.tape.iter().filter(|g| g.toi.is_some()).map(|g| g.h).sum();
    eprintln!("tilted box: {} sub-steps, first TOI at {:.6} s", ws.tape.len(), ws.tape[0].h);
    assert!(ws.tape.len() >= 2 && toi < 0.01);
    let mut world = torsion_collision::CollisionWorld::new(&m, Default::default()).unwrap();
    let poses = m.forward_kinematics(&next.q).unwrap();
    let mut c = torsion_collision::Contacts::default();
    world.detect(&poses, &mut c).unwrap();
    let depth = c.contacts.iter().map(|c| -c.distance).fold(0.0, f64::max);
    assert!(depth < 1e-9, "penetration {depth:e}");
    let (e, n) = jacobians_vs_fd(&solver, &m, &s, &[0.1, 0.0, -0.2, 0.5, 0.0, 1.0], &sel, 0.01);
    eprintln!("tilted box: A {:.1e}, B {:.1e}, C {:.1e} ({n} parameters)", e[0], e[1], e[2]);
    assert!(e.iter().all(|&x| x < 1e-6), "{e:?}");
}

/// (A, B, C) of `step_jacobians` against central differences of `Solver::step` (h = 1e-5: detection's rounding,
/// ~1e-12 m, would show at 1e-6 through 1/h): the worst relative
/// error max |an − fd| / max(1, max |fd|) per block, and the number of parameters.
fn jacobians_vs_fd(
    solver: &LcpSolver,
    m: &Model,
    s: &GenState,
    u: &[f64],
    sel: &ParamSelection,
    dt: f64,
) -> ([f64; 3], usize) {
    let jac = solver.step_jacobians(m, s, &Control::from_torques(u), dt, sel).unwrap();
    let next = |mm: &Model, st: &GenState, uu: &[f64]| {
        let mut ws = Solver::workspace(solver, mm).unwrap();
        let mut o = st.clone();
        solver.step(mm, st, &Control::from_torques(uu), dt, &mut o, &mut ws, None).unwrap();
        o
    };
    let base = next(m, s, u);
    let (n, nv, ns, h) = (2 * m.nv(), m.nv(), sel.len(), 1e-5);
    let mut worst = [0.0f64; 3];
    let mut fdm = [nalgebra::DMatrix::zeros(n, n), nalgebra::DMatrix::zeros(n, nv), nalgebra::DMatrix::zeros(n, ns)];
    for (blk, cols) in [n, nv, ns].into_iter().enumerate() {
        for col in 0..cols {
            // the state (tangent), control or parameter `col` of block `blk` moved by ± h
            let side = |sign: f64| match blk {
                0 => {
                    let mut d = vec![0.0; n];
                    d[col] = sign * h;
                    next(m, &solver.retract(m, s, &d), u)
                }
                1 => {
                    let mut uu = u.to_vec();
                    uu[col] += sign * h;
                    next(m, s, &uu)
                }
                _ => {
                    let mut mm = m.clone();
                    let mut vals = m.params_get(sel);
                    vals[col] += sign * h;
                    mm.params_set(sel, &vals).unwrap();
                    next(&mm, s, u)
                }
            };
            let (p, q) = (solver.local_diff(m, &base, &side(1.0)), solver.local_diff(m, &base, &side(-1.0)));
            for r in 0..n {
                fdm[blk][(r, col)] = (p[r] - q[r]) / (2.0 * h);
            }
        }
    }
    for (b, an) in [&jac.a, &jac.b, &jac.c].into_iter().enumerate() {
        if !an.is_empty() {
            worst[b] = (an - &fdm[b]).amax() / fdm[b].amax().max(1.0);
        }
    }
    (worst, ns)
}

/// A ball (r = 5 cm, ε = 1) at 10 m/s towards a fixed plate 2 mm thick, 3 cm away (beyond the detection margin),
/// Δt = 10 ms (a step travels 10 cm): with CCD it bounces off the plate (no penetration beyond 1e-9 m in 20 steps);
/// with DCD it tunnels (ends beyond the plate).
#[test]
fn fast_ball_does_not_tunnel_through_a_thin_plate() {
    let mut m = mjcf(
        r#"<mujoco><option gravity="0 0 0"/><worldbody>
        <geom type="box" pos="0.081 0 0" size="0.001 0.5 0.5" friction="0"/>
        <body><joint type="slide" axis="1 0 0"/><geom type="sphere" size="0.05" mass="1" friction="0"/></body>
        </worldbody></mujoco>"#,
    );
    m.shapes.iter_mut().for_each(|s| s.restitution = 1.0);
    let s0 = GenState::new(vec![0.0], vec![10.0]);
    let (ccd, _) = run(&LcpSolver::default(), &m, &s0, 0.01, 20);
    let worst = ccd.iter().map(|s| s.q[0] + 0.05 - 0.080).fold(f64::NEG_INFINITY, f64::max);
    eprintln!("thin plate: CCD deepest {worst:.2e} m, final x {:.4} v {:.4}", ccd[20].q[0], ccd[20].v[0]);
    assert!(worst < 1e-9, "penetration {worst:e}");
    assert!((ccd[20].v[0] + 10.0).abs() < 1e-9 && ccd[20].q[0] < 0.0);
    let (dcd_states, _) = run(&dcd(), &m, &s0, 0.01, 20);
    eprintln!("thin plate: DCD final x {:.4} v {:.4}", dcd_states[20].q[0], dcd_states[20].v[0]);
    assert!(dcd_states[20].q[0] > 0.082, "DCD tunnels");
}

/// Several impacts in one step (D6): a ball (ε = 1) between two fixed walls 4 mm wider than its diameter at 1 m/s,
/// Δt = 10 ms (2.5 wall-to-wall crossings per step): up to `max_impacts` impacts per step, no penetration beyond the
/// root tolerance, the speed kept; with the cap at 1, the rest of a step is DCD (penetration up to a step's travel).
#[test]
fn several_impacts_per_step() {
    let mut m = mjcf(
        r#"<mujoco><option gravity="0 0 0"/><worldbody>
        <geom type="box" pos="-0.152 0 0" size="0.05 0.5 0.5" friction="0"/>
        <geom type="box" pos="0.152 0 0" size="0.05 0.5 0.5" friction="0"/>
        <body><joint type="slide" axis="1 0 0"/><geom type="sphere" size="0.1" mass="1" friction="0"/></body>
        </worldbody></mujoco>"#,
    );
    m.shapes.iter_mut().for_each(|s| s.restitution = 1.0);
    let s0 = GenState::new(vec![0.0], vec![1.0]);
    let solver = LcpSolver::default();
    let mut ws = Solver::workspace(&solver, &m).unwrap();
    let (mut s, mut most, mut worst) = (s0.clone(), 0, 0.0f64);
    for _ in 0..20 {
        let mut o = s.clone();
        solver.step(&m, &s, &Control::zeros(1), 0.01, &mut o, &mut ws, None).unwrap();
        most = most.max(ws.tape.iter().filter(|g| g.toi.is_some()).count());
        worst = worst.max(o.q[0].abs() - 0.002);
        s = o;
    }
    eprintln!("walls: at most {most} impacts in a step, deepest {worst:.2e} m, |v| {}", s.v[0].abs());
    assert!(most >= 2 && worst < 1e-9 && (s.v[0].abs() - 1.0).abs() < 1e-9);
}

/// contact-compare's stack (issue 17 item 7): three 1 kg cubes (half size 0.1 m, μ 0.16) on the floor, the top one
/// launched at 0.5 m/s along x and sliding to rest on the middle one (Δt = 10 ms, 1 s). With CCD no contact
/// penetrates deeper than the thin-plate bound 1e-4 m (jade-thin-plate's target; ncp: 8e-5 m), measured by a
/// detection after every step (1.4e-7 m; 8.4e-4 m before the speculative rows of a touching pair, D5: the middle
/// cube, rocked by the top one, sank the corners it had lifted into the bottom one).
#[test]
fn sliding_top_cube_of_a_stack_does_not_penetrate() {
    let body = |z: f64| {
        format!(
            r#"<body pos="0 0 {z}"><freejoint/><geom type="box" size="0.1 0.1 0.1" mass="1" friction="0.16"/></body>"#
        )
    };
    let m = mjcf(&format!(
        r#"<mujoco><worldbody><geom type="plane" size="50 50 0.1" friction="0.16"/>{}{}{}</worldbody></mujoco>"#,
        body(0.1),
        body(0.3),
        body(0.5)
    ));
    let mut s0 = GenState::new(m.qpos0.clone(), vec![0.0; m.nv()]);
    s0.v[15] = 0.5;
    let solver = LcpSolver::default();
    let (mut ws, mut probe) = (Solver::workspace(&solver, &m).unwrap(), Solver::workspace(&solver, &m).unwrap());
    let (mut s, u, mut worst) = (s0.clone(), Control::zeros(m.nv()), 0.0f64);
    for _ in 0..100 {
        let mut o = s.clone();
        solver.step(&m, &s, &u, 0.01, &mut o, &mut ws, None).unwrap();
        solver.detect(&m, &mut probe, &o.q, &Default::default()).unwrap();
        let deepest = probe.frames.iter().map(|c| -c.distance).fold(0.0, f64::max);
        worst = worst.max(deepest);
        s = o;
    }
    let travel = s.q[14] - s0.q[14];
    eprintln!(
        "stack: deepest {worst:.2e} m, top cube travel {travel:.4} m (v0²/(2μg) = {:.4})",
        0.25 / (2.0 * 0.16 * 9.81)
    );
    assert!(worst <= 1e-4, "penetration {worst:e}");
}

/// PGS's active-set polish (`polish_into`, docs/decisions.md D7a): a box resting on its four corners (a redundant,
/// rank-deficient A), PGS stopped at a sweep count where its natural-map residual is inside the validity tolerance
/// but above its own: one polish lands on an exact answer of the same classes (residual ≤ the tolerance, valid,
/// `polished`, the box at rest). A stop outside the validity tolerance is not polished, and a converged answer is
/// left alone.
#[test]
fn pgs_polish_finishes_a_stall_on_redundant_corners() {
    let (pre, lcp) = box_on_four_corners(0.0);
    let mut sc = PgsScratch::default();
    let mut polished_one = false;
    for sweeps in 1..40 {
        let o = PgsOptions { max_sweeps: sweeps, tol: 1e-13, ..Default::default() };
        let mut sol = solve_pgs(&lcp, &o, None);
        let residual = match sol.failure {
            Some(LcpFailure::NotConverged { residual }) => residual,
            _ => {
                assert!(!polish_into(&lcp, &o, &mut sc, &mut sol), "a converged answer is not polished");
                continue;
            }
        };
        let inside = residual <= o.validity_tol * lcp.scale();
        let done = polish_into(&lcp, &o, &mut sc, &mut sol);
        if !inside {
            assert!(!done && !sol.polished, "{sweeps} sweeps: residual {residual:e} is outside the validity tolerance");
            continue;
        }
        assert!(done && sol.ok() && sol.polished, "{sweeps} sweeps (residual {residual:e}): {:?}", sol.validity);
        let after = natural_residual(&lcp, &sol.lambda);
        let (ln, lt) = split_impulses(&sol.lambda);
        let vplus = apply_impulses(&pre, &ln, &lt);
        let speed = vplus.iter().fold(0.0f64, |a, x| a.max(x.abs()));
        eprintln!("{sweeps} sweeps: PGS residual {residual:.2e}, polished {after:.2e}, |v⁺| {speed:.1e}");
        assert!(after <= o.tol * lcp.scale(), "{sweeps} sweeps: polished residual {after:e}");
        assert!(speed < 1e-12, "the box moves: {vplus:?}");
        polished_one = true;
    }
    assert!(polished_one, "no PGS stop inside the validity tolerance was polished");
}

/// D7a in the chain (`ChainOptions::stall_every`): PGS runs in pieces between its stall checks, continuing from its
/// iterate, so where PGS converges the pieces change nothing, bit for bit (a sliding box on four corners, Jade's
/// Dantzig made to fail; the stall handed to the polish: `lcp::stepper`'s `pgs_stalls_go_to_the_polish_at_once`).
#[test]
fn chain_pgs_in_runs_is_pgs_in_one_run() {
    let jade = JadeOptions { loop_factor: 0, ..Default::default() };
    let pgs = PgsOptions { max_sweeps: 20_000, tol: 1e-13, ..Default::default() };
    let (_, lcp) = box_on_four_corners(1.0);
    let chain = |every| {
        solve_chain(&lcp, &ChainOptions { jade, pgs: Some(pgs), stall_every: every, ..Default::default() }).unwrap()
    };
    let (one, runs) = (chain(0).solution, chain(7).solution);
    assert_eq!(one.solver, LcpSolverKind::Pgs, "Jade's Dantzig was to fail");
    assert!(one.iterations > 7 * 3, "{} sweeps: too few for runs", one.iterations);
    assert!(
        !one.polished && !runs.polished && one.iterations == runs.iterations,
        "{} / {}",
        one.iterations,
        runs.iterations
    );
    assert_eq!(one.lambda, runs.lambda);
}
