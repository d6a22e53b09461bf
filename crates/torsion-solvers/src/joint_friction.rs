//! Joint dry friction as MuJoCo defines it (`frictionloss`, issue 14 item 2): on every DoF k with
//! frictionloss f_k > 0 a generalized force |τ_k| ≤ f_k acts on the joint velocity, chosen per step by the
//! velocity-level box problem of the semi-implicit step (hard, where MuJoCo's is soft):
//!   v' = v* + M̃⁻¹ p,  p = h τ_fric,  p = argmin_{|p_k| ≤ h f_k} ½ pᵀ W p + pᵀ v*,  W = (M̃⁻¹)_FF
//! (v* = v + h q̈ without friction, M̃ = M + A + hD; KKT: |p_k| < h f_k ⇒ v'_k = 0 (stick), p_k = ∓h f_k ⇒
//! ±v'_k ≥ 0 (slide), i.e. maximum dissipation on the DoF box). W is the joint-space Delassus operator, its
//! columns M̃⁻¹ e_k by the step's articulated-body factorization (`aba_solve_factored_into`, O(n) each).
//! Solve (docs/decisions.md "Joint dry friction"): projected Gauss–Seidel on the primal values finds a stick /
//! slide split, a primal–dual active-set pass makes it exact (a linear solve on the stick block W_SS, its KKT
//! signs checked); the final linear solve runs on the scalar T, so dual numbers carry the implicit derivative of
//! the solution at its active set. The reverse mode (`project_adjoint`) and the analytic A, B (`project_jacobian`)
//! differentiate the same locally linear system: stuck DoFs are velocity constraints v'_S = 0 with multipliers,
//! sliding DoFs a constant force −sign(v'_k) f_k. Stick ↔ slide switches are the non-smooth points
//! (docs/gradients.md). No heap allocation after `new`.
use torsion_dynamics::aba::aba_solve_factored_into;
use torsion_dynamics::aba_derivatives::AbaDerivatives;
use torsion_dynamics::{DynData, DynError, DynModel};
use torsion_math::Scalar;

/// What a DoF's dry friction does in a step.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum FrictionMode {
    /// no friction loss on the DoF
    #[default]
    Off,
    /// v'_k = 0, |τ_k| ≤ frictionloss
    Stick,
    /// v'_k has sign `s` (±1), τ_k = −s · frictionloss
    Slide(f64),
}

/// The friction solve's buffers (sized for nv DoFs by [`JointFriction::new`]) and its result.
#[derive(Clone, Debug)]
pub struct JointFriction<T: Scalar> {
    nv: usize,
    /// the DoFs with friction loss (the slots)
    dofs: Vec<usize>,
    /// per slot: its mode
    mode: Vec<FrictionMode>,
    /// per DoF: its mode (what a record keeps)
    pub mode_dof: Vec<FrictionMode>,
    /// per slot c: M̃⁻¹ e_dofs[c] (column-major, nv per slot)
    cols: Vec<T>,
    /// the box problem on the primal values: W (row-major nf × nf), v*, bounds h f, impulses, velocities v'
    w: Vec<f64>,
    vstar: Vec<f64>,
    bound: Vec<f64>,
    p: Vec<f64>,
    vel: Vec<f64>,
    /// the stick block: slot indices, Cholesky factor of W_SS (row-major ns × ns), right-hand side
    stick: Vec<usize>,
    ns: usize,
    chol: Vec<T>,
    rhs: Vec<T>,
    /// impulses on T (per slot) and a unit vector / a solve's output (nv)
    pt: Vec<T>,
    e: Vec<T>,
    x: Vec<T>,
    /// the generalized friction force τ_fric (nv)
    pub force: Vec<T>,
    /// projected Gauss–Seidel sweeps + active-set passes of the last solve, and whether its KKT check held
    pub iterations: usize,
    pub converged: bool,
}

impl<T: Scalar> JointFriction<T> {
    pub fn new(nv: usize) -> Self {
        let z = || vec![T::zero(); nv];
        JointFriction {
            nv,
            dofs: Vec::with_capacity(nv),
            mode: vec![FrictionMode::Off; nv],
            mode_dof: vec![FrictionMode::Off; nv],
            cols: vec![T::zero(); nv * nv],
            w: vec![0.0; nv * nv],
            vstar: vec![0.0; nv],
            bound: vec![0.0; nv],
            p: vec![0.0; nv],
            vel: vec![0.0; nv],
            stick: vec![0; nv],
            ns: 0,
            chol: vec![T::zero(); nv * nv],
            rhs: z(),
            pt: z(),
            e: z(),
            x: z(),
            force: z(),
            iterations: 0,
            converged: true,
        }
    }

