//! Real model files: dm_control's hopper (MJCF) at its reference pose, an MJCF multi-joint body (parent filter
//! through virtual bodies), a URDF with `<collision>` primitives and Panda's STL collision meshes.
use std::collections::BTreeSet;
use torsion_collision::{CollisionOptions, CollisionWorld, Contacts};
use torsion_math::Vec3;
use torsion_model::io::{dm_control_model, load_mjcf_str, load_urdf, load_urdf_str, UrdfOptions};
use torsion_model::Model;

fn detect(m: &Model, opts: CollisionOptions, q: &[f64]) -> Contacts {
    let p = m.forward_kinematics(q).expect("fk");
    let mut w = CollisionWorld::new(m, opts).expect("world");
    let mut c = Contacts::default();
    w.detect(&p, &mut c).expect("detect");
    c
}

fn names(m: &Model, c: &Contacts) -> BTreeSet<(String, String)> {
    c.iter().map(|k| (m.shapes[k.geom_a].name.clone(), m.shapes[k.geom_b].name.clone())).collect()
}

#[test]
fn hopper_floor_contacts_at_reference_pose() {
    let m = dm_control_model("hopper").expect("dm_control hopper (target/dm_control_suite or TORSION_DM_CONTROL_DIR)");
    let floor = m.shapes.iter().position(|s| s.name == "floor").unwrap();
    let foot = m.shapes.iter().position(|s| s.name == "foot").unwrap();
    // reference pose: torso at z = 1, the foot capsule (x from −0.08 to 0.17, radius 0.04) at z = 0.1, so its
    // lowest points are 0.06 above the floor; the calf's lower cap (radius 0.03) ends at z = 0.07; the torso's
    // lower cap (z 0.8847) and the thigh's upper cap (z 0.79), grandparent and grandchild, are 0.0947 apart
    let c = detect(&m, CollisionOptions::default(), &m.qpos0);
    assert!(c.is_empty(), "no contact at margin 0: {:?}", names(&m, &c));
    let c = detect(&m, CollisionOptions { margin: 0.1, ..Default::default() }, &m.qpos0);
    let torso_thigh = c.iter().find(|k| m.shapes[k.geom_a].name == "torso" && m.shapes[k.geom_b].name == "thigh");
    assert!((torso_thigh.expect("torso–thigh within 0.1").distance - 0.0947).abs() < 1e-9);
    let c = detect(&m, CollisionOptions { margin: 0.08, ..Default::default() }, &m.qpos0);
    assert_eq!(names(&m, &c), BTreeSet::from([("calf".into(), "floor".into()), ("foot".into(), "floor".into())]));
    let mut foot_x: Vec<f64> = c.between(foot, floor).map(|k| k.point.x).collect();
    foot_x.sort_by(f64::total_cmp);
    assert_eq!(foot_x.len(), 2, "the flat foot capsule gives its two end points");
    assert!((foot_x[0] + 0.08).abs() < 1e-9 && (foot_x[1] - 0.17).abs() < 1e-9, "{foot_x:?}");
    for k in c.iter() {
        assert_eq!(k.body_b, 0, "the floor is on the world body");
        assert!((k.normal - Vec3::z()).norm() < 1e-12);
        let expect = if k.geom_a == foot { 0.06 } else { 0.07 };
        assert!((k.distance - expect).abs() < 1e-9, "{} at {}", m.shapes[k.geom_a].name, k.distance);
        assert!(k.point_b.z.abs() < 1e-12);
    }
    // lowered by 0.07 (rootz): the foot penetrates by 0.01 and the calf touches
    let mut q = m.qpos0.clone();
    let jz = m.joint_index("rootz").unwrap();
    q[m.joint_q_start()[jz]] -= 0.07;
    let c = detect(&m, CollisionOptions::default(), &q);
    assert_eq!(c.between(foot, floor).count(), 2);
    assert!(c.between(foot, floor).all(|k| (k.distance + 0.01).abs() < 1e-9));
    // self-contacts exist between neighbours (pelvis–thigh overlap) but are filtered as parent–child
    let c = detect(&m, CollisionOptions { filter_parent: false, ..Default::default() }, &m.qpos0);
    assert!(names(&m, &c).contains(&("pelvis".into(), "thigh".into())), "{:?}", names(&m, &c));
}

