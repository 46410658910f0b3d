//! Policy rules: `ip rule show`, `ip rule add`, `ip rule del`.
//!
//! Rules are written with an explicit action (`FR_ACT_TO_TBL` for table lookups),
//! the protocol and the 32-bit `FRA_TABLE` attribute (docs/architecture.md, decision 6).

use super::names;
use super::{Families, Netlink};
use crate::error::{Error, ErrorKind, Result};
use crate::model::{Family, Rule, RuleAction as ModelAction};
use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL};
use netlink_packet_route::route::RouteProtocol;
use netlink_packet_route::rule::{RuleAction, RuleAttribute, RuleFlags, RuleMessage};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use std::net::IpAddr;

pub(super) fn to_rule(m: RuleMessage) -> Option<Rule> {
    let family = match m.header.family {
        AddressFamily::Inet => Family::Inet,
        AddressFamily::Inet6 => Family::Inet6,
        _ => return None,
    };
    let mut r = Rule::lookup(0, u32::from(m.header.table)).family(family);
    r.tos = m.header.tos;
    r.invert = m.header.flags.contains(RuleFlags::Invert);
    r.action = ModelAction::from_u8(u8::from(m.header.action));
    let net = |ip: IpAddr, len: u8| ipnet::IpNet::new(ip, len).ok();
    for a in m.attributes {
        match a {
            RuleAttribute::Priority(p) => r.priority = p,
            RuleAttribute::Source(ip) => r.src = net(ip, m.header.src_len),
            RuleAttribute::Destination(ip) => r.dst = net(ip, m.header.dst_len),
            RuleAttribute::Iifname(n) => r.iif = Some(n),
            RuleAttribute::Oifname(n) => r.oif = Some(n),
            RuleAttribute::FwMark(v) => r.fwmark = Some(v),
            RuleAttribute::FwMask(v) => r.fwmask = Some(v),
            RuleAttribute::Table(t) => r.table = t,
            RuleAttribute::Goto(g) => r.goto = Some(g),
            // The kernel reports "unset" as -1.
            RuleAttribute::SuppressPrefixLen(v) if v != u32::MAX => r.suppress_prefixlen = Some(v),
            RuleAttribute::Protocol(p) => r.protocol = u8::from(p),
            _ => {}
        }
    }
    Some(r)
}

/// `from 198.18.0.11 lookup 1000 pref 1000`, for error messages.
fn describe(r: &Rule) -> String {
    let mut s = String::new();
    if r.invert {
        s.push_str("not ");
    }
    match &r.src {
        Some(n) => s.push_str(&format!("from {n}")),
        None => s.push_str("from all"),
    }
    if let Some(d) = &r.dst {
        s.push_str(&format!(" to {d}"));
    }
    if let Some(m) = r.fwmark {
        s.push_str(&format!(" fwmark {m:#x}"));
        if let Some(k) = r.fwmask {
            s.push_str(&format!("/{k:#x}"));
        }
    }
    if let Some(i) = &r.iif {
        s.push_str(&format!(" iif {i}"));
    }
    if let Some(o) = &r.oif {
        s.push_str(&format!(" oif {o}"));
    }
    match r.action {
        ModelAction::ToTable => s.push_str(&format!(" lookup {}", r.table)),
        ModelAction::Goto => s.push_str(&format!(" goto {}", r.goto.unwrap_or(0))),
        a => s.push_str(&format!(" {a:?}").to_lowercase()),
    }
    s.push_str(&format!(" pref {} ({:?})", r.priority, r.family).to_lowercase());
    s
}

fn rule_msg(r: &Rule, what: &str) -> Result<RuleMessage> {
    let mut m = RuleMessage::default();
    m.header.family = match r.family {
        Family::Inet => AddressFamily::Inet,
        Family::Inet6 => AddressFamily::Inet6,
    };
    for n in [&r.src, &r.dst].into_iter().flatten() {
        if Family::of(&n.addr()) != r.family {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!("{what}: selector {n} is not of the rule's family"),
            ));
        }
    }
    if r.action == ModelAction::Other {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("{what}: the rule needs an action (lookup, goto, blackhole, ...)"),
        ));
    }
    m.header.tos = r.tos;
    m.header.action = RuleAction::from(r.action.as_u8());
    m.header.table = u8::try_from(r.table).unwrap_or(0);
    if r.invert {
        m.header.flags = RuleFlags::Invert;
    }
    m.attributes.push(RuleAttribute::Priority(r.priority));
    if let Some(n) = &r.src {
        m.header.src_len = n.prefix_len();
        m.attributes.push(RuleAttribute::Source(n.addr()));
    }
    if let Some(n) = &r.dst {
        m.header.dst_len = n.prefix_len();
        m.attributes.push(RuleAttribute::Destination(n.addr()));
    }
    if let Some(i) = &r.iif {
        m.attributes.push(RuleAttribute::Other(names::name_attr(
            names::FRA_IIFNAME,
            i,
        )?));
    }
    if let Some(o) = &r.oif {
        m.attributes.push(RuleAttribute::Other(names::name_attr(
            names::FRA_OIFNAME,
            o,
        )?));
    }
    if let Some(v) = r.fwmark {
        m.attributes.push(RuleAttribute::FwMark(v));
    }
    if let Some(v) = r.fwmask {
        m.attributes.push(RuleAttribute::FwMask(v));
    }
    if r.table != 0 {
        m.attributes.push(RuleAttribute::Table(r.table));
    }
    if let Some(g) = r.goto {
        m.attributes.push(RuleAttribute::Goto(g));
    }
    if let Some(v) = r.suppress_prefixlen {
        m.attributes.push(RuleAttribute::SuppressPrefixLen(v));
    }
    m.attributes
        .push(RuleAttribute::Protocol(RouteProtocol::from(r.protocol)));
    Ok(m)
}

impl Netlink {
    /// Every IPv4 and IPv6 policy rule (`ip rule show`, `ip -6 rule show`),
    /// in priority order, with protocol, fwmark/mask, iif/oif, goto,
    /// suppress_prefixlength and action.
    pub fn rules(&mut self) -> Result<Vec<Rule>> {
        self.rules_of(Families::Both)
    }

    /// The rules of the given families (`ip -4 rule show` for IPv4 only).
    pub(crate) fn rules_of(&mut self, families: Families) -> Result<Vec<Rule>> {
        let mut out = Vec::new();
        for &family in families.list() {
            let mut m = RuleMessage::default();
            m.header.family = family;
            let msg = RouteNetlinkMessage::GetRule(m);
            out.extend(self.dump_map(msg, "dumping rules", |r| match r {
                RouteNetlinkMessage::NewRule(rule) => to_rule(rule),
                _ => None,
            })?);
        }
        Ok(out)
    }

    /// Add a rule (`ip rule add ... pref P lookup T protocol N`); fails with
    /// `EEXIST` if an identical rule exists.
    pub fn rule_add(&mut self, r: &Rule) -> Result<()> {
        let what = format!("adding rule {}", describe(r));
        let m = rule_msg(r, &what)?;
        self.request(
            RouteNetlinkMessage::NewRule(m),
            NLM_F_CREATE | NLM_F_EXCL,
            &what,
        )?;
        Ok(())
    }

    /// Delete a rule (`ip rule del ...`), matching every selector given, the
    /// priority and (when not 0) the protocol.
    pub fn rule_del(&mut self, r: &Rule) -> Result<()> {
        let what = format!("deleting rule {}", describe(r));
        let m = rule_msg(r, &what)?;
        self.request(RouteNetlinkMessage::DelRule(m), 0, &what)?;
        Ok(())
    }
}
