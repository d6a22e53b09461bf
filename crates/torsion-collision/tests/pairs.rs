//! Shape-pair contacts against analytic values: points, normals (B → A, spec 001 §3.1), signed distances.
mod common;
use common::*;
use torsion_collision::{CollisionOptions, Contact, Contacts};
use torsion_math::{Quat, Vec3};
use torsion_model::ShapeKind;

const EPS: f64 = 1e-9;

fn assert_frame(c: &Contact) {
    let (n, t) = (c.normal, c.tangents);
    assert!((n.norm() - 1.0).abs() < 1e-12, "normal not unit: {n:?}");
    assert!((t[0].cross(&t[1]) - n).norm() < 1e-12, "(n, t1, t2) not right-handed orthonormal");
    assert!(n.dot(&t[0]).abs() < 1e-12 && (t[0].norm() - 1.0).abs() < 1e-12);
    assert!(((c.point_a + c.point_b) * 0.5 - c.point).norm() < 1e-12);
}

fn sorted_xy(c: &Contacts) -> Vec<(f64, f64)> {
    let mut v: Vec<_> = c.iter().map(|c| (c.point.x, c.point.y)).collect();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v
}

#[test]
fn sphere_plane() {
    let m = scene(true, &[ShapeKind::Sphere { radius: 0.5 }]);
    let c = detect(&m, margin(0.0), &poses(&[(Vec3::new(1.0, 2.0, 0.4), Quat::identity())]));
    assert_eq!(c.len(), 1);
    let k = &c.contacts[0];
    assert_frame(k);
    // A = the sphere (free body 1), B = the floor (world body 0)
    assert_eq!((k.body_a, k.body_b, k.geom_a, k.geom_b), (1, 0, 1, 0));
    assert!((k.distance + 0.1).abs() < EPS);
    assert!((k.normal - Vec3::z()).norm() < EPS);
    assert!((k.point_a - Vec3::new(1.0, 2.0, -0.1)).norm() < EPS);
    assert!((k.point_b - Vec3::new(1.0, 2.0, 0.0)).norm() < EPS);
    // separated by 0.05: none with margin 0, one at +0.05 with margin 0.1
    let p = poses(&[(Vec3::new(0.0, 0.0, 0.55), Quat::identity())]);
    assert!(detect(&m, margin(0.0), &p).is_empty());
    let c = detect(&m, margin(0.1), &p);
    assert_eq!(c.len(), 1);
    assert!((c.contacts[0].distance - 0.05).abs() < EPS);
}

#[test]
fn box_plane_four_corners() {
    let (hx, hy, hz) = (0.5, 0.3, 0.2);
    let m = scene(true, &[bx(hx, hy, hz)]);
    let q = rot(Vec3::z(), 0.3);
    let x = Vec3::new(0.2, -0.1, hz - 0.01);
    let c = detect(&m, margin(0.0), &poses(&[(x, q)]));
    assert_eq!(c.len(), 4, "{c:#?}");
    let mut expect: Vec<(f64, f64)> = [(-1.0, -1.0), (-1.0, 1.0), (1.0, -1.0), (1.0, 1.0)]
        .iter()
        .map(|(sx, sy)| {
            let p = x + q.rotate(&Vec3::new(sx * hx, sy * hy, -hz));
            (p.x, p.y)
        })
        .collect();
    expect.sort_by(|a, b| a.partial_cmp(b).unwrap());
    for (got, want) in sorted_xy(&c).iter().zip(&expect) {
        assert!((got.0 - want.0).abs() < EPS && (got.1 - want.1).abs() < EPS, "{got:?} vs {want:?}");
    }
    for k in c.iter() {
        assert_frame(k);
        assert!((k.distance + 0.01).abs() < EPS && (k.normal - Vec3::z()).norm() < EPS);
        assert!((k.point.z + 0.005).abs() < EPS);
    }
    // distinct persistent ids, one per corner
    let mut ids: Vec<_> = c.iter().map(|k| k.id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 4);
    // tilted about x by a small angle: each corner's distance is its own height
    let q = rot(Vec3::x(), 0.05);
    let x = Vec3::new(0.0, 0.0, 0.2);
    let c = detect(&m, margin(0.05), &poses(&[(x, q)]));
    assert_eq!(c.len(), 4);
    for k in c.iter() {
        assert!((k.distance - k.point_a.z).abs() < EPS, "distance {} vs corner height {}", k.distance, k.point_a.z);
    }
    // resting exactly: touching counts with margin 0
    let c = detect(&m, margin(0.0), &poses(&[(Vec3::new(0.0, 0.0, hz), Quat::identity())]));
    assert_eq!(c.len(), 4);
    assert!(c.iter().all(|k| k.distance.abs() < EPS));
}

