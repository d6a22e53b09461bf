//! `pbd-mpc-torques` — spec 000 §4.4 (Table IV) with the §4.6 synthetic substitute: estimate the joint torques
//! of a "measured" Baxter left-arm trajectory by model-predictive optimisation through the XPBD step.
//!
//! Measured data: the Featherstone (ABA, semi-implicit Euler) simulation of the same URDF Model at 1 kHz, driven
//! by u = g(q) + Kp (q_d − q) + Kd (q̇_d − q̇) tracking q_d = q_c + A (1 − cos 2πft) for 5 s, downsampled to
//! 100 Hz: angles p̂, rates ṗ̂ at every 10 ms sample and, as the ground truth, the mean applied torque over each
//! 10 ms interval. Estimation: at every step t the torque u^t is optimised by Adam on Eq. 26,
//! L = (1/K) Σ [λ1 (p − p̂)² + λ2 ‖ω − ω̂‖² + λ3 (u^t − u^{t−1})²] (K = steps × joints, §6.8) with ω̂ from
//! Eq. 24 on the measured angles (detached), then the simulated state advances with it (open loop, no re-sync:
//! the paper's "use it to update robot states", §6.13). Gradients are the engine's exact reverse mode
//! (`XpbdSolver::step_vjp`, `joint_angles_vjp`). The 3-step receding-horizon MPC optimises (u^t, u^{t+1},
//! u^{t+2}) on the summed loss and applies u^t only.
//!
//! Layout: `reference.rs` (the measured Featherstone trajectory, the re-synchronised state), `loss.rs` (Eq. 26 over a
//! horizon with its adjoint, the exact one-step minimiser), `experiment.rs` (the schemes, the run, the JSON and the
//! figure).
mod experiment;
mod loss;
mod reference;

pub use experiment::*;
pub use loss::*;
pub use reference::*;

/// PBD step (spec 000 §4.0) and the reference simulator's step.
pub const DT: f64 = 0.01;
const SUBSTEPS: usize = 10;
/// joints of Table IV (index, name)
pub const REPORTED: [(usize, &str); 3] = [(1, "s1"), (2, "e0"), (3, "e1")];
