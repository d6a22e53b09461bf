//! One XPBD step (spec 000 §3.2, Algorithm 1 with the §3.12 fixes) as executed, generic over the scalar, and
//! its reverse-mode adjoint right below it. The adjoint replays the recorded projection inputs in reverse
//! (the 30 iterations are differentiated exactly as executed, spec 000 §3.7): each projection's generic forward
//! kernel runs once more on f64 and its intermediates feed the kernel's hand-written adjoint.
//! Neither `step` nor `step_vjp` allocates: the constraint list, the scratch and the record are reused.
use super::data::{DataGrad, XpbdData};
use super::joints::hinge::{
    angular, angular_fwd, angular_vjp, positional, positional_fwd, positional_vjp, AxisFwd, Corr, CorrGrad, Pair,
    PairGrad, PositionalFwd,
};
use super::joints::limits::{limit_fwd, limit_vjp, LimitFwd};
use super::predict::{joint_torque_axis, joint_torque_vjp, predict, predict_vjp, velocity_update, velocity_update_vjp};
use super::spring::{spring_torque, spring_torque_grad};
use super::{angles, Ordering, XpbdOptions};
use crate::solver::StepInfo;
use torsion_math::quat::apply_dphi_vjp;
use torsion_math::{Quat, Scalar, Vec3};
use torsion_model::{JointType, MaximalState, Model};

/// Constraint kinds; λ accumulators are indexed 3·joint + kind.
const POS: u8 = 0;
const ANG: u8 = 1;
const LIM: u8 = 2;

/// One entry of the constraint list of an iteration (see [`constraint_order`]), with its indices resolved.
#[derive(Clone, Copy, Debug)]
struct Cons {
    kind: u8,
    /// joint, parent body, child body, λ slot (3·joint + kind)
    j: usize,
    a: usize,
    b: usize,
    li: usize,
    /// the parent body is fixed
    fa: bool,
}

/// Fill `out` with the constraint list of one iteration (no allocation: its capacity is 3 × joints).
fn fill_constraints(model: &Model, opts: &XpbdOptions, out: &mut Vec<Cons>) {
    out.clear();
    out.extend(constraint_order(model, opts).map(|(kind, j)| {
        let (a, b) = (model.joint_parent[j], model.joint_child[j]);
        Cons { kind, j, a, b, li: 3 * j + kind as usize, fa: model.body_fixed[a] }
    }));
}

/// Per-step scratch of the generic step (allocated once).
pub struct Scratch<T: Scalar> {
    /// the constraint list of one iteration, rebuilt from the options at the start of each step
    cons: Vec<Cons>,
    tau: Vec<Vec3<T>>,
    xb: Vec<Vec3<T>>,
    qb: Vec<Quat<T>>,
    lam: Vec<T>,
    acc_x: Vec<Vec3<T>>,
    acc_p: Vec<Vec3<T>>,
    /// joints touching each body (Jacobi averaging)
    touch: Vec<f64>,
}

impl<T: Scalar> Scratch<T> {
    pub fn new(model: &Model) -> Self {
        let nb = model.body_count();
        let mut touch = vec![0.0; nb];
        for j in 0..model.joint_count() {
            touch[model.joint_parent[j]] += 1.0;
            touch[model.joint_child[j]] += 1.0;
        }
        Scratch {
            cons: Vec::with_capacity(3 * model.joint_count()),
            tau: vec![Vec3::zeros(); nb],
            xb: vec![Vec3::zeros(); nb],
            qb: vec![Quat::identity(); nb],
            lam: vec![T::zero(); 3 * model.joint_count()],
            acc_x: vec![Vec3::zeros(); nb],
            acc_p: vec![Vec3::zeros(); nb],
            touch,
        }
    }
}

/// Inputs of one recorded projection (Gauss–Seidel).
#[derive(Clone, Copy, Debug)]
struct Snap {
    kind: u8,
    j: u32,
    xa: Vec3,
    qa: Quat,
    xb: Vec3,
    qb: Quat,
    lam: f64,
}

struct SubRecord {
    start: MaximalState,
    end_x: Vec<Vec3>,
    end_q: Vec<Quat>,
    /// Gauss–Seidel: active projections in execution order
    snaps: Vec<Snap>,
    /// Jacobi: iteration-start poses (iterations × bodies) and λ (iterations × 3 joints)
    it_x: Vec<Vec3>,
    it_q: Vec<Quat>,
    it_lam: Vec<f64>,
}

