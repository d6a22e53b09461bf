//! Tangent Jacobians of the contact step (spec 001 §3.8–3.10, forward mode through the reduced KKT systems)
//! against central finite differences of the step itself, away from contact-mode switches: a box sliding on
//! four corners (A, B, the box mass, μ), a box landing with restitution and slip (A, B, ε, μ), and a two-box
//! impact with friction.
mod common;
use common::{add_free_body, floor_frame, free_boxes};
use nalgebra::DMatrix;
use torsion_diff::rel_err;
use torsion_math::{Mat3, Quat, Vec3};
use torsion_model::builder::ModelBuilder;
use torsion_model::{Model, ParamSelection};
use torsion_solvers::contact::{ContactGeom, ContactStep};
use torsion_solvers::ncp::{ContactFrame, NcpOptions, NcpSolver};
use torsion_solvers::GenState;
use torsion_solvers::{DiffSolver, FeatherstoneSolver};

const HE: f64 = 0.1;
const DT: f64 = 0.01;

/// Free cubes of half-extent HE, box k of mass 2 + k.
fn boxes(n: usize, gravity: Vec3) -> Model {
    free_boxes(n, gravity, DT, HE, |k| 2.0 + k as f64)
}

/// Three material points of box 0's bottom face, a triangle around the COM's projection, as contacts with the
/// floor z = 0 (the same points at any nearby state: a fixed contact set, as the Jacobians assume). Three, not
/// the four corners: with four, G_n has rank 3, λ_n is not unique, and with any spin the per-contact friction
/// radii μλ_n(i) — hence v⁺ — depend on how λ_n is shared, so finite differences are ill-posed.
fn floor(m: &Model, s: &GenState, mu: f64, eps: f64) -> Vec<ContactFrame> {
    bottom_points(m, s, mu, eps, &[(-1.0, -1.0), (1.0, -1.0), (0.0, 1.0)])
}

/// Material points (x, y) · HE of box 0's bottom face as floor contacts.
fn bottom_points(m: &Model, s: &GenState, mu: f64, eps: f64, pts: &[(f64, f64)]) -> Vec<ContactFrame> {
    let (x, r) = m.forward_kinematics(&s.q).unwrap()[1];
    pts.iter()
        .enumerate()
        .map(|(i, c)| floor_frame(1, x + r.rotate(&Vec3::new(c.0 * HE, c.1 * HE, -HE)), mu, eps, i as u64))
        .collect()
}

/// Central differences of the step in tangent coordinates, column by column, along `perturb(h)`.
fn fd_columns(
    base: &GenState,
    n: usize,
    mut next: impl FnMut(usize, f64) -> GenState,
    local: impl Fn(&GenState, &GenState) -> Vec<f64>,
) -> DMatrix<f64> {
    let h = 1e-6;
    let rows = local(base, base).len();
    let mut out = DMatrix::zeros(rows, n);
    for c in 0..n {
        let (p, q) = (local(base, &next(c, h)), local(base, &next(c, -h)));
        for r in 0..rows {
            out[(r, c)] = (p[r] - q[r]) / (2.0 * h);
        }
    }
    out
}

/// One contact step from `st` with the contacts `c` (a fresh workspace).
fn contact_step(solver: &NcpSolver, m: &Model, st: &GenState, u: &[f64], c: &[ContactFrame]) -> GenState {
    let mut w = solver.contact_workspace(m).unwrap();
    let mut o = st.clone();
    solver.step_with_contacts(&ContactStep::new(m, st, u, DT, c), &mut w, &mut o).unwrap();
    o
}

/// Central differences of a step from `s` (result `next`) in the tangent coordinates of `m`.
struct Fd<'a> {
    fs: &'a FeatherstoneSolver,
    m: &'a Model,
    s: &'a GenState,
    next: &'a GenState,
}

