//! Resolving a policy against a host: which NICs, their addresses, tables,
//! priorities and gateways, with every host-dependent check.

use super::de::{join_index, join_key};
use super::glob::{glob_match, is_glob};
use super::{policy_err, ExtraRoute, Policy};
use crate::error::Result;
use crate::model::{Family, HostState, Route, RuleAction};
use crate::scope::{natural_cmp, AddressIndex};
use ipnet::IpNet;
use std::net::IpAddr;

/// One managed address of a NIC: the source of its family's rule, its subnet
/// (the route in the NIC's table) and the family's default gateway, if given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NicFamily {
    pub(crate) address: IpAddr,
    pub(crate) network: IpNet,
    pub(crate) gateway: Option<IpAddr>,
}

impl NicFamily {
    pub(crate) fn family(&self) -> Family {
        Family::of(&self.address)
    }
}

/// One managed NIC, fully resolved: one table and one rule priority for all
/// its families, a [`NicFamily`] for each managed family it has an address of
/// (IPv4 first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NicLayout {
    pub(crate) ifname: String,
    pub(crate) families: Vec<NicFamily>,
    pub(crate) table: u32,
    pub(crate) table_name: String,
    pub(crate) priority: u32,
    pub(crate) extra_routes: Vec<ExtraRoute>,
}

impl NicLayout {
    /// Its managed address of `family`.
    pub(crate) fn family(&self, family: Family) -> Option<&NicFamily> {
        self.families.iter().find(|f| f.family() == family)
    }
}

/// The resolved layout of a policy on a host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Layout {
    pub(crate) nics: Vec<NicLayout>,
}

/// The managed addresses of a NIC ([`crate::scope::nic_address`]) of the
/// families the policy manages, IPv4 first, with their prefix lengths.
fn nic_addrs(policy: &Policy, by_if: &AddressIndex, ifname: &str) -> Vec<(IpAddr, u8)> {
    policy
        .family
        .list()
        .into_iter()
        .filter_map(|f| by_if.nic_address(ifname, f))
        .map(|a| (a.address, a.prefix_len))
        .collect()
}

fn net_of(addr: IpAddr, len: u8) -> IpNet {
    IpNet::new(addr, len)
        .map(|n| n.trunc())
        .unwrap_or_else(|_| IpNet::from(addr))
}

/// The words for the families a policy manages, as errors say them.
fn family_words(policy: &Policy) -> &'static str {
    match policy.family {
        crate::model::AddressFamilies::Both => "global IPv4 or IPv6",
        crate::model::AddressFamilies::Ipv4 => "global IPv4",
        crate::model::AddressFamilies::Ipv6 => "global IPv6",
    }
}

fn list_names(names: impl IntoIterator<Item = impl AsRef<str>>) -> String {
    let v: Vec<String> = names.into_iter().map(|s| s.as_ref().to_string()).collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// A foreign route or rule where the policy wants to put its own: in a managed
/// NIC's table, or at its rule priority. Validation refuses the policy with
/// `error`; the doctor shows how to remove the object and what the plan is then.
#[derive(Debug, Clone)]
pub(crate) struct Obstacle {
    /// The managed NIC whose table or priority it takes.
    pub(crate) ifname: String,
    /// The object.
    pub(crate) object: ForeignObject,
    /// The refusal validation gives for it.
    pub(crate) error: crate::Error,
}

/// A foreign object in the way ([`Obstacle`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ForeignObject {
    /// A route in a managed table.
    Route(Route),
    /// A rule using a managed table or priority.
    Rule(crate::model::Rule),
}

