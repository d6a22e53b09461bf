//! `jade-sliding-prisms` — spec 004 §4.3 task 1 (issue 17 item 6): prisms with 3, 4 and 6 base vertices (convex
//! meshes written as OBJ files, collided as their hulls) slide on a floor plane from 2 m/s with μ = 0.16 (floor
//! and prism), Δt = 0.01, g = 9.81, 150 steps, under the `lcp` stepper (Jade's Dantzig, PGS fallback). Measured:
//! the fitted slope of v_x per step while sliding against −μ g Δt, the stop time against v₀ / (μ g), the steps
//! whose LCP had no valid answer (a `NoSolution` error: never a silent frictionless step) and those PGS answered,
//! and the validity rates (§3.3) of the baseline Dantzig, PGS, Jade's Dantzig and the enumeration oracle (≤ 4
//! contacts) on every logged step LCP and on random frictional LCPs with 3–6 contacts (`lcp::random`, §4.5).
use crate::ncp_scene::panels_result;
use crate::plot::{color, Mark, Panel, Series, PAPER, TRUTH};
use crate::result::{Check, ExperimentError, ExperimentResult};
use crate::scene::{lcp_normal_impulses, Recorder, SceneView};
use serde_json::json;
use std::path::Path;
use torsion_model::{Control, GenState, Model};
use torsion_solvers::lcp::oracle::{enumerate, ORACLE_MAX_CONTACTS};
use torsion_solvers::lcp::random::random_contact_lcp;
use torsion_solvers::lcp::{solve_baseline, solve_jade, solve_pgs, BoxedLcp, JadeOptions, LcpSolver, PgsOptions};
use torsion_solvers::{LcpOptions, Solver};

pub const MU: f64 = 0.16;
pub const G: f64 = 9.81;
pub const DT: f64 = 0.01;
pub const STEPS: usize = 150;
pub const V0: f64 = 2.0;
/// base vertices of the prisms
pub const SIDES: [usize; 3] = [3, 4, 6];
/// circumradius of the base polygon and height, m; mass, kg
pub const RADIUS: f64 = 0.1;
pub const HEIGHT: f64 = 0.1;
pub const MASS: f64 = 1.0;
/// radius of the contact spheres at the base vertices of the `feet` variant, m
pub const FOOT: f64 = 0.002;
/// random LCPs (3–6 contacts) and, among those with ≤ 4 contacts, how many the oracle enumerates (full, quick)
pub const RANDOM: usize = 1000;
const ORACLE_RANDOM: [usize; 2] = [500, 20];
/// the oracle on every k-th logged LCP (full, quick)
const ORACLE_STRIDE: [usize; 2] = [1, 30];
const VTOL: f64 = 1e-6;

/// OBJ text of a right prism: a regular `n`-gon of circumradius `r` (a vertex on +x) extruded over z ∈ [−h/2,
/// h/2], centred at its centroid (the loaders take mesh vertices in the shape frame as given).
pub fn prism_obj(n: usize, r: f64, h: f64) -> String {
    let mut s = String::new();
    for z in [-0.5 * h, 0.5 * h] {
        for k in 0..n {
            let a = 2.0 * std::f64::consts::PI * k as f64 / n as f64;
            s += &format!("v {} {} {}\n", r * a.cos(), r * a.sin(), z);
        }
    }
    let idx = |k: usize| (k % n) + 1;
    s += &format!("f {}\n", (0..n).rev().map(|k| idx(k).to_string()).collect::<Vec<_>>().join(" "));
    s += &format!("f {}\n", (0..n).map(|k| (idx(k) + n).to_string()).collect::<Vec<_>>().join(" "));
    for k in 0..n {
        s += &format!("f {} {} {} {}\n", idx(k), idx(k + 1), idx(k + 1) + n, idx(k) + n);
    }
    s
}

/// Principal moments of a uniform right prism on a regular n-gon (circumradius r, height h): the polygon's polar
/// moment per unit mass is r² (1 + 2 cos²(π/n)) / 6, split equally between x and y by symmetry.
pub fn prism_inertia(n: usize, r: f64, h: f64, m: f64) -> [f64; 3] {
    let c = (std::f64::consts::PI / n as f64).cos();
    let j = r * r * (1.0 + 2.0 * c * c) / 6.0;
    [m * (0.5 * j + h * h / 12.0), m * (0.5 * j + h * h / 12.0), m * j]
}