impl Fd<'_> {
    fn columns(&self, n: usize, next: impl FnMut(usize, f64) -> GenState) -> DMatrix<f64> {
        fd_columns(self.next, n, next, |a, b| self.fs.local_diff(self.m, a, b))
    }
    /// ∂x'/∂x: `step` from s ⊕ h e_k
    fn state(&self, step: impl Fn(&GenState) -> GenState) -> DMatrix<f64> {
        let n = 2 * self.m.nv();
        self.columns(n, |k, h| {
            let mut d = vec![0.0; n];
            d[k] = h;
            step(&self.fs.retract(self.m, self.s, &d))
        })
    }
    /// ∂x'/∂u: `step` with u + h e_k
    fn controls(&self, u: &[f64], step: impl Fn(&[f64]) -> GenState) -> DMatrix<f64> {
        self.columns(u.len(), |k, h| {
            let mut uu = u.to_vec();
            uu[k] += h;
            step(&uu)
        })
    }
    /// ∂x'/∂(mass of body 1): `step` on the model with that mass + h
    fn mass(&self, step: impl Fn(&Model) -> GenState) -> DMatrix<f64> {
        self.columns(1, |_, h| {
            let mut mm = self.m.clone();
            mm.body_mass[1] += h;
            step(&mm)
        })
    }
    /// ∂x'/∂p of a scalar p: `step(h)` at p + h
    fn scalar(&self, step: impl Fn(f64) -> GenState) -> DMatrix<f64> {
        self.columns(1, |_, h| step(h))
    }
}

fn check(name: &str, an: &DMatrix<f64>, fd: &DMatrix<f64>) {
    let e = rel_err(an.as_slice(), fd.as_slice());
    if e > 1e-6 {
        for c in 0..an.ncols() {
            let ec = (an.column(c) - fd.column(c)).amax();
            if ec > 1e-6 {
                eprintln!(
                    "  col {c}: max diff {ec:.2e}\n   an {:?}\n   fd {:?}",
                    an.column(c).as_slice(),
                    fd.column(c).as_slice()
                );
            }
        }
    }
    eprintln!("{name}: analytic vs FD {e:.1e} (max |FD| {:.2e})", fd.amax());
    assert!(e < 1e-6, "{name}: {e:e}");
}

/// A box sliding on its four corners (slightly pressed in: no gap kinks), μ = 0.3, approaching at 5 cm/s.
#[test]
fn sliding_box_jacobians_match_finite_differences() {
    let m = boxes(1, Vec3::new(0.0, 0.0, -9.81));
    let fs = FeatherstoneSolver::default();
    let solver = NcpSolver::new(NcpOptions::default());
    let eps = 0.2;
    let q = vec![0.01, -0.02, HE - 1e-4, 1.0, 0.0, 0.0, 0.0];
    let s = GenState::new(q, vec![0.0, 0.0, 0.2, 0.8, 0.3, -0.05]);
    let u = [0.1, -0.2, 0.05, 1.0, 0.5, 0.0];
    let mu = 0.3;
    let sel = ParamSelection::by_prefix(&m, "body_mass[");
    let mut ws = solver.contact_workspace(&m).unwrap();
    let c = floor(&m, &s, mu, eps);
    let (jac, next, rep) =
        solver.step_jacobians_with_contacts(&ContactStep::new(&m, &s, &u, DT, &c), &mut ws, &sel).unwrap();
    assert!(rep.lambda_n.iter().sum::<f64>() > 0.0, "in contact");
    let step =
        |st: &GenState, uu: &[f64], mm: &Model, mu: f64| contact_step(&solver, mm, st, uu, &floor(mm, st, mu, eps));
    let fd = Fd { fs: &fs, m: &m, s: &s, next: &next };
    check("sliding A", &jac.a, &fd.state(|st| step(st, &u, &m, mu)));
    check("sliding B", &jac.b, &fd.controls(&u, |uu| step(&s, uu, &m, mu)));
    check("sliding ∂/∂mass", &jac.c, &fd.mass(|mm| step(&s, &u, mm, mu)));
    let fmu = fd.scalar(|h| step(&s, &u, &m, mu + h));
    let dmu = DMatrix::from_fn(12, 1, |r, _| jac.d_mu.row(r).sum());
    check("sliding ∂/∂μ", &dmu, &fmu);
}

