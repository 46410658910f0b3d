//! Offline FIB lookup: what `ip route get DST from SRC` would answer, computed from a
//! [`HostState`] without touching any host.
//!
//! The algorithm follows the kernel's IPv4 output path (`ip_route_output_key_hash_rcu`,
//! `fib_rules_lookup`, `fib_table_lookup`, `inet_select_addr`) step by step:
//!
//! 1. A given source must be a local address (else [`FibError::InvalidSource`]);
//!    multicast, limited-broadcast and `0.0.0.0/8` sources are refused.
//! 2. Rules run in priority order (equal priorities in snapshot order). A rule matches
//!    on `from` (against the flow's source, `0.0.0.0` when none is given, so only
//!    rules whose `from` covers `0.0.0.0` match a source-less flow), `to`, `iif`
//!    (`lo` for locally generated traffic, as in the kernel), `oif`, `fwmark/mask` and
//!    `tos`; `not` inverts the whole match. `goto` jumps to the first rule with exactly
//!    the target priority, `nop` continues, `blackhole`/`unreachable`/`prohibit` end
//!    the lookup with that error.
//! 3. In the rule's table the longest matching prefix wins; among routes of that prefix
//!    the lowest TOS-compatible metric first. `throw` continues with the next rule,
//!    `blackhole`/`unreachable`/`prohibit` routes end the lookup. Routes over
//!    administratively down devices (except host-scope `local` routes, which the
//!    kernel keeps alive) and, when an `oif` is given, next hops over another
//!    device are skipped, falling back to shorter prefixes as the kernel's trie does.
//!    `suppress_prefixlength N` rejects a result of prefix length `<= N` and continues.
//! 4. The source is the given one, else the route's `src`, else the kernel's
//!    `inet_select_addr(dev, gateway, route scope)`. A loopback (`127/8`) source
//!    may only go out through `lo` (else [`FibError::InvalidSource`]).
//!
//! While a namespace has never had a custom IPv4 rule, the kernel skips the rules
//! and does one longest-prefix match over the merged local/main trie, then (only
//! when that found nothing or a `throw` route) the `default` table, reporting
//! table `main` even for local destinations; see
//! [`FibMode`] for how this is detected and overridden.
//!
//! If the snapshot has no rules of the lookup's family, the kernel's defaults are
//! assumed (`0: lookup local`, `32766: lookup main`, `32767: lookup default` for IPv4;
//! no `default` rule for IPv6).
//!
//! Known approximations (documented, not guessed silently): multipath routes report
//! their first live next hop (the kernel hashes the flow), several equal-metric
//! default routes report the first one (the kernel also weighs neighbour state),
//! IPv6 source selection implements RFC 6724 rules 1, 2, 5, 6 and 8 only, IPv6
//! source-specific routes and rule selectors roce-net does not model (uid range,
//! ports, `l3mdev`) are ignored, and lookups with an `iif` skip the kernel's
//! reverse-path validation.

