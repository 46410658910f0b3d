use super::table::{family_flag, IpVerb, TableText, WithTableNames};
use super::{Family, Scope};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
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

impl fmt::Display for RouteType {
    /// iproute2's name (`unicast`, `local`, `blackhole`, ...).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RouteType::Unicast => "unicast",
            RouteType::Local => "local",
            RouteType::Broadcast => "broadcast",
            RouteType::Anycast => "anycast",
            RouteType::Multicast => "multicast",
            RouteType::Blackhole => "blackhole",
            RouteType::Unreachable => "unreachable",
            RouteType::Prohibit => "prohibit",
            RouteType::Throw => "throw",
            RouteType::Nat => "nat",
            RouteType::Other => "other",
        })
    }
}

impl Route {
    /// The route with registered table names shown (`table roce_r1(1001)`).
    pub fn with_table_names<'a>(
        &'a self,
        names: &'a BTreeMap<u32, String>,
    ) -> WithTableNames<'a, Route> {
        WithTableNames { item: self, names }
    }

    /// The `ip` command that adds, replaces or deletes this route:
    /// `ip route replace 198.18.0.0/24 dev r1 src 198.18.0.11 table 1001 proto 201`
    /// (`ip -6 route ...` for IPv6).
    pub fn ip_command(&self, verb: IpVerb) -> String {
        format!("ip {}route {verb} {self}", family_flag(self.family))
    }

    fn write(
        &self,
        f: &mut fmt::Formatter<'_>,
        names: Option<&BTreeMap<u32, String>>,
    ) -> fmt::Result {
        if self.kind != RouteType::Unicast {
            write!(f, "{} ", self.kind)?;
        }
        if self.dst.prefix_len() == 0 {
            f.write_str("default")?;
        } else {
            write!(f, "{}", self.dst)?;
        }
        if let Some(g) = &self.gateway {
            write!(f, " via {g}")?;
        }
        if let Some(d) = &self.dev {
            write!(f, " dev {d}")?;
        }
        if let Some(p) = &self.prefsrc {
            write!(f, " src {p}")?;
        }
        if self.scope != self.implied_scope() {
            write!(f, " scope {}", self.scope)?;
        }
        write!(
            f,
            " table {}",
            TableText {
                id: self.table,
                names
            }
        )?;
        write!(f, " proto {}", self.protocol)?;
        if let Some(m) = self.metric.filter(|m| *m != 0) {
            write!(f, " metric {m}")?;
        }
        if self.tos != 0 {
            write!(f, " tos 0x{:02x}", self.tos)?;
        }
        for nh in &self.multipath {
            f.write_str(" nexthop")?;
            if let Some(g) = &nh.gateway {
                write!(f, " via {g}")?;
            }
            if let Some(d) = &nh.dev {
                write!(f, " dev {d}")?;
            }
            write!(f, " weight {}", nh.weight)?;
        }
        Ok(())
    }

    /// The scope `ip route add` picks when none is given: host for local routes,
    /// global for gateway, multipath or device-less routes, link otherwise.
    pub fn implied_scope(&self) -> Scope {
        if self.kind == RouteType::Local {
            Scope::Host
        } else if self.gateway.is_some() || !self.multipath.is_empty() || self.dev.is_none() {
            Scope::Universe
        } else {
            Scope::Link
        }
    }
}

impl fmt::Display for Route {
    /// The route in `ip route` syntax, valid as `ip route add` arguments: table
    /// (by number, reserved ones by name) and protocol always shown, the scope
    /// only when it differs from [`Route::implied_scope`], a metric of 0 left out.
    ///
    /// `198.18.0.0/24 dev r1 src 198.18.0.11 table 1001 proto 201`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f, None)
    }
}

impl fmt::Display for WithTableNames<'_, Route> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.item.write(f, Some(self.names))
    }
}
