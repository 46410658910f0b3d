//! What the wire probes and the announcer share: `AF_PACKET` sockets, the
//! device ioctls that name a NIC's index, flags and MAC, and sending and
//! waiting on a packet socket. One copy of each, for `arp.rs`, `announce.rs`
//! and `nd.rs`.

use crate::error::{Error, ErrorKind, Result};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

pub(super) const ETH_ALEN: usize = 6;
/// `PACKET_OUTGOING` (linux/if_packet.h): a frame this host sent.
pub(super) const PACKET_OUTGOING: u8 = 4;

/// An interface name as `struct ifreq` holds it; an invalid name is refused.
pub(super) type IfName = [libc::c_char; libc::IFNAMSIZ];

/// A C `char` as the byte it holds, whatever the architecture's `char`
/// signedness.
fn byte(c: libc::c_char) -> u8 {
    u8::from_ne_bytes(c.to_ne_bytes())
}

pub(super) fn ifname_bytes(dev: &str) -> Result<IfName> {
    let b = dev.as_bytes();
    if b.is_empty() || b.len() >= libc::IFNAMSIZ || b.contains(&0) || b.contains(&b'/') {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("{dev:?} is not a valid interface name"),
        ));
    }
    // c_char is i8 on x86-64 and u8 on aarch64: the bytes go over unchanged
    // either way, without a cast that is a no-op on one of them.
    let mut out: IfName = [0; libc::IFNAMSIZ];
    for (o, c) in out.iter_mut().zip(b) {
        *o = libc::c_char::from_ne_bytes([*c]);
    }
    Ok(out)
}

/// `socket(2)` with `SOCK_CLOEXEC`, owned at once.
pub(super) fn socket(domain: i32, ty: i32, proto: i32) -> std::io::Result<OwnedFd> {
    // SAFETY: plain socket(2) call; the fd is owned right away.
    let fd = unsafe { libc::socket(domain, ty | libc::SOCK_CLOEXEC, proto) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A datagram packet socket that receives `proto` (network order; 0: nothing,
/// a socket that only sends).
pub(super) fn packet_socket(proto_be: u16) -> std::io::Result<OwnedFd> {
    socket(libc::AF_PACKET, libc::SOCK_DGRAM, i32::from(proto_be))
}

fn ifreq(name: &IfName) -> libc::ifreq {
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut r: libc::ifreq = unsafe { std::mem::zeroed() };
    r.ifr_name = *name;
    r
}

/// A device ioctl (`SIOCGIF*`) on any socket: the kernel answers them for
/// every socket family (`sock_do_ioctl` falls back to `dev_ioctl`), in the
/// socket's namespace.
fn ioctl(sock: &OwnedFd, req: libc::c_ulong, r: &mut libc::ifreq) -> std::io::Result<()> {
    // SAFETY: the request numbers used here read or fill an ifreq we own.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), req as _, r as *mut libc::ifreq) };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

fn no_such_device(e: std::io::Error, dev: &str, doing: &str) -> Error {
    if e.raw_os_error() == Some(libc::ENODEV) {
        Error::new(
            ErrorKind::NotFound,
            format!("interface {dev:?} does not exist in this network namespace; check `ip link`"),
        )
        .with_errno(libc::ENODEV)
    } else {
        Error::io(e, format!("{doing} of {dev}"))
    }
}

/// The interface's index (`SIOCGIFINDEX`).
pub(super) fn ifindex(sock: &OwnedFd, name: &IfName, dev: &str) -> Result<i32> {
    let mut r = ifreq(name);
    ioctl(sock, libc::SIOCGIFINDEX, &mut r)
        .map_err(|e| no_such_device(e, dev, "reading the index"))?;
    // SAFETY: SIOCGIFINDEX filled the ifindex member.
    Ok(unsafe { r.ifr_ifru.ifru_ifindex })
}

/// The interface's flags (`SIOCGIFFLAGS`: `IFF_UP`, `IFF_NOARP`, ...).
pub(super) fn flags(sock: &OwnedFd, name: &IfName, dev: &str) -> Result<u32> {
    let mut r = ifreq(name);
    ioctl(sock, libc::SIOCGIFFLAGS, &mut r)
        .map_err(|e| no_such_device(e, dev, "reading the flags"))?;
    // SAFETY: SIOCGIFFLAGS filled the flags member (a short of flag bits).
    Ok(u32::from(unsafe { r.ifr_ifru.ifru_flags } as u16))
}

/// The interface's MAC (`SIOCGIFHWADDR`), `Unsupported` unless it is an
/// Ethernet device; `needs` says what needs one ("ARP probing").
pub(super) fn hw_addr(sock: &OwnedFd, name: &IfName, dev: &str, needs: &str) -> Result<[u8; 6]> {
    let mut r = ifreq(name);
    ioctl(sock, libc::SIOCGIFHWADDR, &mut r)
        .map_err(|e| no_such_device(e, dev, "reading the hardware address"))?;
    // SAFETY: SIOCGIFHWADDR filled the hwaddr member.
    let sa = unsafe { r.ifr_ifru.ifru_hwaddr };
    if sa.sa_family != libc::ARPHRD_ETHER {
        return Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "{dev} is not an Ethernet device (hardware type {}); {needs} needs one",
                sa.sa_family
            ),
        ));
    }
    let mut mac = [0u8; 6];
    for (m, c) in mac.iter_mut().zip(sa.sa_data.iter()) {
        *m = byte(*c);
    }
    Ok(mac)
}

/// The interface's primary IPv4 address (`SIOCGIFADDR`).
pub(super) fn primary_ipv4(sock: &OwnedFd, name: &IfName, dev: &str) -> Result<std::net::Ipv4Addr> {
    let mut r = ifreq(name);
    match ioctl(sock, libc::SIOCGIFADDR, &mut r) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EADDRNOTAVAIL) => {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!("{dev} has no IPv4 address; give the probe a source address"),
            ))
        }
        Err(e) => return Err(no_such_device(e, dev, "reading the IPv4 address")),
    }
    // SAFETY: SIOCGIFADDR filled the addr member (an AF_INET sockaddr: two bytes
    // of port, then the address in network order).
    let sa = unsafe { r.ifr_ifru.ifru_addr };
    let d = sa.sa_data;
    Ok(std::net::Ipv4Addr::new(
        byte(d[2]),
        byte(d[3]),
        byte(d[4]),
        byte(d[5]),
    ))
}

