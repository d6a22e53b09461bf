//! One contract for a solver's state space (issue 13): the manifold a state lives on, its tangent coordinates and
//! the maps the differentiation machinery needs (design.md §3). Implemented by [`MaximalState`] (XPBD: 12 tangent
//! entries per non-fixed body, left perturbations of the orientations) and [`GenState`] (Featherstone, contact:
//! 2 nv + na tangent entries, q ⊕ δ per joint of `joint_maps`, then v and the actuator activations). A solver names its space as `Solver::State`.
//!
//! Contract, for s on the manifold, tangent vectors d and ambient cotangents g (the state's own shape):
//! - `retract(s, 0) = s`, `retract(s, local_diff(s, o)) = o` and `local_diff(s, retract(s, d)) = d` (exact
//!   away from the cut locus of the logs);
//! - `⟨grad_to_tangent(s, g), d⟩ = ⟨g, ∂ encode(retract(s, ε d))/∂ε |₀⟩` (the pull-back of an ambient gradient);
//! - `grad_to_tangent(s, grad_to_ambient(s, t)) = t` (a right inverse, G (GᵀG)⁻¹);
//! - `decode(encode(s)) = s` up to what the encoding leaves out (GenState's contact warm start).
//!
//! [`MaximalState`] keeps its inherent `retract` / `local_diff` / `grad_to_tangent` over an explicit body list,
//! which shadow these in method-call syntax: call the trait's as `StateSpace::retract(&s, model, d)`.
use crate::joint_maps::{ambient_to_tangent, difference, integrate, tangent_to_ambient};
use crate::state::{AMBIENT_PER_BODY, TANGENT_PER_BODY};
use crate::{GenState, MaximalState, Model, ModelError};
use torsion_math::Vec3;

pub trait StateSpace: Clone + std::fmt::Debug + Sized {
    /// Entries of the flat (ambient) encoding: nq + nv, or 13 per body.
    fn ambient_dim(model: &Model) -> usize;
    /// Entries of a tangent vector: 2 nv, or 12 per non-fixed body.
    fn tangent_dim(model: &Model) -> usize;
    /// s ⊕ d.
    fn retract(&self, model: &Model, d: &[f64]) -> Self;
    /// other ⊖ s in tangent coordinates (the inverse of `retract`).
    fn local_diff(&self, model: &Model, other: &Self) -> Vec<f64>;
    /// An ambient gradient g (same shape as the state) at s → the tangent gradient.
    fn grad_to_tangent(&self, model: &Model, g: &Self) -> Vec<f64>;
    /// A tangent gradient at s → an ambient gradient whose `grad_to_tangent` gives it back.
    fn grad_to_ambient(&self, model: &Model, t: &[f64]) -> Self;
    /// The flat ambient encoding (`ambient_dim` entries).
    fn encode(&self) -> Vec<f64>;
    /// `encode` into `out` (`ambient_dim` entries), without allocating.
    fn encode_into(&self, out: &mut [f64]);
    /// self += a for a gradient of the state's shape and a flat row `a` in the encoding's layout.
    fn add_encoded(&mut self, a: &[f64]);
    /// The inverse of `encode`; an error names the expected length.
    fn decode(model: &Model, flat: &[f64]) -> Result<Self, ModelError>;
    /// A zero gradient of the state's shape.
    fn zero_grad(model: &Model) -> Self;
    /// Zero a gradient in place, without reallocating it.
    fn clear_grad(&mut self);
}

fn check_len(what: &str, got: usize, expected: usize) -> Result<(), ModelError> {
    if got != expected {
        return Err(ModelError::Invalid(format!("{what}: flat state has {got} entries, expected {expected}")));
    }
    Ok(())
}