    /// Whether the last solve (or `prepare`) left stuck DoFs.
    pub fn has_stick(&self) -> bool {
        self.ns > 0
    }

    /// W(r, c) on T from the columns.
    fn wt(&self, r: usize, c: usize) -> T {
        self.cols[c * self.nv + self.dofs[r]]
    }

    /// The columns M̃⁻¹ e_k of the friction DoFs by the factorization the last ABA on `d` left.
    fn columns(&mut self, dm: &DynModel<T>, d: &mut DynData<T>) -> Result<(), DynError> {
        let nv = self.nv;
        for c in 0..self.dofs.len() {
            self.e.fill(T::zero());
            self.e[self.dofs[c]] = T::one();
            aba_solve_factored_into(dm, d, &self.e, &mut self.x)?;
            self.cols[c * nv..(c + 1) * nv].copy_from_slice(&self.x);
        }
        Ok(())
    }

    /// The friction solve of one step. On entry `acc` = q̈ without friction, and `d` holds the factorization of
    /// M̃ (the ABA that computed it); on exit `acc` = q̈ with friction, `force` = τ_fric, modes set.
    pub fn solve_into(
        &mut self,
        dm: &DynModel<T>,
        d: &mut DynData<T>,
        v: &[T],
        h: f64,
        acc: &mut [T],
    ) -> Result<(), DynError> {
        let nv = self.nv;
        self.dofs.clear();
        self.force.fill(T::zero());
        self.mode_dof.fill(FrictionMode::Off);
        (self.ns, self.iterations, self.converged) = (0, 0, true);
        for k in 0..nv {
            if dm.dof_frictionloss[k].re() > 0.0 {
                self.dofs.push(k);
            }
        }
        let nf = self.dofs.len();
        if nf == 0 {
            return Ok(());
        }
        self.columns(dm, d)?;
        for r in 0..nf {
            let k = self.dofs[r];
            for c in 0..nf {
                self.w[r * nf + c] = self.wt(r, c).re();
            }
            self.vstar[r] = (v[k] + acc[k] * T::c(h)).re();
            self.bound[r] = h * dm.dof_frictionloss[k].re();
        }
        self.box_solve(nf);
        // the exact solution at the active set, on T
        let ht = T::c(h);
        let ok = self.stick_solve_t(dm, v, acc, ht);
        self.converged &= ok;
        for r in 0..nf {
            let (k, p) = (self.dofs[r], self.pt[r]);
            self.mode_dof[k] = self.mode[r];
            self.force[k] = p / ht;
            for i in 0..nv {
                acc[i] += self.cols[r * nv + i] * p / ht;
            }
        }
        Ok(())
    }

    /// p on T: sliding slots at ∓h f, the stick slots from W_SS p_S = −(v*_S + W_SB p_B); keeps W_SS's factor.
    fn stick_solve_t(&mut self, dm: &DynModel<T>, v: &[T], acc: &[T], ht: T) -> bool {
        let nf = self.dofs.len();
        let mut ns = 0;
        for r in 0..nf {
            match self.mode[r] {
                FrictionMode::Slide(s) => self.pt[r] = -T::c(s) * ht * dm.dof_frictionloss[self.dofs[r]],
                _ => {
                    self.stick[ns] = r;
                    ns += 1;
                }
            }
        }
        for a in 0..ns {
            let ra = self.stick[a];
            let k = self.dofs[ra];
            let mut b = -(v[k] + acc[k] * ht);
            for c in 0..nf {
                if let FrictionMode::Slide(_) = self.mode[c] {
                    b -= self.wt(ra, c) * self.pt[c];
                }
            }
            self.rhs[a] = b;
            for c in 0..ns {
                self.chol[a * ns + c] = self.wt(ra, self.stick[c]);
            }
        }
        self.ns = ns;
        if !cholesky(&mut self.chol, ns) {
            // W_SS is SPD for a positive definite M̃: only a degenerate model lands here; no friction then
            self.ns = 0;
            for r in 0..nf {
                self.pt[r] = T::zero();
            }
            return false;
        }
        chol_solve(&self.chol, ns, &mut self.rhs[..ns]);
        for a in 0..ns {
            self.pt[self.stick[a]] = self.rhs[a];
        }
        true
    }

