//! Hinge constraints: positional point coincidence (spec 000 §3.3, Eqs. 1–9 with the sign fix) and angular
//! axis alignment (§3.4, Eqs. 11–17 with the sign fix), with XPBD compliance (λ accumulation, α̃ = α/h²;
//! α = 0 is the paper's PBD). Each kernel is generic over the scalar; its adjoint is right below it.
use torsion_math::quat::{rotate_vjp, sandwich_mat, sandwich_vjp};
use torsion_math::{Mat3, Quat, Scalar, Vec3};

/// Constraints whose violation norm is below this are skipped (spec 000 §6.9): no NaN from ‖0‖.
pub const EPS: f64 = 1e-15;

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

/// Intermediate values of one positional projection (the generic forward keeps them so that the adjoint
/// reuses them instead of recomputing the kernel).
///
/// The kernel works with the unnormalized c rather than n = c/C (the same values: t×n = (t×c)/C,
/// I⁻¹(t×n) = I⁻¹(t×c)/C, w = w_A + w_B + [(t×c)·I⁻¹(t×c) + (r×c)·I⁻¹(r×c)]/C²), so that the square root and
/// the division of n run beside the inertia products instead of before them on the Gauss–Seidel chain, and the
/// corrections come from one division, s = Δλ/C.
#[derive(Clone, Copy, Debug)]
pub struct PositionalFwd<T: Scalar> {
    /// anchors in the world: R_A r, R_B t
    pub rw: Vec3<T>,
    pub tw: Vec3<T>,
    /// c, C² and C = ‖c‖
    pub c: Vec3<T>,
    pub cc: T,
    pub cn: T,
    /// t_w × c and I_B,w⁻¹ (t_w × c)
    pub tc: Vec3<T>,
    pub ibtc: Vec3<T>,
    /// r_w × c and I_A,w⁻¹ (r_w × c) (zero when the parent is fixed)
    pub rc: Vec3<T>,
    pub iarc: Vec3<T>,
    /// C² (w − w_A − w_B) = (t×c)·I_B⁻¹(t×c) + (r×c)·I_A⁻¹(r×c)
    pub wc: T,
    /// s = Δλ / C
    pub s: T,
}

impl<T: Scalar> PositionalFwd<T> {
    /// The corrections: Δx_A = −Δλ w_A n, Δφ_A = −Δλ I_A⁻¹(r×n), Δx_B = Δλ w_B n, Δφ_B = Δλ I_B⁻¹(t×n)
    /// (Δλ n = s c, Δλ I⁻¹(t×n) = s I⁻¹(t×c)).
    #[inline(always)]
    pub fn corr(&self, p: &Pair<T>) -> Corr<T> {
        let s = self.s;
        Corr {
            dxa: self.c * (-s * p.wa),
            dpa: self.iarc * (-s),
            dxb: self.c * (s * p.wb),
            dpb: self.ibtc * s,
            dl: s * self.cn,
            active: true,
        }
    }
}

/// The positional projection with its intermediates (None: skipped by the ε guard).
#[inline(always)]
pub fn positional_fwd<T: Scalar>(p: &Pair<T>, r: &Vec3<T>, t: &Vec3<T>, lam: T, at: T) -> Option<PositionalFwd<T>> {
    // R_A, R_B once per projection: the rotations of the anchors and the world inverse inertias
    // I_w⁻¹ v = R I⁻¹ Rᵀ v (refreshed from the current quaternions, spec 000 §3.0) share them
    let (ra, rb) = (p.qa.to_mat(), p.qb.to_mat());
    let rw = ra * r;
    let tw = rb * t;
    let c = (p.xb + tw) - (p.xa + rw);
    let cc = c.norm_squared();
    let cn = cc.sqrt();
    if cn.re() < EPS {
        return None;
    }
    let tc = tw.cross(&c);
    let ibtc = sandwich_mat(&rb, &p.ib, &tc);
    let mut wc = tc.dot(&ibtc);
    let (mut rc, mut iarc) = (Vec3::zeros(), Vec3::zeros());
    if p.a_dyn {
        rc = rw.cross(&c);
        iarc = sandwich_mat(&ra, &p.ia, &rc);
        wc += rc.dot(&iarc);
    }
    // XPBD: Δλ = (−C − α̃ λ)/(w + α̃); α̃ = 0 gives the paper's λ = −C/w (Eq. 5). With w C² = (w_A + w_B) C² + wc:
    // s = Δλ/C = −(C² + α̃ λ C) / ((w_A + w_B + α̃) C² + wc)
    let s = -(cc + at * lam * cn) / ((p.wa + p.wb + at) * cc + wc);
    Some(PositionalFwd { rw, tw, c, cc, cn, tc, ibtc, rc, iarc, wc, s })
}

