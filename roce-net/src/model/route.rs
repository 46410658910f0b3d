use super::table::{family_flag, IpVerb, TableText, WithTableNames};
use super::{Family, Scope};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;

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

/// What to ask `ip route get` (the flow selectors the kernel's lookup uses).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct RouteQuery {
    /// Destination address.
    pub dst: Option<IpAddr>,
    /// Source address (`from`).
    pub from: Option<IpAddr>,
    /// Input interface (`iif`): look up as if the packet arrived there.
    pub iif: Option<String>,
    /// Output interface (`oif`).
    pub oif: Option<String>,
    /// Firewall mark (`mark`).
    pub mark: Option<u32>,
    /// IP protocol number (`ipproto`: 6 tcp, 17 udp, ...).
    pub ipproto: Option<u8>,
    /// Source port (`sport`).
    pub sport: Option<u16>,
    /// Destination port (`dport`).
    pub dport: Option<u16>,
}

/// The kernel's answer to a route query, as it sent it: only the attributes the
/// kernel returned are set, so it renders exactly as `ip route get` prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RouteReply {
    /// Route type (`unicast`, `local`, ...). For a refused lookup: `prohibit`,
    /// `unreachable` or `blackhole` (see `refused`).
    #[serde(rename = "type")]
    pub kind: RouteType,
    /// Destination (`RTA_DST`).
    pub dst: IpAddr,
    /// Source given in the query, as the kernel echoed it (`from`).
    pub from: Option<IpAddr>,
    /// Gateway (`via`).
    pub gateway: Option<IpAddr>,
    /// Output device.
    pub dev: Option<String>,
    /// The table whose route matched (`RTA_TABLE`).
    pub table: Option<u32>,
    /// Its name, where `rt_tables` (or iproute2's built-ins) names it.
    pub table_name: Option<String>,
    /// Routing protocol (printed by iproute2 only for uncached replies, e.g. IPv6).
    pub protocol: u8,
    /// Scope (printed only for uncached replies, when not `global`).
    pub scope: Scope,
    /// The reply is a route-cache entry (`RTM_F_CLONED`: iproute2 prints `cache`).
    pub cached: bool,
    /// The cache flags (`RTCF_*`, the upper 16 bits of `rtm_flags`).
    pub cache_flags: u32,
    /// Preferred source the kernel returned (`src`); absent when it equals `from`.
    pub prefsrc: Option<IpAddr>,
    /// Metric (`RTA_PRIORITY`).
    pub metric: Option<u32>,
    /// Firewall mark the lookup used (`RTA_MARK`).
    pub mark: Option<u32>,
    /// The uid the lookup ran as (`RTA_UID`).
    pub uid: Option<u32>,
    /// Input interface of an input-route lookup (`RTA_IIF`).
    pub iif: Option<String>,
    /// IPv6 router preference (`RTA_PREF`: 0 medium, 1 high, 3 low).
    pub pref: Option<u8>,
    /// TOS of the lookup (`rtm_tos`).
    pub tos: u8,
    /// When the kernel refused the lookup, its errno: `EACCES` (a prohibit route
    /// or rule matched), `EHOSTUNREACH`/`ENETUNREACH` (an unreachable route or
    /// rule, or no route at all), `EINVAL` (a blackhole route or rule).
    pub refused: Option<i32>,
}

const RTCF_NAMES: [(u32, &str); 13] = [
    (0x8000_0000, "local"),
    (0x4000_0000, "reject"),
    (0x2000_0000, "mc"),
    (0x1000_0000, "brd"),
    (0x0800_0000, "dst-nat"),
    (0x0080_0000, "src-nat"),
    (0x0040_0000, "masq"),
    (0x0002_0000, "dst-direct"),
    (0x0400_0000, "src-direct"),
    (0x0004_0000, "redirected"),
    (0x0100_0000, "redirect"),
    (0x0020_0000, "fastroute"),
    (0x0001_0000, "notify"),
];

