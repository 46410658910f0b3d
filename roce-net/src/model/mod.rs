//! Plain serde data: everything roce-net reads from a host, as one typed snapshot.
//!
//! These types are the library's public vocabulary, and each owns its one
//! rendering: `Display` in iproute2 syntax (`Route`, `Rule`, `Neighbor`,
//! `Address`, `Sysctl` and its assignment), `with_table_names` for reading with
//! registered table names, `ip_command` for the command that makes or removes it.
//! They never carry netlink crate types, so the JSON schema
//! (`HostState::SCHEMA_VERSION`) stays stable across dependency upgrades.

use schemars::JsonSchema;

/// `Serialize` through `Display` and a JSON schema of a plain string (`$what`
/// says which), for a value written in JSON as `ip` prints it. Each type
/// writes its own `Deserialize`, which parses the text back with its own error.
macro_rules! serialize_as_display {
    ($ty:ident, $what:literal) => {
        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        #[doc = $what]
        impl schemars::JsonSchema for $ty {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($ty).into()
            }
            fn inline_schema() -> bool {
                true
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({ "type": "string" })
            }
        }
    };
}

mod address;
mod host_state;
mod hwaddr;
mod ifname;
mod interface;
mod neighbor;
mod port;
mod qos;
mod rdma;
mod route;
mod rule;
mod scope;
mod shell;
mod sysctl;
mod table;
mod time;
mod verbs;
mod warning;

pub use address::{Address, AddressFlag};
pub use host_state::{HostState, SnapshotFormat};
pub use hwaddr::HwAddr;
pub use ifname::{ifname_from_kernel, ifname_is_valid, ifname_to_kernel};
pub use interface::{Interface, LinkStats, OperState};
pub use neighbor::{NeighState, Neighbor};
pub use port::{port_is_active, LinkLayer, PhysState, PortState};
pub use qos::{DcbApp, Qos, Trust};
pub use rdma::{
    active_mtu_for_netdev_mtu, GidEntry, GidType, PortRef, RdmaCmPort, RdmaDevice, RdmaPort,
};
pub use route::{NextHop, Route, RouteDecision, RouteKey, RouteQuery, RouteReply, RouteType};
pub use rule::{Rule, RuleAction, RuleKey};
pub use scope::Scope;
pub use shell::{ifname_word, in_netns, over_ssh, shell_word};
pub(crate) use sysctl::conf_dir;
pub use sysctl::{
    Combine, ConfKey, ConfTarget, ConfValues, InterfaceConf, Sysctl, SysctlAccess,
    SysctlAssignment, SysctlValue, SysctlView, Tuning, TuningKey,
};
pub use table::{
    IpVerb, TableId, WithTableNames, RT_TABLE_DEFAULT, RT_TABLE_LOCAL, RT_TABLE_MAIN,
    RT_TABLE_UNSPEC,
};
pub use time::{relative_time, utc_time};
#[cfg(feature = "verbs")]
pub use verbs::{ib_mtu_bytes, ib_mtu_enum};
pub use verbs::{GidQuery, NoRdma, NoRdmaReason, VerbsDevice, VerbsGid, VerbsPort, VerbsView};
pub use warning::Warning;

/// Address family of a route, rule or address.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// IPv4 (`AF_INET`).
    Inet,
    /// IPv6 (`AF_INET6`).
    Inet6,
}

impl Family {
    /// The family of an IP address.
    pub fn of(ip: &std::net::IpAddr) -> Family {
        match ip {
            std::net::IpAddr::V4(_) => Family::Inet,
            std::net::IpAddr::V6(_) => Family::Inet6,
        }
    }
}

/// A set of address families: what a policy manages (its `family`), what a
/// lab addresses its NICs with.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Default,
    serde::Serialize,
    serde::Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum AddressFamilies {
    /// IPv4 and IPv6 (a policy's default: each NIC's managed address of either
    /// family gets a rule into the NIC's table, one table per NIC for both).
    #[default]
    Both,
    /// IPv4 only (IPv6 left alone).
    Ipv4,
    /// IPv6 only (IPv4 left alone, ARP and `rp_filter` included).
    Ipv6,
}

impl AddressFamilies {
    /// Whether `family` is in the set.
    pub fn includes(self, family: Family) -> bool {
        match self {
            AddressFamilies::Both => true,
            AddressFamilies::Ipv4 => family == Family::Inet,
            AddressFamilies::Ipv6 => family == Family::Inet6,
        }
    }

    /// The families in the set, IPv4 first.
    pub fn list(self) -> Vec<Family> {
        [Family::Inet, Family::Inet6]
            .into_iter()
            .filter(|f| self.includes(*f))
            .collect()
    }
}

/// Well-known routing protocol numbers (`/etc/iproute2/rt_protos`).
pub mod protocol {
    /// Unspecified.
    pub const UNSPEC: u8 = 0;
    /// Installed by ICMP redirects.
    pub const REDIRECT: u8 = 1;
    /// Installed by the kernel (e.g. subnet routes of addresses).
    pub const KERNEL: u8 = 2;
    /// Installed during boot.
    pub const BOOT: u8 = 3;
    /// Installed by the administrator.
    pub const STATIC: u8 = 4;
    /// Learned from an IPv6 router advertisement.
    pub const RA: u8 = 9;
    /// Installed by DHCP.
    pub const DHCP: u8 = 16;
    /// roce-net's default ownership marker. Registered as `roce-net` in
    /// `/etc/iproute2/rt_protos.d/roce-net.conf` when persisted.
    pub const ROCE_NET_DEFAULT: u8 = 201;

    /// The name iproute2 prints for a protocol number, if it is a well-known one.
    pub fn name(p: u8) -> Option<&'static str> {
        Some(match p {
            0 => "unspec",
            1 => "redirect",
            2 => "kernel",
            3 => "boot",
            4 => "static",
            9 => "ra",
            16 => "dhcp",
            ROCE_NET_DEFAULT => "roce-net",
            _ => return None,
        })
    }
}
