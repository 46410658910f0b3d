//! IPv6 neighbour discovery over an `AF_PACKET` socket: the ND probe (who
//! answers a neighbour solicitation for an address, from which MAC; IPv6's
//! `probe arp`), and the packets (RFC 4861, sections 4.3 and 4.4) it and a
//! verified apply send: a solicitation, an unsolicited advertisement, and
//! reading an advertisement. Whole IPv6 packets (header, ICMPv6 message,
//! link-layer address option) for a datagram packet socket, which adds only
//! the Ethernet header.

use super::packet::{
    bind, check_probe, hw_addr, ifindex, ifname_bytes, packet_socket, sockaddr_ll, solicit,
    SolicitError,
};
use crate::error::{Error, ErrorKind, Result};
use crate::model::HwAddr;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::net::Ipv6Addr;
use std::time::Duration;

/// How to probe for an IPv6 neighbour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct NdProbeOptions {
    /// Number of solicitations to send (1 to 1000), spread evenly over
    /// `timeout`, the first one immediately.
    pub count: u32,
    /// How long to send and listen in total (more than zero, at most an hour).
    pub timeout: Duration,
    /// Source IPv6 address; by default one of the device's own (a usable
    /// global one in the target's prefix, else any usable global one, else
    /// its link-local one).
    pub source: Option<Ipv6Addr>,
}

impl NdProbeOptions {
    /// `count` solicitations spread over `timeout`, from the device's own
    /// address.
    pub fn new(count: u32, timeout: Duration) -> NdProbeOptions {
        NdProbeOptions {
            count,
            timeout,
            source: None,
        }
    }

    /// The same, sent from this IPv6 address.
    pub fn with_source(mut self, source: Ipv6Addr) -> NdProbeOptions {
        self.source = Some(source);
        self
    }
}

impl Default for NdProbeOptions {
    /// Three solicitations over two seconds from the device's own address.
    fn default() -> Self {
        NdProbeOptions::new(3, Duration::from_secs(2))
    }
}

/// One MAC address that answered a neighbour solicitation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NdReply {
    /// The advertisement's target link-layer address (what a neighbour entry
    /// takes), or the frame's source MAC when it carries none.
    pub mac: HwAddr,
    /// The advertisement said its sender is a router (R flag).
    pub router: bool,
    /// How many advertisements came with this MAC.
    pub count: u32,
}

/// What an ND probe saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct NdProbeResult {
    /// The source address the solicitations carried.
    pub source: Ipv6Addr,
    /// Solicitations sent.
    pub requests_sent: u32,
    /// Distinct MACs advertised for the target, in the order they first came.
    pub replies: Vec<NdReply>,
}

impl NdProbeResult {
    /// True when more than one MAC was advertised for the target: several
    /// NICs answer for one address.
    pub fn is_several(&self) -> bool {
        self.replies.len() > 1
    }
}

