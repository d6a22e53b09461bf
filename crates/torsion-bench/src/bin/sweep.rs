//! Randomized sweep per solver (issue 20 item 5; `torsion_bench::sweep`):
//!   sweep [--solver NAME|all] [--scenes N (10000)] [--seed S (1)]
//! Prints the counts per solver as JSON; fails if any solver had a non-finite output that no error reported
//! or a panic.
use indicatif::{ProgressBar, ProgressStyle};
use std::process::ExitCode;
use torsion_bench::sweep::{sweep, SOLVERS};

fn run() -> Result<serde_json::Value, String> {
    let (mut solvers, mut scenes, mut seed) = (vec![], 10_000usize, 1u64);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--solver" => match val()?.as_str() {
                "all" => solvers.extend(SOLVERS.iter().map(|s| s.to_string())),
                s => solvers.push(s.to_string()),
            },
            "--scenes" => scenes = val()?.parse().map_err(|e| format!("--scenes: {e}"))?,
            "--seed" => seed = val()?.parse().map_err(|e| format!("--seed: {e}"))?,
            _ => return Err(format!("unknown argument '{a}' (--solver NAME|all, --scenes N, --seed S)")),
        }
    }
    if solvers.is_empty() {
        solvers.extend(SOLVERS.iter().map(|s| s.to_string()));
    }
    let mut report = serde_json::Map::new();
    let mut bad = vec![];
    for s in &solvers {
        let bar = ProgressBar::new(scenes as u64).with_message(s.clone());
        bar.set_style(
            ProgressStyle::with_template("{msg:>12} [{elapsed_precise}] {wide_bar} {pos}/{len} ({eta})")
                .map_err(|e| e.to_string())?,
        );
        let t = std::time::Instant::now();
        let c = sweep(s, scenes, seed, || bar.inc(1))?;
        bar.finish();
        if c.unreported() > 0 {
            bad.push(s.clone());
        }
        let mut j = c.to_json();
        j["seconds"] = serde_json::json!(t.elapsed().as_secs_f64());
        report.insert(s.clone(), j);
    }
    println!("{}", serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?);
    if bad.is_empty() {
        Ok(serde_json::Value::Null)
    } else {
        Err(format!("non-finite outputs without an error, or panics: {}", bad.join(", ")))
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sweep: {e}");
            ExitCode::FAILURE
        }
    }
}
