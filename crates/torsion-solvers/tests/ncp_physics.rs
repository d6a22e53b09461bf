//! Physics of the staggered-projection contact step (spec 001 §4 "extra verification tests"): a sliding block
//! decelerates by μgΔt per step, the stopping distance does not depend on the sliding direction with the exact
//! cone (and does with the box pyramid), a block on an incline sticks iff tan θ ≤ μ, Newton restitution
//! J_n v⁺ = −ε J_n v, a two-body impact conserves momentum, and v⁺ is unique under different warm starts.
//! Contacts are the box's corners on the plane z = 0 (collision detection is tested in torsion-collision).
mod common;
use common::{floor_frame, free_boxes};
use torsion_math::Vec3;
use torsion_model::Model;
use torsion_solvers::contact::{ContactGeom, ContactStep};
use torsion_solvers::ncp::{ContactFrame, FrictionSet, NcpOptions, NcpSolver};
use torsion_solvers::GenState;

const HE: f64 = 0.1;
const MASS: f64 = 2.0;
const DT: f64 = 0.01;

/// A world and `n` free boxes of half-extent HE.
fn boxes(n: usize, gravity: Vec3) -> Model {
    free_boxes(n, gravity, DT, HE, |_| MASS)
}

/// q, v of box k (free joint: position, quaternion w-first; velocity (ω, v) in the body frame).
fn state(poses: &[(Vec3, Vec3)]) -> GenState {
    let mut q = vec![];
    let mut v = vec![];
    for (x, vel) in poses {
        q.extend_from_slice(&[x.x, x.y, x.z, 1.0, 0.0, 0.0, 0.0]);
        v.extend_from_slice(&[0.0, 0.0, 0.0, vel.x, vel.y, vel.z]);
    }
    GenState::new(q, v)
}

/// The corners of box `k` (body k + 1) at or below the plane z = 0 (within 1e-9), as contacts with the world.
fn floor_contacts(m: &Model, s: &GenState, k: usize, mu: f64) -> Vec<ContactFrame> {
    let poses = m.forward_kinematics(&s.q).unwrap();
    let (x, r) = poses[k + 1];
    let mut out = vec![];
    for (i, c) in [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)].iter().enumerate() {
        for sz in [-1.0, 1.0] {
            let p = x + r.rotate(&Vec3::new(c.0 * HE, c.1 * HE, sz * HE));
            if p.z <= 1e-9 {
                out.push(floor_frame(k + 1, p, mu, 0.0, (10 * k + 2 * i) as u64 + (sz > 0.0) as u64));
            }
        }
    }
    out
}

fn linear_velocity(m: &Model, s: &GenState, k: usize) -> Vec3 {
    let (_, r) = m.forward_kinematics(&s.q).unwrap()[k + 1];
    r.rotate(&Vec3::new(s.v[6 * k + 3], s.v[6 * k + 4], s.v[6 * k + 5]))
}

/// Slide until stopped (or `steps`), returning (distance travelled, steps taken, max residuals).
fn slide(opts: NcpOptions, mu: f64, dir: f64, steps: usize) -> (f64, usize, f64) {
    // the staggered passes run to convergence (the stopping step switches sliding → sticking)
    let opts = NcpOptions { n_step: 200, tolerance: 1e-13, ..opts };
    let m = boxes(1, Vec3::new(0.0, 0.0, -9.81));
    let solver = NcpSolver::new(opts);
    let mut ws = solver.contact_workspace(&m).unwrap();
    let mut s = state(&[(Vec3::new(0.0, 0.0, HE), Vec3::new(dir.cos(), dir.sin(), 0.0))]);
    let mut out = s.clone();
    let mut worst: f64 = 0.0;
    for n in 0..steps {
        let c = floor_contacts(&m, &s, 0, mu);
        let rep = solver.step_with_contacts(&ContactStep::new(&m, &s, &[0.0; 6], DT, &c), &mut ws, &mut out).unwrap();
        worst = worst.max(rep.residuals.signorini).max(rep.residuals.cone).max(rep.residuals.mdp_sliding);
        std::mem::swap(&mut s, &mut out);
        if linear_velocity(&m, &s, 0).norm() < 1e-12 {
            return (s.q[0].hypot(s.q[1]), n + 1, worst);
        }
    }
    (s.q[0].hypot(s.q[1]), steps, worst)
}

