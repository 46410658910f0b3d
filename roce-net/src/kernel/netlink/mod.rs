//! Synchronous rtnetlink (docs/architecture.md, decision 2).
//!
//! [`Netlink`] is a blocking rtnetlink socket in the network namespace of the thread
//! that opened it (normally through [`crate::Host::with_netlink`]). Its methods are
//! named after the `ip` commands they mirror and speak only `roce_net::model` types:
//!
//! | method | mirrors |
//! |---|---|
//! | [`Netlink::links`] | `ip -s link show` |
//! | [`Netlink::addresses`] | `ip addr show` |
//! | [`Netlink::neighbors`] | `ip neigh show nud all` (v4 and v6) |
//! | [`Netlink::routes`] | `ip route show table all` (v4 and v6) |
//! | [`Netlink::rules`] | `ip rule show` (v4 and v6) |
//! | [`Netlink::route_get`] | `ip route get DST from SRC oif DEV` |
//! | [`Netlink::route_query`] | `ip route get` with iif/oif/mark/ipproto/sport/dport |
//! | [`Netlink::dcb_qos`] | `dcb pfc show dev X`, `dcb app show dev X` (`RTM_GETDCB`) |
//! | [`Netlink::ethtool_stats`] | `ethtool -S X` (the ethtool ioctl on this socket) |
//! | `route_add`/`route_replace`/`route_del` | `ip route add`/`replace`/`del` |
//! | `rule_add`/`rule_del` | `ip rule add`/`del` |
//! | `neigh_add`/`neigh_del` | `ip neigh replace`/`del` |
//! | `link_*`, `addr_add` | `ip link ...`, `ip addr add` |
//!
//! Errors name the object ("adding route 198.18.0.0/24 dev r0 table 1000"), carry
//! the errno and keep the kernel's extended-ack text ([`crate::Error::extack`]).

mod addr;
mod attr;
mod dcb;
mod link;
mod names;
mod neigh;
mod route;
mod rule;
pub(crate) mod socket;

use crate::error::{Error, ErrorKind, Result};
use crate::model::Interface;
use netlink_packet_route::RouteNetlinkMessage;
use socket::{Engine, KernelTransport};
use std::collections::HashMap;

/// Which address families a dump of addresses, routes or rules asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Families {
    /// IPv4 and IPv6 (what `ip` shows without `-4`/`-6`).
    Both,
    /// IPv4 only (`ip -4`).
    Ipv4,
}

impl Families {
    fn list(self) -> &'static [netlink_packet_route::AddressFamily] {
        use netlink_packet_route::AddressFamily as F;
        match self {
            Families::Both => &[F::Inet, F::Inet6],
            Families::Ipv4 => &[F::Inet],
        }
    }
}

/// A blocking rtnetlink socket, bound to the namespace of the thread that opened it.
pub struct Netlink {
    engine: Engine<KernelTransport>,
}

impl std::fmt::Debug for Netlink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Netlink")
    }
}

impl Netlink {
    /// Open a socket in the calling thread's network namespace, with extended acks
    /// and strict dump checking enabled.
    pub fn open() -> Result<Netlink> {
        Ok(Netlink {
            engine: Engine::new(KernelTransport::open()?),
        })
    }

    /// The driver statistics of `ifname` (`ethtool -S`), in the driver's order;
    /// `None` when the driver has none. Runs the ethtool ioctl on this socket, so
    /// in its namespace.
    pub fn ethtool_stats(&mut self, ifname: &str) -> Result<Option<Vec<(String, u64)>>> {
        crate::kernel::ethtool::driver_stats(self.engine.raw_fd(), ifname).map_err(|e| {
            let nodev = e.raw_os_error() == Some(libc::ENODEV);
            let err = Error::io(e, format!("reading the ethtool statistics of {ifname}"));
            if nodev {
                err.with_kind(ErrorKind::NotFound)
            } else {
                err
            }
        })
    }

