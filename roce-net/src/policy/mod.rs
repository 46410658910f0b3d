//! The desired state a user writes (YAML, JSON, or a value from Python), validated
//! with field paths.
//!
//! A [`Policy`] says which NICs roce-net manages and how: ARP sysctls, `rp_filter`,
//! one routing table and one source rule per NIC, the neighbour flush, optional
//! tuning, the protocol number that marks ownership, and where the result is
//! persisted. Every section has defaults, so an empty document is a valid policy.
//! Unknown fields are refused everywhere, and every error names the field path
//! (`routing.tables.r1: table 254 is reserved (main)`).
//!
//! The schema reference is `docs/policy.md`.

mod de;
mod glob;
mod resolve;

pub(crate) use resolve::{ForeignObject, Layout, Obstacle};

use crate::error::{Error, ErrorKind, Result};
use crate::model::{protocol, HostState};
use crate::persist::Backend;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::net::IpAddr;

/// The policy document version this library reads.
pub const POLICY_VERSION: u32 = 1;

/// Lowest rule priority the `main` table's default rule uses; roce-net rules must
/// come before it or they never match.
pub const MAIN_RULE_PRIORITY: u32 = 32766;

/// A policy error at a field path.
pub(crate) fn policy_err(path: &str, msg: impl std::fmt::Display) -> Error {
    if path.is_empty() {
        Error::new(ErrorKind::Policy, msg.to_string())
    } else {
        Error::new(ErrorKind::Policy, format!("{path}: {msg}"))
    }
}

/// The whole policy. Every field has a default; see `docs/policy.md`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Policy {
    /// Document version; only [`POLICY_VERSION`] (1) is accepted.
    pub version: u32,
    /// Which NICs are managed.
    pub nics: NicSelection,
    /// ARP sysctls.
    pub arp: ArpPolicy,
    /// `rp_filter` mode applied to `all` and each managed NIC.
    pub rp_filter: RpFilter,
    /// Per-NIC routing tables and source rules.
    pub routing: RoutingPolicy,
    /// Which neighbour entries are flushed.
    pub neighbors: NeighborPolicy,
    /// Optional host tuning (only the keys given are set).
    pub tuning: TuningPolicy,
    /// The routing protocol number (`RTPROT`) that marks routes and rules as
    /// roce-net's own.
    pub protocol: u8,
    /// Where the configuration is persisted.
    pub persistence: PersistencePolicy,
    /// Register table names (`roce_<nic>`) in `rt_tables.d`.
    pub register_table_names: bool,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            version: POLICY_VERSION,
            nics: NicSelection::default(),
            arp: ArpPolicy::default(),
            rp_filter: RpFilter::default(),
            routing: RoutingPolicy::default(),
            neighbors: NeighborPolicy::default(),
            tuning: TuningPolicy::default(),
            protocol: protocol::ROCE_NET_DEFAULT,
            persistence: PersistencePolicy::default(),
            register_table_names: true,
        }
    }
}

/// Which NICs roce-net manages. Written as `auto` or as a map
/// `{include: [...], exclude: [...]}`; names may use `*` and `?` globs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NicSelection {
    /// Names or globs to manage; `None` means automatic selection: the netdevs
    /// behind RDMA ports, or (with no RDMA devices) the NICs that share an IPv4
    /// subnet with another NIC.
    pub include: Option<Vec<String>>,
    /// Names or globs never managed (applied after `include`).
    pub exclude: Vec<String>,
}

impl NicSelection {
    /// True for automatic selection.
    pub fn is_auto(&self) -> bool {
        self.include.is_none()
    }
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct NicSelectionMap {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    include: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    exclude: Vec<String>,
}

impl Serialize for NicSelection {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        if self.include.is_none() && self.exclude.is_empty() {
            s.serialize_str("auto")
        } else {
            NicSelectionMap {
                include: self.include.clone(),
                exclude: self.exclude.clone(),
            }
            .serialize(s)
        }
    }
}

