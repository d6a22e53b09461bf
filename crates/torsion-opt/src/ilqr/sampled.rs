//! Sample-based iLQG (spec 003 §4.5, the option for dynamics without Jacobians, e.g. MuJoCo): each iteration
//! draws `samples` rollouts (40 in the spec) from the current linear-Gaussian policy
//! u = ū_t + K_t (x ⊖ x̄_t) + ε, ε ~ N(0, Σ_t), fits δx_{t+1} ≈ A_t δx_t + B_t δu_t + c_t per step by ridge
//! least squares on (x ⊖ x̄, u − ū), and takes the KL-penalised update
//! min E_p[Σ ℓ] + w KL(p ‖ p̄) (Levine & Abbeel 2014 with a fixed weight w, the spec's 0.005): the backward pass
//! runs on ℓ̃ = ℓ − w log p̄(u | x), i.e. ℓ_uu += w Σ̄⁻¹, ℓ_ux −= w Σ̄⁻¹ K̄, ℓ_xx += w K̄ᵀ Σ̄⁻¹ K̄ at the nominal,
//! and the new policy's covariance is the maximum-entropy one, Σ = w Q̃_uu⁻¹. The mean's step is line-searched
//! on the true dynamics (counted in `dynamics_steps`, the ground-truth accounting of §4.5).
use super::*;

#[derive(Clone, Debug)]
pub struct SampledOptions {
    /// iterations (20 in the spec)
    pub iterations: usize,
    /// rollouts per iteration (40 in the spec)
    pub samples: usize,
    /// w, the KL penalty weight (0.005 in the spec); with `kl_bound`, the first iteration's starting guess
    pub kl_weight: f64,
    /// Some(ε): choose w each iteration so that the predicted KL(p ‖ p̄) of the trajectory distributions under
    /// the fitted dynamics is ε (within 10 %; GPS's dual on η); None: the fixed weight `kl_weight`
    pub kl_bound: Option<f64>,
    /// standard deviation of the first iteration's exploration noise, per control
    pub init_sigma: f64,
    /// ridge λ of the regression, relative to the mean diagonal of ZᵀZ (the intercept is not penalised)
    pub ridge: f64,
    pub seed: u64,
}

impl Default for SampledOptions {
    fn default() -> Self {
        SampledOptions {
            iterations: 20,
            samples: 40,
            kl_weight: 0.005,
            kl_bound: None,
            init_sigma: 1.0,
            ridge: 1e-6,
            seed: 0,
        }
    }
}

/// What `Ilqr::solve_sampled` returns.
#[derive(Clone, Debug)]
pub struct SampledReport<X> {
    pub controls: Vec<DVector<f64>>,
    pub states: Vec<X>,
    pub k: Vec<DVector<f64>>,
    pub gains: Vec<DMatrix<f64>>,
    /// the policy covariance Σ_t of each step at the end
    pub sigma: Vec<DMatrix<f64>>,
    /// the nominal's cost: initial, then after each iteration (unchanged when the step was rejected)
    pub cost_history: Vec<f64>,
    /// dynamics steps taken: samples × T per iteration plus the nominal / line-search rollouts
    pub dynamics_steps: usize,
    /// the KL weight of the last iteration (`kl_weight`, or the one the bound chose)
    pub kl_weight: f64,
    /// with `kl_bound`: the last iteration's predicted KL(p ‖ p̄) (NaN without)
    pub predicted_kl: f64,
}

/// Seeded normal samples (the pbd-mpc-torques encoder noise draws this sequence too).
pub use torsion_math::rng::Normal;

