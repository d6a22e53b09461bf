//! torsion-experiments: one file per paper experiment and the shared result writer (design.md §6).
//! `run("NAME", out_dir, quick)` writes `out_dir/NAME.json` = {"name", "metrics", "paper", "settings"} and
//! `out_dir/NAME.png`. Every number in "metrics" is measured by the run; "paper" holds the published values.
#![allow(clippy::type_complexity)]
pub mod contact_compare;
pub mod contact_net;
pub mod jade_cube_push;
pub mod jade_sliding_prisms;
pub mod jade_thin_plate;
pub mod jade_two_ball;
pub mod jade_two_ball_facets;
pub mod ncp_convergence;
pub mod ncp_friction_id;
pub mod ncp_joint_id;
pub mod ncp_mass_id;
pub mod ncp_pyramid_bias;
pub mod ncp_scene;
pub mod pbd_design;
pub mod pbd_gravity_comp;
pub mod pbd_impedance;
pub mod pbd_mpc;
pub mod pbd_spring_id;
pub mod plot;
pub mod report;
pub mod result;
pub mod scene;
pub mod stay_still;
pub mod sysid_arm;
pub mod sysid_contact;
pub mod tensegrity_3bar;
pub mod tensegrity_contact_id;
pub mod tensegrity_gap;
pub mod tensegrity_net;
pub mod tensegrity_noncontact_id;
pub mod tensegrity_roll;

pub use result::{ExperimentError, ExperimentResult};
use std::path::Path;

/// A registered experiment.
pub struct Experiment {
    pub name: &'static str,
    pub spec: &'static str,
    pub description: &'static str,
    pub run: fn(quick: bool) -> Result<ExperimentResult, ExperimentError>,
}

