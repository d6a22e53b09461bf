//! Analytic derivatives of forward dynamics by the standard route (Carpentier & Mansard 2018 §V): with
//! q̈ = ABA(q, v, τ), differentiating τ = RNEA(q, v, q̈) gives ∂q̈/∂q = −M⁻¹ ∂τ/∂q|_{a = q̈},
//! ∂q̈/∂v = −M⁻¹ ∂τ/∂v|_{a = q̈} and ∂q̈/∂τ = M⁻¹, with ∂τ/∂· and M from one analytic RNEA-derivative sweep
//! (`rnea_derivatives`) and M⁻¹ from a dense Cholesky factorisation (M includes the armature; the joint damping
//! is in ∂τ/∂v).
use crate::aba::aba_pass;
use crate::data::{DynData, DynError, DynModel};
use crate::fk::forward_kinematics;
use crate::rnea_derivatives::{rnea_derivatives_pass, RneaDerivatives};
use nalgebra::DMatrix;
use torsion_math::linalg::{cholesky_in_place, inverse_from_cholesky};
use torsion_math::Scalar;

/// q̈(q, v, τ) and its derivatives; allocate once with [`AbaDerivatives::new`].
#[derive(Clone, Debug)]
pub struct AbaDerivatives<T: Scalar = f64> {
    /// q̈ = ABA(q, v, τ) (nv)
    pub qdd: Vec<T>,
    /// ∂q̈/∂q in tangent coordinates (nv × nv)
    pub d_dq: DMatrix<T>,
    /// ∂q̈/∂v (nv × nv)
    pub d_dv: DMatrix<T>,
    /// ∂q̈/∂τ = M(q)⁻¹ (nv × nv)
    pub d_dtau: DMatrix<T>,
    /// the RNEA derivatives at a = q̈ (`rnea.d_da` = M, `rnea.tau` = τ up to round-off)
    pub rnea: RneaDerivatives<T>,
    /// scratch: the Cholesky factor of M, then its inverse
    chol: DMatrix<T>,
}

impl<T: Scalar> AbaDerivatives<T> {
    pub fn new(nv: usize) -> Self {
        AbaDerivatives {
            qdd: vec![T::zero(); nv],
            d_dq: DMatrix::zeros(nv, nv),
            d_dv: DMatrix::zeros(nv, nv),
            d_dtau: DMatrix::zeros(nv, nv),
            rnea: RneaDerivatives::new(nv),
            chol: DMatrix::zeros(nv, nv),
        }
    }
}

/// ∂q̈/∂q, ∂q̈/∂v, ∂q̈/∂τ (and q̈) at (q, v, τ) into `out`; no heap allocation.
pub fn aba_derivatives_into<T: Scalar>(
    dm: &DynModel<T>,
    q: &[T],
    v: &[T],
    tau: &[T],
    d: &mut DynData<T>,
    out: &mut AbaDerivatives<T>,
) -> Result<(), DynError> {
    dm.check_q(q)?;
    dm.check_v("v", v)?;
    dm.check_v("tau", tau)?;
    dm.check_v("qdd (output)", &out.qdd)?;
    out.rnea.check(dm.nv)?;
    let mats = [("∂q̈/∂q (output)", &out.d_dq), ("∂q̈/∂v (output)", &out.d_dv), ("∂q̈/∂τ (output)", &out.d_dtau)];
    for (what, m) in mats.into_iter().chain([("Cholesky scratch", &out.chol)]) {
        if m.nrows() != dm.nv || m.ncols() != dm.nv {
            return Err(DynError::Shape { what, got: m.nrows() * m.ncols(), expected: dm.nv * dm.nv });
        }
    }
    forward_kinematics(dm, q, d);
    aba_pass(dm, v, tau, d, &mut out.qdd);
    rnea_derivatives_pass(dm, v, &out.qdd, d, &mut out.rnea);
    out.chol.copy_from(&out.rnea.d_da);
    let l = &mut out.chol;
    if !cholesky_in_place(l) {
        return Err(DynError::Unsupported("the joint-space inertia matrix is not positive definite".into()));
    }
    inverse_from_cholesky(l, &mut out.d_dtau);
    neg_product_sym(&out.d_dtau, &out.rnea.d_dq, &mut out.d_dq);
    neg_product_sym(&out.d_dtau, &out.rnea.d_dv, &mut out.d_dv);
    Ok(())
}

