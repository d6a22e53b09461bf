#!/usr/bin/env bash
# Randomized sweeps per solver (issue 20 item 5; RELIABILITY.md "Randomized sweeps"): ≥ 10,000 scenes each of
# xpbd, featherstone, tensegrity (Featherstone on the prism), ncp and lcp. Not CI (tests/sweep.rs runs a few
# hundred per solver there). Prints each solver's counts as JSON into results/sweep/SOLVER.json and fails if a
# solver gave a non-finite output that no error reported, or panicked.
#   scripts/sweep.sh [SCENES (default 10000)] [SEED (default 1)]
set -euo pipefail
cd "$(dirname "$0")/.."
SCENES=${1:-10000}
SEED=${2:-1}
cargo build --release -p torsion-bench --bin sweep
mkdir -p results/sweep
status=0
for s in featherstone xpbd ncp lcp tensegrity; do
    target/release/sweep --solver "$s" --scenes "$SCENES" --seed "$SEED" >"results/sweep/$s.json" || status=1
    python3 -c "import json,sys; d=json.load(open(sys.argv[1]))[sys.argv[2]]; print(sys.argv[2], {k: v for k, v in d.items() if v and k != 'examples'})" "results/sweep/$s.json" "$s"
done
exit $status
