//! Links: `ip link show` and the `ip link add/set/del` the lab and apply need.

use super::{no_such_interface, Netlink};
use crate::error::{Error, ErrorKind, Result};
use crate::model::{ConfKey, HwAddr, Interface, LinkStats, OperState};
use crate::netns::NetnsTarget;
use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL};
use netlink_packet_route::link::{
    AfSpecInet, AfSpecUnspec, InetDevConf, InfoData, InfoKind, InfoVeth, LinkAttribute,
    LinkExtentMask, LinkFlags, LinkInfo, LinkMessage, State,
};
use netlink_packet_route::RouteNetlinkMessage;
use std::collections::HashMap;
use std::os::fd::AsRawFd;

fn oper_state(s: State) -> OperState {
    match s {
        State::NotPresent => OperState::NotPresent,
        State::Down => OperState::Down,
        State::LowerLayerDown => OperState::LowerLayerDown,
        State::Testing => OperState::Testing,
        State::Dormant => OperState::Dormant,
        State::Up => OperState::Up,
        _ => OperState::Unknown,
    }
}

/// An interface's IPv4 settings as its link message carries them
/// (`IFLA_AF_SPEC` / `AF_INET` / `IFLA_INET_CONF`): the kernel's `in_dev->cnf`
/// array, the very values `/proc/sys/net/ipv4/conf/<iface>/` shows (both are
/// filled from it: `inet_fill_link_af` and `devinet_conf_proc` in
/// `net/ipv4/devinet.c`). Absent for an interface without IPv4 (no
/// `conf/<iface>` directory either).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InetConf(InetDevConf);

impl InetConf {
    /// The kernel's value of one key (an `int`, as `/proc/sys` prints it).
    pub(crate) fn get(&self, key: ConfKey) -> i32 {
        let c = &self.0;
        match key {
            ConfKey::ArpIgnore => c.arp_ignore,
            ConfKey::ArpAnnounce => c.arp_announce,
            ConfKey::ArpFilter => c.arpfilter,
            ConfKey::RpFilter => c.rp_filter,
            ConfKey::AcceptLocal => c.accept_local,
            ConfKey::ArpNotify => c.arp_notify,
        }
    }
}

/// Convert one link message; the master is returned as an index for a second pass.
pub(super) fn to_interface(m: LinkMessage) -> (Interface, Option<u32>) {
    let (i, master, _) = to_interface_conf(m);
    (i, master)
}

/// [`to_interface`] and the link's IPv4 settings.
fn to_interface_conf(m: LinkMessage) -> (Interface, Option<u32>, Option<InetConf>) {
    let mut i = Interface {
        index: m.header.index,
        name: String::new(),
        kind: None,
        mac: None,
        mtu: 0,
        admin_up: m.header.flags.contains(LinkFlags::Up),
        oper_state: OperState::Unknown,
        carrier: None,
        master: None,
        stats: LinkStats::default(),
        ethtool_stats: None,
        qos: None,
    };
    let mut master = None;
    let mut inet = None;
    for a in m.attributes {
        match a {
            LinkAttribute::AfSpecUnspec(specs) => {
                for spec in specs {
                    if let AfSpecUnspec::Inet(v) = spec {
                        for x in v {
                            if let AfSpecInet::DevConf(c) = x {
                                inet = Some(InetConf(c));
                            }
                        }
                    }
                }
            }
            LinkAttribute::IfName(n) => i.name = n,
            LinkAttribute::Address(b) if !b.is_empty() => i.mac = Some(HwAddr(b)),
            LinkAttribute::Mtu(v) => i.mtu = v,
            LinkAttribute::OperState(s) => i.oper_state = oper_state(s),
            LinkAttribute::Carrier(c) => i.carrier = Some(c != 0),
            LinkAttribute::Controller(idx) => master = Some(idx),
            LinkAttribute::LinkInfo(infos) => {
                for info in infos {
                    if let LinkInfo::Kind(k) = info {
                        i.kind = Some(k.to_string());
                    }
                }
            }
            LinkAttribute::Stats64(s) => {
                i.stats = LinkStats {
                    rx_packets: s.rx_packets,
                    tx_packets: s.tx_packets,
                    rx_bytes: s.rx_bytes,
                    tx_bytes: s.tx_bytes,
                    rx_errors: s.rx_errors,
                    tx_errors: s.tx_errors,
                    rx_dropped: s.rx_dropped,
                    tx_dropped: s.tx_dropped,
                }
            }
            _ => {}
        }
    }
    (i, master, inet)
}

