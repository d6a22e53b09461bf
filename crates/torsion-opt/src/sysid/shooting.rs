//! The simulation residual with multiple shooting (issue 14 item 4b): each recording is cut into windows of
//! `window` steps; a window starts from the recorded state (q_t, v_t) of its first sample and is simulated by any
//! generalized-coordinate [`DiffSolver`] under the recorded generalized forces; the residual is
//! ```text
//! r = [(q̂_{t+i} − q_{t+i}) / σ_q, (v̂_{t+i} − v_{t+i}) / σ_v]   for i = 1..=window, every window and recording
//! ```
//! (ambient q: quaternions compared as numbers, the recorded one sign-aligned to the prediction), then the prior
//! rows (p − μ)/σ. The Jacobian is exact: the forward sensitivities S_i = ∂ŝ_i/∂θ of each window
//! (`torsion_diff::forward_sensitivities` of the contract's `step_jacobians_into`, tangent coordinates, S_0 = 0:
//! the start is data), mapped to ambient q by G(q̂) = ∂(q ⊕ δ)/∂δ and chained through dp/dz of each parameter's
//! map. Cost O(T·nθ) per Jacobian, as LM needs J itself. The fit is the bounded LM of
//! [`super::levenberg_marquardt_normal`] on JᵀJ, Jᵀr (docs/decisions.md: windows start at the recorded state).
use super::arm::{ScalarSpec, Start, SysidError};
use super::{lm_with_path, Estimates, LmOptions};
use nalgebra::{DMatrix, DVector};
use std::time::Instant;
use torsion_diff::{forward_sensitivities, rollout, trajectory_jacobians};
use torsion_model::joint_maps::ambient_to_tangent_into;
use torsion_model::{Control, GenState, Model, ParamSelection};
use torsion_solvers::{DiffSolver, SolverError};

/// One recorded trajectory of a generalized-coordinate model: T + 1 samples of q (nq) and v (nv), T rows of the
/// generalized forces applied over each step (the solver's `control_dim` entries) and, optionally, T rows of
/// external body wrenches (`Control::body_wrench`: world frame at the COM, force then torque, 6 per body), every
/// `dt` s.
#[derive(Clone, Debug)]
pub struct Trajectory {
    pub name: String,
    pub dt: f64,
    pub q: Vec<Vec<f64>>,
    pub v: Vec<Vec<f64>>,
    pub u: Vec<Vec<f64>>,
    /// empty: no wrenches
    pub wrench: Vec<Vec<f64>>,
}

#[derive(Clone, Debug)]
pub struct ShootingOptions {
    /// steps per window (the last window of a recording may be shorter)
    pub window: usize,
    /// noise scale of q (rad, m; weights the q rows)
    pub sigma_q: f64,
    /// noise scale of v (None: no velocity rows)
    pub sigma_v: Option<f64>,
}

impl Default for ShootingOptions {
    fn default() -> Self {
        ShootingOptions { window: 20, sigma_q: 1e-3, sigma_v: None }
    }
}

/// Model, solver, named parameters (one [`ScalarSpec`] each: start, map, bounds, prior, fixed), recordings.
#[derive(Clone)]
pub struct ShootingProblem<S> {
    pub solver: S,
    pub model: Model,
    pub names: Vec<String>,
    sel: ParamSelection,
    pub params: Vec<ScalarSpec>,
    pub recordings: Vec<Trajectory>,
    pub options: ShootingOptions,
}

/// The result of [`ShootingProblem::fit`]: the estimates (standard errors from σ² (JᵀJ)⁺; σ² in units of the
/// weighted residual) and the windows' unweighted error.
#[derive(Clone, Debug)]
pub struct ShootingFit {
    pub estimates: Estimates,
    /// root-mean-square q error (unweighted) of the windows at p
    pub rmse_q: f64,
    pub wall_time_s: f64,
}

impl std::ops::Deref for ShootingFit {
    type Target = Estimates;
    fn deref(&self) -> &Estimates {
        &self.estimates
    }
}

fn solver_err(e: SolverError) -> SysidError {
    SysidError::Problem(format!("simulation: {e}"))
}

