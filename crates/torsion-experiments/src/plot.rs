//! The shared plotting helpers (issue 21 item 5) on plotters' bitmap backend with an embedded font (DejaVu Sans,
//! assets/; no system fonts). Every experiment builds [`Panel`]s and draws them with [`figure`]: axis labels with
//! units, the paper's values as dashed reference lines or markers with a legend entry ([`Reference`]), legends
//! in a strip below the data area, integer ticks on iteration / step axes (`x_int`), decade ticks on log axes,
//! and a colour bar beside a heat map ([`Heat`]).
use crate::result::ExperimentError;
use plotters::coord::Shift;
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
        RGBColor(227, 119, 194),
        RGBColor(23, 190, 207),
    ][i % 8]
}

/// `c` mixed with white (f = 0: c, 1: white).
pub fn lighten(c: RGBColor, f: f64) -> RGBColor {
    let m = |v: u8| (v as f64 + (255.0 - v as f64) * f).round() as u8;
    RGBColor(m(c.0), m(c.1), m(c.2))
}

/// The colour of the paper's values (black) and of a known truth / target (grey).
pub const PAPER: RGBColor = RGBColor(0, 0, 0);
pub const TRUTH: RGBColor = RGBColor(110, 110, 110);

/// How a series is drawn.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mark {
    Line,
    Dashed,
    Points,
    LinePoints,
    /// bars from the axis bottom to y, of this width in x units, centred on x
    Bars(f64),
}

#[derive(Clone, Debug)]
pub struct Series {
    pub label: String,
    pub pts: Vec<(f64, f64)>,
    pub mark: Mark,
    pub color: RGBColor,
}

impl Series {
    pub fn new(label: impl Into<String>, pts: Vec<(f64, f64)>, mark: Mark, color: RGBColor) -> Self {
        Series { label: label.into(), pts, mark, color }
    }
    pub fn line(label: impl Into<String>, pts: Vec<(f64, f64)>, color: RGBColor) -> Self {
        Self::new(label, pts, Mark::Line, color)
    }
    /// `ys` at x = 0, 1, 2, … (iterations, steps)
    pub fn indexed(label: impl Into<String>, ys: &[f64], mark: Mark, color: RGBColor) -> Self {
        Self::new(label, ys.iter().enumerate().map(|(i, &y)| (i as f64, y)).collect(), mark, color)
    }
}

/// A value to compare with (the paper's, a truth, a target): a dashed line across the panel or a marker, always
/// with a legend entry.
#[derive(Clone, Debug)]
pub enum RefKind {
    HLine(f64),
    VLine(f64),
    Point(f64, f64),
}

#[derive(Clone, Debug)]
pub struct Reference {
    pub kind: RefKind,
    pub label: String,
    pub color: RGBColor,
}

impl Reference {
    /// the paper's value y, a dashed black line
    pub fn paper_h(y: f64, label: impl Into<String>) -> Self {
        Reference { kind: RefKind::HLine(y), label: label.into(), color: PAPER }
    }
    /// the paper's value x, a dashed black vertical line
    pub fn paper_v(x: f64, label: impl Into<String>) -> Self {
        Reference { kind: RefKind::VLine(x), label: label.into(), color: PAPER }
    }
    /// the paper's point, a black cross
    pub fn paper_point(x: f64, y: f64, label: impl Into<String>) -> Self {
        Reference { kind: RefKind::Point(x, y), label: label.into(), color: PAPER }
    }
    /// a known truth or target y, a dashed grey line
    pub fn truth_h(y: f64, label: impl Into<String>) -> Self {
        Reference { kind: RefKind::HLine(y), label: label.into(), color: TRUTH }
    }
    /// a marker of ours (e.g. a grid optimum)
    pub fn point(x: f64, y: f64, label: impl Into<String>, color: RGBColor) -> Self {
        Reference { kind: RefKind::Point(x, y), label: label.into(), color }
    }
    pub fn with_color(mut self, c: RGBColor) -> Self {
        self.color = c;
        self
    }
}

