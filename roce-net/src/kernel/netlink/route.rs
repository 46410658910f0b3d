//! Routes: `ip route show table all`, `ip route get`, `ip route add/replace/del`.
//!
//! Tables are always read from and written to the 32-bit `RTA_TABLE` attribute
//! (DESIGN decision 6); the 8-bit header field is only a fallback on read.

use super::{IfNames, Netlink};
use crate::error::{Error, ErrorKind, Result};
use crate::model::{
    Family, Interface, NextHop, Route, RouteDecision, RouteType as ModelRouteType, Scope,
};
use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL, NLM_F_REPLACE};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteFlags, RouteMessage, RouteNextHop, RouteProtocol,
    RouteScope, RouteType, RouteVia,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

fn ip_of(a: &RouteAddress) -> Option<IpAddr> {
    match a {
        RouteAddress::Inet(v4) => Some(IpAddr::V4(*v4)),
        RouteAddress::Inet6(v6) => Some(IpAddr::V6(*v6)),
        _ => None,
    }
}

fn via_ip(v: &RouteVia) -> Option<IpAddr> {
    match v {
        RouteVia::Inet(v4) => Some(IpAddr::V4(*v4)),
        RouteVia::Inet6(v6) => Some(IpAddr::V6(*v6)),
        _ => None,
    }
}

fn family_of(f: AddressFamily) -> Option<Family> {
    match f {
        AddressFamily::Inet => Some(Family::Inet),
        AddressFamily::Inet6 => Some(Family::Inet6),
        _ => None,
    }
}

