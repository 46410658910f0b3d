//! The IP level's echo: a UDP datagram from the prober's address to the
//! target's, answered by the target's responder with the interface it arrived
//! on and the one the kernel sends the reply by; the prober reads the
//! interface the reply arrived on (`IP_PKTINFO`, `IPV6_RECVPKTINFO`). Sent
//! with DF (`IP_PMTUDISC_DO`), so a datagram at the path's MTU that a switch
//! cannot carry is lost rather than fragmented.
//!
//! The datagram (all integers big-endian):
//!
//! | bytes | field |
//! |---|---|
//! | 0..4 | `RNTM` |
//! | 4 | version, 1 |
//! | 5 | kind: 1 request, 2 reply, 3 bye (the prober is done with this target) |
//! | 6..8 | zero |
//! | 8..16 | the run's token digest |
//! | 16..24 | the plan id |
//! | 24..32 | the probe's id (random per probe) |
//! | 32..36 | sequence number |
//! | 36..52 | reply: the interface the request arrived on (NUL-padded) |
//! | 52..68 | reply: the interface the reply leaves by |
//! | 68.. | zero padding to the datagram's size (a reply is as large as its request) |
//!
//! A responder answers only datagrams with its run's token and plan, never
//! with more bytes than it received.

use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use crate::sys::{bound_socket, from_sockaddr, setsockopt, sockaddr};

/// The fixed part of every datagram.
pub(crate) const HEADER: usize = 68;
const MAGIC: &[u8; 4] = b"RNTM";
const VERSION: u8 = 1;

/// What a datagram is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Request = 1,
    Reply = 2,
    Bye = 3,
}

/// A decoded datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Datagram {
    pub kind: Kind,
    pub token: u64,
    pub plan: u64,
    pub probe: u64,
    pub seq: u32,
    pub arrived_on: String,
    pub reply_dev: String,
}

/// The token's digest on the wire (FNV-1a 64).
pub(crate) fn digest(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The plan id on the wire (its hex, else its digest).
pub(crate) fn plan_word(id: &str) -> u64 {
    u64::from_str_radix(id, 16).unwrap_or_else(|_| digest(id))
}

fn name16(s: &str) -> [u8; 16] {
    let mut out = [0u8; 16];
    for (o, b) in out.iter_mut().zip(s.bytes().take(15)) {
        *o = b;
    }
    out
}

fn unname(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

impl Datagram {
    /// Write into `buf` (at least [`HEADER`] bytes; the rest is zeroed).
    pub(crate) fn encode(&self, buf: &mut [u8]) {
        buf.fill(0);
        buf[0..4].copy_from_slice(MAGIC);
        buf[4] = VERSION;
        buf[5] = self.kind as u8;
        buf[8..16].copy_from_slice(&self.token.to_be_bytes());
        buf[16..24].copy_from_slice(&self.plan.to_be_bytes());
        buf[24..32].copy_from_slice(&self.probe.to_be_bytes());
        buf[32..36].copy_from_slice(&self.seq.to_be_bytes());
        buf[36..52].copy_from_slice(&name16(&self.arrived_on));
        buf[52..68].copy_from_slice(&name16(&self.reply_dev));
    }

    /// Read a datagram; `None` for anything that is not one of ours.
    pub(crate) fn decode(b: &[u8]) -> Option<Datagram> {
        if b.len() < HEADER || &b[0..4] != MAGIC || b[4] != VERSION {
            return None;
        }
        let kind = match b[5] {
            1 => Kind::Request,
            2 => Kind::Reply,
            3 => Kind::Bye,
            _ => return None,
        };
        let word = |r: std::ops::Range<usize>| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[r]);
            u64::from_be_bytes(a)
        };
        let mut seq = [0u8; 4];
        seq.copy_from_slice(&b[32..36]);
        Some(Datagram {
            kind,
            token: word(8..16),
            plan: word(16..24),
            probe: word(24..32),
            seq: u32::from_be_bytes(seq),
            arrived_on: unname(&b[36..52]),
            reply_dev: unname(&b[52..68]),
        })
    }
}

/// A UDP socket bound to one address, reporting each datagram's arrival
/// interface, sending with DF.
#[derive(Debug)]
pub(crate) struct EchoSocket {
    fd: OwnedFd,
    v6: bool,
}

/// One datagram received.
#[derive(Debug)]
pub(crate) struct Received {
    pub len: usize,
    pub from: SocketAddr,
    /// The interface it arrived on.
    pub ifindex: u32,
}

