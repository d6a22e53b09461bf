//! How a contact's geometry moves with the bodies in a tangent pass (spec 001 §3.10; docs/gradients.md), shared
//! by the contact steppers' forward-mode Jacobians (ncp's `tangent.rs`, the LCP stepper): the contact set is held
//! fixed, its anchors are read at the base state and carried by dual-number poses.
use super::frames::{ContactFrame, ContactGeom};
use torsion_math::{Scalar, Vec3};

/// How a contact's geometry moves with the bodies (spec 001 §3.10: J(q) through collision detection, to first
/// order with the contact set held fixed). A curved side (`ContactFrame::radius` > 0, a sphere or capsule) is a
/// ball of that radius around a material centre: its contact point rolls (the point of A on the line of centres),
/// and the normal turns with the *other* body (a face), or follows the line of centres when both are curved. Flat /
/// vertex sides, the normal turning with B:
/// - detected contacts (`ContactFrame::shapes` set): A's witness point (a vertex) is a material point of A, B's
///   (on its face) of B, the distance is n · (p_A − p_B) and the contact point their midpoint p_A − n d/2, as
///   detection reports it; the tangents follow the normal by detection's rule (`torsion_collision::tangent_frame`:
///   a fixed world reference r, `tangent_reference`, projected on the tangent plane), t1 = normalize(r − n (n·r)),
///   t2 = n × t1 — a body spinning about the normal leaves them (docs/gradients.md);
/// - hand-built contacts (`shapes` None): the point is one material point of A and of B, coincident at the base
///   (the callers' fixed material points), and the tangents turn with the normal's body (both curved: t1
///   projected on the moving normal).
pub struct Anchor {
    /// A's surface point (or centre when curved) in A's frame; B's likewise in B's
    a: Vec3,
    b: Vec3,
    /// the normal in the frame of the body it turns with (B unless only B is curved)
    n: Vec3,
    tangents: Tangents,
    /// the contact point is the witness points' midpoint (else A's material point, hand-built flat contacts)
    midpoint: bool,
}

/// How the tangents move: turned with the normal's body (their local values) or projected from a world reference.
enum Tangents {
    Turn([Vec3; 2]),
    Project(Vec3),
}

type Pose = torsion_math::spatial::Se3;

impl Anchor {
    pub fn new(c: &ContactFrame, xa: &Pose, xb: &Pose) -> Self {
        let [ra, rb] = c.radius;
        let (detected, flat) = (c.shapes.is_some(), c.radius == [0.0; 2]);
        let midpoint = detected || !flat;
        // the witness points (A's surface at +d/2 along n from the midpoint, B's at −d/2), curved sides' centres
        // a radius further in; hand-built flat: the contact point itself, as a material point of each body
        let (pa, pb) = if midpoint {
            (c.point + c.normal * (0.5 * c.distance + ra), c.point - c.normal * (0.5 * c.distance + rb))
        } else {
            (c.point, c.point)
        };
        let frame = if rb > 0.0 && ra <= 0.0 { xa } else { xb };
        let rt = frame.rot.transpose();
        let tangents = if detected {
            Tangents::Project(torsion_collision::tangent_reference(&c.normal, &c.tangents[0]))
        } else if ra > 0.0 && rb > 0.0 {
            Tangents::Project(c.tangents[0])
        } else {
            Tangents::Turn([rt * c.tangents[0], rt * c.tangents[1]])
        };
        Anchor { a: xa.inverse().act_point(&pa), b: xb.inverse().act_point(&pb), n: rt * c.normal, tangents, midpoint }
    }

    pub fn geom<T: Scalar>(
        &self,
        c: &ContactFrame,
        xa: &torsion_math::spatial::Se3<T>,
        xb: &torsion_math::spatial::Se3<T>,
    ) -> ContactGeom<T> {
        let lift3 = |x: &Vec3| x.map(T::c);
        let [ra, rb] = c.radius.map(T::c);
        let (ca, cb) = (xa.act_point(&lift3(&self.a)), xb.act_point(&lift3(&self.b)));
        let rot = if c.radius[1] > 0.0 { xa.rot } else { xb.rot };
        let n = if c.radius[0] > 0.0 && c.radius[1] > 0.0 {
            let d = ca - cb;
            d / d.norm()
        } else {
            rot * lift3(&self.n)
        };
        let t = match &self.tangents {
            Tangents::Turn([t1, t2]) => [rot * lift3(t1), rot * lift3(t2)],
            Tangents::Project(r) => {
                // |r − n (n·r)| ≥ √(2/3) at the base (r an axis least aligned with n₀, or t1₀ ⊥ n₀): no guard
                // needed near it
                let t1 = lift3(r);
                let t1 = t1 - n * n.dot(&t1);
                let t1 = t1 / t1.norm();
                [t1, n.cross(&t1)]
            }
        };
        if !self.midpoint {
            // hand-built flat: one material point of A and of B, coincident at the base
            return ContactGeom {
                body_a: c.body_a,
                body_b: c.body_b,
                point: ca,
                normal: n,
                tangents: t,
                distance: T::c(c.distance) + n.dot(&(ca - cb)),
                mu: T::c(c.mu),
                restitution: T::c(c.restitution),
            };
        }
        let pa = if c.radius[0] > 0.0 { ca - n * ra } else { ca };
        let pb = if c.radius[1] > 0.0 { cb + n * rb } else { cb };
        let distance = n.dot(&(pa - pb));
        ContactGeom {
            body_a: c.body_a,
            body_b: c.body_b,
            point: pa - n * (distance * T::c(0.5)),
            normal: n,
            tangents: t,
            distance,
            mu: T::c(c.mu),
            restitution: T::c(c.restitution),
        }
    }
}
