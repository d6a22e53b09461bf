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
    pub fn write(&self, out: &Path) -> Result<(), ExperimentError> {
        std::fs::create_dir_all(out).map_err(|source| ExperimentError::Io { path: out.into(), source })?;
        let jp = out.join(format!("{}.json", self.name));
        let text = serde_json::to_string_pretty(&self.json()).map_err(|e| ExperimentError::Failed(e.to_string()))?;
        std::fs::write(&jp, text).map_err(|source| ExperimentError::Io { path: jp.clone(), source })?;
        (self.plot)(&out.join(format!("{}.png", self.name)))
    }
}
