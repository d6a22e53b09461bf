#!/usr/bin/env bash
# Re-measure every benchmark of BENCHMARKS.md in one go (issue 13: "benchmarks re-measured in one run each"), on an
# idle machine: each script times torsion and its reference in the same process run and reports the ratio. Logs go
# to results/bench/NAME.log, the scripts' JSON to target/bench/. Needs the Python package (`pip install
# ./crates/torsion-py`), mujoco, pin, torch and jax (pip) and Eigen (apt libeigen3-dev) for their sections; a section whose reference is missing is
# reported and skipped, never faked. Takes ~30–40 min on the 2-core machine. Usage: bench/all.sh [NAME ...]
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p results/bench
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs, $(date -u +%FT%TZ)"
run() { # name, command...
    local name=$1; shift
    if [ ${#SEL[@]} -gt 0 ] && [[ ! " ${SEL[*]} " =~ " $name " ]]; then return; fi
    echo "== $name: $*"
    local t0=$SECONDS
    if "$@" >"results/bench/$name.log" 2>&1; then
        echo "   ok in $((SECONDS - t0)) s (load $(cut -d' ' -f1 /proc/loadavg)); tail:"; tail -n 12 "results/bench/$name.log" | sed 's/^/   /'
    else
        echo "   FAILED (exit $?) in $((SECONDS - t0)) s: see results/bench/$name.log"; tail -n 5 "results/bench/$name.log" | sed 's/^/   /'
    fi
}
SEL=("$@")
cargo build --release -p torsion-bench --bins --quiet || exit 1
run xpbd_baxter python3 bench/xpbd_baxter.py
run featherstone_mujoco python3 bench/featherstone_mujoco.py --repeats 21
run featherstone_param_grad cargo run --release --quiet -p torsion-bench --bin featherstone_param_grad -- --repeats 7 --steps 200
run dynamics_pinocchio python3 bench/dynamics_pinocchio.py
run ncp_step cargo run --release --quiet -p torsion-bench --bin ncp_step
run contact_scaling python3 bench/contact_scaling.py
run python_overhead python3 bench/python_overhead.py --repeats 9
run sysid_gen python3 bench/sysid/gen.py
run sysid_cost python3 bench/sysid_cost.py --repeats 3
run xpbd_mpc python3 bench/xpbd_mpc.py --torch-repeats 3 --jax-repeats 21
run tensegrity_mujoco python3 bench/tensegrity_mujoco.py --repeats 7
run jade_mujoco python3 bench/jade_mujoco.py
run collision_detect cargo bench -q -p torsion-collision --bench detect
# not here: the QCQP against the seed's C++ solver (`bench/diffqcqp_e0.py --module-dir DIR`) needs the seed's
# diffqcqp module built by hand (BENCHMARKS.md "Contact (spec 001)")
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
