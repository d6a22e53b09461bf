//! The Featherstone stepper's integrators beside semi-implicit Euler (issue 20 item 3; docs/decisions.md
//! "Integrators"). Each is built from the same generic (`Scalar`) acceleration kernel as the Euler step
//! (`featherstone::step_accel_into`), so the dual passes of `step_jacobians` differentiate it as it runs.
//! - RK4, MuJoCo's `mj_RungeKutta`: the classical tableau (a = ½, ½, 1; b = ⅙, ⅓, ⅓, ⅙) on the state
//!   (q, v, act) with stage derivatives F = (q̇, q̈, ȧct) at explicit damping (M + A, not M + A + hD); each stage
//!   state is X₀ ⊕ h Σ aᵢⱼ Fⱼ with MuJoCo's `mj_integratePos`: hinge / slide q + h q̇, ball q ⊗ Exp(h ω), free
//!   p + h ṗ (world) and R ⊗ Exp(h ω) (body ω), the stage rotation rates with MuJoCo 4.0's Runge–Kutta–Munthe-Kaas
//!   correction kᵢ = dexp⁻¹_{−uᵢ}(ωᵢ) (`dexp_inv_neg`; fourth order for orientations). A free joint's stage derivatives are MuJoCo's coordinates:
//!   ṗ = R v_l (world linear velocity) and its rate R (v̇_l + ω × v_l); torsion's body-frame v_l is
//!   Rᵀ(R₀ v_l,₀ + h Σ aᵢⱼ Rⱼ(v̇_l + ω × v_l)ⱼ) at each stage's R.
//! - implicitfast: the Euler step with M̃ = M + A + h(D − ∂τ_act/∂q̇) (joint actuators' velocity derivatives,
//!   `passive::joint_actuator_velocity_derivatives`), set in `featherstone::step_accel_into`.
use crate::featherstone::{step_accel_into, StepIn};
use crate::joint_friction::JointFriction;
use torsion_dynamics::joints::integrate_joint;
use torsion_dynamics::{crba, forward_kinematics, DynData, DynError, DynModel};
use torsion_math::{Quat, Scalar, Vec3};
use torsion_model::{JointType, Model};

/// RK4's stage weights a (rows: stages 2–4) and b (MuJoCo's `RK4_A`, `RK4_B`).
const RK4_A: [[f64; 3]; 3] = [[0.5, 0.0, 0.0], [0.0, 0.5, 0.0], [0.0, 0.0, 1.0]];
const RK4_B: [f64; 4] = [1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0];

/// RK4's buffers (allocated once with the workspace, or per dual pass): the stage state, the four stage
/// derivatives (velocity part, acceleration part, activation rate) and the acceleration kernel's outputs.
pub struct Rk4Scratch<T: Scalar> {
    q: Vec<T>,
    v: Vec<T>,
    act: Vec<T>,
    fv: [Vec<T>; 4],
    fa: [Vec<T>; 4],
    fact: [Vec<T>; 4],
    dv: Vec<T>,
    da: Vec<T>,
    dact: Vec<T>,
    q1: Vec<T>,
    v1: Vec<T>,
    act1: Vec<T>,
}

impl<T: Scalar> Rk4Scratch<T> {
    pub fn new(nq: usize, nv: usize, na: usize) -> Self {
        let z = |n: usize| vec![T::zero(); n];
        Rk4Scratch {
            q: z(nq),
            v: z(nv),
            act: z(na),
            fv: std::array::from_fn(|_| z(nv)),
            fa: std::array::from_fn(|_| z(nv)),
            fact: std::array::from_fn(|_| z(na)),
            dv: z(nv),
            da: z(nv),
            dact: z(na),
            q1: z(nq),
            v1: z(nv),
            act1: z(na),
        }
    }
}

