//! Fuzz target `snapshot`: see `tlskit_fuzz::snapshot` (fuzz/src/harness.rs).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = tlskit_fuzz::snapshot(data, Some(tlskit_fuzz::xxh3));
});
