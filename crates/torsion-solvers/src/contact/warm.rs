//! Warm starts of a step's contact impulses from the input state's (`GenState::warm`, spec 001 §3.10: the warm
//! start is an input, its gradient stopped). A contact continues from the impulses of its own persistent id; a
//! contact whose id is new takes, where one is left, the impulses of a contact of the same two bodies at the same
//! place with a parallel normal (within [`WARM_PLACE`]), re-expressed in its own frame. Parry reports a corner
//! where two stacked boxes' corners coincide either as a vertex of one box on the other's face or the other way
//! round, as rounding decides from step to step: by id alone such a corner started cold (λ = 0, a separating
//! contact), so the direct solve's first set missed it, the redundant set's other corners took the load and the
//! island was rejected to the ADMM passes (issue 15: resting columns of 5 boxes).
use super::ContactFrame;
use torsion_math::Vec3;
use torsion_model::{ContactWarmStart, WarmImpulse};

/// How far apart (m) two contacts of one body pair may be and still be one place (and how far from parallel their
/// normals, 1 − |n·n'|): rounding, not motion — the same corner reported from either box is 1e-12 m apart at rest.
pub const WARM_PLACE: f64 = 1e-6;

/// The warm-start record of contact `c` with impulses λ_n = `ln`, λ_t = `lt` (its frame's tangents).
pub fn warm_impulse(c: &ContactFrame, ln: f64, lt: [f64; 2]) -> WarmImpulse {
    WarmImpulse {
        id: c.id,
        normal: ln,
        tangent: lt,
        t1: c.tangents[0].into(),
        point: c.point.into(),
        n: c.normal.into(),
        bodies: [c.body_a, c.body_b],
    }
}

/// The impulse `w` acts with, as a world vector on its body B: λ_n n + λ_t1 t1 + λ_t2 (n × t1).
fn world_impulse(w: &WarmImpulse) -> Vec3 {
    let (n, t1) = (Vec3::from(w.n), Vec3::from(w.t1));
    n * w.normal + t1 * w.tangent[0] + n.cross(&t1) * w.tangent[1]
}

/// Whether `w` was recorded at `c`'s place: the same two bodies (either order), points within [`WARM_PLACE`],
/// normals parallel to it.
fn same_place(c: &ContactFrame, w: &WarmImpulse) -> bool {
    let pair = [c.body_a, c.body_b];
    (w.bodies == pair || w.bodies == [pair[1], pair[0]])
        && (Vec3::from(w.point) - c.point).norm() <= WARM_PLACE
        && 1.0 - Vec3::from(w.n).dot(&c.normal).abs() <= WARM_PLACE
}

