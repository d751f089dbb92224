#!/usr/bin/env bash
# The long load test: tests/tests/stress_load.rs with 50 sessions and 200 clients.
#
#   scripts/load-test.sh [SESSIONS] [CLIENTS] [RUNS] [PHASES]
#
# Defaults: 50 sessions, 200 clients attached across them, 10 runs per session in 2 phases.
# Runs the release build and prints throughput, latency percentiles and the daemon's RSS
# after each phase.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
export REIN_LOAD_SESSIONS="${1:-50}"
export REIN_LOAD_CLIENTS="${2:-200}"
export REIN_LOAD_RUNS="${3:-10}"
export REIN_LOAD_PHASES="${4:-2}"
cd "$root"
cargo test --release -p rein-testkit --test stress_load -- --nocapture
