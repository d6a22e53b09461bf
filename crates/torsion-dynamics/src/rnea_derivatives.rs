//! Analytic derivatives of inverse dynamics (Carpentier & Mansard 2018, "Analytical derivatives of rigid body
//! dynamics algorithms", RSS; the algorithm of Pinocchio's `computeRNEADerivatives`): ∂τ/∂q, ∂τ/∂v and
//! ∂τ/∂a = M(q) in one forward and one backward sweep, in the world frame.
//!
//! q is perturbed in the tangent space (q ⊕ δ, `joints::integrate`: joint-local right perturbations), so
//! δ(world placement of body c) = J_k^ for every joint k above c, with J_k the joint's world-frame columns.
//! Forward sweep per joint i (parent λ): ov_i = ov_λ + J_i v_i, oa_i = oa_λ + J_i a_i + ov_i × J_i v_i
//! (the root has oa = −g), the body's world inertia Y_i, its momentum h_i = Y_i ov_i and force
//! f_i = Y_i oa_i + ov_i ×* h_i, and the columns ∂v/∂q = ov_λ × J, ∂a/∂q = oa_λ × J + ov_λ × ∂v/∂q,
//! ∂a/∂v = ov_i × J + ∂v/∂q, and Ẏ_i = ov ×* Y − Y ov× + (h ×̄), which is [[Q, 0], [[k]×, 0]] with
//! Q = [ω]× I − I [ω]× − (v hᵀ + h vᵀ) + 2 (h·v) 1 − [h_ang]× and k = −2 h_lin (ov = [ω; v], Y = (m, h, I)).
//! Backward sweep: composite Y, Ẏ and f summed tip → base; for k at or below i:
//! ∂τ_i/∂q_k = J_iᵀ (Ẏ_k ∂v_k/∂q + Y_k ∂a_k/∂q + [k ≠ i] J_k ×* f_k), ∂τ_k/∂q_i = (Y_k J_k)ᵀ ∂a_i/∂q +
//! (Ẏ_kᵀ J_k)ᵀ ∂v_i/∂q, and the same for v with (J, ∂a/∂v) in place of (∂v/∂q, ∂a/∂q).
//! Works for every joint type of this crate (their S is constant in the child frame and has no bias).
use crate::crba::world_columns;
use crate::data::{DynData, DynError, DynModel};
use crate::fk::forward_kinematics;
use nalgebra::{DMatrix, Matrix3};
use torsion_math::spatial::{ang, cross_force, cross_motion, lin, skew, stack, V6};
use torsion_math::{Scalar, Vec3};

/// τ(q, v, a) and its derivatives; allocate once with [`RneaDerivatives::new`].
#[derive(Clone, Debug)]
pub struct RneaDerivatives<T: Scalar = f64> {
    /// τ(q, v, a) (nv)
    pub tau: Vec<T>,
    /// ∂τ/∂q in tangent coordinates (nv × nv)
    pub d_dq: DMatrix<T>,
    /// ∂τ/∂v (nv × nv), joint damping included
    pub d_dv: DMatrix<T>,
    /// ∂τ/∂a = M(q) (nv × nv), armature included
    pub d_da: DMatrix<T>,
}

impl<T: Scalar> RneaDerivatives<T> {
    pub fn new(nv: usize) -> Self {
        RneaDerivatives {
            tau: vec![T::zero(); nv],
            d_dq: DMatrix::zeros(nv, nv),
            d_dv: DMatrix::zeros(nv, nv),
            d_da: DMatrix::zeros(nv, nv),
        }
    }
    pub(crate) fn check(&self, nv: usize) -> Result<(), DynError> {
        for (what, m) in
            [("∂τ/∂q (output)", &self.d_dq), ("∂τ/∂v (output)", &self.d_dv), ("∂τ/∂a (output)", &self.d_da)]
        {
            if m.nrows() != nv || m.ncols() != nv {
                return Err(DynError::Shape { what, got: m.nrows() * m.ncols(), expected: nv * nv });
            }
        }
        if self.tau.len() != nv {
            return Err(DynError::Shape { what: "tau (output)", got: self.tau.len(), expected: nv });
        }
        Ok(())
    }
}

