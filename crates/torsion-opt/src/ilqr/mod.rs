//! iLQR (Li & Todorov 2004; Tassa, Erez & Todorov 2012; control limits: Tassa, Mansard & Todorov 2014) on any
//! `DiffSolver` (issue 19 item 2, spec 003 §4.5): finite horizon T, the backward pass on the stepper's analytic
//! transition Jacobians A, B in tangent coordinates (feedback on δx = x̄_t ⊖ x̂_t by the state space's
//! `local_diff`), box-constrained controls by [`boxqp`], a backtracking line search of the nonlinear rollout, the
//! Levenberg–Marquardt schedule on μ (Q̃_uu = Q_uu + μ I) and convergence on the expected vs actual reduction.
//! Constants and choices: docs/decisions.md (issue 19).
//!
//! Backward pass, t = T−1 … 0, from V_x = ∂ℓ_f, V_xx = ∂²ℓ_f:
//! Q_x = ℓ_x + AᵀV_x, Q_u = ℓ_u + BᵀV_x, Q_xx = ℓ_xx + AᵀV_xxA, Q_uu = ℓ_uu + BᵀV_xxB, Q_ux = ℓ_ux + BᵀV_xxA;
//! k = argmin_{l ≤ ū + k ≤ u} ½kᵀQ̃_uu k + kᵀQ_u (boxQP), K_f = −Q̃_uu,ff⁻¹ Q_ux,f, K_clamped = 0;
//! V_x = Q_x + KᵀQ_uu k + KᵀQ_u + Q_uxᵀk, V_xx = Q_xx + KᵀQ_uu K + KᵀQ_ux + Q_uxᵀK;
//! ΔV(α) = α Σ kᵀQ_u + ½ α² Σ kᵀQ_uu k (the predicted change of the forward pass with step α).
pub mod boxqp;
pub mod cost;
pub mod sampled;

use boxqp::{chol_solve_in_place, BoxQp};
pub use cost::{tangent_error, Cost, CostDerivs, QuadraticTracking};
use nalgebra::{DMatrix, DVector};
use thiserror::Error;
use torsion_model::{Control, Model, ParamSelection, StateSpace};
use torsion_solvers::{DiffSolver, SolverError, StepJacobians};

#[derive(Debug, Error)]
pub enum IlqrError {
    #[error("ilqr: {0}")]
    Solver(#[from] SolverError),
    #[error("ilqr: bad input: {0}")]
    BadInput(String),
    #[error("ilqr: the initial rollout's cost is not finite ({0})")]
    NonFinite(f64),
}

/// The discrete dynamics iLQR optimises through: x_{t+1} = f(x_t, u_t) on a manifold with tangent dimension
/// `state_dim`, its Jacobians in tangent coordinates, and the local difference (x ⊕ diff(x, o) = o).
pub trait Dynamics {
    type State: Clone;
    fn state_dim(&self) -> usize;
    fn control_dim(&self) -> usize;
    fn step(&mut self, x: &Self::State, u: &[f64], out: &mut Self::State) -> Result<(), IlqrError>;
    /// A = ∂f/∂x (nx × nx), B = ∂f/∂u (nx × nu) at (x, u), tangent coordinates
    fn jacobians(
        &mut self,
        x: &Self::State,
        u: &[f64],
        a: &mut DMatrix<f64>,
        b: &mut DMatrix<f64>,
    ) -> Result<(), IlqrError>;
    /// other ⊖ x into `out` (nx entries)
    fn diff(&mut self, x: &Self::State, other: &Self::State, out: &mut [f64]);
}

/// A `DiffSolver` on a model with a fixed Δt as iLQR dynamics: `step` is the solver's step, the Jacobians
/// `step_jacobians_into` (no parameters), both with one workspace. The control vector is the solver's
/// `control_dim` row (`torsion_diff::set_control_row`: generalized forces, then Featherstone's nu actuator
/// controls).
pub struct SolverDynamics<'a, S: DiffSolver> {
    pub solver: &'a S,
    pub model: &'a Model,
    pub dt: f64,
    ws: S::Workspace,
    u: Control,
    jac: StepJacobians,
    sel: ParamSelection,
    n_ctrl: usize,
}