#[test]
fn mjcf_multi_joint_child_is_filtered_through_its_virtual_body() {
    let xml = r#"<mujoco model="t">
      <worldbody>
        <geom name="floor" type="plane" size="1 1 .1"/>
        <body name="a" pos="0 0 1.05">
          <joint name="ax" type="slide" axis="1 0 0"/>
          <geom name="ga" type="capsule" fromto="0 0 0 0 0 -.5" size=".05"/>
          <body name="b" pos="0 0 -.5">
            <joint name="b1" type="hinge" axis="1 0 0"/>
            <joint name="b2" type="hinge" axis="0 1 0"/>
            <geom name="gb" type="capsule" fromto="0 0 0 0 0 -.44" size=".05"/>
            <body name="c" pos="0 0 -.5">
              <joint name="c1" type="hinge" axis="0 1 0"/>
              <geom name="gc" type="sphere" size=".03"/>
            </body>
          </body>
        </body>
      </worldbody>
    </mujoco>"#;
    let m = load_mjcf_str(xml, "inline.xml", None).unwrap();
    assert!(m.body_count() > 4, "b's two joints make a virtual body");
    // a–b overlap at their shared point (z 0.55): parent–child through the virtual body → filtered; gc (sphere at
    // z 0.05, r .03) overlaps b's end cap (parent, lowest at z 0.06) → filtered; gc is 0.02 above the floor
    let c = detect(&m, CollisionOptions { margin: 0.05, ..Default::default() }, &m.qpos0);
    assert_eq!(names(&m, &c), BTreeSet::from([("gc".into(), "floor".into())]), "{c:#?}");
    let c = detect(&m, CollisionOptions { margin: 0.05, filter_parent: false, ..Default::default() }, &m.qpos0);
    let n = names(&m, &c);
    assert!(n.contains(&("ga".into(), "gb".into())) && n.contains(&("gb".into(), "gc".into())), "{n:?}");
}

#[test]
fn urdf_collision_primitives() {
    // a fixed base box and a link hanging below it on a hinge, whose cylinder reaches into a second link's box
    let urdf = r#"<robot name="r">
      <link name="base"><collision><geometry><box size="1 1 0.2"/></geometry></collision></link>
      <link name="arm">
        <inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>
        <collision name="rod"><origin xyz="0 0 -0.5"/><geometry><cylinder radius="0.05" length="1"/></geometry></collision>
      </link>
      <link name="hand">
        <inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>
        <collision name="palm"><geometry><sphere radius="0.1"/></geometry></collision>
      </link>
      <joint name="j1" type="revolute"><parent link="base"/><child link="arm"/><origin xyz="0 0 -0.1"/>
        <axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
      <joint name="j2" type="revolute"><parent link="arm"/><child link="hand"/><origin xyz="0 0 -1"/>
        <axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
    </robot>"#;
    let m = load_urdf_str(urdf, "inline.urdf", &UrdfOptions::default()).unwrap();
    assert_eq!(m.shapes.len(), 3);
    // at q = 0 the rod's top cap touches the base box bottom and the rod overlaps the palm: both pairs are
    // adjacent links (URDF joints), listed in Model::contact_exclude, so nothing is reported
    assert_eq!(m.contact_exclude, vec![(0, 1), (1, 2)]);
    let c = detect(&m, CollisionOptions::default(), &m.qpos0);
    assert!(c.is_empty(), "{c:#?}");
    // without the list, MuJoCo's parent filter alone keeps the fixed parent's pair (rod–base) and drops rod–palm
    let mut raw = m.clone();
    raw.contact_exclude.clear();
    let c = detect(&raw, CollisionOptions::default(), &m.qpos0);
    assert_eq!(names(&m, &c), BTreeSet::from([("rod".into(), "base/collision0".into())]), "{c:#?}");
    assert!(c.iter().all(|k| k.distance.abs() < 1e-9 && (k.normal + Vec3::z()).norm() < 1e-9));
    let c = detect(&raw, CollisionOptions { filter_parent: false, ..Default::default() }, &m.qpos0);
    assert!(names(&m, &c).contains(&("rod".into(), "palm".into())));
}

