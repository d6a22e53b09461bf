//! End-to-end tests of the `torsion` binary: experiments (quick mode, metric names and targets), simulate on
//! the Baxter URDF, and clear errors on bad input.
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn torsion() -> Command {
    Command::new(env!("CARGO_BIN_EXE_torsion"))
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("torsion-cli-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `cmd` (a `torsion simulate …`) with `--out traj`: the process's output, its status for the caller to check.
fn simulate_out(cmd: &mut Command, traj: &Path) -> Output {
    cmd.arg("--out").arg(traj).output().unwrap()
}

/// [`simulate_out`] that must succeed: the trajectory JSON it wrote, and its standard error.
fn simulate_json(cmd: &mut Command, traj: &Path) -> (serde_json::Value, String) {
    let out = simulate_out(cmd, traj);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{err}");
    (serde_json::from_str(&std::fs::read_to_string(traj).unwrap()).unwrap(), err)
}

fn baxter_urdf() -> PathBuf {
    torsion_model::io::robots::example_robot_data_dir()
        .expect("example-robot-data (pip install example-robot-data)")
        .join(torsion_model::io::robots::BAXTER_URDF)
}

#[test]
fn experiment_list_names_pbd_design() {
    let out = torsion().args(["experiment", "--list"]).output().unwrap();
    assert!(out.status.success());
    let list = String::from_utf8_lossy(&out.stdout);
    for name in ["pbd-design", "pbd-gravity-comp", "pbd-spring-id"] {
        assert!(list.contains(name), "{name} not listed");
    }
}

#[test]
fn pbd_design_quick_meets_its_targets() {
    let dir = tmp("design");
    let out = torsion().args(["experiment", "pbd-design", "--quick", "--out"]).arg(&dir).output().unwrap();
    // the terminal gets a short table (metric, ours, paper's), the file the full JSON (issue 21 item 5: it
    // printed the whole 17 KB JSON)
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.len() < 4000 && stdout.contains("metric") && stdout.contains("loss_initial"), "{stdout}");
    assert!(stdout.contains("6 of 6 targets met"), "{stdout}");
    assert!(!stdout.trim_start().starts_with('{'), "no JSON on stdout");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("pbd-design.json")).unwrap()).unwrap();
    assert!(std::fs::metadata(dir.join("pbd-design.png")).unwrap().len() > 10_000);
    assert_eq!(j["name"], "pbd-design");
    let m = &j["metrics"];
    for k in [
        "l1",
        "l2",
        "circle_center_distance",
        "loss_initial",
        "loss_final",
        "work_initial",
        "work_final",
        "grid_optimum",
        "l1_c2",
        "l2_c2",
    ] {
        assert!(!m[k].is_null(), "metric {k} missing");
    }
    let f = |k: &str| m[k].as_f64().unwrap();
    eprintln!("quick pbd-design: l = ({:.4}, {:.4}), c2 l = ({:.4}, {:.4})", f("l1"), f("l2"), f("l1_c2"), f("l2_c2"));
    assert!((f("l2") - 0.30).abs() <= 0.03 && (f("l1") - f("circle_center_distance")).abs() <= 0.03);
    assert!((f("l2_c2") - 0.30).abs() <= 0.03 && (f("l1_c2") - 2.0).abs() <= 0.03);
    assert!(f("loss_initial") / f("loss_final") >= 3.5);
    assert!(f("work_initial") / f("work_final") >= 4.0);
    assert_eq!(j["paper"]["loss_initial"], 51.716);
}

/// The experiments whose `--html` report shows their scene in the viewer (issue 18 item 2); the others have none
/// (docs/EXPERIMENTS.md says why).
const WITH_SCENE: [&str; 11] = [
    "pbd-mpc-torques",
    "jade-cube-push",
    "jade-thin-plate",
    "contact-compare",
    "jade-sliding-prisms",
    "ncp-friction-id",
    "ncp-mass-id",
    "ncp-pyramid-bias",
    "ncp-joint-id",
    "ncp-convergence",
    "tensegrity-noncontact-id",
];

/// The viewer's data inlined in an `--html` report (`None`: the page has no viewer); checked to pose every
/// body of the scene's model at every frame of every run.
fn report_viewer_data(html: &str) -> Option<serde_json::Value> {
    let tag = "<script type=\"application/json\" id=\"torsion-data\">";
    let start = html.find(tag)? + tag.len();
    assert!(html.contains("<div id=\"torsion-viewer\">"), "viewer data without the viewer section");
    let d: serde_json::Value = serde_json::from_str(&html[start..start + html[start..].find("</script>")?]).unwrap();
    let bodies = d["scene"]["body_names"].as_array().unwrap().len();
    let trajs = d["trajectories"].as_array().unwrap();
    assert!(!trajs.is_empty() && !d["scene"]["shapes"].as_array().unwrap().is_empty());
    for t in trajs {
        let poses = t["body_poses"].as_array().unwrap();
        assert!(poses.len() > 1 && poses.len() == t["time"].as_array().unwrap().len(), "{}", t["name"]);
        assert!(poses.iter().all(|r| r.as_array().unwrap().len() == bodies), "{}: a frame misses bodies", t["name"]);
    }
    Some(d)
}

/// Run an experiment in quick mode with `--html` and return its JSON (the PNG must exist); its declared targets
/// (`checks`, evaluated by the experiment on its metrics and printed as PASS / FAIL, issue 21 item 5) must all
/// pass; the report page exists and holds the scene's viewer where the experiment has one ([`WITH_SCENE`]).
fn quick_experiment(name: &str) -> serde_json::Value {
    let dir = tmp(name);
    let out = torsion().args(["experiment", name, "--quick", "--html", "--out"]).arg(&dir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::metadata(dir.join(format!("{name}.png"))).unwrap().len() > 10_000);
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(format!("{name}.json"))).unwrap()).unwrap();
    assert_eq!(j["name"], name);
    let checks = j["checks"].as_array().unwrap();
    let n = checks.len();
    assert!(n > 0, "{name} declares no targets");
    let failed: Vec<_> = checks.iter().filter(|c| c["pass"] != true).collect();
    assert!(failed.is_empty(), "{name}: targets missed: {failed:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(&format!("{n} of {n} targets met")) && stdout.contains("PASS"), "{stdout}");
    let html = std::fs::read_to_string(dir.join(format!("{name}.html"))).unwrap();
    let viewer = report_viewer_data(&html);
    assert_eq!(viewer.is_some(), WITH_SCENE.contains(&name), "{name}: viewer in the report");
    j
}

