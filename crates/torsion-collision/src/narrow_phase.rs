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
use parry3d_f64::shape::{Cuboid, PackedFeatureId, PolygonalFeature, Shape, ShapeType};
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

/// The manifold of a half-space (a plane) and a convex shape with a polygonal feature map (a box, capsule,
/// cylinder or hull) into `m`, keeping its point list's storage: parry 0.31's `contact_manifold_halfspace_pfm`
/// (the path `DefaultQueryDispatcher::contact_manifolds` takes for such a pair) with the same arithmetic, so the
/// same bits, but for one thing: parry moves the old point list out (`core::mem::take`, to carry each contact's
/// data over by feature ids, and our contacts carry none) and pushes into an empty one, one allocation per call.
/// Into the first of `manifolds` (made when there is none, as the dispatcher does); returns false, touching
/// nothing, for every other pair (the dispatcher's).
fn halfspace_pfm(
    pos12: &Pose,
    s1: &dyn Shape,
    s2: &dyn Shape,
    prediction: f64,
    manifolds: &mut Vec<ContactManifold<(), ()>>,
) -> bool {
    // the dispatcher's routing: composite / mesh / height-field / voxel shapes and balls take other paths
    let convex = |s: &dyn Shape| {
        s.as_composite_shape().is_none()
            && !matches!(
                s.shape_type(),
                ShapeType::TriMesh | ShapeType::HeightField | ShapeType::Voxels | ShapeType::Ball
            )
    };
    if !(convex(s1) && convex(s2)) {
        return false;
    }
    let flipped_pos;
    let (pos12, halfspace1, (pfm2, border_radius2), flipped) =
        match (s1.as_halfspace(), s1.as_polygonal_feature_map(), s2.as_halfspace(), s2.as_polygonal_feature_map()) {
            (Some(h), _, None, Some(p)) => (pos12, h, p, false),
            (None, Some(p), Some(h), _) => {
                flipped_pos = pos12.inverse();
                (&flipped_pos, h, p, true)
            }
            _ => return false,
        };
    if manifolds.is_empty() {
        manifolds.push(ContactManifold::new());
    }
    let m = &mut manifolds[0];
    let normal1_2 = pos12.rotation.inverse() * halfspace1.normal;
    let mut feature2 = PolygonalFeature::default();
    pfm2.local_support_feature(-normal1_2, &mut feature2);
    m.points.clear();
    for i in 0..feature2.num_vertices {
        let vtx2 = feature2.vertices[i];
        let vtx2_1 = pos12 * vtx2;
        let dist_to_plane = vtx2_1.dot(halfspace1.normal);
        if dist_to_plane - border_radius2 <= prediction {
            m.points.push(TrackedContact::flipped(
                vtx2_1 - halfspace1.normal * dist_to_plane,
                vtx2 - normal1_2 * border_radius2,
                PackedFeatureId::face(0),
                feature2.vids[i],
                dist_to_plane - border_radius2,
                flipped,
            ));
        }
    }
    if flipped {
        m.local_n1 = -normal1_2;
        m.local_n2 = halfspace1.normal;
    } else {
        m.local_n1 = halfspace1.normal;
        m.local_n2 = -normal1_2;
    }
    true
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
    if !halfspace_pfm(&pos12, sa, sb, prediction, &mut scratch.manifolds)
        && DefaultQueryDispatcher
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

#[cfg(test)]
mod tests {
    use super::*;
    use parry3d_f64::math::Rotation;
    use parry3d_f64::shape::SharedShape;

    /// [`halfspace_pfm`] gives parry's dispatcher's manifold bit for bit (points, feature ids, distances, normals)
    /// for a plane against a box, a capsule, a cylinder and a hull, either way round, over tilted poses in and
    /// out of contact; and refuses the pairs it does not take (plane–ball, plane–plane, box–box).
    #[test]
    fn halfspace_manifold_is_parrys_bit_for_bit() {
        let plane = SharedShape::halfspace(Vector::Z);
        let hull = [[0.1, 0.0, 0.0], [-0.05, 0.08, 0.0], [-0.05, -0.08, 0.0], [0.0, 0.0, 0.12], [0.02, 0.01, -0.1]];
        let hull: Vec<Vector> = hull.iter().map(|p| Vector::new(p[0], p[1], p[2])).collect();
        let others = [
            SharedShape::cuboid(0.1, 0.2, 0.05),
            SharedShape::capsule_z(0.1, 0.03),
            SharedShape::cylinder(0.05, 0.1),
            SharedShape::convex_hull(&hull).unwrap(),
        ];
        let mut mine: Vec<ContactManifold<(), ()>> = vec![];
        let mut cases = 0;
        for other in &others {
            for k in 0..40 {
                let t = k as f64;
                let rot = Rotation::from_scaled_axis(Vector::new(0.3 * t.sin(), 0.2 * (1.3 * t).cos(), 0.1 * t));
                let rot = if k % 5 == 0 { Rotation::IDENTITY } else { rot };
                let pose = Pose::from_parts(Vector::new(0.01 * t, -0.02, 0.12 - 0.006 * t), rot);
                let pose_plane = Pose::from_parts(Vector::new(0.0, 0.0, 0.001 * t), Rotation::IDENTITY);
                for (s1, s2, p1, p2) in [(&plane, other, &pose_plane, &pose), (other, &plane, &pose, &pose_plane)] {
                    let pos12 = p1.inv_mul(p2);
                    let mut theirs: Vec<ContactManifold<(), ()>> = vec![];
                    let mut ws = None;
                    DefaultQueryDispatcher.contact_manifolds(&pos12, &**s1, &**s2, 0.01, &mut theirs, &mut ws).unwrap();
                    assert!(halfspace_pfm(&pos12, &**s1, &**s2, 0.01, &mut mine));
                    let (a, b) = (&theirs[0], &mine[0]);
                    assert_eq!((a.local_n1, a.local_n2), (b.local_n1, b.local_n2), "case {k}");
                    assert_eq!(a.points.len(), b.points.len(), "case {k}");
                    for (x, y) in a.points.iter().zip(&b.points) {
                        assert_eq!((x.local_p1, x.local_p2, x.fid1, x.fid2), (y.local_p1, y.local_p2, y.fid1, y.fid2));
                        assert_eq!(x.dist.to_bits(), y.dist.to_bits(), "case {k}");
                    }
                    cases += !a.points.is_empty() as usize;
                }
            }
        }
        assert!(cases > 100, "{cases} cases in contact");
        let (ball, bx) = (SharedShape::ball(0.1), SharedShape::cuboid(0.1, 0.1, 0.1));
        for (s1, s2) in [(&plane, &ball), (&ball, &plane), (&plane, &plane), (&bx, &bx)] {
            assert!(!halfspace_pfm(&Pose::IDENTITY, &**s1, &**s2, 0.01, &mut mine));
        }
    }
}