/// A box landing with a vertical and a sideways velocity: impact with restitution ε = 0.5 and slip.
#[test]
fn landing_box_jacobians_match_finite_differences() {
    let m = boxes(1, Vec3::new(0.0, 0.0, -9.81));
    let fs = FeatherstoneSolver::default();
    let eps = 0.5;
    // sliding through the impact (all three contacts on the friction boundary); sticking on coplanar points:
    // `sticking_box_on_coplanar_contacts_matches_finite_differences`
    let mu = 0.2;
    let s = GenState::new(vec![0.0, 0.0, HE - 2e-4, 1.0, 0.0, 0.0, 0.0], vec![0.1, -0.1, 0.0, 2.0, 0.0, -1.0]);
    let u = [0.0; 6];
    let solver = NcpSolver::new(NcpOptions::default());
    let mut ws = solver.contact_workspace(&m).unwrap();
    let c = floor(&m, &s, mu, eps);
    let (jac, next, rep) = solver
        .step_jacobians_with_contacts(&ContactStep::new(&m, &s, &u, DT, &c), &mut ws, &ParamSelection::none())
        .unwrap();
    for k in 0..c.len() {
        let lt = rep.lambda_t[2 * k].hypot(rep.lambda_t[2 * k + 1]);
        assert!((lt - mu * rep.lambda_n[k]).abs() < 1e-9 * lt.max(1e-12) + 1e-14, "contact {k} slides");
    }
    let step = |st: &GenState, e: f64, mu: f64| contact_step(&solver, &m, st, &u, &floor(&m, st, mu, e));
    let fd = Fd { fs: &fs, m: &m, s: &s, next: &next };
    check("landing A", &jac.a, &fd.state(|st| step(st, eps, mu)));
    let fe = fd.scalar(|h| step(&s, eps + h, mu));
    check("landing ∂/∂ε", &DMatrix::from_column_slice(12, 1, &jac.d_restitution), &fe);
    let fmu = fd.scalar(|h| step(&s, eps, mu + h));
    check("landing ∂/∂μ", &DMatrix::from_fn(12, 1, |r, _| jac.d_mu.row(r).sum()), &fmu);
}

/// A box 2 mm above the floor approaching at 1 m/s (v_n Δt + φ = −8 mm: closing within the step, so the
/// restitution law J_n v⁺ = −ε v_n applies at a distance, docs/decisions.md), ε = 0.6, sliding: A and ∂/∂ε
/// against central differences (the gap's derivative drops out of this branch; the distance still moves the
/// contact points).
#[test]
fn closing_from_a_gap_jacobians_match_finite_differences() {
    let m = boxes(1, Vec3::new(0.0, 0.0, -9.81));
    let fs = FeatherstoneSolver::default();
    let (eps, mu) = (0.6, 0.2);
    let s = GenState::new(vec![0.0, 0.0, HE + 2e-3, 1.0, 0.0, 0.0, 0.0], vec![0.1, -0.1, 0.0, 2.0, 0.0, -1.0]);
    let u = [0.0; 6];
    let solver = NcpSolver::new(NcpOptions::default());
    let mut ws = solver.contact_workspace(&m).unwrap();
    let c = floor(&m, &s, mu, eps);
    assert!(c.iter().all(|f| f.distance > 1e-3), "a gap");
    let (jac, next, rep) = solver
        .step_jacobians_with_contacts(&ContactStep::new(&m, &s, &u, DT, &c), &mut ws, &ParamSelection::none())
        .unwrap();
    assert!(rep.lambda_n.iter().all(|&l| l > 0.0), "bounces from the gap: {:?}", rep.lambda_n);
    // Newton's law at each contact from the approach velocity (the base pose is the identity: body = world). The
    // step's velocity in the world: ω̂ (the output's ω, in the step's frame) and R⁺ v_l⁺ (a free joint's output
    // linear velocity is expressed in the new body frame, `joints::advance_joint`)
    let un = |v: &[f64], r: &Quat, p: &Vec3| {
        let (w, lin) = (Vec3::new(v[0], v[1], v[2]), r.rotate(&Vec3::new(v[3], v[4], v[5])));
        (lin + w.cross(&(p - Vec3::new(s.q[0], s.q[1], s.q[2])))).z
    };
    let r1 = Quat::new(next.q[3], next.q[4], next.q[5], next.q[6]);
    for f in &c {
        let (before, after) = (un(&s.v, &Quat::identity(), &f.point), un(&next.v, &r1, &f.point));
        // the impact reverses −ε v_n from where the box is, then gravity acts for the step (a cube: no
        // gyroscopic torque)
        let want = -eps * before - 9.81 * DT;
        assert!((after - want).abs() < 1e-9, "J_n v⁺ = {after}, −ε J_n v − g Δt = {want}");
    }
    let step = |st: &GenState, e: f64| contact_step(&solver, &m, st, &u, &floor(&m, st, mu, e));
    let fd = Fd { fs: &fs, m: &m, s: &s, next: &next };
    check("closing from a gap A", &jac.a, &fd.state(|st| step(st, eps)));
    let fe = fd.scalar(|h| step(&s, eps + h));
    check("closing from a gap ∂/∂ε", &DMatrix::from_column_slice(12, 1, &jac.d_restitution), &fe);
}