/// Ridge least squares for one step: rows i of (dx, du) → dxn ≈ A dx + B du + c; writes A (nx × nx), B (nx × nu).
/// Rows with weight 0 (failed samples) are left out.
pub fn fit_linear(
    dx: &DMatrix<f64>,
    du: &DMatrix<f64>,
    dxn: &DMatrix<f64>,
    weight: &[f64],
    ridge: f64,
    a: &mut DMatrix<f64>,
    b: &mut DMatrix<f64>,
) -> Result<(), IlqrError> {
    let (n, nx, nu) = (dx.nrows(), dx.ncols(), du.ncols());
    let p = nx + nu + 1;
    let z = DMatrix::from_fn(n, p, |i, j| {
        weight[i]
            * if j < nx {
                dx[(i, j)]
            } else if j < nx + nu {
                du[(i, j - nx)]
            } else {
                1.0
            }
    });
    let y = DMatrix::from_fn(n, nx, |i, j| weight[i] * dxn[(i, j)]);
    let mut g = z.transpose() * &z;
    let scale = (0..p - 1).map(|i| g[(i, i)]).sum::<f64>() / (p - 1) as f64;
    let lambda = ridge * scale.max(f64::MIN_POSITIVE);
    for i in 0..p - 1 {
        g[(i, i)] += lambda;
    }
    let rhs = z.transpose() * y;
    let w = g
        .cholesky()
        .ok_or_else(|| IlqrError::BadInput("sampled dynamics: the regression's normal matrix is singular".into()))?
        .solve(&rhs);
    for r in 0..nx {
        for c in 0..nx {
            a[(r, c)] = w[(c, r)];
        }
        for c in 0..nu {
            b[(r, c)] = w[(nx + c, r)];
        }
    }
    Ok(())
}