/// A link dump request that asks the kernel to leave out what no snapshot
/// reads: `IFLA_EXT_MASK` with `RTEXT_FILTER_SKIP_STATS`, which drops each
/// link's IPv6 and ICMPv6 statistics (`IFLA_INET6_STATS`,
/// `IFLA_INET6_ICMP6STATS`: 43 per-CPU sums and 364 bytes a link, filled by
/// `inet6_fill_ifla6_attrs` in `net/ipv6/addrconf.c`). The link counters
/// (`IFLA_STATS64`) the kernel sends all the same.
fn dump_request() -> LinkMessage {
    let mut m = LinkMessage::default();
    m.attributes
        .push(LinkAttribute::ExtMask(vec![LinkExtentMask::SkipStats]));
    m
}

fn link_msg(index: u32) -> LinkMessage {
    let mut m = LinkMessage::default();
    m.header.index = index;
    m
}

impl Netlink {
    /// Every link (`ip -s link show`): name, index, kind, MAC, MTU, admin and
    /// operational state, carrier, master name and 64-bit counters.
    pub fn links(&mut self) -> Result<Vec<Interface>> {
        Ok(self.links_inet()?.into_iter().map(|(i, _)| i).collect())
    }

    /// [`Netlink::links`] with each link's IPv4 settings from the same dump (a
    /// snapshot reads them here instead of six `/proc/sys` files per interface).
    pub(crate) fn links_inet(&mut self) -> Result<Vec<(Interface, Option<InetConf>)>> {
        let msg = RouteNetlinkMessage::GetLink(dump_request());
        let raw = self.dump_map(msg, "dumping links", |m| match m {
            RouteNetlinkMessage::NewLink(l) => Some(to_interface_conf(l)),
            _ => None,
        })?;
        let names: HashMap<u32, String> = raw
            .iter()
            .map(|(i, _, _)| (i.index, i.name.clone()))
            .collect();
        let mut out: Vec<(Interface, Option<InetConf>)> = raw
            .into_iter()
            .map(|(mut i, master, inet)| {
                i.master = master.map(|idx| names.get(&idx).cloned().unwrap_or(format!("if{idx}")));
                (i, inet)
            })
            .collect();
        out.sort_by_key(|(i, _)| i.index);
        Ok(out)
    }

    /// One link by name (`ip link show dev NAME`); `NotFound` when it is missing.
    pub fn link(&mut self, name: &str) -> Result<Interface> {
        let mut m = LinkMessage::default();
        m.attributes
            .push(LinkAttribute::Other(super::names::name_attr(
                super::names::IFLA_IFNAME,
                name,
            )?));
        let replies = self
            .request(
                RouteNetlinkMessage::GetLink(m),
                0,
                &format!("looking up interface {name}"),
            )
            .map_err(|e| match e.kind() {
                ErrorKind::NotFound => no_such_interface(name),
                _ => e,
            })?;
        for r in replies {
            if let RouteNetlinkMessage::NewLink(l) = r {
                let (mut i, master) = to_interface(l);
                if let Some(idx) = master {
                    i.master = Some(self.link_name(idx)?);
                }
                return Ok(i);
            }
        }
        Err(no_such_interface(name))
    }

