//! The inverse-dynamics regressor residual for arms (issue 14 item 4a). Joint torques are linear in
//! p = (π_b per moving body, viscous damping d_i, dry friction f_i per DoF):
//! ```text
//! τ_t = Y(q_t, v_t, v̇_t) π + diag(v_t) d + diag(tanh(v_t / v_s)) f        (regressor.rs: Y = ∂RNEA/∂π)
//! ```
//! with q, v, τ filtered and v̇ differentiated as [`super::filter`] documents (v_s = [`ArmOptions::coulomb_vs`]
//! smooths the sign of v; MuJoCo's frictionloss is the same bounded force with a soft constraint). The fit runs
//! on unconstrained z: a body's 10 entries are free as they are (π = z) or through the log-Cholesky map
//! (π = π(θ), always physically consistent; log_cholesky.rs), scalars through [`Param`] (log / softplus /
//! sigmoid / identity), each with optional box bounds and a Gaussian prior on the physical value.
//!
//! Because r = A p(z) − τ with A the stacked rows [Y, diag v, diag tanh(v/v_s)], the data enter once: the Gram
//! G = AᵀA, b = Aᵀτ, c = τᵀτ, accumulated in blocks (one pass over the samples). Then ½‖r‖² =
//! ½(pᵀGp − 2pᵀb + c), its gradient Pᵀ(Gp − b) and Gauss–Newton matrix PᵀGP with P = ∂p/∂z exact (dp/dz of the
//! scalar maps, ∂π/∂θ of the log-Cholesky map by duals): an iteration costs O(n_p³), not O(samples). The error
//! itself goes through a square-root form of G ([`Gram`]), which does not cancel digits.
use super::filter::{derivative, edge_samples, lowpass_zero_phase};
use super::{lm_with_path, Estimates, LmOptions, Param};
use nalgebra::{DMatrix, DVector};
use std::time::Instant;
use thiserror::Error;
use torsion_dynamics::log_cholesky::{params_from_theta, params_jacobian, pseudo_inertia, theta_from_params};
use torsion_dynamics::regressor::{inertial_parameters, joint_torque_regressor_into, INERTIAL_NAMES, N_INERTIAL};
use torsion_dynamics::{DynData, DynError, DynModel};
use torsion_model::Model;

#[derive(Debug, Error)]
pub enum SysidError {
    #[error("sysid: recording '{rec}': {msg}")]
    Recording { rec: String, msg: String },
    #[error("sysid: parameter '{name}': {msg}")]
    Param { name: String, msg: String },
    #[error("sysid: {0}")]
    Dynamics(#[from] DynError),
    #[error("sysid: {0}")]
    Problem(String),
}

/// (z₀, lower, upper) of [`ArmProblem::z0`].
pub type Start = (Vec<f64>, Vec<f64>, Vec<f64>);
/// (gradient, row-major Gauss–Newton matrix) of [`ArmProblem::objective`].
pub type GradHess = (Vec<f64>, Vec<f64>);

/// One recorded trajectory: rows per sample (q: nq, v: nv when measured, τ: nv), sampled every `dt` s.
/// Recordings of one problem may differ in length and rate.
#[derive(Clone, Debug)]
pub struct Recording {
    pub name: String,
    pub dt: f64,
    pub q: Vec<Vec<f64>>,
    /// measured joint velocities; None: the derivative of the filtered q
    pub v: Option<Vec<Vec<f64>>>,
    pub tau: Vec<Vec<f64>>,
}

/// How a body's 10 inertial parameters enter the fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inertial {
    /// kept at the start value
    Fixed,
    /// π itself (the linear least-squares parameters; may leave the physically consistent set)
    Linear,
    /// π = π(θ) by the log-Cholesky map (always physically consistent)
    LogCholesky,
}

/// One scalar parameter (a damping or dry-friction coefficient): start value, map, bounds on the physical value,
/// Gaussian prior (mean, σ) on the physical value, or fixed.
#[derive(Clone, Debug)]
pub struct ScalarSpec {
    pub value: f64,
    pub transform: Param,
    pub lower: f64,
    pub upper: f64,
    pub prior: Option<(f64, f64)>,
    pub fixed: bool,
}

impl ScalarSpec {
    pub fn free(value: f64, transform: Param) -> Self {
        ScalarSpec { value, transform, lower: f64::NEG_INFINITY, upper: f64::INFINITY, prior: None, fixed: false }
    }

    /// (z, lower, upper) of the start value on the map's scale; an error names `name` when the start lies
    /// outside the map's range or the bounds.
    pub fn start(&self, name: &str) -> Result<(f64, f64, f64), SysidError> {
        let zc = self.transform.coord(self.value);
        if !zc.is_finite() || self.value < self.lower || self.value > self.upper {
            return Err(SysidError::Param {
                name: name.to_string(),
                msg: format!(
                    "start value {} outside the range of {:?} or the bounds [{}, {}]",
                    self.value, self.transform, self.lower, self.upper
                ),
            });
        }
        let bound = |v: f64| if v.is_finite() { self.transform.coord(v) } else { v };
        // monotone increasing maps: bounds on p are bounds on z (a bound outside the map's range is none)
        let (l, h) = (bound(self.lower), bound(self.upper));
        Ok((zc, if l.is_nan() { f64::NEG_INFINITY } else { l }, if h.is_nan() { f64::INFINITY } else { h }))
    }
}

#[derive(Clone, Debug)]
pub struct ArmOptions {
    /// low-pass cutoff of [`super::filter`], Hz
    pub cutoff_hz: f64,
    /// use every `stride`-th sample after filtering
    pub stride: usize,
    /// velocity scale of the smoothed sign in the dry-friction column, rad/s
    pub coulomb_vs: f64,
    /// with log-Cholesky bodies: first fit the same problem with those bodies linear (one Gauss–Newton solve of
    /// a linear least-squares problem), then start the log-Cholesky fit from each body's linear estimate, moved
    /// to the nearest physically consistent π ([`nearest_consistent`]) where it is not. The log-Cholesky chart alone crawls from far starts
    /// (sysid-arm: 100 LM iterations to a 5 N·m residual where the linear optimum has 0.07).
    pub linear_warm_start: bool,
    /// low-pass τ as well (default off: τ enters linearly, so its white noise biases nothing, while a filtered
    /// dry-friction jump would no longer match tanh(v / v_s) of the filtered v)
    pub filter_tau: bool,
}

impl Default for ArmOptions {
    fn default() -> Self {
        ArmOptions { cutoff_hz: 10.0, stride: 1, coulomb_vs: 0.02, linear_warm_start: true, filter_tau: false }
    }
}