impl RouteReply {
    /// The reply as `ip route get` prints it (`details`: as `ip -d route get`,
    /// which also names `unicast`, table `main` and the protocol). A refused
    /// lookup, which `ip` reports only as `RTNETLINK answers: <errno text>`, is
    /// printed as its route type and what the kernel answered.
    pub fn render(&self, details: bool) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        if let Some(e) = self.refused {
            let what = match e {
                libc::EACCES => "a prohibit route or rule matched (the kernel answered EACCES)",
                libc::EHOSTUNREACH => {
                    "an unreachable route matched (the kernel answered EHOSTUNREACH)"
                }
                libc::ENETUNREACH => {
                    "no route, or an unreachable rule (the kernel answered ENETUNREACH)"
                }
                libc::EINVAL => "a blackhole route or rule matched (the kernel answered EINVAL)",
                _ => "the kernel refused the lookup",
            };
            let _ = write!(s, "{} {}", self.kind, self.dst);
            if let Some(f) = self.from {
                let _ = write!(s, " from {f}");
            }
            let _ = write!(s, ": {what}; packets to it are not sent");
            return s;
        }
        if self.kind != RouteType::Unicast || details {
            let _ = write!(s, "{} ", self.kind);
        }
        let _ = write!(s, "{} ", self.dst);
        if let Some(f) = self.from {
            let _ = write!(s, "from {f} ");
        }
        if self.tos != 0 {
            let _ = write!(s, "tos 0x{:02x} ", self.tos);
        }
        if let Some(g) = self.gateway {
            let _ = write!(s, "via {g} ");
        }
        if let Some(d) = &self.dev {
            let _ = write!(s, "dev {d} ");
        }
        if let Some(t) = self.table {
            if t != super::RT_TABLE_MAIN || details {
                let name = self.table_name.clone().unwrap_or_else(|| t.to_string());
                let _ = write!(s, "table {name} ");
            }
        }
        if !self.cached {
            if self.protocol != super::protocol::BOOT || details {
                let p = super::protocol::name(self.protocol)
                    .map(str::to_string)
                    .unwrap_or_else(|| self.protocol.to_string());
                let _ = write!(s, "proto {p} ");
            }
            if self.scope != Scope::Universe || details {
                let _ = write!(s, "scope {} ", self.scope);
            }
        }
        if let Some(p) = self.prefsrc {
            let _ = write!(s, "src {p} ");
        }
        if let Some(m) = self.metric {
            let _ = write!(s, "metric {m} ");
        }
        if let Some(m) = self.mark.filter(|m| *m != 0) {
            if m >= 16 {
                let _ = write!(s, "mark 0x{m:x} ");
            } else {
                let _ = write!(s, "mark {m} ");
            }
        }
        if let Some(u) = self.uid {
            let _ = write!(s, "uid {u} ");
        }
        if self.cached && self.dst.is_ipv4() {
            s.push_str("\n    cache ");
            let mut flags = self.cache_flags & !0xFFFF;
            if flags != 0 {
                s.push('<');
                for (bit, name) in RTCF_NAMES {
                    if flags & bit != 0 {
                        flags &= !bit;
                        s.push_str(name);
                        s.push_str(if flags != 0 { "," } else { "> " });
                    }
                }
                if flags != 0 {
                    let _ = write!(s, "{flags:x}> ");
                }
            }
        }
        if let Some(i) = &self.iif {
            let _ = write!(s, "iif {i} ");
        }
        if let Some(p) = self.pref {
            let name = match p {
                0 => "medium".to_string(),
                1 => "high".to_string(),
                3 => "low".to_string(),
                n => n.to_string(),
            };
            let _ = write!(s, "pref {name}");
        }
        s
    }
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

/// What makes two routes compete for one place in the kernel: family, table,
/// destination, TOS and metric (none is the family's default: 0 for IPv4, 1024
/// for IPv6, which the kernel gives a route added without one). An exclusive
/// add of one fails while the other is there; `ip route replace` replaces the
/// route with this key. Routes equal by [`Route::same`] have equal keys.
///
/// The one definition of a route's identity: the planner matches routes by it,
/// and apply's undo checks with it what holds a route's place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RouteKey {
    /// Address family.
    pub family: Family,
    /// Routing table id.
    pub table: u32,
    /// Destination prefix.
    pub dst: ipnet::IpNet,
    /// TOS / DSCP selector.
    pub tos: u8,
    /// Metric, the family's default when none was reported
    /// ([`Route::effective_metric`]).
    pub metric: u32,
}

/// The metric the kernel gives an IPv6 route added without one
/// (`IP6_RT_PRIO_USER`, include/net/ip6_route.h).
pub const IP6_RT_PRIO_USER: u32 = 1024;

impl Route {
    /// Its identity in the kernel: see [`RouteKey`].
    pub fn key(&self) -> RouteKey {
        RouteKey {
            family: self.family,
            table: self.table,
            dst: self.dst,
            tos: self.tos,
            metric: self.effective_metric(),
        }
    }

    /// The metric the kernel gives the route: its own, else the family's
    /// default. IPv4 keeps 0; IPv6 makes 0 (or none) `IP6_RT_PRIO_USER`, 1024
    /// (`ip6_route_info_create` in net/ipv6/route.c: `ip -6 route add` without
    /// a metric shows `metric 1024`).
    pub fn effective_metric(&self) -> u32 {
        match (self.family, self.metric) {
            (Family::Inet6, None | Some(0)) => IP6_RT_PRIO_USER,
            (_, m) => m.unwrap_or(0),
        }
    }

    /// The route as compared: the family's default metric is no metric (the
    /// kernel reports a metric of 0, or 1024 for IPv6, for a route added
    /// without one), and an IPv6 route's scope is global (the kernel keeps no
    /// scope for IPv6 routes and reports every one as `global`).
    pub fn normalized(&self) -> Route {
        let mut r = self.clone();
        let default = match r.family {
            Family::Inet => 0,
            Family::Inet6 => IP6_RT_PRIO_USER,
        };
        if r.metric == Some(0) || r.metric == Some(default) {
            r.metric = None;
        }
        if r.family == Family::Inet6 {
            r.scope = Scope::Universe;
        }
        r
    }

