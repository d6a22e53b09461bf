"""torsion.view (issue 18 item 3): a rollout's states -> the viewer page; the path comes back as a ViewPage
(a str) whose _repr_html_ embeds the page in an iframe (Jupyter). The page itself is checked in a browser by
crates/torsion-cli/tests/browser.rs."""
import html
import json
import re

import numpy as np
import pytest

import torsion


def _page_data(text):
    m = re.search(r'<script type="application/json" id="torsion-data">(.*?)</script>', text, re.S)
    return json.loads(m.group(1).replace("<\\/", "</"))


def test_view_writes_the_page_with_the_rollout_poses(tmp_path):
    m = torsion.models.load("two_link_arm")
    solver = torsion.FeatherstoneSolver()
    x0 = solver.initial_state(m, [0.4, -0.2])
    xs = torsion.rollout(m, solver, x0, np.zeros((20, solver.control_dim(m))))
    page = torsion.view(m, xs, tmp_path / "sub" / "arm.html", solver=solver, names=["arm"])
    assert isinstance(page, str) and page == str(tmp_path / "sub" / "arm.html")
    text = open(page, encoding="utf-8").read()
    assert text == page.html
    data = _page_data(text)
    (t,) = data["trajectories"]
    assert t["name"] == "arm" and len(t["time"]) == 21
    assert t["time"][1] == pytest.approx(m.dt)
    # joint coordinates are the rollout's q; the body poses its forward kinematics
    np.testing.assert_allclose(np.array(t["joint_angles"]), xs[:, : m.nq], rtol=0, atol=0)
    assert len(t["body_poses"][0]) == m.body_count
    # Jupyter: an iframe holding the whole page, escaped
    frame = page._repr_html_()
    assert frame.startswith("<iframe") and html.unescape(frame.split('srcdoc="', 1)[1][:-len('"></iframe>')]) == text


def test_view_overlays_and_infers_the_solver():
    m = torsion.models.load("two_link_arm")
    xp = torsion.XpbdSolver()
    x0 = xp.initial_state(m, [0.4, -0.2])
    a = torsion.rollout(m, xp, x0, np.zeros((5, xp.control_dim(m))))
    b = torsion.rollout(m, xp, xp.initial_state(m, [0.0, 0.3]), np.zeros((8, xp.control_dim(m))))
    page = torsion.view(m, [a, b])  # XPBD layout inferred from the width, a temporary file
    data = _page_data(page.html)
    assert [len(t["time"]) for t in data["trajectories"]] == [6, 9]
    # XPBD states carry the poses: body 1's position is the state's x
    np.testing.assert_allclose(data["trajectories"][1]["body_poses"][8][1][:3], b[8, 13:16], atol=0)


def test_view_errors_name_the_argument():
    m = torsion.models.load("two_link_arm")
    with pytest.raises(ValueError, match=r"states 0: expected states of shape \(T \+ 1, "):
        torsion.view(m, np.zeros((3, 5)), solver=torsion.FeatherstoneSolver())
    with pytest.raises(ValueError, match="1 names for 2 state arrays"):
        torsion.view(m, [np.zeros((1, 4)), np.zeros((1, 4))], solver=torsion.FeatherstoneSolver(), names=["a"])
