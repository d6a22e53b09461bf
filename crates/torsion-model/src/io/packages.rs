//! Where `package://` mesh names are found: the one resolver ([`PackageSearch`]), used by the URDF loader at
//! load time ([`PackageSearch::check_at_load`]) and by torsion-collision when it reads the meshes.
use super::example_robot_data_dir;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Where `package://pkg/rest` names are looked up, in this order: (a) the explicit `package_dirs`, (b) the
/// colon-separated `ROS_PACKAGE_PATH`, (c) the folders above the model file (nearest first: a URDF inside
/// example-robot-data finds `…/share/example-robot-data/robots/…`, one inside a `robots/` folder finds its
/// sibling packages), (d) example-robot-data's install folder ([`example_robot_data_dir`],
/// asked only when (a)–(c) fail). In each folder `d`: `d/pkg/rest`, then `d/rest`.
#[derive(Debug)]
pub struct PackageSearch {
    dirs: Vec<(PathBuf, &'static str)>,
    robots: OnceLock<Vec<(PathBuf, &'static str)>>,
}

impl PackageSearch {
    /// `package_dirs` then `ROS_PACKAGE_PATH` (read now) then the folders above `model_file`.
    pub fn new(package_dirs: &[PathBuf], model_file: Option<&Path>) -> Self {
        Self::with_ros_package_path(package_dirs, model_file, std::env::var_os("ROS_PACKAGE_PATH").as_deref())
    }

    /// As [`PackageSearch::new`] with `ROS_PACKAGE_PATH`'s value given.
    pub fn with_ros_package_path(package_dirs: &[PathBuf], model_file: Option<&Path>, ros: Option<&OsStr>) -> Self {
        let mut dirs: Vec<(PathBuf, &'static str)> = package_dirs.iter().map(|d| (d.clone(), "package_dirs")).collect();
        if let Some(r) = ros {
            dirs.extend(
                std::env::split_paths(r).filter(|d| !d.as_os_str().is_empty()).map(|d| (d, "ROS_PACKAGE_PATH")),
            );
        }
        if let Some(f) = model_file {
            let f = std::path::absolute(f).unwrap_or_else(|_| f.to_path_buf());
            dirs.extend(f.ancestors().skip(1).map(|d| (d.to_path_buf(), "above the model file")));
        }
        Self { dirs, robots: OnceLock::new() }
    }

    /// Resolve a mesh name: `file://` stripped; `package://` looked up as the type says; any other path used as is
    /// (the MJCF loader has already joined `meshdir`). The error lists every folder tried.
    pub fn resolve(&self, file: &str) -> Result<PathBuf, String> {
        let file = file.strip_prefix("file://").unwrap_or(file);
        let Some(rest) = file.strip_prefix("package://") else {
            let p = PathBuf::from(file);
            return if p.is_file() { Ok(p) } else { Err("file not found".into()) };
        };
        let tail = rest.split_once('/').map(|(_, t)| t);
        let find = |dirs: &[(PathBuf, &str)]| {
            dirs.iter().find_map(|(d, _)| {
                [Some(d.join(rest)), tail.map(|t| d.join(t))].into_iter().flatten().find(|p| p.is_file())
            })
        };
        if let Some(p) = find(&self.dirs) {
            return Ok(p);
        }
        let robots = self.robots();
        if let Some(p) = find(robots) {
            return Ok(p);
        }
        let tried: Vec<String> =
            self.dirs.iter().chain(robots).map(|(d, why)| format!("{} ({why})", d.display())).collect();
        Err(format!(
            "not found in the package directories [{}] (pass --package-dir DIR to the CLI, package_dirs=[...] in \
             Python or CollisionOptions::package_dirs in Rust, or set ROS_PACKAGE_PATH)",
            tried.join(", ")
        ))
    }

    /// (d): example-robot-data's folders, looked up once (`robots/` holds the packages such as
    /// `baxter_description`; `share/` holds `example-robot-data`).
    fn robots(&self) -> &[(PathBuf, &'static str)] {
        self.robots.get_or_init(|| match example_robot_data_dir() {
            Some(r) => [r.parent().and_then(Path::parent).map(Path::to_path_buf), Some(r)]
                .into_iter()
                .flatten()
                .map(|d| (d, "example-robot-data"))
                .collect(),
            None => Vec::new(),
        })
    }

    /// The folder of package `pkg`: the first search folder `d` (in [`PackageSearch::resolve`]'s order) holding
    /// `d/pkg`, or named `pkg` itself. None when no folder holds it.
    pub fn package_dir(&self, pkg: &str) -> Option<PathBuf> {
        if pkg.is_empty() {
            return None;
        }
        self.dirs.iter().chain(self.robots()).find_map(|(d, _)| {
            let inside = d.join(pkg);
            if inside.is_dir() {
                Some(inside)
            } else {
                (d.file_name() == Some(OsStr::new(pkg)) && d.is_dir()).then(|| d.clone())
            }
        })
    }

    /// The URDF loader's check of a mesh name at load time (docs/decisions.md, "package:// meshes at load
    /// time"): a `package://pkg/rest` name whose package folder is found must resolve; one whose package is
    /// found nowhere is left to the contact solver (it may be given `package_dirs` then). Other names: Ok.
    pub fn check_at_load(&self, file: &str) -> Result<(), String> {
        let Some(rest) = file.strip_prefix("package://") else { return Ok(()) };
        let pkg = rest.split_once('/').map_or(rest, |(p, _)| p);
        match (self.resolve(file), self.package_dir(pkg)) {
            (Err(_), Some(d)) => Err(format!(
                "mesh file {file} not found: package '{pkg}' is at {}, which holds no '{}'",
                d.display(),
                rest.split_once('/').map_or("", |(_, t)| t)
            )),
            _ => Ok(()),
        }
    }
}

/// Resolve a mesh path with [`PackageSearch::new`]`(package_dirs, model_file)`.
pub fn resolve_mesh_path(file: &str, package_dirs: &[PathBuf], model_file: Option<&Path>) -> Result<PathBuf, String> {
    PackageSearch::new(package_dirs, model_file).resolve(file)
}
