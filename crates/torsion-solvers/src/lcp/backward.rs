//! The implicit derivative of the boxed-LCP solution at its active set (spec 004 §3.6, Nimble's formulas in
//! LCP form): with the classes fixed, λ = E λ_S + 0, Ã_SS λ_S = −b_S, Ã_SS = (A E)_{S,:} and bound frictions
//! λ_h = ±μ_h λ_nidx(h). Differentiating,
//!   dλ_S = −Ã_SS⁻¹ (db_S + (dA λ)_S + (A δ)_S),   δ_h = ±dμ_h λ_nidx(h) (N_h +, N_l −; 0 elsewhere),
//!   dλ = E dλ_S + δ,   dw = dA λ + A dλ + db.
//! The JVP and its adjoint (VJP) w.r.t. A, b and the per-row μ (the findex bounds). Piecewise: valid where the
//! classes are strict (docs/gradients.md). The classes are the answer's with its degenerate rows joined to S
//! (`active_set::derivative_classes`, D11b: an unloaded touching normal λ_n = w_n = 0 and its non-sliding frictions
//! stay at w = 0); a singular Ã_SS (a redundant support) gives the minimum-norm branch (D11, flagged), whose dλ is
//! one of a family but whose dw, hence dv⁺, is the unique one.
use super::active_set::{
    bound_coupling, derivative_classes, derivative_classes_into, expand_into, reduced_matrix, s_set, solve,
    ActiveSystem, Class,
};
use super::dense::zeroed;
use super::problem::{BoxedLcp, LcpError, Row};
use nalgebra::{DMatrix, DVector};

/// A tangent of the problem: dA, db, and dμ per row (read on friction rows only).
pub struct LcpTangent<'a> {
    pub da: &'a DMatrix<f64>,
    pub db: &'a DVector<f64>,
    pub dmu: &'a [f64],
}

/// Cotangents of the problem.
pub struct LcpCotangent {
    pub ga: DMatrix<f64>,
    pub gb: DVector<f64>,
    /// per row (0 on normal rows); a contact's μ is the sum over its two friction rows
    pub gmu: Vec<f64>,
    /// Ã_SS was singular (least-squares branch)
    pub singular: bool,
}

fn check_sizes(lcp: &BoxedLcp, lambda: &DVector<f64>, classes: &[Class]) -> Result<(), LcpError> {
    if lambda.len() != lcp.len() || classes.len() != lcp.len() || classes.contains(&Class::Unset) {
        return Err(LcpError::BadInput {
            field: "lambda / classes".into(),
            problem: "sizes differ from the LCP's, or a row is unclassified (a failed solve)".into(),
        });
    }
    Ok(())
}

fn factor(lcp: &BoxedLcp, classes: &[Class]) -> (Vec<usize>, Vec<usize>, DMatrix<f64>) {
    let (s, col) = s_set(classes);
    let at = reduced_matrix(lcp, classes, &s, &col);
    (s, col, at)
}

/// JVP: (dλ, dw, singular) along `t`, at the solution λ with its classes.
pub fn lcp_jvp(
    lcp: &BoxedLcp,
    lambda: &DVector<f64>,
    classes: &[Class],
    t: &LcpTangent,
) -> Result<(DVector<f64>, DVector<f64>, bool), LcpError> {
    let mut f = JvpFactor::default();
    f.factor(lcp, lambda, classes)?;
    f.jvp(lcp, lambda, t);
    let dl = f.dl;
    let dw = t.da * lambda + &lcp.a * &dl + t.db;
    Ok((dl, dw, f.singular))
}

/// [`lcp_jvp`]'s dλ factorised once at a solution for any number of tangents (the stepper's directions): the
/// derivative classes, S, Ã_SS and its factorisation (`dense::DenseSolver`), and a tangent's buffers, reused
/// from call to call (no heap allocation once they have held a system as large; a singular Ã_SS takes the complete
/// orthogonal decomposition, `DenseSolver::factor`, D11).
#[derive(Clone, Debug, Default)]
pub struct JvpFactor {
    classes: Vec<Class>,
    w: DVector<f64>,
    sys: ActiveSystem,
    /// δ, dA λ, A δ of a tangent
    delta: DVector<f64>,
    da_l: DVector<f64>,
    a_delta: DVector<f64>,
    /// dλ of the last tangent
    pub dl: DVector<f64>,
    /// Ã_SS is singular (the minimum-norm branch, D11)
    pub singular: bool,
}

impl JvpFactor {
    /// The derivative classes and Ã_SS's factorisation at the solution λ with its classes.
    pub fn factor(&mut self, lcp: &BoxedLcp, lambda: &DVector<f64>, classes: &[Class]) -> Result<(), LcpError> {
        check_sizes(lcp, lambda, classes)?;
        lcp.w_into(lambda, &mut self.w);
        derivative_classes_into(lcp, lambda, &self.w, classes, &mut self.classes);
        self.sys.assemble(lcp, &self.classes);
        self.singular = self.sys.dense.factor(&self.sys.at);
        Ok(())
    }

