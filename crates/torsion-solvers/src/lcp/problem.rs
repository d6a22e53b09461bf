//! The boxed LCP of spec 004 §3.3 (velocity level, §3.10 item 2): w = A λ + b, normal rows λ ≥ 0 ⟂ w ≥ 0,
//! friction rows boxed by their normal's impulse through `findex` (ODE/DART): −μ λ_n ≤ λ_t ≤ μ λ_n with the
//! "Z" complementarity of Eq. 14. The validity checker (§3.3, `LCPUtils::isLCPSolutionValid` with scaled
//! tolerances, docs/decisions.md spec 004 D10) runs on every solve. Assembly from the shared contact layer
//! (`contact::Prelude`: G_n, G_t, G_nt and the offsets), two tangent rows per contact (D3).
use super::dense::zeroed;
use crate::contact::buffers::reshape_zeroed;
use crate::contact::prelude::Prelude;
use crate::contact::ContactGeom;
use nalgebra::{DMatrix, DVector};
use thiserror::Error;
use torsion_math::Scalar;

/// A row of the boxed LCP.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Row {
    /// λ ≥ 0, w ≥ 0, λ w = 0 (ODE: lo = 0, hi = ∞, no findex)
    Normal,
    /// −μ λ_normal ≤ λ ≤ μ λ_normal (ODE: lo = −μ, hi = μ, findex = normal)
    Friction { normal: usize, mu: f64 },
}

/// Malformed LCP input or an impossible request, naming the field.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum LcpError {
    #[error("boxed LCP: bad input: {field}: {problem}")]
    BadInput { field: String, problem: String },
    #[error("boxed LCP: {solver}: {problem}")]
    Unsupported { solver: &'static str, problem: String },
}

fn bad(field: impl Into<String>, problem: impl Into<String>) -> LcpError {
    LcpError::BadInput { field: field.into(), problem: problem.into() }
}

/// w = A λ + b with the rows' bounds (spec 004 §3.3).
#[derive(Clone, Debug)]
pub struct BoxedLcp {
    pub a: DMatrix<f64>,
    pub b: DVector<f64>,
    pub rows: Vec<Row>,
}

impl BoxedLcp {
    /// Checks shapes, finiteness, μ ≥ 0 and that every findex names a normal row.
    pub fn new(a: DMatrix<f64>, b: DVector<f64>, rows: Vec<Row>) -> Result<Self, LcpError> {
        let lcp = BoxedLcp { a, b, rows };
        lcp.validate()?;
        Ok(lcp)
    }

    /// The 0 × 0 LCP (storage for [`BoxedLcp::assign_contacts`]).
    pub fn empty() -> Self {
        BoxedLcp { a: DMatrix::zeros(0, 0), b: DVector::zeros(0), rows: vec![] }
    }

    /// The LCP of a contact set (`lcp_system`, `contact_rows`) from the prelude and the offsets into `self`,
    /// reusing its storage (no heap allocation once it has held an LCP as large), checked as [`BoxedLcp::new`].
    pub fn assign_contacts(
        &mut self,
        pre: &Prelude<f64>,
        contacts: &[ContactGeom<f64>],
        bn: &[f64],
        bt: &[f64],
    ) -> Result<(), LcpError> {
        lcp_system_into(pre, bn, bt, &mut self.a, &mut self.b);
        contact_rows_into(contacts, &mut self.rows);
        self.validate()
    }

    /// The checks of [`BoxedLcp::new`].
    fn validate(&self) -> Result<(), LcpError> {
        let BoxedLcp { a, b, rows } = self;
        let m = b.len();
        if a.nrows() != m || a.ncols() != m {
            return Err(bad("A", format!("is {}×{}, b has {m} rows", a.nrows(), a.ncols())));
        }
        if rows.len() != m {
            return Err(bad("rows", format!("{} rows for an LCP of size {m}", rows.len())));
        }
        if let Some(k) = a.iter().position(|x| !x.is_finite()) {
            return Err(bad(format!("A[{}, {}]", k % m, k / m), "not finite"));
        }
        if let Some(i) = b.iter().position(|x| !x.is_finite()) {
            return Err(bad(format!("b[{i}]"), "not finite"));
        }
        for (i, r) in rows.iter().enumerate() {
            if let Row::Friction { normal, mu } = *r {
                if !(mu.is_finite() && mu >= 0.0) {
                    return Err(bad(format!("rows[{i}].mu"), format!("{mu} is not a finite μ ≥ 0")));
                }
                if normal >= m || rows[normal] != Row::Normal {
                    return Err(bad(format!("rows[{i}].normal"), format!("findex {normal} is not a normal row")));
                }
            }
        }
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.b.len()
    }