impl<X: Clone> Ilqr<X> {
    /// Sample-based iLQG from `x0` and `u_init` (module docs); the dynamics' `jacobians` is never called. The
    /// control box, the line-search α and the μ schedule are the options of `self`.
    pub fn solve_sampled<D: Dynamics<State = X>, C: Cost<X>>(
        &mut self,
        dynamics: &mut D,
        cost: &mut C,
        x0: &X,
        u_init: &[DVector<f64>],
        so: &SampledOptions,
    ) -> Result<SampledReport<X>, IlqrError> {
        let (t_len, nx, nu, n) = (self.t_len, self.nx, self.nu, so.samples);
        if dynamics.state_dim() != nx || dynamics.control_dim() != nu {
            return Err(IlqrError::BadInput("dynamics dimensions differ from the workspace's".into()));
        }
        if u_init.len() != t_len || u_init.iter().any(|u| u.len() != nu) {
            return Err(IlqrError::BadInput(format!("u_init needs {t_len} rows of {nu} controls")));
        }
        cost.check(nx, nu, t_len).map_err(IlqrError::BadInput)?;
        let positive = |v: f64| v.is_finite() && v > 0.0;
        if n < 2 || !positive(so.kl_weight) || !positive(so.init_sigma) || !so.ridge.is_finite() || so.ridge < 0.0 {
            return Err(IlqrError::BadInput(format!(
                "sampled iLQG options: need samples ≥ 2 (got {n}), kl_weight > 0 ({}), init_sigma > 0 ({}), ridge ≥ 0 ({})",
                so.kl_weight, so.init_sigma, so.ridge
            )));
        }
        self.xs[0].clone_from(x0);
        for t in 0..t_len {
            for i in 0..nu {
                let (lo, hi) = self.bound(i);
                self.us[t][i] = u_init[t][i].clamp(lo, hi);
            }
            self.k[t].fill(0.0);
            self.gains[t].fill(0.0);
        }
        let mut j_now = self.rollout_nominal(dynamics, cost);
        if !j_now.is_finite() {
            return Err(IlqrError::NonFinite(j_now));
        }
        let mut steps = t_len;
        let mut w = so.kl_weight;
        let mut last_kl = f64::NAN;
        let mut l_base: Vec<CostDerivs> = (0..t_len).map(|_| CostDerivs::zeros(nx, nu)).collect();
        let mut sigma_inv: Vec<DMatrix<f64>> = (0..t_len).map(|_| DMatrix::zeros(nu, nu)).collect();
        let mut sigma: Vec<DMatrix<f64>> =
            (0..t_len).map(|_| DMatrix::identity(nu, nu) * (so.init_sigma * so.init_sigma)).collect();
        let mut old_gains = self.gains.clone();
        let mut dx: Vec<DMatrix<f64>> = (0..t_len).map(|_| DMatrix::zeros(n, nx)).collect();
        let mut du: Vec<DMatrix<f64>> = (0..t_len).map(|_| DMatrix::zeros(n, nu)).collect();
        let mut dxn: Vec<DMatrix<f64>> = (0..t_len).map(|_| DMatrix::zeros(n, nx)).collect();
        let mut weight = vec![1.0; n];
        let (mut cur, mut next) = (x0.clone(), x0.clone());
        let (mut dxv, mut u) = (vec![0.0; nx], vec![0.0; nu]);
        let mut eps = DVector::zeros(nu);
        let mut rng = Normal::new(so.seed);
        let o = self.options.clone();
        let (mut mu, mut dmu) = (o.mu_init, 1.0);
        let mut history = vec![j_now];
        for _ in 0..so.iterations {
            // sample the current policy
            let chol: Vec<DMatrix<f64>> = sigma
                .iter()
                .map(|s| s.clone().cholesky().map(|c| c.l()).unwrap_or_else(|| DMatrix::zeros(nu, nu)))
                .collect();
            for i in 0..n {
                weight[i] = 1.0;
                cur.clone_from(x0);
                for t in 0..t_len {
                    dynamics.diff(&self.xs[t], &cur, &mut dxv);
                    for e in eps.iter_mut() {
                        *e = rng.sample();
                    }
                    for r in 0..nu {
                        let fb: f64 = (0..nx).map(|c| self.gains[t][(r, c)] * dxv[c]).sum();
                        let noise: f64 = (0..=r).map(|c| chol[t][(r, c)] * eps[c]).sum();
                        let (lo, hi) = self.bound(r);
                        u[r] = (self.us[t][r] + fb + noise).clamp(lo, hi);
                        du[t][(i, r)] = u[r] - self.us[t][r];
                    }
                    for c in 0..nx {
                        dx[t][(i, c)] = dxv[c];
                    }
                    steps += 1;
                    if dynamics.step(&cur, &u, &mut next).is_err() {
                        weight[i] = 0.0;
                        break;
                    }
                    dynamics.diff(&self.xs[t + 1], &next, &mut dxv);
                    if dxv.iter().any(|v| !v.is_finite()) {
                        weight[i] = 0.0;
                        break;
                    }
                    for c in 0..nx {
                        dxn[t][(i, c)] = dxv[c];
                    }
                    std::mem::swap(&mut cur, &mut next);
                }
            }
            if weight.iter().sum::<f64>() < 2.0 {
                return Err(IlqrError::BadInput("sampled iLQG: fewer than 2 sampled rollouts succeeded".into()));
            }
            for t in 0..t_len {
                fit_linear(&dx[t], &du[t], &dxn[t], &weight, so.ridge, &mut self.a[t], &mut self.b[t])?;
            }
            // the KL terms around the old policy p̄ = N(ū + K̄ δx, Σ̄): a fixed weight, or the weight whose
            // predicted KL meets the bound
            self.cost_derivs(cost);
            for t in 0..t_len {
                l_base[t].clone_from(&self.l[t]);
                sigma_inv[t] = sigma[t].clone().try_inverse().unwrap_or_else(|| DMatrix::zeros(nu, nu));
            }
            let mut ok = self.kl_backward(w, mu, &sigma_inv, &old_gains, &l_base);
            while !ok && mu <= o.mu_max {
                dmu = (dmu * o.mu_factor).max(o.mu_factor);
                mu = (mu * dmu).max(o.mu_min);
                ok = self.kl_backward(w, mu, &sigma_inv, &old_gains, &l_base);
            }
            if let (Some(eps), true) = (so.kl_bound, ok) {
                // bisection on ln w: KL(w) falls as w grows; a failed backward pass means w is too small
                let (mut lo, mut hi) = ((1e-12f64).ln(), (1e12f64).ln());
                let mut lw = w.ln();
                for _ in 0..40 {
                    let kl = if self.kl_backward(lw.exp(), mu, &sigma_inv, &old_gains, &l_base) {
                        self.predicted_kl(lw.exp(), mu, &sigma, &sigma_inv, &old_gains)
                    } else {
                        f64::INFINITY
                    };
                    if kl > 1.1 * eps {
                        lo = lw;
                    } else if kl < 0.9 * eps {
                        hi = lw;
                    } else {
                        break;
                    }
                    lw = 0.5 * (lo + hi);
                }
                w = lw.exp();
                ok = self.kl_backward(w, mu, &sigma_inv, &old_gains, &l_base);
                last_kl = self.predicted_kl(w, mu, &sigma, &sigma_inv, &old_gains);
            }
            let mut accepted = false;
            if ok {
                for &alpha in &o.alphas {
                    let trial = self.forward_pass(dynamics, cost, alpha);
                    steps += t_len;
                    if trial < j_now {
                        std::mem::swap(&mut self.xs, &mut self.xs_new);
                        std::mem::swap(&mut self.us, &mut self.us_new);
                        j_now = trial;
                        accepted = true;
                        break;
                    }
                }
            }
            if accepted {
                // maximum-entropy covariance of the new policy, Σ = w Q_uu⁻¹ (Q_uu with the KL terms; the LM μ
                // only where Q_uu alone is not positive definite)
                for t in 0..t_len {
                    if let Some(sg) = self.policy_covariance(t, w, mu) {
                        sigma[t] = sg;
                    }
                    old_gains[t].copy_from(&self.gains[t]);
                }
                dmu = (dmu / o.mu_factor).min(1.0 / o.mu_factor);
                mu = if mu * dmu > o.mu_min { mu * dmu } else { 0.0 };
            } else {
                dmu = (dmu * o.mu_factor).max(o.mu_factor);
                mu = (mu * dmu).max(o.mu_min);
                for t in 0..t_len {
                    self.gains[t].copy_from(&old_gains[t]);
                }
            }
            history.push(j_now);
        }
        Ok(SampledReport {
            controls: self.us.clone(),
            states: self.xs.clone(),
            k: self.k.clone(),
            gains: self.gains.clone(),
            sigma,
            cost_history: history,
            dynamics_steps: steps,
            kl_weight: w,
            predicted_kl: last_kl,
        })
    }

