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

pub struct ExperimentResult {
    pub name: String,
    pub metrics: Value,
    pub paper: Value,
    pub settings: Value,
    /// draws the PNG into the given path
    pub plot: Box<dyn Fn(&Path) -> Result<(), ExperimentError>>,
}

impl ExperimentResult {
    pub fn json(&self) -> Value {
        json!({"name": self.name, "metrics": self.metrics, "paper": self.paper, "settings": self.settings})
    }
    /// A short table for the terminal (issue 21 item 5; the full JSON goes to the file only): each metric that
    /// is a number, a boolean or up to 6 numbers (nested objects one level down, as `a.b`), beside the paper's
    /// value under the same key where it gives one, then the paper's other entries (claim, target).
    pub fn summary(&self) -> String {
        fn short(v: &Value) -> Option<String> {
            match v {
                Value::Number(n) => n.as_f64().map(|x| format!("{x:.6}")),
                Value::Bool(b) => Some(b.to_string()),
                Value::Null => Some("null".into()),
                Value::Array(a) if a.len() <= 6 && a.iter().all(|x| x.is_number()) => Some(format!(
                    "[{}]",
                    a.iter().filter_map(|x| x.as_f64()).map(|x| format!("{x:.6}")).collect::<Vec<_>>().join(", ")
                )),
                _ => None,
            }
        }
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