/// Every foreign object in the way, per NIC in order: routes in its table, rules
/// using its table, rules at its priority (each object once).
fn obstacles(
    policy: &Policy,
    host: &HostState,
    nics: &[NicLayout],
    table_paths: &[String],
) -> Vec<Obstacle> {
    let p = policy.protocol;
    let mut found: Vec<Obstacle> = Vec::new();
    let mut push = |ifname: &str, object: ForeignObject, error: crate::Error| {
        if !found.iter().any(|o| o.object == object) {
            found.push(Obstacle {
                ifname: ifname.to_string(),
                object,
                error,
            });
        }
    };
    for (nic, tpath) in nics.iter().zip(table_paths) {
        // The kernel keeps each family's tables and rules apart: only those of
        // the families this NIC is managed in are in the way.
        let managed = |f: Family| nic.family(f).is_some();
        for fr in host.routes.iter().filter(|rt| {
            rt.table == nic.table
                && managed(rt.family)
                && rt.protocol != p
                && !is_adoptable_route(rt, nic)
        }) {
            push(
                &nic.ifname,
                ForeignObject::Route(fr.clone()),
                policy_err(
                    tpath,
                    format!(
                        "table {} (for {}) already holds a route roce-net does not own \
                         (protocol {} is not {p}): `{}`; choose another table or remove that route",
                        nic.table, nic.ifname, fr.protocol, fr
                    ),
                ),
            );
        }
        for fr in host.rules.iter().filter(|ru| {
            ru.table == nic.table
                && managed(ru.family)
                && ru.action == RuleAction::ToTable
                && ru.protocol != p
                && !is_adoptable_rule(ru, nic)
        }) {
            push(
                &nic.ifname,
                ForeignObject::Rule(fr.clone()),
                policy_err(
                    tpath,
                    format!(
                        "table {} (for {}) is already used by a rule roce-net does not own \
                         (protocol {} is not {p}): `{}`; choose another table or remove that rule",
                        nic.table, nic.ifname, fr.protocol, fr
                    ),
                ),
            );
        }
        for fr in host.rules.iter().filter(|ru| {
            ru.priority == nic.priority
                && managed(ru.family)
                && ru.protocol != p
                && !is_adoptable_rule(ru, nic)
        }) {
            push(
                &nic.ifname,
                ForeignObject::Rule(fr.clone()),
                policy_err(
                    "routing.rule_priority_base",
                    format!(
                        "rule priority {} (for {}) is already used by a rule roce-net does not own \
                         (protocol {} is not {p}): `{}`; choose another rule_priority_base or remove that rule",
                        nic.priority,
                        nic.ifname,
                        fr.protocol,
                        fr
                    ),
                ),
            );
        }
    }
    found
}

/// Resolve a policy on a host; foreign objects in the way refuse it.
pub(crate) fn resolve(policy: &Policy, host: &HostState) -> Result<Layout> {
    resolve_inner(policy, host, None)
}

/// Resolve a policy on a host as if the foreign objects in the way were gone,
/// and say which they are (for the doctor's remediation).
pub(crate) fn resolve_past_obstacles(
    policy: &Policy,
    host: &HostState,
) -> Result<(Layout, Vec<Obstacle>)> {
    let mut found = Vec::new();
    let layout = resolve_inner(policy, host, Some(&mut found))?;
    Ok((layout, found))
}

fn resolve_inner(
    policy: &Policy,
    host: &HostState,
    obstacles_out: Option<&mut Vec<Obstacle>>,
) -> Result<Layout> {
    let by_if = AddressIndex::new(host);
    let all_ifs: Vec<&str> = host
        .interfaces
        .iter()
        .map(|i| i.name.as_str())
        .filter(|n| !by_if.is_loopback(n))
        .collect();

    // 1. Candidates, with whether each was named literally.
    let mut cands = candidates(policy, host, &all_ifs)?;

    // 2. Exclusions.
    let matched: Vec<String> = cands.iter().map(|(n, _)| n.clone()).collect();
    cands.retain(|(n, _)| !policy.nics.exclude.iter().any(|p| glob_match(p, n)));

    // 3. Addresses.
    let nics = addressed(policy, &by_if, &all_ifs, &cands, &matched)?;
    let selected: Vec<&str> = nics.iter().map(|n| n.0.as_str()).collect();

    // 4. Tables and priorities.
    let (mut out, table_paths) = tables_and_priorities(policy, host, &nics, &selected)?;

    // 5. Foreign objects in our tables and at our priorities.
    if policy.routing.enabled {
        let found = obstacles(policy, host, &out, &table_paths);
        match obstacles_out {
            Some(v) => *v = found,
            None => {
                if let Some(o) = found.into_iter().next() {
                    return Err(o.error);
                }
            }
        }
    }

    // 6. Table names.
    if policy.register_table_names {
        check_table_names(host, &out, policy.protocol)?;
    }

    // 7. Gateways.
    gateways(policy, host, &selected, &mut out)?;

    // 8. Extra routes.
    extra_routes(policy, host, &selected, &mut out)?;

    Ok(Layout { nics: out })
}

