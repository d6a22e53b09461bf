//! MJCF loader tests: the dm_control suite models against MuJoCo, small fixtures (defaults, orientations,
//! multi-joint bodies, welding, inertia from geoms, unsupported elements) and malformed files (each error must
//! name the file, the element and the problem, with the line).
//!
//! MuJoCo reference values live in `tests/data/dm_control_mujoco_ref.json`, written by
//! `tests/data/dm_control_mujoco_ref.py` (pip `mujoco` 4.0.0, dm-control 1.0.50 suite XMLs; the file records
//! both versions). The fixture values marked "MuJoCo" were printed by the same `mujoco` 4.0.0 from the fixture
//! files (`mujoco.MjModel.from_xml_path`, then `mj_forward`: `xquat`, `xipos`, `jnt_range`, ...).
//!
//! The dm_control tests need the suite XMLs: `TORSION_DM_CONTROL_DIR`, or `python3 -m pip download` reaching
//! PyPI (see `dm_control_suite_dir`). They fail, not skip, when the files cannot be obtained.
#![allow(clippy::needless_range_loop)]
use serde_json::Value;
use std::f64::consts::{FRAC_PI_2, FRAC_PI_3, FRAC_PI_4, PI};
use std::path::{Path, PathBuf};
use torsion_math::{Mat3, Quat, Vec3};
use torsion_model::io::robots::DM_CONTROL_VERSION;
use torsion_model::io::{dm_control_suite_dir, load_mjcf, load_mjcf_str};
use torsion_model::{ActuatorTarget, JointType, Model, ModelError, ShapeKind, TendonKind};

// ----------------------------------------------------------------------------------------------- helpers

