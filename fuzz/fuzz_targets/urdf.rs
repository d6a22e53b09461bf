//! URDF loader: file bytes → `decode_xml` → `load_urdf_str` (what `load_urdf` does after reading the file).
#![no_main]
use libfuzzer_sys::fuzz_target;
use torsion_model::io::{decode_xml, load_urdf_str, UrdfOptions};

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = decode_xml(data) {
        let _ = load_urdf_str(&text, "fuzz.urdf", &UrdfOptions::default());
    }
});