impl<S: DiffSolver<State = GenState>> ShootingProblem<S> {
    /// The parameters `names` of the model's table (`Model::param_table`), each free from its current value
    /// (identity map, no bounds), no recordings.
    pub fn new(solver: S, model: Model, names: &[&str]) -> Result<Self, SysidError> {
        let sel = ParamSelection::by_names(&model, names)
            .map_err(|e| SysidError::Problem(format!("parameter selection: {e}")))?;
        let params = model.params_get(&sel).into_iter().map(|v| ScalarSpec::free(v, super::Param::Identity)).collect();
        Ok(ShootingProblem {
            solver,
            model,
            names: names.iter().map(|s| s.to_string()).collect(),
            sel,
            params,
            recordings: vec![],
            options: ShootingOptions::default(),
        })
    }

    /// The start z and its box bounds (an error names a start value outside its map's range or its bounds).
    pub fn z0(&self) -> Result<Start, SysidError> {
        let (mut z, mut lo, mut hi) = (vec![], vec![], vec![]);
        for (s, name) in self.params.iter().zip(&self.names) {
            if !s.fixed {
                let (zc, l, h) = s.start(name)?;
                z.push(zc);
                lo.push(l);
                hi.push(h);
            }
        }
        Ok((z, lo, hi))
    }

    /// p(z) and the diagonal dp/dz of the free entries (by z index).
    pub fn p_of_z(&self, z: &[f64]) -> (Vec<f64>, Vec<(usize, f64)>) {
        let mut p: Vec<f64> = self.params.iter().map(|s| s.value).collect();
        let mut d = vec![];
        for (k, s) in self.params.iter().enumerate().filter(|(_, s)| !s.fixed) {
            let zi = z[d.len()];
            p[k] = s.transform.value(zi);
            d.push((k, s.transform.deriv(zi)));
        }
        (p, d)
    }

    fn check(&self) -> Result<(), SysidError> {
        let (nq, nv, nu) = (self.model.nq(), self.model.nv(), self.solver.control_dim(&self.model));
        if self.recordings.is_empty() {
            return Err(SysidError::Problem("no recordings".into()));
        }
        if self.options.window == 0 || self.options.sigma_q.is_nan() || self.options.sigma_q <= 0.0 {
            return Err(SysidError::Problem("options: window must be ≥ 1 and sigma_q > 0".into()));
        }
        for r in &self.recordings {
            let bad = |msg: String| Err(SysidError::Recording { rec: r.name.clone(), msg });
            let n = r.q.len();
            if r.dt.is_nan() || r.dt <= 0.0 {
                return bad(format!("dt {} must be > 0", r.dt));
            }
            if n < 2 || r.v.len() != n || r.u.len() + 1 != n {
                return bad(format!(
                    "{n} q rows need as many v rows ({}) and one u row fewer ({})",
                    r.v.len(),
                    r.u.len()
                ));
            }
            if !r.wrench.is_empty() && r.wrench.len() != r.u.len() {
                return bad(format!("{} wrench rows for {} u rows", r.wrench.len(), r.u.len()));
            }
            let nw = 6 * self.model.body_count();
            for (what, rows, w) in [("q", &r.q, nq), ("v", &r.v, nv), ("u", &r.u, nu), ("wrench", &r.wrench, nw)] {
                if let Some(i) = rows.iter().position(|x| x.len() != w || x.iter().any(|y| !y.is_finite())) {
                    return bad(format!("{what} row {i}: expected {w} finite entries"));
                }
            }
        }
        Ok(())
    }

    /// The model with the physical parameters p.
    pub fn model_at(&self, p: &[f64]) -> Result<Model, SysidError> {
        let mut m = self.model.clone();
        m.params_set(&self.sel, p).map_err(|e| SysidError::Problem(format!("parameters {:?}: {e}", self.names)))?;
        Ok(m)
    }

    /// The windows' predicted states: per recording, per sample (the window starts are the recorded states).
    pub fn predict(&self, p: &[f64]) -> Result<Vec<Vec<GenState>>, SysidError> {
        let m = self.model_at(p)?;
        self.recordings.iter().map(|r| self.windows(&m, r, None).map(|w| w.0)).collect()
    }

