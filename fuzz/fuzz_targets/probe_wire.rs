//! Fuzz target `probe_wire`: see `tlskit_fuzz::probe_wire` (fuzz/src/harness.rs).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = tlskit_fuzz::probe_wire(data);
});