/// A candidate NIC and, when the policy named it literally, the path of that
/// name (`nics.include[i]`).
type Candidate = (String, Option<String>);

/// A selected NIC: its name and managed addresses with their prefix lengths
/// (IPv4 first).
type AddressedNic = (String, Vec<(IpAddr, u8)>);

/// Step 1: the NICs in scope, or those `nics.include` names (literally, or by
/// a glob over `all_ifs`); a literal name that does not exist refuses the policy.
fn candidates(policy: &Policy, host: &HostState, all_ifs: &[&str]) -> Result<Vec<Candidate>> {
    let mut cands: Vec<Candidate> = Vec::new();
    match &policy.nics.include {
        None => {
            // The NICs in scope ([`crate::scope`]); those without an address
            // are dropped below.
            for n in crate::scope::nics_in_scope(host) {
                cands.push((n, None));
            }
        }
        Some(list) => {
            for (i, pat) in list.iter().enumerate() {
                let path = join_index("nics.include", i);
                if is_glob(pat) {
                    for n in all_ifs {
                        if glob_match(pat, n) && !cands.iter().any(|(c, _)| c == n) {
                            cands.push((n.to_string(), None));
                        }
                    }
                } else {
                    if host.interface(pat).is_none() {
                        return Err(policy_err(
                            &path,
                            format!(
                                "interface {pat} does not exist on this host (interfaces: {})",
                                list_names(all_ifs)
                            ),
                        ));
                    }
                    if let Some(c) = cands.iter_mut().find(|(c, _)| c == pat) {
                        c.1 = Some(path);
                    } else {
                        cands.push((pat.clone(), Some(path)));
                    }
                }
            }
        }
    }
    Ok(cands)
}

/// Step 3: the candidates left after the exclusions (`cands`; `matched` before
/// them) that have a managed address of a family the policy manages, in
/// natural name order. A literal name without one, no NIC left, or two NICs
/// with one address refuse the policy.
fn addressed(
    policy: &Policy,
    by_if: &AddressIndex,
    all_ifs: &[&str],
    cands: &[Candidate],
    matched: &[String],
) -> Result<Vec<AddressedNic>> {
    let mut nics: Vec<AddressedNic> = Vec::new();
    for (name, literal) in cands {
        let addrs = nic_addrs(policy, by_if, name);
        if !addrs.is_empty() {
            nics.push((name.clone(), addrs));
        } else if let Some(path) = literal {
            return Err(policy_err(
                path,
                format!(
                    "interface {name} has no {} address; give it one or leave it out",
                    family_words(policy)
                ),
            ));
        }
    }
    if nics.is_empty() {
        return Err(no_nic_to_manage(policy, all_ifs, cands, matched));
    }
    nics.sort_by(|a, b| natural_cmp(&a.0, &b.0));
    for (i, (n, addrs)) in nics.iter().enumerate() {
        for (a, _) in addrs {
            if let Some((m, _)) = nics[..i]
                .iter()
                .find(|(_, b)| b.iter().any(|(x, _)| x == a))
            {
                return Err(policy_err(
                    "nics",
                    format!("{m} and {n} both have address {a}; one source rule cannot serve both"),
                ));
            }
        }
    }
    Ok(nics)
}

