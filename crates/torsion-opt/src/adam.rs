//! Adam (Kingma & Ba 2015) with optional box bounds (projected after each update).

#[derive(Clone, Debug)]
pub struct Adam {
    pub lr: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
    m: Vec<f64>,
    v: Vec<f64>,
    t: i32,
    /// optional per-coordinate [lo, hi] bounds
    pub bounds: Option<Vec<(f64, f64)>>,
}

impl Adam {
    pub fn new(n: usize, lr: f64) -> Self {
        Adam { lr, beta1: 0.9, beta2: 0.999, eps: 1e-8, m: vec![0.0; n], v: vec![0.0; n], t: 0, bounds: None }
    }
    pub fn with_bounds(mut self, b: Vec<(f64, f64)>) -> Self {
        self.bounds = Some(b);
        self
    }
    /// One update of `x` in place from the gradient `g`.
    pub fn step(&mut self, x: &mut [f64], g: &[f64]) {
        assert_eq!(x.len(), self.m.len(), "Adam: parameter length changed");
        self.t += 1;
        let (b1, b2) = (self.beta1, self.beta2);
        let c1 = 1.0 - b1.powi(self.t);
        let c2 = 1.0 - b2.powi(self.t);
        for i in 0..x.len() {
            self.m[i] = b1 * self.m[i] + (1.0 - b1) * g[i];
            self.v[i] = b2 * self.v[i] + (1.0 - b2) * g[i] * g[i];
            x[i] -= self.lr * (self.m[i] / c1) / ((self.v[i] / c2).sqrt() + self.eps);
            if let Some(b) = &self.bounds {
                x[i] = x[i].clamp(b[i].0, b[i].1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn adam_minimises_a_quadratic() {
        let mut x = vec![3.0, -2.0];
        let mut opt = Adam::new(2, 0.1);
        for _ in 0..500 {
            let g = vec![2.0 * (x[0] - 1.0), 20.0 * (x[1] + 0.5)];
            opt.step(&mut x, &g);
        }
        assert!((x[0] - 1.0).abs() < 1e-3 && (x[1] + 0.5).abs() < 1e-3, "{x:?}");
    }
}
