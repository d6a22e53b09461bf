"""Bad inputs raise Python exceptions with the message; nothing crashes the interpreter."""
import numpy as np
import pytest

import torsion


def test_missing_file_names_the_file(tmp_path):
    p = tmp_path / "nope.urdf"
    with pytest.raises(FileNotFoundError, match="nope.urdf"):
        torsion.load_urdf(str(p))
    with pytest.raises(FileNotFoundError, match="nope.xml"):
        torsion.load_mjcf(str(tmp_path / "nope.xml"))


def test_malformed_files(tmp_path):
    p = tmp_path / "bad.urdf"
    p.write_text("<robot name='x'><link name='a'/><joint name='j' type='revolute'><parent link='a'/>")
    with pytest.raises(ValueError, match="bad.urdf"):
        torsion.load_urdf(str(p))
    with pytest.raises(ValueError, match="mine.xml"):
        torsion.Model.from_mjcf_string("<mujoco><worldbody><body><joint type='nonsense'/></body></worldbody></mujoco>",
                                       label="mine.xml")
    good = "<robot name='r'><link name='a'/></robot>"
    with pytest.raises(ValueError, match="nolink"):
        torsion.Model.from_urdf_string(good, root="nolink")


def test_unknown_parameter(arm):
    with pytest.raises(ValueError, match="unknown parameter name 'body_mass\\[nolink\\]'"):
        arm.params_get(["body_mass[nolink]"])
    with pytest.raises(ValueError, match="unknown parameter"):
        torsion.rollout_vjp(arm, torsion.XpbdSolver(), np.zeros((2, 39)), np.zeros((1, 2)), np.zeros((2, 39)),
                            param_names=["mass"])


def test_invalid_parameter_value_leaves_model(arm):
    before = arm.params_get()
    with pytest.raises(ValueError):
        arm.params_set(["body_mass[link1]"], [-1.0])
    with pytest.raises(ValueError):
        arm.params_set(["body_mass[link1]"], [np.nan])
    with pytest.raises(ValueError, match="expected shape \\(2,\\)"):
        arm.params_set(["body_mass[link1]", "body_mass[link2]"], [1.0])
    np.testing.assert_array_equal(arm.params_get(), before)


def test_wrong_shapes(arm, solver):
    n = solver.state_dim(arm)
    x0 = solver.initial_state(arm)
    with pytest.raises(ValueError, match=f"x: expected shape \\({n},\\), got \\({n + 1},\\)"):
        torsion.step(arm, solver, np.zeros(n + 1), np.zeros(2))
    with pytest.raises(ValueError, match="u: expected shape"):
        torsion.step(arm, solver, x0, np.zeros(3))
    with pytest.raises(ValueError, match="controls: expected shape \\(T, 2\\)"):
        torsion.rollout(arm, solver, x0, np.zeros(5))
    with pytest.raises(ValueError, match="controls"):
        torsion.rollout(arm, solver, x0, np.zeros((5, 3)))
    xs = torsion.rollout(arm, solver, x0, np.zeros((4, 2)))
    with pytest.raises(ValueError, match="states: expected shape"):
        torsion.rollout_vjp(arm, solver, xs[:3], np.zeros((4, 2)), np.zeros_like(xs))
    with pytest.raises(ValueError, match="dloss_dstates"):
        torsion.rollout_vjp(arm, solver, xs, np.zeros((4, 2)), np.zeros((5, n + 1)))
    with pytest.raises(ValueError, match="q: expected shape"):
        torsion.crba(arm, np.zeros(3))


def test_wrong_dtypes(arm, solver):
    x0 = solver.initial_state(arm)
    with pytest.raises(TypeError, match="controls: expected a float64 \\(or float32, up-cast\\) array, got dtype int64"):
        torsion.rollout(arm, solver, x0, np.zeros((3, 2), dtype=np.int64))
    with pytest.raises(TypeError, match="x: expected a float64 .* got dtype float16"):
        torsion.step(arm, solver, x0.astype(np.float16), np.zeros(2))
    with pytest.raises(TypeError, match="q: .* got dtype complex128"):
        torsion.crba(arm, np.zeros(2, dtype=complex))
    with pytest.raises(TypeError):
        torsion.step(arm, solver, ["a", "b"], np.zeros(2))
    with pytest.raises(TypeError):
        torsion.step(arm, "not a solver", x0, np.zeros(2))
    with pytest.raises(TypeError):
        torsion.step("not a model", solver, x0, np.zeros(2))