/// A free prism over a floor plane (both with friction μ: the pair uses the larger value), its OBJ written into
/// `dir`. `feet`: the mesh does not collide and a sphere of radius [`FOOT`] sits inside each base vertex
/// (touching the floor at it): one contact per base vertex, where parry's hull–plane manifold keeps at most 4
/// points of a face (a hexagonal base gets 4 contacts and the prism spins; recorded in the metrics).
pub fn prism_model(n: usize, mu: f64, dir: &Path, feet: bool) -> Result<Model, ExperimentError> {
    std::fs::create_dir_all(dir).map_err(|source| ExperimentError::Io { path: dir.into(), source })?;
    let file = dir.join(format!("prism{n}.obj"));
    std::fs::write(&file, prism_obj(n, RADIUS, HEIGHT))
        .map_err(|source| ExperimentError::Io { path: file.clone(), source })?;
    let [ix, iy, iz] = prism_inertia(n, RADIUS, HEIGHT, MASS);
    let (mut mesh_flags, mut spheres) = (String::new(), String::new());
    if feet {
        mesh_flags = r#" contype="0" conaffinity="0""#.into();
        for k in 0..n {
            let a = 2.0 * std::f64::consts::PI * k as f64 / n as f64;
            let (x, y, z) = ((RADIUS - FOOT) * a.cos(), (RADIUS - FOOT) * a.sin(), FOOT - 0.5 * HEIGHT);
            spheres += &format!(r#"<geom type="sphere" size="{FOOT}" pos="{x} {y} {z}" mass="0" friction="{mu}"/>"#);
        }
    }
    let xml = format!(
        r#"<mujoco><option gravity="0 0 -{G}" timestep="{DT}"/>
        <asset><mesh name="prism" file="prism{n}.obj"/></asset>
        <worldbody><geom type="plane" size="50 50 0.1" friction="{mu}"/>
        <body><freejoint/><inertial pos="0 0 0" mass="{MASS}" diaginertia="{ix} {iy} {iz}"/>
        <geom type="mesh" mesh="prism" friction="{mu}"{mesh_flags}/>{spheres}</body></worldbody></mujoco>"#
    );
    Ok(torsion_model::io::mjcf::load_mjcf_str(&xml, &format!("prism{n}.xml"), Some(dir))?)
}

/// One prism's run: v_x per step, contact counts, the logged step LCPs, the steps PGS answered and the failure
/// (a step whose LCP had no valid answer ends the run).
pub struct Slide {
    pub vx: Vec<f64>,
    pub max_omega: f64,
    pub contacts: Vec<usize>,
    pub lcps: Vec<BoxedLcp>,
    pub pgs_steps: Vec<usize>,
    pub failure: Option<String>,
}

pub fn slide(m: &Model, solver: &LcpSolver, v0: f64, steps: usize) -> Result<Slide, ExperimentError> {
    slide_recorded(m, solver, v0, steps, None)
}

/// [`slide`], also recording the run with its contacts into `rec` (the viewer's scene).
fn slide_recorded(
    m: &Model,
    solver: &LcpSolver,
    v0: f64,
    steps: usize,
    mut rec: Option<&mut Recorder>,
) -> Result<Slide, ExperimentError> {
    let mut ws = solver.workspace(m)?;
    let mut q = m.qpos0.clone();
    q[2] = 0.5 * HEIGHT;
    let mut v = vec![0.0; m.nv()];
    v[3] = v0; // free joint: (ω, v) in the body frame, here the world's (no rotation)
    let mut s = GenState::new(q, v);
    let mut out = s.clone();
    let u = Control::zeros(m.nv());
    let mut r =
        Slide { vx: vec![v0], max_omega: 0.0, contacts: vec![], lcps: vec![], pgs_steps: vec![], failure: None };
    if let Some(rec) = rec.as_deref_mut() {
        rec.gen(0.0, &s, &[])?;
    }
    for k in 0..steps {
        match solver.step(m, &s, &u, DT, &mut out, &mut ws, None) {
            Ok(info) => {
                if info.solver == "lcp/pgs" {
                    r.pgs_steps.push(k);
                }
                r.contacts.push(info.contacts);
                if let Some(st) = &ws.report.step {
                    r.lcps.push(st.lcp.clone());
                }
            }
            Err(e) => {
                r.failure = Some(format!("step {k}: {e}"));
                break;
            }
        }
        std::mem::swap(&mut s, &mut out);
        if let Some(rec) = rec.as_deref_mut() {
            rec.gen((k + 1) as f64 * DT, &s, &[])?;
            rec.contacts(&ws.frames, &lcp_normal_impulses(&ws));
        }
        r.vx.push(s.v[3]);
        r.max_omega = r.max_omega.max(s.v[..3].iter().map(|w| w.abs()).fold(0.0, f64::max));
    }
    Ok(r)
}

/// Least-squares line through `pts`: (slope, intercept).
pub fn sliding_line(pts: &[(f64, f64)]) -> (f64, f64) {
    let n = pts.len() as f64;
    let (mx, my) = (pts.iter().map(|p| p.0).sum::<f64>() / n, pts.iter().map(|p| p.1).sum::<f64>() / n);
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    let slope = sxy / sxx;
    (slope, my - slope * mx)
}

/// Least-squares slope of (k, v_k) per step over the steps k ≥ 1 while v_k > 0.
pub fn sliding_slope(vx: &[f64]) -> f64 {
    let pts: Vec<(f64, f64)> = (1..vx.len()).take_while(|&k| vx[k] > 1e-9).map(|k| (k as f64, vx[k])).collect();
    sliding_line(&pts).0
}

/// Valid answers of (baseline, PGS, Jade, oracle) on `lcps`, the oracle on every `stride`-th LCP with ≤ 4
/// contacts (at most `oracle_max` of them); and how many the oracle saw.
fn validity(lcps: &[BoxedLcp], stride: usize, oracle_max: usize) -> ([usize; 4], usize) {
    let (o, p) = (JadeOptions::default(), PgsOptions::default());
    let mut valid = [0usize; 4];
    let mut oracle_n = 0;
    for (i, l) in lcps.iter().enumerate() {
        valid[0] += solve_baseline(l, &o).ok() as usize;
        valid[1] += solve_pgs(l, &p, None).ok() as usize;
        valid[2] += solve_jade(l, &o).ok() as usize;
        if l.len() / 3 <= ORACLE_MAX_CONTACTS && i % stride == 0 && oracle_n < oracle_max {
            oracle_n += 1;
            valid[3] += enumerate(l, VTOL).map(|s| !s.solutions.is_empty()).unwrap_or(false) as usize;
        }
    }
    (valid, oracle_n)
}

fn rates(valid: [usize; 4], n: usize, oracle_n: usize) -> serde_json::Value {
    let r = |k: usize, d: usize| if d == 0 { serde_json::Value::Null } else { json!(valid[k] as f64 / d as f64) };
    json!({"baseline_dantzig": r(0, n), "pgs": r(1, n), "jade": r(2, n), "oracle": r(3, oracle_n),
           "lcps": n, "oracle_lcps": oracle_n})
}

pub fn run(quick: bool) -> Result<ExperimentResult, ExperimentError> {
    let t0 = std::time::Instant::now();
    let q = quick as usize;
    let dir = std::env::temp_dir().join(format!("torsion-jade-prisms-{}", std::process::id()));
    let solver = LcpSolver::new(LcpOptions::default());
    let want = -MU * G * DT;
    let stop_analytic = V0 / (MU * G);
    let (mut per, mut series, mut logged) = (serde_json::Map::new(), vec![], vec![]);
    let (mut worst_slope, mut invalid, mut pgs_steps, mut worst_stop) = (0f64, 0usize, 0usize, 0f64);
    let mut contacts_ok = true;
    let mut shown = vec![];
    for n in SIDES {
        // the hexagon on contact spheres at its six base vertices (see `prism_model`)
        let m = prism_model(n, MU, &dir, n > 4)?;
        // the scene: the hexagon on its contact spheres, beside the plain hull below
        let mut rec = (n == 6).then(|| Recorder::new("hexagon on 6 contact spheres", &m)).transpose()?;
        let r = slide_recorded(&m, &solver, V0, STEPS, rec.as_mut())?;
        if let Some(rec) = rec {
            shown.push((m.clone(), rec.finish()));
        }
        let slope = sliding_slope(&r.vx);
        let rel = ((slope - want) / want).abs();
        let stop = r.vx.iter().position(|&v| v <= 1e-9).map(|k| k as f64 * DT).unwrap_or(f64::NAN);
        let n_contacts = r.contacts.iter().copied().max().unwrap_or(0);
        contacts_ok &= r.contacts.iter().all(|&c| c == n);
        worst_slope = worst_slope.max(if slope.is_finite() { rel } else { f64::INFINITY });
        worst_stop = worst_stop.max((stop - stop_analytic).abs());
        invalid += r.failure.is_some() as usize;
        pgs_steps += r.pgs_steps.len();
        per.insert(
            format!("{n}_vertices"),
            json!({"slope_per_step": slope, "slope_rel_error": rel, "stop_time_s": stop, "contacts": n_contacts,
                   "lcp_dim": 3 * n_contacts, "steps_run": r.contacts.len(), "pgs_steps": r.pgs_steps,
                   "shape": if n > 4 { "mesh (no collision) + 6 contact spheres at the base vertices" } else { "convex mesh" },
                   "max_abs_omega": r.max_omega, "failure": r.failure}),
        );
        series.push((
            format!("{n} base vertices"),
            r.vx.iter().enumerate().map(|(k, &v)| (k as f64 * DT, v)).collect::<Vec<_>>(),
        ));
        logged.extend(r.lcps);
    }
    // the hexagonal prism as a plain convex mesh: parry's face manifold keeps 4 of its 6 base vertices
    let hull6_model = prism_model(6, MU, &dir, false)?;
    let mut rec = Recorder::new("hexagon as a convex hull (4 contacts)", &hull6_model)?;
    let hull6 = slide_recorded(&hull6_model, &solver, V0, STEPS, Some(&mut rec))?;
    // drawn in the model with the spheres (the same two bodies); its mesh file read before the folder goes
    let scene = match shown.pop() {
        Some((m, t)) => Some(SceneView::new(m, vec![t, rec.finish()])?),
        None => None,
    };
    let _ = std::fs::remove_dir_all(&dir);
    let hull6 = json!({"contacts": hull6.contacts.iter().max(), "slope_per_step": sliding_slope(&hull6.vx),
        "max_abs_omega": hull6.max_omega, "failure": hull6.failure,
        "note": "parry's convex-hull–plane contact manifold keeps at most 4 points of the base face: 4 off-centre contacts, the prism spins (not in the checks)"});
    let (lv, lo) = validity(&logged, ORACLE_STRIDE[q], usize::MAX);
    let random: Vec<BoxedLcp> =
        (0..RANDOM as u64).map(|s| random_contact_lcp(70_000 + s, 3 + (s % 4) as usize)).collect();
    let (rv, ro) = validity(&random, 1, ORACLE_RANDOM[q]);
    let rate = |v: [usize; 4], k: usize, n: usize| v[k] as f64 / n.max(1) as f64;
    let metrics = json!({
        "slope_rel_error": worst_slope,
        "invalid_lcp_steps": invalid,
        "pgs_fallback_steps": pgs_steps,
        "expected_slope_per_step": want,
        "expected_slope_per_s": -MU * G,
        "stop_time_analytic_s": stop_analytic,
        "max_stop_time_error_s": worst_stop,
        "prisms": per,
        "hexagon_as_mesh_hull": hull6,
        "validity_rates": {"logged": rates(lv, logged.len(), lo), "random": rates(rv, random.len(), ro)},
        "wall_clock_s": t0.elapsed().as_secs_f64(),
    });
    let paper = json!({
        "slope_rel_error": 0.021,
        "slope_per_step": -0.0147,
        "correct_slope_per_step": -0.0144,
        "claim": "Fig. 12: prisms slide from 2 m/s and stop; fitted slope −0.0147 vs −0.0144 per step (2.1 %); g not given",
        "nimble": "Nimble (issue 17, nimblephysics 0.10.52): a free box sliding at 2 m/s, μ = 0.16 has an invalid LCP in 150 of 150 steps and silently falls back to frictionless",
        "validity_rates": "not reported in the paper (spec 004 §4); ours per §4.5",
    });
    let settings = json!({
        "quick": quick, "mu": MU, "g": G, "dt": DT, "steps": STEPS, "v0": V0, "sides": SIDES,
        "prism": {"circumradius_m": RADIUS, "height_m": HEIGHT, "mass_kg": MASS, "shape": "convex OBJ mesh (hull), a vertex on +x, sliding along +x"},
        "stepper": "lcp (Jade's Dantzig → PGS 10,000 sweeps; parallel position update; DCD, margin 0.01 m)",
        "slope_fit": "least squares of v_x against the step index over steps k ≥ 1 while v_x > 0",
        "validity": format!("§3.3 check at {VTOL}; PGS {} sweeps; oracle on ≤ {ORACLE_MAX_CONTACTS} contacts, every {}-th logged LCP and the first {} random ones with ≤ 4 contacts", PgsOptions::default().max_sweeps, ORACLE_STRIDE[q], ORACLE_RANDOM[q]),
        "random_lcps": format!("lcp::random::random_contact_lcp(70000 + s, 3 + s mod 4), s < {RANDOM}"),
    });
    // Fig. 12: v_x per step of each prism; the exact line v₀ − μgt and the paper's fit (2.1 % steeper) dashed
    let line = |k: f64| -> Vec<(f64, f64)> {
        (0..=STEPS).map(|i| (i as f64 * DT, (V0 - k * MU * G * i as f64 * DT).max(0.0))).collect()
    };
    let mut panel = Panel::new("sliding prisms, μ = 0.16 (Fig. 12): v_x, lcp stepper", "t (s)", "v_x (m/s)");
    for (i, (label, pts)) in series.into_iter().enumerate() {
        panel = panel.series(Series::line(label, pts, color(i)));
    }
    let panel = panel.series(Series::new("exact: v₀ − μ g t", line(1.0), Mark::Dashed, TRUTH)).series(Series::new(
        "paper's fitted slope (−0.0147 / step, 2.1 % steep)",
        line(1.021),
        Mark::Dashed,
        PAPER,
    ));
    let checks = vec![
        Check::le("slope_rel_error (worst prism)", worst_slope, 0.021).note("the paper's 2.1 %"),
        Check::le("invalid_lcp_steps", invalid as f64, 0.0),
        Check::holds("every prism touches the floor with all its base vertices (3, 4, 6 contacts)", contacts_ok),
        Check::le("|stop time − v₀/(μg)| (s, worst prism)", worst_stop, DT),
        Check::holds("on the logged LCPs Jade is valid at least as often as the baseline Dantzig", lv[2] >= lv[0]),
        Check::ge("oracle validity rate on the logged LCPs (≤ 4 contacts)", rate(lv, 3, lo), 1.0),
        Check::holds(
            "on random LCPs Jade is valid at least as often as the baseline Dantzig and PGS",
            rv[2] >= rv[0] && rv[2] >= rv[1],
        ),
    ];
    let mut res = panels_result("jade-sliding-prisms", metrics, paper, settings, vec![panel]).with_checks(checks);
    res.scene = scene;
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The square prism's moments equal a box's (side r√2, MuJoCo's box formula); the OBJ has 2n vertices and
    /// n + 2 faces.
    #[test]
    fn square_prism_is_a_box() {
        let a = RADIUS * 2f64.sqrt() / 2.0;
        let b = torsion_model::ShapeKind::Box { half_extents: torsion_math::Vec3::new(a, a, 0.5 * HEIGHT) };
        let want = b.inertia_diag(MASS).unwrap();
        let got = prism_inertia(4, RADIUS, HEIGHT, MASS);
        // the box's axes are the prism's turned by 45° about z: equal x / y moments, so no difference
        for (g, w) in got.iter().zip([want.x, want.y, want.z]) {
            assert!((g - w).abs() < 1e-15, "{got:?} vs {want:?}");
        }
        let obj = prism_obj(6, RADIUS, HEIGHT);
        assert_eq!(obj.lines().filter(|l| l.starts_with("v ")).count(), 12);
        assert_eq!(obj.lines().filter(|l| l.starts_with("f ")).count(), 8);
    }
}
