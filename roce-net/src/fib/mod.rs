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
//!
//! The code is split as the kernel splits it: `rules` walks the policy
//! rules (`net/core/fib_rules.c`, `net/ipv4/fib_rules.c`), `table` does the
//! longest-prefix match in one table or the merged local/main trie
//! (`net/ipv4/fib_trie.c`), `ipv4` the output route and source selection
//! (`net/ipv4/route.c`, `net/ipv4/devinet.c`), `ipv6` the IPv6 ones
//! (`net/ipv6/route.c`, `net/ipv6/ip6_fib.c`, `net/ipv6/addrconf.c`).

mod ipv4;
mod ipv6;
mod rules;
mod table;

pub use ipv4::inet_select_addr;
#[cfg(test)]
use ipv6::ipv6_select_addr;
pub(crate) use rules::has_only_default_rules;
pub use rules::rules_in_order;

use crate::model::{Family, HostState, Route, RouteType};
use ipv4::{loopback_source_check, resolve_v4};
use ipv6::resolve_v6;
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
#[non_exhaustive]
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

/// Look a flow up, with the reason when the kernel would return an error
/// ([`FibMode::Auto`]).
pub fn fib_lookup(state: &HostState, flow: &Flow) -> Result<FibDecision, FibError> {
    fib_lookup_with(state, flow, FibMode::Auto)
}

/// Look a flow up in an explicit [`FibMode`].
pub fn fib_lookup_with(
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

fn unspecified(family: Family) -> IpAddr {
    match family {
        Family::Inet => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        Family::Inet6 => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    }
}

#[cfg(test)]
mod tests;
