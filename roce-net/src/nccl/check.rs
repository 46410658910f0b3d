//! `nccl-env --check`: validate an NCCL environment a user already has against
//! the snapshot, with NCCL's own parsing and selection ([`super::env`],
//! [`super::model`]). Findings use the doctor's [`Finding`] type; their ids are
//! documented in `docs/nccl.md`.

use super::env::{parse_list, NameList, MAX_IB_DEVS, MAX_IFS};
use super::model::{
    addr_family, addr_range, link_local_gid, nccl_select_gid, strtoll, AddrFamily, AddrRange,
    NcclEnv, NcclVersion, Selection,
};
use super::{choice, target_gid, NcclOptions};
use crate::doctor::{sort_findings, Finding, Severity, Subject};
use crate::model::ifname_word;
use crate::model::{GidType, HostState, LinkLayer, OperState, PortRef, RdmaDevice, RdmaPort};
use crate::scope::port_netdev;
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

// One id per check, as the doctor's (`doctor/arp_ignore.rs` has its `ID`):
// the id a finding carries is named where it is reported, listed in
// `NCCL_CHECK_IDS` and documented in docs/nccl.md (`roce-net/tests/it/nccl_model.rs`
// fails when one is missing there or two are the same). The one table below
// gives each check its id and the list, so a check cannot be left out of it.

crate::named::named_enum! {
    /// The checks of [`nccl_check`], each with the id its findings carry.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Check (fn id) {
        /// An `NCCL_IB_HCA` entry matches no active port (or is past the 32-entry
        /// limit); an error when no port is selected at all.
        HcaMatchesNothing = "nccl-hca-matches-nothing",
        /// An entry that names a device exactly also selects, as a prefix, other
        /// devices (`mlx5_1` selects `mlx5_10`).
        HcaOvermatch = "nccl-hca-overmatch",
        /// The selection holds InfiniBand and RoCE ports, which NCCL refuses to connect.
        HcaMixedLinkLayers = "nccl-hca-mixed-link-layers",
        /// `NCCL_IB_GID_INDEX` (or index 0 before 2.21) is a GID a RoCE v2 QP of
        /// the NIC's address cannot use.
        GidIndexBad = "nccl-gid-index-bad",
        /// Without `NCCL_IB_GID_INDEX`, the GID NCCL picks with this environment is
        /// not the target, or NCCL fails on the device.
        GidPickWrong = "nccl-gid-pick-wrong",
        /// `NCCL_IB_ADDR_RANGE` is a range NCCL cannot use.
        AddrRangeInvalid = "nccl-addr-range-invalid",
        /// No running interface with an address matches `NCCL_SOCKET_IFNAME`.
        SocketIfnameMatchesNothing = "nccl-socket-ifname-matches-nothing",
        /// A prefix `NCCL_SOCKET_IFNAME` selects several interfaces.
        SocketIfnameOvermatch = "nccl-socket-ifname-overmatch",
        /// `NCCL_IB_TC` lands on a priority without PFC while PFC is on another.
        TcNoPfc = "nccl-tc-no-pfc",
        /// `NCCL_IB_TC` sets a DSCP but the NIC trusts PCP.
        TcTrustPcp = "nccl-tc-trust-pcp",
        /// A value NCCL parses differently than it reads (`010` is 8, quotes kept).
        ValueMisparsed = "nccl-value-misparsed",
        /// A variable name NCCL never reads, close to one it does.
        VariableUnrecognized = "nccl-variable-unrecognized",
    }
}

/// Every id [`nccl_check`] can report, in documentation order.
pub const NCCL_CHECK_IDS: &[&str] = Check::NAMES;

fn host() -> Subject {
    Subject::default()
}

fn port_subject(d: &RdmaDevice, p: &RdmaPort) -> Subject {
    let mut s = Subject::default().with_port(&d.name, p.port);
    s.interface = port_netdev(d, p);
    s
}

/// The ports NCCL considers: active ([`RdmaPort::is_active`], the doctor's
/// rule too), InfiniBand or Ethernet link layer.
fn nccl_ports(state: &HostState) -> Vec<(&RdmaDevice, &RdmaPort)> {
    state
        .rdma
        .iter()
        .flat_map(|d| d.ports.iter().map(move |p| (d, p)))
        .filter(|(_, p)| {
            p.is_active()
                && matches!(
                    p.link_layer,
                    Some(LinkLayer::Ethernet) | Some(LinkLayer::InfiniBand)
                )
        })
        .collect()
}

/// Check an NCCL environment against a snapshot.
pub fn nccl_check(state: &HostState, env: &NcclEnv, opts: &NcclOptions) -> Vec<Finding> {
    let version = opts.version.unwrap_or(NcclVersion::MODEL);
    let mut out = Vec::new();
    misparsed(env, &mut out);
    unrecognized(env, &mut out);
    let ports = nccl_ports(state);
    let selected = hca(state, env, &ports, &mut out);
    gids(state, env, version, &selected, &mut out);
    addr_range_check(env, version, &mut out);
    socket_ifname(state, env, &mut out);
    traffic_class(state, env, &selected, &mut out);
    crate::doctor::in_snapshot_netns(state, &mut out);
    sort_findings(&mut out);
    out
}

/// Edit distance (insertions, deletions, substitutions, adjacent swaps) between
/// two ASCII names, or `None` once it exceeds `max`.
fn distance(a: &str, b: &str, max: usize) -> Option<usize> {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len().abs_diff(b.len()) > max {
        return None;
    }
    let w = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * w];
    for i in 0..=a.len() {
        for j in 0..=b.len() {
            d[i * w + j] = if i == 0 || j == 0 {
                i + j
            } else {
                let sub = d[(i - 1) * w + j - 1] + usize::from(a[i - 1] != b[j - 1]);
                let mut v = sub.min(d[(i - 1) * w + j] + 1).min(d[i * w + j - 1] + 1);
                if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                    v = v.min(d[(i - 2) * w + j - 2] + 1);
                }
                v
            };
        }
    }
    Some(d[a.len() * w + b.len()]).filter(|&n| n <= max)
}

