//! Model loaders. Every error names the file, the element and the problem.
pub mod mjcf;
pub mod robots;
mod transform;
pub mod urdf;

pub use mjcf::{load_mjcf, load_mjcf_str};
pub use robots::{
    baxter_left_arm, baxter_left_arm_spec000, dm_control_model, dm_control_suite_dir, example_robot_data_dir,
    load_model, ModelEntry, ModelSource, MODELS,
};
pub use urdf::{load_urdf, load_urdf_str, UrdfOptions};
