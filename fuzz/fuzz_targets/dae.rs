//! DAE mesh reader and the convex hull built from its vertices (what the contact solvers do with a mesh file).
//! mesh-loader's panics on malformed files are caught by `vertices_from_bytes` (an error): libfuzzer-sys's
//! panic hook aborts before any unwinding, so this target puts back a silent hook; a panic anywhere else still
//! reaches libfuzzer-sys's `catch_unwind` around the target and aborts (a crash).
#![no_main]
use libfuzzer_sys::fuzz_target;
use torsion_collision::mesh::{hull_of, vertices_from_bytes};

fuzz_target!(|data: &[u8]| {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| std::panic::set_hook(Box::new(|_| {})));
    if let Ok(pts) = vertices_from_bytes(data, "dae") {
        let _ = hull_of(&pts);
    }
});
