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

/// Relative tolerance deciding activity at a solution (constraint value and multiplier).
pub const ACTIVE_TOL: f64 = 1e-8;

/// The reduced KKT system at one solution, factorised once and reused for any number of VJPs / JVPs.
/// [`ReducedKkt::rebuild`] reuses the storage (no allocation once the buffers have reached their size).
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
    /// K = [H A; Aᵀ 0] (m × m, m = |free| + |active|, column-major), and the factors of its regularisation:
    /// the Cholesky factors of H + δI (nf × nf) and of the Schur complement (na × na), column-major
    k: Vec<f64>,
    lh: Vec<f64>,
    ls: Vec<f64>,
    delta: f64,
    z: Vec<f64>,
    /// P z + q at `z` (all n coordinates)
    grad: Vec<f64>,
    /// scratch of the build: pinned coordinates, H⁻¹A (nf × na)
    pinned: Vec<bool>,
    hinv_a: Vec<f64>,
    /// worst relative residual of the last solve after refinement (diagnostics)
    pub last_residual: std::cell::Cell<f64>,
}

/// Scratch of [`ReducedKkt::jvp_into`]: the right-hand side, the solution and the refinement's buffers.
#[derive(Clone, Debug, Default)]
pub struct KktScratch {
    rhs: Vec<f64>,
    x: Vec<f64>,
    r: Vec<f64>,
    hu: Vec<f64>,
}

fn shape(problem: String) -> SolverError {
    SolverError::BadInput { solver: "ncp", problem }
}

/// Cholesky with 1/L_jj on the diagonal on the leading n × n block of a reused column-major buffer (the one
/// implementation, torsion-math's).
pub(crate) use torsion_math::linalg::{cholesky_factor as chol, cholesky_solve as chol_solve};

impl ReducedKkt {
    /// Build at the solution `z` of (P, q, set): identify the active set and the multipliers from the
    /// stationarity residual P z + q, then factorise.
    pub fn new(p: &DMatrix<f64>, q: &[f64], z: &[f64], set: ConstraintSet) -> Result<Self, SolverError> {
        let mut s = Self::with_capacity(z.len(), 0);
        s.rebuild(p, q, z, set)?;
        Ok(s)
    }

    /// Empty storage for problems of `n` variables with at most `max_active` strictly active constraints (more
    /// only costs a reallocation); call [`ReducedKkt::rebuild`] before use.
    pub fn with_capacity(n: usize, max_active: usize) -> Self {
        let m = n + max_active;
        ReducedKkt {
            n,
            free: Vec::with_capacity(n),
            pos: Vec::with_capacity(n),
            active: Vec::with_capacity(max_active),
            nu: Vec::with_capacity(max_active),
            cscale: Vec::with_capacity(max_active),
            k: Vec::with_capacity(m * m),
            lh: Vec::with_capacity(n * n),
            ls: Vec::with_capacity(max_active * max_active),
            delta: 0.0,
            z: Vec::with_capacity(n),
            grad: Vec::with_capacity(n),
            pinned: Vec::with_capacity(n),
            hinv_a: Vec::with_capacity(n * max_active),
            last_residual: 0.0.into(),
        }
    }

    /// [`ReducedKkt::new`] into this storage. On an error the contents are unspecified (rebuild again).
    pub fn rebuild(&mut self, p: &DMatrix<f64>, q: &[f64], z: &[f64], set: ConstraintSet) -> Result<(), SolverError> {
        self.identify(p, q, z, set)?;
        self.factor()
    }