/// ∂τ/∂q, ∂τ/∂v, ∂τ/∂a (and τ) at (q, v, a) into `out`; no heap allocation.
pub fn rnea_derivatives_into<T: Scalar>(
    dm: &DynModel<T>,
    q: &[T],
    v: &[T],
    a: &[T],
    d: &mut DynData<T>,
    out: &mut RneaDerivatives<T>,
) -> Result<(), DynError> {
    dm.check_q(q)?;
    dm.check_v("v", v)?;
    dm.check_v("a", a)?;
    out.check(dm.nv)?;
    forward_kinematics(dm, q, d);
    rnea_derivatives_pass(dm, v, a, d, out);
    Ok(())
}

/// Ẏ x = [Q ω; k × ω] for x = [ω; ·].
#[inline(always)]
fn doy_mul<T: Scalar>(q: &Matrix3<T>, k: &Vec3<T>, x: &V6<T>) -> V6<T> {
    let w = ang(x);
    stack(&(q * w), &k.cross(&w))
}

/// The angular part of Ẏᵀ x = [Qᵀ ω − k × v; 0].
#[inline(always)]
fn doyt_mul<T: Scalar>(q: &Matrix3<T>, k: &Vec3<T>, x: &V6<T>) -> Vec3<T> {
    q.tr_mul(&ang(x)) - k.cross(&lin(x))
}

/// The sweeps on the placements already in `d.x_pc` and `d.o_m`.
pub(crate) fn rnea_derivatives_pass<T: Scalar>(
    dm: &DynModel<T>,
    v: &[T],
    a: &[T],
    d: &mut DynData<T>,
    out: &mut RneaDerivatives<T>,
) {
    let nj = dm.parent.len();
    for m in [&mut out.d_dq, &mut out.d_dv, &mut out.d_da] {
        m.fill(T::zero()); // pairs of joints on different branches stay zero
    }
    world_columns(dm, d);
    for k in 0..dm.nb {
        if dm.root_pose[k].is_some() {
            d.ov[k] = V6::zeros();
            d.oa_gf[k] = stack(&Vec3::zeros(), &(-dm.gravity));
        }
    }
    // forward sweep
    for j in 0..nj {
        let (p, c) = (dm.parent[j], dm.child[j]);
        let (vs, n) = (dm.v_start[j], dm.joint[j].nv);
        let (ovp, oap) = (d.ov[p], d.oa_gf[p]);
        let mut vj = V6::zeros();
        let mut aj = V6::zeros();
        for i in vs..vs + n {
            vj += d.jac[i] * v[i];
            aj += d.jac[i] * a[i];
        }
        let ov = ovp + vj;
        let oa = oap + aj + cross_motion(&ov, &vj);
        d.ov[c] = ov;
        d.oa_gf[c] = oa;
        let y = d.oy[c];
        let oh = y.mul_motion(&ov);
        d.of[c] = y.mul_motion(&oa) + cross_force(&ov, &oh);
        for i in vs..vs + n {
            let jc = d.jac[i];
            let dvdq = cross_motion(&ovp, &jc);
            d.dvdq[i] = dvdq;
            d.dadq[i] = cross_motion(&oap, &jc) + cross_motion(&ovp, &dvdq);
            d.dadv[i] = cross_motion(&ov, &jc) + dvdq;
        }
        // Ẏ + (h ×̄) = [[Q, 0], [[k]×, 0]]
        let (w, vl) = (ang(&ov), lin(&ov));
        let wi = skew(&w) * y.i;
        let hv = y.h.dot(&vl);
        let mut qm = wi + wi.transpose() - (vl * y.h.transpose() + y.h * vl.transpose()) - skew(&ang(&oh));
        for r in 0..3 {
            qm[(r, r)] += hv + hv;
        }
        d.doy_q[c] = qm;
        d.doy_k[c] = lin(&oh) * T::c(-2.0);
    }
    // backward sweep
    for j in (0..nj).rev() {
        let (p, c) = (dm.parent[j], dm.child[j]);
        let (vs, n) = (dm.v_start[j], dm.joint[j].nv);
        let (y, qm, km, of) = (d.oy[c], d.doy_q[c], d.doy_k[c], d.of[c]);
        for i in vs..vs + n {
            let jc = d.jac[i];
            out.tau[i] = jc.dot(&of) + dm.armature[i] * a[i] + dm.damping[i] * v[i];
            d.dfda[i] = y.mul_motion(&jc);
            d.dfdq[i] = doy_mul(&qm, &km, &d.dvdq[i]) + y.mul_motion(&d.dadq[i]);
            d.dfdv[i] = doy_mul(&qm, &km, &jc) + y.mul_motion(&d.dadv[i]);
            d.dytj[i] = doyt_mul(&qm, &km, &jc);
        }
        for r in vs..vs + n {
            for col in vs..vs + n {
                out.d_da[(r, col)] = d.jac[r].dot(&d.dfda[col]);
                out.d_dq[(r, col)] = d.jac[r].dot(&d.dfdq[col]);
                out.d_dv[(r, col)] = d.jac[r].dot(&d.dfdv[col]);
            }
        }
        for i in vs..vs + n {
            let jc = d.jac[i];
            d.dfdq[i] += cross_force(&jc, &of);
        }
        if dm.root_pose[p].is_none() {
            d.oy[p] += y;
            d.doy_q[p] += qm;
            d.doy_k[p] += km;
            d.of[p] += of;
        }
    }
    // blocks between a joint k and each joint i above it
    for k in 0..nj {
        let (ks, kn) = (dm.v_start[k], dm.joint[k].nv);
        let mut i = d.parent_joint[k];
        while i != usize::MAX {
            let (is, in_) = (dm.v_start[i], dm.joint[i].nv);
            for ai in is..is + in_ {
                let ja = d.jac[ai];
                let dvdq_a = ang(&d.dvdq[ai]);
                let ja_ang = ang(&ja);
                for b in ks..ks + kn {
                    let m = ja.dot(&d.dfda[b]);
                    out.d_da[(ai, b)] = m;
                    out.d_da[(b, ai)] = m;
                    out.d_dq[(ai, b)] = ja.dot(&d.dfdq[b]);
                    out.d_dv[(ai, b)] = ja.dot(&d.dfdv[b]);
                    out.d_dq[(b, ai)] = d.dfda[b].dot(&d.dadq[ai]) + d.dytj[b].dot(&dvdq_a);
                    out.d_dv[(b, ai)] = d.dfda[b].dot(&d.dadv[ai]) + d.dytj[b].dot(&ja_ang);
                }
            }
            i = d.parent_joint[i];
        }
    }
    for k in 0..dm.nv {
        out.d_da[(k, k)] += dm.armature[k];
        out.d_dv[(k, k)] += dm.damping[k];
    }
}