impl<'a, S: DiffSolver> SolverDynamics<'a, S> {
    pub fn new(solver: &'a S, model: &'a Model, dt: f64) -> Result<Self, IlqrError> {
        let sel = ParamSelection::none();
        let nu = solver.control_dim(model);
        // the actuator controls are part of u only where the solver's row has them (Featherstone: nv + nu)
        let n_ctrl = if model.nu() > 0 && nu == model.nv() + model.nu() { model.nu() } else { 0 };
        Ok(SolverDynamics {
            solver,
            model,
            dt,
            ws: solver.workspace(model)?,
            u: Control::zeros(0),
            jac: StepJacobians::for_solver(solver, model, &sel),
            sel,
            n_ctrl,
        })
    }
}

impl<S: DiffSolver> Dynamics for SolverDynamics<'_, S> {
    type State = S::State;
    fn state_dim(&self) -> usize {
        self.solver.tangent_dim(self.model)
    }
    fn control_dim(&self) -> usize {
        self.solver.control_dim(self.model)
    }
    fn step(&mut self, x: &S::State, u: &[f64], out: &mut S::State) -> Result<(), IlqrError> {
        torsion_diff::set_control_row(&mut self.u, u, self.n_ctrl);
        self.solver.step(self.model, x, &self.u, self.dt, out, &mut self.ws, None)?;
        Ok(())
    }
    fn jacobians(
        &mut self,
        x: &S::State,
        u: &[f64],
        a: &mut DMatrix<f64>,
        b: &mut DMatrix<f64>,
    ) -> Result<(), IlqrError> {
        torsion_diff::set_control_row(&mut self.u, u, self.n_ctrl);
        self.solver.step_jacobians_into(self.model, x, &self.u, self.dt, &self.sel, &mut self.ws, &mut self.jac)?;
        a.copy_from(&self.jac.a);
        b.copy_from(&self.jac.b);
        Ok(())
    }
    fn diff(&mut self, x: &S::State, other: &S::State, out: &mut [f64]) {
        out.copy_from_slice(&StateSpace::local_diff(x, self.model, other));
    }
}

#[derive(Clone, Debug)]
pub struct IlqrOptions {
    /// outer iterations (backward + forward pass) at most
    pub max_iter: usize,
    /// control box per entry (±∞ for none); `None`: unconstrained
    pub u_min: Option<Vec<f64>>,
    pub u_max: Option<Vec<f64>>,
    /// line-search step sizes tried in order (Tassa: 10^linspace(0, −3, 11))
    pub alphas: Vec<f64>,
    /// Levenberg–Marquardt μ: initial, growth factor, bounds (Tassa 2012 §II-F: μ ← μ·Δ, Δ ← Δ·factor up,
    /// Δ ← min(Δ/factor, 1/factor) down; below μ_min μ is 0)
    pub mu_init: f64,
    pub mu_factor: f64,
    pub mu_min: f64,
    pub mu_max: f64,
    /// accept a forward pass when actual / expected reduction > z_min
    pub z_min: f64,
    /// converged when the expected reduction ΔV(1) or an accepted actual reduction is below
    /// tol_fun · max(1, |J|)
    pub tol_fun: f64,
    /// converged when the mean over t of max_i |k_t,i| / (|ū_t,i| + 1) is below this (and μ < 1e-5)
    pub tol_grad: f64,
}

impl Default for IlqrOptions {
    fn default() -> Self {
        IlqrOptions {
            max_iter: 100,
            u_min: None,
            u_max: None,
            alphas: (0..11).map(|i| 10f64.powf(-3.0 * i as f64 / 10.0)).collect(),
            mu_init: 1.0,
            mu_factor: 1.6,
            mu_min: 1e-6,
            mu_max: 1e10,
            z_min: 0.0,
            tol_fun: 1e-7,
            tol_grad: 1e-4,
        }
    }
}

/// Why `Ilqr::solve` stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IlqrStop {
    /// ΔV(1) or the accepted reduction below tol_fun · max(1, |J|)
    CostConverged,
    /// the feedforward k below tol_grad
    GradientConverged,
    /// μ exceeded μ_max (no descent found)
    RegularisationLimit,
    MaxIter,
}

/// What `Ilqr::solve` returns: the optimised open-loop controls and nominal states, the feedback gains of the
/// last backward pass on that nominal (u = ū_t + k_t + K_t (x ⊖ x̄_t) is the local policy), the cost history
/// (initial cost, then one entry per accepted iteration).
#[derive(Clone, Debug)]
pub struct IlqrReport<X> {
    pub controls: Vec<DVector<f64>>,
    pub states: Vec<X>,
    pub k: Vec<DVector<f64>>,
    pub gains: Vec<DMatrix<f64>>,
    pub cost_history: Vec<f64>,
    /// outer iterations run (backward passes that reached a forward pass)
    pub iterations: usize,
    pub stop: IlqrStop,
    /// μ at the end
    pub mu: f64,
    /// the last accepted forward pass's actual / expected reduction
    pub last_ratio: f64,
}

