//! Fuzz target `wire`: see `rein_fuzz_harness::wire` for the input layout and the checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rein_fuzz_harness::wire::check(data));
