//! URDF loader tests: the Baxter left arm of spec 000 §4.7 against the reference builder
//! (`/work/shared/bench/pbd_torch.py::build_baxter`), whole Baxter and Panda, a small hand-checked arm, and
//! malformed files (each error must name the file, the element and the problem).
//!
//! The Baxter and Panda tests need the pip package `example-robot-data` (or `TORSION_ROBOTS_DIR`); they fail,
//! not skip, when it is missing.
#![allow(clippy::needless_range_loop)]
use std::f64::consts::FRAC_PI_2;
use std::path::{Path, PathBuf};
use torsion_math::{Mat3, Quat, Vec3};
use torsion_model::io::robots::{BAXTER_URDF, PANDA_URDF};
use torsion_model::io::{
    baxter_left_arm, baxter_left_arm_spec000, example_robot_data_dir, load_urdf, load_urdf_str, UrdfOptions,
};
use torsion_model::{JointType, Model, ModelError};

fn robots_dir() -> PathBuf {
    example_robot_data_dir().expect(
        "example-robot-data not found: `pip install example-robot-data` (python3 on PATH) or set TORSION_ROBOTS_DIR \
         to its share/example-robot-data/robots folder",
    )
}
fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}
fn opts(root: &str, tip: &str) -> UrdfOptions {
    UrdfOptions { root: Some(root.into()), tip: Some(tip.into()), ..Default::default() }
}
/// The bare chain (off-chain links dropped, the loader's behaviour before issue 12).
fn opts_drop(root: &str, tip: &str) -> UrdfOptions {
    UrdfOptions { drop_off_chain: true, ..opts(root, tip) }
}
fn v(a: [f64; 3]) -> Vec3 {
    Vec3::from(a)
}
#[track_caller]
fn close(a: &Vec3, b: &Vec3, tol: f64) {
    assert!((a - b).norm() <= tol, "{a:?} vs {b:?}");
}
/// Quaternions equal up to sign.
#[track_caller]
fn close_q(a: &Quat, b: [f64; 4], tol: f64) {
    let b = Quat::from_array(b);
    assert!(a.dot(&b).abs() >= 1.0 - tol, "{a:?} vs {b:?}");
}
/// Link-frame world poses x_link = x − R c of every body at joint positions q.
fn link_poses(m: &Model, q: &[f64]) -> Vec<(Vec3, Quat)> {
    let p = m.forward_kinematics(q).unwrap();
    (0..m.body_count()).map(|k| (p[k].0 - p[k].1.rotate(&m.body_com[k]), p[k].1)).collect()
}

const ARM: [&str; 7] =
    ["upper_shoulder", "lower_shoulder", "upper_elbow", "lower_elbow", "upper_forearm", "lower_forearm", "wrist"];
const JOINTS: [&str; 7] = ["left_s0", "left_s1", "left_e0", "left_e1", "left_w0", "left_w1", "left_w2"];

