//! External body wrenches (MuJoCo's `xfrc_applied`; issue 13 item 6): per body b a force f_b and a torque n_b in
//! the world frame, applied at the body's COM (body frames are COM frames, `data.rs`), 6 entries per body in body
//! order: w = (f_0, n_0, f_1, n_1, …). Their generalized force is τ_ext = Σ_b J_bᵀ w_b with J_b = ∂(ċ_b, ω_b)/∂v.
//! With F_b = (n_b + c_b × f_b, f_b) the wrench at the world origin and S_i the world columns of the joints
//! (`crba::world_columns`), τ_i = S_i · Σ_{b in the subtree of joint(i)} F_b: one backward pass.
//!
//! Beside it, its two adjoints: ḡ_w = J_b ḡ_τ (`wrench_cotangent_into`) and ∂(λᵀ τ_ext)/∂q
//! (`wrench_state_vjp_into`). All need `d.o_m` (call `forward_kinematics` first) and allocate nothing.
use crate::data::{DynData, DynError, DynModel};
use torsion_math::spatial::{ang, cross_force, lin, stack, V6};
use torsion_math::{Scalar, Vec3};

/// Entries per body of a wrench vector.
pub const WRENCH_DIM: usize = 6;

/// Whether `w` holds wrenches (6 per body) or none (empty); any other length is an error.
pub fn has_wrenches<T: Scalar>(dm: &DynModel<T>, w: &[T]) -> Result<bool, DynError> {
    if w.is_empty() {
        return Ok(false);
    }
    if w.len() != WRENCH_DIM * dm.nb {
        return Err(DynError::Shape { what: "body wrenches (6 per body)", got: w.len(), expected: WRENCH_DIM * dm.nb });
    }
    Ok(true)
}

/// F = (n + c × f, f): body b's wrench moved from its COM c to the world origin.
#[inline]
fn at_origin<T: Scalar>(c: &Vec3<T>, w: &[T]) -> V6<T> {
    let (f, n) = (Vec3::new(w[0], w[1], w[2]), Vec3::new(w[3], w[4], w[5]));
    stack(&(n + c.cross(&f)), &f)
}

/// τ += Σ_b J_bᵀ w_b (an empty `w`: nothing). Needs `d.o_m`.
pub fn wrench_forces_into<T: Scalar>(
    dm: &DynModel<T>,
    d: &mut DynData<T>,
    w: &[T],
    tau: &mut [T],
) -> Result<(), DynError> {
    if !has_wrenches(dm, w)? {
        return Ok(());
    }
    dm.check_v("tau", tau)?;
    for b in 0..dm.nb {
        d.ext_f[b] = at_origin(&d.o_m[b].pos, &w[WRENCH_DIM * b..WRENCH_DIM * (b + 1)]);
    }
    for j in (0..dm.parent.len()).rev() {
        let (p, c, jm) = (dm.parent[j], dm.child[j], &dm.joint[j]);
        let f = d.ext_f[c];
        for i in 0..jm.nv {
            tau[dm.v_start[j] + i] += d.o_m[c].act_motion(&jm.s[i]).dot(&f);
        }
        d.ext_f[p] += f;
    }
    Ok(())
}

/// `d.ext_v[b]` = body b's spatial velocity (world frame, at the origin) when the joint velocities are `lam`.
fn velocities<T: Scalar>(dm: &DynModel<T>, d: &mut DynData<T>, lam: &[T]) {
    d.ext_v.fill(V6::zeros());
    for j in 0..dm.parent.len() {
        let (p, c, jm) = (dm.parent[j], dm.child[j], &dm.joint[j]);
        let mut v = d.ext_v[p];
        for i in 0..jm.nv {
            v += d.o_m[c].act_motion(&jm.s[i]) * lam[dm.v_start[j] + i];
        }
        d.ext_v[c] = v;
    }
}

