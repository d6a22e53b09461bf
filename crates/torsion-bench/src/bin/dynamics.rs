//! Generalized-coordinate dynamics timed per call (BENCHMARKS.md "Generalized-coordinate dynamics vs Pinocchio
//! C++"): ABA, RNEA, CRBA, RNEA derivatives and ABA derivatives on two 7-DoF arms, single thread, median over
//! `--repeats` repeats of `--calls` calls each (inputs cycle through a pool of 200 random points, as Pinocchio's
//! `timings.cpp` does).
//!
//! The arms are the models Pinocchio times (`../shared/bench/pinocchio/export_models.py`): Pinocchio parses the
//! whole example-robot-data URDF and `buildReducedModel` locks every joint but the arm's 7 at the neutral
//! configuration (0), so everything attached beyond the arm (Panda's hand and fingers, Baxter's gripper) is
//! lumped into the last link. Here the same URDF is loaded with those other joints turned into fixed joints
//! (the URDF loader merges fixed links into their parent), which is the same reduction:
//!   * `panda7`: panda.urdf, `panda_joint1` … `panda_joint7` (fingers locked);
//!   * `baxter_left7`: baxter.urdf, `left_s0` … `left_w2` (head, right arm and grippers locked).
//!
//! Prints one JSON object: per model nv, joint names, total moving mass, M(q_check) (q_check[k] = 0.1 (k + 1)
//! − 0.35 in torsion's joint order, for the cross-check against Pinocchio in bench/dynamics_pinocchio.py),
//! the heap allocations per call of each algorithm, and the medians in µs.
//! Usage: cargo run --release -p torsion-bench --bin dynamics -- [--repeats N] [--calls N] [--robots DIR]
//!        [--only NAME]
use nalgebra::DMatrix;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;
use torsion_dynamics::aba_derivatives::{aba_derivatives_into, AbaDerivatives};
use torsion_dynamics::rnea_derivatives::{rnea_derivatives_into, RneaDerivatives};
use torsion_dynamics::{aba_into, crba_into, rnea_into, DynData, DynModel};
use torsion_math::alloc_count::{thread_allocations, CountingAlloc};
use torsion_model::io::robots::{example_robot_data_dir, BAXTER_URDF, PANDA_URDF};
use torsion_model::io::urdf::{load_urdf_str, UrdfOptions};
use torsion_model::Model;

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

struct Args {
    repeats: usize,
    calls: usize,
    robots: Option<PathBuf>,
    only: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args { repeats: 15, calls: 100_000, robots: None, only: None };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut val = || it.next().ok_or_else(|| format!("{k} needs a value"));
        match k.as_str() {
            "--repeats" => a.repeats = val()?.parse().map_err(|e| format!("--repeats: {e}"))?,
            "--calls" => a.calls = val()?.parse().map_err(|e| format!("--calls: {e}"))?,
            "--robots" => a.robots = Some(PathBuf::from(val()?)),
            "--only" => a.only = Some(val()?),
            "-h" | "--help" => {
                return Err("usage: dynamics [--repeats N] [--calls N (per repeat; derivatives use N/4)] \
                            [--robots example-robot-data/robots DIR] [--only aba|rnea|crba|rnea_derivatives|aba_derivatives]"
                    .into())
            }
            _ => return Err(format!("unknown argument {k}")),
        }
    }
    if a.repeats == 0 || a.calls < 4 {
        return Err("--repeats must be ≥ 1 and --calls ≥ 4".into());
    }
    Ok(a)
}

/// The URDF text with every movable joint not in `keep` turned into a fixed joint (Pinocchio's
/// `buildReducedModel` at the neutral configuration, which is 0 for revolute and prismatic joints).
fn lock_joints(text: &str, keep: &[String]) -> Result<String, String> {
    let doc = joint_type_attrs(text);
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut kept = 0;
    for (name, ty_range) in doc {
        let ty = &text[ty_range.clone()];
        if ty == "fixed" {
            continue;
        }
        if keep.contains(&name) {
            kept += 1;
            continue;
        }
        out.push_str(&text[last..ty_range.start]);
        out.push_str("fixed");
        last = ty_range.end;
    }
    out.push_str(&text[last..]);
    if kept != keep.len() {
        return Err(format!("found {kept} of the {} joints to keep {keep:?}", keep.len()));
    }
    Ok(out)
}

/// (joint name, byte range of the value of its `type` attribute) for every `<joint …>` start tag that has both.
fn joint_type_attrs(text: &str) -> Vec<(String, std::ops::Range<usize>)> {
    let mut v = vec![];
    let mut pos = 0;
    while let Some(i) = text[pos..].find("<joint") {
        let start = pos + i;
        let Some(len) = text[start..].find('>') else { break };
        let tag = &text[start..start + len];
        pos = start + len;
        let attr = |key: &str| -> Option<std::ops::Range<usize>> {
            let pat = format!(" {key}=\"");
            let a = tag.find(&pat)? + pat.len();
            let b = tag[a..].find('"')? + a;
            Some(start + a..start + b)
        };
        if let (Some(n), Some(t)) = (attr("name"), attr("type")) {
            v.push((text[n].to_string(), t));
        }
    }
    v
}

fn load_arm(dir: &Path, file: &str, keep: &[String]) -> Result<Model, String> {
    let path = dir.join(file);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let reduced = lock_joints(&text, keep).map_err(|e| format!("{}: {e}", path.display()))?;
    let label = format!("{} (joints other than {keep:?} locked)", path.display());
    load_urdf_str(&reduced, &label, &UrdfOptions::default()).map_err(|e| e.to_string())
}

fn rng(seed: u64) -> impl FnMut() -> f64 {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15).wrapping_add(7);
    move || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }
}

