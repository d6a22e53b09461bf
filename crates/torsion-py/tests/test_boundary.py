"""The Python boundary refuses bad values up front, naming the argument (issue 20 item 2): non-finite inputs,
dt outside (0, 1] s, non-unit quaternions, negative counts, solver options at construction, result arrays too
big for memory (MemoryError, not an aborted interpreter); big-endian arrays are converted; params_set is
all-or-nothing."""
import numpy as np
import pytest

import torsion


@pytest.fixture
def tree():
    return torsion.Model.floating_tree()


def test_nan_and_inf_inputs_are_refused_naming_the_argument(arm, solver):
    x0 = solver.initial_state(arm)
    u = np.zeros((3, 2))
    xs = torsion.rollout(arm, solver, x0, u)
    for bad in (np.nan, np.inf, -np.inf):
        x = x0.copy()
        x[1] = bad
        with pytest.raises(ValueError, match=r"x: entry \[1\] is .*finite"):
            torsion.step(arm, solver, x, u[0])
        with pytest.raises(ValueError, match=r"controls: entry \[2, 1\]"):
            ub = u.copy()
            ub[2, 1] = bad
            torsion.rollout(arm, solver, x0, ub)
        g = np.ones_like(xs)
        g[1, 0] = bad
        with pytest.raises(ValueError, match="dloss_dstates"):
            torsion.rollout_vjp(arm, solver, xs, u, g)
        d = np.zeros(solver.tangent_dim(arm))
        d[0] = bad
        with pytest.raises(ValueError, match="d: entry"):
            solver.retract(arm, x0, d)
        with pytest.raises(ValueError, match="q: entry"):
            solver.initial_state(arm, q=np.array([bad, 0.0]))
        with pytest.raises(ValueError, match="gravity"):
            arm.gravity = (0.0, bad, 0.0)
        with pytest.raises(ValueError, match="values"):
            arm.params_set(None, np.where(np.arange(arm.params_get().size) == 0, bad, arm.params_get()))


def test_nan_state_is_named_not_reported_as_an_indefinite_inertia(arm):
    q = np.array([np.nan, 0.0])
    for f, args in [(torsion.crba, (arm, q)), (torsion.aba, (arm, q, np.zeros(2), np.zeros(2)))]:
        with pytest.raises(ValueError, match="q: entry") as e:
            f(*args)
        assert "positive definite" not in str(e.value)


def test_dt_must_be_positive_and_at_most_one_second(arm, solver):
    x0 = solver.initial_state(arm)
    for dt in (0.0, -0.01, 1e6, 1.5, np.inf, np.nan):
        with pytest.raises(ValueError, match=r"dt must be in \(0, 1\] s"):
            torsion.step(arm, solver, x0, np.zeros(2), dt=dt)
        with pytest.raises(ValueError, match="dt"):
            arm.dt = dt
        with pytest.raises(ValueError, match="dt"):
            torsion.ModelBuilder(dt=dt)
    assert torsion.step(arm, solver, x0, np.zeros(2), dt=1.0).shape == x0.shape


def test_non_unit_quaternions_are_refused(tree):
    s = torsion.FeatherstoneSolver()
    x0 = s.initial_state(tree)
    q = tree.neutral_q()
    torsion.step(tree, s, x0, np.zeros(s.control_dim(tree)))
    # the free root's quaternion sits at q[3:7]
    bad = x0.copy()
    bad[3:7] *= 1.01
    with pytest.raises(ValueError, match=r"x: the quaternion at entries 3..7 has norm 1.01"):
        torsion.step(tree, s, bad, np.zeros(s.control_dim(tree)))
    with pytest.raises(ValueError, match="x0"):
        torsion.rollout(tree, s, bad, np.zeros((2, s.control_dim(tree))))
    with pytest.raises(ValueError, match=r"x0\[1\]"):
        torsion.rollout_batch(tree, s, np.stack([x0, bad]), np.zeros((2, s.control_dim(tree))))
    qb = q.copy()
    qb[3:7] = [2.0, 0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="q: the quaternion"):
        s.initial_state(tree, q=qb)
    # within the tolerance 1e-4 (float32 round-off, finite-difference probes): accepted
    ok = x0.copy()
    ok[3:7] *= 1 + 5e-5
    torsion.step(tree, s, ok, np.zeros(s.control_dim(tree)))
    # XPBD: every body's orientation
    xp = torsion.XpbdSolver()
    xa = xp.initial_state(tree)
    xa[13 + 3] = 0.5
    with pytest.raises(ValueError, match="x: the quaternion at entries 16..20"):
        torsion.step(tree, xp, xa, np.zeros(xp.control_dim(tree)))
    # a gradient is not a state: no unit-norm rule for grad_to_tangent's g
    s.grad_to_tangent(tree, x0, np.full(x0.size, 3.0))


