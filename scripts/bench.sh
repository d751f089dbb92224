#!/usr/bin/env bash
# The benchmarks of docs/benchmarks.md that need the release daemon, in one go:
#
#   scripts/bench.sh [all|growth|bounds|cold] [--keep]
#
# - growth: warm two-request task time and daemon CPU per request at 10 / 1,000 / 10,000 /
#   100,000 entries (large context window, no compaction), each against a floor measured in
#   the same run (the same two request bodies posted by a minimal client plus one process
#   spawn); then the 100,000-entry session opened through the CLI and the daemon's RSS
#   (tests/tests/bench_history_growth.rs). BENCH_SIZES and BENCH_ROUNDS override the sizes
#   and rounds.
# - bounds: the "Daemon bounds" figures: fds and RSS over many `rein run`s (BENCH_RUNS,
#   default 10,000), pipelining and partial-line clients, RSS per idle session and per
#   buffered event, RSS after closing sessions (tests/tests/bench_daemon_bounds.rs).
# - cold: one-shot `rein run` with the daemon up (warm) and with no daemon (cold), each
#   against the floor of spawning a trivial process (client-cli/benches/run_wall_time.rs).
#
# Builds --release first. Prints the machine it ran on. Deletes target/release at the end
# unless --keep is given (it is large and the disk is shared).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
what="${1:-all}"
keep=no
for arg in "$@"; do
    [ "$arg" = "--keep" ] && keep=yes
done

echo "## machine"
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "cpus: $(nproc); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "memory: $(free -g | awk '/Mem:/ {print $2 " GiB"}')"
echo "kernel: $(uname -sr); $(rustc --version)"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

cargo build --release -p rein-daemon -p rein-cli --bins

run_growth() {
    echo "## cost per turn as history grows"
    cargo test --release -p rein-testkit --test bench_history_growth -- \
        --ignored --nocapture --test-threads 1
}

run_bounds() {
    echo "## daemon bounds"
    cargo test --release -p rein-testkit --test bench_daemon_bounds -- \
        --ignored --nocapture --test-threads 1
}

run_cold() {
    echo "## one-shot run, warm and cold"
    cargo bench -p rein-cli --bench run_wall_time
}

case "$what" in
    growth) run_growth ;;
    bounds) run_bounds ;;
    cold) run_cold ;;
    all) run_growth; run_bounds; run_cold ;;
    *) echo "usage: scripts/bench.sh [all|growth|bounds|cold] [--keep]" >&2; exit 2 ;;
esac
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

if [ "$keep" = no ]; then
    rm -rf "$root/target/release"
fi
