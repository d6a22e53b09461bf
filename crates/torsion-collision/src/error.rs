//! Errors of collision-world construction and detection; each names the shape, body, file or count at fault.
use thiserror::Error;

#[derive(Debug, Error)]
pub enum CollisionError {
    /// a shape refers to a body the model does not have
    #[error("shape '{shape}' (index {index}) is attached to body {body}, but the model has {body_count} bodies")]
    BadBody { shape: String, index: usize, body: usize, body_count: usize },
    /// a size field is not finite or not positive
    #[error("shape '{shape}' (index {index}): {field} = {value} must be finite and positive")]
    BadSize { shape: String, index: usize, field: &'static str, value: f64 },
    /// the shape pose in its body frame is not finite
    #[error("shape '{shape}' (index {index}): pose in its body frame is not finite")]
    BadShapePose { shape: String, index: usize },
    /// a mesh file could not be found, read or turned into a convex hull
    #[error("shape '{shape}' (index {index}): mesh '{file}': {reason}")]
    Mesh { shape: String, index: usize, file: String, reason: String },
    /// `detect` got a pose slice whose length is not the model's body count
    #[error("detect: got {got} body poses, the model has {expected} bodies")]
    PoseCount { got: usize, expected: usize },
    /// a body pose passed to `detect` is not finite (NaN or infinite)
    #[error("detect: pose of body {body} ('{name}') is not finite")]
    NonFinitePose { body: usize, name: String },
    /// an option is out of range
    #[error("collision options: {0}")]
    BadOption(String),
}