#[inline(always)]
pub fn positional<T: Scalar>(p: &Pair<T>, r: &Vec3<T>, t: &Vec3<T>, lam: T, at: T) -> Corr<T> {
    match positional_fwd(p, r, t, lam, at) {
        Some(f) => f.corr(p),
        None => Corr::none(),
    }
}

/// Adjoint of [`positional`] at the forward values `f` (from [`positional_fwd`]): accumulates into `gp`, `gr`,
/// `gt` (anchors).
#[allow(clippy::too_many_arguments)]
#[inline]
pub fn positional_vjp(
    p: &Pair<f64>,
    r: &Vec3,
    t: &Vec3,
    f: &PositionalFwd<f64>,
    at: f64,
    g: &CorrGrad,
    gp: &mut PairGrad,
    gr: &mut Vec3,
    gt: &mut Vec3,
) {
    // the normalized quantities of the spec's form (n = c/C, t×n, I⁻¹(t×n), ...), Δλ and w + α̃
    let inv = 1.0 / f.cn;
    let (rw, tw, cn) = (f.rw, f.tw, f.cn);
    let (n, tn, ibt, rn, iar) = (f.c * inv, f.tc * inv, f.ibtc * inv, f.rc * inv, f.iarc * inv);
    let dl = f.s * cn;
    let inv_den = 1.0 / (p.wa + p.wb + f.wc / f.cc + at);
    // outputs: dxa = −dl wa n, dpa = −dl iar, dxb = dl wb n, dpb = dl ibt, dl
    let gdl = g.dl - p.wa * n.dot(&g.dxa) + p.wb * n.dot(&g.dxb) - iar.dot(&g.dpa) + ibt.dot(&g.dpb);
    let mut gn = g.dxa * (-dl * p.wa) + g.dxb * (dl * p.wb);
    gp.wa += -dl * n.dot(&g.dxa);
    gp.wb += dl * n.dot(&g.dxb);
    let mut giar = g.dpa * (-dl);
    let mut gibt = g.dpb * dl;
    // dl = (−C − α̃λ)/den
    let gc_norm = -gdl * inv_den;
    gp.lam += -at * gdl * inv_den;
    let gw = -dl * gdl * inv_den;
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
    let gc = (gn - n * n.dot(&gn)) * inv + n * gc_norm;
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

/// Intermediate values of one angular correction (see [`PositionalFwd`]; the same unnormalized form:
/// I⁻¹n = I⁻¹c/θ, w = c·I⁻¹c/θ², s = Δλ/θ).
#[derive(Clone, Copy, Debug)]
pub struct AngularFwd<T: Scalar> {
    /// c, θ² and θ = ‖c‖
    pub c: Vec3<T>,
    pub cc: T,
    pub th: T,
    /// I_B,w⁻¹ c and I_A,w⁻¹ c (zero when the parent is fixed)
    pub ibc: Vec3<T>,
    pub iac: Vec3<T>,
    /// θ² w = c·I_B⁻¹c + c·I_A⁻¹c
    pub wc: T,
    /// s = Δλ / θ
    pub s: T,
}

impl<T: Scalar> AngularFwd<T> {
    /// The corrections: Δφ_A = −Δλ I_A⁻¹ n, Δφ_B = Δλ I_B⁻¹ n (no translation).
    #[inline(always)]
    pub fn corr(&self) -> Corr<T> {
        let s = self.s;
        Corr {
            dxa: Vec3::zeros(),
            dpa: self.iac * (-s),
            dxb: Vec3::zeros(),
            dpb: self.ibc * s,
            dl: s * self.th,
            active: true,
        }
    }
}

/// The angular correction for c with its intermediates; `ra`, `rb` are R(q_A), R(q_B) of the pair.
#[inline(always)]
pub fn angular_core_fwd<T: Scalar>(
    p: &Pair<T>,
    ra: &Mat3<T>,
    rb: &Mat3<T>,
    c: &Vec3<T>,
    lam: T,
    at: T,
) -> Option<AngularFwd<T>> {
    let cc = c.norm_squared();
    let th = cc.sqrt();
    if th.re() < EPS {
        return None;
    }
    let ibc = sandwich_mat(rb, &p.ib, c);
    let mut wc = c.dot(&ibc);
    let mut iac = Vec3::zeros();
    if p.a_dyn {
        iac = sandwich_mat(ra, &p.ia, c);
        wc += c.dot(&iac);
    }
    // Δλ = (−θ − α̃ λ)/(w + α̃)  ⇒  s = Δλ/θ = −(θ² + α̃ λ θ) / (wc + α̃ θ²)
    let s = -(cc + at * lam * th) / (wc + at * cc);
    Some(AngularFwd { c: *c, cc, th, ibc, iac, wc, s })
}

#[inline(always)]
pub fn angular_core<T: Scalar>(p: &Pair<T>, c: &Vec3<T>, lam: T, at: T) -> Corr<T> {
    match angular_core_fwd(p, &p.qa.to_mat(), &p.qb.to_mat(), c, lam, at) {
        Some(f) => f.corr(),
        None => Corr::none(),
    }
}

/// Adjoint of [`angular_core`] at the forward values `f`: accumulates into `gp` (q, inertia, λ) and returns c̄.
#[inline]
pub fn angular_core_vjp(p: &Pair<f64>, f: &AngularFwd<f64>, at: f64, g: &CorrGrad, gp: &mut PairGrad) -> Vec3 {
    let inv = 1.0 / f.th;
    let th = f.th;
    let (n, ibn, ian) = (f.c * inv, f.ibc * inv, f.iac * inv);
    let dl = f.s * th;
    let inv_den = 1.0 / (f.wc / f.cc + at);
    let gdl = g.dl - ian.dot(&g.dpa) + ibn.dot(&g.dpb);
    let gth = -gdl * inv_den;
    gp.lam += -at * gdl * inv_den;
    let gw = -dl * gdl * inv_den;
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
    (gn - n * n.dot(&gn)) * inv + n * gth
}

/// Hinge axis alignment (§3.4) with its intermediates: c = R_A b × R_B a.
#[derive(Clone, Copy, Debug)]
pub struct AxisFwd<T: Scalar> {
    pub bw: Vec3<T>,
    pub aw: Vec3<T>,
    pub core: AngularFwd<T>,
}

#[inline(always)]
pub fn angular_fwd<T: Scalar>(p: &Pair<T>, b: &Vec3<T>, a: &Vec3<T>, lam: T, at: T) -> Option<AxisFwd<T>> {
    let bw = p.qa.rotate(b);
    let aw = p.qb.rotate(a);
    angular_core_fwd(p, &p.qa.to_mat(), &p.qb.to_mat(), &bw.cross(&aw), lam, at).map(|core| AxisFwd { bw, aw, core })
}

/// Hinge axis alignment (§3.4): c = R_A b × R_B a.
#[inline(always)]
pub fn angular<T: Scalar>(p: &Pair<T>, b: &Vec3<T>, a: &Vec3<T>, lam: T, at: T) -> Corr<T> {
    match angular_fwd(p, b, a, lam, at) {
        Some(f) => f.core.corr(),
        None => Corr::none(),
    }
}

/// Adjoint of [`angular`] at the forward values `f`.
#[inline]
pub fn angular_vjp(p: &Pair<f64>, b: &Vec3, a: &Vec3, f: &AxisFwd<f64>, at: f64, g: &CorrGrad, gp: &mut PairGrad) {
    let gc = angular_core_vjp(p, &f.core, at, g, gp);
    let (gq, _) = rotate_vjp(&p.qa, b, &f.aw.cross(&gc));
    gp.qa = gp.qa.add(&gq);
    let (gq, _) = rotate_vjp(&p.qb, a, &gc.cross(&f.bw));
    gp.qb = gp.qb.add(&gq);
}

/// Shared helpers for the kernel adjoint tests (FD on the manifold: quaternions perturbed by Exp(δ)⊗q).
#[cfg(test)]
pub(crate) mod testing {
    use super::*;
    use torsion_math::quat::grad_ambient_to_tangent;

    pub fn pair() -> Pair<f64> {
        Pair {
            xa: Vec3::new(0.1, 0.2, 0.9),
            qa: Quat::from_rpy(0.3, -0.2, 0.5),
            xb: Vec3::new(0.45, 0.05, 1.02),
            qb: Quat::from_rpy(0.25, -0.1, 0.7),
            wa: 0.5,
            wb: 1.0,
            ia: Mat3::new(20.0, 1.0, 0.5, 1.0, 25.0, -0.7, 0.5, -0.7, 33.0),
            ib: Mat3::new(50.0, -2.0, 1.0, -2.0, 40.0, 0.3, 1.0, 0.3, 45.0),
            a_dyn: true,
        }
    }
    /// Perturb a pair: d = [dxa(3) δqa(3) dxb(3) δqb(3) dwa dwb dia(9) dib(9)] (30 entries).
    pub fn perturb(p: &Pair<f64>, d: &[f64]) -> Pair<f64> {
        let v = |o: usize| Vec3::new(d[o], d[o + 1], d[o + 2]);
        Pair {
            xa: p.xa + v(0),
            qa: p.qa.retract(&v(3)),
            xb: p.xb + v(6),
            qb: p.qb.retract(&v(9)),
            wa: p.wa + d[12],
            wb: p.wb + d[13],
            ia: p.ia + Mat3::from_column_slice(&d[14..23]),
            ib: p.ib + Mat3::from_column_slice(&d[23..32]),
            a_dyn: p.a_dyn,
        }
    }
    pub fn tangent(p: &Pair<f64>, g: &PairGrad) -> Vec<f64> {
        let mut out = vec![];
        out.extend_from_slice(g.xa.as_slice());
        out.extend_from_slice(grad_ambient_to_tangent(&p.qa, &g.qa).as_slice());
        out.extend_from_slice(g.xb.as_slice());
        out.extend_from_slice(grad_ambient_to_tangent(&p.qb, &g.qb).as_slice());
        out.push(g.wa);
        out.push(g.wb);
        out.extend_from_slice(g.ia.as_slice());
        out.extend_from_slice(g.ib.as_slice());
        out
    }
    pub fn cot() -> CorrGrad {
        CorrGrad {
            dxa: Vec3::new(0.3, -0.2, 0.5),
            dpa: Vec3::new(-0.4, 0.1, 0.2),
            dxb: Vec3::new(0.7, 0.3, -0.1),
            dpb: Vec3::new(0.2, -0.6, 0.4),
            dl: 0.8,
        }
    }
    pub fn dot(c: &Corr<f64>, g: &CorrGrad) -> f64 {
        c.dxa.dot(&g.dxa) + c.dpa.dot(&g.dpa) + c.dxb.dot(&g.dxb) + c.dpb.dot(&g.dpb) + c.dl * g.dl
    }
}

#[cfg(test)]
mod tests {
    use super::testing::*;
    use super::*;
    use torsion_diff::gradcheck;

    #[test]
    fn positional_vjp_matches_central_differences() {
        let p = pair();
        let (r, t) = (Vec3::new(0.2, 0.05, 0.1), Vec3::new(-0.1, 0.03, -0.05));
        for (lam, at) in [(0.0, 0.0), (-0.02, 3e-3)] {
            let g = cot();
            let f = positional_fwd(&p, &r, &t, lam, at).unwrap();
            let (mut gp, mut gr, mut gt) = (PairGrad::default(), Vec3::zeros(), Vec3::zeros());
            positional_vjp(&p, &r, &t, &f, at, &g, &mut gp, &mut gr, &mut gt);
            let mut an = tangent(&p, &gp);
            an.extend_from_slice(gr.as_slice());
            an.extend_from_slice(gt.as_slice());
            an.push(gp.lam);
            let c = gradcheck(
                |d| {
                    let rr = r + Vec3::new(d[32], d[33], d[34]);
                    let tt = t + Vec3::new(d[35], d[36], d[37]);
                    dot(&positional(&perturb(&p, d), &rr, &tt, lam + d[38], at), &g)
                },
                &an,
                1e-7,
            );
            assert!(c.max_rel_err < 1e-7, "positional VJP: {:e} at {}", c.max_rel_err, c.worst_index);
        }
    }

    #[test]
    fn angular_vjp_matches_central_differences() {
        let p = pair();
        let (b, a) = (Vec3::new(0.0, 0.1, 1.0).normalize(), Vec3::new(0.05, 0.0, 1.0).normalize());
        for (lam, at) in [(0.0, 0.0), (0.01, 2e-3)] {
            let g = cot();
            let f = angular_fwd(&p, &b, &a, lam, at).unwrap();
            let mut gp = PairGrad::default();
            angular_vjp(&p, &b, &a, &f, at, &g, &mut gp);
            let mut an = tangent(&p, &gp);
            an.push(gp.lam);
            let c = gradcheck(|d| dot(&angular(&perturb(&p, d), &b, &a, lam + d[32], at), &g), &an, 1e-7);
            assert!(c.max_rel_err < 1e-7, "angular VJP: {:e} at {}", c.max_rel_err, c.worst_index);
        }
    }
}
