//! Neighbours: `ip neigh show`, `ip neigh replace`, `ip neigh del`.

use super::{IfNames, Netlink};
use crate::error::{Error, ErrorKind, Result};
use crate::model::{HwAddr, Interface, NeighState, Neighbor};
use netlink_packet_core::{NLM_F_CREATE, NLM_F_REPLACE};
use netlink_packet_route::neighbour::{
    NeighbourAddress, NeighbourAttribute, NeighbourFlags, NeighbourMessage, NeighbourState,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use std::net::IpAddr;

pub(super) fn to_neighbor(m: NeighbourMessage, names: &IfNames) -> Option<Neighbor> {
    if m.header.flags.contains(NeighbourFlags::Proxy) {
        return None;
    }
    let mut ip = None;
    let mut mac = None;
    for a in m.attributes {
        match a {
            NeighbourAttribute::Destination(NeighbourAddress::Inet(v4)) => {
                ip = Some(IpAddr::V4(v4))
            }
            NeighbourAttribute::Destination(NeighbourAddress::Inet6(v6)) => {
                ip = Some(IpAddr::V6(v6))
            }
            NeighbourAttribute::LinkLayerAddress(b) if !b.is_empty() => mac = Some(HwAddr(b)),
            _ => {}
        }
    }
    Some(Neighbor {
        ifname: names.name(m.header.ifindex),
        ifindex: m.header.ifindex,
        ip: ip?,
        mac,
        state: NeighState::from_bits(u16::from(m.header.state)),
        router: m.header.flags.contains(NeighbourFlags::Router),
    })
}

fn family_of(ip: &IpAddr) -> AddressFamily {
    match ip {
        IpAddr::V4(_) => AddressFamily::Inet,
        IpAddr::V6(_) => AddressFamily::Inet6,
    }
}

fn neigh_addr(ip: &IpAddr) -> NeighbourAddress {
    match ip {
        IpAddr::V4(a) => NeighbourAddress::Inet(*a),
        IpAddr::V6(a) => NeighbourAddress::Inet6(*a),
    }
}

impl Netlink {
    /// Every IPv4 (ARP) and IPv6 (NDP) neighbour entry in every state
    /// (`ip neigh show nud all`), proxy entries excluded.
    pub fn neighbors(&mut self, ifs: &[Interface]) -> Result<Vec<Neighbor>> {
        let names = IfNames::new(ifs);
        let mut out = Vec::new();
        for family in [AddressFamily::Inet, AddressFamily::Inet6] {
            let mut m = NeighbourMessage::default();
            m.header.family = family;
            let msg = RouteNetlinkMessage::GetNeighbour(m);
            out.extend(self.dump_map(msg, "dumping neighbours", |r| match r {
                RouteNetlinkMessage::NewNeighbour(n) => to_neighbor(n, &names),
                _ => None,
            })?);
        }
        Ok(out)
    }

    fn neigh_msg(&mut self, n: &Neighbor, what: &str) -> Result<NeighbourMessage> {
        let index = self
            .ifindex(&n.ifname)
            .map_err(|e| e.context(what.to_string()))?;
        let mut m = NeighbourMessage::default();
        m.header.family = family_of(&n.ip);
        m.header.ifindex = index;
        m.attributes
            .push(NeighbourAttribute::Destination(neigh_addr(&n.ip)));
        Ok(m)
    }

    /// Add or overwrite an entry (`ip neigh replace IP lladdr MAC dev IF nud STATE`),
    /// e.g. to restore a flushed entry on rollback. An entry without states is
    /// written as PERMANENT.
    pub fn neigh_add(&mut self, n: &Neighbor) -> Result<()> {
        let what = format!("adding neighbour {} dev {}", n.ip, n.ifname);
        let mut m = self.neigh_msg(n, &what)?;
        let mut bits = NeighState::to_bits(&n.state);
        if bits == 0 {
            bits = NeighState::to_bits(&[NeighState::Permanent]);
        }
        m.header.state = NeighbourState::from(bits);
        if n.router {
            m.header.flags = NeighbourFlags::Router;
        }
        match &n.mac {
            Some(mac) => m
                .attributes
                .push(NeighbourAttribute::LinkLayerAddress(mac.0.clone())),
            None if bits & 0xc0 != 0 => {
                return Err(Error::new(
                    ErrorKind::InvalidInput,
                    format!("{what}: a PERMANENT or NOARP entry needs a link-layer address"),
                ))
            }
            None => {}
        }
        self.request(
            RouteNetlinkMessage::NewNeighbour(m),
            NLM_F_CREATE | NLM_F_REPLACE,
            &what,
        )?;
        Ok(())
    }

    /// Delete an entry (`ip neigh del IP dev IF`).
    pub fn neigh_del(&mut self, n: &Neighbor) -> Result<()> {
        let what = format!("deleting neighbour {} dev {}", n.ip, n.ifname);
        let m = self.neigh_msg(n, &what)?;
        self.request(RouteNetlinkMessage::DelNeighbour(m), 0, &what)?;
        Ok(())
    }
}
