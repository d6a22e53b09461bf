//! Implicit differentiation of the QP and QCQP solutions (spec 001 §3.8, §3.9) through the *reduced symmetric
//! KKT system* at the solution z of min ½ zᵀPz + qᵀz s.t. z ∈ 𝒞:
//! ```text
//! [ H   A ] [dz]   [ −(dP z + dq)          ]      H = P + Σ_k ν_k ∇²c_k   (restricted to the free coordinates)
//! [ Aᵀ  0 ] [dν] = [ −(∂c_k/∂r) dr_(k)     ]      A = [∇c_k] over the strictly active constraints (ν_k > 0)
//! ```
//! Coordinates pinned by the set are eliminated (dz = 0): orthant bounds with a positive multiplier, and contacts
//! of zero radius (§3.8 𝒵; the code's "leave them free" is wrong). Weakly active constraints (ν_k ≈ 0) are
//! treated as inactive, the one-sided choice at that non-smooth point (docs/gradients.md).
//! Reverse mode solves the same symmetric matrix with [z̄; 0]: q̄ = −b_z, P̄ = −b_z zᵀ, r̄_i = −Σ_k b_ν,k ∂c_k/∂r_i
//! (the disk: r̄_i = r_i b_ν,i as in §3.8). The linear algebra: a quasi-definite regularisation
//! [H + δI, A; Aᵀ, −δI] (Cholesky of H + δI, then of the Schur complement), refined against the unregularised
//! matrix (§3.9), so a singular H (a sticking contact with rank-deficient Delassus block) still gets the
//! least-squares solution. The same system is the Jacobian of the KKT equations, used by the ADMM polish.
use super::sets::{friction_active, Active, ConstraintSet};
use crate::solver::SolverError;
use nalgebra::DMatrix;
use torsion_math::linalg::{cholesky_in_place, cholesky_solve_in_place};

/// Relative tolerance deciding activity at a solution (constraint value and multiplier).
pub const ACTIVE_TOL: f64 = 1e-8;

/// The reduced KKT system at one solution, factorised once and reused for any number of VJPs / JVPs.
#[derive(Clone, Debug)]
pub struct ReducedKkt {
    n: usize,
    /// free coordinates (not pinned), in order; `pos[j]` = index into `free` or usize::MAX
    free: Vec<usize>,
    pos: Vec<usize>,
    /// strictly active constraints with their multipliers ν_k (> 0); `Active::index` is the contact
    active: Vec<Active>,
    pub nu: Vec<f64>,
    /// ‖∇c_k‖ at the solution, by which each active row was normalised
    cscale: Vec<f64>,
    /// K = [H A; Aᵀ 0] (m × m, m = |free| + |active|), and the factors of its regularisation
    k: DMatrix<f64>,
    lh: DMatrix<f64>,
    ls: DMatrix<f64>,
    delta: f64,
    z: Vec<f64>,
    /// worst relative residual of the last solve after refinement (diagnostics)
    pub last_residual: std::cell::Cell<f64>,
}

fn shape(problem: String) -> SolverError {
    SolverError::BadInput { solver: "ncp", problem }
}