use crate::model::{
    Family, HostState, Route, RouteType, Rule, RuleAction, Scope, RT_TABLE_DEFAULT, RT_TABLE_LOCAL,
    RT_TABLE_MAIN,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The flow to look up, like the arguments of `ip route get`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flow {
    /// Destination address.
    pub dst: IpAddr,
    /// Source address (`from`); `None` lets the kernel choose one.
    pub src: Option<IpAddr>,
    /// Input interface (`iif`); `None` for locally generated traffic.
    pub iif: Option<String>,
    /// Output interface (`oif`), as `SO_BINDTODEVICE` would set it.
    pub oif: Option<String>,
    /// Firewall mark (`mark`).
    pub fwmark: u32,
    /// TOS byte (`tos`).
    pub tos: u8,
}

impl Flow {
    /// A flow to `dst` with nothing else set.
    pub fn to(dst: IpAddr) -> Flow {
        Flow {
            dst,
            src: None,
            iif: None,
            oif: None,
            fwmark: 0,
            tos: 0,
        }
    }

    /// The same flow with a source address.
    pub fn from(mut self, src: IpAddr) -> Flow {
        self.src = Some(src);
        self
    }

    /// The same flow bound to an output interface.
    pub fn oif(mut self, oif: &str) -> Flow {
        self.oif = Some(oif.to_string());
        self
    }

    /// The same flow arriving on an input interface.
    pub fn iif(mut self, iif: &str) -> Flow {
        self.iif = Some(iif.to_string());
        self
    }

    /// The same flow with a firewall mark.
    pub fn mark(mut self, fwmark: u32) -> Flow {
        self.fwmark = fwmark;
        self
    }
}

/// The route the kernel would pick for a flow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FibDecision {
    /// Route type of the result (`unicast`, `local`, `broadcast`, ...).
    pub kind: RouteType,
    /// The table that matched (`None` for results made without a table lookup,
    /// e.g. a broadcast from a given source, or an on-link guess for a given `oif`).
    pub table: Option<u32>,
    /// Priority of the rule whose lookup answered (`None` when the kernel consulted
    /// no rules: see [`FibMode`]).
    pub rule_priority: Option<u32>,
    /// The matching route, as in the snapshot.
    pub route: Option<Route>,
    /// Output device (`lo` for local destinations, as `ip route get` prints).
    pub dev: Option<String>,
    /// The source address the flow uses (given, the route's `src`, or selected).
    pub prefsrc: Option<IpAddr>,
    /// Gateway of the chosen next hop.
    pub gateway: Option<IpAddr>,
    /// The route has several next hops and the first live one was reported.
    pub multipath: bool,
}

/// Why a lookup returned no route (the error `ip route get` would print).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FibError {
    /// The source is not a local address or not a valid source
    /// (`Network is unreachable` / `Invalid argument`).
    InvalidSource,
    /// No rule produced a route (`Network is unreachable`).
    NoRoute,
    /// A blackhole rule or route (`Invalid argument`).
    Blackhole,
    /// An unreachable rule or route (`No route to host` / `Network is unreachable`).
    Unreachable,
    /// A prohibit rule or route (`Permission denied`).
    Prohibit,
    /// The `oif` names no existing interface (`No such device`), or it is down.
    NoDevice,
    /// The source and destination families differ.
    FamilyMismatch,
    /// The destination cannot be routed (`0.x.x.x`; `Invalid argument`).
    InvalidDestination,
}

impl std::fmt::Display for FibError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FibError::InvalidSource => "source address is not a usable local address",
            FibError::NoRoute => "no route matches",
            FibError::Blackhole => "blackhole route or rule",
            FibError::Unreachable => "unreachable route or rule",
            FibError::Prohibit => "prohibit route or rule",
            FibError::NoDevice => "output device missing or down",
            FibError::FamilyMismatch => "source and destination families differ",
            FibError::InvalidDestination => "destination address cannot be routed",
        })
    }
}

/// How the kernel consults the IPv4 tables.
///
/// Until the first policy rule is added to a namespace, the kernel keeps the
/// `local` and `main` tables merged in one trie and skips the rules altogether
/// (`fib_has_custom_rules` is false): the lookup is one longest-prefix match over
/// both tables, then the `default` table, and the matched table is reported as
/// `main` even for local destinations. The flag is sticky: once a rule was added,
/// the namespace keeps walking rules even after they are deleted, which a snapshot
/// cannot see; choose [`FibMode::Rules`] explicitly for such a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FibMode {
    /// [`FibMode::Merged`] when the snapshot's IPv4 rules are exactly the kernel's
    /// three defaults (or absent), else [`FibMode::Rules`].
    #[default]
    Auto,
    /// Walk the policy rules.
    Rules,
    /// No custom rules: merged local/main lookup, then `default` on a miss.
    Merged,
}

impl FibMode {
    /// The mode [`FibMode::Auto`] uses for a snapshot: [`FibMode::Merged`] when its
    /// IPv4 rules are exactly the kernel's three defaults (or absent), else
    /// [`FibMode::Rules`].
    pub fn detect(state: &HostState) -> FibMode {
        if has_only_default_rules(state) {
            FibMode::Merged
        } else {
            FibMode::Rules
        }
    }
}

