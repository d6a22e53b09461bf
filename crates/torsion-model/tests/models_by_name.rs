//! Models by name (issue 21 item 3): every registered name loads (example-robot-data and the dm_control suite
//! come from their pip packages, as CI installs them), names are unique, and bad names say what is known.
use torsion_model::io::{load_model, ModelSource, MODELS};

#[test]
fn every_registered_model_loads() {
    let mut failures = vec![];
    for e in MODELS {
        match load_model(e.name) {
            Ok(m) => {
                assert!(m.body_count() > 0, "{}: no bodies", e.name);
                if matches!(e.source, ModelSource::ExampleRobotData(_) | ModelSource::DmControl(_)) {
                    assert!(m.nv() > 0, "{}: no degrees of freedom", e.name);
                }
            }
            Err(err) => failures.push(format!("{}: {err}", e.name)),
        }
    }
    assert!(failures.is_empty(), "models that do not load:\n{}", failures.join("\n"));
}

#[test]
fn names_are_unique_and_builtins_need_no_package() {
    let mut names: Vec<_> = MODELS.iter().map(|e| e.name).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), MODELS.len());
    let sb = load_model("superball").unwrap();
    assert_eq!((sb.cables.len(), sb.cable_actuators.len()), (24, 24));
    assert_eq!(load_model("superball_air").unwrap().cables.len(), 24);
}

#[test]
fn unknown_names_list_the_known_ones() {
    let e = load_model("pandaa").unwrap_err().to_string();
    assert!(e.contains("unknown model name 'pandaa'") && e.contains("panda") && e.contains("dm_control/hopper"), "{e}");
    let e = load_model("dm_control/no_such_model").unwrap_err().to_string();
    assert!(e.contains("no_such_model.xml"), "{e}");
    let e = load_model("dm_control/../x").unwrap_err().to_string();
    assert!(e.contains("unknown model name"), "{e}");
}