    /// The index of a link by name; `NotFound` when it is missing.
    ///
    /// One `SIOCGIFINDEX` ioctl on the netlink socket itself: the kernel passes
    /// ioctls a netlink socket does not handle to the device ioctls of the
    /// socket's namespace. An `RTM_GETLINK` round trip costs about 13 us (the
    /// kernel builds and we parse the whole link message); this about 1 us, and
    /// adding a route or deleting a neighbour needs one lookup each.
    pub fn ifindex(&mut self, name: &str) -> Result<u32> {
        // The kernel's bytes of the model's (escaped) name.
        let raw = crate::model::ifname_to_kernel(name)?;
        let bytes = raw.as_slice();
        if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
            return Err(no_such_interface(name));
        }
        // SAFETY: an all-zero ifreq is valid; the name is NUL-terminated by it.
        let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
        for (d, s) in req.ifr_name.iter_mut().zip(bytes) {
            *d = *s as libc::c_char;
        }
        // SAFETY: SIOCGIFINDEX reads ifr_name and writes ifr_ifindex of a valid
        // ifreq we own, on a socket descriptor we own.
        let rc = unsafe { libc::ioctl(self.engine.raw_fd(), libc::SIOCGIFINDEX as _, &mut req) };
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::ENODEV) {
                return Err(no_such_interface(name));
            }
            return Err(Error::io(e, format!("looking up interface {name}")));
        }
        // SAFETY: SIOCGIFINDEX filled the ifindex member.
        let index = unsafe { req.ifr_ifru.ifru_ifindex };
        u32::try_from(index).map_err(|_| no_such_interface(name))
    }

    pub(super) fn link_name(&mut self, index: u32) -> Result<String> {
        let replies = self.request(
            RouteNetlinkMessage::GetLink(link_msg(index)),
            0,
            &format!("looking up interface index {index}"),
        )?;
        Ok(replies
            .into_iter()
            .find_map(|r| match r {
                RouteNetlinkMessage::NewLink(l) => to_interface(l).0.name.into(),
                _ => None,
            })
            .unwrap_or(format!("if{index}")))
    }

    /// Create a veth pair (`ip link add NAME type veth peer name PEER [netns NS]`).
    /// With `peer_netns`, the peer end is created directly in that namespace.
    pub fn link_add_veth(
        &mut self,
        name: &str,
        peer: &str,
        peer_netns: Option<&NetnsTarget>,
    ) -> Result<()> {
        let what = format!("adding veth pair {name} / {peer}");
        let ns_file = match peer_netns.and_then(NetnsTarget::file) {
            Some(p) => Some(std::fs::File::open(&p).map_err(|e| {
                crate::Error::io(e, format!("{what}: opening namespace {}", p.display()))
            })?),
            None => None,
        };
        let mut peer_msg = LinkMessage::default();
        peer_msg
            .attributes
            .push(LinkAttribute::IfName(peer.to_string()));
        if let Some(f) = &ns_file {
            peer_msg
                .attributes
                .push(LinkAttribute::NetNsFd(f.as_raw_fd()));
        }
        let mut m = LinkMessage::default();
        m.attributes.push(LinkAttribute::IfName(name.to_string()));
        m.attributes.push(LinkAttribute::LinkInfo(vec![
            LinkInfo::Kind(InfoKind::Veth),
            LinkInfo::Data(InfoData::Veth(InfoVeth::Peer(peer_msg))),
        ]));
        self.request(
            RouteNetlinkMessage::NewLink(m),
            NLM_F_CREATE | NLM_F_EXCL,
            &what,
        )?;
        Ok(())
    }

    /// Create a bridge (`ip link add NAME type bridge`).
    pub fn link_add_bridge(&mut self, name: &str) -> Result<()> {
        let mut m = LinkMessage::default();
        m.attributes.push(LinkAttribute::IfName(name.to_string()));
        m.attributes
            .push(LinkAttribute::LinkInfo(vec![LinkInfo::Kind(
                InfoKind::Bridge,
            )]));
        self.request(
            RouteNetlinkMessage::NewLink(m),
            NLM_F_CREATE | NLM_F_EXCL,
            &format!("adding bridge {name}"),
        )?;
        Ok(())
    }

    fn set_link(
        &mut self,
        name: &str,
        what: String,
        f: impl FnOnce(&mut LinkMessage),
    ) -> Result<()> {
        let index = self.ifindex(name).map_err(|e| e.context(what.clone()))?;
        let mut m = link_msg(index);
        f(&mut m);
        self.request(RouteNetlinkMessage::SetLink(m), 0, &what)?;
        Ok(())
    }

    /// Enslave a link to a bridge or bond (`ip link set NAME master MASTER`).
    pub fn link_set_master(&mut self, name: &str, master: &str) -> Result<()> {
        let what = format!("setting master of {name} to {master}");
        let midx = self.ifindex(master).map_err(|e| e.context(what.clone()))?;
        self.set_link(name, what, |m| {
            m.attributes.push(LinkAttribute::Controller(midx))
        })
    }

    /// Bring a link up (`ip link set NAME up`).
    pub fn link_set_up(&mut self, name: &str) -> Result<()> {
        self.set_link(name, format!("setting {name} up"), |m| {
            m.header.flags = LinkFlags::Up;
            m.header.change_mask = LinkFlags::Up;
        })
    }

    /// Bring a link down (`ip link set NAME down`).
    pub fn link_set_down(&mut self, name: &str) -> Result<()> {
        self.set_link(name, format!("setting {name} down"), |m| {
            m.header.flags = LinkFlags::empty();
            m.header.change_mask = LinkFlags::Up;
        })
    }

    /// Set a link's MTU (`ip link set NAME mtu MTU`).
    pub fn link_set_mtu(&mut self, name: &str, mtu: u32) -> Result<()> {
        self.set_link(name, format!("setting MTU of {name} to {mtu}"), |m| {
            m.attributes.push(LinkAttribute::Mtu(mtu))
        })
    }

    /// Move a link to another namespace (`ip link set NAME netns NS`).
    pub fn link_set_netns(&mut self, name: &str, target: &NetnsTarget) -> Result<()> {
        let what = format!("moving {name} to network namespace {target:?}");
        let Some(path) = target.file() else {
            return Err(crate::Error::new(
                ErrorKind::InvalidInput,
                format!("{what}: name the target namespace (not `Current`)"),
            ));
        };
        let f = std::fs::File::open(&path)
            .map_err(|e| crate::Error::io(e, format!("{what}: opening {}", path.display())))?;
        let fd = f.as_raw_fd();
        self.set_link(name, what, |m| {
            m.attributes.push(LinkAttribute::NetNsFd(fd))
        })
    }

    /// Delete a link (`ip link del NAME`); deleting one end of a veth removes both.
    pub fn link_del(&mut self, name: &str) -> Result<()> {
        let what = format!("deleting interface {name}");
        let index = self.ifindex(name).map_err(|e| e.context(what.clone()))?;
        self.request(RouteNetlinkMessage::DelLink(link_msg(index)), 0, &what)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use netlink_packet_route::link::{AfSpecInet6, AfSpecUnspec, LinkAttribute, LinkMessage};
    use netlink_packet_route::RouteNetlinkMessage;

    /// The IPv6 statistics of each link in a dump, and whether it has counters.
    fn inet6_stats(replies: &[RouteNetlinkMessage]) -> Vec<(usize, bool)> {
        replies
            .iter()
            .filter_map(|m| match m {
                RouteNetlinkMessage::NewLink(l) => Some(l),
                _ => None,
            })
            .map(|l| {
                let stats = l
                    .attributes
                    .iter()
                    .filter_map(|a| match a {
                        LinkAttribute::AfSpecUnspec(v) => Some(v),
                        _ => None,
                    })
                    .flatten()
                    .filter_map(|s| match s {
                        AfSpecUnspec::Inet6(v) => Some(v),
                        _ => None,
                    })
                    .flatten()
                    .filter(|x| matches!(x, AfSpecInet6::Stats(_) | AfSpecInet6::Icmp6Stats(_)))
                    .count();
                let counters = l
                    .attributes
                    .iter()
                    .any(|a| matches!(a, LinkAttribute::Stats64(_)));
                (stats, counters)
            })
            .collect()
    }

    /// On a real kernel: the snapshot's link dump request makes the kernel leave
    /// out the IPv6 statistics (a plain dump has them) and still send the link
    /// counters, which a snapshot reports.
    #[test]
    #[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
    fn the_link_dump_leaves_out_only_the_ipv6_statistics() {
        crate::test_support::require_root("the_link_dump_leaves_out_only_the_ipv6_statistics");
        let mut lab = crate::lab::Lab::new("nl-nostats").unwrap();
        let ns = lab.add_namespace("x").unwrap();
        let target = crate::netns::NetnsTarget::named(&ns).unwrap();
        let (plain, ours, links) = target
            .run(|| {
                let mut nl = super::super::Netlink::open()?;
                nl.link_set_up("lo")?;
                let s = std::net::UdpSocket::bind("127.0.0.1:0")
                    .map_err(|e| crate::Error::io(e, "binding on the lab's loopback"))?;
                let to = s
                    .local_addr()
                    .map_err(|e| crate::Error::io(e, "local addr"))?;
                for _ in 0..3 {
                    s.send_to(b"x", to)
                        .map_err(|e| crate::Error::io(e, "sending on the lab's loopback"))?;
                }
                let plain = nl.dump_map(
                    RouteNetlinkMessage::GetLink(LinkMessage::default()),
                    "dumping links",
                    Some,
                )?;
                let ours = nl.dump_map(
                    RouteNetlinkMessage::GetLink(super::dump_request()),
                    "dumping links",
                    Some,
                )?;
                Ok((plain, ours, nl.links()?))
            })
            .unwrap();
        assert_eq!(
            inet6_stats(&plain),
            vec![(2, true)],
            "a plain dump has them"
        );
        assert_eq!(inet6_stats(&ours), vec![(0, true)]);
        assert_eq!(links.len(), 1);
        assert!(links[0].stats.tx_packets >= 3, "{:?}", links[0].stats);
    }
}
