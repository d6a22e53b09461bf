//! Joint models: the joint transform X_J(q) (child joint frame in the parent joint frame) and the motion
//! subspace S expressed in the child *body* frame (constant for every joint type here, because joint
//! velocities are expressed in the child joint frame).
//!
//! Each joint also keeps X_{Jc←C} (the child body frame in the child joint frame, the inverse of the `cj` it is
//! built from) and, for revolute joints, the Rodrigues expansion of X_J(q) X_{Jc←C}, so that
//! [`JointModel::child_transform`] costs 24 multiply-adds and one sine/cosine.
use nalgebra::Matrix3;
use torsion_math::spatial::{skew, Se3, V6};
use torsion_math::{Quat, Scalar, Vec3};
use torsion_model::JointType;

#[derive(Clone, Debug)]
pub struct JointModel<T: Scalar> {
    pub kind: JointType,
    /// unit axis in the joint frame
    pub axis: Vec3<T>,
    /// motion subspace columns in the child body frame (nv of them)
    pub s: [V6<T>; 6],
    pub nv: usize,
    pub nq: usize,
    /// X_{Jc←C}: the child body frame in the child joint frame (`cj`⁻¹, the same as `DynModel::x_jc`)
    pub x_jc: Se3<T>,
    /// revolute: K R_jc, K² R_jc, K p_jc, K² p_jc with K = [axis]×, so that
    /// X_J(q) X_{Jc←C} = (R_jc + sin q K R_jc + (1 − cos q) K² R_jc, p_jc + sin q K p_jc + (1 − cos q) K² p_jc)
    k1r: Matrix3<T>,
    k2r: Matrix3<T>,
    k1p: Vec3<T>,
    k2p: Vec3<T>,
}

impl<T: Scalar> JointModel<T> {
    /// `cj` = X_{C←Jc}: the joint frame seen from the child body.
    pub fn new(kind: JointType, axis: &Vec3<T>, cj: &Se3<T>) -> Self {
        let z = T::zero();
        let mut cols = [V6::zeros(); 6];
        let unit = |i: usize| {
            let mut m = V6::zeros();
            m[i] = T::one();
            m
        };
        match kind {
            JointType::Revolute => cols[0] = V6::new(axis.x, axis.y, axis.z, z, z, z),
            JointType::Prismatic => cols[0] = V6::new(z, z, z, axis.x, axis.y, axis.z),
            JointType::Ball => (0..3).for_each(|i| cols[i] = unit(i)),
            JointType::Free => (0..6).for_each(|i| cols[i] = unit(i)),
            JointType::Fixed => {}
        }
        let nv = kind.dof();
        for c in cols.iter_mut().take(nv) {
            *c = cj.act_motion(c);
        }
        let x_jc = cj.inverse();
        let k = skew(axis);
        let k2 = k * k;
        JointModel {
            kind,
            axis: *axis,
            s: cols,
            nv,
            nq: kind.nq(),
            x_jc,
            k1r: k * x_jc.rot,
            k2r: k2 * x_jc.rot,
            k1p: k * x_jc.pos,
            k2p: k2 * x_jc.pos,
        }
    }

    /// X_J(q) X_{Jc←C}: the child body frame in the parent joint frame.
    #[inline(always)]
    pub fn child_transform(&self, q: &[T]) -> Se3<T> {
        let sc = if self.kind == JointType::Revolute { q[0].sin_cos() } else { (T::zero(), T::one()) };
        self.child_transform_sc(q, sc)
    }

    /// [`JointModel::child_transform`] with (sin q, cos q) of a revolute joint given (ignored otherwise).
    #[inline(always)]
    pub fn child_transform_sc(&self, q: &[T], (s, c): (T, T)) -> Se3<T> {
        match self.kind {
            JointType::Revolute => {
                let c1 = T::one() - c;
                Se3::new(self.x_jc.rot + self.k1r * s + self.k2r * c1, self.x_jc.pos + self.k1p * s + self.k2p * c1)
            }
            JointType::Prismatic => Se3::new(self.x_jc.rot, self.x_jc.pos + self.axis * q[0]),
            _ => self.transform(q).compose(&self.x_jc),
        }
    }

    /// X_{Jp←Jc}(q) for this joint's slice of q.
    #[inline]
    pub fn transform(&self, q: &[T]) -> Se3<T> {
        match self.kind {
            JointType::Revolute => Se3::new(Quat::from_axis_angle(&self.axis, q[0]).to_mat(), Vec3::zeros()),
            JointType::Prismatic => Se3::new(nalgebra::Matrix3::identity(), self.axis * q[0]),
            JointType::Ball => Se3::new(Quat::new(q[0], q[1], q[2], q[3]).normalize().to_mat(), Vec3::zeros()),
            JointType::Free => {
                Se3::new(Quat::new(q[3], q[4], q[5], q[6]).normalize().to_mat(), Vec3::new(q[0], q[1], q[2]))
            }
            JointType::Fixed => Se3::identity(),
        }
    }
}