/// A recording after the filter: the kept samples (edges dropped, strided).
#[derive(Clone, Debug)]
pub struct Prepared {
    pub name: String,
    pub q: Vec<Vec<f64>>,
    pub v: Vec<Vec<f64>>,
    pub a: Vec<Vec<f64>>,
    pub tau: Vec<Vec<f64>>,
}

/// G = AᵀA, b = Aᵀτ, c = τᵀτ over `rows` stacked torque rows; `a` keeps A itself when asked (tests, plots).
/// [`Gram::finish`] adds a square-root form for a cancellation-free error: with S = diag(√G_jj) and
/// S⁻¹GS⁻¹ = VΛVᵀ, R = Λ^½VᵀS (rows with λ ≤ 1e-13 λ_max, directions A does not see, dropped),
/// d = Λ^-½VᵀS⁻¹b, ‖A p − τ‖² = ‖R p − d‖² + floor, floor = c − ‖d‖² (the part of τ no p explains). The
/// naive pᵀGp − 2pᵀb + c cancels every digit of a small residual far from the data's scale.
#[derive(Clone, Debug)]
pub struct Gram {
    pub g: DMatrix<f64>,
    pub b: DVector<f64>,
    pub c: f64,
    pub rows: usize,
    pub a: Option<(DMatrix<f64>, DVector<f64>)>,
    pub r: DMatrix<f64>,
    pub d: DVector<f64>,
    pub floor: f64,
}

impl Gram {
    /// The Gram of several shards' sums (G, b, c, rows each: the same problem over other recordings, e.g. on other
    /// processes): G = Σ G_s, b = Σ b_s, c = Σ c_s, then the square-root form. Equals [`ArmProblem::gram`] over
    /// all the shards' recordings up to the summation order's round-off.
    pub fn from_sums<'a>(shards: impl IntoIterator<Item = (&'a DMatrix<f64>, &'a DVector<f64>, f64, usize)>) -> Self {
        let mut gram: Option<Gram> = None;
        for (g, b, c, rows) in shards {
            match gram.as_mut() {
                None => gram = Some(Gram::from_parts(g.clone(), b.clone(), c, rows)),
                Some(acc) => {
                    acc.g += g;
                    acc.b += b;
                    acc.c += c;
                    acc.rows += rows;
                }
            }
        }
        let mut gram = gram.unwrap_or_else(|| Gram::from_parts(DMatrix::zeros(0, 0), DVector::zeros(0), 0.0, 0));
        gram.finish();
        gram
    }
    fn from_parts(g: DMatrix<f64>, b: DVector<f64>, c: f64, rows: usize) -> Self {
        Gram { g, b, c, rows, a: None, r: DMatrix::zeros(0, 0), d: DVector::zeros(0), floor: 0.0 }
    }
    fn finish(&mut self) {
        let n = self.g.nrows();
        let sc: Vec<f64> = (0..n).map(|j| if self.g[(j, j)] > 0.0 { self.g[(j, j)].sqrt() } else { 1.0 }).collect();
        let gs = DMatrix::from_fn(n, n, |i, j| self.g[(i, j)] / (sc[i] * sc[j]));
        let eig = gs.symmetric_eigen();
        let lmax = eig.eigenvalues.iter().fold(0.0f64, |a, &b| a.max(b));
        self.r = DMatrix::zeros(n, n);
        self.d = DVector::zeros(n);
        for i in 0..n {
            let l = eig.eigenvalues[i];
            if l <= 1e-13 * lmax || l <= 0.0 {
                continue;
            }
            let vb: f64 = (0..n).map(|j| eig.eigenvectors[(j, i)] * self.b[j] / sc[j]).sum();
            self.d[i] = vb / l.sqrt();
            for j in 0..n {
                self.r[(i, j)] = l.sqrt() * eig.eigenvectors[(j, i)] * sc[j];
            }
        }
        self.floor = (self.c - self.d.norm_squared()).max(0.0);
    }
    /// R p − d
    pub fn reduced_residual(&self, p: &[f64]) -> DVector<f64> {
        &self.r * DVector::from_column_slice(p) - &self.d
    }
    /// ‖A p − τ‖²
    pub fn sq_error(&self, p: &[f64]) -> f64 {
        self.reduced_residual(p).norm_squared() + self.floor
    }
    /// root-mean-square torque error per row
    pub fn rmse(&self, p: &[f64]) -> f64 {
        (self.sq_error(p) / self.rows.max(1) as f64).sqrt()
    }
}

/// The identification problem: model, named parameters, recordings, options.
#[derive(Clone)]
pub struct ArmProblem {
    dm: DynModel<f64>,
    /// moving bodies (children of joints), in joint order
    pub bodies: Vec<usize>,
    pub body_names: Vec<String>,
    pub dof_names: Vec<String>,
    pub inertial: Vec<Inertial>,
    /// the start value of each moving body's π
    pub pi0: Vec<[f64; N_INERTIAL]>,
    /// Gaussian prior (mean π, σ per entry) per body
    pub pi_prior: Vec<Option<([f64; N_INERTIAL], [f64; N_INERTIAL])>>,
    pub damping: Vec<ScalarSpec>,
    pub coulomb: Vec<ScalarSpec>,
    pub recordings: Vec<Recording>,
    pub options: ArmOptions,
}

/// The result of [`ArmProblem::fit`]: the estimates (names `body[B].m` …, `damping[J]`, `coulomb[J]`; standard
/// errors from σ² (JᵀJ + prior)⁺) and the regressor fit's own figures.
#[derive(Clone, Debug)]
pub struct SysidFit {
    pub estimates: Estimates,
    /// RMS torque residual on the fitted data, N·m
    pub rmse: f64,
    pub gram: Gram,
    /// seconds spent filtering + stacking, and in the solver
    pub time_stack_s: f64,
    pub time_solve_s: f64,
    /// log-Cholesky bodies started from their linear estimate (`ArmOptions::linear_warm_start`)
    pub warm_started_bodies: usize,
}

impl std::ops::Deref for SysidFit {
    type Target = Estimates;
    fn deref(&self) -> &Estimates {
        &self.estimates
    }
}

