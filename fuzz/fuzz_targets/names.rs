//! Fuzz target `names`: see `tlskit_fuzz::names` (fuzz/src/harness.rs).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = tlskit_fuzz::names(data);
});