/// One RK4 step (MuJoCo's `mj_RungeKutta`, module docs) from `x` into (q1, v1, act1); `tau`, `acc` nv scratch,
/// `fric` the kernel's dry-friction buffers (the stepper refuses friction loss under RK4, so it stays idle). No
/// heap allocation.
#[allow(clippy::too_many_arguments)]
pub fn rk4_step_into<T: Scalar>(
    dm: &mut DynModel<T>,
    passive: &crate::featherstone::Passive,
    x: &StepIn<T>,
    dt: f64,
    d: &mut DynData<T>,
    rk: &mut Rk4Scratch<T>,
    tau: &mut [T],
    acc: &mut [T],
    fric: &mut JointFriction<T>,
    q1: &mut [T],
    v1: &mut [T],
    act1: &mut [T],
) -> Result<(), DynError> {
    let Rk4Scratch { q, v, act, fv, fa, fact, dv, da, dact, q1: sq, v1: sv, act1: sa } = rk;
    if q.len() != x.q.len() || v.len() != x.v.len() || act.len() != x.act.len() {
        return Err(DynError::Shape { what: "RK4 scratch (nq)", got: q.len(), expected: x.q.len() });
    }
    let h = T::c(dt);
    for i in 0..4 {
        if i > 0 {
            weigh(&RK4_A[i - 1][..i], fv, fa, fact, dv, da, dact);
            manifold_step(dm, x.q, x.v, x.act, dv, da, dact, h, q, v, act);
        } else {
            q.copy_from_slice(x.q);
            v.copy_from_slice(x.v);
            act.copy_from_slice(x.act);
        }
        let xi = StepIn { q: &q[..], v: &v[..], act: &act[..], u: x.u, ctrl: x.ctrl, wrench: x.wrench };
        step_accel_into(dm, passive, &xi, dt, d, tau, acc, sq, sv, sa, fric)?;
        // F_i in MuJoCo's coordinates (free joints: world linear velocity and its rate)
        fv[i].copy_from_slice(v);
        fa[i].copy_from_slice(acc);
        for j in 0..dm.parent.len() {
            let (kind, qs, vs) = (dm.joint[j].kind, dm.q_start[j], dm.v_start[j]);
            if kind == JointType::Free {
                let r = Quat::new(q[qs + 3], q[qs + 4], q[qs + 5], q[qs + 6]);
                let w = Vec3::new(v[vs], v[vs + 1], v[vs + 2]);
                let vl = Vec3::new(v[vs + 3], v[vs + 4], v[vs + 5]);
                let al = Vec3::new(acc[vs + 3], acc[vs + 4], acc[vs + 5]) + w.cross(&vl);
                let (pw, aw) = (r.rotate(&vl), r.rotate(&al));
                for k in 0..3 {
                    fv[i][vs + 3 + k] = pw[k];
                    fa[i][vs + 3 + k] = aw[k];
                }
            }
            if i > 0 && matches!(kind, JointType::Free | JointType::Ball) {
                // Runge–Kutta–Munthe-Kaas: the stage's rotation increment u = h Σ aᵢⱼ kⱼ (in dv), kᵢ = dexp⁻¹_{−u}(ωᵢ)
                let u = Vec3::new(dv[vs], dv[vs + 1], dv[vs + 2]) * h;
                let k = dexp_inv_neg(&u, &Vec3::new(v[vs], v[vs + 1], v[vs + 2]));
                fv[i][vs..vs + 3].copy_from_slice(&[k.x, k.y, k.z]);
            }
        }
        for k in 0..act.len() {
            fact[i][k] = (sa[k] - act[k]) / h;
        }
    }
    weigh(&RK4_B, fv, fa, fact, dv, da, dact);
    manifold_step(dm, x.q, x.v, x.act, dv, da, dact, h, q1, v1, act1);
    Ok(())
}

/// dexp⁻¹_{−u}(ω) on so(3) = ω + ½ u × ω + c(θ) u × (u × ω), c = (1 − (θ/2) cot(θ/2))/θ², θ = |u| (Taylor 1/12 + θ²/720
/// near 0): the rate of u with q ⊗ Exp(u) turning at body rate ω (RKMK; MuJoCo ≥ 4.0's RK4).
fn dexp_inv_neg<T: Scalar>(u: &Vec3<T>, w: &Vec3<T>) -> Vec3<T> {
    let th2 = u.dot(u);
    let c = if th2.re() < 1e-8 {
        T::c(1.0 / 12.0) + th2 * T::c(1.0 / 720.0)
    } else {
        let half = th2.sqrt() * T::c(0.5);
        (T::one() - half * half.cos() / half.sin()) / th2
    };
    let uw = u.cross(w);
    w + uw * T::c(0.5) + u.cross(&uw) * c
}

/// (dv, da, dact) = Σⱼ wⱼ Fⱼ over the first `w.len()` stages.
fn weigh<T: Scalar>(
    w: &[f64],
    fv: &[Vec<T>; 4],
    fa: &[Vec<T>; 4],
    fact: &[Vec<T>; 4],
    dv: &mut [T],
    da: &mut [T],
    dact: &mut [T],
) {
    for (out, f) in [(dv, fv), (da, fa), (dact, fact)] {
        for (k, o) in out.iter_mut().enumerate() {
            *o = w.iter().enumerate().fold(T::zero(), |s, (j, &wj)| s + f[j][k] * T::c(wj));
        }
    }
}

