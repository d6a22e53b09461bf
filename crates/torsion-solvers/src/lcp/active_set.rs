//! Row classes and the active-set system of spec 004 §3.3 (Eq. 15), shared by Jade's Dantzig, the oracle and
//! the implicit derivative: S = C ∪ C_f (rows with w = 0), bound frictions N_h / N_l follow their normal
//! (λ_h = ±μ λ_n), λ = E λ_S, Ã_SS = (A E)_{S,:}. Least squares when Ã_SS is singular (D11).
use super::dense::{zeroed, DenseSolver};
use super::problem::{BoxedLcp, Row};
use crate::contact::buffers::reshape_zeroed;
use nalgebra::{DMatrix, DVector};

/// The class of a row (§3.3): C / N for normals, C_f / N_h / N_l for frictions; `Unset` before the pivoting
/// reaches the row (λ = 0, not in the system).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Unset,
    /// normal, clamping: w = 0, λ ≥ 0
    C,
    /// normal, separating (or friction of a zero normal, kept as N_h / N_l): λ = 0, w ≥ 0
    N,
    /// friction sticking: w = 0, |λ| < μ λ_n
    Cf,
    /// friction at +μ λ_n, w ≤ 0
    Nh,
    /// friction at −μ λ_n, w ≥ 0
    Nl,
}

impl Class {
    pub fn in_s(self) -> bool {
        matches!(self, Class::C | Class::Cf)
    }
}

/// S (rows with w = 0, in row order) and each row's column in S (usize::MAX outside).
pub fn s_set(classes: &[Class]) -> (Vec<usize>, Vec<usize>) {
    let (mut s, mut col) = (vec![], vec![]);
    s_set_into(classes, &mut s, &mut col);
    (s, col)
}

/// [`s_set`] into (s, col), refilled in place.
pub fn s_set_into(classes: &[Class], s: &mut Vec<usize>, col: &mut Vec<usize>) {
    col.clear();
    col.resize(classes.len(), usize::MAX);
    s.clear();
    s.extend((0..classes.len()).filter(|&i| classes[i].in_s()));
    for (c, &i) in s.iter().enumerate() {
        col[i] = c;
    }
}

/// ±μ of a bound friction row (+ for N_h, − for N_l) and its normal; None for other rows.
pub fn bound_coupling(lcp: &BoxedLcp, classes: &[Class], h: usize) -> Option<(usize, f64)> {
    match (lcp.rows[h], classes[h]) {
        (Row::Friction { normal, mu }, Class::Nh) => Some((normal, mu)),
        (Row::Friction { normal, mu }, Class::Nl) => Some((normal, -mu)),
        _ => None,
    }
}

/// Δλ = E x + d₀: x on S, bound frictions ±μ times their normal's value (x, or σ for the driven row), the
/// driven row (i, σ) itself, 0 elsewhere.
pub fn expand(
    lcp: &BoxedLcp,
    classes: &[Class],
    col: &[usize],
    x: &DVector<f64>,
    driven: Option<(usize, f64)>,
) -> DVector<f64> {
    let mut out = DVector::zeros(lcp.len());
    expand_into(lcp, classes, col, x, driven, &mut out);
    out
}

/// [`expand`] into `out` (reusing its storage).
pub fn expand_into(
    lcp: &BoxedLcp,
    classes: &[Class],
    col: &[usize],
    x: &DVector<f64>,
    driven: Option<(usize, f64)>,
    out: &mut DVector<f64>,
) {
    let m = lcp.len();
    zeroed(out, m);
    let value = |j: usize| {
        if col[j] != usize::MAX {
            x[col[j]]
        } else {
            match driven {
                Some((i, s)) if i == j => s,
                _ => 0.0,
            }
        }
    };
    for j in 0..m {
        if let Some((n, smu)) = bound_coupling(lcp, classes, j) {
            out[j] = smu * value(n);
        } else {
            out[j] = value(j);
        }
    }
}

/// Ã_SS = A_SS + A_SB E_BS (§3.3), column j: A_{S,j} + Σ_{h bound, nidx(h) = j} ±μ A_{S,h}.
pub fn reduced_matrix(lcp: &BoxedLcp, classes: &[Class], s: &[usize], col: &[usize]) -> DMatrix<f64> {
    let mut at = DMatrix::zeros(s.len(), s.len());
    reduced_matrix_into(lcp, classes, s, col, &mut at);
    at
}

