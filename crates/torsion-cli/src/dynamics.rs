//! `torsion dynamics`: evaluate the generalized-coordinate algorithms (CRBA, RNEA, gravity, bias, ABA and the
//! RNEA / ABA derivatives) of a URDF model at given points and print JSON (used by the Pinocchio cross-check
//! in tests/python).
use anyhow::{bail, Context, Result};
use clap::Args;
use nalgebra::DMatrix;
use serde_json::{json, Value};
use std::path::PathBuf;
use torsion_dynamics::derivatives::{aba_derivatives, rnea_derivatives};
use torsion_dynamics::forward_kinematics;
use torsion_dynamics::passive::passive_forces;
use torsion_dynamics::regressor::{aba_inertial_derivatives, inertial_parameters, joint_torque_regressor};
use torsion_dynamics::{aba, crba, gravity, nonlinear_effects, rnea, DynData, DynModel};

#[derive(Args, Debug)]
pub struct DynamicsArgs {
    #[command(flatten)]
    src: crate::simulate::ModelArgs,
    /// JSON file {"q": [[...]], "v": [[...]], "a": [[...]], "tau": [[...]]} (same number of points each)
    #[arg(long)]
    input: PathBuf,
    /// also compute the RNEA and ABA derivatives
    #[arg(long)]
    derivatives: bool,
    /// output JSON (default: stdout)
    #[arg(long)]
    out: Option<PathBuf>,
}

fn mat(m: &DMatrix<f64>) -> Value {
    json!((0..m.nrows()).map(|i| (0..m.ncols()).map(|j| m[(i, j)]).collect::<Vec<_>>()).collect::<Vec<_>>())
}

fn rows(v: &Value, key: &str) -> Result<Vec<Vec<f64>>> {
    let arr = v.get(key).and_then(|a| a.as_array()).with_context(|| format!("input: missing array '{key}'"))?;
    arr.iter()
        .enumerate()
        .map(|(i, r)| {
            r.as_array()
                .with_context(|| format!("input: {key}[{i}] is not an array"))?
                .iter()
                .map(|x| x.as_f64().with_context(|| format!("input: {key}[{i}] has a non-number")))
                .collect()
        })
        .collect()
}

pub fn run(a: &DynamicsArgs) -> Result<()> {
    let model = a.src.load()?;
    let text = std::fs::read_to_string(&a.input).with_context(|| format!("reading {}", a.input.display()))?;
    let input: Value = serde_json::from_str(&text).with_context(|| format!("{}: not JSON", a.input.display()))?;
    let (qs, vs, accs, taus) = (rows(&input, "q")?, rows(&input, "v")?, rows(&input, "a")?, rows(&input, "tau")?);
    if vs.len() != qs.len() || accs.len() != qs.len() || taus.len() != qs.len() {
        bail!("input: q, v, a, tau must have the same number of points");
    }
    let dm: DynModel<f64> = DynModel::from_model(&model)?;
    let mut d = DynData::new(&dm);
    let mut points = vec![];
    for i in 0..qs.len() {
        let (q, v, acc, tau) = (&qs[i], &vs[i], &accs[i], &taus[i]);
        let m = crba(&dm, q, &mut d).with_context(|| format!("point {i}"))?;
        let mut p = json!({
            "M": mat(&m),
            "rnea": rnea(&dm, q, v, acc, &mut d)?,
            "g": gravity(&dm, q, &mut d)?,
            "nle": nonlinear_effects(&dm, q, v, &mut d)?,
            "aba": aba(&dm, q, v, tau, &mut d)?,
        });
        // forward dynamics with the passive joint forces (damping, springs): MuJoCo's qacc without constraints
        let pf = passive_forces(&model, q, v)?;
        let tau_p: Vec<f64> = tau.iter().zip(&pf).map(|(a, b)| a + b).collect();
        p["passive"] = json!(pf);
        p["aba_passive"] = json!(aba(&dm, q, v, &tau_p, &mut d)?);
        if a.derivatives {
            let r = rnea_derivatives(&model, q, v, acc)?;
            let f = aba_derivatives(&model, q, v, tau)?;
            p["drnea_dq"] = mat(&r.d_dq);
            p["drnea_dv"] = mat(&r.d_dv);
            p["drnea_da"] = mat(&r.d_dthird);
            p["daba_dq"] = mat(&f.d_dq);
            p["daba_dv"] = mat(&f.d_dv);
            p["daba_dtau"] = mat(&f.d_dthird);
            // the 10 inertial parameters per body (regressor.rs), and the body frames they are expressed in
            p["regressor"] = mat(&joint_torque_regressor(&dm, q, v, acc, &mut d)?);
            p["daba_dpi"] = mat(&aba_inertial_derivatives(&dm, q, v, tau, &mut d)?);
            forward_kinematics(&dm, q, &mut d);
            p["body_pose"] = json!(d
                .o_m
                .iter()
                .map(|x| json!({"rot": mat(&DMatrix::from_column_slice(3, 3, x.rot.as_slice())), "pos": x.pos.as_slice()}))
                .collect::<Vec<_>>());
        }
        points.push(p);
    }
    let out = json!({
        "model": a.src.model.display().to_string(), "nq": dm.nq, "nv": dm.nv,
        "joint_names": model.joint_name, "joint_types": model.joint_type.iter().map(|t| format!("{t:?}")).collect::<Vec<_>>(),
        "q_start": model.joint_q_start(), "v_start": model.joint_v_start(), "qpos0": model.qpos0, "points": points,
        "body_names": model.body_name, "joint_child": model.joint_child, "inertial_parameters": inertial_parameters(&dm),
    });
    let s = serde_json::to_string(&out)?;
    match &a.out {
        Some(p) => std::fs::write(p, s).with_context(|| format!("writing {}", p.display()))?,
        None => println!("{s}"),
    }
    Ok(())
}
