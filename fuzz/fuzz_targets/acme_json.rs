//! Fuzz target `acme_json`: see `tlskit_fuzz::acme_json` (fuzz/src/harness.rs).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = tlskit_fuzz::acme_json(data);
});