/// [`reduced_matrix`] into `at` (reusing its storage).
pub fn reduced_matrix_into(lcp: &BoxedLcp, classes: &[Class], s: &[usize], col: &[usize], at: &mut DMatrix<f64>) {
    reshape_zeroed(at, s.len(), s.len());
    for (c, &j) in s.iter().enumerate() {
        for (r, &i) in s.iter().enumerate() {
            at[(r, c)] = lcp.a[(i, j)];
        }
    }
    for h in 0..lcp.len() {
        if let Some((n, smu)) = bound_coupling(lcp, classes, h) {
            if col[n] != usize::MAX {
                for (r, &i) in s.iter().enumerate() {
                    at[(r, col[n])] += smu * lcp.a[(i, h)];
                }
            }
        }
    }
}

/// The outcome of a square solve.
pub struct Solved {
    pub x: DVector<f64>,
    /// the system was (numerically) singular and x is the least-squares minimum-norm solution
    pub singular: bool,
}

/// Solve M x = r (`dense::DenseSolver` on fresh buffers): LU with full pivoting when its pivots are well above
/// roundoff (ratio 1e-11), otherwise the least-squares minimum-norm solution (D11). Always Some (the Option serves the callers' error paths).
pub fn solve(m: &DMatrix<f64>, r: &DVector<f64>) -> Option<Solved> {
    let mut sv = DenseSolver::default();
    let singular = sv.solve(m, r)?;
    Some(Solved { x: sv.x, singular })
}

/// The buffers of one active-set system Ã_SS x = rhs (S, each row's column in S, Ã_SS, the right-hand side and
/// the solve's), reused from solve to solve.
#[derive(Clone, Debug, Default)]
pub struct ActiveSystem {
    pub s: Vec<usize>,
    pub col: Vec<usize>,
    pub at: DMatrix<f64>,
    pub rhs: DVector<f64>,
    pub dense: DenseSolver,
}

impl ActiveSystem {
    /// S, its columns and Ã_SS of `classes`; `rhs` zeroed to |S|.
    pub fn assemble(&mut self, lcp: &BoxedLcp, classes: &[Class]) {
        s_set_into(classes, &mut self.s, &mut self.col);
        reduced_matrix_into(lcp, classes, &self.s, &self.col, &mut self.at);
        zeroed(&mut self.rhs, self.s.len());
    }

    /// Ã_SS x = rhs into `dense.x`: Some(singular) (see [`DenseSolver::solve`]).
    pub fn solve(&mut self) -> Option<bool> {
        self.dense.solve(&self.at, &self.rhs)
    }
}

/// The active-set solution λ = E λ_S, Ã_SS λ_S = −b_S, of given classes (the oracle's and the warm start's
/// one-solve answer).
pub fn solve_classes(lcp: &BoxedLcp, classes: &[Class]) -> Option<(DVector<f64>, bool)> {
    let (s, col) = s_set(classes);
    let at = reduced_matrix(lcp, classes, &s, &col);
    let rhs = DVector::from_iterator(s.len(), s.iter().map(|&i| -lcp.b[i]));
    let sol = solve(&at, &rhs)?;
    Some((expand(lcp, classes, &col, &sol.x, None), sol.singular))
}

/// Minimum-norm answers for a rank-deficient A (docs/decisions.md spec 004 D11a). A rank-deficient A (a box face on
/// a plane, a finger pressing a plate at two points: more contact rows than the motions they constrain) makes the
/// answer a family, and pivoting returns a vertex of it, which may unload contacts (λ_n = 0 with w_n = 0) and with
/// them their friction: a plate held at four points then pivots about two of them. From a valid answer's classes,
/// with the degenerate normals (λ_n ≤ tol, |w_n| ≤ tol) joining C, when that system Ã_SS is singular two candidates
/// are returned, each the minimum-norm solution of its classes (the limit of a vanishing uniform compliance,
/// CFM → 0): first every loaded or degenerate contact sticking (its frictions C_f), then only the degenerate
/// normals' zero-box frictions as C_f. Empty when Ã_SS is regular (the answer is unique at its active set). The
/// caller takes the first valid one (§3.3).
pub fn min_norm_candidates(
    lcp: &BoxedLcp,
    lambda: &DVector<f64>,
    w: &DVector<f64>,
    classes: &[Class],
    tol: f64,
) -> Vec<(DVector<f64>, Vec<Class>)> {
    let mut deg = vec![];
    join_degenerate_into(lcp, lambda, w, classes, tol, f64::INFINITY, &mut deg);
    let mut stick = deg.clone();
    for n in lcp.normals() {
        if stick[n] == Class::C {
            for h in lcp.frictions_of(n) {
                stick[h] = Class::Cf;
            }
        }
    }
    let min_norm = |cl: Vec<Class>| {
        let (s, col) = s_set(&cl);
        let at = reduced_matrix(lcp, &cl, &s, &col);
        let rhs = DVector::from_iterator(s.len(), s.iter().map(|&i| -lcp.b[i]));
        solve(&at, &rhs).filter(|sol| sol.singular).map(|sol| (expand(lcp, &cl, &col, &sol.x, None), cl))
    };
    let Some(d) = min_norm(deg) else { return vec![] };
    min_norm(stick).into_iter().chain([d]).collect()
}

