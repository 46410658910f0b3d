//! Desired state and diff.

use super::neigh::{is_static, polluted_neighbors};
use super::{fingerprint, Change, DesiredState, NicDesired, Plan};
use crate::error::Result;
use crate::model::{
    ConfKey, ConfTarget, Family, HostState, Neighbor, Route, RouteType, Rule, RuleAction, Scope,
    Sysctl, TuningKey,
};
use crate::policy::{ConfScope, FlushMode, ForeignObject, Layout, Obstacle, Policy};
use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

/// The desired state a policy produces on a host (validates the policy first).
/// This is what persistence renders, whole.
pub fn desired_state(host: &HostState, policy: &Policy) -> Result<DesiredState> {
    let layout = policy.layout(host)?;
    Ok(build_desired(&layout, policy))
}

fn build_desired(layout: &Layout, policy: &Policy) -> DesiredState {
    let p = policy.protocol;
    let mut d = DesiredState {
        protocol: p,
        ..DesiredState::default()
    };
    for nic in &layout.nics {
        d.nics.push(NicDesired {
            ifname: nic.ifname.clone(),
            address: IpAddr::V4(nic.address),
            prefix_len: nic.network.prefix_len(),
            table: nic.table,
            table_name: nic.table_name.clone(),
            rule_priority: nic.priority,
        });
        if !policy.routing.enabled {
            continue;
        }
        if policy.register_table_names {
            d.table_names.insert(nic.table, nic.table_name.clone());
        }
        let src = Some(IpAddr::V4(nic.address));
        let route = |dst: ipnet::IpNet, gateway: Option<IpAddr>, metric: Option<u32>| Route {
            family: Family::Inet,
            table: nic.table,
            dst,
            kind: RouteType::Unicast,
            dev: Some(nic.ifname.clone()),
            prefsrc: src,
            gateway,
            scope: if gateway.is_some() {
                Scope::Universe
            } else {
                Scope::Link
            },
            protocol: p,
            metric: metric.filter(|m| *m != 0),
            tos: 0,
            multipath: Vec::new(),
        };
        if policy.routing.subnet_route {
            d.routes
                .push(route(ipnet::IpNet::V4(nic.network), None, None));
        }
        for e in &nic.extra_routes {
            d.routes.push(route(e.dst, e.via, e.metric));
        }
        if let Some(gw) = nic.gateway {
            let any = ipnet::IpNet::V4(ipnet::Ipv4Net::default());
            d.routes.push(route(any, Some(IpAddr::V4(gw)), None));
        }
        d.rules
            .push(Rule::source(IpAddr::V4(nic.address), nic.table, nic.priority).protocol(p));
    }

    let nic_targets: Vec<ConfTarget> = layout
        .nics
        .iter()
        .map(|n| ConfTarget::Interface(n.ifname.clone()))
        .collect();
    d.sysctls = desired_sysctls(policy, &nic_targets);
    d
}

/// The sysctls `policy` sets, with their values: the ARP keys, then
/// `rp_filter`, then tuning; the per-interface ones for each of `nic_targets`.
fn desired_sysctls(policy: &Policy, nic_targets: &[ConfTarget]) -> Vec<(Sysctl, String)> {
    let mut out = Vec::new();
    let targets_for = |scopes: &[ConfScope]| -> Vec<ConfTarget> {
        let mut t = Vec::new();
        for want in [ConfScope::All, ConfScope::Default, ConfScope::Nics] {
            if scopes.contains(&want) {
                match want {
                    ConfScope::All => t.push(ConfTarget::All),
                    ConfScope::Default => t.push(ConfTarget::Default),
                    ConfScope::Nics => t.extend(nic_targets.iter().cloned()),
                }
            }
        }
        t
    };
    for (key, value) in [
        (ConfKey::ArpIgnore, policy.arp.arp_ignore),
        (ConfKey::ArpAnnounce, policy.arp.arp_announce),
    ] {
        for target in targets_for(&policy.arp.scope) {
            out.push((Sysctl::Conf { target, key }, value.to_string()));
        }
    }
    if let Some(v) = policy.rp_filter.value() {
        for target in targets_for(&[ConfScope::All, ConfScope::Nics]) {
            out.push((
                Sysctl::Conf {
                    target,
                    key: ConfKey::RpFilter,
                },
                v.to_string(),
            ));
        }
    }
    for key in TuningKey::ALL {
        if let Some(v) = crate::policy::tuning_wanted(policy, key) {
            out.push((Sysctl::Tuning(key), v));
        }
    }
    out
}