    pub(crate) fn request(
        &mut self,
        msg: RouteNetlinkMessage,
        flags: u16,
        what: &str,
    ) -> Result<Vec<RouteNetlinkMessage>> {
        self.engine.request(msg, flags, what)
    }

    /// [`Netlink::request`], each reply undecoded to `f` (`Engine::request_each`).
    pub(crate) fn request_each(
        &mut self,
        msg: RouteNetlinkMessage,
        flags: u16,
        what: &str,
        f: impl FnMut(u16, &[u8]) -> Result<()>,
    ) -> Result<()> {
        self.engine.request_each(msg, flags, what, f)
    }

    /// A dump, each reply undecoded to `f` (`Engine::dump_raw_map`).
    pub(crate) fn dump_raw_map<R>(
        &mut self,
        msg: RouteNetlinkMessage,
        what: &str,
        f: impl FnMut(u16, &[u8]) -> Result<Option<R>>,
    ) -> Result<Vec<R>> {
        self.engine.dump_raw_map(msg, what, f)
    }

    pub(crate) fn dump_map<R>(
        &mut self,
        msg: RouteNetlinkMessage,
        what: &str,
        f: impl FnMut(RouteNetlinkMessage) -> Option<R>,
    ) -> Result<Vec<R>> {
        self.engine.dump_map(msg, what, f)
    }
}

/// Interface index -> name, from a link dump.
pub(crate) struct IfNames<'a>(HashMap<u32, &'a str>);

impl<'a> IfNames<'a> {
    pub(crate) fn new(ifs: &'a [Interface]) -> IfNames<'a> {
        IfNames(ifs.iter().map(|i| (i.index, i.name.as_str())).collect())
    }
    /// The name for an index; `if<N>` when the link vanished since the link dump.
    pub(crate) fn name(&self, index: u32) -> String {
        match self.0.get(&index) {
            Some(n) => (*n).to_string(),
            None => format!("if{index}"),
        }
    }
}

/// An interface name that does not exist in this namespace.
pub(crate) fn no_such_interface(name: &str) -> Error {
    Error::new(
        ErrorKind::NotFound,
        format!("no interface named {name:?} in this network namespace (see `ip link`)"),
    )
}

/// Decode one datagram as if the kernel sent it for exchange 1 and convert every
/// message into the model, as a dump does (the fuzz target for netlink input).
#[cfg(any(fuzzing, test))]
pub(crate) fn decode_for_fuzzing(data: &[u8]) {
    let ifs = vec![Interface {
        index: 1,
        name: "r1".into(),
        kind: None,
        mac: None,
        mtu: 1500,
        admin_up: true,
        oper_state: crate::model::OperState::Up,
        carrier: None,
        master: None,
        stats: Default::default(),
        ethtool_stats: None,
        qos: None,
    }];
    let names = IfNames::new(&ifs);
    let mut interrupted = false;
    let _ = socket::handle_datagram(data, 1, 0, "fuzz", &mut interrupted, &mut |mtype, p| {
        if mtype == 16 {
            // Links have a decoder of their own (`link::decode_link`).
            let (i, _, _) = link::decode_link(p)?;
            // Names from the kernel are always kept losslessly.
            let raw = crate::model::ifname_to_kernel(&i.name).expect("escaped name decodes");
            assert_eq!(crate::model::ifname_from_kernel(&raw), i.name);
            return Ok(());
        }
        match socket::decode(mtype, p, "fuzz")? {
            RouteNetlinkMessage::NewAddress(a) => {
                let _ = addr::to_address(a, &names);
            }
            RouteNetlinkMessage::NewRoute(r) => {
                if let Some(r) = route::to_route(r, &names) {
                    let _ = r.to_string();
                }
            }
            RouteNetlinkMessage::NewRule(r) => {
                if let Some(r) = rule::to_rule(r) {
                    let _ = r.to_string();
                }
            }
            RouteNetlinkMessage::NewNeighbour(n) => {
                let _ = neigh::to_neighbor(n, &names);
            }
            _ => {}
        }
        Ok(())
    });
}
