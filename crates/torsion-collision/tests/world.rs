//! CollisionWorld behaviour: persistent ids and tangent continuity across steps, filtering rules, errors, meshes,
//! and the broad phase against the all-pairs reference.
mod common;
use common::*;
use std::collections::BTreeSet;
use torsion_collision::{BroadPhase, CollisionError, CollisionOptions, CollisionWorld, Contacts, MeshPolicy};
use torsion_math::{Mat3, Quat, Vec3};
use torsion_model::builder::{JointDesc, ModelBuilder};
use torsion_model::ShapeKind;

#[test]
fn sliding_box_keeps_its_four_ids_and_tangents() {
    let m = scene(true, &[bx(0.5, 0.3, 0.2)]);
    let mut w = CollisionWorld::new(&m, margin(0.0)).unwrap();
    let mut c = Contacts::default();
    let mut first: Option<BTreeSet<_>> = None;
    for k in 0..20 {
        let x = Vec3::new(0.001 * k as f64, 0.0005 * k as f64, 0.199);
        let q = rot(Vec3::z(), 0.002 * k as f64);
        let prev = c.clone();
        w.detect(&poses(&[(x, q)]), &mut c).unwrap();
        assert_eq!(c.len(), 4);
        let ids: BTreeSet<_> = c.iter().map(|k| k.id).collect();
        assert_eq!(ids.len(), 4);
        match &first {
            None => first = Some(ids),
            Some(f) => assert_eq!(f, &ids, "step {k}: ids changed"),
        }
        for k in c.iter() {
            if let Some(p) = prev.find(&k.id) {
                assert!((k.tangents[0] - p.tangents[0]).norm() < 1e-12, "t1 changed for a constant normal");
            }
        }
    }
}

#[test]
fn tangents_follow_a_rotating_normal() {
    // a sphere resting on a plane carried by a moving body that tilts a little each step; at the end the normal
    // is far enough from z that a fresh default choice would pick another axis, the carried t1 does not jump
    let mut b = ModelBuilder::new("tilt");
    b.add_fixed_body("world", Vec3::zeros(), Quat::identity());
    b.add_body("ramp", 1.0, Mat3::identity());
    b.add_body("ball", 1.0, Mat3::identity());
    let mut m = b.build().unwrap();
    m.shapes.push(shape("ramp", 1, ShapeKind::Plane { half_extents: [0.0, 0.0] }, id()));
    m.shapes.push(shape("ball", 2, ShapeKind::Sphere { radius: 0.1 }, id()));
    let mut w = CollisionWorld::new(&m, margin(0.0)).unwrap();
    let mut c = Contacts::default();
    let mut prev_t1: Option<Vec3> = None;
    let axis = Vec3::new(1.0, 1.0, 0.0).normalize();
    let steps = 120;
    for k in 0..=steps {
        let q = rot(axis, 1.2 * k as f64 / steps as f64);
        let n = q.rotate(&Vec3::z());
        let p = vec![id(), (Vec3::zeros(), q), (n * 0.095, Quat::identity())];
        w.detect(&p, &mut c).unwrap();
        assert_eq!(c.len(), 1, "step {k}");
        let k1 = &c.contacts[0];
        assert!((k1.normal - n).norm() < 1e-9, "ball is A, ramp is B: n along the ramp normal");
        if let Some(t) = prev_t1 {
            assert!((k1.tangents[0] - t).norm() < 0.02, "step {k}: t1 jumped from {t:?} to {:?}", k1.tangents[0]);
        }
        prev_t1 = Some(k1.tangents[0]);
    }
    // the fresh choice at the final normal differs from the carried one (so the test above is not vacuous)
    let fresh = torsion_collision::tangent_frame(&c.contacts[0].normal, None)[0];
    assert!((fresh - prev_t1.unwrap()).norm() > 0.1);
    // and a new Contacts (no history) gets the fresh choice
    let mut c2 = Contacts::default();
    let q = rot(axis, 1.2);
    w.detect(&[id(), (Vec3::zeros(), q), (q.rotate(&Vec3::z()) * 0.095, Quat::identity())], &mut c2).unwrap();
    assert!((c2.contacts[0].tangents[0] - fresh).norm() < 1e-12);
}

