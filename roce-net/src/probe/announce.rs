//! A NIC announcing its own address, as apply does after a verified change:
//! gratuitous ARP for an IPv4 address, an unsolicited neighbour advertisement
//! (`nd.rs`) for an IPv6 one. Every NIC's announcements go out of
//! one packet socket (`sendto` naming the NIC's index), and that socket is
//! closed by a process of its own (`sys::close_elsewhere`): closing a packet
//! socket waits for an RCU grace period, 5-20 ms, which one socket per NIC
//! paid once per NIC with the namespace lock held (docs/architecture.md,
//! decision 17).

use super::nd;
use super::packet::{flags, hw_addr, ifindex, ifname_bytes, packet_socket, send, sockaddr_ll};
use crate::error::{Error, Result};
use std::net::IpAddr;
use std::os::fd::OwnedFd;
use std::time::Duration;

/// When the second copy of each announcement goes out: a second after the
/// first, from the process that closes the socket (`sys::close_elsewhere`), as
/// RFC 5227 spaces IPv4 announcements (`ANNOUNCE_INTERVAL`, 2 s) rather than
/// sending them back to back. It repairs a peer entry that an ARP reply from
/// the wrong NIC, sent just before the fix took effect, spoiled again after
/// the first copy (seen once in six VM-tier applies, docs/vm.md).
pub(crate) const SECOND_COPY_AFTER: Duration = Duration::from_secs(1);

/// One packet socket that sends every NIC's announcements.
pub(crate) struct Announcer {
    /// Registered for no protocol (0): nothing is ever queued to it.
    sock: OwnedFd,
    /// Every frame sent, with where to: sent once more on close.
    sent: Vec<(libc::sockaddr_ll, Vec<u8>)>,
}

/// What became of one address's announcement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Announced {
    /// Sent, by this means ("gratuitous ARP").
    Sent(&'static str),
    /// Not sent, and why (the NIC does not use ARP).
    Skipped(String),
}

impl Announcer {
    /// Open the socket, in the calling thread's network namespace (needs
    /// `CAP_NET_RAW`).
    pub(crate) fn open() -> Result<Announcer> {
        let sock = packet_socket(0)
            .map_err(|e| Error::io(e, "opening a packet socket to announce addresses"))?;
        Ok(Announcer {
            sock,
            sent: Vec::new(),
        })
    }

    /// Announce `address` from `dev`: for IPv4, a gratuitous ARP request
    /// (sender and target IP both `address`, sender MAC `dev`'s own),
    /// broadcast; for IPv6, an unsolicited neighbour advertisement to all
    /// nodes (override set, router set when `dev` forwards IPv6, `dev`'s MAC
    /// as the target link-layer address); and a second one
    /// [`SECOND_COPY_AFTER`] later when the announcer is closed.
    ///
    /// A peer that already holds a neighbour entry for `address` takes the MAC
    /// of the announcement at once (Linux `arp_process` overrides an entry for
    /// a gratuitous ARP even within its lock time), so a peer that learned
    /// another NIC's MAC during ARP flux heals without waiting for its entry to
    /// age out. Peers with no entry do not create one (unless their
    /// `arp_accept` is set). A NIC whose ARP is off (`ip link set DEV arp off`,
    /// `IFF_NOARP`) announces nothing: it answers no ARP either, so a peer
    /// cannot have learned a MAC for it by ARP.
    pub(crate) fn announce(&mut self, dev: &str, address: IpAddr) -> Result<Announced> {
        let sock = &self.sock;
        let name = ifname_bytes(dev)?;
        if flags(sock, &name, dev)? & libc::IFF_NOARP as u32 != 0 {
            // IFF_NOARP turns off IPv6 neighbour discovery too (the kernel's
            // ndisc_constructor makes every neighbour NUD_NOARP).
            let off = match address {
                IpAddr::V4(_) => "ARP",
                IpAddr::V6(_) => "neighbour discovery",
            };
            return Ok(Announced::Skipped(format!("{off} is off on {dev} (NOARP)")));
        }
        let index = ifindex(sock, &name, dev)?;
        let mac = hw_addr(sock, &name, dev, "announcing an address")?;
        let (what, frame, to) = match address {
            IpAddr::V4(a) => (
                "gratuitous ARP",
                super::arp::build_request(&mac, a, a).to_vec(),
                sockaddr_ll(index, (libc::ETH_P_ARP as u16).to_be(), [0xff; 6]),
            ),
            IpAddr::V6(a) => {
                let router = forwards_ipv6(dev)?;
                (
                    if router {
                        "unsolicited neighbour advertisement, router"
                    } else {
                        "unsolicited neighbour advertisement"
                    },
                    nd::unsolicited_advertisement(&mac, a, router),
                    sockaddr_ll(
                        index,
                        (libc::ETH_P_IPV6 as u16).to_be(),
                        nd::multicast_mac(nd::ALL_NODES),
                    ),
                )
            }
        };
        send(sock, &frame, &to).map_err(|e| {
            Error::io(
                e,
                format!("announcing {address} on {dev} ({what}; is {dev} up?)"),
            )
        })?;
        self.sent.push((to, frame));
        Ok(Announced::Sent(what))
    }