#[test]
fn capsule_plane_lying_flat_gives_two_points() {
    let m = scene(true, &[ShapeKind::Capsule { radius: 0.1, half_length: 0.4 }]);
    // axis z → x
    let q = rot(Vec3::y(), std::f64::consts::FRAC_PI_2);
    let c = detect(&m, margin(0.0), &poses(&[(Vec3::new(0.0, 0.0, 0.09), q)]));
    assert_eq!(c.len(), 2, "{c:#?}");
    let xy = sorted_xy(&c);
    assert!((xy[0].0 + 0.4).abs() < EPS && (xy[1].0 - 0.4).abs() < EPS);
    for k in c.iter() {
        assert_frame(k);
        assert!((k.distance + 0.01).abs() < EPS && (k.normal - Vec3::z()).norm() < EPS);
    }
    // standing on its end: one point
    let c = detect(&m, margin(0.0), &poses(&[(Vec3::new(0.0, 0.0, 0.49), Quat::identity())]));
    assert_eq!(c.len(), 1);
    assert!((c.contacts[0].distance + 0.01).abs() < EPS);
}

#[test]
fn cylinder_plane() {
    let (r, h) = (0.2, 0.5);
    let m = scene(true, &[ShapeKind::Cylinder { radius: r, half_length: h }]);
    // standing on its cap (axis z): points on the rim, distances -0.01
    let c = detect(&m, margin(0.0), &poses(&[(Vec3::new(0.0, 0.0, h - 0.01), Quat::identity())]));
    assert!(c.len() >= 3, "cap on the floor needs a support polygon: {c:#?}");
    for k in c.iter() {
        assert_frame(k);
        assert!((k.distance + 0.01).abs() < EPS && (k.normal - Vec3::z()).norm() < EPS);
        assert!(((k.point.x.powi(2) + k.point.y.powi(2)).sqrt() - r).abs() < 1e-9, "not on the rim");
    }
    // lying on its side (axis z → y): two points at the ends of the bottom line, y = ±h
    let q = rot(Vec3::x(), std::f64::consts::FRAC_PI_2);
    let c = detect(&m, margin(0.0), &poses(&[(Vec3::new(0.0, 0.0, r - 0.02), q)]));
    assert_eq!(c.len(), 2, "{c:#?}");
    let mut ys: Vec<f64> = c.iter().map(|k| k.point.y).collect();
    ys.sort_by(f64::total_cmp);
    assert!((ys[0] + h).abs() < EPS && (ys[1] - h).abs() < EPS);
    assert!(c.iter().all(|k| (k.distance + 0.02).abs() < EPS && k.point.x.abs() < EPS));
}

#[test]
fn box_box_face_face_manifold() {
    let m = scene(false, &[bx(0.5, 0.5, 0.5), bx(0.3, 0.3, 0.3)]);
    // small box (body 2) sitting 0.01 into the big one (body 1), turned about z
    let q = rot(Vec3::z(), 0.4);
    let c = detect(&m, margin(0.0), &poses(&[(Vec3::zeros(), Quat::identity()), (Vec3::new(0.05, 0.0, 0.79), q)]));
    assert!(c.len() >= 4, "face–face needs ≥ 4 points: {c:#?}");
    for k in c.iter() {
        assert_frame(k);
        // A = lower index (body 1, the big box), B = body 2 on top: n from B to A points down
        assert_eq!((k.body_a, k.body_b), (1, 2));
        assert!((k.normal + Vec3::z()).norm() < 1e-9, "normal {:?}", k.normal);
        assert!((k.distance + 0.01).abs() < 1e-9, "distance {}", k.distance);
    }
}

