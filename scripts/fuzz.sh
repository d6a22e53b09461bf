#!/usr/bin/env bash
# cargo-fuzz over every reader of a user file (issue 20 item 4; RELIABILITY.md "Fuzzing"): the URDF and MJCF
# loaders, the STL / OBJ / DAE mesh readers (+ the convex hull), the viewer's trajectory JSON. Not CI.
#   [FUZZ_JOBS=N] scripts/fuzz.sh [SECONDS_PER_TARGET (default 600)] [TARGET ...]
# Needs the nightly toolchain and `cargo install cargo-fuzz`. FUZZ_JOBS targets at a time (default 1), each one
# libFuzzer process under `nice -n 19` (shared machines). The corpus is seeded from real models: example-robot-data (URDF, meshes), dm_control's suite
# (MJCF, fetched by the Rust tests into target/dm_control_suite), the repository's tests/data, ../shared/models.
# Each target's libFuzzer summary goes to fuzz/logs/TARGET.log; crashes to fuzz/artifacts/TARGET/ (each one
# fixed gets its minimized input under tests/data/fuzz/ with a regression test).
set -uo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-600}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=(urdf mjcf stl obj dae trajectory)
ROBOTS=$(python3 -c "
import site, sysconfig, os
for d in [sysconfig.get_paths()['purelib'], *site.getsitepackages(), site.getusersitepackages()]:
    p = os.path.join(d, 'cmeel.prefix/share/example-robot-data/robots')
    if os.path.isdir(p): print(p); break" 2>/dev/null)
DM=${TORSION_DM_CONTROL_DIR:-$(ls -d target/dm_control_suite/*/ 2>/dev/null | head -1)}
MAXLEN=131072

seed() { # seed TARGET FILE... : copy files under MAXLEN bytes into the target's corpus
    local t=$1; shift
    mkdir -p "fuzz/corpus/$t"
    for f in "$@"; do
        [ -f "$f" ] && [ "$(stat -c %s "$f")" -le $MAXLEN ] && cp "$f" "fuzz/corpus/$t/$(echo "$f" | md5sum | cut -c1-16)-$(basename "$f")"
    done
}
files() { find "$@" -type f 2>/dev/null; }
seed urdf $(files ${ROBOTS:+"$ROBOTS"} crates tests -iname '*.urdf')
seed mjcf $(files ${DM:+"$DM"} crates/*/tests ../shared/models tests -iname '*.xml')
for e in stl obj dae; do seed $e $(find ${ROBOTS:+"$ROBOTS"} crates tests -iname "*.$e" -size -128k 2>/dev/null | head -100); done
seed trajectory $(files crates/*/tests tests -iname '*.json')
[ -d tests/data/fuzz ] && for t in "${TARGETS[@]}"; do seed "$t" $(files tests/data/fuzz/"$t"); done

mkdir -p fuzz/logs
cd fuzz
nice -n 19 cargo +nightly fuzz build -O -a -s none || exit 1
JOBS=${FUZZ_JOBS:-1}
run() { # run TARGET: its libFuzzer exit status goes to logs/TARGET.rc
    mkdir -p "artifacts/$1"
    nice -n 19 cargo +nightly fuzz run -O -a -s none "$1" -- -max_total_time="$SECS" -max_len=$MAXLEN \
        -rss_limit_mb=2048 -timeout=20 -print_final_stats=1 >"logs/$1.log" 2>&1
    echo $? >"logs/$1.rc"
}
for t in "${TARGETS[@]}"; do
    echo "== $t: $(ls corpus/$t | wc -l) seeds, ${SECS}s"
    run "$t" &
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
done
wait
status=0
for t in "${TARGETS[@]}"; do
    echo "== $t (exit $(cat "logs/$t.rc"))"
    [ "$(cat "logs/$t.rc")" = 0 ] || status=1
    grep -E '^#[0-9]+.*(DONE|pulse)|stat::number_of_executed_units|stat::peak_rss_mb|cov:' "logs/$t.log" | tail -3
    # libFuzzer also saves inputs slower than 10 s as slow-unit-*: not failures (-timeout=20 makes a crash)
    echo "   crashes: $(ls "artifacts/$t" | grep -vc '^slow-unit-'), slow units: $(ls "artifacts/$t" | grep -c '^slow-unit-')"
done
exit $status
