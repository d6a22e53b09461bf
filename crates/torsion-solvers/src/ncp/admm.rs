//! Regularised ADMM for min ½ xᵀPx + qᵀx s.t. x ∈ 𝒞 (spec 001 §3.6, paper App. A): the QP of the normal
//! impulses (𝒞 = orthant) and the QCQP of the friction impulses (𝒞 = product of disks, or a pyramid variant).
//! Proximal term α/2‖x − x^k‖² (P̃ = P + αI, so a PSD Delassus matrix is fine), ρ₀ = √(Lα)·κ^0.4 with
//! κ = L/α, L = λ_max(P) by power iteration, ρ adaptation by τ_ρ = κ^e when the primal/dual residual ratio
//! exceeds 10, over-relaxation a. `AdmmOptions::paper()` and `::code()` give the two published settings (§3.11
//! item 7); the default is the code's plus a *polish*: Newton steps on the KKT equations of the identified
//! active set (the matrix of `backward::ReducedKkt`), which takes the ADMM iterate to machine precision so the
//! implicit gradients are exact; a polish that would leave the set or flip a multiplier's sign is rejected.
//! Warm start: z⁰ = Π(x⁰) and the proximal centre x⁰ (the spec's listing starts z at 0, which ignores it).
use super::backward::{chol, chol_solve, ReducedKkt};
use super::sets::ConstraintSet;
use crate::solver::SolverError;
use nalgebra::DMatrix;

/// Largest n whose ADMM x-step applies an explicit inverse (larger: Cholesky solves, 1/L_jj stored). On the E0
/// family (n = 8) the unpolished solve takes 4.2 µs with the inverse against 7.4 µs with the solves (the solves'
/// chain of dependent operations); forming the inverse costs 3× the factorisation, which dominates for large n
/// (a 20-box stack: n = 160).
pub const INVERSE_MAX_N: usize = 16;

/// Stopping rule (spec 001 §3.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopRule {
    /// ‖P x + q + y‖_∞ < ε_abs (the paper)
    Kkt,
    /// r_p < ε_abs + 1e-8‖x‖₂ and r_d < ε_abs for the QP and the QCQP. The code: QCQP r_p < ε_abs + 1e-4‖x‖₂,
    /// QP r_d alone — which can stop on a stalled warm start; its loose primal test left E0's worst solution
    /// error at 2.7e-5 (its polish then rejected), 2.5e-16 with 1e-8 at the same median iteration count
    PrimalDual,
}

#[derive(Clone, Debug)]
pub struct AdmmOptions {
    pub eps_abs: f64,
    /// proximal weight α ("mu_prox")
    pub alpha: f64,
    pub max_iter: usize,
    /// adapt ρ
    pub adapt: bool,
    /// over-relaxation a (1 = none)
    pub relaxation: f64,
    /// τ_ρ = κ^rho_exponent
    pub rho_exponent: f64,
    /// the code's extras: a ρ change only on every 5th triggering iteration, τ_ρ damped on reversals
    pub gated: bool,
    pub stop: StopRule,
    /// power iterations for L (None: 100 for friction sets, 10 for the orthant, as the code)
    pub power_iters: Option<usize>,
    /// Newton polish on the identified active set
    pub polish: bool,
}

impl AdmmOptions {
    /// The paper's appendix: no over-relaxation, τ_ρ = κ^0.1, KKT-residual stop, no polish.
    pub fn paper() -> Self {
        AdmmOptions {
            eps_abs: 1e-10,
            alpha: 1e-7,
            max_iter: 1000,
            adapt: true,
            relaxation: 1.0,
            rho_exponent: 0.1,
            gated: false,
            stop: StopRule::Kkt,
            power_iters: None,
            polish: false,
        }
    }
    /// The published code (diffqcqp): over-relaxation 1.5, τ_ρ = κ^0.15, gated adaptation, primal/dual stop.
    pub fn code() -> Self {
        AdmmOptions { relaxation: 1.5, rho_exponent: 0.15, gated: true, stop: StopRule::PrimalDual, ..Self::paper() }
    }
}

impl Default for AdmmOptions {
    /// The code's settings with the polish on.
    fn default() -> Self {
        AdmmOptions { polish: true, ..Self::code() }
    }
}

