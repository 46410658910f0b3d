//! Fuzz target `plan_json`: see roce_net::fuzzing::plan_json and docs/fuzzing.md.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| roce_net::fuzzing::plan_json(data));