    /// ℓ = ℓ_base + the KL terms with weight w (ℓ_uu += w Σ̄⁻¹, ℓ_ux −= w Σ̄⁻¹K̄, ℓ_xx += w K̄ᵀΣ̄⁻¹K̄), then the
    /// backward pass with μ.
    fn kl_backward(
        &mut self,
        w: f64,
        mu: f64,
        sigma_inv: &[DMatrix<f64>],
        old_gains: &[DMatrix<f64>],
        l_base: &[CostDerivs],
    ) -> bool {
        for t in 0..self.t_len {
            let sk = &sigma_inv[t] * &old_gains[t] * w;
            let l = &mut self.l[t];
            l.clone_from(&l_base[t]);
            l.luu += &sigma_inv[t] * w;
            l.lux -= &sk;
            l.lxx += old_gains[t].transpose() * &sk;
        }
        self.backward_pass(mu)
    }

    /// w Q_uu⁻¹ of step t from the last backward pass (w (Q_uu + μ I)⁻¹ where Q_uu is not positive definite).
    fn policy_covariance(&self, t: usize, w: f64, mu: f64) -> Option<DMatrix<f64>> {
        let q = &self.quu_store[t];
        let inv = q
            .clone()
            .cholesky()
            .map(|c| c.inverse())
            .or_else(|| (q + DMatrix::identity(self.nu, self.nu) * mu).cholesky().map(|c| c.inverse()))?;
        Some(inv * w)
    }

    /// KL(p ‖ p̄) of the trajectory distributions under the fitted dynamics, for the new policy
    /// N(ū + k + K δx, `policy_covariance`) of the last backward pass against p̄ = N(ū + K̄ δx, Σ̄): Σ_t E_{δx_t}[KL_t], with
    /// δx_t ~ N(m_t, S_t) propagated by m' = A m + B (k + K m), S' = (A + BK) S (A + BK)ᵀ + B Σ Bᵀ from 0.
    fn predicted_kl(
        &self,
        w: f64,
        mu: f64,
        sigma_old: &[DMatrix<f64>],
        sigma_inv: &[DMatrix<f64>],
        old_gains: &[DMatrix<f64>],
    ) -> f64 {
        let (nx, nu) = (self.nx, self.nu);
        let mut m = DVector::zeros(nx);
        let mut s = DMatrix::zeros(nx, nx);
        let mut kl = 0.0;
        for t in 0..self.t_len {
            let Some(sig) = self.policy_covariance(t, w, mu) else {
                return f64::INFINITY;
            };
            let (Some(c_new), Some(c_old)) = (sig.clone().cholesky(), sigma_old[t].clone().cholesky()) else {
                return f64::INFINITY;
            };
            let logdet = |c: &nalgebra::Cholesky<f64, nalgebra::Dyn>| 2.0 * c.l().diagonal().map(|d| d.ln()).sum();
            let dk = &self.gains[t] - &old_gains[t];
            let mean = &self.k[t] + &dk * &m;
            let tr = (&sigma_inv[t] * &sig).trace() + (dk.transpose() * &sigma_inv[t] * &dk * &s).trace();
            kl += 0.5 * (tr - nu as f64 + logdet(&c_old) - logdet(&c_new) + mean.dot(&(&sigma_inv[t] * &mean)));
            let acl = &self.a[t] + &self.b[t] * &self.gains[t];
            m = &self.a[t] * &m + &self.b[t] * (&self.k[t] + &self.gains[t] * &m);
            s = &acl * &s * acl.transpose() + &self.b[t] * &sig * self.b[t].transpose();
        }
        kl
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use torsion_math::Vec3;
    use torsion_model::builder::two_link_arm;
    use torsion_model::GenState;
    use torsion_solvers::FeatherstoneSolver;

    /// The stepper through `step` only: the sampled variant must not need Jacobians.
    struct NoJacobians<'a>(SolverDynamics<'a, FeatherstoneSolver>);