/// What `step` saves for `step_vjp`: the inputs and every projection's inputs (memory O(projections)).
pub struct XpbdRecord {
    u: Vec<f64>,
    dt: f64,
    subs: Vec<SubRecord>,
    valid: bool,
}

impl XpbdRecord {
    pub fn new(model: &Model, opts: &XpbdOptions) -> Self {
        let nb = model.body_count();
        let nj = model.joint_count();
        let cap = opts.iterations * 3 * nj;
        let subs = (0..opts.substeps)
            .map(|_| SubRecord {
                start: MaximalState::zeros(nb),
                end_x: vec![Vec3::zeros(); nb],
                end_q: vec![Quat::identity(); nb],
                snaps: Vec::with_capacity(if opts.ordering == Ordering::GaussSeidel { cap } else { 0 }),
                it_x: Vec::with_capacity(if opts.ordering == Ordering::Jacobi { opts.iterations * nb } else { 0 }),
                it_q: Vec::with_capacity(if opts.ordering == Ordering::Jacobi { opts.iterations * nb } else { 0 }),
                it_lam: Vec::with_capacity(if opts.ordering == Ordering::Jacobi {
                    opts.iterations * 3 * nj
                } else {
                    0
                }),
            })
            .collect();
        XpbdRecord { u: vec![0.0; nj], dt: 0.0, subs, valid: false }
    }
}

#[inline(always)]
fn re3<T: Scalar>(v: &Vec3<T>) -> Vec3 {
    Vec3::new(v.x.re(), v.y.re(), v.z.re())
}
#[inline(always)]
fn req<T: Scalar>(q: &Quat<T>) -> Quat {
    Quat::new(q.w.re(), q.v.x.re(), q.v.y.re(), q.v.z.re())
}

#[inline(always)]
fn pair<T: Scalar>(
    d: &XpbdData<T>,
    fixed_a: bool,
    a: usize,
    b: usize,
    xa: Vec3<T>,
    qa: Quat<T>,
    xb: Vec3<T>,
    qb: Quat<T>,
) -> Pair<T> {
    Pair {
        xa,
        qa,
        xb,
        qb,
        wa: d.inv_mass[a],
        wb: d.inv_mass[b],
        ia: d.inv_inertia[a],
        ib: d.inv_inertia[b],
        a_dyn: !fixed_a,
    }
}

/// Constraint `c` projected at the current positions: its pair and correction, or None when it is inactive
/// (an inactive limit, or a correction flagged inactive: counted in `info.skipped_projections`); active limits
/// are counted in `info.active_limits`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn project_counted<T: Scalar>(
    model: &Model,
    d: &XpbdData<T>,
    c: &Cons,
    xb: &[Vec3<T>],
    qb: &[Quat<T>],
    lam: &[T],
    at: T,
    info: &mut StepInfo,
) -> Option<(Pair<T>, Corr<T>)> {
    let &Cons { kind, j, a, b, li, fa } = c;
    let p = pair(d, fa, a, b, xb[a], qb[a], xb[b], qb[b]);
    let corr = project(model, d, kind, j, &p, lam[li], at)?;
    if !corr.active {
        info.skipped_projections += 1;
        return None;
    }
    if kind == LIM {
        info.active_limits += 1;
    }
    Some((p, corr))
}

/// The constraint `kind` of joint `j` evaluated on the pair (None: inactive limit).
#[inline(always)]
fn project<T: Scalar>(
    model: &Model,
    d: &XpbdData<T>,
    kind: u8,
    j: usize,
    p: &Pair<T>,
    lam: T,
    at: T,
) -> Option<Corr<T>> {
    match kind {
        POS => Some(positional(p, &d.r[j], &d.t[j], lam, at)),
        ANG => Some(angular(p, &d.b[j], &d.a[j], lam, at)),
        _ => {
            let (lo, hi) = model.joint_limit[j]?;
            limit_fwd(p, &d.b[j], &d.np[j], &d.nc[j], lo, hi, lam, at).map(|f| f.corr())
        }
    }
}

