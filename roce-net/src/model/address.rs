use super::table::IpVerb;
use super::Scope;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::net::IpAddr;

/// An IP address assigned to an interface.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct Address {
    /// Interface name.
    pub ifname: String,
    /// Interface index.
    pub ifindex: u32,
    /// The address.
    pub address: IpAddr,
    /// Prefix length.
    pub prefix_len: u8,
    /// Scope.
    pub scope: Scope,
    /// Address label (IPv4), if set.
    pub label: Option<String>,
    /// A secondary address (`IFA_F_SECONDARY`).
    #[serde(default)]
    pub secondary: bool,
}

impl Address {
    /// The network this address sits in (`198.18.0.11/24` -> `198.18.0.0/24`).
    pub fn network(&self) -> ipnet::IpNet {
        ipnet::IpNet::new(self.address, self.prefix_len)
            .map(|n| n.trunc())
            .unwrap_or_else(|_| ipnet::IpNet::from(self.address))
    }
}

impl fmt::Display for Address {
    /// As `ip addr add` takes it: `198.18.0.11/24 dev r1`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{} dev {}",
            self.address,
            self.prefix_len,
            super::ifname_word(&self.ifname)
        )
    }
}

impl Address {
    /// The `ip` command for this address: `ip addr del 198.18.0.11/24 dev r1`.
    pub fn ip_command(&self, verb: IpVerb) -> String {
        format!("ip addr {verb} {self}")
    }
}
