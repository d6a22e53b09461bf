//! Spec 003 §3.6's linear contact model (with the fixes I3–I6) for rods: capsule / cylinder geoms of loose free
//! bodies (or of fixed bodies: static rods) against planes and against each other, generic over the scalar so
//! that duals flow through the contact points, depths, normals and the 5 parameters (β, e, γ, μ, ε).
//!
//! Detection (at q): a rod is its segment and radius (a cylinder is treated as a capsule); each end cap against
//! each plane (both ends can touch), signed distance d = n·x_end − offset − R (negative = penetration, I3),
//! contact point x_end − R n; rod–rod by the segments' closest points (parallel segments: s = 0), d = |δ| − R₁ − R₂,
//! n = δ/|δ| from rod 1 to rod 2 (|δ| → 0: n ⟂ both axes), point in the middle of the overlap. Pairs follow
//! MuJoCo's contype / conaffinity and `Model::contact_exclude`; shapes with contype = conaffinity = 0 are ignored.
//! A contact acts when its distance predicted one step ahead is negative, d + Δt v·n < 0 (§6 item 7; d < 0 alone
//! chatters at rest, see [`active`]); a non-smooth point (docs/gradients.md). A broad phase ([`RodBound`]: lower
//! bounds on the distances from the rods' midpoints and axes, upper bounds on their points' speeds) skips the pairs
//! that cannot pass that test this step, so the same contacts act.
//!
//! Response (forces held for one step, I5) from the velocity v passed in — the Featherstone step passes the
//! velocity it reaches without contact, v̂ = v + h q̈ (§6 item 7: so the cables' explicit forces are not corrected
//! twice) — with the relative point velocity v (2 minus 1), arms r_i = x_c − p_i and
//! K(x) = Σ m_i⁻¹ |x|² + (r_i × x)·I_i⁻¹ (r_i × x) (world inverse inertia):
//! j = max(0, (−β d/Δt² − (1+e) v·n/Δt)/K(n)) (no adhesion pull, I6); sliding
//! f_s = −(1−γ) v_t/(Δt K(t)) (t = −v_t/|v_t|), scaled to μ j when longer (eq 4's hard switch); K(t) is taken as
//! (v_tᵀ W v_t + ν² K(n))/(|v_t|² + ν²), ν = [`SLIP_GUARD`], so v_t → 0 gives no NaN in value or derivative.
//! The force j n + f_s acts on body 2 at x_c, its opposite on body 1. Once per rod in contact (§6 item 10):
//! τ_f = (ε − 1) I (ω̃·z) z/Δt about its axis z (I4: I, not I⁻¹), ω̃ = ω + Δt I⁻¹ τ_contact the spin after this
//! step's contact impulses, so that ω'·z = ε ω̃·z with friction acting too (with ω alone the two corrections add
//! up and ring). The wrenches enter τ through the cables' backward sweep (`data::wrenches_to_tau`).
use crate::data::{body_velocities, wrenches_to_tau, DynError};
use crate::{DynData, DynModel};
use nalgebra::Matrix3;
use torsion_math::scalar::cv;
use torsion_math::spatial::{ang, lin, stack, V6};
use torsion_math::{Scalar, Vec3};
use torsion_model::{JointType, Model, ParamKind, ParamTable, ShapeKind};

/// Slip speed (m/s) below which the friction direction's effective mass blends into K(n) (no NaN at v_t = 0).
pub const SLIP_GUARD: f64 = 1e-9;
/// Segment distance below which two rods' normal is taken from their axes (no NaN when the segments cross).
const MIN_SEPARATION: f64 = 1e-12;

/// A rod: the segment (body COM frame) and radius of a capsule / cylinder geom.
#[derive(Clone, Debug)]
pub struct Rod {
    pub body: usize,
    pub shape: usize,
    pub ends: [Vec3; 2],
    /// unit axis in the body frame (the rod's z)
    pub axis: Vec3,
    pub radius: f64,
    /// the segment's midpoint (body frame) and half length: the broad phase's bounding sphere has radius
    /// half length + radius
    pub center: Vec3,
    pub half_length: f64,
    /// the capsule's farthest point from the body origin, max |end| + radius (the broad phase's speed bound)
    pub reach: f64,
    /// on a fixed body: static (infinite mass)
    pub fixed: bool,
}

/// A plane geom of a fixed body, in the world: {x : n·x = offset}, n its +z.
#[derive(Clone, Debug)]
pub struct Plane {
    pub shape: usize,
    pub body: usize,
    pub normal: Vec3,
    pub offset: f64,
}

/// The model's rods, planes, candidate pairs and the 5 parameters on the scalar (part of `DynModel`).
#[derive(Clone, Debug)]
pub struct LinearContactTerm<T: Scalar> {
    pub rods: Vec<Rod>,
    pub planes: Vec<Plane>,
    /// (plane, rod) and (rod, rod) pairs that may touch
    pub plane_rod: Vec<(usize, usize)>,
    pub rod_rod: Vec<(usize, usize)>,
    /// β, e, γ, μ, ε (`tendon::LINEAR_CONTACT_NAMES`)
    pub param: [T; 5],
}