/// Two free boxes in a face contact (three points) with sliding friction, no gravity: the impact's Jacobians.
#[test]
fn two_box_impact_jacobians_match_finite_differences() {
    let m = boxes(2, Vec3::zeros());
    let fs = FeatherstoneSolver::default();
    let solver = NcpSolver::new(NcpOptions::default());
    let s = GenState::new(
        vec![0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 2.0 * HE - 1e-4, 0.01, 1.0, 1.0, 0.0, 0.0, 0.0],
        vec![0.0, 0.0, 0.1, 1.0, 0.2, 0.1, 0.0, 0.0, 0.0, -0.2, 0.0, 0.0],
    );
    let contacts = |st: &GenState| -> Vec<ContactFrame> {
        let poses = m.forward_kinematics(&st.q).unwrap();
        let (xa, ra) = poses[1];
        [(-1.0, -1.0), (1.0, -1.0), (0.0, 1.0)]
            .iter()
            .enumerate()
            .map(|(i, (y, z))| {
                // box 0's +x face corners against box 1's −x face (normal −x, from B = box 1 to A = box 0)
                // the frame turns with box 1; the distance is from box 1's face plane
                let p = xa + ra.rotate(&Vec3::new(HE, y * HE, z * HE));
                let (xb, rb) = poses[2];
                ContactFrame::new(
                    ContactGeom {
                        body_a: 1,
                        body_b: 2,
                        point: p,
                        normal: rb.rotate(&-Vec3::x()),
                        tangents: [rb.rotate(&Vec3::y()), rb.rotate(&-Vec3::z())],
                        distance: -rb.rotate_inv(&(p - xb)).x - HE,
                        mu: 0.05,
                        restitution: 0.3,
                    },
                    i as u64,
                )
            })
            .collect()
    };
    let mut ws = solver.contact_workspace(&m).unwrap();
    let u = [0.0; 12];
    let (jac, next, rep) = solver
        .step_jacobians_with_contacts(
            &ContactStep::new(&m, &s, &u, DT, &contacts(&s)),
            &mut ws,
            &ParamSelection::none(),
        )
        .unwrap();
    assert!(rep.lambda_n.iter().all(|&l| l > 0.0), "{:?}", rep.lambda_n);
    let fd = Fd { fs: &fs, m: &m, s: &s, next: &next };
    check("impact A", &jac.a, &fd.state(|st| contact_step(&solver, &m, st, &u, &contacts(st))));
}