/// Two boxes of one width, one sliding along x on the other (their side faces coplanar, contact-compare's stack),
/// tilted by round-off (≤ 1e-17 rad, as a step leaves them): every corner of the overlap rectangle is a contact,
/// whatever the round-off. parry's face–face clip keeps a vertex only strictly inside the other face, so the
/// corners on the shared edges came and went with the tilt's round-off (the stack's state after 7 steps: two
/// corners on a diagonal, about which the upper box tipped 0.4 mm into the lower one); `narrow_phase` adds them.
#[test]
fn box_box_coplanar_sides_keep_every_corner() {
    let m = scene(false, &[bx(0.1, 0.1, 0.1), bx(0.1, 0.1, 0.1)]);
    let tilt = |k: f64| Quat::new(1.0, 1e-17 * (0.37 * k).sin(), 1e-17 * (1.3 * k).cos(), 1e-19 * (2.1 * k).sin());
    // the stack's middle and top cubes after 7 steps (the pose that lost two corners)
    let stack = [
        (
            Vec3::new(-6.047470792365506e-18, -6.2313283855287184e-18, 0.3),
            Quat::new(1.0, 5.366800753803247e-18, -5.692061405548897e-18, 6.09863722023092e-20),
        ),
        (
            Vec3::new(0.030605120000000003, -8.773927782133277e-19, 0.5),
            Quat::new(1.0, 6.017322057294554e-18, -1.4636729328554321e-18, -2.0328790734099904e-20),
        ),
    ];
    let mut cases = vec![stack];
    for k in 0..200 {
        let x = 0.19 * k as f64 / 200.0;
        cases.push([
            (Vec3::new(0.0, 0.0, 0.3), tilt(2.0 * k as f64)),
            (Vec3::new(x, 0.0, 0.5), tilt(2.0 * k as f64 + 1.0)),
        ]);
    }
    for (k, p) in cases.iter().enumerate() {
        let c = detect(&m, CollisionOptions { complete_box_faces: true, ..margin(0.01) }, &poses(p));
        let (x0, x1) = (p[1].0.x - 0.1, 0.1);
        for (cx, cy) in [(x0, -0.1), (x0, 0.1), (x1, -0.1), (x1, 0.1)] {
            assert!(
                c.iter().any(|k| (k.point.x - cx).abs() < EPS && (k.point.y - cy).abs() < EPS),
                "case {k}: no contact at corner ({cx}, {cy}): {:?}",
                sorted_xy(&c)
            );
        }
        for q in c.iter() {
            assert_frame(q);
            assert!(q.distance.abs() < EPS && (q.point.z - 0.4).abs() < EPS, "case {k}: {q:?}");
            assert!(q.point.x > x0 - EPS && q.point.x < x1 + EPS && q.point.y.abs() < 0.1 + EPS, "case {k}: {q:?}");
        }
    }
}

#[test]
fn box_box_edge_edge_single_point() {
    let m = scene(false, &[bx(0.5, 0.5, 0.5), bx(0.5, 0.5, 0.5)]);
    // lower box: an edge along x on top (rotated 45° about x); upper box: an edge along y at the bottom
    let q1 = rot(Vec3::x(), std::f64::consts::FRAC_PI_4);
    let q2 = rot(Vec3::y(), std::f64::consts::FRAC_PI_4);
    let d = 0.5 * 2f64.sqrt();
    let z2 = 2.0 * d - 0.01;
    let c = detect(&m, margin(0.0), &poses(&[(Vec3::zeros(), q1), (Vec3::new(0.0, 0.0, z2), q2)]));
    assert_eq!(c.len(), 1, "{c:#?}");
    let k = &c.contacts[0];
    assert_frame(k);
    assert!((k.distance + 0.01).abs() < 1e-9);
    assert!((k.normal + Vec3::z()).norm() < 1e-9);
    assert!((k.point - Vec3::new(0.0, 0.0, d - 0.005)).norm() < 1e-9, "{:?}", k.point);
}

