//! Fuzz target `rt_tables`: see roce_net::fuzzing::rt_tables and docs/fuzzing.md.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| roce_net::fuzzing::rt_tables(data));