/// Sticking mode with a full-rank tangential block: a ball (one contact point) pushed sideways below the friction
/// limit rolls without slipping; A, B and ∂/∂μ (zero while sticking) against central differences.
#[test]
fn rolling_ball_sticking_jacobians_match_finite_differences() {
    let r = 0.1;
    let mut b = ModelBuilder::new("ball").gravity(Vec3::new(0.0, 0.0, -9.81)).dt(DT);
    let w = b.add_fixed_body("world", Vec3::zeros(), Quat::identity());
    add_free_body(&mut b, w, "ball", "free", 1.0, Mat3::from_diagonal_element(0.4 * r * r));
    let m = b.build().unwrap();
    let fs = FeatherstoneSolver::default();
    let solver = NcpSolver::new(NcpOptions::default());
    let mu = 0.8;
    // the contact point as a material point of the ball (its bottom at the base state), as the Jacobians model
    // contacts; for a curved surface the detected (geometric) point rolls instead, which changes the derivative
    // w.r.t. the orientation (docs/gradients.md)
    let contact = |st: &GenState| -> Vec<ContactFrame> {
        let (x, q) = m.forward_kinematics(&st.q).unwrap()[1];
        vec![floor_frame(1, x + q.rotate(&Vec3::new(0.0, 0.0, -r)), mu, 0.0, 0)]
    };
    // rolling at 0.5 m/s along x (ω_y = v / r), pushed by 1 N: sticks (|λ_t| < μ λ_n)
    let s = GenState::new(vec![0.0, 0.0, r - 1e-4, 1.0, 0.0, 0.0, 0.0], vec![0.0, 0.5 / r, 0.0, 0.5, 0.0, 0.0]);
    let u = [0.0, 0.0, 0.0, 1.0, 0.3, 0.0];
    let mut ws = solver.contact_workspace(&m).unwrap();
    let (jac, next, rep) = solver
        .step_jacobians_with_contacts(&ContactStep::new(&m, &s, &u, DT, &contact(&s)), &mut ws, &ParamSelection::none())
        .unwrap();
    let lt = rep.lambda_t[0].hypot(rep.lambda_t[1]);
    assert!(lt < 0.9 * mu * rep.lambda_n[0], "sticks: |λt| {lt} vs μλn {}", mu * rep.lambda_n[0]);
    let step = |st: &GenState, uu: &[f64]| contact_step(&solver, &m, st, uu, &contact(st));
    let fd = Fd { fs: &fs, m: &m, s: &s, next: &next };
    check("rolling (sticking) A", &jac.a, &fd.state(|st| step(st, &u)));
    check("rolling (sticking) B", &jac.b, &fd.controls(&u, |uu| step(&s, uu)));
    assert!(jac.d_mu.amax() < 1e-9, "μ has no effect while sticking: {}", jac.d_mu.amax());
}

