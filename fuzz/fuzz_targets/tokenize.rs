#![no_main]
//! cargo-fuzz target: see `toolproxy_fuzz::check_tokenize`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolproxy_fuzz::check_tokenize(data));