/// [`quick_experiment`] and a reader of its scalar metrics (panics naming a missing one).
fn quick_metrics(name: &str) -> (serde_json::Value, impl Fn(&str) -> f64) {
    let j = quick_experiment(name);
    let m = j["metrics"].clone();
    (j, move |k: &str| m[k].as_f64().unwrap_or_else(|| panic!("metric {k} missing")))
}

#[test]
fn pbd_gravity_comp_quick_meets_its_targets() {
    let (j, f) = quick_metrics("pbd-gravity-comp");
    for sfx in ["", "_paper_settings", "_converged"] {
        eprintln!(
            "quick pbd-gravity-comp{sfx}: MAE s1 {:.4} e1 {:.4} w1 {:.4} N·m",
            f(&format!("mae_s1{sfx}")),
            f(&format!("mae_e1{sfx}")),
            f(&format!("mae_w1{sfx}"))
        );
    }
    for k in ["mean_s1", "max_s1", "min_s1", "mae_s0", "mae_w2", "mae_s1_adam", "angle_residual_max"] {
        f(k);
    }
    // primary (10 substeps) is ≥ 10× below the paper's MAE; a converged projection (300 iterations) meets it
    let paper = [("s1", 0.669), ("e1", 0.431), ("w1", 0.698)];
    for (n, t) in paper {
        assert!(f(&format!("mae_{n}")) <= 0.1 * t, "{n} primary (substeps)");
        assert!(f(&format!("mae_{n}_converged")) <= t, "{n} converged");
    }
    // the paper's 30 iterations leave the projection unconverged: the one-step torque is a few % off g(q)
    // (measured 4 % at s1, full run 7 %; docs/decisions.md); bound it so a regression shows
    assert!(f("rel_mae_s1_paper_settings") < 0.1 && f("mae_w1_paper_settings") <= 0.698, "paper variant");
    assert_eq!(j["paper"]["mae_s1"], 0.669);
}

#[test]
fn pbd_spring_id_quick_meets_its_targets() {
    let (_, f) = quick_metrics("pbd-spring-id");
    for s in ["", "_noisy"] {
        eprintln!(
            "quick pbd-spring-id{s}: k rel err curve fit {:.2e}, diffsim {:.2e} (paper settings), {:.2e} (10 substeps)",
            f(&format!("k_rel_error_curvefit{s}")),
            f(&format!("k_rel_error_diffsim_paper_settings{s}")),
            f(&format!("k_rel_error_diffsim{s}"))
        );
    }
    let r = f("spring_to_gravity_ratio");
    assert!((0.5..=1.0).contains(&r), "spring carries {r} of the s1 gravity torque");
    // targets (spec §4.6): < 1 % noise-free, < 5 % with σ = 0.5 N·m; both methods agree
    assert!(f("k_rel_error_curvefit") < 0.01 && f("k_rel_error_curvefit_noisy") < 0.05);
    assert!(f("k_rel_error_diffsim") < 0.01 && f("k_rel_error_diffsim_noisy") < 0.05);
    assert!(f("k_methods_rel_diff") < 0.01 && f("k_methods_rel_diff_noisy") < 0.01);
    // at the paper's 30 iterations the XPBD one-step gap to g(q) (pbd-gravity-comp) biases k by ~1–2 % (full run
    // 1.7 %): bound it by the noisy target
    assert!(f("k_rel_error_diffsim_paper_settings") < 0.05 && f("k_rel_error_diffsim_paper_settings_noisy") < 0.05);
}

