#!/usr/bin/env bash
# The test command (README, second line). Installs the Python reference packages it needs, then runs every
# Rust test (unit, gradient-vs-finite-difference, physics, real-robot) and the Python cross-checks.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check numpy example-robot-data
cargo test --workspace --locked
