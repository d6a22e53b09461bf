"""Issue 14 items 4 and 7 from Python: the multiple-shooting simulation residual `torsion.sysid.Shooting`
(`torsion_opt::ShootingProblem`) recovers masses and damping of the 2-link arm under Featherstone and a box's
friction under ncp from generated data; `torsion.rollout_tape` + `RolloutTape.vjp` equals `rollout_vjp` and
central differences."""
import numpy as np
import pytest

import torsion
from torsion import sysid

ARM_NAMES = ["body_mass[link1]", "body_mass[link2]", "joint_damping[joint1]", "joint_damping[joint2]"]
TRUTH = np.array([1.2, 0.7, 0.3, 0.1])


def arm_data(noise=0.0, t_len=300, dt=0.005):
    """The 2-link arm (0.8 m, 0.5 m) under a chirp of joint torques, simulated with the true masses and damping."""
    m = torsion.Model.two_link_arm(0.8, 0.5, 1.0, (0.0, -9.8, 0.0), dt)
    truth = m.with_params(ARM_NAMES, TRUTH)
    t = np.arange(t_len) * dt
    u = np.stack([3.0 * np.sin(2.0 * t + 0.5 * t * t), 1.5 * np.cos(3.0 * t)], axis=1)
    xs = torsion.rollout(truth, torsion.FeatherstoneSolver(), [0.3, -0.4, 0.0, 0.5], u, dt=dt)
    xs = xs + noise * np.random.default_rng(7).standard_normal(xs.shape)
    return m, xs[:, :2], xs[:, 2:], u, dt


def test_shooting_recovers_masses_and_damping_of_the_arm():
    m, q, v, u, dt = arm_data(noise=1e-5)
    pb = sysid.Problem(m, residual=sysid.Shooting(window=25, sigma_q=1e-3, sigma_v=1e-2))
    assert pb.param_names == []
    pb.param("body_mass[link1]", value=0.6, transform="log")
    pb.param("body_mass[link2]", value=1.1, transform="log")
    pb.param("joint_damping[*]", value=0.15, transform="softplus")
    assert pb.param_names == ARM_NAMES
    pb.add_recording(q, u, dt=dt, v=v)
    res = pb.fit(progress=False)
    rel = np.abs(res.p - TRUTH) / TRUTH
    print(f"shooting fit: {res.iterations} iterations, cost {res.history[0]:.3e} -> {res.history[-1]:.3e}, "
          f"rel errors {rel}, std errors {res.std_errors}, q rmse {res.rmse:.2e}, {res.time_solve_s:.2f} s")
    assert rel.max() < 1e-3, rel
    assert res.rmse < 1e-4 and res.history[-1] < 1e-3 * res.history[0]
    assert (res.std_errors > 0).all() and (np.abs(res.p - TRUTH) < 10 * res.std_errors + 1e-6).all()
    pred = pb.predict(res)
    assert len(pred) == 1 and pred[0].shape == q.shape and np.abs(pred[0] - q).max() < 1e-3
    assert res.to_dict()["estimates"]["body_mass[link2]"] == pytest.approx(res.p[1])


BOX = """<mujoco><option timestep="0.005"/><worldbody><geom name="floor" type="plane" size="5 5 0.1" friction="0.1"/>
  <body name="box" pos="0 0 0.1"><freejoint/><geom name="box" type="box" size="0.1 0.1 0.1" mass="1"
    friction="0.3"/></body></worldbody></mujoco>"""


def test_shooting_recovers_friction_and_mass_under_ncp():
    # a box pushed across the floor (sliding): μ = 0.5 (the box's; the pair takes the larger, the floor's is 0.1)
    # and mass 2 kg from 0.5 s of data, starting at 0.3 and 1 kg
    m = torsion.load_mjcf(BOX)
    names = ["shape_friction[box]", "body_mass[box]"]
    solver = torsion.NcpSolver()
    truth = m.with_params(names, [0.5, 2.0])
    t_len, dt = 100, 0.005
    t = np.arange(t_len) * dt
    u = np.zeros((t_len, 6))
    u[:, 3] = 14.0 + 4.0 * np.sin(9.0 * t)  # force along x (body frame of the free joint)
    u[:, 4] = 3.0 * np.cos(6.0 * t)
    x0 = solver.initial_state(truth, [0, 0, 0.0999, 1, 0, 0, 0], [0.4, 0, 0, 0, 0, 0])
    assert truth.params_get(["shape_friction[floor]"])[0] == 0.1
    xs = torsion.rollout(truth, solver, x0, u, dt=dt)
    assert np.abs(xs[-1, :2]).max() > 0.1  # it slid
    pb = sysid.Problem(m, residual=sysid.Shooting(window=20, solver=solver, sigma_q=1e-3, sigma_v=1e-2))
    pb.param("shape_friction[box]", transform="log")
    pb.param("body_mass[box]", value=1.0, transform="log")
    assert pb.solver and list(pb.p0) == [0.3, 1.0]
    pb.add_recording(xs[:, :7], u, dt=dt, v=xs[:, 7:])
    res = pb.fit(progress=False)
    print(f"ncp shooting fit: {res.iterations} iterations, p {res.p} (truth 0.5, 2.0), q rmse {res.rmse:.2e}")
    assert abs(res.p[0] - 0.5) < 1e-3 and abs(res.p[1] - 2.0) < 2e-3