/// What a solve reports (never hides a failure: `converged` is false when the iteration budget ran out).
#[derive(Clone, Debug, Default)]
pub struct AdmmInfo {
    pub iterations: usize,
    pub converged: bool,
    /// ‖z − x̂‖_∞ and ρ‖z − z_old‖_∞ at the last iteration
    pub primal_residual: f64,
    pub dual_residual: f64,
    /// ‖P z + q + y‖_∞ at the returned z (KKT stationarity with ADMM's dual)
    pub kkt_residual: f64,
    pub rho: f64,
    pub refactorizations: usize,
    /// the Newton polish was applied (and accepted)
    pub polished: bool,
}

/// What a solve can reuse while its matrix P stays the same (one contact island within a step: the staggered
/// passes change q and the set's radii, never P): λ_max(P) from the power iteration, and K for each shift
/// ρ + α met so far (by its exact bits, so a reuse is bit-identical to factorising again). [`AdmmCache::reset`]
/// when P changes; the buffers are kept (no allocation once they have grown).
#[derive(Clone, Debug, Default)]
pub struct AdmmCache {
    /// λ_max(P) (max with α), once computed for this P
    big_l: Option<f64>,
    /// (shift bits, K⁻¹ or its Cholesky factor as `Admm::kinv`), the first `len` valid
    factors: Vec<(u64, Vec<f64>)>,
    len: usize,
}

/// Factorisations kept per cache (ρ adapts a few times per solve at most; beyond, factorise without keeping).
const CACHE_FACTORS: usize = 8;

impl AdmmCache {
    /// Forget P (its matrix changed): keep the buffers.
    pub fn reset(&mut self) {
        self.big_l = None;
        self.len = 0;
    }
}

/// Buffers of one problem size, allocated once: `solve` (polish included) allocates nothing.
#[derive(Clone, Debug)]
pub struct Admm {
    n: usize,
    /// K = P + (ρ + α) I (column-major) as its inverse K⁻¹ when n ≤ [`INVERSE_MAX_N`] (the x-step is then a
    /// dense product, without the triangular solves' chain of dependent operations that dominates at these
    /// sizes), else as its Cholesky factor (forming K⁻¹ costs 3× the factorisation, which dominates for large n)
    kinv: Vec<f64>,
    x: Vec<f64>,
    z: Vec<f64>,
    y: Vec<f64>,
    z_old: Vec<f64>,
    xh: Vec<f64>,
    qt: Vec<f64>,
    t: Vec<f64>,
    polish: PolishWs,
}

/// The polish's storage: the KKT systems at the current and the candidate iterate, and scratch vectors.
#[derive(Clone, Debug)]
struct PolishWs {
    cur: ReducedKkt,
    cand: ReducedKkt,
    /// the KKT residual F (m ≤ 2n), the Newton step, refinement scratch
    f: Vec<f64>,
    step: Vec<f64>,
    r: Vec<f64>,
    hu: Vec<f64>,
    /// the candidate iterate
    z1: Vec<f64>,
}

impl Admm {
    pub fn new(n: usize) -> Self {
        let v = vec![0.0; n];
        Admm {
            n,
            kinv: vec![0.0; n * n],
            x: v.clone(),
            z: v.clone(),
            y: v.clone(),
            z_old: v.clone(),
            xh: v.clone(),
            qt: v.clone(),
            t: v.clone(),
            polish: PolishWs {
                // at most one active constraint per coordinate (pyramid corners: two per contact of two)
                cur: ReducedKkt::with_capacity(n, n),
                cand: ReducedKkt::with_capacity(n, n),
                f: vec![0.0; 2 * n],
                step: vec![0.0; 2 * n],
                r: vec![0.0; 2 * n],
                hu: vec![0.0; n],
                z1: v,
            },
        }
    }

    /// The problem size n.
    pub fn size(&self) -> usize {
        self.n
    }

    /// The solution z (feasible by construction).
    pub fn solution(&self) -> &[f64] {
        &self.z
    }
    /// ADMM's dual y (y ∈ N_𝒞(z) at convergence).
    pub fn dual(&self) -> &[f64] {
        &self.y
    }