/// The name NCCL reads that `name` most likely meant: itself uppercased, else
/// the closest known name at most two edits away (ties: the first in order).
fn meant(name: &str) -> Option<&'static str> {
    use super::names::KNOWN;
    let up = name.to_ascii_uppercase();
    if let Ok(i) = KNOWN.binary_search(&up.as_str()) {
        return Some(KNOWN[i]);
    }
    if !up.starts_with("NCCL_") {
        return None;
    }
    KNOWN
        .iter()
        .filter_map(|k| distance(&up, k, 2).map(|d| (d, *k)))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// `nccl-variable-unrecognized`: a name NCCL never looks up because it has
/// whitespace around it (`NCCL_IB_GID_INDEX = 3` in nccl.conf defines
/// `"NCCL_IB_GID_INDEX "`: NCCL's `setEnvFile` keeps everything before `=`), is
/// in the wrong case, or is an `NCCL_*` name close to one NCCL reads (see
/// [`super::names`]). Names NCCL reads, and names close to none, are left alone.
fn unrecognized(env: &NcclEnv, out: &mut Vec<Finding>) {
    use super::names::KNOWN;
    for (k, v) in &env.vars {
        let name = k.trim_matches(|c: char| c.is_ascii_whitespace());
        if name.is_empty() || KNOWN.binary_search(&k.as_str()).is_ok() {
            continue;
        }
        let spaced = name != k;
        let target = if KNOWN.binary_search(&name).is_ok() {
            Some(name)
        } else {
            meant(name)
        };
        let Some(target) = target else {
            if spaced && name.to_ascii_uppercase().starts_with("NCCL_") {
                out.push(
                    Finding::new(
                        Check::VariableUnrecognized.id(),
                        Severity::Warning,
                        host(),
                        format!(
                            "{k:?} has whitespace around the name: NCCL looks names up \
                             exactly and never reads it"
                        ),
                    )
                    .evidence("variable", k)
                    .evidence("value", v)
                    .fix(vec![format!("{name}={}", v.trim())], None),
                );
            }
            continue;
        };
        let why = if spaced {
            format!(
                "{k:?} has whitespace around the name (nccl.conf keeps everything before '=' \
                 as the name): NCCL reads {target} and never this"
            )
        } else if target.eq_ignore_ascii_case(name) {
            format!("{k} is not {target}: NCCL's names are case-sensitive, it never reads this")
        } else {
            format!("{k} is not a variable NCCL (v2.30.7-1) reads; did you mean {target}?")
        };
        // `NAME = value` also leaves a space in the value, which NCCL keeps.
        let value = if spaced { v.trim() } else { v.as_str() };
        let trimmed_value = if value != v {
            "; the fix also drops the whitespace around the value, which NCCL would keep"
        } else {
            ""
        };
        out.push(
            Finding::new(
                Check::VariableUnrecognized.id(),
                Severity::Warning,
                host(),
                format!("{why}{trimmed_value}"),
            )
            .evidence("variable", k)
            .evidence("value", v)
            .evidence("meant", target)
            .fix(vec![format!("{target}={value}")], None),
        );
    }
}

fn misparsed(env: &NcclEnv, out: &mut Vec<Finding>) {
    for (k, v) in &env.vars {
        if !k.starts_with("NCCL_") {
            continue;
        }
        if (v.starts_with('"') && v.ends_with('"') && v.len() >= 2)
            || (v.starts_with('\'') && v.ends_with('\'') && v.len() >= 2)
        {
            out.push(
                Finding::new(
                    Check::ValueMisparsed.id(),
                    Severity::Error,
                    host(),
                    format!(
                        "{k}={v}: the quotes are part of the value (nccl.conf and environment \
                         values are taken literally), so NCCL matches nothing it means"
                    ),
                )
                .evidence("variable", k)
                .evidence("value", v)
                .fix(vec![format!("{k}={}", &v[1..v.len() - 1])], None),
            );
        }
    }
    for k in [
        "NCCL_IB_GID_INDEX",
        "NCCL_IB_TC",
        "NCCL_IB_SL",
        "NCCL_IB_ROCE_VERSION_NUM",
        "NCCL_IB_TIMEOUT",
        "NCCL_IB_RETRY_CNT",
    ] {
        let Some(v) = env.get(k) else { continue };
        let plain = {
            let t = v.strip_prefix('-').unwrap_or(v);
            !t.is_empty()
                && t.bytes().all(|b| b.is_ascii_digit())
                && (t == "0" || !t.starts_with('0'))
        };
        if plain {
            continue;
        }
        let read = strtoll(v);
        out.push(
            Finding::new(
                Check::ValueMisparsed.id(),
                Severity::Warning,
                host(),
                match read {
                    Some(n) => format!(
                        "{k}={v:?} is not a plain decimal number: NCCL reads it with \
                         strtoll(.., 0) as {n}"
                    ),
                    None => format!("{k}={v:?} is out of range: NCCL uses its default"),
                },
            )
            .evidence("variable", k)
            .evidence("value", v)
            .evidence("nccl_reads", read)
            .fix(vec![format!("{k}=<decimal number>")], None),
        );
    }
    if let Some(v) = env.get("NCCL_IB_ADDR_FAMILY") {
        if v != "AF_INET" && v != "AF_INET6" {
            out.push(
                Finding::new(
                    Check::ValueMisparsed.id(),
                    Severity::Warning,
                    host(),
                    format!(
                        "NCCL_IB_ADDR_FAMILY={v:?} is neither AF_INET nor AF_INET6: NCCL uses \
                         AF_INET"
                    ),
                )
                .evidence("variable", "NCCL_IB_ADDR_FAMILY")
                .evidence("value", v)
                .fix(
                    vec!["NCCL_IB_ADDR_FAMILY=AF_INET6 (or unset it)".into()],
                    None,
                ),
            );
        }
    }
    if let Some(v) = env.vars.get("NCCL_SOCKET_IFNAME") {
        if v.len() == 1 {
            out.push(
                Finding::new(
                    Check::ValueMisparsed.id(),
                    Severity::Warning,
                    host(),
                    format!(
                        "NCCL_SOCKET_IFNAME={v:?} has one character: NCCL ignores values that \
                         short and picks an interface itself"
                    ),
                )
                .evidence("variable", "NCCL_SOCKET_IFNAME")
                .evidence("value", v)
                .fix(vec!["NCCL_SOCKET_IFNAME==<interface>".into()], None),
            );
        }
    }
}

