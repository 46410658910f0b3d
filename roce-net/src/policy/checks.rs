//! The checks of a policy: those that need no host ([`Policy::check`], run by
//! every loader) and, through `resolve`, those against a host snapshot
//! ([`Policy::validate`]).

use super::resolve::{self, Layout, Obstacle};
use super::{de, policy_err, Policy, MAIN_RULE_PRIORITY, POLICY_VERSION};
use crate::error::Result;
use crate::model::{protocol, HostState};
use std::net::IpAddr;

impl Policy {
    /// Checks that need no host: ranges, reserved numbers, syntax of names and
    /// addresses. Run by every loader; [`Policy::validate`] runs it again.
    pub fn check(&self) -> Result<()> {
        if self.version != POLICY_VERSION {
            return Err(policy_err(
                "version",
                format!(
                    "policy version {} is not supported; this roce-net reads version {POLICY_VERSION}",
                    self.version
                ),
            ));
        }
        check_protocol(self.protocol)?;
        if let Some(inc) = &self.nics.include {
            if inc.is_empty() {
                return Err(policy_err(
                    "nics.include",
                    "empty list selects no NIC; omit `include` (or write `nics: auto`) for automatic selection",
                ));
            }
            for (i, n) in inc.iter().enumerate() {
                check_ifname_pattern(&de::join_index("nics.include", i), n)?;
            }
        }
        for (i, n) in self.nics.exclude.iter().enumerate() {
            check_ifname_pattern(&de::join_index("nics.exclude", i), n)?;
        }
        let arp_ig = crate::model::ConfKey::ArpIgnore.valid_range();
        if !i32::try_from(self.arp.arp_ignore).is_ok_and(|v| arp_ig.contains(&v)) {
            return Err(policy_err(
                "arp.arp_ignore",
                format!(
                    "{} is out of range {}..={} (1 = reply only for addresses on the receiving NIC)",
                    self.arp.arp_ignore,
                    arp_ig.start(),
                    arp_ig.end()
                ),
            ));
        }
        if self.arp.arp_announce > 2 {
            return Err(policy_err(
                "arp.arp_announce",
                format!(
                    "{} is out of range 0..=2 (2 = always use the best local source address)",
                    self.arp.arp_announce
                ),
            ));
        }
        for (i, s) in self.arp.scope.iter().enumerate() {
            if self.arp.scope[..i].contains(s) {
                return Err(policy_err(
                    &de::join_index("arp.scope", i),
                    format!("{s:?} is listed twice").to_lowercase(),
                ));
            }
        }
        for (key, v) in self.ipv6.wanted() {
            let range = key.valid_range();
            if !range.contains(&v) {
                return Err(policy_err(
                    &format!("ipv6.{}", key.file_name()),
                    format!("{v} is out of range {}..={}", range.start(), range.end()),
                ));
            }
        }
        self.check_routing()?;
        self.check_tuning()?;
        self.check_health()?;
        Ok(())
    }