/// The warm start of `contacts` (their order) from `warm` into `ln` (one per contact) and `lt` (two per contact,
/// along each contact's tangents), refilled in place; `claimed` is scratch (one flag per record of `warm`). By id
/// first; then each contact left (in order) takes the first unclaimed record of its place (`same_place`), its
/// impulse on body B turned into the contact's frame (negated where the bodies are swapped); none: 0.
/// Deterministic in its inputs; allocates nothing once the buffers have their sizes.
pub fn warm_start_into(
    contacts: &[ContactFrame],
    warm: &ContactWarmStart,
    claimed: &mut Vec<bool>,
    ln: &mut Vec<f64>,
    lt: &mut Vec<f64>,
) {
    let records = warm.as_slice();
    claimed.clear();
    claimed.resize(records.len(), false);
    ln.clear();
    lt.clear();
    let mut missed = false;
    for c in contacts {
        match warm.index(c.id) {
            Some(k) => {
                claimed[k] = true;
                ln.push(records[k].normal);
                lt.extend(records[k].tangent);
            }
            None => {
                missed = true;
                ln.push(0.0);
                lt.extend([0.0; 2]);
            }
        }
    }
    if !missed || records.is_empty() {
        return;
    }
    for (i, c) in contacts.iter().enumerate() {
        if warm.index(c.id).is_some() {
            continue;
        }
        let Some(k) = (0..records.len()).find(|&k| !claimed[k] && same_place(c, &records[k])) else { continue };
        claimed[k] = true;
        let w = &records[k];
        let p = if w.bodies[1] == c.body_b { world_impulse(w) } else { -world_impulse(w) };
        ln[i] = p.dot(&c.normal);
        lt[2 * i] = p.dot(&c.tangents[0]);
        lt[2 * i + 1] = p.dot(&c.tangents[1]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contact::ContactGeom;

    fn frame(id: u64, bodies: [usize; 2], point: [f64; 3], n: Vec3, t1: Vec3) -> ContactFrame {
        let geom = ContactGeom {
            body_a: bodies[0],
            body_b: bodies[1],
            point: point.into(),
            normal: n,
            tangents: [t1, n.cross(&t1)],
            distance: 0.0,
            mu: 0.5,
            restitution: 0.0,
        };
        ContactFrame::new(geom, id)
    }

    /// A corner reported under its other id (the bodies swapped, n and t2 negated, another t1) continues from the
    /// same impulse on each body; a record claimed by id, another place or another pair is not taken; the known
    /// ids keep theirs.
    #[test]
    fn a_contact_under_a_new_id_continues_from_the_same_place() {
        let (z, x, y) = (Vec3::z(), Vec3::x(), Vec3::y());
        let old = [frame(1, [2, 1], [0.1, 0.1, 0.2], z, x), frame(2, [2, 1], [-0.1, 0.1, 0.2], z, x)];
        let warm: ContactWarmStart =
            [warm_impulse(&old[0], 0.3, [0.01, -0.02]), warm_impulse(&old[1], 0.4, [0.0, 0.05])].into_iter().collect();
        // contact 9: old 1's corner from the other box (bodies swapped, normal −z, t1 = y); contact 2 by id; 5 at
        // old 1's place on another pair; 6 a new place
        let t = Vec3::new(0.6, 0.8, 0.0);
        let now = [
            frame(5, [3, 1], [0.1, 0.1, 0.2], z, x),
            frame(9, [1, 2], [0.1, 0.1, 0.2 + 1e-12], -z, y),
            frame(2, [2, 1], [-0.1, 0.1, 0.2], z, t),
            frame(6, [2, 1], [0.1, -0.1, 0.2], z, x),
        ];
        let (mut claimed, mut ln, mut lt) = (vec![], vec![], vec![]);
        warm_start_into(&now, &warm, &mut claimed, &mut ln, &mut lt);
        assert_eq!(ln[0], 0.0);
        assert_eq!((ln[2], [lt[4], lt[5]]), (0.4, [0.0, 0.05]), "by id: as recorded");
        assert_eq!((ln[3], lt[6], lt[7]), (0.0, 0.0, 0.0));
        // old 1 acted on its B (body 1) with 0.3 z + 0.01 x − 0.02 y; contact 9's B is body 2: the opposite
        let p = -(z * 0.3 + x * 0.01 - y * 0.02);
        let c = &now[1];
        let want = [p.dot(&c.normal), p.dot(&c.tangents[0]), p.dot(&c.tangents[1])];
        assert!(want[0] == 0.3 && (ln[1] - want[0]).abs() < 1e-15, "{} vs {want:?}", ln[1]);
        assert!((lt[2] - want[1]).abs() < 1e-15 && (lt[3] - want[2]).abs() < 1e-15, "{lt:?} vs {want:?}");
        // each record feeds one contact: a second copy of contact 9 stays cold
        let twice = [now[1].clone(), frame(10, [1, 2], [0.1, 0.1, 0.2], -z, y)];
        warm_start_into(&twice, &warm, &mut claimed, &mut ln, &mut lt);
        assert_eq!((ln[0], ln[1]), (0.3, 0.0));
    }
}