/// Send neighbour solicitations for `target` out of `dev` and collect every
/// distinct MAC advertised for it within `opts.timeout`, like `ndisc6
/// TARGET DEV`.
///
/// Works in the calling thread's network namespace and needs `CAP_NET_RAW`.
/// Every neighbour advertisement for `target` seen on `dev` counts (the
/// answers to this probe, and any unsolicited one meanwhile). The device must
/// be an Ethernet-like device that is up.
pub fn probe_nd(dev: &str, target: Ipv6Addr, opts: NdProbeOptions) -> Result<NdProbeResult> {
    check_probe("ND probe", opts.count, opts.timeout)?;
    if target.is_multicast() || target.is_unspecified() || target.is_loopback() {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("{target} is not a unicast address a neighbour could own"),
        ));
    }
    let name = ifname_bytes(dev)?;
    let proto = (libc::ETH_P_IPV6 as u16).to_be();
    let sock = packet_socket(proto)
        .map_err(|e| Error::io(e, format!("opening an IPv6 packet socket on {dev}")))?;
    let index = ifindex(&sock, &name, dev)?;
    let mac = hw_addr(&sock, &name, dev, "ND probing")?;
    let source = match opts.source {
        Some(s) => s,
        None => own_source(dev, target)?,
    };
    let to = sockaddr_ll(index, proto, multicast_mac(solicited_node(target)));
    bind(&sock, &to)
        .map_err(|e| Error::io(e, format!("binding an IPv6 packet socket to {dev}")))?;
    let request = solicitation(&mac, source, target);
    let mut replies: Vec<NdReply> = Vec::new();
    let sent = solicit(&sock, &request, &to, opts.count, opts.timeout, |p, from| {
        let Some(a) = parse_advertisement(p) else {
            return;
        };
        if a.target != target {
            return;
        }
        let mac = match a.lladdr {
            Some(m) => HwAddr(m.to_vec()),
            None => HwAddr(from.sll_addr[..usize::from(from.sll_halen).min(8)].to_vec()),
        };
        match replies.iter_mut().find(|r| r.mac == mac) {
            Some(r) => {
                r.count += 1;
                r.router |= a.router;
            }
            None => replies.push(NdReply {
                mac,
                router: a.router,
                count: 1,
            }),
        }
    })
    .map_err(|e| match e {
        SolicitError::Send(e) => Error::io(
            e,
            format!("sending a neighbour solicitation for {target} on {dev} (is {dev} up?)"),
        ),
        SolicitError::Receive(e) => {
            Error::io(e, format!("receiving neighbour advertisements on {dev}"))
        }
    })?;
    // The socket is bound to IPv6 and closed here: the probe's own time
    // already bounds the wait its close costs (docs/architecture.md,
    // decision 17).
    Ok(NdProbeResult {
        source,
        requests_sent: sent,
        replies,
    })
}

/// The most bytes of `/proc/thread-self/net/if_inet6` read (about 4000
/// addresses).
const MAX_IF_INET6: u64 = 256 * 1024;

/// One of `dev`'s own usable IPv6 addresses to send from: a global one whose
/// prefix holds `target`, else any global one, else the link-local one. From
/// `/proc/thread-self/net/if_inet6` (the calling thread's namespace; lines
/// like `fd000198001800000000000000000011 03 40 00 80 r1`: address, index,
/// prefix length, scope, flags, name).
fn own_source(dev: &str, target: Ipv6Addr) -> Result<Ipv6Addr> {
    let path = std::path::Path::new("/proc/thread-self/net/if_inet6");
    let text = crate::input::read_kernel_list(path, MAX_IF_INET6)
        .map_err(|e| Error::io(e, format!("reading {}", path.display())))?;
    let chosen = choose_source(&text, dev, target);
    chosen.ok_or_else(|| {
        Error::new(
            ErrorKind::InvalidInput,
            format!(
                "{dev} has no usable IPv6 address (`ip -6 addr show dev {dev}`); give the probe a source address"
            ),
        )
    })
}

/// [`own_source`]'s choice from the text of `if_inet6`.
fn choose_source(text: &str, dev: &str, target: Ipv6Addr) -> Option<Ipv6Addr> {
    // IFA_F_TENTATIVE and IFA_F_DADFAILED (linux/if_addr.h): not usable.
    const UNUSABLE: u32 = 0x40 | 0x08;
    let mut global = None;
    let mut link = None;
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [addr, _, plen, scope, flags, name] = f[..] else {
            continue;
        };
        let (Ok(a), Ok(plen), Ok(scope), Ok(flags)) = (
            u128::from_str_radix(addr, 16),
            u8::from_str_radix(plen, 16),
            u32::from_str_radix(scope, 16),
            u32::from_str_radix(flags, 16),
        ) else {
            continue;
        };
        if name != dev || addr.len() != 32 || flags & UNUSABLE != 0 {
            continue;
        }
        let a = Ipv6Addr::from(a);
        match scope {
            0 => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(plen.min(128)))
                    .unwrap_or(0);
                if u128::from(a) & mask == u128::from(target) & mask {
                    return Some(a);
                }
                global.get_or_insert(a);
            }
            0x20 => {
                link.get_or_insert(a);
            }
            _ => {}
        }
    }
    global.or(link)
}

