//! Robot descriptions from pip packages: `example-robot-data` (URDF, `pip install example-robot-data`) and the
//! dm_control suite (MJCF, read out of the `dm-control` wheel without installing it).
use crate::error::ModelError;
use crate::io::mjcf::{load_mjcf, load_mjcf_str};
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

/// Where a model registered by name comes from (see [`MODELS`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelSource {
    /// built into torsion (builders and embedded MJCF files): always available
    Builtin,
    /// a URDF of pip `example-robot-data`, path relative to [`example_robot_data_dir`]
    ExampleRobotData(&'static str),
    /// an MJCF of the dm_control suite (pip `dm-control`'s wheel), file stem in [`dm_control_suite_dir`]
    DmControl(&'static str),
}

/// A model known by name: `name` is what [`load_model`], the CLI's `--model` and Python's
/// `torsion.models.load` accept.
#[derive(Clone, Copy, Debug)]
pub struct ModelEntry {
    pub name: &'static str,
    pub source: ModelSource,
    pub description: &'static str,
}

const fn erd(name: &'static str, path: &'static str, description: &'static str) -> ModelEntry {
    ModelEntry { name, source: ModelSource::ExampleRobotData(path), description }
}
const fn dmc(name: &'static str, stem: &'static str, description: &'static str) -> ModelEntry {
    ModelEntry { name, source: ModelSource::DmControl(stem), description }
}
const fn builtin(name: &'static str, description: &'static str) -> ModelEntry {
    ModelEntry { name, source: ModelSource::Builtin, description }
}

/// Every model known by name, in listing order. The dm_control entries are the suite's self-contained MJCF
/// files (`lqr`, `stacker` and `swimmer` are templates its Python code fills in; `dog` needs mesh inertia,
/// which the MJCF loader refuses: not listed).
pub const MODELS: &[ModelEntry] = &[
    builtin("two_link_arm", "planar 2-link arm, 1 m links, 1 kg tip masses (builder)"),
    builtin("tensegrity_prism", "3-bar tensegrity prism: 3 rods, 9 cables, 3 filter motors (spec 003 §4.0)"),
    builtin("superball", "NASA SUPERball tensegrity resting on a floor: 6 rods, 24 actuated cables (MJCF)"),
    builtin("superball_air", "SUPERball with one rod welded in the air, rod-rod contact off (MJCF)"),
    builtin(
        "tensegrity_3bar",
        "3-bar prism tensegrity at 0.1 g standing on a floor: SUPERball's rods and cables, 3 actuated (MJCF)",
    ),
    erd("panda", "panda_description/urdf/panda.urdf", "Franka Emika Panda arm with its gripper"),
    erd("baxter", "baxter_description/urdf/baxter.urdf", "Rethink Baxter, both arms and grippers"),
    builtin("baxter_left_arm", "Baxter left arm chain torso→left_hand_link, off-chain links welded in"),
    erd("ur3", "ur_description/urdf/ur3_robot.urdf", "Universal Robots UR3"),
    erd("ur5", "ur_description/urdf/ur5_robot.urdf", "Universal Robots UR5"),
    erd("ur10", "ur_description/urdf/ur10_robot.urdf", "Universal Robots UR10"),
    erd("xarm7", "xarm_description/urdf/xarm7.urdf", "UFactory xArm 7"),
    erd("z1", "z1_description/urdf/z1.urdf", "Unitree Z1 arm"),
    erd("so100", "so_arm_description/urdf/so100.urdf", "SO-100 low-cost arm"),
    erd("double_pendulum", "double_pendulum_description/urdf/double_pendulum.urdf", "double pendulum"),
    erd("go1", "go1_description/urdf/go1.urdf", "Unitree Go1 quadruped (floating base)"),
    erd("go2", "go2_description/urdf/go2.urdf", "Unitree Go2 quadruped (floating base)"),
    erd("a1", "a1_description/urdf/a1.urdf", "Unitree A1 quadruped (floating base)"),
    erd("anymal_c", "anymal_c_simple_description/urdf/anymal.urdf", "ANYbotics ANYmal C quadruped (floating base)"),
    dmc("dm_control/acrobot", "acrobot", "dm_control acrobot"),
    dmc("dm_control/ball_in_cup", "ball_in_cup", "dm_control ball in cup"),
    dmc("dm_control/cartpole", "cartpole", "dm_control cart-pole"),
    dmc("dm_control/cheetah", "cheetah", "dm_control half-cheetah"),
    dmc("dm_control/finger", "finger", "dm_control finger spinning a hinged body"),
    dmc("dm_control/fish", "fish", "dm_control fish (fluid forces)"),
    dmc("dm_control/hopper", "hopper", "dm_control hopper"),
    dmc("dm_control/humanoid", "humanoid", "dm_control humanoid"),
    dmc("dm_control/humanoid_CMU", "humanoid_CMU", "dm_control CMU humanoid"),
    dmc("dm_control/manipulator", "manipulator", "dm_control planar manipulator"),
    dmc("dm_control/pendulum", "pendulum", "dm_control pendulum"),
    dmc("dm_control/point_mass", "point_mass", "dm_control point mass"),
    dmc("dm_control/quadruped", "quadruped", "dm_control quadruped"),
    dmc("dm_control/reacher", "reacher", "dm_control reacher"),
    dmc("dm_control/walker", "walker", "dm_control planar walker"),
];

const SUPERBALL_XML: &str = include_str!("../../tests/data/mjcf/superball.xml");
const SUPERBALL_AIR_XML: &str = include_str!("../../tests/data/mjcf/superball_air.xml");
const TENSEGRITY_3BAR_XML: &str = include_str!("../../tests/data/mjcf/tensegrity_3bar.xml");

/// A model by its registered name (see [`MODELS`]; `dm_control/NAME` also reaches suite files not listed).
/// Unknown names are an error listing the known ones; a missing pip package is an error naming it.
pub fn load_model(name: &str) -> Result<Model, ModelError> {
    let entry = MODELS.iter().find(|e| e.name == name);
    match entry.map(|e| e.source) {
        Some(ModelSource::Builtin) => match name {
            "two_link_arm" => {
                crate::builder::two_link_arm(1.0, 1.0, 1.0, torsion_math::Vec3::new(0.0, 0.0, -9.81), 0.01)
            }
            "tensegrity_prism" => Ok(crate::builder::tensegrity_prism()),
            "superball" => load_mjcf_str(SUPERBALL_XML, "superball.xml (built in)", None),
            "superball_air" => load_mjcf_str(SUPERBALL_AIR_XML, "superball_air.xml (built in)", None),
            "tensegrity_3bar" => load_mjcf_str(TENSEGRITY_3BAR_XML, "tensegrity_3bar.xml (built in)", None),
            "baxter_left_arm" => baxter_left_arm(),
            _ => Err(ModelError::Invalid(format!("built-in model '{name}' has no loader (a torsion bug)"))),
        },
        Some(ModelSource::ExampleRobotData(rel)) => {
            let dir = example_robot_data_dir().ok_or_else(|| {
                ModelError::Invalid(format!(
                    "model '{name}' comes from example-robot-data, which was not found: \
                     `python3 -m pip install example-robot-data` or set TORSION_ROBOTS_DIR"
                ))
            })?;
            load_urdf(&dir.join(rel), &UrdfOptions::default())
        }
        Some(ModelSource::DmControl(stem)) => dm_control_model(stem),
        None => match name.strip_prefix("dm_control/") {
            Some(stem) if !stem.is_empty() && stem.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => {
                dm_control_model(stem)
            }
            _ => Err(ModelError::Invalid(format!(
                "unknown model name '{name}': known names are {}",
                MODELS.iter().map(|e| e.name).collect::<Vec<_>>().join(", ")
            ))),
        },
    }
}
