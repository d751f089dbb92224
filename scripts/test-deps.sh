#!/usr/bin/env bash
# Installs what the tests need and checks it works here (README's test command runs it first):
#   - bubblewrap (`bwrap`), for the sandbox tests (tests/tests/sandbox_escapes.rs and the tool
#     tests run again under `REIN_TEST_SANDBOX=workspace-write`);
#   - tmux, which drives the full-screen terminal client in the tests/tests/cli_*.rs tests;
#   - the reference MCP servers from npm (scripts/mcp-test-servers.sh).
# Installs with apt-get when a package is missing (CI runs as root); fails, saying why, when
# it cannot be installed or bubblewrap cannot make the namespaces the sandbox uses.
set -euo pipefail

missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v tmux >/dev/null 2>&1 || missing+=(tmux)
if [ "${#missing[@]}" -gt 0 ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "missing ${missing[*]} and apt-get is not available: install them" >&2
    exit 1
  fi
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq "${missing[@]}"
fi

# The sandbox needs user, pid and network namespaces; check them once here so a machine
# that cannot have them fails with this message instead of in the middle of the tests.
if ! bwrap --die-with-parent --new-session --unshare-user --unshare-pid --unshare-net \
    --cap-drop ALL --ro-bind / / --proc /proc -- true; then
  echo "bwrap is installed but cannot create user/pid/network namespaces on this machine" >&2
  exit 1
fi
echo "bubblewrap: $(bwrap --version)"
echo "tmux: $(tmux -V)"

bash "$(dirname "${BASH_SOURCE[0]}")/mcp-test-servers.sh"