fn suite() -> PathBuf {
    dm_control_suite_dir().unwrap_or_else(|| {
        panic!(
            "dm_control suite XMLs not available: set TORSION_DM_CONTROL_DIR to a folder holding dm_control/suite's \
             *.xml and common/, or make `python3 -m pip download --no-deps dm-control=={DM_CONTROL_VERSION}` work \
             (python3 with pip on PATH and PyPI reachable)"
        )
    })
}
fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}
fn fixture(name: &str) -> Model {
    load_mjcf(&data("mjcf").join(name)).unwrap_or_else(|e| panic!("{e}"))
}
fn reference() -> Value {
    let text = std::fs::read_to_string(data("dm_control_mujoco_ref.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}
fn nums(v: &Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()
}
fn v3(v: &Value) -> Vec3 {
    let a = nums(v);
    Vec3::new(a[0], a[1], a[2])
}
#[track_caller]
fn close(a: f64, b: f64, tol: f64) {
    assert!((a - b).abs() <= tol * (1.0 + b.abs()), "{a} vs {b}");
}
#[track_caller]
fn close_v(a: &Vec3, b: &Vec3, tol: f64) {
    assert!((a - b).norm() <= tol, "{a:?} vs {b:?}");
}
#[track_caller]
fn close_m(a: &Mat3, b: &Mat3, tol: f64) {
    assert!((a - b).norm() <= tol * (1.0 + b.norm()), "{a:?} vs {b:?}");
}
/// Quaternions equal up to sign.
#[track_caller]
fn close_q(a: &Quat, b: [f64; 4], tol: f64) {
    let b = Quat::from_array(b);
    assert!(a.dot(&b).abs() >= 1.0 - tol, "{a:?} vs {b:?}");
}
fn body(m: &Model, name: &str) -> usize {
    m.body_index(name).unwrap_or_else(|| panic!("no body '{name}' in {:?}", m.body_name))
}
fn joint(m: &Model, name: &str) -> usize {
    m.joint_index(name).unwrap_or_else(|| panic!("no joint '{name}' in {:?}", m.joint_name))
}
/// Inertia about the COM in world axes at a pose.
fn world_inertia(m: &Model, pose: &[(Vec3, Quat)], b: usize) -> Mat3 {
    let r = pose[b].1.to_mat();
    r * m.body_inertia[b] * r.transpose()
}
/// Joint frame (parent side) in the world: (anchor, axis).
fn joint_world(m: &Model, pose: &[(Vec3, Quat)], j: usize) -> (Vec3, Vec3) {
    let (xp, qp) = pose[m.joint_parent[j]];
    (xp + qp.rotate(&m.joint_anchor_parent[j]), qp.mul(&m.joint_frame_parent[j]).rotate(&m.joint_axis[j]))
}
fn sphere_mass(rho: f64, r: f64) -> f64 {
    rho * 4.0 / 3.0 * PI * r * r * r
}
fn parallel(m: f64, d: Vec3) -> Mat3 {
    (Mat3::identity() * d.dot(&d) - d * d.transpose()) * m
}

// ----------------------------------------------------------------------------------------------- dm_control

/// Compare the weld groups of MuJoCo (a body with joints plus the jointless bodies welded to it, named by the
/// former) with our bodies at `pose`: mass, COM, orientation of the body frame and inertia in world axes.
fn check_groups(m: &Model, pose: &[(Vec3, Quat)], groups: &Value, what: &str) {
    for (name, g) in groups.as_object().unwrap() {
        let b = body(m, name);
        close(m.body_mass[b], g["mass"].as_f64().unwrap(), 1e-9);
        let com = v3(&g["com"]);
        assert!(
            (pose[b].0 - com).norm() <= 1e-9 * (1.0 + com.norm()),
            "{what}: COM of {name}: {:?} vs {com:?}",
            pose[b].0
        );
        let xq = nums(&g["xquat"]);
        close_q(&pose[b].1, [xq[0], xq[1], xq[2], xq[3]], 1e-12);
        let i = nums(&g["inertia"]);
        close_m(&world_inertia(m, pose, b), &Mat3::from_row_slice(&i), 1e-9);
    }
}

fn check_against_mujoco(name: &str) {
    let path = suite().join(format!("{name}.xml"));
    let m = load_mjcf(&path).unwrap_or_else(|e| panic!("{e}"));
    let all = reference();
    assert_eq!(all["dm_control"].as_str(), Some(DM_CONTROL_VERSION), "reference measured on another dm-control");
    let r = &all["models"][name];
    let count = |k: &str| r[k].as_u64().unwrap() as usize;
    assert_eq!(m.nq(), count("nq"), "nq");
    assert_eq!(m.nv(), count("nv"), "nv");
    assert_eq!(m.joint_count(), count("njnt"), "joints");
    // one body per joint (virtual ones included) plus the world; real bodies = MuJoCo's weld groups
    assert_eq!(m.body_count(), 1 + count("njnt"));
    let groups = r["groups0"].as_object().unwrap();
    let virtual_bodies = (0..m.body_count()).filter(|&b| !m.body_fixed[b] && m.body_mass[b] == 0.0).collect::<Vec<_>>();
    assert_eq!(m.body_count() - 1 - virtual_bodies.len(), groups.len(), "real bodies vs MuJoCo weld groups");
    let welded = count("nbody") - 1 - groups.len(); // MuJoCo bodies merged into their parent
    let multi: usize =
        groups.keys().map(|g| r["joints"].as_array().unwrap().iter().filter(|j| j["body"] == **g).count() - 1).sum();
    assert_eq!(m.body_count(), count("nbody") - welded + multi, "nbody − welded + virtual");
    assert_eq!(m.shapes.len(), count("ngeom"));
    assert_eq!(m.extras.sites.len(), count("nsite"));
    assert_eq!(m.extras.actuators.len(), count("nu"));
    close(m.dt, r["timestep"].as_f64().unwrap(), 1e-15);
    close_v(&m.gravity, &v3(&r["gravity"]), 1e-15);

    let total: f64 = (0..m.body_count()).filter(|&b| !m.body_fixed[b]).map(|b| m.body_mass[b]).sum();
    let want = r["total_mass"].as_f64().unwrap();
    assert!((total - want).abs() <= 1e-9 * want, "{name}: total mass {total} vs MuJoCo {want}");

    let q0 = nums(&r["qpos0"]);
    assert_eq!(m.qpos0.len(), q0.len());
    for k in 0..q0.len() {
        close(m.qpos0[k], q0[k], 1e-12);
    }
    // body COM / orientation / inertia at qpos0 (body_pose0) and at a random configuration
    check_groups(&m, &m.body_pose0, &r["groups0"], "qpos0");
    let pose0 = m.forward_kinematics(&m.qpos0).unwrap();
    check_groups(&m, &pose0, &r["groups0"], "FK(qpos0)");
    let qr = nums(&r["qpos_random"]);
    let pose = m.forward_kinematics(&qr).unwrap();
    check_groups(&m, &pose, &r["groups_random"], "random q");

    // joints: type, reference position, limits, dynamics parameters, anchor and axis in the world at qpos0
    let qs = m.joint_q_start();
    for rj in r["joints"].as_array().unwrap() {
        let jn = rj["name"].as_str().unwrap();
        let j = joint(&m, jn);
        let ty = match m.joint_type[j] {
            JointType::Revolute => "hinge",
            JointType::Prismatic => "slide",
            JointType::Ball => "ball",
            JointType::Free => "free",
            JointType::Fixed => "fixed",
        };
        assert_eq!(ty, rj["type"].as_str().unwrap(), "{jn}");
        let rq0 = nums(&rj["qpos0"]);
        assert_eq!(&m.qpos0[qs[j]..qs[j] + rq0.len()], &rq0[..]);
        let range = nums(&rj["range"]);
        match m.joint_limit[j] {
            Some((lo, hi)) => {
                assert!(rj["limited"].as_bool().unwrap(), "{jn} limited");
                close(lo, range[0], 1e-12);
                close(hi, range[1], 1e-12);
            }
            None => assert!(!rj["limited"].as_bool().unwrap(), "{jn} unlimited"),
        }
        close(m.joint_damping[j], rj["damping"].as_f64().unwrap(), 1e-12);
        close(m.joint_armature[j], rj["armature"].as_f64().unwrap(), 1e-12);
        close(m.joint_frictionloss[j], rj["frictionloss"].as_f64().unwrap(), 1e-12);
        close(m.joint_stiffness[j], rj["stiffness"].as_f64().unwrap(), 1e-12);
        if m.joint_type[j].dof() == 1 {
            close(m.joint_springref[j], nums(&rj["springref"])[0], 1e-12);
        }
        let (anchor, axis) = joint_world(&m, &m.body_pose0, j);
        let want_anchor = v3(&rj["xanchor"]);
        if m.joint_type[j] == JointType::Free {
            // parent side at the world origin; the child side is the body origin
            let (x, q) = m.body_pose0[m.joint_child[j]];
            close_v(&anchor, &Vec3::zeros(), 0.0);
            close_v(&(x + q.rotate(&m.joint_anchor_child[j])), &want_anchor, 1e-12);
        } else {
            close_v(&anchor, &want_anchor, 1e-12);
        }
        if m.joint_type[j].dof() == 1 {
            close_v(&axis, &v3(&rj["xaxis"]), 1e-12);
        }
    }
    // the body frames of virtual bodies coincide with their real body's at qpos0
    for &v in &virtual_bodies {
        let real = &m.body_name[v][..m.body_name[v].find('/').unwrap()];
        let b = body(&m, real);
        let origin = |k: usize| m.body_pose0[k].0 - m.body_pose0[k].1.rotate(&m.body_com[k]);
        close_v(&origin(v), &origin(b), 1e-12);
        close_q(&m.body_pose0[v].1, m.body_pose0[b].1.to_array(), 1e-12);
    }
}

#[test]
fn dm_control_cartpole_matches_mujoco() {
    check_against_mujoco("cartpole");
    let m = load_mjcf(&suite().join("cartpole.xml")).unwrap();
    assert_eq!(m.body_name, ["world", "cart", "pole_1"]);
    assert_eq!(m.joint_type, [JointType::Prismatic, JointType::Revolute]);
    // the pole geom comes from the class default (fromto + mass)
    let pole = m.shapes.iter().find(|s| s.name == "pole_1").unwrap();
    assert_eq!(pole.kind, ShapeKind::Capsule { radius: 0.045, half_length: 0.5 });
    let a = &m.extras.actuators[0];
    assert_eq!(
        (a.kind.as_str(), &a.target, a.gear[0], a.ctrlrange, a.ctrllimited),
        ("motor", &ActuatorTarget::Joint("slider".into()), 10.0, (-1.0, 1.0), true)
    );
}

#[test]
fn dm_control_acrobot_matches_mujoco() {
    check_against_mujoco("acrobot");
}

#[test]
fn dm_control_hopper_matches_mujoco() {
    check_against_mujoco("hopper");
    // rootx, rootz, rooty on one body: two virtual bodies
    let m = load_mjcf(&suite().join("hopper.xml")).unwrap();
    assert_eq!(&m.body_name[..4], ["world", "torso/rootx", "torso/rootz", "torso"]);
    assert_eq!((m.body_mass[1], m.body_mass[2]), (0.0, 0.0));
    assert_eq!(m.joint_parent[..3], [0, 1, 2]);
}

#[test]
fn dm_control_cheetah_matches_mujoco() {
    // settotalmass="14" rescales masses and inertias
    check_against_mujoco("cheetah");
}

#[test]
fn dm_control_humanoid_matches_mujoco() {
    // free joint, multi-joint bodies with joints at different positions, welded head and hands
    check_against_mujoco("humanoid");
    let m = load_mjcf(&suite().join("humanoid.xml")).unwrap();
    assert_eq!(m.joint_type[0], JointType::Free);
    assert!(m.body_index("head").is_none() && m.body_index("right_hand").is_none(), "welded bodies are merged");
    let head = m.shapes.iter().find(|s| s.name == "head").unwrap();
    assert_eq!(head.body, body(&m, "torso"));
}

// ----------------------------------------------------------------------------------------------- fixtures

#[test]
fn defaults_classes_and_childclass() {
    let m = fixture("defaults.xml");
    let (rail, hip, knee) = (joint(&m, "rail"), joint(&m, "hip"), joint(&m, "knee"));
    // class "slider" (explicit class attribute) over "main"
    assert_eq!(m.joint_type[rail], JointType::Prismatic);
    assert_eq!(m.joint_axis[rail], Vec3::x());
    assert_eq!((m.joint_damping[rail], m.joint_armature[rail], m.joint_frictionloss[rail]), (0.1, 0.01, 0.3));
    assert_eq!(m.joint_limit[rail], None);
    // childclass "leg": range without `limited` → limited (autolimits)
    assert_eq!(m.joint_type[hip], JointType::Revolute);
    assert_eq!(m.joint_axis[hip], Vec3::y());
    assert_eq!((m.joint_damping[hip], m.joint_armature[hip]), (0.5, 0.01));
    assert_eq!(m.joint_limit[hip], Some((-1.0, 1.0)));
    // class "knee" inherits "leg" (nested default), limited="false" wins over the range; radians
    assert_eq!(m.joint_axis[knee], Vec3::y());
    assert_eq!((m.joint_damping[knee], m.joint_armature[knee], m.joint_stiffness[knee]), (0.5, 0.02, 3.0));
    assert_eq!(m.joint_springref[knee], 0.2);
    assert_eq!(m.joint_limit[knee], None);
    // geoms (MuJoCo: masses 4, 1.8325957145940466, 2.0943951023931957; friction 1 / 0.7 / 0.7)
    let s = |n: &str| m.shapes.iter().find(|s| s.name == n).unwrap();
    assert_eq!(s("cart").kind, ShapeKind::Box { half_extents: Vec3::new(0.1, 0.1, 0.1) });
    assert_eq!(s("cart").friction, [1.0, 0.005, 0.0001]);
    assert_eq!(s("thigh").kind, ShapeKind::Capsule { radius: 0.05, half_length: 0.2 });
    assert_eq!(s("thigh").friction, [0.7, 0.005, 0.0001]);
    // size="0.1" over the class's "0.05 0.2" (MuJoCo keeps the second entry)
    assert_eq!(s("shin").kind, ShapeKind::Sphere { radius: 0.1 });
    close(m.body_mass[body(&m, "base")], 4.0, 1e-12);
    close(m.body_mass[body(&m, "thigh")], 1.8325957145940466, 1e-12);
    close(m.body_mass[body(&m, "shin")], 2.0943951023931957, 1e-12);
}

/// MuJoCo 4.0.0 `body_quat` of the bodies of orient_deg.xml / orient_rad.xml.
const ORIENT_MUJOCO: [(&str, [f64; 4]); 5] = [
    ("euler", [0.7233174113647118, 0.3919038373291199, 0.20056212114657512, 0.5319756951821668]),
    ("axisangle", [0.9396926207859084, 0.0914087282642836, 0.1828174565285672, 0.2742261847928508]),
    ("xyaxes", [0.8204732385702833, 0.42470820027786693, 0.1759198966061612, 0.3398511429799873]),
    ("zaxis", [0.9998919327768259, 0.014701114509568984, 0.0, 0.0]),
    ("quat", [0.9805806756909201, 0.0, -0.19611613513818402, 0.0]),
];

#[test]
fn orientations_in_degrees_and_radians() {
    for file in ["orient_deg.xml", "orient_rad.xml"] {
        let m = fixture(file);
        for (name, q) in ORIENT_MUJOCO {
            let b = body(&m, name);
            close_q(&m.body_pose0[b].1, q, 1e-14);
        }
        // ranges: hinge −90..45 deg, ball 0..60 deg, slide unscaled (MuJoCo jnt_range)
        assert_eq!(m.joint_limit[0], Some((-FRAC_PI_2, FRAC_PI_4)));
        assert_eq!(m.joint_type[1], JointType::Ball);
        let (lo, hi) = m.joint_limit[1].unwrap();
        assert!(lo == 0.0 && (hi - FRAC_PI_3).abs() < 1e-15);
        assert_eq!(m.joint_limit[2], Some((-0.5, 0.5)));
        assert_eq!(m.joint_limit[3], None);
        assert_eq!(m.qpos0, [0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
    }
    // eulerseq="XyZ": X extrinsic, y intrinsic, Z extrinsic (MuJoCo body_quat)
    let m = fixture("eulerseq.xml");
    close_q(
        &m.body_pose0[1].1,
        [0.8872721876797527, 0.052132410889547995, 0.2794438940784743, 0.36323736972823584],
        1e-14,
    );
}

#[test]
fn body_with_two_joints_gets_a_virtual_body() {
    let m = fixture("multi_joint.xml");
    assert_eq!(m.body_name, ["world", "upper/hz", "upper", "lower"]);
    assert_eq!((m.body_mass[1], m.body_inertia[1]), (0.0, Mat3::zeros()));
    assert_eq!(m.joint_name, ["hz", "hy", "s"]);
    assert_eq!((m.joint_parent.clone(), m.joint_child.clone()), (vec![0, 1, 2], vec![1, 2, 3]));
    // hinge ref 0.4 and slide ref 0.1 are the reference configuration
    assert_eq!(m.qpos0, [0.0, 0.4, 0.1]);
    // MuJoCo xipos / xquat at qpos0 and at q = qpos0 + (0.3, −0.2, 0.15)
    let check = |pose: &[(Vec3, Quat)], upper: ([f64; 3], [f64; 4]), lower: ([f64; 3], [f64; 4])| {
        close_v(&pose[2].0, &Vec3::from(upper.0), 1e-12);
        close_q(&pose[2].1, upper.1, 1e-14);
        close_v(&pose[3].0, &Vec3::from(lower.0), 1e-12);
        close_q(&pose[3].1, lower.1, 1e-14);
    };
    check(
        &m.body_pose0,
        ([0.15, 0.05960079923851836, 1.7059800266476275], [0.9950041652780258, 0.09983341664682815, 0.0, 0.0]),
        (
            [0.3401098901098901, 0.12832717173526792, 1.3835361086696194],
            [0.9282776153555924, 0.19849324907572075, 0.31291433368083116, 0.03139615706070345],
        ),
    );
    let q = [0.3, 0.2, 0.25];
    let pose = m.forward_kinematics(&q).unwrap();
    check(
        &pose,
        (
            [0.17297793067104805, 0.09239897108632303, 1.7289961937939098],
            [0.9883596793380165, 0.1097689803826862, -0.07732748765409583, 0.07152883934263402],
        ),
        (
            [0.5478002986732514, 0.19480652058942807, 1.4851072962742697],
            [0.9452856726327596, 0.1846757091162137, 0.2453678897977032, 0.11011120848431899],
        ),
    );
    // MuJoCo xanchor / xaxis at q
    let anchors = [
        [0.0, -0.019866933079506124, 2.0980066577841243],
        [0.047766824456280305, 0.03434840696078191, 1.9049288823005672],
        [0.36079458999319963, 0.17947481727463468, 1.4650971610339232],
    ];
    let axes = [
        [0.0, -0.19866933079506124, 0.9800665778412416],
        [-0.20896434210788312, 0.5215789555513677, 0.8272178049663605],
        [0.9615913109187819, 0.0026113308857924344, 0.27447282509658993],
    ];
    for j in 0..3 {
        let (a, x) = joint_world(&m, &pose, j);
        close_v(&a, &Vec3::from(anchors[j]), 1e-12);
        close_v(&x, &Vec3::from(axes[j]), 1e-12);
    }
    // MuJoCo world inertia of "upper" at qpos0
    let i = Mat3::new(
        0.21492588936235263,
        -0.020643385151411016,
        0.10183701610830133,
        -0.020643385151411016,
        0.25867760602970247,
        0.04046378368080418,
        0.10183701610830133,
        0.04046378368080418,
        0.06726590930680094,
    );
    close_m(&world_inertia(&m, &m.body_pose0, 2), &i, 1e-12);
}

#[test]
fn welded_bodies_are_merged() {
    let m = fixture("weld.xml");
    // post → world, weight → arm
    assert_eq!(m.body_name, ["world", "arm", "child"]);
    let (m1, m2) = (sphere_mass(1000.0, 0.1), sphere_mass(1000.0, 0.2));
    let c2 = Vec3::new(0.5, 0.1, 0.0); // weight geom centre in the arm frame (weight frame turned 90° about z)
    let com = c2 * m2 / (m1 + m2);
    let want = Mat3::identity() * (0.4 * m1 * 0.01 + 0.4 * m2 * 0.04) + parallel(m1, -com) + parallel(m2, c2 - com);
    close(m.body_mass[1], m1 + m2, 1e-14);
    close_v(&m.body_com[1], &com, 1e-14);
    close_m(&m.body_inertia[1], &want, 1e-14);
    // MuJoCo: mass 37.699111843077524, COM (0.444…, 0.0888…, 1)
    close(m.body_mass[1], 37.699111843077524, 1e-14);
    close_v(&m.body_pose0[1].0, &Vec3::new(0.4444444444444444, 0.08888888888888889, 1.0), 1e-14);
    // the child joint hangs from the merged frame: anchor (0.1, 0, 0) in the arm frame, frame turned 90° about z
    let j = joint(&m, "spin");
    close_v(&m.joint_anchor_parent[j], &(Vec3::new(0.1, 0.0, 0.0) - com), 1e-14);
    close_q(&m.joint_frame_parent[j], [FRAC_PI_4.cos(), 0.0, 0.0, FRAC_PI_4.sin()], 1e-14);
    close_v(&m.body_pose0[2].0, &Vec3::new(0.1, 0.0, 1.0), 1e-14);
    // shapes and sites follow their merged body
    let post = m.shapes.iter().find(|s| s.name == "post").unwrap();
    assert_eq!(post.body, 0);
    close_v(&post.pose.0, &Vec3::new(0.0, 0.0, 0.5), 1e-14);
    let weight = m.shapes.iter().find(|s| s.name == "weight").unwrap();
    assert_eq!(weight.body, 1);
    close_v(&weight.pose.0, &(c2 - com), 1e-14);
    let site = |n: &str| &m.extras.sites[m.extras.site_index(n).unwrap()];
    assert_eq!(site("post_top").body, 0);
    close_v(&site("post_top").pose.0, &Vec3::new(0.0, 0.0, 1.0), 1e-14);
    assert_eq!(site("tip").body, 1);
    close_v(&site("tip").pose.0, &(Vec3::new(0.5, 0.3, 0.0) - com), 1e-14);
}

#[test]
fn inertia_from_geoms_matches_hand_values() {
    let m = fixture("geom_inertia.xml");
    // sphere, density 800, centre offset (0.1, 0, 0): I = 2/5 m r²
    let b = body(&m, "ball");
    let ms = sphere_mass(800.0, 0.2);
    close(m.body_mass[b], ms, 1e-14);
    close_v(&m.body_com[b], &Vec3::new(0.1, 0.0, 0.0), 1e-15);
    close_m(&m.body_inertia[b], &(Mat3::identity() * 0.4 * ms * 0.04), 1e-14);
    // box of mass 2, half sizes (0.1, 0.2, 0.3) turned 90° about z: m/3 (b² + c²) with x ↔ y swapped
    let b = body(&m, "brick");
    close(m.body_mass[b], 2.0, 1e-15);
    let (x, y, z) = (0.01, 0.04, 0.09);
    close_m(&m.body_inertia[b], &Mat3::from_diagonal(&Vec3::new(x + z, y + z, x + y).scale(2.0 / 3.0)), 1e-14);
    // capsule from (0,0,0) to (0.3,0.4,0): centre, z along the segment, half-length 0.25 (MuJoCo: mass and
    // world inertia below)
    let b = body(&m, "rod");
    close(m.body_mass[b], 4.4505895925855405, 1e-14);
    let rod = m.shapes.iter().find(|s| s.name == "rod").unwrap();
    assert_eq!(rod.kind, ShapeKind::Capsule { radius: 0.05, half_length: 0.25 });
    close_v(&(m.body_com[b] + rod.pose.0), &Vec3::new(0.15, 0.2, 0.0), 1e-15);
    close_v(&rod.pose.1.rotate(&Vec3::z()), &Vec3::new(0.6, 0.8, 0.0), 1e-15);
    let i = Mat3::new(
        0.0803069622073891,
        -0.05615596868291755,
        0.0,
        -0.05615596868291755,
        0.047549313809020506,
        0.0,
        0.0,
        0.0,
        0.12242393871957724,
    );
    close_m(&m.body_inertia[b], &i, 1e-12);
    // explicit <inertial> wins over the geom; its euler turns diag (0.1, 0.2, 0.3) into (0.2, 0.1, 0.3)
    let b = body(&m, "dish");
    assert_eq!(m.body_mass[b], 3.0);
    close_v(&m.body_com[b], &Vec3::new(0.0, 0.0, 0.1), 1e-15);
    close_m(&m.body_inertia[b], &Mat3::from_diagonal(&Vec3::new(0.2, 0.1, 0.3)), 1e-15);
    // the floor plane belongs to the world
    assert_eq!(m.shapes[0].kind, ShapeKind::Plane { half_extents: [5.0, 5.0] });
    assert_eq!(m.shapes[0].body, 0);
    // free joint: qpos0 = declared pose; q = body-origin pose in the world
    assert_eq!(&m.qpos0[..7], &[0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0]);
    let mut q = m.qpos0.clone();
    q[..7].copy_from_slice(&[1.0, 2.0, 3.0, FRAC_PI_4.cos(), 0.0, 0.0, FRAC_PI_4.sin()]);
    let pose = m.forward_kinematics(&q).unwrap();
    close_v(&pose[body(&m, "ball")].0, &Vec3::new(1.0, 2.1, 3.0), 1e-14);
}

#[test]
fn unsupported_elements_are_reported_once_and_extras_kept() {
    let m = fixture("unsupported.xml");
    for w in ["contact/exclude ignored", "equality/connect ignored", "geom@condim ignored"] {
        assert_eq!(m.extras.warnings.iter().filter(|x| *x == w).count(), 1, "{w} in {:?}", m.extras.warnings);
    }
    assert!(!m.extras.warnings.iter().any(|w| w.contains("light") || w.contains("texture")), "{:?}", m.extras.warnings);
    assert_eq!((m.dt, m.gravity), (0.004, Vec3::new(0.0, 0.0, -9.8)));
    assert_eq!(m.integrator, torsion_model::Integrator::Rk4, "<option integrator=\"RK4\"> is read");
    assert!(!m.extras.warnings.iter().any(|w| w.contains("integrator")), "{:?}", m.extras.warnings);
    assert!(!m.contact_enabled, "<flag contact=\"disable\"/>");
    assert!(!m.extras.warnings.iter().any(|w| w.contains("flag")), "{:?}", m.extras.warnings);
    // tendons
    let t = &m.extras.tendons;
    assert_eq!((t[0].name.as_str(), t[0].kind, t[0].elements.len()), ("coupling", TendonKind::Fixed, 2));
    assert_eq!(
        t[0].elements[1],
        ("joint".to_string(), vec![("joint".to_string(), "jb".to_string()), ("coef".to_string(), "-1".to_string())])
    );
    assert_eq!((t[1].kind, t[1].elements.len()), (TendonKind::Spatial, 2));
    assert!(t[1].attrs.contains(&("width".to_string(), "0.01".to_string())));
    // actuators, defaults from the included file (MuJoCo: ctrlrange (−1,1), (−0.5,0.5), (−2,2), all limited)
    let a = &m.extras.actuators;
    assert_eq!(a.len(), 3);
    assert_eq!(
        (&a[0].target, a[0].gear, a[0].ctrlrange, a[0].ctrllimited),
        (&ActuatorTarget::Joint("ja".into()), [5.0, 0.0, 0.0, 0.0, 0.0, 0.0], (-1.0, 1.0), true)
    );
    assert_eq!((a[1].kind.as_str(), a[1].ctrlrange, a[1].ctrllimited), ("position", (-0.5, 0.5), true));
    assert!(a[1].attrs.contains(&("kp".to_string(), "10".to_string())));
    assert_eq!(
        (&a[2].target, a[2].ctrlrange, a[2].ctrllimited),
        (&ActuatorTarget::Tendon("coupling".into()), (-2.0, 2.0), true)
    );
    // sites in the body (COM) frame
    let sb = &m.extras.sites[m.extras.site_index("sb").unwrap()];
    assert_eq!(sb.body, body(&m, "b"));
    close_v(&sb.pose.0, &Vec3::new(0.0, 0.0, -0.1), 1e-15);
}

#[test]
fn mesh_geoms_need_an_inertial() {
    let e = load_mjcf(&data("mjcf").join("mesh_no_inertial.xml")).unwrap_err();
    expect_parse(e, "mesh_no_inertial.xml", "geom 'part'", &["mesh inertia not supported", "line 6"]);
    let text = r#"<mujoco><compiler meshdir="meshes"/><asset><mesh file="part.stl"/></asset><worldbody>
        <body name="b"><joint/><inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/>
        <geom type="mesh" mesh="part"/></body></worldbody></mujoco>"#;
    let m = load_mjcf_str(text, "inline", Some(&data("mjcf"))).unwrap();
    let file = data("mjcf").join("meshes/part.stl").display().to_string();
    assert_eq!(m.shapes[0].kind, ShapeKind::Mesh { file });
    // a mesh file that is not there is an error at load time, naming the asset
    let e = load_mjcf_str(&text.replace("part.stl", "gone.stl"), "inline", Some(&data("mjcf"))).unwrap_err();
    expect_parse(e, "inline", "<mesh>", &["gone.stl not found", "line 1"]);
    assert_eq!(m.body_mass[1], 1.0);
}

// ----------------------------------------------------------------------------------------------- errors

#[track_caller]
fn expect_parse(e: ModelError, file_end: &str, element: &str, problem: &[&str]) {
    match &e {
        ModelError::Parse { file, element: el, problem: p } => {
            assert!(file.ends_with(file_end), "file {file} in {e}");
            assert_eq!(el, element, "{e}");
            for s in problem {
                assert!(p.contains(s), "'{s}' not in: {e}");
            }
        }
        other => panic!("expected a parse error, got {other}"),
    }
}
fn bad(name: &str) -> ModelError {
    load_mjcf(&data("mjcf").join(name)).expect_err(name)
}

#[test]
fn malformed_files_name_file_element_and_problem() {
    expect_parse(
        bad("bad_joint_type.xml"),
        "bad_joint_type.xml",
        "joint 'twist'",
        &["unknown joint type 'screw'", "line 4"],
    );
    expect_parse(
        bad("bad_number.xml"),
        "bad_number.xml",
        "joint 'j'",
        &["damping=\"0.1x\"", "not a finite number", "line 4"],
    );
    expect_parse(
        bad("missing_include.xml"),
        "missing_include.xml",
        "include './common/does_not_exist.xml'",
        &["cannot read included file", "does_not_exist.xml", "line 2"],
    );
    expect_parse(bad("zero_axis.xml"), "zero_axis.xml", "joint 'j'", &["zero-length axis", "line 5"]);
    let e = load_mjcf(&data("mjcf").join("no_such_file.xml")).unwrap_err();
    expect_parse(e, "no_such_file.xml", "file", &["cannot read"]);
}

#[test]
fn inline_errors() {
    let load = |t: &str| load_mjcf_str(t, "inline.xml", None).unwrap_err();
    let body = |inner: &str| format!("<mujoco><worldbody><body name=\"b\">{inner}</body></worldbody></mujoco>");
    expect_parse(load("<mujoco><worldbody>"), "inline.xml", "XML", &[]);
    expect_parse(load("<robot/>"), "inline.xml", "XML", &["expected <mujoco>"]);
    expect_parse(
        load(&body(r#"<joint class="nope"/><geom size=".1"/>"#)),
        "inline.xml",
        "<joint>",
        &["unknown default class 'nope'"],
    );
    expect_parse(
        load(&body(r#"<joint/><geom type="blob" size=".1"/>"#)),
        "inline.xml",
        "<geom>",
        &["unknown geom type 'blob'"],
    );
    expect_parse(load(&body(r#"<joint/><geom type="capsule" size=".1"/>"#)), "inline.xml", "<geom>", &["size[1] > 0"]);
    expect_parse(load(&body(r#"<joint/><geom size=".1 .2 .3 .4"/>"#)), "inline.xml", "<geom>", &["expected 1 to 3"]);
    expect_parse(
        load(&body(r#"<joint/><geom size=".1" quat="1 0 0 0" euler="0 0 1"/>"#)),
        "inline.xml",
        "<geom>",
        &["more than one orientation"],
    );
    expect_parse(
        load(&body(r#"<joint range="1 -1" limited="true"/><geom size=".1"/>"#)),
        "inline.xml",
        "<joint>",
        &["range"],
    );
    expect_parse(load(&body(r#"<joint/>"#)), "inline.xml", "body 'b'", &["mass > 0"]);
    expect_parse(
        load(&body(r#"<joint/><geom type="plane" size="1 1 1"/><geom size=".1"/>"#)),
        "inline.xml",
        "<geom>",
        &["static bodies"],
    );
    expect_parse(
        load(&body(r#"<geom size=".1"/><body name="c"><freejoint/><geom size=".1"/></body>"#)),
        "inline.xml",
        "<freejoint>",
        &["top-level"],
    );
    expect_parse(
        load(&body(r#"<joint name="j"/><geom size=".1"/><body name="c"><joint name="j"/><geom size=".1"/></body>"#)),
        "inline.xml",
        "joint 'j'",
        &["used twice"],
    );
    let act = "<mujoco><worldbody><body><joint name=\"j\"/><geom size=\".1\"/></body></worldbody>\
               <actuator><motor joint=\"k\"/></actuator></mujoco>";
    expect_parse(load(act), "inline.xml", "<motor>", &["unknown joint 'k'"]);
}

#[test]
fn frames_compose_with_their_children() {
    // MuJoCo: xpos (1, 1, 0), xquat (cos 45°, 0, 0, sin 45°), xipos (1, 1, 0.5), site_xpos (1, 1.5, 1)
    let text = r#"<mujoco><worldbody><frame pos="1 0 0" euler="0 0 90"><body name="b" pos="1 0 0"><joint/>
        <geom size=".1" pos="0 0 0.5"/><frame pos="0 0 1"><site name="s" pos="0.5 0 0"/></frame></body></frame>
        </worldbody></mujoco>"#;
    let m = load_mjcf_str(text, "inline.xml", None).unwrap();
    let (x, q) = m.body_pose0[1];
    close_v(&x, &Vec3::new(1.0, 1.0, 0.5), 1e-15);
    close_q(&q, [FRAC_PI_4.cos(), 0.0, 0.0, FRAC_PI_4.sin()], 1e-15);
    let s = &m.extras.sites[0];
    close_v(&(x + q.rotate(&s.pose.0)), &Vec3::new(1.0, 1.5, 1.0), 1e-15);
}

#[test]
fn truncated_files_never_panic() {
    // every prefix (in steps) of a valid file either loads or returns an error
    for name in ["weld.xml", "unsupported.xml", "geom_inertia.xml"] {
        let text = std::fs::read_to_string(data("mjcf").join(name)).unwrap();
        let dir = data("mjcf");
        for cut in (0..text.len()).step_by(7) {
            if text.is_char_boundary(cut) {
                let _ = load_mjcf_str(&text[..cut], name, Some(&dir));
            }
        }
        // and with attribute values damaged
        let garbled = text.replace("0.", "0.x").replace("\"1\"", "\"\"");
        assert!(load_mjcf_str(&garbled, name, Some(&dir)).is_err());
    }
}

/// `<option><flag>`: each honoured flag changes the model as MuJoCo's dynamics would (gravity off, no contacts,
/// no limits, no springs, no dampers; `passive` (MuJoCo ≤ 3.2) also no fluid); flags that would switch on
/// unmodelled physics are errors naming the file, the flag and why; disabling what torsion never applies is
/// accepted.
#[test]
fn option_flags_are_honoured_or_rejected() {
    let xml = |flags: &str| {
        format!(
            r#"<mujoco><option gravity="0 0 -9.81" density="1000" viscosity="0.01" wind="1 0 0">{flags}</option>
            <worldbody><body name="b"><joint name="j" range="-30 30" damping="0.5" stiffness="2" frictionloss="0.3"/>
            <geom type="capsule" size=".05 .2"/></body></worldbody></mujoco>"#
        )
    };
    let load = |f: &str| load_mjcf_str(&xml(f), "flags.xml", None);
    let m = load("").unwrap();
    let on = (m.gravity, m.contact_enabled, m.joint_limit[0].is_some(), m.joint_damping[0], m.joint_stiffness[0]);
    assert_eq!(on, (Vec3::new(0.0, 0.0, -9.81), true, true, 0.5, 2.0));
    assert_eq!((m.fluid_density, m.fluid_viscosity, m.wind), (1000.0, 0.01, Vec3::new(1.0, 0.0, 0.0)));
    assert_eq!(load(r#"<flag gravity="disable"/>"#).unwrap().gravity, Vec3::zeros());
    assert!(!load(r#"<flag contact="disable"/>"#).unwrap().contact_enabled);
    assert!(load(r#"<flag limit="disable"/>"#).unwrap().joint_limit[0].is_none());
    assert_eq!(load(r#"<flag spring="disable"/>"#).unwrap().joint_stiffness[0], 0.0);
    assert_eq!(load(r#"<flag damper="disable"/>"#).unwrap().joint_damping[0], 0.0);
    let p = load(r#"<flag passive="disable"/>"#).unwrap();
    assert_eq!((p.joint_damping[0], p.joint_stiffness[0], p.fluid_density, p.fluid_viscosity), (0.0, 0.0, 0.0, 0.0));
    let c = load(r#"<flag constraint="disable"/>"#).unwrap();
    assert!(!c.contact_enabled && c.joint_limit[0].is_none());
    // the defaults written out, and disabling what is never applied: accepted, nothing changes
    let same = load(r#"<flag gravity="enable" contact="enable" actuation="disable" clampctrl="disable" equality="disable" warmstart="disable" energy="enable"/>"#)
        .unwrap();
    assert_eq!((same.gravity, same.contact_enabled, same.joint_damping[0]), (on.0, true, 0.5));
    // dry joint friction is modelled (the Featherstone stepper): enable accepted, disable zeroes it
    assert_eq!(load(r#"<flag frictionloss="enable"/>"#).unwrap().joint_frictionloss[0], 0.3);
    assert_eq!(load(r#"<flag frictionloss="disable"/>"#).unwrap().joint_frictionloss[0], 0.0);
    assert_eq!(load(r#"<flag constraint="disable"/>"#).unwrap().joint_frictionloss[0], 0.0);
    expect_parse(
        load(r#"<flag eulerdamp="disable"/>"#).unwrap_err(),
        "flags.xml",
        "<flag>",
        &["flag eulerdamp=disable"],
    );
    expect_parse(load(r#"<flag override="enable"/>"#).unwrap_err(), "flags.xml", "<flag>", &["override"]);
    expect_parse(load(r#"<flag gravity="off"/>"#).unwrap_err(), "flags.xml", "<flag>", &["expected enable or disable"]);
    expect_parse(load(r#"<flag warp="disable"/>"#).unwrap_err(), "flags.xml", "<flag>", &["unknown MuJoCo flag"]);
    // the ellipsoid fluid model is rejected while fluid forces are on
    let ell = xml("").replace(r#"size=".05 .2"/>"#, r#"size=".05 .2" fluidshape="ellipsoid"/>"#);
    expect_parse(load_mjcf_str(&ell, "flags.xml", None).unwrap_err(), "flags.xml", "<geom>", &["fluidshape"]);
}

/// qpos0 is the model's default configuration: a free body placed at pos / quat in the file starts there
/// (neutral_q, state_at), a hinge starts at its `ref`.
#[test]
fn qpos0_is_the_default_configuration() {
    let m = load_mjcf_str(
        r#"<mujoco><worldbody>
        <body name="box" pos="0.1 -0.2 1" quat="0.9 0.1 0.3 -0.2"><freejoint/><geom type="box" size=".1 .1 .1"/>
          <body name="arm" pos="0 0 -0.2"><joint name="h" ref="20"/><geom size=".05"/></body></body>
        </worldbody></mujoco>"#,
        "q0.xml",
        None,
    )
    .unwrap();
    let q = m.neutral_q();
    let n = (0.81f64 + 0.01 + 0.09 + 0.04).sqrt();
    let want = [0.1, -0.2, 1.0, 0.9 / n, 0.1 / n, 0.3 / n, -0.2 / n, 20f64.to_radians()];
    for k in 0..8 {
        close(q[k], want[k], 1e-15);
    }
    let s = m.state_at(&q).unwrap();
    close_v(&s.x[body(&m, "box")], &Vec3::new(0.1, -0.2, 1.0), 1e-15);
    assert_ne!(m.zero_q(), q);
}

/// `<option integrator>` (issue 20 item 3): MuJoCo's four names; `implicit` runs as implicitfast with a warning;
/// another name is an error naming the element and the value; absent: Euler.
#[test]
fn option_integrator_is_read() {
    use torsion_model::Integrator;
    let xml = |opt: &str| {
        format!(r#"<mujoco><option {opt}/><worldbody><body><joint/><geom size=".1"/></body></worldbody></mujoco>"#)
    };
    for (name, want, warned) in [
        ("Euler", Integrator::SemiImplicitEuler, false),
        ("RK4", Integrator::Rk4, false),
        ("implicitfast", Integrator::ImplicitFast, false),
        ("implicit", Integrator::ImplicitFast, true),
    ] {
        let m = load_mjcf_str(&xml(&format!(r#"integrator="{name}""#)), "i.xml", None).unwrap();
        assert_eq!(m.integrator, want, "{name}");
        let w = m.extras.warnings.iter().any(|w| w.contains("integrator"));
        assert_eq!(w, warned, "{name}: {:?}", m.extras.warnings);
    }
    assert_eq!(load_mjcf_str(&xml(""), "i.xml", None).unwrap().integrator, Integrator::SemiImplicitEuler);
    let e = load_mjcf_str(&xml(r#"integrator="rk4""#), "i.xml", None).unwrap_err().to_string();
    assert!(e.contains("i.xml") && e.contains("<option>") && e.contains("rk4"), "{e}");
}
