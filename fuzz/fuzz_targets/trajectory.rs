//! `torsion view`'s trajectory JSON reader (`Trajectory::from_json`, what `Trajectory::read` parses).
#![no_main]
use libfuzzer_sys::fuzz_target;
use torsion_view::Trajectory;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = Trajectory::from_json(text, "fuzz.json");
    }
});
