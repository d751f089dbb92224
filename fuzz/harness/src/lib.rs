//! The checks behind rein's fuzz targets.
//!
//! Each module holds one target's harness: a function that takes arbitrary bytes, drives one
//! piece of rein with them and panics when an invariant breaks. cargo-fuzz calls these
//! functions from `fuzz/fuzz_targets/` with generated inputs; the stable test
//! `tests/tests/stress_fuzz_smoke.rs` replays the committed corpus (`fuzz/corpus/<target>/`)
//! through the same functions, so CI needs no nightly features. A returned value means the
//! input was handled correctly (accepted or refused); a panic is a finding.
//!
//! - [`wire`]: line framing (`LineCodec`), JSON-RPC request parsing, protocol types and the
//!   daemon's `parse_params` for every params type.
//! - [`provider_stream`]: the SSE parser and each provider's stream assembly.
//! - [`session_file`]: opening (and repairing) a session file.
//! - [`edit_match`]: the edit tool's matcher.

pub mod edit_match;
pub mod provider_stream;
pub mod session_file;
pub mod wire;

use std::path::Path;

/// Every target's name, as used for `fuzz/fuzz_targets/<name>.rs` and `fuzz/corpus/<name>/`.
pub const TARGETS: &[&str] = &["wire", "provider_stream", "session_file", "edit_match"];

/// Runs target `name` on `data`; `scratch` is an empty directory the session target may fill
/// (it clears it first). Returns false for an unknown target name.
pub fn run_target(name: &str, data: &[u8], scratch: &Path) -> bool {
    match name {
        "wire" => wire::check(data),
        "provider_stream" => provider_stream::check(data),
        "session_file" => session_file::check(data, scratch),
        "edit_match" => edit_match::check(data),
        _ => return false,
    }
    true
}
