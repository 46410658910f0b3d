use super::{port_is_active, LinkLayer, PhysState, PortState};
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
    /// Logical state, e.g. `ACTIVE` (from `4: ACTIVE`).
    #[schemars(with = "Option<String>")]
    pub state: Option<PortState>,
    /// Physical state, e.g. `LinkUp` (from `5: LinkUp`).
    #[schemars(with = "Option<String>")]
    pub phys_state: Option<PhysState>,
    /// `Ethernet` for RoCE, `InfiniBand` for IB.
    #[schemars(with = "Option<String>")]
    pub link_layer: Option<LinkLayer>,
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
    /// Number of slots of the GID table (entries of `gids/`, empty ones included):
    /// the `gid_tbl_len` NCCL walks. `None` in snapshots taken before it was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gid_tbl_len: Option<u32>,
    /// rdma_cm's per-port defaults from configfs
    /// (`<configfs>/rdma_cm/<dev>/ports/<p>/`), when the device's directory exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdma_cm: Option<RdmaCmPort>,
}

/// rdma_cm's defaults for connections it sets up on one port (configfs
/// `default_roce_mode`, `default_roce_tos`). They apply to rdma_cm users
/// (`ib_write_bw -R`, `rping`, NVMe-oF, ...), not to NCCL, which sets its own
/// traffic class (`NCCL_IB_TC`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct RdmaCmPort {
    /// `default_roce_mode`: `RoCE v2` or `IB/RoCE v1`, verbatim.
    pub default_roce_mode: Option<String>,
    /// `default_roce_tos`: the IP TOS byte (DSCP << 2 | ECN) of RoCE v2 packets.
    pub default_roce_tos: Option<u8>,
}

impl RdmaPort {
    /// True when the port is `ACTIVE` and, when its physical state is known,
    /// `LinkUp` ([`port_is_active`]: the doctor, the NCCL model and the RDMA
    /// probe use this one rule).
    pub fn is_active(&self) -> bool {
        port_is_active(self.state.as_ref(), self.phys_state.as_ref())
    }
    /// True for RoCE (Ethernet link layer).
    pub fn is_roce(&self) -> bool {
        self.link_layer == Some(LinkLayer::Ethernet)
    }
    /// The data rate in Gb/s from the `rate` text (`400 Gb/sec (4X NDR)` -> 400,
    /// `2.5 Gb/sec (1X SDR)` -> 2.5); `None` when unknown or unparsable.
    pub fn rate_gbps(&self) -> Option<f64> {
        let r = self.rate.as_deref()?;
        let (num, rest) = r.trim().split_once(' ')?;
        if !rest.trim_start().starts_with("Gb/sec") {
            return None;
        }
        num.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
    }
    /// The link width in lanes from the `rate` text (`(4X NDR)` -> 4).
    pub fn width(&self) -> Option<u32> {
        let r = self.rate.as_deref()?;
        let inner = r.split_once('(')?.1;
        let (w, _) = inner.split_once('X')?;
        w.trim().parse().ok()
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
    /// PCI device id (`device/device`, e.g. `0x1021`); `ibdev2netdev -v` prints it
    /// in decimal as `MT4129`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci_device_id: Option<String>,
    /// The product name: the identifier string of the PCI VPD (`device/vpd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product_name: Option<String>,
    /// The part number: the `PN` keyword of the PCI VPD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part_number: Option<String>,
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

    fn port(rate: Option<&str>) -> RdmaPort {
        RdmaPort {
            port: 1,
            state: None,
            phys_state: None,
            link_layer: None,
            rate: rate.map(str::to_string),
            netdev: None,
            active_mtu: None,
            gids: Vec::new(),
            counters: BTreeMap::new(),
            hw_counters: BTreeMap::new(),
            gid_tbl_len: None,
            rdma_cm: None,
        }
    }

    #[test]
    fn rate_text() {
        let p = port(Some("400 Gb/sec (4X NDR)"));
        assert_eq!((p.rate_gbps(), p.width()), (Some(400.0), Some(4)));
        let p = port(Some("2.5 Gb/sec (1X SDR)"));
        assert_eq!((p.rate_gbps(), p.width()), (Some(2.5), Some(1)));
        let p = port(Some("100 Gb/sec (2X HDR)"));
        assert_eq!((p.rate_gbps(), p.width()), (Some(100.0), Some(2)));
        let p = port(Some("garbage"));
        assert_eq!((p.rate_gbps(), p.width()), (None, None));
        assert_eq!(port(None).rate_gbps(), None);
    }
}

/// One port of an RDMA device: its device name and port number. Shown as
/// NCCL's `NCCL_IB_HCA` names a port (`mlx5_0:1`); serialized as
/// `{"device": "mlx5_0", "port": 1}`.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub struct PortRef {
    /// RDMA device name (`mlx5_0`).
    pub device: String,
    /// Port number.
    pub port: u32,
}

impl PortRef {
    /// The port `port` of `device`.
    pub fn of(device: &RdmaDevice, port: &RdmaPort) -> PortRef {
        PortRef {
            device: device.name.clone(),
            port: port.port,
        }
    }
}

impl std::fmt::Display for PortRef {
    /// `mlx5_0:1`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.device, self.port)
    }
}
