//! Mesh files (STL via `stl_io`, OBJ via `tobj`) → vertex lists, used as convex hulls (a concave mesh is replaced by
//! its hull). Mesh `scale` attributes are ignored by the loaders (torsion-model docs), and MuJoCo's re-centring of
//! mesh geoms at their inertial frame is not applied: vertices are taken in the shape frame as the file gives them.
use parry3d_f64::math::Vector;
use std::path::{Path, PathBuf};

/// What to do with a mesh that cannot be loaded (missing file, unknown format, degenerate hull).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MeshPolicy {
    /// fail `CollisionWorld::new` with an error naming the shape and the file
    #[default]
    Error,
    /// drop the shape from collision and record a warning in `CollisionWorld::warnings`
    Skip,
}

/// Resolve a mesh path: `file://` stripped; `package://pkg/rest` looked up as `dir/pkg/rest` then `dir/rest` in
/// each of `package_dirs`; any other path used as is (the MJCF loader has already joined `meshdir`).
pub fn resolve_mesh_path(file: &str, package_dirs: &[PathBuf]) -> Result<PathBuf, String> {
    let file = file.strip_prefix("file://").unwrap_or(file);
    if let Some(rest) = file.strip_prefix("package://") {
        let tail = rest.split_once('/').map(|(_, t)| t);
        for d in package_dirs {
            let candidates = [Some(d.join(rest)), tail.map(|t| d.join(t))];
            if let Some(p) = candidates.into_iter().flatten().find(|p| p.is_file()) {
                return Ok(p);
            }
        }
        return Err(format!(
            "not found in the package directories [{}] (set CollisionOptions::package_dirs)",
            package_dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
        ));
    }
    let p = PathBuf::from(file);
    if p.is_file() {
        Ok(p)
    } else {
        Err("file not found".into())
    }
}

/// Vertices of an STL (binary or ASCII) or OBJ file, m.
pub fn read_vertices(path: &Path) -> Result<Vec<Vector>, String> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
    let pts: Vec<Vector> = match ext.as_str() {
        "stl" => {
            let mut f = std::fs::File::open(path).map_err(|e| format!("cannot open: {e}"))?;
            let m = stl_io::read_stl(&mut f).map_err(|e| format!("cannot read STL: {e}"))?;
            m.vertices.iter().map(|v| Vector::new(v[0] as f64, v[1] as f64, v[2] as f64)).collect()
        }
        "obj" => {
            let opts = tobj::LoadOptions { single_index: true, triangulate: false, ..Default::default() };
            let (models, _materials) = tobj::load_obj(path, &opts).map_err(|e| format!("cannot read OBJ: {e}"))?;
            models
                .iter()
                .flat_map(|m| m.mesh.positions.chunks_exact(3).map(|c| Vector::new(c[0], c[1], c[2])))
                .collect()
        }
        _ => return Err(format!("unsupported mesh format '.{ext}' (supported: .stl, .obj)")),
    };
    if pts.iter().any(|p| !p.is_finite()) {
        return Err("non-finite vertex".into());
    }
    if pts.len() < 4 {
        return Err(format!("{} vertices: a convex hull needs at least 4", pts.len()));
    }
    Ok(pts)
}

/// Resolve and read a mesh file (see [`resolve_mesh_path`], [`read_vertices`]).
pub fn load_mesh_vertices(file: &str, package_dirs: &[PathBuf]) -> Result<Vec<Vector>, String> {
    read_vertices(&resolve_mesh_path(file, package_dirs)?)
}