    /// dλ along `t` into `self.dl` (at the λ given to [`JvpFactor::factor`]).
    pub fn jvp(&mut self, lcp: &BoxedLcp, lambda: &DVector<f64>, t: &LcpTangent) {
        let m = lcp.len();
        zeroed(&mut self.delta, m);
        for h in 0..m {
            if let Some((n, smu)) = bound_coupling(lcp, &self.classes, h) {
                self.delta[h] = smu.signum() * t.dmu[h] * lambda[n];
            }
        }
        // r = db + dA λ + A δ; Ã_SS dλ_S = −r_S
        zeroed(&mut self.da_l, m);
        t.da.mul_to(lambda, &mut self.da_l);
        zeroed(&mut self.a_delta, m);
        lcp.a.mul_to(&self.delta, &mut self.a_delta);
        let sys = &mut self.sys;
        for (c, &i) in sys.s.iter().enumerate() {
            sys.rhs[c] = -((t.db[i] + self.da_l[i]) + self.a_delta[i]);
        }
        sys.dense.solve_factored(&sys.rhs);
        expand_into(lcp, &self.classes, &sys.col, &sys.dense.x, None, &mut self.dl);
        self.dl += &self.delta;
    }
}

/// VJP: given ḡ_λ, ḡ_w, the cotangents of A, b, μ (the adjoint of `lcp_jvp`).
pub fn lcp_vjp(
    lcp: &BoxedLcp,
    lambda: &DVector<f64>,
    classes: &[Class],
    g_lambda: &DVector<f64>,
    g_w: &DVector<f64>,
) -> Result<LcpCotangent, LcpError> {
    check_sizes(lcp, lambda, classes)?;
    let classes = &derivative_classes(lcp, lambda, &lcp.w(lambda), classes);
    let m = lcp.len();
    let (s, col, at) = factor(lcp, classes);
    // dw = dA λ + A dλ + db
    let mut ga = g_w * lambda.transpose();
    let mut gb = g_w.clone();
    let gl = g_lambda + lcp.a.transpose() * g_w;
    // dλ = E dλ_S + δ ⇒ ḡ_S = Eᵀ ḡ_λ
    let mut gs = DVector::zeros(s.len());
    for j in 0..m {
        if col[j] != usize::MAX {
            gs[col[j]] += gl[j];
        } else if let Some((n, smu)) = bound_coupling(lcp, classes, j) {
            if col[n] != usize::MAX {
                gs[col[n]] += smu * gl[j];
            }
        }
    }
    // dλ_S = −Ã⁻¹ r ⇒ r̄ = −Ã⁻ᵀ ḡ_S (on S)
    let rhs = -gs;
    let sol = solve(&at.transpose(), &rhs)
        .ok_or_else(|| LcpError::Unsupported { solver: "lcp_vjp", problem: "the active-set solve failed".into() })?;
    let mut rbar = DVector::zeros(m);
    for (c, &i) in s.iter().enumerate() {
        rbar[i] = sol.x[c];
    }
    // r = db + dA λ + A δ
    gb += &rbar;
    ga += &rbar * lambda.transpose();
    let gdelta = lcp.a.transpose() * &rbar + &gl;
    let mut gmu = vec![0.0; m];
    for h in 0..m {
        if let Some((n, smu)) = bound_coupling(lcp, classes, h) {
            gmu[h] = smu.signum() * lambda[n] * gdelta[h];
        }
    }
    debug_assert!(lcp.rows.iter().zip(&gmu).all(|(r, g)| *r != Row::Normal || *g == 0.0));
    Ok(LcpCotangent { ga, gb, gmu, singular: sol.singular })
}

#[cfg(test)]
mod tests {
    use super::super::dantzig_jade::{solve_jade, JadeOptions};
    use super::super::problem::BoxedLcp;
    use super::super::random::{random_contact_lcp, Rng};
    use super::*;