#[test]
fn experiment_list_names_the_issue_6_experiments() {
    let out = torsion().args(["experiment", "--list"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("pbd-mpc-torques") && text.contains("pbd-impedance"), "{text}");
}

/// The tensegrity experiments are listed; a full run without the generated data sets fails with an error naming the
/// missing file and the generator (the quick runs and their targets: the experiments crate's tests).
#[test]
fn tensegrity_experiments_are_listed_and_name_missing_data() {
    let out = torsion().args(["experiment", "--list"]).output().unwrap();
    let list = String::from_utf8_lossy(&out.stdout).to_string();
    for (name, file) in [("tensegrity-noncontact-id", "air_h1_train.npz"), ("tensegrity-contact-id", "throw_train.npz")]
    {
        assert!(list.contains(name), "{name} not listed: {list}");
        let dir = tmp(&format!("{name}-missing"));
        let out = torsion()
            .args(["experiment", name, "--out"])
            .arg(&dir)
            .env("TORSION_TENSEGRITY_DATA", dir.join("no-such-dir"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{name}: {err}");
        assert!(
            err.contains(&format!("no-such-dir/{file}")) && err.contains("bench/tensegrity/gt.py"),
            "{name}: {err}"
        );
    }
}

#[test]
fn pbd_mpc_torques_quick_meets_its_targets() {
    // 1 s of the 5 s trajectory (100 MPC steps), every scheme, both variants
    let j = quick_experiment("pbd-mpc-torques");
    let m = &j["metrics"];
    let r = |v: &serde_json::Value, joint: &str, row: &str, col: &str| v["rmse"][joint][row][col].as_f64().unwrap();
    for (joint, paper_best) in [("s1", 1.726), ("e0", 1.192), ("e1", 2.128)] {
        let best = m["best"][joint]["rmse"].as_f64().unwrap();
        eprintln!("quick pbd-mpc-torques {joint}: best {best:.3} ({}), paper {paper_best}", m["best"][joint]["scheme"]);
        // Table IV target: best RMSE ≤ the paper's (no reality gap)
        assert!(best <= paper_best, "{joint}: {best}");
        // ordering of §4.4: gravity init with angle+ω or the MPC is best; previous-torque init with the
        // angle-only loss is worst; the reality gap costs accuracy
        let scheme = m["best"][joint]["scheme"].as_str().unwrap();
        assert!(scheme == "mpc/angle+omega" || scheme == "gravity/angle+omega", "{joint}: {scheme}");
        let worst = ["zero", "previous", "gravity"]
            .iter()
            .flat_map(|row| ["angle", "omega", "angle+omega"].map(|col| r(m, joint, row, col)))
            .fold(0.0, f64::max);
        assert_eq!(worst, r(m, joint, "previous", "angle"), "{joint}");
        assert!(m["reality_gap"]["best"][joint]["rmse"].as_f64().unwrap() > best, "{joint}");
    }
    // zero init with angle+ω is bad for s1 and e1 (paper: 31.2 and 18.2 N·m against 1.76 and 2.16)
    for joint in ["s1", "e1"] {
        assert!(r(m, joint, "zero", "angle+omega") > 3.0 * r(m, joint, "gravity", "angle+omega"), "{joint}");
    }
    // "ω-only is insensitive to initialisation" (§4.4): the one-step ω-only loss is strictly convex near its
    // minimiser (Hessian eigenvalues > 0, condition ~1e7), so its exact minimiser does not depend on where the
    // optimiser starts; converged (Gauss–Newton), the three initialisations give the same torques. Bound: 1e-3
    // N·m on the RMSE spread (measured ~2e-8: the Gauss–Newton stop of 1e-10 N·m, amplified by the open loop;
    // < 0.1 % of the paper's ω-only RMSEs 2.30 / 1.34 / 2.24), and every converged RMSE ≤ the paper's best
    // ω-only value. The paper-setting Adam (80 iterations, lr 1 / 0.2) does not converge on this ill-conditioned loss,
    // so its spread is large (docs/EXPERIMENTS.md); each probe's exact minimiser has a loss ≤ Adam's.
    for (joint, paper_omega) in [("s1", 2.300), ("e0", 1.344), ("e1", 2.243)] {
        let spread = m["omega_only_init_spread"]["converged"][joint].as_f64().unwrap();
        let spread_adam = m["omega_only_init_spread"]["paper_adam"][joint].as_f64().unwrap();
        eprintln!(
            "quick pbd-mpc-torques {joint}: ω-only init spread converged {spread:.2e}, paper Adam {spread_adam:.3}"
        );
        assert!(spread <= 1e-3, "{joint}: converged ω-only spread {spread}");
        for init in ["zero", "previous", "gravity"] {
            let v = m["rmse_omega_converged"][joint][init].as_f64().unwrap();
            assert!(v <= paper_omega, "{joint}/{init}: {v}");
        }
    }
    for init in ["zero", "previous", "gravity"] {
        for p in m["omega_only_diagnosis"]["paper_adam_vs_exact_probes"][init].as_array().unwrap() {
            let (lx, la) = (p["loss_exact"].as_f64().unwrap(), p["loss_optimiser"].as_f64().unwrap());
            assert!(lx <= la * (1.0 + 1e-9), "{init}: {p}");
        }
    }
    assert_eq!(j["paper"]["rmse"]["s1"]["mpc"]["angle+omega"], 1.726);
}

#[test]
fn pbd_impedance_quick_meets_its_targets() {
    let j = quick_experiment("pbd-impedance");
    let m = &j["metrics"];
    let f = |k: &str| m[k].as_f64().unwrap();
    eprintln!(
        "quick pbd-impedance: map error {:.2e} (nodes) {:.2e} (cell centres); PD deflection {}; impedance {}",
        f("map_max_rel_error_nodes"),
        f("map_max_rel_error_cell_centres"),
        m["pd"]["steady_deflection"],
        m["impedance"]["steady_deflection"]
    );
    // the map agrees with one-step inverse dynamics within 5 % (spec §7.6)
    assert!(f("map_max_rel_error_nodes") <= 0.05 && f("map_max_rel_error_cell_centres") <= 0.05);
    assert!((f("inertia_s1_composite") - f("inertia_s1_crba")).abs() < 1e-9 * f("inertia_s1_crba"));
    for (i, tau) in [5.0, 10.0].iter().enumerate() {
        // PD steady deflection ≈ τ_ext/K (within 5 %)
        let d = m["pd"]["steady_deflection"][i].as_f64().unwrap();
        assert!((d - tau / 30.0).abs() <= 0.05 * tau / 30.0, "PD deflection {d}");
        let di = m["impedance"]["steady_deflection"][i].as_f64().unwrap();
        assert!(di.abs() < 0.1 * d.abs(), "impedance deflection {di}");
    }
    assert_eq!(m["pd"]["stable"], true);
    assert_eq!(m["impedance"]["stable"], true);
}

#[test]
fn simulate_baxter_left_arm() {
    let dir = tmp("sim");
    let traj = dir.join("traj.json");
    let (j, _) = simulate_json(
        torsion()
            .args(["simulate", "--model"])
            .arg(baxter_urdf())
            .args([
                "--arm-root",
                "torso",
                "--arm-tip",
                "left_hand_link",
                "--q0",
                "0,-0.5,0,1.0,0,0.5,0",
                "--dt",
                "0.01",
            ])
            .args(["--steps", "50", "--solver", "xpbd"]),
        &traj,
    );
    assert_eq!(j["joint_angles"].as_array().unwrap().len(), 51);
    assert_eq!(j["joint_angles"][0].as_array().unwrap().len(), 7);
    assert_eq!(j["body_poses"][50].as_array().unwrap().len(), 8);
    let a0 = j["joint_angles"][0][1].as_f64().unwrap();
    assert!((a0 + 0.5).abs() < 1e-12, "initial angle extracted from the poses: {a0}");
    let a1 = j["joint_angles"][50][1].as_f64().unwrap();
    assert!((a1 - a0).abs() > 1e-3, "the arm moves under gravity");
    // a free fall from a bent pose into the limits: 30 iterations keep the joints within a few mm (2.3e-3 m
    // measured; 5.1e-4 m without limits, see docs/solvers.md)
    assert!(j["max_position_violation"].as_array().unwrap().iter().all(|v| v.as_f64().unwrap() < 5e-3));
}

#[test]
fn simulate_ncp_on_the_whole_baxter() {
    // the README's robot with contact: its COLLADA meshes found above the URDF, adjacent links filtered
    let traj = tmp("ncp-baxter").join("baxter.json");
    let (j, err) = simulate_json(
        torsion().args(["simulate", "--model"]).arg(baxter_urdf()).args(["--solver", "ncp", "--steps", "5"]),
        &traj,
    );
    assert_eq!(j["joint_angles"].as_array().unwrap().len(), 6);
    let nq = j["joint_names"].as_array().unwrap().len();
    assert!(nq > 14, "the whole robot: {nq} joints");
    assert!(j["joint_velocities"][5].as_array().unwrap().iter().all(|v| v.as_f64().unwrap().is_finite()));
    // the base's children overlap the torso hull at q = 0 but are adjacent: not reported
    for child in ["head", "left_upper_shoulder", "right_upper_shoulder"] {
        assert!(!err.contains(&format!("(body '{child}') and 'torso/collision0'")), "{child}: {err}");
    }
}

#[test]
fn simulate_ncp_package_dir() {
    // the Baxter URDF copied out of example-robot-data (no folder above it holds the package) and the
    // example-robot-data fallback pointed nowhere: its package:// meshes need --package-dir
    let dir = tmp("pkgdir");
    let copy = dir.join("baxter.urdf");
    std::fs::copy(baxter_urdf(), &copy).unwrap();
    let share = baxter_urdf().ancestors().nth(4).unwrap().to_path_buf(); // …/share, holding example-robot-data/
    let run = |extra: &[&std::ffi::OsStr]| {
        let mut c = torsion();
        c.env("TORSION_ROBOTS_DIR", dir.join("none")).env_remove("ROS_PACKAGE_PATH");
        simulate_out(
            c.args(["simulate", "--solver", "ncp", "--steps", "2", "--model"]).arg(&copy).args(extra),
            &dir.join("t.json"),
        )
    };
    let out = run(&[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("base_link_collision.DAE") && err.contains("--package-dir"), "{err}");
    assert!(err.contains(&format!("{} (above the model file)", dir.display())), "the folders tried: {err}");
    let out = run(&["--package-dir".as_ref(), "/nonexistent".as_ref(), "--package-dir".as_ref(), share.as_os_str()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn bad_inputs_give_clear_errors() {
    let err = |args: &[&str]| {
        let out = torsion().args(args).output().unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    let e = err(&["experiment", "no-such-thing"]);
    assert!(e.contains("unknown experiment 'no-such-thing'") && e.contains("pbd-design"), "{e}");
    let e = err(&["simulate", "--model", "/nonexistent/robot.urdf"]);
    assert!(e.contains("/nonexistent/robot.urdf"), "{e}");
    let b = baxter_urdf();
    let b = b.to_str().unwrap();
    let e = err(&["simulate", "--model", b, "--arm-root", "torso", "--arm-tip", "left_hand_link", "--q0", "0,0"]);
    assert!(e.contains("--q0 has 2 values") && e.contains("7"), "{e}");
    let e = err(&["simulate", "--model", b, "--arm-root", "torso", "--arm-tip", "nope"]);
    assert!(e.contains("nope"), "{e}");
}

#[test]
fn simulate_featherstone_agrees_with_xpbd_at_small_dt() {
    // the two methods on the same robot: a short swing at dt = 1 ms, no limits, joint damping off
    let dir = tmp("both");
    let run = |solver: &str, extra: &[&str]| {
        let (j, _) = simulate_json(
            torsion()
                .args(["simulate", "--model"])
                .arg(baxter_urdf())
                .args(["--arm-root", "torso", "--arm-tip", "left_hand_link", "--q0", "0.2,-0.5,0.1,1.0,0,0.5,0"])
                .args(["--dt", "0.001", "--steps", "200", "--solver", solver])
                .args(extra),
            &dir.join(format!("{solver}.json")),
        );
        j["joint_angles"][200].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect::<Vec<_>>()
    };
    let x = run("xpbd", &["--no-limits", "--iterations", "100"]);
    let f = run("featherstone", &["--no-damping"]);
    let d = x.iter().zip(&f).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    eprintln!("XPBD vs Featherstone after 0.2 s at 1 kHz: max joint-angle difference {d:.2e} rad");
    assert!(d < 5e-3, "{x:?} vs {f:?}");
}

#[test]
fn models_lists_names_and_unknown_names_are_refused() {
    let out = torsion().arg("models").output().unwrap();
    assert!(out.status.success());
    let list = String::from_utf8_lossy(&out.stdout);
    for name in ["panda", "baxter_left_arm", "superball", "dm_control/hopper"] {
        assert!(list.lines().any(|l| l.split_whitespace().next() == Some(name)), "{name} missing:\n{list}");
    }
    let out = torsion().args(["simulate", "--model", "dm_control/nope", "--steps", "1"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("nope.xml"), "{err}");
    let sim = ["simulate", "--model", "superball_air", "--solver", "featherstone", "--steps", "2"];
    let (j, _) = simulate_json(torsion().args(sim), &tmp("models").join("sb.json"));
    // cable tensions recorded for the viewer: one row per state, 24 cables, pretensioned (> 0) at the start
    let rows = j["cable_tensions"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    let t0: Vec<f64> = rows[0].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
    assert!(t0.len() == 24 && t0.iter().all(|t| *t > 0.0), "{t0:?}");
}

#[test]
fn simulate_ncp_hopper_stays_above_the_floor() {
    // dm_control's hopper (its floor plane and capsule geoms) falls over under gravity with the contact stepper:
    // every body stays above the floor (no tunnelling) and the state stays finite; no --dt: the MJCF's timestep
    // (0.005 s; issue 21 item 4: the CLI's 0.01 used to override it); the model by name (issue 21 item 3)
    let traj = tmp("ncp").join("hopper.json");
    let (j, _) = simulate_json(
        torsion().args(["simulate", "--model", "dm_control/hopper"]).args(["--solver", "ncp", "--steps", "400"]),
        &traj,
    );
    assert_eq!(j["dt"].as_f64(), Some(0.005), "the model's timestep");
    let poses = j["body_poses"].as_array().unwrap();
    assert_eq!(poses.len(), 401);
    let lowest = poses
        .iter()
        .flat_map(|s| s.as_array().unwrap().iter().skip(1).map(|p| p[2].as_f64().unwrap()))
        .fold(f64::INFINITY, f64::min);
    let fell = j["joint_angles"][400][2].as_f64().unwrap().abs();
    eprintln!("ncp hopper: lowest body COM {lowest:.3} m, torso pitch after 2 s {fell:.2} rad");
    assert!(lowest > 0.0, "a body went through the floor: {lowest}");
    assert!(fell > 0.5, "the unactuated hopper falls over");
}

#[test]
fn simulate_lcp_box_drop_stays_above_the_floor() {
    // a free 0.2 m box dropped from 5 cm above an MJCF floor plane, 100 steps of the lcp stepper (Jade's boxed
    // LCP, DCD): it lands and rests on the floor, the JSON written
    let dir = tmp("lcp");
    let xml = dir.join("box.xml");
    std::fs::write(
        &xml,
        r#"<mujoco><option timestep="0.01"/><worldbody><geom type="plane" size="5 5 0.1"/>
        <body pos="0 0 0.15"><freejoint/><geom type="box" size="0.1 0.1 0.1" mass="1" friction="0.5"/></body>
        </worldbody></mujoco>"#,
    )
    .unwrap();
    let traj = dir.join("box.json");
    let (j, _) = simulate_json(
        torsion().args(["simulate", "--solver", "lcp", "--no-ccd", "--steps", "100", "--model"]).arg(&xml),
        &traj,
    );
    assert_eq!(j["solver"], "lcp");
    let q = j["joint_angles"].as_array().unwrap();
    assert_eq!(q.len(), 101);
    let z: Vec<f64> = q.iter().map(|r| r[2].as_f64().unwrap()).collect();
    let lowest = z.iter().cloned().fold(f64::INFINITY, f64::min);
    eprintln!("lcp box drop: lowest COM {lowest:.5} m, final {:.5} m", z[100]);
    // DCD with the parallel position update (q_{t+1} = q_t ⊕ Δt v_t): the landing step sinks by at most one
    // step's travel, v Δt ≈ √(2 g 0.05) · 0.01 ≈ 1 cm; no tunnelling, no further sinking
    let vdt = (2.0f64 * 9.81 * 0.05).sqrt() * 0.01;
    assert!(lowest > 0.1 - vdt && lowest < 0.1 + 1e-3, "the box went into the floor: COM {lowest}");
    assert!((z[50] - z[100]).abs() < 1e-6, "it rests: z {} → {}", z[50], z[100]);
    // the viewer's contacts: at rest the floor's normal impulses carry the weight, Σ λ_n = m g Δt
    let last = j["contacts"][100].as_array().unwrap();
    let sum: f64 = last.iter().map(|c| c["impulse_n"].as_f64().unwrap()).sum();
    assert!(!last.is_empty() && (sum - 9.81 * 0.01).abs() < 1e-6, "{} contacts, Σλ_n = {sum}", last.len());
    // CCD (the default): the landing is found at its time of impact, no sinking at all
    let (j, _) =
        simulate_json(torsion().args(["simulate", "--solver", "lcp", "--steps", "100", "--model"]).arg(&xml), &traj);
    let lowest_ccd =
        j["joint_angles"].as_array().unwrap().iter().map(|r| r[2].as_f64().unwrap()).fold(f64::INFINITY, f64::min);
    eprintln!("lcp box drop with CCD: lowest COM {lowest_ccd:.9} m");
    assert!(lowest_ccd > 0.1 - 1e-9, "CCD: the box sank to {lowest_ccd}");
    // --no-ccd belongs to the lcp stepper
    let out = simulate_out(
        torsion().args(["simulate", "--solver", "ncp", "--no-ccd", "--steps", "1", "--model"]).arg(&xml),
        &traj,
    );
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("--no-ccd"));
}

/// spec 004 §4.3 task 1: prisms with 3, 4, 6 base vertices slide from 2 m/s under the lcp stepper: every step's
/// LCP answered, the velocity slope −μgΔt per step within the paper's 2.1 % (ours: exact to rounding).
#[test]
fn jade_sliding_prisms_quick_meets_its_targets() {
    let (j, f) = quick_metrics("jade-sliding-prisms");
    let m = &j["metrics"];
    eprintln!(
        "quick jade-sliding-prisms: slope rel error {:.2e}, invalid LCP steps {}, validity {}",
        f("slope_rel_error"),
        f("invalid_lcp_steps"),
        m["validity_rates"]
    );
    assert!(f("slope_rel_error") <= 0.021 && f("invalid_lcp_steps") == 0.0);
    for n in [3, 4, 6] {
        assert_eq!(m["prisms"][format!("{n}_vertices")]["contacts"], n, "{n} base vertices, {n} contacts");
    }
    for set in ["logged", "random"] {
        for s in ["baseline_dantzig", "pgs", "jade", "oracle"] {
            let r = m["validity_rates"][set][s].as_f64().unwrap_or_else(|| panic!("{set}.{s} missing"));
            assert!((0.0..=1.0).contains(&r));
        }
    }
    assert!(m["validity_rates"]["random"]["lcps"].as_u64().unwrap() >= 1000);
    assert_eq!(j["paper"]["slope_rel_error"], 0.021);
}

/// spec 004 §4.3 task 2: the cube push against the analytic impact velocity and rest gap (e = 0 and 1).
#[test]
fn jade_cube_push_quick_meets_its_targets() {
    let (j, f) = quick_metrics("jade-cube-push");
    let m = &j["metrics"];
    eprintln!(
        "quick jade-cube-push: velocity error {:.2e}, rest gap error {:.4} m",
        f("velocity_error"),
        f("rest_gap_error")
    );
    assert!(f("velocity_error") <= 0.02 && f("rest_gap_error") <= 0.032);
    // e = 0: both leave at v_c / 2; e = 1: gray stops, blue leaves at v_c
    let c = &m["cases"];
    assert!((c["e_0"]["v_blue_after_analytic"].as_f64().unwrap() - 0.7795).abs() < 1e-3);
    assert!(c["e_1"]["v_gray_at_impact_step"].as_f64().unwrap().abs() < 1e-6);
}

/// spec 004 §4.1: the thin-plate grasp and lift: no penetration with CCD and the plate held in all four cases
/// (0.02 / 0.002 m, 1 / 10 N); without CCD the 10 N fingers tunnel through the 0.002 m plate.
#[test]
fn jade_thin_plate_quick_meets_its_targets() {
    let j = quick_experiment("jade-thin-plate");
    let m = &j["metrics"];
    for t in ["0.02", "0.002"] {
        for f in ["1", "10"] {
            let c = &m["cases"][format!("t_{t}_f_{f}")];
            let pen = c["max_penetration"].as_f64().unwrap_or_else(|| panic!("t {t} f {f}: no max_penetration"));
            eprintln!("quick jade-thin-plate t {t} f {f}: penetration {pen:.2e} m, slip {} m", c["slip_m"]);
            assert!(pen <= 1e-4 && c["plate_held"] == true, "t {t} f {f}: {c}");
        }
    }
    assert!(m["max_penetration_dcd"].as_f64().unwrap() > 1e-4, "DCD does not tunnel");
}

/// issue 17 item 7: the three scenes under both contact formulations, every figure present.
#[test]
fn contact_compare_quick_meets_its_targets() {
    let j = quick_experiment("contact-compare");
    for scene in ["prism", "cube_push", "stack"] {
        for solver in ["ncp", "lcp"] {
            let r = &j["metrics"]["scenes"][scene][solver];
            for k in ["stop_distance_m", "stop_distance_analytic_m", "max_penetration_m", "step_time_us"] {
                assert!(r[k].as_f64().is_some(), "{scene} {solver}: {k} missing");
            }
            eprintln!("contact-compare {scene} {solver}: {r}");
        }
    }
}

/// spec 004 §4.2: the two-ball billiard inverse problem (exact spheres) reaches the closed-form loss minimiser
/// v_y = −0.6935 through the CCD stepper's TOI-aware gradients (DCD gradients would not: dq/dd has the wrong sign);
/// the UV-sphere mesh balls (issue 17 item 6) run, and the resolution study finds both within the paper's 0.00156.
#[test]
fn jade_two_ball_quick_meets_its_targets() {
    let (j, f) = quick_metrics("jade-two-ball");
    eprintln!(
        "quick jade-two-ball: sphere position error {:.5} (optimum {:.5}), v_y {:.6}, iterations to 5e-3 {}",
        f("sphere_position_error"),
        f("sphere_optimum_position_error"),
        f("vy_sphere"),
        f("sphere_iterations_to_5e-3")
    );
    assert!((f("vy_sphere") - (-0.6935)).abs() < 1e-3 && f("sphere_position_error") < 0.0249);
    assert_eq!(j["paper"]["position_error"], 0.00156);
    for v in ["uv_16x9", "uv_48x25", "sphere"] {
        let c = &j["metrics"]["cases"][v];
        eprintln!("quick jade-two-ball {v}: {c}");
        assert!(c["position_error"].as_f64().is_some_and(|e| e.is_finite() && e < 1.0), "{v}: {c}");
    }
    for v in ["uv_16x9", "uv_48x25"] {
        let s = &j["metrics"]["resolution_study"][v];
        eprintln!("quick jade-two-ball study {v}: {s}");
        assert!(s["best_position_error"].as_f64().is_some_and(|e| e <= 0.00156), "{v}: {s}");
    }
}

/// spec 001 H1: μ within 0.005 of μ* = 0.2 from every initialisation (quick: 2 of the 5, a 0.6 s trajectory).
#[test]
fn ncp_friction_id_quick_meets_its_targets() {
    let j = quick_experiment("ncp-friction-id");
    let m = &j["metrics"];
    assert_eq!(m["mu_true"], 0.2);
    let est: Vec<f64> = m["mu_estimates"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    assert_eq!(est.len(), 2);
    eprintln!("quick ncp-friction-id: {est:?}");
    assert!(est.iter().all(|e| (e - 0.2).abs() <= 0.005));
    assert!(m["max_abs_error"].as_f64().unwrap() <= 0.005);
    assert!((m["mu_estimate_noise_free"].as_f64().unwrap() - 0.2).abs() < 1e-6);
}

fn f64s(v: &serde_json::Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()
}

/// spec 001 H4: mass within 1 % (quick: 2 starts, 0.6 s); without the known push m is (nearly) unobservable.
#[test]
fn ncp_mass_id_quick_meets_its_targets() {
    let j = quick_experiment("ncp-mass-id");
    let m = &j["metrics"];
    let est = f64s(&m["mass_estimates"]);
    eprintln!("quick ncp-mass-id: {est:?}");
    assert_eq!(est.len(), 2);
    assert!(m["mass_rel_error"].as_f64().unwrap() <= 0.01);
    let (with, without) =
        (m["mass_sensitivity_with_push"].as_f64().unwrap(), m["mass_sensitivity_without_push"].as_f64().unwrap());
    assert!(without < 1e-2 * with, "{without} vs {with}");
}

/// spec 001 H2 (§3.11 item 9): disk unbiased at every θ; box μ/√2 and diamond √2 μ at π/4.
#[test]
fn ncp_pyramid_bias_quick_meets_its_targets() {
    let j = quick_experiment("ncp-pyramid-bias");
    let m = &j["metrics"];
    let (cone, bx, dia) = (f64s(&m["mu_cone"]), f64s(&m["mu_box"]), f64s(&m["mu_diamond"]));
    eprintln!("quick ncp-pyramid-bias: cone {cone:?} box {bx:?} diamond {dia:?}");
    assert_eq!(cone.len(), 3);
    assert!(cone.iter().all(|c| (c - 0.2).abs() <= 0.002));
    assert!((bx[2] - 0.2 / 2f64.sqrt()).abs() <= 0.002 && (dia[2] - 0.2 * 2f64.sqrt()).abs() <= 0.003);
    assert!((bx[0] - 0.2).abs() <= 0.002 && (dia[0] - 0.2).abs() <= 0.002);
}

/// spec 001 H5: (μ, m, ε) each within 2 % from every start (quick: 2 starts, 0.4 s); without the collision the
/// (μ, log m) Gauss–Newton matrix is singular to rounding (m unobservable, §3.11 item 10).
#[test]
fn ncp_joint_id_quick_meets_its_targets() {
    let j = quick_experiment("ncp-joint-id");
    let m = &j["metrics"];
    let r = &m["rel_errors"];
    eprintln!("quick ncp-joint-id: {r}");
    for k in ["mu", "mass", "restitution"] {
        assert!(r[k].as_f64().unwrap() <= 0.02, "{k}: {}", r[k]);
    }
    assert_eq!(m["estimates_mu_m_eps"].as_array().unwrap().len(), 2);
    let (c, c0) = (m["collision_condition_number"].as_f64().unwrap(), m["no_collision_condition_number"].as_f64());
    assert!(c < 1e4 && c0.is_none_or(|c0| c0 > 1e8), "{c} vs {c0:?}");
}

/// spec 001 H6 / H7: relative NCP residual ≤ 1e-6 within 10 staggered passes and median ≤ 50 ADMM iterations on
/// both scenes (quick: k ≤ 20, 20-step rollouts).
#[test]
fn ncp_convergence_quick_meets_its_targets() {
    let j = quick_experiment("ncp-convergence");
    let m = &j["metrics"];
    for n in ["cube_floor", "cube_cube"] {
        let k = m[format!("{n}_passes_for_1e-6_residual")].as_u64();
        let admm = m[format!("{n}_admm_median_iterations")].as_f64().unwrap();
        eprintln!("quick ncp-convergence {n}: passes {k:?}, ADMM median {admm}");
        assert!(k.is_some_and(|k| k <= 10), "{n}: {k:?}");
        assert!(admm <= 50.0 && m[format!("{n}_admm_unconverged")] == 0);
        assert_eq!(m[format!("{n}_relative_residual")].as_array().unwrap().len(), 20);
    }
}

/// Two boxes on the floor (the viewer's ncp scene).
const TWO_BOXES: &str = include_str!("data/two_boxes.xml");

#[test]
fn simulate_ncp_records_contacts_and_their_impulses() {
    // issue 18: `simulate --solver ncp` writes per step the contacts (point, normal, normal impulse); at rest the
    // floor's normal impulses carry both boxes' weight over the step: Σ λ_n = 2 m g dt
    let dir = tmp("contacts");
    std::fs::write(dir.join("boxes.xml"), TWO_BOXES).unwrap();
    let traj = dir.join("boxes.json");
    let (j, _) = simulate_json(
        torsion()
            .args(["simulate", "--solver", "ncp", "--steps", "150", "--gravity", "9.81", "--model"])
            .arg(dir.join("boxes.xml")),
        &traj,
    );
    let rows = j["contacts"].as_array().expect("a contacts array");
    assert_eq!(rows.len(), 151, "one row per recorded state");
    assert!(rows[0].as_array().unwrap().is_empty(), "row 0: the initial state, before any step");
    for key in ["time", "joint_angles", "joint_velocities", "body_poses", "actuator_activations"] {
        assert!(j[key].is_array(), "existing key {key} kept");
    }
    let last = rows[150].as_array().unwrap();
    assert!(last.len() >= 6, "both boxes resting: {} contacts", last.len());
    let mut floor = 0.0;
    for c in last {
        let n: Vec<f64> = c["normal"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        assert!((n.iter().map(|x| x * x).sum::<f64>().sqrt() - 1.0).abs() < 1e-9, "unit normal {n:?}");
        let imp = c["impulse_n"].as_f64().unwrap();
        assert!(imp >= 0.0, "normal impulses push: {imp}");
        assert_eq!(c["point"].as_array().unwrap().len(), 3);
        if c["bodies"].as_array().unwrap().iter().any(|b| b.as_u64() == Some(0)) {
            floor += imp;
        }
    }
    let weight = 2.0 * 1.0 * 9.81 * 0.01;
    eprintln!("floor normal impulse at rest {floor:.5} N·s, 2 m g dt = {weight:.5}");
    assert!((floor - weight).abs() < 0.02 * weight, "floor impulse {floor} vs 2 m g dt {weight}");
    // featherstone has no contacts: no key (also for 0 steps, where the row count alone cannot tell)
    let sim = ["simulate", "--solver", "featherstone", "--steps", "0", "--model", "baxter_left_arm"];
    let (f, _) = simulate_json(torsion().args(sim), &dir.join("f.json"));
    assert!(f.get("contacts").is_none());
}

#[test]
fn view_errors_name_the_file_and_field() {
    let dir = tmp("view-err");
    let traj = dir.join("baxter.json");
    simulate_json(torsion().args(["simulate", "--model", "baxter_left_arm", "--steps", "2"]), &traj);
    std::fs::write(dir.join("boxes.xml"), TWO_BOXES).unwrap();
    // the Baxter trajectory against the two-box model: the body count differs
    let out = torsion()
        .arg("view")
        .arg(&traj)
        .arg("--model")
        .arg(dir.join("boxes.xml"))
        .arg("-o")
        .arg(dir.join("x.html"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("baxter.json") && err.contains("body_poses[0]"), "{err}");
    std::fs::write(dir.join("bad.json"), r#"{"time": [0, 0.1], "joint_angles": [[0]]}"#).unwrap();
    let out = torsion()
        .arg("view")
        .arg(dir.join("bad.json"))
        .args(["--model", "baxter_left_arm", "-o"])
        .arg(dir.join("y.html"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("bad.json") && err.contains("joint_angles"), "{err}");
    assert!(!dir.join("y.html").exists());
}

/// `experiment NAME --html` (issue 18 item 2) writes DIR/NAME.html, prints its path; the page is self-contained:
/// the plot inlined, every target with its verdict, no network reference.
#[test]
fn experiment_html_writes_a_self_contained_report() {
    let name = "jade-cube-push";
    let dir = tmp("html-report");
    let out = torsion().args(["experiment", name, "--quick", "--html", "--out"]).arg(&dir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let path = dir.join(format!("{name}.html"));
    assert!(String::from_utf8_lossy(&out.stdout).contains(&path.display().to_string()), "path printed");
    let h = std::fs::read_to_string(&path).unwrap();
    assert!(h.contains("data:image/png;base64,iVBOR"), "plot inlined");
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(format!("{name}.json"))).unwrap()).unwrap();
    let checks = j["checks"].as_array().unwrap();
    assert!(!checks.is_empty());
    let esc = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;");
    for c in checks {
        let t = esc(c["target"].as_str().unwrap());
        let verdict = if c["pass"] == true { "PASS" } else { "FAIL" };
        assert!(h.contains(&t), "target {t} missing");
        let row = &h[h.find(&t).unwrap()..];
        assert!(row[..row.find("</tr>").unwrap()].contains(verdict), "{t}: {verdict}");
    }
    assert!(h.contains(">PASS<"));
    // nothing fetched (the inlined three.js names URLs in strings, e.g. XML namespaces, but loads none)
    for net in ["src=\"http", "href=\"http", "from\"http", "import(\"http", "url(http"] {
        assert!(!h.contains(net), "the page fetches {net}");
    }
    let d = report_viewer_data(&h).expect("jade-cube-push's report shows its scene");
    assert_eq!(d["trajectories"].as_array().unwrap().len(), 2, "e = 0 and e = 1 overlaid");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Without -o / --out every command writes under `results/` of the working directory (ignored by git), never
/// into the working directory itself (issue 21 item 5: `simulate` wrote traj.json into the repository root).
#[test]
fn outputs_default_to_the_results_folder() {
    let dir = tmp("default-out");
    let run = |args: &[&str]| {
        let out = torsion().current_dir(&dir).args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    run(&["experiment", "ncp-convergence", "--quick"]);
    run(&["simulate", "--model", "two_link_arm", "--steps", "3"]);
    run(&["view", "results/traj.json", "--model", "two_link_arm"]);
    for f in ["ncp-convergence.json", "ncp-convergence.png", "traj.json", "view.html"] {
        assert!(dir.join("results").join(f).is_file(), "results/{f} missing");
    }
    // -o as --out, on experiment and simulate too
    run(&["experiment", "jade-cube-push", "--quick", "-o", "elsewhere"]);
    run(&["simulate", "--model", "two_link_arm", "--steps", "3", "-o", "elsewhere/t.json"]);
    assert!(dir.join("elsewhere/jade-cube-push.png").is_file() && dir.join("elsewhere/t.json").is_file());
    let mut top: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    top.sort();
    assert_eq!(top, ["elsewhere", "results"], "nothing else in the working directory");
    let ignore = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../.gitignore")).unwrap();
    assert!(ignore.lines().any(|l| l.trim() == "/results"), "results/ is ignored by git");
}

#[test]
fn simulate_tensegrity_superball_rests_on_the_floor_under_controls() {
    // `--solver tensegrity` (Featherstone + spec 003's linear contact model) on the unchanged superball.xml with a
    // controls file: the rods stand on the floor, where plain featherstone (no contact) lets them fall through;
    // the controls move the robot; a wrong --contact-params count is refused with the count
    let dir = tmp("tensegrity");
    let steps = 1000;
    let rows: Vec<Vec<f64>> =
        (0..steps).map(|k| (0..24).map(|i| if i < 4 && k > 100 { 100.0 } else { 0.0 }).collect()).collect();
    let ctrl = dir.join("ctrl.json");
    std::fs::write(&ctrl, serde_json::to_string(&rows).unwrap()).unwrap();
    let run = |solver: &str, controls: bool, name: &str| {
        let mut c = torsion();
        c.args(["simulate", "--model", "superball", "--solver", solver, "--steps", &steps.to_string()]);
        if controls {
            c.arg("--controls").arg(&ctrl);
        }
        let (j, _) = simulate_json(&mut c, &dir.join(name));
        let last = j["body_poses"][steps].as_array().unwrap().clone();
        last.iter().skip(1).map(|p| [0, 1, 2].map(|i| p[i].as_f64().unwrap())).collect::<Vec<_>>()
    };
    let lowest = |p: &[[f64; 3]]| p.iter().map(|x| x[2]).fold(f64::INFINITY, f64::min);
    let (t, f, t0) =
        (run("tensegrity", true, "t.json"), run("featherstone", true, "f.json"), run("tensegrity", false, "t0.json"));
    let moved = t.iter().zip(&t0).flat_map(|(a, b)| (0..3).map(move |i| (a[i] - b[i]).abs())).fold(0.0, f64::max);
    eprintln!(
        "after 1 s: lowest rod centre {:.3} m (tensegrity), {:.3} m (featherstone); controls moved a rod {moved:.3} m",
        lowest(&t),
        lowest(&f)
    );
    assert!(lowest(&t) > 0.2, "tensegrity: {t:?}");
    assert!(lowest(&f) < 0.0, "featherstone has no floor contact: {f:?}");
    assert!(moved > 1e-3, "the controls file drives the cables");
    let sim = ["simulate", "--model", "superball", "--solver", "tensegrity", "--contact-params", "0.5,0"];
    let out = simulate_out(torsion().args(sim), &dir.join("bad.json"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("--contact-params has 2 values"), "{err}");
}

/// `torsion simulate --integrator` (issue 20 item 3): the model's `<option integrator>` is the default (an RK4 model
/// with friction loss is refused, naming the joint), `--integrator Euler` overrides it, `implicit` runs as
/// implicitfast with a warning, unknown names and other solvers are errors.
#[test]
fn simulate_integrator_option() {
    let dir = tmp("integrator");
    let model = dir.join("rk4.xml");
    std::fs::write(
        &model,
        r#"<mujoco><option timestep="0.01" integrator="RK4"/><worldbody><body><joint name="h" frictionloss="0.1"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.05"/></body></worldbody></mujoco>"#,
    )
    .unwrap();
    let run = |extra: &[&str]| {
        let out = simulate_out(
            torsion().args(["simulate", "--steps", "3", "--model"]).arg(&model).args(extra),
            &dir.join("t.json"),
        );
        (out.status.success(), String::from_utf8_lossy(&out.stderr).to_string())
    };
    let (ok, err) = run(&["--solver", "featherstone"]);
    assert!(!ok && err.contains("RK4") && err.contains("friction loss") && err.contains("'h'"), "{err}");
    for name in ["Euler", "implicitfast", "implicit"] {
        let (ok, err) = run(&["--solver", "featherstone", "--integrator", name]);
        assert!(ok, "{name}: {err}");
        assert_eq!(err.contains("runs as implicitfast"), name == "implicit", "{name}: {err}");
    }
    let (ok, err) = run(&["--solver", "featherstone", "--integrator", "rk4"]);
    assert!(!ok && err.contains("expected Euler, RK4"), "{err}");
    let (ok, err) = run(&["--solver", "ncp", "--integrator", "RK4"]);
    assert!(!ok && err.contains("--solver featherstone"), "{err}");
}
