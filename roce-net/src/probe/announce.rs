//! A NIC announcing its own address, as apply does after a verified change:
//! gratuitous ARP for an IPv4 address. Every NIC's announcements go out of
//! one packet socket (`sendto` naming the NIC's index), and that socket is
//! closed by a process of its own (`sys::close_elsewhere`): closing a packet
//! socket waits for an RCU grace period, 5-20 ms, which one socket per NIC
//! paid once per NIC with the namespace lock held (docs/architecture.md,
//! decision 17).

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
    /// broadcast, and a second one [`SECOND_COPY_AFTER`] later when the
    /// announcer is closed.
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
            return Ok(Announced::Skipped(format!("ARP is off on {dev} (NOARP)")));
        }
        let index = ifindex(sock, &name, dev)?;
        let mac = hw_addr(sock, &name, dev, "announcing an address")?;
        let (what, frame, to) = match address {
            IpAddr::V4(a) => (
                "gratuitous ARP",
                super::arp::build_request(&mac, a, a).to_vec(),
                sockaddr_ll(index, (libc::ETH_P_ARP as u16).to_be(), [0xff; 6]),
            ),
            IpAddr::V6(_) => {
                return Ok(Announced::Skipped(
                    "IPv6 addresses are not announced".to_string(),
                ))
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
        let frames = &self.sent;
        // Runs in the process that closes the socket: system calls only, on
        // the frames prepared here (sys::LastUse).
        let again = |fd: libc::c_int| {
            for (to, frame) in frames {
                // SAFETY: frame and to are valid for the lengths given; a
                // failure is ignored (the first copy went out).
                unsafe {
                    libc::sendto(
                        fd,
                        frame.as_ptr().cast(),
                        frame.len(),
                        0,
                        std::ptr::addr_of!(*to).cast(),
                        std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
                    )
                };
            }
        };
        let last = (!frames.is_empty()).then_some(crate::sys::LastUse {
            delay: SECOND_COPY_AFTER,
            act: &again,
        });
        crate::sys::close_elsewhere(self.sock, last);
    }
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
