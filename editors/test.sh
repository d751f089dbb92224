#!/usr/bin/env bash
# Tests every editor integration against a live daemon and the fake provider:
#   - the ACP adapter (`rein acp`) driven by the official ACP TypeScript SDK,
#   - the VS Code extension's protocol client (Node) and the extension's compile (tsc),
#   - the Neovim plugin in `nvim --headless`.
# Installs what it needs (npm packages from package-lock.json, Neovim from apt when missing)
# and builds the Rust binaries, so it runs on a fresh clone. Exits non-zero on any failure.
set -uo pipefail

editors="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$editors")"
cd "$root"

step() { printf '\n== %s\n' "$*"; }
failed=()

step "building reind, rein and rein-fake-provider"
# With the test targets, so the features (and artifacts) are those of `cargo test --workspace`.
cargo build --quiet --workspace --bins --tests || exit 1
export REIN_BIN_DIR="${CARGO_TARGET_DIR:-$root/target}/debug"

if ! command -v nvim >/dev/null 2>&1; then
  step "installing Neovim"
  sudo_cmd=()
  if [ "$(id -u)" != 0 ]; then sudo_cmd=(sudo); fi
  "${sudo_cmd[@]}" apt-get update -qq && "${sudo_cmd[@]}" apt-get install -y -qq neovim >/dev/null || exit 1
fi

step "installing npm packages"
(cd "$editors" && npm ci --no-audit --no-fund --loglevel=error) || exit 1

step "compiling the VS Code extension"
(cd "$editors/vscode" && npm run --silent compile) || failed+=("vscode compile")

step "ACP adapter and VS Code protocol client (node --test)"
(cd "$editors" && node --test --test-concurrency=1 acp/ vscode/test/) || failed+=("node tests")

step "Neovim plugin (nvim --headless, $(nvim --version | head -n1))"
node "$editors/testkit/with-daemon.mjs" "$editors/nvim/test/script.json" \
  --file "notes.txt=$editors/nvim/test/notes.txt" -- \
  timeout 300 nvim --headless -u NONE -i NONE -n --cmd "set rtp+=$editors/nvim" \
  -c "luafile $editors/nvim/test/e2e.lua" </dev/null || failed+=("neovim")

if [ "${#failed[@]}" -ne 0 ]; then
  printf '\neditor tests FAILED: %s\n' "${failed[*]}"
  exit 1
fi
printf '\nall editor tests passed\n'
