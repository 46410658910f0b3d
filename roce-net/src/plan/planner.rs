//! Desired state and diff.

use super::neigh::{is_static, polluted_neighbors};
use super::{fingerprint, Change, DesiredState, NicDesired, Plan};
use crate::error::Result;
use crate::model::{
    ConfKey, ConfTarget, Family, HostState, Neighbor, Route, RouteKey, RouteType, Rule, RuleKey,
    Scope, Sysctl, TuningKey,
};
use crate::policy::{ConfScope, FlushMode, ForeignObject, Layout, Obstacle, Policy};
use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

/// The desired state a policy produces on a host (validates the policy first).
/// This is what persistence renders, whole.
pub fn desired_state(host: &HostState, policy: &Policy) -> Result<DesiredState> {
    let layout = policy.layout(host)?;
    let mut d = build_desired(&layout, policy);
    keep_foreign_names(&mut d, host);
    Ok(d)
}

/// Keep the names of tables this namespace does not own in the names files.
///
/// Table names are host-wide (one `/etc/iproute2`) but table numbers are per
/// network namespace, and every namespace numbers its tables from the same
/// `routing.table_base`. So an existing name for one of this plan's table ids
/// is only taken to be this namespace's when it names the NIC the table is for
/// (ends with its interface name: `roce_r0` or `rdma_r0` for `r0`); such a name
/// is renamed to the policy's as before (a `table_name_prefix` change). Any
/// other existing name (another namespace's NIC, an admin's own name, a NIC since
/// renamed) is kept: the desired state names the table with it, so no change is
/// planned and two namespaces never rename each other's tables back and forth.
/// Names are display only (routing uses the numbers); [`Plan::kept_table_names`]
/// lists what was kept.
///
/// [`Plan::kept_table_names`]: super::Plan::kept_table_names
fn keep_foreign_names(d: &mut DesiredState, host: &HostState) {
    for nic in &d.nics {
        let Some(want) = d.table_names.get_mut(&nic.table) else {
            continue;
        };
        match host.table_names.get(&nic.table) {
            Some(have) if have != want && !have.ends_with(nic.ifname.as_str()) => {
                *want = have.clone();
            }
            _ => {}
        }
    }
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
            addresses: nic
                .families
                .iter()
                .map(|f| {
                    ipnet::IpNet::new(f.address, f.network.prefix_len())
                        .unwrap_or_else(|_| ipnet::IpNet::from(f.address))
                })
                .collect(),
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
        // One table per NIC for both families (the kernel keeps an IPv4 and an
        // IPv6 table under one number apart): each managed address's subnet
        // route, extra routes and default route go to it, and its rule sends
        // traffic from that address there.
        for fam in &nic.families {
            let family = fam.family();
            let route = |dst: ipnet::IpNet, gateway: Option<IpAddr>, metric: Option<u32>| Route {
                family,
                table: nic.table,
                dst,
                kind: RouteType::Unicast,
                dev: Some(nic.ifname.clone()),
                // IPv4 routes name the NIC's address as their source. IPv6 ones
                // do not: the rule already pins the source, and the kernel
                // refuses an IPv6 `src` while the address is still tentative
                // (`ip6_route_check_prefsrc`: "Invalid source address"), which
                // would fail an apply, or a boot, during DAD.
                prefsrc: match family {
                    Family::Inet => Some(fam.address),
                    Family::Inet6 => None,
                },
                gateway,
                scope: if gateway.is_some() || family == Family::Inet6 {
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
                d.routes.push(route(fam.network, None, None));
            }
            for e in nic
                .extra_routes
                .iter()
                .filter(|e| Family::of(&e.dst.addr()) == family)
            {
                d.routes.push(route(e.dst, e.via, e.metric));
            }
            if let Some(gw) = fam.gateway {
                let any = match family {
                    Family::Inet => ipnet::IpNet::V4(ipnet::Ipv4Net::default()),
                    Family::Inet6 => ipnet::IpNet::V6(ipnet::Ipv6Net::default()),
                };
                d.routes.push(route(any, Some(gw), None));
            }
            d.rules
                .push(Rule::source(fam.address, nic.table, nic.priority).protocol(p));
        }
    }

    let with = |family: Family| -> Vec<ConfTarget> {
        layout
            .nics
            .iter()
            .filter(|n| n.family(family).is_some())
            .map(|n| ConfTarget::Interface(n.ifname.clone()))
            .collect()
    };
    let v4 = with(Family::Inet);
    let v6 = with(Family::Inet6);
    // A family's host-wide keys only where some NIC is managed in it: an
    // IPv6-only host gets no ARP setting (no NIC has IPv4 to answer for).
    d.sysctls = desired_sysctls(policy, &v4, !v4.is_empty(), &v6);
    d
}