    /// Close the socket without waiting for the grace period its close
    /// waits for (`sys::close_elsewhere`), which first sends every
    /// announcement's second copy. Dropped instead, it is closed here, this
    /// thread waits, and no second copy goes out.
    pub(crate) fn close(self) {
        let last = (!self.sent.is_empty()).then_some(crate::sys::LastUse {
            delay: SECOND_COPY_AFTER,
            resend: &self.sent,
        });
        crate::sys::close_elsewhere(self.sock, last);
    }
}

/// Whether `dev` forwards IPv6 (`net.ipv6.conf.DEV.forwarding`, read in the
/// calling thread's namespace): the router flag of its advertisements, as the
/// kernel sets it in its own (`ndisc_send_unsol_na`).
fn forwards_ipv6(dev: &str) -> Result<bool> {
    let path = std::path::Path::new("/proc/sys/net/ipv6/conf")
        .join(dev)
        .join("forwarding");
    let text = crate::input::read_attribute_text(&path).map_err(|e| {
        Error::io(
            e,
            format!(
                "reading {} to announce {dev}'s IPv6 addresses (is IPv6 disabled on {dev}?)",
                path.display()
            ),
        )
    })?;
    Ok(text.trim() != "0")
}

/// Announce each `(NIC, address)` from one [`Announcer`] and say what
/// happened, one line each: `announced 198.18.0.11 on r1 (gratuitous ARP)`,
/// `did not announce ...: ARP is off on r1 (NOARP)`, or `could not announce
/// ...: <error>`. Best effort: an announcement that fails is a line, never an
/// error.
pub(crate) fn announce_all(list: &[(String, IpAddr)]) -> Vec<String> {
    if list.is_empty() {
        return Vec::new();
    }
    let mut announcer = Announcer::open();
    let lines = list
        .iter()
        .map(|(dev, a)| {
            match announcer
                .as_mut()
                .map_err(|e| e.clone())
                .and_then(|x| x.announce(dev, *a))
            {
                Ok(Announced::Sent(what)) => format!("announced {a} on {dev} ({what})"),
                Ok(Announced::Skipped(why)) => format!("did not announce {a} on {dev}: {why}"),
                Err(e) => format!("could not announce {a} on {dev}: {e}"),
            }
        })
        .collect();
    if let Ok(a) = announcer {
        a.close();
    }
    lines
}

#[cfg(test)]
mod tests {
    use crate::netns::{netns_add, netns_del, NetnsTarget};
    use std::net::IpAddr;
    use std::process::Command;

    /// The namespaces a test made, removed when it ends, failed or not.
    struct Namespaces(Vec<String>);

    impl Drop for Namespaces {
        fn drop(&mut self) {
            for n in &self.0 {
                let _ = netns_del(n);
            }
        }
    }

