//! Fuzz target `journal`: see roce_net::fuzzing::journal and docs/fuzzing.md.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| roce_net::fuzzing::journal(data));