def test_shooting_errors_name_the_problem():
    m, q, v, u, dt = arm_data(t_len=20)
    pb = sysid.Problem(m, residual=sysid.Shooting(window=5))
    with pytest.raises(ValueError, match="unknown parameter 'body_mass\\[nope\\]'"):
        pb.param("body_mass[nope]")
    with pytest.raises(ValueError, match="Shooting residual names model parameters with param"):
        pb.body("link1")
    with pytest.raises(ValueError, match="needs v"):
        pb.add_recording(q, u, dt=dt)
    with pytest.raises(ValueError, match=r"recording 'r' u \(one row fewer than q\): expected shape \(20, 2\)"):
        pb.add_recording(q, np.vstack([u, u[:1]]), dt=dt, v=v, name="r")
    with pytest.raises(ValueError, match="no parameter is free"):
        pb.add_recording(q, u, dt=dt, v=v).fit()
    with pytest.raises(TypeError, match="XpbdSolver"):
        sysid.Problem(m, residual=sysid.Shooting(solver=torsion.XpbdSolver()))
    with pytest.raises(ValueError, match="Regressor only"):
        pb.gram()


@pytest.mark.parametrize("kind", ["featherstone", "ncp"])
def test_rollout_tape_equals_rollout_vjp_and_central_differences(kind):
    if kind == "featherstone":
        m, q, v, u, dt = arm_data(t_len=60)
        solver, names = torsion.FeatherstoneSolver(), ARM_NAMES
        x0 = np.r_[q[0], v[0]]
    else:
        m = torsion.load_mjcf(BOX)
        solver, names, dt = torsion.NcpSolver(), ["shape_friction[box]", "body_mass[box]"], 0.005
        u = np.zeros((40, 6))
        u[:, 3] = 12.0
        x0 = solver.initial_state(m, [0, 0, 0.0999, 1, 0, 0, 0], [0.3, 0.1, 0, 0, 0, 0])
    tape = torsion.rollout_tape(m, solver, x0, u, dt=dt)
    xs = torsion.rollout(m, solver, x0, u, dt=dt)
    assert len(tape) == len(u) and np.array_equal(tape.states, xs)
    w = np.random.default_rng(2).standard_normal(xs.shape[1])
    dl = np.tile(w, (len(xs), 1))
    gt = tape.vjp(dl, param_names=names)
    gr = torsion.rollout_vjp(m, solver, xs, u, dl, param_names=names, dt=dt)
    diff = max(np.abs(gt.params - gr.params).max() / np.abs(gr.params).max(),
               np.abs(gt.controls - gr.controls).max() / np.abs(gr.controls).max(),
               np.abs(gt.x0 - gr.x0).max() / np.abs(gr.x0).max())
    print(f"{kind}: tape vs rollout_vjp {diff:.1e}")
    assert diff < 1e-12
    with pytest.raises(ValueError, match=r"dloss_dstates: expected shape"):
        tape.vjp(dl[:-1])
    if kind == "ncp":
        return  # ncp's rollout_vjp against central differences: test_ncp.py (its tolerances are the solver's)
    fd = []
    for k, n in enumerate(names):
        p0 = m.params_get([n])[0]
        h = 1e-6 * max(abs(p0), 0.1)
        lp = (torsion.rollout(m.with_params([n], [p0 + h]), solver, x0, u, dt=dt) @ w).sum()
        lm = (torsion.rollout(m.with_params([n], [p0 - h]), solver, x0, u, dt=dt) @ w).sum()
        fd.append((lp - lm) / (2 * h))
    fd = np.array(fd)
    err = np.abs(gt.params - fd).max() / np.abs(fd).max()
    print(f"{kind}: tape params vs central differences {err:.1e}")
    assert err < 1e-6
