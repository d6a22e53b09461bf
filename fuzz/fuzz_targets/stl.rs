//! STL mesh reader and the convex hull built from its vertices (what the contact solvers do with a mesh file).
#![no_main]
use libfuzzer_sys::fuzz_target;
use torsion_collision::mesh::{hull_of, vertices_from_bytes};

fuzz_target!(|data: &[u8]| {
    if let Ok(pts) = vertices_from_bytes(data, "stl") {
        let _ = hull_of(&pts);
    }
});
