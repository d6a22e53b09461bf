//! Implicit gyroscopic torque for loose rigid bodies (a free joint whose body carries no other joint), the
//! correction both generalized-coordinate steppers apply to v̂ = v + h q̈ (issue 12).
//!
//! Explicit Euler on Euler's equations I ω̇ = −ω × I ω grows the rotational energy by ½ h² ω̇ᵀ I ω̇ every step
//! for any body whose inertia is not isotropic (a capsule or a box spinning off a principal axis: 1 % a step at
//! 13 rad/s and Δt 10 ms; MuJoCo's Euler does the same). One linearised backward-Euler step of the gyroscopic
//! term (MuJoCo's `implicit` integrator's choice for this term; Catto 2015) never adds energy:
//! (I + h B) α̃ = I α with B = ∂(ω × I ω)/∂ω = [ω]× I − [I ω]×, α the explicit angular acceleration about the
//! COM; the origin's linear acceleration follows the rigid motion, Δa_o = Δα × (o − c). Articulated trees keep
//! the explicit term (their Coriolis coupling is not local).
use crate::DynModel;
use nalgebra::Matrix3;
use num_dual::Dual64;
use torsion_math::spatial::skew;
use torsion_math::{Scalar, Vec3};
use torsion_model::JointType;

/// Whether joint j is a loose body's free joint (its child body is no joint's parent).
pub fn is_loose_free_joint<T: Scalar>(dm: &DynModel<T>, j: usize) -> bool {
    dm.joint[j].kind == JointType::Free && !dm.parent.contains(&dm.child[j])
}

/// One loose body: given its explicit update `vhat` = v + h q̈ (joint frame: ω, then the origin's linear part)
/// and the step's `v`, replace the angular acceleration by the implicit gyroscopic one. `ic`: rotational inertia
/// about the COM and `c`: the COM, both in the joint frame.
pub fn gyroscopic_joint<T: Scalar>(ic: &Matrix3<T>, c: &Vec3<T>, v: &[T], h: T, vhat: &mut [T]) {
    let w = Vec3::new(v[0], v[1], v[2]);
    // the explicit angular acceleration about the COM (for a rigid body it is the same at every point)
    let alpha = Vec3::new(vhat[0] - v[0], vhat[1] - v[1], vhat[2] - v[2]) / h;
    let b = skew(&w) * ic - skew(&(ic * w));
    let Some(inv) = (ic + b * h).try_inverse() else { return };
    let dalpha = inv * (ic * alpha) - alpha;
    // the origin o sits at −c from the COM: Δa_o = Δα × (o − c) = −Δα × c
    let dlin = -dalpha.cross(c);
    for i in 0..3 {
        vhat[i] += dalpha[i] * h;
        vhat[3 + i] += dlin[i] * h;
    }
}

/// [`gyroscopic_joint`] on every loose body's free joint; no heap allocation.
pub fn implicit_gyroscopic<T: Scalar>(dm: &DynModel<T>, v: &[T], h: T, vhat: &mut [T]) {
    for j in 0..dm.parent.len() {
        if !is_loose_free_joint(dm, j) {
            continue;
        }
        let (ic, c) = loose_body_inertia(dm, j);
        let vs = dm.v_start[j];
        gyroscopic_joint(&ic, &c, &v[vs..vs + 6], h, &mut vhat[vs..vs + 6]);
    }
}

/// w ← Sᵀ w for S = ∂v̂′/∂v̂ of [`implicit_gyroscopic`] at the step's `v` (the reverse mode's path from v̂ to
/// the controls, ncp `adjoint.rs`). Each loose body's update is affine in v̂ (α = (v̂ − v)/h, the inverse depends on
/// v only): its angular columns are three Dual64 evaluations of the same kernel, its linear columns the identity.
pub fn implicit_gyroscopic_vjp(dm: &DynModel<f64>, v: &[f64], h: f64, w: &mut [f64]) {
    for j in 0..dm.parent.len() {
        if !is_loose_free_joint(dm, j) {
            continue;
        }
        let (ic, c) = loose_body_inertia(dm, j);
        let (icd, cd) = (ic.map(Dual64::from), c.map(Dual64::from));
        let vs = dm.v_start[j];
        let vd: [Dual64; 6] = std::array::from_fn(|i| Dual64::from(v[vs + i]));
        let mut g = [0.0; 3];
        for (r, g) in g.iter_mut().enumerate() {
            let mut vh = vd;
            vh[r].eps = 1.0;
            gyroscopic_joint(&icd, &cd, &vd, Dual64::from(h), &mut vh);
            *g = (0..6).map(|i| vh[i].eps * w[vs + i]).sum();
        }
        w[vs..vs + 3].copy_from_slice(&g);
    }
}

