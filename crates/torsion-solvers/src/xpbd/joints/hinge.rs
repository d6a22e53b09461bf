//! Hinge constraints: positional point coincidence (spec 000 §3.3, Eqs. 1–9 with the sign fix) and angular
//! axis alignment (§3.4, Eqs. 11–17 with the sign fix), with XPBD compliance (λ accumulation, α̃ = α/h²;
//! α = 0 is the paper's PBD). Each kernel is generic over the scalar; its adjoint is right below it.
use torsion_math::quat::{rotate_vjp, sandwich, sandwich_vjp};
use torsion_math::{Mat3, Quat, Scalar, Vec3};

/// Constraints whose violation norm is below this are skipped (spec 000 §6.9): no NaN from ‖0‖.
pub const EPS: f64 = 1e-12;

/// The two bodies a joint connects, as seen by one projection.
#[derive(Clone, Copy, Debug)]
pub struct Pair<T: Scalar> {
    pub xa: Vec3<T>,
    pub qa: Quat<T>,
    pub xb: Vec3<T>,
    pub qb: Quat<T>,
    /// inverse masses and local inverse inertias (0 for a fixed body)
    pub wa: T,
    pub wb: T,
    pub ia: Mat3<T>,
    pub ib: Mat3<T>,
    /// parent is dynamic (the child always is)
    pub a_dyn: bool,
}

/// Corrections produced by one projection: Δx, Δφ (world rotation vector) per body, and Δλ.
#[derive(Clone, Copy, Debug)]
pub struct Corr<T: Scalar> {
    pub dxa: Vec3<T>,
    pub dpa: Vec3<T>,
    pub dxb: Vec3<T>,
    pub dpb: Vec3<T>,
    pub dl: T,
    /// false when skipped by the ε guard (all corrections zero)
    pub active: bool,
}

impl<T: Scalar> Corr<T> {
    pub fn none() -> Self {
        Corr {
            dxa: Vec3::zeros(),
            dpa: Vec3::zeros(),
            dxb: Vec3::zeros(),
            dpb: Vec3::zeros(),
            dl: T::zero(),
            active: false,
        }
    }
}

/// Cotangents of a [`Corr`] (f64).
#[derive(Clone, Copy, Debug, Default)]
pub struct CorrGrad {
    pub dxa: Vec3,
    pub dpa: Vec3,
    pub dxb: Vec3,
    pub dpb: Vec3,
    pub dl: f64,
}

/// Cotangents of a [`Pair`]'s inputs, accumulated by the adjoints.
#[derive(Clone, Copy, Debug)]
pub struct PairGrad {
    pub xa: Vec3,
    pub qa: Quat,
    pub xb: Vec3,
    pub qb: Quat,
    pub wa: f64,
    pub wb: f64,
    pub ia: Mat3,
    pub ib: Mat3,
    /// λ accumulator (compliance)
    pub lam: f64,
}

impl Default for PairGrad {
    fn default() -> Self {
        PairGrad {
            xa: Vec3::zeros(),
            qa: Quat::zero(),
            xb: Vec3::zeros(),
            qb: Quat::zero(),
            wa: 0.0,
            wb: 0.0,
            ia: Mat3::zeros(),
            ib: Mat3::zeros(),
            lam: 0.0,
        }
    }
}

// ------------------------------------------------------------------------------------------------------------
// §3.3 positional constraint c = (x_B + R_B t) − (x_A + R_A r), one scalar λ through ‖c‖.