/// The constraint list of one iteration, in the spec's order (§6.1): all positional (base → tip), all
/// angular, then all limits. (Projecting limits first was tried: Baxter drift with active limits is the same.)
#[inline(always)]
fn constraint_order<'a>(model: &'a Model, opts: &XpbdOptions) -> impl Iterator<Item = (u8, usize)> + 'a {
    let nj = model.joint_count();
    let rev = move |j: &usize| model.joint_type[*j] == JointType::Revolute;
    let lim = opts.limits;
    (0..nj)
        .map(|j| (POS, j))
        .chain((0..nj).filter(rev).map(|j| (ANG, j)))
        .chain((0..nj).filter(move |j| lim && rev(j) && model.joint_limit[*j].is_some()).map(|j| (LIM, j)))
}

/// §3.8 joint torques → body torques: +τ_j e_j on the child, −τ_j e_j on a dynamic parent, e_j = R(q_P) b.
#[inline(always)]
fn body_torques<T: Scalar>(
    model: &Model,
    opts: &XpbdOptions,
    d: &XpbdData<T>,
    s: &MaximalState<T>,
    u: &[T],
    tau: &mut [Vec3<T>],
) {
    for t in tau.iter_mut() {
        *t = Vec3::zeros();
    }
    for j in 0..model.joint_count() {
        if model.joint_type[j] != JointType::Revolute {
            continue;
        }
        let (p, c) = (model.joint_parent[j], model.joint_child[j]);
        let e = joint_torque_axis(&s.q[p], &d.b[j]) * joint_drive(model, opts, d, s, u, j);
        tau[c] += e;
        if !model.body_fixed[p] {
            tau[p] -= e;
        }
    }
}

/// Total torque of joint j: control plus spring (§3.11), evaluated on the (sub)step start state.
#[inline(always)]
fn joint_drive<T: Scalar>(
    model: &Model,
    opts: &XpbdOptions,
    d: &XpbdData<T>,
    s: &MaximalState<T>,
    u: &[T],
    j: usize,
) -> T {
    let mut tj = u[j];
    if let (true, Some(sp), Some(p)) = (opts.springs, model.joint_spring[j].as_ref(), d.spring[j].as_ref()) {
        let phi =
            angles::hinge_angle(&s.q[model.joint_parent[j]], &s.q[model.joint_child[j]], &d.b[j], &d.np[j], &d.nc[j]);
        tj += spring_torque(phi, p, sp.sign, sp.literal);
    }
    tj
}

/// `dst = src` reusing `dst`'s buffers (the derived `Clone::clone_from` of the state would reallocate).
#[inline]
fn copy_state<T: Scalar>(src: &MaximalState<T>, dst: &mut MaximalState<T>) {
    dst.x.clone_from(&src.x);
    dst.q.clone_from(&src.q);
    dst.v.clone_from(&src.v);
    dst.w.clone_from(&src.w);
}