impl StateSpace for MaximalState {
    fn ambient_dim(model: &Model) -> usize {
        model.body_count() * AMBIENT_PER_BODY
    }
    fn tangent_dim(model: &Model) -> usize {
        model.dynamic_bodies().len() * TANGENT_PER_BODY
    }
    fn retract(&self, model: &Model, d: &[f64]) -> Self {
        MaximalState::retract(self, &model.dynamic_bodies(), d)
    }
    fn local_diff(&self, model: &Model, other: &Self) -> Vec<f64> {
        MaximalState::local_diff(self, &model.dynamic_bodies(), other)
    }
    fn grad_to_tangent(&self, model: &Model, g: &Self) -> Vec<f64> {
        MaximalState::grad_to_tangent(self, &model.dynamic_bodies(), g)
    }
    fn grad_to_ambient(&self, model: &Model, t: &[f64]) -> Self {
        let mut g = <Self as StateSpace>::zero_grad(model);
        for (i, k) in model.dynamic_bodies().into_iter().enumerate() {
            let o = &t[i * TANGENT_PER_BODY..];
            g.x[k] = Vec3::new(o[0], o[1], o[2]);
            // G (GᵀG)⁻¹ with G δ = ½ [0, δ] ⊗ q, GᵀG = ¼ I
            g.q[k] = torsion_math::quat::tangent_push(&self.q[k], &(Vec3::new(o[3], o[4], o[5]) * 4.0));
            g.v[k] = Vec3::new(o[6], o[7], o[8]);
            g.w[k] = Vec3::new(o[9], o[10], o[11]);
        }
        g
    }
    fn encode(&self) -> Vec<f64> {
        self.to_ambient()
    }
    fn encode_into(&self, out: &mut [f64]) {
        for k in 0..self.x.len() {
            let o = &mut out[k * AMBIENT_PER_BODY..(k + 1) * AMBIENT_PER_BODY];
            o[..3].copy_from_slice(self.x[k].as_slice());
            o[3..7].copy_from_slice(&self.q[k].to_array());
            o[7..10].copy_from_slice(self.v[k].as_slice());
            o[10..13].copy_from_slice(self.w[k].as_slice());
        }
    }
    fn add_encoded(&mut self, a: &[f64]) {
        for k in 0..self.x.len() {
            let o = &a[k * AMBIENT_PER_BODY..(k + 1) * AMBIENT_PER_BODY];
            for i in 0..3 {
                self.x[k][i] += o[i];
                self.q[k].v[i] += o[4 + i];
                self.v[k][i] += o[7 + i];
                self.w[k][i] += o[10 + i];
            }
            self.q[k].w += o[3];
        }
    }
    fn decode(model: &Model, flat: &[f64]) -> Result<Self, ModelError> {
        check_len("MaximalState (13 per body: x q v w)", flat.len(), Self::ambient_dim(model))?;
        Ok(Self::from_ambient(flat))
    }
    fn zero_grad(model: &Model) -> Self {
        let mut g = MaximalState::zeros(model.body_count());
        g.set_zero();
        g
    }
    fn clear_grad(&mut self) {
        self.set_zero();
    }
}

