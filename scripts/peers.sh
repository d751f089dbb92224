#!/usr/bin/env bash
# rein side by side with other coding agents against one scripted fake provider on 127.0.0.1.
#
#   scripts/peers.sh [PEERS]
#
# PEERS is a comma-separated list (default pi,codex,opencode). Installs the agents into
# $REIN_PEERS_DIR (default /tmp/peers) from the npm registry when missing, then runs the
# ignored test tests/tests/stress_peers.rs in release mode, which prints one markdown table
# row per agent. mini-swe-agent is not run: it asks for non-streamed completions, and the fake
# provider only streams.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
export REIN_PEERS_DIR="${REIN_PEERS_DIR:-/tmp/peers}"
export REIN_PEERS="${1:-pi,codex,opencode}"
mkdir -p "$REIN_PEERS_DIR"
if [ ! -x "$REIN_PEERS_DIR/npm/node_modules/.bin/pi" ] \
    || [ ! -x "$REIN_PEERS_DIR/npm/node_modules/.bin/codex" ] \
    || [ ! -x "$REIN_PEERS_DIR/npm/node_modules/.bin/opencode" ]; then
    npm install --prefix "$REIN_PEERS_DIR/npm" \
        @mariozechner/pi-coding-agent @openai/codex opencode-ai
fi
cd "$root"
cargo test --release -p rein-testkit --test stress_peers -- --ignored --nocapture