impl<T: Scalar> LinearContactTerm<T> {
    /// From the model (None when `Model::tensegrity_contact` is off), the parameters then overridden by θ's
    /// `contact_*` entries. Errors name the shape or body the model cannot have under this contact model.
    pub fn build(model: &Model, table: &ParamTable, theta: &[T]) -> Result<Option<Self>, DynError> {
        let Some(lc) = model.tensegrity_contact else { return Ok(None) };
        let bad = |m: String| DynError::Unsupported(format!("linear contact (spec 003 §3.6): {m}"));
        let (mut rods, mut planes) = (vec![], vec![]);
        for (k, s) in model.shapes.iter().enumerate() {
            if s.contype == 0 && s.conaffinity == 0 {
                continue;
            }
            let b = s.body;
            let (x, q) = s.pose;
            match s.kind {
                ShapeKind::Capsule { radius, half_length } | ShapeKind::Cylinder { radius, half_length } => {
                    if half_length <= 0.0 {
                        return Err(bad(format!("rod geom '{}' has zero length", s.name)));
                    }
                    let fixed = model.body_fixed[b];
                    let loose = (0..model.joint_count()).any(|j| {
                        model.joint_child[j] == b
                            && model.joint_type[j] == JointType::Free
                            && model.body_fixed[model.joint_parent[j]]
                    }) && !model.joint_parent.contains(&b);
                    if !fixed && !loose {
                        return Err(bad(format!(
                            "rod geom '{}' is on body '{}', which is not a loose free body (rods are free joints \
                             of the world)",
                            s.name, model.body_name[b]
                        )));
                    }
                    let axis = q.rotate(&Vec3::z());
                    let ends = [x - axis * half_length, x + axis * half_length];
                    rods.push(Rod {
                        body: b,
                        shape: k,
                        ends,
                        axis,
                        radius,
                        center: x,
                        half_length,
                        reach: ends[0].norm().max(ends[1].norm()) + radius,
                        fixed,
                    });
                }
                ShapeKind::Plane { .. } => {
                    if !model.body_fixed[b] {
                        return Err(bad(format!("plane geom '{}' must be on a fixed body", s.name)));
                    }
                    let (pb, qb) = model.body_pose0[b];
                    let normal = qb.rotate(&q.rotate(&Vec3::z()));
                    let p0 = pb + qb.rotate(&x);
                    planes.push(Plane { shape: k, body: b, normal, offset: normal.dot(&p0) });
                }
                ref other => {
                    return Err(bad(format!(
                        "geom '{}' is a {other:?}: only capsule / cylinder rods and planes collide (set its contype \
                         and conaffinity to 0 to keep it visual)",
                        s.name
                    )))
                }
            }
        }
        let collide = |a: usize, b: usize| {
            let (sa, sb) = (&model.shapes[a], &model.shapes[b]);
            let (ba, bb) = (sa.body, sb.body);
            (sa.contype & sb.conaffinity != 0 || sb.contype & sa.conaffinity != 0)
                && ba != bb
                && !(model.body_fixed[ba] && model.body_fixed[bb])
                && !model.contact_exclude.iter().any(|&(x, y)| (x, y) == (ba, bb) || (y, x) == (ba, bb))
        };
        let mut plane_rod = vec![];
        for (pi, p) in planes.iter().enumerate() {
            for (ri, r) in rods.iter().enumerate() {
                if collide(p.shape, r.shape) {
                    plane_rod.push((pi, ri));
                }
            }
        }
        let mut rod_rod = vec![];
        for i in 0..rods.len() {
            for j in i + 1..rods.len() {
                if collide(rods[i].shape, rods[j].shape) {
                    rod_rod.push((i, j));
                }
            }
        }
        let mut param = [0, 1, 2, 3, 4].map(|k| T::c(lc.get(k)));
        for (i, k) in table.kinds.iter().enumerate() {
            if let ParamKind::LinearContact(c) = *k {
                param[c] = theta[i];
            }
        }
        Ok(Some(LinearContactTerm { rods, planes, plane_rod, rod_rod, param }))
    }

    /// The same on another scalar (constants lifted, zero tangents).
    pub fn lift<U: Scalar>(&self) -> LinearContactTerm<U> {
        LinearContactTerm {
            rods: self.rods.clone(),
            planes: self.planes.clone(),
            plane_rod: self.plane_rod.clone(),
            rod_rod: self.rod_rod.clone(),
            param: self.param.map(|x| U::c(x.re())),
        }
    }

    /// Copy the model's current parameter values (a stepper's per-step refresh; no allocation).
    pub fn set_params(&mut self, lc: &torsion_model::LinearContact) {
        self.param = [0, 1, 2, 3, 4].map(|k| T::c(lc.get(k)));
    }
}

/// One candidate contact of the linear model at the current kinematics: from body 1 to body 2 (the normal points
/// from 1 to 2; body 1 of a plane–rod contact is the plane's), the rods involved (`None` for the plane), the world
/// contact point, unit normal and signed distance (negative = penetration).
#[derive(Clone, Debug)]
pub struct RodContact<T: Scalar> {
    pub bodies: [usize; 2],
    pub rods: [Option<usize>; 2],
    pub point: Vec3<T>,
    pub normal: Vec3<T>,
    pub depth: T,
}

impl<T: Scalar> LinearContactTerm<T> {
    /// Contact slots, in the order the force kernel visits them: two per (plane, rod) pair (the rod's ends), then
    /// one per rod pair. A slot's identity persists across steps (the contact networks' "steps in contact").
    pub fn n_slots(&self) -> usize {
        2 * self.plane_rod.len() + self.rod_rod.len()
    }

