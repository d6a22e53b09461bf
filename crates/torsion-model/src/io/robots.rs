//! The robot descriptions of the pip package `example-robot-data` (`pip install example-robot-data`).
use crate::error::ModelError;
use crate::io::urdf::{load_urdf, UrdfOptions};
use crate::model::Model;
use std::path::PathBuf;

/// Baxter, relative to [`example_robot_data_dir`].
pub const BAXTER_URDF: &str = "baxter_description/urdf/baxter.urdf";
/// Franka Emika Panda, relative to [`example_robot_data_dir`].
pub const PANDA_URDF: &str = "panda_description/urdf/panda.urdf";

const SUBDIR: &str = "cmeel.prefix/share/example-robot-data/robots";

/// The `robots/` folder of `example-robot-data`: `$TORSION_ROBOTS_DIR` if set (None if it is not a
/// directory), else `<site-packages>/cmeel.prefix/share/example-robot-data/robots` of the `python3` on PATH.
pub fn example_robot_data_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("TORSION_ROBOTS_DIR") {
        let d = PathBuf::from(d);
        return d.is_dir().then_some(d);
    }
    let script = "import site, sysconfig\n\
                  dirs = [sysconfig.get_paths()['purelib'], *site.getsitepackages(), site.getusersitepackages()]\n\
                  print('\\n'.join(dirs))";
    let out = std::process::Command::new("python3").args(["-c", script]).output().ok()?;
    String::from_utf8_lossy(&out.stdout).lines().map(|l| PathBuf::from(l.trim()).join(SUBDIR)).find(|p| p.is_dir())
}

/// The Baxter left arm of spec 000 §4.7: root `torso` (the mount merged into the fixed base), tip
/// `left_hand_link` (the hand lumped into `left_wrist`): 7 revolute joints `left_s0` … `left_w2`.
pub fn baxter_left_arm() -> Result<Model, ModelError> {
    let dir = example_robot_data_dir().ok_or_else(|| {
        ModelError::Invalid(
            "example-robot-data not found: `pip install example-robot-data` or set TORSION_ROBOTS_DIR".into(),
        )
    })?;
    let opts = UrdfOptions { root: Some("torso".into()), tip: Some("left_hand_link".into()) };
    load_urdf(&dir.join(BAXTER_URDF), &opts)
}
