#!/usr/bin/env bash
# The test command (README, second line). Installs the Python reference packages it needs, then runs every
# Rust test (unit, gradient-vs-finite-difference, physics, real-robot, CLI), the Python cross-checks, and
# builds + installs the `torsion` Python package (crates/torsion-py, maturin) and runs its pytest suite.
set -euo pipefail
cd "$(dirname "$0")/.."
PIP="python3 -m pip install --quiet --disable-pip-version-check"
$PIP numpy example-robot-data pin mujoco pytest
# Ray for torsion.sysid.fit_ray's test (crates/torsion-py/tests/test_sysid.py starts a local 2-CPU cluster)
$PIP ray
# torch for the Python package's autograd tests: PyPI's Linux wheel pulls ~5 GB of CUDA packages, so only CI
# (CI=true) or TORSION_TEST_TORCH=1 installs it; elsewhere its tests are skipped unless torch is already there
if ! python3 -c "import torch" 2>/dev/null; then
    if [ "${CI:-}" = "true" ] || [ "${TORSION_TEST_TORCH:-}" = "1" ]; then
        $PIP torch
    else
        echo "torch is not installed: its tests are skipped (TORSION_TEST_TORCH=1 installs it, ~5 GB)"
    fi
fi
# headless Chromium for the viewer's browser test (crates/torsion-cli/tests/browser.rs; it skips without one
# unless CI=true); CI runs as root
if [ "${CI:-}" = "true" ] && ! command -v chromium >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
fi
# default members: every crate but the Python extension (crates/torsion-py, built by maturin below). --release:
# the release profile and the same dependency features as the README's first command, so its build (~175
# crates) is reused and only the test targets compile (issue 21 item 7; a debug `cargo test` rebuilt everything)
cargo test --locked --release
# cross-checks against reference libraries, through the CLI binary the tests just built (the Rust tests also
# fetched dm_control's suite XMLs into target/dm_control_suite)
export TORSION_BIN="$PWD/target/release/torsion"
python3 tests/python/test_pinocchio.py
python3 tests/python/test_mujoco.py
python3 tests/python/test_mujoco_step.py
python3 tests/python/test_mujoco_actuators.py
python3 tests/python/test_mujoco_integrators.py
python3 tests/python/test_mujoco_frictionloss.py
python3 tests/python/test_tensegrity_air.py
python3 -m pytest -q tests/python/test_tensegrity_gt.py
# the Python package: build with maturin (pip's build backend) and run its tests
$PIP ./crates/torsion-py
python3 -m pytest -q crates/torsion-py/tests
