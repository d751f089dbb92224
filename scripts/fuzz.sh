#!/usr/bin/env bash
# Runs rein's fuzz targets one after another with cargo-fuzz.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# SECONDS is the time per target (default 60); without targets, every target in
# fuzz/Cargo.toml runs. One job and one worker each (the machine is shared). cargo-fuzz needs
# nightly features; on a stable toolchain RUSTC_BOOTSTRAP=1 turns them on. The code is safe
# Rust, so no sanitizer is used (-s none), which keeps builds and runs fast. FUZZ_ARGS adds
# libFuzzer flags, e.g. FUZZ_ARGS="-fork=1 -ignore_crashes=1" to go on past a known crash.
# FUZZ_NO_BUILD=1 runs the binaries as they are.
#
# All targets are built first and then run from the built binaries, so sources that change
# while the campaign runs (the tree is shared) do not trigger rebuilds between targets.
#
# New inputs go to fuzz/target/work-corpus/<target> (the committed seeds in fuzz/corpus/ are
# only read); crashes land in fuzz/artifacts/<target>/. A summary line per target (executions,
# coverage, features, corpus size, crashes) is appended to fuzz/target/fuzz-summary.txt, and
# the full libFuzzer log goes to fuzz/target/logs/<target>.log.
set -euo pipefail

seconds="${1:-60}"
shift || true
root="$(cd "$(dirname "$0")/.." && pwd)"
fuzz_dir="$root/fuzz"
export RUSTC_BOOTSTRAP=1

if ! command -v cargo-fuzz >/dev/null 2>&1; then
    echo "cargo-fuzz is missing; installing it" >&2
    cargo install cargo-fuzz --locked
fi

if [ "$#" -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cd "$fuzz_dir" && cargo fuzz list)
fi

if [ -z "${FUZZ_NO_BUILD:-}" ]; then
    (cd "$fuzz_dir" && cargo fuzz build -s none)
fi
bin_dir="$fuzz_dir/target/$(rustc -vV | sed -n 's/^host: //p')/release"

mkdir -p "$fuzz_dir/target/logs"
summary="$fuzz_dir/target/fuzz-summary.txt"
status=0
for target in "${targets[@]}"; do
    work="$fuzz_dir/target/work-corpus/$target"
    seeds="$fuzz_dir/corpus/$target"
    log="$fuzz_dir/target/logs/$target.log"
    mkdir -p "$work" "$seeds"
    echo "== $target: ${seconds}s" >&2
    started="$(date -u +%H:%M:%S)"
    set +e
    mkdir -p "$fuzz_dir/artifacts/$target"
    # -jobs=1 runs the fuzzer in one child process whose output goes to fuzz-0.log in the
    # current directory; run it from the log directory and keep that file as the log.
    (cd "$fuzz_dir/target/logs" && rm -f fuzz-0.log && "$bin_dir/$target" "$work" "$seeds" \
        -artifact_prefix="$fuzz_dir/artifacts/$target/" -max_total_time="$seconds" \
        -jobs=1 -workers=1 -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 ${FUZZ_ARGS:-}) >"$log.outer" 2>&1
    code=$?
    set -e
    if [ -f "$fuzz_dir/target/logs/fuzz-0.log" ]; then
        mv -f "$fuzz_dir/target/logs/fuzz-0.log" "$log"
    else
        cp "$log.outer" "$log"
    fi
    crashes="$(find "$fuzz_dir/artifacts/$target" -type f 2>/dev/null | wc -l)"
    last="$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)"
    execs="$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}' || true)"
    line="$(date -u +%F) $started $target ${seconds}s exit=$code execs=${execs:-?} crashes=$crashes last: $last"
    echo "$line" | tee -a "$summary" >&2
    if [ "$code" -ne 0 ]; then
        status=1
        grep -E 'panicked at|SUMMARY|Test unit written' "$log" >&2 || true
    fi
done
exit "$status"