    /// Slot `k`'s geometry at `d`'s kinematics (`d.o_m`): plane–rod, the end cap's signed distance
    /// n·x_end − offset − R at the point x_end − R n; rod–rod, the segments' closest points, d = |δ| − R₁ − R₂ and
    /// the point in the middle of the overlap (module docs).
    pub fn slot_geometry(&self, d: &DynData<T>, k: usize) -> RodContact<T> {
        if k < 2 * self.plane_rod.len() {
            let (pi, ri) = self.plane_rod[k / 2];
            let (pl, rod) = (&self.planes[pi], &self.rods[ri]);
            let n: Vec3<T> = cv(&pl.normal);
            let x = d.o_m[rod.body].act_point(&cv(&rod.ends[k % 2]));
            let depth = n.dot(&x) - T::c(pl.offset + rod.radius);
            let point = x - n * T::c(rod.radius);
            return RodContact { bodies: [pl.body, rod.body], rods: [None, Some(ri)], point, normal: n, depth };
        }
        let (i, j) = self.rod_rod[k - 2 * self.plane_rod.len()];
        let (r1, r2) = (&self.rods[i], &self.rods[j]);
        let end = |r: &Rod, e: usize| d.o_m[r.body].act_point(&cv(&r.ends[e]));
        let (a1, b1, a2, b2) = (end(r1, 0), end(r1, 1), end(r2, 0), end(r2, 1));
        let (s, t) = segment_closest(&a1, &b1, &a2, &b2);
        let c1 = a1 + (b1 - a1) * s;
        let delta = (a2 + (b2 - a2) * t) - c1;
        let (dist2, rr) = (delta.dot(&delta), r1.radius + r2.radius);
        let n = if dist2.re() > MIN_SEPARATION * MIN_SEPARATION {
            delta / dist2.sqrt()
        } else {
            crossing_normal(&(b1 - a1), &(b2 - a2))
        };
        let depth = n.dot(&delta) - T::c(rr);
        let point = c1 + n * (T::c(r1.radius) + depth * T::c(0.5));
        RodContact { bodies: [r1.body, r2.body], rods: [Some(i), Some(j)], point, normal: n, depth }
    }
}

/// One body's world pose and velocity, and its inverse mass / body-frame inverse inertia (zero when fixed).
pub(crate) struct BodyState<T: Scalar> {
    pub(crate) rot: Matrix3<T>,
    pub(crate) pos: Vec3<T>,
    pub(crate) w: Vec3<T>,
    pub(crate) v: Vec3<T>,
    inv_m: T,
    inv_i: Matrix3<T>,
}

impl<T: Scalar> BodyState<T> {
    pub(crate) fn of(dm: &DynModel<T>, d: &DynData<T>, b: usize) -> Self {
        let x = &d.o_m[b];
        let (rot, pos) = (x.rot, x.pos);
        if dm.root_pose[b].is_some() {
            let z = Vec3::zeros();
            return BodyState { rot, pos, w: z, v: z, inv_m: T::zero(), inv_i: Matrix3::zeros() };
        }
        let ib: Matrix3<T> = dm.inertia[b].fixed_view::<3, 3>(0, 0).into_owned();
        let inv_i = ib.try_inverse().unwrap_or_else(Matrix3::zeros);
        let m = dm.inertia[b][(3, 3)];
        let inv_m = if m.re() > 0.0 { T::one() / m } else { T::zero() };
        BodyState { rot, pos, w: rot * ang(&d.vel[b]), v: rot * lin(&d.vel[b]), inv_m, inv_i }
    }
    /// World velocity of the world point x.
    pub(crate) fn point_vel(&self, x: &Vec3<T>) -> Vec3<T> {
        self.v + self.w.cross(&(x - self.pos))
    }
    /// xᵀ W x for the world point x_c and world direction x: m⁻¹|x|² + (r × x)·I⁻¹(r × x).
    fn quad(&self, xc: &Vec3<T>, x: &Vec3<T>) -> T {
        let rx = self.rot.transpose() * (xc - self.pos).cross(x);
        self.inv_m * x.dot(x) + rx.dot(&(self.inv_i * rx))
    }
}

fn clamp01<T: Scalar>(x: T) -> T {
    if x.re() < 0.0 {
        T::zero()
    } else if x.re() > 1.0 {
        T::one()
    } else {
        x
    }
}

/// Closest points of the segments a1–b1 and a2–b2 (Ericson, Real-Time Collision Detection §5.1.9): parameters
/// (s, t) in [0, 1]; parallel segments take s = 0.
fn segment_closest<T: Scalar>(a1: &Vec3<T>, b1: &Vec3<T>, a2: &Vec3<T>, b2: &Vec3<T>) -> (T, T) {
    let (d1, d2, r) = (b1 - a1, b2 - a2, a1 - a2);
    let (a, e, f) = (d1.dot(&d1), d2.dot(&d2), d2.dot(&r));
    let (b, c) = (d1.dot(&d2), d1.dot(&r));
    let denom = a * e - b * b;
    let mut s = if denom.re() > 1e-12 * a.re() * e.re() { clamp01((b * f - c * e) / denom) } else { T::zero() };
    let mut t = (b * s + f) / e;
    if t.re() < 0.0 {
        t = T::zero();
        s = clamp01(-c / a);
    } else if t.re() > 1.0 {
        t = T::one();
        s = clamp01((b - c) / a);
    }
    (s, t)
}

/// A unit vector ⟂ to both axes (crossing segments), or ⟂ to the first when they are parallel.
fn crossing_normal<T: Scalar>(d1: &Vec3<T>, d2: &Vec3<T>) -> Vec3<T> {
    let c = d1.cross(d2);
    if c.norm().re() > 1e-9 * d1.norm().re() * d2.norm().re() {
        return c.normalize();
    }
    let p = if d1.x.re().abs() < 0.9 * d1.norm().re() { Vec3::x() } else { Vec3::y() };
    d1.cross(&p).normalize()
}

