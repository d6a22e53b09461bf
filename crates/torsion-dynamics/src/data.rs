//! The generalized-coordinate view of a `Model` (built from the differentiable parameter vector θ, so
//! derivatives w.r.t. masses, inertias and joint placements come from the same code) and the per-call
//! scratch `DynData`.
use crate::joints::JointModel;
use nalgebra::Matrix3;
use thiserror::Error;
use torsion_math::scalar::cv;
use torsion_math::spatial::{inertia_at_com, Se3, M6, V6};
use torsion_math::{Scalar, Vec3};
use torsion_model::params::{ParamKind, INERTIA_IDX};
use torsion_model::{JointType, Model, ParamTable};

#[derive(Debug, Error)]
pub enum DynError {
    #[error("dynamics: unsupported model: {0}")]
    Unsupported(String),
    #[error("dynamics: {what} has length {got}, expected {expected}")]
    Shape { what: &'static str, got: usize, expected: usize },
}

/// Per joint: parent body, child body, the constant placements of the joint frame in both bodies, the joint
/// model; per body: spatial inertia at its COM. Bodies are indexed as in the Model.
#[derive(Clone, Debug)]
pub struct DynModel<T: Scalar> {
    pub nq: usize,
    pub nv: usize,
    pub parent: Vec<usize>,
    pub child: Vec<usize>,
    /// X_{P←Jp}: joint frame in the parent body frame
    pub x_pj: Vec<Se3<T>>,
    /// X_{Jc←C}: child body frame in the child joint frame (inverse of the joint frame seen from the child)
    pub x_jc: Vec<Se3<T>>,
    pub joint: Vec<JointModel<T>>,
    pub q_start: Vec<usize>,
    pub v_start: Vec<usize>,
    pub inertia: Vec<M6<T>>,
    /// fixed root bodies: their world placement; other roots are not allowed
    pub root_pose: Vec<Option<Se3<T>>>,
    pub gravity: Vec3<T>,
    pub armature: Vec<T>,
    pub damping: Vec<T>,
    pub nb: usize,
}

impl<T: Scalar> DynModel<T> {
    /// Build from the model and a full parameter vector θ (table order of `Model::param_table`).
    pub fn build(model: &Model, table: &ParamTable, theta: &[T]) -> Result<Self, DynError> {
        let nb = model.body_count();
        let nj = model.joint_count();
        let mut mass = vec![T::zero(); nb];
        let mut ic = vec![Matrix3::<T>::zeros(); nb];
        let mut r: Vec<Vec3<T>> = model.joint_anchor_parent.iter().map(cv).collect();
        let mut t: Vec<Vec3<T>> = model.joint_anchor_child.iter().map(cv).collect();
        for k in 0..nb {
            mass[k] = T::c(if model.body_fixed[k] { 0.0 } else { model.body_mass[k] });
        }
        for (i, k) in table.kinds.iter().enumerate() {
            match *k {
                ParamKind::BodyMass(b) => mass[b] = theta[i],
                ParamKind::BodyInertia(b, e) => {
                    let (rr, cc) = INERTIA_IDX[e];
                    ic[b][(rr, cc)] = theta[i];
                    ic[b][(cc, rr)] = theta[i];
                }
                ParamKind::AnchorParent(j, a) => r[j][a] = theta[i],
                ParamKind::AnchorChild(j, a) => t[j][a] = theta[i],
                ParamKind::Spring(..) => {}
            }
        }
        let mut is_child = vec![false; nb];
        for j in 0..nj {
            is_child[model.joint_child[j]] = true;
        }
        let mut root_pose = vec![None; nb];
        for k in 0..nb {
            if model.body_fixed[k] {
                let (x, q) = model.body_pose0[k];
                root_pose[k] = Some(Se3::new(cv_mat(&q.to_mat()), cv(&x)));
            } else if !is_child[k] {
                return Err(DynError::Unsupported(format!(
                    "body '{}' has no joint: in generalized coordinates a loose body needs a free joint",
                    model.body_name[k]
                )));
            }
        }
        let mut x_pj = Vec::with_capacity(nj);
        let mut x_jc = Vec::with_capacity(nj);
        let mut joint = Vec::with_capacity(nj);
        for j in 0..nj {
            x_pj.push(Se3::new(cv_mat(&model.joint_frame_parent[j].to_mat()), r[j]));
            let cj = Se3::new(cv_mat(&model.joint_frame_child[j].to_mat()), t[j]);
            x_jc.push(cj.inverse());
            joint.push(JointModel::new(model.joint_type[j], &cv(&model.joint_axis[j]), &cj));
        }
        let inertia = (0..nb).map(|k| inertia_at_com(mass[k], &ic[k])).collect();
        let _ = JointType::Fixed;
        Ok(DynModel {
            nq: model.nq(),
            nv: model.nv(),
            parent: model.joint_parent.clone(),
            child: model.joint_child.clone(),
            x_pj,
            x_jc,
            joint,
            q_start: model.joint_q_start(),
            v_start: model.joint_v_start(),
            inertia,
            root_pose,
            gravity: cv(&model.gravity),
            armature: vec![T::zero(); model.nv()],
            damping: vec![T::zero(); model.nv()],
            nb,
        })
    }

    /// From the model's current parameter values.
    pub fn from_model(model: &Model) -> Result<Self, DynError> {
        let table = model.param_table();
        let theta: Vec<T> = model.param_vector().iter().map(|&v| T::c(v)).collect();
        Self::build(model, &table, &theta)
    }

    pub fn check_q(&self, q: &[T]) -> Result<(), DynError> {
        if q.len() != self.nq {
            return Err(DynError::Shape { what: "q", got: q.len(), expected: self.nq });
        }
        Ok(())
    }
    pub fn check_v(&self, what: &'static str, v: &[T]) -> Result<(), DynError> {
        if v.len() != self.nv {
            return Err(DynError::Shape { what, got: v.len(), expected: self.nv });
        }
        Ok(())
    }
}

fn cv_mat<T: Scalar>(m: &Matrix3<f64>) -> Matrix3<T> {
    m.map(|v| T::c(v))
}

/// Scratch for the algorithms (allocated once per model).
#[derive(Clone, Debug)]
pub struct DynData<T: Scalar> {
    /// X_{P←C}(q) per joint
    pub x_pc: Vec<Se3<T>>,
    /// world placement of each body frame
    pub o_m: Vec<Se3<T>>,
    pub vel: Vec<V6<T>>,
    pub acc: Vec<V6<T>>,
    pub f: Vec<V6<T>>,
    pub ia: Vec<M6<T>>,
    pub pa: Vec<V6<T>>,
    /// joint motion subspace columns in the child frame (per joint, up to 6)
    pub s: Vec<[V6<T>; 6]>,
}

impl<T: Scalar> DynData<T> {
    pub fn new(dm: &DynModel<T>) -> Self {
        let nb = dm.nb;
        let nj = dm.parent.len();
        DynData {
            x_pc: vec![Se3::identity(); nj],
            o_m: vec![Se3::identity(); nb],
            vel: vec![V6::zeros(); nb],
            acc: vec![V6::zeros(); nb],
            f: vec![V6::zeros(); nb],
            ia: vec![M6::zeros(); nb],
            pa: vec![V6::zeros(); nb],
            s: vec![[V6::zeros(); 6]; nj],
        }
    }
}