pub fn registry() -> Vec<Experiment> {
    vec![
    Experiment {
        name: "pbd-design",
        spec: "000 §4.1 (Table II)",
        description: "2-link arm link-length design under a Cartesian stiffness controller, optimised through the differentiable XPBD rollout",
        run: pbd_design::run,
    }, Experiment {
        name: "pbd-gravity-comp",
        spec: "000 §4.2 (Table III)",
        description: "Baxter left arm: joint torques that keep the XPBD arm still for one step (the Eq. 26 minimiser; Adam as the paper too) vs RNEA g(q) at 30 random poses",
        run: pbd_gravity_comp::run,
    }, Experiment {
        name: "pbd-spring-id",
        spec: "000 §4.3 (Fig. 8)",
        description: "Baxter shoulder spring (Eq. 31) stiffness and offset from measured motor torques: curve fitting vs the differentiable stay-still loss, with and without noise",
        run: pbd_spring_id::run,
    },
    Experiment {
        name: "pbd-mpc-torques",
        spec: "000 §4.4 (Table IV)",
        description: "Baxter joint-torque estimation by 1-step (3 inits × 3 losses) and 3-step MPC through the XPBD step, against a 1 kHz Featherstone trajectory, with and without a reality gap",
        run: pbd_mpc::run,
    },
    Experiment {
        name: "pbd-impedance",
        spec: "000 §4.5 (Figs. 12-13, simulation part)",
        description: "Baxter s1 impedance control: net-torque lookup map built by optimisation through the XPBD step, checked against one-step inverse dynamics; 40 s pulse scenario, impedance vs PD only",
        run: pbd_impedance::run,
    },
    Experiment {
        name: "ncp-friction-id",
        spec: "001 §4 E1 (Fig. 4a), H1",
        description: "μ of a cube sliding on the floor from noisy positions simulated at another Δt and solver setting; multi-step loss, LM with the contact stepper's exact Jacobians, 5 initialisations",
        run: ncp_friction_id::run,
    },
    Experiment {
        name: "ncp-mass-id",
        spec: "001 §4 E2 (Fig. 4b), H4",
        description: "mass of a sliding cube with μ known under a known fixed push (§3.11 item 10: gravity alone leaves m unobservable); 5 initialisations, negative control without the push",
        run: ncp_mass_id::run,
    },
    Experiment {
        name: "ncp-pyramid-bias",
        spec: "001 §4 E4 (Fig. 5), H2",
        description: "μ identified with the disk, the box pyramid and the diamond pyramid from disk data, sliding at θ = 0, π/8, π/4 from the pyramid axes",
        run: ncp_pyramid_bias::run,
    },
    Experiment {
        name: "ncp-joint-id",
        spec: "001 §4 E5 (Fig. 6), H5",
        description: "joint (m, μ, ε) of a cube that slides into a known cube; several initialisations; no-collision control (condition number in (μ, log m))",
        run: ncp_joint_id::run,
    },
    Experiment {
        name: "ncp-convergence",
        spec: "001 §4 extra tests 7–8, H6–H7",
        description: "NCP residual vs staggered passes (1..50) on cube–floor and cube–cube steps, and ADMM iteration counts along rollouts",
        run: ncp_convergence::run,
    },
    Experiment {
        name: "tensegrity-noncontact-id",
        spec: "003 §4.1 Exp. A (Figs. 4-5), H1/H2",
        description: "SUPERball in the air: shared k/m, c/m, motor a, b from one MuJoCo trajectory (one-step teacher forcing, exact Jacobians, Gauss-Newton, 50-60 % off); 5000-step rollout error on 10 tests at 1 ms and 100 ms controls vs the chaos floor",
        run: tensegrity_noncontact_id::run,
    },
    Experiment {
        name: "tensegrity-contact-id",
        spec: "003 §4.2 Exp. B (Figs. 6-7), H3/H6",
        description: "SUPERball thrown and rolling: the linear contact model's beta, e, gamma, mu, eps from one and from five MuJoCo throws (cables frozen; one-step teacher forcing, exact parameter Jacobians, LM, 50 % off); CoM error after 4000 steps on 10 test throws; data-steps accounting",
        run: tensegrity_contact_id::run,
    },
    Experiment {
        name: "tensegrity-mlp",
        spec: "003 §4.3 Exp. C (Fig. 8), H4",
        description: "SUPERball's contact model replaced by a 3 × 100 MLP on the 29 contact-frame features, trained through the Featherstone step with the one-step loss (5 epochs, Adam); CoM error after 4000 steps on the test throws beside the linear model fitted on the same throw",
        run: tensegrity_net::run_mlp,
    },
    Experiment {
        name: "tensegrity-residual",
        spec: "003 §4.4 Exp. D (Fig. 9), H5",
        description: "the frozen linear contact model plus a residual 3 × 100 MLP trained through the step (5 throws; 30 and 50 in the full run when gt.py --net-throws 45 was run); CoM error after 4000 steps on the test throws, the late drift as curves",
        run: tensegrity_net::run_residual,
    },
    Experiment {
        name: "tensegrity-roll",
        spec: "003 §4.5 Exp. E (Figs. 10-11), H8/H6",
        description: "SUPERball rolling to CoM velocity [10, 0, 0]: open-loop controls (100 ms) from the sampled iLQG trained 5x in torsion's engine identified from 1 + 1 MuJoCo trajectories and 5x in MuJoCo (same code through a pipe), both executed in MuJoCo; x-velocity and cost ratios, ground-truth steps, training wall-clocks",
        run: tensegrity_roll::run,
    },
    Experiment {
        name: "tensegrity-3bar",
        spec: "003 §4.6 Exp. F (Figs. 12-13), H7/H9",
        description: "the unseen 3-bar prism at 0.1 g (tensegrity_3bar.xml, 3 side cables every 100 ms, 15 s) with SUPERball's identified parameters unchanged: the sampled iLQG trained 5x in torsion and 5x in MuJoCo (tensegrity-roll's pipeline), both run open-loop in MuJoCo; x-velocity and cost ratios, gt-steps accounting (10k vs 12M)",
        run: tensegrity_3bar::run,
    },
    Experiment {
        name: "sysid-arm",
        spec: "issue 14 item 6",
        description: "Panda (example-robot-data) from 10 s of MuJoCo data at 1 kHz with damping, frictionloss and sensor noise: 70 inertial + 7 damping + 7 dry-friction parameters by the regressor residual with exact Jacobians (π linear; a log-Cholesky variant beside it); held-out torque RMSE and base-parameter errors, vs MuJoCo's sysid toolbox on the same data (bench/sysid/mujoco_fit.py)",
        run: sysid_arm::run,
    },
    Experiment {
        name: "sysid-contact",
        spec: "issue 14 item 6",
        description: "mass, μ and ε of a box thrown onto a table and pushed across it, from 2 s of MuJoCo data (stiff soft contact, elliptic cone, sensor noise), under ncp with the multiple-shooting simulation residual and exact Jacobians; vs MuJoCo's sysid toolbox on the same data (bench/sysid/mujoco_contact_fit.py)",
        run: sysid_contact::run,
    },
    Experiment {
        name: "jade-sliding-prisms",
        spec: "004 §4.3 task 1 (Fig. 12)",
        description: "prisms with 3, 4 and 6 base vertices sliding from 2 m/s (μ = 0.16) under the lcp stepper: velocity slope vs −μgΔt, invalid LCP steps, validity rates of baseline Dantzig, PGS, Jade and the oracle on the logged and on random LCPs",
        run: jade_sliding_prisms::run,
    },
    Experiment {
        name: "jade-cube-push",
        spec: "004 §4.3 task 2",
        description: "two equal cubes 0.5 m apart, the gray one launched at 2 m/s into the blue one (μ = 0.16, e = 0 and 1) under the lcp stepper, vs the analytic impact velocity and rest gap",
        run: jade_cube_push::run,
    },
    Experiment {
        name: "jade-two-ball",
        spec: "004 §4.2 (Table I, Fig. 10-11)",
        description: "the billiard inverse problem: blue's v_y optimised (gradient descent with clipped steps, 1000 iterations; 100 quick) so that yellow ends at (0.3, 0.2) after 0.2 s, lcp stepper with CCD and TOI-aware gradients; icosphere hulls (1, 2 subdivisions) and exact spheres vs the closed-form optimum and Table I (Jade 0.00156, Nimble 0.0249)",
        run: jade_two_ball::run,
    },
    Experiment {
        name: "jade-thin-plate",
        spec: "004 §4.1 (Figs. 8-9)",
        description: "a floating parallel-jaw gripper clamps and lifts a 0.1 kg plate of 0.02 m and 0.002 m at 1 N and 10 N (μ = 0.8, 100 steps) under the lcp stepper: max penetration with CCD (≤ 1e-4 m) and without (DCD), plate held",
        run: jade_thin_plate::run,
    },
    Experiment {
        name: "contact-compare",
        spec: "issue 17 item 7",
        description: "one model, two contact formulations: a sliding prism, the cube push and a 3-cube stack (top cube sliding) under ncp (exact cone) and lcp (box friction, CCD): stop distance vs the Coulomb prediction, penetration, time per step and step Jacobians vs finite differences side by side",
        run: contact_compare::run,
    },
    ]
}

/// Run one experiment by name and write its JSON and PNG into `out`.
pub fn run(name: &str, out: &Path, quick: bool) -> Result<ExperimentResult, ExperimentError> {
    let reg = registry();
    let e = reg.iter().find(|e| e.name == name).ok_or_else(|| {
        ExperimentError::Unknown(format!(
            "unknown experiment '{name}'; available: {}",
            reg.iter().map(|e| e.name).collect::<Vec<_>>().join(", ")
        ))
    })?;
    let res = (e.run)(quick)?;
    res.write(out)?;
    Ok(res)
}
