//! ARP probe over an `AF_PACKET` socket.
use crate::error::{Error, ErrorKind, Result};
use crate::model::HwAddr;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// The longest ARP probe (one hour): `Instant + timeout` must not overflow.
const MAX_TIMEOUT: Duration = Duration::from_secs(3600);
/// The most requests one ARP probe sends.
const MAX_COUNT: u32 = 1000;

/// How to probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ArpProbeOptions {
    /// Number of requests to send (1 to 1000). They are spread evenly over
    /// `timeout`, the first one immediately.
    pub count: u32,
    /// How long to send and listen in total (more than zero, at most an hour).
    pub timeout: Duration,
    /// Sender IPv4 address; by default the device's primary IPv4 address.
    pub source: Option<Ipv4Addr>,
}

impl ArpProbeOptions {
    /// `count` requests spread over `timeout`, from the device's own address.
    pub fn new(count: u32, timeout: Duration) -> ArpProbeOptions {
        ArpProbeOptions {
            count,
            timeout,
            source: None,
        }
    }

    /// The same, sent from this IPv4 address.
    pub fn with_source(mut self, source: Ipv4Addr) -> ArpProbeOptions {
        self.source = Some(source);
        self
    }
}

impl Default for ArpProbeOptions {
    /// Three requests over two seconds from the device's own address.
    fn default() -> Self {
        ArpProbeOptions {
            count: 3,
            timeout: Duration::from_secs(2),
            source: None,
        }
    }
}

/// One MAC address that answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ArpReply {
    /// The sender hardware address in the ARP reply.
    pub mac: HwAddr,
    /// The sender IP address in the reply (the probed target).
    pub sender_ip: Ipv4Addr,
    /// How many replies came from this MAC.
    pub count: u32,
}

/// What a probe saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct ArpProbeResult {
    /// Requests sent.
    pub requests_sent: u32,
    /// Distinct replying MACs, in the order they first answered.
    pub replies: Vec<ArpReply>,
}

impl ArpProbeResult {
    /// True when more than one MAC answered for the target (ARP flux).
    pub fn is_flux(&self) -> bool {
        self.replies.len() > 1
    }
}

const ARP_LEN: usize = 28;
const ARPOP_REQUEST: u16 = 1;
const ARPOP_REPLY: u16 = 2;
const ETH_ALEN: usize = 6;
/// `PACKET_OUTGOING` (linux/if_packet.h): a frame this host sent.
const PACKET_OUTGOING: u8 = 4;

