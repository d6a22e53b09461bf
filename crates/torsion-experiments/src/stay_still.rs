//! The one-step "stay still" problem shared by `pbd-gravity-comp` and `pbd-spring-id` (spec 000 §4.2, §4.3): from
//! a pose at rest, one XPBD step with joint torques u, scored by Eq. 26 with the pose as angle target and ω̂ = 0:
//! L(u, θ) = (1/K) Σ_i [λ1 (φ_i − φ̂_i)² + λ2 ‖ω_i‖²], K = number of joints (one step; spec §6.8),
//! ω_i = world angular velocity of joint i's child link. Its gradient w.r.t. u and every model parameter θ is one
//! exact reverse step (`step_vjp`, FD-tested in torsion-solvers) seeded by the joint-angle adjoint.
use crate::result::ExperimentError;
use nalgebra::{DMatrix, DVector};
use torsion_dynamics::{gravity, DynData, DynModel};
use torsion_model::{Control, MaximalState, Model};
use torsion_opt::{gauss_newton, GnOptions};
use torsion_solvers::xpbd::step::XpbdRecord;
use torsion_solvers::xpbd::XpbdWorkspace;
use torsion_solvers::{DiffSolver, Solver, XpbdOptions, XpbdSolver};

/// Baxter's left arm of spec 000 §4.7 (the bare chain: hand lumped into the wrist, gripper dropped, as the
/// paper's "7 links") with the paper's gravity (§4.0: 9.8 m/s²).
pub fn baxter() -> Result<Model, ExperimentError> {
    let mut m = torsion_model::io::robots::baxter_left_arm_spec000()?;
    m.gravity = torsion_math::Vec3::new(0.0, 0.0, -9.8);
    Ok(m)
}

/// The paper's solver settings (§4.0): 30 Gauss–Seidel iterations, rigid PBD, one substep. Limits are off: the
/// optimum keeps the arm at an interior pose, but a trial torque can push a pose near a stop across it within the
/// step, where the limit projection makes the loss flat in that direction (docs/decisions.md).
pub fn paper_solver() -> XpbdSolver {
    XpbdSolver::new(XpbdOptions { iterations: 30, limits: false, ..Default::default() })
}

/// Paper time step (§4.0), s.
pub const DT: f64 = 0.01;

/// Generalized gravity torques g(q) of the same model by RNEA (crate torsion-dynamics): the ground truth of
/// §4.2 ("Euler–Lagrange", Eq. 19).
pub fn rnea_gravity(model: &Model, poses: &[Vec<f64>]) -> Result<Vec<Vec<f64>>, ExperimentError> {
    let dm: DynModel<f64> = DynModel::from_model(model).map_err(|e| ExperimentError::Failed(e.to_string()))?;
    let mut d = DynData::new(&dm);
    poses.iter().map(|q| gravity(&dm, q, &mut d).map_err(|e| ExperimentError::Failed(e.to_string()))).collect()
}