    /// The box problem on the primal values (nf slots): projected Gauss–Seidel, then primal–dual active-set
    /// passes (exact linear solves on the stick block) until the KKT signs hold; more sweeps if they do not.
    fn box_solve(&mut self, nf: usize) {
        let scale = self.vstar[..nf].iter().fold(0.0_f64, |m, x| m.max(x.abs()));
        let vtol = 1e-12 * (1.0 + scale);
        self.p[..nf].fill(0.0);
        for sweeps in [30, 300, 3000] {
            for _ in 0..sweeps {
                self.iterations += 1;
                let mut change = 0.0_f64;
                for i in 0..nf {
                    let r = self.vstar[i] + (0..nf).map(|j| self.w[i * nf + j] * self.p[j]).sum::<f64>();
                    let new = (self.p[i] - r / self.w[i * nf + i]).clamp(-self.bound[i], self.bound[i]);
                    change = change.max((new - self.p[i]).abs() / self.bound[i]);
                    self.p[i] = new;
                }
                if change < 1e-15 {
                    break;
                }
            }
            for i in 0..nf {
                self.mode[i] = if self.p[i].abs() < self.bound[i] {
                    FrictionMode::Stick
                } else {
                    FrictionMode::Slide(-self.p[i].signum())
                };
            }
            for _ in 0..2 * nf + 4 {
                self.iterations += 1;
                if !self.stick_solve_f64(nf) {
                    break;
                }
                let mut changed = false;
                for i in 0..nf {
                    let vi = self.vstar[i] + (0..nf).map(|j| self.w[i * nf + j] * self.p[j]).sum::<f64>();
                    self.vel[i] = vi;
                    match self.mode[i] {
                        FrictionMode::Stick if self.p[i].abs() > self.bound[i] * (1.0 + 1e-12) => {
                            self.mode[i] = FrictionMode::Slide(-self.p[i].signum());
                            changed = true;
                        }
                        FrictionMode::Slide(s) if s * vi < -vtol => {
                            self.mode[i] = FrictionMode::Stick;
                            changed = true;
                        }
                        _ => {}
                    }
                }
                if !changed {
                    return;
                }
            }
        }
        // no consistent active set found (never seen): keep the last sweep's split, flag the step
        self.converged = false;
    }

    /// [`JointFriction::stick_solve_t`] on the primal W (the active-set passes), into `p`.
    fn stick_solve_f64(&mut self, nf: usize) -> bool {
        let mut ns = 0;
        for r in 0..nf {
            match self.mode[r] {
                FrictionMode::Slide(s) => self.p[r] = -s * self.bound[r],
                _ => {
                    self.stick[ns] = r;
                    ns += 1;
                }
            }
        }
        // the T buffers hold the primal values here (lifted by T::c: zero tangents)
        let mut a_buf = std::mem::take(&mut self.chol);
        let mut rhs = std::mem::take(&mut self.rhs);
        let mut ok = true;
        {
            for a in 0..ns {
                let ra = self.stick[a];
                let mut b = -self.vstar[ra];
                for c in 0..nf {
                    if let FrictionMode::Slide(_) = self.mode[c] {
                        b -= self.w[ra * nf + c] * self.p[c];
                    }
                }
                rhs[a] = T::c(b);
                for c in 0..ns {
                    a_buf[a * ns + c] = T::c(self.w[ra * nf + self.stick[c]]);
                }
            }
            if cholesky(&mut a_buf, ns) {
                chol_solve(&a_buf, ns, &mut rhs[..ns]);
                for a in 0..ns {
                    self.p[self.stick[a]] = rhs[a].re();
                }
            } else {
                ok = false;
            }
        }
        self.chol = a_buf;
        self.rhs = rhs;
        ok
    }

    /// For the reverse mode and the Jacobians: the stick set from recorded per-DoF modes, the columns of its DoFs
    /// by the current factorization of M̃ in `d`, and the Cholesky factor of W_SS.
    pub fn prepare(&mut self, dm: &DynModel<T>, d: &mut DynData<T>, modes: &[FrictionMode]) -> Result<(), DynError> {
        self.dofs.clear();
        for (k, m) in modes.iter().enumerate() {
            if *m == FrictionMode::Stick {
                self.dofs.push(k);
            }
        }
        let ns = self.dofs.len();
        self.ns = ns;
        if ns == 0 {
            return Ok(());
        }
        self.columns(dm, d)?;
        for a in 0..ns {
            self.stick[a] = a;
            self.mode[a] = FrictionMode::Stick;
            for c in 0..ns {
                self.chol[a * ns + c] = self.wt(a, c);
            }
        }
        if !cholesky(&mut self.chol, ns) {
            return Err(DynError::Unsupported("joint friction: singular stick block W_SS".into()));
        }
        Ok(())
    }

