//! Fuzz target `http_head`: see `tlskit_fuzz::http_head` (fuzz/src/harness.rs).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = tlskit_fuzz::http_head(data);
});