/// Integrate a joint configuration by a velocity increment dv (nv entries, child-joint-frame convention):
/// revolute/prismatic q + dv; ball q ⊗ Exp(ω); free (R, p) ∘ exp(ω, v) on SE(3) (Pinocchio's convention).
pub fn integrate_joint<T: Scalar>(kind: JointType, q: &[T], dv: &[T], out: &mut [T]) {
    match kind {
        JointType::Revolute | JointType::Prismatic => out[0] = q[0] + dv[0],
        JointType::Fixed => {}
        JointType::Ball => {
            let r = Quat::new(q[0], q[1], q[2], q[3]).mul(&Quat::exp(&Vec3::new(dv[0], dv[1], dv[2]))).normalize();
            out[..4].copy_from_slice(&r.to_array());
        }
        JointType::Free => {
            let rq = Quat::new(q[3], q[4], q[5], q[6]);
            let w = Vec3::new(dv[0], dv[1], dv[2]);
            let v = Vec3::new(dv[3], dv[4], dv[5]);
            // exp6: translation V(ω) v with V = I + (1 − cos θ)/θ² [ω]× + (θ − sin θ)/θ³ [ω]×²
            let th2 = w.dot(&w);
            let (a, b) = if th2.re() < 1e-16 {
                (T::c(0.5) - th2 / T::c(24.0), T::c(1.0 / 6.0) - th2 / T::c(120.0))
            } else {
                let th = th2.sqrt();
                ((T::one() - th.cos()) / th2, (th - th.sin()) / (th2 * th))
            };
            let vt = v + w.cross(&v) * a + w.cross(&w.cross(&v)) * b;
            let p = Vec3::new(q[0], q[1], q[2]) + rq.rotate(&vt);
            let r = rq.mul(&Quat::exp(&w)).normalize();
            out[..3].copy_from_slice(&[p.x, p.y, p.z]);
            out[3..7].copy_from_slice(&r.to_array());
        }
    }
}

/// The frame term of the semi-implicit step (MuJoCo's free-joint convention): for a free joint the step advances
/// the *world* velocity of the body origin, not its body-frame coordinates. With q̈ from ABA (body-frame spatial
/// acceleration), the origin's classical acceleration in the step's frame is q̈_l + ω × v_l, so
/// v̂ = v + h q̈ + h (0, ω × v_l): `vhat[free linear] += h ω × v_l` (other joints unchanged). Explicit Euler on the
/// body-frame coordinates instead turns v_l by (I − h[ω]×) each step, which grows |v| by √(1 + h²|ω|²) and
/// bends the path into a helix (issue 12: a spinning sphere gained 49 % energy and sank 39 mm in 1 s).
pub fn add_free_frame_term<T: Scalar>(dm: &crate::DynModel<T>, v: &[T], h: T, vhat: &mut [T]) {
    for j in 0..dm.parent.len() {
        if dm.joint[j].kind == JointType::Free {
            let vs = dm.v_start[j];
            let w = Vec3::new(v[vs], v[vs + 1], v[vs + 2]);
            let c = w.cross(&Vec3::new(v[vs + 3], v[vs + 4], v[vs + 5])) * h;
            for i in 0..3 {
                vhat[vs + 3 + i] += c[i];
            }
        }
    }
}

/// One joint's position and velocity update of the semi-implicit step from v̂ (the new velocity, in the frame of
/// the step's start, [`add_free_frame_term`]): revolute / prismatic / ball q1 = q ⊕ h v̂, v1 = v̂; free joint as
/// MuJoCo's Euler integrator: p1 = p + h R v̂_l (straight in the world), R1 = R Exp(h ω̂), and v1 = (ω̂,
/// Exp(h ω̂)ᵀ v̂_l), the same world velocity in the new body frame.
pub fn advance_joint<T: Scalar>(kind: JointType, q: &[T], vhat: &[T], h: T, q1: &mut [T], v1: &mut [T]) {
    match kind {
        JointType::Free => {
            let rq = Quat::new(q[3], q[4], q[5], q[6]);
            let hw = Vec3::new(vhat[0], vhat[1], vhat[2]) * h;
            let u = Vec3::new(vhat[3], vhat[4], vhat[5]);
            let p = Vec3::new(q[0], q[1], q[2]) + rq.rotate(&u) * h;
            let e = Quat::exp(&hw);
            let r = rq.mul(&e).normalize();
            let ub = e.rotate_inv(&u);
            q1[..3].copy_from_slice(&[p.x, p.y, p.z]);
            q1[3..7].copy_from_slice(&r.to_array());
            v1[..3].copy_from_slice(&vhat[..3]);
            v1[3..6].copy_from_slice(&[ub.x, ub.y, ub.z]);
        }
        _ => {
            let n = kind.dof();
            let mut dq = [T::zero(); 6];
            for i in 0..n {
                dq[i] = vhat[i] * h;
            }
            integrate_joint(kind, q, &dq[..n], q1);
            v1[..n].copy_from_slice(&vhat[..n]);
        }
    }
}

