//! The verbs view: RDMA devices, ports and GID tables as libibverbs reports them.
//!
//! Always part of the model (so any build can read and diagnose a snapshot that
//! carries one); it is only *read* from a host by a build with the `verbs` cargo
//! feature (`roce_net::verbs_view`). The doctor compares it with the sysfs view
//! ([`crate::RdmaDevice`]): a difference is a finding (`verbs-sysfs-mismatch`).

use super::{GidType, LinkLayer, PhysState, PortState, Warning};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::net::Ipv6Addr;

/// Why RDMA cannot be used on this host (or by this build).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum NoRdmaReason {
    /// This roce-net was built without the `verbs` cargo feature.
    NotBuilt,
    /// libibverbs (`libibverbs.so.1`) could not be loaded.
    NoLibrary,
    /// The kernel has no RDMA support (`ibv_get_device_list` failed with
    /// `ENOSYS`: no `/sys/class/infiniband_verbs`, `ib_uverbs` not loaded).
    NoKernelSupport,
    /// libibverbs found no RDMA device.
    NoDevices,
    /// Devices exist but their character devices (`/dev/infiniband/uverbs*`) are
    /// missing: typically a container started without `--device /dev/infiniband`.
    NoDeviceFiles,
}

impl NoRdmaReason {
    /// A short stable name (`no_library`, ...), as in JSON.
    pub fn name(self) -> &'static str {
        match self {
            NoRdmaReason::NotBuilt => "not_built",
            NoRdmaReason::NoLibrary => "no_library",
            NoRdmaReason::NoKernelSupport => "no_kernel_support",
            NoRdmaReason::NoDevices => "no_devices",
            NoRdmaReason::NoDeviceFiles => "no_device_files",
        }
    }
}

impl std::fmt::Display for NoRdmaReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// RDMA is not usable here: the reason and the specifics (what was tried, errno).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NoRdma {
    /// Which case.
    pub reason: NoRdmaReason,
    /// What was seen and what to do, for people.
    pub detail: String,
}

/// How the GID table was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GidQuery {
    /// `ibv_query_gid_table` (rdma-core >= 32): every valid entry in one call.
    Table,
    /// `ibv_query_gid_ex` per index (rdma-core >= 32).
    Ex,
    /// `ibv_query_gid` per index, with the GID type read from sysfs
    /// (`gid_attrs/types/<i>`): older rdma-core.
    Legacy,
}

/// One populated GID table entry as libibverbs reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct VerbsGid {
    /// Index in the port's table.
    pub index: u32,
    /// The GID.
    pub gid: Ipv6Addr,
    /// Its type; `None` when it could not be learnt (legacy query, no sysfs type).
    pub gid_type: Option<GidType>,
    /// `ifindex` of the netdev owning the GID (`ibv_gid_entry.ndev_ifindex`),
    /// `None` when libibverbs does not say (legacy query, InfiniBand).
    pub ndev_ifindex: Option<u32>,
}

/// One port as `ibv_query_port` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct VerbsPort {
    /// Port number (from 1).
    pub port: u32,
    /// Logical state (`ACTIVE`, `DOWN`, `INIT`, `ARMED`, ...).
    #[schemars(with = "String")]
    pub state: PortState,
    /// Physical state (`LinkUp`, `Disabled`, `Polling`, ...).
    #[schemars(with = "Option<String>")]
    pub phys_state: Option<PhysState>,
    /// `Ethernet` or `InfiniBand`.
    #[schemars(with = "Option<String>")]
    pub link_layer: Option<LinkLayer>,
    /// Active MTU in bytes (256..4096).
    pub active_mtu: Option<u32>,
    /// Largest MTU the port supports, in bytes.
    pub max_mtu: Option<u32>,
    /// Size of the GID table.
    pub gid_tbl_len: u32,
    /// Populated GIDs (empty slots left out), by index.
    pub gids: Vec<VerbsGid>,
}

/// One device as libibverbs sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct VerbsDevice {
    /// Device name (`ibv_get_device_name`).
    pub name: String,
    /// Node GUID (`ibv_get_device_guid`), as sysfs prints it (`b83f:d203:0010:00a0`).
    pub node_guid: Option<String>,
    /// Firmware version (`ibv_query_device`).
    pub fw_ver: Option<String>,
    /// Ports.
    pub ports: Vec<VerbsPort>,
    /// Why the device could not be opened or queried (`ibv_open_device` failing
    /// with EACCES, ...); `None` when it was read.
    pub error: Option<String>,
}

/// What libibverbs reports about the host's RDMA devices.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct VerbsView {
    /// The library that answered (`libibverbs.so.1`); `None` when none loaded.
    pub library: Option<String>,
    /// How GID tables were read; `None` without devices.
    pub gid_query: Option<GidQuery>,
    /// Set when RDMA cannot be used here, with the reason.
    pub unavailable: Option<NoRdma>,
    /// Devices, sorted by name.
    pub devices: Vec<VerbsDevice>,
    /// What could not be read.
    #[serde(default)]
    pub warnings: Vec<Warning>,
}

impl VerbsView {
    /// A view saying RDMA is unavailable for `reason`.
    pub fn unavailable(reason: NoRdmaReason, detail: impl Into<String>) -> VerbsView {
        VerbsView {
            library: None,
            gid_query: None,
            unavailable: Some(NoRdma {
                reason,
                detail: detail.into(),
            }),
            devices: Vec::new(),
            warnings: Vec::new(),
        }
    }
}

/// An IB MTU enum value (`IBV_MTU_256` = 1 .. `IBV_MTU_4096` = 5) in bytes.
#[cfg(any(test, feature = "verbs"))]
pub fn ib_mtu_bytes(e: u32) -> Option<u32> {
    match e {
        1..=5 => Some(128 << e),
        _ => None,
    }
}

/// Bytes (256..4096) as the IB MTU enum value.
#[cfg(any(test, feature = "verbs"))]
pub fn ib_mtu_enum(bytes: u32) -> Option<u32> {
    (1..=5).find(|e| 128u32 << e == bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn mtu_enum_round_trip() {
        assert_eq!(ib_mtu_bytes(1), Some(256));
        assert_eq!(ib_mtu_bytes(5), Some(4096));
        assert_eq!(ib_mtu_bytes(0), None);
        assert_eq!(ib_mtu_bytes(6), None);
        for b in [256, 512, 1024, 2048, 4096] {
            assert_eq!(ib_mtu_enum(b).and_then(ib_mtu_bytes), Some(b));
        }
        assert_eq!(ib_mtu_enum(1500), None);
    }
}
