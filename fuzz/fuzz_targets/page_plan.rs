#![no_main]
//! cargo-fuzz target: see `toolproxy_fuzz::check_page`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolproxy_fuzz::check_page(data));