#[test]
fn sliding_block_decelerates_by_mu_g_dt() {
    let (mu, g) = (0.3, 9.81);
    let m = boxes(1, Vec3::new(0.0, 0.0, -g));
    let solver = NcpSolver::default();
    let mut ws = solver.contact_workspace(&m).unwrap();
    let mut s = state(&[(Vec3::new(0.0, 0.0, HE), Vec3::new(1.0, 0.0, 0.0))]);
    let mut out = s.clone();
    for step in 1..=10 {
        let c = floor_contacts(&m, &s, 0, mu);
        assert_eq!(c.len(), 4);
        let rep = solver.step_with_contacts(&ContactStep::new(&m, &s, &[0.0; 6], DT, &c), &mut ws, &mut out).unwrap();
        std::mem::swap(&mut s, &mut out);
        let v = linear_velocity(&m, &s, 0);
        let expect = (1.0 - step as f64 * mu * g * DT).max(0.0);
        assert!((v.x - expect).abs() < 1e-8, "step {step}: v {} vs {expect}", v.x);
        assert!(v.z.abs() < 1e-9 && v.y.abs() < 1e-9, "{v:?}");
        assert!(s.v[..3].iter().all(|w| w.abs() < 1e-8), "no tipping: ω {:?}", &s.v[..3]);
        let r = &rep.residuals;
        assert!(r.signorini < 1e-9 && r.cone < 1e-12 && r.mdp_sliding < 1e-9, "{r:?}");
        assert!(rep.qp.iter().chain(&rep.qcqp).all(|i| i.converged));
    }
}

#[test]
fn stopping_distance_is_isotropic_with_the_cone() {
    let mu = 0.4;
    let d: Vec<(f64, usize, f64)> = [0.0, std::f64::consts::PI / 8.0, std::f64::consts::PI / 4.0]
        .iter()
        .map(|&a| slide(NcpOptions::default(), mu, a, 200))
        .collect();
    let expect = 1.0 / (2.0 * mu * 9.81);
    for (dist, n, res) in &d {
        assert!(*n < 200 && *res < 1e-8, "stopped {n}, residual {res}");
        // semi-implicit Euler: Σ Δt v_k over the steps (within one step's travel of v²/2μg)
        assert!((dist - expect).abs() < 1.0 * DT, "distance {dist} vs {expect}");
        assert!((dist - d[0].0).abs() < 1e-9, "direction dependence {dist} vs {}", d[0].0);
    }
    // the box pyramid is anisotropic: at π/4 its friction is √2 larger (spec 001 Fig. 5)
    let boxp = NcpOptions { friction_set: FrictionSet::BoxPyramid, ..Default::default() };
    let (d0, _, _) = slide(boxp.clone(), mu, 0.0, 200);
    let (d45, _, _) = slide(boxp, mu, std::f64::consts::PI / 4.0, 200);
    assert!((d0 - d[0].0).abs() < 1e-9, "box pyramid along an axis = cone");
    assert!(d45 < 0.75 * d0, "box pyramid at π/4: {d45} vs {d0}");
}

