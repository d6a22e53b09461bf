//! Narrow phase: parry's contact manifold of one shape pair (`DefaultQueryDispatcher::contact_manifolds`, no
//! hand-written GJK/EPA) → [`Contact`]s with spec 001 §3.1 conventions and persistent ids.
use crate::contact::{Contact, ContactId, Contacts};
use crate::frames::tangent_frame;
use crate::shapes::from_parry;
use parry3d_f64::math::{Pose, Vector};
use parry3d_f64::query::TrackedContact;
use parry3d_f64::query::{
    ContactManifold, ContactManifoldsWorkspace, DefaultQueryDispatcher, PersistentQueryDispatcher,
};
use parry3d_f64::shape::{Cuboid, Shape};
use torsion_math::Vec3;

/// Reused manifold storage (no allocation per pair once warm).
#[derive(Default)]
pub(crate) struct PairScratch {
    manifolds: Vec<ContactManifold<(), ()>>,
    workspace: Option<ContactManifoldsWorkspace>,
    /// contacts dropped because parry returned no usable normal (never expected; counted, not silent)
    pub degenerate: usize,
    /// `CollisionOptions::complete_box_faces` (set by the world for each detection)
    pub complete_box_faces: bool,
}

/// Within this angle (rad) of GJK's direction a polytope's face normal is the contact normal (see [`emit_pair`]).
const FACE_SNAP: f64 = 1e-6;

/// A face vertex within this distance (relative to the larger box's largest half extent) of the other box's face
/// counts as on it ([`complete_face_face`]).
const ON_FACE_REL: f64 = 1e-9;

/// The outward normal (cuboid frame) of the face `dir` selects (as `Cuboid::support_face`): its axis and sign.
fn face_axis(dir: Vector) -> (usize, f64) {
    let k = dir.abs().max_position();
    (k, if dir[k] < 0.0 { -1.0 } else { 1.0 })
}

/// `p` (cuboid frame) projected on the face (`k`, `sign`) of `c` when it lies over that face to `tol`: the
/// projection and the signed distance (positive outside the cuboid).
fn over_face(c: &Cuboid, (k, sign): (usize, f64), p: Vector, tol: f64) -> Option<(Vector, f64)> {
    let he = c.half_extents;
    if (0..3).any(|j| j != k && p[j].abs() > he[j] + tol) {
        return None;
    }
    let mut q = p;
    q[k] = sign * he[k];
    Some((q, sign * p[k] - he[k]))
}

/// Completes parry's face–face manifold of two cuboids (`m`, shape 1 then 2, `pos12`: 2's frame in 1's): parry
/// keeps a face's vertex when it lies strictly inside the other face (signs of 2-D cross products), so a vertex on
/// the other face's boundary — boxes of one width stacked or sliding along each other, their side faces coplanar —
/// is kept or dropped by round-off (a 1e-17 rad tilt: two of the four corners on a diagonal, about which the upper
/// box then tips, 0.4 mm into the lower one in one step on contact-compare's stack). Each vertex of either face
/// over the other face to [`ON_FACE_REL`] is added, unless the manifold has that feature pair or a point there
/// (a crossing of edges at the vertex, a coincident vertex of the other face). Only when both normals are a face's
/// (an edge–edge manifold is left as it is).
fn complete_face_face(pos12: &Pose, c1: &Cuboid, c2: &Cuboid, m: &mut ContactManifold<(), ()>) {
    let is_face = |n: Vector| {
        let (k, s) = face_axis(n);
        s * n[k] >= FACE_SNAP.cos() * n.length()
    };
    if m.points.is_empty() || !is_face(m.local_n1) || !is_face(m.local_n2) {
        return;
    }
    let (a1, a2) = (face_axis(m.local_n1), face_axis(m.local_n2));
    let (f1, f2) = (c1.support_face(m.local_n1), c2.support_face(m.local_n2));
    let tol = ON_FACE_REL * c1.half_extents.max_element().max(c2.half_extents.max_element());
    let pos21 = pos12.inverse();
    let add = |m: &mut ContactManifold<(), ()>, c: TrackedContact<()>| {
        let known = m
            .points
            .iter()
            .any(|p| (p.fid1, p.fid2) == (c.fid1, c.fid2) || p.local_p1.distance_squared(c.local_p1) <= tol * tol);
        if !known {
            m.points.push(c);
        }
    };
    for i in 0..f1.num_vertices {
        let v = f1.vertices[i];
        if let Some((q, d)) = over_face(c2, a2, pos21 * v, tol) {
            add(m, TrackedContact::new(v, q, f1.vids[i], f2.fid, d));
        }
    }
    for i in 0..f2.num_vertices {
        let v = f2.vertices[i];
        if let Some((q, d)) = over_face(c1, a1, pos12 * v, tol) {
            add(m, TrackedContact::new(q, v, f1.fid, f2.vids[i], d));
        }
    }
}

