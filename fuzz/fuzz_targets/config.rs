//! Fuzz target `config`: see `tlskit_fuzz::config` (fuzz/src/harness.rs).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = tlskit_fuzz::config(data);
});