    impl Dynamics for NoJacobians<'_> {
        type State = GenState;
        fn state_dim(&self) -> usize {
            self.0.state_dim()
        }
        fn control_dim(&self) -> usize {
            self.0.control_dim()
        }
        fn step(&mut self, x: &GenState, u: &[f64], out: &mut GenState) -> Result<(), IlqrError> {
            self.0.step(x, u, out)
        }
        fn jacobians(
            &mut self,
            _: &GenState,
            _: &[f64],
            _: &mut DMatrix<f64>,
            _: &mut DMatrix<f64>,
        ) -> Result<(), IlqrError> {
            panic!("the sampled iLQG called jacobians")
        }
        fn diff(&mut self, x: &GenState, o: &GenState, out: &mut [f64]) {
            self.0.diff(x, o, out)
        }
    }

    /// The regression recovers the analytic (A, B) of a Featherstone step from 40 samples of small spread around
    /// a state (relative error ~ the spread: the step's curvature), and a sample-fitted model is exact on data
    /// that are exactly linear.
    #[test]
    fn regression_recovers_the_transition_jacobians() {
        let m = two_link_arm(0.5, 0.5, 1.0, Vec3::new(0.0, -9.8, 0.0), 0.01).unwrap();
        let solver = FeatherstoneSolver::default();
        let mut d = SolverDynamics::new(&solver, &m, 0.01).unwrap();
        let x = GenState::new(vec![-0.8, 0.6], vec![0.5, -1.0]);
        let u = [1.0, -0.5];
        let (mut a, mut b) = (DMatrix::zeros(4, 4), DMatrix::zeros(4, 2));
        d.jacobians(&x, &u, &mut a, &mut b).unwrap();
        let mut xn = x.clone();
        d.step(&x, &u, &mut xn).unwrap();
        let n = 40;
        let (mut dx, mut du, mut dxn) = (DMatrix::zeros(n, 4), DMatrix::zeros(n, 2), DMatrix::zeros(n, 4));
        let mut rng = Normal::new(3);
        let s = 1e-4;
        for i in 0..n {
            let dxi: Vec<f64> = (0..4).map(|_| s * rng.sample()).collect();
            let xi = StateSpace::retract(&x, &m, &dxi);
            let ui = [u[0] + s * rng.sample(), u[1] + s * rng.sample()];
            let mut out = x.clone();
            d.step(&xi, &ui, &mut out).unwrap();
            let mut o = vec![0.0; 4];
            d.diff(&xn, &out, &mut o);
            for c in 0..4 {
                dx[(i, c)] = dxi[c];
                dxn[(i, c)] = o[c];
            }
            du[(i, 0)] = ui[0] - u[0];
            du[(i, 1)] = ui[1] - u[1];
        }
        let (mut af, mut bf) = (DMatrix::zeros(4, 4), DMatrix::zeros(4, 2));
        fit_linear(&dx, &du, &dxn, &vec![1.0; n], 1e-12, &mut af, &mut bf).unwrap();
        let (ea, eb) = ((&af - &a).amax() / a.amax(), (&bf - &b).amax() / b.amax());
        eprintln!("regression vs analytic Jacobians (spread 1e-4): A {ea:e}, B {eb:e}");
        assert!(ea < 1e-3 && eb < 1e-3, "A {ea:e}, B {eb:e}");
        // the reference itself against central differences of the step (tangent x, then u), in this file
        let h = 1e-6;
        let mut next_diff = |dxi: &[f64], ui: &[f64]| {
            let mut out = x.clone();
            d.step(&StateSpace::retract(&x, &m, dxi), ui, &mut out).unwrap();
            let mut o = vec![0.0; 4];
            d.diff(&xn, &out, &mut o);
            o
        };
        let (mut a_fd, mut b_fd) = (DMatrix::zeros(4, 4), DMatrix::zeros(4, 2));
        for c in 0..6 {
            let (mut dp, mut dm, mut up, mut um) = (vec![0.0; 4], vec![0.0; 4], u.to_vec(), u.to_vec());
            if c < 4 {
                dp[c] = h;
                dm[c] = -h;
            } else {
                up[c - 4] += h;
                um[c - 4] -= h;
            }
            let (p, q) = (next_diff(&dp, &up), next_diff(&dm, &um));
            for r in 0..4 {
                let v = (p[r] - q[r]) / (2.0 * h);
                if c < 4 {
                    a_fd[(r, c)] = v;
                } else {
                    b_fd[(r, c - 4)] = v;
                }
            }
        }
        let (fa, fb) = ((&a - &a_fd).amax() / a_fd.amax(), (&b - &b_fd).amax() / b_fd.amax());
        eprintln!("analytic Jacobians vs central differences: A {fa:e}, B {fb:e}");
        assert!(fa < 1e-6 && fb < 1e-6, "A {fa:e}, B {fb:e}");
    }

    /// The 2-link arm brought from (−0.3, 0.2) to (0.6, −0.4) at rest in 0.6 s (30 steps of 20 ms, |u| ≤ 8 N·m)
    /// through `step` alone: the spec's 20 iterations × 40 samples lower the cost by > 90 %; the analytic
    /// iLQR on the same problem is the reference.
    #[test]
    fn sampled_ilqg_converges_without_jacobians() {
        let dt = 0.02;
        let m = two_link_arm(0.5, 0.5, 1.0, Vec3::new(0.0, -9.8, 0.0), dt).unwrap();
        let solver = FeatherstoneSolver::default();
        let x0 = GenState::new(vec![-0.3, 0.2], vec![0.0, 0.0]);
        let goal = GenState::new(vec![0.6, -0.4], vec![0.0, 0.0]);
        let mut cost = QuadraticTracking::diagonal(&m, goal, &[0.0; 4], &[1e-3, 1e-3], &[1000.0, 1000.0, 100.0, 100.0]);
        let o = IlqrOptions { u_min: Some(vec![-8.0; 2]), u_max: Some(vec![8.0; 2]), ..Default::default() };
        let t_len = 30;
        let u0 = vec![DVector::zeros(2); t_len];
        let mut il = Ilqr::new(4, 2, t_len, &x0, o).unwrap();
        let mut nojac = NoJacobians(SolverDynamics::new(&solver, &m, dt).unwrap());
        let so = SampledOptions::default();
        let r = il.solve_sampled(&mut nojac, &mut cost, &x0, &u0, &so).unwrap();
        let sb = SampledOptions { kl_bound: Some(100.0), ..Default::default() };
        let rb = il.solve_sampled(&mut nojac, &mut cost, &x0, &u0, &sb).unwrap();
        let mut exact = SolverDynamics::new(&solver, &m, dt).unwrap();
        let re = il.solve(&mut exact, &mut cost, &x0, &u0).unwrap();
        let err = |r: &SampledReport<GenState>| {
            let xt = r.states.last().unwrap();
            ((xt.q[0] - 0.6).powi(2) + (xt.q[1] + 0.4).powi(2)).sqrt()
        };
        let (j0, j1, jb, je) = (
            r.cost_history[0],
            *r.cost_history.last().unwrap(),
            *rb.cost_history.last().unwrap(),
            *re.cost_history.last().unwrap(),
        );
        eprintln!(
            "sampled iLQG (20 × 40, {} dynamics steps): cost {j0:.4e} → {j1:.4e} with w = 0.005 (final |q − q*| {:.2e} \
             rad), → {jb:.4e} with the KL bound 100 (w {:.2e}, predicted KL {:.3e}; |q − q*| {:.2e} rad); analytic \
             iLQR {je:.4e} in {} iterations",
            r.dynamics_steps,
            err(&r),
            rb.kl_weight,
            rb.predicted_kl,
            err(&rb),
            re.iterations
        );
        for x in [&r, &rb] {
            assert!(x.cost_history.windows(2).all(|w| w[1] <= w[0]));
            assert!(x.controls.iter().all(|u| u.iter().all(|v| v.abs() <= 8.0)));
        }
        assert!(j1 < 0.02 * j0, "{j0:e} → {j1:e}");
        assert!(jb < 3.0 * je, "bound: {jb:e} vs analytic {je:e}");
        assert!((rb.predicted_kl / 100.0 - 1.0).abs() <= 0.1, "KL {}", rb.predicted_kl);
    }

    /// The predicted KL of two linear-Gaussian policies under linear dynamics: 0 for the same policy, and the
    /// Monte-Carlo estimate E_p[Σ_t log p(u_t | x_t) − log p̄(u_t | x_t)] (200k trajectories) for a shifted one.
    #[test]
    fn predicted_kl_matches_monte_carlo() {
        let (nx, nu, t_len) = (2, 1, 3);
        let x0: DVector<f64> = DVector::zeros(nx);
        let mut il = Ilqr::new(nx, nu, t_len, &x0, IlqrOptions::default()).unwrap();
        let w = 0.5;
        let old_gains: Vec<DMatrix<f64>> =
            (0..t_len).map(|t| DMatrix::from_row_slice(1, 2, &[0.2 * t as f64, -0.1])).collect();
        let quu: Vec<f64> = vec![2.0, 1.0, 4.0];
        let sigma_old: Vec<DMatrix<f64>> = (0..t_len).map(|t| DMatrix::from_element(1, 1, w / quu[t])).collect();
        let sigma_inv: Vec<DMatrix<f64>> = sigma_old.iter().map(|s| s.clone().try_inverse().unwrap()).collect();
        for t in 0..t_len {
            il.a[t] = DMatrix::from_row_slice(2, 2, &[1.0, 0.1, -0.2, 0.9]);
            il.b[t] = DMatrix::from_row_slice(2, 1, &[0.0, 0.5]);
            il.quu_store[t] = DMatrix::from_element(1, 1, quu[t]);
            il.gains[t].copy_from(&old_gains[t]);
            il.k[t].fill(0.0);
        }
        let same = il.predicted_kl(w, 0.0, &sigma_old, &sigma_inv, &old_gains);
        assert!(same.abs() < 1e-12, "{same:e}");
        // a new policy: shifted means, other gains, other covariances
        for t in 0..t_len {
            il.k[t][0] = 0.3 - 0.2 * t as f64;
            il.gains[t] = DMatrix::from_row_slice(1, 2, &[-0.4, 0.3 * t as f64]);
            il.quu_store[t] = DMatrix::from_element(1, 1, quu[t] * 1.5);
        }
        let kl = il.predicted_kl(w, 0.0, &sigma_old, &sigma_inv, &old_gains);
        let mut rng = Normal::new(11);
        let n = 200_000;
        let mut acc = 0.0;
        for _ in 0..n {
            let mut x: DVector<f64> = DVector::zeros(nx);
            for t in 0..t_len {
                let s_new = w / (quu[t] * 1.5);
                let mean_new = il.k[t][0] + (&il.gains[t] * &x)[0];
                let mean_old = (&old_gains[t] * &x)[0];
                let u = mean_new + s_new.sqrt() * rng.sample();
                let s_old = sigma_old[t][(0, 0)];
                let logp = |m: f64, s: f64| -0.5 * (u - m).powi(2) / s - 0.5 * s.ln();
                acc += logp(mean_new, s_new) - logp(mean_old, s_old);
                x = &il.a[t] * &x + &il.b[t] * u;
            }
        }
        let mc = acc / n as f64;
        eprintln!("predicted KL {kl:.5} vs Monte Carlo {mc:.5}");
        assert!((kl - mc).abs() < 0.01 * kl, "{kl} vs {mc}");
    }
}
