//! cargo-fuzz target: see `linerate_datapath::fuzzing::reassemble`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    linerate_datapath::fuzzing::reassemble(data);
});