// Expected values printed by `build_baxter()` of /work/shared/bench/pbd_torch.py (script:
// `m = build_baxter(); print(m['joints'][j]['r'|'t'|'b'], m['x0'][k], m['q0'][k], m['I_l'][7])`).
// r: parent COM → joint, parent frame; t: child COM → joint, child frame; b: axis in the parent frame.
const REF_R: [[f64; 3]; 7] = [
    [0.055695, 0.0, 0.011038],
    [0.05117000000000001, -0.00086, 0.07907999999999998],
    [0.033549999999999996, -0.00269, 0.00529],
    [0.07176, -0.00132, 0.08156],
    [0.07748, -0.00159, 0.01117],
    [0.01168, -0.0046, 0.13118],
    [0.055564999999999996, -0.00697, -0.006],
];
const REF_T: [[f64; 3]; 7] = [
    [-0.01783, -0.00086, -0.19127],
    [-0.06845, -0.00269, 0.00529],
    [0.00276, -0.00132, -0.18086],
    [-0.02611, -0.00159, 0.01117],
    [0.00168, -0.0046, -0.13952],
    [-0.06041, -0.00697, -0.006],
    [-0.005137046552805342, -0.0009572236157733594, -0.0466565328857575],
];
const REF_B: [[f64; 3]; 7] = [
    [0.0, 0.0, 1.0],
    [0.0, 1.0, 0.0],
    [1.0, 0.0, 0.0],
    [0.0, 1.0, 0.0],
    [1.0, 0.0, 0.0],
    [0.0, 1.0, 0.0],
    [1.0, 0.0, 0.0],
];
/// body_pose0: COM position and orientation (w, x, y, z); body 0 = base at the mount.
const REF_X0: [[f64; 3]; 8] = [
    [0.024645, 0.219645, 0.118588],
    [0.07602681765295952, 0.2722432322866275, 0.32089599999999996],
    [0.16495949016208936, 0.35247880208197363, 0.397286],
    [0.3118959922594524, 0.5087638127240426, 0.402736],
    [0.396861819478882, 0.5760663922059468, 0.329386],
    [0.5391526147644363, 0.7406598989946548, 0.332656],
    [0.6736370028469609, 0.877124683690447, 0.314006],
    [0.7494841971073939, 0.9458405807012221, 0.31583895344719465],
];
const REF_Q0: [[f64; 4]; 8] = [
    [0.9238791810922131, 0.0, 0.0, 0.38268428076468186],
    [0.9238791810922131, 0.0, 0.0, 0.38268428076468186],
    [0.6532812339473784, -0.6532812339473782, -0.27059864998220323, 0.27059864998220323],
    [0.6532812339473784, -0.2705986499822032, 0.6532812339473782, 0.2705986499822033],
    [0.6532812339473784, -0.6532812339473782, -0.27059864998220323, 0.2705986499822033],
    [0.6532812339473784, -0.2705986499822032, 0.6532812339473782, 0.2705986499822033],
    [0.6532812339473784, -0.6532812339473782, -0.27059864998220323, 0.2705986499822033],
    [0.6532812339473781, -0.2705986499822031, 0.6532812339473782, 0.2705986499822033],
];
/// Wrist inertia with the hand lumped in (about the merged COM, wrist frame).
const REF_I_WRIST: [[f64; 3]; 3] = [
    [0.0012147745781942274, 8.143398947824063e-06, -6.550780899110996e-05],
    [8.143398947824063e-06, 0.0012763573466641636, 4.715353236047069e-06],
    [-6.550780899110996e-05, 4.715353236047069e-06, 0.0005548667735373539],
];

