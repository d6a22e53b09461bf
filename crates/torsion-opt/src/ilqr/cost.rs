//! iLQR costs: the generic [`Cost`] (running ℓ(x, u) at step t and terminal ℓ_f(x), with their derivatives in
//! tangent coordinates at x, i.e. of ℓ(x ⊕ δ, u) at δ = 0) and the ready [`QuadraticTracking`] cost on
//! generalized-coordinate states (Featherstone, ncp, lcp).
use nalgebra::{DMatrix, DVector};
use num_dual::Dual64;
use torsion_model::joint_maps::{difference, integrate_joint, offsets};
use torsion_model::{GenState, JointType, Model, StateSpace};

/// The derivatives of one running cost term, in the tangent coordinates of x (nx) and the controls (nu).
#[derive(Clone, Debug)]
pub struct CostDerivs {
    pub lx: DVector<f64>,
    pub lu: DVector<f64>,
    pub lxx: DMatrix<f64>,
    pub luu: DMatrix<f64>,
    /// ∂²ℓ/∂u∂x, nu × nx
    pub lux: DMatrix<f64>,
}

impl CostDerivs {
    pub fn zeros(nx: usize, nu: usize) -> Self {
        CostDerivs {
            lx: DVector::zeros(nx),
            lu: DVector::zeros(nu),
            lxx: DMatrix::zeros(nx, nx),
            luu: DMatrix::zeros(nu, nu),
            lux: DMatrix::zeros(nu, nx),
        }
    }
}

/// A finite-horizon cost Σ_t ℓ(t, x_t, u_t) + ℓ_f(x_T) supplied by the caller. The derivatives are w.r.t. the
/// tangent perturbation δ of x (x ⊕ δ, the dynamics' `retract`); the Hessians may be Gauss–Newton
/// approximations (iLQR needs them positive semi-definite, not exact), the gradients must be exact.
pub trait Cost<X> {
    fn running(&mut self, t: usize, x: &X, u: &[f64]) -> f64;
    /// write all five derivatives of the running term into `d` (every entry: the buffers are reused)
    fn running_derivs(&mut self, t: usize, x: &X, u: &[f64], d: &mut CostDerivs);
    fn terminal(&mut self, x: &X) -> f64;
    fn terminal_derivs(&mut self, x: &X, lx: &mut DVector<f64>, lxx: &mut DMatrix<f64>);
    /// Called by `Ilqr::solve` before anything runs, for nx tangent entries, nu controls and T steps: an error
    /// naming what does not fit (the default accepts everything).
    fn check(&self, nx: usize, nu: usize, t_len: usize) -> Result<(), String> {
        let _ = (nx, nu, t_len);
        Ok(())
    }
}

/// ½ e_tᵀ Q e_t + ½ (u − u_ref,t)ᵀ R (u − u_ref,t) per step and ½ e_Tᵀ Q_f e_T at the end, with the tangent
/// error e_t = x_ref,t ⊖ … i.e. e = `local_diff(x_ref, x)` (x = x_ref ⊕ e: joint logs for ball / free joints,
/// differences for the rest). Gradient exact: ℓ_x = Jᵀ Q e with J = ∂e(x ⊕ δ)/∂δ (identity except the ball /
/// free blocks, by forward-mode duals through `joint_maps`); Hessian Gauss–Newton, Jᵀ Q J.
#[derive(Clone, Debug)]
pub struct QuadraticTracking<'a> {
    model: &'a Model,
    /// one reference state for every step, or T + 1 of them
    pub x_ref: Vec<GenState>,
    /// none (zero), one for every step, or T of them
    pub u_ref: Vec<DVector<f64>>,
    pub q: DMatrix<f64>,
    pub r: DMatrix<f64>,
    pub qf: DMatrix<f64>,
    e: DVector<f64>,
    j: DMatrix<f64>,
    qe: DVector<f64>,
    qj: DMatrix<f64>,
    du: DVector<f64>,
}

