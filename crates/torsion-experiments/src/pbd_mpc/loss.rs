//! Eq. 26 over an MPC horizon with its exact gradient (the XPBD adjoint), the one-step residual Jacobian and its
//! exact minimiser (torsion-opt Gauss–Newton).
use super::*;
use crate::result::ExperimentError;
use nalgebra::{DMatrix, DVector};
use torsion_math::Vec3;
use torsion_model::{Control, MaximalState, Model};
use torsion_opt::{gauss_newton, GnOptions};
use torsion_solvers::xpbd::step::XpbdRecord;
use torsion_solvers::xpbd::XpbdWorkspace;
use torsion_solvers::{DiffSolver, Solver, XpbdSolver};

/// Eq. 26 weights (λ1 angle, λ2 ω, λ3 torque change).
#[derive(Clone, Copy, Debug)]
pub struct Weights {
    pub angle: f64,
    pub omega: f64,
    pub smooth: f64,
}
pub const ANGLE: Weights = Weights { angle: 1.0, omega: 0.0, smooth: 0.0 };
pub const OMEGA: Weights = Weights { angle: 0.0, omega: 1.0, smooth: 0.0 };
pub const BOTH: Weights = Weights { angle: 1.0, omega: 0.02, smooth: 0.0 };
pub const MPC3: Weights = Weights { angle: 1.0, omega: 0.02, smooth: 2e-7 };

/// Targets of one step: measured angles p̂ and the per-body world angular velocity ω̂ of Eq. 24.
#[derive(Clone, Debug)]
pub struct StepTarget {
    pub angles: Vec<f64>,
    pub omega: Vec<Vec3>,
}

/// Eq. 24 (index-corrected, §3.6): ω̂ of every body from the measured angles and rates, with the joint axes
/// from forward kinematics of the measured angles (a constant target, §6.8).
pub fn step_target(model: &Model, q: &[f64], qd: &[f64]) -> Result<StepTarget, ExperimentError> {
    let s = model.state_at(q)?;
    let mut omega = vec![Vec3::zeros(); model.body_count()];
    for j in 0..model.joint_count() {
        let e = s.q[model.joint_parent[j]].rotate(&model.joint_axis_parent(j));
        omega[model.joint_child[j]] = omega[model.joint_parent[j]] + e * qd[j];
    }
    Ok(StepTarget { angles: q.to_vec(), omega })
}

/// Eq. 26 over a horizon of H ≤ `capacity` steps, with its exact gradient w.r.t. the H × 7 torques by the
/// engine's adjoint. Buffers (workspace, one record per horizon step, states, gradients) are allocated once.
pub struct Mpc {
    pub solver: XpbdSolver,
    ws: XpbdWorkspace,
    recs: Vec<XpbdRecord>,
    states: Vec<MaximalState>,
    g_next: MaximalState,
    g_prev: MaximalState,
    g_u: Vec<f64>,
    gphi: Vec<f64>,
    controls: Vec<Control>,
}

impl Mpc {
    pub fn new(model: &Model, capacity: usize) -> Result<Self, ExperimentError> {
        let solver = XpbdSolver::default(); // 30 Gauss–Seidel iterations, limits on (§4.0, §6.6)
        let nj = model.joint_count();
        Ok(Mpc {
            ws: solver.workspace(model)?,
            recs: (0..capacity).map(|_| solver.record(model)).collect(),
            states: vec![model.state_at(&vec![0.0; nj])?; capacity + 1],
            g_next: solver.zero_grad(model),
            g_prev: solver.zero_grad(model),
            g_u: vec![0.0; nj],
            gphi: vec![0.0; nj],
            controls: vec![Control::zeros(nj); capacity],
            solver,
        })
    }

    /// One plain step (the applied torque advances the simulated state).
    pub fn advance(
        &mut self,
        model: &Model,
        s: &MaximalState,
        u: &[f64],
        out: &mut MaximalState,
    ) -> Result<(), ExperimentError> {
        self.controls[0].joint_torque.copy_from_slice(u);
        self.solver.step(model, s, &self.controls[0], DT, out, &mut self.ws, None)?;
        Ok(())
    }