impl<'de> Deserialize<'de> for NicSelection {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = NicSelection;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("\"auto\" or a map with `include` and/or `exclude`")
            }
            fn visit_str<E: serde::de::Error>(
                self,
                s: &str,
            ) -> std::result::Result<NicSelection, E> {
                if s == "auto" {
                    Ok(NicSelection::default())
                } else {
                    Err(E::invalid_value(serde::de::Unexpected::Str(s), &self))
                }
            }
            fn visit_unit<E: serde::de::Error>(self) -> std::result::Result<NicSelection, E> {
                Ok(NicSelection::default())
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> std::result::Result<NicSelection, A::Error> {
                let m = NicSelectionMap::deserialize(
                    serde::de::value::MapAccessDeserializer::new(map),
                )?;
                Ok(NicSelection {
                    include: m.include,
                    exclude: m.exclude,
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// Where a per-interface sysctl is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfScope {
    /// `net.ipv4.conf.all`.
    All,
    /// `net.ipv4.conf.default` (interfaces created later).
    Default,
    /// `net.ipv4.conf.<nic>` for every managed NIC.
    Nics,
}

/// ARP sysctls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ArpPolicy {
    /// `arp_ignore` (0..=8); 1 = answer only for addresses on the receiving NIC.
    pub arp_ignore: u32,
    /// `arp_announce` (0..=2); 2 = always use the best local source address.
    pub arp_announce: u32,
    /// Where to write them; empty leaves ARP sysctls alone.
    pub scope: Vec<ConfScope>,
}

impl Default for ArpPolicy {
    fn default() -> Self {
        ArpPolicy {
            arp_ignore: 1,
            arp_announce: 2,
            scope: vec![ConfScope::All, ConfScope::Nics],
        }
    }
}

/// `rp_filter` mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum RpFilter {
    /// Leave `rp_filter` alone.
    Keep,
    /// 2: accept if the source is reachable through any interface.
    #[default]
    Loose,
    /// 1: accept only if the reverse path leaves by the receiving interface.
    Strict,
    /// 0: no source validation.
    Off,
}

impl RpFilter {
    /// The sysctl value, `None` for [`RpFilter::Keep`].
    pub fn value(self) -> Option<u32> {
        match self {
            RpFilter::Keep => None,
            RpFilter::Loose => Some(2),
            RpFilter::Strict => Some(1),
            RpFilter::Off => Some(0),
        }
    }
}

/// An extra route placed in a managed NIC's table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtraRoute {
    /// The managed NIC whose table receives the route (and its output device).
    pub dev: String,
    /// Destination prefix (host bits must be zero).
    pub dst: ipnet::IpNet,
    /// Gateway; omitted for an on-link route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<IpAddr>,
    /// Metric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<u32>,
}

/// Per-NIC routing tables and source rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RoutingPolicy {
    /// Set false to leave routes and rules alone entirely (stale owned objects are
    /// still removed).
    pub enabled: bool,
    /// NIC number n (1-based, NICs in natural name order) gets table
    /// `table_base + n` unless `tables` names it.
    pub table_base: u32,
    /// Explicit table per NIC name (wins over `table_base`).
    pub tables: BTreeMap<String, u32>,
    /// Prefix of the table names registered (`roce_r1`).
    pub table_name_prefix: String,
    /// NIC number n gets rule priority `rule_priority_base + n`.
    pub rule_priority_base: u32,
    /// Put the NIC's subnet route (with `src` = its address) in its table.
    pub subnet_route: bool,
    /// Default gateway per NIC name (or glob) in that NIC's table.
    pub default_gateway: BTreeMap<String, IpAddr>,
    /// Extra routes in NIC tables.
    pub extra_routes: Vec<ExtraRoute>,
}

impl Default for RoutingPolicy {
    fn default() -> Self {
        RoutingPolicy {
            enabled: true,
            table_base: 1000,
            tables: BTreeMap::new(),
            table_name_prefix: "roce_".into(),
            rule_priority_base: 1000,
            subnet_route: true,
            default_gateway: BTreeMap::new(),
            extra_routes: Vec::new(),
        }
    }
}

/// Which neighbour entries on managed NICs are flushed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum FlushMode {
    /// Entries that are FAILED/INCOMPLETE or show ARP-flux damage (see
    /// [`crate::plan::PollutionReason`]).
    #[default]
    Polluted,
    /// Every dynamic entry (never PERMANENT or NOARP ones).
    All,
    /// Nothing.
    None,
}

/// Neighbour flush settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct NeighborPolicy {
    /// Which entries are flushed.
    pub flush: FlushMode,
}

/// Host tuning; only the keys given are set, to exactly the value given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct TuningPolicy {
    /// `net.core.netdev_max_backlog`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub netdev_max_backlog: Option<u64>,
    /// `net.core.rmem_max` (bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rmem_max: Option<u64>,
    /// `net.core.wmem_max` (bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wmem_max: Option<u64>,
    /// `net.ipv4.udp_mem` (min, pressure, max) in pages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub udp_mem: Option<[u64; 3]>,
}

/// Persistence backend choice: `auto` (detect what the host uses when persisting)
/// or one of [`Backend`]'s names (`sysctl.d`, `rt_tables.d`, `networkd`,
/// `netplan`, `networkmanager`, `ifupdown`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PersistBackend(Option<Backend>);

impl PersistBackend {
    /// Detect the backend when persisting.
    pub const AUTO: PersistBackend = PersistBackend(None);

    /// A fixed backend.
    pub fn fixed(b: Backend) -> PersistBackend {
        PersistBackend(Some(b))
    }

    /// The fixed backend, `None` for [`PersistBackend::AUTO`].
    pub fn backend(self) -> Option<Backend> {
        self.0
    }
}