#[test]
#[allow(clippy::approx_constant)] // the URDF mount yaw is 0.7854, not π/4
fn baxter_left_arm_matches_spec_and_reference() {
    let path = robots_dir().join(BAXTER_URDF);
    let m = load_urdf(&path, &opts_drop("torso", "left_hand_link")).unwrap();
    assert_eq!(m.name, "baxter");
    assert_eq!(m.gravity, v([0.0, 0.0, -9.81]));
    assert_eq!(m.dt, 0.01);
    assert_eq!(m.body_count(), 8);
    assert_eq!(m.body_fixed, [true, false, false, false, false, false, false, false]);
    assert_eq!(m.body_name[0], "torso");
    for (k, n) in ARM.iter().enumerate() {
        assert_eq!(m.body_name[k + 1], format!("left_{n}"));
    }
    assert_eq!(m.joint_name, JOINTS);
    assert!(m.joint_type.iter().all(|t| *t == JointType::Revolute));
    assert_eq!(m.joint_parent, [0, 1, 2, 3, 4, 5, 6]);
    assert_eq!(m.joint_child, [1, 2, 3, 4, 5, 6, 7]);

    // spec 000 §4.7 masses, the hand (0.19125 kg) lumped into the wrist
    let mass = [5.70044, 3.22698, 4.31272, 2.07206, 2.24665, 1.60979, 0.35093 + 0.19125];
    for k in 0..7 {
        assert!((m.body_mass[k + 1] - mass[k]).abs() < 1e-12, "{}: {}", m.body_name[k + 1], m.body_mass[k + 1]);
    }
    // spec 000 §4.7 limits (the URDF has ±1.70167993878 for s0 and ±3.05417993878 for e0)
    let lim = [
        (-1.70168, 1.70168),
        (-2.147, 1.047),
        (-3.05418, 3.05418),
        (-0.05, 2.618),
        (-3.059, 3.059),
        (-FRAC_PI_2, 2.094),
        (-3.059, 3.059),
    ];
    for j in 0..7 {
        let (lo, hi) = m.joint_limit[j].unwrap();
        assert!((lo - lim[j].0).abs() < 1e-5 && (hi - lim[j].1).abs() < 1e-5, "{}: {lo} {hi}", JOINTS[j]);
        assert_eq!(m.joint_damping[j], 0.7);
        assert!(m.joint_spring[j].is_none());
    }
    // efforts as in this URDF (spec §4.7's table lists 100 for s1; example-robot-data has 50)
    assert_eq!(m.joint_effort, [50.0, 50.0, 50.0, 50.0, 15.0, 15.0, 15.0]);

    // base = torso with the mount merged, placed at the mount pose
    close(&m.body_pose0[0].0, &v([0.024645, 0.219645, 0.118588]), 1e-12);
    close_q(&m.body_pose0[0].1, Quat::from_rpy(0.0, 0.0, 0.7854).to_array(), 1e-12);

    // r, t, b, a and the initial poses agree with build_baxter
    for j in 0..7 {
        close(&m.joint_anchor_parent[j], &v(REF_R[j]), 1e-9);
        close(&m.joint_anchor_child[j], &v(REF_T[j]), 1e-9);
        close(&m.joint_frame_parent[j].rotate(&m.joint_axis[j]), &v(REF_B[j]), 1e-9);
        close(&m.joint_axis_child(j), &v([0.0, 0.0, 1.0]), 1e-12);
        // reference vectors n^P = R_rpy e_x, n^C = e_x (spec §4.7)
        let (np, nc) = m.joint_refs(j);
        close(&nc, &v([1.0, 0.0, 0.0]), 1e-12);
        assert!((np.norm() - 1.0).abs() < 1e-12);
    }
    for k in 0..8 {
        close(&m.body_pose0[k].0, &v(REF_X0[k]), 1e-9);
        close_q(&m.body_pose0[k].1, REF_Q0[k], 1e-9);
    }
    let iw = Mat3::from_fn(|r, c| REF_I_WRIST[r][c]);
    assert!((m.body_inertia[7] - iw).norm() < 1e-12, "{:?}", m.body_inertia[7]);
    // an unmerged link keeps its URDF inertia (spec §4.7, inertial rpy = 0)
    let i1 = Mat3::new(
        0.04709102262,
        0.00012787556,
        0.00614870039,
        0.00012787556,
        0.03766976455,
        0.00078086899,
        0.00614870039,
        0.00078086899,
        0.03595988478,
    );
    assert!((m.body_inertia[1] - i1).norm() < 1e-15);
    close(&m.body_com[1], &v([0.01783, 0.00086, 0.19127]), 1e-15);

    // the robots.rs helper loads the same model
    let h = baxter_left_arm_spec000().unwrap();
    assert_eq!(h.joint_name, m.joint_name);
    assert_eq!((h.body_pose0[7].0, h.body_mass[7]), (m.body_pose0[7].0, m.body_mass[7]));
}

/// Mass of every link's URDF subtree (the link and everything below it), read from the file by hand.
fn subtree_masses(path: &Path) -> std::collections::HashMap<String, f64> {
    let text = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse_with_options(
        &text,
        roxmltree::ParsingOptions { allow_dtd: true, ..Default::default() },
    )
    .unwrap();
    fn el<'a, 'i>(n: roxmltree::Node<'a, 'i>, t: &str) -> Option<roxmltree::Node<'a, 'i>> {
        n.children().find(|c| c.has_tag_name(t))
    }
    let mut own = std::collections::HashMap::new();
    let mut children: std::collections::HashMap<String, Vec<String>> = Default::default();
    for n in doc.root_element().children().filter(|n| n.has_tag_name("link") || n.has_tag_name("joint")) {
        let name = n.attribute("name").unwrap().to_string();
        if n.has_tag_name("link") {
            let m = el(n, "inertial")
                .and_then(|i| el(i, "mass"))
                .map_or(0.0, |m| m.attribute("value").unwrap().parse().unwrap());
            own.insert(name, m);
        } else if n.has_tag_name("joint") {
            let end = |t| el(n, t).unwrap().attribute("link").unwrap().to_string();
            children.entry(end("parent")).or_default().push(end("child"));
        }
    }
    fn total(
        l: &str,
        own: &std::collections::HashMap<String, f64>,
        ch: &std::collections::HashMap<String, Vec<String>>,
    ) -> f64 {
        own[l] + ch.get(l).map_or(0.0, |c| c.iter().map(|c| total(c, own, ch)).sum())
    }
    own.keys().map(|l| (l.clone(), total(l, &own, &children))).collect()
}

