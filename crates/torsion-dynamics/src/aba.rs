//! Articulated-body algorithm (Featherstone 2008 §7.3): forward dynamics a = M⁻¹(τ − c − g) in O(n),
//! without forming M. 1-DoF joints take a scalar path (U one 6-vector, D a scalar); multi-DoF joints (ball,
//! free) a small dense solve per joint. No heap allocation (all scratch lives in `DynData`).
use crate::data::{DynData, DynError, DynModel};
use crate::fk::local_kinematics;
use crate::rnea::root_acc;
use torsion_math::spatial::{cross_force, cross_motion, Inertia, M6, V6};
use torsion_math::Scalar;

pub fn aba<T: Scalar>(dm: &DynModel<T>, q: &[T], v: &[T], tau: &[T], d: &mut DynData<T>) -> Result<Vec<T>, DynError> {
    let mut qdd = vec![T::zero(); dm.nv];
    aba_into(dm, q, v, tau, d, &mut qdd)?;
    Ok(qdd)
}

/// [`aba`] into a preallocated `qdd` (nv); no heap allocation.
pub fn aba_into<T: Scalar>(
    dm: &DynModel<T>,
    q: &[T],
    v: &[T],
    tau: &[T],
    d: &mut DynData<T>,
    qdd: &mut [T],
) -> Result<(), DynError> {
    dm.check_q(q)?;
    dm.check_v("v", v)?;
    dm.check_v("tau", tau)?;
    dm.check_v("qdd (output)", qdd)?;
    local_kinematics(dm, q, d);
    aba_pass(dm, v, tau, d, qdd);
    Ok(())
}

/// The three ABA sweeps on the placements already in `d.x_pc`.
pub(crate) fn aba_pass<T: Scalar>(dm: &DynModel<T>, v: &[T], tau: &[T], d: &mut DynData<T>, qdd: &mut [T]) {
    root_acc(dm, d, true);
    let nj = dm.parent.len();
    // pass 1: velocities, bias accelerations, articulated inertias initialised to rigid ones
    for j in 0..nj {
        let (p, c) = (dm.parent[j], dm.child[j]);
        let jm = &dm.joint[j];
        let mut vj = V6::zeros();
        for i in 0..jm.nv {
            vj += jm.s[i] * v[dm.v_start[j] + i];
        }
        let vc = d.x_pc[j].inv_act_motion(&d.vel[p]) + vj;
        d.vel[c] = vc;
        d.cbias[c] = cross_motion(&vc, &vj);
        d.ia[c] = dm.inertia[c];
        d.pa[c] = cross_force(&vc, &Inertia::from_matrix(&dm.inertia[c]).mul_motion(&vc));
    }
    // pass 2: tip → base
    for j in (0..nj).rev() {
        let (p, c) = (dm.parent[j], dm.child[j]);
        let jm = &dm.joint[j];
        let n = jm.nv;
        let vs = dm.v_start[j];
        let to_parent = dm.root_pose[p].is_none();
        if n == 1 {
            let s = &jm.s[0];
            let u6 = d.ia[c] * s;
            let dd = s.dot(&u6) + dm.armature[vs];
            let dinv = if dd.re() == 0.0 { T::zero() } else { T::one() / dd };
            let u = tau[vs] - dm.damping[vs] * v[vs] - s.dot(&d.pa[c]);
            d.aba_u[j][0] = u6;
            d.aba_dinv[j][(0, 0)] = dinv;
            d.aba_uvec[j][0] = u;
            if to_parent {
                // Ia' = Ia − U Uᵀ / D ; pa' = pa + Ia' c + U u / D
                let mut ia = d.ia[c];
                let w = u6 * dinv;
                for b in 0..6 {
                    for a in 0..6 {
                        ia[(a, b)] -= w[a] * u6[b];
                    }
                }
                let pa = d.pa[c] + ia * d.cbias[c] + w * u;
                let x = &d.x_pc[j];
                let ip = x.act_sym6(&ia);
                let pp = x.act_force(&pa);
                d.ia[p] += ip;
                d.pa[p] += pp;
            }
        } else if n > 0 {
            // the constant sizes (free and ball joints) get their own copy: loops unrolled, no bounds checks;
            // the same arithmetic
            match n {
                6 => multi_dof_articulate(dm, v, tau, d, j, 6),
                3 => multi_dof_articulate(dm, v, tau, d, j, 3),
                _ => multi_dof_articulate(dm, v, tau, d, j, n),
            }
        }
    }
    // pass 3: base → tip
    for j in 0..nj {
        let (p, c) = (dm.parent[j], dm.child[j]);
        let jm = &dm.joint[j];
        let n = jm.nv;
        let vs = dm.v_start[j];
        let mut ac = d.x_pc[j].inv_act_motion(&d.acc[p]) + d.cbias[c];
        if n == 1 {
            let a = (d.aba_uvec[j][0] - d.aba_u[j][0].dot(&ac)) * d.aba_dinv[j][(0, 0)];
            qdd[vs] = a;
            ac += jm.s[0] * a;
        } else {
            joint_acceleration(d, j, n, &mut ac, &jm.s, &mut qdd[vs..vs + n]);
        }
        d.acc[c] = ac;
    }
}