/// A straight chain world → (hinge) b1 → (hinge) b2 → (hinge) b3 along z, every body a capsule along z.
fn chain() -> torsion_model::Model {
    let mut b = ModelBuilder::new("chain");
    let w = b.add_fixed_body("world", Vec3::zeros(), Quat::identity());
    let mut parent = w;
    for k in 1..=3 {
        let c = b.add_body(&format!("b{k}"), 1.0, Mat3::identity());
        let r = if parent == w { Vec3::zeros() } else { Vec3::new(0.0, 0.0, 0.2) };
        b.add_joint(JointDesc::hinge(&format!("j{k}"), parent, c, r, Vec3::new(0.0, 0.0, -0.2), Vec3::y()));
        parent = c;
    }
    let mut m = b.build().unwrap();
    m.shapes.push(shape("base", w, ShapeKind::Sphere { radius: 0.15 }, id()));
    for k in 1..=3 {
        m.shapes.push(shape(&format!("c{k}"), k, ShapeKind::Capsule { radius: 0.05, half_length: 0.37 }, id()));
    }
    m
}

fn body_pairs(c: &Contacts) -> BTreeSet<(usize, usize)> {
    c.iter().map(|k| (k.body_a.min(k.body_b), k.body_a.max(k.body_b))).collect()
}

#[test]
fn filtering_rules() {
    let m = chain();
    let p = m.forward_kinematics(&m.qpos0).unwrap();
    // body COMs at z = 0.2, 0.6, 1.0, capsules 0.84 long: each overlaps its neighbours and b1–b3 (grandparent)
    // overlap by 0.04. Parent–child pairs are skipped, except with the fixed world (MuJoCo exempts the world)
    let c = detect(&m, margin(0.0), &p);
    assert_eq!(body_pairs(&c), BTreeSet::from([(0, 1), (1, 3)]), "{c:#?}");
    // without the parent filter every overlapping neighbour pair appears
    let c = detect(&m, CollisionOptions { filter_parent: false, ..Default::default() }, &p);
    assert_eq!(body_pairs(&c), BTreeSet::from([(0, 1), (1, 2), (1, 3), (2, 3)]));
    // user exclusions
    let c = detect(&m, CollisionOptions { exclude_bodies: vec![(3, 1)], ..Default::default() }, &p);
    assert_eq!(body_pairs(&c), BTreeSet::from([(0, 1)]));
    // contype / conaffinity: b3 only has conaffinity 2, b1 contype 1: (1 & 2) | (ct3 & ca1) decides
    let mut m2 = m.clone();
    m2.shapes[3].contype = 0;
    m2.shapes[3].conaffinity = 2;
    assert!(detect(&m2, margin(0.0), &p).iter().all(|k| k.body_a != 3 && k.body_b != 3));
    m2.shapes[1].contype = 3; // b1 contype 3 & b3 conaffinity 2 ≠ 0
    assert!(body_pairs(&detect(&m2, margin(0.0), &p)).contains(&(1, 3)));
    // visual-only shapes (0, 0) are not even built
    let mut m3 = m.clone();
    m3.shapes.push(shape("visual", 2, ShapeKind::Mesh { file: "/nonexistent/visual.stl".into() }, id()));
    m3.shapes.last_mut().unwrap().contype = 0;
    m3.shapes.last_mut().unwrap().conaffinity = 0;
    let w = CollisionWorld::new(&m3, margin(0.0)).unwrap();
    assert!(!w.is_collidable(4) && w.is_collidable(3));
    // same body and two fixed bodies never collide
    let mut b = ModelBuilder::new("fixed");
    b.add_fixed_body("world", Vec3::zeros(), Quat::identity());
    b.add_fixed_body("table", Vec3::new(0.0, 0.0, 0.05), Quat::identity());
    b.add_body("box", 1.0, Mat3::identity());
    let mut m4 = b.build().unwrap();
    m4.shapes.push(shape("floor", 0, ShapeKind::Plane { half_extents: [0.0, 0.0] }, id()));
    m4.shapes.push(shape("table", 1, bx(0.5, 0.5, 0.1), id()));
    m4.shapes.push(shape("box_a", 2, bx(0.1, 0.1, 0.1), id()));
    m4.shapes.push(shape("box_b", 2, bx(0.1, 0.1, 0.1), (Vec3::new(0.05, 0.0, 0.0), Quat::identity())));
    let p4 = vec![m4.body_pose0[0], m4.body_pose0[1], (Vec3::new(3.0, 0.0, 0.09), Quat::identity())];
    let c = detect(&m4, margin(0.0), &p4);
    let geoms: BTreeSet<_> = c.iter().map(|k| (k.geom_a, k.geom_b)).collect();
    assert_eq!(geoms, BTreeSet::from([(2, 0), (3, 0)]), "table–floor and box_a–box_b must be skipped: {c:#?}");
}

