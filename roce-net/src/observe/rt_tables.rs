//! Routing table names (placeholder: filled in by the procfs work).
use crate::model::Warning;
use std::collections::BTreeMap;
use std::path::Path;

/// Read table names from `<etc>/iproute2/rt_tables`, `rt_tables.d/*.conf` and the
/// distribution fallback.
pub fn read_table_names(_etc: &Path, _warnings: &mut Vec<Warning>) -> BTreeMap<u32, String> {
    BTreeMap::new()
}
