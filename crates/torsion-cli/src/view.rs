//! `torsion view`: trajectories of `torsion simulate` → one self-contained HTML page (torsion-view, issue 18).
use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ViewArgs {
    /// trajectory JSON files of `torsion simulate` (several: overlaid, each with its colour)
    #[arg(required = true)]
    pub trajectories: Vec<PathBuf>,
    #[command(flatten)]
    pub src: crate::simulate::ModelArgs,
    /// a folder where `package://NAME/…` mesh names are looked up (as for `simulate`); repeatable
    #[arg(long = "package-dir", value_name = "DIR")]
    pub package_dirs: Vec<PathBuf>,
    /// page title (default: the model's name)
    #[arg(long)]
    pub title: Option<String>,
    /// output HTML (its folder is created)
    #[arg(short, long, default_value = "results/view.html")]
    pub out: PathBuf,
}

pub fn run(a: &ViewArgs) -> Result<()> {
    let model = a.src.load()?;
    let trajs = a.trajectories.iter().map(|p| torsion_view::Trajectory::read(p)).collect::<Result<Vec<_>, _>>()?;
    let opts = torsion_view::ViewOptions { title: a.title.clone(), package_dirs: a.package_dirs.clone() };
    torsion_view::write_page(&a.out, &model, &trajs, &opts)
        .with_context(|| format!("torsion view --model {}", a.src.model.display()))?;
    eprintln!(
        "wrote {} ({} trajectories, {} shapes; open it in a browser)",
        a.out.display(),
        trajs.len(),
        model.shapes.len()
    );
    Ok(())
}