/// The contact's force on body 2 (world; −it on body 1): reaction and capped sliding friction.
fn contact_force<T: Scalar>(
    p: &[T; 5],
    h: f64,
    b1: &BodyState<T>,
    b2: &BodyState<T>,
    xc: &Vec3<T>,
    n: &Vec3<T>,
    depth: T,
) -> Vec3<T> {
    let [beta, e, gamma, mu, _] = *p;
    let h = T::c(h);
    let vrel = b2.point_vel(xc) - b1.point_vel(xc);
    let vn = vrel.dot(n);
    let kn = b1.quad(xc, n) + b2.quad(xc, n);
    let mut j = (-beta * depth / (h * h) - (T::one() + e) * vn / h) / kn;
    if j.re() < 0.0 {
        j = T::zero();
    }
    let vt = vrel - n * vn;
    let nu2 = T::c(SLIP_GUARD * SLIP_GUARD);
    let kt = (b1.quad(xc, &vt) + b2.quad(xc, &vt) + kn * nu2) / (vt.dot(&vt) + nu2);
    let mut fs = vt * (-(T::one() - gamma) / (h * kt));
    let (fs2, cap) = (fs.dot(&fs), mu * j);
    if fs2.re() > (cap * cap).re() {
        fs *= cap / fs2.sqrt();
    }
    n * j + fs
}

/// τ += Jᵀ (contact wrenches) of the linear contact model `lc` (`dm.tensegrity_contact`) at (q, v): the kernel of
/// [`linear_contact_accel_into`]. Uses `d`'s kinematics and force scratch; no heap allocation.
fn linear_contact_forces_into<T: Scalar>(
    dm: &DynModel<T>,
    lc: &LinearContactTerm<T>,
    q: &[T],
    v: &[T],
    dt: f64,
    d: &mut DynData<T>,
    tau: &mut [T],
) -> Result<(), DynError> {
    dm.check_q(q)?;
    dm.check_v("v", v)?;
    if d.rod_contact.len() != lc.rods.len() {
        return Err(DynError::Shape { what: "DynData (rods)", got: d.rod_contact.len(), expected: lc.rods.len() });
    }
    crate::fk::forward_kinematics(dm, q, d);
    for k in 0..dm.nb {
        d.vel[k] = V6::zeros();
        d.f[k] = V6::zeros();
    }
    body_velocities(dm, d, v);
    d.rod_contact.iter_mut().for_each(|c| *c = false);
    for (ri, rod) in lc.rods.iter().enumerate() {
        d.rod_bound[ri] = RodBound::of(rod, d);
    }
    let np = 2 * lc.plane_rod.len();
    let mut plane_far = false;
    for k in 0..lc.n_slots() {
        // broad phase: skip a pair whose bounding spheres cannot make a slot active this step
        let far = if k >= np {
            let (i, j) = lc.rod_rod[k - np];
            RodBound::apart(&d.rod_bound[i], &d.rod_bound[j], dt)
        } else {
            if k % 2 == 0 {
                let (pi, ri) = lc.plane_rod[k / 2];
                plane_far = d.rod_bound[ri].above(&lc.planes[pi], dt);
            }
            plane_far
        };
        if far {
            continue;
        }
        let c = lc.slot_geometry(d, k);
        if !active(d, &c.bodies, &c.point, &c.normal, c.depth, dt) {
            continue;
        }
        let [b1, b2] = c.bodies;
        let (s1, s2) = (BodyState::of(dm, d, b1), BodyState::of(dm, d, b2));
        let f = contact_force(&lc.param, dt, &s1, &s2, &c.point, &c.normal, c.depth);
        apply(dm, d, &s2, b2, &c.point, &f);
        if c.rods[0].is_some() {
            apply(dm, d, &s1, b1, &c.point, &(-f));
        }
        for r in c.rods.into_iter().flatten() {
            d.rod_contact[r] = true;
        }
    }
    // torsional / rolling damping about the rod axis, once per rod in contact (spec 003 eq 5 with I4)
    let k_eps = (lc.param[4] - T::one()) / T::c(dt);
    for (ri, rod) in lc.rods.iter().enumerate() {
        if !d.rod_contact[ri] || rod.fixed {
            continue;
        }
        let b = rod.body;
        let z: Vec3<T> = cv(&rod.axis);
        let ib: Matrix3<T> = dm.inertia[b].fixed_view::<3, 3>(0, 0).into_owned();
        // the spin after this step's contact impulses (body frame), so that ω'·z = ε ω·z holds with them
        let inv_ib = ib.try_inverse().unwrap_or_else(Matrix3::zeros);
        let w = ang(&d.vel[b]) + inv_ib * ang(&d.f[b]) * T::c(dt);
        let tz = ib * z * (w.dot(&z) * k_eps);
        d.f[b] += stack(&tz, &Vec3::zeros());
    }
    wrenches_to_tau(dm, d, tau);
    Ok(())
}