/// iLQR's buffers for horizon T (all allocation is in `new`; an iteration allocates only what the dynamics'
/// `diff` and the cost do: `StateSpace::local_diff` returns a Vec).
pub struct Ilqr<X> {
    pub options: IlqrOptions,
    t_len: usize,
    nx: usize,
    nu: usize,
    xs: Vec<X>,
    xs_new: Vec<X>,
    us: Vec<DVector<f64>>,
    us_new: Vec<DVector<f64>>,
    a: Vec<DMatrix<f64>>,
    b: Vec<DMatrix<f64>>,
    l: Vec<CostDerivs>,
    lf_x: DVector<f64>,
    lf_xx: DMatrix<f64>,
    k: Vec<DVector<f64>>,
    gains: Vec<DMatrix<f64>>,
    /// Q_uu of each step of the last backward pass (the sampled variant's policy covariance)
    quu_store: Vec<DMatrix<f64>>,
    // backward-pass scratch
    vx: DVector<f64>,
    vxx: DMatrix<f64>,
    qx: DVector<f64>,
    qu: DVector<f64>,
    qxx: DMatrix<f64>,
    quu: DMatrix<f64>,
    quu_reg: DMatrix<f64>,
    qux: DMatrix<f64>,
    vxx_a: DMatrix<f64>,
    vxx_b: DMatrix<f64>,
    quu_k: DVector<f64>,
    quu_kk: DMatrix<f64>,
    col: DVector<f64>,
    warm: DVector<f64>,
    lo: DVector<f64>,
    hi: DVector<f64>,
    qp: BoxQp,
    dx: Vec<f64>,
    /// ΔV coefficients of the last backward pass: (Σ kᵀQ_u, ½ Σ kᵀQ_uu k)
    pub dv: [f64; 2],
}

fn finite_or_inf(x: f64) -> f64 {
    if x.is_finite() {
        x
    } else {
        f64::INFINITY
    }
}

impl<X: Clone> Ilqr<X> {
    /// Buffers for horizon `t_len` of dynamics with `nx` tangent and `nu` control entries, from a template state.
    pub fn new(nx: usize, nu: usize, t_len: usize, x0: &X, options: IlqrOptions) -> Result<Self, IlqrError> {
        if t_len == 0 {
            return Err(IlqrError::BadInput("horizon T = 0".into()));
        }
        for (name, b) in [("u_min", &options.u_min), ("u_max", &options.u_max)] {
            if let Some(b) = b {
                if b.len() != nu || b.iter().any(|v| v.is_nan()) {
                    return Err(IlqrError::BadInput(format!("{name} has {} entries (needs {nu}) or a NaN", b.len())));
                }
            }
        }
        if let (Some(lo), Some(hi)) = (&options.u_min, &options.u_max) {
            if let Some(i) = (0..nu).find(|&i| lo[i] > hi[i]) {
                return Err(IlqrError::BadInput(format!("control {i}: u_min {} > u_max {}", lo[i], hi[i])));
            }
        }
        if options.alphas.is_empty() || options.alphas.iter().any(|a| !a.is_finite() || *a <= 0.0) {
            return Err(IlqrError::BadInput("alphas must be positive and not empty".into()));
        }
        let mats = |r, c| (0..t_len).map(|_| DMatrix::zeros(r, c)).collect::<Vec<_>>();
        let vecs = |n| (0..t_len).map(|_| DVector::zeros(n)).collect::<Vec<_>>();
        Ok(Ilqr {
            options,
            t_len,
            nx,
            nu,
            xs: vec![x0.clone(); t_len + 1],
            xs_new: vec![x0.clone(); t_len + 1],
            us: vecs(nu),
            us_new: vecs(nu),
            a: mats(nx, nx),
            b: mats(nx, nu),
            l: (0..t_len).map(|_| CostDerivs::zeros(nx, nu)).collect(),
            lf_x: DVector::zeros(nx),
            lf_xx: DMatrix::zeros(nx, nx),
            k: vecs(nu),
            gains: mats(nu, nx),
            quu_store: mats(nu, nu),
            vx: DVector::zeros(nx),
            vxx: DMatrix::zeros(nx, nx),
            qx: DVector::zeros(nx),
            qu: DVector::zeros(nu),
            qxx: DMatrix::zeros(nx, nx),
            quu: DMatrix::zeros(nu, nu),
            quu_reg: DMatrix::zeros(nu, nu),
            qux: DMatrix::zeros(nu, nx),
            vxx_a: DMatrix::zeros(nx, nx),
            vxx_b: DMatrix::zeros(nx, nu),
            quu_k: DVector::zeros(nu),
            quu_kk: DMatrix::zeros(nu, nx),
            col: DVector::zeros(nu),
            warm: DVector::zeros(nu),
            lo: DVector::zeros(nu),
            hi: DVector::zeros(nu),
            qp: BoxQp::new(nu),
            dx: vec![0.0; nx],
            dv: [0.0; 2],
        })
    }

