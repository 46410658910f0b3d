//! Property tests of the planner over generated host states and policies
//! (docs/fuzzing.md):
//!
//! - the plan is deterministic: the same input, its JSON round trip and any order
//!   of the kernel's dumps give the same plan;
//! - applying a plan's changes to a model of the host and planning again gives an
//!   empty plan (the planner's changes are exactly what it asks for);
//! - applying then every inverse in reverse order restores the snapshot.
//!
//! The model applier below does to a `HostState` what apply does to the kernel.
//! Cases: 64 by default; `PROPTEST_CASES=N` for longer runs (docs/fuzzing.md).
//! The lab halves (real kernel) are in `lab_prop.rs`.

use proptest::prelude::*;
use roce_net::{
    Change, ConfKey, ConfTarget, ConfValues, HostState, HwAddr, InterfaceConf, NeighState,
    Neighbor, Policy, Route, RouteType, Rule, RuleAction, Scope, Sysctl, TuningKey,
};
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;

fn fixture() -> HostState {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/plan/fresh/current.json");
    HostState::load(&p).unwrap()
}

const NICS: [&str; 4] = ["r1", "r2", "r3", "r4"];

/// What the generator changes on the fixture host.
#[derive(Debug, Clone)]
struct HostTweaks {
    /// (target 0=all 1=default 2..=5 NIC, key index, value)
    sysctls: Vec<(usize, usize, u32)>,
    /// Stale owned routes: (table offset 1..=6, third octet, nic).
    stale_routes: Vec<(u32, u8, usize)>,
    /// Owned rules at priorities 1000 + k with a source host (k, host, nic).
    stale_rules: Vec<(u32, u8, usize)>,
    /// Neighbours on NICs: (nic, host octet, mac byte, reachable).
    neighbors: Vec<(usize, u8, u8, bool)>,
    /// Pre-registered table names: (id offset 1..=6, name index).
    names: Vec<(u32, usize)>,
    /// A foreign route in table 1001 (the planner must refuse or plan around it).
    foreign: bool,
    /// Permutation seeds for the dump order.
    order: u64,
}

fn host_tweaks() -> impl Strategy<Value = HostTweaks> {
    (
        prop::collection::vec((0usize..6, 0usize..6, 0u32..3), 0..12),
        prop::collection::vec((1u32..7, 100u8..110, 0usize..4), 0..4),
        prop::collection::vec((1u32..7, 1u8..250, 0usize..4), 0..4),
        prop::collection::vec((0usize..4, 1u8..250, 0u8..255, any::<bool>()), 0..8),
        prop::collection::vec((1u32..7, 0usize..3), 0..3),
        prop::bool::weighted(0.15),
        any::<u64>(),
    )
        .prop_map(
            |(sysctls, stale_routes, stale_rules, neighbors, names, foreign, order)| HostTweaks {
                sysctls,
                stale_routes,
                stale_rules,
                neighbors,
                names,
                foreign,
                order,
            },
        )
}

fn conf_target(i: usize) -> ConfTarget {
    match i {
        0 => ConfTarget::All,
        1 => ConfTarget::Default,
        n => ConfTarget::Interface(NICS[(n - 2) % 4].to_string()),
    }
}

fn recompute_effective(st: &mut HostState) {
    let all = st.sysctls.all;
    for c in st.sysctls.interfaces.values_mut() {
        c.effective = ConfValues::effective(&all, &c.configured);
    }
}

fn set_conf(st: &mut HostState, target: &ConfTarget, key: ConfKey, v: Option<i32>) {
    match target {
        ConfTarget::All => st.sysctls.all.set(key, v),
        ConfTarget::Default => st.sysctls.default.set(key, v),
        ConfTarget::Interface(n) => {
            let default = st.sysctls.default;
            let e = st
                .sysctls
                .interfaces
                .entry(n.clone())
                .or_insert(InterfaceConf {
                    configured: default,
                    effective: default,
                });
            e.configured.set(key, v);
        }
    }
    recompute_effective(st);
}

