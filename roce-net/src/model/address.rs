use super::table::IpVerb;
use super::Scope;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::net::IpAddr;

/// An IP address assigned to an interface.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct Address {
    /// Interface name.
    pub ifname: String,
    /// Interface index.
    pub ifindex: u32,
    /// The address.
    pub address: IpAddr,
    /// Prefix length.
    pub prefix_len: u8,
    /// Scope.
    pub scope: Scope,
    /// Address label (IPv4), if set.
    pub label: Option<String>,
    /// A secondary IPv4 address (`IFA_F_SECONDARY`; the same bit on an IPv6
    /// address means `temporary`, which `flags` holds instead).
    #[serde(default)]
    pub secondary: bool,
    /// The kernel's other address flags (`IFA_F_*`, as `ip addr` names them):
    /// `tentative` while duplicate address detection runs, `dadfailed` when it
    /// found another host with the address, `deprecated`, `temporary`, ...
    /// Empty in snapshots of older roce-net (and then left out of the JSON).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<AddressFlag>,
}

/// One of an address's kernel flags (`IFA_F_*`, include/uapi/linux/if_addr.h),
/// named as `ip addr` prints it. `secondary` is [`Address::secondary`].
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum AddressFlag {
    /// `IFA_F_TEMPORARY` (an IPv6 privacy address, RFC 8981).
    Temporary,
    /// `IFA_F_NODAD`: added without duplicate address detection.
    Nodad,
    /// `IFA_F_OPTIMISTIC`: usable while DAD runs (RFC 4429).
    Optimistic,
    /// `IFA_F_DADFAILED`: DAD found the address on another host; the kernel
    /// never uses it (it stays `tentative` too).
    Dadfailed,
    /// `IFA_F_HOMEADDRESS` (Mobile IPv6).
    Home,
    /// `IFA_F_DEPRECATED`: its preferred lifetime ran out; not chosen as a source.
    Deprecated,
    /// `IFA_F_TENTATIVE`: DAD has not finished; the kernel does not use it as a
    /// source and refuses routes with it as `src`.
    Tentative,
    /// `IFA_F_PERMANENT`: configured, not learned (an IPv6 address without it
    /// is `dynamic`: from SLAAC or DHCPv6, with lifetimes).
    Permanent,
    /// `IFA_F_MANAGETEMPADDR` (`mngtmpaddr`).
    Mngtmpaddr,
    /// `IFA_F_NOPREFIXROUTE`: the kernel added no prefix route for it.
    Noprefixroute,
    /// `IFA_F_MCAUTOJOIN` (`autojoin`).
    Autojoin,
    /// `IFA_F_STABLE_PRIVACY` (RFC 7217 interface identifier).
    StablePrivacy,
}

impl AddressFlag {
    /// Every flag with its `IFA_F_*` bit, in bit order (`0x01` is `secondary`
    /// for IPv4, `temporary` for IPv6).
    pub const BITS: [(AddressFlag, u32); 12] = [
        (AddressFlag::Temporary, 0x01),
        (AddressFlag::Nodad, 0x02),
        (AddressFlag::Optimistic, 0x04),
        (AddressFlag::Dadfailed, 0x08),
        (AddressFlag::Home, 0x10),
        (AddressFlag::Deprecated, 0x20),
        (AddressFlag::Tentative, 0x40),
        (AddressFlag::Permanent, 0x80),
        (AddressFlag::Mngtmpaddr, 0x100),
        (AddressFlag::Noprefixroute, 0x200),
        (AddressFlag::Autojoin, 0x400),
        (AddressFlag::StablePrivacy, 0x800),
    ];

    /// The flags of an address of this family from the kernel's `IFA_F_*`
    /// bits, and whether it is a secondary IPv4 address.
    pub fn from_bits(ipv6: bool, bits: u32) -> (Vec<AddressFlag>, bool) {
        let secondary = !ipv6 && bits & 0x01 != 0;
        let flags = AddressFlag::BITS
            .iter()
            .filter(|(f, b)| bits & b != 0 && (ipv6 || *f != AddressFlag::Temporary))
            .map(|(f, _)| *f)
            .collect();
        (flags, secondary)
    }