/// ABA pass 2 for joint `j` with `n` > 1 DoFs: U = I_A S, D = Sᵀ U + armature, u = τ − d v − Sᵀ p_A, D⁻¹, and the
/// articulated inertia and bias force carried to the parent (Featherstone 2008 eq. 7.40–7.41).
#[inline(always)]
fn multi_dof_articulate<T: Scalar>(dm: &DynModel<T>, v: &[T], tau: &[T], d: &mut DynData<T>, j: usize, n: usize) {
    let (p, c) = (dm.parent[j], dm.child[j]);
    let jm = &dm.joint[j];
    let vs = dm.v_start[j];
    let to_parent = dm.root_pose[p].is_none();
    let mut uu = [V6::zeros(); 6];
    let mut dmat = M6::zeros();
    let mut u = V6::zeros();
    for i in 0..n {
        uu[i] = d.ia[c] * jm.s[i];
        let k = vs + i;
        u[i] = tau[k] - dm.damping[k] * v[k] - jm.s[i].dot(&d.pa[c]);
    }
    for a in 0..n {
        for b in 0..n {
            dmat[(a, b)] = jm.s[a].dot(&uu[b]);
        }
        dmat[(a, a)] += dm.armature[vs + a];
    }
    let dinv = invert_leading(&dmat, n);
    if to_parent {
        // Ia' = Ia − U D⁻¹ Uᵀ ; pa' = pa + Ia' c + U D⁻¹ u
        let mut ia = d.ia[c];
        let mut pa = d.pa[c];
        for a in 0..n {
            let mut w = V6::zeros();
            let mut coef = T::zero();
            for b in 0..n {
                w += uu[b] * dinv[(a, b)];
                coef += dinv[(a, b)] * u[b];
            }
            ia -= uu[a] * w.transpose();
            pa += uu[a] * coef;
        }
        pa += ia * d.cbias[c];
        let x = &d.x_pc[j];
        let ip = x.act_sym6(&ia);
        let pp = x.act_force(&pa);
        d.ia[p] += ip;
        d.pa[p] += pp;
    }
    d.aba_u[j] = uu;
    d.aba_dinv[j] = dinv;
    d.aba_uvec[j] = u;
}

/// M̃⁻¹ x (M̃ = M(q) + armature) into `out` (nv), reusing the articulated-body factorization (U = I_A S, D⁻¹ per
/// joint, `d.x_pc`) that the last [`aba_into`] on `d` left at the same q and armature: ABA's τ-dependent passes
/// with zero velocity and gravity, O(n) without the 6 × 6 articulated inertias; no heap allocation. The caller
/// guarantees that factorization is current (else: [`aba_into`] with v = 0 and zero gravity).
pub fn aba_solve_factored_into<T: Scalar>(
    dm: &DynModel<T>,
    d: &mut DynData<T>,
    x: &[T],
    out: &mut [T],
) -> Result<(), DynError> {
    dm.check_v("x", x)?;
    dm.check_v("out", out)?;
    let nj = dm.parent.len();
    for b in 0..dm.nb {
        d.pa[b] = V6::zeros();
        d.acc[b] = V6::zeros();
    }
    for j in (0..nj).rev() {
        let (p, c) = (dm.parent[j], dm.child[j]);
        let jm = &dm.joint[j];
        let (n, vs) = (jm.nv, dm.v_start[j]);
        let mut pa = d.pa[c];
        for i in 0..n {
            d.aba_uvec[j][i] = x[vs + i] - jm.s[i].dot(&d.pa[c]);
        }
        for a in 0..n {
            let mut coef = T::zero();
            for b in 0..n {
                coef += d.aba_dinv[j][(a, b)] * d.aba_uvec[j][b];
            }
            pa += d.aba_u[j][a] * coef;
        }
        if dm.root_pose[p].is_none() {
            let pp = d.x_pc[j].act_force(&pa);
            d.pa[p] += pp;
        }
    }
    for j in 0..nj {
        let (p, c) = (dm.parent[j], dm.child[j]);
        let jm = &dm.joint[j];
        let (n, vs) = (jm.nv, dm.v_start[j]);
        let mut ac = d.x_pc[j].inv_act_motion(&d.acc[p]);
        joint_acceleration(d, j, n, &mut ac, &jm.s, &mut out[vs..vs + n]);
        d.acc[c] = ac;
    }
    Ok(())
}

