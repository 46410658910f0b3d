//! `ip`-style one-line renderings of routes, rules, neighbours and sysctl values,
//! used by plan diffs, change descriptions and error messages.

use crate::model::{Neighbor, Route, RouteType, Rule, RuleAction, Scope};
use std::collections::BTreeMap;
use std::fmt::Write;

/// The name shown for a table: a registered name as `name(id)`, the reserved
/// tables by name, anything else by number.
pub(crate) fn table_text(id: u32, names: Option<&BTreeMap<u32, String>>) -> String {
    if let Some(n) = names.and_then(|m| m.get(&id)) {
        return format!("{n}({id})");
    }
    match id {
        crate::model::RT_TABLE_MAIN => "main".into(),
        crate::model::RT_TABLE_LOCAL => "local".into(),
        crate::model::RT_TABLE_DEFAULT => "default".into(),
        n => n.to_string(),
    }
}

fn route_type_name(t: RouteType) -> &'static str {
    match t {
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
    }
}

/// A route as `ip route` would print it (with the table and protocol always
/// shown). The scope is shown only when it differs from what `ip route add`
/// would pick (link for direct routes, global for gateway routes, host for local).
pub fn route_line(r: &Route, names: Option<&BTreeMap<u32, String>>) -> String {
    let mut s = String::new();
    if r.kind != RouteType::Unicast {
        let _ = write!(s, "{} ", route_type_name(r.kind));
    }
    if r.dst.prefix_len() == 0 {
        s.push_str("default");
    } else {
        let _ = write!(s, "{}", r.dst);
    }
    if let Some(g) = &r.gateway {
        let _ = write!(s, " via {g}");
    }
    if let Some(d) = &r.dev {
        let _ = write!(s, " dev {d}");
    }
    if let Some(p) = &r.prefsrc {
        let _ = write!(s, " src {p}");
    }
    let implied = if r.kind == RouteType::Local {
        Scope::Host
    } else if r.gateway.is_some() || !r.multipath.is_empty() || r.dev.is_none() {
        Scope::Universe
    } else {
        Scope::Link
    };
    if r.scope != implied {
        let _ = write!(s, " scope {}", r.scope);
    }
    let _ = write!(s, " table {}", table_text(r.table, names));
    let _ = write!(s, " proto {}", r.protocol);
    if let Some(m) = r.metric {
        if m != 0 {
            let _ = write!(s, " metric {m}");
        }
    }
    if r.tos != 0 {
        let _ = write!(s, " tos 0x{:02x}", r.tos);
    }
    for nh in &r.multipath {
        s.push_str(" nexthop");
        if let Some(g) = &nh.gateway {
            let _ = write!(s, " via {g}");
        }
        if let Some(d) = &nh.dev {
            let _ = write!(s, " dev {d}");
        }
        let _ = write!(s, " weight {}", nh.weight);
    }
    s
}

fn net_text(n: &ipnet::IpNet) -> String {
    if n.prefix_len() == n.max_prefix_len() {
        n.addr().to_string()
    } else {
        n.to_string()
    }
}

/// A rule as `ip rule` would print it, with `pref` and `proto` always shown.
pub fn rule_line(r: &Rule) -> String {
    let mut s = String::new();
    if r.invert {
        s.push_str("not ");
    }
    match &r.src {
        Some(n) => {
            let _ = write!(s, "from {}", net_text(n));
        }
        None => s.push_str("from all"),
    }
    if let Some(n) = &r.dst {
        let _ = write!(s, " to {}", net_text(n));
    }
    if r.tos != 0 {
        let _ = write!(s, " tos 0x{:02x}", r.tos);
    }
    if let Some(m) = r.fwmark.filter(|m| *m != 0) {
        let _ = write!(s, " fwmark 0x{m:x}");
        if let Some(mask) = r.fwmask.filter(|k| *k != u32::MAX) {
            let _ = write!(s, "/0x{mask:x}");
        }
    }
    if let Some(i) = &r.iif {
        let _ = write!(s, " iif {i}");
    }
    if let Some(o) = &r.oif {
        let _ = write!(s, " oif {o}");
    }
    match r.action {
        RuleAction::ToTable => {
            let _ = write!(s, " lookup {}", table_text(r.table, None));
        }
        RuleAction::Goto => {
            let _ = write!(
                s,
                " goto {}",
                r.goto.map(|g| g.to_string()).unwrap_or_else(|| "?".into())
            );
        }
        RuleAction::Nop => s.push_str(" nop"),
        RuleAction::Blackhole => s.push_str(" blackhole"),
        RuleAction::Unreachable => s.push_str(" unreachable"),
        RuleAction::Prohibit => s.push_str(" prohibit"),
        RuleAction::Other => s.push_str(" action-other"),
    }
    if let Some(p) = r.suppress_prefixlen.filter(|p| *p != u32::MAX) {
        let _ = write!(s, " suppress_prefixlength {p}");
    }
    let _ = write!(s, " pref {} proto {}", r.priority, r.protocol);
    s
}

/// A neighbour entry as `ip neigh` would print it.
pub fn neigh_line(n: &Neighbor) -> String {
    let mut s = format!("{} dev {}", n.ip, n.ifname);
    if let Some(m) = &n.mac {
        let _ = write!(s, " lladdr {m}");
    }
    if n.router {
        s.push_str(" router");
    }
    for st in &n.state {
        let _ = write!(
            s,
            " {}",
            serde_json::to_value(st)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        );
    }
    s
}

/// A sysctl value for display (tabs of multi-value sysctls as spaces).
pub(crate) fn sysctl_value(v: Option<&str>) -> String {
    match v {
        Some(v) => v.split_whitespace().collect::<Vec<_>>().join(" "),
        None => "(unread)".into(),
    }
}
