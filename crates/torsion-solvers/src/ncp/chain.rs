//! A long hinge chain with a few contacts (issue 20's scaling cliff: one step on 1,000 links took ~34 s): the
//! scene of its tests and of the `ncp_chain` benchmark. Its step applies M⁻¹ by the articulated-body solve
//! (`contact::prelude::MassSolve`), O(n k) for k contacts instead of the sparse LTL's O(n³) on a chain.
use crate::contact::{ContactFrame, ContactGeom};
use torsion_math::{Mat3, Quat, Vec3};
use torsion_model::builder::{JointDesc, ModelBuilder};
use torsion_model::Model;

/// Length of one link of [`hanging_chain`] (m).
pub const LINK: f64 = 0.05;

/// `n` links (0.05 m, 0.05 kg) hanging from a fixed base at height n · 0.05 m, hinges alternating about x and y:
/// one tree of depth n (M is dense, every DoF an ancestor of the ones below it).
pub fn hanging_chain(n: usize) -> Model {
    let mut b = ModelBuilder::new("hanging_chain").gravity(Vec3::new(0.0, 0.0, -9.81)).dt(0.005);
    let top = n as f64 * LINK;
    let mut parent = b.add_fixed_body("base", Vec3::new(0.0, 0.0, top), Quat::identity());
    let inertia = Mat3::from_diagonal(&Vec3::new(1.2e-5, 1.2e-5, 2.0e-6));
    for i in 0..n {
        let body = b.add_body(&format!("link{i}"), 0.05, inertia);
        let r = if i == 0 { Vec3::zeros() } else { Vec3::new(0.0, 0.0, -LINK / 2.0) };
        let axis = if i % 2 == 0 { Vec3::x() } else { Vec3::y() };
        b.add_joint(JointDesc::hinge(&format!("j{i}"), parent, body, r, Vec3::new(0.0, 0.0, LINK / 2.0), axis));
        parent = body;
    }
    b.build().expect("the hanging chain is a valid model")
}

/// `k` contacts of [`hanging_chain`]`(n)` against a wall of the world (body 0) on their −x side (normal +x), 0.1 mm
/// deep: the tip, then links spread evenly up the chain (body `n`, then n − n/k, …), μ 0.5, at each link's lower
/// end at q = 0.
pub fn chain_contacts(n: usize, k: usize) -> Vec<ContactFrame> {
    (0..k.min(n))
        .map(|c| {
            let link = n - 1 - c * (n / k.max(1));
            let z = (n - 1 - link) as f64 * LINK;
            ContactFrame::new(
                ContactGeom {
                    body_a: link + 1,
                    body_b: 0,
                    point: Vec3::new(0.0, 0.0, z),
                    normal: Vec3::x(),
                    tangents: [Vec3::y(), Vec3::z()],
                    distance: -1e-4,
                    mu: 0.5,
                    restitution: 0.0,
                },
                c as u64,
            )
        })
        .collect()
}