impl ArmProblem {
    /// Every moving body's π free (`Linear`) from the model's values, damping and dry friction free from 0
    /// (identity maps), no recordings. Needs nq = nv (hinge and slider joints).
    pub fn new(model: &Model) -> Result<Self, SysidError> {
        if model.nq() != model.nv() {
            return Err(SysidError::Problem(format!(
                "the regressor residual needs nq = nv (hinge/slider joints); model '{}' has nq {} nv {}",
                model.name,
                model.nq(),
                model.nv()
            )));
        }
        let dm = DynModel::<f64>::from_model(model)?;
        let pi = inertial_parameters(&dm);
        let bodies: Vec<usize> = dm.child.clone();
        let pi0 = bodies.iter().map(|&b| std::array::from_fn(|i| pi[N_INERTIAL * b + i])).collect();
        let mut dof_names = vec![];
        for j in model.dof_joints() {
            let n = model.joint_type[j].dof();
            for k in 0..n {
                let jn = &model.joint_name[j];
                dof_names.push(if n == 1 { jn.clone() } else { format!("{jn}.{k}") });
            }
        }
        let nv = model.nv();
        Ok(ArmProblem {
            body_names: bodies.iter().map(|&b| model.body_name[b].clone()).collect(),
            inertial: vec![Inertial::Linear; bodies.len()],
            pi_prior: vec![None; bodies.len()],
            pi0,
            bodies,
            dof_names,
            damping: vec![ScalarSpec::free(0.0, Param::Identity); nv],
            coulomb: vec![ScalarSpec::free(0.0, Param::Identity); nv],
            recordings: vec![],
            options: ArmOptions::default(),
            dm,
        })
    }

    pub fn nv(&self) -> usize {
        self.dm.nv
    }
    /// length of p
    pub fn np(&self) -> usize {
        N_INERTIAL * self.bodies.len() + 2 * self.dm.nv
    }
    fn off_d(&self) -> usize {
        N_INERTIAL * self.bodies.len()
    }

    pub fn names(&self) -> Vec<String> {
        let mut n = vec![];
        for b in &self.body_names {
            n.extend(INERTIAL_NAMES.iter().map(|e| format!("body[{b}].{e}")));
        }
        n.extend(self.dof_names.iter().map(|j| format!("damping[{j}]")));
        n.extend(self.dof_names.iter().map(|j| format!("coulomb[{j}]")));
        n
    }

    /// p at the start values
    pub fn p0(&self) -> Vec<f64> {
        let mut p: Vec<f64> = self.pi0.iter().flatten().copied().collect();
        p.extend(self.damping.iter().map(|s| s.value));
        p.extend(self.coulomb.iter().map(|s| s.value));
        p
    }

    fn scalars(&self) -> impl Iterator<Item = &ScalarSpec> {
        self.damping.iter().chain(&self.coulomb)
    }

    /// The start z and its box bounds; an error names a start value outside its map's range or bounds.
    pub fn z0(&self) -> Result<Start, SysidError> {
        let names = self.names();
        let (mut z, mut lo, mut hi) = (vec![], vec![], vec![]);
        for (k, mode) in self.inertial.iter().enumerate() {
            match mode {
                Inertial::Fixed => {}
                Inertial::Linear => z.extend(self.pi0[k]),
                Inertial::LogCholesky => z.extend(
                    theta_from_params(&self.pi0[k])
                        .map_err(|msg| SysidError::Param { name: format!("body[{}]", self.body_names[k]), msg })?,
                ),
            }
            if *mode != Inertial::Fixed {
                lo.extend([f64::NEG_INFINITY; N_INERTIAL]);
                hi.extend([f64::INFINITY; N_INERTIAL]);
            }
        }
        for (i, s) in self.scalars().enumerate() {
            if s.fixed {
                continue;
            }
            let (zc, l, h) = s.start(&names[self.off_d() + i])?;
            z.push(zc);
            lo.push(l);
            hi.push(h);
        }
        Ok((z, lo, hi))
    }

    /// p(z) and P = ∂p/∂z (np × nz).
    pub fn p_of_z(&self, z: &[f64]) -> (Vec<f64>, DMatrix<f64>) {
        let mut p = self.p0();
        let mut jac = DMatrix::zeros(self.np(), z.len());
        let mut c = 0;
        for (k, mode) in self.inertial.iter().enumerate() {
            let r0 = N_INERTIAL * k;
            match mode {
                Inertial::Fixed => continue,
                Inertial::Linear => {
                    for i in 0..N_INERTIAL {
                        p[r0 + i] = z[c + i];
                        jac[(r0 + i, c + i)] = 1.0;
                    }
                }
                Inertial::LogCholesky => {
                    let th: [f64; N_INERTIAL] = std::array::from_fn(|i| z[c + i]);
                    p[r0..r0 + N_INERTIAL].copy_from_slice(&params_from_theta(&th));
                    let pj = params_jacobian(&th);
                    jac.view_mut((r0, c), (N_INERTIAL, N_INERTIAL)).copy_from(&pj);
                }
            }
            c += N_INERTIAL;
        }
        let off = self.off_d();
        for (i, s) in self.scalars().enumerate() {
            if s.fixed {
                continue;
            }
            p[off + i] = s.transform.value(z[c]);
            jac[(off + i, c)] = s.transform.deriv(z[c]);
            c += 1;
        }
        (p, jac)
    }

    /// Filter a recording and keep its inner samples ([`super::filter`]).
    pub fn prepare(&self, rec: &Recording) -> Result<Prepared, SysidError> {
        let (nq, nv, o) = (self.dm.nq, self.dm.nv, &self.options);
        let bad = |msg: String| SysidError::Recording { rec: rec.name.clone(), msg };
        let n = rec.q.len();
        if rec.dt.is_nan() || rec.dt <= 0.0 {
            return Err(bad(format!("dt {} must be > 0", rec.dt)));
        }
        if rec.tau.len() != n || rec.v.as_ref().is_some_and(|v| v.len() != n) {
            return Err(bad(format!("q has {n} rows but tau/v differ in length")));
        }
        let width = |rows: &[Vec<f64>], w: usize, what: &str| match rows.iter().position(|r| r.len() != w) {
            Some(i) => Err(bad(format!("{what} row {i} has {} entries, expected {w}", rows[i].len()))),
            None => Ok(()),
        };
        width(&rec.q, nq, "q")?;
        width(&rec.tau, nv, "tau")?;
        if let Some(v) = &rec.v {
            width(v, nv, "v")?;
        }
        let e = edge_samples(rec.dt, o.cutoff_hz);
        if n < 2 * e + 2 {
            return Err(bad(format!("{n} samples: fewer than the {} the filter's edges need", 2 * e + 2)));
        }
        if let Some(i) = (0..n).find(|&i| {
            rec.q[i].iter().chain(&rec.tau[i]).chain(rec.v.iter().flat_map(|v| &v[i])).any(|x| !x.is_finite())
        }) {
            return Err(bad(format!("row {i} has a non-finite value")));
        }
        let column = |rows: &[Vec<f64>], j: usize| -> Vec<f64> {
            let mut c: Vec<f64> = rows.iter().map(|r| r[j]).collect();
            lowpass_zero_phase(&mut c, rec.dt, o.cutoff_hz);
            c
        };
        let qf: Vec<Vec<f64>> = (0..nq).map(|j| column(&rec.q, j)).collect();
        let vf: Vec<Vec<f64>> = match &rec.v {
            Some(v) => (0..nv).map(|j| column(v, j)).collect(),
            None => qf.iter().map(|c| derivative(c, rec.dt)).collect(),
        };
        let af: Vec<Vec<f64>> = vf.iter().map(|c| derivative(c, rec.dt)).collect();
        let tf: Vec<Vec<f64>> = if o.filter_tau {
            (0..nv).map(|j| column(&rec.tau, j)).collect()
        } else {
            (0..nv).map(|j| rec.tau.iter().map(|r| r[j]).collect()).collect()
        };
        let keep: Vec<usize> = (e..n - e).step_by(o.stride.max(1)).collect();
        let rows = |cols: &[Vec<f64>]| keep.iter().map(|&t| cols.iter().map(|c| c[t]).collect()).collect();
        Ok(Prepared { name: rec.name.clone(), q: rows(&qf), v: rows(&vf), a: rows(&af), tau: rows(&tf) })
    }

