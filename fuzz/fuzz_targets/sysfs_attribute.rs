//! Fuzz target `sysfs_attribute`: see roce_net::fuzzing::sysfs_attribute and docs/fuzzing.md.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| roce_net::fuzzing::sysfs_attribute(data));