#[test]
fn errors_name_the_culprit() {
    let m = scene(true, &[bx(0.1, 0.1, 0.1)]);
    let mut w = CollisionWorld::new(&m, margin(0.0)).unwrap();
    let mut c = Contacts::default();
    let e = w.detect(&[id()], &mut c).unwrap_err();
    assert!(matches!(e, CollisionError::PoseCount { got: 1, expected: 2 }));
    assert!(e.to_string().contains("got 1 body poses, the model has 2 bodies"), "{e}");
    let e = w.detect(&[id(), (Vec3::new(f64::NAN, 0.0, 0.0), Quat::identity())], &mut c).unwrap_err();
    assert!(e.to_string().contains("body 1 ('b0')"), "{e}");

    let mut bad = m.clone();
    bad.shapes[1].kind = ShapeKind::Sphere { radius: -1.0 };
    let e = CollisionWorld::new(&bad, margin(0.0)).err().unwrap();
    assert!(e.to_string().contains("shape 's0' (index 1): radius = -1"), "{e}");
    let mut bad = m.clone();
    bad.shapes[1].body = 7;
    assert!(matches!(CollisionWorld::new(&bad, margin(0.0)), Err(CollisionError::BadBody { body: 7, .. })));
    let e = CollisionWorld::new(&m, CollisionOptions { prediction: -1.0, ..Default::default() }).err().unwrap();
    assert!(e.to_string().contains("prediction"), "{e}");

    // a missing mesh: an error naming shape and file, or (Skip) a warning and the shape left out
    let mut mm = m.clone();
    mm.shapes[1].kind = ShapeKind::Mesh { file: "/nonexistent/part.stl".into() };
    let e = CollisionWorld::new(&mm, margin(0.0)).err().unwrap();
    let s = e.to_string();
    assert!(s.contains("'s0'") && s.contains("/nonexistent/part.stl") && s.contains("not found"), "{s}");
    let w = CollisionWorld::new(&mm, CollisionOptions { mesh_policy: MeshPolicy::Skip, ..Default::default() }).unwrap();
    assert_eq!(w.warnings().len(), 1);
    assert!(w.warnings()[0].contains("/nonexistent/part.stl") && !w.is_collidable(1));
    mm.shapes[1].kind = ShapeKind::Mesh { file: "package://robot/meshes/part.stl".into() };
    let e = CollisionWorld::new(&mm, margin(0.0)).err().unwrap();
    assert!(e.to_string().contains("package_dirs"), "{e}");
}