impl<'a> QuadraticTracking<'a> {
    /// Diagonal weights: `q` and `qf` have one entry per tangent coordinate (2 nv + na), `r` one per control.
    pub fn diagonal(model: &'a Model, x_ref: GenState, q: &[f64], r: &[f64], qf: &[f64]) -> Self {
        let nx = q.len();
        QuadraticTracking {
            model,
            x_ref: vec![x_ref],
            u_ref: vec![],
            q: DMatrix::from_diagonal(&DVector::from_column_slice(q)),
            r: DMatrix::from_diagonal(&DVector::from_column_slice(r)),
            qf: DMatrix::from_diagonal(&DVector::from_column_slice(qf)),
            e: DVector::zeros(nx),
            j: DMatrix::identity(nx, nx),
            qe: DVector::zeros(nx),
            qj: DMatrix::zeros(nx, nx),
            du: DVector::zeros(r.len()),
        }
    }

    /// u − u_ref at step t into `du`.
    fn control_error(&mut self, t: usize, u: &[f64]) {
        for (i, &ui) in u.iter().enumerate() {
            self.du[i] = ui - self.u_ref.get(t.min(self.u_ref.len().saturating_sub(1))).map_or(0.0, |r| r[i]);
        }
    }

    /// e = local_diff(x_ref, x) and, when `jac`, its tangent Jacobian J at x.
    fn state_error(&mut self, t: usize, x: &GenState, jac: bool) {
        let xr = &self.x_ref[t.min(self.x_ref.len() - 1)];
        tangent_error(self.model, xr, x, &mut self.e, if jac { Some(&mut self.j) } else { None });
    }

    fn quad(&mut self, w_terminal: bool) -> f64 {
        let w = if w_terminal { &self.qf } else { &self.q };
        self.qe.gemv(1.0, w, &self.e, 0.0);
        0.5 * self.e.dot(&self.qe)
    }

    /// lx = Jᵀ W e, lxx = Jᵀ W J.
    fn state_derivs(&mut self, w_terminal: bool, lx: &mut DVector<f64>, lxx: &mut DMatrix<f64>) {
        let w = if w_terminal { &self.qf } else { &self.q };
        self.qe.gemv(1.0, w, &self.e, 0.0);
        lx.gemv_tr(1.0, &self.j, &self.qe, 0.0);
        self.qj.gemm(1.0, w, &self.j, 0.0);
        lxx.gemm_tr(1.0, &self.j, &self.qj, 0.0);
    }
}

impl Cost<GenState> for QuadraticTracking<'_> {
    fn running(&mut self, t: usize, x: &GenState, u: &[f64]) -> f64 {
        self.state_error(t, x, false);
        self.control_error(t, u);
        let n = self.du.len();
        let uru: f64 = (0..n)
            .flat_map(|i| (0..n).map(move |k| (i, k)))
            .map(|(i, k)| self.du[i] * self.r[(i, k)] * self.du[k])
            .sum();
        self.quad(false) + 0.5 * uru
    }
    fn running_derivs(&mut self, t: usize, x: &GenState, u: &[f64], d: &mut CostDerivs) {
        self.state_error(t, x, true);
        self.control_error(t, u);
        self.state_derivs(false, &mut d.lx, &mut d.lxx);
        d.lu.gemv(1.0, &self.r, &self.du, 0.0);
        d.luu.copy_from(&self.r);
        d.lux.fill(0.0);
    }
    fn terminal(&mut self, x: &GenState) -> f64 {
        self.state_error(usize::MAX, x, false);
        self.quad(true)
    }
    fn terminal_derivs(&mut self, x: &GenState, lx: &mut DVector<f64>, lxx: &mut DMatrix<f64>) {
        self.state_error(usize::MAX, x, true);
        self.state_derivs(true, lx, lxx);
    }
    fn check(&self, nx: usize, nu: usize, t_len: usize) -> Result<(), String> {
        let m = self.model;
        let nxm = 2 * m.nv() + m.na();
        if nx != nxm {
            return Err(format!("tracking cost: the model's tangent has {nxm} entries, the dynamics' {nx}"));
        }
        for (name, w, n) in [("q", &self.q, nx), ("qf", &self.qf, nx), ("r", &self.r, nu)] {
            if w.shape() != (n, n) || w.iter().any(|v| !v.is_finite()) {
                return Err(format!("tracking cost: weight {name} is {:?} (needs {n} × {n}, finite)", w.shape()));
            }
        }
        if !(self.x_ref.len() == 1 || self.x_ref.len() == t_len + 1) {
            return Err(format!(
                "tracking cost: x_ref has {} states (needs 1 or T + 1 = {})",
                self.x_ref.len(),
                t_len + 1
            ));
        }
        if let Some(i) =
            self.x_ref.iter().position(|x| x.q.len() != m.nq() || x.v.len() != m.nv() || x.act.len() != m.na())
        {
            return Err(format!(
                "tracking cost: x_ref[{i}] does not fit the model (nq {}, nv {}, na {})",
                m.nq(),
                m.nv(),
                m.na()
            ));
        }
        if !(self.u_ref.len() <= 1 || self.u_ref.len() == t_len) || self.u_ref.iter().any(|u| u.len() != nu) {
            return Err(format!("tracking cost: u_ref needs 0, 1 or T = {t_len} rows of {nu}"));
        }
        Ok(())
    }
}