    /// The adjoint of the stick constraints (after `prepare` or `solve_into`): with λ₀ = M̃⁻¹ ḡ_q̈ in `lam`,
    /// ν = W_SS⁻¹ λ₀_S, λ = λ₀ − M̃⁻¹ E_S ν (so λ_S = 0) and ḡ_v_S −= ν / h (the constraint v_S + h q̈_S = 0).
    pub fn project_adjoint(&mut self, lam: &mut [T], gv: &mut [T], h: f64) {
        let (ns, nv) = (self.ns, self.nv);
        if ns == 0 {
            return;
        }
        for a in 0..ns {
            self.rhs[a] = lam[self.dofs[self.stick[a]]];
        }
        chol_solve(&self.chol, ns, &mut self.rhs[..ns]);
        for a in 0..ns {
            let (r, nu) = (self.stick[a], self.rhs[a]);
            for i in 0..nv {
                lam[i] -= self.cols[r * nv + i] * nu;
            }
            gv[self.dofs[r]] -= nu / T::c(h);
        }
    }
}

impl JointFriction<f64> {
    /// The stick constraints on the analytic derivatives (after `solve_into` at the same M̃): with P = I −
    /// M̃⁻¹E_S W_SS⁻¹ E_Sᵀ, ∂q̈/∂x ← P ∂q̈/∂x for x = q, v, τ, and ∂q̈/∂v_S −= M̃⁻¹E_S W_SS⁻¹ / h.
    pub fn project_jacobian(&mut self, ad: &mut AbaDerivatives, h: f64) {
        let (ns, nv) = (self.ns, self.nv);
        if ns == 0 {
            return;
        }
        for m in [&mut ad.d_dq, &mut ad.d_dv, &mut ad.d_dtau] {
            for c in 0..nv {
                for a in 0..ns {
                    self.rhs[a] = m[(self.dofs[self.stick[a]], c)];
                }
                chol_solve(&self.chol, ns, &mut self.rhs[..ns]);
                for a in 0..ns {
                    let (r, z) = (self.stick[a], self.rhs[a]);
                    for i in 0..nv {
                        m[(i, c)] -= self.cols[r * nv + i] * z;
                    }
                }
            }
        }
        for b in 0..ns {
            self.rhs[..ns].fill(0.0);
            self.rhs[b] = 1.0;
            chol_solve(&self.chol, ns, &mut self.rhs[..ns]);
            let col = self.dofs[self.stick[b]];
            for a in 0..ns {
                let (r, z) = (self.stick[a], self.rhs[a]);
                for i in 0..nv {
                    ad.d_dv[(i, col)] -= self.cols[r * nv + i] * z / h;
                }
            }
        }
    }
}

/// In-place Cholesky L Lᵀ of the leading n × n block of `a` (row-major, lower triangle written); false when a pivot
/// is not positive (on the primal value).
fn cholesky<T: Scalar>(a: &mut [T], n: usize) -> bool {
    for j in 0..n {
        let mut dj = a[j * n + j];
        for k in 0..j {
            dj -= a[j * n + k] * a[j * n + k];
        }
        if dj.re().is_nan() || dj.re() <= 0.0 {
            return false;
        }
        let dj = dj.sqrt();
        a[j * n + j] = dj;
        for i in j + 1..n {
            let mut s = a[i * n + j];
            for k in 0..j {
                s -= a[i * n + k] * a[j * n + k];
            }
            a[i * n + j] = s / dj;
        }
    }
    true
}

/// Solve L Lᵀ x = b in place with the factor of [`cholesky`].
fn chol_solve<T: Scalar>(a: &[T], n: usize, b: &mut [T]) {
    for i in 0..n {
        let mut s = b[i];
        for k in 0..i {
            s -= a[i * n + k] * b[k];
        }
        b[i] = s / a[i * n + i];
    }
    for i in (0..n).rev() {
        let mut s = b[i];
        for k in i + 1..n {
            s -= a[k * n + i] * b[k];
        }
        b[i] = s / a[i * n + i];
    }
}