/// A heat map: `z[i][j]` at the cell centred on (x[i], y[j]) (uniform spacing), its colour bar labelled `label`.
#[derive(Clone, Debug, Default)]
pub struct Heat {
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    pub z: Vec<Vec<f64>>,
    pub label: String,
    /// colour by log10 z (the colour bar reads z)
    pub log: bool,
}

/// One chart. Units belong in the axis labels, e.g. "t (s)".
#[derive(Clone, Debug, Default)]
pub struct Panel {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// integer ticks only (iterations, steps, indices)
    pub x_int: bool,
    /// log10 y axis with decade ticks
    pub log_y: bool,
    /// fixed ranges (default: the data's, references included)
    pub x_range: Option<(f64, f64)>,
    pub y_range: Option<(f64, f64)>,
    /// names of the integer x positions (bar charts), replacing the numbers
    pub x_names: Vec<String>,
    pub series: Vec<Series>,
    pub refs: Vec<Reference>,
    pub heat: Option<Heat>,
}

impl Panel {
    pub fn new(title: impl Into<String>, x_label: impl Into<String>, y_label: impl Into<String>) -> Self {
        Panel { title: title.into(), x_label: x_label.into(), y_label: y_label.into(), ..Default::default() }
    }
    pub fn x_int(mut self) -> Self {
        self.x_int = true;
        self
    }
    pub fn log_y(mut self) -> Self {
        self.log_y = true;
        self
    }
    pub fn series(mut self, s: Series) -> Self {
        self.series.push(s);
        self
    }
    pub fn refs(mut self, r: Reference) -> Self {
        self.refs.push(r);
        self
    }
    /// The legend entries: series then references, those with a label.
    fn legend(&self) -> Vec<(String, Sample)> {
        let mut v: Vec<(String, Sample)> = self
            .series
            .iter()
            .filter(|s| !s.label.is_empty())
            .map(|s| (s.label.clone(), Sample::Series(s.mark, s.color)))
            .collect();
        for r in self.refs.iter().filter(|r| !r.label.is_empty()) {
            let s = match r.kind {
                RefKind::Point(..) => Sample::Cross(r.color),
                _ => Sample::Series(Mark::Dashed, r.color),
            };
            v.push((r.label.clone(), s));
        }
        v
    }
}

#[derive(Clone, Copy)]
enum Sample {
    Series(Mark, RGBColor),
    Cross(RGBColor),
}

/// A tick label: no trailing zeros ("10", not "10.0"), scientific outside [1e-3, 1e5).
pub fn tick(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return "0".into();
    }
    if v.abs() >= 1e5 || v.abs() < 1e-3 {
        let s = format!("{v:.1e}");
        return s.replace(".0e", "e");
    }
    let s = format!("{v:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.into()
    }
}

/// A tick on a log10 axis at exponent e: "1e-6" at decades, the value elsewhere.
pub fn log_tick(e: f64) -> String {
    if (e - e.round()).abs() < 1e-9 {
        let k = e.round() as i32;
        match k {
            -2..=3 => tick(10f64.powi(k)),
            _ => format!("1e{k}"),
        }
    } else {
        // two significant digits: 63, 0.25, 2.5e-7
        let v = 10f64.powf(e);
        let scale = 10f64.powi(v.log10().floor() as i32 - 1);
        tick((v / scale).round() * scale)
    }
}

/// An integer tick, or nothing between integers.
pub fn int_tick(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{}", v.round() as i64)
    } else {
        String::new()
    }
}

