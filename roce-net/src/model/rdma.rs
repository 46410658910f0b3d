use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};

/// The type of a GID table entry (`gid_attrs/types/<i>`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GidType {
    /// `IB/RoCE v1`: RoCE v1 (Ethernet, not routable).
    RoceV1,
    /// `RoCE v2`: RoCE over UDP/IP, the one NCCL wants.
    RoceV2,
    /// `IB`: native InfiniBand.
    Ib,
    /// Anything else, verbatim.
    Other(String),
}

impl GidType {
    /// Parse the sysfs text (`IB/RoCE v1`, `RoCE v2`).
    pub fn from_sysfs(s: &str) -> GidType {
        match s.trim() {
            "IB/RoCE v1" | "RoCE v1" => GidType::RoceV1,
            "RoCE v2" => GidType::RoceV2,
            "IB" => GidType::Ib,
            other => GidType::Other(other.to_string()),
        }
    }
    /// The label `show_gids` prints (`v1`, `v2`).
    pub fn short(&self) -> &str {
        match self {
            GidType::RoceV1 => "v1",
            GidType::RoceV2 => "v2",
            GidType::Ib => "IB",
            GidType::Other(s) => s,
        }
    }
}

/// One populated slot of a port's GID table.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct GidEntry {
    /// Index in the table (what `NCCL_IB_GID_INDEX` names).
    pub index: u32,
    /// The 128-bit GID.
    pub gid: Ipv6Addr,
    /// RoCE v1, RoCE v2 or IB; `None` when the attribute could not be read.
    pub gid_type: Option<GidType>,
    /// The netdev the GID belongs to.
    pub netdev: Option<String>,
    /// The IPv4 address, when the GID is IPv4-mapped (`::ffff:a.b.c.d`).
    pub ipv4: Option<Ipv4Addr>,
}

/// Largest InfiniBand MTU usable over a RoCE netdev of the given MTU, by the
/// kernel's `iboe_get_mtu()`: the netdev MTU minus GRH, UDP, BTH, the XRC and
/// AtomicETH extension headers and ICRC (96 bytes), rounded down to 256..4096.
pub fn active_mtu_for_netdev_mtu(mtu: u32) -> Option<u32> {
    let payload = mtu.checked_sub(40 + 8 + 12 + 4 + 28 + 4)?;
    [4096, 2048, 1024, 512, 256]
        .into_iter()
        .find(|m| payload >= *m)
}

/// One port of an RDMA device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RdmaPort {
    /// Port number (from 1).
    pub port: u32,
    /// Logical state text, e.g. `ACTIVE` (from `4: ACTIVE`).
    pub state: Option<String>,
    /// Physical state text, e.g. `LinkUp` (from `5: LinkUp`).
    pub phys_state: Option<String>,
    /// `Ethernet` for RoCE, `InfiniBand` for IB.
    pub link_layer: Option<String>,
    /// Rate text, e.g. `400 Gb/sec (4X NDR)`.
    pub rate: Option<String>,
    /// The netdev behind this port.
    pub netdev: Option<String>,
    /// Active IB MTU. Derived from the netdev MTU by the kernel's rule for RoCE
    /// ports (sysfs does not expose it); `None` when unknown.
    pub active_mtu: Option<u32>,
    /// Populated GID table entries (empty slots are omitted).
    pub gids: Vec<GidEntry>,
    /// `counters/*`.
    pub counters: BTreeMap<String, u64>,
    /// `hw_counters/*` (driver-specific; mlx5 has the RoCE retransmit counters).
    pub hw_counters: BTreeMap<String, u64>,
}

impl RdmaPort {
    /// True when the port is `ACTIVE` and `LinkUp`.
    pub fn is_active(&self) -> bool {
        self.state.as_deref() == Some("ACTIVE") && self.phys_state.as_deref() == Some("LinkUp")
    }
    /// True for RoCE (Ethernet link layer).
    pub fn is_roce(&self) -> bool {
        self.link_layer.as_deref() == Some("Ethernet")
    }
}

/// An RDMA device (`/sys/class/infiniband/<name>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RdmaDevice {
    /// Device name (`mlx5_0`, `rocep65s0f0`, `mlx5_bond_0`, ...).
    pub name: String,
    /// Node GUID.
    pub node_guid: Option<String>,
    /// Firmware version.
    pub fw_ver: Option<String>,
    /// HCA type / board id, when the driver exposes it.
    pub hca_type: Option<String>,
    /// PCI address of the function (`0000:41:00.0`).
    pub pci_addr: Option<String>,
    /// Netdevs of the PCI function (`device/net/*`).
    pub netdevs: Vec<String>,
    /// Ports.
    pub ports: Vec<RdmaPort>,
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn iboe_mtu() {
        assert_eq!(active_mtu_for_netdev_mtu(9000), Some(4096));
        assert_eq!(active_mtu_for_netdev_mtu(4200), Some(4096));
        assert_eq!(active_mtu_for_netdev_mtu(4096), Some(2048));
        assert_eq!(active_mtu_for_netdev_mtu(1500), Some(1024));
        assert_eq!(active_mtu_for_netdev_mtu(60), None);
    }
}