/// One step. `out` receives the new state; `rec` (f64 only in practice) saves what the adjoint needs.
#[allow(clippy::too_many_arguments)]
pub fn step<T: Scalar>(
    model: &Model,
    opts: &XpbdOptions,
    d: &XpbdData<T>,
    s: &MaximalState<T>,
    u: &[T],
    dt: f64,
    out: &mut MaximalState<T>,
    sc: &mut Scratch<T>,
    mut rec: Option<&mut XpbdRecord>,
) -> StepInfo {
    let nb = model.body_count();
    let nsub = opts.substeps;
    let hf = dt / nsub as f64;
    let h = T::c(hf);
    let at = T::c(opts.compliance / (hf * hf));
    let mut info = StepInfo::new("xpbd");
    info.iterations = opts.iterations * nsub;
    fill_constraints(model, opts, &mut sc.cons);
    copy_state(s, out);
    if let Some(r) = rec.as_deref_mut() {
        for (a, b) in r.u.iter_mut().zip(u) {
            *a = b.re();
        }
        r.dt = dt;
        r.valid = true;
    }
    for sub in 0..nsub {
        if let Some(r) = rec.as_deref_mut() {
            let sr = &mut r.subs[sub];
            for k in 0..nb {
                sr.start.x[k] = re3(&out.x[k]);
                sr.start.q[k] = req(&out.q[k]);
                sr.start.v[k] = re3(&out.v[k]);
                sr.start.w[k] = re3(&out.w[k]);
            }
            sr.snaps.clear();
            sr.it_x.clear();
            sr.it_q.clear();
            sr.it_lam.clear();
        }
        // §3.8 joint torques → body torques
        body_torques(model, opts, d, out, u, &mut sc.tau);
        // §3.2 prediction
        for k in 0..nb {
            if model.body_fixed[k] {
                sc.xb[k] = out.x[k];
                sc.qb[k] = out.q[k];
                continue;
            }
            let (xb, qb) = predict(
                &out.x[k],
                &out.q[k],
                &out.v[k],
                &out.w[k],
                &sc.tau[k],
                &d.inertia[k],
                &d.inv_inertia[k],
                &d.gravity,
                h,
            );
            sc.xb[k] = xb;
            sc.qb[k] = qb;
        }
        for l in sc.lam.iter_mut() {
            *l = T::zero();
        }
        // §3.3–3.5 projections
        for _ in 0..opts.iterations {
            match opts.ordering {
                Ordering::GaussSeidel => {
                    for cn in sc.cons.iter() {
                        let Some((p, c)) = project_counted(model, d, cn, &sc.xb, &sc.qb, &sc.lam, at, &mut info) else {
                            continue;
                        };
                        let Cons { kind, j, a, b, li, fa } = *cn;
                        if let Some(r) = rec.as_deref_mut() {
                            r.subs[sub].snaps.push(Snap {
                                kind,
                                j: j as u32,
                                xa: re3(&p.xa),
                                qa: req(&p.qa),
                                xb: re3(&p.xb),
                                qb: req(&p.qb),
                                lam: sc.lam[li].re(),
                            });
                        }
                        if !fa {
                            sc.xb[a] += c.dxa;
                            sc.qb[a] = sc.qb[a].apply_dphi(&c.dpa);
                        }
                        sc.xb[b] += c.dxb;
                        sc.qb[b] = sc.qb[b].apply_dphi(&c.dpb);
                        sc.lam[li] += c.dl;
                    }
                }
                Ordering::Jacobi => {
                    if let Some(r) = rec.as_deref_mut() {
                        let sr = &mut r.subs[sub];
                        sr.it_x.extend(sc.xb.iter().map(re3));
                        sr.it_q.extend(sc.qb.iter().map(req));
                        sr.it_lam.extend(sc.lam.iter().map(|l| l.re()));
                    }
                    for k in 0..nb {
                        sc.acc_x[k] = Vec3::zeros();
                        sc.acc_p[k] = Vec3::zeros();
                    }
                    for cn in sc.cons.iter() {
                        let Some((_, c)) = project_counted(model, d, cn, &sc.xb, &sc.qb, &sc.lam, at, &mut info) else {
                            continue;
                        };
                        let Cons { a, b, li, fa, .. } = *cn;
                        if !fa {
                            sc.acc_x[a] += c.dxa;
                            sc.acc_p[a] += c.dpa;
                        }
                        sc.acc_x[b] += c.dxb;
                        sc.acc_p[b] += c.dpb;
                        sc.lam[li] += c.dl;
                    }
                    for k in 0..nb {
                        if model.body_fixed[k] || sc.touch[k] == 0.0 {
                            continue;
                        }
                        let w = T::c(opts.jacobi_relaxation / sc.touch[k]);
                        sc.xb[k] += sc.acc_x[k] * w;
                        sc.qb[k] = sc.qb[k].apply_dphi(&(sc.acc_p[k] * w));
                    }
                }
            }
        }
        // §3.2 velocity update (L28–L35)
        for k in 0..nb {
            if model.body_fixed[k] {
                continue;
            }
            let (v, w) = velocity_update(&out.x[k], &out.q[k], &sc.xb[k], &sc.qb[k], h);
            out.v[k] = v;
            out.w[k] = w;
            out.x[k] = sc.xb[k];
            out.q[k] = sc.qb[k];
        }
        if let Some(r) = rec.as_deref_mut() {
            let sr = &mut r.subs[sub];
            for k in 0..nb {
                sr.end_x[k] = re3(&out.x[k]);
                sr.end_q[k] = req(&out.q[k]);
            }
        }
    }
    info
}