/// e = local_diff(x_ref, x) (2 nv + na entries) and optionally J = ∂ local_diff(x_ref, x ⊕ δ)/∂δ at δ = 0: the
/// identity except each ball / free joint's q block, ∂ difference(q_ref, q ⊕ δ)/∂δ by Dual64 through the same
/// `joint_maps` functions as the value.
pub fn tangent_error(
    model: &Model,
    x_ref: &GenState,
    x: &GenState,
    e: &mut DVector<f64>,
    jac: Option<&mut DMatrix<f64>>,
) {
    let d = StateSpace::local_diff(x_ref, model, x);
    e.as_mut_slice().copy_from_slice(&d);
    let Some(j) = jac else { return };
    j.fill_with_identity();
    for (kind, qs, vs) in offsets(model) {
        if !matches!(kind, JointType::Ball | JointType::Free) {
            continue;
        }
        let (nq, nv) = (kind.nq(), kind.dof());
        let qr: Vec<Dual64> = x_ref.q[qs..qs + nq].iter().map(|&a| Dual64::from(a)).collect();
        let q0: Vec<Dual64> = x.q[qs..qs + nq].iter().map(|&a| Dual64::from(a)).collect();
        let mut q1 = q0.clone();
        let layout = [kind];
        for c in 0..nv {
            let mut dv = [Dual64::from(0.0); 6];
            dv[c] = Dual64::new(0.0, 1.0);
            integrate_joint(kind, &q0, &dv[..nv], &mut q1);
            let col = difference(&layout[..], &qr, &q1);
            for r in 0..nv {
                j[(vs + r, vs + c)] = col[r].eps;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use torsion_diff::rel_err;
    use torsion_model::builder::floating_tree;

    /// The tracking cost's tangent gradient (running and terminal) against central differences of the cost along
    /// retractions, on the free + ball + slide + hinge tree away from the reference (rotations of ~1 rad, where J
    /// is far from the identity).
    #[test]
    fn tracking_cost_gradient_matches_central_differences() {
        let m = floating_tree();
        let (nv, nx) = (m.nv(), 2 * m.nv() + m.na());
        let mut q = m.neutral_q();
        let qr_vec: Vec<f64> = (0..nv).map(|i| 0.7 * ((i as f64) * 1.3).sin()).collect();
        let x_ref = StateSpace::retract(
            &GenState::new(q.clone(), vec![0.0; nv]),
            &m,
            &[qr_vec.clone(), vec![0.1; nv]].concat(),
        );
        q = torsion_model::joint_maps::integrate(&m, &q, &(0..nv).map(|i| (i as f64 * 0.9).cos()).collect::<Vec<_>>());
        let x = GenState::new(q, (0..nv).map(|i| 0.3 * i as f64 - 1.0).collect());
        let qd: Vec<f64> = (0..nx).map(|i| 1.0 + 0.1 * i as f64).collect();
        let nu = 3;
        let mut c = QuadraticTracking::diagonal(
            &m,
            x_ref,
            &qd,
            &[0.5, 1.0, 2.0],
            &qd.iter().map(|a| 3.0 * a).collect::<Vec<_>>(),
        );
        c.u_ref = vec![DVector::from_vec(vec![0.1, -0.2, 0.3])];
        let u = [0.4, 0.5, -0.6];
        let mut d = CostDerivs::zeros(nx, nu);
        c.running_derivs(0, &x, &u, &mut d);
        let (mut lxf, mut lxxf) = (DVector::zeros(nx), DMatrix::zeros(nx, nx));
        c.terminal_derivs(&x, &mut lxf, &mut lxxf);
        let h = 1e-6;
        let (mut fd, mut fdf, mut fdu) = (vec![0.0; nx], vec![0.0; nx], vec![0.0; nu]);
        for i in 0..nx {
            let mut dp = vec![0.0; nx];
            dp[i] = h;
            let xp = StateSpace::retract(&x, &m, &dp);
            dp[i] = -h;
            let xm = StateSpace::retract(&x, &m, &dp);
            fd[i] = (c.running(0, &xp, &u) - c.running(0, &xm, &u)) / (2.0 * h);
            fdf[i] = (c.terminal(&xp) - c.terminal(&xm)) / (2.0 * h);
        }
        for i in 0..nu {
            let (mut up, mut um) = (u, u);
            up[i] += h;
            um[i] -= h;
            fdu[i] = (c.running(0, &x, &up) - c.running(0, &x, &um)) / (2.0 * h);
        }
        let (e1, e2, e3) =
            (rel_err(d.lx.as_slice(), &fd), rel_err(lxf.as_slice(), &fdf), rel_err(d.lu.as_slice(), &fdu));
        eprintln!("tracking cost vs central FD: lx {e1:e}, terminal lx {e2:e}, lu {e3:e}");
        assert!(e1 < 1e-6 && e2 < 1e-6 && e3 < 1e-6, "{e1:e} {e2:e} {e3:e}");
        // the Gauss–Newton Hessian is symmetric positive semi-definite
        assert!((&d.lxx - d.lxx.transpose()).amax() < 1e-12);
        assert!(d.lxx.clone().symmetric_eigenvalues().min() > -1e-9);
        // J differs from the identity on the rotation blocks here (else this would not test it)
        let mut e = DVector::zeros(nx);
        let mut j = DMatrix::zeros(nx, nx);
        tangent_error(&m, &c.x_ref[0].clone(), &x, &mut e, Some(&mut j));
        assert!((&j - DMatrix::identity(nx, nx)).amax() > 0.05);
    }

    /// Weights or references that do not fit are named by `check` (and so by `Ilqr::solve`).
    #[test]
    fn tracking_cost_check_names_what_does_not_fit() {
        let m = floating_tree();
        let nx = 2 * m.nv() + m.na();
        let x = GenState::rest(&m);
        let c = QuadraticTracking::diagonal(&m, x.clone(), &vec![1.0; nx], &[1.0; 2], &vec![1.0; nx]);
        assert!(c.check(nx, 2, 10).is_ok());
        assert!(c.check(nx, 3, 10).unwrap_err().contains("weight r"));
        assert!(c.check(nx + 1, 2, 10).unwrap_err().contains("tangent"));
        let c = QuadraticTracking::diagonal(&m, x.clone(), &vec![1.0; nx - 1], &[1.0; 2], &vec![1.0; nx]);
        assert!(c.check(nx, 2, 10).unwrap_err().contains("weight q "));
        let mut c = QuadraticTracking::diagonal(&m, x, &vec![1.0; nx], &[1.0; 2], &vec![1.0; nx]);
        c.x_ref[0].v.pop();
        assert!(c.check(nx, 2, 10).unwrap_err().contains("x_ref[0]"));
    }
}