    fn bound(&self, i: usize) -> (f64, f64) {
        (
            self.options.u_min.as_ref().map_or(f64::NEG_INFINITY, |b| b[i]),
            self.options.u_max.as_ref().map_or(f64::INFINITY, |b| b[i]),
        )
    }

    /// Roll out `us` from xs[0] into xs; the total cost (∞ on a failed step or a non-finite cost).
    fn rollout_nominal<D: Dynamics<State = X>, C: Cost<X>>(&mut self, dynamics: &mut D, cost: &mut C) -> f64 {
        let mut j = 0.0;
        for t in 0..self.t_len {
            let (head, tail) = self.xs.split_at_mut(t + 1);
            if dynamics.step(&head[t], self.us[t].as_slice(), &mut tail[0]).is_err() {
                return f64::INFINITY;
            }
            j += cost.running(t, &head[t], self.us[t].as_slice());
        }
        finite_or_inf(j + cost.terminal(&self.xs[self.t_len]))
    }

    /// A, B and the cost derivatives along the nominal (xs, us).
    fn linearise<D: Dynamics<State = X>, C: Cost<X>>(
        &mut self,
        dynamics: &mut D,
        cost: &mut C,
    ) -> Result<(), IlqrError> {
        for t in 0..self.t_len {
            dynamics.jacobians(&self.xs[t], self.us[t].as_slice(), &mut self.a[t], &mut self.b[t])?;
        }
        self.cost_derivs(cost);
        Ok(())
    }

    /// The cost derivatives along the nominal.
    fn cost_derivs<C: Cost<X>>(&mut self, cost: &mut C) {
        for t in 0..self.t_len {
            cost.running_derivs(t, &self.xs[t], self.us[t].as_slice(), &mut self.l[t]);
        }
        cost.terminal_derivs(&self.xs[self.t_len], &mut self.lf_x, &mut self.lf_xx);
    }

