//! Derivatives w.r.t. the 10 inertial parameters of every body. Inverse dynamics is linear in them
//! (Atkeson, An & Hollerbach 1986): τ = Y(q, v, a) π + armature·a + damping·v, with per body
//! π_b = (m, h_x, h_y, h_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz): mass, first moment h = m c (c: the COM in the
//! body frame) and the rotational inertia about the body frame's origin — Pinocchio's `dynamicParameters` order.
//! So ∂RNEA/∂π = Y exactly, and differentiating M q̈ + c = τ gives ∂ABA/∂π = −M⁻¹ Y(q, v, q̈).
//! Moving a body's COM (h ≠ 0) is a change of π like any other: [`set_inertial_parameters`] writes π into the
//! model view, and every algorithm of this crate takes general spatial inertias.
use crate::aba::aba_into;
use crate::crba::crba_into;
use crate::data::{DynData, DynError, DynModel};
use crate::fk::local_kinematics;
use crate::rnea::rnea_forward;
use nalgebra::{DMatrix, Matrix3, Vector3};
use torsion_math::linalg::{cholesky_in_place, inverse_from_cholesky};
use torsion_math::spatial::{ang, cross_force, cross_motion, lin, Inertia, V6};
use torsion_math::Scalar;

/// Number of inertial parameters per body.
pub const N_INERTIAL: usize = 10;

/// Names of the 10 entries of π_b, in order.
pub const INERTIAL_NAMES: [&str; N_INERTIAL] = ["m", "hx", "hy", "hz", "ixx", "ixy", "iyy", "ixz", "iyz", "izz"];

fn to_params<T: Scalar>(y: &Inertia<T>) -> [T; N_INERTIAL] {
    let i = &y.i;
    [y.m, y.h[0], y.h[1], y.h[2], i[(0, 0)], i[(0, 1)], i[(1, 1)], i[(0, 2)], i[(1, 2)], i[(2, 2)]]
}

fn from_params<T: Scalar>(p: &[T]) -> Inertia<T> {
    Inertia {
        m: p[0],
        h: Vector3::new(p[1], p[2], p[3]),
        i: Matrix3::new(p[4], p[5], p[7], p[5], p[6], p[8], p[7], p[8], p[9]),
    }
}

/// π (10 × number of bodies, body order of the model) of the model view.
pub fn inertial_parameters<T: Scalar>(dm: &DynModel<T>) -> Vec<T> {
    dm.inertia.iter().flat_map(|m6| to_params(&Inertia::from_matrix(m6))).collect()
}

/// Write π (as [`inertial_parameters`] orders it) into the model view's spatial inertias. Errors on a wrong
/// length; physical consistency (m > 0, positive-definite inertia at the COM) is the caller's choice.
pub fn set_inertial_parameters<T: Scalar>(dm: &mut DynModel<T>, pi: &[T]) -> Result<(), DynError> {
    if pi.len() != N_INERTIAL * dm.nb {
        return Err(DynError::Shape { what: "inertial parameters", got: pi.len(), expected: N_INERTIAL * dm.nb });
    }
    for (m6, p) in dm.inertia.iter_mut().zip(pi.chunks_exact(N_INERTIAL)) {
        *m6 = from_params(p).to_matrix();
    }
    Ok(())
}

/// The joint-torque regressor Y(q, v, a) (nv × 10 nb) into `y`; no heap allocation. Column block b holds the
/// body forces I(e_i) a_b + v_b ×* I(e_i) v_b of each unit parameter (the same `Inertia::mul_motion` RNEA uses),
/// carried to every joint above body b and projected on its motion subspace.
pub fn joint_torque_regressor_into<T: Scalar>(
    dm: &DynModel<T>,
    q: &[T],
    v: &[T],
    a: &[T],
    d: &mut DynData<T>,
    y: &mut DMatrix<T>,
) -> Result<(), DynError> {
    dm.check_q(q)?;
    dm.check_v("v", v)?;
    dm.check_v("a", a)?;
    if y.nrows() != dm.nv || y.ncols() != N_INERTIAL * dm.nb {
        return Err(DynError::Shape { what: "regressor (output)", got: y.len(), expected: dm.nv * N_INERTIAL * dm.nb });
    }
    local_kinematics(dm, q, d);
    rnea_forward(dm, v, a, d, true);
    for j in 0..dm.parent.len() {
        d.body_joint[dm.child[j]] = j;
    }
    y.fill(T::zero());
    let mut unit = [T::zero(); N_INERTIAL];
    for jb in 0..dm.parent.len() {
        let b = dm.child[jb];
        let (vb, ab) = (d.vel[b], d.acc[b]);
        for i in 0..N_INERTIAL {
            unit[i] = T::one();
            let yi = from_params(&unit);
            unit[i] = T::zero();
            // the force this parameter contributes, carried up the tree (spec: Featherstone 2008 §5.3 backward pass)
            let mut f: V6<T> = yi.mul_motion(&ab) + cross_force(&vb, &yi.mul_motion(&vb));
            let col = N_INERTIAL * b + i;
            let mut j = jb;
            loop {
                let jm = &dm.joint[j];
                for k in 0..jm.nv {
                    y[(dm.v_start[j] + k, col)] = jm.s[k].dot(&f);
                }
                let p = dm.parent[j];
                if dm.root_pose[p].is_some() {
                    break;
                }
                f = d.x_pc[j].act_force(&f);
                j = d.body_joint[p];
            }
        }
    }
    Ok(())
}

