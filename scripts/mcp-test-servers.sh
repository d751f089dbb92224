#!/usr/bin/env bash
# Installs the reference MCP servers the end-to-end tests connect to
# (`@modelcontextprotocol/server-everything` and `server-filesystem`, pinned in
# tests/mcp-servers/package-lock.json). Without them (or without Node.js) those tests skip
# with a message. Run by .ci/run before `cargo test`.
set -euo pipefail
dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/../tests/mcp-servers" && pwd)"
if ! command -v npm >/dev/null 2>&1; then
  echo "npm not found: the MCP end-to-end tests will skip" >&2
  exit 0
fi
(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
