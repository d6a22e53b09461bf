//! `torsion`: command-line entry point (design.md §5): `simulate` a model with a solver, `view` trajectories
//! (HTML), run a paper `experiment` (JSON + PNG), list experiments.
mod dynamics;
mod simulate;
mod view;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser)]
#[command(name = "torsion", version, about = "torsion: a differentiable physics engine for robotics")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Simulate a URDF model and write the trajectory (joint angles, joint velocities, body poses) as JSON.
    Simulate(simulate::SimulateArgs),
    /// Write one self-contained HTML page (three.js inlined, works offline) playing back trajectories of
    /// `torsion simulate` (several: overlaid with a legend).
    View(view::ViewArgs),
    /// Evaluate M, RNEA, g, bias, ABA (and derivatives) of a URDF model at given points; prints JSON.
    Dynamics(dynamics::DynamicsArgs),
    /// List the models known by name (`--model NAME`), with where each comes from.
    Models,
    /// Run a paper experiment by name, writing DIR/NAME.json and DIR/NAME.png (and DIR/NAME.html with --html).
    Experiment {
        /// experiment name (see --list)
        name: Option<String>,
        /// output folder (`results/` is ignored by git)
        #[arg(short, long, default_value = "results")]
        out: PathBuf,
        /// reduced version (used by the tests)
        #[arg(long)]
        quick: bool,
        /// list the available experiments
        #[arg(long)]
        list: bool,
        /// also write DIR/NAME.html: one self-contained report (plot, metrics beside the paper's, targets, settings)
        #[arg(long)]
        html: bool,
    },
}

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    match Cli::parse().cmd {
        Cmd::Simulate(a) => simulate::run(&a),
        Cmd::View(a) => view::run(&a),
        Cmd::Dynamics(a) => dynamics::run(&a),
        Cmd::Models => {
            use torsion_model::io::ModelSource;
            for e in torsion_model::io::MODELS {
                let source = match e.source {
                    ModelSource::Builtin => "built in".to_string(),
                    ModelSource::ExampleRobotData(p) => format!("example-robot-data {p}"),
                    ModelSource::DmControl(s) => format!("dm_control suite {s}.xml"),
                };
                println!("{:<24} {:<62} {}", e.name, e.description, source);
            }
            Ok(())
        }
        Cmd::Experiment { name, out, quick, list, html } => {
            if list {
                for e in torsion_experiments::registry() {
                    println!("{:<20} spec {:<22} {}", e.name, e.spec, e.description);
                }
                return Ok(());
            }
            let Some(name) = name else { bail!("give an experiment name or --list") };
            let t0 = std::time::Instant::now();
            let res = torsion_experiments::run(&name, &out, quick).with_context(|| format!("experiment '{name}'"))?;
            // a short table here; the full JSON is in the file
            print!("{}", res.summary());
            eprintln!(
                "wrote {} and {} in {:.1} s",
                out.join(format!("{name}.json")).display(),
                out.join(format!("{name}.png")).display(),
                t0.elapsed().as_secs_f64()
            );
            if html {
                let path = res.write_html(&out).with_context(|| format!("experiment '{name}' HTML report"))?;
                println!("{}", path.display());
            }
            Ok(())
        }
    }
}
