//! Continuous collision detection of the `lcp` stepper (spec 004 §3.5, §3.7; docs/decisions.md spec 004 D4–D6):
//! the first time of impact along the sub-step's own position path q(s) = q ⊕ s h v (the parallel update, D1), as
//! the first root of each shape pair's signed distance φ(s) at the forward-kinematics poses of q(s). φ is parry's
//! exact distance (closed forms for sphere–sphere, sphere / box / convex – plane, box–box; GJK / EPA otherwise), so
//! the TOI is exact to `tol` for every convex pair, articulated paths included. The root is bracketed by
//! conservative advancement (s ← s + φ / L, L a bound on |dφ/ds| from the bodies' motion along the path), then
//! refined by regula falsi (Illinois). A pair already touching (φ(0) ≤ `touch`) is not searched: it is the
//! impact's and the LCP's (the stepper). No convergence is an error naming the pair, never a silent miss.
use crate::solver::SolverError;
use torsion_collision::CollisionWorld;
use torsion_dynamics::joints::advance_into;
use torsion_dynamics::DynModel;
use torsion_math::{Quat, Vec3};
use torsion_model::Model;

/// Options of the CCD (D4–D6).
#[derive(Clone, Debug)]
pub struct CcdOptions {
    /// time-of-impact backtracking on (default); off: discrete detection only (DCD, `--no-ccd`)
    pub enabled: bool,
    /// at most this many impacts (sub-steps ending at a TOI) per step; the rest of the step is then stepped with
    /// DCD (K_max, D6)
    pub max_impacts: usize,
    /// Zeno guard (s): an impact within this time of the step's end is left to the next step's start
    pub min_substep: f64,
    /// a pair closer than this (m) is touching: not searched, and in the impact LCP when approaching
    pub touch: f64,
    /// approach speed (m/s) above which a touching contact is struck (the impact LCP at Δt = 0)
    pub touch_speed: f64,
    /// root tolerance on φ (m)
    pub tol: f64,
    /// intervals along the path for the motion bound L
    pub samples: usize,
    /// smallest advance (fraction of the sub-step) while a pair hovers within 10 × `touch` of contact (conservative
    /// advancement stalls on a grazing pair); a penetration shallower than L × this could be missed
    pub min_advance: f64,
}

impl Default for CcdOptions {
    fn default() -> Self {
        CcdOptions {
            enabled: true,
            max_impacts: 4,
            min_substep: 1e-9,
            touch: 1e-6,
            touch_speed: 1e-6,
            tol: 1e-13,
            samples: 8,
            min_advance: 1e-3,
        }
    }
}

/// The first impact of a sub-step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Impact {
    /// fraction of the sub-step, in (0, 1)
    pub s: f64,
    /// the two shapes (model indices)
    pub shapes: (usize, usize),
}

/// Buffers of [`first_impact`].
#[derive(Default)]
pub struct CcdScratch {
    pairs: Vec<(usize, usize)>,
    q: Vec<f64>,
    v1: Vec<f64>,
    poses: Vec<(Vec3, Quat)>,
    placed: Vec<bool>,
    /// per body: the bound on the origin's speed and on 2 sin(θ/2) per unit s (chord of the rotation)
    lin: Vec<f64>,
    ang: Vec<f64>,
    prev: Vec<(Vec3, Quat)>,
    /// CCD queries made (distance evaluations), for reports
    pub evaluations: usize,
}

fn fk_err(e: torsion_model::ModelError) -> SolverError {
    SolverError::BadInput { solver: "lcp", problem: format!("CCD: forward kinematics: {e}") }
}

fn coll_err(e: torsion_collision::CollisionError) -> SolverError {
    SolverError::Unsupported { solver: "lcp", problem: format!("CCD: {e}") }
}

/// The poses at q(s) = q ⊕ s h v (the parallel position update) into `sc.poses`.
fn poses_at(
    model: &Model,
    dm: &DynModel<f64>,
    q: &[f64],
    v: &[f64],
    h: f64,
    s: f64,
    sc: &mut CcdScratch,
) -> Result<(), SolverError> {
    sc.q.resize(q.len(), 0.0);
    sc.v1.resize(v.len(), 0.0);
    advance_into(dm, q, v, s * h, &mut sc.q, &mut sc.v1);
    model.forward_kinematics_into(&sc.q, &mut sc.poses, &mut sc.placed).map_err(fk_err)
}