/// Entries of a packed articulated-body factorization ([`aba_factor_save`]) for joints of `dofs` DoFs: per joint
/// X_{P←C} (12), U = I_A S (6n) and D⁻¹ (n²).
pub fn aba_factor_len(dofs: impl IntoIterator<Item = usize>) -> usize {
    dofs.into_iter().map(|n| 12 + 6 * n + n * n).sum()
}

/// Copy what [`aba_solve_factored_into`] reads of the factorization the last [`aba_into`] left in `d` (per joint
/// X_{P←C}, U, D⁻¹) into `buf` ([`aba_factor_len`] entries), e.g. a tape record; no heap allocation.
pub fn aba_factor_save<T: Scalar>(dm: &DynModel<T>, d: &DynData<T>, buf: &mut [T]) -> Result<(), DynError> {
    factor_check(dm, buf.len())?;
    let mut k = 0;
    let mut put = |x: T| {
        buf[k] = x;
        k += 1;
    };
    for j in 0..dm.parent.len() {
        let (x, n) = (&d.x_pc[j], dm.joint[j].nv);
        x.rot.iter().chain(x.pos.iter()).for_each(|&e| put(e));
        d.aba_u[j][..n].iter().flat_map(|u| u.iter()).for_each(|&e| put(e));
        for a in 0..n {
            (0..n).for_each(|b| put(d.aba_dinv[j][(a, b)]));
        }
    }
    Ok(())
}

/// The inverse of [`aba_factor_save`]: `d` then holds that factorization (and `x_pc`) for
/// [`aba_solve_factored_into`] and the passes on `d.x_pc`; no heap allocation.
pub fn aba_factor_load<T: Scalar>(dm: &DynModel<T>, buf: &[T], d: &mut DynData<T>) -> Result<(), DynError> {
    factor_check(dm, buf.len())?;
    let mut it = buf.iter().copied();
    let mut next = || it.next().unwrap_or_else(T::zero);
    for j in 0..dm.parent.len() {
        let n = dm.joint[j].nv;
        let x = &mut d.x_pc[j];
        x.rot.iter_mut().chain(x.pos.iter_mut()).for_each(|e| *e = next());
        d.aba_u[j][..n].iter_mut().flat_map(|u| u.iter_mut()).for_each(|e| *e = next());
        for a in 0..n {
            (0..n).for_each(|b| d.aba_dinv[j][(a, b)] = next());
        }
    }
    Ok(())
}

fn factor_check<T: Scalar>(dm: &DynModel<T>, got: usize) -> Result<(), DynError> {
    let expected = aba_factor_len(dm.joint.iter().map(|j| j.nv));
    if got != expected {
        return Err(DynError::Shape { what: "packed ABA factorization", got, expected });
    }
    Ok(())
}

/// ABA pass 3 for joint `j` with `n` DoFs (Featherstone 2008 eq. 7.43): q̈_j = D⁻¹ (u − Uᵀ a'), written into `qdd`
/// (n entries), then a' += S q̈_j; `ac` is a' = X a_parent (+ c) on entry and the child's acceleration on return.
fn joint_acceleration<T: Scalar>(d: &DynData<T>, j: usize, n: usize, ac: &mut V6<T>, s: &[V6<T>], qdd: &mut [T]) {
    match n {
        6 => joint_acceleration_core(d, j, 6, ac, s, qdd),
        3 => joint_acceleration_core(d, j, 3, ac, s, qdd),
        _ => joint_acceleration_core(d, j, n, ac, s, qdd),
    }
}

/// [`joint_acceleration`]'s body, inlined per constant size.
#[inline(always)]
fn joint_acceleration_core<T: Scalar>(d: &DynData<T>, j: usize, n: usize, ac: &mut V6<T>, s: &[V6<T>], qdd: &mut [T]) {
    let mut rhs = [T::zero(); 6];
    for i in 0..n {
        rhs[i] = d.aba_uvec[j][i] - d.aba_u[j][i].dot(ac);
    }
    for a in 0..n {
        let mut sol = T::zero();
        for b in 0..n {
            sol += d.aba_dinv[j][(a, b)] * rhs[b];
        }
        qdd[a] = sol;
    }
    for a in 0..n {
        *ac += s[a] * qdd[a];
    }
}

/// Inverse of the leading n × n block of `m` (Gauss–Jordan with partial pivoting on the primal values);
/// zeros if it is singular (as before: the joint then gets no acceleration).
fn invert_leading<T: Scalar>(m: &M6<T>, n: usize) -> M6<T> {
    match n {
        6 => invert_core(m, 6),
        3 => invert_core(m, 3),
        _ => invert_core(m, n),
    }
}

