//! Fuzz target `sources`: see `tlskit_fuzz::sources` (fuzz/src/harness.rs).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = tlskit_fuzz::sources(data);
});
