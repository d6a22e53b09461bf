//! Exact reference solution of the disk-constrained QCQP when P is diagonal (spec 001 §4 E0: the benchmark
//! family P = diag(exp(U[−10, 10]))): the problem separates per contact, and on an active contact
//! z_k = −g_k / (d_k + ν) with ν ≥ 0 the root of ‖z(ν)‖ = r (monotone in ν: bisection to the last bit, then
//! Newton). Used to measure the ADMM solution and its implicit gradients against finite differences.

/// z* for P = diag(d) (d > 0), q, radii r (one per contact, two variables each).
pub fn qcqp_diagonal_exact(d: &[f64], q: &[f64], r: &[f64]) -> Vec<f64> {
    let mut z = vec![0.0; q.len()];
    for (i, &ri) in r.iter().enumerate() {
        let (d1, d2, g1, g2) = (d[2 * i], d[2 * i + 1], q[2 * i], q[2 * i + 1]);
        if ri <= 0.0 {
            continue;
        }
        let at = |nu: f64| (-g1 / (d1 + nu), -g2 / (d2 + nu));
        let (u1, u2) = at(0.0);
        if u1.hypot(u2) <= ri {
            z[2 * i] = u1;
            z[2 * i + 1] = u2;
            continue;
        }
        let phi = |nu: f64| {
            let (a, b) = at(nu);
            a.hypot(b) - ri
        };
        // φ(0) > 0, φ(‖g‖/r) ≤ 0
        let (mut lo, mut hi) = (0.0, g1.hypot(g2) / ri);
        for _ in 0..2000 {
            let mid = 0.5 * (lo + hi);
            if mid <= lo || mid >= hi {
                break;
            }
            if phi(mid) > 0.0 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let (a, b) = at(0.5 * (lo + hi));
        // back onto the circle exactly (removes the last rounding of ν)
        let s = ri / a.hypot(b);
        z[2 * i] = a * s;
        z[2 * i + 1] = b * s;
    }
    z
}