/// Why no NIC is left to manage: what automatic selection, `nics.include`,
/// `nics.exclude` or the addresses left out.
fn no_nic_to_manage(
    policy: &Policy,
    all_ifs: &[&str],
    cands: &[Candidate],
    matched: &[String],
) -> crate::Error {
    let how = if policy.nics.is_auto() {
        "automatic selection found none: no RDMA device has a netdev here and no two NICs \
         share an IPv4 subnet or an IPv6 prefix; list them in nics.include"
            .to_string()
    } else if matched.is_empty() {
        // Only globs can match nothing: a literal name that does not exist
        // was refused above.
        format!(
            "nics.include ({}) matches no interface here (interfaces: {})",
            policy
                .nics
                .include
                .as_deref()
                .unwrap_or_default()
                .join(", "),
            list_names(all_ifs)
        )
    } else if cands.is_empty() {
        format!(
            "nics.exclude ({}) leaves none of the included interfaces ({})",
            policy.nics.exclude.join(", "),
            matched.join(", ")
        )
    } else {
        let left: Vec<&str> = cands.iter().map(|(n, _)| n.as_str()).collect();
        format!(
            "none of the selected interfaces ({}) has a {} address",
            left.join(", "),
            family_words(policy)
        )
    };
    policy_err("nics", format!("no NIC to manage: {how}"))
}

/// The refusal of a policy key at `path` that names `name`, an interface that
/// is not one of the managed NICs (`selected`): it does not exist, or is not managed.
fn not_managed(host: &HostState, path: &str, name: &str, selected: &[&str]) -> crate::Error {
    let why = if host.interface(name).is_none() {
        format!("interface {name} does not exist on this host")
    } else {
        format!("{name} is not a managed NIC")
    };
    policy_err(path, format!("{why} (managed: {})", list_names(selected)))
}

/// Step 4: each NIC's table (its `routing.tables` entry, else `table_base + n`)
/// and rule priority (`rule_priority_base + n`), `n` its stable slot; with the
/// policy path each table came from. Reserved or shared tables, and priorities
/// at or after the main table's rule, refuse the policy.
fn tables_and_priorities(
    policy: &Policy,
    host: &HostState,
    nics: &[AddressedNic],
    selected: &[&str],
) -> Result<(Vec<NicLayout>, Vec<String>)> {
    let r = &policy.routing;
    for name in r.tables.keys() {
        if !selected.contains(&name.as_str()) {
            return Err(not_managed(
                host,
                &join_key("routing.tables", name),
                name,
                selected,
            ));
        }
    }
    let mut out: Vec<NicLayout> = Vec::new();
    let mut table_paths: Vec<String> = Vec::new();
    let slots = stable_slots(policy, host, nics);
    for (i, (name, addrs)) in nics.iter().enumerate() {
        let n = slots[i];
        let (table, tpath) = match r.tables.get(name) {
            Some(t) => (*t, join_key("routing.tables", name)),
            None => {
                let t = r.table_base.checked_add(n).ok_or_else(|| {
                    policy_err(
                        "routing.table_base",
                        format!("table_base {} + {n} (for {name}) overflows", r.table_base),
                    )
                })?;
                (t, "routing.table_base".to_string())
            }
        };
        if let Some(res) = reserved_table(table) {
            return Err(policy_err(
                &tpath,
                format!(
                    "table {table} (for {name}) is reserved ({res}); pick another id (ids above 255 are fine)"
                ),
            ));
        }
        if let Some(prev) = out.iter().find(|o| o.table == table) {
            return Err(policy_err(
                &tpath,
                format!(
                    "table {table} for {name} is also the table of {}; each NIC needs its own",
                    prev.ifname
                ),
            ));
        }
        let priority = r.rule_priority_base + n;
        if priority >= super::MAIN_RULE_PRIORITY {
            return Err(policy_err(
                "routing.rule_priority_base",
                format!(
                    "priority {priority} for {name} would come at or after the main table's rule \
                     ({}) and never match; lower the base",
                    super::MAIN_RULE_PRIORITY
                ),
            ));
        }
        out.push(NicLayout {
            ifname: name.clone(),
            families: addrs
                .iter()
                .map(|(a, len)| NicFamily {
                    address: *a,
                    network: net_of(*a, *len),
                    gateway: None,
                })
                .collect(),
            table,
            table_name: format!("{}{name}", r.table_name_prefix),
            priority,
            extra_routes: Vec::new(),
        });
        table_paths.push(tpath);
    }
    Ok((out, table_paths))
}