fn nic_ip(st: &HostState, nic: &str) -> Ipv4Addr {
    st.addresses
        .iter()
        .find_map(|a| match a.address {
            IpAddr::V4(v) if a.ifname == nic => Some(v),
            _ => None,
        })
        .unwrap()
}

fn nic_mac(st: &HostState, nic: &str) -> HwAddr {
    st.interface(nic).unwrap().mac.clone().unwrap()
}

/// Deterministic shuffle (Fisher-Yates with a small LCG): the dump order.
fn shuffle<T>(v: &mut [T], seed: &mut u64) {
    for i in (1..v.len()).rev() {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let j = (*seed >> 33) as usize % (i + 1);
        v.swap(i, j);
    }
}

fn build_host(t: &HostTweaks) -> HostState {
    let mut st = fixture();
    let keys = ConfKey::ALL;
    for &(target, key, v) in &t.sysctls {
        let key = keys[key % keys.len()];
        set_conf(&mut st, &conf_target(target), key, Some(v as i32));
    }
    for &(off, octet, nic) in &t.stale_routes {
        let dst: ipnet::IpNet = format!("198.18.{octet}.0/24").parse().unwrap();
        // The kernel keeps one route per (table, dst, tos, metric).
        if st
            .routes
            .iter()
            .any(|r| r.table == 1000 + off && r.dst == dst)
        {
            continue;
        }
        st.routes.push(Route {
            family: roce_net::Family::Inet,
            table: 1000 + off,
            dst,
            kind: RouteType::Unicast,
            dev: Some(NICS[nic].to_string()),
            prefsrc: None,
            gateway: None,
            scope: Scope::Link,
            protocol: 201,
            metric: None,
            tos: 0,
            multipath: Vec::new(),
        });
    }
    for &(k, host, _nic) in &t.stale_rules {
        if st.rules.iter().any(|r| r.priority == 1000 + k) {
            continue;
        }
        st.rules.push(Rule {
            family: roce_net::Family::Inet,
            priority: 1000 + k,
            src: Some(format!("198.18.5.{host}/32").parse().unwrap()),
            dst: None,
            iif: None,
            oif: None,
            fwmark: None,
            fwmask: None,
            tos: 0,
            invert: false,
            table: 1000 + k,
            action: RuleAction::ToTable,
            goto: None,
            suppress_prefixlen: None,
            protocol: 201,
        });
    }
    for &(nic, host, macb, reachable) in &t.neighbors {
        let ifname = NICS[nic].to_string();
        let ifindex = st.interface(&ifname).unwrap().index;
        let ip = IpAddr::V4(Ipv4Addr::new(198, 18, 0, host));
        if st
            .neighbors
            .iter()
            .any(|n| n.ifname == ifname && n.ip == ip)
        {
            continue;
        }
        // Every other entry carries another NIC's MAC: ARP-flux damage.
        let mac = if macb % 2 == 0 {
            nic_mac(&st, NICS[(nic + 1) % 4])
        } else {
            HwAddr(vec![2, 0, 0, 0, 0x42, macb])
        };
        st.neighbors.push(Neighbor {
            ifname,
            ifindex,
            ip,
            mac: Some(mac),
            state: vec![if reachable {
                NeighState::Reachable
            } else {
                NeighState::Stale
            }],
            router: false,
        });
    }
    for &(off, n) in &t.names {
        let name = ["roce_r1", "legacy", "roce_r9"][n];
        st.table_names.insert(1000 + off, name.to_string());
    }
    if t.foreign {
        st.routes.push(Route {
            family: roce_net::Family::Inet,
            table: 1001,
            dst: "198.18.200.0/24".parse().unwrap(),
            kind: RouteType::Unicast,
            dev: Some("r1".into()),
            prefsrc: Some(IpAddr::V4(nic_ip(&st, "r1"))),
            gateway: None,
            scope: Scope::Link,
            protocol: 4,
            metric: None,
            tos: 0,
            multipath: Vec::new(),
        });
    }
    st
}

