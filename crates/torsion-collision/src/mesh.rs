//! Mesh files (STL via `stl_io`, OBJ via `tobj`, COLLADA `.dae` via `mesh-loader`) → vertex lists, used as convex
//! hulls (a concave mesh is replaced by its hull). Mesh `scale` attributes are ignored by the loaders
//! (torsion-model docs), and MuJoCo's re-centring of mesh geoms at their inertial frame is not applied: vertices
//! are taken in the shape frame as the file gives them (COLLADA: after its node transforms and `<unit meter>`;
//! its `<up_axis>` is not applied). `package://` names are resolved by [`PackageSearch`] (its one home is
//! `torsion_model::io::packages`: the URDF loader checks them at load time, the collision world reads them).
use parry3d_f64::math::Vector;
use parry3d_f64::shape::SharedShape;
use std::collections::HashMap;
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

pub use torsion_model::io::packages::{resolve_mesh_path, PackageSearch};

/// Vertices of an STL (binary or ASCII), OBJ or COLLADA (`.dae`) file, m.
pub fn read_vertices(path: &Path) -> Result<Vec<Vector>, String> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
    if !matches!(ext.as_str(), "stl" | "obj" | "dae") {
        return Err(format!("unsupported mesh format '.{ext}' (supported: .stl, .obj, .dae)"));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("cannot open: {e}"))?;
    vertices_from_bytes(&bytes, &ext)
}

/// Vertices of a mesh file's bytes; `ext` (lower case `stl`, `obj` or `dae`) names the format. The one
/// reader behind [`read_vertices`] (and the fuzz targets, `fuzz/`). An OBJ's `mtllib` is not read
/// (materials are unused).
pub fn vertices_from_bytes(bytes: &[u8], ext: &str) -> Result<Vec<Vector>, String> {
    let pts: Vec<Vector> = match ext {
        "stl" => {
            let m = stl_io::read_stl(&mut std::io::Cursor::new(bytes)).map_err(|e| format!("cannot read STL: {e}"))?;
            m.vertices.iter().map(|v| Vector::new(v[0] as f64, v[1] as f64, v[2] as f64)).collect()
        }
        "obj" => {
            let opts = tobj::LoadOptions { single_index: true, triangulate: false, ..Default::default() };
            let no_mtl = |_: &Path| Err(tobj::LoadError::OpenFileFailed);
            let (models, _materials) = tobj::load_obj_buf(&mut std::io::Cursor::new(bytes), &opts, no_mtl)
                .map_err(|e| format!("cannot read OBJ: {e}"))?;
            models
                .iter()
                .flat_map(|m| m.mesh.positions.chunks_exact(3).map(|c| Vector::new(c[0], c[1], c[2])))
                .collect()
        }
        "dae" => {
            // mesh-loader 0.1.13 indexes out of bounds on some malformed files (fuzz target `dae`,
            // tests/data/fuzz/dae/): its panic becomes this file's error
            let load = || mesh_loader::Loader::default().load_collada_from_slice(bytes, "mesh.dae");
            let scene = std::panic::catch_unwind(load)
                .map_err(|p| {
                    let msg =
                        p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
                    format!("cannot read COLLADA: malformed file (the reader failed: {})", msg.unwrap_or_default())
                })?
                .map_err(|e| format!("cannot read COLLADA: {e}"))?;
            scene
                .meshes
                .iter()
                .flat_map(|m| m.vertices.iter().map(|v| Vector::new(v[0] as f64, v[1] as f64, v[2] as f64)))
                .collect()
        }
        _ => return Err(format!("unsupported mesh format '.{ext}' (supported: .stl, .obj, .dae)")),
    };
    if pts.iter().any(|p| !p.is_finite()) {
        return Err("non-finite vertex".into());
    }
    if pts.len() < 4 {
        return Err(format!("{} vertices: a convex hull needs at least 4", pts.len()));
    }
    Ok(pts)
}