    /// The backward pass with regularisation μ; false when a Q̃_uu's free block is not positive definite.
    pub fn backward_pass(&mut self, mu: f64) -> bool {
        self.vx.copy_from(&self.lf_x);
        self.vxx.copy_from(&self.lf_xx);
        self.dv = [0.0; 2];
        for t in (0..self.t_len).rev() {
            let (a, b, l) = (&self.a[t], &self.b[t], &self.l[t]);
            self.vxx_a.gemm(1.0, &self.vxx, a, 0.0);
            self.vxx_b.gemm(1.0, &self.vxx, b, 0.0);
            self.qx.copy_from(&l.lx);
            self.qx.gemv_tr(1.0, a, &self.vx, 1.0);
            self.qu.copy_from(&l.lu);
            self.qu.gemv_tr(1.0, b, &self.vx, 1.0);
            self.qxx.copy_from(&l.lxx);
            self.qxx.gemm_tr(1.0, a, &self.vxx_a, 1.0);
            self.quu.copy_from(&l.luu);
            self.quu.gemm_tr(1.0, b, &self.vxx_b, 1.0);
            self.qux.copy_from(&l.lux);
            self.qux.gemm_tr(1.0, b, &self.vxx_a, 1.0);
            self.quu_reg.copy_from(&self.quu);
            self.quu_store[t].copy_from(&self.quu);
            for i in 0..self.nu {
                self.quu_reg[(i, i)] += mu;
                let (lo, hi) = self.bound(i);
                self.lo[i] = lo - self.us[t][i];
                self.hi[i] = hi - self.us[t][i];
            }
            // warm start from the next step's k (Tassa 2014)
            if t + 1 < self.t_len {
                self.warm.copy_from(&self.k[t + 1]);
            } else {
                self.warm.fill(0.0);
            }
            let status = self.qp.solve(&self.quu_reg, &self.qu, &self.lo, &self.hi, &self.warm);
            if !status.ok() {
                return false;
            }
            self.k[t].copy_from(&self.qp.x);
            // K: free rows −H_ff⁻¹ Q_ux,f, clamped rows 0
            let kk = &mut self.gains[t];
            kk.fill(0.0);
            let nf = self.qp.free_len;
            for c in 0..self.nx {
                for (r, &i) in self.qp.free[..nf].iter().enumerate() {
                    self.col[r] = self.qux[(i, c)];
                }
                chol_solve_in_place(&self.qp.chol, nf, &mut self.col);
                for (r, &i) in self.qp.free[..nf].iter().enumerate() {
                    kk[(i, c)] = -self.col[r];
                }
            }
            let k = &self.k[t];
            self.dv[0] += k.dot(&self.qu);
            self.quu_k.gemv(1.0, &self.quu, k, 0.0);
            self.dv[1] += 0.5 * k.dot(&self.quu_k);
            // V_x = Q_x + KᵀQ_uu k + KᵀQ_u + Q_uxᵀk
            self.vx.copy_from(&self.qx);
            self.vx.gemv_tr(1.0, kk, &self.quu_k, 1.0);
            self.vx.gemv_tr(1.0, kk, &self.qu, 1.0);
            self.vx.gemv_tr(1.0, &self.qux, k, 1.0);
            // V_xx = Q_xx + KᵀQ_uu K + KᵀQ_ux + Q_uxᵀK, symmetrised
            self.quu_kk.gemm(1.0, &self.quu, kk, 0.0);
            self.vxx.copy_from(&self.qxx);
            self.vxx.gemm_tr(1.0, kk, &self.quu_kk, 1.0);
            self.vxx.gemm_tr(1.0, kk, &self.qux, 1.0);
            self.vxx.gemm_tr(1.0, &self.qux, kk, 1.0);
            for i in 0..self.nx {
                for j in 0..i {
                    let s = 0.5 * (self.vxx[(i, j)] + self.vxx[(j, i)]);
                    self.vxx[(i, j)] = s;
                    self.vxx[(j, i)] = s;
                }
            }
        }
        true
    }

    /// The closed-loop rollout with step α into (xs_new, us_new): û = clamp(ū + α k + K (x̂ ⊖ x̄)); its cost.
    pub fn forward_pass<D: Dynamics<State = X>, C: Cost<X>>(
        &mut self,
        dynamics: &mut D,
        cost: &mut C,
        alpha: f64,
    ) -> f64 {
        self.xs_new[0].clone_from(&self.xs[0]);
        let mut j = 0.0;
        for t in 0..self.t_len {
            dynamics.diff(&self.xs[t], &self.xs_new[t], &mut self.dx);
            let un = &mut self.us_new[t];
            for i in 0..self.nu {
                let fb: f64 = (0..self.nx).map(|c| self.gains[t][(i, c)] * self.dx[c]).sum();
                let (lo, hi) = (
                    self.options.u_min.as_ref().map_or(f64::NEG_INFINITY, |b| b[i]),
                    self.options.u_max.as_ref().map_or(f64::INFINITY, |b| b[i]),
                );
                un[i] = (self.us[t][i] + alpha * self.k[t][i] + fb).clamp(lo, hi);
            }
            let (head, tail) = self.xs_new.split_at_mut(t + 1);
            if dynamics.step(&head[t], un.as_slice(), &mut tail[0]).is_err() {
                return f64::INFINITY;
            }
            j += cost.running(t, &head[t], un.as_slice());
            if !j.is_finite() {
                return f64::INFINITY;
            }
        }
        finite_or_inf(j + cost.terminal(&self.xs_new[self.t_len]))
    }

