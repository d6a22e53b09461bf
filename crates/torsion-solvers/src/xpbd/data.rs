//! Per-step solver data derived from the model's differentiable parameters θ (spec 000 §3.0, §3.1):
//! inverse masses, local inertias and their inverses, joint anchors r/t, spring constants. Built by one
//! generic function from the flat parameter vector, so f64 simulation and dual-number derivatives w.r.t. θ
//! share the code; `params_vjp` maps gradients of these quantities back to θ.
use nalgebra::Matrix3;
use torsion_math::{scalar::cv, Mat3, Scalar, Vec3};
use torsion_model::params::{scatter_params, ParamKind, INERTIA_IDX};
use torsion_model::{Model, ParamTable};

#[derive(Clone, Debug)]
pub struct XpbdData<T: Scalar> {
    /// 1/m (0 for fixed bodies)
    pub inv_mass: Vec<T>,
    /// local inertia about the COM (0 for fixed bodies)
    pub inertia: Vec<Mat3<T>>,
    /// local inverse inertia (0 for fixed bodies)
    pub inv_inertia: Vec<Mat3<T>>,
    /// per joint: r (parent COM → joint), t (child COM → joint), local frames
    pub r: Vec<Vec3<T>>,
    pub t: Vec<Vec3<T>>,
    /// per joint, constants: hinge axes b (parent) / a (child) and angle references n^P / n^C
    pub b: Vec<Vec3<T>>,
    pub a: Vec<Vec3<T>>,
    pub np: Vec<Vec3<T>>,
    pub nc: Vec<Vec3<T>>,
    /// spring constants [k, α1, α2, l1, l2, x_rest] per joint with a spring
    pub spring: Vec<Option<[T; 6]>>,
    pub gravity: Vec3<T>,
}

impl<T: Scalar> XpbdData<T> {
    /// Build from the model and a full parameter vector `theta` (table order of `Model::param_table`).
    pub fn build(model: &Model, table: &ParamTable, theta: &[T]) -> Self {
        let nb = model.body_count();
        let nj = model.joint_count();
        let z = Vec3::zeros();
        let mut d = XpbdData {
            inv_mass: vec![T::zero(); nb],
            inertia: vec![Matrix3::zeros(); nb],
            inv_inertia: vec![Matrix3::zeros(); nb],
            r: vec![z; nj],
            t: vec![z; nj],
            b: vec![z; nj],
            a: vec![z; nj],
            np: vec![z; nj],
            nc: vec![z; nj],
            spring: vec![None; nj],
            gravity: z,
        };
        d.fill(model, table, theta);
        d
    }

    /// Overwrite every field from `theta` (no allocation): the one place θ becomes solver data.
    pub fn fill(&mut self, model: &Model, table: &ParamTable, theta: &[T]) {
        self.fill_with(model, table, |i| theta[i])
    }

    fn fill_with(&mut self, model: &Model, table: &ParamTable, theta: impl Fn(usize) -> T) {
        for j in 0..model.joint_count() {
            self.r[j] = cv(&model.joint_anchor_parent[j]);
            self.t[j] = cv(&model.joint_anchor_child[j]);
            self.spring[j] = model.joint_spring[j].map(|_| [T::zero(); 6]);
            self.b[j] = cv(&model.joint_axis_parent(j));
            self.a[j] = cv(&model.joint_axis_child(j));
            let (p, c) = model.joint_refs(j);
            self.np[j] = cv(&p);
            self.nc[j] = cv(&c);
        }
        // the mass slot holds m until inverted below
        // XPBD reads no joint damping, armature or friction loss (`&mut []`)
        #[rustfmt::skip]
        scatter_params(table, theta, &mut self.inv_mass, &mut self.inertia, &mut self.r, &mut self.t, &mut self.spring, &mut []);
        for k in 0..model.body_count() {
            if model.body_fixed[k] {
                self.inv_mass[k] = T::zero();
                self.inertia[k] = Matrix3::zeros();
                self.inv_inertia[k] = Matrix3::zeros();
                continue;
            }
            self.inv_mass[k] = T::one() / self.inv_mass[k];
            // SPD is checked by Model::validate, so the inverse exists
            self.inv_inertia[k] = self.inertia[k].try_inverse().unwrap_or_else(Matrix3::zeros);
        }
        self.gravity = cv(&model.gravity);
    }
}

