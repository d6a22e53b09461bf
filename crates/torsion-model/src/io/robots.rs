//! Robot descriptions from pip packages: `example-robot-data` (URDF, `pip install example-robot-data`) and the
//! dm_control suite (MJCF, read out of the `dm-control` wheel without installing it).
use crate::error::ModelError;
use crate::io::mjcf::load_mjcf;
use crate::io::urdf::{load_urdf, UrdfOptions};
use crate::model::Model;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

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

/// The Baxter left arm: root `torso` (the mount merged into the fixed base), tip `left_hand_link`, 7 revolute
/// joints `left_s0` … `left_w2`; the hand, gripper (fingers locked at 0), sensors and the dummy links hanging off
/// the arm welded into their bodies (20.07162 kg in all, Pinocchio's `buildReducedModel` of the whole URDF with
/// every other joint locked at 0).
pub fn baxter_left_arm() -> Result<Model, ModelError> {
    baxter_arm(false)
}

/// The bare Baxter left arm of spec 000 §4.7: as [`baxter_left_arm`] but only the links on the chain, the hand
/// lumped into `left_wrist`, gripper, sensors and dummies dropped (19.71082 kg). The paper's model: the
/// spec-000 experiments and the PyTorch reference (`tests/data/pbd_torch_ref.npz`) use it.
pub fn baxter_left_arm_spec000() -> Result<Model, ModelError> {
    baxter_arm(true)
}

fn baxter_arm(drop_off_chain: bool) -> Result<Model, ModelError> {
    let dir = example_robot_data_dir().ok_or_else(|| {
        ModelError::Invalid(
            "example-robot-data not found: `pip install example-robot-data` or set TORSION_ROBOTS_DIR".into(),
        )
    })?;
    let opts = UrdfOptions { root: Some("torso".into()), tip: Some("left_hand_link".into()), drop_off_chain };
    load_urdf(&dir.join(BAXTER_URDF), &opts)
}

/// The dm-control release whose suite XMLs [`dm_control_suite_dir`] fetches (the MuJoCo reference values of
/// the tests were measured on these files).
pub const DM_CONTROL_VERSION: &str = "1.0.50";

/// A folder holding dm_control's `suite/*.xml` and `suite/common/*` (so `cartpole.xml` and `common/skybox.xml`):
/// `$TORSION_DM_CONTROL_DIR` if set (None if it is not a directory); else a cache folder,
/// `<workspace>/target/dm_control_suite/<version>` when this crate is built from its source tree, otherwise
/// `$HOME/.cache/torsion/dm_control/<version>`, filled on first use by
/// `python3 -m pip download --no-deps dm-control==<version>` and unzipping the suite files out of the wheel
/// with python's `zipfile` (the wheel is not installed, so its mujoco pin does not matter). None if that fails.
pub fn dm_control_suite_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("TORSION_DM_CONTROL_DIR") {
        let d = PathBuf::from(d);
        return d.is_dir().then_some(d);
    }
    static LOCK: Mutex<()> = Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let ws_target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target").canonicalize();
    let cache = match ws_target {
        Ok(t) if t.is_dir() => t.join("dm_control_suite"),
        _ => PathBuf::from(std::env::var_os("HOME")?).join(".cache/torsion/dm_control"),
    };
    let dir = cache.join(DM_CONTROL_VERSION);
    if dir.join("cartpole.xml").is_file() && dir.join("common").is_dir() {
        return Some(dir);
    }
    let tmp = cache.join(format!("tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).ok()?;
    let fetched = fetch_dm_control(&tmp);
    if fetched.is_some() {
        // another process may have won the race: keep whichever folder is complete
        let _ = std::fs::rename(tmp.join("suite"), &dir);
    }
    let _ = std::fs::remove_dir_all(&tmp);
    (dir.join("cartpole.xml").is_file() && dir.join("common").is_dir()).then_some(dir)
}

/// Download the dm-control wheel into `tmp` and unzip `dm_control/suite/{*.xml, common/*}` into `tmp/suite`.
fn fetch_dm_control(tmp: &Path) -> Option<()> {
    let status = std::process::Command::new("python3")
        .args(["-m", "pip", "download", "--no-deps", "--quiet", "--disable-pip-version-check"])
        .arg(format!("dm-control=={DM_CONTROL_VERSION}"))
        .arg("-d")
        .arg(tmp)
        .status()
        .ok()?;
    if !status.success() {
        return None;
    }
    let script = "import glob, os, sys, zipfile\n\
                  tmp = sys.argv[1]\n\
                  whl = glob.glob(os.path.join(tmp, 'dm_control-*.whl'))[0]\n\
                  pre = 'dm_control/suite/'\n\
                  with zipfile.ZipFile(whl) as z:\n\
                  \x20   for n in z.namelist():\n\
                  \x20       rel = n[len(pre):]\n\
                  \x20       if n.startswith(pre) and (('/' not in rel and rel.endswith('.xml')) or rel.startswith('common/')):\n\
                  \x20           out = os.path.join(tmp, 'suite', rel)\n\
                  \x20           os.makedirs(os.path.dirname(out), exist_ok=True)\n\
                  \x20           open(out, 'wb').write(z.read(n))\n";
    let status = std::process::Command::new("python3").args(["-c", script]).arg(tmp).status().ok()?;
    status.success().then_some(())
}

/// A dm_control suite model by name (`cartpole`, `acrobot`, `hopper`, `cheetah`, `humanoid`, …), loaded from
/// [`dm_control_suite_dir`].
pub fn dm_control_model(name: &str) -> Result<Model, ModelError> {
    let dir = dm_control_suite_dir().ok_or_else(|| {
        ModelError::Invalid(format!(
            "dm_control suite files not found: set TORSION_DM_CONTROL_DIR to a folder with dm_control/suite's XMLs, \
             or let `python3 -m pip download --no-deps dm-control=={DM_CONTROL_VERSION}` reach PyPI"
        ))
    })?;
    load_mjcf(&dir.join(format!("{name}.xml")))
}
