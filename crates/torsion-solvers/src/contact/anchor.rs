//! How a contact's geometry moves with the bodies in a tangent pass (spec 001 §3.10; docs/gradients.md), shared
//! by the contact steppers' forward-mode Jacobians (ncp's `tangent.rs`, the LCP stepper): the contact set is held
//! fixed, its anchors are read at the base state and carried by dual-number poses.
use super::frames::{ContactFrame, ContactGeom};
use torsion_math::{Scalar, Vec3};

/// How a contact's geometry moves with the bodies (spec 001 §3.10: J(q) through collision detection, to first
/// order with the contact set held fixed). Flat / vertex contacts: the point is a material point of A, the
/// frame turns with B. A curved side (`ContactFrame::radius` > 0, a sphere or capsule) is a ball of that radius
/// around a material centre: its contact point rolls (the point of A on the line of centres), and the frame
/// turns with the *other* body (a face), or follows the line of centres when both are curved. The signed
/// distance is n · (p_A − p_B) of the two surface points.
pub struct Anchor {
    /// A's surface point (or centre when curved) in A's frame; B's likewise in B's
    a: Vec3,
    b: Vec3,
    /// normal and tangents in the frame of the body they turn with (B unless only B is curved)
    n: Vec3,
    t: [Vec3; 2],
    /// world tangents at the base (both curved: projected on the moving normal)
    t_world: [Vec3; 2],
}

type Pose = torsion_math::spatial::Se3;

impl Anchor {
    pub fn new(c: &ContactFrame, xa: &Pose, xb: &Pose) -> Self {
        let [ra, rb] = c.radius;
        // witness points: A's surface at +d/2 along n from the midpoint, B's at −d/2; centres further in
        // flat / vertex on both sides: the contact point itself, as a material point of each body; otherwise
        // the witness points (A's surface at +d/2 along n from the midpoint, B's at −d/2), curved sides'
        // centres a radius further in
        let (pa, pb) = if c.radius == [0.0; 2] {
            (c.point, c.point)
        } else {
            (c.point + c.normal * (0.5 * c.distance + ra), c.point - c.normal * (0.5 * c.distance + rb))
        };
        let frame = if rb > 0.0 && ra <= 0.0 { xa } else { xb };
        let rt = frame.rot.transpose();
        Anchor {
            a: xa.inverse().act_point(&pa),
            b: xb.inverse().act_point(&pb),
            n: rt * c.normal,
            t: [rt * c.tangents[0], rt * c.tangents[1]],
            t_world: c.tangents,
        }
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
        let (n, t) = if c.radius[0] > 0.0 && c.radius[1] > 0.0 {
            let d = ca - cb;
            let n = d / d.norm();
            let t1 = lift3(&self.t_world[0]);
            let t1 = t1 - n * n.dot(&t1);
            let t1 = t1 / t1.norm();
            (n, [t1, n.cross(&t1)])
        } else {
            let rot = if c.radius[1] > 0.0 { xa.rot } else { xb.rot };
            (rot * lift3(&self.n), [rot * lift3(&self.t[0]), rot * lift3(&self.t[1])])
        };
        if c.radius == [0.0; 2] {
            // both flat / vertex: one material point of A and of B, coincident at the base
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