#[test]
fn sphere_sphere_box_capsule() {
    let m = scene(false, &[ShapeKind::Sphere { radius: 0.3 }, ShapeKind::Sphere { radius: 0.2 }]);
    let dir = Vec3::new(1.0, 2.0, -0.5).normalize();
    let c = detect(&m, margin(0.0), &poses(&[(Vec3::zeros(), Quat::identity()), (dir * 0.45, Quat::identity())]));
    assert_eq!(c.len(), 1);
    let k = &c.contacts[0];
    assert_frame(k);
    assert!((k.distance + 0.05).abs() < EPS);
    // A = sphere 1 at the origin, B = sphere 2 along +dir: n from B to A is −dir
    assert!((k.normal + dir).norm() < EPS);
    assert!((k.point_a - dir * 0.3).norm() < EPS && (k.point_b - dir * 0.25).norm() < EPS);

    // sphere above a box face and near a box corner
    let m = scene(false, &[ShapeKind::Sphere { radius: 0.1 }, bx(0.5, 0.5, 0.5)]);
    let c = detect(
        &m,
        margin(0.0),
        &poses(&[(Vec3::new(0.1, 0.2, 0.58), Quat::identity()), (Vec3::zeros(), Quat::identity())]),
    );
    assert_eq!(c.len(), 1);
    assert!((c.contacts[0].distance + 0.02).abs() < EPS && (c.contacts[0].normal - Vec3::z()).norm() < EPS);
    let corner = Vec3::new(0.5, 0.5, 0.5);
    let s = corner + Vec3::new(1.0, 1.0, 1.0).normalize() * 0.09;
    let c = detect(&m, margin(0.0), &poses(&[(s, Quat::identity()), (Vec3::zeros(), Quat::identity())]));
    assert_eq!(c.len(), 1);
    assert!((c.contacts[0].distance + 0.01).abs() < EPS);
    assert!((c.contacts[0].normal - Vec3::new(1.0, 1.0, 1.0).normalize()).norm() < 1e-9);

    // sphere against the side of a capsule (axis z)
    let m = scene(false, &[ShapeKind::Sphere { radius: 0.1 }, ShapeKind::Capsule { radius: 0.2, half_length: 0.5 }]);
    let c = detect(
        &m,
        margin(0.0),
        &poses(&[(Vec3::new(0.0, 0.28, 0.3), Quat::identity()), (Vec3::zeros(), Quat::identity())]),
    );
    assert_eq!(c.len(), 1);
    assert!((c.contacts[0].distance + 0.02).abs() < EPS && (c.contacts[0].normal - Vec3::y()).norm() < EPS);
}

#[test]
fn capsule_box_and_capsule_capsule() {
    // capsule lying across a box top: a segment–face contact
    let m = scene(false, &[ShapeKind::Capsule { radius: 0.05, half_length: 0.3 }, bx(0.5, 0.5, 0.5)]);
    let q = rot(Vec3::y(), std::f64::consts::FRAC_PI_2);
    let c = detect(&m, margin(0.0), &poses(&[(Vec3::new(0.0, 0.0, 0.54), q), (Vec3::zeros(), Quat::identity())]));
    assert!(!c.is_empty());
    for k in c.iter() {
        assert_frame(k);
        assert!((k.distance + 0.01).abs() < 1e-9 && (k.normal - Vec3::z()).norm() < 1e-9);
    }
    // two crossed capsules
    let m = scene(false, &vec![ShapeKind::Capsule { radius: 0.1, half_length: 0.5 }; 2]);
    let qa = rot(Vec3::y(), std::f64::consts::FRAC_PI_2);
    let qb = rot(Vec3::x(), std::f64::consts::FRAC_PI_2);
    let c = detect(&m, margin(0.0), &poses(&[(Vec3::new(0.0, 0.0, 0.19), qa), (Vec3::zeros(), qb)]));
    assert_eq!(c.len(), 1);
    assert!((c.contacts[0].distance + 0.01).abs() < EPS && (c.contacts[0].normal - Vec3::z()).norm() < EPS);
}

