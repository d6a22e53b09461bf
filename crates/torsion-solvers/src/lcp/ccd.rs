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
    /// the gap (m) at which two polytopes (mesh hulls, a hull and a box: `CollisionWorld::polytope_pair`) are
    /// stopped, just before contact (§3.7): their distance and normal come from GJK, whose direction is noise as
    /// φ → 0 (at φ ≈ 1e-17 the discrete detection found no contact or a wrong normal; D5). < `touch`
    pub polytope_gap: f64,
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
            polytope_gap: 1e-7,
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

/// A sub-step's position path q(s) = q ⊕ s h v (the parallel position update, D1) and the model and collision
/// world that place its shapes.
struct Path<'a> {
    model: &'a Model,
    world: &'a CollisionWorld,
    dm: &'a DynModel<f64>,
    q: &'a [f64],
    v: &'a [f64],
    h: f64,
}

impl Path<'_> {
    /// The poses at q(s) into `sc.poses`.
    fn poses_at(&self, s: f64, sc: &mut CcdScratch) -> Result<(), SolverError> {
        sc.q.resize(self.q.len(), 0.0);
        sc.v1.resize(self.v.len(), 0.0);
        advance_into(self.dm, self.q, self.v, s * self.h, &mut sc.q, &mut sc.v1);
        self.model.forward_kinematics_into(&sc.q, &mut sc.poses, &mut sc.placed).map_err(fk_err)
    }
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
    let path = Path { model, world, dm, q, v, h };
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
        path.poses_at(i as f64 / n as f64, sc)?;
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
        if let Err(e) = path.poses_at(0.0, sc) {
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
        // the root sought: φ = 0, or the polytope gap
        let gap = if world.polytope_pair(i, j) { o.polytope_gap } else { 0.0 };
        if f0 <= o.touch || f0 - gap >= l * s_max {
            continue; // touching, or cannot reach before the best impact so far
        }
        match root(&path, (i, j), gap, f0 - gap, l, s_max, o, sc) {
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

/// The first root of φ(s) − gap on (0, s_max) given φ(0) − gap = f0 > 0 and |dφ/ds| ≤ l.
#[allow(clippy::too_many_arguments)]
fn root(
    path: &Path,
    (i, j): (usize, usize),
    gap: f64,
    f0: f64,
    l: f64,
    s_max: f64,
    o: &CcdOptions,
    sc: &mut CcdScratch,
) -> Result<Option<f64>, SolverError> {
    let phi = |s: f64, sc: &mut CcdScratch| -> Result<f64, SolverError> {
        path.poses_at(s, sc)?;
        sc.evaluations += 1;
        Ok(path.world.signed_distance(i, j, &sc.poses).map_err(coll_err)? - gap)
    };
    let name = |k: usize| path.model.shapes.get(k).map_or("?", |s| s.name.as_str()).to_string();
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
                "CCD: conservative advancement did not converge for shapes '{}' and '{}' (gap {:e} m at s = {s})",
                name(i),
                name(j),
                f + gap
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

#[cfg(test)]
mod tests {
    use super::*;
    use torsion_collision::{CollisionOptions, Contacts};

    /// Two icosphere hulls (r 5 cm, `sub` subdivisions; `torsion_collision::mesh::icosphere_obj`) on x / y slides:
    /// A at (−0.4, 0), B at rest at the origin (jade-two-ball's scene, spec 004 §4.2). The mesh file stays in the
    /// returned folder (collision worlds read it), which the caller removes.
    fn icosphere_balls(sub: usize, tag: &str) -> (Model, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("torsion-ccd-{tag}-{}-{sub}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("ball.obj"), torsion_collision::mesh::icosphere_obj(0.05, sub)).unwrap();
        let ball = |name: &str, x: f64| {
            format!(
                r#"<body name="{name}" pos="{x} 0 0"><joint type="slide" axis="1 0 0"/><joint type="slide" axis="0 1 0"/>
                <inertial pos="0 0 0" mass="1" diaginertia="0.001 0.001 0.001"/>
                <geom name="{name}" type="mesh" mesh="ball" friction="0"/></body>"#
            )
        };
        let xml = format!(
            r#"<mujoco><option gravity="0 0 0"/><asset><mesh name="ball" file="ball.obj"/></asset>
            <worldbody>{}{}</worldbody></mujoco>"#,
            ball("a", -0.4),
            ball("b", 0.0)
        );
        (torsion_model::io::mjcf::load_mjcf_str(&xml, "balls.xml", Some(&dir)).unwrap(), dir)
    }

    /// Two icosphere hulls approaching (A at (4, v_y) m/s, v_y where the TOI at φ ≈ 1e-17 gave no contact, and
    /// where it gave one): at the time of impact the discrete detection (the stepper's options) reports the pair's
    /// contacts at the polytope gap (1e-7 m, ≤ `touch`) with the normal of the signed distance's gradient in the
    /// plane of motion (central differences of A's x, y just before; out of the plane the normal is a face's, on
    /// the mirror symmetric hulls' edges in z = 0 either face's).
    #[test]
    fn icosphere_hulls_touch_at_their_time_of_impact() {
        for (sub, vy) in [(1, -0.6), (1, -0.7), (1, -0.9), (2, -0.7), (2, -0.8), (2, -0.53)] {
            let (m, dir) = icosphere_balls(sub, "touch");
            let opts = CollisionOptions { margin: 0.01, ..Default::default() };
            let mut world = CollisionWorld::new(&m, opts).unwrap();
            let _ = std::fs::remove_dir_all(&dir);
            let dm = DynModel::<f64>::from_model(&m).unwrap();
            // the stepper's steps of 10 ms from q = 0 (jade-two-ball's), up to the one with the impact
            let (v, h, o) = (vec![4.0, vy, 0.0, 0.0], 0.01, CcdOptions::default());
            let mut sc = CcdScratch::default();
            let (mut q, mut impact) = (vec![0.0; 4], None);
            for _ in 0..20 {
                impact = first_impact(&m, &world, &dm, &q, &v, h, &o, &mut sc).unwrap();
                if impact.is_some() {
                    break;
                }
                (0..2).for_each(|k| q[k] += h * v[k]);
            }
            let imp = impact.expect("an impact");
            let (a, b) = imp.shapes;
            // the in-plane normal: ∂φ/∂(x, y)_A just before the impact (linear in the translation on one feature)
            let at = |s: f64, world: &CollisionWorld, sc: &mut CcdScratch| {
                Path { model: &m, world, dm: &dm, q: &q, v: &v, h }.poses_at(s, sc).unwrap()
            };
            at(imp.s * (1.0 - 1e-4), &world, &mut sc);
            let body = world.shape_body(a).unwrap();
            let mut grad = Vec3::zeros();
            for k in 0..2 {
                let phi = |e: f64| {
                    let mut p = sc.poses.clone();
                    p[body].0[k] += e;
                    world.signed_distance(a, b, &p).unwrap()
                };
                grad[k] = (phi(1e-7) - phi(-1e-7)) / 2e-7;
            }
            at(imp.s, &world, &mut sc);
            let mut c = Contacts::default();
            world.detect(&sc.poses, &mut c).unwrap();
            let pair: Vec<_> = c.between(a, b).collect();
            let gap = world.signed_distance(a, b, &sc.poses).unwrap();
            eprintln!(
                "icosphere {sub}, v_y {vy}: TOI s = {:.9}, φ {gap:e}, {} contact(s), gaps {:?}, normal {:?} (FD {:?})",
                imp.s,
                pair.len(),
                pair.iter().map(|c| c.distance).collect::<Vec<_>>(),
                pair.first().map(|c| c.normal),
                grad
            );
            assert!((gap - o.polytope_gap).abs() < 1e-12, "φ at the TOI {gap:e}");
            assert!(!pair.is_empty(), "icosphere {sub}, v_y {vy}: no contact at the TOI");
            for c in &pair {
                assert!((c.distance - o.polytope_gap).abs() < 1e-9, "gap {:e}", c.distance);
                let n = if c.geom_a == a { c.normal } else { -c.normal };
                let (nxy, gxy) = (Vec3::new(n.x, n.y, 0.0).normalize(), grad.normalize());
                assert!((nxy - gxy).norm() < 1e-6, "in-plane normal {nxy:?} vs ∂φ/∂x_A {gxy:?}");
            }
        }
    }

    /// Jade's two mesh balls (1 and 2 subdivisions, ε = 1) meeting face to face mid-step (t* ≈ 5 ms of 10): the
    /// step's A and B (CCD, the TOI chain rule through the contact's anchor) against central differences ≤ 1e-6.
    #[test]
    fn icosphere_balls_mid_step_impact_jacobians_match_finite_differences() {
        use crate::lcp::stepper::tests::vs_fd;
        use crate::lcp::LcpSolver;
        use torsion_model::{GenState, ParamSelection};
        for sub in [1, 2] {
            let (mut m, dir) = icosphere_balls(sub, "fd");
            m.shapes.iter_mut().for_each(|s| s.restitution = 1.0);
            let s = GenState::new(vec![0.28, -0.01, 0.0, 0.0], vec![4.0, -0.6, 0.0, 0.0]);
            let (e, r) = vs_fd(&LcpSolver::default(), &m, &s, &[0.0, 0.3, -0.2, 0.0], &ParamSelection::none());
            let _ = std::fs::remove_dir_all(&dir);
            eprintln!(
                "icosphere {sub} balls: {} contacts after the impact, A {:.1e}, B {:.1e}",
                r.contacts, e[0], e[1]
            );
            assert!(r.contacts > 0, "no impact");
            assert!(e[0] < 1e-6 && e[1] < 1e-6, "{e:?}");
        }
    }
}
