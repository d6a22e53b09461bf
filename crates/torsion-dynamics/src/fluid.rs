//! MuJoCo's inertia-box fluid model (`mj_inertiaBoxFluidModel`, MuJoCo docs "Fluid forces"): each body with
//! mass moves through a fluid of density ρ and viscosity β (wind w) as the box with its mass and principal
//! moments, sides bᵢ = sqrt(6 (Iⱼ + Iₖ − Iᵢ) / m). In the body's principal frame at the COM, with
//! ω and u = v_com − w the angular and relative linear velocity:
//!   Stokes (β):   n = −π d³ β ω,  f = −3π d β u,  d = (b₀ + b₁ + b₂)/3
//!   drag (ρ):     fᵢ −= ½ ρ bⱼ bₖ |uᵢ| uᵢ,  nᵢ −= ρ bᵢ (bⱼ⁴ + bₖ⁴) |ωᵢ| ωᵢ / 64
//! The body wrench is mapped to generalized forces by the body Jacobians (an RNEA-style backward sweep,
//! τ += Sᵀ f). Written once, generic over the scalar: the derivative w.r.t. (q, v) is a dual-number pass
//! of the same code (the box is model data, f64: masses and inertias are not differentiated through it,
//! docs/gradients.md). |x| x is C¹: its second derivative jumps at x = 0.
use crate::data::{body_velocities, wrenches_to_tau, DynData, DynError, DynModel};
use crate::fk::forward_kinematics;
use nalgebra::Matrix3;
use torsion_math::spatial::{ang, lin, stack, V6};
use torsion_math::{Scalar, Vec3};
use torsion_model::Model;

/// MuJoCo's mjMINVAL: bodies lighter than this feel no fluid, box sides squared are clamped to it.
const MINVAL: f64 = 1e-15;

/// The fluid parameters and the equivalent box of every body (principal axes and sides), from the model.
#[derive(Clone, Debug)]
pub struct FluidBodies {
    pub density: f64,
    pub viscosity: f64,
    pub wind: Vec3,
    /// per body: the principal axes in the body frame (columns), the box sides (m); None: no fluid force
    /// (fixed, massless or virtual bodies)
    pub boxes: Vec<Option<(Matrix3<f64>, [f64; 3])>>,
}

impl FluidBodies {
    pub fn new(model: &Model) -> Self {
        let mut f =
            FluidBodies { density: 0.0, viscosity: 0.0, wind: Vec3::zeros(), boxes: vec![None; model.body_count()] };
        f.fill(model);
        f
    }

    /// Whether any fluid force acts.
    pub fn on(&self) -> bool {
        self.density > 0.0 || self.viscosity > 0.0
    }

    /// Refresh from the model (same body count); no heap allocation.
    pub fn fill(&mut self, model: &Model) {
        (self.density, self.viscosity, self.wind) = (model.fluid_density, model.fluid_viscosity, model.wind);
        let on = self.on();
        for (k, slot) in self.boxes.iter_mut().enumerate() {
            let m = model.body_mass[k];
            *slot = None;
            if model.body_fixed[k] || m.is_nan() || m < MINVAL || !on {
                continue;
            }
            let i = model.body_inertia[k];
            let off = i[(0, 1)].abs() + i[(0, 2)].abs() + i[(1, 2)].abs();
            // axis-aligned inertia keeps the body axes (as MuJoCo's eigen solver does on a diagonal matrix):
            // with equal moments the drag depends on the choice of axes
            let (rot, p) = if off <= 1e-12 * i.diagonal().amax() {
                (Matrix3::identity(), i.diagonal())
            } else {
                let e = nalgebra::SymmetricEigen::new(i);
                (e.eigenvectors, e.eigenvalues)
            };
            let side = |a: usize, b: usize, c: usize| ((p[b] + p[c] - p[a]).max(MINVAL) / m * 6.0).sqrt();
            *slot = Some((rot, [side(0, 1, 2), side(1, 0, 2), side(2, 0, 1)]));
        }
    }
}

