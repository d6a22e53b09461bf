//! The randomized sweep in CI (issue 20 item 5): a few hundred scenes per solver (the script runs ≥ 10,000,
//! RELIABILITY.md). No non-finite state, gradient or Jacobian without a reported error, no panic; the scenes
//! reach what they are for (contacts for the contact solvers, every step differentiated).
use torsion_bench::sweep::{sweep, SweepCounts, STEPS};

fn run(solver: &str, scenes: usize) -> SweepCounts {
    let c = sweep(solver, scenes, 20, || {}).unwrap();
    assert_eq!(c.unreported(), 0, "{solver}: {c:#?}");
    assert_eq!(c.scenes, scenes);
    // most scenes run all their steps, each differentiated; the Jacobians at every first state
    assert!(c.steps >= scenes * STEPS * 9 / 10, "{solver}: {c:#?}");
    assert_eq!(
        c.vjps + c.errors.iter().filter(|(k, _)| k.starts_with("step_vjp")).map(|(_, n)| n).sum::<usize>(),
        c.steps
    );
    c
}

#[test]
fn xpbd_sweep() {
    run("xpbd", 300);
}

#[test]
fn featherstone_sweep() {
    run("featherstone", 300);
}

#[test]
fn tensegrity_sweep() {
    run("tensegrity", 60);
}

#[test]
fn ncp_sweep() {
    let c = run("ncp", 200);
    assert!(c.contact_steps > c.steps / 3, "{c:#?}");
}

#[test]
fn lcp_sweep() {
    let c = run("lcp", 200);
    assert!(c.contact_steps > c.steps / 3, "{c:#?}");
}
