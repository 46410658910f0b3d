//! Fuzz target `policy_yaml`: see roce_net::fuzzing::policy_yaml and docs/fuzzing.md.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| roce_net::fuzzing::policy_yaml(data));
