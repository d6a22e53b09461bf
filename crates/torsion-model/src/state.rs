//! The dynamic states, one per family: [`MaximalState`] of the maximal-coordinate family (spec 000 §3.1): per
//! body the COM position, orientation, linear and angular velocity (world frame), fixed bodies stored too and
//! never changed; [`GenState`] of the generalized-coordinate family (Featherstone, contact): (q, v) and the
//! contact warm start. Both are [`crate::StateSpace`]s (`state_space.rs`).
use crate::Model;
use torsion_math::{Quat, Scalar, Vec3};

#[derive(Clone, Debug, PartialEq)]
pub struct MaximalState<T: Scalar = f64> {
    /// COM positions, world, m; shape (body_count,)
    pub x: Vec<Vec3<T>>,
    /// orientations (w, x, y, z), body → world; shape (body_count,)
    pub q: Vec<Quat<T>>,
    /// COM linear velocities, world, m/s
    pub v: Vec<Vec3<T>>,
    /// angular velocities, world, rad/s
    pub w: Vec<Vec3<T>>,
}

/// Per-body ambient layout used when a state is flattened: x(3) q(4) v(3) w(3).
pub const AMBIENT_PER_BODY: usize = 13;
/// Per-body tangent layout: x(3) δq(3, left perturbation) v(3) w(3).
pub const TANGENT_PER_BODY: usize = 12;

impl<T: Scalar> MaximalState<T> {
    pub fn zeros(n: usize) -> Self {
        Self {
            x: vec![Vec3::zeros(); n],
            q: vec![Quat::identity(); n],
            v: vec![Vec3::zeros(); n],
            w: vec![Vec3::zeros(); n],
        }
    }
    pub fn body_count(&self) -> usize {
        self.x.len()
    }
    /// Set every component to zero (used for gradient accumulators).
    pub fn set_zero(&mut self) {
        for k in 0..self.x.len() {
            self.x[k] = Vec3::zeros();
            self.q[k] = Quat::zero();
            self.v[k] = Vec3::zeros();
            self.w[k] = Vec3::zeros();
        }
    }
}

impl MaximalState<f64> {
    /// Flatten to [x q v w] per body (13 per body).
    pub fn to_ambient(&self) -> Vec<f64> {
        let mut out = Vec::with_capacity(self.x.len() * AMBIENT_PER_BODY);
        for k in 0..self.x.len() {
            out.extend_from_slice(self.x[k].as_slice());
            out.extend_from_slice(&self.q[k].to_array());
            out.extend_from_slice(self.v[k].as_slice());
            out.extend_from_slice(self.w[k].as_slice());
        }
        out
    }
    pub fn from_ambient(a: &[f64]) -> Self {
        let n = a.len() / AMBIENT_PER_BODY;
        let mut s = Self::zeros(n);
        for k in 0..n {
            let o = &a[k * AMBIENT_PER_BODY..];
            s.x[k] = Vec3::new(o[0], o[1], o[2]);
            s.q[k] = Quat::new(o[3], o[4], o[5], o[6]);
            s.v[k] = Vec3::new(o[7], o[8], o[9]);
            s.w[k] = Vec3::new(o[10], o[11], o[12]);
        }
        s
    }
    /// Manifold retraction: x += dx, q ← Exp(δ) ⊗ q, v += dv, w += dw for the bodies listed in `dyn_bodies`
    /// (tangent layout: 12 per listed body, in that order).
    pub fn retract(&self, dyn_bodies: &[usize], d: &[f64]) -> Self {
        let mut s = self.clone();
        for (i, &k) in dyn_bodies.iter().enumerate() {
            let o = &d[i * TANGENT_PER_BODY..];
            s.x[k] += Vec3::new(o[0], o[1], o[2]);
            s.q[k] = self.q[k].retract(&Vec3::new(o[3], o[4], o[5]));
            s.v[k] += Vec3::new(o[6], o[7], o[8]);
            s.w[k] += Vec3::new(o[9], o[10], o[11]);
        }
        s
    }
    /// Difference on the manifold (inverse of `retract` to first order): (other ⊖ self) in tangent layout.
    pub fn local_diff(&self, dyn_bodies: &[usize], other: &Self) -> Vec<f64> {
        let mut d = Vec::with_capacity(dyn_bodies.len() * TANGENT_PER_BODY);
        for &k in dyn_bodies {
            d.extend_from_slice((other.x[k] - self.x[k]).as_slice());
            d.extend_from_slice(other.q[k].mul(&self.q[k].conj()).log().as_slice());
            d.extend_from_slice((other.v[k] - self.v[k]).as_slice());
            d.extend_from_slice((other.w[k] - self.w[k]).as_slice());
        }
        d
    }
    /// Convert an ambient gradient (same shape as the state) to the tangent gradient for `dyn_bodies`.
    pub fn grad_to_tangent(&self, dyn_bodies: &[usize], g: &Self) -> Vec<f64> {
        let mut d = Vec::with_capacity(dyn_bodies.len() * TANGENT_PER_BODY);
        for &k in dyn_bodies {
            d.extend_from_slice(g.x[k].as_slice());
            d.extend_from_slice(torsion_math::quat::grad_ambient_to_tangent(&self.q[k], &g.q[k]).as_slice());
            d.extend_from_slice(g.v[k].as_slice());
            d.extend_from_slice(g.w[k].as_slice());
        }
        d
    }
    /// Lift to another scalar type (e.g. duals) with zero derivative parts.
    pub fn lift<T: Scalar>(&self) -> MaximalState<T> {
        let cv = |v: &Vec3| Vec3::new(T::c(v.x), T::c(v.y), T::c(v.z));
        MaximalState {
            x: self.x.iter().map(cv).collect(),
            q: self.q.iter().map(|q| Quat::new(T::c(q.w), T::c(q.v.x), T::c(q.v.y), T::c(q.v.z))).collect(),
            v: self.v.iter().map(cv).collect(),
            w: self.w.iter().map(cv).collect(),
        }
    }
}