    /// The rows of A for one sample (nv × np) into `out`, with `y` and `d` as scratch.
    fn sample_rows(
        &self,
        q: &[f64],
        v: &[f64],
        a: &[f64],
        d: &mut DynData<f64>,
        y: &mut DMatrix<f64>,
        mut out: nalgebra::DMatrixViewMut<f64>,
    ) -> Result<(), SysidError> {
        joint_torque_regressor_into(&self.dm, q, v, a, d, y)?;
        let nv = self.dm.nv;
        for (k, &b) in self.bodies.iter().enumerate() {
            out.columns_mut(N_INERTIAL * k, N_INERTIAL).copy_from(&y.columns(N_INERTIAL * b, N_INERTIAL));
        }
        let off = self.off_d();
        out.columns_mut(off, 2 * nv).fill(0.0);
        for i in 0..nv {
            out[(i, off + i)] = v[i];
            out[(i, off + nv + i)] = (v[i] / self.options.coulomb_vs).tanh();
        }
        Ok(())
    }

    /// Accumulate the Gram of prepared recordings (blocks of 256 samples; `keep_rows` also stores A and τ).
    pub fn gram(&self, data: &[Prepared], keep_rows: bool) -> Result<Gram, SysidError> {
        let (nv, np) = (self.dm.nv, self.np());
        let mut d = DynData::new(&self.dm);
        let mut y = DMatrix::zeros(nv, N_INERTIAL * self.dm.nb);
        const BLOCK: usize = 256;
        let mut blk = DMatrix::zeros(BLOCK * nv, np);
        let mut tb = DVector::zeros(BLOCK * nv);
        let mut gram = Gram::from_parts(DMatrix::zeros(np, np), DVector::zeros(np), 0.0, 0);
        let mut kept: (Vec<f64>, Vec<f64>) = (vec![], vec![]);
        for p in data {
            for start in (0..p.q.len()).step_by(BLOCK) {
                let n = BLOCK.min(p.q.len() - start);
                for s in 0..n {
                    let t = start + s;
                    self.sample_rows(&p.q[t], &p.v[t], &p.a[t], &mut d, &mut y, blk.rows_mut(s * nv, nv))?;
                    tb.rows_mut(s * nv, nv).copy_from_slice(&p.tau[t]);
                }
                let (ab, tbv) = (blk.rows(0, n * nv), tb.rows(0, n * nv));
                gram.g.gemm_tr(1.0, &ab, &ab, 1.0);
                gram.b.gemv_tr(1.0, &ab, &tbv, 1.0);
                gram.c += tbv.norm_squared();
                gram.rows += n * nv;
                if keep_rows {
                    for r in 0..n * nv {
                        kept.0.extend(ab.row(r).iter());
                        kept.1.push(tbv[r]);
                    }
                }
            }
        }
        if keep_rows {
            gram.a = Some((DMatrix::from_row_slice(gram.rows, np, &kept.0), DVector::from_vec(kept.1)));
        }
        gram.finish();
        Ok(gram)
    }

    /// Prior residuals (p_k − μ)/σ on physical entries, as (index into p, μ, σ).
    fn priors(&self) -> Vec<(usize, f64, f64)> {
        let mut out = vec![];
        for (k, pr) in self.pi_prior.iter().enumerate() {
            if let (Some((mu, sd)), false) = (pr, self.inertial[k] == Inertial::Fixed) {
                out.extend((0..N_INERTIAL).map(|i| (N_INERTIAL * k + i, mu[i], sd[i])));
            }
        }
        let off = self.off_d();
        out.extend(
            self.scalars()
                .enumerate()
                .filter_map(|(i, s)| s.prior.filter(|_| !s.fixed).map(|(m, sd)| (off + i, m, sd))),
        );
        out
    }

    /// ½‖r(z)‖² including the prior, and (on request) its gradient Pᵀ(Rᵀ(Rp − d) + W(p − μ)) and Gauss–Newton
    /// matrix Pᵀ(RᵀR + W)P (RᵀR = G but for the directions A does not see; W = diag(1/σ²) of the priors).
    pub fn objective(&self, gram: &Gram, z: &[f64], want: bool) -> (f64, Option<GradHess>) {
        let (p, pj) = self.p_of_z(z);
        let priors = self.priors();
        let mut cost = 0.5 * gram.sq_error(&p);
        for &(k, mu, sd) in &priors {
            cost += 0.5 * ((p[k] - mu) / sd).powi(2);
        }
        if !want {
            return (cost, None);
        }
        let mut gp = gram.r.tr_mul(&gram.reduced_residual(&p));
        let mut w = gram.r.tr_mul(&gram.r);
        for &(k, mu, sd) in &priors {
            gp[k] += (p[k] - mu) / (sd * sd);
            w[(k, k)] += 1.0 / (sd * sd);
        }
        let grad = pj.tr_mul(&gp);
        let h = pj.tr_mul(&(&w * &pj));
        // row-major n × n (symmetric)
        (cost, Some((grad.as_slice().to_vec(), h.as_slice().to_vec())))
    }