/// The fluid wrench [n; f] at the COM in the principal frame from the principal-frame (ω, u).
fn box_wrench<T: Scalar>(fb: &FluidBodies, b: &[f64; 3], w: &Vec3<T>, u: &Vec3<T>) -> (Vec3<T>, Vec3<T>) {
    let (mut n, mut f) = (Vec3::zeros(), Vec3::zeros());
    if fb.viscosity > 0.0 {
        let d = (b[0] + b[1] + b[2]) / 3.0;
        let pi = std::f64::consts::PI;
        n -= w * T::c(pi * d * d * d * fb.viscosity);
        f -= u * T::c(3.0 * pi * d * fb.viscosity);
    }
    if fb.density > 0.0 {
        let rho = fb.density;
        for (i, j, k) in [(0, 1, 2), (1, 0, 2), (2, 0, 1)] {
            f[i] -= u[i].abs() * u[i] * T::c(0.5 * rho * b[j] * b[k]);
            let c = rho * b[i] * (b[j].powi(4) + b[k].powi(4)) / 64.0;
            n[i] -= w[i].abs() * w[i] * T::c(c);
        }
    }
    (n, f)
}

/// τ += the generalized fluid forces at (q, v). Uses `d`'s kinematics and force scratch (`o_m`, `x_pc`, `vel`,
/// `f`); no heap allocation.
pub fn fluid_forces_into<T: Scalar>(
    fb: &FluidBodies,
    dm: &DynModel<T>,
    q: &[T],
    v: &[T],
    d: &mut DynData<T>,
    tau: &mut [T],
) -> Result<(), DynError> {
    if !fb.on() {
        return Ok(());
    }
    dm.check_q(q)?;
    dm.check_v("v", v)?;
    dm.check_v("tau (output)", tau)?;
    if fb.boxes.len() != dm.nb {
        return Err(DynError::Shape { what: "fluid bodies", got: fb.boxes.len(), expected: dm.nb });
    }
    forward_kinematics(dm, q, d);
    for k in 0..dm.nb {
        if dm.root_pose[k].is_some() {
            d.vel[k] = V6::zeros();
        }
    }
    let wind = torsion_math::scalar::cv::<T>(&fb.wind);
    // forward: body velocities (body frame, at the COM), then each body's fluid wrench
    body_velocities(dm, d, v);
    for j in 0..dm.parent.len() {
        let c = dm.child[j];
        let vc = d.vel[c];
        d.f[c] = V6::zeros();
        let Some((rot, b)) = &fb.boxes[c] else { continue };
        let r = rot.map(T::c);
        let w_body = d.o_m[c].rot.transpose() * wind;
        let (om, u) = (r.transpose() * ang(&vc), r.transpose() * (lin(&vc) - w_body));
        let (n, f) = box_wrench(fb, b, &om, &u);
        d.f[c] = stack(&(r * n), &(r * f));
    }
    // backward: τ += Sᵀ f, the subtree's wrench carried to the parent
    wrenches_to_tau(dm, d, tau);
    Ok(())
}