#[inline(always)]
pub fn positional<T: Scalar>(p: &Pair<T>, r: &Vec3<T>, t: &Vec3<T>, lam: T, at: T) -> Corr<T> {
    let rw = p.qa.rotate(r);
    let tw = p.qb.rotate(t);
    let c = (p.xb + tw) - (p.xa + rw);
    let cn = c.norm();
    if cn.re() < EPS {
        return Corr::none();
    }
    let n = c / cn;
    let tn = tw.cross(&n);
    let ibt = sandwich(&p.qb, &p.ib, &tn);
    let mut w = p.wa + p.wb + tn.dot(&ibt);
    let mut iar = Vec3::zeros();
    if p.a_dyn {
        let rn = rw.cross(&n);
        iar = sandwich(&p.qa, &p.ia, &rn);
        w += rn.dot(&iar);
    }
    // XPBD: Δλ = (−C − α̃ λ)/(w + α̃); α̃ = 0 gives the paper's λ = −C/w (Eq. 5)
    let dl = (-cn - at * lam) / (w + at);
    Corr { dxa: n * (-dl * p.wa), dpa: iar * (-dl), dxb: n * (dl * p.wb), dpb: ibt * dl, dl, active: true }
}

/// Adjoint of [`positional`]: accumulates into `gp`, `gr`, `gt` (anchors).
#[allow(clippy::too_many_arguments)]
pub fn positional_vjp(
    p: &Pair<f64>,
    r: &Vec3,
    t: &Vec3,
    lam: f64,
    at: f64,
    g: &CorrGrad,
    gp: &mut PairGrad,
    gr: &mut Vec3,
    gt: &mut Vec3,
) {
    // recompute the forward values
    let rw = p.qa.rotate(r);
    let tw = p.qb.rotate(t);
    let c = (p.xb + tw) - (p.xa + rw);
    let cn = c.norm();
    if cn < EPS {
        return;
    }
    let n = c / cn;
    let tn = tw.cross(&n);
    let ibt = sandwich(&p.qb, &p.ib, &tn);
    let mut w = p.wa + p.wb + tn.dot(&ibt);
    let (mut rn, mut iar) = (Vec3::zeros(), Vec3::zeros());
    if p.a_dyn {
        rn = rw.cross(&n);
        iar = sandwich(&p.qa, &p.ia, &rn);
        w += rn.dot(&iar);
    }
    let den = w + at;
    let dl = (-cn - at * lam) / den;
    // outputs: dxa = −dl wa n, dpa = −dl iar, dxb = dl wb n, dpb = dl ibt, dl
    let gdl = g.dl - p.wa * n.dot(&g.dxa) + p.wb * n.dot(&g.dxb) - iar.dot(&g.dpa) + ibt.dot(&g.dpb);
    let mut gn = g.dxa * (-dl * p.wa) + g.dxb * (dl * p.wb);
    gp.wa += -dl * n.dot(&g.dxa);
    gp.wb += dl * n.dot(&g.dxb);
    let mut giar = g.dpa * (-dl);
    let mut gibt = g.dpb * dl;
    // dl = (−C − α̃λ)/den
    let gc_norm = -gdl / den;
    gp.lam += -at * gdl / den;
    let gw = -dl * gdl / den;
    gp.wa += gw;
    gp.wb += gw;
    // w terms: tn·ibt, rn·iar
    let mut gtn = ibt * gw;
    gibt += tn * gw;
    let mut grw = Vec3::zeros();
    if p.a_dyn {
        let mut grn = iar * gw;
        giar += rn * gw;
        let (gq, gm, gv) = sandwich_vjp(&p.qa, &p.ia, &rn, &giar);
        gp.qa = gp.qa.add(&gq);
        gp.ia += gm;
        grn += gv;
        // rn = rw × n
        grw += n.cross(&grn);
        gn += grn.cross(&rw);
    }
    let (gq, gm, gv) = sandwich_vjp(&p.qb, &p.ib, &tn, &gibt);
    gp.qb = gp.qb.add(&gq);
    gp.ib += gm;
    gtn += gv;
    let mut gtw = n.cross(&gtn);
    gn += gtn.cross(&tw);
    // n = c/‖c‖, C = ‖c‖
    let gc = (gn - n * n.dot(&gn)) / cn + n * gc_norm;
    gp.xb += gc;
    gp.xa -= gc;
    gtw += gc;
    grw -= gc;
    let (gq, gv) = rotate_vjp(&p.qa, r, &grw);
    gp.qa = gp.qa.add(&gq);
    *gr += gv;
    let (gq, gv) = rotate_vjp(&p.qb, t, &gtw);
    gp.qb = gp.qb.add(&gq);
    *gt += gv;
}

