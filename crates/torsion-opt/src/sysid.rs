//! System identification (design.md; issue 14 item 4): Levenberg–Marquardt on a least-squares residual r(x)
//! with a user Jacobian, its normal-equation form with box bounds ([`levenberg_marquardt_normal`]), the bounded
//! parameterisations of spec 001 §6 item 11 (log m, softplus μ, sigmoid ε), and the problems built on them:
//! [`arm`] (the inverse-dynamics regressor residual with its [`filter`]) and [`shooting`] (the simulation
//! residual over windows, multiple shooting, any generalized-coordinate solver).
pub mod arm;
pub mod filter;
pub mod shooting;

use nalgebra::{DMatrix, DVector};

/// Covariance σ² H⁺ of the estimate (H = JᵀJ (+ prior) in z, pseudo-inverse over eigenvalues > 1e-12 of the
/// largest) and σ² = ‖r‖² / (rows − rank), from the squared error `sq` over `rows` residual rows.
pub fn covariance(h: &DMatrix<f64>, sq: f64, rows: usize) -> (DMatrix<f64>, f64) {
    let nz = h.nrows();
    let eig = h.clone().symmetric_eigen();
    let lmax = eig.eigenvalues.iter().fold(0.0f64, |a, &b| a.max(b));
    let rank = eig.eigenvalues.iter().filter(|&&l| l > 1e-12 * lmax).count();
    let sigma2 = sq / (rows.saturating_sub(rank)).max(1) as f64;
    let inv = DVector::from_iterator(nz, eig.eigenvalues.iter().map(|&l| if l > 1e-12 * lmax { 1.0 / l } else { 0.0 }));
    (&eig.eigenvectors * DMatrix::from_diagonal(&inv) * eig.eigenvectors.transpose() * sigma2, sigma2)
}

/// What every identification reports: the estimates by name with their standard errors, and the fit's course.
/// [`arm::SysidFit`] and [`shooting::ShootingFit`] add their own figures and dereference to it.
#[derive(Clone, Debug)]
pub struct Estimates {
    pub names: Vec<String>,
    pub p: Vec<f64>,
    /// from σ² H⁺ in z (H = JᵀJ, + the priors'), chained through ∂p/∂z; 0 for fixed entries
    pub std_errors: Vec<f64>,
    /// σ² = ‖r‖² / (rows − rank), in units of the weighted residual
    pub sigma2: f64,
    /// ½‖r‖² (+ prior) after each accepted step (first: the start)
    pub history: Vec<f64>,
    /// p at each Jacobian evaluation: the start and the accepted steps (the last one's only when it did not stop
    /// on `ftol`)
    pub path: Vec<Vec<f64>>,
    pub iterations: usize,
}

/// [`levenberg_marquardt_normal`] from the start (z0, lower, upper) of `f(z, want)` (the cost and, when `want`,
/// the gradient and JᵀJ), recording p(z) at each Jacobian evaluation (`Estimates::path`) and ticking `bar` there
/// (its message: the cost); the bar is cleared at the end.
pub(crate) fn lm_with_path<E>(
    (z0, lower, upper): &(Vec<f64>, Vec<f64>, Vec<f64>),
    lm: &LmOptions,
    bar: Option<indicatif::ProgressBar>,
    p_of_z: impl Fn(&[f64]) -> Vec<f64>,
    mut f: impl FnMut(&[f64], bool) -> Result<(f64, Option<(Vec<f64>, Vec<f64>)>), E>,
) -> Result<(LmReport, Vec<Vec<f64>>), E> {
    let mut path = vec![];
    let rep = levenberg_marquardt_normal(
        z0,
        lower,
        upper,
        |z, want| {
            let (c, gh) = f(z, want)?;
            if want {
                path.push(p_of_z(z));
                if let Some(b) = &bar {
                    b.set_message(format!("{c:.6e}"));
                    b.inc(1);
                }
            }
            Ok((c, gh))
        },
        lm,
    )?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok((rep, path))
}

/// Map from an unconstrained coordinate z to a physical value p.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Param {
    /// p = z
    Identity,
    /// p = exp z (p > 0; masses)
    Log,
    /// p = ln(1 + e^z) (p > 0; friction coefficients)
    Softplus,
    /// p = 1 / (1 + e^−z) (p ∈ (0, 1); restitution)
    Sigmoid,
}

