//! The IPv6 output path: the lookup and RFC 6724 source selection
//! (`ip6_route_output` in `net/ipv6/route.c`, `fib6_lookup` in
//! `net/ipv6/ip6_fib.c`, `ipv6_dev_get_saddr` in `net/ipv6/addrconf.c`).

use super::ipv4::ifindex_order;
use super::rules::fib_lookup;
use super::{FibDecision, FibError, Flow};
use crate::model::{HostState, RouteType};
use std::net::{IpAddr, Ipv6Addr};

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

pub(super) fn resolve_v6(state: &HostState, flow: &Flow) -> Result<FibDecision, FibError> {
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