/// The sysctls only `/proc/sys` shows (`conf/all`, `conf/default`, tuning)
/// that planning `policy` reads: the ones it may set. Apply's plan snapshot reads
/// only these; the per-interface values come with the link dump.
pub(crate) fn shared_sysctls(policy: &Policy) -> Vec<Sysctl> {
    desired_sysctls(policy, &[])
        .into_iter()
        .map(|(s, _)| s)
        .collect()
}

/// Routes compare equal regardless of how a metric of 0 was reported.
fn norm_route(r: &Route) -> Route {
    let mut r = r.clone();
    if r.metric == Some(0) {
        r.metric = None;
    }
    r
}

/// The kernel's identity of an IPv4/IPv6 route: family, table, destination, TOS
/// and metric.
type RouteKey = (Family, u32, ipnet::IpNet, u8, u32);

/// The kernel's identity of an IPv4/IPv6 route within a table.
fn route_key(r: &Route) -> RouteKey {
    (r.family, r.table, r.dst, r.tos, r.metric.unwrap_or(0))
}

/// Rules compare equal regardless of how absent marks and masks were reported.
fn norm_rule(r: &Rule) -> Rule {
    let mut r = r.clone();
    if r.fwmark == Some(0) {
        r.fwmark = None;
    }
    if r.fwmark.is_none() || r.fwmask == Some(u32::MAX) {
        r.fwmask = None;
    }
    if r.suppress_prefixlen == Some(u32::MAX) {
        r.suppress_prefixlen = None;
    }
    if r.action != RuleAction::Goto {
        r.goto = None;
    }
    r
}

fn same_text(a: &str, b: &str) -> bool {
    a.split_whitespace().eq(b.split_whitespace())
}

/// Plan the changes that bring `host` to what `policy` asks for. Pure: validates
/// the policy against the snapshot first ([`Policy::validate`]), never touches
/// the host. A compliant host gives an empty plan.
pub fn plan(host: &HostState, policy: &Policy) -> Result<Plan> {
    plan_with(host, policy, true)
}

/// [`plan`], leaving `base_fingerprint` empty unless `fingerprinted` (apply's
/// verify only needs the changes; hashing the whole snapshot costs more than
/// planning a small host).
pub(crate) fn plan_with(host: &HostState, policy: &Policy, fingerprinted: bool) -> Result<Plan> {
    let layout = policy.layout(host)?;
    Ok(plan_layout(host, policy, &layout, fingerprinted))
}

/// The plan `policy` makes on `host` once the foreign routes and rules in its
/// way are removed, and those objects (each with the refusal it causes). This is
/// what the doctor's remediation shows: remove these, then run the plan.
pub(crate) fn plan_past_obstacles(
    host: &HostState,
    policy: &Policy,
) -> Result<(Plan, Vec<Obstacle>)> {
    let (layout, obstacles) = policy.layout_past_obstacles(host)?;
    if obstacles.is_empty() {
        return Ok((plan_layout(host, policy, &layout, true), obstacles));
    }
    let mut cleared = host.clone();
    cleared.routes.retain(|r| {
        !obstacles
            .iter()
            .any(|o| matches!(&o.object, ForeignObject::Route(x) if x == r))
    });
    cleared.rules.retain(|r| {
        !obstacles
            .iter()
            .any(|o| matches!(&o.object, ForeignObject::Rule(x) if x == r))
    });
    Ok((plan_layout(&cleared, policy, &layout, true), obstacles))
}

