//! Where persistent configuration is written: the persistence backends a policy
//! can name (`persistence.backend`) and `persist` renders.

use crate::error::{Error, ErrorKind, Result};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Where persistent configuration is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Backend {
    /// The `/etc/sysctl.d/` drop-in alone.
    #[serde(rename = "sysctl.d")]
    SysctlD,
    /// The `/etc/sysctl.d/` drop-in and the table and protocol names
    /// (`/etc/iproute2/rt_tables.d/`, `rt_protos.d/`): no routes or rules.
    #[serde(rename = "rt_tables.d")]
    RtTablesD,
    /// systemd-networkd `.network` drop-ins.
    #[serde(rename = "networkd")]
    Networkd,
    /// netplan YAML.
    #[serde(rename = "netplan")]
    Netplan,
    /// NetworkManager (a script of `nmcli connection modify` commands).
    #[serde(rename = "networkmanager")]
    NetworkManager,
    /// Debian ifupdown.
    #[serde(rename = "ifupdown")]
    Ifupdown,
}

impl Backend {
    /// Every backend, in a stable order.
    pub fn all() -> [Backend; 6] {
        [
            Backend::SysctlD,
            Backend::RtTablesD,
            Backend::Networkd,
            Backend::Netplan,
            Backend::NetworkManager,
            Backend::Ifupdown,
        ]
    }

    /// What persisting with this backend writes, for people: the files
    /// [`crate::render_persistence`] renders for it (a test holds the two
    /// together).
    pub fn persists(self) -> &'static str {
        match self {
            Backend::SysctlD => "the sysctls alone",
            Backend::RtTablesD => {
                "the sysctls and the table and protocol names, no routes or rules"
            }
            Backend::Networkd | Backend::Netplan | Backend::NetworkManager | Backend::Ifupdown => {
                "the sysctls, the names, and the routes and rules in that stack's own \
                 configuration of the NICs"
            }
        }
    }

    /// Every backend and what it writes, in one sentence (the CLI's `--backend`
    /// help and the error asking for a backend say it).
    pub fn choices() -> String {
        format!(
            "sysctl.d writes {}; rt_tables.d {}; networkd, netplan, networkmanager or \
             ifupdown {}",
            Backend::SysctlD.persists(),
            Backend::RtTablesD.persists(),
            Backend::Networkd.persists()
        )
    }

    /// The stable name (the same as in JSON, and as accepted by [`FromStr`]).
    pub fn name(self) -> &'static str {
        match self {
            Backend::SysctlD => "sysctl.d",
            Backend::RtTablesD => "rt_tables.d",
            Backend::Networkd => "networkd",
            Backend::Netplan => "netplan",
            Backend::NetworkManager => "networkmanager",
            Backend::Ifupdown => "ifupdown",
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Backend {
    type Err = Error;

    /// Accepts the stable names and a few common aliases, case-insensitively
    /// (`sysctl`, `rt_tables`, `systemd-networkd`, `nm`, `NetworkManager`).
    fn from_str(s: &str) -> Result<Backend> {
        let l = s.trim().to_ascii_lowercase();
        Ok(match l.as_str() {
            "sysctl.d" | "sysctl" | "sysctld" => Backend::SysctlD,
            "rt_tables.d" | "rt_tables" | "rt-tables" | "iproute2" => Backend::RtTablesD,
            "networkd" | "systemd-networkd" => Backend::Networkd,
            "netplan" => Backend::Netplan,
            "networkmanager" | "nm" | "network-manager" => Backend::NetworkManager,
            "ifupdown" | "interfaces" => Backend::Ifupdown,
            _ => {
                return Err(Error::new(
                    ErrorKind::InvalidInput,
                    format!(
                        "unknown persistence backend {s:?}; use one of: {}",
                        Backend::all().map(|b| b.name()).join(", ")
                    ),
                ))
            }
        })
    }
}
