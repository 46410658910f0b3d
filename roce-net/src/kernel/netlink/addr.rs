//! Addresses: `ip addr show` and `ip addr add`.

use super::{Families, IfNames, Netlink};
use crate::error::Result;
use crate::model::{Address, AddressFlag, Interface, Scope};
use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL};
use netlink_packet_route::address::{AddressAttribute, AddressFlags, AddressMessage, AddressScope};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use std::net::IpAddr;

pub(super) fn to_address(m: AddressMessage, names: &IfNames) -> Option<Address> {
    let mut local = None;
    let mut address = None;
    let mut label = None;
    // The header's 8 flag bits, or all 32 from IFA_FLAGS when the kernel sends
    // it (since 3.14; the header then holds only the low byte of the same value).
    let mut bits = u32::from(m.header.flags.bits());
    for a in m.attributes {
        match a {
            AddressAttribute::Local(ip) => local = Some(ip),
            AddressAttribute::Address(ip) => address = Some(ip),
            AddressAttribute::Label(l) => label = Some(l),
            AddressAttribute::Flags(f) => bits |= f.bits(),
            _ => {}
        }
    }
    // IFA_LOCAL is the interface's own address; IFA_ADDRESS is the peer on
    // point-to-point links and equal to it otherwise (IPv6 sends only IFA_ADDRESS).
    let ip = local.or(address)?;
    let (flags, secondary) = AddressFlag::from_bits(ip.is_ipv6(), bits);
    Some(Address {
        ifname: names.name(m.header.index),
        ifindex: m.header.index,
        address: ip,
        prefix_len: m.header.prefix_len,
        scope: Scope::from_u8(u8::from(m.header.scope)),
        label,
        secondary,
        flags,
    })
}

impl Netlink {
    /// Every IPv4 and IPv6 address (`ip addr show`). `ifs` (from [`Netlink::links`])
    /// names the interfaces.
    pub fn addresses(&mut self, ifs: &[Interface]) -> Result<Vec<Address>> {
        self.addresses_of(ifs, Families::Both)
    }

    /// The addresses of the given families (`ip -4 addr show` for IPv4 only).
    pub(crate) fn addresses_of(
        &mut self,
        ifs: &[Interface],
        families: Families,
    ) -> Result<Vec<Address>> {
        let names = IfNames::new(ifs);
        let mut out = Vec::new();
        for &family in families.list() {
            let mut m = AddressMessage::default();
            m.header.family = family;
            let msg = RouteNetlinkMessage::GetAddress(m);
            out.extend(self.dump_map(msg, "dumping addresses", |r| match r {
                RouteNetlinkMessage::NewAddress(a) => to_address(a, &names),
                _ => None,
            })?);
        }
        Ok(out)
    }

    /// Add an address (`ip addr add IP/PREFIX dev IFNAME`). The kernel also
    /// installs the subnet route in table main. An IPv6 address is `tentative`
    /// until duplicate address detection finishes (about a second).
    pub fn addr_add(&mut self, ifname: &str, ip: IpAddr, prefix_len: u8) -> Result<()> {
        self.addr_add_with(ifname, ip, prefix_len, false)
    }

    /// [`Netlink::addr_add`] of an IPv6 address without duplicate address
    /// detection (`ip addr add ... nodad`): usable at once (a lab's addresses,
    /// which no other host holds).
    pub fn addr_add_nodad(&mut self, ifname: &str, ip: IpAddr, prefix_len: u8) -> Result<()> {
        self.addr_add_with(ifname, ip, prefix_len, true)
    }

    fn addr_add_with(
        &mut self,
        ifname: &str,
        ip: IpAddr,
        prefix_len: u8,
        nodad: bool,
    ) -> Result<()> {
        let what = format!("adding address {ip}/{prefix_len} to {ifname}");
        let max = if ip.is_ipv4() { 32 } else { 128 };
        if prefix_len > max {
            return Err(crate::Error::new(
                crate::ErrorKind::InvalidInput,
                format!("{what}: prefix length must be at most {max}"),
            ));
        }
        let index = self.ifindex(ifname).map_err(|e| e.context(what.clone()))?;
        let mut m = AddressMessage::default();
        m.header.family = if ip.is_ipv4() {
            AddressFamily::Inet
        } else {
            AddressFamily::Inet6
        };
        m.header.prefix_len = prefix_len;
        m.header.index = index;
        m.header.scope = AddressScope::Universe;
        m.attributes.push(AddressAttribute::Local(ip));
        m.attributes.push(AddressAttribute::Address(ip));
        if nodad {
            m.attributes
                .push(AddressAttribute::Flags(AddressFlags::Nodad));
        }
        self.request(
            RouteNetlinkMessage::NewAddress(m),
            NLM_F_CREATE | NLM_F_EXCL,
            &what,
        )?;
        Ok(())
    }
}