    /// The LCP with μ of every friction row shifted by `dmu[row]`.
    fn with(lcp: &BoxedLcp, da: &DMatrix<f64>, db: &DVector<f64>, dmu: &[f64], h: f64) -> BoxedLcp {
        let rows = lcp
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| match *r {
                Row::Friction { normal, mu } => Row::Friction { normal, mu: mu + h * dmu[i] },
                Row::Normal => Row::Normal,
            })
            .collect();
        BoxedLcp::new(&lcp.a + da * h, &lcp.b + db * h, rows).unwrap()
    }

    /// Strict classes: every clamping normal's λ, every sticking friction's slack, every separating / bound
    /// row's |w| well away from 0 (relative 1e-3), so ±h stays on one active set.
    fn strict(lcp: &BoxedLcp, l: &DVector<f64>, w: &DVector<f64>, cl: &[Class]) -> bool {
        let t = 1e-3 * lcp.scale().max(l.amax());
        (0..lcp.len()).all(|i| match (cl[i], lcp.rows[i]) {
            (Class::C, _) => l[i] > t,
            (Class::N, _) => w[i] > t,
            (Class::Cf, Row::Friction { normal, mu }) => mu * l[normal] - l[i].abs() > t,
            (Class::Nh, Row::Friction { normal, .. }) => w[i] < -t && l[normal] > t,
            (Class::Nl, Row::Friction { normal, .. }) => w[i] > t && l[normal] > t,
            _ => false,
        })
    }

    /// dλ, dw w.r.t. A (symmetric directions), b and μ against central differences of Jade's solve on random
    /// frictional LCPs with strict classes; the VJP against the JVP (⟨ḡ, J d⟩ = ⟨Jᵀ ḡ, d⟩) and a VJP column
    /// against FD.
    #[test]
    fn lcp_derivatives_match_finite_differences() {
        let o = JadeOptions::default();
        let (mut tested, mut worst, mut worst_dual): (usize, f64, f64) = (0, 0.0, 0.0);
        let mut with_bound = 0;
        let mut rng = Rng::new(7);
        for seed in 0..400u64 {
            let lcp = random_contact_lcp(1000 + seed, 1 + (seed % 3) as usize);
            let sol = solve_jade(&lcp, &o);
            if !sol.ok() || !strict(&lcp, &sol.lambda, &sol.w, &sol.classes) {
                continue;
            }
            let m = lcp.len();
            let r = DMatrix::from_fn(m, m, |_, _| rng.uniform(-1.0, 1.0));
            let da = (&r + r.transpose()) * 0.5;
            let db = DVector::from_fn(m, |_, _| rng.uniform(-1.0, 1.0));
            let dmu: Vec<f64> = (0..m).map(|_| rng.uniform(-1.0, 1.0)).collect();
            let (dl, dw, singular) =
                lcp_jvp(&lcp, &sol.lambda, &sol.classes, &LcpTangent { da: &da, db: &db, dmu: &dmu }).unwrap();
            if singular {
                continue;
            }
            let h = 1e-6;
            let (p, q) =
                (solve_jade(&with(&lcp, &da, &db, &dmu, h), &o), solve_jade(&with(&lcp, &da, &db, &dmu, -h), &o));
            assert!(p.ok() && q.ok());
            let fd_l = (&p.lambda - &q.lambda) / (2.0 * h);
            let fd_w = (&p.w - &q.w) / (2.0 * h);
            let scale = fd_l.amax().max(fd_w.amax()).max(1e-12);
            let e = (&dl - &fd_l).amax().max((&dw - &fd_w).amax()) / scale;
            worst = worst.max(e);
            assert!(e < 1e-6, "seed {seed}: JVP vs FD {e:e}\n an {dl}\n fd {fd_l}");
            // VJP: ⟨ḡ_λ, dλ⟩ + ⟨ḡ_w, dw⟩ = ⟨Ā, dA⟩ + ⟨b̄, db⟩ + ⟨μ̄, dμ⟩
            let gl = DVector::from_fn(m, |_, _| rng.uniform(-1.0, 1.0));
            let gw = DVector::from_fn(m, |_, _| rng.uniform(-1.0, 1.0));
            let ct = lcp_vjp(&lcp, &sol.lambda, &sol.classes, &gl, &gw).unwrap();
            let lhs = gl.dot(&dl) + gw.dot(&dw);
            let rhs = ct.ga.dot(&da) + ct.gb.dot(&db) + ct.gmu.iter().zip(&dmu).map(|(a, b)| a * b).sum::<f64>();
            let ed = (lhs - rhs).abs() / lhs.abs().max(1e-12);
            worst_dual = worst_dual.max(ed);
            assert!(ed < 1e-10, "seed {seed}: VJP vs JVP {ed:e}");
            // the μ cotangent alone against FD (the findex path)
            let zero_a = DMatrix::zeros(m, m);
            let zero_b = DVector::zeros(m);
            let (p, q) = (
                solve_jade(&with(&lcp, &zero_a, &zero_b, &dmu, h), &o),
                solve_jade(&with(&lcp, &zero_a, &zero_b, &dmu, -h), &o),
            );
            let fd = (gl.dot(&p.lambda) + gw.dot(&p.w) - gl.dot(&q.lambda) - gw.dot(&q.w)) / (2.0 * h);
            let an: f64 = ct.gmu.iter().zip(&dmu).map(|(a, b)| a * b).sum();
            if sol.classes.iter().any(|c| matches!(c, Class::Nh | Class::Nl)) {
                with_bound += 1;
                assert!((an - fd).abs() <= 1e-6 * fd.abs().max(1e-9), "seed {seed}: μ̄ {an} vs FD {fd}");
            }
            tested += 1;
        }
        eprintln!("LCP derivative: {tested} problems ({with_bound} with sliding frictions), JVP vs FD worst {worst:.1e}, VJP–JVP {worst_dual:.1e}");
        assert!(tested >= 30 && with_bound >= 10, "{tested} / {with_bound} strict problems");
    }
}