pub(super) fn to_route(m: RouteMessage, names: &IfNames) -> Option<Route> {
    if m.header.flags.contains(RouteFlags::Cloned) {
        return None;
    }
    let family = family_of(m.header.address_family)?;
    let mut table = u32::from(m.header.table);
    let mut dst = None;
    let mut r = Route {
        family,
        table: 0,
        dst: ipnet::IpNet::from(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
        kind: ModelRouteType::from_u8(u8::from(m.header.kind)),
        dev: None,
        prefsrc: None,
        gateway: None,
        scope: Scope::from_u8(u8::from(m.header.scope)),
        protocol: u8::from(m.header.protocol),
        metric: None,
        tos: m.header.tos,
        multipath: Vec::new(),
    };
    for a in m.attributes {
        match a {
            RouteAttribute::Table(t) => table = t,
            RouteAttribute::Destination(d) => dst = ip_of(&d),
            RouteAttribute::Oif(i) => r.dev = Some(names.name(i)),
            RouteAttribute::PrefSource(s) => r.prefsrc = ip_of(&s),
            RouteAttribute::Gateway(g) => r.gateway = ip_of(&g),
            RouteAttribute::Via(v) => r.gateway = via_ip(&v),
            RouteAttribute::Priority(p) => r.metric = Some(p),
            RouteAttribute::MultiPath(hops) => {
                r.multipath = hops
                    .into_iter()
                    .map(|h| NextHop {
                        gateway: h.attributes.iter().find_map(|a| match a {
                            RouteAttribute::Gateway(g) => ip_of(g),
                            RouteAttribute::Via(v) => via_ip(v),
                            _ => None,
                        }),
                        dev: (h.interface_index != 0).then(|| names.name(h.interface_index)),
                        weight: u16::from(h.hops) + 1,
                    })
                    .collect()
            }
            _ => {}
        }
    }
    r.table = table;
    let any = match family {
        Family::Inet => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        Family::Inet6 => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    };
    r.dst = ipnet::IpNet::new(dst.unwrap_or(any), m.header.destination_prefix_length).ok()?;
    Some(r)
}

fn nl_family(f: Family) -> AddressFamily {
    match f {
        Family::Inet => AddressFamily::Inet,
        Family::Inet6 => AddressFamily::Inet6,
    }
}

/// `198.18.0.0/24 via 198.18.0.1 dev r0 table 1000`, for error messages.
pub(crate) fn describe(r: &Route) -> String {
    let mut s = format!("{}", r.dst);
    if r.kind != ModelRouteType::Unicast {
        s = format!("{:?} {s}", r.kind).to_lowercase();
    }
    if let Some(g) = r.gateway {
        s.push_str(&format!(" via {g}"));
    }
    if let Some(d) = &r.dev {
        s.push_str(&format!(" dev {d}"));
    }
    if let Some(p) = r.prefsrc {
        s.push_str(&format!(" src {p}"));
    }
    s.push_str(&format!(" table {}", r.table));
    if let Some(m) = r.metric {
        s.push_str(&format!(" metric {m}"));
    }
    s
}

impl Netlink {
    /// Every IPv4 and IPv6 route in every table (`ip route show table all`),
    /// route-cache (cloned) entries excluded. The table is the full `RTA_TABLE`.
    pub fn routes(&mut self, ifs: &[Interface]) -> Result<Vec<Route>> {
        let names = IfNames::new(ifs);
        let mut out: Vec<Route> = Vec::new();
        for family in [AddressFamily::Inet, AddressFamily::Inet6] {
            let mut m = RouteMessage::default();
            m.header.address_family = family;
            let msg = RouteNetlinkMessage::GetRoute(m);
            let mut part = self.dump_map(msg, "dumping routes", |r| match r {
                RouteNetlinkMessage::NewRoute(rt) => to_route(rt, &names),
                _ => None,
            })?;
            // Move the (large) first dump instead of copying it: with 100k routes a
            // copy briefly doubled the snapshot's peak memory.
            if out.is_empty() {
                out = part;
            } else {
                out.append(&mut part);
            }
        }
        out.shrink_to_fit();
        Ok(out)
    }

    /// Ask the kernel where a packet to `dst` (from `src`, out of `oif`) would go
    /// (`ip route get DST from SRC oif DEV`). Policy rules apply; the reply names
    /// the table that matched (`RTM_F_LOOKUP_TABLE` for IPv4; IPv6 replies carry
    /// the matched route's table by themselves).
    pub fn route_get(
        &mut self,
        dst: IpAddr,
        src: Option<IpAddr>,
        oif: Option<&str>,
    ) -> Result<RouteDecision> {
        let mut what = format!("looking up the route to {dst}");
        if let Some(s) = src {
            what.push_str(&format!(" from {s}"));
        }
        if let Some(o) = oif {
            what.push_str(&format!(" oif {o}"));
        }
        if let Some(s) = src {
            if s.is_ipv4() != dst.is_ipv4() {
                return Err(Error::new(
                    ErrorKind::InvalidInput,
                    format!("{what}: source and destination are of different families"),
                ));
            }
        }
        let full = if dst.is_ipv4() { 32 } else { 128 };
        let mut m = RouteMessage::default();
        m.header.address_family = if dst.is_ipv4() {
            AddressFamily::Inet
        } else {
            AddressFamily::Inet6
        };
        m.header.destination_prefix_length = full;
        // IPv4 reports the FIB table that matched only when asked; IPv6 always
        // reports the matched route's table and (with strict checking) refuses
        // the flag ("ipv6: Invalid flags for get route request").
        if dst.is_ipv4() {
            m.header.flags = RouteFlags::LookupTable;
        }
        m.attributes
            .push(RouteAttribute::Destination(RouteAddress::from(dst)));
        if let Some(s) = src {
            m.header.source_prefix_length = full;
            m.attributes
                .push(RouteAttribute::Source(RouteAddress::from(s)));
        }
        if let Some(o) = oif {
            let idx = self.ifindex(o).map_err(|e| e.context(what.clone()))?;
            m.attributes.push(RouteAttribute::Oif(idx));
        }
        let replies = self.request(RouteNetlinkMessage::GetRoute(m), 0, &what)?;
        let reply = replies
            .into_iter()
            .find_map(|r| match r {
                RouteNetlinkMessage::NewRoute(rt) => Some(rt),
                _ => None,
            })
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::Netlink,
                    format!("{what}: the kernel sent no route"),
                )
            })?;
        let mut d = RouteDecision {
            table: u32::from(reply.header.table),
            dev: None,
            prefsrc: None,
            gateway: None,
            kind: ModelRouteType::from_u8(u8::from(reply.header.kind)),
        };
        let mut oif_idx = None;
        let mut from = None;
        for a in reply.attributes {
            match a {
                RouteAttribute::Table(t) => d.table = t,
                RouteAttribute::Oif(i) => oif_idx = Some(i),
                RouteAttribute::Source(s) => from = ip_of(&s),
                RouteAttribute::PrefSource(s) => d.prefsrc = ip_of(&s),
                RouteAttribute::Gateway(g) => d.gateway = ip_of(&g),
                RouteAttribute::Via(v) => d.gateway = via_ip(&v),
                _ => {}
            }
        }
        // The kernel sends RTA_PREFSRC only when it differs from the given source.
        d.prefsrc = d.prefsrc.or(from);
        if let Some(i) = oif_idx {
            d.dev = Some(self.link_name(i)?);
        }
        Ok(d)
    }

    fn route_msg(&mut self, r: &Route, what: &str) -> Result<RouteMessage> {
        let mut m = RouteMessage::default();
        m.header.address_family = nl_family(r.family);
        if Family::of(&r.dst.addr()) != r.family {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!("{what}: destination is not of the route's family"),
            ));
        }
        m.header.destination_prefix_length = r.dst.prefix_len();
        m.header.tos = r.tos;
        m.header.table = u8::try_from(r.table).unwrap_or(0);
        m.header.protocol = RouteProtocol::from(r.protocol);
        m.header.scope = RouteScope::from(r.scope.as_u8());
        m.header.kind = RouteType::from(r.kind.as_u8());
        if r.dst.prefix_len() > 0 {
            m.attributes
                .push(RouteAttribute::Destination(RouteAddress::from(
                    r.dst.addr(),
                )));
        }
        m.attributes.push(RouteAttribute::Table(r.table));
        if let Some(dev) = &r.dev {
            let idx = self.ifindex(dev).map_err(|e| e.context(what.to_string()))?;
            m.attributes.push(RouteAttribute::Oif(idx));
        }
        if let Some(g) = r.gateway {
            m.attributes
                .push(RouteAttribute::Gateway(RouteAddress::from(g)));
        }
        if let Some(p) = r.prefsrc {
            m.attributes
                .push(RouteAttribute::PrefSource(RouteAddress::from(p)));
        }
        if let Some(metric) = r.metric {
            m.attributes.push(RouteAttribute::Priority(metric));
        }
        if !r.multipath.is_empty() {
            let mut hops = Vec::new();
            for h in &r.multipath {
                let mut nh = RouteNextHop::default();
                nh.hops = u8::try_from(h.weight.saturating_sub(1)).unwrap_or(u8::MAX);
                if let Some(dev) = &h.dev {
                    nh.interface_index =
                        self.ifindex(dev).map_err(|e| e.context(what.to_string()))?;
                }
                if let Some(g) = h.gateway {
                    nh.attributes
                        .push(RouteAttribute::Gateway(RouteAddress::from(g)));
                }
                hops.push(nh);
            }
            m.attributes.push(RouteAttribute::MultiPath(hops));
        }
        Ok(m)
    }

    /// Add a route (`ip route add ...`); fails with `EEXIST` if it exists.
    pub fn route_add(&mut self, r: &Route) -> Result<()> {
        let what = format!("adding route {}", describe(r));
        let m = self.route_msg(r, &what)?;
        self.request(
            RouteNetlinkMessage::NewRoute(m),
            NLM_F_CREATE | NLM_F_EXCL,
            &what,
        )?;
        Ok(())
    }

    /// Add or replace a route (`ip route replace ...`).
    pub fn route_replace(&mut self, r: &Route) -> Result<()> {
        let what = format!("replacing route {}", describe(r));
        let m = self.route_msg(r, &what)?;
        self.request(
            RouteNetlinkMessage::NewRoute(m),
            NLM_F_CREATE | NLM_F_REPLACE,
            &what,
        )?;
        Ok(())
    }

    /// Delete a route (`ip route del ...`). Matches on destination, table, type,
    /// device, gateway, source and metric as given, and on the protocol when it is
    /// not 0, so only the owner's route is removed; any scope matches.
    pub fn route_del(&mut self, r: &Route) -> Result<()> {
        let what = format!("deleting route {}", describe(r));
        let mut m = self.route_msg(r, &what)?;
        m.header.scope = RouteScope::NoWhere;
        self.request(RouteNetlinkMessage::DelRoute(m), 0, &what)?;
        Ok(())
    }
}
