//! Fuzz target `pki_p12`: see `tlskit_fuzz::pki_p12` (fuzz/src/harness.rs).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = tlskit_fuzz::pki_p12(data, Some(tlskit_fuzz::strip_p12_mac));
});