#[test]
fn baxter_left_arm_welds_what_hangs_below_and_off_the_chain() {
    // issue 12 item 6: the gripper, fingers, hand sensors and the dummies hanging off the arm are welded into
    // the body they hang from (locked at 0), not deleted: each body holds its link's subtree minus the next one
    let path = robots_dir().join(BAXTER_URDF);
    let s = subtree_masses(&path);
    let m = load_urdf(&path, &opts("torso", "left_hand_link")).unwrap();
    assert_eq!(m.body_count(), 8);
    for k in 1..8 {
        let next = if k < 7 { s[&m.body_name[k + 1]] } else { 0.0 };
        let want = s[&m.body_name[k]] - next;
        assert!((m.body_mass[k] - want).abs() < 1e-12, "{}: {} vs {want}", m.body_name[k], m.body_mass[k]);
    }
    let total: f64 = m.body_mass[1..].iter().sum();
    eprintln!(
        "Baxter left arm: {total:.6} kg (URDF subtree of left_upper_shoulder {:.6} kg)",
        s["left_upper_shoulder"]
    );
    assert!((total - s["left_upper_shoulder"]).abs() < 1e-12);
    let h = baxter_left_arm().unwrap();
    assert_eq!(h.body_mass, m.body_mass);
    // joint frames and kinematics are those of the bare chain; only the inertials change
    let bare = load_urdf(&path, &opts_drop("torso", "left_hand_link")).unwrap();
    for j in 0..7 {
        let (p, c) = (m.joint_parent[j], m.joint_child[j]);
        close(&(m.joint_anchor_parent[j] + m.body_com[p]), &(bare.joint_anchor_parent[j] + bare.body_com[p]), 1e-15);
        close(&(m.joint_anchor_child[j] + m.body_com[c]), &(bare.joint_anchor_child[j] + bare.body_com[c]), 1e-15);
    }
    assert!((m.body_mass[7] - (0.35093 + 0.19125 + 0.3 + 0.02 * 2.0 + 0.01 * 2.0 + 0.0001 * 5.0)).abs() < 1e-12);
    // Panda: the hand and fingers (0.76 kg) welded into panda_link7
    let path = robots_dir().join(PANDA_URDF);
    let s = subtree_masses(&path);
    let p = load_urdf(&path, &opts("panda_link0", "panda_link8")).unwrap();
    assert_eq!(p.body_count(), 8);
    assert!((p.body_mass[7] - s["panda_link7"]).abs() < 1e-12, "{} vs {}", p.body_mass[7], s["panda_link7"]);
}

#[test]
fn whole_baxter_loads_and_agrees_with_the_arm_chain() {
    let path = robots_dir().join(BAXTER_URDF);
    let whole = load_urdf(&path, &UrdfOptions::default()).unwrap();
    assert_eq!(whole.body_name[0], "base");
    assert!(whole.body_fixed[0] && whole.body_fixed.iter().filter(|f| **f).count() == 1);
    assert_eq!(whole.body_pose0[0], (Vec3::zeros(), Quat::identity()));
    for n in JOINTS.iter().chain(&["right_s0", "right_w2", "head_pan"]) {
        assert!(whole.joint_index(n).is_some(), "{n} missing");
    }
    // link-frame poses of the left arm agree with the chain model at a nonzero configuration
    let arm = load_urdf(&path, &opts("torso", "left_hand_link")).unwrap();
    let q7 = [0.3, -0.5, 0.7, 1.1, -0.9, 0.4, 1.3];
    let mut qw = vec![0.0; whole.dof_joints().len()];
    for (j, n) in JOINTS.iter().enumerate() {
        let jw = whole.joint_index(n).unwrap();
        qw[whole.dof_joints().iter().position(|&d| d == jw).unwrap()] = q7[j];
    }
    let (pa, pw) = (link_poses(&arm, &q7), link_poses(&whole, &qw));
    for k in 1..8 {
        let kw = whole.body_index(&arm.body_name[k]).unwrap();
        close(&pa[k].0, &pw[kw].0, 1e-12);
        close_q(&pa[k].1, pw[kw].1.to_array(), 1e-12);
    }
}

