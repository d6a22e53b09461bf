//! The baseline: ODE-style Dantzig pivoting with frozen friction bounds (spec 004 §3.9 Alg. 1, Baraff 1994 /
//! ODE dLCP), kept to reproduce the failure Jade fixes. Rows in order, normals first; when a friction row is
//! reached its box is frozen at ±μ|λ_n| from the current λ_n and treated as constant afterwards, in the ratio
//! test and for rows already at a bound (which therefore do not follow their normal). No DFS: zero steps are
//! taken, a cycle ends at the 3m cap. The validity check (§3.3, with the true moving bounds) closes every solve.
use super::active_set::{solve, Class};
use super::dantzig_jade::JadeOptions;
use super::problem::{BoxedLcp, Row};
use super::solution::{LcpFailure, LcpSolution, LcpSolverKind};
use nalgebra::DVector;

/// Solve with the baseline (same tolerances as Jade's, `JadeOptions`).
pub fn solve_baseline(lcp: &BoxedLcp, o: &JadeOptions) -> LcpSolution {
    let m = lcp.len();
    let scale = lcp.scale();
    let (eps, tol) = (o.eps * scale, o.tol * scale);
    let mut f = DVector::<f64>::zeros(m);
    let mut a = lcp.b.clone();
    // frozen bounds; classes C (inside, w = 0), Nl (at lo), Nh (at hi), Unset
    let (mut lo, mut hi) = (vec![0.0; m], vec![f64::INFINITY; m]);
    let mut class = vec![Class::Unset; m];
    let mut pivots = 0;
    let mut failure = None;
    let cap = o.loop_factor * m.max(1);
    'rows: for i in lcp.order() {
        if let Row::Friction { normal, mu } = lcp.rows[i] {
            hi[i] = mu * f[normal].abs();
            lo[i] = -hi[i];
        }
        // already valid at λ_i = 0
        let at_zero = match lcp.rows[i] {
            Row::Normal if a[i] >= -tol => Some(Class::Nl),
            Row::Friction { .. } if hi[i] - lo[i] <= tol => Some(if a[i] <= 0.0 { Class::Nh } else { Class::Nl }),
            Row::Friction { .. } if a[i].abs() <= tol => Some(Class::C),
            _ => None,
        };
        if let Some(c) = at_zero {
            class[i] = c;
            continue;
        }
        for _ in 0..cap {
            pivots += 1;
            let sigma = if a[i] < 0.0 { 1.0 } else { -1.0 };
            // Δλ_i = σ, A_CC Δλ_C = −σ A_{C,i}, bound rows fixed
            let s: Vec<usize> = (0..m).filter(|&k| class[k] == Class::C).collect();
            let acc = nalgebra::DMatrix::from_fn(s.len(), s.len(), |r, c| lcp.a[(s[r], s[c])]);
            let rhs = DVector::from_iterator(s.len(), s.iter().map(|&r| -sigma * lcp.a[(r, i)]));
            let Some(x) = solve(&acc, &rhs) else {
                failure = Some(LcpFailure::NoStep { row: i });
                break 'rows;
            };
            let mut df = DVector::zeros(m);
            df[i] = sigma;
            for (c, &k) in s.iter().enumerate() {
                df[k] = x.x[c];
            }
            let da = &lcp.a * &df;
            // ratio test with the frozen bounds
            let mut best = (f64::INFINITY, usize::MAX, Class::Unset);
            let mut take = |st: f64, k: usize, c: Class| {
                if st < best.0 {
                    best = (st.max(0.0), k, c);
                }
            };
            if da[i].abs() > eps && -a[i] / da[i] >= 0.0 {
                take(-a[i] / da[i], i, Class::C);
            }
            if sigma > 0.0 && hi[i].is_finite() {
                take(hi[i] - f[i], i, Class::Nh);
            }
            if sigma < 0.0 {
                take(f[i] - lo[i], i, Class::Nl);
            }
            for k in 0..m {
                if k == i {
                    continue;
                }
                match class[k] {
                    Class::C if df[k] < -eps => take((lo[k] - f[k]) / df[k], k, Class::Nl),
                    Class::C if df[k] > eps && hi[k].is_finite() => take((hi[k] - f[k]) / df[k], k, Class::Nh),
                    Class::Nl if da[k] < -eps => take(-a[k] / da[k], k, Class::C),
                    Class::Nh if da[k] > eps => take(-a[k] / da[k], k, Class::C),
                    _ => {}
                }
            }
            let (st, k, c) = best;
            if !st.is_finite() {
                failure = Some(LcpFailure::NoStep { row: i });
                break 'rows;
            }
            f.axpy(st, &df, 1.0);
            class[k] = c;
            // snap the mover onto its frozen bound
            match c {
                Class::Nl => f[k] = lo[k],
                Class::Nh => f[k] = hi[k],
                _ => {}
            }
            a = lcp.w(&f);
            if k == i {
                continue 'rows;
            }
        }
        failure = Some(LcpFailure::IterationCap { row: i });
        break;
    }
    let validity = lcp.check(&f, o.validity_tol);
    if failure.is_none() && !validity.valid {
        failure = Some(LcpFailure::Invalid);
    }
    // the classes in §3.3's names (normals at 0: N)
    let classes = (0..m)
        .map(|k| match (lcp.rows[k], class[k]) {
            (Row::Normal, Class::Nl) => Class::N,
            (_, c) => c,
        })
        .collect();
    LcpSolution {
        solver: LcpSolverKind::BaselineDantzig,
        w: lcp.w(&f),
        lambda: f,
        classes,
        iterations: pivots,
        validity,
        failure,
        polished: false,
    }
}