/// The classes the implicit derivative is taken at (docs/decisions.md spec 004 D11b): the answer's, with every
/// degenerate normal (λ_n ≤ tol, |w_n| ≤ tol: touching and unloaded, e.g. a corner a pivoting vertex left out of
/// a redundant support) in C, and each of its bound frictions that does not slide (|w_t| ≤ tol) in C_f. Every row
/// with w = 0 then stays at w = 0 to first order (the maximal active set), as the unique velocities of a
/// redundant support do; the force family's kink (λ_n = 0 at the vertex) no longer frees a motion the other
/// supports forbid. One-sided only at a genuinely unloaded contact (the derivative of the touching side).
pub fn derivative_classes(lcp: &BoxedLcp, lambda: &DVector<f64>, w: &DVector<f64>, classes: &[Class]) -> Vec<Class> {
    let mut out = vec![];
    derivative_classes_into(lcp, lambda, w, classes, &mut out);
    out
}

/// [`derivative_classes`] into `out` (refilled in place).
pub fn derivative_classes_into(
    lcp: &BoxedLcp,
    lambda: &DVector<f64>,
    w: &DVector<f64>,
    classes: &[Class],
    out: &mut Vec<Class>,
) {
    let tol = 1e-9 * lcp.scale();
    join_degenerate_into(lcp, lambda, w, classes, tol, tol, out);
}

/// `out` ← `classes` with each degenerate normal (λ_n ≤ tol, |w_n| ≤ tol) in C and those of its bound frictions
/// with |w_t| ≤ `slip_tol` in C_f.
fn join_degenerate_into(
    lcp: &BoxedLcp,
    lambda: &DVector<f64>,
    w: &DVector<f64>,
    classes: &[Class],
    tol: f64,
    slip_tol: f64,
    out: &mut Vec<Class>,
) {
    out.clear();
    out.extend_from_slice(classes);
    for n in 0..lcp.len() {
        if lcp.rows[n] != Row::Normal || lambda[n] > tol || w[n].abs() > tol {
            continue;
        }
        out[n] = Class::C;
        for h in 0..lcp.len() {
            let of_n = matches!(lcp.rows[h], Row::Friction { normal, .. } if normal == n);
            if of_n && matches!(out[h], Class::Nh | Class::Nl) && w[h].abs() <= slip_tol {
                out[h] = Class::Cf;
            }
        }
    }
}

/// Classes read off a solution (λ, w) with tolerance `tol` (for a solver that keeps none, e.g. PGS), into `out`
/// (refilled in place): normal C if λ > tol; friction N_h / N_l at its bound (or by the sign of w when the bound
/// is ≈ 0), else C_f.
pub fn classify_into(lcp: &BoxedLcp, lambda: &DVector<f64>, w: &DVector<f64>, tol: f64, out: &mut Vec<Class>) {
    out.clear();
    out.extend((0..lcp.len()).map(|i| match lcp.rows[i] {
        Row::Normal => {
            if lambda[i] > tol {
                Class::C
            } else {
                Class::N
            }
        }
        Row::Friction { normal, mu } => {
            let r = mu * lambda[normal].max(0.0);
            if r <= tol {
                if w[i] <= 0.0 {
                    Class::Nh
                } else {
                    Class::Nl
                }
            } else if lambda[i] >= r - tol {
                Class::Nh
            } else if lambda[i] <= -r + tol {
                Class::Nl
            } else {
                Class::Cf
            }
        }
    }));
}