    /// The explicit residual r(z) = A p(z) − τ (then the prior rows) and its Jacobian [A P; W^½ P]: for tests and
    /// small problems (needs the Gram built with `keep_rows`).
    pub fn residual(&self, gram: &Gram, z: &[f64]) -> Option<(DVector<f64>, DMatrix<f64>)> {
        let (a, tau) = gram.a.as_ref()?;
        let (p, pj) = self.p_of_z(z);
        let priors = self.priors();
        let m = a.nrows();
        let mut r = DVector::zeros(m + priors.len());
        let mut j = DMatrix::zeros(m + priors.len(), z.len());
        r.rows_mut(0, m).copy_from(&(a * DVector::from_column_slice(&p) - tau));
        j.rows_mut(0, m).copy_from(&(a * &pj));
        for (i, &(k, mu, sd)) in priors.iter().enumerate() {
            r[m + i] = (p[k] - mu) / sd;
            j.row_mut(m + i).copy_from(&(pj.row(k) / sd));
        }
        Some((r, j))
    }

    /// Filter the recordings, stack the Gram, run Levenberg–Marquardt (exact P, bounds; warm-started as
    /// `ArmOptions::linear_warm_start` says), and return the estimates with standard errors. `progress`: an indicatif bar over the iterations.
    pub fn fit(&self, lm: &LmOptions, progress: bool) -> Result<SysidFit, SysidError> {
        if self.recordings.is_empty() {
            return Err(SysidError::Problem("no recordings".into()));
        }
        let t0 = Instant::now();
        let prepared = self.recordings.iter().map(|r| self.prepare(r)).collect::<Result<Vec<_>, _>>()?;
        let gram = self.gram(&prepared, false)?;
        let time_stack_s = t0.elapsed().as_secs_f64();
        let t1 = Instant::now();
        let mut fit = self.fit_gram(gram, lm, progress)?;
        fit.time_stack_s = time_stack_s;
        fit.time_solve_s = t1.elapsed().as_secs_f64();
        Ok(fit)
    }