/// Viridis at t ∈ [0, 1] (9 anchors, linear in between).
pub fn viridis(t: f64) -> RGBColor {
    const A: [(u8, u8, u8); 9] = [
        (68, 1, 84),
        (71, 44, 122),
        (59, 81, 139),
        (44, 113, 142),
        (33, 144, 141),
        (39, 173, 129),
        (92, 200, 99),
        (170, 220, 50),
        (253, 231, 37),
    ];
    let t = if t.is_finite() { t.clamp(0.0, 1.0) } else { 0.0 } * 8.0;
    let i = (t.floor() as usize).min(7);
    let f = t - i as f64;
    let mix = |a: u8, b: u8| (a as f64 + (b as f64 - a as f64) * f).round() as u8;
    RGBColor(mix(A[i].0, A[i + 1].0), mix(A[i].1, A[i + 1].1), mix(A[i].2, A[i + 1].2))
}

/// Chart size of one panel (pixels), legend strip excluded.
pub const CHART: (u32, u32) = (560, 420);
const ROW_H: u32 = 22;
const COLOR_BAR_W: u32 = 110;

/// How many legend columns fit a panel of width w, and the rows needed for n entries.
fn legend_grid(w: u32, n: usize) -> (usize, usize) {
    let cols = ((w / 270) as usize).max(1);
    (cols, n.div_ceil(cols))
}