/// Whether a contact acts this step: its signed distance predicted one step ahead from the velocity `d.vel`,
/// d + Δt v·n, is negative (spec 003 §6 item 7: detected at t + 1 too; at rest under load the bias drives d to
/// 0⁻, where an activation at d < 0 would chatter). Non-smooth point (docs/gradients.md).
pub(crate) fn active<T: Scalar>(
    d: &DynData<T>,
    bodies: &[usize; 2],
    xc: &Vec3<T>,
    n: &Vec3<T>,
    depth: T,
    dt: f64,
) -> bool {
    let vel = |b: usize| {
        let (x, v) = (&d.o_m[b], &d.vel[b]);
        x.rot * (lin(v) + ang(v).cross(&(x.rot.transpose() * (xc - x.pos))))
    };
    let vn = (vel(bodies[1]) - vel(bodies[0])).dot(n);
    (depth + vn * T::c(dt)).re() < 0.0
}

/// Distance (m) by which a pair must clear [`active`]'s test in the broad phase (round-off of the exact tests).
const BROAD_MARGIN: f64 = 1e-9;

/// A rod's broad-phase bound at the current kinematics and velocity (primal values): its segment's world midpoint,
/// unit axis, half length and radius, and bounds on its points' speeds: a point at distance reach + δ from the body
/// origin moves at most at `speed` + `spin` δ (speed = |v| + |ω| reach, spin = |ω|).
#[derive(Clone, Copy, Debug, Default)]
pub struct RodBound {
    pub center: Vec3,
    pub axis: Vec3,
    pub half_length: f64,
    pub radius: f64,
    pub speed: f64,
    pub spin: f64,
}

impl RodBound {
    pub(crate) fn of<T: Scalar>(rod: &Rod, d: &DynData<T>) -> Self {
        let (x, vb) = (&d.o_m[rod.body], &d.vel[rod.body]);
        let re = |v: Vec3<T>| v.map(|c| c.re());
        let rot = x.rot.map(|c| c.re());
        let spin = re(ang(vb)).norm();
        RodBound {
            center: rot * rod.center + re(x.pos),
            axis: rot * rod.axis,
            half_length: rod.half_length,
            radius: rod.radius,
            speed: re(lin(vb)).norm() + spin * rod.reach,
            spin,
        }
    }

    /// A lower bound on the two segments' distance: the larger of the bounding spheres' gap
    /// |c₁ − c₂| − ℓ₁ − ℓ₂ (ℓ half lengths) and the distance of segment 2 from line 1,
    /// |(c₂ − c₁) × a₁| − ℓ₂ |a₁ × a₂| (exact for parallel rods), and of the infinite lines' distance
    /// |(c₂ − c₁)·(a₁ × a₂)| / |a₁ × a₂| (crossing rods).
    pub fn segment_gap(a: &RodBound, b: &RodBound) -> f64 {
        let dc = b.center - a.center;
        let sphere = dc.norm() - a.half_length - b.half_length;
        let cr = a.axis.cross(&b.axis);
        let s = cr.norm();
        let from_line = dc.cross(&a.axis).norm() - b.half_length * s;
        let lines = if s > 1e-6 { dc.dot(&cr).abs() / s } else { 0.0 };
        sphere.max(from_line).max(lines)
    }

    /// No slot of this rod pair can be [`active`]: the capsules' distance is at least
    /// g = [`RodBound::segment_gap`] − r₁ − r₂; the contact point lies r_i + depth/2 from each segment, so
    /// |v_n| ≤ S + W depth/2 (S, W the sums of `speed`, `spin`) and depth + Δt v_n ≥ g (1 − Δt W/2) − Δt S > 0
    /// suffices.
    pub fn apart(a: &RodBound, b: &RodBound, dt: f64) -> bool {
        let gap = Self::segment_gap(a, b) - a.radius - b.radius;
        gap > 0.0 && gap * (1.0 - 0.5 * dt * (a.spin + b.spin)) - dt * (a.speed + b.speed) > BROAD_MARGIN
    }

    /// Neither end cap of this rod can be [`active`] against the plane: each cap's distance is at least
    /// n·c − offset − ℓ|n·a| − r and its contact point (within `reach` of the origin) moves at most at `speed`.
    pub fn above(&self, p: &Plane, dt: f64) -> bool {
        let low = p.normal.dot(&self.center) - self.half_length * p.normal.dot(&self.axis).abs();
        low - p.offset - self.radius - dt * self.speed > BROAD_MARGIN
    }
}

/// The contact's share of the Featherstone step (spec 003 §6 item 7), after the contact-free ABA left q̈(τ) in
/// `acc` and its factorization of M̃ in `d` (same q and armature): the forces τ_c of
/// `linear_contact_forces_into` from the velocity without contact v̂ = v + h q̈(τ), then q̈ += M̃⁻¹ τ_c from that
/// factorization (`aba::aba_solve_factored_into`; ABA is linear in τ, so this is ABA(τ + τ_c) without a second
/// ABA) and τ += τ_c. Nothing when the model is off; no heap allocation.
pub fn linear_contact_accel_into<T: Scalar>(
    dm: &DynModel<T>,
    q: &[T],
    v: &[T],
    dt: f64,
    d: &mut DynData<T>,
    tau: &mut [T],
    acc: &mut [T],
) -> Result<(), DynError> {
    let Some(lc) = &dm.tensegrity_contact else { return Ok(()) };
    dm.check_v("acc", acc)?;
    dm.check_v("tau", tau)?;
    let (mut vh, mut tc) = (std::mem::take(&mut d.contact_v), std::mem::take(&mut d.contact_tau));
    if vh.len() != dm.nv || tc.len() != dm.nv {
        return Err(DynError::Shape { what: "DynData (contact scratch)", got: vh.len(), expected: dm.nv });
    }
    let h = T::c(dt);
    for k in 0..dm.nv {
        vh[k] = v[k] + acc[k] * h;
        tc[k] = T::zero();
    }
    let res = linear_contact_forces_into(dm, lc, q, &vh, dt, d, &mut tc)
        .and_then(|_| crate::aba::aba_solve_factored_into(dm, d, &tc, &mut vh));
    if res.is_ok() {
        for k in 0..dm.nv {
            acc[k] += vh[k];
            tau[k] += tc[k];
        }
    }
    (d.contact_v, d.contact_tau) = (vh, tc);
    res
}