impl Serialize for PersistBackend {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.0.map(Backend::name).unwrap_or("auto"))
    }
}

impl<'de> Deserialize<'de> for PersistBackend {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s == "auto" {
            return Ok(PersistBackend::AUTO);
        }
        s.parse::<Backend>()
            .map(PersistBackend::fixed)
            .map_err(|_| {
                serde::de::Error::custom(format!(
                    "unknown backend {s:?}: use auto, {}",
                    Backend::all().map(Backend::name).join(", ")
                ))
            })
    }
}

/// Persistence settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct PersistencePolicy {
    /// Which backend renders the boot-persistent configuration.
    pub backend: PersistBackend,
}

impl Policy {
    /// Parse a YAML policy document (an empty document is the default policy).
    pub fn from_yaml(text: &str) -> Result<Policy> {
        let v: serde_json::Value = serde_yaml::from_str(text)
            .map_err(|e| Error::new(ErrorKind::Policy, format!("policy is not valid YAML: {e}")))?;
        Policy::from_value(v)
    }

    /// Parse a JSON policy document.
    pub fn from_json(text: &str) -> Result<Policy> {
        let v: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| Error::new(ErrorKind::Policy, format!("policy is not valid JSON: {e}")))?;
        Policy::from_value(v)
    }

    /// Build a policy from a JSON value (e.g. a Python dict converted by the binding).
    /// `null` is the default policy.
    pub fn from_value(v: serde_json::Value) -> Result<Policy> {
        let policy: Policy = if v.is_null() {
            Policy::default()
        } else {
            if !v.is_object() {
                return Err(Error::new(
                    ErrorKind::Policy,
                    "a policy must be a map of sections (nics, arp, rp_filter, routing, ...)",
                ));
            }
            de::from_value(&v).map_err(|e| Error::new(ErrorKind::Policy, e.to_string()))?
        };
        policy.check()?;
        Ok(policy)
    }

    /// Read a policy file; `.json` files are read as JSON, everything else as YAML.
    pub fn load(path: &std::path::Path) -> Result<Policy> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(e, format!("reading policy {}", path.display())))?;
        let is_json = path.extension().and_then(|e| e.to_str()) == Some("json");
        let p = if is_json {
            Policy::from_json(&text)
        } else {
            Policy::from_yaml(&text)
        };
        p.map_err(|e| e.context(format!("in policy {}", path.display())))
    }

    /// The policy as a JSON value (every field, defaults filled in).
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// The policy as pretty JSON (every field, defaults filled in).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// The policy as YAML (every field, defaults filled in).
    pub fn to_yaml(&self) -> String {
        serde_yaml::to_string(self).unwrap_or_default()
    }

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
        if !arp_ig.contains(&self.arp.arp_ignore) {
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
        self.check_routing()?;
        self.check_tuning()?;
        Ok(())
    }

    fn check_routing(&self) -> Result<()> {
        let r = &self.routing;
        let p = &r.table_name_prefix;
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
        for (name, gw) in &r.default_gateway {
            let path = de::join_key("routing.default_gateway", name);
            check_ifname_pattern(&path, name)?;
            check_gateway(&path, gw)?;
        }
        for (i, e) in r.extra_routes.iter().enumerate() {
            let path = de::join_index("routing.extra_routes", i);
            check_ifname_literal(&format!("{path}.dev"), &e.dev)?;
            if !e.dst.addr().is_ipv4() {
                return Err(policy_err(
                    &format!("{path}.dst"),
                    format!("{} is not IPv4; roce-net manages IPv4 tables only", e.dst),
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
    /// gateways are on the NICs' subnets. Errors are [`ErrorKind::Policy`] with the
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
        resolve::resolve(self, host)
    }

    /// [`Policy::layout`] as if the foreign routes and rules in the way (which
    /// validation refuses) were gone, and those objects.
    pub(crate) fn layout_past_obstacles(
        &self,
        host: &HostState,
    ) -> Result<(Layout, Vec<Obstacle>)> {
        self.check()?;
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
    match gw {
        IpAddr::V6(_) => Err(policy_err(
            path,
            format!("{gw} is IPv6; roce-net manages IPv4 tables only"),
        )),
        IpAddr::V4(v4) => {
            if v4.is_unspecified() || v4.is_multicast() || v4.is_broadcast() || v4.is_loopback() {
                Err(policy_err(
                    path,
                    format!(
                        "{gw} cannot be a gateway (unspecified, loopback, multicast or broadcast)"
                    ),
                ))
            } else {
                Ok(())
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_round_trips() {
        let p = Policy::default();
        assert_eq!(Policy::from_value(p.to_value()).unwrap(), p);
        assert_eq!(Policy::from_yaml("").unwrap(), p);
        assert_eq!(Policy::from_yaml("nics: auto\n").unwrap(), p);
        assert_eq!(Policy::from_json("{}").unwrap(), p);
    }
}