/// Sticking on redundant coplanar contacts (docs/gradients.md): a flat box bouncing (ε = 0.5) with a sideways
/// velocity and a spin on 3 and on 4 bottom points with μ = 1, so every contact sticks; the impulses are not
/// unique. The default (here the fixed-point derivative) against central differences of the converged step —
/// A, B, the box mass, and ∂/∂μ = 0 — and the cascade's error in the tilt columns printed beside it.
#[test]
fn sticking_box_on_coplanar_contacts_matches_finite_differences() {
    use torsion_solvers::ncp::NcpGradient;
    let m = boxes(1, Vec3::new(0.0, 0.0, -9.81));
    let fs = FeatherstoneSolver::default();
    let mu = 1.0;
    // a slow landing: the impact's compression sticks, the restitution's lift (ε v_n) is below g Δt, and the
    // step's solve holds the box and sticks
    let s = GenState::new(vec![0.01, 0.02, HE - 2e-4, 1.0, 0.0, 0.0, 0.0], vec![0.0, 0.0, 0.03, 0.02, -0.01, -0.05]);
    let u = [0.1, -0.2, 0.05, 0.5, -0.3, 0.0];
    let sel = ParamSelection::by_prefix(&m, "body_mass[");
    for n in [3usize, 4] {
        // restitution ε = 0.5 at every contact
        let corners = [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)];
        let contacts = |st: &GenState, mu: f64| {
            if n == 3 {
                floor(&m, st, mu, 0.5)
            } else {
                bottom_points(&m, st, mu, 0.5, &corners)
            }
        };
        // converged passes: the derivative is that of the NCP solution
        let admm = torsion_solvers::ncp::AdmmOptions { eps_abs: 1e-14, ..Default::default() };
        let opts =
            |g| NcpOptions { n_step: 500, tolerance: 1e-14, gradient: g, admm: admm.clone(), ..Default::default() };
        let solver = NcpSolver::new(opts(NcpGradient::Auto));
        let mut ws = solver.contact_workspace(&m).unwrap();
        let (jac, next, rep) = solver
            .step_jacobians_with_contacts(&ContactStep::new(&m, &s, &u, DT, &contacts(&s, mu)), &mut ws, &sel)
            .unwrap();
        for k in 0..n {
            let lt = rep.lambda_t[2 * k].hypot(rep.lambda_t[2 * k + 1]);
            assert!(rep.lambda_n[k] > 0.0 && lt < 0.9 * mu * rep.lambda_n[k], "contact {k} sticks: {rep:?}");
        }
        assert!(rep.qp.len() < 500, "converged in {} passes", rep.qp.len());
        let step = |st: &GenState, uu: &[f64], mm: &Model| contact_step(&solver, mm, st, uu, &contacts(st, mu));
        let fd = Fd { fs: &fs, m: &m, s: &s, next: &next };
        let fa = fd.state(|st| step(st, &u, &m));
        // the cascade of the same passes (for the record: under a tilt it is not the derivative here)
        let cascade = NcpSolver::new(opts(NcpGradient::Cascade));
        let mut wc = cascade.contact_workspace(&m).unwrap();
        let (jc, _, _) = cascade
            .step_jacobians_with_contacts(&ContactStep::new(&m, &s, &u, DT, &contacts(&s, mu)), &mut wc, &sel)
            .unwrap();
        let tilt = |j: &DMatrix<f64>| (j.columns(0, 2) - fa.columns(0, 2)).amax();
        eprintln!("  tilt columns: fixed point {:.1e}, cascade {:.1e}", tilt(&jac.a), tilt(&jc.a));
        // under a tilt the staggered passes converge slowly (500 passes do not reach 1e-14 on every perturbed
        // state: 3 points, tilted by −1e-6, stop at max |Δλ| 8.5e-7), so central differences in the two tilt
        // columns measure the forward's noise (v⁺ ~ 1e-11, docs/gradients.md) and are checked loosely; the other
        // columns are clean
        let an = jac.a.columns(2, 10).into_owned();
        check(&format!("sticking on {n} coplanar points A (no tilt)"), &an, &fa.columns(2, 10).into_owned());
        let tilt_err = rel_err(jac.a.columns(0, 2).into_owned().as_slice(), fa.columns(0, 2).into_owned().as_slice());
        assert!(tilt_err < 1e-4, "sticking on {n} coplanar points A (tilt): {tilt_err:e}");
        let fb = fd.controls(&u, |uu| step(&s, uu, &m));
        // every velocity is pinned by the active constraints (J has full column rank): ∂v⁺/∂u = 0
        let eb = (&jac.b - &fb).amax();
        eprintln!("sticking on {n} coplanar points B: |analytic − FD| {eb:.1e} (max |FD| {:.1e})", fb.amax());
        assert!(eb < 1e-6, "B: {eb:e}");
        let fmass = fd.mass(|mm| step(&s, &u, mm));
        let em = (&jac.c - &fmass).amax();
        eprintln!("sticking on {n} coplanar points ∂/∂mass: |analytic − FD| {em:.1e} (max |FD| {:.1e})", fmass.amax());
        assert!(em < 1e-6, "∂/∂mass: {em:e}");
        assert!(jac.d_mu.amax() < 1e-8, "μ has no effect while sticking: {}", jac.d_mu.amax());
    }
}