/// Y(q, v, a) = ∂RNEA/∂π (allocating convenience wrapper).
pub fn joint_torque_regressor<T: Scalar>(
    dm: &DynModel<T>,
    q: &[T],
    v: &[T],
    a: &[T],
    d: &mut DynData<T>,
) -> Result<DMatrix<T>, DynError> {
    let mut y = DMatrix::zeros(dm.nv, N_INERTIAL * dm.nb);
    joint_torque_regressor_into(dm, q, v, a, d, &mut y)?;
    Ok(y)
}

/// ∂q̈/∂π = −M⁻¹ Y(q, v, q̈) at q̈ = ABA(q, v, τ) (nv × 10 nb); M includes the armature.
pub fn aba_inertial_derivatives<T: Scalar>(
    dm: &DynModel<T>,
    q: &[T],
    v: &[T],
    tau: &[T],
    d: &mut DynData<T>,
) -> Result<DMatrix<T>, DynError> {
    let nv = dm.nv;
    let mut qdd = vec![T::zero(); nv];
    aba_into(dm, q, v, tau, d, &mut qdd)?;
    let y = joint_torque_regressor(dm, q, v, &qdd, d)?;
    let mut m = DMatrix::zeros(nv, nv);
    crba_into(dm, q, d, &mut m)?;
    if !cholesky_in_place(&mut m) {
        return Err(DynError::Unsupported("the joint-space inertia matrix is not positive definite".into()));
    }
    let mut minv = DMatrix::zeros(nv, nv);
    inverse_from_cholesky(&mut m, &mut minv);
    Ok(-(minv * y))
}

/// The cotangent of inverse dynamics: for a fixed λ (nv), every derivative of the scalar λᵀ τ(q, v, a; θ) that a
/// reverse-mode step needs, from one forward and one backward sweep ([`regressor_vjp_into`]); allocate once per
/// model with [`RneaAdjoint::new`].
#[derive(Clone, Debug)]
pub struct RneaAdjoint<T: Scalar = f64> {
    /// ∂(λᵀτ)/∂π_b per body (λᵀ Y, [`inertial_parameters`] order; zero for fixed bodies)
    pub pi: Vec<[T; N_INERTIAL]>,
    /// per joint: ∂(λᵀτ)/∂ξ for X_{P←C} exp(ξ) (a right perturbation, ξ = [ω; v] in the child body frame)
    pub x: Vec<V6<T>>,
    /// per joint: ∂(λᵀτ)/∂S_k for each motion-subspace column S_k (child body frame)
    pub s: Vec<[V6<T>; 6]>,
    /// ∂(λᵀτ)/∂q in tangent coordinates (q ⊕ δ) and ∂(λᵀτ)/∂v (nv each; joint damping included)
    pub dq: Vec<T>,
    pub dv: Vec<T>,
    /// per body: w = Σ_{joints above} S λ, and the cotangents of the body acceleration and velocity
    w: Vec<V6<T>>,
    abar: Vec<V6<T>>,
    vbar: Vec<V6<T>>,
}

impl<T: Scalar> RneaAdjoint<T> {
    pub fn new<U: Scalar>(dm: &DynModel<U>) -> Self {
        let (nb, nj) = (dm.nb, dm.parent.len());
        RneaAdjoint {
            pi: vec![[T::zero(); N_INERTIAL]; nb],
            x: vec![V6::zeros(); nj],
            s: vec![[V6::zeros(); 6]; nj],
            dq: vec![T::zero(); dm.nv],
            dv: vec![T::zero(); dm.nv],
            w: vec![V6::zeros(); nb],
            abar: vec![V6::zeros(); nb],
            vbar: vec![V6::zeros(); nb],
        }
    }

