//! `Admm::solve` allocates nothing (design.md §7), the Newton polish included: a counting global allocator
//! around repeated QCQP (E0 family, every friction set) and QP solves with one solver per size. Only the test's
//! own thread is counted (torsion-math's count is per thread): the test harness's threads may allocate meanwhile
//! (seen once on a loaded CI machine: 4 allocations outside the solves).
use nalgebra::DMatrix;
use torsion_diff::gradcheck::XorShift;
use torsion_math::alloc_count::{thread_allocations, CountingAlloc};
use torsion_solvers::ncp::{Admm, AdmmOptions, ConstraintSet, FrictionSet};

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

#[test]
fn admm_solve_with_polish_allocates_nothing() {
    let mut rng = XorShift(0xa110_c000_0000_0001);
    let opt = AdmmOptions { eps_abs: 1e-10, ..AdmmOptions::default() };
    let (mut qcqp, mut qp) = (Admm::new(8), Admm::new(4));
    let mut polished = 0;
    for round in 0..200 {
        // inputs built before counting
        let d: Vec<f64> = (0..8).map(|_| (20.0 * rng.u() - 10.0).exp()).collect();
        let q: Vec<f64> = (0..8).map(|_| 2.0 * rng.u() - 1.0).collect();
        let r: Vec<f64> = (0..4).map(|_| rng.u() * rng.u()).collect();
        let warm: Vec<f64> = (0..8).map(|_| rng.u()).collect();
        let p = DMatrix::from_diagonal(&nalgebra::DVector::from_column_slice(&d));
        let a = DMatrix::from_fn(4, 4, |_, _| 2.0 * rng.u() - 1.0);
        let pn = &a * a.transpose() + DMatrix::identity(4, 4) * 0.05;
        let qn: Vec<f64> = (0..4).map(|_| 2.0 * rng.u() - 1.0).collect();
        let kind = [FrictionSet::Cone, FrictionSet::BoxPyramid, FrictionSet::DiamondPyramid][round % 3];
        let set = ConstraintSet::Friction { kind, r: &r };
        let before = thread_allocations();
        let info = qcqp.solve(&p, &q, set, Some(&warm), &opt, None);
        let info_n = qp.solve(&pn, &qn, ConstraintSet::Nonneg, None, &opt, None);
        let count = thread_allocations() - before;
        let (info, info_n) = (info.unwrap(), info_n.unwrap());
        assert_eq!(count, 0, "round {round} ({kind:?}): {count} allocations");
        polished += info.polished as usize + info_n.polished as usize;
    }
    assert!(polished > 100, "the polish ran in only {polished} of 400 solves");
}
