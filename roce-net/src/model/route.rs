use super::{Family, Scope};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::net::IpAddr;

/// `RT_TABLE_UNSPEC` (0): reserved.
pub const RT_TABLE_UNSPEC: u32 = 0;
/// `RT_TABLE_DEFAULT` (253).
pub const RT_TABLE_DEFAULT: u32 = 253;
/// `RT_TABLE_MAIN` (254).
pub const RT_TABLE_MAIN: u32 = 254;
/// `RT_TABLE_LOCAL` (255).
pub const RT_TABLE_LOCAL: u32 = 255;

/// Route type (`RTN_*`), serialised with iproute2's names.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    Default,
    JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum RouteType {
    /// A gateway or direct route.
    #[default]
    Unicast,
    /// A local interface route.
    Local,
    /// A broadcast route.
    Broadcast,
    /// An anycast route.
    Anycast,
    /// A multicast route.
    Multicast,
    /// Packets are discarded silently.
    Blackhole,
    /// Packets are discarded with ICMP unreachable.
    Unreachable,
    /// Packets are discarded with ICMP prohibited.
    Prohibit,
    /// Continue lookup in the next rule.
    Throw,
    /// Stateless NAT (obsolete).
    Nat,
    /// Any other type.
    Other,
}

impl RouteType {
    /// From the kernel's `RTN_*` number.
    pub fn from_u8(n: u8) -> RouteType {
        match n {
            1 => RouteType::Unicast,
            2 => RouteType::Local,
            3 => RouteType::Broadcast,
            4 => RouteType::Anycast,
            5 => RouteType::Multicast,
            6 => RouteType::Blackhole,
            7 => RouteType::Unreachable,
            8 => RouteType::Prohibit,
            9 => RouteType::Throw,
            10 => RouteType::Nat,
            _ => RouteType::Other,
        }
    }
    /// The kernel's `RTN_*` number (`Other` maps to 0).
    pub fn as_u8(self) -> u8 {
        match self {
            RouteType::Unicast => 1,
            RouteType::Local => 2,
            RouteType::Broadcast => 3,
            RouteType::Anycast => 4,
            RouteType::Multicast => 5,
            RouteType::Blackhole => 6,
            RouteType::Unreachable => 7,
            RouteType::Prohibit => 8,
            RouteType::Throw => 9,
            RouteType::Nat => 10,
            RouteType::Other => 0,
        }
    }
}

/// One next hop of a multipath route.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct NextHop {
    /// Gateway, if any.
    pub gateway: Option<IpAddr>,
    /// Output device name.
    pub dev: Option<String>,
    /// Weight (1 + `rtnh_hops`).
    pub weight: u16,
}

/// A route in any routing table.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct Route {
    /// Address family.
    pub family: Family,
    /// Routing table id, always the full 32-bit `RTA_TABLE` value.
    pub table: u32,
    /// Destination prefix (`0.0.0.0/0` for a default route).
    pub dst: ipnet::IpNet,
    /// Route type.
    #[serde(rename = "type")]
    pub kind: RouteType,
    /// Output device name.
    pub dev: Option<String>,
    /// Preferred source address (`src`).
    pub prefsrc: Option<IpAddr>,
    /// Gateway (`via`).
    pub gateway: Option<IpAddr>,
    /// Scope.
    pub scope: Scope,
    /// Routing protocol number (who installed it).
    pub protocol: u8,
    /// Metric (`RTA_PRIORITY`), if set.
    pub metric: Option<u32>,
    /// TOS / DSCP selector.
    #[serde(default)]
    pub tos: u8,
    /// Next hops of a multipath route (empty for single-path routes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub multipath: Vec<NextHop>,
}

/// The kernel's answer to `ip route get DST [from SRC] [oif DEV]`: which routing
/// table matched (looked up with `RTM_F_LOOKUP_TABLE`, so policy rules are taken
/// into account) and where a packet would leave.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct RouteDecision {
    /// The routing table whose route matched (full 32-bit `RTA_TABLE`).
    pub table: u32,
    /// Output device name.
    pub dev: Option<String>,
    /// Source address packets would carry: the route's preferred source (`src`
    /// in `ip route get`), or the requested source (`from`) when one was given.
    pub prefsrc: Option<IpAddr>,
    /// Next-hop gateway (`via`), if not directly connected.
    pub gateway: Option<IpAddr>,
    /// Route type (`unicast`, `local`, `unreachable`, ...).
    #[serde(rename = "type")]
    pub kind: RouteType,
}