/// True when the IPv4 rules are exactly the kernel's defaults (or absent).
pub(crate) fn has_only_default_rules(state: &HostState) -> bool {
    let v4: Vec<&Rule> = state
        .rules
        .iter()
        .filter(|r| r.family == Family::Inet)
        .collect();
    if v4.is_empty() {
        return true;
    }
    let plain = |r: &Rule, prio: u32, table: u32| {
        r.priority == prio
            && r.table == table
            && r.action == RuleAction::ToTable
            && !r.invert
            && r.src.map(|n| n.prefix_len() == 0).unwrap_or(true)
            && r.dst.map(|n| n.prefix_len() == 0).unwrap_or(true)
            && r.iif.is_none()
            && r.oif.is_none()
            && r.fwmark.unwrap_or(0) == 0
            && r.fwmask.unwrap_or(0) == 0
            && r.tos == 0
            && r.suppress_prefixlen.map(|n| n > 128).unwrap_or(true)
    };
    let mut sorted = v4.clone();
    sorted.sort_by_key(|r| r.priority);
    sorted.len() == 3
        && plain(sorted[0], 0, RT_TABLE_LOCAL)
        && plain(sorted[1], 32766, RT_TABLE_MAIN)
        && plain(sorted[2], 32767, RT_TABLE_DEFAULT)
}

/// Look a flow up, with the reason when the kernel would return an error
/// ([`FibMode::Auto`]).
pub fn resolve(state: &HostState, flow: &Flow) -> Result<FibDecision, FibError> {
    resolve_with(state, flow, FibMode::Auto)
}

/// Look a flow up in an explicit [`FibMode`].
pub fn resolve_with(
    state: &HostState,
    flow: &Flow,
    mode: FibMode,
) -> Result<FibDecision, FibError> {
    if let Some(s) = flow.src {
        if Family::of(&s) != Family::of(&flow.dst) {
            return Err(FibError::FamilyMismatch);
        }
    }
    let merged = match mode {
        FibMode::Auto => has_only_default_rules(state),
        FibMode::Rules => false,
        FibMode::Merged => true,
    };
    match flow.dst {
        IpAddr::V4(d) => {
            resolve_v4(state, flow, d, merged).and_then(|dec| loopback_source_check(flow, dec))
        }
        IpAddr::V6(_) => resolve_v6(state, flow),
    }
}

/// The rules of one family in evaluation order (the kernel's defaults when the
/// snapshot has none of that family).
pub fn rules_in_order(state: &HostState, family: Family) -> Vec<Rule> {
    let mut rules: Vec<Rule> = state
        .rules
        .iter()
        .filter(|r| r.family == family)
        .cloned()
        .collect();
    if rules.is_empty() {
        let mk = |priority: u32, table: u32| {
            Rule::lookup(priority, table)
                .family(family)
                .protocol(crate::model::protocol::KERNEL)
        };
        rules.push(mk(0, RT_TABLE_LOCAL));
        rules.push(mk(32766, RT_TABLE_MAIN));
        if family == Family::Inet {
            rules.push(mk(32767, RT_TABLE_DEFAULT));
        }
    }
    // Stable: equal priorities keep snapshot (kernel list) order.
    rules.sort_by_key(|r| r.priority);
    rules
}

fn unspecified(family: Family) -> IpAddr {
    match family {
        Family::Inet => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        Family::Inet6 => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    }
}

/// True when `rule`'s selectors match `flow` (before `not` is applied the kernel
/// evaluates every selector; `not` inverts the result).
pub fn rule_matches(rule: &Rule, flow: &Flow) -> bool {
    let family = Family::of(&flow.dst);
    let raw = (|| {
        let iif = flow.iif.as_deref().unwrap_or("lo");
        if let Some(r_iif) = &rule.iif {
            if r_iif != iif {
                return false;
            }
        }
        if let Some(r_oif) = &rule.oif {
            if flow.oif.as_deref() != Some(r_oif.as_str()) {
                return false;
            }
        }
        let mark = rule.fwmark.unwrap_or(0);
        let mask = rule
            .fwmask
            .unwrap_or(if rule.fwmark.is_some() { u32::MAX } else { 0 });
        if (mark ^ flow.fwmark) & mask != 0 {
            return false;
        }
        if let Some(net) = &rule.src {
            if net.prefix_len() > 0 {
                match (flow.src, family) {
                    (Some(s), _) => {
                        if !net.contains(&s) {
                            return false;
                        }
                    }
                    // IPv4 compares the (zero) source against the prefix.
                    (None, Family::Inet) => {
                        if !net.contains(&unspecified(family)) {
                            return false;
                        }
                    }
                    // IPv6 needs RT6_LOOKUP_F_HAS_SADDR for a `from` match.
                    (None, Family::Inet6) => return false,
                }
            }
        }
        if let Some(net) = &rule.dst {
            if net.prefix_len() > 0 && !net.contains(&flow.dst) {
                return false;
            }
        }
        if rule.tos != 0 && rule.tos != flow.tos {
            return false;
        }
        true
    })();
    raw != rule.invert
}