impl XpbdData<f64> {
    /// Refill from the model's current parameter values (after `Model::params_set`).
    pub fn refresh(&mut self, model: &Model, table: &ParamTable) {
        self.fill_with(model, table, |i| model.param_get(table.kinds[i]));
    }
}

/// Gradient accumulators of the derived quantities (same shapes as [`XpbdData`]).
#[derive(Clone, Debug)]
pub struct DataGrad {
    pub inv_mass: Vec<f64>,
    pub inertia: Vec<Mat3>,
    pub inv_inertia: Vec<Mat3>,
    pub r: Vec<Vec3>,
    pub t: Vec<Vec3>,
    pub spring: Vec<[f64; 6]>,
}

impl DataGrad {
    pub fn new(nb: usize, nj: usize) -> Self {
        DataGrad {
            inv_mass: vec![0.0; nb],
            inertia: vec![Mat3::zeros(); nb],
            inv_inertia: vec![Mat3::zeros(); nb],
            r: vec![Vec3::zeros(); nj],
            t: vec![Vec3::zeros(); nj],
            spring: vec![[0.0; 6]; nj],
        }
    }
    pub fn clear(&mut self) {
        self.inv_mass.iter_mut().for_each(|x| *x = 0.0);
        self.inertia.iter_mut().for_each(|x| *x = Mat3::zeros());
        self.inv_inertia.iter_mut().for_each(|x| *x = Mat3::zeros());
        self.r.iter_mut().for_each(|x| *x = Vec3::zeros());
        self.t.iter_mut().for_each(|x| *x = Vec3::zeros());
        self.spring.iter_mut().for_each(|x| *x = [0.0; 6]);
    }

    /// Adjoint of [`XpbdData::build`]: accumulate into `g_theta` (table order).
    /// d(1/m) = −dm/m²;  d(I⁻¹) = −I⁻¹ dI I⁻¹;  off-diagonal entries appear twice in the symmetric tensor.
    pub fn accumulate_into_theta(&self, d: &XpbdData<f64>, table: &ParamTable, g_theta: &mut [f64]) {
        for (i, k) in table.kinds.iter().enumerate() {
            g_theta[i] += match *k {
                ParamKind::BodyMass(b) => -self.inv_mass[b] * d.inv_mass[b] * d.inv_mass[b],
                ParamKind::BodyInertia(b, e) => {
                    let ii = d.inv_inertia[b];
                    let gi = self.inertia[b] - ii.transpose() * self.inv_inertia[b] * ii.transpose();
                    let (rr, cc) = INERTIA_IDX[e];
                    if rr == cc {
                        gi[(rr, cc)]
                    } else {
                        gi[(rr, cc)] + gi[(cc, rr)]
                    }
                }
                ParamKind::AnchorParent(j, a) => self.r[j][a],
                ParamKind::AnchorChild(j, a) => self.t[j][a],
                ParamKind::Spring(j, f) => self.spring[j][f],
                // contact material, joint damping / armature / friction loss: not read by XPBD
                ParamKind::ShapeFriction(_)
                | ParamKind::JointPassive(..)
                | ParamKind::ShapeRestitution(_)
                | ParamKind::TendonStiffness(_)
                | ParamKind::TendonDamping(_)
                | ParamKind::ActuatorGain(_)
                | ParamKind::ActuatorTimeconst(_)
                | ParamKind::LinearContact(_) => 0.0,
            };
        }
    }
}
