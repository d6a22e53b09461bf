//! Central finite differences, used by every derivative test. Relative error is normwise:
//! max_i |a_i − n_i| / max_i |n_i| (elementwise ratios are meaningless for entries that are ~0).
use nalgebra::DMatrix;

#[derive(Clone, Debug)]
pub struct GradCheck {
    pub max_rel_err: f64,
    pub max_abs_err: f64,
    pub worst_index: usize,
    pub analytic: Vec<f64>,
    pub numeric: Vec<f64>,
}

impl GradCheck {
    pub fn all_finite(&self) -> bool {
        self.analytic.iter().all(|v| v.is_finite())
    }
}

/// Fourth-order central differences of a scalar f at θ with relative steps h_i = `rel` · max(|θ_i|, 1e-3):
/// (8 (f(θ + h e_i) − f(θ − h e_i)) − (f(θ + 2h e_i) − f(θ − 2h e_i))) / (12 h), truncation O(h⁴) — for
/// references sharper than a plain central difference's round-off allows.
pub fn fd4_gradient(f: impl Fn(&[f64]) -> f64, theta: &[f64], rel: f64) -> Vec<f64> {
    let mut a = theta.to_vec();
    (0..theta.len())
        .map(|i| {
            let h = rel * theta[i].abs().max(1e-3);
            let mut at = |s: f64| {
                a[i] = theta[i] + s * h;
                let v = f(&a);
                a[i] = theta[i];
                v
            };
            (8.0 * (at(1.0) - at(-1.0)) - (at(2.0) - at(-2.0))) / (12.0 * h)
        })
        .collect()
}

/// Normwise relative error of `a` against the reference `n`.
pub fn rel_err(a: &[f64], n: &[f64]) -> f64 {
    let scale = n.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let err = a.iter().zip(n).fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    if scale == 0.0 {
        err
    } else {
        err / scale
    }
}

/// ∂f/∂d at d = 0 by central differences with step `h` (f is evaluated at ±h e_i: for a manifold input,
/// let f retract the tangent perturbation, e.g. quaternions through Exp(δ) ⊗ q).
pub fn fd_gradient(f: impl Fn(&[f64]) -> f64, n: usize, h: f64) -> Vec<f64> {
    let mut d = vec![0.0; n];
    (0..n)
        .map(|i| {
            d[i] = h;
            let a = f(&d);
            d[i] = -h;
            let b = f(&d);
            d[i] = 0.0;
            (a - b) / (2.0 * h)
        })
        .collect()
}

/// Jacobian of a vector function of a tangent perturbation (columns = inputs).
pub fn fd_jacobian(f: impl Fn(&[f64]) -> Vec<f64>, n: usize, h: f64) -> DMatrix<f64> {
    let mut d = vec![0.0; n];
    let mut cols = Vec::with_capacity(n);
    for i in 0..n {
        d[i] = h;
        let a = f(&d);
        d[i] = -h;
        let b = f(&d);
        d[i] = 0.0;
        cols.push(a.iter().zip(&b).map(|(x, y)| (x - y) / (2.0 * h)).collect::<Vec<_>>());
    }
    let m = cols.first().map_or(0, |c| c.len());
    DMatrix::from_fn(m, n, |r, c| cols[c][r])
}

/// Compare an analytic gradient with central differences of `f` around the zero perturbation.
pub fn gradcheck(f: impl Fn(&[f64]) -> f64, analytic: &[f64], h: f64) -> GradCheck {
    let numeric = fd_gradient(f, analytic.len(), h);
    let (mut worst, mut wi) = (0.0, 0);
    for i in 0..analytic.len() {
        let e = (analytic[i] - numeric[i]).abs();
        if e > worst {
            worst = e;
            wi = i;
        }
    }
    GradCheck {
        max_rel_err: rel_err(analytic, &numeric),
        max_abs_err: worst,
        worst_index: wi,
        analytic: analytic.to_vec(),
        numeric,
    }
}

pub use torsion_math::rng::XorShift;

#[cfg(test)]
mod tests {
    use super::*;
    /// Fourth-order differences are exact (to round-off) on quartics; plain central differences are not.
    #[test]
    fn fd4_is_exact_on_quartics() {
        let f = |x: &[f64]| x[0].powi(4) + 3.0 * x[0] * x[1].powi(3) - x[1];
        let (x, y) = (0.7, -1.3);
        let g = fd4_gradient(f, &[x, y], 1e-2);
        let want = [4.0 * x.powi(3) + 3.0 * y.powi(3), 9.0 * x * y * y - 1.0];
        assert!(rel_err(&g, &want) < 1e-12, "{g:?} vs {want:?}");
        let c = fd_gradient(|d| f(&[x + d[0], y + d[1]]), 2, 1e-2 * 1.3);
        assert!(rel_err(&c, &want) > 1e-6, "central differences carry O(h²) truncation: {c:?}");
    }

    #[test]
    fn gradcheck_detects_right_and_wrong_gradients() {
        let f = |d: &[f64]| (1.0 + d[0]).sin() * (2.0 + d[1]).exp();
        let g = [1.0f64.cos() * 2.0f64.exp(), 1.0f64.sin() * 2.0f64.exp()];
        assert!(gradcheck(f, &g, 1e-6).max_rel_err < 1e-8);
        let wrong = [g[0], g[1] * 1.01];
        assert!(gradcheck(f, &wrong, 1e-6).max_rel_err > 1e-3);
    }
}