/// Max positional ‖c‖ and angular ‖b_w × a_w‖ joint violations of a state.
pub fn violations(model: &Model, s: &MaximalState) -> (f64, f64) {
    let (mut mp, mut ma) = (0.0f64, 0.0f64);
    for j in 0..model.joint_count() {
        let (a, b) = (model.joint_parent[j], model.joint_child[j]);
        let c = (s.x[b] + s.q[b].rotate(&model.joint_anchor_child[j]))
            - (s.x[a] + s.q[a].rotate(&model.joint_anchor_parent[j]));
        mp = mp.max(c.norm());
        if model.joint_type[j] == JointType::Revolute {
            let bw = s.q[a].rotate(&model.joint_axis_parent(j));
            let aw = s.q[b].rotate(&model.joint_axis_child(j));
            ma = ma.max(bw.cross(&aw).norm());
        }
    }
    (mp, ma)
}

// ================================================================================================================
// Adjoint

/// The forward values of one projection, computed once by the generic kernel and reused by its adjoint.
#[derive(Clone, Copy, Debug)]
enum ProjFwd {
    Pos(PositionalFwd<f64>),
    Ang(AxisFwd<f64>),
    Lim(LimitFwd<f64>),
    /// skipped by the ε guard, or an inactive limit
    Inactive,
}

impl ProjFwd {
    /// The same evaluation as [`project`] (f64), keeping the intermediates.
    #[inline(always)]
    fn eval(model: &Model, d: &XpbdData<f64>, kind: u8, j: usize, p: &Pair<f64>, lam: f64, at: f64) -> Self {
        let f = match kind {
            POS => positional_fwd(p, &d.r[j], &d.t[j], lam, at).map(ProjFwd::Pos),
            ANG => angular_fwd(p, &d.b[j], &d.a[j], lam, at).map(ProjFwd::Ang),
            _ => model.joint_limit[j].and_then(|(lo, hi)| {
                limit_fwd(p, &d.b[j], &d.np[j], &d.nc[j], lo, hi, lam, at)
                    .filter(|f| f.core.is_some())
                    .map(ProjFwd::Lim)
            }),
        };
        f.unwrap_or(ProjFwd::Inactive)
    }
    #[inline(always)]
    fn active(&self) -> bool {
        !matches!(self, ProjFwd::Inactive)
    }
    /// The corrections (all zero when inactive).
    #[inline(always)]
    fn corr(&self, p: &Pair<f64>) -> Corr<f64> {
        match self {
            ProjFwd::Pos(f) => f.corr(p),
            ProjFwd::Ang(f) => f.core.corr(),
            ProjFwd::Lim(f) => f.corr(),
            ProjFwd::Inactive => Corr::none(),
        }
    }
}

/// Scratch of the adjoint (allocated once).
pub struct VjpScratch {
    cons: Vec<Cons>,
    /// Jacobi: the forward values of one iteration's projections, in constraint-list order
    fwd: Vec<ProjFwd>,
    gx: Vec<Vec3>,
    gq: Vec<Quat>,
    gl: Vec<f64>,
    tau: Vec<Vec3>,
    gtau: Vec<Vec3>,
    cur: MaximalState,
    gd: DataGrad,
    acc_p: Vec<Vec3>,
    gacc_x: Vec<Vec3>,
    gacc_p: Vec<Vec3>,
    touch: Vec<f64>,
}

impl VjpScratch {
    pub fn new(model: &Model) -> Self {
        let nb = model.body_count();
        let nj = model.joint_count();
        let sc: Scratch<f64> = Scratch::new(model);
        VjpScratch {
            cons: Vec::with_capacity(3 * nj),
            fwd: Vec::with_capacity(3 * nj),
            gx: vec![Vec3::zeros(); nb],
            gq: vec![Quat::zero(); nb],
            gl: vec![0.0; 3 * nj],
            tau: vec![Vec3::zeros(); nb],
            gtau: vec![Vec3::zeros(); nb],
            cur: MaximalState::zeros(nb),
            gd: DataGrad::new(nb, nj),
            acc_p: vec![Vec3::zeros(); nb],
            gacc_x: vec![Vec3::zeros(); nb],
            gacc_p: vec![Vec3::zeros(); nb],
            touch: sc.touch,
        }
    }
}