/// Where a frame goes: out of `ifindex`, with EtherType `proto_be` (network
/// order), to `dst` (the link-layer destination).
pub(super) fn sockaddr_ll(ifindex: i32, proto_be: u16, dst: [u8; ETH_ALEN]) -> libc::sockaddr_ll {
    // SAFETY: sockaddr_ll is plain old data; all-zero is a valid value.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = proto_be;
    sll.sll_ifindex = ifindex;
    sll.sll_halen = ETH_ALEN as u8;
    sll.sll_addr[..ETH_ALEN].copy_from_slice(&dst);
    sll
}

/// Bind a packet socket to one interface (it then receives that interface's
/// frames of its protocol only).
pub(super) fn bind(sock: &OwnedFd, sll: &libc::sockaddr_ll) -> std::io::Result<()> {
    // SAFETY: sll is a valid sockaddr_ll and the length matches it.
    let rc = unsafe {
        libc::bind(
            sock.as_raw_fd(),
            std::ptr::addr_of!(*sll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Send one frame's payload (the kernel adds the link-layer header).
pub(super) fn send(sock: &OwnedFd, pkt: &[u8], to: &libc::sockaddr_ll) -> std::io::Result<()> {
    loop {
        // SAFETY: pkt and to are valid for the lengths given.
        let rc = unsafe {
            libc::sendto(
                sock.as_raw_fd(),
                pkt.as_ptr().cast(),
                pkt.len(),
                0,
                std::ptr::addr_of!(*to).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if rc >= 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Wait up to `d` for the socket to become readable.
pub(super) fn wait_readable(sock: &OwnedFd, d: Duration) -> std::io::Result<bool> {
    let mut pfd = libc::pollfd {
        fd: sock.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // Round up so a sub-millisecond remainder does not spin.
    let ms = d.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
    // SAFETY: one valid pollfd.
    let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
    if rc < 0 {
        let e = std::io::Error::last_os_error();
        if e.kind() == std::io::ErrorKind::Interrupted {
            return Ok(false);
        }
        return Err(e);
    }
    Ok(rc > 0)
}

/// One queued frame without blocking: its length and the sender's link-layer
/// address record, `None` when none is queued.
pub(super) fn recv(
    sock: &OwnedFd,
    buf: &mut [u8],
) -> std::io::Result<Option<(usize, libc::sockaddr_ll)>> {
    loop {
        // SAFETY: sockaddr_ll is plain old data.
        let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        // SAFETY: buf and from are valid for the lengths given.
        let n = unsafe {
            libc::recvfrom(
                sock.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT,
                std::ptr::addr_of_mut!(from).cast(),
                &mut len,
            )
        };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            return match e.kind() {
                std::io::ErrorKind::WouldBlock => Ok(None),
                std::io::ErrorKind::Interrupted => continue,
                _ => Err(e),
            };
        }
        let n = usize::try_from(n).unwrap_or(0).min(buf.len());
        return Ok(Some((n, from)));
    }
}

/// The longest neighbour probe (one hour): `Instant + timeout` must not overflow.
pub(super) const MAX_TIMEOUT: Duration = Duration::from_secs(3600);
/// The most requests one neighbour probe sends.
pub(super) const MAX_COUNT: u32 = 1000;

/// Refuse a probe's `count` and `timeout` before anything is opened; `what`
/// names the probe ("ARP probe").
pub(super) fn check_probe(what: &str, count: u32, timeout: Duration) -> Result<()> {
    let refuse = |m: String| Err(Error::new(ErrorKind::InvalidInput, m));
    if count == 0 {
        return refuse(format!("{what} count must be at least 1"));
    }
    if timeout.is_zero() {
        return refuse(format!("{what} timeout must be greater than zero"));
    }
    if timeout > MAX_TIMEOUT {
        return refuse(format!(
            "{what} timeout {timeout:?} is longer than {} s",
            MAX_TIMEOUT.as_secs()
        ));
    }
    if count > MAX_COUNT {
        return refuse(format!(
            "{what} count {count} is more than {MAX_COUNT} requests (a probe, not a flood)"
        ));
    }
    Ok(())
}

/// Where a [`solicit`] failed.
pub(super) enum SolicitError {
    /// Sending a request.
    Send(std::io::Error),
    /// Waiting for or reading an answer.
    Receive(std::io::Error),
}

/// Send `request` to `to` `count` times spread evenly over `timeout` (the
/// first at once) and hand every frame received meanwhile that this host did
/// not send to `seen` (its bytes and sender). The requests actually sent.
pub(super) fn solicit(
    sock: &OwnedFd,
    request: &[u8],
    to: &libc::sockaddr_ll,
    count: u32,
    timeout: Duration,
    mut seen: impl FnMut(&[u8], &libc::sockaddr_ll),
) -> std::result::Result<u32, SolicitError> {
    let start = std::time::Instant::now();
    let deadline = start + timeout;
    let interval = timeout / count.max(1);
    let mut sent = 0u32;
    let mut buf = [0u8; 512];
    loop {
        let now = std::time::Instant::now();
        if now >= deadline {
            return Ok(sent);
        }
        if sent < count && now >= start + interval * sent {
            send(sock, request, to).map_err(SolicitError::Send)?;
            sent += 1;
            continue;
        }
        let wake = if sent < count {
            (start + interval * sent).min(deadline)
        } else {
            deadline
        };
        if !wait_readable(sock, wake.saturating_duration_since(now))
            .map_err(SolicitError::Receive)?
        {
            continue;
        }
        while let Some((n, from)) = recv(sock, &mut buf).map_err(SolicitError::Receive)? {
            if from.sll_pkttype != PACKET_OUTGOING {
                seen(&buf[..n], &from);
            }
        }
    }
}
