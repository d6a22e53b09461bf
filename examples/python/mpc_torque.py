"""MPC torque estimation loop on the Baxter left arm (Featherstone, 100 Hz).

At every control step a Gauss-Newton shooting MPC estimates the torque sequence over a 10-step horizon that
tracks a reference joint trajectory: torsion.trajectory_jacobians gives the per-step transition Jacobians A_t,
B_t along the predicted rollout, chained into the sensitivities dx_k/du_j = A_{k-1}...A_{j+1} B_j; two damped
Gauss-Newton iterations (warm-started from the previous solution) per step. The first torque is applied to the
plant. It prints the tracking error and compares the MPC torques with the inverse-dynamics torques of the
reference (torsion.rnea), which an exact tracker would apply. Needs: pip install example-robot-data.
"""
import os
import time

# small dense matrices: BLAS threads only add synchronisation (20x slower on a loaded 2-core machine)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

import torsion

DT, STEPS, H, GN_ITERS = 0.01, 200, 10, 2
W_Q, W_V, LM = 1.0, 0.01, 1e-6


def reference(model, t):
    q0 = np.array([0.0, -0.5, 0.0, 1.0, 0.0, 0.5, 0.0])
    k = np.arange(model.nq)
    q = q0 + 0.3 * np.sin(2 * np.pi * 0.5 * t[:, None] + k)
    v = 0.3 * 2 * np.pi * 0.5 * np.cos(2 * np.pi * 0.5 * t[:, None] + k)
    a = -0.3 * (2 * np.pi * 0.5) ** 2 * np.sin(2 * np.pi * 0.5 * t[:, None] + k)
    return q, v, a


def mpc_solve(model, solver, x, u, x_ref):
    """Levenberg-Marquardt-damped Gauss-Newton on sum_k |W (x_k - x_ref_k)|^2 over the horizon; u (H, nu) warm
    start."""
    n, nu = solver.state_dim(model), solver.control_dim(model)
    w = np.concatenate([np.full(model.nq, np.sqrt(W_Q)), np.full(model.nv, np.sqrt(W_V))])
    for _ in range(GN_ITERS):
        xs = torsion.rollout(model, solver, x, u, dt=DT)
        A, B, _ = torsion.trajectory_jacobians(model, solver, xs, u, dt=DT)
        # S[k, j] = d x_{k+1} / d u_j  (tangent = [q, v] for hinge-only arms)
        J = np.zeros((H * n, H * nu))
        for j in range(H):
            S = B[j]
            for k in range(j, H):
                if k > j:
                    S = A[k] @ S
                J[k * n:(k + 1) * n, j * nu:(j + 1) * nu] = w[:, None] * S
        r = ((xs[1:] - x_ref) * w).ravel()
        lhs = J.T @ J + LM * np.eye(H * nu)
        rhs = J.T @ r
        u = u - np.linalg.solve(lhs, rhs).reshape(H, nu)
    return u


def main():
    model = torsion.Model.baxter_left_arm()
    solver = torsion.FeatherstoneSolver()
    t = np.arange(STEPS + H + 1) * DT
    q_ref, v_ref, a_ref = reference(model, t)
    x_ref = np.hstack([q_ref, v_ref])
    x = x_ref[0].copy()
    u_plan = np.tile(torsion.gravity(model, q_ref[0]), (H, 1))
    applied, errors = [], []
    t0 = time.perf_counter()
    for step in range(STEPS):
        u_plan = mpc_solve(model, solver, x, u_plan, x_ref[step + 1:step + H + 1])
        x = torsion.step(model, solver, x, u_plan[0], dt=DT)
        applied.append(u_plan[0])
        errors.append(np.abs(x[: model.nq] - q_ref[step + 1]).max())
        u_plan = np.vstack([u_plan[1:], u_plan[-1:]])  # shift the warm start
        if step % 40 == 0:
            print(f"t = {step * DT:4.2f} s  max |q - q_ref| = {errors[-1]:.2e} rad  tau = [{' '.join(f'{v:6.1f}' for v in applied[-1])}] N m")
    wall = time.perf_counter() - t0
    applied = np.array(applied)
    # inverse dynamics of the reference: the torques that produce its accelerations (RNEA; the stepper also
    # applies joint damping and integrates semi-implicitly, so a perfect tracker differs slightly)
    tau_id = np.array([torsion.rnea(model, q_ref[k], v_ref[k], a_ref[k]) for k in range(STEPS)])
    diff = np.abs(applied - tau_id)
    print(f"\n{STEPS} MPC steps (horizon {H}, {GN_ITERS} Gauss-Newton iterations each) in {wall:.2f} s "
          f"({1e3 * wall / STEPS:.1f} ms per step)")
    print(f"tracking: max |q - q_ref| over the run {max(errors):.2e} rad, last 100 steps {max(errors[100:]):.2e} rad")
    print(f"MPC torque vs inverse dynamics of the reference: mean |diff| {diff.mean():.3f} N m, "
          f"max {diff.max():.3f} N m (torques up to {np.abs(tau_id).max():.1f} N m)")


if __name__ == "__main__":
    main()