/// The sysctls `policy` sets, with their values: the ARP keys, then
/// `rp_filter` (IPv4's: their `all`/`default` targets when `ipv4_shared`, the
/// per-interface ones for each of `v4_targets`), then the IPv6 keys (each of
/// `v6_targets`), then tuning.
fn desired_sysctls(
    policy: &Policy,
    v4_targets: &[ConfTarget],
    ipv4_shared: bool,
    v6_targets: &[ConfTarget],
) -> Vec<(Sysctl, String)> {
    let mut out = Vec::new();
    let targets_for = |scopes: &[ConfScope]| -> Vec<ConfTarget> {
        let mut t = Vec::new();
        for want in [ConfScope::All, ConfScope::Default, ConfScope::Nics] {
            if scopes.contains(&want) {
                match want {
                    ConfScope::All if ipv4_shared => t.push(ConfTarget::All),
                    ConfScope::Default if ipv4_shared => t.push(ConfTarget::Default),
                    ConfScope::Nics => t.extend(v4_targets.iter().cloned()),
                    _ => {}
                }
            }
        }
        t
    };
    if policy.family.includes(Family::Inet) {
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
    }
    if policy.family.includes(Family::Inet6) {
        for (key, value) in policy.ipv6.wanted() {
            for target in v6_targets {
                out.push((
                    Sysctl::Conf {
                        target: target.clone(),
                        key,
                    },
                    value.to_string(),
                ));
            }
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
    desired_sysctls(policy, &[], true, &[])
        .into_iter()
        .map(|(s, _)| s)
        .collect()
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
    let mut desired = build_desired(layout, policy);
    keep_foreign_names(&mut desired, host);
    let p = policy.protocol;
    let mut changes = Vec::new();

    // 1. Table names. First the lines of roce-net's own names file for
    // tables of this namespace the policy no longer uses (`routing.table_base`
    // changed since an apply): their routes go below, and so do their names,
    // before a name moves to its new table.
    if policy.register_table_names && policy.routing.enabled {
        for id in host.own_table_names.iter().flat_map(|m| m.keys()) {
            if desired.nics.iter().any(|n| n.table == *id) {
                continue;
            }
            if let Some(name) = host.own_table_name_here(*id, p) {
                changes.push(Change::UnregisterTableName {
                    id: *id,
                    name: name.to_string(),
                });
            }
        }
    }
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
    let mut routes = Claims::new(&host.routes, p);
    for want in &desired.routes {
        if routes.satisfy(want) {
            continue;
        }
        match routes.claim_owned_same_key(want) {
            Some(before) => changes.push(Change::ReplaceRoute {
                before: before.clone(),
                after: want.clone(),
            }),
            None => changes.push(Change::AddRoute {
                route: want.clone(),
            }),
        }
    }

    // 4. Rules: keep what matches, add. A rule is never replaced: the kernel
    // keeps rules by their whole content, so a different rule with the same key
    // (family, priority, table) stands beside ours, and ours goes as stale.
    let mut rules = Claims::new(&host.rules, p);
    for want in &desired.rules {
        if !rules.satisfy(want) {
            changes.push(Change::AddRule { rule: want.clone() });
        }
    }

    // 5. Stale owned objects: rules first, then routes (gateway routes first).
    // Both in a canonical order, not the kernel's dump order: the same host gives
    // the same plan (found by tests/it/prop_plan.rs).
    let mut stale_rules = rules.unclaimed_owned();
    stale_rules.sort_by_cached_key(|r| (r.family, r.priority, r.table, r.to_string()));
    for r in stale_rules {
        changes.push(Change::DeleteRule { rule: r.clone() });
    }
    let mut stale = routes.unclaimed_owned();
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
        // same plan (found by tests/it/prop_plan.rs).
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

/// A route or a rule, as the planner matches wanted objects against the
/// host's: identity ([`Route::key`], [`Rule::key`]) and normalisation are the
/// model's, the one definition rollback's check uses too.
trait Owned: Clone + PartialEq {
    type Key: Eq + std::hash::Hash;
    fn key(&self) -> Self::Key;
    fn normalized(&self) -> Self;
    fn protocol(&self) -> u8;
    fn set_protocol(&mut self, protocol: u8);
}

impl Owned for Route {
    type Key = RouteKey;
    fn key(&self) -> RouteKey {
        Route::key(self)
    }
    fn normalized(&self) -> Route {
        Route::normalized(self)
    }
    fn protocol(&self) -> u8 {
        self.protocol
    }
    fn set_protocol(&mut self, protocol: u8) {
        self.protocol = protocol;
    }
}

impl Owned for Rule {
    type Key = RuleKey;
    fn key(&self) -> RuleKey {
        Rule::key(self)
    }
    fn normalized(&self) -> Rule {
        Rule::normalized(self)
    }
    fn protocol(&self) -> u8 {
        self.protocol
    }
    fn set_protocol(&mut self, protocol: u8) {
        self.protocol = protocol;
    }
}

/// The host's routes or rules, which of them a wanted object has claimed, and
/// roce-net's protocol (`ours`). They are bucketed by kernel key (equal
/// normalised objects have equal keys), each bucket in snapshot order, so
/// every lookup finds the same first unclaimed object a scan of the whole
/// table would.
struct Claims<'h, T: Owned> {
    host: &'h [T],
    normalized: Vec<T>,
    by_key: HashMap<T::Key, Vec<usize>>,
    claimed: Vec<bool>,
    ours: u8,
}

impl<'h, T: Owned> Claims<'h, T> {
    fn new(host: &'h [T], ours: u8) -> Self {
        let mut by_key: HashMap<T::Key, Vec<usize>> = HashMap::new();
        for (i, o) in host.iter().enumerate() {
            by_key.entry(o.key()).or_default().push(i);
        }
        Claims {
            host,
            normalized: host.iter().map(T::normalized).collect(),
            by_key,
            claimed: vec![false; host.len()],
            ours,
        }
    }

    /// The unclaimed objects with `want`'s key, in snapshot order.
    fn bucket<'a>(&'a self, want: &T) -> impl Iterator<Item = usize> + 'a {
        let bucket = self.by_key.get(&want.key()).map(Vec::as_slice);
        bucket
            .unwrap_or_default()
            .iter()
            .copied()
            .filter(|i| !self.claimed[*i])
    }

    /// Claim a host object that already is `want`; `false` when there is none.
    ///
    /// One recreated from persisted configuration by another tool, which
    /// cannot set our protocol, satisfies the policy, and a foreign object
    /// stays as it is; it is preferred over our own copy, which then goes as
    /// a duplicate: the boot configuration's object is the one that comes
    /// back on every boot, so replacing it would be a fight on every boot
    /// (systemd-networkd 252 has no protocol setting for rules: `proto
    /// static`). The key has no protocol, so such an object is in the same
    /// bucket.
    fn satisfy(&mut self, want: &T) -> bool {
        let nw = want.normalized();
        let foreign = self.bucket(want).find(|&i| {
            self.host[i].protocol() != self.ours && {
                let mut h = self.normalized[i].clone();
                h.set_protocol(nw.protocol());
                h == nw
            }
        });
        let found = foreign.or_else(|| self.bucket(want).find(|&i| self.normalized[i] == nw));
        if let Some(i) = found {
            self.claimed[i] = true;
        }
        found.is_some()
    }

    /// Claim an object of ours with `want`'s key (to be replaced by `want`).
    fn claim_owned_same_key(&mut self, want: &T) -> Option<&'h T> {
        let i = self
            .bucket(want)
            .find(|&i| self.host[i].protocol() == self.ours)?;
        self.claimed[i] = true;
        Some(&self.host[i])
    }

    /// The objects of ours no wanted object claimed: stale, to be deleted.
    fn unclaimed_owned(&self) -> Vec<&'h T> {
        self.host
            .iter()
            .enumerate()
            .filter(|(i, o)| !self.claimed[*i] && o.protocol() == self.ours)
            .map(|(_, o)| o)
            .collect()
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

    fn fresh() -> (HostState, Policy) {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/plan/fresh");
        let host = HostState::load(&dir.join("current.json")).unwrap();
        let policy = Policy::load(&dir.join("policy.yaml")).unwrap();
        (host, policy)
    }

    /// The fixture host as another namespace with the same tables: its NICs are
    /// `b1..b4` instead of `r1..r4`.
    fn other_namespace(host: &HostState) -> HostState {
        let mut j = serde_json::to_string(host).unwrap();
        for i in 1..=4 {
            j = j.replace(&format!("\"r{i}\""), &format!("\"b{i}\""));
        }
        let b: HostState = serde_json::from_str(&j).unwrap();
        assert!(b.interfaces.iter().any(|l| l.name == "b1"), "renamed");
        b
    }

    fn name_changes(plan: &crate::Plan) -> Vec<(u32, String, Option<String>)> {
        plan.changes
            .iter()
            .filter_map(|c| match c {
                crate::Change::RegisterTableName { id, name, before } => {
                    Some((*id, name.clone(), before.clone()))
                }
                _ => None,
            })
            .collect()
    }

    /// A name another namespace gave one of this plan's tables (it does not
    /// name this table's NIC) is kept: no change, the desired state names the
    /// table with it, and the plan's notes say so once, with the way out.
    #[test]
    fn another_namespaces_table_name_is_kept() {
        let (mut host, policy) = fresh();
        host.table_names.insert(1001, "roce_ens0f0np0".into());
        let plan = super::plan(&host, &policy).unwrap();
        let names = name_changes(&plan);
        assert!(names.iter().all(|(id, ..)| *id != 1001), "{names:?}");
        assert_eq!(
            names.iter().map(|(id, ..)| *id).collect::<Vec<_>>(),
            vec![1002, 1003, 1004]
        );
        assert_eq!(plan.desired.table_names[&1001], "roce_ens0f0np0");
        assert_eq!(
            plan.kept_table_names(),
            vec![(1001, "roce_ens0f0np0", "roce_r1")]
        );
        let notes = plan.notes();
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].contains("table 1001 keeps the name roce_ens0f0np0"));
        assert!(notes[1].contains("routing.table_base"));
        // Persistence renders the same (kept) name.
        let d = super::desired_state(&host, &policy).unwrap();
        assert_eq!(d.table_names, plan.desired.table_names);
        // The rendered diff shows the table by the name `ip` will show.
        assert!(plan.render_diff().contains("roce_ens0f0np0(1001)"));
    }

    /// A name that names this table's NIC under another prefix is this
    /// namespace's (the policy's `table_name_prefix` changed): renamed.
    #[test]
    fn own_name_under_another_prefix_is_renamed() {
        let (mut host, policy) = fresh();
        host.table_names.insert(1001, "rdma_r1".into());
        let plan = super::plan(&host, &policy).unwrap();
        assert!(name_changes(&plan).contains(&(
            1001,
            "roce_r1".to_string(),
            Some("rdma_r1".to_string())
        )));
        assert_eq!(plan.desired.table_names[&1001], "roce_r1");
        assert!(plan.kept_table_names().is_empty());
        assert!(plan.notes().is_empty());
    }

    /// `routing.table_base` changed after an apply: the old tables' lines in
    /// roce-net's own names file are this namespace's (roce-net's routes
    /// through the NICs they name use those tables here), so the plan removes
    /// them before it registers the names for the new tables, and deletes the
    /// old tables' routes and rules. Before, the policy was refused, telling
    /// the operator to edit roce-net's own file. The same name in another file
    /// (an admin's), or roce-net's line for a table no roce-net route uses
    /// here (another namespace's NIC of the same name), is refused as before,
    /// each with its own remedy.
    #[test]
    fn a_changed_table_base_moves_roce_nets_own_names() {
        let (fresh_host, policy) = fresh();
        let applied = super::plan(&fresh_host, &policy).unwrap();
        let mut host = fresh_host.clone();
        host.table_names.extend(applied.desired.table_names.clone());
        host.own_table_names = Some(applied.desired.table_names.clone());
        host.routes.extend(applied.desired.routes.clone());
        host.rules.extend(applied.desired.rules.clone());
        let mut moved = policy.clone();
        moved.routing.table_base = 2000;
        let plan = super::plan(&host, &moved).unwrap();
        let names: Vec<String> = plan
            .changes
            .iter()
            .filter(|c| {
                matches!(
                    c,
                    crate::Change::RegisterTableName { .. }
                        | crate::Change::UnregisterTableName { .. }
                )
            })
            .map(crate::Change::describe)
            .collect();
        assert_eq!(
            names,
            [
                "unregister table name roce_r1 of table 1001",
                "unregister table name roce_r2 of table 1002",
                "unregister table name roce_r3 of table 1003",
                "unregister table name roce_r4 of table 1004",
                "register table name roce_r1 for table 2001",
                "register table name roce_r2 for table 2002",
                "register table name roce_r3 for table 2003",
                "register table name roce_r4 for table 2004",
            ]
        );
        assert!(plan.changes.iter().any(|c| matches!(
            c,
            crate::Change::DeleteRule { rule } if rule.table == 1001
        )));
        // Applied (its names, routes and rules): none of those left to do.
        let mut after = fresh_host.clone();
        after.table_names.extend(plan.desired.table_names.clone());
        after.own_table_names = Some(plan.desired.table_names.clone());
        after.routes.extend(plan.desired.routes.clone());
        after.rules.extend(plan.desired.rules.clone());
        let again = super::plan(&after, &moved).unwrap();
        assert!(
            again.changes.iter().all(|c| matches!(
                c,
                crate::Change::FlushNeighbors { .. } | crate::Change::SetSysctl { .. }
            )),
            "{:?}",
            again.describe()
        );

        // The same names in an admin's file: refused, naming the entry.
        let mut admin = host.clone();
        admin.own_table_names = None;
        let e = super::plan(&admin, &moved).unwrap_err().to_string();
        assert!(
            e.contains("already registered for table 1001")
                && e.contains("remove that entry from rt_tables(.d)"),
            "{e}"
        );
        // roce-net's own line for a table no roce-net route uses here.
        let mut other = host.clone();
        other.routes.retain(|r| r.table < 1001 || r.table > 1004);
        let e = super::plan(&other, &moved).unwrap_err().to_string();
        assert!(
            e.contains("already registered for table 1001")
                && e.contains("another network namespace")
                && !e.contains("remove that entry"),
            "{e}"
        );
    }

    /// Two namespaces with the same tables and one names file: A registers its
    /// names; B's plan keeps them all (nothing to rename, no notes missing); A
    /// then plans no name change: nothing flips back and forth.
    #[test]
    fn two_namespaces_sharing_names_do_not_flip_flop() {
        let (mut a, policy) = fresh();
        let mut b = other_namespace(&a);
        let plan_a = super::plan(&a, &policy).unwrap();
        assert_eq!(name_changes(&plan_a).len(), 4);
        // A's apply registers its names in the host-wide file.
        let shared = plan_a.desired.table_names.clone();
        a.table_names.extend(shared.clone());
        b.table_names.extend(shared.clone());
        let plan_b = super::plan(&b, &policy).unwrap();
        assert!(
            name_changes(&plan_b).is_empty(),
            "{:?}",
            name_changes(&plan_b)
        );
        assert_eq!(plan_b.desired.table_names, shared);
        assert_eq!(plan_b.kept_table_names().len(), 4);
        // Still nothing for A to rename.
        let again_a = super::plan(&a, &policy).unwrap();
        assert!(name_changes(&again_a).is_empty());
        assert!(again_a.notes().is_empty());
        // And B, applied (its other changes), stays without name changes.
        let again_b = super::plan(&b, &policy).unwrap();
        assert!(name_changes(&again_b).is_empty());
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
