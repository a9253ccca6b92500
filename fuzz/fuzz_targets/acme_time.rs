//! Fuzz target `acme_time`: see `tlskit_fuzz::acme_time` (fuzz/src/harness.rs).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = tlskit_fuzz::acme_time(data);
});