/// The first time of impact along q(s) = q ⊕ s h v, s ∈ (0, 1), over all shape pairs (None: no impact).
#[allow(clippy::too_many_arguments)]
pub fn first_impact(
    model: &Model,
    world: &CollisionWorld,
    dm: &DynModel<f64>,
    q: &[f64],
    v: &[f64],
    h: f64,
    o: &CcdOptions,
    sc: &mut CcdScratch,
) -> Result<Option<Impact>, SolverError> {
    if !model.contact_enabled || h <= 0.0 {
        return Ok(None);
    }
    world.shape_pairs_into(&mut sc.pairs);
    if sc.pairs.is_empty() {
        return Ok(None);
    }
    // motion bounds per body: the largest chord per unit s over `samples` intervals (exact for the straight,
    // constant-rate paths of free and prismatic joints; 1.25 × for the curvature of articulated ones)
    let nb = model.body_count();
    sc.lin.clear();
    sc.lin.resize(nb, 0.0);
    sc.ang.clear();
    sc.ang.resize(nb, 0.0);
    let n = o.samples.max(1);
    for i in 0..=n {
        poses_at(model, dm, q, v, h, i as f64 / n as f64, sc)?;
        if i > 0 {
            for b in 0..nb {
                let (p0, r0) = &sc.prev[b];
                let (p1, r1) = &sc.poses[b];
                let rel = r0.normalize().conj().mul(&r1.normalize());
                sc.lin[b] = sc.lin[b].max((p1 - p0).norm() * n as f64);
                sc.ang[b] = sc.ang[b].max(2.0 * rel.v.norm() * n as f64);
            }
        }
        std::mem::swap(&mut sc.prev, &mut sc.poses);
    }
    let bound = |sc: &CcdScratch, shape: usize| -> f64 {
        let b = world.shape_body(shape).unwrap_or(0);
        let r = world.shape_reach(shape);
        let rot = if sc.ang[b] > 0.0 { sc.ang[b] * r } else { 0.0 };
        1.25 * (sc.lin[b] + rot)
    };
    let mut best: Option<Impact> = None;
    let pairs = std::mem::take(&mut sc.pairs);
    let mut result = Ok(());
    for &(i, j) in &pairs {
        let l = bound(sc, i) + bound(sc, j);
        if l.is_nan() || l <= 0.0 {
            continue; // no relative motion (or both fixed)
        }
        if let Err(e) = poses_at(model, dm, q, v, h, 0.0, sc) {
            result = Err(e);
            break;
        }
        let f0 = match world.signed_distance(i, j, &sc.poses) {
            Ok(f) => f,
            Err(e) => {
                result = Err(coll_err(e));
                break;
            }
        };
        sc.evaluations += 1;
        let s_max = best.map_or(1.0, |b| b.s);
        if f0 <= o.touch || f0 >= l * s_max {
            continue; // touching, or cannot reach before the best impact so far
        }
        match root(model, world, dm, q, v, h, (i, j), f0, l, s_max, o, sc) {
            Ok(Some(s)) => best = Some(Impact { s, shapes: (i, j) }),
            Ok(None) => {}
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    sc.pairs = pairs;
    result?;
    Ok(best)
}

/// The first root of φ(s) on (0, s_max) given φ(0) = f0 > 0 and |dφ/ds| ≤ l.
#[allow(clippy::too_many_arguments)]
fn root(
    model: &Model,
    world: &CollisionWorld,
    dm: &DynModel<f64>,
    q: &[f64],
    v: &[f64],
    h: f64,
    (i, j): (usize, usize),
    f0: f64,
    l: f64,
    s_max: f64,
    o: &CcdOptions,
    sc: &mut CcdScratch,
) -> Result<Option<f64>, SolverError> {
    let phi = |s: f64, sc: &mut CcdScratch| -> Result<f64, SolverError> {
        poses_at(model, dm, q, v, h, s, sc)?;
        sc.evaluations += 1;
        world.signed_distance(i, j, &sc.poses).map_err(coll_err)
    };
    let name = |k: usize| model.shapes.get(k).map_or("?", |s| s.name.as_str()).to_string();
    let (mut s, mut f) = (0.0, f0);
    // conservative advancement, accelerated by a secant step once the gap closes at a steady rate
    let mut bracket = None;
    for _ in 0..1000 {
        let ds = if f <= 10.0 * o.touch { (f / l).max(o.min_advance) } else { f / l };
        let s1 = (s + ds).min(s_max);
        let f1 = phi(s1, sc)?;
        if f1 <= 0.0 {
            bracket = Some((s, f, s1, f1));
            break;
        }
        if s1 >= s_max {
            return Ok(None);
        }
        if f1 <= o.tol {
            return Ok(Some(s1));
        }
        if f1 < 0.5 * f {
            let s2 = s1 + f1 * (s1 - s) / (f - f1);
            if s2 < s_max {
                let f2 = phi(s2, sc)?;
                if f2 <= 0.0 {
                    bracket = Some((s1, f1, s2, f2));
                    break;
                }
                if f2 < f1 {
                    (s, f) = (s2, f2);
                    continue;
                }
            }
        }
        (s, f) = (s1, f1);
    }
    let Some((mut a, mut fa, mut b, mut fb)) = bracket else {
        return Err(SolverError::NoSolution {
            solver: "lcp",
            problem: format!(
                "CCD: conservative advancement did not converge for shapes '{}' and '{}' (gap {f:e} m at s = {s})",
                name(i),
                name(j)
            ),
        });
    };
    if fb.abs() <= o.tol {
        return Ok(Some(b));
    }
    // regula falsi (Illinois) on [a, b], φ(a) > 0 ≥ φ(b)
    let mut side = 0;
    for _ in 0..200 {
        let c = (a - fa * (b - a) / (fb - fa)).clamp(a, b);
        let fc = phi(c, sc)?;
        if fc.abs() <= o.tol || b - a <= 4.0 * f64::EPSILON * b.max(1e-300) {
            return Ok(Some(c));
        }
        if fc > 0.0 {
            (a, fa) = (c, fc);
            if side == 1 {
                fb *= 0.5;
            }
            side = 1;
        } else {
            (b, fb) = (c, fc);
            if side == -1 {
                fa *= 0.5;
            }
            side = -1;
        }
    }
    Ok(Some(0.5 * (a + b)))
}