/// out = −a b for a symmetric `a` (M⁻¹) and square matrices of one size, column by column as axpys over
/// contiguous columns, out[:, c] = −Σ_k b[k, c] a[:, k], skipping the structural zeros of b (∂τ/∂q and ∂τ/∂v
/// vanish between DoFs on different branches and for free-joint translations; a skipped term adds exactly 0).
/// nalgebra's `gemm` would allocate packing buffers for f64.
fn neg_product_sym<T: Scalar>(a: &DMatrix<T>, b: &DMatrix<T>, out: &mut DMatrix<T>) {
    let n = a.nrows();
    for (oc, bc) in out.as_mut_slice().chunks_exact_mut(n).zip(b.as_slice().chunks_exact(n)) {
        oc.fill(T::zero());
        for (&bk, ak) in bc.iter().zip(a.as_slice().chunks_exact(n)) {
            if bk.is_exact_zero() {
                continue;
            }
            for (o, &x) in oc.iter_mut().zip(ak) {
                *o -= x * bk;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aba;
    use crate::derivatives::dual_derivatives;
    use crate::joints::integrate;
    use crate::rnea_derivatives::test_models::{chain, point, rel, tree, with_armature};
    use num_dual::Dual64;

    /// The analytic derivatives against dual numbers of the generic ABA and central differences on the
    /// manifold; M⁻¹ M = 1.
    #[test]
    fn analytic_aba_derivatives_match_duals_and_finite_differences() {
        for m in [tree(), chain()] {
            let dm = with_armature(DynModel::<f64>::from_model(&m).unwrap());
            let dd = with_armature(DynModel::<Dual64>::from_model(&m).unwrap());
            let mut d = DynData::new(&dm);
            let mut out = AbaDerivatives::new(dm.nv);
            for seed in 0..3 {
                let (q, v, tau) = point(&m, seed);
                aba_derivatives_into(&dm, &q, &v, &tau, &mut d, &mut out).unwrap();
                let r = dual_derivatives(&dd, &q, &v, &tau, aba).unwrap();
                let (eq, ev, et) = (rel(&out.d_dq, &r.d_dq), rel(&out.d_dv, &r.d_dv), rel(&out.d_dtau, &r.d_dthird));
                let qdd = aba(&dm, &q, &v, &tau, &mut d).unwrap();
                let ea = qdd.iter().zip(&out.qdd).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max);
                let eye = &out.d_dtau * &out.rnea.d_da - DMatrix::identity(dm.nv, dm.nv);
                eprintln!(
                    "{} seed {seed}: vs duals ∂q {eq:.1e} ∂v {ev:.1e} ∂τ {et:.1e}; q̈ {ea:.1e}; |M⁻¹M − 1| {:.1e}",
                    m.name,
                    eye.amax()
                );
                assert!(eq < 1e-11 && ev < 1e-11 && et < 1e-11 && ea < 1e-12 && eye.amax() < 1e-12);
                let h = 1e-6;
                let mut fd = DMatrix::zeros(dm.nv, dm.nv);
                for k in 0..dm.nv {
                    let mut e = vec![0.0; dm.nv];
                    e[k] = h;
                    let ap = aba(&dm, &integrate(&dm, &q, &e), &v, &tau, &mut d).unwrap();
                    e[k] = -h;
                    let am = aba(&dm, &integrate(&dm, &q, &e), &v, &tau, &mut d).unwrap();
                    for i in 0..dm.nv {
                        fd[(i, k)] = (ap[i] - am[i]) / (2.0 * h);
                    }
                }
                let efd = rel(&out.d_dq, &fd);
                assert!(efd < 1e-7, "{}: ∂q̈/∂q vs central differences {efd:e}", m.name);
            }
        }
    }
}