    /// Equal to `other` however the default metric (or an IPv6 scope) was
    /// reported: the same route.
    pub fn same(&self, other: &Route) -> bool {
        self.normalized() == other.normalized()
    }

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
            write!(f, " dev {}", super::ifname_word(d))?;
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
                write!(f, " dev {}", super::ifname_word(d))?;
            }
            write!(f, " weight {}", nh.weight)?;
        }
        Ok(())
    }

    /// The scope `ip route add` picks when none is given: host for local routes,
    /// global for gateway, multipath or device-less routes, link otherwise; for
    /// IPv6 always global (the kernel keeps no scope for IPv6 routes).
    pub fn implied_scope(&self) -> Scope {
        if self.family == Family::Inet6 {
            Scope::Universe
        } else if self.kind == RouteType::Local {
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

#[cfg(test)]
mod reply_tests {
    use super::*;

    fn reply(dst: &str) -> RouteReply {
        RouteReply {
            kind: RouteType::Unicast,
            dst: dst.parse().unwrap(),
            from: None,
            gateway: None,
            dev: Some("r1".into()),
            table: Some(crate::model::RT_TABLE_MAIN),
            table_name: Some("main".into()),
            protocol: crate::model::protocol::KERNEL,
            scope: Scope::Universe,
            cached: false,
            cache_flags: 0,
            prefsrc: None,
            metric: None,
            mark: None,
            uid: None,
            iif: None,
            pref: None,
            tos: 0,
            refused: None,
        }
    }

    #[test]
    fn ipv6_reply_prints_protocol_metric_and_preference() {
        // `ip route get 2001:db8:1::99` (iproute2 print_route: an uncached reply
        // prints proto; scope global is not printed; pref last).
        let mut r = reply("2001:db8:1::99");
        r.from = Some("::".parse().unwrap());
        r.prefsrc = Some("2001:db8:1::1".parse().unwrap());
        r.metric = Some(256);
        r.pref = Some(0);
        assert_eq!(
            r.render(false),
            "2001:db8:1::99 from :: dev r1 proto kernel src 2001:db8:1::1 metric 256 pref medium"
        );
        assert!(r.render(true).starts_with(
            "unicast 2001:db8:1::99 from :: dev r1 table main proto kernel scope global "
        ));
    }

    #[test]
    fn cache_flags_and_refusals() {
        let mut r = reply("198.18.2.11");
        r.kind = RouteType::Local;
        r.dev = Some("lo".into());
        r.table = Some(crate::model::RT_TABLE_LOCAL);
        r.table_name = Some("local".into());
        r.cached = true;
        r.cache_flags = 0x8000_0000;
        r.uid = Some(0);
        assert_eq!(
            r.render(false),
            "local 198.18.2.11 dev lo table local uid 0 \n    cache <local> "
        );
        let mut r = reply("198.18.96.1");
        r.kind = RouteType::Prohibit;
        r.refused = Some(libc::EACCES);
        let t = r.render(false);
        assert!(
            t.starts_with("prohibit 198.18.96.1: a prohibit route or rule matched"),
            "{t}"
        );
    }
}

#[cfg(test)]
mod identity_tests {
    use super::*;

    fn route(dst: &str, metric: Option<u32>) -> Route {
        Route {
            family: Family::Inet,
            table: 1001,
            dst: dst.parse().unwrap(),
            kind: RouteType::Unicast,
            dev: Some("r1".into()),
            prefsrc: None,
            gateway: None,
            scope: Scope::Link,
            protocol: 201,
            metric,
            tos: 0,
            multipath: Vec::new(),
        }
    }

    #[test]
    fn a_metric_of_zero_is_no_metric() {
        let (a, b) = (
            route("198.18.0.0/24", None),
            route("198.18.0.0/24", Some(0)),
        );
        assert!(a.same(&b));
        assert_eq!(a.key(), b.key());
        assert_eq!(b.normalized().metric, None);
    }

    #[test]
    fn the_key_leaves_out_what_replace_changes() {
        let a = route("198.18.0.0/24", Some(5));
        let mut b = a.clone();
        b.dev = Some("r2".into());
        b.prefsrc = Some("198.18.0.11".parse().unwrap());
        b.protocol = 4;
        b.scope = Scope::Universe;
        assert_eq!(a.key(), b.key());
        assert!(!a.same(&b));
        for other in [
            Route {
                table: 1002,
                ..a.clone()
            },
            Route {
                tos: 4,
                ..a.clone()
            },
            Route {
                metric: Some(6),
                ..a.clone()
            },
            route("198.18.1.0/24", Some(5)),
            Route {
                family: Family::Inet6,
                ..a.clone()
            },
        ] {
            assert_ne!(a.key(), other.key(), "{other}");
        }
    }
}