    /// L of Eq. 26 for the torques `u` (H × nj, row-major, H = `targets.len()`) from `s0`; `u_prev` is the last
    /// applied torque (the λ3 term's u^{t−1}); if `grad` is given it receives ∂L/∂u (same shape).
    #[allow(clippy::too_many_arguments)]
    pub fn loss(
        &mut self,
        model: &Model,
        s0: &MaximalState,
        u: &[f64],
        u_prev: &[f64],
        targets: &[StepTarget],
        w: &Weights,
        grad: Option<&mut [f64]>,
    ) -> Result<f64, ExperimentError> {
        let (h, nj) = (targets.len(), model.joint_count());
        if h == 0 || h > self.recs.len() || u.len() != h * nj || u_prev.len() != nj {
            return Err(ExperimentError::Failed(format!(
                "MPC loss: horizon {h} (capacity {}), {} torques for {nj} joints",
                self.recs.len(),
                u.len()
            )));
        }
        let norm = 1.0 / (h * nj) as f64;
        self.states[0].clone_from(s0);
        for k in 0..h {
            self.controls[k].joint_torque.copy_from_slice(&u[k * nj..(k + 1) * nj]);
            let (a, b) = self.states.split_at_mut(k + 1);
            self.solver.step(model, &a[k], &self.controls[k], DT, &mut b[0], &mut self.ws, Some(&mut self.recs[k]))?;
        }
        let mut loss = 0.0;
        for k in 0..h {
            let s = &self.states[k + 1];
            let phi = self.solver.joint_angles(model, s);
            for j in 0..nj {
                let d = phi[j] - targets[k].angles[j];
                loss += w.angle * d * d;
                let du = u[k * nj + j] - if k == 0 { u_prev[j] } else { u[(k - 1) * nj + j] };
                loss += w.smooth * du * du;
            }
            for b in model.dynamic_bodies() {
                loss += w.omega * (s.w[b] - targets[k].omega[b]).norm_squared();
            }
        }
        let Some(grad) = grad else { return Ok(loss * norm) };
        // reverse sweep: ∂L/∂s_{k+1} from the loss terms, then back through step k (record k)
        self.solver.clear_grad(&mut self.g_next);
        for k in (0..h).rev() {
            self.state_grad(model, k + 1, &targets[k], w, norm);
            self.reverse_step(model, k)?;
            grad[k * nj..(k + 1) * nj].copy_from_slice(&self.g_u);
            std::mem::swap(&mut self.g_next, &mut self.g_prev);
        }
        // λ3 term
        for k in 0..h {
            for j in 0..nj {
                let du = u[k * nj + j] - if k == 0 { u_prev[j] } else { u[(k - 1) * nj + j] };
                grad[k * nj + j] += 2.0 * w.smooth * du * norm;
                if k > 0 {
                    grad[(k - 1) * nj + j] -= 2.0 * w.smooth * du * norm;
                }
            }
        }
        Ok(loss * norm)
    }

    /// One-step (H = 1) residual ρ of Eq. 26 (L = ‖ρ‖²) and its exact Jacobian ∂ρ/∂u (one reverse step per row):
    /// rows √(λ1/K) (φ_j − φ̂_j) when λ1 ≠ 0, √(λ2/K) (ω_b − ω̂_b) (3 per dynamic body) when λ2 ≠ 0,
    /// √(λ3/K) (u_j − u_j^{t−1}) when λ3 ≠ 0; K = 7 joints.
    #[allow(clippy::too_many_arguments)]
    pub fn residual_jacobian(
        &mut self,
        model: &Model,
        s0: &MaximalState,
        u: &[f64],
        u_prev: &[f64],
        target: &StepTarget,
        w: &Weights,
    ) -> Result<(DVector<f64>, DMatrix<f64>), ExperimentError> {
        let nj = model.joint_count();
        self.loss(model, s0, u, u_prev, std::slice::from_ref(target), w, None)?;
        let s = self.states[1].clone();
        let phi = self.solver.joint_angles(model, &s);
        let bodies = model.dynamic_bodies();
        let k = nj as f64;
        let (a1, a2, a3) = ((w.angle / k).sqrt(), (w.omega / k).sqrt(), (w.smooth / k).sqrt());
        let na = if w.angle != 0.0 { nj } else { 0 };
        let nw = if w.omega != 0.0 { 3 * bodies.len() } else { 0 };
        let ns = if w.smooth != 0.0 { nj } else { 0 };
        let mut rho = DVector::zeros(na + nw + ns);
        let mut jac = DMatrix::zeros(na + nw + ns, nj);
        for i in 0..na + nw {
            self.solver.clear_grad(&mut self.g_next);
            if i < na {
                rho[i] = a1 * (phi[i] - target.angles[i]);
                self.gphi.iter_mut().for_each(|g| *g = 0.0);
                self.gphi[i] = a1;
                self.solver.joint_angles_vjp(model, &s, &self.gphi, &mut self.g_next);
            } else {
                let (b, d) = (bodies[(i - na) / 3], (i - na) % 3);
                rho[i] = a2 * (s.w[b][d] - target.omega[b][d]);
                self.g_next.w[b][d] = a2;
            }
            self.reverse_step(model, 0)?;
            for j in 0..nj {
                jac[(i, j)] = self.g_u[j];
            }
        }
        for j in 0..ns {
            rho[na + nw + j] = a3 * (u[j] - u_prev[j]);
            jac[(na + nw + j, j)] = a3;
        }
        Ok((rho, jac))
    }