#[cfg(test)]
mod tests {
    use super::FrictionMode;
    use crate::featherstone::FeatherstoneSolver;
    use crate::generalized::tests::loss_central_differences;
    use crate::generalized::{transposed_jacobian_product_with, ProductScratch};
    use crate::solver::{DiffSolver, Solver, StepJacobians};
    use torsion_diff::fd_jacobian;
    use torsion_model::{Control, GenState, Model, ParamSelection};

    /// hinge – hinge – slide chain with damping, armature and friction loss on every joint
    fn chain(gravity: &str) -> Model {
        let xml = format!(
            r#"<mujoco><option timestep="0.01" gravity="{gravity}"/><worldbody>
            <body name="a"><joint name="h1" axis="0 1 0" damping="0.2" armature="0.02" frictionloss="0.3"/>
            <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.05" mass="1"/>
            <body pos="0.5 0 0"><joint name="h2" axis="0 1 0" damping="0.1" armature="0.01" frictionloss="0.4"/>
            <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.04" mass="0.7"/>
            <body pos="0.4 0 0"><joint name="s" type="slide" axis="1 0 0" damping="0.3" armature="0.05"
            frictionloss="1.0"/><geom size="0.08" mass="0.5"/></body></body></body></worldbody></mujoco>"#
        );
        torsion_model::io::mjcf::load_mjcf_str(&xml, "friction_chain.xml", None).unwrap()
    }

    // the normwise relative error of docs/gradients.md
    use torsion_diff::rel_err as nrel;

    /// One step's reverse-mode gradients (θ: every dynamics parameter incl. joint damping, armature, friction
    /// loss; state; controls), the analytic A, B, C against central differences and the all-dual reference, at
    /// a state whose friction modes are `want`. Returns the errors.
    fn check(m: &Model, s: &GenState, u: &Control, want: &[FrictionMode]) -> [f64; 8] {
        let (solver, dt) = (FeatherstoneSolver::default(), 0.01);
        let sel = ParamSelection::dynamics(m);
        let mut ws = solver.workspace(m).unwrap();
        let mut rec = solver.record(m);
        let mut o = s.clone();
        solver.step(m, s, u, dt, &mut o, &mut ws, Some(&mut rec)).unwrap();
        // the modes the step found (sign of a slide: the direction of v')
        assert_eq!(rec.friction_modes(), want, "friction modes");
        let g_out = GenState::new(vec![0.7, -0.4, 1.1], vec![0.3, 0.9, -0.6]);
        let (mut gs, mut gu, mut gt) = (solver.zero_grad(m), vec![0.0; m.nv()], vec![0.0; sel.len()]);
        solver.step_vjp(m, &rec, &g_out, &mut gs, &mut gu, &sel, &mut gt, &mut ws).unwrap();
        let h = 1e-6;
        let [fd_t, fd_s, fd_u] = loss_central_differences(&solver, m, s, u, dt, &sel, &g_out, h);
        let nt = solver.tangent_dim(m);
        let gst = solver.grad_to_tangent(m, s, &gs);
        // the all-dual reference (the generic step on duals: friction solved on T at the same active set)
        let dual = solver.step_jacobians_dual(crate::featherstone::StepPoint::new(m, s, u, dt), &sel).unwrap();
        let (mut rs, mut ru, mut rt) = (solver.zero_grad(m), vec![0.0; m.nv()], vec![0.0; sel.len()]);
        let mut sc = ProductScratch::default();
        transposed_jacobian_product_with(m, &s.q, &o.q, &dual, &g_out, &mut rs, &mut ru, &mut rt, &mut sc);
        let mut jac = StepJacobians::for_solver(&solver, m, &sel);
        solver.step_jacobians_into(m, s, u, dt, &sel, &mut ws, &mut jac).unwrap();
        let next = |ss: &GenState, uu: &[f64]| {
            let mut o = ss.clone();
            solver
                .step(m, ss, &Control::from_torques(uu), dt, &mut o, &mut solver.workspace(m).unwrap(), None)
                .unwrap();
            o
        };
        let fa = fd_jacobian(|d| solver.local_diff(m, &o, &next(&solver.retract(m, s, d), &u.joint_torque)), nt, h);
        let fb = fd_jacobian(
            |d| {
                let uu: Vec<f64> = u.joint_torque.iter().zip(d).map(|(a, b)| a + b).collect();
                solver.local_diff(m, &o, &next(s, &uu))
            },
            m.nv(),
            h,
        );
        [
            nrel(&gt, &fd_t),
            nrel(&gst, &fd_s),
            nrel(&gu, &fd_u),
            nrel(&gt, &rt).max(nrel(&gs.v, &rs.v)).max(nrel(&gu, &ru)),
            nrel(jac.a.as_slice(), fa.as_slice()),
            nrel(jac.b.as_slice(), fb.as_slice()),
            nrel(jac.a.as_slice(), dual.a.as_slice()).max(nrel(jac.b.as_slice(), dual.b.as_slice())),
            nrel(jac.c.as_slice(), dual.c.as_slice()),
        ]
    }