/// Models and points shared by the derivative tests of this module and of `aba_derivatives`.
#[cfg(test)]
pub(crate) mod test_models {
    use crate::data::DynModel;
    use torsion_math::{Mat3, Quat, Vec3};
    use torsion_model::builder::{JointDesc, ModelBuilder};
    use torsion_model::{JointType, Model};

    fn inertia(a: f64, b: f64, c: f64, d: f64) -> Mat3 {
        Mat3::new(a, d, 0.001, d, b, -0.002, 0.001, -0.002, c)
    }

    /// The shared floating tree with every joint type (torsion_model::builder::floating_tree).
    pub fn tree() -> Model {
        torsion_model::builder::floating_tree()
    }

    /// A 4-link revolute chain with tilted axes and frames.
    pub fn chain() -> Model {
        let mut b = ModelBuilder::new("chain").gravity(Vec3::new(0.0, 0.0, -9.81));
        let mut prev = b.add_fixed_body("world", Vec3::zeros(), Quat::identity());
        for k in 0..4 {
            let kf = k as f64;
            let l = b.add_body(&format!("l{k}"), 1.0 + 0.3 * kf, inertia(0.02 + 0.01 * kf, 0.03, 0.025, 0.001 * kf));
            let axis = [Vec3::z(), Vec3::new(0.0, 1.0, 0.3), Vec3::new(1.0, -0.2, 0.1), Vec3::y()][k];
            let mut j = JointDesc::hinge(
                &format!("j{k}"),
                prev,
                l,
                Vec3::new(0.0, 0.05, 0.2),
                Vec3::new(0.02, 0.0, -0.1),
                axis,
            );
            j.frame_parent = Quat::from_rpy(0.1 * kf, -0.2, 0.3 * kf);
            b.add_joint(j);
            prev = l;
        }
        b.build().unwrap()
    }