def test_counts_are_checked_and_named():
    for kw in ("iterations", "substeps"):
        with pytest.raises(ValueError, match=f"{kw} must be an integer ≥ 1, got -1"):
            torsion.XpbdSolver(**{kw: -1})
    with pytest.raises(ValueError, match="iterations must be an integer ≥ 1, got 0"):
        torsion.XpbdSolver(iterations=0)
    with pytest.raises(ValueError, match="n_step must be an integer ≥ 1, got -3"):
        torsion.NcpSolver(n_step=-3)
    with pytest.raises(ValueError, match="pgs_sweeps must be an integer ≥ 1, got -1"):
        torsion.LcpSolver(pgs_sweeps=-1)


def test_builder_values_are_checked():
    b = torsion.ModelBuilder()
    b.add_fixed_body("a")
    with pytest.raises(ValueError, match="mass"):
        b.add_body("b", np.nan, np.eye(3))
    b.add_body("b", 1.0, np.eye(3))
    for d in (-5.0, np.nan):
        with pytest.raises(ValueError, match="damping"):
            b.add_joint("j", "revolute", 0, 1, damping=d)
    with pytest.raises(ValueError, match="limit"):
        b.add_joint("j", "revolute", 0, 1, limit=(1.0, -1.0))
    with pytest.raises(ValueError, match="inertia: entry"):
        b.add_body("c", 1.0, np.diag([1.0, np.nan, 1.0]))


def available_bytes():
    with open("/proc/meminfo") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith("MemAvailable:"))


def test_huge_results_raise_memory_error(arm):
    s = torsion.FeatherstoneSolver()
    x0 = s.initial_state(arm)
    n = x0.size
    # a result of ~3/4 of the memory available now: refused up front (the limit is half of it)
    b = 1000
    t_len = int(0.75 * available_bytes() / (8 * n * b))
    with pytest.raises(MemoryError, match="rollout_batch states: a float64 array of shape"):
        torsion.rollout_batch(arm, s, np.tile(x0, (b, 1)), np.zeros((t_len, 2)))
    # issue 20's case: a batch of 1000 with controls (200000, nu) = 22.4 GB for the Baxter arm aborted the
    # interpreter ("memory allocation of 22400112000 bytes failed")
    if 1000 * 200001 * n * 8 > available_bytes() / 2:
        with pytest.raises(MemoryError):
            torsion.rollout_batch(arm, s, np.tile(x0, (1000, 1)), np.zeros((200000, 2)))
    # far beyond any memory (3.2e13 bytes)
    with pytest.raises(MemoryError, match="rollout_batch"):
        torsion.rollout_batch(arm, s, np.tile(x0, (10**6, 1)), np.zeros((10**6, 2)))
    # the interpreter is still alive and an ordinary call works
    assert torsion.rollout_batch(arm, s, np.tile(x0, (2, 1)), np.zeros((3, 2))).shape == (2, 4, n)


def test_big_endian_float64_is_converted(arm, solver):
    x0 = solver.initial_state(arm)
    u = np.array([0.3, -0.2])
    ref = torsion.step(arm, solver, x0, u)
    got = torsion.step(arm, solver, x0.astype(">f8"), u.astype(">f8"))
    assert np.array_equal(ref, got)
    assert np.array_equal(torsion.crba(arm, np.array([0.1, 0.2], dtype=">f8")), torsion.crba(arm, [0.1, 0.2]))
    with pytest.raises(TypeError, match="dtype"):
        torsion.step(arm, solver, x0.astype(">i8"), u)


def test_params_set_is_all_or_nothing(arm):
    before = arm.params_get()
    names = ["body_mass[link1]", "body_mass[link2]"]
    with pytest.raises(ValueError, match=r"values: entry \[1\]|non-finite"):
        arm.params_set(names, [2.0, np.nan])  # refused: both masses as they were
    assert np.array_equal(arm.params_get(), before)
    with pytest.raises(ValueError, match="positive|> 0"):
        arm.params_set(names, [2.0, -1.0])
    assert np.array_equal(arm.params_get(), before)
    with pytest.raises(ValueError, match="twice"):
        arm.params_set(["body_mass[link1]", "body_mass[link1]"], [2.0, 3.0])
    assert np.array_equal(arm.params_get(), before)