#[test]
fn incline_sticks_iff_tan_theta_below_mu() {
    let mu: f64 = 0.5;
    for (ratio, sticks) in [(0.9, true), (1.1, false)] {
        let th = (ratio * mu).atan();
        let g = 9.81;
        // a tilted gravity is the incline (the plane stays z = 0)
        let m = boxes(1, Vec3::new(g * th.sin(), 0.0, -g * th.cos()));
        let solver = NcpSolver::new(NcpOptions { n_step: 200, tolerance: 1e-13, ..Default::default() });
        let mut ws = solver.contact_workspace(&m).unwrap();
        let mut s = state(&[(Vec3::new(0.0, 0.0, HE), Vec3::zeros())]);
        let mut out = s.clone();
        for _ in 0..20 {
            let c = floor_contacts(&m, &s, 0, mu);
            solver.step_with_contacts(&ContactStep::new(&m, &s, &[0.0; 6], DT, &c), &mut ws, &mut out).unwrap();
            std::mem::swap(&mut s, &mut out);
        }
        let v = linear_velocity(&m, &s, 0);
        if sticks {
            assert!(v.norm() < 1e-9, "tan θ = {ratio} μ: should stick, v = {v:?}");
        } else {
            let a = g * (th.sin() - mu * th.cos());
            assert!((v.x - 20.0 * DT * a).abs() < 1e-8, "tan θ = {ratio} μ: v {} vs {}", v.x, 20.0 * DT * a);
        }
    }
}

#[test]
fn restitution_reverses_the_normal_velocity() {
    for eps in [0.0, 0.5, 1.0] {
        let m = boxes(1, Vec3::zeros());
        let solver = NcpSolver::new(NcpOptions::default());
        let mut ws = solver.contact_workspace(&m).unwrap();
        let s = state(&[(Vec3::new(0.0, 0.0, HE), Vec3::new(0.3, 0.0, -1.0))]);
        let mut out = s.clone();
        let mut c = floor_contacts(&m, &s, 0, 0.0);
        c.iter_mut().for_each(|f| f.restitution = eps);
        solver.step_with_contacts(&ContactStep::new(&m, &s, &[0.0; 6], DT, &c), &mut ws, &mut out).unwrap();
        let v = linear_velocity(&m, &out, 0);
        assert!((v.z - eps).abs() < 1e-9, "ε = {eps}: v_z⁺ = {}", v.z);
        assert!((v.x - 0.3).abs() < 1e-12, "frictionless: tangential velocity kept");
    }
}

#[test]
fn two_body_impact_conserves_momentum() {
    for eps in [0.0, 0.5, 1.0] {
        let m = boxes(2, Vec3::zeros());
        let solver = NcpSolver::new(NcpOptions::default());
        let mut ws = solver.contact_workspace(&m).unwrap();
        // box 0 at x = 0 moving +x at 1 m/s; box 1 touching it at x = 2 HE, at rest
        let s = state(&[
            (Vec3::new(0.0, 0.0, 1.0), Vec3::new(1.0, 0.0, 0.0)),
            (Vec3::new(2.0 * HE, 0.0, 1.0), Vec3::zeros()),
        ]);
        // face contact: 4 points on x = HE, normal from B (box 1) to A (box 0) = −x
        let c: Vec<ContactFrame> = [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)]
            .iter()
            .enumerate()
            .map(|(i, (y, z))| {
                ContactFrame::new(
                    ContactGeom {
                        body_a: 1,
                        body_b: 2,
                        point: Vec3::new(HE, y * HE, 1.0 + z * HE),
                        normal: -Vec3::x(),
                        tangents: [Vec3::y(), -Vec3::z()],
                        distance: 0.0,
                        mu: 0.2,
                        restitution: eps,
                    },
                    i as u64,
                )
            })
            .collect();
        let mut out = s.clone();
        solver.step_with_contacts(&ContactStep::new(&m, &s, &[0.0; 12], DT, &c), &mut ws, &mut out).unwrap();
        let (va, vb) = (linear_velocity(&m, &out, 0), linear_velocity(&m, &out, 1));
        let p = MASS * (va + vb);
        assert!((p - Vec3::new(MASS, 0.0, 0.0)).norm() < 1e-9, "ε = {eps}: momentum {p:?}");
        // Newton's law along the normal: relative normal velocity reversed by ε
        let rel = va.x - vb.x;
        assert!((rel + eps * 1.0).abs() < 1e-9, "ε = {eps}: relative velocity {rel}");
    }
}

