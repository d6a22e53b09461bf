//! Typed model errors: every message names the file / element / field and what is wrong.
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ModelError {
    #[error("{file}: {element}: {problem}")]
    Parse { file: String, element: String, problem: String },
    #[error("model: {0}")]
    Invalid(String),
    #[error("unknown parameter name '{0}' (see Model::param_table() for the list)")]
    UnknownParam(String),
    #[error("parameter vector has length {got}, expected {expected}")]
    ParamLength { got: usize, expected: usize },
}