impl StateSpace for GenState {
    fn ambient_dim(model: &Model) -> usize {
        model.nq() + model.nv() + model.na()
    }
    fn tangent_dim(model: &Model) -> usize {
        2 * model.nv() + model.na()
    }
    /// q ⊕ d_q per joint (`joint_maps::integrate`), v + d_v, act + d_act. The warm start is not a coordinate: a
    /// perturbed state keeps it.
    fn retract(&self, model: &Model, d: &[f64]) -> Self {
        let nv = model.nv();
        GenState {
            q: integrate(model, &self.q, &d[..nv]),
            v: self.v.iter().zip(&d[nv..]).map(|(a, b)| a + b).collect(),
            act: self.act.iter().zip(&d[2 * nv..]).map(|(a, b)| a + b).collect(),
            warm: self.warm.clone(),
        }
    }
    /// `joint_maps::difference` (exact logs for ball and free joints), then v and act differences.
    fn local_diff(&self, model: &Model, other: &Self) -> Vec<f64> {
        let mut d = difference(model, &self.q, &other.q);
        d.extend(other.v.iter().zip(&self.v).map(|(a, b)| a - b));
        d.extend(other.act.iter().zip(&self.act).map(|(a, b)| a - b));
        d
    }
    fn grad_to_tangent(&self, model: &Model, g: &Self) -> Vec<f64> {
        let mut t = ambient_to_tangent(model, &self.q, &g.q);
        t.extend_from_slice(&g.v);
        t.extend_from_slice(&g.act);
        t
    }
    fn grad_to_ambient(&self, model: &Model, t: &[f64]) -> Self {
        let nv = model.nv();
        GenState::with_act(
            tangent_to_ambient(model, &self.q, &t[..nv]),
            t[nv..2 * nv].to_vec(),
            t[2 * nv..2 * nv + self.act.len()].to_vec(),
        )
    }
    /// [q, v, act]; the warm start is not encoded.
    fn encode(&self) -> Vec<f64> {
        self.q.iter().chain(&self.v).chain(&self.act).copied().collect()
    }
    fn encode_into(&self, out: &mut [f64]) {
        let (nq, nv) = (self.q.len(), self.v.len());
        out[..nq].copy_from_slice(&self.q);
        out[nq..nq + nv].copy_from_slice(&self.v);
        out[nq + nv..nq + nv + self.act.len()].copy_from_slice(&self.act);
    }
    fn add_encoded(&mut self, a: &[f64]) {
        let (nq, nv) = (self.q.len(), self.v.len());
        self.q.iter_mut().zip(&a[..nq]).for_each(|(x, y)| *x += y);
        self.v.iter_mut().zip(&a[nq..nq + nv]).for_each(|(x, y)| *x += y);
        self.act.iter_mut().zip(&a[nq + nv..]).for_each(|(x, y)| *x += y);
    }
    fn decode(model: &Model, flat: &[f64]) -> Result<Self, ModelError> {
        check_len("GenState (q, v then act: nq + nv + na)", flat.len(), Self::ambient_dim(model))?;
        let (nq, nv) = (model.nq(), model.nv());
        Ok(GenState::with_act(flat[..nq].to_vec(), flat[nq..nq + nv].to_vec(), flat[nq + nv..].to_vec()))
    }
    fn zero_grad(model: &Model) -> Self {
        GenState::with_act(vec![0.0; model.nq()], vec![0.0; model.nv()], vec![0.0; model.na()])
    }
    fn clear_grad(&mut self) {
        self.q.iter_mut().chain(self.v.iter_mut()).chain(self.act.iter_mut()).for_each(|x| *x = 0.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::{example_configuration, floating_tree};
    use crate::JointType;

    /// The MJCF fixture with every joint type (a free ball, a hinge, a ball-jointed rod, a slide).
    fn fixture() -> Model {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/mjcf/geom_inertia.xml");
        crate::io::mjcf::load_mjcf(&p).expect("fixture loads")
    }

    fn det(n: usize, seed: usize, scale: f64) -> Vec<f64> {
        (0..n).map(|i| (((i + seed) * 7919 % 23) as f64 / 11.0 - 1.0) * scale).collect()
    }

    fn dot(a: &[f64], b: &[f64]) -> f64 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    fn max_abs(a: &[f64], b: &[f64]) -> f64 {
        a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
    }

    /// Every clause of the contract (module doc) at s.
    fn check_contract<S: StateSpace>(m: &Model, s: &S, name: &str) {
        let n = S::tangent_dim(m);
        assert_eq!(s.encode().len(), S::ambient_dim(m), "{name}: ambient_dim");
        // retract / local_diff are inverse both ways
        let d = det(n, 3, 0.4);
        let o = s.retract(m, &d);
        let back = s.local_diff(m, &o);
        let e1 = max_abs(&back, &d);
        let o2 = s.retract(m, &s.local_diff(m, &o));
        let e2 = max_abs(&o2.encode(), &o.encode());
        assert!(e1 < 1e-12 && e2 < 1e-12, "{name}: local_diff ∘ retract {e1:e}, retract ∘ local_diff {e2:e}");
        assert!(max_abs(&s.retract(m, &vec![0.0; n]).encode(), &s.encode()) < 1e-15, "{name}: retract(s, 0) ≠ s");
        // pull-back: ⟨grad_to_tangent(g), d⟩ = d/dε ⟨g, encode(retract(s, ε d))⟩ (central differences)
        let g = S::decode(m, &det(S::ambient_dim(m), 5, 1.0)).unwrap();
        let gt = s.grad_to_tangent(m, &g);
        let h = 1e-6;
        let (gf, dd) = (g.encode(), det(n, 11, 1.0));
        let f = |e: f64| dot(&gf, &s.retract(m, &dd.iter().map(|x| x * e).collect::<Vec<_>>()).encode());
        let fd = (f(h) - f(-h)) / (2.0 * h);
        let an = dot(&gt, &dd);
        let rel = (fd - an).abs() / an.abs().max(1e-12);
        eprintln!("{name}: pull-back rel. error {rel:.2e}, inverse errors {e1:.1e} {e2:.1e}");
        assert!(rel < 1e-6, "{name}: pull-back {an} vs central differences {fd} (rel {rel:e})");
        // right inverse
        let ga = s.grad_to_ambient(m, &dd);
        assert!(max_abs(&s.grad_to_tangent(m, &ga), &dd) < 1e-13, "{name}: grad_to_ambient not a right inverse");
        // encode / decode / encode_into / add_encoded, zero / clear
        let r = S::decode(m, &s.encode()).unwrap();
        assert_eq!(r.encode(), s.encode(), "{name}: decode ∘ encode");
        let mut buf = vec![f64::NAN; S::ambient_dim(m)];
        s.encode_into(&mut buf);
        assert_eq!(buf, s.encode(), "{name}: encode_into");
        let mut acc = g.clone();
        acc.add_encoded(&s.encode());
        let sum: Vec<f64> = g.encode().iter().zip(s.encode()).map(|(a, b)| a + b).collect();
        assert_eq!(acc.encode(), sum, "{name}: add_encoded");
        let mut z = g.clone();
        z.clear_grad();
        assert_eq!(z.encode(), S::zero_grad(m).encode(), "{name}: clear_grad");
        assert!(z.encode().iter().all(|&x| x == 0.0));
        let err = S::decode(m, &[0.0; 3]).unwrap_err().to_string();
        assert!(err.contains("expected"), "{name}: {err}");
    }

    #[test]
    fn both_state_spaces_honour_the_contract_on_models_with_free_and_ball_joints() {
        for m in [fixture(), floating_tree()] {
            assert!(m.joint_type.contains(&JointType::Free) && m.joint_type.contains(&JointType::Ball));
            let q = example_configuration(&m, 9);
            let v = det(m.nv(), 1, 1.5);
            check_contract(&m, &GenState::new(q.clone(), v), &format!("{} GenState", m.name));
            let mut ms = m.state_at(&q).unwrap();
            for (i, k) in m.dynamic_bodies().into_iter().enumerate() {
                ms.v[k] = Vec3::new(0.1 * i as f64, -0.3, 0.2);
                ms.w[k] = Vec3::new(-0.5, 0.4 * i as f64, 0.7);
            }
            check_contract(&m, &ms, &format!("{} MaximalState", m.name));
        }
    }

    /// GenState with actuator activations (the 3-bar prism: free rods, 3 filter actuators): act is a coordinate.
    #[test]
    fn gen_state_with_activations_honours_the_contract() {
        let m = crate::builder::tensegrity_prism();
        let s = GenState::with_act(m.qpos0.clone(), det(m.nv(), 2, 0.7), vec![3.0, -20.0, 0.5]);
        assert_eq!((GenState::tangent_dim(&m), GenState::ambient_dim(&m)), (39, 21 + 18 + 3));
        check_contract(&m, &s, "prism GenState");
    }
}