/// Outcome of a lookup in one table.
enum TableResult<'a> {
    /// A usable route.
    Hit {
        route: &'a Route,
        prefix_len: u8,
        dev: Option<String>,
        gateway: Option<IpAddr>,
    },
    /// No route (or `throw`): continue with the next rule.
    Again,
    /// A rejecting route type.
    Reject(FibError),
}

fn dev_alive(state: &HostState, dev: Option<&str>) -> bool {
    match dev {
        // Unknown devices (hand-built snapshots) count as alive.
        Some(d) => state.interface(d).map(|i| i.admin_up).unwrap_or(true),
        None => true,
    }
}

fn default_metric(family: Family) -> u32 {
    match family {
        Family::Inet => 0,
        Family::Inet6 => 1024,
    }
}

fn table_lookup<'a>(state: &'a HostState, table: u32, flow: &Flow) -> TableResult<'a> {
    tables_lookup(state, &[table], flow)
}

/// Longest-prefix match over one table or, for the merged local/main trie, two.
fn tables_lookup<'a>(state: &'a HostState, tables: &[u32], flow: &Flow) -> TableResult<'a> {
    let family = Family::of(&flow.dst);
    let mut cands: Vec<(usize, &'a Route)> = state
        .routes
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            r.family == family && tables.contains(&r.table) && r.dst.contains(&flow.dst)
        })
        .collect();
    // Longest prefix first; within a prefix the higher table id first (the merged
    // trie's alias order), TOS-specific first, then lowest metric, then snapshot
    // order (the kernel's alias list order).
    cands.sort_by(|(ia, a), (ib, b)| {
        b.dst
            .prefix_len()
            .cmp(&a.dst.prefix_len())
            .then(b.table.cmp(&a.table))
            .then(b.tos.cmp(&a.tos))
            .then(
                a.metric
                    .unwrap_or(default_metric(family))
                    .cmp(&b.metric.unwrap_or(default_metric(family))),
            )
            .then(ia.cmp(ib))
    });
    for (_, r) in cands {
        if r.tos != 0 && r.tos != flow.tos {
            continue;
        }
        match r.kind {
            RouteType::Blackhole => return TableResult::Reject(FibError::Blackhole),
            RouteType::Unreachable => return TableResult::Reject(FibError::Unreachable),
            RouteType::Prohibit => return TableResult::Reject(FibError::Prohibit),
            RouteType::Throw => return TableResult::Again,
            RouteType::Nat | RouteType::Other => continue,
            _ => {}
        }
        let hops: Vec<(Option<String>, Option<IpAddr>)> = if r.multipath.is_empty() {
            vec![(r.dev.clone(), r.gateway)]
        } else {
            r.multipath
                .iter()
                .map(|h| (h.dev.clone(), h.gateway))
                .collect()
        };
        for (dev, gw) in hops {
            // A device going down kills the next hops over it, except those of
            // host-scope routes (the `local` routes of its addresses, whose next hop
            // has scope `nowhere`): the kernel keeps them, so a down device's
            // addresses stay local (`fib_sync_down_dev`).
            if r.scope != Scope::Host && !dev_alive(state, dev.as_deref()) {
                continue;
            }
            if let Some(o) = &flow.oif {
                if dev.as_deref() != Some(o.as_str()) {
                    continue;
                }
            }
            return TableResult::Hit {
                route: r,
                prefix_len: r.dst.prefix_len(),
                dev,
                gateway: gw,
            };
        }
    }
    TableResult::Again
}

struct FibHit<'a> {
    route: &'a Route,
    table: u32,
    rule_priority: Option<u32>,
    dev: Option<String>,
    gateway: Option<IpAddr>,
}

