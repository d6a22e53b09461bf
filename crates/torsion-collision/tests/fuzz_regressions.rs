//! Inputs the cargo-fuzz targets (`fuzz/`, `scripts/fuzz.sh`, issue 20 item 4) crashed on, kept under
//! tests/data/fuzz/TARGET/: every mesh reader returns a value or an error for them, never a panic.
use std::path::Path;
use torsion_collision::mesh::{hull_of, read_vertices};

#[test]
fn mesh_files_that_crashed_the_fuzzer_are_errors() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/fuzz");
    let mut n = 0;
    for ext in ["stl", "obj", "dae"] {
        let Ok(dir) = std::fs::read_dir(root.join(ext)) else { continue };
        for f in dir {
            let path = f.unwrap().path();
            // through the path reader, as a model's mesh is read
            let r = std::panic::catch_unwind(|| read_vertices(&path).and_then(|p| hull_of(&p).map(|_| ())));
            let r = r.unwrap_or_else(|_| panic!("{}: the reader panicked", path.display()));
            n += 1;
            eprintln!("{}: {r:?}", path.display());
        }
    }
    assert!(n >= 1, "the crash inputs are in tests/data/fuzz");
    // mesh-loader's out-of-bounds index (fuzz target dae, 242 executions in)
    let e = read_vertices(&root.join("dae/crash-a2cbf768-index-out-of-bounds.dae")).unwrap_err();
    assert!(e.contains("cannot read COLLADA: malformed file"), "{e}");
}
