//! Fuzz target `session_file`: see `rein_fuzz_harness::session_file` for the input layout and
//! the checks. The scratch directory lives in memory (`/dev/shm` when there is one), so the
//! session's fsyncs cost little.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

fn scratch() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let base = PathBuf::from("/dev/shm");
        let base = if base.is_dir() { base } else { std::env::temp_dir() };
        let dir = base.join(format!("rein-fuzz-session-{}", std::process::id()));
        if let Err(error) = std::fs::create_dir_all(&dir) {
            panic!("cannot create {}: {error}", dir.display());
        }
        dir
    })
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| rein_fuzz_harness::session_file::check(data, scratch()));