    /// The exact minimiser of the one-step loss from `u0`: Gauss–Newton with the exact Jacobian (least squares by
    /// SVD) and a backtracking line search, until the step is below 1e-10 N·m or the loss stops decreasing.
    /// Returns (u, loss, Gauss–Newton iterations).
    #[allow(clippy::too_many_arguments)]
    pub fn solve_exact(
        &mut self,
        model: &Model,
        s0: &MaximalState,
        u0: &[f64],
        u_prev: &[f64],
        target: &StepTarget,
        w: &Weights,
        max_iters: usize,
    ) -> Result<(Vec<f64>, f64, usize), ExperimentError> {
        let tg = std::slice::from_ref(target);
        let o = GnOptions { max_iter: max_iters, step_tol: 1e-10, ..GnOptions::default() };
        let rep = gauss_newton(
            self,
            u0,
            &o,
            |m, u| m.loss(model, s0, u, u_prev, tg, w, None),
            |m, u| m.residual_jacobian(model, s0, u, u_prev, target, w),
        )?;
        Ok((rep.x, rep.loss, rep.iterations))
    }

    /// Back through step k (record k): `g_u` ← ∂(ḡ_next · s_{k+1})/∂u^k, `g_prev` ← the state cotangent.
    fn reverse_step(&mut self, model: &Model, k: usize) -> Result<(), ExperimentError> {
        self.solver.clear_grad(&mut self.g_prev);
        self.g_u.iter_mut().for_each(|g| *g = 0.0);
        self.solver.step_vjp(
            model,
            &self.recs[k],
            &self.g_next,
            &mut self.g_prev,
            &mut self.g_u,
            &torsion_model::ParamSelection::none(),
            &mut [],
            &mut self.ws,
        )?;
        Ok(())
    }

