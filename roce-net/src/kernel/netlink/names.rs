//! Interface names in netlink messages, kept byte-exact.
//!
//! netlink-packet-route decodes name attributes (`IFLA_IFNAME`, `IFA_LABEL`,
//! `FRA_IIFNAME`, ...) as UTF-8 and fails the whole message otherwise, and the
//! kernel allows any bytes but NUL, `/`, `:` and whitespace in a name: one such
//! link used to fail every snapshot. So before a message is decoded, its name
//! attributes are read raw and, where they are not UTF-8, overwritten in a copy
//! with `?` (same length, so the layout is unchanged); after decoding, the names
//! the model uses are set to the escaped form of the raw bytes
//! ([`ifname_from_kernel`]). Going out, a name that is not UTF-8 is sent as a raw
//! attribute with its exact bytes ([`name_attr`]).

use crate::model::{ifname_from_kernel, ifname_to_kernel};
use crate::Result;
use netlink_packet_core::DefaultNla;
use netlink_packet_route::address::AddressAttribute;
use netlink_packet_route::link::LinkAttribute;
use netlink_packet_route::rule::RuleAttribute;
use netlink_packet_route::RouteNetlinkMessage;
use std::borrow::Cow;

use libc::{IFA_LABEL, IFLA_ALT_IFNAME, IFLA_IFALIAS, IFLA_IFNAME, IFLA_PROP_LIST, IFLA_QDISC};
use libc::{IFLA_PARENT_DEV_BUS_NAME, IFLA_PARENT_DEV_NAME, IFLA_PHYS_PORT_NAME};
use libc::{RTM_NEWADDR, RTM_NEWLINK, RTM_NEWRULE};

/// Fixed header sizes: `ifinfomsg`, `ifaddrmsg`, `fib_rule_hdr` (struct
/// fib_rule_hdr in include/uapi/linux/fib_rules.h, not in libc: family,
/// dst_len, src_len, tos, table, res1, res2, action as u32).
const IFINFOMSG_LEN: usize = std::mem::size_of::<libc::ifinfomsg>();
const IFADDRMSG_LEN: usize = std::mem::size_of::<libc::ifaddrmsg>();
const FIB_RULE_HDR_LEN: usize = 12;

/// `FRA_IIFNAME`, `FRA_OIFNAME` (include/uapi/linux/fib_rules.h; not in libc).
pub(super) const FRA_IIFNAME: u16 = 3;
pub(super) const FRA_OIFNAME: u16 = 17;

/// The raw names of one message, for [`restore`].
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct RawNames {
    /// `IFLA_IFNAME`, `IFA_LABEL` or `FRA_IIFNAME`.
    first: Option<Vec<u8>>,
    /// `FRA_OIFNAME`.
    second: Option<Vec<u8>>,
}

/// The string attributes of a message type that may hold arbitrary bytes, at
/// the top level; `IFLA_PROP_LIST` is searched one level down for alt names.
fn string_attrs(mtype: u16) -> Option<(usize, &'static [u16])> {
    match mtype {
        RTM_NEWLINK => Some((
            IFINFOMSG_LEN,
            &[
                IFLA_IFNAME,
                IFLA_QDISC,
                IFLA_IFALIAS,
                IFLA_PHYS_PORT_NAME,
                IFLA_PARENT_DEV_NAME,
                IFLA_PARENT_DEV_BUS_NAME,
            ],
        )),
        RTM_NEWADDR => Some((IFADDRMSG_LEN, &[IFA_LABEL])),
        RTM_NEWRULE => Some((FIB_RULE_HDR_LEN, &[FRA_IIFNAME, FRA_OIFNAME])),
        _ => None,
    }
}

/// Call `f(type, value_range)` for each well-formed attribute in
/// `buf[start..end]` ([`super::attr`]; none when the message is shorter than
/// its header), the range within `buf`. Stops quietly at a malformed one: the
/// decoder reports it.
fn walk(buf: &[u8], start: usize, end: usize, mut f: impl FnMut(u16, std::ops::Range<usize>)) {
    let part = buf.get(start..end).unwrap_or_default();
    for a in super::attr::attributes(part).map_while(Result::ok) {
        let at = start + a.offset;
        f(a.kind, at..at + a.value.len());
    }
}

/// A string attribute's bytes without the trailing NUL(s).
fn strip_nul(v: &[u8]) -> &[u8] {
    let end = v.iter().position(|&b| b == 0).unwrap_or(v.len());
    &v[..end]
}

/// Read the name attributes of a message raw, and return the payload to decode:
/// the same bytes, or a copy whose non-UTF-8 string attributes became `?`s.
pub(super) fn prepare(mtype: u16, payload: &[u8]) -> (Cow<'_, [u8]>, RawNames) {
    let mut names = RawNames::default();
    let Some((hdr, kinds)) = string_attrs(mtype) else {
        return (Cow::Borrowed(payload), names);
    };
    let mut fix: Vec<std::ops::Range<usize>> = Vec::new();
    walk(payload, hdr, payload.len(), |kind, r| {
        if kinds.contains(&kind) {
            let v = &payload[r.clone()];
            match (mtype, kind) {
                (RTM_NEWRULE, FRA_OIFNAME) => names.second = Some(strip_nul(v).to_vec()),
                (RTM_NEWLINK, IFLA_IFNAME)
                | (RTM_NEWADDR, IFA_LABEL)
                | (RTM_NEWRULE, FRA_IIFNAME) => names.first = Some(strip_nul(v).to_vec()),
                _ => {}
            }
            if std::str::from_utf8(strip_nul(v)).is_err() {
                fix.push(r);
            }
        } else if mtype == RTM_NEWLINK && kind == IFLA_PROP_LIST {
            walk(payload, r.start, r.end, |k, r2| {
                if k == IFLA_ALT_IFNAME
                    && std::str::from_utf8(strip_nul(&payload[r2.clone()])).is_err()
                {
                    fix.push(r2);
                }
            });
        }
    });
    if fix.is_empty() {
        return (Cow::Borrowed(payload), names);
    }
    let mut copy = payload.to_vec();
    for r in fix {
        for b in &mut copy[r] {
            if *b >= 0x80 {
                *b = b'?';
            }
        }
    }
    (Cow::Owned(copy), names)
}