    /// Optimise the controls from `x0` and the initial guess `u_init` (T rows of nu, clamped to the box).
    pub fn solve<D: Dynamics<State = X>, C: Cost<X>>(
        &mut self,
        dynamics: &mut D,
        cost: &mut C,
        x0: &X,
        u_init: &[DVector<f64>],
    ) -> Result<IlqrReport<X>, IlqrError> {
        if dynamics.state_dim() != self.nx || dynamics.control_dim() != self.nu {
            return Err(IlqrError::BadInput(format!(
                "dynamics have nx = {}, nu = {}; the workspace was built for {}, {}",
                dynamics.state_dim(),
                dynamics.control_dim(),
                self.nx,
                self.nu
            )));
        }
        if u_init.len() != self.t_len || u_init.iter().any(|u| u.len() != self.nu) {
            return Err(IlqrError::BadInput(format!("u_init needs {} rows of {} controls", self.t_len, self.nu)));
        }
        cost.check(self.nx, self.nu, self.t_len).map_err(IlqrError::BadInput)?;
        self.xs[0].clone_from(x0);
        for t in 0..self.t_len {
            for i in 0..self.nu {
                let (lo, hi) = self.bound(i);
                self.us[t][i] = u_init[t][i].clamp(lo, hi);
            }
            self.k[t].fill(0.0);
        }
        let mut cost_now = self.rollout_nominal(dynamics, cost);
        if !cost_now.is_finite() {
            // a failed step of the solver is an error here (not a rejected trial)
            for t in 0..self.t_len {
                let (head, tail) = self.xs.split_at_mut(t + 1);
                dynamics.step(&head[t], self.us[t].as_slice(), &mut tail[0])?;
            }
            return Err(IlqrError::NonFinite(cost_now));
        }
        let o = self.options.clone();
        let mut history = vec![cost_now];
        let (mut mu, mut dmu) = (o.mu_init, 1.0);
        let mut stop = IlqrStop::MaxIter;
        let mut iterations = 0;
        let mut last_ratio = f64::NAN;
        let mut stale = true;
        let increase = |mu: &mut f64, dmu: &mut f64| {
            *dmu = (*dmu * o.mu_factor).max(o.mu_factor);
            *mu = (*mu * *dmu).max(o.mu_min);
        };
        let decrease = |mu: &mut f64, dmu: &mut f64| {
            *dmu = (*dmu / o.mu_factor).min(1.0 / o.mu_factor);
            *mu = if *mu * *dmu > o.mu_min { *mu * *dmu } else { 0.0 };
        };
        'outer: while iterations < o.max_iter {
            if stale {
                self.linearise(dynamics, cost)?;
                stale = false;
            }
            while !self.backward_pass(mu) {
                increase(&mut mu, &mut dmu);
                if mu > o.mu_max {
                    stop = IlqrStop::RegularisationLimit;
                    break 'outer;
                }
            }
            iterations += 1;
            let gnorm = (0..self.t_len)
                .map(|t| (0..self.nu).map(|i| self.k[t][i].abs() / (self.us[t][i].abs() + 1.0)).fold(0.0, f64::max))
                .sum::<f64>()
                / self.t_len as f64;
            if gnorm < o.tol_grad && mu < 1e-5 {
                stop = IlqrStop::GradientConverged;
                break;
            }
            let scale = o.tol_fun * cost_now.abs().max(1.0);
            if -(self.dv[0] + self.dv[1]) < scale {
                stop = IlqrStop::CostConverged;
                break;
            }
            let mut accepted = None;
            for &alpha in &o.alphas {
                let trial = self.forward_pass(dynamics, cost, alpha);
                let expected = -alpha * (self.dv[0] + alpha * self.dv[1]);
                let actual = cost_now - trial;
                let z = if expected > 0.0 { actual / expected } else { actual.signum() };
                if trial.is_finite() && z > o.z_min {
                    accepted = Some((trial, z));
                    break;
                }
            }
            match accepted {
                Some((trial, z)) => {
                    std::mem::swap(&mut self.xs, &mut self.xs_new);
                    std::mem::swap(&mut self.us, &mut self.us_new);
                    let reduction = cost_now - trial;
                    cost_now = trial;
                    history.push(trial);
                    last_ratio = z;
                    decrease(&mut mu, &mut dmu);
                    stale = true;
                    if reduction < scale {
                        stop = IlqrStop::CostConverged;
                        break;
                    }
                }
                None => {
                    increase(&mut mu, &mut dmu);
                    if mu > o.mu_max {
                        stop = IlqrStop::RegularisationLimit;
                        break;
                    }
                }
            }
        }
        // the gains of the returned nominal
        if stale {
            self.linearise(dynamics, cost)?;
            let mut m = mu.max(o.mu_min);
            while !self.backward_pass(m) && m <= o.mu_max {
                m *= o.mu_factor;
            }
        }
        Ok(IlqrReport {
            controls: self.us.clone(),
            states: self.xs.clone(),
            k: self.k.clone(),
            gains: self.gains.clone(),
            cost_history: history,
            iterations,
            stop,
            mu,
            last_ratio,
        })
    }

    /// The nominal controls (the last accepted).
    pub fn controls(&self) -> &[DVector<f64>] {
        &self.us
    }
    pub fn states(&self) -> &[X] {
        &self.xs
    }
}

#[cfg(test)]
mod tests;
