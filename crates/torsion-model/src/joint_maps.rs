//! The configuration manifold of generalized coordinates, joint by joint (layouts of [`JointType::nq`]): q ⊕ δ
//! ([`integrate_joint`], right perturbations in the child joint frame; free joints on SE(3), Pinocchio's
//! convention), its inverse [`difference`], the semi-implicit position update of the generalized-coordinate
//! steppers ([`advance_joint`], [`add_free_frame_term`]), and the gradient maps between ambient (∂/∂q) and
//! tangent (∂/∂δ) cotangents. Written once, generic over the scalar (f64 and num-dual duals), over any
//! [`JointLayout`] (the [`Model`] itself, or the dynamics model of `torsion-dynamics`, which re-exports these).
use crate::{JointType, Model};
use torsion_math::{Quat, Scalar, Vec3};

/// The joint sequence a configuration is laid out by: q and v hold each joint's `nq` / `dof` entries in joint
/// order (offsets are running sums, as `Model::joint_q_start`).
pub trait JointLayout {
    fn joint_count(&self) -> usize;
    fn joint_kind(&self, j: usize) -> JointType;
}

impl JointLayout for Model {
    fn joint_count(&self) -> usize {
        self.joint_type.len()
    }
    fn joint_kind(&self, j: usize) -> JointType {
        self.joint_type[j]
    }
}

impl JointLayout for [JointType] {
    fn joint_count(&self) -> usize {
        self.len()
    }
    fn joint_kind(&self, j: usize) -> JointType {
        self[j]
    }
}

impl<L: JointLayout + ?Sized> JointLayout for &L {
    fn joint_count(&self) -> usize {
        (**self).joint_count()
    }
    fn joint_kind(&self, j: usize) -> JointType {
        (**self).joint_kind(j)
    }
}

/// (kind, q offset, v offset) per joint; no allocation.
pub fn offsets<L: JointLayout + ?Sized>(layout: &L) -> impl Iterator<Item = (JointType, usize, usize)> + '_ {
    (0..layout.joint_count()).scan((0, 0), move |(qo, vo), j| {
        let k = layout.joint_kind(j);
        let r = (k, *qo, *vo);
        *qo += k.nq();
        *vo += k.dof();
        Some(r)
    })
}

/// Σ nv over the layout's joints.
pub fn nv<L: JointLayout + ?Sized>(layout: &L) -> usize {
    (0..layout.joint_count()).map(|j| layout.joint_kind(j).dof()).sum()
}