    fn ip(args: &[&str]) -> String {
        let out = Command::new("ip").args(args).output().unwrap();
        assert!(
            out.status.success(),
            "ip {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A peer that holds a stale IPv6 neighbour entry for each NIC's address,
    /// with a MAC that is nobody's, takes each NIC's own MAC from its
    /// advertisement (and the router flag from the NIC that forwards); a NIC
    /// whose ARP is off sends none, so the peer's entry for it stays.
    #[test]
    #[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
    fn a_peers_ipv6_neighbour_entries_take_each_nics_mac_from_its_advertisement() {
        let pid = std::process::id();
        let (node, peer) = (format!("rnt-an6-{pid}-n"), format!("rnt-an6-{pid}-p"));
        let mut made = Namespaces(Vec::new());
        for n in [&node, &peer] {
            netns_add(n).unwrap();
            made.0.push(n.clone());
        }
        // ip -n PEER link add name sw type bridge; ip -n PEER addr add fd00:198:18::200/64 dev sw nodad
        ip(&["-n", &peer, "link", "add", "name", "sw", "type", "bridge"]);
        ip(&[
            "-n",
            &peer,
            "addr",
            "add",
            "fd00:198:18::200/64",
            "dev",
            "sw",
            "nodad",
        ]);
        ip(&["-n", &peer, "link", "set", "sw", "up"]);
        let nobody = "02:00:00:00:00:99";
        let mut list = Vec::new();
        for i in 0..3 {
            let (nic, end) = (format!("r{i}"), format!("p{i}"));
            let a = format!("fd00:198:18::1{i}");
            // ip link add rI netns NODE type veth peer name pI netns PEER
            ip(&[
                "link", "add", &nic, "netns", &node, "type", "veth", "peer", "name", &end, "netns",
                &peer,
            ]);
            ip(&["-n", &peer, "link", "set", &end, "master", "sw", "up"]);
            let mac = format!("02:00:00:00:00:1{i}");
            ip(&["-n", &node, "link", "set", &nic, "address", &mac, "up"]);
            ip(&[
                "-n",
                &node,
                "addr",
                "add",
                &format!("{a}/64"),
                "dev",
                &nic,
                "nodad",
            ]);
            list.push((nic, a.parse::<IpAddr>().unwrap()));
        }
        // The entries once every port is in: a port joining can change the
        // bridge's MAC, and that flushes its neighbours (NETDEV_CHANGEADDR).
        for (_, a) in &list {
            let a = a.to_string();
            // ip -n PEER -6 neigh replace ADDR lladdr NOBODY dev sw nud stale
            ip(&[
                "-n", &peer, "-6", "neigh", "replace", &a, "lladdr", nobody, "dev", "sw", "nud",
                "stale",
            ]);
        }
        // r1 forwards IPv6; r2's ARP (and with it neighbour discovery) is off.
        ip(&[
            "netns",
            "exec",
            &node,
            "sysctl",
            "-qw",
            "net.ipv6.conf.r1.forwarding=1",
        ]);
        ip(&["-n", &node, "link", "set", "r2", "arp", "off"]);
        let lines = NetnsTarget::named(&node)
            .unwrap()
            .run(|| Ok(super::announce_all(&list)))
            .unwrap();
        assert_eq!(
            lines,
            [
                "announced fd00:198:18::10 on r0 (unsolicited neighbour advertisement)",
                "announced fd00:198:18::11 on r1 (unsolicited neighbour advertisement, router)",
                "did not announce fd00:198:18::12 on r2: neighbour discovery is off on r2 (NOARP)",
            ]
        );
        // The frames cross the veth and bridge after the send returns: give
        // the peer up to 2 s to have taken each (it takes microseconds).
        let held = |a: &str| {
            let want = |e: &str| !e.contains("02:00:00:00:00:99") || a.ends_with("::12");
            let mut e = String::new();
            for _ in 0..20 {
                e = ip(&["-n", &peer, "-6", "neigh", "show", a, "dev", "sw"]);
                if want(&e) {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            e
        };
        // fd00:198:18::10 lladdr 02:00:00:00:00:10 STALE
        let r0 = held("fd00:198:18::10");
        assert!(
            r0.contains("lladdr 02:00:00:00:00:10 ") && !r0.contains("router"),
            "{r0}"
        );
        // fd00:198:18::11 lladdr 02:00:00:00:00:11 router STALE
        let r1 = held("fd00:198:18::11");
        assert!(r1.contains("lladdr 02:00:00:00:00:11 router"), "{r1}");
        let r2 = held("fd00:198:18::12");
        assert!(r2.contains(&format!("lladdr {nobody} ")), "{r2}");
    }
}