#[test]
fn panda_stl_collision_meshes() {
    let Some(dir) = torsion_model::io::example_robot_data_dir() else {
        panic!("example-robot-data not found (pip install example-robot-data or set TORSION_ROBOTS_DIR)")
    };
    let m = load_urdf(&dir.join("panda_description/urdf/panda.urdf"), &UrdfOptions::default()).unwrap();
    let meshes = m.shapes.iter().filter(|s| matches!(s.kind, torsion_model::ShapeKind::Mesh { .. })).count();
    assert!(meshes >= 8, "panda has STL collision meshes");
    // package://example-robot-data/robots/... is found in the folders above the URDF (share/ holds
    // example-robot-data/), with no option set
    assert_eq!(m.source_file.as_deref(), Some(dir.join("panda_description/urdf/panda.urdf").as_path()));
    let mut w = CollisionWorld::new(&m, CollisionOptions::default()).unwrap();
    assert!(w.warnings().is_empty());
    assert!((0..m.shapes.len()).all(|i| w.is_collidable(i)));
    // and through an explicit package directory: share/ (holds example-robot-data/) for a model with no file
    let mut unfiled = m.clone();
    unfiled.source_file = None;
    let share = dir.parent().and_then(|d| d.parent()).unwrap().to_path_buf();
    let opts = CollisionOptions { package_dirs: vec![share], ..Default::default() };
    assert!(CollisionWorld::new(&unfiled, opts).is_ok());
    // at the neutral pose no parent–child pair is reported; detect runs on every shape
    let p = m.forward_kinematics(&m.qpos0).unwrap();
    let mut c = Contacts::default();
    w.detect(&p, &mut c).unwrap();
    let parent: std::collections::HashMap<usize, usize> =
        (0..m.joint_count()).map(|j| (m.joint_child[j], m.joint_parent[j])).collect();
    for k in c.iter() {
        let (a, b) = (k.body_a, k.body_b);
        let pc = parent.get(&a) == Some(&b) && !m.body_fixed[b] || parent.get(&b) == Some(&a) && !m.body_fixed[a];
        assert!(!pc, "parent–child contact {} – {}", m.body_name[a], m.body_name[b]);
    }
    // other poses: detect stays well-defined (finite normals, nothing beyond the margin)
    for s in 0..10 {
        let mut q = m.qpos0.clone();
        for (i, v) in q.iter_mut().enumerate() {
            *v += 0.3 * ((s * 7 + i * 3) % 5) as f64 - 0.6;
        }
        let p = m.forward_kinematics(&q).unwrap();
        w.detect(&p, &mut c).unwrap();
        assert!(c.iter().all(|k| k.distance <= 0.0 && k.normal.iter().all(|x| x.is_finite())));
    }
}

#[test]
fn baxter_collada_hulls_match_assimp() {
    // the two COLLADA collision meshes of Baxter: the AABBs of their vertices as coal's assimp loader reads them
    // (coal.MeshLoader().load(file).aabb_local, pip cmeel-coal): node transforms and units applied alike
    let Some(dir) = torsion_model::io::example_robot_data_dir() else { panic!("example-robot-data not found") };
    let cases = [
        ("torso/base_link_collision.DAE", [-0.2177773, -0.33557031, -0.06152498], [0.1995137, 0.3351306, 0.87524998]),
        (
            "base/pedestal_link_collision.DAE",
            [-0.5019719, -0.4156633, -0.92417997],
            [0.41706771, 0.4156633, -0.06152498],
        ),
    ];
    for (f, lo, hi) in cases {
        let pts = torsion_collision::mesh::read_vertices(&dir.join("baxter_description/meshes").join(f)).unwrap();
        for k in 0..3 {
            let (mn, mx) = pts.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| (a.min(p[k]), b.max(p[k])));
            assert!(
                (mn - lo[k]).abs() < 1e-6 && (mx - hi[k]).abs() < 1e-6,
                "{f} axis {k}: [{mn}, {mx}] vs [{}, {}]",
                lo[k],
                hi[k]
            );
        }
    }
}
