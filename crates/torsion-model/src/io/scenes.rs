//! Small MJCF scenes shared by tests and benchmarks (one home for each fixture).
use crate::error::ModelError;
use crate::io::mjcf::load_mjcf_str;
use crate::model::Model;

/// `n` free boxes (half size 0.1 m, 1 kg, μ 0.5) resting at height `z` on a plane (μ 0.5), row-major on a grid of
/// `cols` columns `spacing` m apart, box i turned 0.2·i° about z; Δt 5 ms, g = 9.81.
pub fn box_grid(n: usize, cols: usize, spacing: f64, z: f64) -> Result<Model, ModelError> {
    let mut bodies = String::new();
    for i in 0..n {
        bodies += &format!(
            r#"<body pos="{} {} {z}" euler="0 0 {}"><freejoint/><geom type="box" size="0.1 0.1 0.1" mass="1" friction="0.5"/></body>"#,
            spacing * (i % cols) as f64,
            spacing * (i / cols) as f64,
            0.2 * i as f64
        );
    }
    let xml = format!(
        r#"<mujoco><option timestep="0.005" gravity="0 0 -9.81"/><worldbody><geom type="plane" size="10 10 0.1" friction="0.5"/>{bodies}</worldbody></mujoco>"#
    );
    load_mjcf_str(&xml, "box_grid.xml", None)
}
