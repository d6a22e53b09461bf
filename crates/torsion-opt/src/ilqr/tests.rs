//! The backward pass's quadratic model ΔV(α) against the true closed-loop cost J(α) of the forward pass: central
//! differences at α = 0 on a nonlinear problem (the first-order term Σ kᵀQ_u is exact for any dynamics), and
//! the whole quadratic on a linear-quadratic one (there iLQR's model is the problem itself).
use super::*;
use torsion_diff::rel_err;
use torsion_math::Vec3;
use torsion_model::builder::two_link_arm;
use torsion_model::GenState;
use torsion_solvers::FeatherstoneSolver;

/// Linear dynamics x⁺ = A x + B u on Rⁿ (a damped double integrator per axis) with a quadratic cost: the test
/// problem on which ΔV is exact.
struct Linear {
    a: DMatrix<f64>,
    b: DMatrix<f64>,
}

impl Dynamics for Linear {
    type State = DVector<f64>;
    fn state_dim(&self) -> usize {
        self.a.nrows()
    }
    fn control_dim(&self) -> usize {
        self.b.ncols()
    }
    fn step(&mut self, x: &DVector<f64>, u: &[f64], out: &mut DVector<f64>) -> Result<(), IlqrError> {
        *out = &self.a * x + &self.b * DVector::from_column_slice(u);
        Ok(())
    }
    fn jacobians(
        &mut self,
        _: &DVector<f64>,
        _: &[f64],
        a: &mut DMatrix<f64>,
        b: &mut DMatrix<f64>,
    ) -> Result<(), IlqrError> {
        a.copy_from(&self.a);
        b.copy_from(&self.b);
        Ok(())
    }
    fn diff(&mut self, x: &DVector<f64>, o: &DVector<f64>, out: &mut [f64]) {
        for i in 0..x.len() {
            out[i] = o[i] - x[i];
        }
    }
}

/// ½ (x − x*)ᵀ Q (x − x*) + ½ uᵀ R u, terminal ½ (x − x*)ᵀ Q_f (x − x*), plus a cross term xᵀ N u (ℓ_ux ≠ 0).
struct Quadratic {
    target: DVector<f64>,
    q: f64,
    r: f64,
    qf: f64,
    n: DMatrix<f64>,
}

impl Cost<DVector<f64>> for Quadratic {
    fn running(&mut self, _: usize, x: &DVector<f64>, u: &[f64]) -> f64 {
        let e = x - &self.target;
        let u = DVector::from_column_slice(u);
        0.5 * self.q * e.norm_squared() + 0.5 * self.r * u.norm_squared() + u.dot(&(&self.n * &e))
    }
    fn running_derivs(&mut self, _: usize, x: &DVector<f64>, u: &[f64], d: &mut CostDerivs) {
        let e = x - &self.target;
        let u = DVector::from_column_slice(u);
        d.lx.copy_from(&(&e * self.q + self.n.transpose() * &u));
        d.lu.copy_from(&(&u * self.r + &self.n * &e));
        d.lxx.fill_with_identity();
        d.lxx *= self.q;
        d.luu.fill_with_identity();
        d.luu *= self.r;
        d.lux.copy_from(&self.n);
    }
    fn terminal(&mut self, x: &DVector<f64>) -> f64 {
        0.5 * self.qf * (x - &self.target).norm_squared()
    }
    fn terminal_derivs(&mut self, x: &DVector<f64>, lx: &mut DVector<f64>, lxx: &mut DMatrix<f64>) {
        lx.copy_from(&((x - &self.target) * self.qf));
        lxx.fill_with_identity();
        *lxx *= self.qf;
    }
}