    /// Simulate the windows of `r` on `m`; with `sel`, also each predicted sample's tangent sensitivity
    /// (2nv × k).
    #[allow(clippy::type_complexity)]
    fn windows(
        &self,
        m: &Model,
        r: &Trajectory,
        sel: Option<&ParamSelection>,
    ) -> Result<(Vec<GenState>, Vec<DMatrix<f64>>), SysidError> {
        let t_len = r.u.len();
        let mut states = vec![GenState::new(r.q[0].clone(), r.v[0].clone())];
        let mut sens = vec![];
        let nt = self.solver.tangent_dim(m);
        if let Some(sel) = sel {
            sens.push(DMatrix::zeros(nt, sel.len()));
        }
        for start in (0..t_len).step_by(self.options.window) {
            let end = (start + self.options.window).min(t_len);
            let controls: Vec<Control> = (start..end)
                .map(|t| {
                    let c = Control::from_torques(&r.u[t]);
                    match r.wrench.get(t) {
                        Some(w) => c.with_body_wrench(w),
                        None => c,
                    }
                })
                .collect();
            let s0 = GenState::new(r.q[start].clone(), r.v[start].clone());
            let st = rollout(&self.solver, m, &s0, &controls, r.dt).map_err(solver_err)?;
            if let Some(sel) = sel {
                let mut ws = self.solver.workspace(m).map_err(solver_err)?;
                let jacs =
                    trajectory_jacobians(&self.solver, m, &st, &controls, r.dt, &mut ws, sel).map_err(solver_err)?;
                let sw = forward_sensitivities(&jacs, &DMatrix::zeros(nt, 0), |_| None);
                sens.extend(sw.into_iter().skip(1));
            }
            states.extend(st.into_iter().skip(1));
        }
        Ok((states, sens))
    }

    /// Rows per sample: nq, then nv when `sigma_v` is set.
    fn rows_per_sample(&self) -> usize {
        self.model.nq() + if self.options.sigma_v.is_some() { self.model.nv() } else { 0 }
    }

    /// The weighted residual r(z) (data rows, then the prior rows) and, when asked, its Jacobian in z.
    pub fn residual(&self, z: &[f64], want_jacobian: bool) -> Result<(DVector<f64>, Option<DMatrix<f64>>), SysidError> {
        self.check()?;
        let (p, dpdz) = self.p_of_z(z);
        let m = self.model_at(&p)?;
        let (nq, nv, nz) = (m.nq(), m.nv(), z.len());
        let rps = self.rows_per_sample();
        let priors: Vec<(usize, f64, f64)> = self
            .params
            .iter()
            .enumerate()
            .filter_map(|(k, s)| s.prior.filter(|_| !s.fixed).map(|(mu, sd)| (k, mu, sd)))
            .collect();
        let samples: usize = self.recordings.iter().map(|r| r.u.len()).sum();
        let rows = samples * rps + priors.len();
        let mut r = DVector::zeros(rows);
        let mut jac = want_jacobian.then(|| DMatrix::zeros(rows, nz));
        // the selected parameters whose z is free, with their dp/dz
        let free_sel = ParamSelection { indices: dpdz.iter().map(|&(k, _)| self.sel.indices[k]).collect() };
        let (wq, wv) = (1.0 / self.options.sigma_q, self.options.sigma_v.map_or(0.0, |s| 1.0 / s));
        let mut row = 0;
        let (mut gq, mut e, mut g_row) = (vec![0.0; nq], vec![0.0; nq], vec![0.0; nv]);
        for rec in &self.recordings {
            let (pred, sens) = self.windows(&m, rec, want_jacobian.then_some(&free_sel))?;
            for t in 1..pred.len() {
                let (qh, qd) = (&pred[t].q, &rec.q[t]);
                // the recorded quaternions sign-aligned to the prediction (q and −q are one rotation)
                e.copy_from_slice(qd);
                align_quaternions(&m, qh, &mut e);
                for i in 0..nq {
                    r[row + i] = wq * (qh[i] - e[i]);
                }
                if self.options.sigma_v.is_some() {
                    for i in 0..nv {
                        r[row + nq + i] = wv * (pred[t].v[i] - rec.v[t][i]);
                    }
                }
                if let Some(j) = jac.as_mut() {
                    let s = &sens[t];
                    // G(q̂) row by row: row i of G = Gᵀ e_i (`ambient_to_tangent`)
                    for i in 0..nq {
                        gq.fill(0.0);
                        gq[i] = 1.0;
                        ambient_to_tangent_into(&m, qh, &gq, &mut g_row);
                        for (c, &(_, d)) in dpdz.iter().enumerate() {
                            let dq: f64 = (0..nv).map(|a| g_row[a] * s[(a, c)]).sum();
                            j[(row + i, c)] = wq * dq * d;
                        }
                    }
                    if self.options.sigma_v.is_some() {
                        for i in 0..nv {
                            for (c, &(_, d)) in dpdz.iter().enumerate() {
                                j[(row + nq + i, c)] = wv * s[(nv + i, c)] * d;
                            }
                        }
                    }
                }
                row += rps;
            }
        }
        for &(k, mu, sd) in &priors {
            r[row] = (p[k] - mu) / sd;
            if let Some(j) = jac.as_mut() {
                if let Some(c) = dpdz.iter().position(|&(kk, _)| kk == k) {
                    j[(row, c)] = dpdz[c].1 / sd;
                }
            }
            row += 1;
        }
        Ok((r, jac))
    }

