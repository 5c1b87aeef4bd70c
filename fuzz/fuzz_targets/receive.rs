//! cargo-fuzz target: see `linerate_datapath::fuzzing::receive`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = linerate_datapath::fuzzing::receive(data);
});