/// Draw `panels` in rows of `cols` into a PNG at `path`: each panel's chart, then its legend strip below.
pub fn figure(path: &std::path::Path, panels: &[Panel], cols: usize) -> Result<(), ExperimentError> {
    init_font();
    let cols = cols.clamp(1, panels.len().max(1));
    let rows = panels.len().div_ceil(cols).max(1);
    // legend strip height: the largest needed by any panel (rows stay aligned)
    let legend_h =
        panels.iter().map(|p| legend_grid(CHART.0, p.legend().len()).1 as u32 * ROW_H).max().unwrap_or(0) + 8;
    let cell = (CHART.0, CHART.1 + legend_h);
    let root = BitMapBackend::new(path, (cell.0 * cols as u32, cell.1 * rows as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(perr)?;
    let areas = root.split_evenly((rows, cols));
    for (p, area) in panels.iter().zip(&areas) {
        let (chart, legend) = area.split_vertically(CHART.1);
        draw_panel(p, &chart)?;
        draw_legend(&p.legend(), &legend)?;
    }
    root.present().map_err(perr)?;
    Ok(())
}

fn draw_legend(
    entries: &[(String, Sample)],
    area: &DrawingArea<BitMapBackend<'_>, Shift>,
) -> Result<(), ExperimentError> {
    let (w, _) = area.dim_in_pixel();
    let (cols, _) = legend_grid(w, entries.len());
    let cw = (w - 20) as i32 / cols as i32;
    let font = ("sans-serif", 14).into_font();
    for (k, (label, s)) in entries.iter().enumerate() {
        let (x, y) = (14 + (k % cols) as i32 * cw, 4 + (k / cols) as i32 * ROW_H as i32 + ROW_H as i32 / 2);
        match *s {
            Sample::Series(Mark::Points, c) => area.draw(&Circle::new((x + 11, y), 4, c.filled())).map_err(perr),
            Sample::Series(Mark::Bars(_), c) => {
                area.draw(&Rectangle::new([(x + 3, y - 6), (x + 19, y + 6)], c.filled())).map_err(perr)
            }
            Sample::Series(Mark::Dashed, c) => {
                area.draw(&PathElement::new(vec![(x, y), (x + 8, y)], c.stroke_width(2))).map_err(perr)?;
                area.draw(&PathElement::new(vec![(x + 14, y), (x + 22, y)], c.stroke_width(2))).map_err(perr)
            }
            Sample::Series(m, c) => {
                area.draw(&PathElement::new(vec![(x, y), (x + 22, y)], c.stroke_width(2))).map_err(perr)?;
                if m == Mark::LinePoints {
                    area.draw(&Circle::new((x + 11, y), 3, c.filled())).map_err(perr)?;
                }
                Ok(())
            }
            Sample::Cross(c) => area.draw(&Cross::new((x + 11, y), 6, c.stroke_width(3))).map_err(perr),
        }?;
        area.draw(&Text::new(label.clone(), (x + 28, y - 8), font.clone())).map_err(perr)?;
    }
    Ok(())
}

/// The panel's data range in (x, plotted y), references included.
fn data_range(p: &Panel) -> ((f64, f64), (f64, f64)) {
    let ty = |y: f64| if p.log_y { y.max(1e-300).log10() } else { y };
    let mut xs: Vec<f64> = p.series.iter().flat_map(|s| s.pts.iter().map(|v| v.0)).collect();
    let mut ys: Vec<f64> = p.series.iter().flat_map(|s| s.pts.iter().map(|v| ty(v.1))).collect();
    for s in &p.series {
        if let Mark::Bars(w) = s.mark {
            xs.extend(s.pts.iter().flat_map(|v| [v.0 - w / 2.0, v.0 + w / 2.0]));
            if !p.log_y {
                ys.push(0.0);
            }
        }
    }
    for r in &p.refs {
        match r.kind {
            RefKind::HLine(y) => ys.push(ty(y)),
            RefKind::VLine(x) => xs.push(x),
            RefKind::Point(x, y) => {
                xs.push(x);
                ys.push(ty(y));
            }
        }
    }
    if let Some(h) = &p.heat {
        let half = |v: &[f64]| if v.len() > 1 { (v[1] - v[0]) / 2.0 } else { 0.5 };
        let (dx, dy) = (half(&h.x), half(&h.y));
        xs.extend(h.x.first().map(|v| v - dx).into_iter().chain(h.x.last().map(|v| v + dx)));
        ys.extend(h.y.first().map(|v| v - dy).into_iter().chain(h.y.last().map(|v| v + dy)));
    }
    let x = p.x_range.unwrap_or_else(|| {
        if p.x_int {
            // a quarter step beyond the first and last integer
            let (lo, hi) = range(xs.into_iter(), 0.0);
            (lo - 0.25, hi + 0.25)
        } else {
            range(xs.into_iter(), if p.heat.is_some() { 0.0 } else { 0.03 })
        }
    });
    let y = match p.y_range {
        Some((a, b)) => (ty(a), ty(b)),
        None if p.heat.is_some() => range(ys.into_iter(), 0.0),
        None if p.log_y => {
            // whole decades: the ticks fall on 1e-k
            let (lo, hi) = range(ys.into_iter(), 0.0);
            let (lo, hi) = (lo.floor(), hi.ceil());
            (lo, if hi <= lo { lo + 1.0 } else { hi })
        }
        None => range(ys.into_iter(), 0.06),
    };
    (x, y)
}

fn draw_panel(p: &Panel, area: &DrawingArea<BitMapBackend<'_>, Shift>) -> Result<(), ExperimentError> {
    let (area, bar_area) = if p.heat.is_some() {
        let (a, b) = area.split_horizontally(CHART.0 - COLOR_BAR_W);
        (a, Some(b))
    } else {
        (area.clone(), None)
    };
    let ((x0, x1), (y0, y1)) = data_range(p);
    let ty = |y: f64| if p.log_y { y.max(1e-300).log10() } else { y };
    let title_size = if p.title.chars().count() > 48 { 15 } else { 17 };
    let mut c = ChartBuilder::on(&area)
        .caption(&p.title, ("sans-serif", title_size))
        .margin(10)
        .margin_right(18)
        .x_label_area_size(42)
        .y_label_area_size(72)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(perr)?;
    // key points a rounding error off zero (e.g. −5.6e-17) read as 0
    let snap = |v: f64, span: f64| if v.abs() < 1e-9 * span { 0.0 } else { v };
    let names = &p.x_names;
    let xfmt = |v: &f64| {
        if !names.is_empty() {
            let i = v.round();
            if (v - i).abs() < 1e-9 && i >= 0.0 {
                return names.get(i as usize).cloned().unwrap_or_default();
            }
            return String::new();
        }
        if p.x_int {
            int_tick(*v)
        } else {
            tick(snap(*v, x1 - x0))
        }
    };
    let yfmt = |v: &f64| if p.log_y { log_tick(*v) } else { tick(snap(*v, y1 - y0)) };
    // integer axes: at most one tick per integer
    let nx = if p.x_int || !names.is_empty() { ((x1 - x0).floor() as usize + 1).clamp(2, 12) } else { 10 };
    if let Some(h) = &p.heat {
        let zs = h.z.iter().flatten().map(|&v| if h.log { v.max(1e-300).log10() } else { v });
        let (lo, hi) = range(zs, 0.0);
        let half = |v: &[f64]| if v.len() > 1 { (v[1] - v[0]) / 2.0 } else { 0.5 };
        let (dx, dy) = (half(&h.x), half(&h.y));
        for (i, a) in h.x.iter().enumerate() {
            for (j, b) in h.y.iter().enumerate() {
                let v = h.z[i][j];
                let v = if h.log { v.max(1e-300).log10() } else { v };
                let col = viridis((v - lo) / (hi - lo).max(1e-12));
                c.draw_series(std::iter::once(Rectangle::new([(a - dx, b - dy), (a + dx, b + dy)], col.filled())))
                    .map_err(perr)?;
            }
        }
        if let Some(bar) = &bar_area {
            color_bar(bar, &h.label, lo, hi, h.log)?;
        }
    }
    let mut mesh = c.configure_mesh();
    mesh.x_desc(p.x_label.as_str())
        .y_desc(p.y_label.as_str())
        .x_labels(nx)
        .x_label_formatter(&xfmt)
        .y_label_formatter(&yfmt)
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 15))
        .light_line_style(WHITE.mix(0.0));
    if p.heat.is_some() {
        mesh.disable_mesh();
    }
    if p.log_y {
        mesh.y_labels(((y1 - y0).round() as usize + 1).clamp(2, 12));
    }
    mesh.draw().map_err(perr)?;
    let bottom = y0;
    for s in &p.series {
        let pts: Vec<(f64, f64)> = s.pts.iter().map(|&(x, y)| (x, ty(y))).filter(|v| v.1.is_finite()).collect();
        let c2 = s.color;
        match s.mark {
            Mark::Line => {
                c.draw_series(LineSeries::new(pts, c2.stroke_width(2))).map_err(perr)?;
            }
            Mark::Dashed => {
                c.draw_series(DashedLineSeries::new(pts, 8, 5, c2.stroke_width(2))).map_err(perr)?;
            }
            Mark::Points => {
                c.draw_series(pts.iter().map(|&v| Circle::new(v, 4, c2.filled()))).map_err(perr)?;
            }
            Mark::LinePoints => {
                c.draw_series(LineSeries::new(pts.clone(), c2.stroke_width(2))).map_err(perr)?;
                c.draw_series(pts.iter().map(|&v| Circle::new(v, 3, c2.filled()))).map_err(perr)?;
            }
            Mark::Bars(w) => {
                let base = if p.log_y { bottom } else { 0f64.max(bottom) };
                c.draw_series(
                    pts.iter().map(|&(x, y)| Rectangle::new([(x - w / 2.0, base), (x + w / 2.0, y)], c2.filled())),
                )
                .map_err(perr)?;
            }
        }
    }
    for r in &p.refs {
        let st = r.color.stroke_width(2);
        match r.kind {
            RefKind::HLine(y) => {
                c.draw_series(DashedLineSeries::new(vec![(x0, ty(y)), (x1, ty(y))], 8, 5, st)).map_err(perr)?;
            }
            RefKind::VLine(x) => {
                c.draw_series(DashedLineSeries::new(vec![(x, y0), (x, y1)], 8, 5, st)).map_err(perr)?;
            }
            RefKind::Point(x, y) => {
                c.draw_series(std::iter::once(Cross::new((x, ty(y)), 7, r.color.stroke_width(3)))).map_err(perr)?;
            }
        }
    }
    Ok(())
}

