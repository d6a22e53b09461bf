//! Hinge angle limits (spec 000 §3.5, from Müller et al. 2020): when the extracted angle φ (§3.6) leaves
//! [lo, hi], rotate the parent reference to the clamped angle, n_P' = Rot(b_w, φ_c) n_P, and apply the angular
//! correction of §3.4 with c = n_P' × n_C. An inequality: inactive (no correction) inside the range.
use super::hinge::{angular_core, angular_core_vjp, Corr, CorrGrad, Pair, PairGrad};
use crate::xpbd::angles::{hinge_angle, hinge_angle_world};
use torsion_math::quat::rotate_vjp;
use torsion_math::{Scalar, Vec3};

/// Returns None when the limit is inactive (branch on the primal angle only).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn limit<T: Scalar>(
    p: &Pair<T>,
    b: &Vec3<T>,
    np: &Vec3<T>,
    nc: &Vec3<T>,
    lo: f64,
    hi: f64,
    lam: T,
    at: T,
) -> Option<Corr<T>> {
    let phi = hinge_angle(&p.qa, &p.qb, b, np, nc);
    let pr = phi.re();
    if pr >= lo && pr <= hi {
        return None;
    }
    let phic = if pr < lo { lo } else { hi };
    let bw = p.qa.rotate(b);
    let npw = p.qa.rotate(np);
    let ncw = p.qb.rotate(nc);
    let npc = npw * T::c(phic.cos()) + bw.cross(&npw) * T::c(phic.sin());
    Some(angular_core(p, &npc.cross(&ncw), lam, at))
}

/// Adjoint of [`limit`] (only called for active limits; φ_c is a constant there).
#[allow(clippy::too_many_arguments)]
pub fn limit_vjp(
    p: &Pair<f64>,
    b: &Vec3,
    np: &Vec3,
    nc: &Vec3,
    lo: f64,
    hi: f64,
    lam: f64,
    at: f64,
    g: &CorrGrad,
    gp: &mut PairGrad,
) {
    let phi = hinge_angle_world(&p.qa.rotate(np), &p.qb.rotate(nc), &p.qa.rotate(b));
    if phi >= lo && phi <= hi {
        return;
    }
    let phic = if phi < lo { lo } else { hi };
    let (cph, sph) = (phic.cos(), phic.sin());
    let bw = p.qa.rotate(b);
    let npw = p.qa.rotate(np);
    let ncw = p.qb.rotate(nc);
    let npc = npw * cph + bw.cross(&npw) * sph;
    let gc = angular_core_vjp(p, &npc.cross(&ncw), lam, at, g, gp);
    let gnpc = ncw.cross(&gc);
    let gncw = gc.cross(&npc);
    let gbw = npw.cross(&gnpc) * sph;
    let gnpw = gnpc * cph + gnpc.cross(&bw) * sph;
    for (v, gv) in [(b, gbw), (np, gnpw)] {
        let (gq, _) = rotate_vjp(&p.qa, v, &gv);
        gp.qa = gp.qa.add(&gq);
    }
    let (gq, _) = rotate_vjp(&p.qb, nc, &gncw);
    gp.qb = gp.qb.add(&gq);
}
