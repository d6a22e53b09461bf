//! Heap allocations inside an iLQR iteration after `Ilqr::new` (design.md §7; issue 19 item 2): the backward pass
//! (boxQP included) allocates nothing; the forward pass only what `StateSpace::local_diff` and the tracking cost's
//! `local_diff` return (a Vec each per step), so a bounded count per step; the Featherstone step itself none.
use nalgebra::DVector;
use torsion_math::alloc_count::{thread_allocations, CountingAlloc};
use torsion_math::Vec3;
use torsion_model::builder::two_link_arm;
use torsion_model::GenState;
use torsion_opt::ilqr::{Ilqr, IlqrOptions, QuadraticTracking, SolverDynamics};
use torsion_solvers::FeatherstoneSolver;

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

#[test]
fn ilqr_iteration_allocations() {
    let dt = 0.02;
    let m = two_link_arm(0.5, 0.5, 1.0, Vec3::new(0.0, -9.8, 0.0), dt).unwrap();
    let solver = FeatherstoneSolver::default();
    let mut dynamics = SolverDynamics::new(&solver, &m, dt).unwrap();
    let x0 = GenState::new(vec![-1.0, 0.3], vec![0.0, 0.0]);
    let goal = GenState::new(vec![0.5, 0.0], vec![0.0, 0.0]);
    let mut cost = QuadraticTracking::diagonal(&m, goal, &[0.0; 4], &[1e-2, 1e-2], &[100.0, 100.0, 10.0, 10.0]);
    let o = IlqrOptions { max_iter: 3, u_min: Some(vec![-2.0; 2]), u_max: Some(vec![2.0; 2]), ..Default::default() };
    let t_len = 40;
    let mut il = Ilqr::new(4, 2, t_len, &x0, o).unwrap();
    il.solve(&mut dynamics, &mut cost, &x0, &vec![DVector::zeros(2); t_len]).unwrap();
    let a0 = thread_allocations();
    assert!(il.backward_pass(1e-3));
    let backward = thread_allocations() - a0;
    let a0 = thread_allocations();
    il.forward_pass(&mut dynamics, &mut cost, 0.5);
    let forward = thread_allocations() - a0;
    eprintln!("allocations: backward pass {backward}, forward pass {forward} ({t_len} steps)");
    assert_eq!(backward, 0);
    assert!(forward <= 4 * (t_len + 1), "{forward} allocations in a forward pass of {t_len} steps");
}