/// The rotational inertia about the COM and the COM of joint j's child body, in the joint frame.
pub fn loose_body_inertia<T: Scalar>(dm: &DynModel<T>, j: usize) -> (Matrix3<T>, Vec3<T>) {
    let x = &dm.x_jc[j];
    let icom: Matrix3<T> = dm.inertia[dm.child[j]].fixed_view::<3, 3>(0, 0).into_owned();
    (x.rot * icom * x.rot.transpose(), x.pos)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `implicit_gyroscopic_vjp` against central differences of wᵀ v̂′(v̂) in v̂ (h = 1e-6) on two loose boxes
    /// (one rotated, both spinning off their principal axes) and a hinge (not a loose body: untouched).
    #[test]
    fn gyroscopic_vjp_matches_central_differences() {
        let xml = r#"<mujoco><worldbody>
            <body pos="0 0 1" euler="20 35 -10"><freejoint/><geom type="box" size="0.1 0.2 0.3" mass="2"
              pos="0.02 -0.01 0.03"/></body>
            <body pos="1 0 1"><freejoint/><geom type="box" size="0.3 0.1 0.05" mass="1"/></body>
            <body pos="2 0 1"><joint type="hinge" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 0 0 -0.5"
              size="0.05" mass="1"/></body></worldbody></mujoco>"#;
        let m = torsion_model::io::mjcf::load_mjcf_str(xml, "gyro.xml", None).unwrap();
        let dm = DynModel::<f64>::from_model(&m).unwrap();
        let nv = dm.nv;
        let (h, eps) = (0.01, 1e-6);
        let v: Vec<f64> = (0..nv).map(|k| 3.0 * (1.7 * k as f64 + 0.3).sin()).collect();
        let vhat: Vec<f64> = (0..nv).map(|k| v[k] + 0.4 * (0.9 * k as f64).cos()).collect();
        let wout: Vec<f64> = (0..nv).map(|k| (1.3 * k as f64 + 0.2).cos()).collect();
        let loss = |x: &[f64]| {
            let mut vh = x.to_vec();
            implicit_gyroscopic(&dm, &v, h, &mut vh);
            vh.iter().zip(&wout).map(|(a, b)| a * b).sum::<f64>()
        };
        let mut an = wout.clone();
        implicit_gyroscopic_vjp(&dm, &v, h, &mut an);
        let mut worst = 0.0f64;
        for k in 0..nv {
            let (mut p, mut q) = (vhat.clone(), vhat.clone());
            p[k] += eps;
            q[k] -= eps;
            let fd = (loss(&p) - loss(&q)) / (2.0 * eps);
            worst = worst.max((fd - an[k]).abs() / fd.abs().max(1.0));
        }
        assert!(an[..3] != wout[..3], "the gyroscopic term changed nothing");
        eprintln!("implicit gyroscopic vjp vs central differences: {worst:.1e}");
        assert!(worst <= 1e-6, "{worst:e}");
    }

    /// A box spinning about no principal axis, torque-free: the implicit update never adds rotational energy
    /// (the explicit one does), and its derivative (duals of the same kernel) matches central differences.
    #[test]
    fn gyroscopic_update_dissipates_and_its_derivative_matches_finite_differences() {
        let r = torsion_math::Quat::exp(&Vec3::new(0.3, -0.7, 0.4)).to_mat();
        let ic = r * Matrix3::from_diagonal(&Vec3::new(0.02, 0.05, 0.09)) * r.transpose();
        let c = Vec3::new(0.03, -0.02, 0.05);
        let h = 0.01;
        let mut worst = f64::NEG_INFINITY;
        let mut explicit_gain = 0.0f64;
        for k in 0..200 {
            let s = k as f64;
            let w = Vec3::new((1.3 * s).sin(), (0.7 * s + 1.0).cos(), (2.1 * s).sin()) * (2.0 + (s % 13.0));
            // explicit torque-free α = −I⁻¹ (ω × I ω)
            let alpha = -(ic.try_inverse().unwrap() * w.cross(&(ic * w)));
            let v = [w.x, w.y, w.z, 0.0, 0.0, 0.0];
            let mut vhat = [0.0; 6];
            for i in 0..3 {
                vhat[i] = w[i] + h * alpha[i];
            }
            let e = |x: &Vec3<f64>| 0.5 * x.dot(&(ic * x));
            explicit_gain = explicit_gain.max(e(&Vec3::new(vhat[0], vhat[1], vhat[2])) / e(&w) - 1.0);
            gyroscopic_joint(&ic, &c, &v, h, &mut vhat);
            worst = worst.max(e(&Vec3::new(vhat[0], vhat[1], vhat[2])) / e(&w) - 1.0);
        }
        eprintln!("rotational energy per step: explicit up to +{explicit_gain:.1e}, implicit worst {worst:.1e}");
        assert!(explicit_gain > 1e-3, "the explicit update gains energy here");
        assert!(worst <= 1e-14, "implicit gyroscopic update added energy: {worst:e}");

        // derivative w.r.t. (v, vhat) by duals vs central differences
        let x0 = [0.4, -1.1, 2.3, 0.2, -0.3, 0.5, 0.39, -1.12, 2.27, 0.21, -0.33, 0.48];
        let f = |x: &[f64]| {
            let mut vh = [x[6], x[7], x[8], x[9], x[10], x[11]];
            gyroscopic_joint(&ic, &c, &x[..6], h, &mut vh);
            vh
        };
        let lift = |m: &Matrix3<f64>| m.map(Dual64::from);
        let (icd, cd) = (lift(&ic), c.map(Dual64::from));
        let mut err = 0.0f64;
        for k in 0..12 {
            let mut xd: Vec<Dual64> = x0.iter().map(|&a| Dual64::from(a)).collect();
            xd[k].eps = 1.0;
            let mut vh: Vec<Dual64> = xd[6..].to_vec();
            gyroscopic_joint(&icd, &cd, &xd[..6], Dual64::from(h), &mut vh);
            let (mut xp, mut xm) = (x0, x0);
            xp[k] += 1e-6;
            xm[k] -= 1e-6;
            let (fp, fm) = (f(&xp), f(&xm));
            for i in 0..6 {
                let fd = (fp[i] - fm[i]) / 2e-6;
                err = err.max((vh[i].eps - fd).abs() / fd.abs().max(1.0));
            }
        }
        eprintln!("gyroscopic correction derivative vs FD: {err:.1e}");
        assert!(err < 1e-7, "{err:e}");
    }
}