/// [`advance_joint`] for the whole state: (q1, v1) from (q, v̂); no heap allocation. The position/velocity update
/// shared by every generalized-coordinate stepper (Featherstone, contact).
pub fn advance_into<T: Scalar>(dm: &crate::DynModel<T>, q: &[T], vhat: &[T], h: T, q1: &mut [T], v1: &mut [T]) {
    for j in 0..dm.parent.len() {
        let (qs, vs, jm) = (dm.q_start[j], dm.v_start[j], &dm.joint[j]);
        advance_joint(
            jm.kind,
            &q[qs..qs + jm.nq],
            &vhat[vs..vs + jm.nv],
            h,
            &mut q1[qs..qs + jm.nq],
            &mut v1[vs..vs + jm.nv],
        );
    }
}

/// q ⊕ dv for the whole configuration.
pub fn integrate<T: Scalar>(dm: &crate::DynModel<T>, q: &[T], dv: &[T]) -> Vec<T> {
    let mut out = q.to_vec();
    integrate_scaled_into(dm, q, dv, T::one(), &mut out);
    out
}

/// out = q ⊕ h v per joint (the semi-implicit position update of every generalized-coordinate stepper); no heap
/// allocation.
pub fn integrate_scaled_into<T: Scalar>(dm: &crate::DynModel<T>, q: &[T], v: &[T], h: T, out: &mut [T]) {
    let mut dq = [T::zero(); 6];
    for j in 0..dm.parent.len() {
        let (qs, vs, jm) = (dm.q_start[j], dm.v_start[j], &dm.joint[j]);
        for i in 0..jm.nv {
            dq[i] = v[vs + i] * h;
        }
        integrate_joint(jm.kind, &q[qs..qs + jm.nq], &dq[..jm.nv], &mut out[qs..qs + jm.nq]);
    }
}

/// The inverse of [`integrate`] to first order: dv with q1 = q0 ⊕ dv (exact logs for ball and free joints).
pub fn difference<T: Scalar>(dm: &crate::DynModel<T>, q0: &[T], q1: &[T]) -> Vec<T> {
    let mut out = vec![T::zero(); dm.nv];
    for j in 0..dm.parent.len() {
        let (qs, vs, jm) = (dm.q_start[j], dm.v_start[j], &dm.joint[j]);
        let (a, b) = (&q0[qs..qs + jm.nq], &q1[qs..qs + jm.nq]);
        match jm.kind {
            JointType::Revolute | JointType::Prismatic => out[vs] = b[0] - a[0],
            JointType::Fixed => {}
            JointType::Ball => {
                let d = Quat::new(a[0], a[1], a[2], a[3]).conj().mul(&Quat::new(b[0], b[1], b[2], b[3])).log();
                out[vs..vs + 3].copy_from_slice(&[d.x, d.y, d.z]);
            }
            JointType::Free => {
                let ra = Quat::new(a[3], a[4], a[5], a[6]);
                let w = ra.conj().mul(&Quat::new(b[3], b[4], b[5], b[6])).log();
                let dp = ra.rotate_inv(&Vec3::new(b[0] - a[0], b[1] - a[1], b[2] - a[2]));
                // v = V(ω)⁻¹ dp, V⁻¹ = I − ½[ω]× + c [ω]×², c = (1 − θ sin θ / (2 (1 − cos θ))) / θ²
                let th2 = w.dot(&w);
                let c = if th2.re() < 1e-12 {
                    T::c(1.0 / 12.0) + th2 / T::c(720.0)
                } else {
                    let th = th2.sqrt();
                    (T::one() - th * th.sin() / (T::c(2.0) * (T::one() - th.cos()))) / th2
                };
                let v = dp - w.cross(&dp) * T::c(0.5) + w.cross(&w.cross(&dp)) * c;
                out[vs..vs + 6].copy_from_slice(&[w.x, w.y, w.z, v.x, v.y, v.z]);
            }
        }
    }
    out
}