    /// K⁻¹ for the shift ρ + α (error if P + shift·I is not positive definite).
    fn factor(&mut self, p: &DMatrix<f64>, shift: f64) -> Result<(), SolverError> {
        self.kinv.copy_from_slice(p.as_slice());
        for i in 0..self.n {
            self.kinv[i + i * self.n] += shift;
        }
        let ok = if self.n <= INVERSE_MAX_N {
            spd_inverse_in_place(&mut self.kinv, self.n, &mut self.t)
        } else {
            chol(&mut self.kinv, self.n)
        };
        if ok {
            Ok(())
        } else {
            Err(SolverError::BadInput {
                solver: "ncp", problem: "ADMM: P + (ρ + α) I is not positive definite".into()
            })
        }
    }

    /// K for the shift ρ + α: from the cache when it holds this shift (copied), else factorised (and kept).
    /// Returns whether a factorisation was computed.
    fn factor_cached(
        &mut self,
        p: &DMatrix<f64>,
        shift: f64,
        cache: &mut Option<&mut AdmmCache>,
    ) -> Result<bool, SolverError> {
        let Some(c) = cache else {
            self.factor(p, shift)?;
            return Ok(true);
        };
        let key = shift.to_bits();
        if let Some((_, k)) = c.factors[..c.len].iter().find(|(b, _)| *b == key) {
            self.kinv.copy_from_slice(k);
            return Ok(false);
        }
        self.factor(p, shift)?;
        if c.len < CACHE_FACTORS {
            if c.len == c.factors.len() {
                c.factors.push((0, vec![]));
            }
            let (b, k) = &mut c.factors[c.len];
            *b = key;
            k.clear();
            k.extend_from_slice(&self.kinv);
            c.len += 1;
        }
        Ok(true)
    }

