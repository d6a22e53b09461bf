//! Scenes the randomized sweep (issue 20 item 5, `torsion_bench::sweep`) found, kept as regressions.
use torsion_model::io::mjcf::load_mjcf_str;
use torsion_model::{Control, GenState, ParamSelection, StateSpace};
use torsion_solvers::lcp::LcpSolver;
use torsion_solvers::{Solver, SolverError};

const STACK: &str = r#"<mujoco><worldbody><geom name="floor" type="plane" size="5 5 0.1"/>
  <body name="low" pos="0 0 0.1"><freejoint/><geom name="low" type="box" size="0.1 0.1 0.1" mass="1"/></body>
  <body name="high" pos="0 0 0.3"><freejoint/><geom name="high" type="box" size="0.1 0.1 0.1" mass="0.5"/></body>
  </worldbody></mujoco>"#;

/// Sweep seed 0xec0bb3536881608d (lcp, the two-box stack, third step): two boxes spinning at ~1e6 rad/s with
/// dt = 0.65 s. The step diverges before its contact solve (a box 1.4e7 m away at 6.6e15 m/s), where round-off
/// leaves the joint-space inertia indefinite: the error said only "not positive definite" (a bad model?), it now
/// says that the step diverged and how far.
#[test]
fn lcp_spinning_stack_reports_what_went_wrong() {
    let mut m = load_mjcf_str(STACK, "stack.xml", None).unwrap();
    // θ in `Model::param_table` order, one row per group
    #[rustfmt::skip]
    let theta = [
        // body mass, inertia (ixx ixy ixz iyy iyz izz): low, high
        1.32936399985524, 0.008862426665701601, 0.0, 0.0, 0.008862426665701601, 0.0, 0.008862426665701601,
        0.6246833575813471, 0.004164555717208981, 0.0, 0.0, 0.004164555717208981, 0.0, 0.004164555717208981,
        // joint anchors (parent xyz, child xyz): low's free joint, high's
        0.0, 0.0, 0.0, -0.0, -0.0, -0.0,
        0.0, 0.0, 0.0, -0.0, -0.0, -0.0,
        // joint damping, armature, friction loss: low's free joint, high's
        1.314318953622031, 0.02284917701726133, 0.0,
        1.3367790715293446, 0.004957545076258796, 1.0934543115003115,
        // shape friction, restitution: floor, low, high
        0.4062224378255996, 0.45615697013591094,
        0.0, 0.0,
        0.47338832023457483, 0.48797215292915574,
    ];
    m.params_set(&ParamSelection::all(&m), &theta).unwrap();
    let flat = [
        -6.937838048722121,
        -7.036665515914251,
        9.139984432375131,
        -0.651681352527263,
        -0.28993097948675617,
        0.4644710096769151,
        0.5248982025800762,
        9.67500001957285,
        10.373854994237345,
        1.8219061237757639,
        0.777322138721434,
        -0.025211920796059502,
        -0.42117047567182253,
        -0.46663699181020785,
        -1951.6689852545555,
        1088.7953630643392,
        4436.846264764991,
        2.9110034080769154,
        -44.54089297804325,
        14.53401729537768,
        -186824.94512331203,
        -845335.1526543159,
        -865604.3578846137,
        -937.2205223269401,
        -322.90157020506706,
        503.9486248891495,
    ];
    let s = GenState::decode(&m, &flat).unwrap();
    let u = Control::from_torques(&[
        2.2144777638355717,
        -1.7088829942140737,
        0.0,
        -7.880953060122073,
        0.0,
        9.978236457656283,
        -7.070828724933684e-13,
        3.7604636824614057,
        -0.5551238373094436,
        6.35507344136833e-13,
        8.005142169711343,
        -3.6244464824150335,
    ]);
    let lcp = LcpSolver::default();
    let (mut out, mut ws) = (s.clone(), lcp.workspace(&m).unwrap());
    let e = lcp.step(&m, &s, &u, 0.6510949981070662, &mut out, &mut ws, None).unwrap_err();
    assert!(matches!(e, SolverError::BadInput { .. }) && e.to_string().contains("the step diverged: |q| up to"), "{e}");
}
