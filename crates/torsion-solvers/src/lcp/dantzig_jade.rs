//! Jade's modified Dantzig pivoting (spec 004 §3.9): rows in order, normals first; DIRECTION couples the bound
//! frictions to their normals inside the solve (Ã of §3.3); MAXSTEP takes the friction box as a *moving* bound
//! (Fix 1: g± = λ_i ∓ μ λ_n with Δg± = Δλ_i ∓ μ Δλ_n); DRIVE runs a depth-first search over "original /
//! reversed direction" at each pivot level when a ratio test fails (zero step, crossing the far bound, no
//! candidate) (Fix 2), at most 3m pivots per driven row. The validity check (§3.3) closes every solve.
use super::active_set::{bound_coupling, expand, reduced_matrix, s_set, solve, Class};
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

#[derive(Clone)]
struct Snapshot {
    f: DVector<f64>,
    a: DVector<f64>,
    class: Vec<Class>,
}

struct Step {
    s: f64,
    movers: Vec<(usize, Class)>,
    driven_done: bool,
}

struct Jade<'a> {
    lcp: &'a BoxedLcp,
    st: Snapshot,
    eps: f64,
    tol: f64,
    pivots: usize,
}

impl Jade<'_> {
    fn mu_normal(&self, i: usize) -> (usize, f64) {
        match self.lcp.rows[i] {
            Row::Friction { normal, mu } => (normal, mu),
            Row::Normal => (usize::MAX, 0.0),
        }
    }

    /// DIRECTION(i, σ): Δλ_i = σ, Ã_SS Δλ_S = −(A d₀)_S, bound frictions follow their normals, Δw = A Δλ.
    fn direction(&self, i: usize, sigma: f64) -> Option<(DVector<f64>, DVector<f64>)> {
        let (s, col) = s_set(&self.st.class);
        let zero = DVector::zeros(s.len());
        let d0 = expand(self.lcp, &self.st.class, &col, &zero, Some((i, sigma)));
        let ad0 = &self.lcp.a * &d0;
        let at = reduced_matrix(self.lcp, &self.st.class, &s, &col);
        let rhs = DVector::from_iterator(s.len(), s.iter().map(|&r| -ad0[r]));
        let x = solve(&at, &rhs)?.x;
        let df = expand(self.lcp, &self.st.class, &col, &x, Some((i, sigma)));
        let da = &self.lcp.a * &df;
        Some((df, da))
    }

    /// MAXSTEP(i): the smallest admissible ratio (candidates 1–7 of §3.9); None on a zero step, a step past
    /// the driven row's far bound, or no candidate.
    fn maxstep(&self, i: usize, df: &DVector<f64>, da: &DVector<f64>) -> Option<Step> {
        let (f, a, cl) = (&self.st.f, &self.st.a, &self.st.class);
        let (eps, tol) = (self.eps, self.tol);
        let mut cands: Vec<(f64, usize, Class)> = vec![];
        let mut far = f64::INFINITY;
        let mut push = |s: f64, r: usize, c: Class| {
            if s >= -tol {
                cands.push((s.max(0.0), r, c));
            }
        };
        // 1. the driven row reaches w_i = 0
        if da[i].abs() > eps {
            let c = if self.lcp.rows[i] == Row::Normal { Class::C } else { Class::Cf };
            push(-a[i] / da[i], i, c);
        }
        match self.lcp.rows[i] {
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
        for k in 0..self.lcp.len() {
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
                    let (n, mu) = self.mu_normal(k);
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
        let movers: Vec<(usize, Class)> = cands.iter().filter(|c| c.0 <= s + tol).map(|c| (c.1, c.2)).collect();
        let driven_done = movers.iter().any(|m| m.0 == i);
        Some(Step { s, movers, driven_done })
    }

    /// MOVE: λ += sΔλ, the movers' classes, re-projection (λ_N = 0, λ_{N_h/N_l} = ±μ λ_n), w = A λ + b.
    fn apply(&mut self, i: usize, step: &Step, df: &DVector<f64>) {
        self.st.f.axpy(step.s, df, 1.0);
        for &(k, c) in &step.movers {
            let was = self.st.class[k];
            self.st.class[k] = c;
            // a bound friction whose normal is 0 after the step has a zero box: it flips to the other bound
            if let (Class::Cf, Row::Friction { normal, .. }) = (c, self.lcp.rows[k]) {
                if was != Class::Cf && k != i && self.st.f[normal] <= self.tol {
                    self.st.class[k] = if was == Class::Nh { Class::Nl } else { Class::Nh };
                }
            }
        }
        // a normal re-entering C at λ_n = 0: its bound frictions (zero box) take the bound their w points to now
        let a_now = self.lcp.w(&self.st.f);
        for &(k, c) in &step.movers {
            if c == Class::C && self.lcp.rows[k] == Row::Normal {
                for h in self.lcp.frictions_of(k) {
                    if matches!(self.st.class[h], Class::Nh | Class::Nl) {
                        self.st.class[h] = if a_now[h] <= 0.0 { Class::Nh } else { Class::Nl };
                    }
                }
            }
        }
        if step.driven_done && self.lcp.rows[i] != Row::Normal {
            // the driven friction: sticking, or at the bound its w points to (§3.9 MOVE)
            let a_i = (self.lcp.a.row(i) * &self.st.f)[0] + self.lcp.b[i];
            self.st.class[i] = if a_i < -self.tol {
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
        for k in 0..self.lcp.len() {
            if let Some((n, smu)) = bound_coupling(self.lcp, &self.st.class, k) {
                self.st.f[k] = smu * self.st.f[n];
            } else if self.st.class[k] == Class::N {
                self.st.f[k] = 0.0;
            }
        }
        self.st.a = self.lcp.w(&self.st.f);
    }

    /// DRIVE(i) with the DFS of Fix 2.
    fn drive(&mut self, i: usize, cap: usize) -> Result<(), LcpFailure> {
        let mut stack = vec![self.st.clone()];
        let mut reversed = vec![false];
        let mut level = 0usize;
        // class sets reached by zero steps in this drive: a repeat is a cycle (D10)
        let mut seen: Vec<Vec<Class>> = vec![];
        for _ in 0..cap {
            self.pivots += 1;
            let sigma = if self.st.a[i] < 0.0 { 1.0 } else { -1.0 };
            let step = self.direction(i, sigma).and_then(|(mut df, mut da)| {
                if reversed[level] {
                    df.neg_mut();
                    da.neg_mut();
                }
                self.maxstep(i, &df, &da).map(|s| (s, df))
            });
            let step = step.filter(|(st, _)| {
                if st.s >= self.tol {
                    return true;
                }
                let mut next = self.st.class.clone();
                for &(k, c) in &st.movers {
                    next[k] = c;
                }
                if seen.contains(&next) {
                    return false;
                }
                seen.push(next);
                true
            });
            match step {
                None => {
                    while reversed[level] {
                        if level == 0 {
                            return Err(LcpFailure::NoStep { row: i });
                        }
                        level -= 1;
                    }
                    self.st = stack[level].clone();
                    reversed[level] = true;
                    stack.truncate(level + 1);
                    reversed.truncate(level + 1);
                }
                Some((step, df)) => {
                    self.apply(i, &step, &df);
                    stack.truncate(level + 1);
                    reversed.truncate(level + 1);
                    stack.push(self.st.clone());
                    reversed.push(false);
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

/// Solve the boxed LCP with Jade's modified Dantzig (§3.9 "Whole solve"); stops at the first failure and reports
/// it with the partial answer's validity.
pub fn solve_jade(lcp: &BoxedLcp, o: &JadeOptions) -> LcpSolution {
    let m = lcp.len();
    let scale = lcp.scale();
    let mut j = Jade {
        lcp,
        st: Snapshot { f: DVector::zeros(m), a: lcp.b.clone(), class: vec![Class::Unset; m] },
        eps: o.eps * scale,
        tol: o.tol * scale,
        pivots: 0,
    };
    let cap = o.loop_factor * m.max(1);
    let mut failure = None;
    for i in lcp.order() {
        let a_i = j.st.a[i];
        let done = match lcp.rows[i] {
            Row::Normal => {
                if a_i > -j.tol {
                    j.st.class[i] = Class::N;
                    true
                } else {
                    false
                }
            }
            Row::Friction { normal, mu } => {
                if j.st.class[normal] == Class::N || mu * j.st.f[normal] <= j.tol {
                    // a zero box: the friction follows its normal from the bound its w points to
                    j.st.class[i] = if a_i <= 0.0 { Class::Nh } else { Class::Nl };
                    j.project();
                    true
                } else if a_i.abs() <= j.tol {
                    j.st.class[i] = Class::Cf;
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
    let lambda = j.st.f.clone();
    let validity = lcp.check(&lambda, o.validity_tol);
    if failure.is_none() && !validity.valid {
        failure = Some(LcpFailure::Invalid);
    }
    LcpSolution {
        solver: LcpSolverKind::JadeDantzig,
        w: lcp.w(&lambda),
        lambda,
        classes: j.st.class,
        iterations: j.pivots,
        validity,
        failure,
    }
}