/// Step 6: each table name iproute2 can hold, and not registered for another
/// table, unless roce-net's own names file registered it for a table of this
/// namespace that this layout no longer uses (`routing.table_base` changed
/// since an apply): the planner moves that line itself.
fn check_table_names(host: &HostState, nics: &[NicLayout], protocol: u8) -> Result<()> {
    for nic in nics {
        if let Some(why) = crate::rt_tables::table_name_problem(&nic.table_name) {
            return Err(policy_err(
                "routing.table_name_prefix",
                format!(
                    "table name {} for {} (table {}) is not a valid iproute2 table name: \
                     {why}; change the prefix or set register_table_names: false",
                    crate::input::excerpt(&nic.table_name, 64),
                    nic.ifname,
                    nic.table
                ),
            ));
        }
        let moved = |id: u32| {
            !nics.iter().any(|n| n.table == id)
                && host.own_table_name_here(id, protocol) == Some(nic.table_name.as_str())
        };
        if let Some((id, _)) = host
            .table_names
            .iter()
            .find(|(id, n)| **n == nic.table_name && **id != nic.table && !moved(**id))
        {
            let own = host.own_table_names.as_ref().and_then(|m| m.get(id));
            let remedy = if own == Some(&nic.table_name) {
                // roce-net's own line, but not for a table of this namespace:
                // another namespace's NIC of the same name.
                format!(
                    "roce-net registered it for table {id} of another network namespace (no \
                     roce-net route here uses that table); give this namespace its own \
                     routing.table_name_prefix, or set register_table_names: false"
                )
            } else {
                "remove that entry from rt_tables(.d), change the prefix, or set \
                 register_table_names: false"
                    .to_string()
            };
            return Err(policy_err(
                "routing.table_name_prefix",
                format!(
                    "table name {:?} (for table {}) is already registered for table {id}; \
                     {remedy}",
                    nic.table_name, nic.table
                ),
            ));
        }
    }
    Ok(())
}

/// Step 7: each NIC's default gateways, from its exact `routing.default_gateway`
/// key or the one glob that matches it, each checked to be on its link and
/// given to the NIC's address of its family. A gateway of a family the NIC is
/// not managed in is refused under the NIC's own key, and left out when a glob
/// gave it (`"*": [198.18.0.1, "fe80::1"]` on a host whose NICs have IPv4 only).
fn gateways(
    policy: &Policy,
    host: &HostState,
    selected: &[&str],
    nics: &mut [NicLayout],
) -> Result<()> {
    let r = &policy.routing;
    for key in r.default_gateway.keys() {
        let path = join_key("routing.default_gateway", key);
        if !is_glob(key) && !selected.contains(&key.as_str()) {
            return Err(not_managed(host, &path, key, selected));
        }
    }
    for nic in nics.iter_mut() {
        let exact = r.default_gateway.get_key_value(&nic.ifname);
        let chosen = match exact {
            Some(x) => Some(x),
            None => {
                let globs: Vec<(&String, &super::Gateways)> = r
                    .default_gateway
                    .iter()
                    .filter(|(k, _)| is_glob(k) && glob_match(k, &nic.ifname))
                    .collect();
                if globs.len() > 1 {
                    return Err(policy_err(
                        &join_key("routing.default_gateway", globs[1].0),
                        format!(
                            "{} matches both {:?} and {:?}; name it exactly",
                            nic.ifname, globs[0].0, globs[1].0
                        ),
                    ));
                }
                globs.first().copied()
            }
        };
        let Some((key, gws)) = chosen else {
            continue;
        };
        let path = join_key("routing.default_gateway", key);
        for gw in &gws.0 {
            let family = Family::of(gw);
            if nic.family(family).is_none() {
                if is_glob(key) {
                    continue;
                }
                return Err(policy_err(
                    &path,
                    format!(
                        "gateway {gw}: {} is not managed in {} (it has no global address \
                         of that family, or the policy's family leaves it out)",
                        nic.ifname,
                        family_name(family)
                    ),
                ));
            }
            let gw = check_on_link(&path, nic, gw)?;
            if let Some(f) = nic.families.iter_mut().find(|f| f.family() == family) {
                f.gateway = Some(gw);
            }
        }
    }
    Ok(())
}