/// A unit cube (corners ±0.5) as ASCII STL, as OBJ and as COLLADA.
fn write_cube_meshes(dir: &std::path::Path) -> (String, String, String) {
    let v: Vec<[f64; 3]> =
        (0..8).map(|i| [(i & 1) as f64 - 0.5, ((i >> 1) & 1) as f64 - 0.5, ((i >> 2) & 1) as f64 - 0.5]).collect();
    // 12 triangles (winding does not matter for the hull)
    let f = [
        [0, 1, 3],
        [0, 3, 2],
        [4, 6, 7],
        [4, 7, 5],
        [0, 4, 5],
        [0, 5, 1],
        [2, 3, 7],
        [2, 7, 6],
        [0, 2, 6],
        [0, 6, 4],
        [1, 5, 7],
        [1, 7, 3],
    ];
    let mut stl = String::from("solid cube\n");
    for t in &f {
        stl += "facet normal 0 0 0\nouter loop\n";
        for &k in t {
            stl += &format!("vertex {} {} {}\n", v[k][0], v[k][1], v[k][2]);
        }
        stl += "endloop\nendfacet\n";
    }
    stl += "endsolid cube\n";
    let mut obj = String::new();
    for p in &v {
        obj += &format!("v {} {} {}\n", p[0], p[1], p[2]);
    }
    for t in &f {
        obj += &format!("f {} {} {}\n", t[0] + 1, t[1] + 1, t[2] + 1);
    }
    // COLLADA in units of 0.5 m (corners ±1 in the file), under a scene node
    let pos: Vec<String> = v.iter().flat_map(|p| p.iter().map(|x| format!("{}", 2.0 * x))).collect();
    let tri: Vec<String> = f.iter().flat_map(|t| t.iter().map(|k| k.to_string())).collect();
    let dae = format!(
        r##"<?xml version="1.0" encoding="utf-8"?>
<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">
  <asset><unit name="half" meter="0.5"/><up_axis>Z_UP</up_axis></asset>
  <library_geometries><geometry id="cube-mesh" name="cube"><mesh>
    <source id="cube-pos"><float_array id="cube-pos-array" count="24">{}</float_array>
      <technique_common><accessor source="#cube-pos-array" count="8" stride="3">
        <param name="X" type="float"/><param name="Y" type="float"/><param name="Z" type="float"/>
      </accessor></technique_common></source>
    <vertices id="cube-vtx"><input semantic="POSITION" source="#cube-pos"/></vertices>
    <triangles count="12"><input semantic="VERTEX" source="#cube-vtx" offset="0"/><p>{}</p></triangles>
  </mesh></geometry></library_geometries>
  <library_visual_scenes><visual_scene id="Scene" name="Scene">
    <node id="cube" name="cube"><matrix sid="transform">1 0 0 0 0 1 0 0 0 0 1 0 0 0 0 1</matrix>
      <instance_geometry url="#cube-mesh"/></node>
  </visual_scene></library_visual_scenes>
  <scene><instance_visual_scene url="#Scene"/></scene>
</COLLADA>"##,
        pos.join(" "),
        tri.join(" ")
    );
    let (s, o, d) = (dir.join("cube.stl"), dir.join("cube.obj"), dir.join("cube.dae"));
    std::fs::write(&s, stl).unwrap();
    std::fs::write(&o, obj).unwrap();
    std::fs::write(&d, dae).unwrap();
    (s.display().to_string(), o.display().to_string(), d.display().to_string())
}