/// The kernel's `fib_lookup` without custom rules: the merged local/main trie, then,
/// only when that found nothing (or hit a `throw` route), the default table. A
/// `blackhole`/`unreachable`/`prohibit` route in local/main is final, as on current
/// kernels (verified on 6.18: `if (err != -EAGAIN) goto out`); older kernels let
/// the default table's answer replace such an error.
fn merged_lookup<'a>(state: &'a HostState, flow: &Flow) -> Result<FibHit<'a>, FibError> {
    let hit = |r: TableResult<'a>, table: u32| match r {
        TableResult::Hit {
            route,
            dev,
            gateway,
            ..
        } => Ok(FibHit {
            route,
            table,
            rule_priority: None,
            dev,
            gateway,
        }),
        TableResult::Again => Err(FibError::NoRoute),
        TableResult::Reject(e) => Err(e),
    };
    match tables_lookup(state, &[RT_TABLE_LOCAL, RT_TABLE_MAIN], flow) {
        TableResult::Again => hit(
            table_lookup(state, RT_TABLE_DEFAULT, flow),
            RT_TABLE_DEFAULT,
        ),
        first => hit(first, RT_TABLE_MAIN),
    }
}

/// `fib_rules_lookup`: walk the rules, look tables up, honour goto/nop/suppress.
fn fib_lookup<'a>(state: &'a HostState, flow: &Flow) -> Result<FibHit<'a>, FibError> {
    let rules = rules_in_order(state, Family::of(&flow.dst));
    let mut i = 0;
    while i < rules.len() {
        let rule = &rules[i];
        i += 1;
        if !rule_matches(rule, flow) {
            continue;
        }
        match rule.action {
            RuleAction::Goto => {
                // The kernel only accepts forward gotos; ignoring any other keeps a
                // malformed snapshot from looping.
                if let Some(target) = rule.goto.filter(|t| *t > rule.priority) {
                    if let Some(t) = rules.iter().position(|r| r.priority == target) {
                        // The kernel re-evaluates the target rule itself next.
                        i = t;
                    }
                }
                continue;
            }
            RuleAction::Nop => continue,
            RuleAction::Blackhole | RuleAction::Other => return Err(FibError::Blackhole),
            RuleAction::Unreachable => return Err(FibError::Unreachable),
            RuleAction::Prohibit => return Err(FibError::Prohibit),
            RuleAction::ToTable => {}
        }
        match table_lookup(state, rule.table, flow) {
            TableResult::Again => continue,
            TableResult::Reject(e) => return Err(e),
            TableResult::Hit {
                route,
                prefix_len,
                dev,
                gateway,
            } => {
                if let Some(n) = rule.suppress_prefixlen {
                    if n <= 128 && u32::from(prefix_len) <= n {
                        continue;
                    }
                }
                return Ok(FibHit {
                    route,
                    table: rule.table,
                    rule_priority: Some(rule.priority),
                    dev,
                    gateway,
                });
            }
        }
    }
    Err(FibError::NoRoute)
}

fn is_lbcast(a: Ipv4Addr) -> bool {
    a == Ipv4Addr::BROADCAST
}

fn is_zeronet(a: Ipv4Addr) -> bool {
    a.octets()[0] == 0
}

/// `__ip_dev_find`: the device holding a local IPv4 address (the address list, then
/// a `local` route in the local table).
fn ip_dev_find(state: &HostState, addr: Ipv4Addr) -> Option<String> {
    let a = IpAddr::V4(addr);
    if let Some(x) = state.addresses.iter().find(|x| x.address == a) {
        return Some(x.ifname.clone());
    }
    let flow = Flow::to(a);
    match table_lookup(state, RT_TABLE_LOCAL, &flow) {
        TableResult::Hit { route, dev, .. } if route.kind == RouteType::Local => dev,
        _ => None,
    }
}

fn ifindex_order(state: &HostState) -> Vec<&crate::model::Interface> {
    let mut v: Vec<_> = state.interfaces.iter().collect();
    v.sort_by_key(|i| i.index);
    v
}

