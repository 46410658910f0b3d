//! A stable fingerprint of the part of a snapshot a plan depends on.

use crate::model::HostState;

/// 64-bit FNV-1a, written out so the value never changes with the toolchain.
struct Fnv1a(u64);

impl Fnv1a {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;

    fn new() -> Fnv1a {
        Fnv1a(Self::OFFSET)
    }
    fn bytes(&mut self, b: &[u8]) {
        for x in b {
            self.0 ^= u64::from(*x);
            self.0 = self.0.wrapping_mul(Self::PRIME);
        }
    }
    /// A record: its bytes and a separator no JSON text contains.
    fn record(&mut self, s: &str) {
        self.bytes(s.as_bytes());
        self.bytes(&[0xff]);
    }
}

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// Routes the kernel (protocol `kernel`) or router advertisements (`ra`, 9)
/// install for IPv6 addresses.
fn is_volatile_ipv6(r: &crate::model::Route) -> bool {
    r.family == crate::model::Family::Inet6
        && (r.protocol == crate::model::protocol::KERNEL
            || r.protocol == crate::model::protocol::RA)
}

/// The fingerprint of the state a plan depends on: interfaces (name, index, MAC,
/// MTU, admin state), IPv4 addresses, the global IPv6 addresses a NIC can be
/// managed by (not their DAD progress), routes (less the IPv6 ones the kernel
/// and router advertisements manage), rules, configured sysctls (not effective
/// values) and table names. Counters, neighbours, RDMA data, warnings, the host
/// name and the capture time are left out, as is the order of lists.
///
/// The text is `fnv1a64:` followed by 16 hex digits; it is stable across builds.
pub fn fingerprint(host: &HostState) -> String {
    let mut h = Fnv1a::new();
    let mut section = |name: &str, mut items: Vec<String>| {
        items.sort();
        h.record(name);
        h.record(&items.len().to_string());
        for i in &items {
            h.record(i);
        }
    };
    section(
        "interfaces",
        host.interfaces
            .iter()
            .map(|i| {
                format!(
                    "{}|{}|{}|{}|{}",
                    i.index,
                    i.name,
                    i.mac.as_ref().map(|m| m.to_string()).unwrap_or_default(),
                    i.mtu,
                    i.admin_up
                )
            })
            .collect(),
    );
    // IPv6 addresses, and the routes the kernel or router advertisements derive
    // from them, partly come and go on their own (link-local addresses after
    // DAD, SLAAC privacy addresses, `tentative` turning usable): a plan made a
    // moment before must stay valid. So of IPv6 only the global addresses a NIC
    // can be managed by count (`scope::nic_address`), without their flags but
    // whether DAD failed, which decides if one is managed.
    section(
        "addresses",
        host.addresses
            .iter()
            .filter_map(|a| match a.address {
                std::net::IpAddr::V4(_) => Some(json(a)),
                std::net::IpAddr::V6(_)
                    if a.is_global() && !a.has(crate::model::AddressFlag::Temporary) =>
                {
                    Some(format!(
                        "{}|{}/{}|{}",
                        a.ifname,
                        a.address,
                        a.prefix_len,
                        a.has(crate::model::AddressFlag::Dadfailed)
                    ))
                }
                std::net::IpAddr::V6(_) => None,
            })
            .collect(),
    );
    section(
        "routes",
        host.routes
            .iter()
            .filter(|r| !is_volatile_ipv6(r))
            .map(json)
            .collect(),
    );
    section("rules", host.rules.iter().map(json).collect());
    let s = &host.sysctls;
    let mut sys = vec![
        format!("all|{}", json(&s.all)),
        format!("default|{}", json(&s.default)),
        format!("tuning|{}", json(&s.tuning)),
    ];
    for (name, c) in &s.interfaces {
        sys.push(format!("if|{name}|{}", json(&c.configured)));
    }
    section("sysctls", sys);
    section(
        "table_names",
        host.table_names
            .iter()
            .map(|(id, n)| format!("{id}|{n}"))
            .collect(),
    );
    format!("fnv1a64:{:016x}", h.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_known_vectors() {
        let mut h = Fnv1a::new();
        h.bytes(b"");
        assert_eq!(h.0, 0xcbf29ce484222325);
        let mut h = Fnv1a::new();
        h.bytes(b"a");
        assert_eq!(h.0, 0xaf63dc4c8601ec8c);
        let mut h = Fnv1a::new();
        h.bytes(b"foobar");
        assert_eq!(h.0, 0x85944171f73967e8);
    }

    #[test]
    fn ignores_capture_time_and_neighbours_but_not_routes() {
        let a = HostState::empty("h");
        let mut b = a.clone();
        b.captured_at = 12345;
        b.hostname = "other".into();
        assert_eq!(fingerprint(&a), fingerprint(&b));
        b.table_names.insert(1001, "roce_r1".into());
        assert_ne!(fingerprint(&a), fingerprint(&b));
    }
}

#[cfg(test)]
mod volatile_tests {
    use super::fingerprint;
    use crate::model::{Address, Family, HostState, Route, RouteType, Scope};

    fn addr(ip: &str) -> Address {
        Address {
            ifname: "r0".into(),
            ifindex: 2,
            address: ip.parse().unwrap(),
            prefix_len: 64,
            scope: Scope::Link,
            label: None,
            secondary: false,
            flags: Vec::new(),
        }
    }

    #[test]
    fn ipv6_autoconf_does_not_count_as_drift_but_ipv4_does() {
        let base = HostState::empty("h");
        let fp = fingerprint(&base);
        let mut v6 = base.clone();
        v6.addresses.push(addr("fe80::1"));
        v6.routes.push(Route {
            family: Family::Inet6,
            table: 254,
            dst: "fe80::/64".parse().unwrap(),
            kind: RouteType::Unicast,
            dev: Some("r0".into()),
            prefsrc: None,
            gateway: None,
            scope: Scope::Universe,
            protocol: crate::model::protocol::KERNEL,
            metric: Some(256),
            tos: 0,
            multipath: Vec::new(),
        });
        assert_eq!(fingerprint(&v6), fp);
        let mut v4 = base.clone();
        v4.addresses.push(addr("198.18.0.11"));
        assert_ne!(fingerprint(&v4), fp);
        // An IPv6 route someone else installed by hand is not volatile.
        let mut owned = v6.clone();
        owned.routes[0].protocol = 201;
        assert_ne!(fingerprint(&owned), fp);
    }

    /// A global IPv6 address a NIC can be managed by is part of what a plan
    /// depends on; its DAD finishing is not, its DAD failing is; a privacy
    /// address is not.
    #[test]
    fn managed_ipv6_addresses_count_but_not_their_dad_progress() {
        use crate::model::AddressFlag;
        let base = HostState::empty("h");
        let mut a = addr("fd00:198:18::11");
        a.scope = Scope::Universe;
        a.flags = vec![AddressFlag::Tentative];
        let mut tentative = base.clone();
        tentative.addresses.push(a.clone());
        assert_ne!(fingerprint(&tentative), fingerprint(&base));
        let mut usable = base.clone();
        a.flags.clear();
        usable.addresses.push(a.clone());
        assert_eq!(fingerprint(&usable), fingerprint(&tentative));
        let mut failed = base.clone();
        a.flags = vec![AddressFlag::Dadfailed, AddressFlag::Tentative];
        failed.addresses.push(a.clone());
        assert_ne!(fingerprint(&failed), fingerprint(&tentative));
        let mut private = base.clone();
        a.flags = vec![AddressFlag::Temporary];
        private.addresses.push(a);
        assert_eq!(fingerprint(&private), fingerprint(&base));
    }
}