/// Adjoint of one constraint correction at its forward values `f`: route ḡ of the corrections into the pair
/// inputs, λ and θ-data.
#[inline(always)]
fn project_vjp(
    model: &Model,
    d: &XpbdData<f64>,
    j: usize,
    p: &Pair<f64>,
    f: &ProjFwd,
    at: f64,
    g: &CorrGrad,
    gd: &mut DataGrad,
) -> PairGrad {
    let mut gp = PairGrad::default();
    match f {
        ProjFwd::Pos(f) => positional_vjp(p, &d.r[j], &d.t[j], f, at, g, &mut gp, &mut gd.r[j], &mut gd.t[j]),
        ProjFwd::Ang(f) => angular_vjp(p, &d.b[j], &d.a[j], f, at, g, &mut gp),
        ProjFwd::Lim(f) => limit_vjp(p, &d.b[j], &d.np[j], &d.nc[j], f, at, g, &mut gp),
        ProjFwd::Inactive => return gp,
    }
    let (a, b) = (model.joint_parent[j], model.joint_child[j]);
    gd.inv_mass[a] += gp.wa;
    gd.inv_mass[b] += gp.wb;
    gd.inv_inertia[a] += gp.ia;
    gd.inv_inertia[b] += gp.ib;
    gp
}

/// Reverse mode through one recorded step: accumulate into `g_s`, `g_u`, `g_theta`.
#[allow(clippy::too_many_arguments)]
pub fn step_vjp(
    model: &Model,
    opts: &XpbdOptions,
    d: &XpbdData<f64>,
    table: &torsion_model::ParamTable,
    rec: &XpbdRecord,
    g_out: &MaximalState,
    g_s: &mut MaximalState,
    g_u: &mut [f64],
    g_theta: &mut [f64],
    vs: &mut VjpScratch,
) {
    assert!(rec.valid, "step_vjp needs a record filled by step");
    let nb = model.body_count();
    let nsub = opts.substeps;
    let hf = rec.dt / nsub as f64;
    let at = opts.compliance / (hf * hf);
    vs.gd.clear();
    copy_state(g_out, &mut vs.cur);
    fill_constraints(model, opts, &mut vs.cons);
    for sub in (0..nsub).rev() {
        let sr = &rec.subs[sub];
        let st = &sr.start;
        // velocity update adjoint: (x, q) of the start and (x̄b, q̄b) of the projected poses
        for k in 0..nb {
            vs.gx[k] = Vec3::zeros();
            vs.gq[k] = Quat::zero();
            if model.body_fixed[k] {
                vs.cur.x[k] = Vec3::zeros();
                vs.cur.q[k] = Quat::zero();
                vs.cur.v[k] = Vec3::zeros();
                vs.cur.w[k] = Vec3::zeros();
                continue;
            }
            let (gx0, gq0, gxb, gqb) = velocity_update_vjp(&st.q[k], &sr.end_q[k], hf, &vs.cur.v[k], &vs.cur.w[k]);
            vs.gx[k] = vs.cur.x[k] + gxb;
            vs.gq[k] = vs.cur.q[k].add(&gqb);
            vs.cur.x[k] = gx0;
            vs.cur.q[k] = gq0;
            vs.cur.v[k] = Vec3::zeros();
            vs.cur.w[k] = Vec3::zeros();
        }
        for l in vs.gl.iter_mut() {
            *l = 0.0;
        }
        // projections in reverse
        match opts.ordering {
            Ordering::GaussSeidel => {
                for sn in sr.snaps.iter().rev() {
                    let j = sn.j as usize;
                    let (a, b) = (model.joint_parent[j], model.joint_child[j]);
                    let fa = model.body_fixed[a];
                    let li = 3 * j + sn.kind as usize;
                    let p = pair(d, fa, a, b, sn.xa, sn.qa, sn.xb, sn.qb);
                    // the forward kernel once; its intermediates feed the adjoint
                    let f = ProjFwd::eval(model, d, sn.kind, j, &p, sn.lam, at);
                    let c = f.corr(&p);
                    let mut g = CorrGrad { dxb: vs.gx[b], dl: vs.gl[li], ..Default::default() };
                    let (gqb, gdpb) = apply_dphi_vjp(&sn.qb, &c.dpb, &vs.gq[b]);
                    g.dpb = gdpb;
                    let mut gqa = Quat::zero();
                    if !fa {
                        g.dxa = vs.gx[a];
                        let (q_, gdpa) = apply_dphi_vjp(&sn.qa, &c.dpa, &vs.gq[a]);
                        g.dpa = gdpa;
                        gqa = q_;
                    }
                    let gp = project_vjp(model, d, j, &p, &f, at, &g, &mut vs.gd);
                    vs.gq[b] = gqb.add(&gp.qb);
                    vs.gx[b] += gp.xb;
                    if !fa {
                        vs.gq[a] = gqa.add(&gp.qa);
                        vs.gx[a] += gp.xa;
                    }
                    vs.gl[li] += gp.lam;
                }
            }
            Ordering::Jacobi => {
                let nl = 3 * model.joint_count();
                for it in (0..opts.iterations).rev() {
                    let xs = &sr.it_x[it * nb..(it + 1) * nb];
                    let qs = &sr.it_q[it * nb..(it + 1) * nb];
                    let ls = &sr.it_lam[it * nl..(it + 1) * nl];
                    // recompute this iteration's projections (once) and their summed corrections
                    for k in 0..nb {
                        vs.acc_p[k] = Vec3::zeros();
                    }
                    vs.fwd.clear();
                    for &Cons { kind, j, a, b, li, fa } in vs.cons.iter() {
                        let p = pair(d, fa, a, b, xs[a], qs[a], xs[b], qs[b]);
                        let f = ProjFwd::eval(model, d, kind, j, &p, ls[li], at);
                        if f.active() {
                            let c = f.corr(&p);
                            if !fa {
                                vs.acc_p[a] += c.dpa;
                            }
                            vs.acc_p[b] += c.dpb;
                        }
                        vs.fwd.push(f);
                    }
                    // adjoint of the per-body apply
                    for k in 0..nb {
                        vs.gacc_x[k] = Vec3::zeros();
                        vs.gacc_p[k] = Vec3::zeros();
                        if model.body_fixed[k] || vs.touch[k] == 0.0 {
                            continue;
                        }
                        let w = opts.jacobi_relaxation / vs.touch[k];
                        vs.gacc_x[k] = vs.gx[k] * w;
                        let (gq, gdp) = apply_dphi_vjp(&qs[k], &(vs.acc_p[k] * w), &vs.gq[k]);
                        vs.gq[k] = gq;
                        vs.gacc_p[k] = gdp * w;
                    }
                    // each constraint read the iteration-start poses
                    for (&Cons { j, a, b, li, fa, .. }, f) in vs.cons.iter().zip(vs.fwd.iter()) {
                        if !f.active() {
                            continue;
                        }
                        let p = pair(d, fa, a, b, xs[a], qs[a], xs[b], qs[b]);
                        let mut g =
                            CorrGrad { dxb: vs.gacc_x[b], dpb: vs.gacc_p[b], dl: vs.gl[li], ..Default::default() };
                        if !fa {
                            g.dxa = vs.gacc_x[a];
                            g.dpa = vs.gacc_p[a];
                        }
                        let gp = project_vjp(model, d, j, &p, f, at, &g, &mut vs.gd);
                        vs.gq[b] = vs.gq[b].add(&gp.qb);
                        vs.gx[b] += gp.xb;
                        if !fa {
                            vs.gq[a] = vs.gq[a].add(&gp.qa);
                            vs.gx[a] += gp.xa;
                        }
                        vs.gl[li] += gp.lam;
                    }
                }
            }
        }
        // prediction adjoint (the body torques recomputed from the recorded controls by the forward's code)
        body_torques(model, opts, d, st, &rec.u, &mut vs.tau);
        for k in 0..nb {
            vs.gtau[k] = Vec3::zeros();
            if model.body_fixed[k] {
                continue;
            }
            let pg =
                predict_vjp(&st.q[k], &st.w[k], &vs.tau[k], &d.inertia[k], &d.inv_inertia[k], hf, &vs.gx[k], &vs.gq[k]);
            vs.cur.x[k] += pg.x;
            vs.cur.q[k] = vs.cur.q[k].add(&pg.q);
            vs.cur.v[k] += pg.v;
            vs.cur.w[k] += pg.w;
            vs.gtau[k] = pg.tau;
            vs.gd.inertia[k] += pg.inertia;
            vs.gd.inv_inertia[k] += pg.inv_inertia;
        }
        // torque-map adjoint (§3.8) and spring (§3.11)
        for j in 0..model.joint_count() {
            if model.joint_type[j] != JointType::Revolute {
                continue;
            }
            let (p, c) = (model.joint_parent[j], model.joint_child[j]);
            let gtp = if model.body_fixed[p] { Vec3::zeros() } else { vs.gtau[p] };
            let tj = joint_drive(model, opts, d, st, &rec.u, j);
            let (gtj, gqp) = joint_torque_vjp(&st.q[p], &d.b[j], tj, &vs.gtau[c], &gtp);
            if !model.body_fixed[p] {
                vs.cur.q[p] = vs.cur.q[p].add(&gqp);
            }
            g_u[j] += gtj;
            if let (true, Some(sp), Some(prm)) = (opts.springs, model.joint_spring[j].as_ref(), d.spring[j].as_ref()) {
                let phi = angles::hinge_angle(&st.q[p], &st.q[c], &d.b[j], &d.np[j], &d.nc[j]);
                let gs = spring_torque_grad(phi, prm, sp.sign, sp.literal);
                for f in 0..6 {
                    vs.gd.spring[j][f] += gtj * gs[f + 1];
                }
                let (mut gqa, mut gqb) = (vs.cur.q[p], vs.cur.q[c]);
                angles::hinge_angle_vjp(
                    &st.q[p],
                    &st.q[c],
                    &d.b[j],
                    &d.np[j],
                    &d.nc[j],
                    gtj * gs[0],
                    &mut gqa,
                    &mut gqb,
                );
                if !model.body_fixed[p] {
                    vs.cur.q[p] = gqa;
                }
                vs.cur.q[c] = gqb;
            }
        }
    }
    for k in 0..nb {
        if model.body_fixed[k] {
            continue;
        }
        g_s.x[k] += vs.cur.x[k];
        g_s.q[k] = g_s.q[k].add(&vs.cur.q[k]);
        g_s.v[k] += vs.cur.v[k];
        g_s.w[k] += vs.cur.w[k];
    }
    vs.gd.accumulate_into_theta(d, table, g_theta);
}

