//! Gauss–Newton with a backtracking line search on a least-squares loss L(x) ≈ ‖r(x)‖², the exact minimiser
//! the experiments compare their optimisers with (spec 000 §4.2–4.4). The step solves J δ = r in the least-squares
//! sense by SVD (JᵀJ would square condition numbers of ~1e3–1e4), then halves α until L(x − α δ) < L(x).
use nalgebra::{DMatrix, DVector};

#[derive(Clone, Debug)]
pub struct GnOptions {
    /// Gauss–Newton iterations at most
    pub max_iter: usize,
    /// step halvings at most before the line search gives up (and the iteration stops)
    pub max_halvings: usize,
    /// stop after an accepted step with ‖α δ‖∞ below this (0: never)
    pub step_tol: f64,
    /// stop after an accepted step that lowers the loss by less than this fraction
    pub rel_tol: f64,
}

impl Default for GnOptions {
    fn default() -> Self {
        GnOptions { max_iter: 50, max_halvings: 30, step_tol: 0.0, rel_tol: 1e-12 }
    }
}

#[derive(Clone, Debug)]
pub struct GnReport {
    pub x: Vec<f64>,
    /// the loss at x
    pub loss: f64,
    /// accepted steps
    pub iterations: usize,
}

/// Minimise `loss` from `x0` by Gauss–Newton: `linearise(ctx, x)` gives the residual r and its Jacobian J
/// (rows: residuals, columns: x) with loss ≈ ‖r‖², `loss(ctx, x)` the loss alone (the line search trials).
/// Both take the shared context `ctx` mutably (a workspace, a simulator). Errors of either are returned as is.
pub fn gauss_newton<C, E>(
    ctx: &mut C,
    x0: &[f64],
    o: &GnOptions,
    mut loss: impl FnMut(&mut C, &[f64]) -> Result<f64, E>,
    mut linearise: impl FnMut(&mut C, &[f64]) -> Result<(DVector<f64>, DMatrix<f64>), E>,
) -> Result<GnReport, E> {
    let mut x = x0.to_vec();
    let mut l = loss(ctx, &x)?;
    let mut iterations = 0;
    for _ in 0..o.max_iter {
        let (r, j) = linearise(ctx, &x)?;
        // cannot fail: U and Vᵀ are computed and ε ≥ 0
        let Ok(d) = j.svd(true, true).solve(&r, 1e-300) else { break };
        let mut alpha = 1.0;
        let mut accepted = None;
        for _ in 0..o.max_halvings {
            let trial: Vec<f64> = x.iter().zip(d.iter()).map(|(a, b)| a - alpha * b).collect();
            let lt = loss(ctx, &trial)?;
            if lt < l {
                accepted = Some((trial, lt));
                break;
            }
            alpha *= 0.5;
        }
        let Some((trial, lt)) = accepted else { break };
        iterations += 1;
        let done = alpha * d.amax() < o.step_tol || lt > l * (1.0 - o.rel_tol);
        x = trial;
        l = lt;
        if done {
            break;
        }
    }
    Ok(GnReport { x, loss: l, iterations })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rosenbrock as least squares, r = (10 (y − x²), 1 − x): minimiser (1, 1), loss 0; the full Gauss–Newton
    /// step overshoots from (−1.2, 1), so the line search is exercised.
    fn rosenbrock(calls: &mut usize, x: &[f64]) -> (DVector<f64>, DMatrix<f64>) {
        *calls += 1;
        let r = DVector::from_column_slice(&[10.0 * (x[1] - x[0] * x[0]), 1.0 - x[0]]);
        let j = DMatrix::from_row_slice(2, 2, &[-20.0 * x[0], 10.0, -1.0, 0.0]);
        (r, j)
    }

    #[test]
    fn gauss_newton_finds_the_rosenbrock_minimiser() {
        let mut calls = 0;
        let o = GnOptions { step_tol: 1e-12, ..GnOptions::default() };
        let rep = gauss_newton(
            &mut calls,
            &[-1.2, 1.0],
            &o,
            |c, x| Ok::<_, ()>(rosenbrock(c, x).0.norm_squared()),
            |c, x| Ok(rosenbrock(c, x)),
        )
        .unwrap();
        assert!((rep.x[0] - 1.0).abs() < 1e-12 && (rep.x[1] - 1.0).abs() < 1e-12, "{:?}", rep.x);
        assert!(rep.loss < 1e-24 && rep.iterations >= 2 && rep.iterations < 20, "{rep:?}");
        assert!(calls > 2 * rep.iterations, "the context is threaded through both closures");
    }

    #[test]
    fn gauss_newton_least_squares_on_an_overdetermined_exponential() {
        // y = a exp(b t), (a, b) = (2, −1.5) from noisy-free data: 20 residuals, 2 unknowns
        let ts: Vec<f64> = (0..20).map(|i| 0.1 * i as f64).collect();
        let ys: Vec<f64> = ts.iter().map(|t| 2.0 * (-1.5 * t).exp()).collect();
        let lin = |_: &mut (), x: &[f64]| {
            let r = DVector::from_iterator(ts.len(), ts.iter().zip(&ys).map(|(t, y)| x[0] * (x[1] * t).exp() - y));
            let j = DMatrix::from_fn(ts.len(), 2, |i, c| {
                let e = (x[1] * ts[i]).exp();
                [e, x[0] * ts[i] * e][c]
            });
            Ok::<_, ()>((r, j))
        };
        let rep =
            gauss_newton(&mut (), &[1.0, 0.0], &GnOptions::default(), |c, x| Ok(lin(c, x)?.0.norm_squared()), lin)
                .unwrap();
        assert!((rep.x[0] - 2.0).abs() < 1e-10 && (rep.x[1] + 1.5).abs() < 1e-10, "{rep:?}");
    }
}
