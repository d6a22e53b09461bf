//! Contact frames (spec 001 §3.1; open decision 3 of §6): a tangent pair (t1, t2) with (n, t1, t2) right-handed
//! orthonormal, chosen continuously over time so a warm start λ_t from the previous step stays meaningful.
use torsion_math::Vec3;

/// Below this length a projected tangent is considered degenerate and the deterministic choice is used.
const DEGENERATE: f64 = 1e-6;

/// Deterministic tangent for a new contact: the world axis least aligned with `n` (first one on ties),
/// projected onto the tangent plane and normalised. For n = +z this gives t1 = +x, t2 = +y.
pub fn default_tangent(n: &Vec3) -> Vec3 {
    let e = least_aligned_axis(n);
    let t = e - n * n.dot(&e);
    // |t|² = 1 − (n·e)² ≥ 2/3 for the least-aligned axis of a unit n: never degenerate
    t / t.norm().max(DEGENERATE)
}

/// The fixed world vector r whose projection on the tangent plane of `n` gave the first tangent `t1` (`t1` =
/// normalize(r − n (n · r))): the [`default_tangent`]'s axis when `t1` is that tangent (bit for bit: a new contact,
/// either normal sign), otherwise `t1` itself (a contact continued from a previous t1, taken as lying in this
/// tangent plane; the previous t1 is not kept). The Jacobians move the tangents with the normal through this rule
/// (docs/gradients.md).
pub fn tangent_reference(n: &Vec3, t1: &Vec3) -> Vec3 {
    if default_tangent(n) == *t1 {
        least_aligned_axis(n)
    } else {
        *t1
    }
}

/// The world axis least aligned with `n` (first one on ties).
fn least_aligned_axis(n: &Vec3) -> Vec3 {
    let a = n.abs();
    if a.x <= a.y && a.x <= a.z {
        Vec3::x()
    } else if a.y <= a.z {
        Vec3::y()
    } else {
        Vec3::z()
    }
}

/// Tangents for normal `n` (unit). With the previous step's t1 of the same contact, t1 is that vector projected on
/// the new tangent plane and renormalised (continuous over time); otherwise, or when the projection is degenerate
/// (the normal turned by ~90°), the [`default_tangent`]. Returns [t1, t2] with t2 = n × t1; never NaN for a unit n.
pub fn tangent_frame(n: &Vec3, previous_t1: Option<&Vec3>) -> [Vec3; 2] {
    let t1 = match previous_t1 {
        Some(p) => {
            let t = p - n * n.dot(p);
            let l = t.norm();
            if l > DEGENERATE && l.is_finite() {
                t / l
            } else {
                default_tangent(n)
            }
        }
        None => default_tangent(n),
    };
    [t1, n.cross(&t1)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_frame(n: &Vec3, t: &[Vec3; 2]) {
        assert!((t[0].norm() - 1.0).abs() < 1e-12 && (t[1].norm() - 1.0).abs() < 1e-12);
        assert!(n.dot(&t[0]).abs() < 1e-12 && n.dot(&t[1]).abs() < 1e-12 && t[0].dot(&t[1]).abs() < 1e-12);
        // right-handed: n × t1 = t2 and t1 × t2 = n
        assert!((t[0].cross(&t[1]) - n).norm() < 1e-12);
    }

    /// The reference reproduces t1 through the projection rule, for a new contact (the axis, either normal sign)
    /// and a continued one (t1 itself).
    #[test]
    fn tangent_reference_reproduces_t1() {
        let n = Vec3::new(0.3, -0.5, 0.8).normalize();
        let proj = |r: Vec3, n: &Vec3| (r - n * n.dot(&r)).normalize();
        for n in [n, -n] {
            let t1 = tangent_frame(&n, None)[0];
            let r = tangent_reference(&n, &t1);
            assert_eq!(r, Vec3::x());
            assert!((proj(r, &n) - t1).norm() < 1e-15);
            let warm = tangent_frame(&n, Some(&Vec3::new(0.2, 1.0, 0.1)))[0];
            assert_eq!(tangent_reference(&n, &warm), warm);
        }
    }

    #[test]
    fn default_frame_is_orthonormal_right_handed() {
        let z = Vec3::z();
        let t = tangent_frame(&z, None);
        assert!((t[0] - Vec3::x()).norm() < 1e-15 && (t[1] - Vec3::y()).norm() < 1e-15);
        for n in [
            Vec3::x(),
            -Vec3::y(),
            -Vec3::z(),
            Vec3::new(1.0, 2.0, -3.0).normalize(),
            Vec3::new(1.0, 1.0, 1.0).normalize(),
        ] {
            check_frame(&n, &tangent_frame(&n, None));
        }
    }

    #[test]
    fn continuity_follows_previous_t1() {
        // a normal rotating slowly about x: t1 stays near its previous value at every step (no flips), even when
        // the default choice would jump (the least-aligned axis changes along the way)
        let mut prev = tangent_frame(&Vec3::z(), None)[0];
        let mut n_prev = Vec3::z();
        for k in 1..=200 {
            let a = k as f64 * 0.01;
            let n = Vec3::new(0.3 * a.sin(), -a.sin(), a.cos()).normalize();
            let t = tangent_frame(&n, Some(&prev));
            check_frame(&n, &t);
            assert!((t[0] - prev).norm() < 2.0 * (n - n_prev).norm() + 1e-12, "step {k}: t1 jumped");
            prev = t[0];
            n_prev = n;
        }
        // degenerate previous t1 (parallel to the new normal) or NaN: the default, not NaN
        let t = tangent_frame(&Vec3::z(), Some(&Vec3::z()));
        assert_eq!(t, tangent_frame(&Vec3::z(), None));
        let t = tangent_frame(&Vec3::z(), Some(&Vec3::new(f64::NAN, 0.0, 0.0)));
        assert!(t[0].iter().all(|x| x.is_finite()));
    }
}
