//! Fuzz target `client_hello`: see `tlskit_fuzz::client_hello` (fuzz/src/harness.rs).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = tlskit_fuzz::client_hello(data);
});