    /// Sliding regime (every DoF moving, friction at its bound against the motion) and a mixed one (the first
    /// hinge sliding, the second hinge and the slide stuck: v' = 0 there): reverse-mode θ / state / control
    /// gradients against central differences (≤ 1e-6) and the all-dual reference, A and B (analytic, projected on
    /// the stick constraints) against both, C against the duals.
    #[test]
    fn joint_friction_gradients_match_central_differences() {
        let cases = [
            (
                "sliding",
                chain("0 0 -9.81"),
                GenState::new(vec![0.3, -0.5, 0.05], vec![2.0, -1.5, 1.0]),
                Control::from_torques(&[0.5, -0.2, 0.3]),
                [FrictionMode::Slide(1.0), FrictionMode::Slide(-1.0), FrictionMode::Slide(1.0)],
            ),
            (
                "stick + slide",
                chain("0 0 0"),
                GenState::new(vec![0.3, -0.5, 0.05], vec![1.0, 0.0, 0.0]),
                Control::from_torques(&[2.0, 0.05, -0.1]),
                [FrictionMode::Slide(1.0), FrictionMode::Stick, FrictionMode::Stick],
            ),
        ];
        for (name, m, s, u, want) in cases {
            let e = check(&m, &s, &u, &want);
            eprintln!(
                "joint friction, {name}: VJP θ/s/u vs FD {:.1e} {:.1e} {:.1e}, vs duals {:.1e}; A/B vs FD {:.1e} {:.1e}, \
                 A,B / C vs duals {:.1e} {:.1e}",
                e[0], e[1], e[2], e[3], e[4], e[5], e[6], e[7]
            );
            assert!(e[..3].iter().chain(&e[4..6]).all(|x| *x < 1e-6), "{name}: {e:?}");
            assert!(e[3] < 1e-10 && e[6] < 1e-10 && e[7] < 1e-10, "{name}: {e:?}");
        }
    }

    /// A joint held by a torque below its friction loss stays exactly at rest (stick: v' = 0), and one above it
    /// moves; the friction force equals the applied torque while stuck.
    #[test]
    fn torque_below_frictionloss_stays_at_rest() {
        let m = chain("0 0 0");
        let solver = FeatherstoneSolver::default();
        let mut ws = solver.workspace(&m).unwrap();
        let fl = [0.3, 0.4, 1.0];
        for (scale, moves) in [(0.9, false), (1.1, true)] {
            let u = Control::from_torques(&[scale * fl[0], -scale * fl[1], 0.0]);
            let mut s = GenState::new(vec![0.2, -0.3, 0.0], vec![0.0; 3]);
            for _ in 0..100 {
                let mut o = s.clone();
                let info = solver.step(&m, &s, &u, 0.01, &mut o, &mut ws, None).unwrap();
                assert!(info.converged);
                s = o;
            }
            let vmax = s.v.iter().fold(0.0_f64, |a, x| a.max(x.abs()));
            eprintln!("torque {scale} × frictionloss: max |v| after 100 steps {vmax:.1e}, q {:?}", s.q);
            if moves {
                assert!(vmax > 1e-2, "moves above frictionloss: {vmax}");
            } else {
                assert!(vmax < 1e-12 && (s.q[0] - 0.2).abs() < 1e-12, "stays at rest: {vmax} {:?}", s.q);
            }
        }
        // without friction loss the same small torque moves it (the test can fail)
        let mut free = m.clone();
        free.joint_frictionloss.iter_mut().for_each(|f| *f = 0.0);
        let s = GenState::new(vec![0.2, -0.3, 0.0], vec![0.0; 3]);
        let mut o = s.clone();
        let u = Control::from_torques(&[0.27, -0.36, 0.0]);
        solver.step(&free, &s, &u, 0.01, &mut o, &mut solver.workspace(&free).unwrap(), None).unwrap();
        assert!(o.v[0].abs() > 1e-3);
    }
}