/// A cube on its four corners (a rank-3 Delassus G_n: λ_n is not unique) under different warm starts: v⁺ is
/// unique when it sticks under a push below the friction limit (v⁺ = 0) and when it slides in translation (the
/// total friction μ Σλ_n does not depend on how λ_n is shared).
#[test]
fn resting_cube_velocity_is_unique_under_warm_starts() {
    let m = boxes(1, Vec3::new(0.0, 0.0, -9.81));
    // the passes drift slowly along G_n's null space: from some warm starts they need several hundred (which
    // ones depends on rounding: a 1e-15 relative change of G moves seeds across 200 passes); they stop at 1e-13
    let solver = NcpSolver::new(NcpOptions { n_step: 2000, tolerance: 1e-13, ..Default::default() });
    let mu = 0.6;
    // (initial velocity, body-frame wrench (torque, force)): sticking push (|F| = 5 N < μ m g = 11.8 N), sliding
    for (v0, u) in [(Vec3::zeros(), [0.0, 0.0, 0.0, 4.0, -3.0, 0.0]), (Vec3::new(0.5, -0.3, 0.0), [0.0; 6])] {
        let s = state(&[(Vec3::new(0.0, 0.0, HE), v0)]);
        let c = floor_contacts(&m, &s, 0, mu);
        let mut results: Vec<Vec<f64>> = vec![];
        for seed in 0..4u64 {
            let mut ws = solver.contact_workspace(&m).unwrap();
            let mut out = s.clone();
            let mut s = s.clone();
            if seed > 0 {
                // another warm start: the impulses of one step from another state (same contact ids)
                let s2 = state(&[(Vec3::new(0.0, 0.0, HE), Vec3::new(-0.3 * seed as f64, 0.4, -0.5))]);
                solver
                    .step_with_contacts(
                        &ContactStep::new(&m, &s2, &[0.0, 0.0, 1.0, 0.0, 0.0, 0.0], DT, &c),
                        &mut ws,
                        &mut out,
                    )
                    .unwrap();
                s.warm = out.warm.clone();
            }
            let rep = solver.step_with_contacts(&ContactStep::new(&m, &s, &u, DT, &c), &mut ws, &mut out).unwrap();
            let r = &rep.residuals;
            assert!(r.signorini < 1e-9 && r.mdp_sliding < 1e-9 && r.mdp_sticking < 1e-9, "{r:?}");
            results.push(out.v.clone());
        }
        if v0.norm() == 0.0 {
            assert!(results[0].iter().all(|x| x.abs() < 1e-9), "sticks: {:?}", results[0]);
        }
        for v in &results[1..] {
            let d = v.iter().zip(&results[0]).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
            assert!(d < 1e-9, "v⁺ depends on the warm start: {d:e}");
        }
    }
}

#[test]
fn bad_inputs_are_errors() {
    let m = boxes(1, Vec3::zeros());
    let solver = NcpSolver::default();
    let mut ws = solver.contact_workspace(&m).unwrap();
    let s = state(&[(Vec3::new(0.0, 0.0, HE), Vec3::zeros())]);
    let mut out = s.clone();
    assert!(solver.step_with_contacts(&ContactStep::new(&m, &s, &[0.0; 5], DT, &[]), &mut ws, &mut out).is_err());
    assert!(solver.step_with_contacts(&ContactStep::new(&m, &s, &[0.0; 6], -1.0, &[]), &mut ws, &mut out).is_err());
    let mut c = floor_contacts(&m, &s, 0, 0.5);
    c[0].mu = -1.0;
    assert!(solver.step_with_contacts(&ContactStep::new(&m, &s, &[0.0; 6], DT, &c), &mut ws, &mut out).is_err());
    c[0].mu = 0.5;
    c[0].body_a = 99;
    assert!(solver.step_with_contacts(&ContactStep::new(&m, &s, &[0.0; 6], DT, &c), &mut ws, &mut out).is_err());
}

const R: f64 = 0.05;