#[test]
fn panda_loads_whole_and_as_a_chain() {
    let path = robots_dir().join(PANDA_URDF);
    let whole = load_urdf(&path, &UrdfOptions::default()).unwrap();
    assert_eq!(whole.name, "panda");
    assert_eq!(whole.body_name[0], "panda_link0");
    assert!(whole.joint_count() >= 7);
    let m = load_urdf(&path, &opts_drop("panda_link0", "panda_link8")).unwrap();
    assert_eq!(m.body_count(), 8);
    assert_eq!(m.joint_count(), 7);
    assert!(m.joint_type.iter().all(|t| *t == JointType::Revolute));
    assert_eq!(m.joint_name, (1..=7).map(|k| format!("panda_joint{k}")).collect::<Vec<_>>());
    // panda_link8 (mass 0) merged into panda_link7
    assert_eq!(m.body_name[7], "panda_link7");
    assert!((m.body_mass[7] - 0.735522).abs() < 1e-12);
    assert_eq!(m.joint_limit[3], Some((-3.0718, -0.0698)));
    assert_eq!(m.joint_effort[0], 87.0);
}

/// tests/data/tiny_arm.urdf, checked by hand: mount fixed to the base (yaw 90°, 0.5 m up); link1 (2 kg, COM
/// (0.5, 0, 0), inertia diag(0.01, 0.02, 0.03) in an inertial frame yawed 90°) with tool (1 kg at (1, 0, 0))
/// fixed to it; slider hangs off the tool, wheel off link1.
#[test]
fn tiny_arm_merges_fixed_links_by_hand() {
    let m = load_urdf(&data("tiny_arm.urdf"), &UrdfOptions::default()).unwrap();
    assert_eq!(m.body_name, ["base", "link1", "wheel", "slider"]);
    assert_eq!(m.joint_name, ["shoulder", "spin", "slide"]);
    assert_eq!(m.joint_type, [JointType::Revolute, JointType::Revolute, JointType::Prismatic]);
    assert_eq!((m.joint_parent.clone(), m.joint_child.clone()), (vec![0, 1, 1], vec![1, 2, 3]));
    // link1 + tool: M = 3, COM = (2/3, 0, 0); I = R I_in Rᵀ + point masses about the COM
    let c = 2.0 / 3.0;
    assert!((m.body_mass[1] - 3.0).abs() < 1e-15);
    close(&m.body_com[1], &v([c, 0.0, 0.0]), 1e-15);
    let pa = 2.0 / 36.0 + 1.0 / 9.0;
    let i = Mat3::from_diagonal(&v([0.02 + 0.001, 0.01 + 0.001 + pa, 0.03 + 0.001 + pa]));
    assert!((m.body_inertia[1] - i).norm() < 1e-15, "{:?}", m.body_inertia[1]);
    // shoulder: mount merged into the base: r = (0, 0, 0.5) + Rz(90°)(0.1, 0, 0)
    close(&m.joint_anchor_parent[0], &v([0.0, 0.1, 0.5]), 1e-15);
    close(&m.joint_anchor_child[0], &v([-c, 0.0, 0.0]), 1e-15);
    close_q(&m.joint_frame_parent[0], Quat::from_rpy(0.0, 0.0, FRAC_PI_2).to_array(), 1e-15);
    assert_eq!(m.joint_frame_child[0], Quat::identity());
    assert_eq!(m.joint_axis[0], v([0.0, 0.0, 1.0])); // <axis xyz="0 0 2"> normalised
    assert_eq!((m.joint_limit[0], m.joint_damping[0], m.joint_effort[0]), (Some((-1.0, 1.5)), 0.3, 10.0));
    // <dynamics friction> → dry friction (MuJoCo frictionloss); absent → 0
    assert_eq!((m.joint_frictionloss[0], m.joint_frictionloss[2]), (0.2, 0.0));
    // spin (continuous, no <axis>, no <limit>): URDF default axis x, no limit, infinite effort
    close(&m.joint_anchor_parent[1], &v([-c, 0.0, 0.0]), 1e-15);
    assert_eq!((m.joint_axis[1], m.joint_limit[1], m.joint_effort[1]), (v([1.0, 0.0, 0.0]), None, f64::INFINITY));
    // slide: from the merged tool (at (1, 0, 0), roll 90°): joint at (1, 0, 0) + Rx(90°)(0, 0.2, 0)
    close(&m.joint_anchor_parent[2], &v([1.0 - c, 0.0, 0.2]), 1e-15);
    close(&m.joint_axis_parent(2), &v([0.0, -1.0, 0.0]), 1e-15);
    assert_eq!((m.joint_limit[2], m.joint_damping[2], m.joint_effort[2]), (Some((0.0, 0.1)), 0.0, f64::INFINITY));
    // initial COM pose of link1: link frame at (0, 0.1, 0.5) yawed 90°
    close(&m.body_pose0[1].0, &v([0.0, 0.1 + c, 0.5]), 1e-15);

    // chain mode: base frame moves down the fixed joint to the mount; the wheel (off the path, hanging from
    // link1) is locked at 0 and welded into link1: M = 3.2, COM = (2 · 0.5 + 1 · 1 + 0.2 · 0) / 3.2 = 0.625
    let ch = load_urdf(&data("tiny_arm.urdf"), &opts("base", "slider")).unwrap();
    assert_eq!(ch.body_name, ["base", "link1", "slider"]);
    assert_eq!(ch.joint_name, ["shoulder", "slide"]);
    close(&ch.body_pose0[0].0, &v([0.0, 0.0, 0.5]), 1e-15);
    close(&ch.joint_anchor_parent[0], &v([0.1, 0.0, 0.0]), 1e-15);
    assert!((ch.body_mass[1] - 3.2).abs() < 1e-15);
    let cw = 2.0 / 3.2;
    close(&ch.body_com[1], &v([cw, 0.0, 0.0]), 1e-15);
    // inertia about the new COM: parts' own inertias + point masses at x = 0.5, 1, 0 (wheel 0.01 I)
    let pa = 2.0 * (0.5 - cw).powi(2) + 1.0 * (1.0 - cw).powi(2) + 0.2 * cw * cw;
    let iw = Mat3::from_diagonal(&v([0.02 + 0.001 + 0.01, 0.01 + 0.001 + 0.01 + pa, 0.03 + 0.001 + 0.01 + pa]));
    assert!((ch.body_inertia[1] - iw).norm() < 1e-15, "{:?}", ch.body_inertia[1]);
    close(&ch.joint_anchor_parent[1], &v([1.0 - cw, 0.0, 0.2]), 1e-15);
    // the drop option gives the bare chain (the behaviour before issue 12): link1 + tool only
    let dr = load_urdf(&data("tiny_arm.urdf"), &opts_drop("base", "slider")).unwrap();
    assert_eq!((dr.body_name.clone(), dr.joint_name.clone()), (ch.body_name.clone(), ch.joint_name.clone()));
    assert_eq!(
        (dr.body_mass[1], dr.body_com[1], dr.body_inertia[1]),
        (m.body_mass[1], m.body_com[1], m.body_inertia[1])
    );
    close(&dr.joint_anchor_parent[1], &m.joint_anchor_parent[2], 1e-15);
    for k in 1..3 {
        close(&dr.body_pose0[k].0, &m.body_pose0[m.body_index(&dr.body_name[k]).unwrap()].0, 1e-15);
    }
    close(&ch.body_pose0[2].0, &m.body_pose0[3].0, 1e-15);
    // root only: the subtree below the root, the root placed at its world pose
    let sub =
        load_urdf(&data("tiny_arm.urdf"), &UrdfOptions { root: Some("link1".into()), ..Default::default() }).unwrap();
    assert_eq!(sub.body_name, ["link1", "wheel", "slider"]);
    close(&sub.body_pose0[0].0, &v([0.0, 0.1, 0.5]), 1e-15);
}