    pub fn is_empty(&self) -> bool {
        self.b.is_empty()
    }

    /// The normal rows, then the friction rows (the pivoting order of §3.9, `put_friction_at_end`).
    pub fn order(&self) -> Vec<usize> {
        let mut o = vec![];
        self.order_into(&mut o);
        o
    }

    /// [`BoxedLcp::order`] into `o` (refilled in place).
    pub fn order_into(&self, o: &mut Vec<usize>) {
        o.clear();
        o.extend((0..self.len()).filter(|&i| self.rows[i] == Row::Normal));
        o.extend((0..self.len()).filter(|&i| self.rows[i] != Row::Normal));
    }

    /// The normal rows (one per contact).
    pub fn normals(&self) -> Vec<usize> {
        (0..self.len()).filter(|&i| self.rows[i] == Row::Normal).collect()
    }

    /// The friction rows whose findex is `n`.
    pub fn frictions_of(&self, n: usize) -> Vec<usize> {
        (0..self.len()).filter(|&i| matches!(self.rows[i], Row::Friction { normal, .. } if normal == n)).collect()
    }

    /// w = A λ + b.
    pub fn w(&self, lambda: &DVector<f64>) -> DVector<f64> {
        &self.a * lambda + &self.b
    }

    /// w = A λ + b into `w` (reusing its storage; the same arithmetic as [`BoxedLcp::w`]).
    pub fn w_into(&self, lambda: &DVector<f64>, w: &mut DVector<f64>) {
        zeroed(w, self.len());
        self.a.mul_to(lambda, w);
        *w += &self.b;
    }

    /// A_i· λ + b_i, one row of w (the arithmetic of `(A.row(i) * λ)[0] + b_i`, without its 1 × 1 matrix).
    pub fn w_row(&self, i: usize, lambda: &DVector<f64>) -> f64 {
        let mut out = nalgebra::Matrix1::zeros();
        self.a.row(i).mul_to(lambda, &mut out);
        out[0] + self.b[i]
    }

    /// max(1, ‖b‖∞): the scale of the tolerances (docs/decisions.md spec 004 D10).
    pub fn scale(&self) -> f64 {
        self.b.amax().max(1.0)
    }

    /// Check λ against §3.3 (see [`check`]).
    pub fn check(&self, lambda: &DVector<f64>, tol: f64) -> ValidityReport {
        check(self, lambda, tol)
    }

    /// [`check`] with w = A λ + b written into `w`.
    pub fn check_into(&self, lambda: &DVector<f64>, tol: f64, w: &mut DVector<f64>) -> ValidityReport {
        self.w_into(lambda, w);
        check_w(self, lambda, w, tol)
    }

    /// The LCP of a contact set in generalized coordinates from the shared prelude: per contact k the rows
    /// (n, t1, t2) at 3k, 3k + 1, 3k + 2, A from G_n, G_nt, G_t (= J M⁻¹ Jᵀ, spec 004 §3.3), b from the step's
    /// offsets (`Offsets::Step`, from v^p) or the impact's (`Offsets::Impact`, from v), μ from each contact.
    pub fn from_prelude(pre: &Prelude<f64>, contacts: &[ContactGeom<f64>], offsets: Offsets) -> Result<Self, LcpError> {
        let nc = contacts.len();
        if pre.gn.nrows() != nc {
            return Err(bad("contacts", format!("{nc} contacts for a prelude of {}", pre.gn.nrows())));
        }
        let (bn, bt) = match offsets {
            Offsets::Step => (&pre.bn, &pre.bt),
            Offsets::Impact => (&pre.bn_impact, &pre.bt_impact),
        };
        if bn.len() != nc || bt.len() != 2 * nc {
            return Err(bad("offsets", "the prelude has no offsets of this kind (impact offsets need ε > 0)"));
        }
        let (a, b) = lcp_system(pre, bn, bt);
        BoxedLcp::new(a, b, contact_rows(contacts))
    }
}

/// The rows of a contact set in the `from_prelude` layout: (n, t1, t2) per contact, frictions boxed by μ of their
/// contact.
pub fn contact_rows<T: Scalar>(contacts: &[ContactGeom<T>]) -> Vec<Row> {
    let mut rows = Vec::with_capacity(3 * contacts.len());
    contact_rows_into(contacts, &mut rows);
    rows
}

/// [`contact_rows`] into `rows` (refilled in place).
pub fn contact_rows_into<T: Scalar>(contacts: &[ContactGeom<T>], rows: &mut Vec<Row>) {
    rows.clear();
    for (i, c) in contacts.iter().enumerate() {
        rows.push(Row::Normal);
        rows.extend([Row::Friction { normal: 3 * i, mu: c.mu.re() }; 2]);
    }
}

