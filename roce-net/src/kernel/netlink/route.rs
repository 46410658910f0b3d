//! Routes: `ip route show table all`, `ip route get`, `ip route add/replace/del`.
//!
//! Tables are always read from and written to the 32-bit `RTA_TABLE` attribute
//! (docs/architecture.md, decision 6); the 8-bit header field is only a fallback on read.

use super::{Families, IfNames, Netlink};
use crate::error::{Error, ErrorKind, Result};
use crate::model::{
    Family, Interface, NextHop, Route, RouteDecision, RouteQuery, RouteReply,
    RouteType as ModelRouteType, Scope,
};
use netlink_packet_core::{NLM_F_APPEND, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REPLACE};
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
        self.routes_of(ifs, Families::Both)
    }

    /// The routes of the given families in every table (`ip -4 route show
    /// table all` for IPv4 only).
    pub(crate) fn routes_of(
        &mut self,
        ifs: &[Interface],
        families: Families,
    ) -> Result<Vec<Route>> {
        let names = IfNames::new(ifs);
        let mut out: Vec<Route> = Vec::new();
        for &family in families.list() {
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
    /// the matched route's table by themselves). A refused lookup (prohibit,
    /// unreachable, blackhole, no route) is an error carrying the kernel's errno.
    pub fn route_get(
        &mut self,
        dst: IpAddr,
        src: Option<IpAddr>,
        oif: Option<&str>,
    ) -> Result<RouteDecision> {
        let q = RouteQuery {
            dst: Some(dst),
            from: src,
            oif: oif.map(str::to_string),
            ..RouteQuery::default()
        };
        let r = self.route_query(&q)?;
        if let Some(errno) = r.refused {
            // Not a privilege problem even for EACCES: say what the kernel hit.
            return Err(Error::new(
                ErrorKind::Netlink,
                format!("{}: {}", describe_query(&q), r.render(false)),
            )
            .with_errno(errno));
        }
        Ok(RouteDecision {
            table: r.table.unwrap_or(0),
            dev: r.dev,
            // The kernel sends RTA_PREFSRC only when it differs from the given source.
            prefsrc: r.prefsrc.or(r.from),
            gateway: r.gateway,
            kind: r.kind,
        })
    }

    /// `ip route get` with every selector iproute2 offers (`from`, `iif`, `oif`,
    /// `mark`, `ipproto`, `sport`, `dport`), returning exactly what the kernel
    /// answered. A lookup the kernel refuses because of the route or rule it hit
    /// (`EACCES` prohibit, `EHOSTUNREACH`/`ENETUNREACH` unreachable or no route,
    /// `EINVAL` without an extack message: blackhole) is an answer, not an error:
    /// [`RouteReply::refused`] holds the errno and `kind` the route type.
    pub fn route_query(&mut self, q: &RouteQuery) -> Result<RouteReply> {
        let what = describe_query(q);
        let Some(dst) = q.dst else {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                "a route query needs a destination address",
            ));
        };
        if let Some(s) = q.from {
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
        if let Some(s) = q.from {
            m.header.source_prefix_length = full;
            m.attributes
                .push(RouteAttribute::Source(RouteAddress::from(s)));
        }
        if let Some(i) = &q.iif {
            let idx = self.ifindex(i).map_err(|e| e.context(what.clone()))?;
            m.attributes.push(RouteAttribute::Iif(idx));
        }
        if let Some(o) = &q.oif {
            let idx = self.ifindex(o).map_err(|e| e.context(what.clone()))?;
            m.attributes.push(RouteAttribute::Oif(idx));
        }
        if let Some(mark) = q.mark.filter(|m| *m != 0) {
            m.attributes.push(RouteAttribute::Mark(mark));
        }
        if let Some(p) = q.ipproto {
            m.attributes.push(RouteAttribute::IpProto(p));
        }
        if let Some(p) = q.sport {
            m.attributes.push(RouteAttribute::Sport(p));
        }
        if let Some(p) = q.dport {
            m.attributes.push(RouteAttribute::Dport(p));
        }
        let refused = |errno: i32| RouteReply {
            kind: match errno {
                libc::EACCES => ModelRouteType::Prohibit,
                libc::EINVAL => ModelRouteType::Blackhole,
                _ => ModelRouteType::Unreachable,
            },
            dst,
            from: q.from,
            gateway: None,
            dev: None,
            table: None,
            table_name: None,
            protocol: 0,
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
            refused: Some(errno),
        };
        let replies = match self.request(RouteNetlinkMessage::GetRoute(m), 0, &what) {
            Ok(r) => r,
            Err(e) => {
                return match e.errno_value() {
                    Some(n @ (libc::EACCES | libc::EHOSTUNREACH | libc::ENETUNREACH)) => {
                        Ok(refused(n))
                    }
                    // EINVAL with an extack message is a malformed request;
                    // without one, the lookup hit a blackhole.
                    Some(libc::EINVAL) if e.extack().is_none() => Ok(refused(libc::EINVAL)),
                    _ => Err(e),
                };
            }
        };
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
        let flags = reply.header.flags.bits();
        let mut out = RouteReply {
            kind: ModelRouteType::from_u8(u8::from(reply.header.kind)),
            dst,
            from: None,
            gateway: None,
            dev: None,
            table: Some(u32::from(reply.header.table)).filter(|t| *t != 0),
            table_name: None,
            protocol: u8::from(reply.header.protocol),
            scope: Scope::from_u8(u8::from(reply.header.scope)),
            cached: flags & 0x200 != 0,
            cache_flags: flags & !0xFFFF,
            prefsrc: None,
            metric: None,
            mark: None,
            uid: None,
            iif: None,
            pref: None,
            tos: reply.header.tos,
            refused: None,
        };
        let mut oif_idx = None;
        let mut iif_idx = None;
        for a in reply.attributes {
            match a {
                RouteAttribute::Table(t) => out.table = Some(t),
                RouteAttribute::Destination(d) => {
                    if let Some(ip) = ip_of(&d) {
                        out.dst = ip;
                    }
                }
                RouteAttribute::Oif(i) => oif_idx = Some(i),
                RouteAttribute::Iif(i) => iif_idx = Some(i),
                RouteAttribute::Source(s) => out.from = ip_of(&s),
                RouteAttribute::PrefSource(s) => out.prefsrc = ip_of(&s),
                RouteAttribute::Gateway(g) => out.gateway = ip_of(&g),
                RouteAttribute::Via(v) => out.gateway = via_ip(&v),
                RouteAttribute::Priority(p) => out.metric = Some(p),
                RouteAttribute::Mark(mk) => out.mark = Some(mk),
                RouteAttribute::Uid(u) => out.uid = Some(u),
                RouteAttribute::Preference(p) => out.pref = Some(u8::from(p)),
                _ => {}
            }
        }
        if let Some(i) = oif_idx {
            out.dev = Some(self.link_name(i)?);
        }
        if let Some(i) = iif_idx {
            out.iif = Some(self.link_name(i)?);
        }
        Ok(out)
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
        self.route_new(r, "adding", NLM_F_EXCL)
    }

    /// Add a route beside any others with its key (`ip route append ...`);
    /// fails with `EEXIST` only if this very route exists.
    pub fn route_append(&mut self, r: &Route) -> Result<()> {
        self.route_new(r, "adding (appending)", NLM_F_APPEND)
    }

    /// Add or replace a route (`ip route replace ...`).
    pub fn route_replace(&mut self, r: &Route) -> Result<()> {
        self.route_new(r, "replacing", NLM_F_REPLACE)
    }

    /// `RTM_NEWROUTE` for `r` with `NLM_F_CREATE | how`; errors say `doing`
    /// ("adding", ...) and the route.
    fn route_new(&mut self, r: &Route, doing: &str, how: u16) -> Result<()> {
        let what = format!("{doing} route {}", describe(r));
        let m = self.route_msg(r, &what)?;
        self.request(RouteNetlinkMessage::NewRoute(m), NLM_F_CREATE | how, &what)?;
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

/// `looking up the route to DST from SRC iif X oif Y ...` for messages.
fn describe_query(q: &RouteQuery) -> String {
    let mut what = match q.dst {
        Some(d) => format!("looking up the route to {d}"),
        None => "looking up a route".to_string(),
    };
    if let Some(s) = q.from {
        what.push_str(&format!(" from {s}"));
    }
    if let Some(i) = &q.iif {
        what.push_str(&format!(" iif {i}"));
    }
    if let Some(o) = &q.oif {
        what.push_str(&format!(" oif {o}"));
    }
    if let Some(m) = q.mark {
        what.push_str(&format!(" mark {m:#x}"));
    }
    if let Some(p) = q.ipproto {
        what.push_str(&format!(" ipproto {p}"));
    }
    if let Some(p) = q.sport {
        what.push_str(&format!(" sport {p}"));
    }
    if let Some(p) = q.dport {
        what.push_str(&format!(" dport {p}"));
    }
    what
}
