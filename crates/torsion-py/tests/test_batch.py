"""The batched rollout equals sequential rollouts exactly, runs with the GIL released."""
import threading
import time

import numpy as np
import pytest

import torsion
from conftest import controls


def test_batch_equals_sequential(arm, solver):
    B, T = 6, 25
    rng = np.random.default_rng(0)
    x0s = np.stack([solver.initial_state(arm, rng.uniform(-1, 1, 2)) for _ in range(B)])
    us = np.stack([controls(T, 2, seed=b) for b in range(B)])
    names = ["body_mass[link1]", "body_mass[link2]"]
    ps = rng.uniform(0.5, 2.0, (B, 2))
    out = torsion.rollout_batch(arm, solver, x0s, us, ps, names)
    assert out.shape == (B, T + 1, solver.state_dim(arm))
    for b in range(B):
        seq = torsion.rollout(arm.with_params(names, ps[b]), solver, x0s[b], us[b])
        np.testing.assert_array_equal(out[b], seq)


def test_batch_broadcasting(arm, solver):
    x0 = solver.initial_state(arm, [0.2, 0.1])
    us = np.stack([controls(10, 2, seed=b) for b in range(3)])
    out = torsion.rollout_batch(arm, solver, x0, us)
    assert out.shape[0] == 3
    for b in range(3):
        np.testing.assert_array_equal(out[b], torsion.rollout(arm, solver, x0, us[b]))
    one = torsion.rollout_batch(arm, solver, x0, us[0])
    assert one.shape[0] == 1
    masses = np.array([[1.0, 1.0], [2.0, 0.5]])
    out = torsion.rollout_batch(arm, solver, x0, us[0], masses, ["body_mass[link1]", "body_mass[link2]"])
    assert out.shape[0] == 2 and not np.array_equal(out[0], out[1])


def test_batch_size_mismatch(arm, solver):
    x0s = np.stack([solver.initial_state(arm)] * 3)
    with pytest.raises(ValueError, match="batch sizes differ"):
        torsion.rollout_batch(arm, solver, x0s, np.zeros((2, 5, 2)))


def test_batch_releases_gil(arm):
    """A Python thread keeps running while a long batch runs."""
    s = torsion.XpbdSolver()
    x0 = s.initial_state(arm)
    us = np.zeros((8, 400, 2))
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    th = threading.Thread(target=ticker)
    th.start()
    t0 = time.perf_counter()
    torsion.rollout_batch(arm, s, x0, us)
    t1 = time.perf_counter()
    stop.set()
    th.join()
    during = [t for t in ticks if t0 < t < t1]
    assert t1 - t0 < 0.02 or len(during) >= 3, (t1 - t0, len(during))
