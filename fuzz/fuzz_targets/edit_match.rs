//! Fuzz target `edit_match`: see `rein_fuzz_harness::edit_match` for the input layout and the checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rein_fuzz_harness::edit_match::check(data));