    /// Solve; `warm` is x⁰ (None: zeros). The solution is in [`Admm::solution`]. `cache` (None: none) holds what
    /// was computed for this P (λ_max, factorisations; the caller resets it when P changes) and is reused: the same
    /// result bit for bit, `refactorizations` counting only the factorisations computed.
    pub fn solve(
        &mut self,
        p: &DMatrix<f64>,
        q: &[f64],
        set: ConstraintSet,
        warm: Option<&[f64]>,
        opt: &AdmmOptions,
        mut cache: Option<&mut AdmmCache>,
    ) -> Result<AdmmInfo, SolverError> {
        let n = self.n;
        let bad = |problem: String| SolverError::BadInput { solver: "ncp", problem };
        if p.nrows() != n || p.ncols() != n || q.len() != n || warm.is_some_and(|w| w.len() != n) {
            return Err(bad(format!("ADMM sized for {n}: P {}×{}, q {}", p.nrows(), p.ncols(), q.len())));
        }
        if set.dim().is_some_and(|d| d != n) {
            return Err(bad(format!("ADMM: the friction set has {} variables, the problem {n}", set.dim().unwrap())));
        }
        if let ConstraintSet::Friction { r, .. } = set {
            if let Some(v) = r.iter().find(|v| !(v.is_finite() && **v >= 0.0)) {
                return Err(bad(format!("ADMM: friction radius {v} (must be finite and ≥ 0)")));
            }
        }
        // P is checked once per cache (a cached λ_max means it was)
        let p_known = cache.as_ref().is_some_and(|c| c.big_l.is_some());
        if (!p_known && p.iter().any(|v| !v.is_finite())) || q.iter().any(|v| !v.is_finite()) {
            return Err(bad("ADMM: non-finite P or q".into()));
        }
        let mut info = AdmmInfo::default();
        if n == 0 {
            info.converged = true;
            return Ok(info);
        }
        let alpha = opt.alpha;
        let cached_l = cache.as_ref().and_then(|c| c.big_l);
        let big_l = cached_l.unwrap_or_else(|| {
            let iters = opt.power_iters.unwrap_or(if set.dim().is_some() { 100 } else { 10 });
            power_iteration(p, iters, &mut self.t, &mut self.xh).max(alpha)
        });
        if let Some(c) = cache.as_mut() {
            c.big_l = Some(big_l);
        }
        let kappa = big_l / alpha;
        let mut rho = (big_l * alpha).sqrt() * kappa.powf(0.4);
        let mut tau = kappa.powf(opt.rho_exponent);
        info.refactorizations = usize::from(self.factor_cached(p, rho + alpha, &mut cache)?);
        match warm {
            Some(w) => {
                self.x.copy_from_slice(w);
                self.z.copy_from_slice(w);
                set.project(&mut self.z);
            }
            None => {
                self.x.fill(0.0);
                self.z.fill(0.0);
            }
        }
        self.y.fill(0.0);
        for i in 0..n {
            self.qt[i] = q[i] - alpha * self.x[i];
        }
        let a = opt.relaxation;
        let (mut triggers, mut last_dir) = (0usize, 0i8);
        for it in 0..opt.max_iter {
            // one iteration on slices of length n (no bounds checks in the loops)
            let (rp, mut rd, xn) = {
                let (kinv, q) = (&self.kinv[..n * n], &q[..n]);
                let (x, z, y, z_old) = (&mut self.x[..n], &mut self.z[..n], &mut self.y[..n], &mut self.z_old[..n]);
                let (xh, qt, t) = (&mut self.xh[..n], &mut self.qt[..n], &mut self.t[..n]);
                // x-step: x = (P + (ρ + α) I)⁻¹ (ρ z − y − q̃)
                for i in 0..n {
                    t[i] = rho * z[i] - y[i] - qt[i];
                }
                if n <= INVERSE_MAX_N {
                    // row i of the symmetric inverse = column i
                    for (i, xi) in x.iter_mut().enumerate() {
                        *xi = kinv[i * n..(i + 1) * n].iter().zip(t.iter()).map(|(a, b)| a * b).sum::<f64>();
                    }
                } else {
                    x.copy_from_slice(t);
                    chol_solve(kinv, n, x);
                }
                for i in 0..n {
                    qt[i] = q[i] - alpha * x[i];
                    xh[i] = a * x[i] + (1.0 - a) * z[i];
                    z_old[i] = z[i];
                    z[i] = xh[i] + y[i] / rho;
                }
                set.project(z);
                let (mut rp, mut rd, mut xn) = (0.0f64, 0.0f64, 0.0);
                for i in 0..n {
                    let d = xh[i] - z[i];
                    y[i] += rho * d;
                    rp = rp.max(d.abs());
                    rd = rd.max((z[i] - z_old[i]).abs());
                    xn += x[i] * x[i];
                }
                (rp, rd, xn)
            };
            rd *= rho;
            info.iterations = it + 1;
            info.primal_residual = rp;
            info.dual_residual = rd;
            let done = match opt.stop {
                StopRule::Kkt => kkt_residual(p, q, &self.x, &self.y, &mut self.t) < opt.eps_abs,
                StopRule::PrimalDual => {
                    // primal and dual residuals for the QCQP and the QP alike: the code stops its QP on the dual
                    // residual alone, which accepts a warm-started iterate that has barely moved (measured: a box's
                    // four floor contacts returned at λ_n = 0, a Signorini residual of gΔt = 0.049, on a 7-box pile)
                    rd < opt.eps_abs && rp < opt.eps_abs + 1e-8 * xn.sqrt()
                }
            };
            if done {
                info.converged = true;
                break;
            }
            if opt.adapt {
                let dir = if rp > 10.0 * rd {
                    1
                } else if rd > 10.0 * rp {
                    -1
                } else {
                    0
                };
                if dir != 0 {
                    triggers += 1;
                    if !opt.gated || triggers % 5 == 0 {
                        if opt.gated && last_dir != 0 && dir != last_dir {
                            tau = 1.0 + 0.8 * (tau - 1.0);
                        }
                        rho = if dir > 0 { rho * tau } else { rho / tau };
                        last_dir = dir;
                        info.refactorizations += usize::from(self.factor_cached(p, rho + alpha, &mut cache)?);
                    }
                }
            }
        }
        info.rho = rho;
        if opt.polish {
            info.polished = self.polish(p, q, set)?;
        }
        // after an accepted polish y = −(P z + q) exactly, so the residual is 0 without evaluating it
        info.kkt_residual = if info.polished { 0.0 } else { kkt_residual(p, q, &self.z, &self.y, &mut self.t) };
        Ok(info)
    }