/// X = X₀ ⊕ h (dv, da, dact) with MuJoCo's position integration (module docs); free joints: `dv`, `da` linear
/// parts in the world, the new body-frame v_l at the new orientation.
#[allow(clippy::too_many_arguments)]
fn manifold_step<T: Scalar>(
    dm: &DynModel<T>,
    q0: &[T],
    v0: &[T],
    act0: &[T],
    dv: &[T],
    da: &[T],
    dact: &[T],
    h: T,
    q: &mut [T],
    v: &mut [T],
    act: &mut [T],
) {
    for j in 0..dm.parent.len() {
        let (kind, qs, vs) = (dm.joint[j].kind, dm.q_start[j], dm.v_start[j]);
        let (nq, n) = (kind.nq(), kind.dof());
        if kind == JointType::Free {
            let r0 = Quat::new(q0[qs + 3], q0[qs + 4], q0[qs + 5], q0[qs + 6]);
            let r = r0.mul(&Quat::exp(&(Vec3::new(dv[vs], dv[vs + 1], dv[vs + 2]) * h))).normalize();
            let u = r0.rotate(&Vec3::new(v0[vs + 3], v0[vs + 4], v0[vs + 5]))
                + Vec3::new(da[vs + 3], da[vs + 4], da[vs + 5]) * h;
            let vl = r.rotate_inv(&u);
            for k in 0..3 {
                q[qs + k] = q0[qs + k] + dv[vs + 3 + k] * h;
                v[vs + k] = v0[vs + k] + da[vs + k] * h;
                v[vs + 3 + k] = vl[k];
            }
            q[qs + 3..qs + 7].copy_from_slice(&r.to_array());
        } else {
            let mut dq = [T::zero(); 6];
            for k in 0..n {
                dq[k] = dv[vs + k] * h;
                v[vs + k] = v0[vs + k] + da[vs + k] * h;
            }
            integrate_joint(kind, &q0[qs..qs + nq], &dq[..n], &mut q[qs..qs + nq]);
        }
    }
    for k in 0..act.len() {
        act[k] = act0[k] + dact[k] * h;
    }
}