// ------------------------------------------------------------------------------------------------------------
// §3.4 angular correction for a given rotation vector c (|c| = sin of the misalignment), shared by the hinge
// axis alignment (c = b_w × a_w) and the angle limit (§3.5, c = n_P' × n_C).

#[inline(always)]
pub fn angular_core<T: Scalar>(p: &Pair<T>, c: &Vec3<T>, lam: T, at: T) -> Corr<T> {
    let th = c.norm();
    if th.re() < EPS {
        return Corr::none();
    }
    let n = c / th;
    let ibn = sandwich(&p.qb, &p.ib, &n);
    let mut w = n.dot(&ibn);
    let mut ian = Vec3::zeros();
    if p.a_dyn {
        ian = sandwich(&p.qa, &p.ia, &n);
        w += n.dot(&ian);
    }
    let dl = (-th - at * lam) / (w + at);
    Corr { dxa: Vec3::zeros(), dpa: ian * (-dl), dxb: Vec3::zeros(), dpb: ibn * dl, dl, active: true }
}

/// Adjoint of [`angular_core`]: accumulates into `gp` (q, inertia, λ) and returns c̄.
pub fn angular_core_vjp(p: &Pair<f64>, c: &Vec3, lam: f64, at: f64, g: &CorrGrad, gp: &mut PairGrad) -> Vec3 {
    let th = c.norm();
    if th < EPS {
        return Vec3::zeros();
    }
    let n = c / th;
    let ibn = sandwich(&p.qb, &p.ib, &n);
    let mut w = n.dot(&ibn);
    let mut ian = Vec3::zeros();
    if p.a_dyn {
        ian = sandwich(&p.qa, &p.ia, &n);
        w += n.dot(&ian);
    }
    let den = w + at;
    let dl = (-th - at * lam) / den;
    let gdl = g.dl - ian.dot(&g.dpa) + ibn.dot(&g.dpb);
    let gth = -gdl / den;
    gp.lam += -at * gdl / den;
    let gw = -dl * gdl / den;
    let mut gn = ibn * gw;
    let gibn = g.dpb * dl + n * gw;
    let (gq, gm, gv) = sandwich_vjp(&p.qb, &p.ib, &n, &gibn);
    gp.qb = gp.qb.add(&gq);
    gp.ib += gm;
    gn += gv;
    if p.a_dyn {
        gn += ian * gw;
        let gian = g.dpa * (-dl) + n * gw;
        let (gq, gm, gv) = sandwich_vjp(&p.qa, &p.ia, &n, &gian);
        gp.qa = gp.qa.add(&gq);
        gp.ia += gm;
        gn += gv;
    }
    (gn - n * n.dot(&gn)) / th + n * gth
}

/// Hinge axis alignment (§3.4): c = R_A b × R_B a.
#[inline(always)]
pub fn angular<T: Scalar>(p: &Pair<T>, b: &Vec3<T>, a: &Vec3<T>, lam: T, at: T) -> Corr<T> {
    let bw = p.qa.rotate(b);
    let aw = p.qb.rotate(a);
    angular_core(p, &bw.cross(&aw), lam, at)
}

/// Adjoint of [`angular`].
pub fn angular_vjp(p: &Pair<f64>, b: &Vec3, a: &Vec3, lam: f64, at: f64, g: &CorrGrad, gp: &mut PairGrad) {
    let bw = p.qa.rotate(b);
    let aw = p.qb.rotate(a);
    let gc = angular_core_vjp(p, &bw.cross(&aw), lam, at, g, gp);
    let (gq, _) = rotate_vjp(&p.qa, b, &aw.cross(&gc));
    gp.qa = gp.qa.add(&gq);
    let (gq, _) = rotate_vjp(&p.qb, a, &gc.cross(&bw));
    gp.qb = gp.qb.add(&gq);
}