/// `n` equal frictionless balls (radius R, 1 kg, restitution ε), no gravity, stepped through the `Solver`
/// contract (collision detection with the default speculative margin 0.01 m).
fn balls(n: usize, eps: f64) -> Model {
    let mut xml = String::from(r#"<mujoco><option timestep="0.001" gravity="0 0 0"/><worldbody>"#);
    for k in 0..n {
        xml += &format!(
            r#"<body pos="{} 0 1"><freejoint/><geom type="sphere" size="{R}" mass="1" friction="0"/></body>"#,
            k as f64
        );
    }
    xml += "</worldbody></mujoco>";
    let mut m = torsion_model::io::mjcf::load_mjcf_str(&xml, "balls.xml", None).unwrap();
    m.shapes.iter_mut().for_each(|s| s.restitution = eps);
    m
}

/// Balls on the x axis at `x` with x-velocities `v`, `steps` steps of 1 ms: the final x-velocities.
fn collide(eps: f64, x: &[f64], v: &[f64], steps: usize) -> Vec<f64> {
    let m = balls(x.len(), eps);
    let s0 =
        state(&x.iter().zip(v).map(|(&x, &v)| (Vec3::new(x, 0.0, 1.0), Vec3::new(v, 0.0, 0.0))).collect::<Vec<_>>());
    let controls = vec![torsion_model::Control::zeros(m.nv()); steps];
    let solver = NcpSolver::new(NcpOptions::default());
    let states = torsion_diff::rollout(&solver, &m, &s0, &controls, 0.001).unwrap();
    let last = states.last().unwrap();
    (0..x.len()).map(|k| linear_velocity(&m, last, k).x).collect()
}

/// Two equal balls, head on at 1 m/s, first detected 5 mm apart (inside the margin, 5 steps before touching):
/// Newton's law J_n v⁺ = −ε J_n v from the approach velocity (before: the gap term absorbed the restitution,
/// (0.5, 0.5) at ε = 1).
#[test]
fn head_on_restitution_inside_the_margin() {
    for eps in [1.0, 0.5] {
        let v = collide(eps, &[0.0, 2.0 * R + 5e-3], &[1.0, 0.0], 40);
        let want = [(1.0 - eps) / 2.0, (1.0 + eps) / 2.0];
        assert!((v[0] - want[0]).abs() < 1e-9 && (v[1] - want[1]).abs() < 1e-9, "ε = {eps}: {v:?}, want {want:?}");
    }
}

/// Newton's cradle with 3 and 5 balls, ε = 1, 2.5 mm apart (all inside the margin; more than v Δt = 1 mm):
/// one collision after the other, all the momentum and energy end in the last ball.
#[test]
fn newtons_cradle_transfers_everything_to_the_last_ball() {
    for n in [3, 5] {
        let x: Vec<f64> = (0..n).map(|k| k as f64 * (2.0 * R + 2.5e-3)).collect();
        let mut v0 = vec![0.0; n];
        v0[0] = 1.0;
        let v = collide(1.0, &x, &v0, 40 * n);
        for (k, vk) in v.iter().enumerate() {
            let want = if k == n - 1 { 1.0 } else { 0.0 };
            assert!((vk - want).abs() < 1e-9, "{n} balls: {v:?}");
        }
        let energy: f64 = v.iter().map(|v| 0.5 * v * v).sum();
        assert!((energy - 0.5).abs() < 1e-9, "{n} balls: energy {energy}");
    }
}

/// Exactly touching balls impact simultaneously (docs/decisions.md): the velocity-level law solves one LCP over
/// both contacts, which gives (−1/3, 2/3, 2/3) for three equal balls at ε = 1, not a cradle's (0, 0, 1) —
/// a known property of simultaneous impact laws (momentum and, at ε = 1, energy are kept).
#[test]
fn touching_balls_impact_simultaneously() {
    let v = collide(1.0, &[0.0, 2.0 * R, 4.0 * R], &[1.0, 0.0, 0.0], 20);
    let want = [-1.0 / 3.0, 2.0 / 3.0, 2.0 / 3.0];
    assert!(v.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-9), "{v:?}");
}