impl ReducedKkt {
    /// Build at the solution `z` of (P, q, set): identify the active set and the multipliers from the
    /// stationarity residual P z + q, then factorise.
    pub fn new(p: &DMatrix<f64>, q: &[f64], z: &[f64], set: ConstraintSet) -> Result<Self, SolverError> {
        let n = z.len();
        if p.nrows() != n || p.ncols() != n || q.len() != n {
            return Err(shape(format!("KKT: P is {}×{}, q has {}, z has {n}", p.nrows(), p.ncols(), q.len())));
        }
        let grad: Vec<f64> = (0..n).map(|i| (0..n).map(|j| p[(i, j)] * z[j]).sum::<f64>() + q[i]).collect();
        let scale = grad.iter().chain(z).fold(1e-300f64, |m, v| m.max(v.abs()));
        let mut pinned = vec![false; n];
        let mut active = vec![];
        let mut nu = vec![];
        let mut cscale = vec![];
        match set {
            ConstraintSet::Nonneg => {
                // bound −z_j ≤ 0 active with multiplier (Pz + q)_j > 0
                for j in 0..n {
                    if z[j] <= ACTIVE_TOL * scale && grad[j] > ACTIVE_TOL * scale {
                        pinned[j] = true;
                    }
                }
            }
            ConstraintSet::Friction { kind, r } => {
                if 2 * r.len() != n {
                    return Err(shape(format!("KKT: {} radii for {n} tangential variables", r.len())));
                }
                let zscale = r.iter().chain(z).fold(1e-300f64, |m, v| m.max(v.abs()));
                for (i, &ri) in r.iter().enumerate() {
                    let w = [z[2 * i], z[2 * i + 1]];
                    match friction_active(kind, ri, &w, ACTIVE_TOL * zscale) {
                        None => {
                            pinned[2 * i] = true;
                            pinned[2 * i + 1] = true;
                        }
                        Some((acts, na)) => {
                            // multipliers: least squares of A_i ν = −(Pz + q)_(i) over the contact's faces
                            let g = [grad[2 * i], grad[2 * i + 1]];
                            let mut cand: Vec<(Active, f64)> = vec![];
                            if na == 1 {
                                let a = acts[0].grad;
                                let aa = a[0] * a[0] + a[1] * a[1];
                                if aa > 0.0 {
                                    cand.push((acts[0], -(a[0] * g[0] + a[1] * g[1]) / aa));
                                }
                            } else if na == 2 {
                                let (a, b) = (acts[0].grad, acts[1].grad);
                                let det = a[0] * b[1] - a[1] * b[0];
                                if det.abs() > 1e-300 {
                                    // [a b] ν = −g
                                    let n0 = (-g[0] * b[1] + g[1] * b[0]) / det;
                                    let n1 = (-a[0] * g[1] + a[1] * g[0]) / det;
                                    cand.push((acts[0], n0));
                                    cand.push((acts[1], n1));
                                }
                            }
                            for (mut a, v) in cand {
                                // strictly active: the constraint force ν‖∇c‖ is not negligible
                                let gn = a.grad[0].hypot(a.grad[1]);
                                if v * gn > ACTIVE_TOL * scale {
                                    // normalise the row (c/‖∇c‖): a disk of small radius would otherwise give a
                                    // Schur complement below the regularisation δ
                                    a.index = i;
                                    a.grad = [a.grad[0] / gn, a.grad[1] / gn];
                                    a.curvature /= gn;
                                    a.d_dr /= gn;
                                    active.push(a);
                                    nu.push(v * gn);
                                    cscale.push(gn);
                                }
                            }
                        }
                    }
                }
            }
        }
        let free: Vec<usize> = (0..n).filter(|&j| !pinned[j]).collect();
        let mut pos = vec![usize::MAX; n];
        for (k, &j) in free.iter().enumerate() {
            pos[j] = k;
        }
        let (nf, na) = (free.len(), active.len());
        let m = nf + na;
        let mut k = DMatrix::zeros(m, m);
        for (a, &i) in free.iter().enumerate() {
            for (b, &j) in free.iter().enumerate() {
                k[(a, b)] = p[(i, j)];
            }
        }
        for (c, (act, &v)) in active.iter().zip(&nu).enumerate() {
            for t in 0..2 {
                let j = 2 * act.index + t;
                let fj = pos[j];
                if fj == usize::MAX {
                    continue;
                }
                k[(fj, fj)] += v * act.curvature;
                k[(fj, nf + c)] = act.grad[t];
                k[(nf + c, fj)] = act.grad[t];
            }
        }
        let hmax = (0..nf).fold(0.0f64, |mm, a| mm.max(k[(a, a)].abs()));
        let delta = 1e-12 * hmax.max(1e-300);
        let mut s = ReducedKkt {
            n,
            free,
            pos,
            active,
            nu,
            cscale,
            k,
            lh: DMatrix::zeros(nf, nf),
            ls: DMatrix::zeros(na, na),
            delta,
            z: z.to_vec(),
            last_residual: 0.0.into(),
        };
        s.factor()?;
        Ok(s)
    }