fn linear_problem() -> (Linear, Quadratic, DVector<f64>) {
    let h = 0.1;
    // two axes: (p1, p2, v1, v2), damped
    let a =
        DMatrix::from_row_slice(4, 4, &[1.0, 0.0, h, 0.0, 0.0, 1.0, 0.0, h, 0.0, 0.0, 0.95, 0.0, 0.0, 0.0, 0.0, 0.9]);
    let b = DMatrix::from_row_slice(4, 2, &[0.0, 0.0, 0.0, 0.0, h, 0.0, 0.02, h]);
    let n = DMatrix::from_row_slice(2, 4, &[0.01, 0.0, 0.02, 0.0, 0.0, -0.01, 0.0, 0.01]);
    let cost = Quadratic { target: DVector::from_vec(vec![1.0, -0.5, 0.0, 0.0]), q: 0.1, r: 0.01, qf: 10.0, n };
    (Linear { a, b }, cost, DVector::from_vec(vec![0.0, 0.2, 0.3, 0.0]))
}

/// Ilqr buffers on the nominal rollout of `u0` from `x0`, linearised, after one backward pass at μ = 0; and the
/// nominal's cost.
fn backward_at<X: Clone, D: Dynamics<State = X>, C: Cost<X>>(
    dynamics: &mut D,
    cost: &mut C,
    x0: &X,
    u0: &[DVector<f64>],
) -> (Ilqr<X>, f64) {
    let mut il = Ilqr::new(dynamics.state_dim(), dynamics.control_dim(), u0.len(), x0, IlqrOptions::default()).unwrap();
    il.xs[0] = x0.clone();
    il.us.clone_from(&u0.to_vec());
    let j0 = il.rollout_nominal(dynamics, cost);
    il.linearise(dynamics, cost).unwrap();
    assert!(il.backward_pass(0.0));
    (il, j0)
}

/// Linear-quadratic: one backward pass at μ = 0 and the forward pass reproduce ΔV(α) = α Σ kᵀQ_u + ½ α² Σ
/// kᵀQ_uu k exactly for any α (J(α) − J(0), relative 1e-9), and α = 1 lands on the optimum (the central-difference
/// gradient of J w.r.t. every control is ~0 afterwards, against its size before).
#[test]
fn expected_reduction_is_exact_on_a_linear_quadratic_problem() {
    let (mut dynamics, mut cost, x0) = linear_problem();
    let t_len = 15;
    let u0: Vec<DVector<f64>> = (0..t_len).map(|t| DVector::from_vec(vec![0.3 * (t as f64).sin(), -0.2])).collect();
    let (mut il, j0) = backward_at(&mut dynamics, &mut cost, &x0, &u0);
    let mut worst: f64 = 0.0;
    for alpha in [0.25, 0.5, 1.0, 1.5] {
        let j = il.forward_pass(&mut dynamics, &mut cost, alpha);
        let predicted = alpha * il.dv[0] + alpha * alpha * il.dv[1];
        worst = worst.max(((j - j0) - predicted).abs() / (j - j0).abs());
    }
    eprintln!("LQ: ΔV(α) vs J(α) − J(0): worst relative error {worst:e}");
    assert!(worst < 1e-9, "{worst:e}");
    // the gradient of the open-loop cost w.r.t. U before and after the α = 1 step
    let grad_norm = |us: &[DVector<f64>], dynamics: &mut Linear, cost: &mut Quadratic| {
        let mut g: f64 = 0.0;
        let mut il2 = Ilqr::new(4, 2, t_len, &x0, IlqrOptions::default()).unwrap();
        for t in 0..t_len {
            for i in 0..2 {
                let mut up = us.to_vec();
                up[t][i] += 1e-5;
                il2.us.clone_from(&up);
                let jp = il2.rollout_nominal(dynamics, cost);
                up[t][i] -= 2e-5;
                il2.us.clone_from(&up);
                let jm = il2.rollout_nominal(dynamics, cost);
                g = g.max(((jp - jm) / 2e-5).abs());
            }
        }
        g
    };
    let g0 = grad_norm(&u0, &mut dynamics, &mut cost);
    il.forward_pass(&mut dynamics, &mut cost, 1.0);
    let g1 = grad_norm(&il.us_new.clone(), &mut dynamics, &mut cost);
    eprintln!("LQ: max |∂J/∂u| {g0:e} before, {g1:e} after one step");
    assert!(g1 < 1e-7 * g0, "{g0:e} → {g1:e}");
}

