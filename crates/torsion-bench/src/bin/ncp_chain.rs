//! One ncp step on a long hinge chain (issue 20's scaling cliff): n links hanging from a fixed base, hinges
//! alternating about x and y, swinging into a few hand-placed wall contacts (the tip, then links spread along the
//! chain; `ncp::chain`), no collision detection. Times the workspace build and one `step_with_contacts` (median of
//! `--repeats`) per size, and the log-log growth slope of the step time, for `MassSolve::Auto` (the
//! articulated-body solve on these chains) and with `--ltl` also the sparse LTL factorisation (the step before
//! issue 20's fix). Usage: cargo run --release -p torsion-bench --bin ncp_chain -- [--sizes 100,200,400,1000]
//! [--contacts 2] [--repeats 3] [--ltl]
use serde_json::json;
use std::process::ExitCode;
use std::time::Instant;
use torsion_bench::{finish, loglog_slope as slope, median};
use torsion_solvers::contact::prelude::MassSolve;
use torsion_solvers::contact::ContactStep;
use torsion_solvers::ncp::chain::{chain_contacts, chain_state, hanging_chain};
use torsion_solvers::ncp::{NcpOptions, NcpSolver};

fn arg<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).map(|s| s.as_str())
}

fn run() -> Result<serde_json::Value, String> {
    let args: Vec<String> = std::env::args().collect();
    let sizes: Vec<usize> = arg(&args, "--sizes")
        .unwrap_or("100,200,400,1000")
        .split(',')
        .map(|s| s.parse().map_err(|e| format!("--sizes: {e}")))
        .collect::<Result<_, _>>()?;
    let k: usize = arg(&args, "--contacts").map_or(Ok(2), |s| s.parse().map_err(|e| format!("--contacts: {e}")))?;
    let repeats: usize = arg(&args, "--repeats").map_or(Ok(3), |s| s.parse().map_err(|e| format!("--repeats: {e}")))?;
    let modes: &[(&str, MassSolve)] = if args.iter().any(|a| a == "--ltl") {
        &[("auto", MassSolve::Auto), ("ltl", MassSolve::Ltl)]
    } else {
        &[("auto", MassSolve::Auto)]
    };
    let mut rows = vec![];
    let mut slopes = serde_json::Map::new();
    for &(mode, mass_solve) in modes {
        let (mut ns, mut ts) = (vec![], vec![]);
        for &n in &sizes {
            let m = hanging_chain(n);
            let contacts = chain_contacts(n, k);
            let solver = NcpSolver::new(NcpOptions::default());
            let t = Instant::now();
            let mut ws = solver.contact_workspace(&m).map_err(|e| e.to_string())?;
            ws.mass_solve = mass_solve;
            let ws_s = t.elapsed().as_secs_f64();
            let s = chain_state(n);
            let u = vec![0.0; n];
            let mut out = s.clone();
            let mut times = vec![];
            let (mut passes, mut last_lambda) = (0, vec![]);
            for _ in 0..repeats {
                let t = Instant::now();
                let r = solver
                    .step_with_contacts(&ContactStep::new(&m, &s, &u, 0.005, &contacts), &mut ws, &mut out)
                    .map_err(|e| e.to_string())?;
                times.push(t.elapsed().as_secs_f64());
                passes = r.qp.len();
                last_lambda = r.lambda_n;
            }
            let step_s = median(&times);
            eprintln!("{mode}, n = {n}: workspace {ws_s:.3} s, step {step_s:.5} s ({passes} passes)");
            ns.push(n as f64);
            ts.push(step_s);
            rows.push(json!({"mass_solve": mode, "n": n, "contacts": k, "workspace_s": ws_s, "step_s": step_s,
            "passes": passes, "lambda_n": last_lambda}));
        }
        slopes.insert(mode.into(), json!(if ns.len() > 1 { slope(&ns, &ts) } else { f64::NAN }));
    }
    Ok(json!({"rows": rows, "slope": slopes}))
}

fn main() -> ExitCode {
    finish("ncp_chain", run())
}