/// (A, b) of the boxed LCP on any scalar (f64 for the solve, duals for its tangents; spec 004 §3.3): per contact
/// k the rows (n, t1, t2) at 3k, 3k + 1, 3k + 2, A from the prelude's G_n, G_nt, G_t (= J M⁻¹ Jᵀ), b from the
/// given normal and tangent offsets.
pub fn lcp_system<T: Scalar>(pre: &Prelude<T>, bn: &[T], bt: &[T]) -> (DMatrix<T>, DVector<T>) {
    let (mut a, mut b) = (DMatrix::from_vec(0, 0, vec![]), DVector::from_vec(vec![]));
    lcp_system_into(pre, bn, bt, &mut a, &mut b);
    (a, b)
}

/// [`lcp_system`] into (a, b), reusing their storage (`contact::buffers::reshape_zeroed`).
pub fn lcp_system_into<T: Scalar>(pre: &Prelude<T>, bn: &[T], bt: &[T], a: &mut DMatrix<T>, b: &mut DVector<T>) {
    let nc = bn.len();
    let m = 3 * nc;
    reshape_zeroed(a, m, m);
    zeroed(b, m);
    for i in 0..nc {
        b[3 * i] = bn[i];
        for s in 0..2 {
            b[3 * i + 1 + s] = bt[2 * i + s];
        }
        for j in 0..nc {
            a[(3 * i, 3 * j)] = pre.gn[(i, j)];
            for s in 0..2 {
                a[(3 * i, 3 * j + 1 + s)] = pre.gnt[(i, 2 * j + s)];
                a[(3 * j + 1 + s, 3 * i)] = pre.gnt[(i, 2 * j + s)];
                for r in 0..2 {
                    a[(3 * i + 1 + r, 3 * j + 1 + s)] = pre.gt[(2 * i + r, 2 * j + s)];
                }
            }
        }
    }
}

/// Which offsets of the prelude make b.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offsets {
    Step,
    Impact,
}

/// (λ_n per contact, λ_t two per contact) from a λ in the `from_prelude` layout, for `contact::prelude::apply_impulses`.
pub fn split_impulses(lambda: &DVector<f64>) -> (Vec<f64>, Vec<f64>) {
    let nc = lambda.len() / 3;
    ((0..nc).map(|i| lambda[3 * i]).collect(), (0..2 * nc).map(|r| lambda[3 * (r / 2) + 1 + r % 2]).collect())
}

/// Which condition of §3.3 a row breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Condition {
    /// λ or w not finite
    NonFinite,
    /// a normal impulse below 0
    LowerBound,
    /// |λ_t| > μ λ_n (the findex box)
    FrictionBound,
    /// w of the wrong sign for the row's position in its box (normal: w < 0; friction: the "Z" of Eq. 14)
    Complementarity,
}

/// One broken condition: the row, which condition, by how much (in the LCP's units, before scaling).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Violation {
    pub row: usize,
    pub condition: Condition,
    pub amount: f64,
}

/// The validity of a λ (§3.3), with the largest residual of each kind.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidityReport {
    pub valid: bool,
    /// the violation farthest beyond its tolerance
    pub worst: Option<Violation>,
    pub max_bound: f64,
    pub max_findex: f64,
    pub max_complementarity: f64,
}

/// The validity check of §3.3 with tolerances tol·max(1, ‖λ‖∞) on impulses and tol·max(1, ‖b‖∞) on w (D10): per
/// row, normal: λ ≥ 0, and w ≥ 0 at λ ≈ 0, w ≈ 0 above; friction with r = μ max(λ_n, 0): |λ| ≤ r, and at λ ≈ r
/// w ≤ 0, at λ ≈ −r w ≥ 0, inside w ≈ 0; lo ≈ hi ≈ λ ≈ 0 accepts any w.
pub fn check(lcp: &BoxedLcp, lambda: &DVector<f64>, tol: f64) -> ValidityReport {
    check_w(lcp, lambda, &lcp.w(lambda), tol)
}