/// The pendulum-like 2-link arm under Featherstone (gravity in the plane), tracking cost: the slope of the
/// closed-loop cost J(α) at α = 0 by central differences equals ΔV's first-order term Σ kᵀQ_u (relative 1e-6);
/// J(α) − J(0) − ΔV(α) is O(α²) (iLQR's ½ kᵀQ_uu k omits the dynamics' second derivatives).
#[test]
fn expected_reduction_matches_central_differences_on_the_arm() {
    let m = two_link_arm(0.5, 0.5, 1.0, Vec3::new(0.0, -9.8, 0.0), 0.01).unwrap();
    let solver = FeatherstoneSolver::default();
    let mut dynamics = SolverDynamics::new(&solver, &m, 0.01).unwrap();
    let x0 = GenState::new(vec![-1.2, 0.4], vec![0.3, -0.2]);
    let x_ref = GenState::new(vec![0.5, -0.3], vec![0.0, 0.0]);
    let mut cost =
        QuadraticTracking::diagonal(&m, x_ref, &[1.0, 1.0, 0.1, 0.1], &[0.01, 0.01], &[50.0, 50.0, 5.0, 5.0]);
    let t_len = 30;
    let u0: Vec<DVector<f64>> =
        (0..t_len).map(|t| DVector::from_vec(vec![2.0 * (0.2 * t as f64).cos(), 0.5])).collect();
    let (mut il, j0) = backward_at(&mut dynamics, &mut cost, &x0, &u0);
    let h = 1e-5;
    let slope =
        (il.forward_pass(&mut dynamics, &mut cost, h) - il.forward_pass(&mut dynamics, &mut cost, -h)) / (2.0 * h);
    let e = rel_err(&[il.dv[0]], &[slope]);
    let err_at =
        |il: &mut Ilqr<GenState>, d: &mut SolverDynamics<FeatherstoneSolver>, c: &mut QuadraticTracking, a: f64| {
            (il.forward_pass(d, c, a) - j0 - (a * il.dv[0] + a * a * il.dv[1])).abs()
        };
    let (e1, e2) = (err_at(&mut il, &mut dynamics, &mut cost, 0.02), err_at(&mut il, &mut dynamics, &mut cost, 0.01));
    eprintln!(
        "arm: Σ kᵀQ_u {:e} vs FD slope {slope:e} (rel {e:e}); ΔV model error at α 0.02 / 0.01: {e1:e} / {e2:e}",
        il.dv[0]
    );
    assert!(il.dv[0] < 0.0, "not a descent direction");
    assert!(e < 1e-6, "{e:e}");
    // the second-order term drops the dynamics' curvature (iLQR, not DDP): the model's error is O(α²)
    assert!(e1 / e2 > 3.0, "ΔV error not O(α²): {e1:e} → {e2:e}");
}

/// Bad options and inputs are errors naming the field, not panics.
#[test]
fn bad_input_is_reported() {
    let (mut dynamics, mut cost, x0) = linear_problem();
    let o = IlqrOptions { u_min: Some(vec![-1.0, 2.0]), u_max: Some(vec![1.0, 1.0]), ..Default::default() };
    let e = Ilqr::new(4, 2, 5, &x0, o).err().unwrap().to_string();
    assert!(e.contains("control 1") && e.contains("u_min"), "{e}");
    let o = IlqrOptions { u_max: Some(vec![1.0]), ..Default::default() };
    assert!(Ilqr::new(4, 2, 5, &x0, o).err().unwrap().to_string().contains("u_max has 1 entries"));
    assert!(Ilqr::new(4, 2, 0, &x0, IlqrOptions::default()).is_err());
    let mut il = Ilqr::new(4, 2, 5, &x0, IlqrOptions::default()).unwrap();
    let e = il.solve(&mut dynamics, &mut cost, &x0, &vec![DVector::zeros(2); 4]).err().unwrap().to_string();
    assert!(e.contains("u_init needs 5 rows of 2"), "{e}");
    let so = sampled::SampledOptions { kl_weight: 0.0, ..Default::default() };
    let e =
        il.solve_sampled(&mut dynamics, &mut cost, &x0, &vec![DVector::zeros(2); 5], &so).err().unwrap().to_string();
    assert!(e.contains("kl_weight"), "{e}");
}