    /// Bounded Levenberg–Marquardt from the start values; estimates with standard errors. `progress`: an
    /// indicatif bar over the Jacobian evaluations.
    pub fn fit(&self, lm: &LmOptions, progress: bool) -> Result<ShootingFit, SysidError> {
        let t0 = Instant::now();
        let start = self.z0()?;
        let bar = progress.then(|| indicatif::ProgressBar::new(lm.max_iter as u64));
        let (rep, path) = lm_with_path(
            &start,
            lm,
            bar,
            |z| self.p_of_z(z).0,
            |z, want| {
                let (r, j) = self.residual(z, want)?;
                let gh = j.map(|j| {
                    let g = j.tr_mul(&r);
                    let h = j.tr_mul(&j);
                    (g.as_slice().to_vec(), h.transpose().as_slice().to_vec())
                });
                Ok::<_, SysidError>((0.5 * r.norm_squared(), gh))
            },
        )?;
        let (p, dpdz) = self.p_of_z(&rep.x);
        let (r, j) = self.residual(&rep.x, true)?;
        let j = j.unwrap_or_else(|| DMatrix::zeros(r.len(), rep.x.len()));
        let (cov_z, sigma2) = super::covariance(&j.tr_mul(&j), r.norm_squared(), r.len());
        let mut std_errors = vec![0.0; p.len()];
        for (c, &(k, d)) in dpdz.iter().enumerate() {
            std_errors[k] = (cov_z[(c, c)].max(0.0)).sqrt() * d.abs();
        }
        let rmse_q = self.rmse_q(&p)?;
        Ok(ShootingFit {
            estimates: Estimates {
                names: self.names.clone(),
                p,
                std_errors,
                sigma2,
                history: rep.history,
                path,
                iterations: rep.iterations,
            },
            rmse_q,
            wall_time_s: t0.elapsed().as_secs_f64(),
        })
    }

    /// Root-mean-square (unweighted) q error of the windows at p.
    pub fn rmse_q(&self, p: &[f64]) -> Result<f64, SysidError> {
        let pred = self.predict(p)?;
        let (mut s, mut n) = (0.0, 0usize);
        let mut e = vec![0.0; self.model.nq()];
        for (rec, pr) in self.recordings.iter().zip(&pred) {
            for t in 1..pr.len() {
                e.copy_from_slice(&rec.q[t]);
                align_quaternions(&self.model, &pr[t].q, &mut e);
                s += pr[t].q.iter().zip(&e).map(|(a, b)| (a - b) * (a - b)).sum::<f64>();
                n += e.len();
            }
        }
        Ok((s / n.max(1) as f64).sqrt())
    }
}

