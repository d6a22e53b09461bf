//! MJCF loader: file bytes → `decode_xml` → `load_mjcf_str` (what `load_mjcf` does after reading the file);
//! `<include>`s and meshes resolve against a folder that does not exist.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::path::Path;
use torsion_model::io::{decode_xml, load_mjcf_str};

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = decode_xml(data) {
        let _ = load_mjcf_str(&text, "fuzz.xml", Some(Path::new("/nonexistent-torsion-fuzz")));
    }
});