impl EchoSocket {
    /// A socket bound to `addr:port` (port 0: any), with the arrival interface
    /// reported and DF set.
    pub(crate) fn bind(addr: IpAddr, port: u16) -> crate::Result<EchoSocket> {
        let fd = bound_socket(libc::SOCK_DGRAM, SocketAddr::new(addr, port))?;
        let v6 = addr.is_ipv6();
        let opts = if v6 {
            [
                (
                    libc::IPPROTO_IPV6,
                    libc::IPV6_RECVPKTINFO,
                    1,
                    "IPV6_RECVPKTINFO",
                ),
                (
                    libc::IPPROTO_IPV6,
                    libc::IPV6_MTU_DISCOVER,
                    libc::IPV6_PMTUDISC_DO,
                    "IPV6_MTU_DISCOVER",
                ),
            ]
        } else {
            [
                (libc::IPPROTO_IP, libc::IP_PKTINFO, 1, "IP_PKTINFO"),
                (
                    libc::IPPROTO_IP,
                    libc::IP_MTU_DISCOVER,
                    libc::IP_PMTUDISC_DO,
                    "IP_MTU_DISCOVER",
                ),
            ]
        };
        for (level, name, v, label) in opts {
            setsockopt(&fd, level, name, v).map_err(|e| {
                crate::Error::io(e, format!("setting {label} on the UDP socket of {addr}"))
            })?;
        }
        Ok(EchoSocket { fd, v6 })
    }

    /// The raw descriptor (for `poll`).
    pub(crate) fn raw(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    /// Send `buf` to `to`.
    pub(crate) fn send_to(&self, buf: &[u8], to: SocketAddr) -> std::io::Result<()> {
        let (ss, len) = sockaddr(to);
        // SAFETY: a valid buffer and sockaddr.
        let n = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                buf.as_ptr().cast(),
                buf.len(),
                libc::MSG_NOSIGNAL,
                std::ptr::addr_of!(ss).cast(),
                len,
            )
        };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// Receive one datagram if one is waiting (never blocks).
    pub(crate) fn try_recv(&self, buf: &mut [u8]) -> std::io::Result<Option<Received>> {
        // SAFETY: plain-old-data structures, all-zero valid.
        let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let mut cbuf = [0u64; 16];
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        // SAFETY: msghdr is plain old data.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_name = std::ptr::addr_of_mut!(ss).cast();
        msg.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&cbuf) as _;
        // SAFETY: msg points at live buffers owned here.
        let n = unsafe { libc::recvmsg(self.fd.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            return match e.kind() {
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted => Ok(None),
                _ => Err(e),
            };
        }
        let mut ifindex = 0u32;
        // SAFETY: walking the control messages the kernel wrote into cbuf.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                let h = &*c;
                if !self.v6 && h.cmsg_level == libc::IPPROTO_IP && h.cmsg_type == libc::IP_PKTINFO {
                    let pi: libc::in_pktinfo = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                    ifindex = pi.ipi_ifindex as u32;
                }
                if self.v6
                    && h.cmsg_level == libc::IPPROTO_IPV6
                    && h.cmsg_type == libc::IPV6_PKTINFO
                {
                    let pi: libc::in6_pktinfo = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                    ifindex = pi.ipi6_ifindex;
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        let Some(from) = from_sockaddr(&ss) else {
            return Ok(None);
        };
        Ok(Some(Received {
            len: n as usize,
            from,
            ifindex,
        }))
    }
}

/// Wait until one of `fds` is readable or `timeout` passes; the readable ones.
pub(crate) fn wait_any(fds: &[i32], timeout: Duration) -> Vec<usize> {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: a valid array of pollfd.
    let rc = unsafe { libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, ms) };
    if rc <= 0 {
        return Vec::new();
    }
    p.iter()
        .enumerate()
        .filter(|(_, x)| x.revents != 0)
        .map(|(i, _)| i)
        .collect()
}

/// The time left until `deadline` (zero when past).
pub(crate) fn left(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now())
}

/// The UDP payload that makes an IP packet of `mtu` bytes.
pub(crate) fn payload_for_mtu(mtu: u32, v6: bool) -> usize {
    let overhead = if v6 { 48 } else { 28 };
    (mtu as usize).saturating_sub(overhead).max(HEADER)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_datagram_reads_back_and_strangers_are_refused() {
        let d = Datagram {
            kind: Kind::Reply,
            token: 7,
            plan: 0xabcdef,
            probe: 42,
            seq: 3,
            arrived_on: "r1".into(),
            reply_dev: "eth0".into(),
        };
        let mut b = vec![0u8; 200];
        d.encode(&mut b);
        assert_eq!(Datagram::decode(&b), Some(d));
        assert_eq!(Datagram::decode(&b[..HEADER - 1]), None);
        b[0] = b'X';
        assert_eq!(Datagram::decode(&b), None);
        assert_eq!(payload_for_mtu(1500, false), 1472);
        assert_eq!(payload_for_mtu(9000, true), 8952);
        assert_eq!(plan_word("00000000000000ff"), 255);
    }
}