    /// Cholesky of H + δI and of the Schur complement Aᵀ(H + δI)⁻¹A + δI.
    fn factor(&mut self) -> Result<(), SolverError> {
        let nf = self.free.len();
        let na = self.active.len();
        for a in 0..nf {
            for b in 0..nf {
                self.lh[(a, b)] = self.k[(a, b)];
            }
            self.lh[(a, a)] += self.delta;
        }
        if !cholesky_in_place(&mut self.lh) {
            return Err(SolverError::BadInput {
                solver: "ncp",
                problem: "KKT: H = P + Σν∇²c is not positive semi-definite (P must be a Delassus matrix)".into(),
            });
        }
        let mut col = vec![0.0; nf];
        let mut hinv_a = DMatrix::zeros(nf, na);
        for c in 0..na {
            for a in 0..nf {
                col[a] = self.k[(a, nf + c)];
            }
            cholesky_solve_in_place(&self.lh, &mut col);
            hinv_a.column_mut(c).copy_from_slice(&col);
        }
        for c in 0..na {
            for d in 0..na {
                self.ls[(c, d)] = (0..nf).map(|a| self.k[(a, nf + c)] * hinv_a[(a, d)]).sum::<f64>();
            }
            self.ls[(c, c)] += self.delta;
        }
        if na > 0 && !cholesky_in_place(&mut self.ls) {
            return Err(SolverError::BadInput { solver: "ncp", problem: "KKT: Schur complement not positive".into() });
        }
        Ok(())
    }

    /// x ← K_δ⁻¹ b for the regularised quasi-definite matrix (in place).
    fn solve_reg(&self, b: &mut [f64]) {
        let nf = self.free.len();
        let na = self.active.len();
        let (top, bot) = b.split_at_mut(nf);
        // [H A; Aᵀ −δ] [x; y] = [u; w]:  y = S⁻¹ (Aᵀ H⁻¹ u − w),  x = H⁻¹ (u − A y)
        let mut hu = top.to_vec();
        cholesky_solve_in_place(&self.lh, &mut hu);
        for c in 0..na {
            bot[c] = (0..nf).map(|a| self.k[(a, nf + c)] * hu[a]).sum::<f64>() - bot[c];
        }
        if na > 0 {
            cholesky_solve_in_place(&self.ls, bot);
        }
        for a in 0..nf {
            top[a] -= (0..na).map(|c| self.k[(a, nf + c)] * bot[c]).sum::<f64>();
        }
        cholesky_solve_in_place(&self.lh, top);
    }

    /// Solve K x = b with iterative refinement on the regularised factors (spec 001 §3.9).
    pub fn solve(&self, b: &[f64]) -> Vec<f64> {
        let m = b.len();
        let mut x = b.to_vec();
        self.solve_reg(&mut x);
        let bn = b.iter().fold(1e-300f64, |mm, v| mm.max(v.abs()));
        let mut best = f64::INFINITY;
        let mut r = vec![0.0; m];
        for _ in 0..10 {
            for (i, ri) in r.iter_mut().enumerate() {
                *ri = b[i] - (0..m).map(|j| self.k[(i, j)] * x[j]).sum::<f64>();
            }
            let rn = r.iter().fold(0.0f64, |mm, v| mm.max(v.abs())) / bn;
            self.last_residual.set(rn);
            if rn < 1e-15 || rn >= best {
                break;
            }
            best = rn;
            self.solve_reg(&mut r);
            for (xi, ri) in x.iter_mut().zip(&r) {
                *xi += ri;
            }
        }
        x
    }

    /// Number of free coordinates, of strictly active constraints.
    pub fn sizes(&self) -> (usize, usize) {
        (self.free.len(), self.active.len())
    }

    /// The strictly active constraints (contact index, gradient, curvature, ∂c/∂r).
    pub fn active(&self) -> &[Active] {
        &self.active
    }