    /// The active set, multipliers and the matrix K at `z`, without factorising.
    pub(crate) fn identify(
        &mut self,
        p: &DMatrix<f64>,
        q: &[f64],
        z: &[f64],
        set: ConstraintSet,
    ) -> Result<(), SolverError> {
        let n = z.len();
        if p.nrows() != n || p.ncols() != n || q.len() != n {
            return Err(shape(format!("KKT: P is {}×{}, q has {}, z has {n}", p.nrows(), p.ncols(), q.len())));
        }
        self.n = n;
        self.z.clear();
        self.z.extend_from_slice(z);
        self.grad.clear();
        self.grad.extend((0..n).map(|i| (0..n).map(|j| p[(i, j)] * z[j]).sum::<f64>() + q[i]));
        let grad = &self.grad;
        let scale = grad.iter().chain(z).fold(1e-300f64, |m, v| m.max(v.abs()));
        let pinned = &mut self.pinned;
        pinned.clear();
        pinned.resize(n, false);
        self.active.clear();
        self.nu.clear();
        self.cscale.clear();
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
                            let mut cand = [(acts[0], 0.0); 2];
                            let mut nc = 0;
                            if na == 1 {
                                let a = acts[0].grad;
                                let aa = a[0] * a[0] + a[1] * a[1];
                                if aa > 0.0 {
                                    cand[0] = (acts[0], -(a[0] * g[0] + a[1] * g[1]) / aa);
                                    nc = 1;
                                }
                            } else if na == 2 {
                                let (a, b) = (acts[0].grad, acts[1].grad);
                                let det = a[0] * b[1] - a[1] * b[0];
                                if det.abs() > 1e-300 {
                                    // [a b] ν = −g
                                    let n0 = (-g[0] * b[1] + g[1] * b[0]) / det;
                                    let n1 = (-a[0] * g[1] + a[1] * g[0]) / det;
                                    cand = [(acts[0], n0), (acts[1], n1)];
                                    nc = 2;
                                }
                            }
                            for &(mut a, v) in &cand[..nc] {
                                // strictly active: the constraint force ν‖∇c‖ is not negligible
                                // (‖∇c‖ without libm's hypot: far from overflow, and 5× cheaper)
                                let gn = (a.grad[0] * a.grad[0] + a.grad[1] * a.grad[1]).sqrt();
                                if v * gn > ACTIVE_TOL * scale {
                                    // normalise the row (c/‖∇c‖): a disk of small radius would otherwise give a
                                    // Schur complement below the regularisation δ
                                    a.index = i;
                                    a.grad = [a.grad[0] / gn, a.grad[1] / gn];
                                    a.curvature /= gn;
                                    a.d_dr /= gn;
                                    self.active.push(a);
                                    self.nu.push(v * gn);
                                    self.cscale.push(gn);
                                }
                            }
                        }
                    }
                }
            }
        }
        self.free.clear();
        self.free.extend((0..n).filter(|&j| !self.pinned[j]));
        self.pos.clear();
        self.pos.resize(n, usize::MAX);
        for (k, &j) in self.free.iter().enumerate() {
            self.pos[j] = k;
        }
        let (nf, na) = (self.free.len(), self.active.len());
        let m = nf + na;
        let k = &mut self.k;
        k.clear();
        k.resize(m * m, 0.0);
        for (b, &j) in self.free.iter().enumerate() {
            for (a, &i) in self.free.iter().enumerate() {
                k[a + b * m] = p[(i, j)];
            }
        }
        for (c, (act, &v)) in self.active.iter().zip(&self.nu).enumerate() {
            for t in 0..2 {
                let j = 2 * act.index + t;
                let fj = self.pos[j];
                if fj == usize::MAX {
                    continue;
                }
                k[fj + fj * m] += v * act.curvature;
                k[fj + (nf + c) * m] = act.grad[t];
                k[nf + c + fj * m] = act.grad[t];
            }
        }
        let hmax = (0..nf).fold(0.0f64, |mm, a| mm.max(k[a + a * m].abs()));
        self.delta = 1e-12 * hmax.max(1e-300);
        Ok(())
    }

    fn m(&self) -> usize {
        self.free.len() + self.active.len()
    }

    /// Cholesky of H + δI and of the Schur complement Aᵀ(H + δI)⁻¹A + δI.
    /// The smallest over the largest Cholesky pivot L_jj² of H and of the Schur complement (after `factor`; the
    /// factors keep 1/L_jj on the diagonal): ≈ δ / max diag H ≈ 1e-12 when the reduced problem is singular
    /// (redundant contacts: ≥ 3 coplanar points of a face), O(1/κ) otherwise.
    pub(crate) fn pivot_ratio(&self) -> f64 {
        let ratio = |l: &[f64], n: usize| {
            let (lo, hi) = (0..n)
                .map(|j| l[j + j * n] * l[j + j * n])
                .fold((f64::INFINITY, 0.0f64), |(lo, hi), r2| (lo.min(r2), hi.max(r2)));
            // pivots are 1/r²: min pivot / max pivot = min r² / max r²
            if n == 0 {
                1.0
            } else {
                lo / hi
            }
        };
        ratio(&self.lh, self.free.len()).min(ratio(&self.ls, self.active.len()))
    }

    pub(crate) fn factor(&mut self) -> Result<(), SolverError> {
        let nf = self.free.len();
        let na = self.active.len();
        let m = nf + na;
        let k = &self.k;
        self.lh.clear();
        self.lh.resize(nf * nf, 0.0);
        for b in 0..nf {
            self.lh[b * nf..(b + 1) * nf].copy_from_slice(&k[b * m..b * m + nf]);
            self.lh[b + b * nf] += self.delta;
        }
        if !chol(&mut self.lh, nf) {
            return Err(SolverError::BadInput {
                solver: "ncp",
                problem: "KKT: H = P + Σν∇²c is not positive semi-definite (P must be a Delassus matrix)".into(),
            });
        }
        // H⁻¹A column by column (column c of A is rows 0..nf of column nf + c of K)
        self.hinv_a.clear();
        self.hinv_a.resize(nf * na, 0.0);
        for c in 0..na {
            let col = &mut self.hinv_a[c * nf..(c + 1) * nf];
            for a in 0..nf {
                col[a] = k[a + (nf + c) * m];
            }
            chol_solve(&self.lh, nf, col);
        }
        self.ls.clear();
        self.ls.resize(na * na, 0.0);
        for d in 0..na {
            for c in 0..na {
                self.ls[c + d * na] = (0..nf).map(|a| k[a + (nf + c) * m] * self.hinv_a[a + d * nf]).sum::<f64>();
            }
            self.ls[d + d * na] += self.delta;
        }
        if na > 0 && !chol(&mut self.ls, na) {
            return Err(SolverError::BadInput { solver: "ncp", problem: "KKT: Schur complement not positive".into() });
        }
        Ok(())
    }

    /// x ← K_δ⁻¹ b for the regularised quasi-definite matrix (in place); `hu` is scratch of length ≥ |free|.
    fn solve_reg(&self, b: &mut [f64], hu: &mut [f64]) {
        let nf = self.free.len();
        let na = self.active.len();
        let m = nf + na;
        let (top, bot) = b.split_at_mut(nf);
        // [H A; Aᵀ −δ] [x; y] = [u; w]:  y = S⁻¹ (Aᵀ H⁻¹ u − w),  x = H⁻¹ (u − A y)
        let hu = &mut hu[..nf];
        hu.copy_from_slice(top);
        chol_solve(&self.lh, nf, hu);
        for c in 0..na {
            bot[c] = (0..nf).map(|a| self.k[a + (nf + c) * m] * hu[a]).sum::<f64>() - bot[c];
        }
        if na > 0 {
            chol_solve(&self.ls, na, bot);
        }
        for a in 0..nf {
            top[a] -= (0..na).map(|c| self.k[a + (nf + c) * m] * bot[c]).sum::<f64>();
        }
        chol_solve(&self.lh, nf, top);
    }

    /// Solve K x = b with iterative refinement on the regularised factors (spec 001 §3.9).
    pub fn solve(&self, b: &[f64]) -> Vec<f64> {
        let m = b.len();
        let mut x = vec![0.0; m];
        let (mut r, mut hu) = (vec![0.0; m], vec![0.0; self.free.len()]);
        self.solve_into(b, &mut x, &mut r, &mut hu);
        x
    }

    /// [`ReducedKkt::solve`] into `x` (length m = |free| + |active|) without allocating: `r` (≥ m) and `hu`
    /// (≥ |free|) are scratch.
    pub fn solve_into(&self, b: &[f64], x: &mut [f64], r: &mut [f64], hu: &mut [f64]) {
        let m = b.len();
        debug_assert_eq!(m, self.m());
        let (x, r) = (&mut x[..m], &mut r[..m]);
        x.copy_from_slice(b);
        self.solve_reg(x, hu);
        let bn = b.iter().fold(1e-300f64, |mm, v| mm.max(v.abs()));
        let mut best = f64::INFINITY;
        for _ in 0..10 {
            for (i, ri) in r.iter_mut().enumerate() {
                *ri = b[i] - (0..m).map(|j| self.k[i + j * m] * x[j]).sum::<f64>();
            }
            let rn = r.iter().fold(0.0f64, |mm, v| mm.max(v.abs())) / bn;
            self.last_residual.set(rn);
            if rn < 1e-15 || rn >= best {
                break;
            }
            best = rn;
            self.solve_reg(r, hu);
            for (xi, ri) in x.iter_mut().zip(r.iter()) {
                *xi += ri;
            }
        }
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
        let mut bz = vec![];
        self.vjp_into(z_bar, &mut bz, r_bar, &mut KktScratch::default());
        for (q, b) in q_bar.iter_mut().zip(&bz) {
            *q -= b;
        }
        if let Some(pb) = p_bar {
            for i in 0..self.n {
                for j in 0..self.n {
                    pb[(i, j)] -= bz[i] * self.z[j];
                }
            }
        }
    }

    /// [`ReducedKkt::vjp`] without allocation (reused scratch) and without forming P̄: `y` ← b_z (n entries, 0
    /// where pinned), so that q̄ = −y, P̄ = −y zᵀ, i.e. z̄ᵀdz = −yᵀ(dP z + dq) + r̄ᵀdr; r̄ accumulated into
    /// `r_bar`.
    pub fn vjp_into(&self, z_bar: &[f64], y: &mut Vec<f64>, r_bar: &mut [f64], sc: &mut KktScratch) {
        let nf = self.free.len();
        sc.rhs.clear();
        sc.rhs.resize(self.m(), 0.0);
        for (a, &j) in self.free.iter().enumerate() {
            sc.rhs[a] = z_bar[j];
        }
        self.solve_scratch(sc, y);
        for (c, act) in self.active.iter().enumerate() {
            r_bar[act.index] -= sc.x[nf + c] * act.d_dr;
        }
    }

    /// x ← K⁻¹ rhs in `sc`, and its free part scattered into `dz` (n entries, 0 where pinned).
    fn solve_scratch(&self, sc: &mut KktScratch, dz: &mut Vec<f64>) {
        let (nf, m) = (self.free.len(), self.m());
        let KktScratch { rhs, x, r, hu } = sc;
        for b in [&mut *x, &mut *r] {
            b.clear();
            b.resize(m, 0.0);
        }
        hu.clear();
        hu.resize(nf, 0.0);
        self.solve_into(rhs, x, r, hu);
        dz.clear();
        dz.resize(self.n, 0.0);
        for (a, &j) in self.free.iter().enumerate() {
            dz[j] = x[a];
        }
    }

    /// Forward mode: dz for perturbations dP (optional), dq and dr (per contact; empty for the orthant).
    pub fn jvp(&self, dp: Option<&DMatrix<f64>>, dq: &[f64], dr: &[f64]) -> Vec<f64> {
        let mut dz = vec![];
        self.jvp_into(dp, dq, dr, &mut dz, &mut KktScratch::default());
        dz
    }

    /// [`ReducedKkt::jvp`] into `dz` with reused scratch (no allocation once the buffers have grown).
    pub fn jvp_into(&self, dp: Option<&DMatrix<f64>>, dq: &[f64], dr: &[f64], dz: &mut Vec<f64>, sc: &mut KktScratch) {
        let nf = self.free.len();
        let rhs = &mut sc.rhs;
        rhs.clear();
        rhs.resize(self.m(), 0.0);
        for (a, &j) in self.free.iter().enumerate() {
            let dpz = dp.map(|d| (0..self.n).map(|t| d[(j, t)] * self.z[t]).sum::<f64>()).unwrap_or(0.0);
            rhs[a] = -(dpz + dq[j]);
        }
        for (c, act) in self.active.iter().enumerate() {
            rhs[nf + c] = -act.d_dr * dr[act.index];
        }
        self.solve_scratch(sc, dz);
    }

    /// The KKT equations of the current active set at the build point (used by the ADMM polish): writes the
    /// residual F (length m: stationarity on the free coordinates, then the normalised constraint values) into
    /// `f` and returns ‖F‖_∞.
    pub(crate) fn kkt_residual_into(&self, set: ConstraintSet, f: &mut [f64]) -> f64 {
        let nf = self.free.len();
        let f = &mut f[..self.m()];
        for (a, &j) in self.free.iter().enumerate() {
            f[a] = self.grad[j];
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
        f.iter().fold(0.0f64, |m, v| m.max(v.abs()))
    }

    /// One Newton step on the KKT equations (needs [`ReducedKkt::factor`]): `z_out` = z − (K⁻¹F)_z with the
    /// pinned coordinates at 0, for the residual F from [`ReducedKkt::kkt_residual_into`]; `step`, `r` (≥ m)
    /// and `hu` (≥ |free|) are scratch.
    /// `min_norm`: drop the step's component along K's null space (x ← K_δ⁻¹ K x, one more regularised solve):
    /// for a singular K (redundant contacts) the solve amplifies the part of f outside K's range (round-off, or an
    /// inconsistency only an active-set change can fix) by 1/δ into a jump along the solution set.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn newton_step_into(
        &self,
        f: &[f64],
        z_out: &mut [f64],
        step: &mut [f64],
        r: &mut [f64],
        hu: &mut [f64],
        min_norm: bool,
    ) {
        let m = self.m();
        self.solve_into(&f[..m], step, r, hu);
        if min_norm {
            for (i, ri) in r[..m].iter_mut().enumerate() {
                *ri = (0..m).map(|j| self.k[i + j * m] * step[j]).sum::<f64>();
            }
            self.solve_reg(&mut r[..m], hu);
            step[..m].copy_from_slice(&r[..m]);
        }
        for j in 0..self.n {
            z_out[j] = if self.pos[j] == usize::MAX { 0.0 } else { self.z[j] - step[self.pos[j]] };
        }
    }

    /// P z + q at the build point.
    pub(crate) fn gradient(&self) -> &[f64] {
        &self.grad
    }
}

impl ReducedKkt {
    /// The free (not pinned) coordinates, in the order of the matrix's first rows.
    pub(crate) fn free(&self) -> &[usize] {
        &self.free
    }
    /// The size m of K = [H A; Aᵀ 0] (over the free coordinates and the strictly active constraints, rows
    /// normalised) and its entries (column-major, m²), without a copy.
    pub(crate) fn matrix_slice(&self) -> (usize, &[f64]) {
        let m = self.free.len() + self.active.len();
        (m, &self.k[..m * m])
    }
}
