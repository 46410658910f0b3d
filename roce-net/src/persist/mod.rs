//! Boot-persistent configuration renderers (placeholder: filled in by the persist work).

use serde::{Deserialize, Serialize};

/// Where persistent configuration is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Backend {
    /// `/etc/sysctl.d/` drop-in only.
    #[serde(rename = "sysctl.d")]
    SysctlD,
    /// `/etc/iproute2/rt_tables.d/` drop-in only.
    #[serde(rename = "rt_tables.d")]
    RtTablesD,
    /// systemd-networkd `.network` drop-ins.
    #[serde(rename = "networkd")]
    Networkd,
    /// netplan YAML.
    #[serde(rename = "netplan")]
    Netplan,
    /// NetworkManager keyfiles.
    #[serde(rename = "networkmanager")]
    NetworkManager,
    /// Debian ifupdown.
    #[serde(rename = "ifupdown")]
    Ifupdown,
}