#[test]
fn convex_mesh_plane_and_box() {
    let dir = std::env::temp_dir().join(format!("torsion-collision-mesh-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (stl, obj, dae) = write_cube_meshes(&dir);
    for file in [stl, obj, dae] {
        let m = scene(true, &[ShapeKind::Mesh { file: file.clone() }, bx(0.5, 0.5, 0.5)]);
        // the mesh cube 0.02 into the floor, tilted slightly: 4 corners, distances = corner heights
        let q = rot(Vec3::y(), 0.02);
        let p = poses(&[(Vec3::new(0.0, 0.0, 0.48), q), (Vec3::new(3.0, 0.0, 0.5), Quat::identity())]);
        let c = detect(&m, margin(0.0), &p);
        let mesh_floor: Vec<_> = c.between(1, 0).collect();
        assert_eq!(mesh_floor.len(), 4, "{file}: {c:#?}");
        for k in &mesh_floor {
            assert!((k.distance - k.point_a.z).abs() < 1e-9 && (k.normal - Vec3::z()).norm() < 1e-12);
        }
        // the mesh cube against an equal primitive box, face to face: ≥ 4 points at −0.01
        let p = poses(&[(Vec3::new(3.0, 0.1, 1.49), Quat::identity()), (Vec3::new(3.0, 0.0, 0.5), Quat::identity())]);
        let c = detect(&m, margin(0.0), &p);
        let mb: Vec<_> = c.between(1, 2).collect();
        assert!(mb.len() >= 4, "{file}: {c:#?}");
        assert!(mb.iter().all(|k| (k.distance + 0.01).abs() < 1e-9 && (k.normal - Vec3::z()).norm() < 1e-9));
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn package_uris_are_found_in_each_search_folder() {
    use std::path::PathBuf;
    use torsion_collision::mesh::PackageSearch;
    // <root>/ws/src/arm_description/{meshes/cube.stl, urdf/arm.urdf}
    let root = std::env::temp_dir().join(format!("torsion-collision-pkg-{}", std::process::id()));
    let pkg = root.join("ws/src/arm_description");
    std::fs::create_dir_all(pkg.join("meshes")).unwrap();
    write_cube_meshes(&pkg.join("meshes"));
    let uri = "package://arm_description/meshes/cube.stl";
    let want = pkg.join("meshes/cube.stl");
    let (src, nowhere) = (root.join("ws/src"), root.join("nowhere"));
    let found = |dirs: &[PathBuf], model: Option<&std::path::Path>, ros: Option<&str>| {
        PackageSearch::with_ros_package_path(dirs, model, ros.map(std::ffi::OsStr::new)).resolve(uri)
    };
    // (a) explicit: the folder holding the package, or the package folder itself
    assert_eq!(found(&[nowhere.clone(), src.clone()], None, None).unwrap(), want);
    assert_eq!(found(std::slice::from_ref(&pkg), None, None).unwrap(), want);
    // (b) ROS_PACKAGE_PATH, colon-separated
    let ros = format!("{}:{}", nowhere.display(), src.display());
    assert_eq!(found(&[], None, Some(&ros)).unwrap(), want);
    // (c) the folders above the model file (it need not exist to be searched above)
    assert_eq!(found(&[], Some(&pkg.join("urdf/arm.urdf")), None).unwrap(), want);
    // nowhere: the error lists every folder tried, with where it came from
    let e = found(std::slice::from_ref(&nowhere), Some(&root.join("elsewhere/arm.urdf")), Some("/also/nowhere"))
        .unwrap_err();
    for part in [
        format!("{} (package_dirs)", nowhere.display()),
        "/also/nowhere (ROS_PACKAGE_PATH)".to_string(),
        format!("{} (above the model file)", root.join("elsewhere").display()),
        format!("{} (above the model file)", root.display()),
        "--package-dir".to_string(),
    ] {
        assert!(e.contains(&part), "{part} not in: {e}");
    }
    std::fs::remove_dir_all(&root).ok();
}

/// A deterministic jumble of n boxes over a floor (some stacked, some penetrating).
pub fn jumble(n: usize) -> (torsion_model::Model, Vec<(Vec3, Quat)>) {
    let m = scene(true, &vec![bx(0.1, 0.1, 0.1); n]);
    let mut s = 7u64;
    let mut rnd = || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (s >> 11) as f64 / (1u64 << 53) as f64
    };
    let side = (n as f64).sqrt().ceil() * 0.25;
    let mut p = Vec::new();
    for _ in 0..n {
        let x = Vec3::new(rnd() * side, rnd() * side, 0.09 + rnd() * 0.3);
        let q = rot(Vec3::new(rnd() - 0.5, rnd() - 0.5, rnd() - 0.5), rnd() * 3.0);
        p.push((x, q));
    }
    (m, poses(&p))
}

#[test]
fn sweep_and_prune_equals_all_pairs() {
    let (m, p) = jumble(300);
    let a = detect(&m, margin(0.01), &p);
    let b = detect(&m, CollisionOptions { margin: 0.01, broad_phase: BroadPhase::AllPairs, ..Default::default() }, &p);
    assert!(a.len() > 300, "the jumble should touch a lot: {}", a.len());
    assert_eq!(a.contacts, b.contacts);
    // box–box contacts exist besides the floor ones
    assert!(a.iter().any(|k| k.geom_b != 0));
}