/// The same host as its dumps might come in another order.
fn reorder(st: &HostState, seed: u64) -> HostState {
    let mut s = st.clone();
    let mut seed = seed;
    shuffle(&mut s.routes, &mut seed);
    shuffle(&mut s.rules, &mut seed);
    shuffle(&mut s.neighbors, &mut seed);
    shuffle(&mut s.addresses, &mut seed);
    s
}

fn policy() -> impl Strategy<Value = Policy> {
    (
        prop::option::of((0u32..=8, 0u32..=2)),
        prop::sample::select(vec!["keep", "loose", "strict", "off"]),
        any::<bool>(),
        prop::sample::select(vec![(1000u32, 1000u32), (2000, 20000), (100_000, 5000)]),
        any::<bool>(),
        prop::sample::select(vec!["polluted", "all", "none"]),
        any::<bool>(),
        prop::option::of(1u64..1_000_000),
        prop::sample::select(vec!["auto", "{include: [r1, r2, r3, r4]}", "{include: [\"r*\"], exclude: [r4]}"]),
    )
        .prop_map(|(arp, rp, enabled, (base, prio), subnet, flush, names, backlog, nics)| {
            let mut y = format!("nics: {nics}\nrp_filter: {rp}\n");
            if let Some((ig, an)) = arp {
                y.push_str(&format!("arp: {{arp_ignore: {ig}, arp_announce: {an}}}\n"));
            }
            y.push_str(&format!(
                "routing: {{enabled: {enabled}, table_base: {base}, rule_priority_base: {prio}, subnet_route: {subnet}}}\n"
            ));
            y.push_str(&format!("neighbors: {{flush: {flush}}}\nregister_table_names: {names}\n"));
            if let Some(b) = backlog {
                y.push_str(&format!("tuning: {{netdev_max_backlog: {b}}}\n"));
            }
            Policy::from_yaml(&y).unwrap_or_else(|e| panic!("{y}: {e}"))
        })
}

/// Do to the model what apply does to the kernel.
fn apply_model(st: &mut HostState, c: &Change) {
    match c {
        Change::SetSysctl { sysctl, after, .. } => match sysctl {
            Sysctl::Conf { target, key } => {
                set_conf(st, target, *key, Some(after.trim().parse().unwrap()))
            }
            Sysctl::Tuning(k) => {
                let nums: Vec<u64> = after
                    .split_whitespace()
                    .map(|x| x.parse().unwrap())
                    .collect();
                let t = &mut st.sysctls.tuning;
                match k {
                    TuningKey::NetdevMaxBacklog => t.netdev_max_backlog = Some(nums[0]),
                    TuningKey::RmemMax => t.rmem_max = Some(nums[0]),
                    TuningKey::WmemMax => t.wmem_max = Some(nums[0]),
                    TuningKey::UdpMem => t.udp_mem = Some([nums[0], nums[1], nums[2]]),
                }
            }
        },
        Change::AddRoute { route } => {
            assert!(
                !st.routes.contains(route),
                "adding a route that is there: {route}"
            );
            st.routes.push(route.clone());
        }
        Change::DeleteRoute { route } => {
            let i = st.routes.iter().position(|r| r == route);
            let i = i.unwrap_or_else(|| panic!("deleting a route that is not there: {route}"));
            st.routes.remove(i);
        }
        Change::ReplaceRoute { before, after } => {
            let i = st.routes.iter().position(|r| r == before);
            let i = i.unwrap_or_else(|| panic!("replacing a route that is not there: {before}"));
            st.routes[i] = after.clone();
        }
        Change::AddRule { rule } => {
            assert!(
                !st.rules.contains(rule),
                "adding a rule that is there: {rule}"
            );
            st.rules.push(rule.clone());
        }
        Change::DeleteRule { rule } => {
            let i = st.rules.iter().position(|r| r == rule);
            let i = i.unwrap_or_else(|| panic!("deleting a rule that is not there: {rule}"));
            st.rules.remove(i);
        }
        Change::FlushNeighbors { ifname, entries } => {
            for e in entries {
                let i = st
                    .neighbors
                    .iter()
                    .position(|n| &n.ifname == ifname && n.ip == e.ip);
                let i = i.unwrap_or_else(|| panic!("flushing an entry that is not there: {e:?}"));
                st.neighbors.remove(i);
            }
        }
        Change::RestoreNeighbors { entries, .. } => {
            for e in entries {
                // The kernel takes them back as STALE.
                let mut n = e.clone();
                n.state = vec![NeighState::Stale];
                st.neighbors.push(n);
            }
        }
        Change::RegisterTableName { id, name, .. } => {
            st.table_names.insert(*id, name.clone());
        }
        Change::UnregisterTableName { id, name } => {
            assert_eq!(
                st.table_names.get(id),
                Some(name),
                "unregistering a name that is not there"
            );
            st.table_names.remove(id);
        }
    }
}