    /// ∂(λᵀτ)/∂(r, t) of joint j's anchors (the joint frame's origin in the parent body, r, and in the child body,
    /// t; `DynModel::build`), after [`regressor_vjp_into`]. r moves X_{P←C} by T(δr) on the left, i.e.
    /// ξ = [0; R_PCᵀ δr]; t by T(−δt) on the right (ξ = [0; −δt]) and moves every S_k (child frame) by
    /// [0; δt × ω_k].
    pub fn anchor_grads(&self, dm: &DynModel<T>, d: &DynData<T>, j: usize) -> (Vector3<T>, Vector3<T>) {
        let g = lin(&self.x[j]);
        let gr = d.x_pc[j].rot * g;
        let mut gt = -g;
        for k in 0..dm.joint[j].nv {
            gt += ang(&dm.joint[j].s[k]).cross(&lin(&self.s[j][k]));
        }
        (gr, gt)
    }
}

/// ∂(x · I(π) y)/∂π for motions x, y: with I y = [I₃ y_ω + h × y_l; m y_l − h × y_ω], x · I y =
/// x_ω·I₃ y_ω + h·(y_l × x_ω − y_ω × x_l) + m x_l·y_l ([`INERTIAL_NAMES`] order).
fn bilinear_grad<T: Scalar>(x: &V6<T>, y: &V6<T>) -> [T; N_INERTIAL] {
    let (xa, xl, ya, yl) = (ang(x), lin(x), ang(y), lin(y));
    let gh = yl.cross(&xa) - ya.cross(&xl);
    [
        xl.dot(&yl),
        gh[0],
        gh[1],
        gh[2],
        xa[0] * ya[0],
        xa[0] * ya[1] + xa[1] * ya[0],
        xa[1] * ya[1],
        xa[0] * ya[2] + xa[2] * ya[0],
        xa[1] * ya[2] + xa[2] * ya[1],
        xa[2] * ya[2],
    ]
}

/// λᵀ Y(q, v, a) (the regressor's VJP, [`RneaAdjoint::pi`]) and the other derivatives of λᵀ τ(q, v, a) into `adj`
/// in O(n), without forming Y; no heap allocation. With w_c = X_{P←C}⁻¹ w_p + S λ_j (the "velocity" of λ),
/// λᵀ τ = Σ_b w_b · f_b, f_b = I_b a_b + v_b ×* I_b v_b (RNEA's body forces), so ∂/∂π_b = w_bᵀ Y_b(a_b, v_b); the
/// backward sweep carries the cotangents ā = I w, v̄ = I (w × v) − w ×* I v (+ the children's, and v_J ×* ā from
/// the bias v × v_J) to the parents, and collects per joint ∂/∂ξ = −u_v ×* v̄ − u_a ×* ā − u_w ×* F with u_· the
/// parent's velocity / acceleration / w seen in the child frame and F the subtree force (spec: Featherstone 2008
/// §5.3, reversed). `d` is left with RNEA's kinematics at (q, v, a) (x_pc, vel, acc) and the subtree forces in f.
pub fn regressor_vjp_into<T: Scalar>(
    dm: &DynModel<T>,
    q: &[T],
    v: &[T],
    a: &[T],
    lambda: &[T],
    d: &mut DynData<T>,
    adj: &mut RneaAdjoint<T>,
) -> Result<(), DynError> {
    dm.check_q(q)?;
    dm.check_v("v", v)?;
    dm.check_v("a", a)?;
    dm.check_v("lambda", lambda)?;
    if adj.pi.len() != dm.nb || adj.x.len() != dm.parent.len() || adj.dq.len() != dm.nv {
        return Err(DynError::Shape { what: "RneaAdjoint (output)", got: adj.pi.len(), expected: dm.nb });
    }
    local_kinematics(dm, q, d);
    regressor_vjp_pass(dm, v, a, lambda, d, adj);
    Ok(())
}