/// ICMPv6 type of a neighbour solicitation.
const NEIGHBOR_SOLICITATION: u8 = 135;
/// ICMPv6 type of a neighbour advertisement.
const NEIGHBOR_ADVERTISEMENT: u8 = 136;
/// Option types: source and target link-layer address.
const OPT_SOURCE_LLADDR: u8 = 1;
const OPT_TARGET_LLADDR: u8 = 2;
/// IPv6's next-header number of ICMPv6.
const IPPROTO_ICMPV6: u8 = 58;
/// The IPv6 header's length.
const IPV6_HEADER: usize = 40;
/// A solicitation or advertisement with one link-layer address option.
const ND_MESSAGE: usize = 32;
/// The advertisement's flags (first byte of its 32-bit flags word).
const FLAG_ROUTER: u8 = 0x80;
const FLAG_SOLICITED: u8 = 0x40;
const FLAG_OVERRIDE: u8 = 0x20;

/// `ff02::1`, every node on the link: where unsolicited advertisements go.
pub(super) const ALL_NODES: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);

/// The Ethernet address of an IPv6 multicast group (RFC 2464, section 7):
/// `33:33` and the group's last four bytes.
pub(super) fn multicast_mac(group: Ipv6Addr) -> [u8; 6] {
    let o = group.octets();
    [0x33, 0x33, o[12], o[13], o[14], o[15]]
}

/// The solicited-node multicast group of `a` (RFC 4291, section 2.7.1):
/// `ff02::1:ff` and `a`'s last three bytes; where a solicitation goes.
pub(super) fn solicited_node(a: Ipv6Addr) -> Ipv6Addr {
    let o = a.octets();
    let mut g = [0u8; 16];
    g[0] = 0xff;
    g[1] = 0x02;
    g[11] = 0x01;
    g[12] = 0xff;
    g[13..].copy_from_slice(&o[13..]);
    Ipv6Addr::from(g)
}

/// What an advertisement says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Advertisement {
    /// The IPv6 source of the packet.
    pub source: Ipv6Addr,
    /// The address advertised.
    pub target: Ipv6Addr,
    /// The target link-layer address option, when present.
    pub lladdr: Option<[u8; 6]>,
    /// R: the sender is a router.
    pub router: bool,
    /// S: an answer to a solicitation.
    pub solicited: bool,
    /// O: it overrides an existing entry.
    pub overrides: bool,
}

/// An unsolicited neighbour advertisement of `target` from the NIC whose MAC
/// is `mac`, as the kernel's `ndisc_send_unsol_na` makes one: from `target`
/// to all nodes, override set, solicited clear, router set when the NIC
/// forwards IPv6 (a peer that holds the sender as a router and sees R clear
/// drops its routes through it, `rt6_clean_tohost`), with the target
/// link-layer address option. A peer that holds an entry for `target` takes
/// the MAC at once (`ndisc_recv_na`: override); a peer without one creates
/// none (unless its `accept_untracked_na` says so).
pub(super) fn unsolicited_advertisement(mac: &[u8; 6], target: Ipv6Addr, router: bool) -> Vec<u8> {
    let mut flags = FLAG_OVERRIDE;
    if router {
        flags |= FLAG_ROUTER;
    }
    let mut m = [0u8; ND_MESSAGE];
    m[0] = NEIGHBOR_ADVERTISEMENT;
    m[4] = flags;
    m[8..24].copy_from_slice(&target.octets());
    m[24] = OPT_TARGET_LLADDR;
    m[25] = 1; // in units of 8 bytes
    m[26..32].copy_from_slice(mac);
    packet(target, ALL_NODES, m)
}

/// A neighbour solicitation for `target` from `source` on the NIC whose MAC
/// is `mac`, to `target`'s solicited-node group, with the source link-layer
/// address option (so the owner can answer without asking back).
pub(super) fn solicitation(mac: &[u8; 6], source: Ipv6Addr, target: Ipv6Addr) -> Vec<u8> {
    let mut m = [0u8; ND_MESSAGE];
    m[0] = NEIGHBOR_SOLICITATION;
    m[8..24].copy_from_slice(&target.octets());
    m[24] = OPT_SOURCE_LLADDR;
    m[25] = 1;
    m[26..32].copy_from_slice(mac);
    packet(source, solicited_node(target), m)
}