/// The message of `e` names the file, the element and the problem.
#[track_caller]
fn assert_names(e: ModelError, file: &str, element: &str, problem: &str) {
    let s = e.to_string();
    assert!(matches!(e, ModelError::Parse { .. }), "{s}");
    for part in [file, element, problem] {
        assert!(s.contains(part), "'{part}' not in: {s}");
    }
}

#[test]
fn malformed_files_give_clear_errors() {
    let load = |f: &str, o: &UrdfOptions| load_urdf(&data(f), o).unwrap_err();
    let d = UrdfOptions::default();
    assert_names(
        load("missing_inertial.urdf", &d),
        "missing_inertial.urdf",
        "link 'arm'",
        "missing or zero <inertial><mass>",
    );
    assert_names(
        load("unknown_joint_type.urdf", &d),
        "unknown_joint_type.urdf",
        "joint 'elbow'",
        "unknown joint type 'hinge'",
    );
    let e = load("bad_number.urdf", &d);
    assert_names(
        e,
        "bad_number.urdf",
        "joint 'shoulder'",
        "<origin> xyz=\"0 abc 0\": 'abc' is not a finite number (line 8)",
    );
    assert_names(
        load("missing_parent_link.urdf", &d),
        "missing_parent_link.urdf",
        "joint 'shoulder'",
        "parent link 'bsae' is not defined",
    );
    assert_names(
        load("tiny_arm.urdf", &opts("base", "no_such_link")),
        "tiny_arm.urdf",
        "link 'no_such_link'",
        "tip link not found",
    );
    assert_names(
        load("tiny_arm.urdf", &opts("no_such_root", "slider")),
        "tiny_arm.urdf",
        "link 'no_such_root'",
        "root link not found",
    );
    assert_names(
        load("tiny_arm.urdf", &opts("link1", "mount")),
        "tiny_arm.urdf",
        "link 'mount'",
        "not below the root link 'link1'",
    );
    let e = load_urdf(&data("no_such_file.urdf"), &d).unwrap_err();
    assert_names(e, "no_such_file.urdf", "file", "cannot read");
}

