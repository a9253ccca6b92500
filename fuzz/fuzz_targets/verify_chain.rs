//! Fuzz target `verify_chain`: see `tlskit_fuzz::verify_chain` (fuzz/src/harness.rs).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = tlskit_fuzz::verify_chain(data);
});