/// The adjoint of [`wrench_forces_into`] w.r.t. the wrenches: ḡ_w_b += J_b ḡ_τ = (ċ_b, ω_b) of each body when the
/// joint velocities are ḡ_τ (`g_w`: 6 per body). Needs `d.o_m`.
pub fn wrench_cotangent_into<T: Scalar>(
    dm: &DynModel<T>,
    d: &mut DynData<T>,
    g_tau: &[T],
    g_w: &mut [T],
) -> Result<(), DynError> {
    dm.check_v("g_tau", g_tau)?;
    if g_w.len() != WRENCH_DIM * dm.nb {
        return Err(DynError::Shape { what: "g_w (6 per body)", got: g_w.len(), expected: WRENCH_DIM * dm.nb });
    }
    velocities(dm, d, g_tau);
    for b in 0..dm.nb {
        let v = d.ext_v[b];
        let om = ang(&v);
        let vc = lin(&v) + om.cross(&d.o_m[b].pos);
        for k in 0..3 {
            g_w[WRENCH_DIM * b + k] += vc[k];
            g_w[WRENCH_DIM * b + 3 + k] += om[k];
        }
    }
    Ok(())
}

/// The adjoint of [`wrench_forces_into`] w.r.t. the configuration, in tangent coordinates: ḡ_q += ∂(λᵀ τ_ext)/∂q
/// at fixed (world-frame) wrenches. A tangent step along DoF k moves the subtree of joint(k) by its world column
/// S_k, so with V_b the body velocities under λ, Ω_b their angular parts, V_P the velocity of joint(k)'s parent:
/// ∂(Σ_b F_b · V_b)/∂q_k = S_k · Σ_{b below}(V_b ×* F_b + (c_b × u_b, u_b)) − S_k · (V_P ×* Σ_{b below} F_b),
/// u_b = f_b × Ω_b (the second term of the sum: the COM moving under a fixed force). Needs `d.o_m`.
pub fn wrench_state_vjp_into<T: Scalar>(
    dm: &DynModel<T>,
    d: &mut DynData<T>,
    w: &[T],
    lam: &[T],
    g_q: &mut [T],
) -> Result<(), DynError> {
    if !has_wrenches(dm, w)? {
        return Ok(());
    }
    dm.check_v("lambda", lam)?;
    dm.check_v("g_q", g_q)?;
    velocities(dm, d, lam);
    for b in 0..dm.nb {
        let wb = &w[WRENCH_DIM * b..WRENCH_DIM * (b + 1)];
        let c = d.o_m[b].pos;
        let f = at_origin(&c, wb);
        let u = lin(&f).cross(&ang(&d.ext_v[b]));
        d.ext_f[b] = f;
        d.ext_k[b] = cross_force(&d.ext_v[b], &f) + stack(&c.cross(&u), &u);
    }
    for j in (0..dm.parent.len()).rev() {
        let (p, c, jm) = (dm.parent[j], dm.child[j], &dm.joint[j]);
        let (f, k) = (d.ext_f[c], d.ext_k[c]);
        let r = k - cross_force(&d.ext_v[p], &f);
        for i in 0..jm.nv {
            g_q[dm.v_start[j] + i] += d.o_m[c].act_motion(&jm.s[i]).dot(&r);
        }
        d.ext_f[p] += f;
        d.ext_k[p] += k;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fk::forward_kinematics;
    use crate::joints::integrate;
    use torsion_math::spatial::Se3;

    fn setup() -> (torsion_model::Model, DynModel<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
        let m = torsion_model::builder::floating_tree();
        let dm = DynModel::<f64>::from_model(&m).unwrap();
        let q = torsion_model::builder::example_configuration(&m, 3);
        let w: Vec<f64> = (0..WRENCH_DIM * dm.nb).map(|i| ((i * 7 % 11) as f64 - 5.0) * 0.37).collect();
        let lam: Vec<f64> = (0..dm.nv).map(|i| ((i * 5 % 7) as f64 - 3.0) * 0.61).collect();
        (m, dm, q, w, lam)
    }

    fn placements(dm: &DynModel<f64>, q: &[f64]) -> Vec<Se3<f64>> {
        let mut d = DynData::new(dm);
        forward_kinematics(dm, q, &mut d);
        d.o_m
    }

    /// J_b λ from `wrench_cotangent_into` against central differences of each body's COM and orientation along
    /// q ⊕ ελ, and λᵀ τ_ext = Σ_b w_b · J_b λ (the kernel is the transpose of that map).
    #[test]
    fn body_jacobians_match_finite_differences() {
        let (_, dm, q, w, lam) = setup();
        let mut d = DynData::new(&dm);
        forward_kinematics(&dm, &q, &mut d);
        let mut gw = vec![0.0; WRENCH_DIM * dm.nb];
        wrench_cotangent_into(&dm, &mut d, &lam, &mut gw).unwrap();
        let h = 1e-6;
        let step = |s: f64| placements(&dm, &integrate(&dm, &q, &lam.iter().map(|l| l * s).collect::<Vec<_>>()));
        let (p, m) = (step(h), step(-h));
        let mut worst: f64 = 0.0;
        for b in 0..dm.nb {
            let vc = (p[b].pos - m[b].pos) / (2.0 * h);
            let dr = (p[b].rot - m[b].rot) / (2.0 * h) * d.o_m[b].rot.transpose();
            let om = Vec3::new(dr[(2, 1)], dr[(0, 2)], dr[(1, 0)]);
            for k in 0..3 {
                worst = worst.max((gw[6 * b + k] - vc[k]).abs()).max((gw[6 * b + 3 + k] - om[k]).abs());
            }
        }
        eprintln!("J_b λ vs central differences: {worst:e}");
        assert!(worst < 1e-8, "J_b λ vs central differences: {worst:e}");
        let mut tau = vec![0.0; dm.nv];
        wrench_forces_into(&dm, &mut d, &w, &mut tau).unwrap();
        let lhs: f64 = lam.iter().zip(&tau).map(|(a, b)| a * b).sum();
        let rhs: f64 = w.iter().zip(&gw).map(|(a, b)| a * b).sum();
        assert!((lhs - rhs).abs() < 1e-12 * rhs.abs().max(1.0), "λᵀ τ_ext {lhs} vs Σ w·J λ {rhs}");
    }

    /// ∂(λᵀ τ_ext)/∂q (tangent coordinates) against central differences on the floating tree (free, ball, slide,
    /// hinges), and an empty wrench list adds nothing.
    #[test]
    fn state_vjp_matches_central_differences() {
        let (_, dm, q, w, lam) = setup();
        let mut d = DynData::new(&dm);
        let s = |qq: &[f64]| {
            let mut d = DynData::new(&dm);
            forward_kinematics(&dm, qq, &mut d);
            let mut tau = vec![0.0; dm.nv];
            wrench_forces_into(&dm, &mut d, &w, &mut tau).unwrap();
            lam.iter().zip(&tau).map(|(a, b)| a * b).sum::<f64>()
        };
        forward_kinematics(&dm, &q, &mut d);
        let mut g = vec![0.0; dm.nv];
        wrench_state_vjp_into(&dm, &mut d, &w, &lam, &mut g).unwrap();
        let h = 1e-6;
        let mut worst: f64 = 0.0;
        let scale = g.iter().fold(0.0f64, |a, b| a.max(b.abs()));
        for k in 0..dm.nv {
            let mut e = vec![0.0; dm.nv];
            e[k] = h;
            let fp = s(&integrate(&dm, &q, &e));
            e[k] = -h;
            let fm = s(&integrate(&dm, &q, &e));
            worst = worst.max(((fp - fm) / (2.0 * h) - g[k]).abs() / scale);
        }
        eprintln!("∂(λᵀ τ_ext)/∂q vs central differences: {worst:e} (scale {scale:.3})");
        assert!(worst < 1e-6, "∂(λᵀ τ_ext)/∂q vs central differences: {worst:e}");
        let mut g0 = vec![0.0; dm.nv];
        wrench_state_vjp_into(&dm, &mut d, &[], &lam, &mut g0).unwrap();
        assert!(g0.iter().all(|&x| x == 0.0));
        assert!(has_wrenches(&dm, &[0.0; 5]).is_err());
    }
}