fn family_name(f: Family) -> &'static str {
    match f {
        Family::Inet => "IPv4",
        Family::Inet6 => "IPv6",
    }
}

/// Step 8: each extra route given to its managed NIC (in its table, for the
/// NIC's address of the route's family), its `via` on the link, and not a route
/// the default gateway or the subnet route already adds.
fn extra_routes(
    policy: &Policy,
    host: &HostState,
    selected: &[&str],
    nics: &mut [NicLayout],
) -> Result<()> {
    let r = &policy.routing;
    for (i, e) in r.extra_routes.iter().enumerate() {
        let path = join_index("routing.extra_routes", i);
        let Some(nic) = nics.iter_mut().find(|n| n.ifname == e.dev) else {
            return Err(not_managed(host, &format!("{path}.dev"), &e.dev, selected));
        };
        let family = Family::of(&e.dst.addr());
        let Some(fam) = nic.family(family).cloned() else {
            return Err(policy_err(
                &format!("{path}.dst"),
                format!(
                    "{} is {} but {} is not managed in {} (it has no global address of \
                     that family, or the policy's family leaves it out)",
                    e.dst,
                    family_name(family),
                    nic.ifname,
                    family_name(family)
                ),
            ));
        };
        if let Some(via) = &e.via {
            check_on_link(&format!("{path}.via"), nic, via)?;
        }
        if e.metric.is_none() {
            if e.dst.prefix_len() == 0 && fam.gateway.is_some() {
                return Err(policy_err(
                    &format!("{path}.dst"),
                    format!(
                        "a default route for {} is already given by routing.default_gateway",
                        nic.ifname
                    ),
                ));
            }
            if r.subnet_route && e.dst == fam.network {
                return Err(policy_err(
                    &format!("{path}.dst"),
                    format!(
                        "{} is {}'s subnet route, which routing.subnet_route already adds",
                        e.dst, nic.ifname
                    ),
                ));
            }
        }
        nic.extra_routes.push(e.clone());
    }
    Ok(())
}

/// Each NIC's slot `n` (table `table_base + n`, priority
/// `rule_priority_base + n`). A NIC keeps the slot it already has on the host
/// while it exists, so that one NIC losing its address or vanishing never
/// moves the others to other tables and priorities: the slot of one of its
/// source rules (roce-net's protocol, `from` one of its managed addresses, the
/// IPv4 one first, at `rule_priority_base + n`, in
/// `table_base + n` or its `routing.tables` entry): this namespace's own kernel
/// state, unlike the host-wide table names (another namespace's NIC may have the
/// same name), and tied to the NIC's address as it is now. The other NICs take
/// the lowest free slots, in natural name order (a fresh host: 1, 2, 3, ...).
fn stable_slots(policy: &Policy, host: &HostState, nics: &[AddressedNic]) -> Vec<u32> {
    let r = &policy.routing;
    // No more slots than NICs on the host can be in use; bound what is believed.
    let max = u32::try_from(host.interfaces.len())
        .unwrap_or(u32::MAX)
        .saturating_add(nics.len() as u32);
    let from_rule = |name: &str, addr: IpAddr| -> Option<u32> {
        let src = ipnet::IpNet::from(addr);
        host.rules.iter().find_map(|ru| {
            let n = ru.priority.checked_sub(r.rule_priority_base)?;
            let table_ok = match r.tables.get(name) {
                Some(t) => ru.table == *t,
                None => Some(ru.table) == r.table_base.checked_add(n),
            };
            (ru.protocol == policy.protocol
                && ru.src == Some(src)
                && table_ok
                && (1..=max).contains(&n))
            .then_some(n)
        })
    };
    let mut slots: Vec<Option<u32>> = Vec::with_capacity(nics.len());
    for (name, addrs) in nics {
        let n = addrs
            .iter()
            .find_map(|(a, _)| from_rule(name, *a).filter(|n| !slots.contains(&Some(*n))));
        slots.push(n);
    }
    let mut next = 1u32;
    slots
        .iter()
        .map(|s| match s {
            Some(n) => *n,
            None => {
                while slots.contains(&Some(next)) {
                    next += 1;
                }
                let n = next;
                next += 1;
                n
            }
        })
        .collect()
}