/// The snapshot in a canonical order, neighbour states aside (a restored entry
/// comes back STALE by design).
fn canonical(st: &HostState) -> HostState {
    let mut s = st.clone();
    s.routes.sort_by_key(|r| format!("{r:?}"));
    s.rules.sort_by_key(|r| format!("{r:?}"));
    for n in &mut s.neighbors {
        n.state.clear();
    }
    s.neighbors.sort_by_key(|n| format!("{n:?}"));
    s
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        // Failures are printed (with the minimal case); nothing is written
        // into the source tree.
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn plan_is_deterministic(t in host_tweaks(), p in policy()) {
        let st = build_host(&t);
        let a = roce_net::plan(&st, &p);
        let b = roce_net::plan(&st, &p);
        let round = HostState::from_json(&st.to_json()).unwrap();
        let c = roce_net::plan(&round, &p);
        let d = roce_net::plan(&reorder(&st, t.order), &p);
        match (&a, &b, &c, &d) {
            (Ok(a), Ok(b), Ok(c), Ok(d)) => {
                prop_assert_eq!(&a.changes, &b.changes);
                prop_assert_eq!(&a.changes, &c.changes);
                if a.changes != d.changes {
                    let (x, y) = (a.describe(), d.describe());
                    let i = x.iter().zip(&y).position(|(p, q)| p != q).unwrap_or(x.len().min(y.len()));
                    prop_assert!(
                        false,
                        "dump order changed the plan at change {}: {:?} vs {:?}",
                        i,
                        x.get(i),
                        y.get(i)
                    );
                }
                prop_assert_eq!(&a.base_fingerprint, &d.base_fingerprint, "dump order changed the fingerprint");
            }
            (Err(a), Err(b), Err(c), Err(d)) => {
                prop_assert_eq!(a.to_string(), b.to_string());
                prop_assert_eq!(a.to_string(), c.to_string());
                prop_assert_eq!(a.to_string(), d.to_string());
            }
            _ => prop_assert!(false, "outcomes differ: {:?} {:?} {:?} {:?}", a.is_ok(), b.is_ok(), c.is_ok(), d.is_ok()),
        }
    }

    #[test]
    fn applying_a_plan_then_replanning_is_empty_and_inverses_restore(t in host_tweaks(), p in policy()) {
        let st = build_host(&t);
        let Ok(plan) = roce_net::plan(&st, &p) else { return Ok(()) };
        let mut after = st.clone();
        for c in &plan.changes {
            apply_model(&mut after, c);
        }
        let again = roce_net::plan(&after, &p).unwrap();
        prop_assert!(again.is_empty(), "re-plan after applying: {:?}\nfirst plan: {:?}", again.describe(), plan.describe());
        let mut back = after.clone();
        for c in plan.changes.iter().rev() {
            let inv = c.inverse().expect("every change of a fully read snapshot has an inverse");
            apply_model(&mut back, &inv);
        }
        prop_assert_eq!(canonical(&back), canonical(&st), "inverses did not restore the snapshot");
    }
}
