//! Fuzz target `provider_stream`: see `rein_fuzz_harness::provider_stream` for the input layout and the checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rein_fuzz_harness::provider_stream::check(data));
