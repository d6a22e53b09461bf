//! Loader reliability (issue 20 item 1): no file kills the process (deep nesting), nonsense values are refused
//! with the file, element and line (triangle inequality, minimum mass / inertia, negative joint constants,
//! sizes ≤ 0, missing mesh files, duplicate names, dangling references), UTF-16 files are decoded.
use std::path::PathBuf;
use torsion_model::io::{load_mjcf, load_mjcf_str, load_urdf, load_urdf_str, UrdfOptions, MAX_XML_DEPTH};
use torsion_model::{ModelError, ParamSelection};

#[track_caller]
fn names(e: ModelError, parts: &[&str]) {
    let s = e.to_string();
    assert!(matches!(e, ModelError::Parse { .. }), "{s}");
    for p in parts {
        assert!(s.contains(p), "'{p}' not in: {s}");
    }
}

/// A fresh folder for files of one test.
fn tmp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("torsion-loader-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

const URDF: &str = r#"<?xml version="1.0"?>
<robot name="r">
  <link name="base"/>
  <link name="arm">
    <inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>
    <collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision>
  </link>
  <joint name="j" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/><dynamics damping="0.5" friction="0.1"/></joint>
</robot>"#;

fn urdf_err(text: &str) -> ModelError {
    load_urdf_str(text, "inline.urdf", &UrdfOptions::default()).unwrap_err()
}

const MJCF: &str = r#"<mujoco><worldbody><body name="b"><joint name="j" damping="0.1"/>
  <inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/><geom name="g" size="0.1"/></body></worldbody>
  <tendon><fixed name="t"><joint joint="j" coef="1"/></fixed></tendon>
  <actuator><motor name="a" joint="j"/></actuator></mujoco>"#;

fn mjcf_err(text: &str) -> ModelError {
    load_mjcf_str(text, "inline.xml", None).unwrap_err()
}

#[test]
fn the_fixtures_load() {
    load_urdf_str(URDF, "inline.urdf", &UrdfOptions::default()).unwrap();
    load_mjcf_str(MJCF, "inline.xml", None).unwrap();
}

#[test]
fn deep_nesting_is_a_clear_error_not_a_stack_overflow() {
    let n = 10_000;
    let text = format!(
        "<mujoco><worldbody>{}{}</worldbody></mujoco>",
        "<body><joint/><geom size=\"0.1\"/>".repeat(n),
        "</body>".repeat(n)
    );
    names(mjcf_err(&text), &["inline.xml", "nested deeper than 500", "line 1"]);
    let text = URDF.replace(
        "<link name=\"base\"/>",
        &format!("<link name=\"base\">{}{}</link>", "<a>".repeat(n), "</a>".repeat(n)),
    );
    names(urdf_err(&text), &["inline.urdf", "<a>", "nested deeper than 500"]);
    // just below the limit: a chain of bodies loads (on a test thread's 2 MiB stack)
    let k = MAX_XML_DEPTH - 4;
    let text = format!(
        "<mujoco><worldbody>{}{}</worldbody></mujoco>",
        "<body><joint/><geom size=\"0.1\"/>".repeat(k),
        "</body>".repeat(k)
    );
    assert_eq!(load_mjcf_str(&text, "inline.xml", None).unwrap().joint_count(), k);
}

#[test]
fn inertias_violating_the_triangle_inequality_or_tiny_are_refused() {
    let e = urdf_err(&URDF.replace("izz=\"1\"", "izz=\"3\""));
    names(e, &["link 'arm'", "triangle inequality", "line 4"]);
    names(urdf_err(&URDF.replace("mass value=\"1\"", "mass value=\"1e-300\"")), &["link 'arm'", "mass", "1e-15"]);
    let e = urdf_err(&URDF.replace(
        "ixx=\"1\" ixy=\"0\" ixz=\"0\" iyy=\"1\" iyz=\"0\" izz=\"1\"",
        "ixx=\"1e-300\" ixy=\"0\" ixz=\"0\" iyy=\"1e-300\" iyz=\"0\" izz=\"1e-300\"",
    ));
    names(e, &["link 'arm'", "inertia", "1e-15"]);
    names(
        mjcf_err(&MJCF.replace("diaginertia=\"1 1 1\"", "diaginertia=\"1 1 3\"")),
        &["body 'b'", "triangle inequality"],
    );
    names(mjcf_err(&MJCF.replace("mass=\"1\"", "mass=\"1e-300\"")), &["body 'b'", "1e-15"]);
}

#[test]
fn negative_joint_constants_are_refused() {
    names(urdf_err(&URDF.replace("damping=\"0.5\"", "damping=\"-5\"")), &["joint 'j'", "damping", "≥ 0", "line 9"]);
    names(urdf_err(&URDF.replace("friction=\"0.1\"", "friction=\"-1\"")), &["joint 'j'", "friction", "≥ 0"]);
    names(mjcf_err(&MJCF.replace("damping=\"0.1\"", "damping=\"-5\"")), &["joint 'j'", "damping must be ≥ 0"]);
    names(mjcf_err(&MJCF.replace("damping=\"0.1\"", "stiffness=\"-1\"")), &["joint 'j'", "stiffness must be ≥ 0"]);
    names(mjcf_err(&MJCF.replace("damping=\"0.1\"", "armature=\"-1\"")), &["joint 'j'", "armature must be ≥ 0"]);
}

#[test]
fn sizes_must_be_positive() {
    for (a, b) in [
        ("<box size=\"0.1 0.1 0.1\"/>", "<box size=\"0.1 0 0.1\"/>"),
        ("<box size=\"0.1 0.1 0.1\"/>", "<sphere radius=\"-1\"/>"),
        ("<box size=\"0.1 0.1 0.1\"/>", "<cylinder radius=\"0.1\" length=\"0\"/>"),
        ("<box size=\"0.1 0.1 0.1\"/>", "<capsule radius=\"0\" length=\"1\"/>"),
    ] {
        names(urdf_err(&URDF.replace(a, b)), &["link 'arm'", "must be > 0", "line 6"]);
    }
    names(mjcf_err(&MJCF.replace("size=\"0.1\"", "size=\"-0.1\"")), &["geom 'g'", "size[0] > 0"]);
}

#[test]
fn missing_mesh_files_are_reported_at_load_time() {
    let d = tmp("mesh");
    let urdf = d.join("r.urdf");
    std::fs::write(&urdf, URDF.replace("<box size=\"0.1 0.1 0.1\"/>", "<mesh filename=\"meshes/none.stl\"/>")).unwrap();
    names(load_urdf(&urdf, &UrdfOptions::default()).unwrap_err(), &["r.urdf", "link 'arm'", "none.stl", "not found"]);
    std::fs::create_dir_all(d.join("meshes")).unwrap();
    std::fs::write(d.join("meshes/none.stl"), b"solid x\nendsolid x\n").unwrap();
    load_urdf(&urdf, &UrdfOptions::default()).unwrap();
    let xml = d.join("m.xml");
    let text = MJCF
        .replace("<worldbody>", "<asset><mesh name=\"m\" file=\"gone.stl\"/></asset><worldbody>")
        .replace("<geom name=\"g\" size=\"0.1\"/>", "<geom name=\"g\" type=\"mesh\" mesh=\"m\"/>");
    std::fs::write(&xml, text).unwrap();
    names(load_mjcf(&xml).unwrap_err(), &["m.xml", "mesh 'm'", "gone.stl", "not found"]);
}

/// `package://` meshes are resolved at load time by the resolver the contact solver uses (`io::PackageSearch`): a
/// package that is found must hold the file (before: accepted, only the contact solver complained); a package
/// found nowhere loads, its meshes left to the contact solver's `package_dirs` (docs/decisions.md).
#[test]
fn package_meshes_are_checked_at_load_time() {
    let pkg = format!("torsion_pkg_{}", std::process::id());
    let root = tmp("package").join(&pkg);
    std::fs::create_dir_all(root.join("urdf")).unwrap();
    std::fs::create_dir_all(root.join("meshes")).unwrap();
    let urdf = root.join("urdf/r.urdf");
    let mesh = |uri: &str| URDF.replace("<box size=\"0.1 0.1 0.1\"/>", &format!("<mesh filename=\"{uri}\"/>"));
    let uri = format!("package://{pkg}/meshes/arm.stl");
    std::fs::write(&urdf, mesh(&uri)).unwrap();
    let e = load_urdf(&urdf, &UrdfOptions::default()).unwrap_err();
    names(e, &["r.urdf", "link 'arm'", &uri, "not found", &root.display().to_string(), "line 4"]);
    std::fs::write(root.join("meshes/arm.stl"), b"solid x\nendsolid x\n").unwrap();
    let m = load_urdf(&urdf, &UrdfOptions::default()).unwrap();
    assert!(matches!(&m.shapes[0].kind, torsion_model::ShapeKind::Mesh { file } if *file == uri), "name kept");
    // a package found in no search folder: the model loads (dynamics needs no mesh), as Pinocchio's buildModel
    std::fs::write(&urdf, mesh("package://torsion_no_such_package/meshes/arm.stl")).unwrap();
    load_urdf(&urdf, &UrdfOptions::default()).unwrap();
}

#[test]
fn duplicate_names_and_dangling_references_are_refused() {
    let two = URDF.replace("</robot>", "<link name=\"arm\"/></robot>");
    names(urdf_err(&two), &["link 'arm'", "twice"]);
    let mimic = URDF.replace("<dynamics", "<mimic joint=\"nope\" multiplier=\"1\"/><dynamics");
    names(urdf_err(&mimic), &["joint 'j'", "<mimic joint=\"nope\">", "no joint 'nope'", "line 8"]);
    let g2 = MJCF
        .replace("<geom name=\"g\" size=\"0.1\"/>", "<geom name=\"g\" size=\"0.1\"/><geom name=\"g\" size=\"0.1\"/>");
    names(mjcf_err(&g2), &["geom 'g'", "used twice"]);
    names(
        mjcf_err(&MJCF.replace(
            "<motor name=\"a\" joint=\"j\"/>",
            "<motor name=\"t\" joint=\"j\"/><motor name=\"t\" joint=\"j\"/>",
        )),
        &["motor 't'", "used twice"],
    );
    names(mjcf_err(&MJCF.replace("<joint joint=\"j\"", "<joint joint=\"k\"")), &["tendon", "unknown joint 'k'"]);
}

fn utf16(text: &str, big: bool) -> Vec<u8> {
    let mut out = if big { vec![0xFE, 0xFF] } else { vec![0xFF, 0xFE] };
    for u in text.encode_utf16() {
        out.extend(if big { u.to_be_bytes() } else { u.to_le_bytes() });
    }
    out
}

#[test]
fn utf16_and_bom_files_are_decoded() {
    let d = tmp("utf16");
    for (k, big) in [false, true].into_iter().enumerate() {
        let text = URDF.replace("version=\"1.0\"", "version=\"1.0\" encoding=\"UTF-16\"");
        let p = d.join(format!("r{k}.urdf"));
        std::fs::write(&p, utf16(&text, big)).unwrap();
        assert_eq!(load_urdf(&p, &UrdfOptions::default()).unwrap().joint_count(), 1);
        let p = d.join(format!("m{k}.xml"));
        std::fs::write(&p, utf16(MJCF, big)).unwrap();
        assert_eq!(load_mjcf(&p).unwrap().joint_count(), 1);
    }
    let p = d.join("bom8.urdf");
    std::fs::write(&p, [&[0xEF, 0xBB, 0xBF][..], URDF.as_bytes()].concat()).unwrap();
    load_urdf(&p, &UrdfOptions::default()).unwrap();
    // an odd byte count or an unpaired surrogate is an error naming the file
    let p = d.join("odd.urdf");
    std::fs::write(&p, [&utf16(URDF, false)[..], &[0x41]].concat()).unwrap();
    names(load_urdf(&p, &UrdfOptions::default()).unwrap_err(), &["odd.urdf", "UTF-16"]);
}
/// `params_set` is all-or-nothing: one bad value leaves every parameter as it was (issue 20: the first valid
/// value used to stick when a later one was NaN).
#[test]
fn params_set_changes_nothing_on_error() {
    let mut m = load_mjcf_str(MJCF, "inline.xml", None).unwrap();
    let sel = ParamSelection::all(&m);
    let before = m.params_get(&sel);
    let mut v = before.clone();
    v[0] = 2.0; // a valid mass
    let last = v.len() - 1;
    v[last] = f64::NAN;
    assert!(m.params_set(&sel, &v).is_err());
    assert_eq!(m.params_get(&sel), before);
    v[last] = before[last];
    v[1] = -1.0; // inertia no longer positive definite: refused by validation, also unchanged
    assert!(m.params_set(&sel, &v).is_err());
    assert_eq!(m.params_get(&sel), before);
    // a name given twice would let the last value win: refused, unchanged
    let mass = m.param_table().names[0].clone();
    let twice = ParamSelection::by_names(&m, &[&mass, &mass]).unwrap();
    let e = m.params_set(&twice, &[3.0, 4.0]).unwrap_err().to_string();
    assert!(e.contains(&mass) && e.contains("twice"), "{e}");
    assert_eq!(m.params_get(&sel), before);
}
