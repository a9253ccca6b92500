//! Fuzz target `pkcs11_uri`: see `tlskit_fuzz::pkcs11_uri` (fuzz/src/harness.rs).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = tlskit_fuzz::pkcs11_uri(data);
});