#[cfg(test)]
mod tests {
    use crate::{DiffSolver, Solver, XpbdSolver};
    use torsion_diff::gradcheck;
    use torsion_model::builder::spinning_thick_arm;
    use torsion_model::{Control, MaximalState};

    /// step_vjp against central differences on the manifold (whole-step check; the per-kernel adjoints are
    /// tested beside their kernels, the 3-link / Baxter cases in tests/xpbd_*.rs).
    #[test]
    fn step_vjp_matches_central_differences() {
        let (m, s0) = spinning_thick_arm();
        let solver = XpbdSolver::default();
        let u = Control::from_torques(&[0.7, -0.3]);
        let mut ws = solver.workspace(&m).unwrap();
        let mut rec = solver.record(&m);
        let mut out = s0.clone();
        solver.step(&m, &s0, &u, 0.01, &mut out, &mut ws, Some(&mut rec)).unwrap();
        let w: Vec<f64> = (0..out.to_ambient().len()).map(|i| ((i * 37) % 11) as f64 / 5.0 - 1.0).collect();
        let mut g_s = solver.zero_grad(&m);
        let (mut g_u, mut g_th) = (vec![0.0; 2], vec![0.0; m.param_table().len()]);
        let all = torsion_model::ParamSelection::all(&m);
        solver
            .step_vjp(&m, &rec, &MaximalState::from_ambient(&w), &mut g_s, &mut g_u, &all, &mut g_th, &mut ws)
            .unwrap();
        let f = |s: &MaximalState| {
            let mut o = s.clone();
            let mut ws = solver.workspace(&m).unwrap();
            solver.step(&m, s, &u, 0.01, &mut o, &mut ws, None).unwrap();
            o.to_ambient().iter().zip(&w).map(|(a, b)| a * b).sum::<f64>()
        };
        // strongly curved (gradients ~100): central differences converge as h² (9e-5, 8e-6, 8e-8 at 1e-5..1e-7)
        let c = gradcheck(|d| f(&solver.retract(&m, &s0, d)), &solver.grad_to_tangent(&m, &s0, &g_s), 1e-7);
        assert!(c.max_rel_err < 1e-6, "{:e}", c.max_rel_err);
    }
}