/// Send ARP requests for `target` out of `dev` and collect every distinct MAC
/// that replies within `opts.timeout`.
///
/// Works in the calling thread's network namespace and needs `CAP_NET_RAW`.
/// Replies count when their sender IP is `target` and their target IP is our
/// source address. The device must be an Ethernet-like device that is up.
pub fn probe_arp(dev: &str, target: Ipv4Addr, opts: ArpProbeOptions) -> Result<ArpProbeResult> {
    if opts.count == 0 {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            "ARP probe count must be at least 1",
        ));
    }
    if opts.timeout.is_zero() {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            "ARP probe timeout must be greater than zero",
        ));
    }
    if opts.timeout > MAX_TIMEOUT {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!(
                "ARP probe timeout {:?} is longer than {} s",
                opts.timeout,
                MAX_TIMEOUT.as_secs()
            ),
        ));
    }
    if opts.count > MAX_COUNT {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!(
                "ARP probe count {} is more than {MAX_COUNT} requests (a probe, not a flood)",
                opts.count
            ),
        ));
    }
    let ifr_name = ifname_bytes(dev)?;
    let ctl = socket(libc::AF_INET, libc::SOCK_DGRAM, 0)
        .map_err(|e| Error::io(e, format!("opening a control socket for {dev}")))?;
    let ifindex = ifindex(&ctl, &ifr_name, dev)?;
    let mac = hw_addr(&ctl, &ifr_name, dev)?;
    let source = match opts.source {
        Some(s) => s,
        None => primary_ipv4(&ctl, &ifr_name, dev)?,
    };
    drop(ctl);

    let proto = (libc::ETH_P_ARP as u16).to_be();
    let sock = socket(libc::AF_PACKET, libc::SOCK_DGRAM, i32::from(proto))
        .map_err(|e| Error::io(e, format!("opening an ARP packet socket on {dev}")))?;
    let mut sll = sockaddr_ll(ifindex, proto);
    // SAFETY: sll is a valid sockaddr_ll and the length matches it.
    let rc = unsafe {
        libc::bind(
            sock.as_raw_fd(),
            std::ptr::addr_of!(sll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(Error::io(
            std::io::Error::last_os_error(),
            format!("binding an ARP packet socket to {dev}"),
        ));
    }

    let request = build_request(&mac, source, target);
    sll.sll_halen = ETH_ALEN as u8;
    sll.sll_addr[..ETH_ALEN].copy_from_slice(&[0xff; ETH_ALEN]);

    let start = Instant::now();
    let deadline = start + opts.timeout;
    let interval = opts.timeout / opts.count;
    let mut sent = 0u32;
    let mut replies: Vec<ArpReply> = Vec::new();
    loop {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        if sent < opts.count && now >= start + interval * sent {
            send(&sock, &request, &sll).map_err(|e| {
                Error::io(
                    e,
                    format!("sending an ARP request for {target} on {dev} (is {dev} up?)"),
                )
            })?;
            sent += 1;
            continue;
        }
        let wake = if sent < opts.count {
            (start + interval * sent).min(deadline)
        } else {
            deadline
        };
        if !wait_readable(&sock, wake.saturating_duration_since(now))
            .map_err(|e| Error::io(e, format!("waiting for ARP replies on {dev}")))?
        {
            continue;
        }
        drain(&sock, source, target, &mut replies)
            .map_err(|e| Error::io(e, format!("receiving ARP replies on {dev}")))?;
    }
    Ok(ArpProbeResult {
        requests_sent: sent,
        replies,
    })
}

/// Announce `address` from `dev`: gratuitous ARP requests (sender and target
/// IP both `address`, sender MAC `dev`'s own), broadcast, `count` of them.
///
/// A peer that already holds a neighbour entry for `address` takes the MAC of
/// the announcement at once (Linux `arp_process` overrides an entry for a
/// gratuitous ARP even within its lock time), so a peer that learned another
/// NIC's MAC during ARP flux heals without waiting for its entry to age out.
/// Peers with no entry do not create one (unless their `arp_accept` is set).
/// Works in the calling thread's network namespace and needs `CAP_NET_RAW`.
pub fn announce(dev: &str, address: Ipv4Addr, count: u32) -> Result<()> {
    let ifr_name = ifname_bytes(dev)?;
    let ctl = socket(libc::AF_INET, libc::SOCK_DGRAM, 0)
        .map_err(|e| Error::io(e, format!("opening a control socket for {dev}")))?;
    let ifindex = ifindex(&ctl, &ifr_name, dev)?;
    let mac = hw_addr(&ctl, &ifr_name, dev)?;
    drop(ctl);
    let proto = (libc::ETH_P_ARP as u16).to_be();
    let sock = socket(libc::AF_PACKET, libc::SOCK_DGRAM, i32::from(proto))
        .map_err(|e| Error::io(e, format!("opening an ARP packet socket on {dev}")))?;
    let mut sll = sockaddr_ll(ifindex, proto);
    sll.sll_halen = ETH_ALEN as u8;
    sll.sll_addr[..ETH_ALEN].copy_from_slice(&[0xff; ETH_ALEN]);
    let garp = build_request(&mac, address, address);
    for _ in 0..count.clamp(1, MAX_COUNT) {
        send(&sock, &garp, &sll).map_err(|e| {
            Error::io(
                e,
                format!("announcing {address} on {dev} (gratuitous ARP; is {dev} up?)"),
            )
        })?;
    }
    Ok(())
}

fn ifname_bytes(dev: &str) -> Result<[libc::c_char; libc::IFNAMSIZ]> {
    let b = dev.as_bytes();
    if b.is_empty() || b.len() >= libc::IFNAMSIZ || b.contains(&0) || b.contains(&b'/') {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("{dev:?} is not a valid interface name"),
        ));
    }
    let mut out = [0 as libc::c_char; libc::IFNAMSIZ];
    for (o, c) in out.iter_mut().zip(b) {
        *o = *c as libc::c_char;
    }
    Ok(out)
}