/// Whether `a` and `b` are polytopes whose faces we read (mesh hulls, boxes), not two boxes (whose manifold is
/// exact): parry's GJK / EPA pairs.
pub(crate) fn polytope_pair(a: &dyn Shape, b: &dyn Shape) -> bool {
    let poly = |s: &dyn Shape| s.as_convex_polyhedron().is_some() || s.as_cuboid().is_some();
    poly(a) && poly(b) && !(a.as_cuboid().is_some() && b.as_cuboid().is_some())
}

/// The outward normal (shape frame) of the face of `s` best aligned with `dir` (unit), and their cosine.
fn best_face(s: &dyn Shape, dir: Vector) -> Option<(f64, Vector)> {
    let best = |it: &mut dyn Iterator<Item = Vector>| it.map(|n| (n.dot(dir), n)).max_by(|x, y| x.0.total_cmp(&y.0));
    if let Some(p) = s.as_convex_polyhedron() {
        return best(&mut p.faces().iter().map(|f| f.normal));
    }
    s.as_cuboid()?;
    best(&mut [Vector::X, Vector::Y, Vector::Z].into_iter().flat_map(|e| [e, -e]))
}

/// Append the contacts of shape `a` (index, body, shape, world pose) against shape `b` with distance ≤ `margin`.
/// parry's manifold normal `local_n1` points out of A towards B, so the contact normal is its opposite in world.
/// For two polytopes (mesh hulls, boxes; not two boxes, whose manifold is exact) that normal is GJK's direction
/// between the closest points, accurate only to ~1e-17 m / gap (noise at a time of impact): when a face of
/// either shape is within [`FACE_SNAP`] of it (a vertex or a parallel face touching that face), the face's
/// exact normal is taken, and each point's distance is measured along it.
pub(crate) fn emit_pair(
    a: (usize, usize, &dyn Shape, &Pose),
    b: (usize, usize, &dyn Shape, &Pose),
    margin: f64,
    prediction: f64,
    prev_t1: &dyn Fn(&ContactId) -> Option<Vec3>,
    scratch: &mut PairScratch,
    out: &mut Contacts,
) {
    let (ga, body_a, sa, pa) = a;
    let (gb, body_b, sb, pb) = b;
    let pos12 = pa.inv_mul(pb);
    for m in scratch.manifolds.iter_mut() {
        m.points.clear();
    }
    scratch.manifolds.truncate(1);
    if DefaultQueryDispatcher
        .contact_manifolds(&pos12, sa, sb, prediction, &mut scratch.manifolds, &mut scratch.workspace)
        .is_err()
    {
        return; // unsupported pair (plane–plane only, reported at construction)
    }
    if let (Some(c1), Some(c2), true) = (sa.as_cuboid(), sb.as_cuboid(), scratch.complete_box_faces) {
        for m in scratch.manifolds.iter_mut() {
            complete_face_face(&pos12, c1, c2, m);
        }
    }
    let polytopes = polytope_pair(sa, sb);
    for m in &scratch.manifolds {
        // composite shapes (not built by this crate) would carry sub-shape poses; all ours are convex
        let mut n_world = -from_parry(pa.rotation * m.local_n1);
        let mut snapped = false;
        if polytopes {
            // A's face along local_n1 (the contact normal is its opposite), B's along local_n2
            let fa = best_face(sa, m.local_n1).map(|(c, n)| (c, -from_parry(pa.rotation * n)));
            let fb = best_face(sb, m.local_n2).map(|(c, n)| (c, from_parry(pb.rotation * n)));
            let face = [fa, fb].into_iter().flatten().max_by(|x, y| x.0.total_cmp(&y.0));
            if let Some((_, n)) = face.filter(|(c, _)| *c >= FACE_SNAP.cos()) {
                n_world = n;
                snapped = true;
            }
        }
        for tc in m.contacts() {
            let pw_a = from_parry(pa.transform_point(tc.local_p1));
            let pw_b = from_parry(pb.transform_point(tc.local_p2));
            let dist = if snapped { n_world.dot(&(pw_a - pw_b)) } else { tc.dist };
            if dist > margin {
                continue;
            }
            let len = n_world.norm();
            let normal = if len > 0.5 && len.is_finite() {
                n_world / len
            } else {
                // fall back to the witness direction B → A (sign of the distance accounted for)
                let d = (pw_a - pw_b) * dist.signum();
                let l = d.norm();
                if !(l > 1e-12 && l.is_finite()) {
                    scratch.degenerate += 1;
                    continue;
                }
                d / l
            };
            let id = ContactId { geom_a: ga, geom_b: gb, feature: ((tc.fid1.0 as u64) << 32) | tc.fid2.0 as u64 };
            out.contacts.push(Contact {
                body_a,
                body_b,
                geom_a: ga,
                geom_b: gb,
                point: 0.5 * (pw_a + pw_b),
                point_a: pw_a,
                point_b: pw_b,
                normal,
                distance: dist,
                tangents: tangent_frame(&normal, prev_t1(&id).as_ref()),
                id,
            });
        }
    }
}
