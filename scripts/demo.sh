#!/usr/bin/env bash
# A rein run with no account and no network: the scripted fake provider plays the model.
#
#   scripts/demo.sh            # builds (release), then runs one tool-using prompt
#
# Everything lives in a temporary REIN_HOME and is removed afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p rein-daemon -p rein-cli -p rein-testkit --bins
bin=target/release
home=$(mktemp -d)
project=$(mktemp -d)
trap 'REIN_HOME=$home $bin/rein daemon stop >/dev/null 2>&1 || true; kill ${fake_pid:-0} 2>/dev/null || true; rm -rf "$home" "$project"' EXIT

printf 'fn main() {\n    println!("hello from the demo project");\n}\n' > "$project/main.rs"
cat > "$home/script.json" <<'JSON'
[
  {"thinking": "Let me look at the project first.",
   "tool_calls": [{"name": "ls", "arguments": {}}]},
  {"tool_calls": [{"name": "read", "arguments": {"path": "main.rs"}}]},
  {"text": "This project has one file, `main.rs`, whose `main` prints a greeting."}
]
JSON
coproc FAKE { "$bin/rein-fake-provider" "$home/script.json" --port 0; }
fake_pid=$FAKE_PID
read -r base_url <&"${FAKE[0]}"
cat > "$home/config.toml" <<TOML
model = "demo/scripted-model"
[providers.demo]
api = "openai-chat"
base_url = "$base_url"
TOML
REIN_HOME=$home $bin/rein run --cwd "$project" --approve yolo "What does this project do?"
