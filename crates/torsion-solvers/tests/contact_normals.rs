//! Polyhedron–polyhedron contact geometry on rotating bodies (docs/gradients.md "Contact step, contact set and
//! geometry"): a triangular mesh prism face-down on a box slab, both tilted and spinning about in-plane axes,
//! closing a 1 mm gap while sliding (three vertex contacts, unique impulses, away from every mode switch). The
//! step Jacobians A (all columns, positions included) and B against central differences of `Solver::step` with
//! contacts re-detected at each perturbed state, under `ncp` and `lcp` (DCD), with the touching face on body B
//! (prism first in the model) and on body A (slab first: the prism's vertices are B's, the face A's).
use torsion_math::{Quat, Vec3};
use torsion_model::io::mjcf::load_mjcf_str;
use torsion_model::{Control, Model, ParamSelection};
use torsion_solvers::ncp::{NcpOptions, NcpSolver};
use torsion_solvers::{DiffSolver, GenState, LcpOptions, LcpSolver, Solver};

const DT: f64 = 0.01;
/// slab half extents; prism circumradius and height (m)
const SLAB: [f64; 3] = [0.25, 0.2, 0.03];
const PRISM_R: f64 = 0.06;
const PRISM_H: f64 = 0.04;
/// the prism's lowest vertex above the slab's face (m)
const GAP: f64 = 1e-3;

/// A right prism on an equilateral triangle (circumradius r, a vertex on +x), z ∈ [−h/2, h/2], as OBJ.
fn prism_obj(r: f64, h: f64) -> String {
    let mut s = String::new();
    for z in [-0.5 * h, 0.5 * h] {
        for k in 0..3 {
            let a = 2.0 * std::f64::consts::PI * k as f64 / 3.0;
            s += &format!("v {} {} {}\n", r * a.cos(), r * a.sin(), z);
        }
    }
    s + "f 3 2 1\nf 4 5 6\nf 1 2 5 4\nf 2 3 6 5\nf 3 1 4 6\n"
}

/// The slab (a box, 3 kg) and the prism (a mesh, 0.5 kg), μ 0.3, in the order given: `prism_first` puts the prism
/// on body A of their contacts (B is the shape with the higher index), otherwise on B.
fn model(prism_first: bool, dir: &std::path::Path) -> Model {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("prism3.obj"), prism_obj(PRISM_R, PRISM_H)).unwrap();
    let [x, y, z] = SLAB;
    let slab = format!(r#"<body name="slab"><freejoint/><geom type="box" size="{x} {y} {z}" mass="3"/></body>"#);
    let prism = r#"<body name="prism"><freejoint/><inertial pos="0 0 0" mass="0.5" diaginertia="6e-4 6e-4 9e-4"/>
        <geom type="mesh" mesh="prism"/></body>"#;
    let bodies = if prism_first { format!("{prism}{slab}") } else { format!("{slab}{prism}") };
    let xml = format!(
        r#"<mujoco><option gravity="0 0 -9.81" timestep="{DT}"/><default><geom friction="0.3"/></default>
        <asset><mesh name="prism" file="prism3.obj"/></asset><worldbody>{bodies}</worldbody></mujoco>"#
    );
    load_mjcf_str(&xml, "prism-on-slab.xml", Some(dir)).unwrap()
}

/// The slab tilted (0.35, −0.2, 0.1) rad and spinning; the prism yawed 0.4 rad on its face and tipped 1e-3 rad
/// (one lowest vertex: the closest points are unique), GAP above it, sliding at 0.4 m/s and closing at 0.3 m/s,
/// turning relative to the slab about an in-plane axis at 0.94 rad/s (every vertex still closes its gap within
/// the step). Velocities in each body's frame (the free joint's (ω, v)).
fn state(prism_first: bool) -> GenState {
    let rs = Quat::exp(&Vec3::new(0.35, -0.2, 0.1));
    let rp = rs.mul(&Quat::exp(&Vec3::new(0.0, 0.0, 0.4))).mul(&Quat::exp(&Vec3::new(1e-3, 0.0, 0.0)));
    let xs = Vec3::new(0.02, -0.01, 0.3);
    let xp = xs + rs.rotate(&Vec3::new(0.04, -0.03, SLAB[2] + 0.5 * PRISM_H + GAP + 0.5e-3 * PRISM_R));
    let ws = rs.rotate(&Vec3::new(1.2, -0.7, 0.3));
    let vs = Vec3::new(0.1, 0.0, 0.05);
    let wp = ws + rs.rotate(&Vec3::new(-0.8, 0.5, 0.0));
    let vp = vs + ws.cross(&(xp - xs)) + rs.rotate(&Vec3::new(0.35, 0.2, -0.3));
    let body = |x: Vec3, r: Quat, w: Vec3, v: Vec3| {
        let (wl, vl) = (r.rotate_inv(&w), r.rotate_inv(&v));
        (vec![x.x, x.y, x.z, r.w, r.v.x, r.v.y, r.v.z], vec![wl.x, wl.y, wl.z, vl.x, vl.y, vl.z])
    };
    let (mut s, p) = (body(xs, rs, ws, vs), body(xp, rp, wp, vp));
    if prism_first {
        s = (p.0.into_iter().chain(s.0).collect(), p.1.into_iter().chain(s.1).collect());
    } else {
        s.0.extend(p.0);
        s.1.extend(p.1);
    }
    GenState::new(s.0, s.1)
}