/// The straight chain (q = 0) swinging towards the wall of [`chain_contacts`]: the y hinges turning at a rate
/// that moves the tip at −0.1 m/s in x, the x hinges at 0.3 of it (the contacts are then active).
pub fn chain_state(n: usize) -> torsion_model::GenState {
    // a y hinge's rate ω moves the links below it by −d ω in x (d: their depth below it)
    let depth: f64 = (0..n).filter(|i| i % 2 == 1).map(|i| (n - i) as f64 * LINK).sum();
    let w = 0.1 / depth.max(LINK);
    let v = (0..n).map(|i| if i % 2 == 1 { w } else { 0.3 * w }).collect();
    torsion_model::GenState::new(vec![0.0; n], v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contact::prelude::MassSolve;
    use crate::contact::ContactStep;
    use crate::ncp::{NcpOptions, NcpSolver};
    use crate::GenState;
    use torsion_model::ParamSelection;

    fn state(n: usize) -> GenState {
        chain_state(n)
    }

    /// Issue 20: one step of a 1,000-link chain with two contacts completes in milliseconds (it took ~34 s): by
    /// the articulated-body solve, without any nv × nv matrix; the contacts push (λ_n > 0) and hold (J_n v⁺ ≥ 0).
    #[test]
    fn a_thousand_link_chain_steps_without_an_n_by_n_matrix() {
        let n = 1000;
        let (m, contacts) = (hanging_chain(n), chain_contacts(n, 2));
        let solver = NcpSolver::new(NcpOptions::default());
        let mut ws = solver.contact_workspace(&m).unwrap();
        let s = state(n);
        let mut out = s.clone();
        let t = std::time::Instant::now();
        let r = solver
            .step_with_contacts(&ContactStep::new(&m, &s, &vec![0.0; n], 0.005, &contacts), &mut ws, &mut out)
            .unwrap();
        let secs = t.elapsed().as_secs_f64();
        eprintln!("1,000-link chain, 2 contacts: one step {secs:.3} s, {} passes", r.qp.len());
        assert!(ws.pre.aba && ws.pre.l.is_empty(), "an LTL factor was built ({} entries)", ws.pre.l.stored());
        assert!(out.q.iter().chain(&out.v).all(|x| x.is_finite()));
        for (i, c) in contacts.iter().enumerate() {
            let vn = ws.pre.row_dot(0, i, &out.v);
            assert!(r.lambda_n[i] > 0.0 && vn > -1e-9, "contact {}: λ_n {:e}, v_n {vn:e}", c.id, r.lambda_n[i]);
        }
        assert!(secs < 2.0, "one step took {secs} s");
    }

    /// The articulated-body solve (forced) gives the step of the sparse LTL factorisation to 1e-12 on a
    /// 12-link chain with three contacts (and `Auto` takes the LTL there: depth 11 ≤ `ABA_DEPTH`).
    #[test]
    fn articulated_body_and_ltl_steps_agree_on_a_short_chain() {
        let n = 12;
        let (m, contacts) = (hanging_chain(n), chain_contacts(n, 3));
        let solver = NcpSolver::new(NcpOptions::default());
        let s = state(n);
        let run = |mode: MassSolve| {
            let mut ws = solver.contact_workspace(&m).unwrap();
            ws.mass_solve = mode;
            let mut out = s.clone();
            let r = solver
                .step_with_contacts(&ContactStep::new(&m, &s, &vec![0.1; n], 0.005, &contacts), &mut ws, &mut out)
                .unwrap();
            (out, r, ws.pre.aba)
        };
        let ((a, ra, aba), (b, rb, ltl)) = (run(MassSolve::Aba), run(MassSolve::Auto));
        assert!(aba && !ltl);
        let diff = a.q.iter().zip(&b.q).chain(a.v.iter().zip(&b.v)).fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
        let dl = ra.lambda_n.iter().zip(&rb.lambda_n).fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
        eprintln!("12-link chain: ABA vs LTL step max |Δ(q, v)| {diff:.1e}, |Δλ_n| {dl:.1e}");
        assert!(ra.lambda_n.iter().all(|&l| l > 0.0), "{:?}", ra.lambda_n);
        assert!(diff < 1e-12 && dl < 1e-12, "{diff:e} {dl:e}");
    }

    /// The articulated-body path's tangent Jacobians (the same generic prelude on duals) against central
    /// differences of its step: ∂(q⁺, v⁺)/∂(v, u) on an 8-link chain with two contacts, relative error ≤ 1e-6.
    #[test]
    fn articulated_body_step_jacobians_match_finite_differences() {
        let n = 8;
        let (m, contacts) = (hanging_chain(n), chain_contacts(n, 2));
        let solver = NcpSolver::new(NcpOptions::default());
        let s = state(n);
        let u = vec![0.02; n];
        let mut ws = solver.contact_workspace(&m).unwrap();
        ws.mass_solve = MassSolve::Aba;
        let (jac, _, _) = solver
            .step_jacobians_with_contacts(
                &ContactStep::new(&m, &s, &u, 0.005, &contacts),
                &mut ws,
                &ParamSelection::none(),
            )
            .unwrap();
        assert!(ws.pre.aba);
        let next = |s: &GenState, u: &[f64]| {
            let mut w = solver.contact_workspace(&m).unwrap();
            w.mass_solve = MassSolve::Aba;
            let mut o = s.clone();
            solver.step_with_contacts(&ContactStep::new(&m, s, u, 0.005, &contacts), &mut w, &mut o).unwrap();
            o
        };
        let h = 1e-6;
        let (mut worst, mut scale) = (0.0f64, 0.0f64);
        for k in 0..2 * n {
            let (mut sp, mut sm, mut up, mut um) = (s.clone(), s.clone(), u.clone(), u.clone());
            if k < n {
                sp.v[k] += h;
                sm.v[k] -= h;
            } else {
                up[k - n] += h;
                um[k - n] -= h;
            }
            let (p, q) = (next(&sp, &up), next(&sm, &um));
            for r in 0..n {
                for (fd, an) in [
                    ((p.q[r] - q.q[r]) / (2.0 * h), if k < n { jac.a[(r, n + k)] } else { jac.b[(r, k - n)] }),
                    ((p.v[r] - q.v[r]) / (2.0 * h), if k < n { jac.a[(n + r, n + k)] } else { jac.b[(n + r, k - n)] }),
                ] {
                    worst = worst.max((fd - an).abs());
                    scale = scale.max(an.abs());
                }
            }
        }
        eprintln!("8-link chain (ABA): ∂(q⁺, v⁺)/∂(v, u) vs FD max error {worst:.1e} (largest entry {scale:.1e})");
        assert!(worst <= 1e-6 * scale.max(1.0), "{worst:e} vs {scale:e}");
    }
}