    /// [`ArmProblem::fit`] on a Gram already built (from these or other recordings).
    pub fn fit_gram(&self, gram: Gram, lm: &LmOptions, progress: bool) -> Result<SysidFit, SysidError> {
        if self.options.linear_warm_start && self.inertial.contains(&Inertial::LogCholesky) {
            let mut lin = ArmProblem { recordings: vec![], ..self.clone() };
            lin.options.linear_warm_start = false;
            lin.inertial =
                self.inertial.iter().map(|m| if *m == Inertial::LogCholesky { Inertial::Linear } else { *m }).collect();
            let first = lin.fit_gram(gram.clone(), lm, false)?;
            let mut warm = lin;
            warm.inertial = self.inertial.clone();
            let mut warm_started_bodies = 0;
            for k in 0..self.bodies.len() {
                let pk: [f64; N_INERTIAL] = std::array::from_fn(|i| first.p[N_INERTIAL * k + i]);
                if self.inertial[k] != Inertial::LogCholesky {
                    continue;
                }
                if let Some(pc) = nearest_consistent(&pk) {
                    warm.pi0[k] = pc;
                    warm_started_bodies += 1;
                }
            }
            let off = self.off_d();
            for (i, s) in warm.damping.iter_mut().chain(warm.coulomb.iter_mut()).enumerate() {
                let v = first.p[off + i];
                if !s.fixed && s.transform.coord(v).is_finite() && v >= s.lower && v <= s.upper {
                    s.value = v;
                }
            }
            let mut out = warm.fit_gram(gram, lm, progress)?;
            let (e, f) = (&mut out.estimates, first.estimates);
            e.history = f.history.into_iter().chain(std::mem::take(&mut e.history)).collect();
            e.path = f.path.into_iter().chain(std::mem::take(&mut e.path)).collect();
            e.iterations += f.iterations;
            out.warm_started_bodies = warm_started_bodies;
            return Ok(out);
        }
        let start = self.z0()?;
        let bar = progress.then(|| {
            let b = indicatif::ProgressBar::new(lm.max_iter as u64);
            b.set_style(
                indicatif::ProgressStyle::with_template("sysid {bar:30} {pos}/{len} iterations, cost {msg}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            b
        });
        let (rep, path) = lm_with_path(
            &start,
            lm,
            bar,
            |z| self.p_of_z(z).0,
            |z, want| Ok::<_, SysidError>(self.objective(&gram, z, want)),
        )?;
        let (p, pj) = self.p_of_z(&rep.x);
        // covariance: σ² (PᵀGP + prior)⁺ in z, chained to p
        let (_, gh) = self.objective(&gram, &rep.x, true);
        let nz = rep.x.len();
        let h = DMatrix::from_row_slice(nz, nz, &gh.map(|g| g.1).unwrap_or_default());
        let (cov_z, sigma2) = super::covariance(&h, gram.sq_error(&p), gram.rows);
        let cov_p = &pj * cov_z * pj.transpose();
        let std_errors = (0..self.np()).map(|i| cov_p[(i, i)].max(0.0).sqrt()).collect();
        Ok(SysidFit {
            rmse: gram.rmse(&p),
            estimates: Estimates {
                names: self.names(),
                p,
                std_errors,
                sigma2,
                history: rep.history,
                path,
                iterations: rep.iterations,
            },
            gram,
            time_stack_s: 0.0,
            time_solve_s: 0.0,
            warm_started_bodies: 0,
        })
    }

    /// τ̂ = A p at the prepared samples (rows per sample).
    pub fn predict(&self, data: &Prepared, p: &[f64]) -> Result<Vec<Vec<f64>>, SysidError> {
        let (nv, np) = (self.dm.nv, self.np());
        let mut d = DynData::new(&self.dm);
        let mut y = DMatrix::zeros(nv, N_INERTIAL * self.dm.nb);
        let mut rows = DMatrix::zeros(nv, np);
        let pv = DVector::from_column_slice(p);
        let mut out = Vec::with_capacity(data.q.len());
        for t in 0..data.q.len() {
            self.sample_rows(&data.q[t], &data.v[t], &data.a[t], &mut d, &mut y, rows.rows_mut(0, nv))?;
            out.push((&rows * &pv).as_slice().to_vec());
        }
        Ok(out)
    }
}

/// The physically consistent π nearest to `p` in the pseudo-inertia's eigenvalues: J(p) = U Λ Uᵀ with every
/// eigenvalue raised to at least 1e-6 of the largest (p itself when J is already positive definite enough);
/// None when J has no positive eigenvalue. For the warm start of [`ArmProblem::fit_gram`].
pub fn nearest_consistent(p: &[f64; N_INERTIAL]) -> Option<[f64; N_INERTIAL]> {
    if theta_from_params(p).is_ok() {
        return Some(*p);
    }
    let eig = pseudo_inertia(p).symmetric_eigen();
    let lmax = eig.eigenvalues.max();
    if lmax.is_nan() || lmax <= 0.0 {
        return None;
    }
    let l = eig.eigenvalues.map(|x| x.max(1e-6 * lmax));
    let j = eig.eigenvectors * nalgebra::Matrix4::from_diagonal(&l) * eig.eigenvectors.transpose();
    // π from J = [Σ h; hᵀ m]: I = tr(Σ) 𝟙 − Σ
    let tr = j[(0, 0)] + j[(1, 1)] + j[(2, 2)];
    let pc = [
        j[(3, 3)],
        j[(0, 3)],
        j[(1, 3)],
        j[(2, 3)],
        tr - j[(0, 0)],
        -j[(0, 1)],
        tr - j[(1, 1)],
        -j[(0, 2)],
        -j[(1, 2)],
        tr - j[(2, 2)],
    ];
    theta_from_params(&pc).ok().map(|_| pc)
}

/// The identifiable (base) combinations of p for a stacked regressor with Gram G (Gautier 1990, by QR with
/// column pivoting): A P = Q R on column-normalised A (A's R from G = VΛVᵀ, R₀ = Λ^½Vᵀ, same null space);
/// the first `rank` pivots are independent and β = p_B + K p_D.
#[derive(Clone, Debug)]
pub struct BaseParams {
    pub independent: Vec<usize>,
    pub dependent: Vec<usize>,
    /// rank × (np − rank)
    pub k: DMatrix<f64>,
}

impl BaseParams {
    /// `tol`: a pivot |R_kk| ≤ tol |R_00| (column-normalised) ends the independent set. Going through G costs
    /// half the digits (R₀ = Λ^½Vᵀ: dependent pivots sit at ~√ε ≈ 1e-8), so tol ≥ 1e-6; 1e-5 is a safe choice.
    pub fn from_gram(g: &DMatrix<f64>, tol: f64) -> Self {
        let n = g.nrows();
        let scale: Vec<f64> = (0..n).map(|j| if g[(j, j)] > 0.0 { g[(j, j)].sqrt() } else { 1.0 }).collect();
        let gs = DMatrix::from_fn(n, n, |i, j| g[(i, j)] / (scale[i] * scale[j]));
        let eig = gs.symmetric_eigen();
        let r0 = DMatrix::from_fn(n, n, |i, j| eig.eigenvalues[i].max(0.0).sqrt() * eig.eigenvectors[(j, i)]);
        let qr = r0.col_piv_qr();
        let mut order = DMatrix::from_fn(1, n, |_, j| j as f64);
        qr.p().permute_columns(&mut order);
        let order: Vec<usize> = order.iter().map(|&x| x as usize).collect();
        let r = qr.r();
        let r00 = r[(0, 0)].abs();
        let rank = (0..n).take_while(|&k| r[(k, k)].abs() > tol * r00).count();
        let (r11, r12) = (r.view((0, 0), (rank, rank)).into_owned(), r.view((0, rank), (rank, n - rank)).into_owned());
        let ks = r11.solve_upper_triangular(&r12).unwrap_or_else(|| DMatrix::zeros(rank, n - rank));
        let (independent, dependent) = (order[..rank].to_vec(), order[rank..].to_vec());
        let k = DMatrix::from_fn(rank, n - rank, |i, j| ks[(i, j)] * scale[dependent[j]] / scale[independent[i]]);
        BaseParams { independent, dependent, k }
    }

    /// β = p_B + K p_D
    pub fn apply(&self, p: &[f64]) -> Vec<f64> {
        (0..self.independent.len())
            .map(|i| {
                p[self.independent[i]]
                    + self.dependent.iter().enumerate().map(|(j, &d)| self.k[(i, j)] * p[d]).sum::<f64>()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use torsion_model::io::{load_urdf_str, UrdfOptions};

    /// A 3-link spatial arm (z, y, y hinges) with offset COMs.
    pub(crate) fn arm() -> Model {
        let link = |n: &str, m: f64, c: &str| {
            format!(
                r#"<link name="{n}"><inertial><origin xyz="{c}" rpy="0 0 0"/><mass value="{m}"/>
                <inertia ixx="0.03" ixy="0.001" ixz="0" iyy="0.04" iyz="0.002" izz="0.02"/></inertial></link>"#
            )
        };
        let joint = |n: &str, p: &str, c: &str, xyz: &str, axis: &str| {
            format!(
                r#"<joint name="{n}" type="revolute"><parent link="{p}"/><child link="{c}"/>
                <origin xyz="{xyz}" rpy="0 0 0"/><axis xyz="{axis}"/><limit effort="10" lower="-3" upper="3" velocity="5"/></joint>"#
            )
        };
        let urdf = format!(
            r#"<robot name="arm">{}{}{}{}{}{}{}</robot>"#,
            r#"<link name="base"/>"#,
            link("l1", 2.0, "0.01 0.02 0.1"),
            link("l2", 1.5, "0.2 0.01 0.0"),
            link("l3", 1.0, "0.15 -0.02 0.01"),
            joint("j1", "base", "l1", "0 0 0.1", "0 0 1"),
            joint("j2", "l1", "l2", "0 0 0.2", "0 1 0"),
            joint("j3", "l2", "l3", "0.4 0 0", "0 1 0"),
        );
        load_urdf_str(&urdf, "arm.urdf", &UrdfOptions::default()).unwrap()
    }

    /// τ = RNEA + d v + f tanh(v / v_s) along a smooth exciting motion (exact, unfiltered a).
    pub(crate) fn recording(pb: &ArmProblem, p: &[f64], n: usize, dt: f64, seed: f64) -> Recording {
        let nv = pb.nv();
        let t = |i: usize| i as f64 * dt;
        let qf = |i: usize, j: usize| {
            0.7 * (1.3 * (j as f64 + seed) + 2.1 * t(i)).sin() + 0.3 * (3.7 * t(i) + j as f64).cos()
        };
        let q: Vec<Vec<f64>> = (0..n).map(|i| (0..nv).map(|j| qf(i, j)).collect()).collect();
        let mut rec = Recording { name: "synthetic".into(), dt, q, v: None, tau: vec![] };
        // τ from the regressor rows at the exact derivatives
        let vf = |i: usize, j: usize| {
            0.7 * 2.1 * (1.3 * (j as f64 + seed) + 2.1 * t(i)).cos() - 0.3 * 3.7 * (3.7 * t(i) + j as f64).sin()
        };
        let af = |i: usize, j: usize| {
            -0.7 * 2.1 * 2.1 * (1.3 * (j as f64 + seed) + 2.1 * t(i)).sin()
                - 0.3 * 3.7 * 3.7 * (3.7 * t(i) + j as f64).cos()
        };
        let v: Vec<Vec<f64>> = (0..n).map(|i| (0..nv).map(|j| vf(i, j)).collect()).collect();
        let a: Vec<Vec<f64>> = (0..n).map(|i| (0..nv).map(|j| af(i, j)).collect()).collect();
        let prep = Prepared { name: "x".into(), q: rec.q.clone(), v: v.clone(), a, tau: vec![] };
        rec.tau = pb.predict(&prep, p).unwrap();
        rec.v = Some(v);
        rec
    }

    fn fd_check(pb: &ArmProblem, gram: &Gram, z: &[f64]) -> f64 {
        let (_, j) = pb.residual(gram, z).unwrap();
        let mut worst = 0.0f64;
        for c in 0..z.len() {
            let h = 1e-6 * z[c].abs().max(1e-2);
            let (mut zp, mut zm) = (z.to_vec(), z.to_vec());
            zp[c] += h;
            zm[c] -= h;
            let fd = (pb.residual(gram, &zp).unwrap().0 - pb.residual(gram, &zm).unwrap().0) / (2.0 * h);
            let col = j.column(c);
            worst = worst.max((col - &fd).norm() / col.norm().max(fd.norm()).max(1e-12));
        }
        worst
    }

    fn small_problem() -> (ArmProblem, Gram, Vec<f64>) {
        let m = arm();
        let mut pb = ArmProblem::new(&m).unwrap();
        pb.inertial = vec![Inertial::LogCholesky, Inertial::Linear, Inertial::LogCholesky];
        pb.damping = vec![ScalarSpec::free(0.3, Param::Log); 3];
        pb.coulomb = vec![ScalarSpec::free(0.2, Param::Softplus); 3];
        pb.coulomb[1].prior = Some((0.25, 0.1));
        pb.pi_prior[1] = Some((pb.pi0[1], [0.5; N_INERTIAL]));
        let mut p = pb.p0();
        let off = pb.off_d();
        p[off..].copy_from_slice(&[0.5, 0.4, 0.3, 0.6, 0.5, 0.2]);
        let rec = recording(&pb, &p, 400, 1e-3, 0.0);
        let prep = pb.prepare(&rec).unwrap();
        let gram = pb.gram(&[prep], true).unwrap();
        let (z, _, _) = pb.z0().unwrap();
        // away from the start so that every block is exercised at a generic point
        let z: Vec<f64> = z.iter().enumerate().map(|(i, v)| v + 0.05 * ((i as f64) * 0.7).sin()).collect();
        (pb, gram, z)
    }

    #[test]
    fn residual_jacobian_matches_central_differences() {
        let (pb, gram, z) = small_problem();
        let e = fd_check(&pb, &gram, &z);
        eprintln!("residual Jacobian vs FD: {e:.1e}");
        assert!(e < 1e-6, "relative column error {e:e}");
    }

    #[test]
    fn gram_objective_equals_the_explicit_residual() {
        let (pb, gram, z) = small_problem();
        let (r, j) = pb.residual(&gram, &z).unwrap();
        let (c, gh) = pb.objective(&gram, &z, true);
        let (g, h) = gh.unwrap();
        let n = z.len();
        assert!((c - 0.5 * r.norm_squared()).abs() <= 1e-9 * c.max(1.0), "{c} vs {}", 0.5 * r.norm_squared());
        let jr = j.tr_mul(&r);
        let jj = j.tr_mul(&j);
        let ge = (0..n).map(|i| (g[i] - jr[i]).abs()).fold(0.0, f64::max) / jr.amax().max(1e-12);
        let he = (0..n * n).map(|k| (h[k] - jj[(k / n, k % n)]).abs()).fold(0.0, f64::max) / jj.amax();
        assert!(ge < 1e-8 && he < 1e-10, "gradient {ge:e}, Gauss–Newton matrix {he:e}");
        // and the gradient is the derivative of ½‖r‖² (central differences on the explicit residual: the Gram
        // form's pᵀGp − 2pᵀb + c cancels digits)
        let half = |z: &[f64]| 0.5 * pb.residual(&gram, z).unwrap().0.norm_squared();
        for k in 0..n {
            let hstep = 1e-6 * z[k].abs().max(1e-2);
            let (mut zp, mut zm) = (z.clone(), z.clone());
            zp[k] += hstep;
            zm[k] -= hstep;
            let fd = (half(&zp) - half(&zm)) / (2.0 * hstep);
            assert!((fd - g[k]).abs() <= 1e-6 * g[k].abs().max(1e-3 * jr.amax()), "z[{k}]: {fd} vs {}", g[k]);
        }
    }

    #[test]
    fn fit_recovers_damping_friction_and_base_parameters() {
        let m = arm();
        let mut pb = ArmProblem::new(&m).unwrap();
        let truth = {
            let mut p = pb.p0();
            let off = pb.off_d();
            p[off..].copy_from_slice(&[0.5, 0.4, 0.3, 0.6, 0.5, 0.2]);
            p
        };
        // two recordings at different rates and lengths
        let r1 = recording(&pb, &truth, 3000, 1e-3, 0.0);
        let mut r2 = recording(&pb, &truth, 1200, 2e-3, 1.7);
        r2.name = "second".into();
        pb.recordings = vec![r1, r2];
        // start 30 % off on every inertial parameter, damping / friction from 1
        for pi in pb.pi0.iter_mut() {
            for (i, v) in pi.iter_mut().enumerate() {
                *v *= if i % 2 == 0 { 1.3 } else { 0.7 };
            }
        }
        pb.damping = vec![ScalarSpec::free(1.0, Param::Log); 3];
        pb.coulomb = vec![ScalarSpec { lower: 0.0, upper: 5.0, ..ScalarSpec::free(1.0, Param::Identity) }; 3];
        let fit = pb.fit(&LmOptions { max_iter: 100, ..LmOptions::default() }, false).unwrap();
        let off = pb.off_d();
        for i in off..pb.np() {
            assert!((fit.p[i] - truth[i]).abs() < 2e-3, "{}: {} vs {}", fit.names[i], fit.p[i], truth[i]);
        }
        let base = BaseParams::from_gram(&fit.gram.g, 1e-5);
        let (bh, bt) = (base.apply(&fit.p), base.apply(&truth));
        let worst = bh.iter().zip(&bt).map(|(a, b)| (a - b).abs() / b.abs().max(1e-3)).fold(0.0, f64::max);
        // 3 hinges (z, y, y): 15 base inertial combinations + 6 damping / friction terms
        assert!(base.independent.len() == 21, "{}", base.independent.len());
        let diag: Vec<_> =
            bh.iter().zip(&bt).zip(&base.independent).map(|((a, b), i)| (fit.names[*i].clone(), *a, *b)).collect();
        // the filter (10 Hz, central differences) leaves a bias of ~1e-3 relative
        assert!(worst < 5e-3, "base parameter error {worst:e}: {diag:?}");
        assert!(fit.rmse < 1e-3 && fit.history.windows(2).all(|w| w[1] <= w[0]), "{} {:?}", fit.rmse, fit.history);
        assert!(fit.std_errors.iter().all(|s| s.is_finite()));
    }

    #[test]
    fn gram_error_does_not_cancel_far_along_a_null_direction() {
        // p far out along a direction A does not see (the LM trial steps of an 84-parameter fit): ‖A p − τ‖² stays
        // small while pᵀGp and 2pᵀb carry round-off of ε‖G‖‖p‖², so pᵀGp − 2pᵀb + c cancels to noise (it went negative in
        // sysid-arm and a clamped 0 was accepted as the best cost)
        let (_, gram, _) = small_problem();
        let (a, tau) = gram.a.as_ref().unwrap();
        let svd = a.clone().svd(true, true);
        let p_ls = svd.solve(tau, 1e-12).unwrap();
        // a null direction of A (the 3-link arm has 15), from A's own SVD
        let k = (0..svd.singular_values.len())
            .min_by(|&i, &j| svd.singular_values[i].total_cmp(&svd.singular_values[j]))
            .unwrap();
        assert!(svd.singular_values[k] < 1e-12 * svd.singular_values.amax());
        let null = svd.v_t.as_ref().unwrap().row(k).transpose();
        let mut worst = (0.0f64, 0.0f64);
        for t in [1e2, 1e4, 1e6] {
            let p = &p_ls + &null * t;
            let exact = (a * &p - tau).norm_squared();
            let naive = p.dot(&(&gram.g * &p)) - 2.0 * p.dot(&gram.b) + gram.c;
            let ours = gram.sq_error(p.as_slice());
            worst.0 = worst.0.max((ours - exact).abs() / gram.c);
            worst.1 = worst.1.max((naive - exact).abs() / gram.c);
        }
        // along a null direction both forms keep only what G resolves (~ε‖G‖‖p‖² for the naive one; the
        // eigenvectors' ε-contamination for ours): measured against ‖τ‖², the scale of the start cost
        eprintln!("error of ‖A p − τ‖² / ‖τ‖²: square-root form {:.1e}, naive {:.1e}", worst.0, worst.1);
        assert!(worst.0 < 1e-8, "{:e}", worst.0);
    }

    #[test]
    fn gram_from_shard_sums_equals_the_gram_of_all_recordings() {
        // the Ray path: each worker stacks its recordings' sums, the driver adds them (issue 14 item 5)
        let (pb, _, _) = small_problem();
        let p = pb.p0();
        let recs: Vec<Prepared> =
            (0..3).map(|k| pb.prepare(&recording(&pb, &p, 300 + 50 * k, 1e-3, k as f64)).unwrap()).collect();
        let all = pb.gram(&recs, false).unwrap();
        let shards = [pb.gram(&recs[..1], false).unwrap(), pb.gram(&recs[1..], false).unwrap()];
        let sum = Gram::from_sums(shards.iter().map(|s| (&s.g, &s.b, s.c, s.rows)));
        let rel = (&sum.g - &all.g).amax() / all.g.amax();
        assert!(rel < 1e-14 && sum.rows == all.rows, "{rel:e} {} {}", sum.rows, all.rows);
        assert!((sum.c - all.c).abs() <= 1e-14 * all.c && (&sum.b - &all.b).amax() <= 1e-14 * all.b.amax());
        let q: Vec<f64> = p.iter().map(|v| v * 1.1 + 0.01).collect();
        assert!((sum.sq_error(&q) - all.sq_error(&q)).abs() <= 1e-10 * all.sq_error(&q));
    }

    #[test]
    fn base_parameters_explain_the_regressor() {
        // A p = A_B β for any p: the dependent columns are the combinations K says
        let (pb, gram, _) = small_problem();
        let base = BaseParams::from_gram(&gram.g, 1e-5);
        let (a, _) = gram.a.as_ref().unwrap();
        let p: Vec<f64> = (0..pb.np()).map(|i| ((i * 7 % 11) as f64 - 5.0) * 0.1).collect();
        let full = a * DVector::from_column_slice(&p);
        let beta = base.apply(&p);
        let mut red = DVector::zeros(a.nrows());
        for (i, &c) in base.independent.iter().enumerate() {
            red += a.column(c) * beta[i];
        }
        // K through G keeps ~√ε digits
        assert!((&full - &red).norm() <= 1e-5 * full.norm(), "{:e}", (&full - &red).norm() / full.norm());
    }

    #[test]
    fn nearest_consistent_keeps_consistent_values_and_repairs_others() {
        let good = [2.0, 0.1, -0.05, 0.2, 0.05, 0.001, 0.06, 0.002, -0.001, 0.04];
        assert_eq!(nearest_consistent(&good), Some(good));
        // a COM far outside the inertia ellipsoid: J indefinite
        let bad = [1.0, 0.5, 0.0, 0.0, 0.01, 0.0, 0.01, 0.0, 0.0, 0.01];
        assert!(theta_from_params(&bad).is_err());
        let fixed = nearest_consistent(&bad).unwrap();
        assert!(theta_from_params(&fixed).is_ok());
        let j = pseudo_inertia(&fixed) - pseudo_inertia(&bad);
        // only the negative eigenvalue moved: the change is rank one, no larger than that eigenvalue
        let neg = pseudo_inertia(&bad).symmetric_eigen().eigenvalues.min();
        assert!(j.norm() <= 1.01 * neg.abs() + 1e-6, "{} vs {neg}", j.norm());
    }

    #[test]
    fn bad_recordings_are_named_errors() {
        let mut pb = ArmProblem::new(&arm()).unwrap();
        pb.recordings = vec![Recording {
            name: "short".into(),
            dt: 1e-3,
            q: vec![vec![0.0; 3]; 5],
            v: None,
            tau: vec![vec![0.0; 3]; 5],
        }];
        let e = pb.fit(&LmOptions::default(), false).unwrap_err().to_string();
        assert!(e.contains("'short'") && e.contains("samples"), "{e}");
        let rec = Recording {
            name: "wide".into(),
            dt: 1e-3,
            q: vec![vec![0.0; 3]; 500],
            v: None,
            tau: vec![vec![0.0; 2]; 500],
        };
        let e = pb.prepare(&rec).unwrap_err().to_string();
        assert!(e.contains("'wide'") && e.contains("tau row 0"), "{e}");
        pb.damping[0] = ScalarSpec::free(-1.0, Param::Log);
        let e = pb.z0().unwrap_err().to_string();
        assert!(e.contains("damping[j1]"), "{e}");
    }
}