fn plan_layout(host: &HostState, policy: &Policy, layout: &Layout, fingerprinted: bool) -> Plan {
    let desired = build_desired(layout, policy);
    let p = policy.protocol;
    let mut changes = Vec::new();

    // 1. Table names.
    for (id, name) in &desired.table_names {
        let before = host.table_names.get(id);
        if before != Some(name) {
            changes.push(Change::RegisterTableName {
                id: *id,
                name: name.clone(),
                before: before.cloned(),
            });
        }
    }

    // 2. Sysctls.
    for (sysctl, after) in &desired.sysctls {
        let before = host.sysctls.get_text(sysctl);
        if before.as_deref().is_some_and(|b| same_text(b, after)) {
            continue;
        }
        changes.push(Change::SetSysctl {
            sysctl: sysctl.clone(),
            before,
            after: after.clone(),
        });
    }

    // 3. Routes: keep what matches, replace owned routes with the same key, add.
    // Host routes are bucketed by kernel key (equal normalised routes have equal
    // keys), each bucket in snapshot order, so every lookup below finds the same
    // first unused route a scan of the whole table would.
    let host_routes: Vec<Route> = host.routes.iter().map(norm_route).collect();
    let mut routes_by_key: HashMap<RouteKey, Vec<usize>> = HashMap::new();
    for (i, r) in host.routes.iter().enumerate() {
        routes_by_key.entry(route_key(r)).or_default().push(i);
    }
    let mut route_used = vec![false; host.routes.len()];
    for want in &desired.routes {
        let nw = norm_route(want);
        let bucket = routes_by_key
            .get(&route_key(want))
            .map(Vec::as_slice)
            .unwrap_or_default();
        // Recreated from persisted configuration by another tool, which cannot set
        // our protocol: it satisfies the policy, and a foreign object stays as is.
        // It is preferred over our own copy, which then goes as a duplicate: the
        // boot configuration's object is the one that comes back on every boot.
        // (The key has no protocol, so such a route is in the same bucket.)
        if let Some(&i) = bucket.iter().find(|i| {
            !route_used[**i] && host.routes[**i].protocol != p && {
                let mut h = host_routes[**i].clone();
                h.protocol = nw.protocol;
                h == nw
            }
        }) {
            route_used[i] = true;
            continue;
        }
        if let Some(&i) = bucket
            .iter()
            .find(|i| !route_used[**i] && host_routes[**i] == nw)
        {
            route_used[i] = true;
            continue;
        }
        let owned_same_key = bucket
            .iter()
            .copied()
            .find(|i| !route_used[*i] && host.routes[*i].protocol == p);
        match owned_same_key {
            Some(i) => {
                route_used[i] = true;
                changes.push(Change::ReplaceRoute {
                    before: host.routes[i].clone(),
                    after: want.clone(),
                });
            }
            None => changes.push(Change::AddRoute {
                route: want.clone(),
            }),
        }
    }

    // 4. Rules (bucketed the same way; normalising keeps family, priority, table).
    let host_rules: Vec<Rule> = host.rules.iter().map(norm_rule).collect();
    let mut rules_by_key: HashMap<(Family, u32, u32), Vec<usize>> = HashMap::new();
    for (i, r) in host.rules.iter().enumerate() {
        rules_by_key
            .entry((r.family, r.priority, r.table))
            .or_default()
            .push(i);
    }
    let mut rule_used = vec![false; host.rules.len()];
    for want in &desired.rules {
        let nw = norm_rule(want);
        let bucket = rules_by_key
            .get(&(want.family, want.priority, want.table))
            .map(Vec::as_slice)
            .unwrap_or_default();
        // As for routes: the same rule recreated by another tool with its protocol
        // (systemd-networkd 252 has no protocol setting for rules: `proto static`)
        // satisfies the policy and wins over our own copy, which is then deleted
        // as a duplicate. Never the other way round: the foreign rule comes back
        // on every boot, so replacing it would be a fight on every boot.
        if let Some(&i) = bucket.iter().find(|i| {
            !rule_used[**i] && host.rules[**i].protocol != p && {
                let mut h = host_rules[**i].clone();
                h.protocol = nw.protocol;
                h == nw
            }
        }) {
            rule_used[i] = true;
            continue;
        }
        if let Some(&i) = bucket
            .iter()
            .find(|i| !rule_used[**i] && host_rules[**i] == nw)
        {
            rule_used[i] = true;
            continue;
        }
        changes.push(Change::AddRule { rule: want.clone() });
    }

    // 5. Stale owned objects: rules first, then routes (gateway routes first).
    // Both in a canonical order, not the kernel's dump order: the same host gives
    // the same plan (found by tests/prop_plan.rs).
    let mut stale_rules: Vec<&Rule> = host
        .rules
        .iter()
        .enumerate()
        .filter(|(i, r)| !rule_used[*i] && r.protocol == p)
        .map(|(_, r)| r)
        .collect();
    stale_rules.sort_by_cached_key(|r| (r.family, r.priority, r.table, r.to_string()));
    for r in stale_rules {
        changes.push(Change::DeleteRule { rule: r.clone() });
    }
    let mut stale: Vec<&Route> = host
        .routes
        .iter()
        .enumerate()
        .filter(|(i, r)| !route_used[*i] && r.protocol == p)
        .map(|(_, r)| r)
        .collect();
    stale.sort_by_cached_key(|r| (r.family, r.table, r.dst, r.metric, r.tos, r.to_string()));
    let via = |r: &&Route| r.gateway.is_some() || !r.multipath.is_empty();
    for r in stale
        .iter()
        .filter(|r| via(r))
        .chain(stale.iter().filter(|r| !via(r)))
    {
        changes.push(Change::DeleteRoute {
            route: (*r).clone(),
        });
    }

    // 6. Neighbours, last.
    let nic_names: Vec<String> = layout.nics.iter().map(|n| n.ifname.clone()).collect();
    let flush: Vec<Neighbor> = match policy.neighbors.flush {
        FlushMode::None => Vec::new(),
        FlushMode::All => host
            .neighbors
            .iter()
            .filter(|n| nic_names.contains(&n.ifname) && !is_static(n))
            .cloned()
            .collect(),
        FlushMode::Polluted => polluted_neighbors(host, &nic_names)
            .into_iter()
            .map(|p| p.neighbor)
            .collect(),
    };
    let mut by_if: BTreeMap<usize, Vec<Neighbor>> = BTreeMap::new();
    for n in flush {
        if let Some(pos) = nic_names.iter().position(|x| *x == n.ifname) {
            by_if.entry(pos).or_default().push(n);
        }
    }
    for (pos, mut entries) in by_if {
        // By address, not in the kernel's dump order: the same host gives the
        // same plan (found by tests/prop_plan.rs).
        entries.sort_by_key(|n| n.ip);
        changes.push(Change::FlushNeighbors {
            ifname: nic_names[pos].clone(),
            entries,
        });
    }

    Plan {
        hostname: host.hostname.clone(),
        netns: host.netns.clone(),
        base_fingerprint: if fingerprinted {
            fingerprint(host)
        } else {
            String::new()
        },
        changes,
        desired,
        policy: policy.clone(),
    }
}