/// The ports of `state` that a prefix list's entries were meant to
/// name: an entry naming a device exactly means that device (the one NCCL's
/// prefix match also widens), any other entry every device it prefixes (a family
/// on purpose). Ports as the entry gives them.
fn intended(list: &NameList, state: &HostState) -> BTreeSet<PortRef> {
    let mut out = BTreeSet::new();
    for e in &list.entries {
        let exact = state.rdma.iter().any(|d| d.name == e.name);
        for d in &state.rdma {
            let named = if exact || list.exact {
                d.name == e.name
            } else {
                d.name.starts_with(&e.name)
            };
            if !named {
                continue;
            }
            for p in &d.ports {
                if e.port == -1 || e.port == i64::from(p.port) {
                    out.insert(PortRef::of(d, p));
                }
            }
        }
    }
    out
}

/// The ports the entries of `list` match (before `^` is applied), by NCCL's own
/// matcher ([`NameList::matching_entry`]).
fn matched(list: &NameList, state: &HostState) -> BTreeSet<PortRef> {
    state
        .rdma
        .iter()
        .flat_map(|d| d.ports.iter().map(move |p| (d, p)))
        .filter(|(d, p)| list.matching_entry(&d.name, i64::from(p.port)).is_some())
        .map(|(d, p)| PortRef::of(d, p))
        .collect()
}

/// An exact (`=`) `NCCL_IB_HCA` value that names what `list` was meant to (see
/// [`intended`]), keeping `^` and each entry's `:port...` suffix: an entry naming
/// a device stays as written, a family entry becomes its devices. Checked by
/// parsing it back and running NCCL's matcher over every port of the host; `None`
/// when it would not select exactly that (or exceed `MAX_IB_DEVS`).
pub(crate) fn exact_hca(list: &NameList, state: &HostState) -> Option<String> {
    let mut tokens: Vec<String> = Vec::new();
    for e in &list.entries {
        let suffix = e.text.find(':').map_or("", |i| &e.text[i..]);
        let names: Vec<&str> = if state.rdma.iter().any(|d| d.name == e.name) {
            vec![e.name.as_str()]
        } else {
            state
                .rdma
                .iter()
                .map(|d| d.name.as_str())
                .filter(|n| n.starts_with(&e.name))
                .collect()
        };
        for n in names {
            let t = format!("{n}{suffix}");
            if !tokens.contains(&t) {
                tokens.push(t);
            }
        }
    }
    if tokens.is_empty() {
        return None;
    }
    let value = format!(
        "{}={}",
        if list.exclude { "^" } else { "" },
        tokens.join(",")
    );
    let back = parse_list(&value, MAX_IB_DEVS);
    (back.dropped.is_empty()
        && back.exact
        && back.exclude == list.exclude
        && matched(&back, state) == intended(list, state))
    .then_some(value)
}

