//! Narrow phase: parry's contact manifold of one shape pair (`DefaultQueryDispatcher::contact_manifolds`, no
//! hand-written GJK/EPA) → [`Contact`]s with spec 001 §3.1 conventions and persistent ids.
use crate::contact::{Contact, ContactId, Contacts};
use crate::frames::tangent_frame;
use crate::shapes::from_parry;
use parry3d_f64::math::Pose;
use parry3d_f64::query::{
    ContactManifold, ContactManifoldsWorkspace, DefaultQueryDispatcher, PersistentQueryDispatcher,
};
use parry3d_f64::shape::Shape;
use torsion_math::Vec3;

/// Reused manifold storage (no allocation per pair once warm).
#[derive(Default)]
pub(crate) struct PairScratch {
    manifolds: Vec<ContactManifold<(), ()>>,
    workspace: Option<ContactManifoldsWorkspace>,
    /// contacts dropped because parry returned no usable normal (never expected; counted, not silent)
    pub degenerate: usize,
}

/// Append the contacts of shape `a` (index, body, shape, world pose) against shape `b` with distance ≤ `margin`.
/// parry's manifold normal `local_n1` points out of A towards B, so the contact normal is its opposite in world.
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
    for m in &scratch.manifolds {
        // composite shapes (not built by this crate) would carry sub-shape poses; all ours are convex
        let n_world = -from_parry(pa.rotation * m.local_n1);
        for tc in m.contacts() {
            if tc.dist > margin {
                continue;
            }
            let pw_a = from_parry(pa.transform_point(tc.local_p1));
            let pw_b = from_parry(pb.transform_point(tc.local_p2));
            let len = n_world.norm();
            let normal = if len > 0.5 && len.is_finite() {
                n_world / len
            } else {
                // fall back to the witness direction B → A (sign of the distance accounted for)
                let d = (pw_a - pw_b) * tc.dist.signum();
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
                distance: tc.dist,
                tangents: tangent_frame(&normal, prev_t1(&id).as_ref()),
                id,
            });
        }
    }
}
