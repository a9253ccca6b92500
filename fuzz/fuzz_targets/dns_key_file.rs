//! Fuzz target `dns_key_file`: see `tlskit_fuzz::dns_key_file` (fuzz/src/harness.rs).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = tlskit_fuzz::dns_key_file(data);
});
