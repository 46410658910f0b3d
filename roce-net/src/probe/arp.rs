//! ARP probe over an `AF_PACKET` socket.
use super::packet::{
    bind, check_probe, hw_addr, ifindex, ifname_bytes, packet_socket, primary_ipv4, sockaddr_ll,
    socket, solicit, SolicitError, ETH_ALEN,
};
use crate::error::{Error, Result};
use crate::model::HwAddr;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;
use std::time::Duration;

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

/// Send ARP requests for `target` out of `dev` and collect every distinct MAC
/// that replies within `opts.timeout`.
///
/// Works in the calling thread's network namespace and needs `CAP_NET_RAW`.
/// Replies count when their sender IP is `target` and their target IP is our
/// source address. The device must be an Ethernet-like device that is up.
pub fn probe_arp(dev: &str, target: Ipv4Addr, opts: ArpProbeOptions) -> Result<ArpProbeResult> {
    check_probe("ARP probe", opts.count, opts.timeout)?;
    let ifr_name = ifname_bytes(dev)?;
    let ctl = socket(libc::AF_INET, libc::SOCK_DGRAM, 0)
        .map_err(|e| Error::io(e, format!("opening a control socket for {dev}")))?;
    let ifindex = ifindex(&ctl, &ifr_name, dev)?;
    let mac = hw_addr(&ctl, &ifr_name, dev, "ARP probing")?;
    let source = match opts.source {
        Some(s) => s,
        None => primary_ipv4(&ctl, &ifr_name, dev)?,
    };
    drop(ctl);

    let proto = (libc::ETH_P_ARP as u16).to_be();
    let sock = packet_socket(proto)
        .map_err(|e| Error::io(e, format!("opening an ARP packet socket on {dev}")))?;
    let sll = sockaddr_ll(ifindex, proto, [0xff; ETH_ALEN]);
    bind(&sock, &sll)
        .map_err(|e| Error::io(e, format!("binding an ARP packet socket to {dev}")))?;
    let request = build_request(&mac, source, target);

    let mut replies: Vec<ArpReply> = Vec::new();
    let sent = solicit(&sock, &request, &sll, opts.count, opts.timeout, |p, _| {
        record(p, source, target, &mut replies)
    })
    .map_err(|e| match e {
        SolicitError::Send(e) => Error::io(
            e,
            format!("sending an ARP request for {target} on {dev} (is {dev} up?)"),
        ),
        SolicitError::Receive(e) => Error::io(e, format!("receiving ARP replies on {dev}")),
    })?;
    Ok(ArpProbeResult {
        requests_sent: sent,
        replies,
    })
}

/// An Ethernet/IPv4 ARP request (the link layer header is added by the kernel).
pub(super) fn build_request(mac: &[u8; 6], source: Ipv4Addr, target: Ipv4Addr) -> [u8; ARP_LEN] {
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

/// Record one received frame if it is a reply from `target` to `source`.
fn record(p: &[u8], source: Ipv4Addr, target: Ipv4Addr, replies: &mut Vec<ArpReply>) {
    let Some((mac, spa, tpa)) = parse_reply(p) else {
        return;
    };
    if spa != target || tpa != source {
        return;
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

#[cfg(test)]
mod tests {
    use super::super::packet::{MAX_COUNT, MAX_TIMEOUT};
    use super::*;
    use crate::error::ErrorKind;

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