/// Flip each ball / free joint quaternion of `q` whose dot product with `reference`'s is negative.
fn align_quaternions(model: &Model, reference: &[f64], q: &mut [f64]) {
    use torsion_model::JointType;
    for (kind, qo, _) in torsion_model::joint_maps::offsets(model) {
        let o = match kind {
            JointType::Ball => qo,
            JointType::Free => qo + 3,
            _ => continue,
        };
        let dot: f64 = (0..4).map(|i| reference[o + i] * q[o + i]).sum();
        if dot < 0.0 {
            q[o..o + 4].iter_mut().for_each(|x| *x = -*x);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sysid::Param;
    use torsion_diff::{fd_jacobian, rel_err};
    use torsion_math::Vec3;
    use torsion_model::builder::two_link_arm;
    use torsion_solvers::FeatherstoneSolver;

    /// A damped two-link arm under a chirp torque, 300 steps of 5 ms recorded from `truth` (link masses, joint
    /// damping), with seeded noise of scale `noise` on q and v.
    fn arm_problem(truth: &[f64], noise: f64) -> ShootingProblem<FeatherstoneSolver> {
        let mut m = two_link_arm(0.8, 0.5, 1.0, Vec3::new(0.0, -9.8, 0.0), 0.005).unwrap();
        m.joint_damping = vec![0.0; 2];
        let names = ["body_mass[link1]", "body_mass[link2]", "joint_damping[joint1]", "joint_damping[joint2]"];
        let mut pb = ShootingProblem::new(FeatherstoneSolver::default(), m.clone(), &names).unwrap();
        let mt = pb.model_at(truth).unwrap();
        let (dt, t_len) = (0.005, 300);
        let u: Vec<Vec<f64>> = (0..t_len)
            .map(|t| {
                let x = t as f64 * dt;
                vec![3.0 * (2.0 * x + 0.5 * x * x).sin(), 1.5 * (3.0 * x).cos()]
            })
            .collect();
        let controls: Vec<Control> = u.iter().map(|u| Control::from_torques(u)).collect();
        let s0 = GenState::new(vec![0.3, -0.4], vec![0.0, 0.5]);
        let st = rollout(&pb.solver, &mt, &s0, &controls, dt).unwrap();
        let mut rng = torsion_diff::gradcheck::XorShift(7);
        let mut noisy = |x: &[f64]| x.iter().map(|a| a + noise * rng.sym()).collect::<Vec<f64>>();
        pb.recordings.push(Trajectory {
            name: "chirp".into(),
            dt,
            q: st.iter().map(|s| noisy(&s.q)).collect(),
            v: st.iter().map(|s| noisy(&s.v)).collect(),
            u,
            wrench: vec![],
        });
        pb.options = ShootingOptions { window: 25, sigma_q: 1e-3, sigma_v: Some(1e-2) };
        pb
    }

    /// The residual's Jacobian (masses on a log scale, dampings softplus, a prior row) against central
    /// differences of the residual.
    #[test]
    fn residual_jacobian_matches_central_differences() {
        let mut pb = arm_problem(&[1.2, 0.7, 0.3, 0.1], 1e-4);
        pb.params[0].transform = Param::Log;
        pb.params[1].transform = Param::Log;
        pb.params[2].transform = Param::Softplus;
        pb.params[2].prior = Some((0.2, 0.05));
        pb.params[3].fixed = true;
        for (s, v) in pb.params.iter_mut().zip([1.0, 0.8, 0.25, 0.05]) {
            s.value = v;
        }
        let (z0, _, _) = pb.z0().unwrap();
        let z: Vec<f64> = z0.iter().map(|v| v + 0.1).collect();
        let (_, j) = pb.residual(&z, true).unwrap();
        let j = j.unwrap();
        let fd = fd_jacobian(
            |d| {
                let zz: Vec<f64> = z.iter().zip(d).map(|(a, b)| a + b).collect();
                pb.residual(&zz, false).unwrap().0.as_slice().to_vec()
            },
            z.len(),
            1e-6,
        );
        let e = rel_err(j.as_slice(), fd.as_slice());
        eprintln!("shooting residual Jacobian vs central differences: {e:.1e} ({} × {})", j.nrows(), j.ncols());
        assert!(e < 1e-6, "{e:e}");
    }

    /// From a start 40–60 % off, the fit recovers link masses and joint dampings of noisy data.
    #[test]
    fn fit_recovers_masses_and_damping_of_an_arm() {
        let truth = [1.2, 0.7, 0.3, 0.1];
        let mut pb = arm_problem(&truth, 1e-4);
        for (s, v) in pb.params.iter_mut().zip([0.6, 1.1, 0.1, 0.2]) {
            s.value = v;
            s.transform = Param::Log;
        }
        let fit = pb.fit(&LmOptions::default(), false).unwrap();
        let rel: Vec<f64> = fit.p.iter().zip(&truth).map(|(a, b)| (a - b).abs() / b).collect();
        eprintln!("arm shooting fit: p {:?} ± {:?}, rel errors {rel:?}, {} its", fit.p, fit.std_errors, fit.iterations);
        assert!(rel.iter().all(|&e| e < 1e-2), "{rel:?}");
        // standard errors from JᵀJ: positive and small (they ignore the noise of the windows' recorded starts,
        // which correlates the residuals: here 2–30× below the actual errors)
        assert!(fit.std_errors.iter().zip(&truth).all(|(s, t)| *s > 0.0 && *s < 1e-2 * t), "{:?}", fit.std_errors);
    }

    /// A 5 cm box dropped onto a plane with a horizontal velocity, bouncing, then sliding under a known push
    /// (the push makes the mass observable: gravity alone scales with it), 0.8 s of 5 ms steps generated by the
    /// `ncp` stepper itself: the fit recovers mass, μ and ε from 50 % off.
    #[test]
    fn fit_recovers_mass_friction_and_restitution_of_a_box() {
        use torsion_solvers::ncp::{NcpOptions, NcpSolver};
        let xml = r#"<mujoco><worldbody><geom name="floor" type="plane" size="5 5 0.1" friction="0 0 0"/>
            <body name="box" pos="0 0 0.15"><freejoint/><geom name="boxg" type="box" size="0.05 0.05 0.05" mass="1"/>
            </body></worldbody></mujoco>"#;
        let mut m = torsion_model::io::mjcf::load_mjcf_str(xml, "box.xml", None).unwrap();
        m.shapes[0].restitution = 0.0;
        let mut o = NcpOptions::default();
        o.collision.margin = 0.0;
        let names = ["body_mass[box]", "shape_friction[boxg]", "shape_restitution[boxg]"];
        let mut pb = ShootingProblem::new(NcpSolver::new(o), m, &names).unwrap();
        let truth = [0.8, 0.4, 0.5];
        let mt = pb.model_at(&truth).unwrap();
        let (dt, t_len) = (0.005, 160);
        // the push as a world-frame wrench on the box (body 1)
        let u: Vec<Vec<f64>> = vec![vec![0.0; 6]; t_len];
        let wrench: Vec<Vec<f64>> = (0..t_len)
            .map(|t| vec![0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0, 0.5 * (t as f64 * 0.05).cos(), 0.0, 0.0, 0.0, 0.0])
            .collect();
        let controls: Vec<Control> =
            u.iter().zip(&wrench).map(|(u, w)| Control::from_torques(u).with_body_wrench(w)).collect();
        let s0 = GenState::new(vec![0.0, 0.0, 0.15, 1.0, 0.0, 0.0, 0.0], vec![0.0, 0.0, 0.0, 1.0, 0.0, -1.0]);
        let st = rollout(&pb.solver, &mt, &s0, &controls, dt).unwrap();
        assert!(st.iter().any(|s| s.v[5] > 0.3), "the box bounces");
        pb.recordings.push(Trajectory {
            name: "drop".into(),
            dt,
            q: st.iter().map(|s| s.q.clone()).collect(),
            v: st.iter().map(|s| s.v.clone()).collect(),
            u,
            wrench,
        });
        pb.options = ShootingOptions { window: 20, sigma_q: 1e-3, sigma_v: Some(1e-2) };
        for (s, (v, map)) in
            pb.params.iter_mut().zip([(1.2, Param::Log), (0.2, Param::Softplus), (0.25, Param::Sigmoid)])
        {
            s.value = v;
            s.transform = map;
        }
        let fit = pb.fit(&LmOptions::default(), false).unwrap();
        let rel: Vec<f64> = fit.p.iter().zip(&truth).map(|(a, b)| (a - b).abs() / b).collect();
        eprintln!(
            "box shooting fit: p {:?}, rel errors {rel:?}, {} its, {:.2} s",
            fit.p, fit.iterations, fit.wall_time_s
        );
        assert!(rel.iter().all(|&e| e < 1e-3), "{rel:?}");
    }

    #[test]
    fn bad_recordings_are_named() {
        let mut pb = arm_problem(&[1.0, 1.0, 0.1, 0.1], 0.0);
        pb.recordings[0].v.pop();
        let e = pb.residual(&pb.z0().unwrap().0, false).unwrap_err().to_string();
        assert!(e.contains("chirp") && e.contains("v rows"), "{e}");
    }
}