#[test]
fn ellipsoid_plane_within_documented_error() {
    let r = Vec3::new(0.3, 0.2, 0.1);
    let m = scene(true, &[ShapeKind::Ellipsoid { radii: r }]);
    // lying flat: the bottom pole is a hull vertex, so the distance is exact
    let c = detect(&m, margin(0.0), &poses(&[(Vec3::new(0.0, 0.0, 0.09), Quat::identity())]));
    assert!(!c.is_empty());
    let dmin = c.iter().map(|k| k.distance).fold(f64::INFINITY, f64::min);
    assert!((dmin + 0.01).abs() < 1e-9, "{dmin}");
    // on its side: the sampled hull is inscribed, so within r_max (1 − cos(π/24)) of the true −0.01
    let q = rot(Vec3::new(1.0, 1.0, 0.0), 1.0);
    let true_h = {
        // support of the ellipsoid along −z in body axes: sqrt(Σ (r_i d_i)²) with d = Rᵀ(−z)
        let d = q.rotate_inv(&-Vec3::z());
        (r.x * r.x * d.x * d.x + r.y * r.y * d.y * d.y + r.z * r.z * d.z * d.z).sqrt()
    };
    let c = detect(&m, margin(0.05), &poses(&[(Vec3::new(0.0, 0.0, true_h - 0.01), q)]));
    let dmin = c.iter().map(|k| k.distance).fold(f64::INFINITY, f64::min);
    let tol = 0.3 * (1.0 - (std::f64::consts::PI / 24.0).cos());
    assert!(dmin >= -0.01 - 1e-9 && dmin <= -0.01 + tol, "{dmin} (tol {tol})");
}

/// Spec 001 §3.1: moving A by +ε n must increase the distance by ε (B → A normal).
#[test]
fn normal_points_from_b_to_a_finite_displacement() {
    type Case = (Vec<ShapeKind>, bool, Vec<(Vec3, Quat)>);
    let cases: Vec<Case> = vec![
        (vec![bx(0.3, 0.2, 0.1)], true, vec![(Vec3::new(0.0, 0.0, 0.05), rot(Vec3::new(1.0, 2.0, 0.3), 0.7))]),
        (
            vec![bx(0.3, 0.2, 0.1), bx(0.2, 0.2, 0.2)],
            false,
            vec![
                (Vec3::zeros(), rot(Vec3::new(0.2, 1.0, 0.0), 0.4)),
                (Vec3::new(0.1, 0.05, 0.25), rot(Vec3::x(), 0.3)),
            ],
        ),
        (
            vec![ShapeKind::Capsule { radius: 0.1, half_length: 0.3 }, bx(0.2, 0.2, 0.2)],
            false,
            vec![(Vec3::new(0.3, 0.0, 0.1), rot(Vec3::y(), 1.0)), (Vec3::zeros(), Quat::identity())],
        ),
        (
            vec![ShapeKind::Cylinder { radius: 0.2, half_length: 0.1 }, ShapeKind::Sphere { radius: 0.15 }],
            false,
            vec![(Vec3::new(0.1, 0.0, 0.0), rot(Vec3::x(), 0.5)), (Vec3::new(0.2, 0.1, 0.2), Quat::identity())],
        ),
    ];
    let eps = 1e-4;
    for (kinds, ground, p) in cases {
        let m = scene(ground, &kinds);
        let opts = CollisionOptions { margin: 0.5, ..Default::default() };
        let c = detect(&m, opts.clone(), &poses(&p));
        assert!(!c.is_empty());
        let deepest = *c.iter().min_by(|a, b| a.distance.total_cmp(&b.distance)).unwrap();
        // move A's body along n
        let mut p2 = poses(&p);
        p2[deepest.body_a].0 += deepest.normal * eps;
        let c2 = detect(&m, opts, &p2);
        let d2 = c2.between(deepest.geom_a, deepest.geom_b).map(|k| k.distance).fold(f64::INFINITY, f64::min);
        let gain = d2 - deepest.distance;
        assert!((gain - eps).abs() < 0.05 * eps, "{kinds:?}: distance gain {gain} for a step {eps} along n");
    }
}
