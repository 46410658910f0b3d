//! RDMA devices from sysfs (placeholder: filled in by the sysfs work).
use crate::model::{Interface, RdmaDevice, Warning};
use std::path::Path;

/// Read RDMA devices under `<root>/class/infiniband`.
pub fn read_rdma(
    _root: &Path,
    _ifaces: &[Interface],
    _warnings: &mut Vec<Warning>,
) -> Vec<RdmaDevice> {
    Vec::new()
}