fn socket(domain: i32, ty: i32, proto: i32) -> std::io::Result<OwnedFd> {
    // SAFETY: plain socket(2) call; the fd is owned right away.
    let fd = unsafe { libc::socket(domain, ty | libc::SOCK_CLOEXEC, proto) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn ifreq(name: &[libc::c_char; libc::IFNAMSIZ]) -> libc::ifreq {
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut r: libc::ifreq = unsafe { std::mem::zeroed() };
    r.ifr_name = *name;
    r
}

fn ioctl(ctl: &OwnedFd, req: libc::c_ulong, r: &mut libc::ifreq) -> std::io::Result<()> {
    // SAFETY: the request numbers used here read or fill an ifreq we own.
    let rc = unsafe { libc::ioctl(ctl.as_raw_fd(), req as _, r as *mut libc::ifreq) };
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

fn ifindex(ctl: &OwnedFd, name: &[libc::c_char; libc::IFNAMSIZ], dev: &str) -> Result<i32> {
    let mut r = ifreq(name);
    ioctl(ctl, libc::SIOCGIFINDEX, &mut r)
        .map_err(|e| no_such_device(e, dev, "reading the index"))?;
    // SAFETY: SIOCGIFINDEX filled the ifindex member.
    Ok(unsafe { r.ifr_ifru.ifru_ifindex })
}

fn hw_addr(ctl: &OwnedFd, name: &[libc::c_char; libc::IFNAMSIZ], dev: &str) -> Result<[u8; 6]> {
    let mut r = ifreq(name);
    ioctl(ctl, libc::SIOCGIFHWADDR, &mut r)
        .map_err(|e| no_such_device(e, dev, "reading the hardware address"))?;
    // SAFETY: SIOCGIFHWADDR filled the hwaddr member.
    let sa = unsafe { r.ifr_ifru.ifru_hwaddr };
    if sa.sa_family != libc::ARPHRD_ETHER {
        return Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "{dev} is not an Ethernet device (hardware type {}); ARP probing needs one",
                sa.sa_family
            ),
        ));
    }
    let mut mac = [0u8; 6];
    for (m, c) in mac.iter_mut().zip(sa.sa_data.iter()) {
        *m = *c as u8;
    }
    Ok(mac)
}

