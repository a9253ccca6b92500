//! Fuzz target `resp_reply`: see `tlskit_fuzz::resp_reply` (fuzz/src/harness.rs).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = tlskit_fuzz::resp_reply(data);
});
