"""docs/quickstart.md stays true: its Python code blocks run, in order, in one namespace, and the fit recovers the
masses (issue 21 item 6)."""
import pathlib
import re

import numpy as np
import pytest

DOC = pathlib.Path(__file__).resolve().parents[3] / "docs" / "quickstart.md"


def blocks():
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def test_quickstart_runs_and_fits():
    code = blocks()
    assert len(code) >= 4, "the quick start lost its code blocks"
    lines = sum(len([l for l in b.splitlines() if l.strip()]) for b in code)
    assert lines <= 30, f"the quick start grew to {lines} lines"
    import torsion

    try:
        torsion.models.load("baxter_left_arm")
    except ValueError as e:  # pip's example-robot-data absent (scripts/test.sh installs it)
        pytest.skip(str(e))
    ns = {}
    for i, b in enumerate(code):
        exec(compile(b, f"{DOC}:block{i + 1}", "exec"), ns)
    assert ns["g"].params.shape == (3,) and np.all(ns["g"].params != 0)
    np.testing.assert_allclose(ns["theta"], ns["truth"], rtol=1e-6)
    # the sysid block: every joint's damping back to 0.3 (rtol 1e-3: the 10 Hz filter's bias is ~1e-5 here)
    fit = ns["fit"]
    damping = [fit.estimates[f"damping[{j}]"] for j in ns["pb"].model.joint_name if f"damping[{j}]" in fit.estimates]
    assert len(damping) == 7
    np.testing.assert_allclose(damping, 0.3, rtol=1e-3)