    /// A configuration with unit quaternions and velocities / accelerations / torques for `m`, and joint
    /// armature and damping set on the model (so that those terms are tested too).
    pub fn point(m: &Model, seed: u64) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15).wrapping_add(7);
        let mut r = move || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        };
        let mut q = vec![];
        for t in &m.joint_type {
            match t {
                JointType::Ball => q.extend_from_slice(&Quat::new(r(), r(), r(), r()).normalize().to_array()),
                JointType::Free => {
                    q.extend_from_slice(&[r(), r(), r()]);
                    q.extend_from_slice(&Quat::new(r(), r(), r(), r()).normalize().to_array());
                }
                t => (0..t.nq()).for_each(|_| q.push(2.0 * r())),
            }
        }
        let v = (0..m.nv()).map(|_| r()).collect();
        let w = (0..m.nv()).map(|_| 2.0 * r()).collect();
        (q, v, w)
    }

    /// Armature and damping on every DoF (DynModel fields, set after building).
    pub fn with_armature<T: torsion_math::Scalar>(mut dm: DynModel<T>) -> DynModel<T> {
        for k in 0..dm.nv {
            dm.armature[k] = T::c(0.01 * (k + 1) as f64);
            dm.damping[k] = T::c(0.05 + 0.02 * k as f64);
        }
        dm
    }

    /// max |a − b| / max(1, max |b|)
    pub fn rel(a: &nalgebra::DMatrix<f64>, b: &nalgebra::DMatrix<f64>) -> f64 {
        (a - b).amax() / b.amax().max(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::test_models::{chain, point, rel, tree, with_armature};
    use super::*;
    use crate::derivatives::dual_derivatives;
    use crate::joints::integrate;
    use crate::{crba, rnea};
    use num_dual::Dual64;

    /// The analytic derivatives against dual numbers of the generic RNEA (exact to round-off) and central
    /// differences on the manifold (q ⊕ ±h e_k); M against CRBA; τ against RNEA.
    #[test]
    fn analytic_rnea_derivatives_match_duals_and_finite_differences() {
        for m in [tree(), chain()] {
            let dm = with_armature(DynModel::<f64>::from_model(&m).unwrap());
            let dd = with_armature(DynModel::<Dual64>::from_model(&m).unwrap());
            let mut d = DynData::new(&dm);
            let mut out = RneaDerivatives::new(dm.nv);
            for seed in 0..3 {
                let (q, v, a) = point(&m, seed);
                rnea_derivatives_into(&dm, &q, &v, &a, &mut d, &mut out).unwrap();
                let r = dual_derivatives(&dd, &q, &v, &a, rnea).unwrap();
                let (eq, ev, ea) = (rel(&out.d_dq, &r.d_dq), rel(&out.d_dv, &r.d_dv), rel(&out.d_da, &r.d_dthird));
                let tau = rnea(&dm, &q, &v, &a, &mut d).unwrap();
                let et = tau.iter().zip(&out.tau).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max);
                let em = rel(&out.d_da, &crba(&dm, &q, &mut d).unwrap());
                eprintln!(
                    "{} seed {seed}: vs duals ∂q {eq:.1e} ∂v {ev:.1e} ∂a {ea:.1e}; τ {et:.1e}; M {em:.1e}",
                    m.name
                );
                assert!(eq < 1e-12 && ev < 1e-12 && ea < 1e-12 && et < 1e-12 && em < 1e-12);
                // central differences in the tangent space
                let h = 1e-6;
                let mut fd = DMatrix::zeros(dm.nv, dm.nv);
                for k in 0..dm.nv {
                    let mut e = vec![0.0; dm.nv];
                    e[k] = h;
                    let tp = rnea(&dm, &integrate(&dm, &q, &e), &v, &a, &mut d).unwrap();
                    e[k] = -h;
                    let tm = rnea(&dm, &integrate(&dm, &q, &e), &v, &a, &mut d).unwrap();
                    for i in 0..dm.nv {
                        fd[(i, k)] = (tp[i] - tm[i]) / (2.0 * h);
                    }
                }
                let efd = rel(&out.d_dq, &fd);
                assert!(efd < 1e-7, "{}: ∂τ/∂q vs central differences {efd:e}", m.name);
            }
        }
    }
}