/// An icosphere of radius `r` with `sub` subdivisions as OBJ text: the icosahedron, each triangle split in 4 per
/// subdivision, vertices pushed onto the sphere (an inscribed, centrally symmetric polytope: 20 · 4^sub faces).
/// Test and experiment geometry (jade-two-ball's mesh balls, spec 004 §4.2).
pub fn icosphere_obj(r: f64, sub: usize) -> String {
    let t = (1.0 + 5f64.sqrt()) / 2.0;
    let mut v: Vec<[f64; 3]> = vec![
        [-1.0, t, 0.0],
        [1.0, t, 0.0],
        [-1.0, -t, 0.0],
        [1.0, -t, 0.0],
        [0.0, -1.0, t],
        [0.0, 1.0, t],
        [0.0, -1.0, -t],
        [0.0, 1.0, -t],
        [t, 0.0, -1.0],
        [t, 0.0, 1.0],
        [-t, 0.0, -1.0],
        [-t, 0.0, 1.0],
    ];
    let mut f: Vec<[usize; 3]> = vec![
        [0, 11, 5],
        [0, 5, 1],
        [0, 1, 7],
        [0, 7, 10],
        [0, 10, 11],
        [1, 5, 9],
        [5, 11, 4],
        [11, 10, 2],
        [10, 7, 6],
        [7, 1, 8],
        [3, 9, 4],
        [3, 4, 2],
        [3, 2, 6],
        [3, 6, 8],
        [3, 8, 9],
        [4, 9, 5],
        [2, 4, 11],
        [6, 2, 10],
        [8, 6, 7],
        [9, 8, 1],
    ];
    for _ in 0..sub {
        let mut mid = std::collections::HashMap::new();
        let mut nf = vec![];
        for tri in &f {
            let mut m = [0usize; 3];
            for k in 0..3 {
                let (a, b) = (tri[k].min(tri[(k + 1) % 3]), tri[k].max(tri[(k + 1) % 3]));
                m[k] = *mid.entry((a, b)).or_insert_with(|| {
                    v.push([0.5 * (v[a][0] + v[b][0]), 0.5 * (v[a][1] + v[b][1]), 0.5 * (v[a][2] + v[b][2])]);
                    v.len() - 1
                });
            }
            nf.extend([[tri[0], m[0], m[2]], [tri[1], m[1], m[0]], [tri[2], m[2], m[1]], [m[0], m[1], m[2]]]);
        }
        f = nf;
    }
    let mut s = String::new();
    for p in &v {
        let n = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt();
        s += &format!("v {} {} {}\n", r * p[0] / n, r * p[1] / n, r * p[2] / n);
    }
    for tri in &f {
        s += &format!("f {} {} {}\n", tri[0] + 1, tri[1] + 1, tri[2] + 1);
    }
    s
}

/// The convex hull a mesh's vertices stand for in collision.
pub fn hull_of(pts: &[Vector]) -> Result<SharedShape, String> {
    SharedShape::convex_hull(pts)
        .ok_or_else(|| format!("convex hull of its {} vertices failed (degenerate: flat or too few)", pts.len()))
}

/// Resolve and read a mesh file (see [`resolve_mesh_path`], [`read_vertices`]).
pub fn load_mesh_vertices(
    file: &str,
    package_dirs: &[PathBuf],
    model_file: Option<&Path>,
) -> Result<Vec<Vector>, String> {
    read_vertices(&resolve_mesh_path(file, package_dirs, model_file)?)
}

/// Convex hulls of the mesh files of one model, each file read and hulled once (robots reuse a mesh on both
/// sides: Baxter's arms share theirs).
pub(crate) struct MeshHulls {
    search: PackageSearch,
    hulls: HashMap<PathBuf, SharedShape>,
}

impl MeshHulls {
    pub(crate) fn new(search: PackageSearch) -> Self {
        Self { search, hulls: HashMap::new() }
    }

    pub(crate) fn hull(&mut self, file: &str) -> Result<SharedShape, String> {
        let path = self.search.resolve(file)?;
        if let Some(h) = self.hulls.get(&path) {
            return Ok(h.clone());
        }
        let h = hull_of(&read_vertices(&path)?)?;
        self.hulls.insert(path, h.clone());
        Ok(h)
    }
}
