#!/usr/bin/env bash
# The test command (README, second line). Installs the Python reference packages it needs, then runs every
# Rust test (unit, gradient-vs-finite-difference, physics, real-robot, CLI) and the Python cross-checks.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check numpy example-robot-data pin mujoco
cargo test --workspace --locked
# cross-checks against reference libraries, through the CLI binary the tests just built (the Rust tests also
# fetched dm_control's suite XMLs into target/dm_control_suite)
export TORSION_BIN="$PWD/target/debug/torsion"
python3 tests/python/test_pinocchio.py
python3 tests/python/test_mujoco.py
python3 tests/python/test_mujoco_step.py