/// Generalized state: q (nq, layouts of `JointType::nq`), v (nv), the actuator activations `act` (na, MuJoCo's
/// `act`: the motor filter states of spec 003 §3.3; empty for models without stateful actuators) and the contact
/// warm start.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GenState {
    pub q: Vec<f64>,
    pub v: Vec<f64>,
    /// activation of each filter actuator (`Model::na`, in `Model::cable_actuators` order); a coordinate of the
    /// state (tangent and flat encodings: after v)
    pub act: Vec<f64>,
    /// the contact impulses of the step that produced this state, the next contact step's warm start (design.md
    /// §3: an explicit input and output of a step, never hidden solver state). Not differentiated (spec 001
    /// §3.10: stop-gradient) and not in the tangent or flat encodings; contact-free steppers leave it empty.
    pub warm: ContactWarmStart,
}

impl GenState {
    /// (q, v) with no activations and no warm start (models without stateful actuators).
    pub fn new(q: Vec<f64>, v: Vec<f64>) -> Self {
        GenState { q, v, act: vec![], warm: ContactWarmStart::default() }
    }
    /// (q, v, act) with no warm start.
    pub fn with_act(q: Vec<f64>, v: Vec<f64>, act: Vec<f64>) -> Self {
        GenState { q, v, act, warm: ContactWarmStart::default() }
    }
    /// At rest at the model's reference configuration (`Model::neutral_q`), activations 0.
    pub fn rest(model: &Model) -> Self {
        GenState::with_act(model.neutral_q(), vec![0.0; model.nv()], vec![0.0; model.na()])
    }
    /// `self` ← `src` in `self`'s buffers (no allocation once they have held as large a state).
    pub fn copy_from(&mut self, src: &GenState) {
        self.q.clone_from(&src.q);
        self.v.clone_from(&src.v);
        self.act.clone_from(&src.act);
        self.warm.fill(src.warm.as_slice().iter().copied());
    }
}

/// One contact's impulses (N·s) by persistent contact id: normal λ_n and the two tangential λ_t along the
/// tangents (t1, n × t1) of that step, with t1 (world) — the next step's frame continues from it — and where the
/// contact was: its world point, unit normal n and bodies [A, B], so that a contact detected at the same place under
/// another id (two stacked boxes' coinciding corners, reported from either box as rounding decides) continues
/// from it (`torsion_solvers::contact::warm::warm_start_into`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WarmImpulse {
    pub id: u64,
    pub normal: f64,
    pub tangent: [f64; 2],
    pub t1: [f64; 3],
    pub point: [f64; 3],
    pub n: [f64; 3],
    pub bodies: [usize; 2],
}

/// Contact impulses sorted by id (looked up by binary search; refilled in place, so a step allocates nothing
/// once its capacity has grown).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ContactWarmStart {
    impulses: Vec<WarmImpulse>,
}

impl ContactWarmStart {
    /// The impulses of contact `id`, if it has any.
    pub fn get(&self, id: u64) -> Option<&WarmImpulse> {
        self.index(id).map(|k| &self.impulses[k])
    }
    /// The position of contact `id`'s impulses in `as_slice`, if it has any.
    pub fn index(&self, id: u64) -> Option<usize> {
        self.impulses.binary_search_by_key(&id, |w| w.id).ok()
    }
    /// All impulses, sorted by id.
    pub fn as_slice(&self) -> &[WarmImpulse] {
        &self.impulses
    }
    pub fn len(&self) -> usize {
        self.impulses.len()
    }
    pub fn is_empty(&self) -> bool {
        self.impulses.is_empty()
    }
    pub fn clear(&mut self) {
        self.impulses.clear();
    }
    /// Replace the contents by `it` (any order; of repeated ids the one sorting first is kept).
    pub fn fill(&mut self, it: impl IntoIterator<Item = WarmImpulse>) {
        self.impulses.clear();
        self.impulses.extend(it);
        // unstable sort: in place, no allocation
        self.impulses.sort_unstable_by_key(|w| w.id);
        self.impulses.dedup_by_key(|w| w.id);
    }
}

impl FromIterator<WarmImpulse> for ContactWarmStart {
    fn from_iter<I: IntoIterator<Item = WarmImpulse>>(it: I) -> Self {
        let mut w = ContactWarmStart::default();
        w.fill(it);
        w
    }
}
