//! docs/MAP.md stays true: every backticked path in it exists, each row's symbol is defined in its file, and
//! every Rust source file of the crates has a row (issue 13 item 7: a row cannot drift silently).
use std::path::Path;

fn root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn map() -> String {
    std::fs::read_to_string(root().join("docs/MAP.md")).expect("docs/MAP.md")
}

#[test]
fn map_paths_exist() {
    let (root, map) = (root(), map());
    let mut n = 0;
    for (i, part) in map.split('`').enumerate() {
        if i % 2 == 1 && part.contains('/') && !part.contains(' ') {
            assert!(root.join(part).exists(), "docs/MAP.md names {part}, which does not exist");
            n += 1;
        }
    }
    assert!(n > 20, "MAP.md lists only {n} paths");
}

/// Whether `text` (a Rust or Python source) defines `sym` at the start of a line (after indentation and
/// visibility).
fn defines(text: &str, sym: &str, python: bool) -> bool {
    let kinds: &[&str] = if python {
        &["def", "class"]
    } else {
        &["fn", "struct", "enum", "trait", "type", "mod", "const", "static", "union", "macro_rules!"]
    };
    text.lines().any(|l| {
        let mut w = l.trim_start();
        for prefix in ["pub(crate) ", "pub(super) ", "pub ", "async ", "unsafe "] {
            w = w.strip_prefix(prefix).unwrap_or(w);
        }
        kinds.iter().any(|k| {
            w.strip_prefix(k).is_some_and(|rest| {
                let rest = rest.trim_start();
                rest.strip_prefix(sym)
                    .is_some_and(|after| !after.starts_with(|c: char| c.is_alphanumeric() || c == '_'))
            })
        }) || (python && w.strip_prefix(sym).is_some_and(|after| after.trim_start().starts_with('=')))
    })
}

#[test]
fn map_rows_name_a_symbol_defined_in_their_file() {
    let (root, map) = (root(), map());
    let mut checked = 0;
    for line in map.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| concept")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        assert!(cells.len() >= 5, "docs/MAP.md row without a symbol column: {line}");
        // the row's first file holds its symbol
        let file = cells[2].split('`').nth(1).unwrap_or_else(|| panic!("docs/MAP.md row without a file: {line}"));
        let sym = cells[3].trim_matches('`');
        if sym == "–" {
            assert!(!file.ends_with(".rs"), "docs/MAP.md: a Rust file's row needs a symbol: {line}");
            continue;
        }
        let text = std::fs::read_to_string(root.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let python = file.ends_with(".py") || file.ends_with(".pyi");
        assert!(defines(&text, sym, python), "docs/MAP.md: `{sym}` is not defined in {file}");
        checked += 1;
    }
    assert!(checked > 100, "only {checked} symbols checked");
}

#[test]
fn every_crate_source_file_has_a_map_row() {
    let (root, map) = (root(), map());
    let mut missing = vec![];
    let mut stack = vec![root.join("crates")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
            if p.is_dir() {
                if !rel.ends_with("/target") && !rel.contains("/tests") && !rel.contains("/benches") {
                    stack.push(p);
                }
            } else if rel.ends_with(".rs") && rel.contains("/src/") && !map.contains(&format!("`{rel}`")) {
                missing.push(rel);
            }
        }
    }
    missing.sort();
    assert!(missing.is_empty(), "source files without a docs/MAP.md row: {missing:?}");
}