    /// Add ∂L/∂s_i (angle and ω terms of state i = k + 1) into `g_next`.
    fn state_grad(&mut self, model: &Model, i: usize, target: &StepTarget, w: &Weights, norm: f64) {
        let s = &self.states[i];
        if w.angle != 0.0 {
            let phi = self.solver.joint_angles(model, s);
            for ((g, p), t) in self.gphi.iter_mut().zip(&phi).zip(&target.angles) {
                *g = 2.0 * w.angle * norm * (p - t);
            }
            self.solver.joint_angles_vjp(model, s, &self.gphi, &mut self.g_next);
        }
        if w.omega != 0.0 {
            for b in model.dynamic_bodies() {
                self.g_next.w[b] += (s.w[b] - target.omega[b]) * (2.0 * w.omega * norm);
            }
        }
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use torsion_diff::{fd_gradient, rel_err};

    /// The MPC loss gradient (the engine's adjoint through 3 steps plus the Eq. 26 terms) against central
    /// differences, with all three loss terms active.
    #[test]
    fn mpc_loss_gradient_matches_finite_differences() {
        let m = nominal_model().unwrap();
        let r = reference(&m, false, 4).unwrap();
        let tg: Vec<StepTarget> = (1..4).map(|t| step_target(&m, &r.q[t], &r.qd[t]).unwrap()).collect();
        let mut s0 = m.state_at(&[0.05, -0.35, 0.1, 1.05, 0.1, 0.62, 0.05]).unwrap();
        for k in 1..8 {
            s0.w[k] = Vec3::new(0.1 * k as f64, -0.05, 0.2);
        }
        let u: Vec<f64> = (0..21).map(|i| r.u[i / 7][i % 7] + 0.3 * (i as f64).sin()).collect();
        let up: Vec<f64> = r.u[0].iter().map(|v| v - 0.5).collect();
        let w = Weights { angle: 1.0, omega: 0.02, smooth: 1e-3 };
        let mut mpc = Mpc::new(&m, 3).unwrap();
        let mut g = vec![0.0; 21];
        mpc.loss(&m, &s0, &u, &up, &tg, &w, Some(&mut g)).unwrap();
        let fd = fd_gradient(
            |d| {
                let uu: Vec<f64> = u.iter().zip(d).map(|(a, b)| a + b).collect();
                Mpc::new(&m, 3).unwrap().loss(&m, &s0, &uu, &up, &tg, &w, None).unwrap()
            },
            21,
            1e-4,
        );
        let e = rel_err(&g, &fd);
        eprintln!("MPC loss gradient vs FD: rel err {e:.2e}");
        assert!(e < 1e-6, "{g:?} vs {fd:?}");
    }

    /// The one-step residual Jacobian against central differences, and the Gauss–Newton minimiser of the ω-only
    /// loss: the same point from zero and from g(q)-like starts, with a vanishing gradient.
    #[test]
    fn omega_only_exact_minimiser_is_unique_and_stationary() {
        let m = nominal_model().unwrap();
        let r = reference(&m, false, 3).unwrap();
        let s0 = measured_state(&m, &r.q[2], &r.qd[2]).unwrap();
        let tg = step_target(&m, &r.q[3], &r.qd[3]).unwrap();
        let mut mpc = Mpc::new(&m, 1).unwrap();
        let up = r.u[1].clone();
        let (rho, jac) = mpc.residual_jacobian(&m, &s0, &r.u[2], &up, &tg, &OMEGA).unwrap();
        let l = mpc.loss(&m, &s0, &r.u[2], &up, std::slice::from_ref(&tg), &OMEGA, None).unwrap();
        assert!((rho.norm_squared() - l).abs() < 1e-12 * l.max(1e-300), "‖ρ‖² {} vs L {l}", rho.norm_squared());
        for j in 0..7 {
            let d = 1e-5;
            let (mut a, mut b) = (r.u[2].clone(), r.u[2].clone());
            a[j] += d;
            b[j] -= d;
            let (ra, _) = mpc.residual_jacobian(&m, &s0, &a, &up, &tg, &OMEGA).unwrap();
            let (rb, _) = mpc.residual_jacobian(&m, &s0, &b, &up, &tg, &OMEGA).unwrap();
            let fd = (ra - rb) / (2.0 * d);
            let e = (&fd - jac.column(j)).norm() / fd.norm();
            assert!(e < 1e-5, "column {j}: rel err {e:e}");
        }
        let (u1, l1, _) = mpc.solve_exact(&m, &s0, &[0.0; 7], &up, &tg, &OMEGA, GN_ITERS).unwrap();
        let (u2, l2, _) = mpc.solve_exact(&m, &s0, &r.u[2], &up, &tg, &OMEGA, GN_ITERS).unwrap();
        let diff = u1.iter().zip(&u2).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        assert!(diff < 1e-6 && (l1 - l2).abs() <= 1e-9 * l1.max(1e-300), "{u1:?} vs {u2:?}");
        let mut g = vec![0.0; 7];
        mpc.loss(&m, &s0, &u1, &up, std::slice::from_ref(&tg), &OMEGA, Some(&mut g)).unwrap();
        let mut g0 = vec![0.0; 7];
        mpc.loss(&m, &s0, &[0.0; 7], &up, std::slice::from_ref(&tg), &OMEGA, Some(&mut g0)).unwrap();
        let n = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
        assert!(n(&g) < 1e-8 * n(&g0), "gradient at the minimiser {g:?} (at zero {g0:?})");
        assert!(l1 < l, "{l1} vs the true torque's {l}");
    }
}