/// The kernel's `inet_select_addr(dev, dst, scope)`: the IPv4 source address for
/// traffic leaving `dev` towards `dst` (a gateway, or `None`) with a route of
/// `scope`. Primary addresses of `dev` in their list order, preferring one whose
/// subnet holds `dst`, then the first suitable address of any device by ifindex.
pub fn inet_select_addr(
    state: &HostState,
    dev: &str,
    dst: Option<Ipv4Addr>,
    scope: Scope,
) -> Option<Ipv4Addr> {
    let scope = scope.as_u8();
    let mut first: Option<Ipv4Addr> = None;
    for a in state.addresses_of(dev) {
        let IpAddr::V4(local) = a.address else {
            continue;
        };
        if a.secondary || a.scope.as_u8().min(Scope::Host.as_u8()) > scope {
            continue;
        }
        match dst {
            Some(d) if !d.is_unspecified() => {
                if a.network().contains(&IpAddr::V4(d)) {
                    return Some(local);
                }
            }
            _ => return Some(local),
        }
        if first.is_none() {
            first = Some(local);
        }
    }
    if first.is_some() {
        return first;
    }
    for i in ifindex_order(state) {
        for a in state.addresses_of(&i.name) {
            let IpAddr::V4(local) = a.address else {
                continue;
            };
            if a.secondary {
                continue;
            }
            let s = a.scope.as_u8();
            if s != Scope::Link.as_u8() && s <= scope {
                return Some(local);
            }
        }
    }
    None
}

/// `__mkroute_output`: locally generated traffic with a loopback (`127/8`) source
/// may only leave through the loopback device; otherwise the kernel answers
/// `EINVAL` (reported as [`FibError::InvalidSource`]).
fn loopback_source_check(flow: &Flow, d: FibDecision) -> Result<FibDecision, FibError> {
    if flow.iif.is_none() {
        if let Some(IpAddr::V4(s)) = d.prefsrc {
            if s.is_loopback() && d.dev.as_deref() != Some("lo") {
                return Err(FibError::InvalidSource);
            }
        }
    }
    Ok(d)
}