const ONE_JOINT: &str = r#"<robot name="r">
  <link name="base"/>
  <link name="arm"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
  <joint name="j" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>"#;

#[test]
fn more_invalid_inputs_are_named() {
    let d = UrdfOptions::default();
    let err = |text: String| load_urdf_str(&text, "inline.urdf", &d).unwrap_err();
    assert!(load_urdf_str(ONE_JOINT, "inline.urdf", &d).is_ok());
    // (text replaced in ONE_JOINT, its replacement, the place the error names, what it says)
    let cases = [
        ("revolute", "floating", "joint 'j'", "unsupported joint type 'floating'"),
        ("revolute", "planar", "joint 'j'", "unsupported joint type 'planar'"),
        ("xyz=\"0 0 1\"", "xyz=\"0 0 0\"", "joint 'j'", "zero-length <axis xyz>"),
        ("ixx=\"1\"", "ixx=\"-1\"", "link 'arm'", "inertia not positive definite"),
        ("<mass value=\"1\"/>", "<mass value=\"0\"/>", "link 'arm'", "missing or zero <inertial><mass>"),
        ("<mass value=\"1\"/>", "<mass value=\"-1\"/>", "link 'arm'", "negative <inertial><mass>"),
        ("<mass value=\"1\"/>", "", "link 'arm'", "<inertial> has no <mass>"),
        ("iyy=\"1\"", "iyy=\"1 2\"", "link 'arm'", "<inertial><inertia> iyy=\"1 2\": expected 1 number(s), got 2"),
        ("lower=\"-1\"", "lower=\"nan\"", "joint 'j'", "'nan' is not a finite number"),
        ("lower=\"-1\" upper=\"1\"", "lower=\"1\" upper=\"-1\"", "joint 'j'", "lower 1 > upper -1"),
        ("<limit lower=\"-1\" upper=\"1\" effort=\"1\" velocity=\"1\"/>", "", "joint 'j'", "missing <limit>"),
        ("<parent link=\"base\"/>", "", "joint 'j'", "missing <parent link="),
        ("type=\"revolute\"", "", "joint 'j'", "missing type attribute"),
        ("<link name=\"base\"/>", "<link name=\"base\"/><link name=\"extra\"/>", "robot 'r'", "expected one root link"),
        ("<child link=\"arm\"/>", "<child link=\"base\"/>", "joint 'j'", "same link"),
        ("</robot>", "", "XML", ""),
        ("robot", "robo", "XML", "expected <robot>"),
    ];
    for (a, b, place, what) in cases {
        assert_names(err(ONE_JOINT.replace(a, b)), "inline.urdf", place, what);
    }
}

/// No input panics: every prefix of a valid file and digit → letter corruptions give Ok or a typed error.
#[test]
fn truncated_or_corrupted_input_never_panics() {
    let text = std::fs::read_to_string(data("tiny_arm.urdf")).unwrap();
    let d = UrdfOptions::default();
    for (k, _) in text.char_indices() {
        let _ = load_urdf_str(&text[..k], "cut.urdf", &d);
    }
    for (k, c) in text.char_indices().filter(|(_, c)| c.is_ascii_digit() || *c == '"') {
        let mut t = text.clone();
        t.replace_range(k..k + c.len_utf8(), "x");
        let _ = load_urdf_str(&t, "bad.urdf", &d);
    }
}
