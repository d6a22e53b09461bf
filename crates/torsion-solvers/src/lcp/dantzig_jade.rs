//! Jade's modified Dantzig pivoting (spec 004 §3.9): rows in order, normals first; DIRECTION couples the bound
//! frictions to their normals inside the solve (Ã of §3.3); MAXSTEP takes the friction box as a *moving* bound
//! (Fix 1: g± = λ_i ∓ μ λ_n with Δg± = Δλ_i ∓ μ Δλ_n); DRIVE runs a depth-first search over "original /
//! reversed direction" at each pivot level when a ratio test fails (zero step, crossing the far bound, no
//! candidate) (Fix 2), at most 3m pivots per driven row. The validity check (§3.3) closes every solve.
use super::active_set::{bound_coupling, expand_into, ActiveSystem, Class};
use super::dense::{copy_vec, zeroed};
use super::problem::{BoxedLcp, Row};
use super::solution::{LcpFailure, LcpSolution, LcpSolverKind};
use nalgebra::DVector;

/// Tolerances (docs/decisions.md spec 004 D10), relative to max(1, ‖b‖∞).
#[derive(Clone, Copy, Debug)]
pub struct JadeOptions {
    /// smallest |Δ| a ratio test divides by
    pub eps: f64,
    /// classification and zero-step tolerance
    pub tol: f64,
    /// pivots per driven row: `loop_factor` · m (the code's 3m)
    pub loop_factor: usize,
    /// the validity check's tolerance (§3.3)
    pub validity_tol: f64,
}

impl Default for JadeOptions {
    fn default() -> Self {
        JadeOptions { eps: 1e-12, tol: 1e-10, loop_factor: 3, validity_tol: 1e-6 }
    }
}

#[derive(Clone, Debug, Default)]
struct Snapshot {
    f: DVector<f64>,
    a: DVector<f64>,
    class: Vec<Class>,
}

impl Snapshot {
    /// `self` ← `o`, reusing the storage.
    fn copy_from(&mut self, o: &Snapshot) {
        copy_vec(&mut self.f, &o.f);
        copy_vec(&mut self.a, &o.a);
        self.class.clone_from(&o.class);
    }
}

/// The buffers of Jade's Dantzig, reused from solve to solve (design.md §7: no heap allocation once they have
/// held an LCP as large and a DFS as deep).
#[derive(Clone, Debug, Default)]
pub struct JadeScratch {
    st: Snapshot,
    /// the DFS: a snapshot per pivot level (the first `depth` used) and whether its direction is reversed
    stack: Vec<Snapshot>,
    reversed: Vec<bool>,
    /// class sets reached by zero steps in this drive, `seen_n` of them, m classes each
    seen: Vec<Class>,
    seen_n: usize,
    next: Vec<Class>,
    /// the ratio test's candidates (ratio, row, class) and the rows moving at the step taken
    cands: Vec<(f64, usize, Class)>,
    movers: Vec<(usize, Class)>,
    sys: ActiveSystem,
    d0: DVector<f64>,
    ad0: DVector<f64>,
    df: DVector<f64>,
    da: DVector<f64>,
    order: Vec<usize>,
}

/// A ratio test's step: its length, and whether the driven row is among the movers (`JadeScratch::movers`).
struct Step {
    s: f64,
    driven_done: bool,
}

/// (normal, μ) of a friction row; (usize::MAX, 0) for a normal.
fn mu_normal(lcp: &BoxedLcp, i: usize) -> (usize, f64) {
    match lcp.rows[i] {
        Row::Friction { normal, mu } => (normal, mu),
        Row::Normal => (usize::MAX, 0.0),
    }
}

struct Jade<'a> {
    lcp: &'a BoxedLcp,
    sc: &'a mut JadeScratch,
    eps: f64,
    tol: f64,
    pivots: usize,
}