/// A vertical colour bar from lo to hi (log: exponents), labelled.
fn color_bar(
    area: &DrawingArea<BitMapBackend<'_>, Shift>,
    label: &str,
    lo: f64,
    hi: f64,
    log: bool,
) -> Result<(), ExperimentError> {
    let fmt = |v: &f64| if log { log_tick(*v) } else { tick(*v) };
    let mut c = ChartBuilder::on(area)
        .margin_top(40)
        .margin_bottom(52)
        .margin_right(40)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..1.0, lo..hi.max(lo + 1e-12))
        .map_err(perr)?;
    c.configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .y_desc(label)
        .y_label_formatter(&fmt)
        .y_labels(6)
        .label_style(("sans-serif", 12))
        .axis_desc_style(("sans-serif", 14))
        .draw()
        .map_err(perr)?;
    let n = 100;
    c.draw_series((0..n).map(|k| {
        let (a, b) = (lo + (hi - lo) * k as f64 / n as f64, lo + (hi - lo) * (k + 1) as f64 / n as f64);
        Rectangle::new([(0.0, a), (1.0, b)], viridis((k as f64 + 0.5) / n as f64).filled())
    }))
    .map_err(perr)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_read_as_numbers_people_write() {
        // the iteration axes read "10.0" before (issue 21 item 5)
        assert_eq!(tick(10.0), "10");
        assert_eq!(tick(0.25), "0.25");
        assert_eq!(tick(-0.0), "0");
        assert_eq!(tick(2.5e-6), "2.5e-6");
        assert_eq!(int_tick(10.0), "10");
        assert_eq!(int_tick(2.5), "");
        assert_eq!(log_tick(-6.0), "1e-6");
        assert_eq!(log_tick(1.0), "10");
        assert_eq!(log_tick(-1.0), "0.1");
        assert_eq!(log_tick(63f64.log10()), "63");
    }

    #[test]
    fn log_panels_span_whole_decades_and_references_widen_the_range() {
        let p = Panel::new("t", "iteration", "loss")
            .x_int()
            .log_y()
            .series(Series::indexed("a", &[3e-3, 2e-5], Mark::Line, color(0)))
            .refs(Reference::paper_h(14.4, "paper"));
        let ((x0, x1), (y0, y1)) = data_range(&p);
        assert!(x0 < 0.0 && x0 > -0.5 && x1 > 1.0 && x1 < 1.5, "{x0} {x1}");
        assert_eq!((y0, y1), (-5.0, 2.0));
        assert_eq!(p.legend().len(), 2);
    }

    #[test]
    fn figure_writes_a_png_with_heat_map_bars_and_references() {
        let dir = std::env::temp_dir().join(format!("torsion-plot-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f.png");
        let heat = Heat {
            x: vec![0.0, 1.0, 2.0],
            y: vec![0.0, 0.5],
            z: vec![vec![1.0, 2.0], vec![3.0, 4.0], vec![5.0, 60.0]],
            label: "loss".into(),
            log: true,
        };
        let panels = [
            Panel { heat: Some(heat), ..Panel::new("heat", "l1 (m)", "l2 (m)") }
                .refs(Reference::paper_point(1.0, 0.25, "paper")),
            Panel { x_names: vec!["a".into(), "b".into()], ..Panel::new("bars", "", "N·m") }
                .series(Series::new("ours", vec![(0.0, 1.0), (1.0, 2.0)], Mark::Bars(0.4), color(0)))
                .refs(Reference::paper_h(1.5, "paper")),
        ];
        figure(&path, &panels, 2).unwrap();
        assert!(std::fs::metadata(&path).unwrap().len() > 5_000);
        assert!((viridis(0.0).0, viridis(1.0).0) == (68, 253));
    }
}