/// Mechanical energy ½ vᵀ M(q) v − Σ_b m_b g · c_b (body frames are COM frames; M with the armature) of a
/// generalized state: the energy test's measure (RELIABILITY.md "Long runs").
pub fn mechanical_energy(model: &Model, dm: &DynModel<f64>, d: &mut DynData<f64>, q: &[f64], v: &[f64]) -> f64 {
    let Ok(mm) = crba(dm, q, d) else { return f64::NAN };
    let vv = nalgebra::DVector::from_column_slice(v);
    let ke = 0.5 * vv.dot(&(&mm * &vv));
    forward_kinematics(dm, q, d);
    let pe: f64 = (0..model.body_count())
        .filter(|&b| !model.body_fixed[b])
        .map(|b| -model.body_mass[b] * model.gravity.dot(&d.o_m[b].pos))
        .sum();
    ke + pe
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FeatherstoneSolver, GenState, Integrator, Solver, StateSpace};
    use torsion_model::Control;

    fn run(solver: &FeatherstoneSolver, m: &Model, s0: &GenState, dt: f64, steps: usize) -> GenState {
        let mut ws = solver.workspace(m).unwrap();
        let u = Control::from_torques(&vec![0.0; m.nv()]);
        let (mut s, mut o) = (s0.clone(), s0.clone());
        for _ in 0..steps {
            solver.step(m, &s, &u, dt, &mut o, &mut ws, None).unwrap();
            std::mem::swap(&mut s, &mut o);
        }
        s
    }

    /// RK4's local error is O(h⁵) on the floating tree (free and ball joints: the RKMK orientation update, hinge,
    /// slide, damping): one step of h and of h/2 against 512 steps of h/512 from the same state; the error ratio
    /// is ~32 (fifth order locally, fourth globally). Euler's for contrast: ~4.
    #[test]
    fn rk4_local_error_is_fifth_order() {
        let mut m = torsion_model::builder::floating_tree();
        m.joint_damping.iter_mut().for_each(|d| *d = 0.05);
        let q = torsion_model::builder::example_configuration(&m, 4);
        let s0 = GenState::new(q, (0..m.nv()).map(|i| ((i * 7 + 3) % 11) as f64 / 2.0 - 2.5).collect());
        let err = |integ: Integrator, h: f64| {
            let solver = FeatherstoneSolver::with_integrator(integ);
            let reference = run(&FeatherstoneSolver::with_integrator(Integrator::Rk4), &m, &s0, h / 512.0, 512);
            let one = run(&solver, &m, &s0, h, 1);
            let d = reference.local_diff(&m, &one);
            d.iter().map(|x| x * x).sum::<f64>().sqrt()
        };
        let (e1, e2) = (err(Integrator::Rk4, 0.02), err(Integrator::Rk4, 0.01));
        let (f1, f2) = (err(Integrator::SemiImplicitEuler, 0.02), err(Integrator::SemiImplicitEuler, 0.01));
        eprintln!(
            "one-step error at h = 20 ms, 10 ms: RK4 {e1:.2e}, {e2:.2e} (ratio {:.1}); Euler {f1:.2e}, {f2:.2e} (ratio {:.1})",
            e1 / e2,
            f1 / f2
        );
        assert!((26.0..38.0).contains(&(e1 / e2)), "RK4 ratio {}", e1 / e2);
        assert!(f1 / f2 < 5.0, "Euler ratio {}", f1 / f2);
    }

    /// The energy promise (issue 20, RELIABILITY.md "Long runs"): the undamped Baxter left arm, zero torque, from
    /// rest at q = 0, 60 s at Δt = 1 ms under RK4 keeps its mechanical energy within 1e-3 J of the start (measured
    /// drift in the report). Semi-implicit Euler over the first 10 s of the same run drifts by more than 1 J
    /// (issue: 78.6 J → 208 J).
    #[test]
    fn rk4_keeps_the_baxter_arm_energy_for_60_s() {
        let mut m = torsion_model::io::robots::baxter_left_arm().expect("example-robot-data");
        m.joint_damping.iter_mut().for_each(|d| *d = 0.0);
        m.joint_frictionloss.iter_mut().for_each(|d| *d = 0.0);
        let dm = DynModel::from_model(&m).unwrap();
        let mut d = DynData::new(&dm);
        let s0 = GenState::new(vec![0.0; m.nq()], vec![0.0; m.nv()]);
        let e0 = mechanical_energy(&m, &dm, &mut d, &s0.q, &s0.v);
        // (max |E − E0| sampled every 100 steps, |v| at the end, the step that failed if one did)
        let drift = |integ: Integrator, seconds: usize| {
            let solver = FeatherstoneSolver::with_integrator(integ);
            let mut ws = solver.workspace(&m).unwrap();
            let u = Control::from_torques(&vec![0.0; m.nv()]);
            let (mut s, mut o) = (s0.clone(), s0.clone());
            let (mut worst, mut d2) = (0.0f64, DynData::new(&dm));
            for k in 1..=1000 * seconds {
                if solver.step(&m, &s, &u, 1e-3, &mut o, &mut ws, None).is_err() {
                    return (worst, f64::NAN, Some(k));
                }
                std::mem::swap(&mut s, &mut o);
                if k % 100 == 0 {
                    worst = worst.max((mechanical_energy(&m, &dm, &mut d2, &s.q, &s.v) - e0).abs());
                }
            }
            (worst, s.v.iter().map(|x| x * x).sum::<f64>().sqrt(), None)
        };
        let (rk, speed, failed) = drift(Integrator::Rk4, 60);
        let euler = drift(Integrator::SemiImplicitEuler, 10);
        eprintln!(
            "Baxter arm from rest at q = 0, E0 = {e0:.3} J: RK4 60 s max |E − E0| = {rk:.2e} J (|v| at 60 s {speed:.2}); \
             Euler 10 s: max |E − E0| = {:.3e} J, failed at step {:?}",
            euler.0, euler.2
        );
        assert!(failed.is_none() && rk < 1e-3, "RK4 energy drift {rk} J, failed at {failed:?}");
        assert!(speed > 0.1, "the arm swings");
        assert!(euler.2.is_some() || euler.0 > 1.0, "Euler drifts: {euler:?}");
    }

    /// What RK4 and implicitfast do not cover is refused when the workspace is built and at the step, naming the
    /// integrator and the cause.
    #[test]
    fn unsupported_combinations_are_refused() {
        let mut m = torsion_model::builder::floating_tree();
        m.joint_frictionloss[3] = 0.2;
        let rk = FeatherstoneSolver::with_integrator(Integrator::Rk4);
        let e = rk.workspace(&m).err().expect("RK4 with friction loss").to_string();
        assert!(e.contains("RK4") && e.contains("friction loss") && e.contains(&m.joint_name[3]), "{e}");
        let s = GenState::rest(&m);
        let mut ws = FeatherstoneSolver::default().workspace(&m).unwrap();
        let e = rk.step(&m, &s, &Control::from_torques(&vec![0.0; m.nv()]), 0.01, &mut s.clone(), &mut ws, None);
        assert!(e.is_err(), "refused at the step too");
        let mut f = torsion_model::builder::floating_tree();
        f.fluid_density = 1.2;
        let e = FeatherstoneSolver::with_integrator(Integrator::ImplicitFast).workspace(&f).err().unwrap().to_string();
        assert!(e.contains("implicitfast") && e.contains("fluid"), "{e}");
        assert!(FeatherstoneSolver::with_integrator(Integrator::Rk4).workspace(&f).is_ok());
    }
}