/// [`check`] with w = A λ + b given.
fn check_w(lcp: &BoxedLcp, lambda: &DVector<f64>, w: &DVector<f64>, tol: f64) -> ValidityReport {
    let mut rep =
        ValidityReport { valid: true, worst: None, max_bound: 0.0, max_findex: 0.0, max_complementarity: 0.0 };
    let (tf, tw) = (tol * lambda.amax().max(1.0), tol * lcp.scale());
    let mut worst_ratio = 1.0;
    let mut note = |rep: &mut ValidityReport, row: usize, condition: Condition, amount: f64, t: f64| {
        let slot = match condition {
            Condition::LowerBound => &mut rep.max_bound,
            Condition::FrictionBound => &mut rep.max_findex,
            Condition::Complementarity => &mut rep.max_complementarity,
            Condition::NonFinite => &mut rep.max_bound,
        };
        *slot = slot.max(amount);
        let ratio = if condition == Condition::NonFinite { f64::INFINITY } else { amount / t };
        if ratio > worst_ratio || (ratio.is_infinite() && rep.worst.is_none()) {
            worst_ratio = ratio;
            rep.worst = Some(Violation { row, condition, amount });
            rep.valid = false;
        }
    };
    for i in 0..lcp.len() {
        let (f, a) = (lambda[i], w[i]);
        if !(f.is_finite() && a.is_finite()) {
            note(&mut rep, i, Condition::NonFinite, f64::INFINITY, 1.0);
            continue;
        }
        match lcp.rows[i] {
            Row::Normal => {
                note(&mut rep, i, Condition::LowerBound, (-f).max(0.0), tf);
                let c = if f <= tf { (-a).max(0.0) } else { a.abs() };
                note(&mut rep, i, Condition::Complementarity, c, tw);
            }
            Row::Friction { normal, mu } => {
                let r = mu * lambda[normal].max(0.0);
                note(&mut rep, i, Condition::FrictionBound, (f.abs() - r).max(0.0), tf);
                let c = if r <= tf && f.abs() <= tf {
                    0.0
                } else if f >= r - tf {
                    a.max(0.0)
                } else if f <= -r + tf {
                    (-a).max(0.0)
                } else {
                    a.abs()
                };
                note(&mut rep, i, Condition::Complementarity, c, tw);
            }
        }
    }
    rep
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_contact(b: [f64; 3], mu: f64) -> BoxedLcp {
        let a = DMatrix::from_row_slice(3, 3, &[2.0, 0.1, 0.0, 0.1, 1.0, 0.2, 0.0, 0.2, 1.5]);
        let rows = vec![Row::Normal, Row::Friction { normal: 0, mu }, Row::Friction { normal: 0, mu }];
        BoxedLcp::new(a, DVector::from_row_slice(&b), rows).unwrap()
    }

    /// Each condition of §3.3 is reported for the row that breaks it, with its amount.
    #[test]
    fn checker_names_the_broken_condition() {
        let lcp = one_contact([-1.0, 0.5, 0.0], 0.5);
        // λ_n = 0 while w_n = −1 < 0
        let r = lcp.check(&DVector::zeros(3), 1e-5);
        assert_eq!(r.worst, Some(Violation { row: 0, condition: Condition::Complementarity, amount: 1.0 }));
        // negative normal impulse
        let r = lcp.check(&DVector::from_row_slice(&[-0.2, 0.0, 0.0]), 1e-5);
        assert!(!r.valid && r.max_bound == 0.2);
        // friction beyond μ λ_n = 0.25
        let r = lcp.check(&DVector::from_row_slice(&[0.5, -0.4, 0.0]), 1e-5);
        assert_eq!(r.worst.map(|v| (v.row, v.condition)), Some((1, Condition::FrictionBound)));
        assert!((r.max_findex - 0.15).abs() < 1e-12);
        // a valid solution: λ_n solves its row with the friction at its lower bound (w_t > 0) and t2 sticking
        let mut l = DVector::zeros(3);
        // refine exactly: w_n = 2 ln − 0.05 ln − 1 = 0 ⇒ ln = 1 / 1.95; then t2 from its own row
        l[0] = 1.0 / 1.95;
        l[1] = -0.5 * l[0];
        l[2] = -(0.2 * l[1]) / 1.5;
        let r = lcp.check(&l, 1e-9);
        assert!(lcp.w(&l)[1] > 0.0, "friction row at its lower bound slides toward +t");
        assert!(r.valid, "{r:?}");
    }

    /// Malformed input is an error naming the field.
    #[test]
    fn malformed_input_is_an_error() {
        let a = DMatrix::identity(3, 3);
        let b = DVector::zeros(3);
        let e =
            BoxedLcp::new(a.clone(), b.clone(), vec![Row::Normal, Row::Friction { normal: 5, mu: 0.5 }, Row::Normal])
                .unwrap_err();
        assert!(e.to_string().contains("rows[1].normal"), "{e}");
        let e =
            BoxedLcp::new(a.clone(), b.clone(), vec![Row::Normal, Row::Friction { normal: 0, mu: -1.0 }, Row::Normal])
                .unwrap_err();
        assert!(e.to_string().contains("rows[1].mu"), "{e}");
        let mut bn = b.clone();
        bn[2] = f64::NAN;
        let e = BoxedLcp::new(a, bn, vec![Row::Normal; 3]).unwrap_err();
        assert!(e.to_string().contains("b[2]"), "{e}");
    }
}