    /// Newton steps on the KKT equations of the active set identified at z (≤ 4), each kept only if it stays
    /// feasible, keeps the same active set, keeps the orthant multipliers ≥ 0 and reduces the KKT residual.
    /// Allocation-free (the storage of `self.polish`); the candidate's KKT matrix is factorised only when a
    /// further step is taken from it.
    fn polish(&mut self, p: &DMatrix<f64>, q: &[f64], set: ConstraintSet) -> Result<bool, SolverError> {
        let mut improved = false;
        let scale = q.iter().chain(&self.z).fold(1e-300f64, |m, v| m.max(v.abs()));
        let same = |a: &ReducedKkt, b: &ReducedKkt| {
            a.sizes() == b.sizes() && a.active().iter().zip(b.active()).all(|(x, y)| x.index == y.index)
        };
        let w = &mut self.polish;
        w.cur.rebuild(p, q, &self.z, set)?;
        // a singular reduced problem (redundant contacts, e.g. four coplanar corners): the minimum-norm Newton step,
        // else it jumps along the solution set (a symmetric box stack tilted by 1.5 mrad at Δt 10 ms, issue 12)
        let singular = w.cur.pivot_ratio() < 1e-9;
        // the KKT residual at the current iterate, and the Newton step from it (z1)
        let mut res0 = w.cur.kkt_residual_into(set, &mut w.f);
        w.cur.newton_step_into(&w.f, &mut w.z1, &mut w.step, &mut w.r, &mut w.hu, singular);
        for round in 0..4 {
            if res0 <= 1e-15 * scale
                || set.violation(&w.z1) > 1e-13 * scale
                || !orthant_multipliers_ok(p, q, &w.z1, set)
            {
                break;
            }
            w.cand.identify(p, q, &w.z1, set)?;
            let res1 = w.cand.kkt_residual_into(set, &mut w.f);
            if res1 >= res0 || !same(&w.cur, &w.cand) {
                break;
            }
            self.z.copy_from_slice(&w.z1);
            improved = true;
            std::mem::swap(&mut w.cur, &mut w.cand);
            res0 = res1;
            // the next step from the accepted iterate, unless the loop stops before using it (singular: the
            // residual left lies outside P's range, which no further Newton step removes — one round)
            if round == 3 || res0 <= 1e-15 * scale || singular {
                break;
            }
            w.cur.factor()?;
            w.cur.newton_step_into(&w.f, &mut w.z1, &mut w.step, &mut w.r, &mut w.hu, singular);
        }
        if improved {
            // the Newton iterate may sit outside the set by round-off (accepted up to 1e-13 of the scale): project,
            // so that λ_n ≥ 0 exactly (a −2e-15 normal impulse made the next QCQP reject its friction radius μ λ_n)
            set.project(&mut self.z);
            // the dual consistent with the polished z: y = −(P z + q) (the KKT build point is z)
            for (yi, gi) in self.y.iter_mut().zip(w.cur.gradient()) {
                *yi = -gi;
            }
        }
        Ok(improved)
    }
}

/// Orthant: every coordinate at zero has a non-negative gradient (P z + q)_j (its multiplier).
fn orthant_multipliers_ok(p: &DMatrix<f64>, q: &[f64], z: &[f64], set: ConstraintSet) -> bool {
    match set {
        ConstraintSet::Nonneg => (0..z.len()).all(|j| {
            z[j] > 0.0 || (0..z.len()).map(|t| p[(j, t)] * z[t]).sum::<f64>() + q[j] >= -1e-12 * (1.0 + q[j].abs())
        }),
        ConstraintSet::Friction { .. } => true,
    }
}

/// Inverse of the symmetric positive definite n × n column-major `a` in place by the sweep operator (Gauss–
/// Jordan without pivoting, stable for SPD: its pivots are the Schur complements' diagonals, all > 0 exactly
/// when `a` is positive definite; false otherwise). n³ multiply-adds over contiguous columns; `col` is scratch
/// of length n. Uses the upper and lower triangles (`a` must be stored in full).
fn spd_inverse_in_place(a: &mut [f64], n: usize, col: &mut [f64]) -> bool {
    // sweeping every index: A_kk ← −1/A_kk, A_ik ← A_ik/A_kk, A_ij ← A_ij − A_ik A_kj/A_kk, ending at −A⁻¹
    for k in 0..n {
        let d = a[k + k * n];
        if !(d > 0.0 && d.is_finite()) {
            return false;
        }
        let dinv = 1.0 / d;
        col[..n].copy_from_slice(&a[k * n..(k + 1) * n]);
        for j in 0..n {
            if j == k {
                continue;
            }
            let s = a[k + j * n] * dinv;
            let cj = &mut a[j * n..(j + 1) * n];
            for (x, &c) in cj.iter_mut().zip(&col[..n]) {
                *x -= s * c;
            }
            cj[k] = s;
        }
        for (i, x) in a[k * n..(k + 1) * n].iter_mut().enumerate() {
            *x = if i == k { -dinv } else { col[i] * dinv };
        }
    }
    a.iter_mut().for_each(|x| *x = -*x);
    true
}

