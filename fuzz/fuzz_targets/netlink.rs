//! Fuzz target `netlink`: see roce_net::fuzzing::netlink and docs/fuzzing.md.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| roce_net::fuzzing::netlink(data));