/// Median over `repeats` of the mean time per call (µs) of `calls` calls of `f(i)`.
fn time_us(repeats: usize, calls: usize, mut f: impl FnMut(usize)) -> (f64, f64) {
    for i in 0..calls / 10 {
        f(i); // warm-up
    }
    let mut r = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        let t0 = Instant::now();
        for i in 0..calls {
            f(i);
        }
        r.push(t0.elapsed().as_secs_f64() * 1e6 / calls as f64);
    }
    r.sort_by(|a, b| a.total_cmp(b));
    (r[r.len() / 2], r[0])
}

fn allocs_per_call(mut f: impl FnMut(usize)) -> f64 {
    f(0);
    let n = 100;
    let a0 = thread_allocations();
    for i in 0..n {
        f(i);
    }
    (thread_allocations() - a0) as f64 / n as f64
}

fn bench_model(name: &str, m: &Model, a: &Args) -> Result<serde_json::Value, String> {
    let dm: DynModel<f64> = DynModel::from_model(m).map_err(|e| e.to_string())?;
    let mut d = DynData::new(&dm);
    let nv = dm.nv;
    if dm.nq != nv {
        return Err(format!("{name}: expected only 1-DoF joints"));
    }
    const POOL: usize = 200;
    let mut r = rng(42);
    let mut pool =
        |scale: f64| -> Vec<Vec<f64>> { (0..POOL).map(|_| (0..nv).map(|_| scale * r()).collect()).collect() };
    let (qs, vs, as_, taus) = (pool(std::f64::consts::PI), pool(1.0), pool(1.0), pool(1.0));
    let mut out = vec![0.0; nv];
    let mut mm = DMatrix::zeros(nv, nv);
    let mut rd = RneaDerivatives::new(nv);
    let mut ad = AbaDerivatives::new(nv);

    let q_check: Vec<f64> = (0..nv).map(|k| 0.1 * (k + 1) as f64 - 0.35).collect();
    crba_into(&dm, &q_check, &mut d, &mut mm).map_err(|e| e.to_string())?;
    let m_check: Vec<Vec<f64>> = (0..nv).map(|i| (0..nv).map(|j| mm[(i, j)]).collect()).collect();
    let mass: f64 = (0..m.body_count()).filter(|&b| !m.body_fixed[b]).map(|b| m.body_mass[b]).sum();

    let want = |k: &str| a.only.as_deref().is_none_or(|o| o == k);
    let mut times = serde_json::Map::new();
    let mut allocs = serde_json::Map::new();
    let n = a.calls;
    macro_rules! bench {
        ($key:expr, $calls:expr, $body:expr) => {
            if want($key) {
                let mut f = $body;
                allocs.insert($key.into(), allocs_per_call(&mut f).into());
                let (med, min) = time_us(a.repeats, $calls, &mut f);
                times.insert(format!("{}_us", $key), med.into());
                times.insert(format!("{}_min_us", $key), min.into());
                eprintln!("{name}: {:>17} {med:8.3} µs (min {min:.3})", $key);
            }
        };
    }
    bench!("aba", n, |i: usize| {
        let k = i % POOL;
        aba_into(&dm, &qs[k], &vs[k], &taus[k], &mut d, &mut out).unwrap();
        black_box(&out);
    });
    bench!("rnea", n, |i: usize| {
        let k = i % POOL;
        rnea_into(&dm, &qs[k], &vs[k], &as_[k], &mut d, &mut out).unwrap();
        black_box(&out);
    });
    bench!("crba", n, |i: usize| {
        crba_into(&dm, &qs[i % POOL], &mut d, &mut mm).unwrap();
        black_box(&mm);
    });
    bench!("rnea_derivatives", n / 4, |i: usize| {
        let k = i % POOL;
        rnea_derivatives_into(&dm, &qs[k], &vs[k], &as_[k], &mut d, &mut rd).unwrap();
        black_box(&rd);
    });
    bench!("aba_derivatives", n / 4, |i: usize| {
        let k = i % POOL;
        aba_derivatives_into(&dm, &qs[k], &vs[k], &taus[k], &mut d, &mut ad).unwrap();
        black_box(&ad);
    });
    Ok(serde_json::json!({
        "nv": nv,
        "joint_names": m.joint_name,
        "total_mass": mass,
        "q_check": q_check,
        "M_check": m_check,
        "allocs_per_call": allocs,
        "times": times,
    }))
}

fn run() -> Result<serde_json::Value, String> {
    let a = parse_args()?;
    let dir = match &a.robots {
        Some(d) => d.clone(),
        None => example_robot_data_dir()
            .ok_or("example-robot-data not found: `pip install example-robot-data`, or pass --robots DIR")?,
    };
    let panda_keep: Vec<String> = (1..=7).map(|i| format!("panda_joint{i}")).collect();
    let baxter_keep: Vec<String> =
        ["s0", "s1", "e0", "e1", "w0", "w1", "w2"].iter().map(|n| format!("left_{n}")).collect();
    let mut res = serde_json::Map::new();
    for (name, file, keep) in [("panda7", PANDA_URDF, &panda_keep), ("baxter_left7", BAXTER_URDF, &baxter_keep)] {
        let m = load_arm(&dir, file, keep)?;
        res.insert(name.into(), bench_model(name, &m, &a)?);
    }
    res.insert("repeats".into(), a.repeats.into());
    res.insert("calls".into(), a.calls.into());
    Ok(res.into())
}

fn main() -> ExitCode {
    match run() {
        Ok(v) => {
            println!("{v}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("dynamics: {e}");
            ExitCode::FAILURE
        }
    }
}
