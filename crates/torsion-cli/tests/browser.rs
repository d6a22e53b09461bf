//! The viewer in a real browser (issue 18 item 4): `torsion view` pages and `torsion experiment NAME --html`
//! reports (their scene viewer, item 2) loaded from file:// by headless Chromium
//! (SwiftShader WebGL). The page's `#selftest` mode writes its hook's state (`window.torsionViewer`: ready,
//! meshCount, non-blank pixels, body poses after `setFrame(k)`, visible contact arrows, errors) into
//! `<pre id="torsion-test">`, read here through `--dump-dom`. Without a browser the tests skip with a message,
//! unless CI=true (scripts/test.sh installs Debian's `chromium` there).
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn torsion() -> Command {
    Command::new(env!("CARGO_BIN_EXE_torsion"))
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("torsion-browser-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `$TORSION_CHROMIUM`, else the first of chromium / chromium-browser / google-chrome on PATH; `None` (skip) when
/// there is none and CI is not set.
fn browser() -> Option<PathBuf> {
    let found = std::env::var_os("TORSION_CHROMIUM").map(PathBuf::from).or_else(|| {
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path)
            .flat_map(|d| ["chromium", "chromium-browser", "google-chrome"].map(|b| d.join(b)))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but no chromium found (scripts/test.sh installs Debian's chromium)"
        );
        eprintln!("SKIPPED: no chromium / chromium-browser / google-chrome on PATH (apt-get install chromium)");
    }
    found
}

fn chromium(bin: &Path, extra: &[&str], url: &str) -> std::process::Output {
    Command::new(bin)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--use-gl=swiftshader", "--enable-unsafe-swiftshader"])
        .args(["--window-size=900,650", "--hide-scrollbars", "--virtual-time-budget=20000"])
        .args(extra)
        .arg(url)
        .output()
        .unwrap()
}

/// Load `page#selftest` and return what the page wrote into `<pre id="torsion-test">`.
fn self_test(bin: &Path, page: &Path) -> Value {
    let url = format!("file://{}#selftest", std::path::absolute(page).unwrap().display());
    let out = chromium(bin, &["--dump-dom"], &url);
    let dom = String::from_utf8_lossy(&out.stdout);
    let start = dom.find("<pre id=\"torsion-test\">").unwrap_or_else(|| {
        panic!("no test element in the DOM; chromium stderr:\n{}", String::from_utf8_lossy(&out.stderr))
    }) + "<pre id=\"torsion-test\">".len();
    let end = start + dom[start..].find("</pre>").unwrap();
    let text = dom[start..end].replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("self-test output is not JSON ({e}): {text}"))
}

fn simulate(args: &[&str], model: &str, out: &Path) {
    let o = torsion().arg("simulate").args(args).args(["--model", model, "--out"]).arg(out).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn view(trajs: &[&Path], model: &str, out: &Path) {
    let o = torsion().arg("view").args(trajs).args(["--model", model, "-o"]).arg(out).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The page's poses after `setFrame(k)` (trajectory 0) equal the recorded ones: positions to 1e-6 m,
/// orientations to 1e-6 (q and −q are the same rotation); returns the largest error.
fn check_poses(page: &Value, traj: &Value) -> f64 {
    let mut worst = 0.0f64;
    let poses = page["poses"].as_object().unwrap();
    assert_eq!(poses.len(), 3, "three frames checked");
    for (k, bodies) in poses {
        let k: usize = k.parse().unwrap();
        let rec = traj["body_poses"][k].as_array().unwrap();
        let bodies = bodies.as_array().unwrap();
        assert_eq!(bodies.len(), rec.len());
        for (b, (p, r)) in bodies.iter().zip(rec).enumerate() {
            let p: Vec<f64> = p.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
            let r: Vec<f64> = r.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
            let dx = (0..3).map(|i| (p[i] - r[i]).abs()).fold(0.0, f64::max);
            let norm = (3..7).map(|i| r[i] * r[i]).sum::<f64>().sqrt();
            let dq = [1.0, -1.0]
                .map(|s| (3..7).map(|i| (p[i] - s * r[i] / norm).abs()).fold(0.0, f64::max))
                .into_iter()
                .fold(f64::INFINITY, f64::min);
            assert!(dx < 1e-6 && dq < 1e-6, "frame {k} body {b}: page {p:?}, recorded {r:?}");
            worst = worst.max(dx).max(dq);
        }
    }
    worst
}

fn check_common(page: &Value) {
    assert_eq!(page["ready"], true, "the viewer did not start: {page}");
    assert!(page["errors"].as_array().unwrap().is_empty(), "page errors: {}", page["errors"]);
}

#[test]
fn baxter_page_renders_and_follows_the_trajectory() {
    let Some(bin) = browser() else { return };
    let dir = tmp("baxter");
    let traj = dir.join("baxter.json");
    simulate(&["--steps", "50"], "baxter_left_arm", &traj);
    let html = dir.join("baxter.html");
    view(&[&traj], "baxter_left_arm", &html);
    let page = self_test(&bin, &html);
    check_common(&page);
    let model = torsion_model::io::load_model("baxter_left_arm").unwrap();
    assert_eq!(page["meshCount"].as_u64(), Some(model.shapes.len() as u64), "one mesh per shape");
    assert_eq!(page["frameCount"].as_u64(), Some(51));
    // 900 × 650 window: the robot covers a good part of the scene, not a few stray pixels
    let lit = page["nonBlank"].as_u64().unwrap();
    assert!(lit > 5000, "canvas nearly blank: {lit} non-background pixels");
    let err = check_poses(&page, &json(&traj));
    eprintln!("baxter page: {} meshes, {lit} non-background pixels, max pose error {err:.1e}", page["meshCount"]);
    // joint frames on demand: one per moving joint, drawn at the child pose ∘ (anchor, frame) of the model
    let moving: Vec<usize> =
        (0..model.joint_count()).filter(|&j| model.joint_type[j] != torsion_model::JointType::Fixed).collect();
    assert_eq!(page["jointFrameCount"].as_u64(), Some(moving.len() as u64));
    let row0 = &json(&traj)["body_poses"][0];
    let mut jerr: f64 = 0.0;
    for (i, &j) in moving.iter().enumerate() {
        let f = &page["jointFrames"][i];
        assert_eq!(f["visible"], true, "joint frame {i} shown on demand");
        let p: Vec<f64> = row0[model.joint_child[j]].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        let qc = torsion_math::Quat::new(p[3], p[4], p[5], p[6]);
        let x = torsion_math::Vec3::new(p[0], p[1], p[2]) + qc.rotate(&model.joint_anchor_child[j]);
        let q = qc.mul(&model.joint_frame_child[j]).to_array();
        let got: Vec<f64> = f["pose"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
        let sign = if q.iter().zip(&got[3..]).map(|(a, b)| a * b).sum::<f64>() < 0.0 { -1.0 } else { 1.0 };
        for k in 0..3 {
            jerr = jerr.max((got[k] - [x.x, x.y, x.z][k]).abs());
        }
        for k in 0..4 {
            jerr = jerr.max((got[3 + k] - sign * q[k]).abs());
        }
    }
    assert!(jerr < 1e-5, "joint frames drawn off their joints by {jerr:e}");
    eprintln!("baxter page: {} joint frames, max error {jerr:.1e}", moving.len());
    // the screenshot (README's docs/viewer.png is made from it)
    let shot = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/viewer_baxter.png");
    let url = format!("file://{}#frame=50", std::path::absolute(&html).unwrap().display());
    let out = chromium(&bin, &[&format!("--screenshot={}", shot.display())], &url);
    assert!(out.status.success() && shot.is_file(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn two_box_ncp_pages_show_contacts_and_overlay() {
    let Some(bin) = browser() else { return };
    let dir = tmp("boxes");
    let xml = dir.join("boxes.xml");
    std::fs::write(&xml, include_str!("data/two_boxes.xml")).unwrap();
    let model = xml.to_str().unwrap();
    let (a, b) = (dir.join("a.json"), dir.join("b.json"));
    simulate(&["--solver", "ncp", "--steps", "60"], model, &a);
    // the same scene with the upper box thrown sideways: a second trajectory to overlay
    let v0 = "0,0,0,0,0,0,0,0,0,1.5,0,0";
    simulate(&["--solver", "ncp", "--steps", "40", "--v0", v0], model, &b);
    let html = dir.join("boxes.html");
    view(&[&a, &b], model, &html);
    let page = self_test(&bin, &html);
    check_common(&page);
    // the floor once, each box once per trajectory
    assert_eq!(page["meshCount"].as_u64(), Some(1 + 2 * 2));
    assert_eq!(page["frameCount"].as_u64(), Some(61), "the longer trajectory");
    assert!(page["nonBlank"].as_u64().unwrap() > 5000);
    let ta = json(&a);
    let err = check_poses(&page, &ta);
    // one arrow per recorded contact of trajectory 0 at each checked frame
    let shown = page["contacts"].as_object().unwrap();
    for (k, n) in shown {
        let k: usize = k.parse().unwrap();
        assert_eq!(n.as_u64().unwrap() as usize, ta["contacts"][k].as_array().unwrap().len(), "frame {k}");
    }
    assert!(shown["60"].as_u64().unwrap() > 0, "resting boxes have contacts at the last frame");
    eprintln!("two-box page: contacts shown {shown:?}, max pose error {err:.1e}");
}

#[test]
fn superball_page_draws_its_cables_at_the_sites() {
    // SUPERball (6 rods, 24 cables; featherstone steps cables): one line per cable, its ends at the two sites
    // posed by the recorded body poses (float32 vertex buffer: 1e-6 m)
    let Some(bin) = browser() else { return };
    let dir = tmp("superball");
    let traj = dir.join("superball.json");
    simulate(&["--solver", "featherstone", "--steps", "30"], "superball", &traj);
    let html = dir.join("superball.html");
    view(&[&traj], "superball", &html);
    let page = self_test(&bin, &html);
    check_common(&page);
    let model = torsion_model::io::load_model("superball").unwrap();
    assert_eq!(page["meshCount"].as_u64(), Some(model.shapes.len() as u64));
    assert_eq!(page["cableCount"].as_u64(), Some(model.cables.len() as u64));
    assert!(!model.cables.is_empty());
    check_poses(&page, &json(&traj));
    let t = json(&traj);
    let mut worst = 0.0f64;
    for (k, ends) in page["cableEnds"].as_object().unwrap() {
        let k: usize = k.parse().unwrap();
        for (c, cable) in model.cables.iter().enumerate() {
            for e in 0..2 {
                let p: Vec<f64> =
                    t["body_poses"][k][cable.body[e]].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
                let q = torsion_math::Quat::new(p[3], p[4], p[5], p[6]);
                let want = q.rotate(&cable.site[e]) + torsion_math::Vec3::new(p[0], p[1], p[2]);
                let got = &ends[c][e];
                for i in 0..3 {
                    worst = worst.max((got[i].as_f64().unwrap() - want[i]).abs());
                }
            }
        }
    }
    eprintln!("superball page: {} cables, max cable end error {worst:.1e} m", model.cables.len());
    assert!(worst < 1e-6, "cable ends off the sites by {worst} m");
}

/// `torsion experiment NAME --quick --html` (issue 18 item 2): the report page embeds the viewer of the
/// experiment's scene; the viewer starts, makes one mesh per shape (the world's once, the others once per run),
/// puts the bodies at the poses the experiment recorded (the same deterministic run, made here in-process) and
/// logs no error.
fn experiment_page_shows_its_scene(name: &str) -> Value {
    let Some(bin) = browser() else { return Value::Null };
    let dir = tmp(name);
    let o = torsion().args(["experiment", name, "--quick", "--html", "--out"]).arg(&dir).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let page = self_test(&bin, &dir.join(format!("{name}.html")));
    check_common(&page);
    let e = torsion_experiments::registry().into_iter().find(|e| e.name == name).unwrap();
    let res = (e.run)(true).unwrap();
    let scene = res.scene.as_ref().expect("the experiment has a scene");
    let runs = scene.trajectories.len();
    assert_eq!(page["meshCount"].as_u64(), Some(torsion_view::mesh_count(&scene.model, runs) as u64));
    let frames = scene.trajectories.iter().map(|t| t.time.len()).max().unwrap();
    assert_eq!(page["frameCount"].as_u64(), Some(frames as u64));
    assert!(page["nonBlank"].as_u64().unwrap() > 5000, "canvas nearly blank");
    let err = check_poses(&page, &serde_json::json!({ "body_poses": scene.trajectories[0].body_poses }));
    eprintln!("{name} report: {runs} runs, {} meshes, {frames} frames, max pose error {err:.1e}", page["meshCount"]);
    page
}

#[test]
fn jade_cube_push_report_shows_the_scene() {
    let page = experiment_page_shows_its_scene("jade-cube-push");
    if page.is_null() {
        return;
    }
    // the floor once, the two cubes once per restitution; the lcp contacts drawn at the last frame (at rest)
    assert_eq!(page["meshCount"].as_u64(), Some(1 + 2 * 2));
    assert!(page["contacts"]["150"].as_u64().unwrap() > 0);
}

#[test]
fn ncp_friction_id_report_shows_the_scene() {
    let page = experiment_page_shows_its_scene("ncp-friction-id");
    if page.is_null() {
        return;
    }
    // the cube on the floor, ground truth and identified: contacts drawn (the cube slides on its face)
    assert_eq!(page["meshCount"].as_u64(), Some(1 + 2));
    assert!(page["contacts"]["0"].as_u64() == Some(0) && page["contacts"]["30"].as_u64().unwrap() > 0);
}
