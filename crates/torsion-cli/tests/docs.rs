//! docs/MAP.md stays true: every backticked path in it exists.
#[test]
fn map_paths_exist() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let map = std::fs::read_to_string(root.join("docs/MAP.md")).expect("docs/MAP.md");
    let mut n = 0;
    for (i, part) in map.split('`').enumerate() {
        if i % 2 == 1 && part.contains('/') && !part.contains(' ') {
            assert!(root.join(part).exists(), "docs/MAP.md names {part}, which does not exist");
            n += 1;
        }
    }
    assert!(n > 20, "MAP.md lists only {n} paths");
}