/// d.f[b] += the body wrench of the world force f at the world point x (skipped for fixed bodies).
fn apply<T: Scalar>(dm: &DynModel<T>, d: &mut DynData<T>, s: &BodyState<T>, b: usize, x: &Vec3<T>, f: &Vec3<T>) {
    if dm.root_pose[b].is_some() {
        return;
    }
    let rt = s.rot.transpose();
    let (fb, rb) = (rt * f, rt * (x - s.pos));
    d.f[b] += stack(&rb.cross(&fb), &fb);
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_dual::Dual64;
    use torsion_diff::{fd_jacobian, rel_err};

    /// Two free rods (R = 0.05, half-length 0.5) and a floor, β e γ μ ε = 0.4 0.3 0.6 0.05 0.005: rod a tilted
    /// 30° with its lower cap 2 mm in the floor, rod b along y crossing it 3 mm deep.
    fn scene(extra_b: &str) -> Model {
        let xml = format!(
            r#"<mujoco><option timestep="0.001"/><worldbody><geom name="floor" type="plane" size="5 5 0.1"/>
            <body name="a" pos="0 0 0.481" quat="0.96592583 0 0.25881905 0"><freejoint/>
              <geom name="a" type="capsule" fromto="0 0 -0.5 0 0 0.5" size="0.05" mass="2"/></body>
            <body name="b" pos="0.20900 0.1 0.64900" quat="0.70710678 -0.70710678 0 0"><freejoint/>
              <geom name="b" type="capsule" fromto="0 0 -0.5 0 0 0.5" size="0.05" mass="3" {extra_b}/></body>
            </worldbody><custom><numeric name="torsion_linear_contact" data="0.4 0.3 0.6 0.05 0.005"/></custom>
            </mujoco>"#
        );
        torsion_model::io::mjcf::load_mjcf_str(&xml, "rods.xml", None).unwrap()
    }

    fn tau<T: Scalar>(dm: &DynModel<T>, q: &[T], v: &[T]) -> (Vec<T>, Vec<bool>) {
        let mut d = DynData::new(dm);
        let mut t = vec![T::zero(); dm.nv];
        if let Some(lc) = &dm.tensegrity_contact {
            linear_contact_forces_into(dm, lc, q, v, 1e-3, &mut d, &mut t).unwrap();
        }
        (t, d.rod_contact.clone())
    }

    /// τ(q, v, θ) by the dual pass of this kernel against central differences: every q, v entry and the 5
    /// parameters, with the ground, rod–rod, friction (below and at the Coulomb cap) and spin terms active.
    #[test]
    fn contact_forces_match_central_differences() {
        let m = scene("");
        let q = m.qpos0.clone();
        let table = m.param_table();
        let theta = m.param_vector();
        let lift = |x: &[f64]| x.iter().map(|&v| Dual64::from(v)).collect::<Vec<_>>();
        let dm: DynModel<f64> = DynModel::from_model(&m).unwrap();
        for (case, v) in [
            ("slip", vec![0.3, -0.2, 0.5, 2.5, 1.5, -0.3, -0.2, 0.4, 0.1, -2.0, 1.5, 0.3]),
            ("stick", vec![0.0, 0.0, 0.05, 0.002, 0.001, -0.01, 0.0, 0.0, 0.02, 0.001, -0.001, 0.002]),
        ] {
            let (t0, on) = tau(&dm, &q, &v);
            assert_eq!(on, vec![true, true], "{case}: both rods in contact");
            assert_eq!(dm.tensegrity_contact.as_ref().unwrap().plane_rod.len(), 2);
            let (nq, nv) = (m.nq(), m.nv());
            // duals: q, v columns on the f64 model lifted; θ columns with the parameter's tangent
            let dmd: DynModel<Dual64> = dm.lift();
            let mut cols = vec![];
            for k in 0..nq + nv {
                let (mut qd, mut vd) = (lift(&q), lift(&v));
                if k < nq {
                    qd[k].eps = 1.0
                } else {
                    vd[k - nq].eps = 1.0
                }
                cols.push(tau(&dmd, &qd, &vd).0.iter().map(|x| x.eps).collect::<Vec<_>>());
            }
            let first = table.kinds.iter().position(|k| k.is_linear_contact()).unwrap();
            for c in 0..5 {
                let mut th = lift(&theta);
                th[first + c].eps = 1.0;
                let dmc: DynModel<Dual64> = DynModel::build(&m, &table, &th).unwrap();
                cols.push(tau(&dmc, &lift(&q), &lift(&v)).0.iter().map(|x| x.eps).collect());
            }
            let an = nalgebra::DMatrix::from_fn(nv, nq + nv + 5, |r, c| cols[c][r]);
            let fd = fd_jacobian(
                |d| {
                    let qq: Vec<f64> = q.iter().zip(d).map(|(a, b)| a + b).collect();
                    let vv: Vec<f64> = v.iter().zip(&d[nq..]).map(|(a, b)| a + b).collect();
                    let mut mm = m.clone();
                    let lc = mm.tensegrity_contact.as_mut().unwrap();
                    for c in 0..5 {
                        lc.set(c, lc.get(c) + d[nq + nv + c]);
                    }
                    tau(&DynModel::from_model(&mm).unwrap(), &qq, &vv).0
                },
                nq + nv + 5,
                1e-7,
            );
            let err = rel_err(an.as_slice(), fd.as_slice());
            let per_block = [(0, nq), (nq, nv), (nq + nv, 5)].map(|(c, n)| {
                rel_err(an.columns(c, n).into_owned().as_slice(), fd.columns(c, n).into_owned().as_slice())
            });
            eprintln!("{case}: τ {:?}, duals vs FD {err:.1e} (q, v, θ: {per_block:?})", &t0[..3]);
            assert!(err < 1e-6 && per_block.iter().all(|&e| e < 1e-6), "{case}: {err:e} {per_block:?}");
            assert!(an.columns(nq + nv, 5).iter().all(|x| x.is_finite()));
            // μ matters only at the Coulomb cap: slipping contacts there, sticking ones below it
            let mu_col = an.column(nq + nv + 3).amax();
            assert_eq!(mu_col > 0.0, case == "slip", "{case}: ∂τ/∂μ {mu_col}");
        }
    }

    /// Zero slip (v_t = 0 exactly at every contact: the bodies at rest, penetrating): finite forces and
    /// derivatives, no NaN (the guard `SLIP_GUARD`); and a crossing (|δ| = 0) rod pair gives a finite normal.
    #[test]
    fn zero_slip_and_crossing_rods_give_no_nan() {
        let m = scene("");
        let dm: DynModel<f64> = DynModel::from_model(&m).unwrap();
        let v = vec![0.0; m.nv()];
        let lift = |x: &[f64]| x.iter().map(|&v| Dual64::from(v)).collect::<Vec<_>>();
        for k in 0..m.nv() {
            let mut vd = lift(&v);
            vd[k].eps = 1.0;
            let (t, _) = tau(&dm.lift::<Dual64>(), &lift(&m.qpos0), &vd);
            assert!(t.iter().all(|x| x.re.is_finite() && x.eps.is_finite()), "column {k}: {t:?}");
        }
        // rod b moved onto rod a's axis: the segments intersect
        let mut q = m.qpos0.clone();
        let (a_mid, _) = (Vec3::new(0.125, 0.0, 0.481 + 0.25 * 0.866_025_403_784_438_6), 0);
        q[7..10].copy_from_slice(&[a_mid.x, a_mid.y, a_mid.z]);
        let (t, on) = tau(&dm, &q, &v);
        assert!(on[1] && t.iter().all(|x| x.is_finite()), "{t:?}");
    }

    /// `linear_contact_accel_into` (one ABA, then M̃⁻¹ τ_c from its factorization) equals the two-ABA form it
    /// replaced (ABA(τ) for v̂, the forces, ABA(τ + τ_c)) to round-off, on f64 and on duals (v columns), in slip
    /// with every contact kind active.
    #[test]
    fn contact_accel_equals_a_second_aba() {
        let m = scene("");
        let q = m.qpos0.clone();
        let v = vec![0.3, -0.2, 0.5, 2.5, 1.5, -0.3, -0.2, 0.4, 0.1, -2.0, 1.5, 0.3];
        let tau0: Vec<f64> = (0..m.nv()).map(|k| 3.0 * ((k as f64) - 5.5)).collect();
        let h = 1e-3;
        fn both<T: Scalar>(dm: &DynModel<T>, q: &[T], v: &[T], tau0: &[T], h: f64) -> [Vec<T>; 2] {
            let mut d = DynData::new(dm);
            let nv = dm.nv;
            // the two-ABA reference
            let mut acc = vec![T::zero(); nv];
            crate::aba::aba_into(dm, q, v, tau0, &mut d, &mut acc).unwrap();
            let vh: Vec<T> = (0..nv).map(|k| v[k] + acc[k] * T::c(h)).collect();
            let mut tau = tau0.to_vec();
            linear_contact_forces_into(dm, dm.tensegrity_contact.as_ref().unwrap(), q, &vh, h, &mut d, &mut tau)
                .unwrap();
            let mut reference = vec![T::zero(); nv];
            crate::aba::aba_into(dm, q, v, &tau, &mut d, &mut reference).unwrap();
            // one ABA and the factored solve
            let (mut tau, mut acc) = (tau0.to_vec(), vec![T::zero(); nv]);
            crate::aba::aba_into(dm, q, v, &tau, &mut d, &mut acc).unwrap();
            linear_contact_accel_into(dm, q, v, h, &mut d, &mut tau, &mut acc).unwrap();
            assert!(d.rod_contact.iter().all(|&c| c), "both rods in contact");
            [reference, acc]
        }
        let dm: DynModel<f64> = DynModel::from_model(&m).unwrap();
        let [r, a] = both(&dm, &q, &v, &tau0, h);
        let err = rel_err(&a, &r);
        let dmd: DynModel<Dual64> = dm.lift();
        let lift = |x: &[f64]| x.iter().map(|&v| Dual64::from(v)).collect::<Vec<_>>();
        let mut derr = 0.0f64;
        for k in 0..m.nv() {
            let mut vd = lift(&v);
            vd[k].eps = 1.0;
            let [rd, ad] = both(&dmd, &lift(&q), &vd, &lift(&tau0), h);
            let (re, ae): (Vec<f64>, Vec<f64>) =
                (rd.iter().map(|x| x.eps).collect(), ad.iter().map(|x| x.eps).collect());
            derr = derr.max(rel_err(&ae, &re));
        }
        eprintln!("one ABA + factored solve vs two ABAs: q̈ {err:.1e}, ∂q̈/∂v {derr:.1e}");
        assert!(err < 1e-12 && derr < 1e-12, "{err:e} {derr:e}");
    }

    /// The broad phase is conservative: over random states, a pair it skips (`RodBound::apart`, `RodBound::above`)
    /// never has an active slot by the exact test (`active`), with Δt up to 50 ms (so the predicted term matters);
    /// and it skips pairs. Two scenes: the two rods anywhere (random poses), and SUPERball (6 rods, 15 rod pairs)
    /// near its file pose (±5 cm, ±0.15 rad), close to the floor and to each other — where bounding spheres
    /// alone (half length 0.84 m) would skip no rod pair.
    #[test]
    fn broad_phase_skips_no_active_slot() {
        let ball = {
            let p = concat!(env!("CARGO_MANIFEST_DIR"), "/../torsion-model/tests/data/mjcf/superball.xml");
            let mut m = torsion_model::io::mjcf::load_mjcf(std::path::Path::new(p)).unwrap();
            m.tensegrity_contact = Some(Default::default());
            m
        };
        let mut rng = torsion_math::rng::XorShift(0x9e37_79b9_7f4a_7c15);
        for (name, m, trials) in [("two rods", scene(""), 20000), ("SUPERball", ball, 4000)] {
            let dm: DynModel<f64> = DynModel::from_model(&m).unwrap();
            let lc = dm.tensegrity_contact.as_ref().unwrap();
            let mut d = DynData::new(&dm);
            let nrod = lc.rods.len();
            let (mut skipped, mut kept_active, mut total) = ([0usize; 2], [0usize; 2], [0usize; 2]);
            for trial in 0..trials {
                let dt = [1e-3, 1e-2, 5e-2][trial % 3];
                let mut q = m.qpos0.clone();
                for b in 0..nrod {
                    let qb = &mut q[7 * b..7 * b + 7];
                    if nrod == 2 {
                        let x = [rng.sym() * 1.2, rng.sym() * 1.2, rng.u() * 1.3 - 0.1];
                        let qr = nalgebra::Vector4::from_fn(|_, _| rng.sym()).normalize();
                        qb.copy_from_slice(&[x[0], x[1], x[2], qr[0], qr[1], qr[2], qr[3]]);
                    } else {
                        // the file pose rests on the floor (the low rods' caps at z = R)
                        (0..3).for_each(|a| qb[a] += 0.05 * rng.sym());
                        let qr = nalgebra::Vector4::from_fn(|i, _| qb[3 + i] + 0.075 * rng.sym()).normalize();
                        qb[3..].copy_from_slice(qr.as_slice());
                    }
                }
                let vmax = if nrod == 2 { [20.0, 5.0] } else { [3.0, 2.0] };
                let v: Vec<f64> = (0..m.nv()).map(|k| rng.sym() * vmax[(k % 6 >= 3) as usize]).collect();
                crate::fk::forward_kinematics(&dm, &q, &mut d);
                d.vel.iter_mut().for_each(|x| *x = V6::zeros());
                body_velocities(&dm, &mut d, &v);
                let bound: Vec<RodBound> = lc.rods.iter().map(|r| RodBound::of(r, &d)).collect();
                let np = 2 * lc.plane_rod.len();
                for k in 0..lc.n_slots() {
                    let (far, kind) = if k < np {
                        let (pi, ri) = lc.plane_rod[k / 2];
                        (bound[ri].above(&lc.planes[pi], dt), 0)
                    } else {
                        let (i, j) = lc.rod_rod[k - np];
                        (RodBound::apart(&bound[i], &bound[j], dt), 1)
                    };
                    let c = lc.slot_geometry(&d, k);
                    let on = active(&d, &c.bodies, &c.point, &c.normal, c.depth, dt);
                    assert!(!(far && on), "{name}, trial {trial} slot {k}: skipped but active (depth {})", c.depth);
                    total[kind] += 1;
                    skipped[kind] += far as usize;
                    kept_active[kind] += (!far && on) as usize;
                }
            }
            eprintln!(
                "{name}: broad phase skipped {skipped:?} of {total:?} (plane, rod) slots; kept and active {kept_active:?}"
            );
            assert!(skipped.iter().zip(&total).all(|(s, t)| *s > t / 10), "{name}: {skipped:?} of {total:?}");
            assert!(kept_active[0] > 0, "{name}: no floor contact sampled");
        }
    }

    /// Rod–rod contact follows the bitmasks: b with conaffinity 0 and contype 2 never meets a (1 / 1) but still
    /// the floor; a box geom is refused with its name.
    #[test]
    fn pairs_follow_contype_and_conaffinity() {
        let m = scene(r#"contype="2" conaffinity="0""#);
        let dm: DynModel<f64> = DynModel::from_model(&m).unwrap();
        let lc = dm.tensegrity_contact.as_ref().unwrap();
        assert!(lc.rod_rod.is_empty() && lc.plane_rod.len() == 1);
        let m = scene("");
        assert_eq!(DynModel::<f64>::from_model(&m).unwrap().tensegrity_contact.unwrap().rod_rod, vec![(0, 1)]);
        let mut m = scene("");
        m.shapes[1].kind = ShapeKind::Box { half_extents: Vec3::new(0.1, 0.1, 0.1) };
        let e = DynModel::<f64>::from_model(&m).unwrap_err().to_string();
        assert!(e.contains("'a'") && e.contains("Box"), "{e}");
    }
}
