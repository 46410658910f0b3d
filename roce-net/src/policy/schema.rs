//! The policy document: every section, its fields and defaults, and how each is
//! written in YAML/JSON (`docs/policy.md` is the reference).

use super::Backend;
use crate::model::{protocol, AddressFamilies, ConfKey, Family};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::net::IpAddr;

/// The policy document version this library reads.
pub const POLICY_VERSION: u32 = 1;

/// Lowest rule priority the `main` table's default rule uses; roce-net rules must
/// come before it or they never match.
pub const MAIN_RULE_PRIORITY: u32 = 32766;
/// The whole policy. Every field has a default; see `docs/policy.md`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Policy {
    /// Document version; only [`POLICY_VERSION`] (1) is accepted.
    pub version: u32,
    /// Which NICs are managed.
    pub nics: NicSelection,
    /// Which address families roce-net manages: `both` (the default), `ipv4`
    /// or `ipv6`. A family left out is left alone: no tables or rules of it,
    /// none of its sysctls (ARP and `rp_filter` are IPv4's, [`Ipv6Policy`]
    /// IPv6's).
    pub family: AddressFamilies,
    /// ARP sysctls.
    pub arp: ArpPolicy,
    /// `rp_filter` mode applied to `all` and each managed NIC.
    pub rp_filter: RpFilter,
    /// IPv6 settings of each NIC managed in IPv6 (none set by default).
    pub ipv6: Ipv6Policy,
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
    /// Which findings make `roce-net check` report the node CRITICAL.
    pub health: HealthPolicy,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            version: POLICY_VERSION,
            nics: NicSelection::default(),
            family: AddressFamilies::default(),
            arp: ArpPolicy::default(),
            rp_filter: RpFilter::default(),
            ipv6: Ipv6Policy::default(),
            routing: RoutingPolicy::default(),
            neighbors: NeighborPolicy::default(),
            tuning: TuningPolicy::default(),
            protocol: protocol::ROCE_NET_DEFAULT,
            persistence: PersistencePolicy::default(),
            register_table_names: true,
            health: HealthPolicy::default(),
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

/// IPv6 settings written to `net.ipv6.conf.<nic>` of every NIC managed in IPv6.
/// A key left out (the default for every key) is left alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Ipv6Policy {
    /// `accept_ra` (0..=2): process router advertisements (2: even when forwarding).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accept_ra: Option<i32>,
    /// `accept_ra_defrtr` (0..=1): 0 keeps a router advertisement on a RoCE NIC
    /// from installing a default route (`proto ra`) in the main table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accept_ra_defrtr: Option<i32>,
    /// `autoconf` (0..=1): addresses from advertised prefixes (SLAAC).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub autoconf: Option<i32>,
    /// `accept_dad` (0..=2): duplicate address detection.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accept_dad: Option<i32>,
    /// `ndisc_notify` (0..=1): unsolicited neighbour advertisements on link up,
    /// MAC change and when an address finishes DAD.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ndisc_notify: Option<i32>,
    /// `keep_addr_on_down` (-1..=1): 1 keeps static addresses, and their GIDs,
    /// when the link goes down.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keep_addr_on_down: Option<i32>,
}

impl Ipv6Policy {
    /// The keys set, with their values, in [`ConfKey::ALL`]'s order.
    pub fn wanted(&self) -> Vec<(ConfKey, i32)> {
        [
            (ConfKey::AcceptRa, self.accept_ra),
            (ConfKey::AcceptRaDefrtr, self.accept_ra_defrtr),
            (ConfKey::Autoconf, self.autoconf),
            (ConfKey::AcceptDad, self.accept_dad),
            (ConfKey::NdiscNotify, self.ndisc_notify),
            (ConfKey::KeepAddrOnDown, self.keep_addr_on_down),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect()
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

/// A NIC's default gateways: written as one address or a list of at most one
/// per family (an IPv6 gateway may be link-local, as routers advertise
/// themselves).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Gateways(pub Vec<IpAddr>);

impl Gateways {
    /// The gateway of `family`, if one is given.
    pub fn of(&self, family: Family) -> Option<IpAddr> {
        self.0.iter().copied().find(|g| Family::of(g) == family)
    }
}

impl From<IpAddr> for Gateways {
    fn from(g: IpAddr) -> Gateways {
        Gateways(vec![g])
    }
}

impl Serialize for Gateways {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self.0.as_slice() {
            [one] => one.serialize(s),
            all => all.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Gateways {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Gateways;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an IP address, or a list of one IPv4 and one IPv6 address")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> std::result::Result<Gateways, E> {
                s.parse::<IpAddr>()
                    .map(Gateways::from)
                    .map_err(|_| E::custom("invalid IP address syntax"))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<Gateways, A::Error> {
                let mut v = Vec::new();
                while let Some(g) = seq.next_element::<IpAddr>()? {
                    v.push(g);
                }
                Ok(Gateways(v))
            }
        }
        d.deserialize_any(V)
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
    /// Default gateway per NIC name (or glob) in that NIC's table: one address,
    /// or one of each family (`[198.18.0.1, "fe80::1"]`).
    pub default_gateway: BTreeMap<String, Gateways>,
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
    /// the planner's `PollutionReason`).
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

/// What `roce-net check` makes of the doctor's findings (docs/health.md).
///
/// A finding of a check listed in `critical` at severity `error` makes the
/// verdict CRITICAL (Nagios exit 2, node-problem-detector 1, the Slurm node
/// drained); any other finding at severity `error` or `warning` makes it
/// WARNING; `info` never counts. A check listed in `ignore` never counts at
/// all, even when it is also in `critical` (the verdict only counts its
/// findings, under `ignored`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HealthPolicy {
    /// Check ids whose error findings mean the node cannot carry RDMA.
    pub critical: Vec<String>,
    /// Check ids that never count towards the verdict.
    pub ignore: Vec<String>,
}

/// The checks whose error findings make a node CRITICAL by default: a node
/// that cannot carry RDMA. No usable GID (`gid-rocev2-missing`; on an IPv6
/// rail an address that failed duplicate address detection, `ipv6-dad`, or
/// IPv6 disabled on a NIC without IPv4, `ipv6-disabled`), ARP flux
/// (`arp-ignore`, `arp-announce`), missing source routing on a rail
/// (`source-rule-missing`, `source-table-incomplete`, and what it causes,
/// `asymmetric-egress`), a NIC down (`port-down`); and, with `check --mesh`,
/// a cluster mesh that found this host or one of its NICs failing with every
/// peer (`mesh-host`, `mesh-nic`).
pub const DEFAULT_CRITICAL_CHECKS: &[&str] = &[
    "gid-rocev2-missing",
    "ipv6-dad",
    "ipv6-disabled",
    "arp-ignore",
    "arp-announce",
    "source-rule-missing",
    "source-table-incomplete",
    "asymmetric-egress",
    "port-down",
    "mesh-host",
    "mesh-nic",
];

impl Default for HealthPolicy {
    fn default() -> Self {
        HealthPolicy {
            critical: DEFAULT_CRITICAL_CHECKS
                .iter()
                .map(|s| (*s).to_string())
                .collect(),
            ignore: Vec::new(),
        }
    }
}
