#!/usr/bin/env bash
# The long crash campaign: the CI test tests/tests/stress_crash.rs with more kills.
#
#   scripts/crash-campaign.sh [KILLS] [SEED]
#
# KILLS defaults to 200. SEED replays an earlier run (each run prints its seed). Runs the
# release build (faster daemon restarts); the summary line at the end gives the kills, the
# sessions and entries checked and how many kills landed in each phase.
set -euo pipefail

kills="${1:-200}"
root="$(cd "$(dirname "$0")/.." && pwd)"
export REIN_CRASH_KILLS="$kills"
if [ -n "${2:-}" ]; then
    export REIN_CRASH_SEED="$2"
fi
cd "$root"
cargo test --release -p rein-testkit --test stress_crash -- --nocapture
