//! Brute-force enumeration of the active sets (spec 004 §3.9 `violet_solve`), the reference for tests: each
//! contact (a normal row and its frictions) is N, or C with each friction C_f, N_h or N_l (10 patterns for two
//! tangents); every pattern's active-set system Ã_SS λ_S = −b_S (`active_set::solve_classes`) is solved and
//! checked (§3.3). Returns every distinct valid λ, so tests can tell a unique solution from a family.
use super::active_set::{solve_classes, Class};
use super::problem::{BoxedLcp, LcpError};
use super::solution::{LcpFailure, LcpSolution, LcpSolverKind};
use nalgebra::DVector;

/// At most this many contacts (10⁴ patterns with two tangents; §3.9 suggests K ≤ 4–5).
pub const ORACLE_MAX_CONTACTS: usize = 4;

/// Every distinct valid solution (to `tol` relative in λ), and how many patterns were solved.
pub struct OracleSolutions {
    pub solutions: Vec<LcpSolution>,
    pub patterns: usize,
}

/// Enumerate all patterns; `validity_tol` for §3.3.
pub fn enumerate(lcp: &BoxedLcp, validity_tol: f64) -> Result<OracleSolutions, LcpError> {
    let normals = lcp.normals();
    if normals.len() > ORACLE_MAX_CONTACTS {
        return Err(LcpError::Unsupported {
            solver: "oracle",
            problem: format!("{} contacts, at most {ORACLE_MAX_CONTACTS}", normals.len()),
        });
    }
    let fr: Vec<Vec<usize>> = normals.iter().map(|&n| lcp.frictions_of(n)).collect();
    let counts: Vec<usize> = fr.iter().map(|f| 1 + 3usize.pow(f.len() as u32)).collect();
    let total: usize = counts.iter().product();
    let mut out: Vec<LcpSolution> = vec![];
    let mut classes = vec![Class::N; lcp.len()];
    for code in 0..total {
        let mut c = code;
        for (k, &n) in normals.iter().enumerate() {
            let p = c % counts[k];
            c /= counts[k];
            if p == 0 {
                classes[n] = Class::N;
                for &t in &fr[k] {
                    classes[t] = Class::Nh;
                }
            } else {
                classes[n] = Class::C;
                let mut q = p - 1;
                for &t in &fr[k] {
                    classes[t] = [Class::Cf, Class::Nh, Class::Nl][q % 3];
                    q /= 3;
                }
            }
        }
        let Some((lambda, _)) = solve_classes(lcp, &classes) else { continue };
        let validity = lcp.check(&lambda, validity_tol);
        if !validity.valid {
            continue;
        }
        let scale = lambda.amax().max(1.0);
        if out.iter().any(|s| (&s.lambda - &lambda).amax() <= 1e-7 * scale) {
            continue;
        }
        out.push(LcpSolution {
            solver: LcpSolverKind::Oracle,
            w: lcp.w(&lambda),
            lambda,
            classes: classes.clone(),
            iterations: code + 1,
            validity,
            failure: None,
            polished: false,
        });
    }
    Ok(OracleSolutions { solutions: out, patterns: total })
}

/// The first valid solution in pattern order, or a reported failure (λ = 0) when none is valid.
pub fn solve_oracle(lcp: &BoxedLcp, validity_tol: f64) -> Result<LcpSolution, LcpError> {
    let all = enumerate(lcp, validity_tol)?;
    Ok(all.solutions.into_iter().next().unwrap_or_else(|| {
        let lambda = DVector::zeros(lcp.len());
        LcpSolution {
            solver: LcpSolverKind::Oracle,
            w: lcp.w(&lambda),
            validity: lcp.check(&lambda, validity_tol),
            lambda,
            classes: vec![Class::N; lcp.len()],
            iterations: all.patterns,
            failure: Some(LcpFailure::NoValidPattern),
            polished: false,
        }
    }))
}