def test_bad_values(arm, solver):
    x0 = solver.initial_state(arm)
    with pytest.raises(ValueError, match="dt"):
        torsion.step(arm, solver, x0, np.zeros(2), dt=-0.01)
    with pytest.raises(ValueError, match=r"u: entry \[0\] is NaN"):
        torsion.step(arm, solver, x0, np.array([np.nan, 0.0]))
    assert issubclass(torsion.SimulationError, RuntimeError)
    with pytest.raises(ValueError, match="ordering"):
        torsion.XpbdSolver(ordering="random")
    with pytest.raises(ValueError, match="substeps"):
        torsion.XpbdSolver(substeps=0)
    with pytest.raises(ValueError, match="unknown joint kind"):
        b = torsion.ModelBuilder()
        b.add_fixed_body("a")
        b.add_body("b", 1.0, np.eye(3))
        b.add_joint("j", "screw", 0, 1)
    with pytest.raises(IndexError):
        torsion.ModelBuilder().add_joint("j", "revolute", 0, 1)
    with pytest.raises(ValueError, match="inertia"):
        torsion.ModelBuilder().add_body("b", 1.0, np.eye(2))


def test_state_still_usable_after_errors(arm, solver):
    x0 = solver.initial_state(arm)
    for _ in range(3):
        with pytest.raises(ValueError):
            torsion.step(arm, solver, x0, np.zeros(5))
    assert torsion.step(arm, solver, x0, np.zeros(2)).shape == x0.shape


def test_float32_is_up_cast_on_every_path(arm, solver):
    """One rule (docs/decisions.md "float32 from Python"): a float32 array is up-cast exactly to float64 and the
    result is float64, the same as for the up-cast array — on a rollout path and a dynamics-function path (before:
    TypeError on the NumPy paths while the torch path accepted float32)."""
    x0 = solver.initial_state(arm).astype(np.float32)
    u = (0.3 * np.ones((5, 2))).astype(np.float32)
    xs = torsion.rollout(arm, solver, x0, u)
    assert xs.dtype == np.float64
    np.testing.assert_array_equal(xs, torsion.rollout(arm, solver, x0.astype(np.float64), u.astype(np.float64)))
    g = torsion.rollout_vjp(arm, solver, xs.astype(np.float32), u, np.ones(xs.shape, dtype=np.float32))
    g64 = torsion.rollout_vjp(arm, solver, xs.astype(np.float32).astype(np.float64), u.astype(np.float64),
                              np.ones(xs.shape))
    np.testing.assert_array_equal(g.controls, g64.controls)
    q, v, tau = (np.array(a, dtype=np.float32) for a in ([0.3, -0.2], [0.1, 0.5], [1.0, -2.0]))
    qdd = torsion.aba(arm, q, v, tau)
    assert qdd.dtype == np.float64
    np.testing.assert_array_equal(qdd, torsion.aba(arm, *(a.astype(np.float64) for a in (q, v, tau))))
    np.testing.assert_array_equal(torsion.crba(arm, q), torsion.crba(arm, q.astype(np.float64)))


def test_python_terms_in_errors(arm):
    """Messages name Python arguments and attributes, not Rust APIs."""
    with pytest.raises(ValueError, match="model.param_names") as e:
        arm.params_get(["body_mass[nolink]"])
    assert "::" not in str(e.value)
    with pytest.raises(ValueError, match="no parameter name starts with"):
        arm.params_select("nope[")
    with pytest.raises(TypeError, match="unexpected keyword argument 'iteratons'"):
        torsion.XpbdSolver(iteratons=3)
    with pytest.raises(TypeError, match="unexpected keyword argument 'dtt'"):
        torsion.rollout(arm, torsion.XpbdSolver(), np.zeros(39), np.zeros((1, 2)), dtt=0.1)
    with pytest.raises(TypeError, match="solver: expected torsion.XpbdSolver, .*torsion.LcpSolver"):
        torsion.step(arm, object(), np.zeros(39), np.zeros(2))