    /// The name `ip addr` prints.
    pub fn name(self) -> &'static str {
        match self {
            AddressFlag::Temporary => "temporary",
            AddressFlag::Nodad => "nodad",
            AddressFlag::Optimistic => "optimistic",
            AddressFlag::Dadfailed => "dadfailed",
            AddressFlag::Home => "home",
            AddressFlag::Deprecated => "deprecated",
            AddressFlag::Tentative => "tentative",
            AddressFlag::Permanent => "permanent",
            AddressFlag::Mngtmpaddr => "mngtmpaddr",
            AddressFlag::Noprefixroute => "noprefixroute",
            AddressFlag::Autojoin => "autojoin",
            AddressFlag::StablePrivacy => "stable-privacy",
        }
    }
}

impl fmt::Display for AddressFlag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Address {
    /// The network this address sits in (`198.18.0.11/24` -> `198.18.0.0/24`).
    pub fn network(&self) -> ipnet::IpNet {
        ipnet::IpNet::new(self.address, self.prefix_len)
            .map(|n| n.trunc())
            .unwrap_or_else(|_| ipnet::IpNet::from(self.address))
    }

    /// Whether the kernel set `flag` on it.
    pub fn has(&self, flag: AddressFlag) -> bool {
        self.flags.contains(&flag)
    }

    /// Whether the kernel uses it as a source now: not `tentative` (unless
    /// `optimistic`), not `dadfailed`. An IPv4 address always is. A route with a
    /// `src` the kernel does not use is refused (`Invalid source address`,
    /// `ip6_route_check_prefsrc` in net/ipv6/route.c).
    pub fn is_usable(&self) -> bool {
        !self.has(AddressFlag::Dadfailed)
            && (!self.has(AddressFlag::Tentative) || self.has(AddressFlag::Optimistic))
    }

    /// A global address: universe scope, not loopback and, for IPv6, not
    /// link-local (`fe80::/10`, which the kernel reports with link scope
    /// anyway). Unique local addresses (`fd00::/8`) are global, as the kernel
    /// scopes them.
    pub fn is_global(&self) -> bool {
        self.scope == Scope::Universe
            && !self.address.is_loopback()
            && match self.address {
                IpAddr::V4(_) => true,
                IpAddr::V6(v6) => (v6.segments()[0] & 0xffc0) != 0xfe80,
            }
    }
}

impl fmt::Display for Address {
    /// As `ip addr add` takes it: `198.18.0.11/24 dev r1`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{} dev {}",
            self.address,
            self.prefix_len,
            super::ifname_word(&self.ifname)
        )
    }
}

impl Address {
    /// The `ip` command for this address: `ip addr del 198.18.0.11/24 dev r1`
    /// (`ip` tells the family from the address).
    pub fn ip_command(&self, verb: IpVerb) -> String {
        format!("ip addr {verb} {self}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The flag bits of `ip -6 addr` lines captured in a namespace:
    /// `fd00:198:18:1::5/64 scope global dadfailed tentative` is 0x48, an
    /// address added with `nodad` 0x82 (`nodad` and `permanent`).
    #[test]
    fn kernel_bits_name_the_flags_ip_prints() {
        let (f, sec) = AddressFlag::from_bits(true, 0x48);
        assert_eq!(f, vec![AddressFlag::Dadfailed, AddressFlag::Tentative]);
        assert!(!sec);
        let (f, _) = AddressFlag::from_bits(true, 0x82);
        assert_eq!(f, vec![AddressFlag::Nodad, AddressFlag::Permanent]);
        // 0x01: temporary for IPv6, secondary for IPv4.
        assert_eq!(
            AddressFlag::from_bits(true, 0x01),
            (vec![AddressFlag::Temporary], false)
        );
        assert_eq!(
            AddressFlag::from_bits(false, 0x81),
            (vec![AddressFlag::Permanent], true)
        );
        for (f, _) in AddressFlag::BITS {
            assert_eq!(serde_json::to_value(f).unwrap(), f.name());
        }
    }
}