    /// Reverse mode: given z̄, accumulate q̄ (n), P̄ (n × n) and r̄ (one per contact; empty for the orthant).
    pub fn vjp(&self, z_bar: &[f64], q_bar: &mut [f64], p_bar: Option<&mut DMatrix<f64>>, r_bar: &mut [f64]) {
        let nf = self.free.len();
        let mut rhs = vec![0.0; nf + self.active.len()];
        for (a, &j) in self.free.iter().enumerate() {
            rhs[a] = z_bar[j];
        }
        let b = self.solve(&rhs);
        let mut bz = vec![0.0; self.n];
        for (a, &j) in self.free.iter().enumerate() {
            bz[j] = b[a];
            q_bar[j] -= b[a];
        }
        if let Some(pb) = p_bar {
            for i in 0..self.n {
                for j in 0..self.n {
                    pb[(i, j)] -= bz[i] * self.z[j];
                }
            }
        }
        for (c, act) in self.active.iter().enumerate() {
            r_bar[act.index] -= b[nf + c] * act.d_dr;
        }
    }

    /// Forward mode: dz for perturbations dP (optional), dq and dr (per contact; empty for the orthant).
    pub fn jvp(&self, dp: Option<&DMatrix<f64>>, dq: &[f64], dr: &[f64]) -> Vec<f64> {
        let nf = self.free.len();
        let mut rhs = vec![0.0; nf + self.active.len()];
        for (a, &j) in self.free.iter().enumerate() {
            let dpz = dp.map(|d| (0..self.n).map(|t| d[(j, t)] * self.z[t]).sum::<f64>()).unwrap_or(0.0);
            rhs[a] = -(dpz + dq[j]);
        }
        for (c, act) in self.active.iter().enumerate() {
            rhs[nf + c] = -act.d_dr * dr[act.index];
        }
        let x = self.solve(&rhs);
        let mut dz = vec![0.0; self.n];
        for (a, &j) in self.free.iter().enumerate() {
            dz[j] = x[a];
        }
        dz
    }

    /// One Newton step on the KKT equations of the current active set (used by the ADMM polish): returns the
    /// updated (z, ν) and the residual norm before the step.
    pub(crate) fn newton_residual(&self, p: &DMatrix<f64>, q: &[f64], set: ConstraintSet) -> (Vec<f64>, f64) {
        let nf = self.free.len();
        let mut f = vec![0.0; nf + self.active.len()];
        for (a, &j) in self.free.iter().enumerate() {
            f[a] = (0..self.n).map(|t| p[(j, t)] * self.z[t]).sum::<f64>() + q[j];
        }
        for (c, act) in self.active.iter().enumerate() {
            for t in 0..2 {
                let j = 2 * act.index + t;
                if self.pos[j] != usize::MAX {
                    f[self.pos[j]] += self.nu[c] * act.grad[t];
                }
            }
            let w = [self.z[2 * act.index], self.z[2 * act.index + 1]];
            // the constraint value, normalised as its row
            f[nf + c] = match set {
                ConstraintSet::Friction { r, .. } => {
                    let ri = r[act.index];
                    if act.curvature > 0.0 {
                        0.5 * (w[0] * w[0] + w[1] * w[1] - ri * ri) / self.cscale[c]
                    } else {
                        act.grad[0] * w[0] + act.grad[1] * w[1] - ri / self.cscale[c]
                    }
                }
                ConstraintSet::Nonneg => 0.0,
            };
        }
        let res = f.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let step = self.solve(&f);
        let mut z = self.z.clone();
        for (a, &j) in self.free.iter().enumerate() {
            z[j] -= step[a];
        }
        for j in 0..self.n {
            if self.pos[j] == usize::MAX {
                z[j] = 0.0;
            }
        }
        (z, res)
    }
}

impl ReducedKkt {
    /// The free (not pinned) coordinates, in the order of the matrix's first rows.
    pub(crate) fn free(&self) -> &[usize] {
        &self.free
    }
    /// K = [H A; Aᵀ 0] over the free coordinates and the strictly active constraints (rows normalised).
    pub(crate) fn matrix(&self) -> &DMatrix<f64> {
        &self.k
    }
}
