//! Transition Jacobians (A, B, C) at every step of a trajectory.
use torsion_model::{Control, Model, ParamSelection};
use torsion_solvers::{DiffSolver, SolverError, StepJacobians};

pub fn trajectory_jacobians<S: DiffSolver>(
    solver: &S,
    model: &Model,
    states: &[S::State],
    controls: &[Control],
    dt: f64,
    sel: &ParamSelection,
) -> Result<Vec<StepJacobians>, SolverError> {
    controls.iter().enumerate().map(|(t, u)| solver.step_jacobians(model, &states[t], u, dt, sel)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{fd_jacobian, rel_err, rollout};
    use torsion_math::Vec3;
    use torsion_model::builder::two_link_arm;
    use torsion_solvers::{Solver, XpbdSolver};

    /// B along a trajectory against central differences of each step.
    #[test]
    fn trajectory_jacobians_match_central_differences() {
        let m = two_link_arm(0.8, 0.5, 1.0, Vec3::new(0.0, -9.8, 0.0), 0.01).unwrap();
        let solver = XpbdSolver::default();
        let s0 = m.state_at(&[0.4, -0.7]).unwrap();
        let us = vec![Control::from_torques(&[0.3, -0.2]); 5];
        let states = rollout(&solver, &m, &s0, &us, 0.01).unwrap();
        let jacs = trajectory_jacobians(&solver, &m, &states, &us, 0.01, &ParamSelection::none()).unwrap();
        for (t, j) in jacs.iter().enumerate() {
            let f = |d: &[f64]| {
                let mut o = states[t].clone();
                let mut ws = solver.workspace(&m).unwrap();
                solver
                    .step(
                        &m,
                        &states[t],
                        &Control::from_torques(&[0.3 + d[0], -0.2 + d[1]]),
                        0.01,
                        &mut o,
                        &mut ws,
                        None,
                    )
                    .unwrap();
                solver.local_diff(&m, &states[t + 1], &o)
            };
            assert!(rel_err(j.b.as_slice(), fd_jacobian(f, 2, 1e-6).as_slice()) < 1e-6);
        }
    }
}