/// Set the decoded message's names to the escaped form of their raw bytes.
pub(super) fn restore(msg: &mut RouteNetlinkMessage, raw: &RawNames) {
    let esc = |v: &Option<Vec<u8>>| v.as_deref().map(ifname_from_kernel);
    match msg {
        RouteNetlinkMessage::NewLink(m) => {
            if let Some(n) = esc(&raw.first) {
                for a in &mut m.attributes {
                    if let LinkAttribute::IfName(s) = a {
                        *s = n.clone();
                    }
                }
            }
        }
        RouteNetlinkMessage::NewAddress(m) => {
            if let Some(n) = esc(&raw.first) {
                for a in &mut m.attributes {
                    if let AddressAttribute::Label(s) = a {
                        *s = n.clone();
                    }
                }
            }
        }
        RouteNetlinkMessage::NewRule(m) => {
            let (iif, oif) = (esc(&raw.first), esc(&raw.second));
            for a in &mut m.attributes {
                match a {
                    RuleAttribute::Iifname(s) => {
                        if let Some(n) = &iif {
                            *s = n.clone();
                        }
                    }
                    RuleAttribute::Oifname(s) => {
                        if let Some(n) = &oif {
                            *s = n.clone();
                        }
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

/// The exact bytes of a model name for the kernel, NUL-terminated.
pub(super) fn kernel_name(name: &str) -> Result<Vec<u8>> {
    let mut b = ifname_to_kernel(name)?;
    b.push(0);
    Ok(b)
}

/// A name attribute of `kind` holding the kernel bytes of `name`: as the raw
/// bytes, so names that are not UTF-8 go out exactly.
pub(super) fn name_attr(kind: u16, name: &str) -> Result<DefaultNla> {
    Ok(DefaultNla::new(kind, kernel_name(name)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_core::ParseableParametrized;

    fn nla(kind: u16, v: &[u8]) -> Vec<u8> {
        let len = 4 + v.len();
        let mut b = Vec::new();
        b.extend_from_slice(&(len as u16).to_ne_bytes());
        b.extend_from_slice(&kind.to_ne_bytes());
        b.extend_from_slice(v);
        while b.len() % 4 != 0 {
            b.push(0);
        }
        b
    }

    #[test]
    fn a_link_with_a_non_utf8_name_decodes_with_the_escaped_name() {
        let mut p = vec![0u8; IFINFOMSG_LEN];
        p[4..8].copy_from_slice(&7i32.to_ne_bytes());
        p.extend(nla(IFLA_IFNAME, b"r\xff\0"));
        p.extend(nla(IFLA_IFALIAS, b"\xfe\xfd\0"));
        let mut prop = nla(IFLA_ALT_IFNAME, b"alt\x80\0");
        prop = nla(IFLA_PROP_LIST | 0x8000, &prop);
        p.extend(prop);
        // The library alone refuses the message.
        assert!(RouteNetlinkMessage::parse_with_param(&p[..], RTM_NEWLINK).is_err());
        let (fixed, raw) = prepare(RTM_NEWLINK, &p);
        assert_eq!(raw.first.as_deref(), Some(&b"r\xff"[..]));
        let mut m = RouteNetlinkMessage::parse_with_param(&fixed[..], RTM_NEWLINK).unwrap();
        restore(&mut m, &raw);
        let RouteNetlinkMessage::NewLink(l) = m else {
            panic!("not a link")
        };
        assert!(l
            .attributes
            .iter()
            .any(|a| matches!(a, LinkAttribute::IfName(n) if n == "r\\xff")));
    }

    #[test]
    fn plain_messages_are_not_copied() {
        let mut p = vec![0u8; FIB_RULE_HDR_LEN];
        p.extend(nla(FRA_IIFNAME, b"eth0\0"));
        p.extend(nla(FRA_OIFNAME, b"a\\b\0"));
        let (fixed, raw) = prepare(RTM_NEWRULE, &p);
        assert!(matches!(fixed, Cow::Borrowed(_)));
        let mut m = RouteNetlinkMessage::parse_with_param(&fixed[..], RTM_NEWRULE).unwrap();
        restore(&mut m, &raw);
        let RouteNetlinkMessage::NewRule(r) = m else {
            panic!("not a rule")
        };
        assert!(r
            .attributes
            .iter()
            .any(|a| matches!(a, RuleAttribute::Oifname(n) if n == "a\\\\b")));
    }

    #[test]
    fn malformed_attributes_are_left_to_the_decoder() {
        let mut p = vec![0u8; IFADDRMSG_LEN];
        p.extend_from_slice(&[200, 0, 3, 0, b'x']);
        let (fixed, raw) = prepare(RTM_NEWADDR, &p);
        assert_eq!(&fixed[..], &p[..]);
        assert_eq!(raw, RawNames::default());
    }
}