impl Jade<'_> {
    /// DIRECTION(i, σ) into (df, da): Δλ_i = σ, Ã_SS Δλ_S = −(A d₀)_S, bound frictions follow their normals,
    /// Δw = A Δλ. False when the solve fails.
    fn direction(&mut self, i: usize, sigma: f64) -> bool {
        let JadeScratch { st, sys, d0, ad0, df, da, .. } = &mut *self.sc;
        let lcp = self.lcp;
        sys.assemble(lcp, &st.class);
        // x = 0: d₀ (the driven row and the frictions bound to it)
        zeroed(&mut sys.dense.x, sys.s.len());
        expand_into(lcp, &st.class, &sys.col, &sys.dense.x, Some((i, sigma)), d0);
        zeroed(ad0, lcp.len());
        lcp.a.mul_to(d0, ad0);
        for (k, &r) in sys.s.iter().enumerate() {
            sys.rhs[k] = -ad0[r];
        }
        if sys.solve().is_none() {
            return false;
        }
        expand_into(lcp, &st.class, &sys.col, &sys.dense.x, Some((i, sigma)), df);
        zeroed(da, lcp.len());
        lcp.a.mul_to(df, da);
        true
    }

    /// MAXSTEP(i): the smallest admissible ratio (candidates 1–7 of §3.9), its movers in `movers`; None on a zero
    /// step, a step past the driven row's far bound, or no candidate.
    fn maxstep(&mut self, i: usize) -> Option<Step> {
        let lcp = self.lcp;
        let JadeScratch { st, cands, movers, df, da, .. } = &mut *self.sc;
        let (f, a, cl) = (&st.f, &st.a, &st.class);
        let (eps, tol) = (self.eps, self.tol);
        cands.clear();
        let mut far = f64::INFINITY;
        let mut push = |s: f64, r: usize, c: Class| {
            if s >= -tol {
                cands.push((s.max(0.0), r, c));
            }
        };
        // 1. the driven row reaches w_i = 0
        if da[i].abs() > eps {
            let c = if lcp.rows[i] == Row::Normal { Class::C } else { Class::Cf };
            push(-a[i] / da[i], i, c);
        }
        match lcp.rows[i] {
            // the driven normal must not go below 0 (the reversed branch)
            Row::Normal => {
                if df[i] < -eps {
                    far = (-f[i] / df[i]).max(0.0);
                }
            }
            // 2. the driven friction reaches its moving bound (Fix 1)
            Row::Friction { normal, mu } => {
                let (gp, dgp) = (f[i] - mu * f[normal], df[i] - mu * df[normal]);
                let (gm, dgm) = (f[i] + mu * f[normal], df[i] + mu * df[normal]);
                let sp = if dgp.abs() > eps { -gp / dgp } else { f64::INFINITY };
                let sm = if dgm.abs() > eps { -gm / dgm } else { f64::INFINITY };
                let (cand, cls, sb) = if a[i] > 0.0 { (sm, Class::Nl, sp) } else { (sp, Class::Nh, sm) };
                push(cand, i, cls);
                if sb > 0.0 {
                    far = sb;
                }
            }
        }
        for k in 0..lcp.len() {
            if k == i {
                continue;
            }
            match cl[k] {
                // 3. C → N
                Class::C if df[k] < -eps => push(-f[k] / df[k], k, Class::N),
                // 4. N → C (a normal row; frictions of zero normals are N_h / N_l)
                Class::N if da[k] < -eps => push(-a[k] / da[k], k, Class::C),
                // 5. C_f → N_h / N_l
                Class::Cf => {
                    let (n, mu) = mu_normal(lcp, k);
                    let (gp, dgp) = (f[k] - mu * f[n], df[k] - mu * df[n]);
                    let (gm, dgm) = (f[k] + mu * f[n], df[k] + mu * df[n]);
                    if dgp > eps {
                        push(-gp / dgp, k, Class::Nh);
                    }
                    if dgm < -eps {
                        push(-gm / dgm, k, Class::Nl);
                    }
                }
                // 6. N_h → C_f (→ N_l when the normal vanishes, decided in `apply`)
                Class::Nh if da[k] > eps => push(-a[k] / da[k], k, Class::Cf),
                // 7. N_l → C_f (→ N_h)
                Class::Nl if da[k] < -eps => push(-a[k] / da[k], k, Class::Cf),
                _ => {}
            }
        }
        let s = cands.iter().map(|c| c.0).fold(f64::INFINITY, f64::min);
        if !s.is_finite() || s > far {
            return None;
        }
        movers.clear();
        movers.extend(cands.iter().filter(|c| c.0 <= s + tol).map(|c| (c.1, c.2)));
        let driven_done = movers.iter().any(|m| m.0 == i);
        Some(Step { s, driven_done })
    }

    /// MOVE: λ += sΔλ, the movers' classes, re-projection (λ_N = 0, λ_{N_h/N_l} = ±μ λ_n), w = A λ + b.
    fn apply(&mut self, i: usize, step: &Step) {
        let lcp = self.lcp;
        let JadeScratch { st, movers, df, da, .. } = &mut *self.sc;
        st.f.axpy(step.s, df, 1.0);
        for &(k, c) in movers.iter() {
            let was = st.class[k];
            st.class[k] = c;
            // a bound friction whose normal is 0 after the step has a zero box: it flips to the other bound
            if let (Class::Cf, Row::Friction { normal, .. }) = (c, lcp.rows[k]) {
                if was != Class::Cf && k != i && st.f[normal] <= self.tol {
                    st.class[k] = if was == Class::Nh { Class::Nl } else { Class::Nh };
                }
            }
        }
        // a normal re-entering C at λ_n = 0: its bound frictions (zero box) take the bound their w points to now
        // (w = A λ + b into `da`, free until the next direction)
        let a_now = da;
        lcp.w_into(&st.f, a_now);
        for &(k, c) in movers.iter() {
            if c == Class::C && lcp.rows[k] == Row::Normal {
                for h in 0..lcp.len() {
                    let of_k = matches!(lcp.rows[h], Row::Friction { normal, .. } if normal == k);
                    if of_k && matches!(st.class[h], Class::Nh | Class::Nl) {
                        st.class[h] = if a_now[h] <= 0.0 { Class::Nh } else { Class::Nl };
                    }
                }
            }
        }
        if step.driven_done && lcp.rows[i] != Row::Normal {
            // the driven friction: sticking, or at the bound its w points to (§3.9 MOVE)
            let a_i = lcp.w_row(i, &st.f);
            st.class[i] = if a_i < -self.tol {
                Class::Nh
            } else if a_i > self.tol {
                Class::Nl
            } else {
                Class::Cf
            };
        }
        self.project();
    }

    fn project(&mut self) {
        let st = &mut self.sc.st;
        for k in 0..self.lcp.len() {
            if let Some((n, smu)) = bound_coupling(self.lcp, &st.class, k) {
                st.f[k] = smu * st.f[n];
            } else if st.class[k] == Class::N {
                st.f[k] = 0.0;
            }
        }
        self.lcp.w_into(&st.f, &mut st.a);
    }

    /// Level `level` of the DFS stack ← the current state (the stack grows on a new depth).
    fn save(&mut self, level: usize) {
        let sc = &mut *self.sc;
        if sc.stack.len() <= level {
            sc.stack.resize_with(level + 1, Snapshot::default);
        }
        sc.stack[level].copy_from(&sc.st);
    }

    /// Whether the classes after a zero step (the current ones with the movers') were reached before in this drive
    /// (a cycle, D10); if not, they are remembered.
    fn seen_before(&mut self) -> bool {
        let sc = &mut *self.sc;
        let m = sc.st.class.len();
        sc.next.clone_from(&sc.st.class);
        for &(k, c) in &sc.movers {
            sc.next[k] = c;
        }
        if m > 0 && sc.seen[..sc.seen_n * m].chunks(m).any(|x| x == sc.next.as_slice()) {
            return true;
        }
        sc.seen.truncate(sc.seen_n * m);
        sc.seen.extend_from_slice(&sc.next);
        sc.seen_n += 1;
        false
    }

    /// DRIVE(i) with the DFS of Fix 2.
    fn drive(&mut self, i: usize, cap: usize) -> Result<(), LcpFailure> {
        self.save(0);
        self.sc.reversed.clear();
        self.sc.reversed.push(false);
        let mut level = 0usize;
        // class sets reached by zero steps in this drive: a repeat is a cycle (D10)
        self.sc.seen_n = 0;
        for _ in 0..cap {
            self.pivots += 1;
            let sigma = if self.sc.st.a[i] < 0.0 { 1.0 } else { -1.0 };
            let mut step = None;
            if self.direction(i, sigma) {
                if self.sc.reversed[level] {
                    self.sc.df.neg_mut();
                    self.sc.da.neg_mut();
                }
                step = self.maxstep(i);
            }
            let step = step.filter(|st| st.s >= self.tol || !self.seen_before());
            match step {
                None => {
                    while self.sc.reversed[level] {
                        if level == 0 {
                            return Err(LcpFailure::NoStep { row: i });
                        }
                        level -= 1;
                    }
                    let sc = &mut *self.sc;
                    sc.st.copy_from(&sc.stack[level]);
                    sc.reversed[level] = true;
                    sc.reversed.truncate(level + 1);
                }
                Some(step) => {
                    self.apply(i, &step);
                    self.sc.reversed.truncate(level + 1);
                    self.save(level + 1);
                    self.sc.reversed.push(false);
                    level += 1;
                    if step.driven_done {
                        return Ok(());
                    }
                }
            }
        }
        Err(LcpFailure::IterationCap { row: i })
    }
}