/// Σ nq over the layout's joints.
pub fn nq<L: JointLayout + ?Sized>(layout: &L) -> usize {
    (0..layout.joint_count()).map(|j| layout.joint_kind(j).nq()).sum()
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
pub fn add_free_frame_term<T: Scalar, L: JointLayout + ?Sized>(layout: &L, v: &[T], h: T, vhat: &mut [T]) {
    for (kind, _, vs) in offsets(layout) {
        if kind == JointType::Free {
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
pub fn advance_into<T: Scalar, L: JointLayout + ?Sized>(
    layout: &L,
    q: &[T],
    vhat: &[T],
    h: T,
    q1: &mut [T],
    v1: &mut [T],
) {
    for (kind, qs, vs) in offsets(layout) {
        let (nq, nv) = (kind.nq(), kind.dof());
        advance_joint(kind, &q[qs..qs + nq], &vhat[vs..vs + nv], h, &mut q1[qs..qs + nq], &mut v1[vs..vs + nv]);
    }
}

/// q ⊕ dv for the whole configuration.
pub fn integrate<T: Scalar, L: JointLayout + ?Sized>(layout: &L, q: &[T], dv: &[T]) -> Vec<T> {
    let mut out = q.to_vec();
    integrate_scaled_into(layout, q, dv, T::one(), &mut out);
    out
}

/// out = q ⊕ h v per joint (the semi-implicit position update of every generalized-coordinate stepper); no heap
/// allocation.
pub fn integrate_scaled_into<T: Scalar, L: JointLayout + ?Sized>(layout: &L, q: &[T], v: &[T], h: T, out: &mut [T]) {
    let mut dq = [T::zero(); 6];
    for (kind, qs, vs) in offsets(layout) {
        let (nq, nv) = (kind.nq(), kind.dof());
        for i in 0..nv {
            dq[i] = v[vs + i] * h;
        }
        integrate_joint(kind, &q[qs..qs + nq], &dq[..nv], &mut out[qs..qs + nq]);
    }
}

/// The inverse of [`integrate`] to first order: dv with q1 = q0 ⊕ dv (exact logs for ball and free joints).
pub fn difference<T: Scalar, L: JointLayout + ?Sized>(layout: &L, q0: &[T], q1: &[T]) -> Vec<T> {
    let mut out = vec![T::zero(); nv(layout)];
    for (kind, qs, vs) in offsets(layout) {
        let (a, b) = (&q0[qs..qs + kind.nq()], &q1[qs..qs + kind.nq()]);
        match kind {
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

/// An ambient cotangent ḡ = ∂L/∂q at q → the tangent cotangent Gᵀ ḡ = ∂L/∂δ of q ⊕ δ at δ = 0, per joint: 1 for
/// 1-DoF joints; G δ = ½ q ⊗ [0, δ] for quaternions (right perturbation); R for a free joint's position.
pub fn ambient_to_tangent<L: JointLayout + ?Sized>(layout: &L, q: &[f64], g: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; nv(layout)];
    ambient_to_tangent_into(layout, q, g, &mut out);
    out
}

/// [`ambient_to_tangent`] into `out` (nv entries, every one written): no allocation.
pub fn ambient_to_tangent_into<L: JointLayout + ?Sized>(layout: &L, q: &[f64], g: &[f64], out: &mut [f64]) {
    out.fill(0.0);
    for (kind, a, b) in offsets(layout) {
        match kind {
            JointType::Revolute | JointType::Prismatic => out[b] = g[a],
            JointType::Fixed => {}
            JointType::Ball => out[b..b + 3].copy_from_slice(&quat_grad(&q[a..a + 4], &g[a..a + 4])),
            JointType::Free => {
                let r = Quat::new(q[a + 3], q[a + 4], q[a + 5], q[a + 6]);
                let gp = r.rotate_inv(&Vec3::new(g[a], g[a + 1], g[a + 2]));
                out[b..b + 3].copy_from_slice(&quat_grad(&q[a + 3..a + 7], &g[a + 3..a + 7]));
                out[b + 3..b + 6].copy_from_slice(gp.as_slice());
            }
        }
    }
}

/// Gᵀ ḡ for G δ = ½ q ⊗ [0, δ].
fn quat_grad(q: &[f64], g: &[f64]) -> [f64; 3] {
    let q = Quat::new(q[0], q[1], q[2], q[3]);
    let gq = Quat::new(g[0], g[1], g[2], g[3]);
    // ½ q ⊗ [0, δ] = ½(−qv·δ, qw δ + qv × δ);  gᵀ(...) = ½ δ·(−gw qv + qw gv + gv × qv)
    let t = (-q.v * gq.w + gq.v * q.w + gq.v.cross(&q.v)) * 0.5;
    [t.x, t.y, t.z]
}

/// Tangent cotangent → ambient: G (GᵀG)⁻¹ g_t (GᵀG = ¼ I for unit quaternions, RᵀR = I for positions), so
/// that [`ambient_to_tangent`] of the result gives g_t back.
pub fn tangent_to_ambient<L: JointLayout + ?Sized>(layout: &L, q: &[f64], gt: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; nq(layout)];
    tangent_to_ambient_into(layout, q, gt, &mut out);
    out
}

/// [`tangent_to_ambient`] into `out` (nq entries, every one written): no allocation.
pub fn tangent_to_ambient_into<L: JointLayout + ?Sized>(layout: &L, q: &[f64], gt: &[f64], out: &mut [f64]) {
    out.fill(0.0);
    let push = |q: &[f64], d: &[f64]| {
        let qq = Quat::new(q[0], q[1], q[2], q[3]);
        let r = qq.mul(&Quat::new(0.0, d[0], d[1], d[2])).scale(2.0);
        r.to_array()
    };
    for (kind, a, b) in offsets(layout) {
        match kind {
            JointType::Revolute | JointType::Prismatic => out[a] = gt[b],
            JointType::Fixed => {}
            JointType::Ball => out[a..a + 4].copy_from_slice(&push(&q[a..a + 4], &gt[b..b + 3])),
            JointType::Free => {
                let r = Quat::new(q[a + 3], q[a + 4], q[a + 5], q[a + 6]);
                let gp = r.rotate(&Vec3::new(gt[b + 3], gt[b + 4], gt[b + 5]));
                out[a..a + 3].copy_from_slice(gp.as_slice());
                out[a + 3..a + 7].copy_from_slice(&push(&q[a + 3..a + 7], &gt[b..b + 3]));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::{example_configuration, floating_tree};
    use num_dual::Dual64;

    fn det(n: usize, seed: usize, scale: f64) -> Vec<f64> {
        (0..n).map(|i| (((i + seed) * 7919 % 23) as f64 / 11.0 - 1.0) * scale).collect()
    }

    /// `difference` inverts `integrate` (free, ball, prismatic, revolute joints), also at δ = 0 (no NaN).
    #[test]
    fn difference_inverts_integrate() {
        let m = floating_tree();
        let q = example_configuration(&m, 2);
        for scale in [0.0, 1e-9, 0.3, 1.0] {
            let d = det(m.nv(), 4, scale);
            let back = difference(&m, &q, &integrate(&m, &q, &d));
            let e = back.iter().zip(&d).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
            assert!(e < 1e-12, "scale {scale}: {e:e}");
        }
    }

    /// ⟨ambient_to_tangent(q, ḡ), δ⟩ = d/dε ⟨ḡ, q ⊕ εδ⟩ by central differences and by a dual number of the same
    /// `integrate` (the maps are generic over the scalar); `tangent_to_ambient` is its right inverse.
    #[test]
    fn gradient_maps_match_finite_differences_and_duals() {
        let m = floating_tree();
        let q = example_configuration(&m, 5);
        let (g, d) = (det(m.nq(), 1, 1.0), det(m.nv(), 6, 1.0));
        let f = |e: f64| {
            let dq: Vec<f64> = d.iter().map(|x| x * e).collect();
            integrate(&m, &q, &dq).iter().zip(&g).map(|(a, b)| a * b).sum::<f64>()
        };
        let h = 1e-6;
        let fd = (f(h) - f(-h)) / (2.0 * h);
        let an: f64 = ambient_to_tangent(&m, &q, &g).iter().zip(&d).map(|(a, b)| a * b).sum();
        let qd: Vec<Dual64> = q.iter().map(|&x| Dual64::from(x)).collect();
        let dd: Vec<Dual64> = d.iter().map(|&x| Dual64::new(0.0, x)).collect();
        let du: f64 = integrate(&m, &qd, &dd).iter().zip(&g).map(|(a, b)| a.eps * b).sum();
        let rel = (fd - an).abs() / an.abs();
        eprintln!("ambient_to_tangent vs central differences: rel {rel:.2e}; vs dual {:.2e}", (du - an).abs());
        assert!(rel < 1e-6 && (du - an).abs() < 1e-12 * an.abs().max(1.0), "an {an} fd {fd} dual {du}");
        let t = det(m.nv(), 8, 2.0);
        let back = ambient_to_tangent(&m, &q, &tangent_to_ambient(&m, &q, &t));
        assert!(back.iter().zip(&t).all(|(a, b)| (a - b).abs() < 1e-13));
    }

    /// `advance_joint` of a free joint is MuJoCo's Euler step: p1 = p + h R v̂_l, R1 = R Exp(h ω̂), and the world
    /// velocity R v_l is unchanged; other joints advance by q ⊕ h v̂.
    #[test]
    fn advance_keeps_a_free_joints_world_velocity() {
        let m = floating_tree();
        let q = example_configuration(&m, 3);
        let vh = det(m.nv(), 2, 1.3);
        let h = 0.01;
        let (mut q1, mut v1) = (vec![0.0; m.nq()], vec![0.0; m.nv()]);
        advance_into(&m, &q, &vh, h, &mut q1, &mut v1);
        let r0 = Quat::new(q[3], q[4], q[5], q[6]);
        let r1 = Quat::new(q1[3], q1[4], q1[5], q1[6]);
        let w0 = r0.rotate(&Vec3::new(vh[3], vh[4], vh[5]));
        let w1 = r1.rotate(&Vec3::new(v1[3], v1[4], v1[5]));
        assert!((w0 - w1).norm() < 1e-14, "world velocity moved by {:e}", (w0 - w1).norm());
        for i in 0..3 {
            assert!((q1[i] - q[i] - h * w0[i]).abs() < 1e-15);
        }
        // the other joints: q ⊕ h v̂ (tangent entries from 6 on)
        let mut qs = q.clone();
        integrate_scaled_into(&m, &q, &vh, h, &mut qs);
        assert!(q1[7..].iter().zip(&qs[7..]).all(|(a, b)| (a - b).abs() < 1e-15));
        assert_eq!(&v1[6..], &vh[6..]);
    }
}