/// A (all 2nv columns) and B of `step_jacobians` against central differences of `step` (h = 1e-5: detection's
/// rounding, ~1e-12 m, would show at 1e-6 through 1/h), normwise relative errors.
fn jacobians_vs_fd<S: DiffSolver<State = GenState>>(solver: &S, m: &Model, s: &GenState) -> (f64, f64) {
    let u = vec![0.0; m.nv()];
    let jac = solver.step_jacobians(m, s, &Control::from_torques(&u), DT, &ParamSelection::none()).unwrap();
    let (fa, fb) = torsion_diff::step_jacobians_fd(solver, m, s, &u, DT, 1e-5, 0..2 * m.nv()).unwrap();
    (torsion_diff::rel_err(jac.a.as_slice(), fa.as_slice()), torsion_diff::rel_err(jac.b.as_slice(), fb.as_slice()))
}

/// The Jacobians may not depend on the bodies' order in the model: with the slab first, its face is body A's and
/// the prism's vertices B's (collision detection orders a pair by shape index), so before `frames_from_collision`
/// turned such pairs round the normal turned with the prism — A vs FD 4.0e-3 (ncp) / 5.5e-3 (lcp) against
/// 1.1e-4 / 2.4e-3 with the prism first, and the two orders' A differed. Both orders then shared 1.1e-4 / 2.4e-3,
/// constant in h (1e-4 … 1e-7), from the anchors (`contact::anchor`): the contact point was a material point of
/// the prism at the midpoint of the witness points, 0.5 mm off its vertex across the gap (ncp: the slab's normal
/// velocity column), and the tangents turned with the slab where detection projects a fixed reference on the
/// tangent plane (lcp's box friction: the slab's tilt and spin columns). Parry's extra closest-point contact, a
/// duplicate of the lowest vertex's, is not the cause: dropping it left both figures unchanged.
#[test]
fn prism_on_slab_jacobians_follow_the_face_owner() {
    let dir = std::env::temp_dir().join(format!("torsion-contact-normals-{}", std::process::id()));
    let ncp = NcpSolver::new(NcpOptions::default());
    let mut o = LcpOptions::default();
    o.ccd.enabled = false;
    let lcp = LcpSolver::new(o);
    let mut jacs = vec![];
    for prism_first in [true, false] {
        let m = model(prism_first, &dir);
        let s = state(prism_first);
        let (slab, prism) = if prism_first { (2, 1) } else { (1, 2) };
        // the scene is as described: three or more contacts between the two, the slab's face normal, every one
        // closing its gap with a normal impulse, sliding
        let mut ws = Solver::workspace(&ncp, &m).unwrap();
        let mut out = s.clone();
        ncp.step(&m, &s, &Control::zeros(m.nv()), DT, &mut out, &mut ws, None).unwrap();
        let n_slab = Quat::exp(&Vec3::new(0.35, -0.2, 0.1)).rotate(&Vec3::z());
        assert!(ws.frames.len() >= 3, "{:?}", ws.frames);
        for (i, f) in ws.frames.iter().enumerate() {
            // the frame's B owns the face
            assert_eq!((f.body_a, f.body_b), (prism, slab), "{f:?}");
            assert!((f.normal - n_slab).norm() < 1e-9 && f.distance > 0.5 * GAP, "{f:?}");
            let (ln, lt) = (ws.report.lambda_n[i], ws.report.lambda_t[2 * i].hypot(ws.report.lambda_t[2 * i + 1]));
            assert!(ln > 1e-3 && (lt - f.mu * ln).abs() < 1e-9 * ln, "contact {i}: λn {ln:e}, |λt| {lt:e}");
        }
        let (ea, eb) = jacobians_vs_fd(&ncp, &m, &s);
        let (la, lb) = jacobians_vs_fd(&lcp, &m, &s);
        let face = if prism_first { "B" } else { "A" };
        eprintln!("face on {face}: vs FD ncp A {ea:.1e} B {eb:.1e}; lcp A {la:.1e} B {lb:.1e}");
        assert!(ea.max(eb).max(la).max(lb) < 1e-6, "face on {face}: ncp {ea:e} {eb:e}, lcp {la:e} {lb:e}");
        let u = Control::zeros(m.nv());
        let sel = ParamSelection::none();
        jacs.push([
            ncp.step_jacobians(&m, &s, &u, DT, &sel).unwrap(),
            lcp.step_jacobians(&m, &s, &u, DT, &sel).unwrap(),
        ]);
    }
    let _ = std::fs::remove_dir_all(&dir);
    // the other order's index (each 12-block of the tangent state and of u: the two bodies' 6 swapped)
    let p = |i: usize| 12 * (i / 12) + (i % 12 + 6) % 12;
    for (k, name) in ["ncp", "lcp"].into_iter().enumerate() {
        let (x, y) = (&jacs[0][k], &jacs[1][k]);
        let mut worst: f64 = 0.0;
        for r in 0..24 {
            for c in 0..24 {
                worst = worst.max((x.a[(r, c)] - y.a[(p(r), p(c))]).abs());
            }
            for c in 0..12 {
                worst = worst.max((x.b[(r, c)] - y.b[(p(r), p(c))]).abs());
            }
        }
        let scale = x.a.amax().max(x.b.amax());
        eprintln!("{name}: A, B of the two orders differ by {:.1e} (relative)", worst / scale);
        assert!(worst < 1e-9 * scale, "{name}: {:e}", worst / scale);
    }
}
