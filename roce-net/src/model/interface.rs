use super::{HwAddr, Qos};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Operational state of a link (`IF_OPER_*`, RFC 2863), as `ip link` prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum OperState {
    /// `UNKNOWN` (loopback, tun devices, veth before carrier is known).
    #[default]
    Unknown,
    /// `NOTPRESENT`.
    NotPresent,
    /// `DOWN`.
    Down,
    /// `LOWERLAYERDOWN`.
    LowerLayerDown,
    /// `TESTING`.
    Testing,
    /// `DORMANT`.
    Dormant,
    /// `UP`.
    Up,
}

/// Link counters (`IFLA_STATS64`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct LinkStats {
    /// Packets received.
    pub rx_packets: u64,
    /// Packets sent.
    pub tx_packets: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Receive errors.
    pub rx_errors: u64,
    /// Transmit errors.
    pub tx_errors: u64,
    /// Packets dropped on receive.
    pub rx_dropped: u64,
    /// Packets dropped on transmit.
    pub tx_dropped: u64,
}

/// A network interface (netdev).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Interface {
    /// Interface index.
    pub index: u32,
    /// Interface name.
    pub name: String,
    /// Link kind (`veth`, `bridge`, `bond`, ...); `None` for physical devices.
    pub kind: Option<String>,
    /// Hardware address.
    pub mac: Option<HwAddr>,
    /// MTU in bytes.
    pub mtu: u32,
    /// Administratively up (`IFF_UP`).
    pub admin_up: bool,
    /// Operational state.
    pub oper_state: OperState,
    /// Carrier present (`IFLA_CARRIER`), if reported.
    pub carrier: Option<bool>,
    /// Name of the master device (bridge, bond), if any.
    pub master: Option<String>,
    /// Counters.
    pub stats: LinkStats,
    /// The driver's statistics (`ethtool -S`: `ETHTOOL_GSTRINGS` names and
    /// `ETHTOOL_GSTATS` values), read for the NICs in scope; `None` when not read
    /// or when the driver has none. A name the driver repeats keeps its first value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ethtool_stats: Option<BTreeMap<String, u64>>,
    /// QoS from DCB (PFC, trust, DSCP map), read for the NICs in scope; `None` when
    /// not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qos: Option<Qos>,
}
