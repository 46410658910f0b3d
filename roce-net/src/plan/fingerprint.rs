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

/// The fingerprint of the state a plan depends on: interfaces (name, index, MAC,
/// MTU, admin state), addresses, routes, rules, configured sysctls (not effective
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
    section("addresses", host.addresses.iter().map(json).collect());
    section("routes", host.routes.iter().map(json).collect());
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