fn resolve_v4(
    state: &HostState,
    flow: &Flow,
    dst: Ipv4Addr,
    merged: bool,
) -> Result<FibDecision, FibError> {
    let output = flow.iif.is_none();
    let mut saddr: Option<Ipv4Addr> = match flow.src {
        Some(IpAddr::V4(s)) => Some(s),
        _ => None,
    };
    let bare = |kind: RouteType, dev: Option<String>, src: Option<Ipv4Addr>| FibDecision {
        kind,
        table: None,
        rule_priority: None,
        route: None,
        dev,
        prefsrc: src.map(IpAddr::V4),
        gateway: None,
        multipath: false,
    };
    if output {
        if let Some(s) = saddr {
            if s.is_multicast() || is_lbcast(s) || is_zeronet(s) {
                return Err(FibError::InvalidSource);
            }
            let src_dev = ip_dev_find(state, s);
            if flow.oif.is_none() && (dst.is_multicast() || is_lbcast(dst)) {
                let dev = src_dev.ok_or(FibError::InvalidSource)?;
                let kind = if dst.is_multicast() {
                    RouteType::Multicast
                } else {
                    RouteType::Broadcast
                };
                return Ok(bare(kind, Some(dev), Some(s)));
            }
            if src_dev.is_none() {
                return Err(FibError::InvalidSource);
            }
        }
    }
    if let Some(o) = &flow.oif {
        match state.interface(o) {
            None => return Err(FibError::NoDevice),
            Some(i) if !i.admin_up => return Err(FibError::Unreachable),
            Some(_) => {}
        }
        let local_mc = dst.octets()[0] == 224 && dst.octets()[1] == 0 && dst.octets()[2] == 0;
        if local_mc || is_lbcast(dst) {
            if saddr.is_none() {
                saddr = inet_select_addr(state, o, None, Scope::Link);
            }
            let kind = if is_lbcast(dst) {
                RouteType::Broadcast
            } else {
                RouteType::Multicast
            };
            return Ok(bare(kind, Some(o.clone()), saddr));
        }
        if saddr.is_none() {
            if dst.is_multicast() {
                saddr = inet_select_addr(state, o, None, Scope::Universe);
            } else if dst.is_unspecified() {
                saddr = inet_select_addr(state, o, None, Scope::Host);
            }
        }
    }
    if dst.is_unspecified() {
        let s = saddr.unwrap_or(Ipv4Addr::LOCALHOST);
        return Ok(bare(RouteType::Local, Some("lo".into()), Some(s)));
    }
    let looked = if merged {
        merged_lookup(state, flow)
    } else {
        fib_lookup(state, flow)
    };
    let hit = match looked {
        Ok(h) => h,
        Err(e) => {
            if let Some(o) = &flow.oif {
                // "Apparently, routing tables are wrong. Assume, that the
                // destination is on link." (the kernel's own comment)
                if saddr.is_none() {
                    saddr = inet_select_addr(state, o, None, Scope::Link);
                }
                return Ok(bare(RouteType::Unicast, Some(o.clone()), saddr));
            }
            return Err(e);
        }
    };
    let route = hit.route;
    if route.kind == RouteType::Local {
        let src = saddr.or(match route.prefsrc {
            Some(IpAddr::V4(p)) => Some(p),
            _ => None,
        });
        return Ok(FibDecision {
            kind: RouteType::Local,
            table: Some(hit.table),
            rule_priority: hit.rule_priority,
            route: Some(route.clone()),
            dev: Some("lo".into()),
            prefsrc: Some(IpAddr::V4(src.unwrap_or(dst))),
            gateway: None,
            multipath: false,
        });
    }
    let src = match saddr {
        Some(s) => Some(s),
        None => match route.prefsrc {
            Some(IpAddr::V4(p)) => Some(p),
            _ => hit.dev.as_deref().and_then(|d| {
                let gw = match hit.gateway {
                    Some(IpAddr::V4(g)) => Some(g),
                    _ => None,
                };
                inet_select_addr(state, d, gw, route.scope)
            }),
        },
    };
    // __mkroute_output: a loopback source may not leave by a real device, a zeronet
    // destination is invalid, and the destination class decides the route type.
    let dev_is_lo = hit.dev.as_deref() == Some("lo");
    if src.map(|s| s.is_loopback()).unwrap_or(false) && !dev_is_lo {
        return Err(FibError::InvalidSource);
    }
    if is_zeronet(dst) {
        return Err(FibError::InvalidDestination);
    }
    let kind = if is_lbcast(dst) {
        RouteType::Broadcast
    } else if dst.is_multicast() {
        RouteType::Multicast
    } else {
        route.kind
    };
    Ok(FibDecision {
        kind,
        table: Some(hit.table),
        rule_priority: hit.rule_priority,
        route: Some(route.clone()),
        dev: hit.dev,
        prefsrc: src.map(IpAddr::V4),
        gateway: hit.gateway,
        multipath: !route.multipath.is_empty(),
    })
}

fn v6_scope(a: &Ipv6Addr) -> u8 {
    let s = a.segments();
    if a.is_loopback() {
        0x1
    } else if s[0] & 0xff00 == 0xff00 {
        // Multicast: the scope is in the address.
        (s[0] & 0x000f) as u8
    } else if s[0] & 0xffc0 == 0xfe80 {
        0x2
    } else if s[0] & 0xffc0 == 0xfec0 {
        0x5
    } else {
        0xe
    }
}

/// RFC 6724 policy-table label of an address (the kernel's default `ip addrlabel`
/// table); only equality of labels matters.
fn v6_label(a: &Ipv6Addr) -> u8 {
    let x = u128::from_be_bytes(a.octets());
    let in_pfx = |p: u128, len: u32| {
        let mask = if len == 0 {
            0
        } else {
            u128::MAX << (128 - len)
        };
        x & mask == p & mask
    };
    const TABLE: [(u128, u32, u8); 10] = [
        (1, 128, 0),                                        // ::1/128
        (0x0000_0000_0000_0000_0000_ffff_0000_0000, 96, 4), // ::ffff:0:0/96
        (0x2002 << 112, 16, 2),                             // 6to4
        (0x2001_0000 << 96, 32, 5),                         // Teredo
        (0x2001_0010 << 96, 28, 7),                         // ORCHID
        (0x2001_0020 << 96, 28, 8),                         // ORCHIDv2
        (0xfc00 << 112, 7, 13),                             // ULA
        (0, 96, 3),                                         // IPv4-compatible
        (0xfec0 << 112, 10, 11),                            // site-local
        (0x3ffe << 112, 16, 12),                            // 6bone
    ];
    // Longest matching prefix wins.
    TABLE
        .iter()
        .filter(|(p, l, _)| in_pfx(*p, *l))
        .max_by_key(|(_, l, _)| *l)
        .map(|(_, _, lab)| *lab)
        .unwrap_or(1)
}