impl Param {
    pub fn value(self, z: f64) -> f64 {
        match self {
            Param::Identity => z,
            Param::Log => z.exp(),
            Param::Softplus => z.max(0.0) + (-z.abs()).exp().ln_1p(),
            Param::Sigmoid => 1.0 / (1.0 + (-z).exp()),
        }
    }
    /// dp/dz
    pub fn deriv(self, z: f64) -> f64 {
        match self {
            Param::Identity => 1.0,
            Param::Log => z.exp(),
            Param::Softplus => 1.0 / (1.0 + (-z).exp()),
            Param::Sigmoid => {
                let s = 1.0 / (1.0 + (-z).exp());
                s * (1.0 - s)
            }
        }
    }
    /// z for a value p inside the map's range (NaN outside it).
    pub fn coord(self, p: f64) -> f64 {
        match self {
            Param::Identity => p,
            Param::Log => p.ln(),
            Param::Softplus => {
                if p > 30.0 {
                    p
                } else {
                    p.exp_m1().ln()
                }
            }
            Param::Sigmoid => (p / (1.0 - p)).ln(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct LmOptions {
    pub max_iter: usize,
    /// initial damping (relative to diag JᵀJ)
    pub lambda0: f64,
    /// stop when the relative cost decrease of an accepted step is below this
    pub ftol: f64,
}

impl Default for LmOptions {
    fn default() -> Self {
        LmOptions { max_iter: 50, lambda0: 1e-3, ftol: 1e-10 }
    }
}

#[derive(Clone, Debug)]
pub struct LmReport {
    pub x: Vec<f64>,
    /// ½‖r‖² at x
    pub cost: f64,
    /// accepted steps
    pub iterations: usize,
    /// the cost after each accepted step (first entry: the start)
    pub history: Vec<f64>,
    /// x after each accepted step (first entry: the start), beside `history`
    pub path: Vec<Vec<f64>>,
}

/// A residual and, when asked, its Jacobian (row-major, len(r) × len(x)).
pub type Residual = (Vec<f64>, Option<Vec<f64>>);

/// Levenberg–Marquardt (Marquardt's diagonal scaling) minimising ½‖r(x)‖². `f(x, want_jacobian)`.
pub fn levenberg_marquardt<E>(
    x0: &[f64],
    mut f: impl FnMut(&[f64], bool) -> Result<Residual, E>,
    o: &LmOptions,
) -> Result<LmReport, E> {
    let n = x0.len();
    // the cost ½‖r‖² and, when asked, the linearisation (r, J)
    let lin = |x: &[f64], want: bool| -> Result<_, E> {
        let (r, j) = f(x, want)?;
        let cost = 0.5 * r.iter().map(|v| v * v).sum::<f64>();
        Ok((cost, j.map(|j| (r, j))))
    };
    let trial = |x: &[f64], (r, jm): &(Vec<f64>, Vec<f64>), lambda: f64| {
        let m = r.len();
        // normal equations JᵀJ δ = −Jᵀr
        let mut h = vec![0.0; n * n];
        let mut g = vec![0.0; n];
        for row in 0..m {
            let jr = &jm[row * n..(row + 1) * n];
            for a in 0..n {
                g[a] += jr[a] * r[row];
                for b in 0..n {
                    h[a * n + b] += jr[a] * jr[b];
                }
            }
        }
        let mut hd = h.clone();
        for a in 0..n {
            hd[a * n + a] += lambda * h[a * n + a].max(1e-12);
        }
        let step = cholesky_solve(&hd, &g, n)?;
        Some(x.iter().zip(&step).map(|(a, d)| a - d).collect())
    };
    lm_loop(x0.to_vec(), lin, trial, o)
}

/// Levenberg–Marquardt on the normal equations, for residuals whose ½‖r‖², gradient Jᵀr and Gauss–Newton
/// matrix JᵀJ (row-major n × n) are cheaper than r and J themselves (a Gram-form regressor residual).
/// `f(x, want)` gives the cost and, when `want`, (gradient, JᵀJ). Trust region by Marquardt's diagonal damping
/// λ diag(JᵀJ); box bounds by an active set (a coordinate on a bound whose descent leaves the box is held) and by
/// projecting each trial point on [lower, upper].
pub fn levenberg_marquardt_normal<E>(
    x0: &[f64],
    lower: &[f64],
    upper: &[f64],
    f: impl FnMut(&[f64], bool) -> Result<(f64, Option<(Vec<f64>, Vec<f64>)>), E>,
    o: &LmOptions,
) -> Result<LmReport, E> {
    let n = x0.len();
    let clamp = |x: &mut [f64]| {
        for i in 0..n {
            x[i] = x[i].max(lower[i]).min(upper[i]);
        }
    };
    let mut x = x0.to_vec();
    clamp(&mut x);
    let trial = |x: &[f64], (g, h): &(Vec<f64>, Vec<f64>), lambda: f64| {
        let mut hd = h.clone();
        let mut g = g.clone();
        let dmax = (0..n).map(|a| h[a * n + a]).fold(0.0f64, f64::max);
        for a in 0..n {
            // floor the scaling so that a direction the data do not see still gets a finite, damped step
            hd[a * n + a] += lambda * h[a * n + a].max(1e-12 * dmax).max(1e-300);
            // active set: a coordinate on a bound whose descent direction leaves the box stays put
            if (x[a] <= lower[a] && g[a] > 0.0) || (x[a] >= upper[a] && g[a] < 0.0) {
                for b in 0..n {
                    hd[a * n + b] = 0.0;
                    hd[b * n + a] = 0.0;
                }
                hd[a * n + a] = 1.0;
                g[a] = 0.0;
            }
        }
        let step = cholesky_solve(&hd, &g, n)?;
        let mut xt: Vec<f64> = x.iter().zip(&step).map(|(a, d)| a - d).collect();
        clamp(&mut xt);
        Some(xt)
    };
    lm_loop(x, f, trial, o)
}

/// The Levenberg–Marquardt iteration both forms share: `f(x, want)` gives the cost and, when `want`, the
/// linearisation at x; `trial(x, lin, λ)` the damped step's trial point (None: the damped matrix is not positive
/// definite, λ × 10). An accepted step (lower finite cost) divides λ by 3 (floor 1e-12), a rejected one multiplies
/// it by 4; 30 rejections in a row, `max_iter` accepted steps or a relative decrease below `ftol` stop.
fn lm_loop<S, E>(
    mut x: Vec<f64>,
    mut f: impl FnMut(&[f64], bool) -> Result<(f64, Option<S>), E>,
    trial: impl Fn(&[f64], &S, f64) -> Option<Vec<f64>>,
    o: &LmOptions,
) -> Result<LmReport, E> {
    let (mut cost, mut lin) = f(&x, true)?;
    let mut lambda = o.lambda0;
    let mut report = LmReport { x: x.clone(), cost, iterations: 0, history: vec![cost], path: vec![x.clone()] };
    let mut rejected = 0;
    while report.iterations < o.max_iter && rejected < 30 {
        let Some(l) = lin.as_ref() else { break };
        let Some(xt) = trial(&x, l, lambda) else {
            lambda *= 10.0;
            rejected += 1;
            continue;
        };
        let (ct, _) = f(&xt, false)?;
        if ct.is_finite() && ct < cost {
            let rel = (cost - ct) / cost.max(1e-300);
            x = xt;
            cost = ct;
            report.iterations += 1;
            report.history.push(cost);
            report.path.push(x.clone());
            lambda = (lambda / 3.0).max(1e-12);
            rejected = 0;
            if rel < o.ftol {
                break;
            }
            (_, lin) = f(&x, true)?;
        } else {
            lambda *= 4.0;
            rejected += 1;
        }
    }
    report.x = x;
    report.cost = cost;
    Ok(report)
}

/// Solve the SPD system A x = b (row-major n × n) by Cholesky; None if A is not positive definite.
pub fn cholesky_solve(a: &[f64], b: &[f64], n: usize) -> Option<Vec<f64>> {
    let mut l = vec![0.0; n * n];
    for i in 0..n {
        for k in 0..=i {
            let s = a[i * n + k] - (0..k).map(|p| l[i * n + p] * l[k * n + p]).sum::<f64>();
            if i == k {
                if s.is_nan() || s <= 0.0 {
                    return None;
                }
                l[i * n + i] = s.sqrt();
            } else {
                l[i * n + k] = s / l[k * n + k];
            }
        }
    }
    let mut y = b.to_vec();
    for i in 0..n {
        y[i] = (y[i] - (0..i).map(|p| l[i * n + p] * y[p]).sum::<f64>()) / l[i * n + i];
    }
    for i in (0..n).rev() {
        y[i] = (y[i] - (i + 1..n).map(|p| l[p * n + i] * y[p]).sum::<f64>()) / l[i * n + i];
    }
    Some(y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameterisations_round_trip_and_differentiate() {
        for (p, v) in [(Param::Log, 0.7), (Param::Softplus, 0.2), (Param::Sigmoid, 0.5), (Param::Identity, -3.0)] {
            let z = p.coord(v);
            assert!((p.value(z) - v).abs() < 1e-12, "{p:?}");
            let h = 1e-6;
            let fd = (p.value(z + h) - p.value(z - h)) / (2.0 * h);
            assert!((p.deriv(z) - fd).abs() < 1e-8, "{p:?}: {} vs {fd}", p.deriv(z));
        }
        assert!(Param::Softplus.value(-50.0) > 0.0 && Param::Sigmoid.value(40.0) <= 1.0);
    }

    #[test]
    fn normal_form_lm_respects_bounds_and_matches_the_unbounded_fit() {
        // ½‖A x − y‖² with A 3 × 2: unbounded minimiser x* = (1, −2); with x₁ ≥ −1 the bound is active
        let a = [[1.0, 0.5], [0.3, 2.0], [1.0, -1.0]];
        let xs = [1.0, -2.0];
        let y: Vec<f64> = a.iter().map(|r| r[0] * xs[0] + r[1] * xs[1]).collect();
        let f = |x: &[f64], want: bool| -> Result<_, ()> {
            let r: Vec<f64> = a.iter().zip(&y).map(|(row, yi)| row[0] * x[0] + row[1] * x[1] - yi).collect();
            let c = 0.5 * r.iter().map(|v| v * v).sum::<f64>();
            let gh = want.then(|| {
                let g = (0..2).map(|k| a.iter().zip(&r).map(|(row, ri)| row[k] * ri).sum()).collect();
                let h = (0..4).map(|k| a.iter().map(|row| row[k / 2] * row[k % 2]).sum()).collect();
                (g, h)
            });
            Ok((c, gh))
        };
        let inf = f64::INFINITY;
        let free = levenberg_marquardt_normal(&[0.0, 0.0], &[-inf; 2], &[inf; 2], f, &LmOptions::default()).unwrap();
        assert!((free.x[0] - 1.0).abs() < 1e-9 && (free.x[1] + 2.0).abs() < 1e-9, "{:?}", free.x);
        let lo = [-inf, -1.0];
        let b = levenberg_marquardt_normal(&[0.0, 0.0], &lo, &[inf; 2], f, &LmOptions::default()).unwrap();
        assert!(b.x[1] >= -1.0 && (b.x[1] + 1.0).abs() < 1e-9, "{:?}", b.x);
        // x₀ minimises with x₁ fixed at the bound: (Aᵀ(A x − y))₀ = 0
        let g0: f64 = a.iter().zip(&y).map(|(row, yi)| row[0] * (row[0] * b.x[0] + row[1] * b.x[1] - yi)).sum();
        assert!(g0.abs() < 1e-8, "{g0}");
    }

    #[test]
    fn lm_fits_an_exponential_decay() {
        // y = a exp(−k t) with (a, k) = (2, 1.5) from a far start, k on a log scale
        let ts: Vec<f64> = (0..20).map(|i| 0.1 * i as f64).collect();
        let ys: Vec<f64> = ts.iter().map(|t| 2.0 * (-1.5 * t).exp()).collect();
        let f = |x: &[f64], jac: bool| -> Result<Residual, ()> {
            let k = Param::Log.value(x[1]);
            let r = ts.iter().zip(&ys).map(|(t, y)| x[0] * (-k * t).exp() - y).collect();
            let j = jac.then(|| {
                ts.iter()
                    .flat_map(|t| {
                        let e = (-k * t).exp();
                        [e, -x[0] * t * e * Param::Log.deriv(x[1])]
                    })
                    .collect()
            });
            Ok((r, j))
        };
        let x0 = [0.5, Param::Log.coord(0.2)];
        let rep = levenberg_marquardt(&x0, f, &LmOptions::default()).unwrap();
        assert!((rep.x[0] - 2.0).abs() < 1e-6 && (Param::Log.value(rep.x[1]) - 1.5).abs() < 1e-6, "{:?}", rep.x);
        assert!(rep.cost < 1e-12 && rep.history.windows(2).all(|w| w[1] < w[0]));
        assert_eq!(rep.path.len(), rep.history.len());
        assert_eq!((&rep.path[0], rep.path.last().unwrap()), (&x0.to_vec(), &rep.x));
    }
}