/// λ_max(P) by power iteration from the all-ones vector (deterministic), at most `iters` iterations, stopping
/// when the Rayleigh quotient changes by less than 1e-3 (the code always runs all of them; only ρ₀ depends on
/// L, so the solution does not).
fn power_iteration(p: &DMatrix<f64>, iters: usize, v: &mut [f64], w: &mut [f64]) -> f64 {
    let n = v.len();
    v.fill(1.0 / (n as f64).sqrt());
    let mut lam = 0.0;
    for _ in 0..iters {
        for i in 0..n {
            w[i] = (0..n).map(|j| p[(i, j)] * v[j]).sum();
        }
        let nw = w.iter().map(|x| x * x).sum::<f64>().sqrt();
        if nw == 0.0 {
            return 0.0;
        }
        let prev = lam;
        lam = v.iter().zip(w.iter()).map(|(a, b)| a * b).sum::<f64>();
        for i in 0..n {
            v[i] = w[i] / nw;
        }
        // L only sets ρ's scale: stop once the Rayleigh quotient has settled to 1e-3
        if (lam - prev).abs() <= 1e-3 * lam.abs() {
            break;
        }
    }
    lam.abs()
}

fn kkt_residual(p: &DMatrix<f64>, q: &[f64], x: &[f64], y: &[f64], t: &mut [f64]) -> f64 {
    let n = x.len();
    for i in 0..n {
        t[i] = (0..n).map(|j| p[(i, j)] * x[j]).sum::<f64>() + q[i] + y[i];
    }
    t.iter().fold(0.0f64, |m, v| m.max(v.abs()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_inverse_of_spd_matrices() {
        let b = DMatrix::from_fn(6, 6, |i, j| ((i * 7 + j * 3) % 5) as f64 - 2.0 + if i == j { 0.5 } else { 0.0 });
        let a = &b * b.transpose() + DMatrix::identity(6, 6) * 1e-3;
        let mut inv = a.as_slice().to_vec();
        assert!(spd_inverse_in_place(&mut inv, 6, &mut [0.0; 6]));
        let inv = DMatrix::from_column_slice(6, 6, &inv);
        let cond = a.norm() * inv.norm();
        assert!((&inv * &a - DMatrix::identity(6, 6)).amax() < 1e-15 * cond, "{}", (&inv * &a).amax());
        // indefinite and singular matrices are refused
        let mut bad = vec![1.0, 2.0, 2.0, 1.0];
        assert!(!spd_inverse_in_place(&mut bad, 2, &mut [0.0; 2]));
        let mut sing = vec![1.0, 1.0, 1.0, 1.0];
        assert!(!spd_inverse_in_place(&mut sing, 2, &mut [0.0; 2]));
    }

    /// Both x-step paths (explicit inverse for n ≤ INVERSE_MAX_N, Cholesky solves above) reach a KKT point of
    /// the same kind of problem: dense SPD P, disks of radius 0.3.
    #[test]
    fn both_x_step_paths_converge() {
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let mut u = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        };
        for n in [8, 2 * INVERSE_MAX_N + 4] {
            let b = DMatrix::from_fn(n, n, |_, _| u());
            let p = &b * b.transpose() + DMatrix::identity(n, n) * 0.1;
            let q: Vec<f64> = (0..n).map(|_| 3.0 * u()).collect();
            let r = vec![0.3; n / 2];
            let set = ConstraintSet::Friction { kind: crate::ncp::FrictionSet::Cone, r: &r };
            let mut admm = Admm::new(n);
            let info = admm.solve(&p, &q, set, None, &AdmmOptions::default(), None).unwrap();
            assert!(info.converged && info.polished, "n = {n}: {info:?}");
            assert!(set.violation(admm.solution()) < 1e-12);
            // the polished KKT residual (P z + q + y = 0 with y ∈ N_𝒞(z)) and the unpolished solve agree
            let z = admm.solution().to_vec();
            let info = admm.solve(&p, &q, set, None, &AdmmOptions::code(), None).unwrap();
            assert!(info.converged, "n = {n}: {info:?}");
            let d = z.iter().zip(admm.solution()).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
            assert!(d < 1e-6, "n = {n}: polished vs unpolished {d:e}");
        }
    }
}
