#!/usr/bin/env bash
# The worked example of docs/batch.md: runs examples/batch/tasks.jsonl with 3 workers against
# a private daemon whose providers are scripted fake providers, one per task.
#
#   cargo build --workspace --bins
#   bash examples/batch/run.sh OUT_DIR
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${REIN_BIN_DIR:-$here/../../target/debug}"
out="${1:?usage: run.sh OUT_DIR}"
home="$(mktemp -d)"
pids=()
cleanup() {
  REIN_HOME="$home" "$bin/rein" --socket "$home/reind.sock" daemon stop >/dev/null 2>&1 || true
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$home"
}
trap cleanup EXIT

config="$home/config.toml"
printf 'model = "calc/fake-model"\n\n[retry]\nmax_retries = 0\n' >"$config"
for task in calc greet maximum shout count; do
  "$bin/rein-fake-provider" --loop "$here/scripts/$task.json" >"$home/$task.url" &
  pids+=("$!")
  for _ in $(seq 100); do [ -s "$home/$task.url" ] && break; sleep 0.05; done
  url="$(head -n 1 "$home/$task.url")"
  cat >>"$config" <<TOML

[providers.$task]
api = "openai-chat"
base_url = "$url"
api_key_env = ""

[providers.$task.models."fake-model"]
context_window = 32768
cost = { input = 3.0, output = 15.0, cache_read = 0.3, cache_write = 3.75 }
TOML
done

export REIN_HOME="$home" REIN_DAEMON_BIN="$bin/reind"
"$bin/rein" --socket "$home/reind.sock" batch "$here/tasks.jsonl" --out "$out" --workers 3
