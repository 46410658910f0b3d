//! Sysctls from `/proc/sys` (placeholder: filled in by the procfs work).
use crate::model::{SysctlView, Warning};
use std::path::Path;

/// The real `/proc/sys`.
pub const PROC_SYS: &str = "/proc/sys";

/// Read every sysctl roce-net cares about for the given interfaces.
pub fn read_sysctls(
    _proc_sys: &Path,
    _ifnames: &[String],
    _warnings: &mut Vec<Warning>,
) -> SysctlView {
    SysctlView::default()
}