fn common_prefix(a: &Ipv6Addr, b: &Ipv6Addr) -> u32 {
    let x = u128::from_be_bytes(a.octets()) ^ u128::from_be_bytes(b.octets());
    x.leading_zeros()
}

/// IPv6 source selection as the kernel's `ipv6_dev_get_saddr` applies RFC 6724:
/// rule 1 (same address), 2 (appropriate scope), 5 (outgoing interface),
/// 6 (matching label) and 8 (longest matching prefix, up to the candidate's prefix
/// length). For link-local or multicast destinations only the outgoing device's
/// addresses are candidates; otherwise every device's, in interface-index order,
/// the first best candidate winning. Rules needing address flags (deprecated, home,
/// temporary) are not applied.
pub fn ipv6_select_addr(state: &HostState, dev: Option<&str>, dst: Ipv6Addr) -> Option<Ipv6Addr> {
    let dscope = v6_scope(&dst);
    let oif_only = dst.segments()[0] & 0xff00 == 0xff00 || dscope <= 0x2;
    let dlabel = v6_label(&dst);
    // (same address, scope score, outgoing device, label match, common prefix)
    type Score = (bool, i32, bool, bool, u32);
    let mut best: Option<(Score, Ipv6Addr)> = None;
    for i in ifindex_order(state) {
        if oif_only && dev != Some(i.name.as_str()) {
            continue;
        }
        for a in state.addresses_of(&i.name) {
            let IpAddr::V6(cand) = a.address else {
                continue;
            };
            if cand.is_unspecified() {
                continue;
            }
            let cscope = v6_scope(&cand);
            let same = cand == dst;
            // Rule 2: prefer the smallest scope that is >= the destination's, else
            // the largest one.
            let scope_score = if cscope >= dscope {
                -(i32::from(cscope))
            } else {
                -1000 + i32::from(cscope)
            };
            let oif = dev == Some(i.name.as_str());
            let label = v6_label(&cand) == dlabel;
            let prefix = common_prefix(&cand, &dst).min(u32::from(a.prefix_len));
            let key = (same, scope_score, oif, label, prefix);
            if best.as_ref().map(|(k, _)| key > *k).unwrap_or(true) {
                best = Some((key, cand));
            }
        }
    }
    best.map(|(_, a)| a)
}

fn resolve_v6(state: &HostState, flow: &Flow) -> Result<FibDecision, FibError> {
    let IpAddr::V6(dst) = flow.dst else {
        return Err(FibError::FamilyMismatch);
    };
    if let Some(o) = &flow.oif {
        if state.interface(o).is_none() {
            return Err(FibError::NoDevice);
        }
    }
    let hit = fib_lookup(state, flow)?;
    let route = hit.route;
    let given = match flow.src {
        Some(IpAddr::V6(s)) => Some(s),
        _ => None,
    };
    let route_src = match route.prefsrc {
        Some(IpAddr::V6(p)) => Some(p),
        _ => None,
    };
    if route.kind == RouteType::Local {
        return Ok(FibDecision {
            kind: RouteType::Local,
            table: Some(hit.table),
            rule_priority: hit.rule_priority,
            route: Some(route.clone()),
            dev: Some("lo".into()),
            prefsrc: Some(IpAddr::V6(given.or(route_src).unwrap_or(dst))),
            gateway: None,
            multipath: false,
        });
    }
    let src = given
        .or(route_src)
        .or_else(|| ipv6_select_addr(state, hit.dev.as_deref(), dst));
    Ok(FibDecision {
        kind: route.kind,
        table: Some(hit.table),
        rule_priority: hit.rule_priority,
        route: Some(route.clone()),
        dev: hit.dev,
        prefsrc: src.map(IpAddr::V6),
        gateway: hit.gateway,
        multipath: !route.multipath.is_empty(),
    })
}

#[cfg(test)]
mod tests;