impl JadeScratch {
    /// The singular active-set systems solved in these buffers so far (D11).
    pub fn singular_solves(&self) -> usize {
        self.sys.dense.singular
    }
}

/// Solve the boxed LCP with Jade's Dantzig (§3.9 "Whole solve"); stops at the first failure and reports it with
/// the partial answer's validity.
pub fn solve_jade(lcp: &BoxedLcp, o: &JadeOptions) -> LcpSolution {
    let mut out = LcpSolution::empty(LcpSolverKind::JadeDantzig);
    solve_jade_into(lcp, o, &mut JadeScratch::default(), &mut out);
    out
}

/// [`solve_jade`] in reused buffers (`sc`) into `out`'s storage.
pub fn solve_jade_into(lcp: &BoxedLcp, o: &JadeOptions, sc: &mut JadeScratch, out: &mut LcpSolution) {
    let m = lcp.len();
    let scale = lcp.scale();
    zeroed(&mut sc.st.f, m);
    copy_vec(&mut sc.st.a, &lcp.b);
    sc.st.class.clear();
    sc.st.class.resize(m, Class::Unset);
    let mut order = std::mem::take(&mut sc.order);
    lcp.order_into(&mut order);
    let mut j = Jade { lcp, sc, eps: o.eps * scale, tol: o.tol * scale, pivots: 0 };
    let cap = o.loop_factor * m.max(1);
    let mut failure = None;
    for &i in &order {
        let a_i = j.sc.st.a[i];
        let done = match lcp.rows[i] {
            Row::Normal => {
                if a_i > -j.tol {
                    j.sc.st.class[i] = Class::N;
                    true
                } else {
                    false
                }
            }
            Row::Friction { normal, mu } => {
                if j.sc.st.class[normal] == Class::N || mu * j.sc.st.f[normal] <= j.tol {
                    // a zero box: the friction follows its normal from the bound its w points to
                    j.sc.st.class[i] = if a_i <= 0.0 { Class::Nh } else { Class::Nl };
                    j.project();
                    true
                } else if a_i.abs() <= j.tol {
                    j.sc.st.class[i] = Class::Cf;
                    true
                } else {
                    false
                }
            }
        };
        if !done {
            if let Err(e) = j.drive(i, cap) {
                failure = Some(e);
                break;
            }
        }
    }
    let pivots = j.pivots;
    sc.order = order;
    copy_vec(&mut out.lambda, &sc.st.f);
    let validity = lcp.check_into(&out.lambda, o.validity_tol, &mut out.w);
    if failure.is_none() && !validity.valid {
        failure = Some(LcpFailure::Invalid);
    }
    out.solver = LcpSolverKind::JadeDantzig;
    out.classes.clone_from(&sc.st.class);
    out.iterations = pivots;
    out.validity = validity;
    out.failure = failure;
    out.polished = false;
}
