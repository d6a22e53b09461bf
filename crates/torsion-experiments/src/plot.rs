//! Plot helpers on plotters' bitmap backend with an embedded font (DejaVu Sans, assets/; no system fonts).
use crate::result::ExperimentError;
use plotters::prelude::*;
use std::sync::Once;

static FONT: Once = Once::new();

/// Register the embedded font as "sans-serif" once per process.
pub fn init_font() {
    FONT.call_once(|| {
        let bytes: &'static [u8] = include_bytes!("../assets/DejaVuSans.ttf");
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, bytes);
    });
}

pub fn perr<E: std::fmt::Display>(e: E) -> ExperimentError {
    ExperimentError::Plot(e.to_string())
}

/// (min, max) of a set of values with a margin; never an empty range.
pub fn range(vals: impl Iterator<Item = f64>, margin: f64) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in vals.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = ((hi - lo) * margin).max(1e-9);
    (lo - pad, hi + pad)
}

/// Colour of series i.
pub fn color(i: usize) -> RGBColor {
    [
        RGBColor(31, 119, 180),
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
        RGBColor(255, 127, 14),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
    ][i % 6]
}
