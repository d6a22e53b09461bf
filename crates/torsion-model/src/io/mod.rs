//! Model loaders. Every error names the file, the element and the problem.
pub mod robots;
pub mod urdf;

pub use robots::{baxter_left_arm, example_robot_data_dir};
pub use urdf::{load_urdf, load_urdf_str, UrdfOptions};