/// A gateway on the NIC's link for its family: in the subnet of the NIC's
/// address of that family (and not that address, the subnet's own or, for
/// IPv4, its broadcast), or for IPv6 a link-local address (what routers
/// advertise, on-link on every NIC).
fn check_on_link(path: &str, nic: &NicLayout, gw: &IpAddr) -> Result<IpAddr> {
    let family = Family::of(gw);
    let Some(f) = nic.family(family) else {
        return Err(policy_err(
            path,
            format!(
                "{gw} is {} but {} is not managed in {}",
                family_name(family),
                nic.ifname,
                family_name(family)
            ),
        ));
    };
    if let IpAddr::V6(v6) = gw {
        if (v6.segments()[0] & 0xffc0) == 0xfe80 {
            return Ok(*gw);
        }
    }
    if !f.network.contains(gw) {
        return Err(policy_err(
            path,
            format!(
                "gateway {gw} is not in {}'s subnet {}; the kernel would refuse it",
                nic.ifname, f.network
            ),
        ));
    }
    if *gw == f.address || *gw == f.network.network() || *gw == f.network.broadcast() {
        return Err(policy_err(
            path,
            format!(
                "gateway {gw} is {}'s own, network or broadcast address",
                nic.ifname
            ),
        ));
    }
    Ok(*gw)
}

/// The reserved table name, if the id is reserved.
pub(crate) fn reserved_table(t: u32) -> Option<&'static str> {
    match t {
        crate::model::RT_TABLE_UNSPEC => Some("unspec"),
        crate::model::RT_TABLE_DEFAULT => Some("default"),
        crate::model::RT_TABLE_MAIN => Some("main"),
        crate::model::RT_TABLE_LOCAL => Some("local"),
        _ => None,
    }
}

/// A foreign route that is exactly what roce-net would install in this NIC's
/// table but for its protocol: what networkd, netplan, NetworkManager or a boot
/// script recreates from roce-net's persisted configuration (they cannot set
/// roce-net's protocol). It satisfies the policy and is left alone. Either
/// family: the subnet route of the NIC's address of the route's family (with
/// that address as `src` for IPv4; IPv6 routes carry none), or a default route
/// through a gateway.
pub(crate) fn is_adoptable_route(rt: &crate::model::Route, nic: &NicLayout) -> bool {
    let Some(f) = nic.family(rt.family) else {
        return false;
    };
    let src_ok = match rt.family {
        Family::Inet => rt.prefsrc == Some(f.address),
        Family::Inet6 => rt.prefsrc.is_none(),
    };
    rt.table == nic.table
        && rt.dev.as_deref() == Some(nic.ifname.as_str())
        && ((rt.dst == f.network && src_ok && rt.gateway.is_none())
            || (rt.dst.prefix_len() == 0 && rt.gateway.is_some()))
}

/// A foreign rule that is exactly roce-net's `from <nic-ip> lookup <table>` at the
/// NIC's priority, for one of its managed addresses, but for its protocol (see
/// [`is_adoptable_route`]).
pub(crate) fn is_adoptable_rule(ru: &crate::model::Rule, nic: &NicLayout) -> bool {
    ru.priority == nic.priority
        && ru.table == nic.table
        && ru.action == RuleAction::ToTable
        && ru.src.is_some_and(|s| {
            nic.families
                .iter()
                .any(|f| s.addr() == f.address && s.prefix_len() == s.max_prefix_len())
        })
        && ru.dst.is_none()
        && ru.iif.is_none()
        && ru.oif.is_none()
        && ru.fwmark.unwrap_or(0) == 0
        && !ru.invert
}
