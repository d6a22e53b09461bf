//! The shared result writer: JSON (+ the PNG drawn by the experiment).
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ExperimentError {
    #[error("{0}")]
    Unknown(String),
    #[error("experiment failed: {0}")]
    Failed(String),
    #[error("writing results to {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("plot: {0}")]
    Plot(String),
}

impl From<torsion_solvers::SolverError> for ExperimentError {
    fn from(e: torsion_solvers::SolverError) -> Self {
        ExperimentError::Failed(e.to_string())
    }
}
impl From<torsion_model::ModelError> for ExperimentError {
    fn from(e: torsion_model::ModelError) -> Self {
        ExperimentError::Failed(e.to_string())
    }
}

/// One target of an experiment evaluated on its measured value (issue 21 item 5: the printed table says pass or
/// fail). `value` NaN fails every bound.
#[derive(Clone, Debug)]
pub struct Check {
    /// what is checked and its bound, e.g. "max_abs_error ≤ 0.005 (H1)"
    pub target: String,
    pub value: f64,
    pub pass: bool,
}

impl Check {
    /// `what ≤ bound`
    pub fn le(what: &str, value: f64, bound: f64) -> Self {
        Check { target: format!("{what} ≤ {bound}"), value, pass: value <= bound }
    }
    /// `what ≥ bound`
    pub fn ge(what: &str, value: f64, bound: f64) -> Self {
        Check { target: format!("{what} ≥ {bound}"), value, pass: value >= bound }
    }
    /// `|what − centre| ≤ tol`
    pub fn within(what: &str, value: f64, centre: f64, tol: f64) -> Self {
        Check { target: format!("{what} = {centre} ± {tol}"), value, pass: (value - centre).abs() <= tol }
    }
    /// a property that holds or not (value 1 or 0)
    pub fn holds(what: &str, ok: bool) -> Self {
        Check { target: what.to_string(), value: if ok { 1.0 } else { 0.0 }, pass: ok }
    }
    /// the same check with a note appended to its target (e.g. the hypothesis it tests)
    pub fn note(mut self, note: &str) -> Self {
        self.target = format!("{} ({note})", self.target);
        self
    }
}

/// A number for the terminal table: 6 decimals in [1e-3, 1e6), else 4 significant digits in scientific form (so
/// 1.4e-14 does not print as 0.000000).
pub(crate) fn num(x: f64) -> String {
    if x == 0.0 || !x.is_finite() || (1e-3..1e6).contains(&x.abs()) {
        format!("{x:.6}")
    } else {
        format!("{x:.4e}")
    }
}

/// A metric shown in a table: a number, a boolean, null or up to 6 numbers; `None` for anything longer.
pub(crate) fn short(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) => n.as_f64().map(num),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null => Some("null".into()),
        Value::Array(a) if a.len() <= 6 && a.iter().all(|x| x.is_number()) => {
            Some(format!("[{}]", a.iter().filter_map(|x| x.as_f64()).map(num).collect::<Vec<_>>().join(", ")))
        }
        _ => None,
    }
}

pub struct ExperimentResult {
    pub name: String,
    pub metrics: Value,
    pub paper: Value,
    pub settings: Value,
    /// the experiment's targets, each evaluated on the measured metrics (written as `checks` in the JSON)
    pub checks: Vec<Check>,
    /// the experiment's scene and its recorded runs, shown by the `--html` report's viewer (none: no scene)
    pub scene: Option<crate::scene::SceneView>,
    /// draws the PNG into the given path
    pub plot: Box<dyn Fn(&Path) -> Result<(), ExperimentError>>,
}

