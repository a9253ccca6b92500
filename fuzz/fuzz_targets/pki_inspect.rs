//! Fuzz target `pki_inspect`: see `tlskit_fuzz::pki_inspect` (fuzz/src/harness.rs).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = tlskit_fuzz::pki_inspect(data);
});