/// Deterministic generator (64-bit LCG, top 53 bits) for the pose sampling and the measurement noise.
pub struct Lcg(u64);
impl Lcg {
    pub fn new(seed: u64) -> Self {
        Lcg(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(1))
    }
    /// uniform in [0, 1)
    pub fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    /// standard normal (Box–Muller)
    pub fn normal(&mut self) -> f64 {
        let u1 = (1.0 - self.uniform()).max(1e-300);
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

/// `n` joint configurations uniform within the joint limits (spec §4.6), fixed seed.
pub fn sample_poses(model: &Model, n: usize, seed: u64) -> Result<Vec<Vec<f64>>, ExperimentError> {
    let mut rng = Lcg::new(seed);
    let limits: Vec<(f64, f64)> = (0..model.joint_count())
        .map(|j| {
            model.joint_limit[j].ok_or_else(|| {
                ExperimentError::Failed(format!("joint '{}' has no limits to sample within", model.joint_name[j]))
            })
        })
        .collect::<Result<_, _>>()?;
    Ok((0..n).map(|_| limits.iter().map(|&(lo, hi)| lo + (hi - lo) * rng.uniform()).collect()).collect())
}

/// One stay-still evaluator (owns its workspace, record and gradient buffers; one per thread).
pub struct StayStill {
    pub model: Model,
    pub solver: XpbdSolver,
    pub dt: f64,
    /// (λ1, λ2) of Eq. 26 (λ3 plays no role with one step and a fixed previous torque)
    pub lambda: (f64, f64),
    ws: XpbdWorkspace,
    rec: XpbdRecord,
    out: MaximalState,
    g_out: MaximalState,
    g_s: MaximalState,
    u: Control,
    /// ∂L/∂u after [`StayStill::eval`] with `grad = true`
    pub g_u: Vec<f64>,
    /// ∂L/∂θ over the full parameter table
    /// ∂L/∂θ over the whole parameter table (`sel`: all of it, in table order)
    pub g_theta: Vec<f64>,
    sel: torsion_model::ParamSelection,
}

impl StayStill {
    pub fn new(model: Model, solver: XpbdSolver, dt: f64, lambda: (f64, f64)) -> Result<Self, ExperimentError> {
        let ws = solver.workspace(&model)?;
        let rec = solver.record(&model);
        let nb = model.body_count();
        let (nj, np) = (model.joint_count(), model.param_table().len());
        Ok(StayStill {
            solver,
            dt,
            lambda,
            ws,
            rec,
            out: MaximalState::zeros(nb),
            g_out: MaximalState::zeros(nb),
            g_s: MaximalState::zeros(nb),
            u: Control::zeros(nj),
            g_u: vec![0.0; nj],
            g_theta: vec![0.0; np],
            sel: torsion_model::ParamSelection::all(&model),
            model,
        })
    }

    /// Angle residuals φ(step(s0, u)) − φ̂ after one step.
    pub fn residual(&mut self, s0: &MaximalState, target: &[f64], u: &[f64]) -> Result<Vec<f64>, ExperimentError> {
        self.u.joint_torque.copy_from_slice(u);
        self.solver.step(&self.model, s0, &self.u, self.dt, &mut self.out, &mut self.ws, Some(&mut self.rec))?;
        let phi = self.solver.joint_angles(&self.model, &self.out);
        Ok(phi.iter().zip(target).map(|(a, b)| a - b).collect())
    }

    /// Eq. 26 for one step; with `grad`, also ∂L/∂u into `g_u` and ∂L/∂θ into `g_theta` (overwritten).
    pub fn eval(&mut self, s0: &MaximalState, target: &[f64], u: &[f64], grad: bool) -> Result<f64, ExperimentError> {
        let r = self.residual(s0, target, u)?;
        let k = r.len() as f64;
        let (l1, l2) = self.lambda;
        let children: Vec<usize> = self.model.joint_child.clone();
        let loss = (l1 * r.iter().map(|v| v * v).sum::<f64>()
            + l2 * children.iter().map(|&c| self.out.w[c].norm_squared()).sum::<f64>())
            / k;
        if grad {
            self.g_out.set_zero();
            let g_phi: Vec<f64> = r.iter().map(|v| 2.0 * l1 * v / k).collect();
            self.solver.joint_angles_vjp(&self.model, &self.out, &g_phi, &mut self.g_out);
            for &c in &children {
                self.g_out.w[c] += self.out.w[c] * (2.0 * l2 / k);
            }
            self.vjp()?;
        }
        Ok(loss)
    }

    fn vjp(&mut self) -> Result<(), ExperimentError> {
        self.g_s.set_zero();
        self.g_u.iter_mut().for_each(|v| *v = 0.0);
        self.g_theta.iter_mut().for_each(|v| *v = 0.0);
        self.solver.step_vjp(
            &self.model,
            &self.rec,
            &self.g_out,
            &mut self.g_s,
            &mut self.g_u,
            &self.sel,
            &mut self.g_theta,
            &mut self.ws,
        )?;
        Ok(())
    }

    /// The residual vector ρ of Eq. 26 (L = ‖ρ‖²): √(λ1/K) (φ_i − φ̂_i) for each joint, then √(λ2/K) ω_i (3 each),
    /// and its exact Jacobian ∂ρ/∂u, one reverse step per row.
    pub fn residual_jacobian(
        &mut self,
        s0: &MaximalState,
        target: &[f64],
        u: &[f64],
    ) -> Result<(DVector<f64>, DMatrix<f64>), ExperimentError> {
        let (rho, ju, _) = self.residual_jacobians(s0, target, u, &[])?;
        Ok((rho, ju))
    }

    /// As [`StayStill::residual_jacobian`], plus ∂ρ/∂θ for the parameter-table indices `theta_idx`.
    pub fn residual_jacobians(
        &mut self,
        s0: &MaximalState,
        target: &[f64],
        u: &[f64],
        theta_idx: &[usize],
    ) -> Result<(DVector<f64>, DMatrix<f64>, DMatrix<f64>), ExperimentError> {
        let r = self.residual(s0, target, u)?;
        let n = r.len();
        let (a1, a2) = ((self.lambda.0 / n as f64).sqrt(), (self.lambda.1 / n as f64).sqrt());
        let rows = if a2 > 0.0 { 4 * n } else { n };
        let children = self.model.joint_child.clone();
        let out = self.out.clone();
        let mut rho = DVector::zeros(rows);
        let mut jac = DMatrix::zeros(rows, n);
        let mut jth = DMatrix::zeros(rows, theta_idx.len());
        for i in 0..rows {
            self.g_out.set_zero();
            if i < n {
                rho[i] = a1 * r[i];
                let mut e = vec![0.0; n];
                e[i] = a1;
                self.solver.joint_angles_vjp(&self.model, &out, &e, &mut self.g_out);
            } else {
                let (c, d) = (children[(i - n) / 3], (i - n) % 3);
                rho[i] = a2 * out.w[c][d];
                self.g_out.w[c][d] = a2;
            }
            self.vjp()?;
            for j in 0..n {
                jac[(i, j)] = self.g_u[j];
            }
            for (c, &t) in theta_idx.iter().enumerate() {
                jth[(i, c)] = self.g_theta[t];
            }
        }
        Ok((rho, jac, jth))
    }

    /// The exact minimiser of the one-step loss (Gauss–Newton on ρ with the exact Jacobian; the problem is nearly
    /// linear in u, so a few iterations reach machine precision): separates the XPBD-vs-RNEA model gap from the
    /// optimiser's error. Returns (u, loss, Gauss–Newton iterations taken).
    pub fn solve_exact(
        &mut self,
        s0: &MaximalState,
        target: &[f64],
        u0: &[f64],
    ) -> Result<(Vec<f64>, f64, usize), ExperimentError> {
        // least squares J δ = ρ by SVD (JᵀJ would square a condition number of ~1e3–1e4); backtracking: the
        // unconverged 30-iteration projection makes the map mildly nonlinear far from the optimum
        let o = GnOptions { step_tol: 1e-10, ..GnOptions::default() };
        let rep = gauss_newton(
            self,
            u0,
            &o,
            |ss, u| ss.eval(s0, target, u, false),
            |ss, u| ss.residual_jacobian(s0, target, u),
        )?;
        Ok((rep.x, rep.loss, rep.iterations))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stay-still gradient (∂L/∂u and ∂L/∂θ of a spring constant) against central differences.
    #[test]
    fn stay_still_gradient_matches_finite_differences() {
        let Ok(mut m) = baxter() else {
            eprintln!("example-robot-data missing: skipped");
            return;
        };
        let s1 = m.joint_name.iter().position(|n| n == "left_s1").unwrap();
        m.joint_spring[s1] = Some(torsion_model::JointSpring {
            k: 4000.0,
            alpha1: 0.3,
            alpha2: 0.2,
            l1: 0.25,
            l2: 0.10,
            x_rest: 0.2,
            sign: -1.0,
            literal: false,
        });
        let q = [0.2, -0.9, 0.3, 1.1, -0.4, 0.8, 0.1]; // γ ≠ π: the spring acts
        let s0 = m.state_at(&q).unwrap();
        let ik = m.param_table().index("joint_spring[left_s1].k").unwrap();
        let mut p = StayStill::new(m.clone(), paper_solver(), DT, (1.0, 0.02)).unwrap();
        let u = [1.0, -20.0, 2.0, -8.0, 0.5, -1.0, 0.2];
        p.eval(&s0, &q, &u, true).unwrap();
        let (gu, gk) = (p.g_u.clone(), p.g_theta[ik]);
        let mut f = |uu: &[f64], k: f64| {
            p.model.param_set_by_name("joint_spring[left_s1].k", k).unwrap();
            p.eval(&s0, &q, uu, false).unwrap()
        };
        let h = 1e-4;
        let fd: Vec<f64> = (0..7)
            .map(|i| {
                let (mut a, mut b) = (u, u);
                a[i] += h;
                b[i] -= h;
                (f(&a, 4000.0) - f(&b, 4000.0)) / (2.0 * h)
            })
            .collect();
        let h = 1e-2;
        let fdk = (f(&u, 4000.0 + h) - f(&u, 4000.0 - h)) / (2.0 * h);
        let e = torsion_diff::rel_err(&gu, &fd);
        let ek = ((gk - fdk) / fdk).abs();
        assert!(e < 1e-5 && ek < 1e-5, "∂L/∂u rel err {e:e}, ∂L/∂k {gk:e} vs {fdk:e}");
    }
}