/// [`regressor_vjp_into`] on the placements already in `d.x_pc` (e.g. left by an ABA at the same q); sizes
/// unchecked (the caller's buffers come from the same model).
pub fn regressor_vjp_pass<T: Scalar>(
    dm: &DynModel<T>,
    v: &[T],
    a: &[T],
    lambda: &[T],
    d: &mut DynData<T>,
    adj: &mut RneaAdjoint<T>,
) {
    rnea_forward(dm, v, a, d, true);
    let nj = dm.parent.len();
    for b in 0..dm.nb {
        adj.w[b] = V6::zeros();
        adj.abar[b] = V6::zeros();
        adj.vbar[b] = V6::zeros();
        adj.pi[b] = [T::zero(); N_INERTIAL];
    }
    for j in 0..nj {
        let (p, c) = (dm.parent[j], dm.child[j]);
        let jm = &dm.joint[j];
        let mut w = d.x_pc[j].inv_act_motion(&adj.w[p]);
        for k in 0..jm.nv {
            w += jm.s[k] * lambda[dm.v_start[j] + k];
        }
        adj.w[c] = w;
        // w·f = w·(I a) − (v × w)·(I v), both bilinear in π
        let (vb, ab) = (d.vel[c], d.acc[c]);
        let (ga, gv) = (bilinear_grad(&w, &ab), bilinear_grad(&cross_motion(&vb, &w), &vb));
        for i in 0..N_INERTIAL {
            adj.pi[c][i] = ga[i] - gv[i];
        }
    }
    for j in (0..nj).rev() {
        let (p, c) = (dm.parent[j], dm.child[j]);
        let jm = &dm.joint[j];
        let vs = dm.v_start[j];
        let (mut vj, mut aj, mut sl) = (V6::zeros(), V6::zeros(), V6::zeros());
        for k in 0..jm.nv {
            vj += jm.s[k] * v[vs + k];
            aj += jm.s[k] * a[vs + k];
            sl += jm.s[k] * lambda[vs + k];
        }
        let y = Inertia::from_matrix(&dm.inertia[c]);
        let (w, vc, ac) = (adj.w[c], d.vel[c], d.acc[c]);
        let abar = adj.abar[c] + y.mul_motion(&w);
        let vbar = adj.vbar[c] + y.mul_motion(&cross_motion(&w, &vc)) - cross_force(&w, &y.mul_motion(&vc))
            + cross_force(&vj, &abar);
        let vjbar = vbar - cross_force(&vc, &abar);
        let f = d.f[c];
        let (uv, ua, uw) = (vc - vj, ac - aj - cross_motion(&vc, &vj), w - sl);
        let g = -(cross_force(&uv, &vbar) + cross_force(&ua, &abar) + cross_force(&uw, &f));
        adj.x[j] = g;
        for k in 0..jm.nv {
            let i = vs + k;
            adj.dq[i] = jm.s[k].dot(&g);
            adj.dv[i] = jm.s[k].dot(&vjbar) + dm.damping[i] * lambda[i];
            adj.s[j][k] = f * lambda[i] + vjbar * v[i] + abar * a[i];
        }
        if dm.root_pose[p].is_none() {
            let x = &d.x_pc[j];
            let (fp, ap, vp) = (x.act_force(&f), x.act_force(&abar), x.act_force(&vbar));
            d.f[p] += fp;
            adj.abar[p] += ap;
            adj.vbar[p] += vp;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rnea_derivatives::test_models::{point, tree, with_armature};
    use crate::{aba, rnea};
    use torsion_model::Model;

    /// A model view with every body's COM moved off its frame origin (h ≠ 0), so that all 10 parameters
    /// matter, and joint damping on.
    fn shifted(m: &Model) -> DynModel<f64> {
        let mut dm = with_armature(DynModel::<f64>::from_model(m).unwrap());
        for (k, d) in dm.damping.iter_mut().enumerate() {
            *d = 0.1 + 0.05 * k as f64;
        }
        let mut pi = inertial_parameters(&dm);
        for (b, p) in pi.chunks_exact_mut(N_INERTIAL).enumerate() {
            let c = Vector3::new(0.03, -0.02 * b as f64, 0.05);
            let y = Inertia { m: p[0], h: Vector3::zeros(), i: from_params(p).i };
            // parallel-axis: the COM at c in the body frame
            let moved = y.transformed(&torsion_math::spatial::Se3::new(Matrix3::identity(), c));
            p.copy_from_slice(&to_params(&moved));
        }
        set_inertial_parameters(&mut dm, &pi).unwrap();
        dm
    }

    fn cases() -> Vec<(&'static str, Model)> {
        vec![("tree", tree()), ("baxter", torsion_model::io::robots::baxter_left_arm().expect("example-robot-data"))]
    }

    /// τ = Y π + armature a + damping v (linearity), and π round-trips through the model view.
    #[test]
    fn regressor_reproduces_rnea() {
        for (name, m) in cases() {
            let dm = shifted(&m);
            let mut d = DynData::new(&dm);
            let pi = inertial_parameters(&dm);
            let mut dm2 = dm.clone();
            set_inertial_parameters(&mut dm2, &pi).unwrap();
            assert!(dm2.inertia.iter().zip(&dm.inertia).all(|(a, b)| (a - b).amax() == 0.0));
            for seed in 0..3 {
                let (q, v, a) = point(&m, seed);
                let tau = rnea(&dm, &q, &v, &a, &mut d).unwrap();
                let y = joint_torque_regressor(&dm, &q, &v, &a, &mut d).unwrap();
                let yp = &y * nalgebra::DVector::from_column_slice(&pi);
                let mut err: f64 = 0.0;
                for k in 0..dm.nv {
                    let pred = yp[k] + dm.armature[k] * a[k] + dm.damping[k] * v[k];
                    err = err.max((pred - tau[k]).abs() / (1.0 + tau[k].abs()));
                }
                eprintln!("{name} seed {seed}: |Yπ + A a + D v − RNEA| {err:.1e}");
                assert!(err < 1e-12, "{name}: {err:e}");
            }
        }
    }

    /// ∂RNEA/∂π = Y and ∂ABA/∂π = −M⁻¹ Y(q, v, q̈) against central differences of RNEA / ABA in π.
    #[test]
    fn inertial_derivatives_match_central_differences() {
        for (name, m) in cases() {
            let dm = shifted(&m);
            let mut d = DynData::new(&dm);
            let pi = inertial_parameters(&dm);
            let (q, v, w) = point(&m, 7);
            let y = joint_torque_regressor(&dm, &q, &v, &w, &mut d).unwrap();
            let dq = aba_inertial_derivatives(&dm, &q, &v, &w, &mut d).unwrap();
            for (which, an) in [("RNEA", &y), ("ABA", &dq)] {
                let mut fd = DMatrix::zeros(dm.nv, pi.len());
                for i in 0..pi.len() {
                    let h = 1e-6 * pi[i].abs().max(1e-2);
                    let mut eval = |s: f64| {
                        let mut p = pi.clone();
                        p[i] += s;
                        let mut dmp = dm.clone();
                        set_inertial_parameters(&mut dmp, &p).unwrap();
                        if which == "ABA" {
                            aba(&dmp, &q, &v, &w, &mut d).unwrap()
                        } else {
                            rnea(&dmp, &q, &v, &w, &mut d).unwrap()
                        }
                    };
                    let (fp, fm) = (eval(h), eval(-h));
                    for k in 0..dm.nv {
                        fd[(k, i)] = (fp[k] - fm[k]) / (2.0 * h);
                    }
                }
                // normwise relative error (docs/gradients.md convention)
                let err = (an - &fd).amax() / fd.amax();
                eprintln!("{name}: ∂{which}/∂π ({} parameters) vs FD {err:.1e}", pi.len());
                assert!(err < 1e-6, "{name}: ∂{which}/∂π vs FD {err:e}");
            }
        }
    }

    /// `regressor_vjp_into`: λᵀ Y against the explicit regressor; ∂(λᵀτ)/∂(q, v) against the analytic RNEA
    /// derivatives and central differences; ∂(λᵀτ)/∂(anchors) against central differences of τ from models built
    /// at θ ± h (`DynModel::build`), on the every-joint tree and the Baxter arm.
    #[test]
    fn regressor_vjp_matches_regressor_and_central_differences() {
        use crate::rnea_derivatives::{rnea_derivatives_into, RneaDerivatives};
        use torsion_model::params::ParamKind;
        for (name, m) in cases() {
            let dm = shifted(&m);
            let mut d = DynData::new(&dm);
            let (q, v, a) = point(&m, 5);
            let lam: Vec<f64> = (0..dm.nv).map(|i| ((i * 7 + 2) % 9) as f64 / 4.0 - 1.0).collect();
            let mut adj = RneaAdjoint::new(&dm);
            regressor_vjp_into(&dm, &q, &v, &a, &lam, &mut d, &mut adj).unwrap();
            let y = joint_torque_regressor(&dm, &q, &v, &a, &mut d).unwrap();
            let ly = y.transpose() * nalgebra::DVector::from_column_slice(&lam);
            let pi: Vec<f64> = adj.pi.iter().flatten().copied().collect();
            let e_pi = (nalgebra::DVector::from_vec(pi) - &ly).amax() / ly.amax();
            let mut rd = RneaDerivatives::new(dm.nv);
            rnea_derivatives_into(&dm, &q, &v, &a, &mut d, &mut rd).unwrap();
            let l = nalgebra::DVector::from_column_slice(&lam);
            let (lq, lv) = (rd.d_dq.transpose() * &l, rd.d_dv.transpose() * &l);
            let rel = |x: &[f64], r: &[f64]| {
                x.iter().zip(r).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max)
                    / r.iter().fold(1e-300_f64, |m, b| m.max(b.abs()))
            };
            let (e_q, e_v) = (rel(&adj.dq, lq.as_slice()), rel(&adj.dv, lv.as_slice()));
            // central differences of λᵀ τ in q (tangent), v
            let ltau = |dmx: &DynModel<f64>, q: &[f64], v: &[f64], d: &mut DynData<f64>| -> f64 {
                rnea(dmx, q, v, &a, d).unwrap().iter().zip(&lam).map(|(t, l)| t * l).sum()
            };
            let h = 1e-6;
            let mut fq = vec![0.0; dm.nv];
            let mut fv = vec![0.0; dm.nv];
            for i in 0..dm.nv {
                let mut e = vec![0.0; dm.nv];
                e[i] = h;
                let qp = crate::joints::integrate(&dm, &q, &e);
                e[i] = -h;
                let qm = crate::joints::integrate(&dm, &q, &e);
                fq[i] = (ltau(&dm, &qp, &v, &mut d) - ltau(&dm, &qm, &v, &mut d)) / (2.0 * h);
                let (mut vp, mut vm) = (v.clone(), v.clone());
                vp[i] += h;
                vm[i] -= h;
                fv[i] = (ltau(&dm, &q, &vp, &mut d) - ltau(&dm, &q, &vm, &mut d)) / (2.0 * h);
            }
            let (f_q, f_v) = (rel(&adj.dq, &fq), rel(&adj.dv, &fv));
            // anchors: models at θ ± h (plain COM frames, the view `DynModel::build` makes)
            let table = m.param_table();
            let theta = m.param_vector();
            let dm0 = DynModel::<f64>::build(&m, &table, &theta).unwrap();
            regressor_vjp_into(&dm0, &q, &v, &a, &lam, &mut d, &mut adj).unwrap();
            let (mut an, mut fd) = (vec![], vec![]);
            for (i, k) in table.kinds.iter().enumerate() {
                let (j, ax, child) = match *k {
                    ParamKind::AnchorParent(j, ax) => (j, ax, false),
                    ParamKind::AnchorChild(j, ax) => (j, ax, true),
                    _ => continue,
                };
                let (gr, gt) = adj.anchor_grads(&dm0, &d, j);
                an.push(if child { gt[ax] } else { gr[ax] });
                let ev = |s: f64| {
                    let mut th = theta.clone();
                    th[i] += s;
                    let dmx = DynModel::<f64>::build(&m, &table, &th).unwrap();
                    ltau(&dmx, &q, &v, &mut DynData::new(&dmx))
                };
                fd.push((ev(h) - ev(-h)) / (2.0 * h));
            }
            let e_anchor = rel(&an, &fd);
            eprintln!(
                "{name}: λᵀY vs regressor {e_pi:.1e}; ∂/∂q vs analytic {e_q:.1e}, vs FD {f_q:.1e}; ∂/∂v vs analytic \
                 {e_v:.1e}, vs FD {f_v:.1e}; ∂/∂anchors ({}) vs FD {e_anchor:.1e}",
                an.len()
            );
            assert!(e_pi < 1e-12 && e_q < 1e-12 && e_v < 1e-12, "{name}: {e_pi:e} {e_q:e} {e_v:e}");
            assert!(f_q < 1e-6 && f_v < 1e-6 && e_anchor < 1e-6, "{name}: {f_q:e} {f_v:e} {e_anchor:e}");
        }
    }

    #[test]
    fn wrong_lengths_are_errors() {
        let m = tree();
        let mut dm = DynModel::<f64>::from_model(&m).unwrap();
        assert!(set_inertial_parameters(&mut dm, &[1.0; 3]).is_err());
        let mut d = DynData::new(&dm);
        let (q, v, a) = point(&m, 0);
        let mut y = DMatrix::zeros(dm.nv, 3);
        assert!(joint_torque_regressor_into(&dm, &q, &v, &a, &mut d, &mut y).is_err());
        assert!(joint_torque_regressor(&dm, &q[..1], &v, &a, &mut d).is_err());
    }
}
