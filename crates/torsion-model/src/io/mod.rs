//! Model loaders. Every error names the file, the element and the problem.
pub mod mjcf;
pub mod packages;
pub mod robots;
pub mod scenes;
mod transform;
pub mod urdf;

pub use mjcf::{load_mjcf, load_mjcf_str};
pub use packages::{resolve_mesh_path, PackageSearch};
pub use robots::{
    baxter_left_arm, baxter_left_arm_spec000, dm_control_model, dm_control_suite_dir, example_robot_data_dir,
    load_model, ModelEntry, ModelSource, MODELS,
};
pub use urdf::{load_urdf, load_urdf_str, UrdfOptions};

/// Deepest element nesting the XML loaders accept: tinyxml2's `TINYXML2_MAX_ELEMENT_DEPTH` (MuJoCo's XML
/// parser refuses deeper files the same way); keeps the recursive tree walks far from the stack's end.
pub const MAX_XML_DEPTH: usize = 500;

/// MuJoCo's `mjMINVAL`: the smallest mass and principal inertia a moving body may have.
pub const MIN_MASS_INERTIA: f64 = 1e-15;

/// Read an XML file as text: UTF-8 (a byte-order mark is dropped) or UTF-16 LE / BE, recognised by its
/// byte-order mark or by `<?` encoded in it (XML 1.0 appendix F). Errors name `file`.
pub(crate) fn read_xml(path: &std::path::Path, file: &str) -> Result<String, crate::ModelError> {
    let bytes = std::fs::read(path).map_err(|e| perr(file, "file", format!("cannot read: {e}")))?;
    decode_xml(&bytes).map_err(|p| perr(file, "file", p))
}

/// The text of an XML file's bytes as [`load_urdf`] and [`load_mjcf`] decode it (public for the fuzz targets,
/// `fuzz/`): UTF-8 (a BOM dropped) or UTF-16 LE / BE.
pub fn decode_xml(b: &[u8]) -> Result<String, String> {
    let utf16 = |b: &[u8], big: bool| -> Result<String, String> {
        if !b.len().is_multiple_of(2) {
            return Err("UTF-16 text with an odd number of bytes".into());
        }
        let units = b.chunks_exact(2).map(|c| {
            if big {
                u16::from_be_bytes([c[0], c[1]])
            } else {
                u16::from_le_bytes([c[0], c[1]])
            }
        });
        char::decode_utf16(units)
            .collect::<Result<String, _>>()
            .map_err(|e| format!("invalid UTF-16 text: {e}"))
            .map(|s| s.trim_start_matches('\u{feff}').to_string())
    };
    match b {
        [0xEF, 0xBB, 0xBF, rest @ ..] => {
            String::from_utf8(rest.to_vec()).map_err(|e| format!("invalid UTF-8 text: {e}"))
        }
        [0xFF, 0xFE, ..] | [b'<', 0, b'?', 0, ..] => utf16(b, false),
        [0xFE, 0xFF, ..] | [0, b'<', 0, b'?', ..] => utf16(b, true),
        _ => String::from_utf8(b.to_vec()).map_err(|e| format!("cannot read: {e} (UTF-8 and UTF-16 are accepted)")),
    }
}

/// Refuse documents nested deeper than [`MAX_XML_DEPTH`] (walked without recursion), naming the first
/// element beyond the limit and its line.
pub(crate) fn check_depth(doc: &roxmltree::Document, file: &str) -> Result<(), crate::ModelError> {
    // depth of each node by id: a parent comes before its children in document order
    let mut depth = vec![0usize; doc.descendants().count() + 1];
    for n in doc.descendants().filter(|n| n.is_element()) {
        let d = n.parent().map_or(0, |p| depth[p.id().get_usize()]) + 1;
        depth[n.id().get_usize()] = d;
        if d > MAX_XML_DEPTH {
            let line = doc.text_pos_at(n.range().start).row;
            return Err(perr(
                file,
                &format!("<{}>", n.tag_name().name()),
                format!("elements nested deeper than {MAX_XML_DEPTH} levels (line {line})"),
            ));
        }
    }
    Ok(())
}

/// Why a moving body's mass and inertia about its COM are not physical, if they are not: mass or a principal
/// moment below [`MIN_MASS_INERTIA`] (MuJoCo's check), or principal moments A, B, C violating the triangle
/// inequality A + B ≥ C (up to a relative 1e-9 for rounding in files; MuJoCo: "inertia must satisfy A + B >= C").
pub(crate) fn inertia_problem(mass: f64, inertia: &torsion_math::Mat3) -> Option<String> {
    if !(mass >= MIN_MASS_INERTIA && mass.is_finite()) {
        return Some(format!(
            "mass {mass:e} of a moving body must be ≥ {MIN_MASS_INERTIA:e} (MuJoCo's mjMINVAL) and finite"
        ));
    }
    if inertia.iter().any(|v| !v.is_finite()) {
        return Some(format!("inertia {:?} is not finite", inertia.as_slice()));
    }
    let sym = (inertia + inertia.transpose()) * 0.5;
    let mut e: Vec<f64> = sym.symmetric_eigenvalues().iter().copied().collect();
    e.sort_by(f64::total_cmp);
    if e[0] < MIN_MASS_INERTIA {
        return Some(format!(
            "principal inertia {e:?} of a moving body must be ≥ {MIN_MASS_INERTIA:e} (MuJoCo's mjMINVAL)"
        ));
    }
    if e[0] + e[1] < e[2] * (1.0 - 1e-9) {
        return Some(format!("principal inertia {e:?} violates the triangle inequality A + B ≥ C"));
    }
    None
}

fn perr(file: &str, element: &str, problem: String) -> crate::ModelError {
    crate::ModelError::Parse { file: file.to_string(), element: element.to_string(), problem }
}