/// sysid-contact's box (0.1 m cube on a frictionless table, μ = 0.178 on the box, 1.16 kg) pushed sideways at
/// 2.6 N while it slides flat on its four corners without spin (the state of the fit's step 146, its Δt 4 ms):
/// the four corners' λ_n are redundant, but with every slip in one direction the friction wrench is not, so v⁺
/// is smooth. Through the whole step (collision, direct solve): A, B, the mass and μ against central
/// differences.
#[test]
fn box_pushed_on_four_corners_jacobians_match_finite_differences() {
    use torsion_model::Control;
    use torsion_solvers::{Solver, StepJacobians};
    let xml = r#"<mujoco model="box_table"><option gravity="0 0 -9.81"/><worldbody>
<geom name="table" type="plane" size="20 20 0.1" friction="0 0 0"/>
<body name="box" pos="0 0 0.1"><freejoint/><geom name="boxg" type="box" size="0.05 0.05 0.05" mass="1.2"/></body>
</worldbody></mujoco>"#;
    let mut m = torsion_model::io::mjcf::load_mjcf_str(xml, "box_table.xml", None).unwrap();
    m.shapes[0].restitution = 0.0;
    let sel = ParamSelection::by_names(&m, &["body_mass[box]", "shape_friction[boxg]"]).unwrap();
    let p = [1.159558, 0.177717];
    m.params_set(&sel, &p).unwrap();
    let mut o = NcpOptions::default();
    o.collision.margin = 0.0;
    let solver = NcpSolver::new(o);
    let dt = 0.004;
    let q = vec![
        5.790117210419637e-4,
        3.5384711064918644e-4,
        0.049894537663336666,
        0.9999999967266355,
        -4.095492036385467e-5,
        -6.739625158988981e-5,
        -1.808780782339535e-5,
    ];
    let s = GenState::new(q, vec![0.0, 0.0, 0.0, 0.02059496784519926, 0.007442965615205598, -2.166443820103562e-6]);
    let mut w = vec![0.0; 12];
    (w[6], w[7]) = (2.592123653542245, 0.9226783050720779);
    let u = Control::from_torques(&[0.0; 6]).with_body_wrench(&w);
    let mut ws = solver.workspace(&m).unwrap();
    let mut jac = StepJacobians::for_solver(&solver, &m, &sel);
    solver.step_jacobians_into(&m, &s, &u, dt, &sel, &mut ws, &mut jac).unwrap();
    let step_u = |mm: &Model, st: &GenState, u: &Control<f64>| {
        let mut w = solver.workspace(mm).unwrap();
        let mut out = st.clone();
        let info = solver.step(mm, st, u, dt, &mut out, &mut w, None).unwrap();
        (out, info)
    };
    let step = |mm: &Model, st: &GenState| step_u(mm, st, &u);
    let (next, info) = step(&m, &s);
    assert!(info.converged && info.fallbacks == 0 && info.contacts == 4, "{info:?}");
    let fs = FeatherstoneSolver::default();
    let fd = Fd { fs: &fs, m: &m, s: &s, next: &next };
    check("pushed box A", &jac.a, &fd.state(|st| step(&m, st).0));
    let tau = [0.0; 6];
    check(
        "pushed box B",
        &jac.b,
        &fd.controls(&tau, |uu| step_u(&m, &s, &Control::from_torques(uu).with_body_wrench(&w)).0),
    );
    let mut fc = DMatrix::zeros(12, 2);
    for c in 0..2 {
        let h = 1e-6 * p[c];
        let side = |sg: f64| {
            let mut mm = m.clone();
            let mut pp = p;
            pp[c] += sg * h;
            mm.params_set(&sel, &pp).unwrap();
            solver.local_diff(&m, &next, &step(&mm, &s).0)
        };
        let (a, b) = (side(1.0), side(-1.0));
        for r in 0..12 {
            fc[(r, c)] = (a[r] - b[r]) / (2.0 * h);
        }
    }
    check("pushed box ∂/∂(mass, μ)", &jac.c, &fc);
}