    fn check_routing(&self) -> Result<()> {
        let r = &self.routing;
        let p = &r.table_name_prefix;
        if p.len() > crate::rt_tables::MAX_TABLE_PREFIX_LEN {
            return Err(policy_err(
                "routing.table_name_prefix",
                format!(
                    "the prefix has {} bytes; at most {} fit (a table name is the prefix and \
                     an interface name of up to 15 bytes, and iproute2's rt_tables files hold \
                     names of up to {} bytes safely)",
                    p.len(),
                    crate::rt_tables::MAX_TABLE_PREFIX_LEN,
                    crate::rt_tables::MAX_TABLE_NAME_LEN
                ),
            ));
        }
        if let Some(c) = p
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
        {
            return Err(policy_err(
                "routing.table_name_prefix",
                format!("{p:?} contains {c:?}; use letters, digits, '_', '-' or '.'"),
            ));
        }
        if p.is_empty() && self.register_table_names {
            return Err(policy_err(
                "routing.table_name_prefix",
                "empty prefix would register bare interface names as table names; use e.g. \"roce_\"",
            ));
        }
        if r.rule_priority_base == 0 || r.rule_priority_base >= MAIN_RULE_PRIORITY - 1 {
            return Err(policy_err(
                "routing.rule_priority_base",
                format!(
                    "{} is out of range 1..={}: priority 0 belongs to the local table's rule, and \
                     rules at {MAIN_RULE_PRIORITY} or later come after the main table and never match",
                    r.rule_priority_base,
                    MAIN_RULE_PRIORITY - 2
                ),
            ));
        }
        for (name, t) in &r.tables {
            let path = de::join_key("routing.tables", name);
            check_ifname_literal(&path, name)?;
            check_table_id(&path, *t)?;
        }
        for (name, gws) in &r.default_gateway {
            let path = de::join_key("routing.default_gateway", name);
            check_ifname_pattern(&path, name)?;
            if gws.0.is_empty() {
                return Err(policy_err(
                    &path,
                    "an empty list gives no gateway; leave the NIC out instead",
                ));
            }
            for (i, gw) in gws.0.iter().enumerate() {
                let at = if gws.0.len() == 1 {
                    path.clone()
                } else {
                    de::join_index(&path, i)
                };
                check_gateway(&at, gw)?;
                if gws.0[..i].iter().any(|o| o.is_ipv4() == gw.is_ipv4()) {
                    return Err(policy_err(
                        &at,
                        format!("a NIC has one default gateway per family; {gw} is the second"),
                    ));
                }
            }
        }
        for (i, e) in r.extra_routes.iter().enumerate() {
            let path = de::join_index("routing.extra_routes", i);
            check_ifname_literal(&format!("{path}.dev"), &e.dev)?;
            if let Some(via) = e.via.filter(|v| v.is_ipv4() != e.dst.addr().is_ipv4()) {
                return Err(policy_err(
                    &format!("{path}.via"),
                    format!("{via} is not of {}'s family", e.dst),
                ));
            }
            if e.dst.trunc() != e.dst {
                return Err(policy_err(
                    &format!("{path}.dst"),
                    format!(
                        "{} has host bits set; did you mean {}?",
                        e.dst,
                        e.dst.trunc()
                    ),
                ));
            }
            if let Some(via) = &e.via {
                check_gateway(&format!("{path}.via"), via)?;
            }
            if let Some(prev) = r.extra_routes[..i]
                .iter()
                .position(|o| o.dev == e.dev && o.dst == e.dst && o.metric == e.metric)
            {
                return Err(policy_err(
                    &path,
                    format!(
                        "route {} for {} is also routing.extra_routes[{prev}]",
                        e.dst, e.dev
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The health section's ids are check ids in their spelling (lowercase
    /// letters, digits, `-`), each given once per list (one in both lists is
    /// ignored: `ignore: [port-down]` needs no new `critical` list). Whether each is a
    /// check roce-net has is the health module's to say (it knows the doctor's
    /// ids; the policy sits below the doctor).
    fn check_health(&self) -> Result<()> {
        let h = &self.health;
        for (list, ids) in [
            ("health.critical", &h.critical),
            ("health.ignore", &h.ignore),
        ] {
            for (i, id) in ids.iter().enumerate() {
                let path = de::join_index(list, i);
                if id.is_empty()
                    || id.len() > 64
                    || !id
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                {
                    return Err(policy_err(
                        &path,
                        format!(
                            "{} is not a check id (lowercase letters, digits and '-', like \
                             arp-ignore; docs/checks.md lists them)",
                            crate::input::excerpt(id, 64)
                        ),
                    ));
                }
                if ids[..i].contains(id) {
                    return Err(policy_err(&path, format!("{id} is listed twice")));
                }
            }
        }
        Ok(())
    }

    fn check_tuning(&self) -> Result<()> {
        let t = &self.tuning;
        let int_max = i32::MAX as u64;
        for (name, v) in [
            ("netdev_max_backlog", t.netdev_max_backlog),
            ("rmem_max", t.rmem_max),
            ("wmem_max", t.wmem_max),
        ] {
            if let Some(v) = v {
                if v == 0 || v > int_max {
                    return Err(policy_err(
                        &format!("tuning.{name}"),
                        format!("{v} is out of range 1..={int_max}"),
                    ));
                }
            }
        }
        if let Some([a, b, c]) = t.udp_mem {
            if a == 0 || a > b || b > c || c > i64::MAX as u64 {
                return Err(policy_err(
                    "tuning.udp_mem",
                    format!(
                        "[{a}, {b}, {c}] must be three page counts with 0 < min <= pressure <= max"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Check the policy against a host: every NIC it names exists and has an IPv4
    /// address, tables and priorities are free of foreign routes and rules, and
    /// gateways are on the NICs' subnets. Errors are [`ErrorKind::Policy`](crate::ErrorKind::Policy) with the
    /// field path.
    pub fn validate(&self, host: &HostState) -> Result<()> {
        self.layout(host).map(|_| ())
    }

    /// The NICs this policy manages on a host, in numbering order.
    pub fn select_nics(&self, host: &HostState) -> Result<Vec<String>> {
        Ok(self
            .layout(host)?
            .nics
            .into_iter()
            .map(|n| n.ifname)
            .collect())
    }

    /// Validate against a host and compute the per-NIC layout.
    pub(crate) fn layout(&self, host: &HostState) -> Result<Layout> {
        self.check()?;
        super::host_tuning::check(self, host)?;
        resolve::resolve(self, host)
    }

    /// [`Policy::layout`] as if the foreign routes and rules in the way (which
    /// validation refuses) were gone, and those objects.
    pub(crate) fn layout_past_obstacles(
        &self,
        host: &HostState,
    ) -> Result<(Layout, Vec<Obstacle>)> {
        self.check()?;
        super::host_tuning::check(self, host)?;
        resolve::resolve_past_obstacles(self, host)
    }
}

/// Refuse protocol numbers that belong to the kernel, boot-time routes, or
/// routes the administrator adds with `ip route add` (static).
fn check_protocol(p: u8) -> Result<()> {
    let why = match p {
        protocol::UNSPEC => "0 (unspec) is what rules without a protocol carry",
        protocol::REDIRECT => "1 (redirect) marks routes installed by ICMP redirects",
        protocol::KERNEL => "2 (kernel) marks routes the kernel installs for addresses",
        protocol::BOOT => "3 (boot) marks routes installed at boot and by many tools",
        protocol::STATIC => {
            "4 (static) is what `ip route add` uses by default; owning it would delete the administrator's routes"
        }
        protocol::DHCP => "16 (dhcp) marks routes installed by DHCP clients",
        _ => return Ok(()),
    };
    Err(policy_err(
        "protocol",
        format!(
            "{why}; choose an unused number above 4 (default {})",
            protocol::ROCE_NET_DEFAULT
        ),
    ))
}

fn check_table_id(path: &str, t: u32) -> Result<()> {
    match resolve::reserved_table(t) {
        None => Ok(()),
        Some(name) => Err(policy_err(
            path,
            format!("table {t} is reserved ({name}); pick another id (ids above 255 are fine)"),
        )),
    }
}

fn check_gateway(path: &str, gw: &IpAddr) -> Result<()> {
    let bad = match gw {
        IpAddr::V6(v6) => v6.is_unspecified() || v6.is_multicast() || v6.is_loopback(),
        IpAddr::V4(v4) => {
            v4.is_unspecified() || v4.is_multicast() || v4.is_broadcast() || v4.is_loopback()
        }
    };
    if bad {
        Err(policy_err(
            path,
            format!("{gw} cannot be a gateway (unspecified, loopback, multicast or broadcast)"),
        ))
    } else {
        Ok(())
    }
}

fn bad_ifname_char(name: &str, allow_glob: bool) -> Option<char> {
    name.chars().find(|c| {
        c.is_whitespace() || *c == '/' || *c == ':' || (!allow_glob && matches!(c, '*' | '?'))
    })
}

fn check_ifname_pattern(path: &str, name: &str) -> Result<()> {
    if name.is_empty() || name.len() > 15 {
        return Err(policy_err(
            path,
            format!("{name:?} is not an interface name (1 to 15 characters)"),
        ));
    }
    if let Some(c) = bad_ifname_char(name, true) {
        return Err(policy_err(
            path,
            format!("{name:?} is not an interface name (contains {c:?})"),
        ));
    }
    Ok(())
}

fn check_ifname_literal(path: &str, name: &str) -> Result<()> {
    check_ifname_pattern(path, name)?;
    if let Some(c) = bad_ifname_char(name, false) {
        return Err(policy_err(
            path,
            format!("{name:?}: globs ({c:?}) are not allowed here; name one interface"),
        ));
    }
    Ok(())
}