#[cfg(test)]
mod tests {
    use crate::model::{ConfTarget, HostState, Sysctl};
    use crate::policy::Policy;

    /// The shared sysctls apply's plan snapshot reads are exactly the
    /// non-interface ones the plan's desired state names, for every ARP scope,
    /// with and without `rp_filter` and tuning.
    #[test]
    fn shared_sysctls_are_the_desired_non_interface_ones() {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/plan/fresh/current.json");
        let host = HostState::load(&p).unwrap();
        for scope in ["[all, nics]", "[nics]", "[all, default, nics]", "[default]"] {
            for rp in ["loose", "keep"] {
                for tuning in ["", "tuning: {rmem_max: 4194304, udp_mem: [1, 2, 3]}\n"] {
                    let y = format!(
                        "nics: auto\nrp_filter: {rp}\narp: {{arp_ignore: 1, arp_announce: 2, \
                         scope: {scope}}}\n{tuning}"
                    );
                    let policy = Policy::from_yaml(&y).unwrap();
                    let plan = super::plan(&host, &policy).unwrap();
                    let want: Vec<Sysctl> = plan
                        .desired
                        .sysctls
                        .iter()
                        .map(|(s, _)| s.clone())
                        .filter(|s| {
                            !matches!(
                                s,
                                Sysctl::Conf {
                                    target: ConfTarget::Interface(_),
                                    ..
                                }
                            )
                        })
                        .collect();
                    assert!(!want.is_empty() || scope == "[nics]", "{y}");
                    assert_eq!(super::shared_sysctls(&policy), want, "{y}");
                }
            }
        }
    }

    /// The plan apply makes for itself (no fingerprint: nothing checks it) is the
    /// public plan in every other field; a saved plan keeps its fingerprint.
    #[test]
    fn an_unfingerprinted_plan_differs_only_by_its_fingerprint() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/plan/fresh");
        let host = HostState::load(&dir.join("current.json")).unwrap();
        let policy = Policy::load(&dir.join("policy.yaml")).unwrap();
        let full = super::plan(&host, &policy).unwrap();
        assert_eq!(full.base_fingerprint, crate::plan::fingerprint(&host));
        assert!(!full.changes.is_empty());
        let mut quick = super::plan_with(&host, &policy, false).unwrap();
        assert!(quick.base_fingerprint.is_empty());
        quick.base_fingerprint = full.base_fingerprint.clone();
        assert_eq!(
            serde_json::to_value(&quick).unwrap(),
            serde_json::to_value(&full).unwrap()
        );
    }
}
