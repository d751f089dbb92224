#!/usr/bin/env bash
# Fails when a crate of the workspace declares a dependency its code never uses, with
# cargo-machete (installed with `cargo install --locked` on first use). Run by .ci/run.
# A dependency used only through a macro or a feature can be kept with
# `[package.metadata.cargo-machete] ignored = ["name"]` in that crate's Cargo.toml.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
version="0.9.2"
if ! command -v cargo-machete >/dev/null 2>&1; then
  echo "installing cargo-machete $version" >&2
  cargo install --locked --quiet cargo-machete --version "$version"
fi
cargo machete