/// [`invert_leading`]'s body, inlined per constant size.
#[inline(always)]
fn invert_core<T: Scalar>(m: &M6<T>, n: usize) -> M6<T> {
    let mut a = *m;
    let mut inv = M6::zeros();
    for i in 0..n {
        inv[(i, i)] = T::one();
    }
    for col in 0..n {
        let mut piv = col;
        for r in col + 1..n {
            if a[(r, col)].re().abs() > a[(piv, col)].re().abs() {
                piv = r;
            }
        }
        if a[(piv, col)].re() == 0.0 {
            return M6::zeros();
        }
        if piv != col {
            a.swap_rows(piv, col);
            inv.swap_rows(piv, col);
        }
        let r = T::one() / a[(col, col)];
        for k in 0..n {
            a[(col, k)] *= r;
            inv[(col, k)] *= r;
        }
        for row in 0..n {
            if row != col {
                let f = a[(row, col)];
                for k in 0..n {
                    let (ak, ik) = (a[(col, k)], inv[(col, k)]);
                    a[(row, k)] -= f * ak;
                    inv[(row, k)] -= f * ik;
                }
            }
        }
    }
    inv
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rnea_derivatives::test_models::{point, tree, with_armature};

    /// The factored solve after an ABA at (q, v, τ) with gravity equals ABA at (q, 0, x) without gravity, i.e.
    /// M̃⁻¹ x, and M̃ times it gives x back (CRBA), on the every-joint tree and the Baxter arm.
    #[test]
    fn factored_solve_equals_aba_without_bias() {
        let cases = [tree(), torsion_model::io::robots::baxter_left_arm().expect("example-robot-data")];
        for m in cases {
            let mut dm = with_armature(DynModel::<f64>::from_model(&m).unwrap());
            dm.damping.iter_mut().for_each(|x| *x = 0.0);
            let mut d = DynData::new(&dm);
            let (q, v, tau) = point(&m, 2);
            let x: Vec<f64> = (0..dm.nv).map(|i| ((i * 5 + 3) % 7) as f64 - 3.0).collect();
            aba(&dm, &q, &v, &tau, &mut d).unwrap();
            let mut fast = vec![0.0; dm.nv];
            aba_solve_factored_into(&dm, &mut d, &x, &mut fast).unwrap();
            let g = dm.gravity;
            dm.gravity = torsion_math::Vec3::zeros();
            let slow = aba(&dm, &q, &vec![0.0; dm.nv], &x, &mut d).unwrap();
            dm.gravity = g;
            let mut mm = nalgebra::DMatrix::zeros(dm.nv, dm.nv);
            crate::crba_into(&dm, &q, &mut d, &mut mm).unwrap();
            let back = &mm * nalgebra::DVector::from_column_slice(&fast);
            let e = fast.iter().zip(&slow).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
            let eb = back.iter().zip(&x).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
            assert!(e < 1e-12 && eb < 1e-10, "{}: vs ABA {e:e}, M̃ y − x {eb:e}", m.name);
        }
    }

    /// A saved factorization loaded into data that another ABA (another q) overwrote solves bit for bit as the
    /// original did, on the every-joint tree (free, ball, slide, hinge) and the Baxter arm; a wrong length errors.
    #[test]
    fn saved_factorization_solves_as_the_original() {
        let cases = [tree(), torsion_model::io::robots::baxter_left_arm().expect("example-robot-data")];
        for m in cases {
            let dm = with_armature(DynModel::<f64>::from_model(&m).unwrap());
            let mut d = DynData::new(&dm);
            let (q, v, tau) = point(&m, 2);
            let x: Vec<f64> = (0..dm.nv).map(|i| ((i * 5 + 3) % 7) as f64 - 3.0).collect();
            aba(&dm, &q, &v, &tau, &mut d).unwrap();
            let mut want = vec![0.0; dm.nv];
            aba_solve_factored_into(&dm, &mut d, &x, &mut want).unwrap();
            let mut buf = vec![0.0; aba_factor_len(dm.joint.iter().map(|j| j.nv))];
            aba_factor_save(&dm, &d, &mut buf).unwrap();
            let (q2, v2, tau2) = point(&m, 5);
            aba(&dm, &q2, &v2, &tau2, &mut d).unwrap();
            let mut other = vec![0.0; dm.nv];
            aba_solve_factored_into(&dm, &mut d, &x, &mut other).unwrap();
            assert_ne!(other, want, "{}: the second ABA must change the factorization", m.name);
            aba_factor_load(&dm, &buf, &mut d).unwrap();
            let mut got = vec![0.0; dm.nv];
            aba_solve_factored_into(&dm, &mut d, &x, &mut got).unwrap();
            assert_eq!(got, want, "{}", m.name);
            assert!(
                aba_factor_save(&dm, &d, &mut buf[1..]).is_err() && aba_factor_load(&dm, &buf[1..], &mut d).is_err()
            );
        }
    }
}