fn primary_ipv4(
    ctl: &OwnedFd,
    name: &[libc::c_char; libc::IFNAMSIZ],
    dev: &str,
) -> Result<Ipv4Addr> {
    let mut r = ifreq(name);
    match ioctl(ctl, libc::SIOCGIFADDR, &mut r) {
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
    Ok(Ipv4Addr::new(
        d[2] as u8, d[3] as u8, d[4] as u8, d[5] as u8,
    ))
}

fn sockaddr_ll(ifindex: i32, proto_be: u16) -> libc::sockaddr_ll {
    // SAFETY: sockaddr_ll is plain old data; all-zero is a valid value.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = proto_be;
    sll.sll_ifindex = ifindex;
    sll
}

/// An Ethernet/IPv4 ARP request (the link layer header is added by the kernel).
fn build_request(mac: &[u8; 6], source: Ipv4Addr, target: Ipv4Addr) -> [u8; ARP_LEN] {
    let mut p = [0u8; ARP_LEN];
    p[0..2].copy_from_slice(&1u16.to_be_bytes()); // hardware type: Ethernet
    p[2..4].copy_from_slice(&0x0800u16.to_be_bytes()); // protocol: IPv4
    p[4] = ETH_ALEN as u8;
    p[5] = 4;
    p[6..8].copy_from_slice(&ARPOP_REQUEST.to_be_bytes());
    p[8..14].copy_from_slice(mac);
    p[14..18].copy_from_slice(&source.octets());
    // target hardware address stays zero
    p[24..28].copy_from_slice(&target.octets());
    p
}

/// A reply's (sender MAC, sender IP, target IP), or `None` for anything else.
fn parse_reply(p: &[u8]) -> Option<([u8; 6], Ipv4Addr, Ipv4Addr)> {
    if p.len() < ARP_LEN
        || p[0..2] != 1u16.to_be_bytes()
        || p[2..4] != 0x0800u16.to_be_bytes()
        || p[4] != ETH_ALEN as u8
        || p[5] != 4
        || p[6..8] != ARPOP_REPLY.to_be_bytes()
    {
        return None;
    }
    let mut mac = [0u8; 6];
    mac.copy_from_slice(&p[8..14]);
    let spa = Ipv4Addr::new(p[14], p[15], p[16], p[17]);
    let tpa = Ipv4Addr::new(p[24], p[25], p[26], p[27]);
    Some((mac, spa, tpa))
}

fn send(sock: &OwnedFd, pkt: &[u8], to: &libc::sockaddr_ll) -> std::io::Result<()> {
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
fn wait_readable(sock: &OwnedFd, d: Duration) -> std::io::Result<bool> {
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

/// Read every queued frame without blocking, recording matching replies.
fn drain(
    sock: &OwnedFd,
    source: Ipv4Addr,
    target: Ipv4Addr,
    replies: &mut Vec<ArpReply>,
) -> std::io::Result<()> {
    let mut buf = [0u8; 256];
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
                std::io::ErrorKind::WouldBlock => Ok(()),
                std::io::ErrorKind::Interrupted => continue,
                _ => Err(e),
            };
        }
        if from.sll_pkttype == PACKET_OUTGOING {
            continue;
        }
        let n = usize::try_from(n).unwrap_or(0).min(buf.len());
        let Some((mac, spa, tpa)) = parse_reply(&buf[..n]) else {
            continue;
        };
        if spa != target || tpa != source {
            continue;
        }
        let mac = HwAddr(mac.to_vec());
        match replies.iter_mut().find(|r| r.mac == mac) {
            Some(r) => r.count += 1,
            None => replies.push(ArpReply {
                mac,
                sender_ip: spa,
                count: 1,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_layout_and_reply_parsing() {
        let mac = [2, 0, 0, 0, 0, 1];
        let src = Ipv4Addr::new(198, 18, 0, 100);
        let dst = Ipv4Addr::new(198, 18, 0, 11);
        let req = build_request(&mac, src, dst);
        assert_eq!(&req[..8], &[0, 1, 8, 0, 6, 4, 0, 1]);
        assert_eq!(&req[8..14], &mac);
        assert_eq!(&req[14..18], &[198, 18, 0, 100]);
        assert_eq!(&req[18..24], &[0; 6]);
        assert_eq!(&req[24..28], &[198, 18, 0, 11]);
        // A request is not a reply.
        assert_eq!(parse_reply(&req), None);
        // Turn it into the reply the target would send.
        let mut rep = req;
        rep[7] = 2;
        rep[8..14].copy_from_slice(&[2, 0, 0, 0, 0, 0xaa]);
        rep[14..18].copy_from_slice(&dst.octets());
        rep[18..24].copy_from_slice(&mac);
        rep[24..28].copy_from_slice(&src.octets());
        assert_eq!(parse_reply(&rep), Some(([2, 0, 0, 0, 0, 0xaa], dst, src)));
        assert_eq!(parse_reply(&rep[..27]), None);
    }

    #[test]
    fn bad_arguments() {
        let t = Ipv4Addr::new(198, 18, 0, 1);
        let o = ArpProbeOptions::default();
        assert_eq!(
            probe_arp("", t, o).unwrap_err().kind(),
            ErrorKind::InvalidInput
        );
        assert_eq!(
            probe_arp("a-very-long-interface-name", t, o)
                .unwrap_err()
                .kind(),
            ErrorKind::InvalidInput
        );
        let zero = ArpProbeOptions { count: 0, ..o };
        assert_eq!(
            probe_arp("lo", t, zero).unwrap_err().kind(),
            ErrorKind::InvalidInput
        );
        // Values that would overflow the deadline or flood the link are refused
        // before any socket is opened (the device need not exist).
        for bad in [
            ArpProbeOptions::new(3, Duration::MAX),
            ArpProbeOptions::new(3, MAX_TIMEOUT + Duration::from_nanos(1)),
            ArpProbeOptions::new(MAX_COUNT + 1, Duration::from_secs(2)),
            ArpProbeOptions::new(u32::MAX, Duration::from_secs(2)),
        ] {
            let e = probe_arp("rnt-absent0", t, bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{bad:?}: {e}");
            assert!(e.to_string().contains("ARP probe"), "{e}");
        }
    }
}