/// `NCCL_IB_HCA`: what it selects; reports entries that select nothing or more
/// than their name, and mixed link layers. Returns the selected ports.
fn hca<'a>(
    state: &'a HostState,
    env: &NcclEnv,
    ports: &[(&'a RdmaDevice, &'a RdmaPort)],
    out: &mut Vec<Finding>,
) -> Vec<(&'a RdmaDevice, &'a RdmaPort)> {
    let value = env.vars.get("NCCL_IB_HCA");
    let list = parse_list(value.map(String::as_str).unwrap_or(""), MAX_IB_DEVS);
    let selected: Vec<_> = ports
        .iter()
        .filter(|(d, p)| list.selects(&d.name, i64::from(p.port)))
        .copied()
        .collect();
    let Some(value) = value else {
        mixed(&selected, "all active ports (NCCL_IB_HCA is unset)", out);
        return selected;
    };
    let names: Vec<&str> = state.rdma.iter().map(|d| d.name.as_str()).collect();
    for e in &list.entries {
        let hits: Vec<String> = ports
            .iter()
            .filter(|(d, p)| {
                let one = super::env::NameList {
                    exclude: false,
                    exact: list.exact,
                    entries: vec![e.clone()],
                    dropped: Vec::new(),
                };
                one.selects(&d.name, i64::from(p.port))
            })
            .map(|(d, p)| PortRef::of(d, p).to_string())
            .collect();
        if hits.is_empty() {
            let down: Vec<String> = state
                .rdma
                .iter()
                .filter(|d| {
                    if list.exact {
                        d.name == e.name
                    } else {
                        d.name.starts_with(&e.name)
                    }
                })
                .flat_map(|d| {
                    d.ports
                        .iter()
                        .filter(|p| e.port == -1 || i64::from(p.port) == e.port)
                        .map(move |p| {
                            format!(
                                "{} is {}",
                                PortRef::of(d, p),
                                p.state.as_deref().unwrap_or("?")
                            )
                        })
                })
                .collect();
            out.push(
                Finding::new(
                    Check::HcaMatchesNothing.id(),
                    Severity::Warning,
                    host(),
                    format!(
                        "NCCL_IB_HCA entry {:?} matches no active port{}",
                        e.text,
                        if down.is_empty() {
                            format!(" (devices: {})", names.join(", "))
                        } else {
                            format!(": {}", down.join(", "))
                        }
                    ),
                )
                .evidence("entry", &e.text)
                .evidence("devices", &names)
                .checks(vec!["roce-net nccl-env".into()]),
            );
            continue;
        }
        // The pitfall is an entry naming a device exactly that, as a prefix,
        // also names others (`mlx5_1` -> `mlx5_10`..). An entry no device is
        // named (`mlx5`) selects a family on purpose: nothing to warn about (and
        // `=mlx5` would select nothing, leaving NCCL on sockets).
        let over: Vec<&str> = if list.exact || !names.contains(&e.name.as_str()) {
            Vec::new()
        } else {
            names
                .iter()
                .copied()
                .filter(|n| n.starts_with(&e.name) && *n != e.name)
                .collect()
        };
        if !over.is_empty() {
            let fix = match exact_hca(&list, state) {
                Some(v) => format!("NCCL_IB_HCA={v}"),
                None => "roce-net nccl-env".to_string(),
            };
            out.push(
                Finding::new(
                    Check::HcaOvermatch.id(),
                    Severity::Warning,
                    host(),
                    format!(
                        "NCCL_IB_HCA entry {:?} names device {} and, as a prefix, also {} {} \
                         (NCCL matches names by prefix unless the list starts with '=')",
                        e.text,
                        e.name,
                        if list.exclude { "excludes" } else { "selects" },
                        over.join(", ")
                    ),
                )
                .evidence("entry", &e.text)
                .evidence("also_matches", &over)
                .fix(vec![fix], None),
            );
        }
    }
    for d in &list.dropped {
        out.push(
            Finding::new(
                Check::HcaMatchesNothing.id(),
                Severity::Warning,
                host(),
                format!("NCCL_IB_HCA entry {d:?} is past NCCL's limit of {MAX_IB_DEVS} entries: ignored"),
            )
            .evidence("entry", d)
            .fix(vec!["list at most 32 devices".into()], None),
        );
    }
    if selected.is_empty() && !ports.is_empty() {
        out.push(
            Finding::new(
                Check::HcaMatchesNothing.id(),
                Severity::Error,
                host(),
                format!(
                    "NCCL_IB_HCA={value} selects none of the active ports ({}): NCCL finds no \
                     IB device and falls back to TCP sockets",
                    ports
                        .iter()
                        .map(|(d, p)| PortRef::of(d, p).to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
            .evidence("value", value)
            .fix(vec!["roce-net nccl-env".into()], None),
        );
    }
    mixed(&selected, &format!("NCCL_IB_HCA={value}"), out);
    selected
}

fn mixed(selected: &[(&RdmaDevice, &RdmaPort)], what: &str, out: &mut Vec<Finding>) {
    let ib: Vec<String> = selected
        .iter()
        .filter(|(_, p)| !p.is_roce())
        .map(|(d, p)| PortRef::of(d, p).to_string())
        .collect();
    let roce: Vec<String> = selected
        .iter()
        .filter(|(_, p)| p.is_roce())
        .map(|(d, p)| PortRef::of(d, p).to_string())
        .collect();
    if !ib.is_empty() && !roce.is_empty() {
        out.push(
            Finding::new(
                Check::HcaMixedLinkLayers.id(),
                Severity::Error,
                host(),
                format!(
                    "{what} selects InfiniBand ports ({}) and RoCE ports ({}): NCCL refuses to \
                     connect them (\"Attempted to connect incompatible devices\")",
                    ib.join(", "),
                    roce.join(", ")
                ),
            )
            .evidence("infiniband", &ib)
            .evidence("roce", &roce)
            .fix(vec![format!("NCCL_IB_HCA=={}", roce.join(","))], None),
        );
    }
}

fn type_text(t: &Option<GidType>) -> String {
    t.as_ref()
        .map(|t| match t {
            GidType::RoceV1 => "RoCE v1".to_string(),
            GidType::RoceV2 => "RoCE v2".to_string(),
            GidType::Ib => "IB".to_string(),
            GidType::Other(s) => s.clone(),
        })
        .unwrap_or_else(|| "unknown type".into())
}

fn gids(
    state: &HostState,
    env: &NcclEnv,
    version: NcclVersion,
    selected: &[(&RdmaDevice, &RdmaPort)],
    out: &mut Vec<Finding>,
) {
    let fixed = if version.auto_gid() {
        env.param("NCCL_IB_GID_INDEX", -1) >= 0
    } else {
        true
    };
    let roce: Vec<&(&RdmaDevice, &RdmaPort)> =
        selected.iter().filter(|(_, p)| p.is_roce()).collect();
    // On dual-stack rails the job may run over IPv6 GIDs when its environment
    // asks for them: NCCL_IB_ADDR_FAMILY=AF_INET6 for the automatic selection
    // (where every port has an IPv6 target), or an NCCL_IB_GID_INDEX that is the
    // RoCE v2 GID of the NIC's IPv6 address on more ports than it is the IPv4
    // one's. The target is then the IPv6 GID on every port, so the ports where
    // the index is something else are the ones reported.
    let v6: Vec<Option<(u32, IpAddr)>> =
        roce.iter().map(|(d, p)| ipv6_target(state, d, p)).collect();
    let ipv6_job = if fixed {
        let hits = |t: &dyn Fn(usize) -> Option<u32>| {
            roce.iter()
                .enumerate()
                .filter(|(k, (_, p))| {
                    let i = nccl_select_gid(p, env, version).index();
                    i.is_some() && i == t(*k)
                })
                .count()
        };
        env.get("NCCL_IB_GID_INDEX").is_some()
            && hits(&|k| v6[k].map(|(i, _)| i))
                > hits(&|k| target_gid(state, roce[k].0, roce[k].1).map(|(i, _)| i))
    } else {
        addr_family(env) == AddrFamily::Inet6 && !v6.is_empty() && v6.iter().all(Option::is_some)
    };
    for (k, (d, p)) in roce.iter().enumerate() {
        let sel = nccl_select_gid(p, env, version);
        let target = if ipv6_job {
            v6[k]
        } else {
            target_gid(state, d, p)
        };
        let subject = port_subject(d, p);
        let Selection::Index(i) = sel else {
            let Selection::Fails(why) = sel else { continue };
            out.push(
                Finding::new(
                    if fixed {
                        Check::GidIndexBad.id()
                    } else {
                        Check::GidPickWrong.id()
                    },
                    Severity::Error,
                    subject,
                    format!("{}: {why}", PortRef::of(d, p)),
                )
                .evidence("nccl_version", version.to_string())
                .fix(vec!["roce-net nccl-env".into()], None),
            );
            continue;
        };
        if target.map(|(t, _)| t) == Some(i) {
            continue;
        }
        let g = choice(p, i);
        let problem = if g.gid.is_unspecified() {
            "an empty slot (all-zero GID): the QP cannot reach any peer".to_string()
        } else if link_local_gid(&g.gid) {
            format!(
                "the link-local GID {} ({}): not routable, and not the NIC's address",
                g.gid,
                type_text(&g.gid_type)
            )
        } else if g.gid_type == Some(GidType::RoceV1) {
            format!(
                "{} of {}, a RoCE v1 GID: peers' RoCE v2 QPs do not accept it",
                g.gid,
                g.netdev.as_deref().unwrap_or("?")
            )
        } else {
            let fam = if super::model::gid_family(&g.gid) == AddrFamily::Inet {
                "IPv4"
            } else {
                "IPv6"
            };
            format!(
                "{} ({}, {fam}) of {}",
                g.gid,
                type_text(&g.gid_type),
                g.netdev.as_deref().unwrap_or("?")
            )
        };
        let want = match target {
            Some((t, a)) => format!("; the NIC's address {a} is GID {t}"),
            None => "; the port has no RoCE v2 GID of its NIC's address".to_string(),
        };
        let (id, how) = if fixed {
            (
                Check::GidIndexBad.id(),
                format!(
                    "NCCL_IB_GID_INDEX={} makes NCCL use GID {i} on {}: {problem}",
                    env.get("NCCL_IB_GID_INDEX")
                        .unwrap_or("0 (the default before 2.21)"),
                    PortRef::of(d, p)
                ),
            )
        } else {
            (
                Check::GidPickWrong.id(),
                format!(
                    "with this environment NCCL {version} selects GID {i} on {}: {problem}",
                    PortRef::of(d, p)
                ),
            )
        };
        out.push(
            Finding::new(id, Severity::Error, subject, format!("{how}{want}"))
                .evidence("nccl_index", i)
                .evidence("nccl_gid", g.gid.to_string())
                .evidence("nccl_gid_type", type_text(&g.gid_type))
                .evidence("target_index", target.map(|(t, _)| t))
                .evidence("nccl_version", version.to_string())
                .fix(vec!["roce-net nccl-env".into()], None),
        );
    }
}

/// The RoCE v2 GID of the managed IPv6 address of the port's netdev.
fn ipv6_target(state: &HostState, d: &RdmaDevice, p: &RdmaPort) -> Option<(u32, IpAddr)> {
    let nd = port_netdev(d, p)?;
    let a = crate::scope::nic_address(state, &nd, crate::model::Family::Inet6)?;
    crate::scope::roce_v2_gid_index(p, a.address).map(|i| (i, a.address))
}

fn addr_range_check(env: &NcclEnv, version: NcclVersion, out: &mut Vec<Finding>) {
    let Some(v) = env.get("NCCL_IB_ADDR_RANGE") else {
        return;
    };
    let af = addr_family(env);
    let (sev, msg) = match addr_range(env, af, version) {
        AddrRange::Crash => (
            Severity::Error,
            format!("NCCL_IB_ADDR_RANGE={v:?} has no '/': NCCL 2.21 and 2.22 crash on it, later releases ignore it"),
        ),
        AddrRange::Any if !v.contains('/') => (
            Severity::Warning,
            format!("NCCL_IB_ADDR_RANGE={v:?} has no '/': NCCL ignores it (NCCL 2.21 and 2.22 crash on it)"),
        ),
        AddrRange::Any => (
            Severity::Warning,
            format!(
                "NCCL_IB_ADDR_RANGE={v:?} is not a valid {} prefix for NCCL_IB_ADDR_FAMILY {}: \
                 NCCL ignores it",
                if af == AddrFamily::Inet { "IPv4" } else { "IPv6" },
                if af == AddrFamily::Inet { "AF_INET" } else { "AF_INET6" }
            ),
        ),
        AddrRange::Prefix { len, .. } if len < 0 => (
            Severity::Error,
            format!("NCCL_IB_ADDR_RANGE={v:?} has a negative mask: no GID matches it, NCCL keeps index 0"),
        ),
        AddrRange::Prefix { .. } => return,
    };
    out.push(
        Finding::new(Check::AddrRangeInvalid.id(), sev, host(), msg)
            .evidence("value", v)
            .fix(
                vec!["NCCL_IB_ADDR_RANGE=<address>/<prefix length>".into()],
                None,
            ),
    );
}

fn socket_ifname(state: &HostState, env: &NcclEnv, out: &mut Vec<Finding>) {
    let Some(v) = env.vars.get("NCCL_SOCKET_IFNAME") else {
        return;
    };
    if v.len() <= 1 {
        return;
    }
    let list = parse_list(v, MAX_IFS);
    let fam = match env.get("NCCL_SOCKET_FAMILY") {
        Some("AF_INET") => Some(true),
        Some("AF_INET6") => Some(false),
        _ => None,
    };
    // getifaddrs: running interfaces with an address of the family, not ::1.
    let usable: Vec<&str> = state
        .interfaces
        .iter()
        .filter(|i| i.admin_up && matches!(i.oper_state, OperState::Up | OperState::Unknown))
        .filter(|i| {
            state.addresses_of(&i.name).any(|a| {
                fam.is_none_or(|v4| a.address.is_ipv4() == v4)
                    && a.address != IpAddr::V6(std::net::Ipv6Addr::LOCALHOST)
            })
        })
        .map(|i| i.name.as_str())
        .collect();
    let picked: Vec<&str> = usable
        .iter()
        .copied()
        .filter(|n| list.selects(n, -1))
        .collect();
    if picked.is_empty() {
        let named_down: Vec<&str> = state
            .interfaces
            .iter()
            .map(|i| i.name.as_str())
            .filter(|n| list.selects(n, -1) && !list.exclude)
            .collect();
        out.push(
            Finding::new(
                Check::SocketIfnameMatchesNothing.id(),
                Severity::Error,
                host(),
                format!(
                    "NCCL_SOCKET_IFNAME={v} matches no running interface with an address{}: \
                     NCCL's bootstrap finds no socket interface and the job fails to start \
                     (NET/IB too: \"No IP interface found\")",
                    if named_down.is_empty() {
                        format!(" (usable: {})", usable.join(", "))
                    } else {
                        format!(" ({} is down or has no address)", named_down.join(", "))
                    }
                ),
            )
            .evidence("value", v)
            .evidence("usable", &usable)
            .fix(vec!["roce-net nccl-env".into()], None),
        );
        return;
    }
    if !list.exact && !list.exclude {
        let over: Vec<&str> = picked
            .iter()
            .copied()
            .filter(|n| !list.entries.iter().any(|e| e.name == *n))
            .collect();
        if !over.is_empty() {
            let rdma: Vec<String> = crate::scope::rdma_netdevs(state).into_keys().collect();
            let sev = if over.iter().any(|n| rdma.iter().any(|r| r == n)) {
                Severity::Warning
            } else {
                Severity::Info
            };
            out.push(
                Finding::new(
                    Check::SocketIfnameOvermatch.id(),
                    sev,
                    host(),
                    format!(
                        "NCCL_SOCKET_IFNAME={v} is a prefix: it selects {} (NCCL uses the first \
                         it finds); '=' selects exact names",
                        picked.join(", ")
                    ),
                )
                .evidence("value", v)
                .evidence("selects", &picked)
                .fix(vec![format!("NCCL_SOCKET_IFNAME=={}", picked[0])], None),
            );
        }
    }
}

fn traffic_class(
    state: &HostState,
    env: &NcclEnv,
    selected: &[(&RdmaDevice, &RdmaPort)],
    out: &mut Vec<Finding>,
) {
    let tc = env.param("NCCL_IB_TC", -1);
    let tc_text = if tc < 0 {
        "0 (NCCL_IB_TC unset)".to_string()
    } else {
        tc.to_string()
    };
    let Ok(tc8) = u8::try_from(tc.max(0)) else {
        return;
    };
    let sl = u8::try_from(env.param("NCCL_IB_SL", 0).clamp(0, 15)).unwrap_or(0);
    let mut seen = BTreeMap::new();
    for (d, p) in selected.iter().filter(|(_, p)| p.is_roce()) {
        let Some(nd) = port_netdev(d, p) else {
            continue;
        };
        if seen.insert(nd.clone(), ()).is_some() {
            continue;
        }
        let Some(q) = state
            .interface(&nd)
            .and_then(|i| i.qos.as_ref())
            .filter(|q| q.dcb_available)
        else {
            continue;
        };
        let subject = port_subject(d, p);
        if q.trust == Some(crate::model::Trust::Pcp) && tc >= 0 && (tc8 >> 2) != 0 {
            out.push(
                Finding::new(
                    Check::TcTrustPcp.id(),
                    Severity::Warning,
                    subject.clone(),
                    format!(
                        "NCCL_IB_TC={tc} sets DSCP {} but {nd} trusts PCP: the DSCP does not \
                         choose the priority (NCCL_IB_SL={sl} does)",
                        tc8 >> 2
                    ),
                )
                .evidence("tc", tc)
                .evidence("trust", "pcp")
                .fix(
                    vec![format!("mlnx_qos -i {} --trust dscp", ifname_word(&nd))],
                    None,
                ),
            );
        }
        let Some(prio) = q.priority_for_tc(tc8, sl) else {
            continue;
        };
        let Some(pfc) = &q.pfc_enabled else { continue };
        if pfc.is_empty() || pfc.contains(&prio) {
            continue;
        }
        let good: Vec<u8> = q
            .dscp_prio
            .iter()
            .filter(|(_, p)| pfc.contains(p))
            .map(|(d, _)| *d)
            .collect();
        out.push(
            Finding::new(
                Check::TcNoPfc.id(),
                Severity::Warning,
                subject,
                format!(
                    "NCCL_IB_TC={tc_text} (DSCP {}) lands on priority {prio} on {nd}, where PFC \
                     is off (PFC is on {}): NCCL's traffic is lossy",
                    tc8 >> 2,
                    pfc.iter()
                        .map(|p| p.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                ),
            )
            .evidence("tc", tc)
            .evidence("priority", prio)
            .evidence("pfc_enabled", pfc)
            .fix(
                good.iter()
                    .find(|d| **d == 26)
                    .or(good.first())
                    .map(|dscp| vec![format!("NCCL_IB_TC={}", u32::from(*dscp) << 2)])
                    .unwrap_or_default(),
                None,
            )
            .checks(vec![format!("dcb pfc show dev {}", ifname_word(&nd))]),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// Each id is spelled once, in its check's `ID` (a finding reported under
    /// a literal could drift from `NCCL_CHECK_IDS` and the docs).
    #[test]
    fn ids_are_spelled_only_in_their_id_constants() {
        let src = include_str!("check.rs");
        let code = &src[..src.find("#[cfg(test)]").unwrap_or(src.len())];
        assert_eq!(code.matches("\"nccl-").count(), NCCL_CHECK_IDS.len());
        for id in NCCL_CHECK_IDS {
            assert_eq!(code.matches(&format!("\"{id}\"")).count(), 1, "{id}");
        }
    }

    /// A host with the RDMA devices of a sysfs fixture tree (connectx16:
    /// mlx5_0..mlx5_15, one port each; connectx8: mlx5_0..mlx5_7).
    fn fixture(case: &str) -> HostState {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/sysfs")
            .join(case);
        let mut s = HostState::empty(case);
        s.rdma = crate::kernel::sysfs::read_rdma_sysfs(&root, &[], &mut Vec::new());
        assert!(!s.rdma.is_empty(), "{case}: no devices read");
        s
    }

    fn pairs(v: &[(&str, u32)]) -> BTreeSet<PortRef> {
        v.iter()
            .map(|(d, p)| PortRef {
                device: d.to_string(),
                port: *p,
            })
            .collect()
    }

    /// The ports NCCL considers are the active ports by the snapshot's one
    /// rule (`RdmaPort::is_active`, which the doctor's `port-down` uses), for
    /// every combination of logical and physical state (NCCL compared the
    /// state text alone, so an ACTIVE port whose physical state said Polling
    /// was NCCL's and `port-down` at once).
    #[test]
    fn nccl_ports_are_the_active_ports() {
        use crate::model::{PhysState, PortState};
        let mut s = fixture("connectx8");
        let states = [
            (Some(PortState::Active), Some(PhysState::LinkUp)),
            (Some(PortState::Active), None),
            (Some(PortState::Active), Some(PhysState::Polling)),
            (Some(PortState::ActiveDefer), Some(PhysState::LinkUp)),
            (Some(PortState::Down), Some(PhysState::Disabled)),
            (Some(PortState::Init), Some(PhysState::LinkUp)),
            (None, Some(PhysState::LinkUp)),
            (Some(PortState::Nop), None),
        ];
        assert!(s.rdma.len() >= states.len());
        for (d, (st, ph)) in s.rdma.iter_mut().zip(states) {
            d.ports[0].state = st;
            d.ports[0].phys_state = ph;
        }
        let nccl: BTreeSet<PortRef> = nccl_ports(&s)
            .iter()
            .map(|(d, p)| PortRef::of(d, p))
            .collect();
        let active: BTreeSet<PortRef> = s
            .rdma
            .iter()
            .flat_map(|d| d.ports.iter().map(move |p| (d, p)))
            .filter(|(_, p)| p.is_active())
            .map(|(d, p)| PortRef::of(d, p))
            .collect();
        assert_eq!(nccl, active);
        assert_eq!(nccl, pairs(&[("mlx5_0", 1), ("mlx5_1", 1)]));
    }

    /// The suggested exact value, parsed back, selects (by NCCL's matcher and
    /// its `^`) exactly the devices the entries were meant to name.
    #[test]
    fn exact_hca_fix_selects_what_was_meant() {
        let s = fixture("connectx16");
        let all: Vec<PortRef> = s
            .rdma
            .iter()
            .flat_map(|d| d.ports.iter().map(move |p| PortRef::of(d, p)))
            .collect();
        let selected = |value: &str| -> BTreeSet<PortRef> {
            let l = parse_list(value, MAX_IB_DEVS);
            all.iter()
                .filter(|r| l.selects(&r.device, i64::from(r.port)))
                .cloned()
                .collect()
        };
        let not = |keep: &BTreeSet<PortRef>| -> BTreeSet<PortRef> {
            all.iter().filter(|x| !keep.contains(x)).cloned().collect()
        };
        for (value, fix, want) in [
            ("mlx5_1", "=mlx5_1", pairs(&[("mlx5_1", 1)])),
            (
                "mlx5_1:1,mlx5_2",
                "=mlx5_1:1,mlx5_2",
                pairs(&[("mlx5_1", 1), ("mlx5_2", 1)]),
            ),
            ("^mlx5_1", "^=mlx5_1", not(&pairs(&[("mlx5_1", 1)]))),
            (
                "mlx5_1:1,mlx5_15",
                "=mlx5_1:1,mlx5_15",
                pairs(&[("mlx5_1", 1), ("mlx5_15", 1)]),
            ),
        ] {
            let list = parse_list(value, MAX_IB_DEVS);
            let got = exact_hca(&list, &s).unwrap_or_else(|| panic!("{value}: no fix"));
            assert_eq!(got, fix, "{value}");
            assert_eq!(selected(&got), want, "{value} -> {got}");
            // The value as given selected more (or, with ^, fewer) than meant.
            assert_ne!(selected(value), want, "{value}");
        }
        // A family entry expands to its devices, each named exactly.
        let list = parse_list("mlx5_1,mlx5_", MAX_IB_DEVS);
        let got = exact_hca(&list, &s).unwrap();
        assert!(got.starts_with("=mlx5_1,mlx5_0,"), "{got}");
        assert_eq!(selected(&got), all.iter().cloned().collect());
    }

    fn unrecognized_in(conf: &str) -> Vec<Finding> {
        let mut out = Vec::new();
        unrecognized(&NcclEnv::parse_conf(conf), &mut out);
        out
    }

    /// `NCCL_IB_GID_INDEX = 3` in an env file defines `"NCCL_IB_GID_INDEX "`,
    /// which NCCL never reads; the fix, parsed as NCCL parses the file, sets the
    /// variable NCCL reads and draws no finding.
    #[test]
    fn names_nccl_does_not_read_are_found_with_a_fix_it_does() {
        for (conf, fix) in [
            ("NCCL_IB_GID_INDEX = 3\n", "NCCL_IB_GID_INDEX=3"),
            ("NCCL_IB_GID_INDEX =3\n", "NCCL_IB_GID_INDEX=3"),
            (" NCCL_SOCKET_IFNAME=eth0\n", "NCCL_SOCKET_IFNAME=eth0"),
            ("NCCL_IB_GID_IDNEX=3\n", "NCCL_IB_GID_INDEX=3"),
            ("NCCL_IB_HAC=mlx5_1\n", "NCCL_IB_HCA=mlx5_1"),
            ("nccl_ib_hca==mlx5_1\n", "NCCL_IB_HCA==mlx5_1"),
            ("NCCL_SOCKET_IFNAM=eth0\n", "NCCL_SOCKET_IFNAME=eth0"),
        ] {
            let env = NcclEnv::parse_conf(conf);
            let f = unrecognized_in(conf);
            assert_eq!(f.len(), 1, "{conf:?}: {f:#?}");
            assert_eq!(f[0].id, "nccl-variable-unrecognized");
            assert_eq!(f[0].remediation.commands, [fix], "{conf:?}");
            let (name, value) = fix.split_once('=').unwrap();
            // As written, NCCL does not see the variable...
            assert_eq!(env.get(name), None, "{conf:?}");
            // ...and with the fix it does, with the value meant.
            let fixed = NcclEnv::parse_conf(&format!("{fix}\n"));
            assert_eq!(fixed.get(name), Some(value), "{fix}");
            assert!(unrecognized_in(&format!("{fix}\n")).is_empty(), "{fix}");
        }
        // Whitespace around a name close to nothing NCCL reads: still found.
        let f = unrecognized_in("NCCL_MY_OWN_SETTING = 1\n");
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(f[0].remediation.commands, ["NCCL_MY_OWN_SETTING=1"]);
    }

    #[test]
    fn names_nccl_reads_and_names_close_to_none_are_left_alone() {
        let conf = "NCCL_IB_HCA==mlx5_1\nNCCL_DEBUG=INFO\nNCCL_IB_SL=3\nNCCL_IB_TC=106\n\
                    NCCL_IB_QPS_PER_CONNECTION=4\nNCCL_SOMETHING_ELSE_ENTIRELY=1\n\
                    PATH=/bin\nCUDA_VISIBLE_DEVICES=0\n# NCCL_IB_HAC=x\n";
        let f = unrecognized_in(conf);
        assert!(f.is_empty(), "{f:#?}");
        // The list is sorted (binary search) and holds every variable the
        // model reads.
        let known = super::super::names::KNOWN;
        assert!(known.windows(2).all(|w| w[0] < w[1]));
        for n in [
            "NCCL_IB_HCA",
            "NCCL_IB_GID_INDEX",
            "NCCL_IB_ADDR_RANGE",
            "NCCL_IB_ADDR_FAMILY",
            "NCCL_IB_ROCE_VERSION_NUM",
            "NCCL_IB_TC",
            "NCCL_IB_SL",
            "NCCL_IB_TIMEOUT",
            "NCCL_IB_RETRY_CNT",
            "NCCL_SOCKET_IFNAME",
            "NCCL_SOCKET_FAMILY",
            "NCCL_CONF_FILE",
        ] {
            assert!(known.binary_search(&n).is_ok(), "{n}");
        }
    }

    /// `NCCL_IB_HCA=mlx5` names no device: a family on purpose, which the
    /// check leaves alone (the old advice, `=mlx5`, selected nothing); the trap
    /// `mlx5_1` still warns, with a fix that selects mlx5_1 alone.
    #[test]
    fn a_family_prefix_is_not_an_overmatch_but_a_device_name_is() {
        let opts = NcclOptions::default();
        for case in ["connectx8", "connectx16"] {
            let s = fixture(case);
            let env = NcclEnv::from_pairs([("NCCL_IB_HCA", "mlx5")]);
            let f = nccl_check(&s, &env, &opts);
            assert!(
                !f.iter().any(|f| f.id == "nccl-hca-overmatch"),
                "{case}: {f:#?}"
            );
            // What the old advice suggested selects no device at all.
            let exact = parse_list("=mlx5", MAX_IB_DEVS);
            assert!(s.rdma.iter().all(|d| d
                .ports
                .iter()
                .all(|p| !exact.selects(&d.name, i64::from(p.port)))));
        }
        let s = fixture("connectx16");
        let env = NcclEnv::from_pairs([("NCCL_IB_HCA", "mlx5_1")]);
        let f = nccl_check(&s, &env, &opts);
        let over: Vec<_> = f.iter().filter(|f| f.id == "nccl-hca-overmatch").collect();
        assert_eq!(over.len(), 1, "{f:#?}");
        assert_eq!(over[0].remediation.commands, ["NCCL_IB_HCA==mlx5_1"]);
        // connectx8 has no mlx5_1x: mlx5_1 names one device and nothing else.
        let f = nccl_check(&fixture("connectx8"), &env, &opts);
        assert!(!f.iter().any(|f| f.id == "nccl-hca-overmatch"), "{f:#?}");
    }
}