/// ∂τ_fluid/∂q (tangent coordinates, q ⊕ δ) and ∂τ_fluid/∂v at (q, v), nv × nv each, column-major into
/// `dq`, `dv`, by Dual64 passes of [`fluid_forces_into`] on `dual` (the model lifted with
/// [`DynModel::lift`]).
pub fn fluid_derivatives(
    fb: &FluidBodies,
    dual: &DynModel<num_dual::Dual64>,
    q: &[f64],
    v: &[f64],
    dq: &mut [f64],
    dv: &mut [f64],
) -> Result<(), DynError> {
    use num_dual::Dual64;
    let nv = dual.nv;
    let mut d = DynData::new(dual);
    let q0: Vec<Dual64> = q.iter().map(|&x| Dual64::from(x)).collect();
    let mut vd: Vec<Dual64> = v.iter().map(|&x| Dual64::from(x)).collect();
    let mut tau = vec![Dual64::from(0.0); nv];
    let mut e = vec![Dual64::from(0.0); nv];
    for c in 0..nv {
        e[c].eps = 1.0;
        let qd = crate::joints::integrate(dual, &q0, &e);
        e[c].eps = 0.0;
        tau.iter_mut().for_each(|t| *t = Dual64::from(0.0));
        fluid_forces_into(fb, dual, &qd, &vd, &mut d, &mut tau)?;
        for r in 0..nv {
            dq[c * nv + r] = tau[r].eps;
        }
        vd[c].eps = 1.0;
        tau.iter_mut().for_each(|t| *t = Dual64::from(0.0));
        fluid_forces_into(fb, dual, &q0, &vd, &mut d, &mut tau)?;
        vd[c].eps = 0.0;
        for r in 0..nv {
            dv[c * nv + r] = tau[r].eps;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::joints::integrate;

    /// A free capsule + a hinge + a ball link with off-diagonal inertia, in density, viscosity and wind.
    pub(crate) fn swimmer() -> Model {
        let mut m = torsion_model::builder::floating_tree();
        m.fluid_density = 3000.0;
        m.fluid_viscosity = 0.1;
        m.wind = Vec3::new(0.3, -0.2, 0.1);
        for k in 0..m.body_count() {
            if !m.body_fixed[k] && m.body_mass[k] > 0.0 {
                let r = torsion_math::Quat::from_axis_angle(&Vec3::new(1.0, 2.0, -0.5).normalize(), 0.4 + k as f64)
                    .to_mat();
                m.body_inertia[k] = r * m.body_inertia[k] * r.transpose();
            }
        }
        m
    }

    fn tau_at(m: &Model, q: &[f64], v: &[f64]) -> Vec<f64> {
        let dm: DynModel<f64> = DynModel::from_model(m).unwrap();
        let mut d = DynData::new(&dm);
        let mut tau = vec![0.0; dm.nv];
        fluid_forces_into(&FluidBodies::new(m), &dm, q, v, &mut d, &mut tau).unwrap();
        tau
    }

    /// ∂τ_fluid/∂(q, v) by dual numbers against central differences (q on the manifold).
    #[test]
    fn fluid_derivatives_match_central_differences() {
        let m = swimmer();
        let dm: DynModel<f64> = DynModel::from_model(&m).unwrap();
        let q = torsion_model::builder::example_configuration(&m, 5);
        let v: Vec<f64> = (0..m.nv()).map(|i| ((i * 7 + 2) % 11) as f64 / 4.0 - 1.2).collect();
        let nv = m.nv();
        let (mut dq, mut dv) = (vec![0.0; nv * nv], vec![0.0; nv * nv]);
        fluid_derivatives(&FluidBodies::new(&m), &dm.lift(), &q, &v, &mut dq, &mut dv).unwrap();
        let tau = tau_at(&m, &q, &v);
        assert!(tau.iter().map(|x| x.abs()).fold(0.0, f64::max) > 1.0, "fluid forces are not negligible: {tau:?}");
        let h = 1e-6;
        let (mut fq, mut fv) = (vec![0.0; nv * nv], vec![0.0; nv * nv]);
        for c in 0..nv {
            let mut e = vec![0.0; nv];
            e[c] = h;
            let tp = tau_at(&m, &integrate(&dm, &q, &e), &v);
            e[c] = -h;
            let tm = tau_at(&m, &integrate(&dm, &q, &e), &v);
            let mut vp = v.clone();
            vp[c] += h;
            let mut vm = v.clone();
            vm[c] -= h;
            let (sp, sm) = (tau_at(&m, &q, &vp), tau_at(&m, &q, &vm));
            for r in 0..nv {
                fq[c * nv + r] = (tp[r] - tm[r]) / (2.0 * h);
                fv[c * nv + r] = (sp[r] - sm[r]) / (2.0 * h);
            }
        }
        let rel = |a: &[f64], b: &[f64]| {
            let scale = b.iter().fold(0.0f64, |s, x| s.max(x.abs()));
            a.iter().zip(b).fold(0.0f64, |s, (x, y)| s.max((x - y).abs())) / scale
        };
        let (eq, ev) = (rel(&dq, &fq), rel(&dv, &fv));
        println!("fluid ∂τ/∂q rel err {eq:.1e}, ∂τ/∂v rel err {ev:.1e}");
        assert!(eq < 1e-6 && ev < 1e-6, "∂τ/∂q {eq:e}, ∂τ/∂v {ev:e}");
    }

    /// Forces oppose the relative motion (power ≤ 0 without wind), zero at rest in still fluid, none when
    /// density and viscosity are 0; no NaN at zero velocity.
    #[test]
    fn fluid_forces_dissipate_and_vanish_at_rest() {
        let mut m = swimmer();
        m.wind = Vec3::zeros();
        let q = torsion_model::builder::example_configuration(&m, 2);
        let v: Vec<f64> = (0..m.nv()).map(|i| (i as f64 * 0.9).sin()).collect();
        let tau = tau_at(&m, &q, &v);
        let power: f64 = tau.iter().zip(&v).map(|(a, b)| a * b).sum();
        assert!(power < 0.0, "{power}");
        let rest = tau_at(&m, &q, &vec![0.0; m.nv()]);
        assert!(rest.iter().all(|x| *x == 0.0), "{rest:?}");
        m.fluid_density = 0.0;
        m.fluid_viscosity = 0.0;
        assert!(tau_at(&m, &q, &v).iter().all(|x| *x == 0.0));
    }
}
