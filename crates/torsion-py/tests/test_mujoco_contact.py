"""Impacts with restitution beside MuJoCo (issue 12): a head-on collision of two equal balls and Newton's cradle
(3 and 5 balls, 2.5 mm gaps, ε = 1) with torsion's contact stepper at the default speculative margin (1 cm), and
the same scenes in MuJoCo with an undamped (elastic) soft contact, solref = (−stiffness, 0). Both must transfer the
momentum ball to ball: torsion exactly (Newton's law), MuJoCo to within its soft-contact approximation. Before the
fix, torsion's contacts first seen inside the margin lost their restitution (head-on: (0.5, 0.5); cradle: the
three balls at 1/3)."""
import numpy as np
import pytest

import torsion

mujoco = pytest.importorskip("mujoco")

R = 0.05  # ball radius, m


def scene(n, gap):
    balls = "".join(
        f'<body name="b{k}" pos="{k * (2 * R + gap)} 0 0"><freejoint/>'
        f'<geom name="g{k}" type="sphere" size="{R}" mass="1" friction="0 0 0" solref="-1e7 0" solimp="0.99 0.99 0.001"/>'
        f"</body>"
        for k in range(n)
    )
    return f'<mujoco><option gravity="0 0 0" timestep="0.0001"/><worldbody>{balls}</worldbody></mujoco>'


def torsion_final(n, gap, v0, eps, steps, dt=0.001):
    m = torsion.load_mjcf(scene(n, gap))
    m.params_set([f"shape_restitution[g{k}]" for k in range(n)], [eps] * n)
    s = torsion.NcpSolver()
    v = np.zeros(6 * n)
    v[3] = v0  # ball 0: body-frame linear x (identity orientation)
    x0 = s.initial_state(m, v=v)
    xs = torsion.rollout(m, s, x0, np.zeros((steps, 6 * n)), dt)
    nq = 7 * n
    return np.array([xs[-1, nq + 6 * k + 3] for k in range(n)])


def mujoco_final(n, gap, v0, t_end):
    m = mujoco.MjModel.from_xml_string(scene(n, gap))
    d = mujoco.MjData(m)
    d.qvel[0] = v0  # world linear x of ball 0
    for _ in range(int(t_end / m.opt.timestep)):
        mujoco.mj_step(m, d)
    return np.array([d.qvel[6 * k] for k in range(n)])


def test_head_on_collision_keeps_restitution_at_the_default_margin():
    for eps, want in [(1.0, [0.0, 1.0]), (0.5, [0.25, 0.75])]:
        v = torsion_final(2, 5e-3, 1.0, eps, 40)
        assert np.abs(v - want).max() < 1e-9, (eps, v)
    vm = mujoco_final(2, 5e-3, 1.0, 0.04)
    print(f"head-on, ε = 1: torsion (0, 1) exactly; MuJoCo elastic soft contact {np.round(vm, 4)}")
    assert np.abs(vm - [0.0, 1.0]).max() < 0.02


@pytest.mark.parametrize("n", [3, 5])
def test_newtons_cradle_beside_mujoco(n):
    gap = 2.5e-3
    v = torsion_final(n, gap, 1.0, 1.0, 40 * n)
    vm = mujoco_final(n, gap, 1.0, 0.04 * n)
    want = np.zeros(n)
    want[-1] = 1.0
    print(f"cradle of {n}: torsion {np.round(v, 6)}, MuJoCo {np.round(vm, 4)}")
    assert np.abs(v - want).max() < 1e-9
    assert np.abs(vm - want).max() < 0.05