impl ExperimentResult {
    pub fn json(&self) -> Value {
        let checks: Vec<Value> = self
            .checks
            .iter()
            .map(|c| json!({"target": c.target, "value": if c.value.is_finite() { json!(c.value) } else { Value::Null }, "pass": c.pass}))
            .collect();
        json!({"name": self.name, "metrics": self.metrics, "paper": self.paper, "settings": self.settings, "checks": checks})
    }
    /// A result plotted as `panels` in a grid `cols` wide (no targets, no scene: [`Self::with_checks`],
    /// [`Self::with_scene`]).
    pub fn from_panels(
        name: &str,
        metrics: Value,
        paper: Value,
        settings: Value,
        panels: Vec<crate::plot::Panel>,
        cols: usize,
    ) -> Self {
        ExperimentResult {
            scene: None,
            name: name.into(),
            checks: vec![],
            metrics,
            paper,
            settings,
            plot: Box::new(move |p| crate::plot::figure(p, &panels, cols)),
        }
    }
    /// The same result with its targets (see [`Check`]).
    pub fn with_checks(mut self, checks: Vec<Check>) -> Self {
        self.checks = checks;
        self
    }
    /// The same result with its scene (see [`crate::scene`]).
    pub fn with_scene(mut self, scene: crate::scene::SceneView) -> Self {
        self.scene = Some(scene);
        self
    }
    /// Whether every target is met (true when the experiment declares none).
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.pass)
    }
    /// The metrics that fit a table row (see [`short`]), nested objects one level down as `a.b`.
    pub(crate) fn metric_rows(&self) -> Vec<(String, String)> {
        let mut rows: Vec<(String, String)> = vec![];
        if let Value::Object(m) = &self.metrics {
            for (k, v) in m {
                match (short(v), v) {
                    (Some(s), _) => rows.push((k.clone(), s)),
                    (None, Value::Object(inner)) => {
                        rows.extend(inner.iter().filter_map(|(k2, v2)| short(v2).map(|s| (format!("{k}.{k2}"), s))))
                    }
                    _ => {}
                }
            }
        }
        rows
    }
    /// A short table for the terminal (issue 21 item 5; the full JSON goes to the file only): each metric that
    /// is a number, a boolean or up to 6 numbers (nested objects one level down, as `a.b`), beside the paper's
    /// value under the same key where it gives one, then the paper's other entries (claim, target).
    pub fn summary(&self) -> String {
        let rows = self.metric_rows();
        let paper = |k: &str| self.paper.get(k).and_then(short).unwrap_or_default();
        let w = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(6).max(6);
        let mut out = format!("{}\n{:<w$}  {:<28}  {}\n", self.name, "metric", "ours", "paper");
        for (k, v) in &rows {
            out += &format!("{k:<w$}  {v:<28}  {}\n", paper(k));
        }
        if let Value::Object(p) = &self.paper {
            for (k, v) in p.iter().filter(|(k, _)| !rows.iter().any(|(r, _)| r == *k)) {
                let text = v.as_str().map(str::to_string).or_else(|| short(v)).unwrap_or_else(|| v.to_string());
                out += &format!("paper {k}: {text}\n");
            }
        }
        if !self.checks.is_empty() {
            let w = self.checks.iter().map(|c| c.target.chars().count()).max().unwrap_or(6).max(6);
            out += &format!("{:<w$}  {:<14}  result\n", "target", "ours");
            for c in &self.checks {
                let pad = w - c.target.chars().count();
                let verdict = if c.pass { "PASS" } else { "FAIL" };
                out += &format!("{}{}  {:<14}  {verdict}\n", c.target, " ".repeat(pad), num(c.value));
            }
            let failed = self.checks.iter().filter(|c| !c.pass).count();
            out += &format!("{} of {} targets met\n", self.checks.len() - failed, self.checks.len());
        }
        out
    }
    pub fn write(&self, out: &Path) -> Result<(), ExperimentError> {
        std::fs::create_dir_all(out).map_err(|source| ExperimentError::Io { path: out.into(), source })?;
        let jp = out.join(format!("{}.json", self.name));
        let text = serde_json::to_string_pretty(&self.json()).map_err(|e| ExperimentError::Failed(e.to_string()))?;
        std::fs::write(&jp, text).map_err(|source| ExperimentError::Io { path: jp.clone(), source })?;
        (self.plot)(&out.join(format!("{}.png", self.name)))
    }
}