/// The IPv6 packet carrying an ND message: hop limit 255 (a receiver drops
/// ND with any other, RFC 4861 section 7.1.2), the ICMPv6 checksum filled.
fn packet(source: Ipv6Addr, dest: Ipv6Addr, mut m: [u8; ND_MESSAGE]) -> Vec<u8> {
    let sum = checksum(source, dest, &m);
    m[2..4].copy_from_slice(&sum.to_be_bytes());
    let mut p = Vec::with_capacity(IPV6_HEADER + ND_MESSAGE);
    p.extend_from_slice(&[0x60, 0, 0, 0]); // version 6, no class or flow label
    p.extend_from_slice(&(ND_MESSAGE as u16).to_be_bytes());
    p.push(IPPROTO_ICMPV6);
    p.push(255);
    p.extend_from_slice(&source.octets());
    p.extend_from_slice(&dest.octets());
    p.extend_from_slice(&m);
    p
}

/// The ICMPv6 checksum (RFC 4443 section 2.3) over the pseudo-header (RFC 8200
/// section 8.1) and `msg`, whose checksum field must be zero.
fn checksum(source: Ipv6Addr, dest: Ipv6Addr, msg: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut add = |b: &[u8]| {
        for c in b.chunks(2) {
            let hi = u32::from(c[0]) << 8;
            let lo = c.get(1).copied().map_or(0, u32::from);
            sum += hi | lo;
        }
    };
    add(&source.octets());
    add(&dest.octets());
    add(&(msg.len() as u32).to_be_bytes());
    add(&[0, 0, 0, IPPROTO_ICMPV6]);
    add(msg);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Read a received IPv6 packet as a neighbour advertisement: `None` for
/// anything else, a short or malformed one, a hop limit other than 255, or a
/// wrong checksum.
pub(super) fn parse_advertisement(p: &[u8]) -> Option<Advertisement> {
    if p.len() < IPV6_HEADER + 24 || p[0] >> 4 != 6 || p[6] != IPPROTO_ICMPV6 || p[7] != 255 {
        return None;
    }
    let payload = usize::from(u16::from_be_bytes([p[4], p[5]]));
    let m = p.get(IPV6_HEADER..IPV6_HEADER.checked_add(payload)?)?;
    if m.len() < 24 || m[0] != NEIGHBOR_ADVERTISEMENT || m[1] != 0 {
        return None;
    }
    let addr =
        |b: &[u8]| -> Option<Ipv6Addr> { Some(Ipv6Addr::from(<[u8; 16]>::try_from(b).ok()?)) };
    let source = addr(&p[8..24])?;
    let dest = addr(&p[24..40])?;
    let mut zeroed = m.to_vec();
    zeroed[2] = 0;
    zeroed[3] = 0;
    if checksum(source, dest, &zeroed) != u16::from_be_bytes([m[2], m[3]]) {
        return None;
    }
    let mut lladdr = None;
    let mut opts = &m[24..];
    while opts.len() >= 8 {
        let len = usize::from(opts[1]) * 8;
        if len == 0 || len > opts.len() {
            break;
        }
        if opts[0] == OPT_TARGET_LLADDR && len == 8 {
            let mut mac = [0u8; 6];
            mac.copy_from_slice(&opts[2..8]);
            lladdr = Some(mac);
        }
        opts = &opts[len..];
    }
    Some(Advertisement {
        source,
        target: addr(&m[8..24])?,
        lladdr,
        router: m[4] & FLAG_ROUTER != 0,
        solicited: m[4] & FLAG_SOLICITED != 0,
        overrides: m[4] & FLAG_OVERRIDE != 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x11];

    /// The advertisement's bytes are the kernel's own: the unsolicited NA
    /// Linux 6.18 sent for fd00:198:18::11 on a veth with MAC
    /// 02:00:00:00:00:11 (`sysctl net.ipv6.conf.r1.ndisc_notify=1
    /// keep_addr_on_down=1; ip link set r1 down; ip link set r1 up`), read on
    /// the peer from a packet socket (IPv6 header onwards).
    #[test]
    fn an_unsolicited_advertisement_is_what_the_kernel_sends() {
        const CAPTURED: &str = "6000000000203afffd000198001800000000000000000011\
                                ff020000000000000000000000000001\
                                8800570b20000000fd000198001800000000000000000011\
                                0201020000000011";
        let t: Ipv6Addr = "fd00:198:18::11".parse().unwrap();
        let p = unsolicited_advertisement(&MAC, t, false);
        let hex: String = p.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, CAPTURED);
        let a = parse_advertisement(&p).unwrap();
        assert_eq!(
            a,
            Advertisement {
                source: t,
                target: t,
                lladdr: Some(MAC),
                router: false,
                solicited: false,
                overrides: true,
            }
        );
        assert!(
            parse_advertisement(&unsolicited_advertisement(&MAC, t, true))
                .unwrap()
                .router
        );
        // A flipped bit fails the checksum; a hop limit below 255 is not ND.
        let mut bad = p.clone();
        bad[50] ^= 1;
        assert_eq!(parse_advertisement(&bad), None);
        let mut hop = p.clone();
        hop[7] = 64;
        assert_eq!(parse_advertisement(&hop), None);
        assert_eq!(parse_advertisement(&p[..60]), None);
    }

    /// The source the probe picks by itself: a usable global address in
    /// the target's prefix, else another global one, else the link-local one;
    /// never a tentative or failed one, never another device's.
    #[test]
    fn the_probe_sends_from_the_devices_own_usable_address() {
        // cat /proc/net/if_inet6 (a NIC with a ULA in two prefixes, one
        // tentative, and its link-local address; another NIC)
        let text = "fd000198001800000000000000000099 03 40 00 c0       r1\n\
                    fd000198001900000000000000000011 03 40 00 80       r1\n\
                    fd000198001800000000000000000011 03 40 00 80       r1\n\
                    fe800000000000000000000000000011 03 40 20 80       r1\n\
                    fd000198001800000000000000000012 04 40 00 80       r2\n";
        let t = |s: &str| s.parse::<Ipv6Addr>().unwrap();
        let target = t("fd00:198:18::200");
        assert_eq!(
            choose_source(text, "r1", target),
            Some(t("fd00:198:18::11"))
        );
        assert_eq!(
            choose_source(text, "r1", t("fd00:198:20::1")),
            Some(t("fd00:198:19::11"))
        );
        let only_link = "fe800000000000000000000000000011 03 40 20 80       r1\n";
        assert_eq!(choose_source(only_link, "r1", target), Some(t("fe80::11")));
        assert_eq!(choose_source(text, "r3", target), None);
        assert_eq!(choose_source("garbage\n", "r1", target), None);
    }

    /// A solicitation goes to the target's solicited-node group (ff02::1:ff
    /// and its last 24 bits; `ip -6 maddr show` lists ff02::1:ff00:11 for
    /// fd00:198:18::11) and that group's Ethernet address.
    #[test]
    fn a_solicitation_goes_to_the_solicited_node_group() {
        let t: Ipv6Addr = "fd00:198:18::11".parse().unwrap();
        let s: Ipv6Addr = "fd00:198:18::200".parse().unwrap();
        let g = solicited_node(t);
        assert_eq!(g, "ff02::1:ff00:11".parse::<Ipv6Addr>().unwrap());
        assert_eq!(multicast_mac(g), [0x33, 0x33, 0xff, 0, 0, 0x11]);
        assert_eq!(multicast_mac(ALL_NODES), [0x33, 0x33, 0, 0, 0, 1]);
        let p = solicitation(&MAC, s, t);
        assert_eq!(&p[24..40], &g.octets());
        assert_eq!(p[40], 135);
        assert_eq!(&p[48..64], &t.octets());
        assert_eq!(&p[64..66], &[1, 1]);
        // Not an advertisement.
        assert_eq!(parse_advertisement(&p), None);
        // Its checksum is right: summing the whole message with its checksum
        // gives zero.
        assert_eq!(checksum(s, g, &p[40..]), 0);
    }
}
