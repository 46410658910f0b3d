//! The IPv4 output path: source checks, source address selection and the
//! decision (`ip_route_output_key_hash_rcu` and `__mkroute_output` in
//! `net/ipv4/route.c`, `inet_select_addr` and `__ip_dev_find` in
//! `net/ipv4/devinet.c`).

use super::rules::fib_lookup;
use super::table::{merged_lookup, table_lookup, TableResult};
use super::{FibDecision, FibError, Flow};
use crate::model::{HostState, RouteType, Scope, RT_TABLE_LOCAL};
use std::net::{IpAddr, Ipv4Addr};

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

pub(super) fn ifindex_order(state: &HostState) -> Vec<&crate::model::Interface> {
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
pub(super) fn loopback_source_check(flow: &Flow, d: FibDecision) -> Result<FibDecision, FibError> {
    if flow.iif.is_none() {
        if let Some(IpAddr::V4(s)) = d.prefsrc {
            if s.is_loopback() && d.dev.as_deref() != Some("lo") {
                return Err(FibError::InvalidSource);
            }
        }
    }
    Ok(d)
}

pub(super) fn resolve_v4(
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
