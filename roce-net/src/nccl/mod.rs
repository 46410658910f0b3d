//! NCCL environment derived from a model of NCCL's own GID and HCA selection
//! ([`model`], [`env`]) over the snapshot's GID tables, and a check of an NCCL
//! environment a user already has ([`check`]).
//!
//! Which NICs and which address of each come from [`crate::scope`], as for the
//! doctor and the planner: the GID NCCL should use on a port is the RoCE v2 GID
//! of the NIC's managed address. The advice recommends a variable only where it
//! changes what NCCL picks, for the better, and says for which NCCL versions;
//! [`NcclAdvice::picks`] shows per port what NCCL picks with no variables and
//! with the advice. `docs/nccl.md` documents the model and its NCCL version.

pub mod check;
pub mod env;
pub mod model;
pub mod names;

use crate::model::{Family, GidType, HostState, PortRef, RdmaPort, RT_TABLE_MAIN};
use crate::scope::{find_port, nic_address, nic_scope, port_netdev, roce_v2_gid_index, NicScope};
use model::{nccl_select_gid, AddrFamily, NcclEnv, NcclVersion, Selection};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv6Addr};
/// One environment variable recommendation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NcclVar {
    /// Variable name (`NCCL_IB_HCA`).
    pub name: String,
    /// Value to set; `None` means "do not set it" (the reason says why and what to do).
    pub value: Option<String>,
    /// Why this value (or why none), for people.
    pub reason: String,
}

/// NCCL settings for one host.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct NcclAdvice {
    /// Variables, in a stable order.
    pub vars: Vec<NcclVar>,
    /// Further remarks (variables deliberately left alone, caveats).
    pub notes: Vec<String>,
    /// Per port: the GID NCCL should use, and what it picks with no variables
    /// and with the advice, for NCCL 2.21+ and before.
    pub picks: Vec<GidPick>,
}

impl NcclAdvice {
    /// The recommendation for one variable.
    pub fn get(&self, name: &str) -> Option<&NcclVar> {
        self.vars.iter().find(|v| v.name == name)
    }

    /// The variables that have a value, as `NAME=value` lines (shell-safe values).
    pub fn env_lines(&self) -> Vec<String> {
        self.vars
            .iter()
            .filter_map(|v| v.value.as_ref().map(|x| format!("{}={}", v.name, x)))
            .collect()
    }
}

/// Options for [`nccl_env_with`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct NcclOptions {
    /// The NCCL release the job uses; `None`: advice that holds for every
    /// release, with what differs before 2.21 said.
    pub version: Option<NcclVersion>,
}

impl NcclOptions {
    /// Advice for one NCCL release (`None`: for every release).
    pub fn for_version(version: Option<NcclVersion>) -> Self {
        NcclOptions { version }
    }
}

/// One GID table slot NCCL may use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GidChoice {
    /// Index in the table.
    pub index: u32,
    /// The GID (all zeros for an empty slot).
    pub gid: Ipv6Addr,
    /// Its type, when known.
    pub gid_type: Option<GidType>,
    /// The netdev owning it.
    pub netdev: Option<String>,
}

/// What NCCL ends up with on a port under one environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PickOutcome {
    /// The model's answer.
    pub selection: Selection,
    /// The GID at the selected index.
    pub gid: Option<GidChoice>,
    /// True when it is the target GID; `None` when there is no target.
    pub right: Option<bool>,
}

/// Per port: the GID NCCL should use and what it picks without and with the
/// advice, for NCCL 2.21+ (the model's release) and for releases before 2.21.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GidPick {
    /// The port.
    pub port: PortRef,
    /// Its netdev.
    pub netdev: Option<String>,
    /// The RoCE v2 GID of the NIC's managed address (see [`target_gid`]).
    pub target: Option<GidChoice>,
    /// NCCL >= 2.21 with no NCCL variables set.
    pub auto_unset: PickOutcome,
    /// NCCL >= 2.21 with the recommended variables.
    pub auto_advised: PickOutcome,
    /// NCCL < 2.21 with no variables (index 0).
    pub legacy_unset: PickOutcome,
    /// NCCL < 2.21 with the recommended variables.
    pub legacy_advised: PickOutcome,
}

fn choice(p: &RdmaPort, index: u32) -> GidChoice {
    match p.gids.iter().find(|g| g.index == index) {
        Some(g) => GidChoice {
            index,
            gid: g.gid,
            gid_type: g.gid_type.clone(),
            netdev: g.netdev.clone(),
        },
        None => GidChoice {
            index,
            gid: Ipv6Addr::UNSPECIFIED,
            gid_type: None,
            netdev: None,
        },
    }
}

fn outcome(p: &RdmaPort, sel: Selection, target: Option<u32>) -> PickOutcome {
    let gid = sel.index().map(|i| choice(p, i));
    let right = target.map(|t| sel.index() == Some(t));
    PickOutcome {
        selection: sel,
        gid,
        right,
    }
}

/// The GID NCCL should use on an RDMA port, and the address it belongs to: the
/// RoCE v2 GID of the managed IPv4 address ([`crate::scope::nic_address`]) of
/// the port's netdev; when that netdev has no IPv4 address (a VLAN-only host),
/// of the managed IPv4 address of another netdev owning GIDs on the port (a
/// VLAN or macvlan upper), the lowest such GID; when there is no IPv4 address at
/// all, of the netdev's managed IPv6 address. `None` when the port has none of
/// these (or its netdevs are not in the snapshot).
pub fn target_gid(
    state: &HostState,
    dev: &crate::model::RdmaDevice,
    port: &RdmaPort,
) -> Option<(u32, IpAddr)> {
    let nd = port_netdev(dev, port)?;
    if let Some(a) = nic_address(state, &nd, Family::Inet) {
        return roce_v2_gid_index(port, a.address).map(|i| (i, a.address));
    }
    // Uppers: other netdevs owning GIDs here, with a managed address whose v2 GID
    // the port holds.
    let mut uppers: Vec<(u32, IpAddr)> = port
        .gids
        .iter()
        .filter_map(|g| {
            let owner = g.netdev.as_deref()?;
            if owner == nd {
                return None;
            }
            let a = nic_address(state, owner, Family::Inet)?;
            roce_v2_gid_index(port, a.address).map(|i| (i, a.address))
        })
        .collect();
    uppers.sort();
    if let Some(u) = uppers.first() {
        return Some(*u);
    }
    let v6 = nic_address(state, &nd, Family::Inet6)?;
    roce_v2_gid_index(port, v6.address).map(|i| (i, v6.address))
}

/// Derive the NCCL settings for a host (advice that holds for every NCCL release).
pub fn nccl_env(state: &HostState) -> NcclAdvice {
    nccl_env_with(state, &NcclOptions::default())
}

struct Candidate<'a> {
    r: PortRef,
    port: &'a RdmaPort,
    netdev: Option<String>,
    target: Option<(u32, IpAddr)>,
}

/// The smallest prefix holding every address (same family).
fn covering(addrs: &[IpAddr]) -> Option<ipnet::IpNet> {
    let first = *addrs.first()?;
    let max = if first.is_ipv4() { 32 } else { 128 };
    (0..=max).rev().find_map(|len| {
        let n = ipnet::IpNet::new(first, len).ok()?.trunc();
        addrs.iter().all(|a| n.contains(a)).then_some(n)
    })
}

fn env_of(vars: &[(&str, String)]) -> NcclEnv {
    NcclEnv::from_pairs(vars.iter().map(|(k, v)| (k.to_string(), v.clone())))
}

fn describe(c: &Candidate, sel: &Selection) -> String {
    match sel {
        Selection::Index(i) => {
            let g = choice(c.port, *i);
            let t = g
                .gid_type
                .as_ref()
                .map(|t| format!(" {}", t.short()))
                .unwrap_or_default();
            let nd = g
                .netdev
                .as_ref()
                .map(|n| format!(" of {n}"))
                .unwrap_or_default();
            format!("{}={i} ({}{t}{nd})", c.r, g.gid)
        }
        Selection::Fails(why) => format!("{}: {why}", c.r),
    }
}

/// The NCCL releases the advice is for: the first with the automatic GID
/// selection (2.21+; the model's when none was asked for), the last before it,
/// and whether the job uses only one of them.
struct Versions {
    auto: NcclVersion,
    legacy: NcclVersion,
    /// The job's release selects GIDs the old way (before 2.21).
    legacy_only: bool,
    /// The job's release selects GIDs automatically (2.21+).
    auto_only: bool,
}

impl Versions {
    fn of(opts: &NcclOptions) -> Self {
        Versions {
            auto: match opts.version {
                Some(v) if v.auto_gid() => v,
                _ => NcclVersion::MODEL,
            },
            legacy: NcclVersion {
                major: 2,
                minor: 20,
            },
            legacy_only: opts.version.is_some_and(|v| !v.auto_gid()),
            auto_only: opts.version.is_some_and(|v| v.auto_gid()),
        }
    }
}

/// A variable the GID advice sets, with its value.
type Setting = (&'static str, String);

/// The GID question on the chosen ports: each port's target index, and what
/// NCCL picks there with nothing set, with and without the automatic selection.
struct GidModel<'a, 'p> {
    chosen: &'a [Candidate<'p>],
    v: &'a Versions,
    /// The target, in words.
    what: &'static str,
    /// `PORT=INDEX` of each port's target (`-`: none), joined with ", ".
    targets: String,
    /// NCCL's picks with nothing set, automatic selection (2.21+).
    auto_none: Vec<Selection>,
    /// NCCL's picks with nothing set, before 2.21.
    legacy_none: Vec<Selection>,
    /// The automatic selection picks every target with nothing set (or is not asked about).
    auto_ok: bool,
    /// The selection before 2.21 does (or is not asked about).
    legacy_ok: bool,
}

impl<'a, 'p> GidModel<'a, 'p> {
    fn new(chosen: &'a [Candidate<'p>], v: &'a Versions, fam: AddrFamily) -> Self {
        let mut m = GidModel {
            chosen,
            v,
            what: if fam == AddrFamily::Inet6 {
                "the RoCE v2 GID of the NIC's IPv6 address"
            } else {
                "the RoCE v2 GID of the NIC's address"
            },
            targets: chosen
                .iter()
                .map(|c| {
                    format!(
                        "{}={}",
                        c.r,
                        Self::target(c).map(|i| i.to_string()).unwrap_or("-".into())
                    )
                })
                .collect::<Vec<_>>()
                .join(", "),
            auto_none: Vec::new(),
            legacy_none: Vec::new(),
            auto_ok: false,
            legacy_ok: false,
        };
        let none = NcclEnv::default();
        m.auto_none = m.picks(&none, v.auto);
        m.legacy_none = m.picks(&none, v.legacy);
        m.auto_ok = v.legacy_only || m.all_right(&m.auto_none);
        m.legacy_ok = v.auto_only || m.all_right(&m.legacy_none);
        m
    }

    fn target(c: &Candidate) -> Option<u32> {
        c.target.map(|(i, _)| i)
    }

    /// What NCCL `v` picks on each chosen port with `env`.
    fn picks(&self, env: &NcclEnv, v: NcclVersion) -> Vec<Selection> {
        self.chosen
            .iter()
            .map(|c| nccl_select_gid(c.port, env, v))
            .collect()
    }

    /// Every port's pick is its target.
    fn all_right(&self, sels: &[Selection]) -> bool {
        self.chosen
            .iter()
            .zip(sels)
            .all(|(c, s)| s.index().is_some() && s.index() == Self::target(c))
    }

    /// The picks that are not their port's target, described.
    fn wrong(&self, sels: &[Selection]) -> String {
        self.chosen
            .iter()
            .zip(sels)
            .filter(|(c, s)| s.index().is_none() || s.index() != Self::target(c))
            .map(|(c, s)| describe(c, s))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The GID advice: what NCCL picks with nothing set, and the smallest setting
/// that makes it pick the target everywhere (`NCCL_IB_GID_INDEX` when one index
/// fits every port, else the automatic selection's variables); then, per port,
/// the picks with nothing set and with the advice.
fn gid_advice(
    adv: &mut NcclAdvice,
    chosen: &[Candidate],
    state_nets: &BTreeMap<IpAddr, ipnet::IpNet>,
    fam: AddrFamily,
    v: &Versions,
) {
    let m = GidModel::new(chosen, v, fam);
    let distinct: BTreeSet<u32> = chosen.iter().filter_map(GidModel::target).collect();
    let advised = if distinct.len() == 1 && chosen.iter().all(|c| c.target.is_some()) {
        let i = distinct.iter().next().copied().unwrap_or(0);
        one_index_advice(adv, &m, i)
    } else {
        let auto_fix = if m.auto_ok {
            None
        } else {
            auto_selection_fix(&m, state_nets, fam)
        };
        per_device_advice(adv, &m, auto_fix)
    };
    gid_picks(adv, &m, &advised);
}

/// Settings for the automatic selection (2.21+), smallest first, the first
/// that makes it pick every target: the address family alone, the NICs' one
/// subnet as `NCCL_IB_ADDR_RANGE`, the prefix covering their addresses.
fn auto_selection_fix(
    m: &GidModel,
    state_nets: &BTreeMap<IpAddr, ipnet::IpNet>,
    fam: AddrFamily,
) -> Option<Vec<Setting>> {
    let mut fam_var: Vec<Setting> = Vec::new();
    if fam == AddrFamily::Inet6 {
        fam_var.push(("NCCL_IB_ADDR_FAMILY", "AF_INET6".to_string()));
    }
    let addrs: Vec<IpAddr> = m
        .chosen
        .iter()
        .filter_map(|c| c.target.map(|(_, a)| a))
        .collect();
    let nets: BTreeSet<ipnet::IpNet> = addrs
        .iter()
        .filter_map(|a| state_nets.get(a).copied())
        .collect();
    let mut tries: Vec<Vec<Setting>> = Vec::new();
    if !fam_var.is_empty() {
        tries.push(fam_var.clone());
    }
    if nets.len() == 1 {
        let mut t = fam_var.clone();
        t.push((
            "NCCL_IB_ADDR_RANGE",
            nets.iter()
                .next()
                .map(|n| n.to_string())
                .unwrap_or_default(),
        ));
        tries.push(t);
    }
    if let Some(cover) = covering(&addrs) {
        let mut t = fam_var.clone();
        t.push(("NCCL_IB_ADDR_RANGE", cover.to_string()));
        tries.push(t);
    }
    tries
        .into_iter()
        .find(|t| m.all_right(&m.picks(&env_of(t), m.v.auto)))
}

/// Every port holds its target at index `i`: `NCCL_IB_GID_INDEX=i` where some
/// release would pick otherwise, else no variable. Returns what it set.
fn one_index_advice(adv: &mut NcclAdvice, m: &GidModel, i: u32) -> Vec<Setting> {
    let (auto_v, what, targets) = (m.v.auto, m.what, &m.targets);
    let helps_legacy = !m.legacy_ok;
    let helps_auto = !m.auto_ok;
    if !(helps_legacy || helps_auto) {
        adv.vars.push(NcclVar {
            name: "NCCL_IB_GID_INDEX".into(),
            value: None,
            reason: format!(
                "NCCL {auto_v} picks index {i}, {what}, on every port by itself ({targets}): no \
                 variable needed"
            ),
        });
        return Vec::new();
    }
    let mut reason = format!("index {i} holds {what} on every active port ({targets})");
    if helps_auto {
        reason.push_str(&format!(
            "; NCCL {auto_v} alone would pick {}, so this fixes every release",
            m.wrong(&m.auto_none)
        ));
    } else if !m.v.auto_only && !m.v.legacy_only {
        reason.push_str(&format!(
            "; needed for NCCL before 2.21, which uses index 0 (the link-local RoCE v1 \
             GID) by default; NCCL 2.21 and later pick index {i} by themselves, so for \
             them it changes nothing"
        ));
    }
    adv.vars.push(NcclVar {
        name: "NCCL_IB_GID_INDEX".into(),
        value: Some(i.to_string()),
        reason,
    });
    vec![("NCCL_IB_GID_INDEX", i.to_string())]
}

/// The targets sit at different indices (or some port has none): no
/// `NCCL_IB_GID_INDEX`, and for the automatic selection the variables of
/// `auto_fix` when there are any. Returns what it set.
fn per_device_advice(
    adv: &mut NcclAdvice,
    m: &GidModel,
    auto_fix: Option<Vec<Setting>>,
) -> Vec<Setting> {
    let auto_v = m.v.auto;
    let mut advised: Vec<Setting> = Vec::new();
    let mut reason = if m.chosen.iter().any(|c| c.target.is_none()) {
        "some ports have no target GID".to_string()
    } else {
        format!(
            "{} sits at different indices ({}): one NCCL_IB_GID_INDEX cannot fit every NIC",
            m.what, m.targets
        )
    };
    if !m.legacy_ok && !m.v.auto_only {
        reason.push_str(
            "; NCCL before 2.21 cannot select per device (it would use index 0, the \
             link-local RoCE v1 GID, on every port): use 2.21 or later, or give every \
             NIC its addresses in the same order so the tables line up",
        );
    }
    let mut extra = Vec::new();
    if !m.v.legacy_only {
        if m.auto_ok {
            reason.push_str(&format!(
                "; NCCL {auto_v} picks the right GID on every port with nothing set"
            ));
        } else if let Some(fix) = auto_fix {
            reason.push_str(&format!(
                "; NCCL {auto_v} alone would pick {}; with the variable(s) below it picks \
                 the right GID on every port",
                m.wrong(&m.auto_none)
            ));
            for (k, v) in fix {
                let why = match k {
                    "NCCL_IB_ADDR_FAMILY" => "the NICs' addresses are IPv6: without it NCCL \
                         (AF_INET by default) finds no IPv4-mapped GID and keeps index 0, \
                         the link-local RoCE v1 GID (NCCL 2.21 and later)"
                        .to_string(),
                    _ => format!(
                        "NCCL 2.21 and later then consider only GIDs in {v}, the NICs' \
                         subnet, so a VLAN's or a second address's GID listed earlier is \
                         skipped; written with '/' (2.21/2.22 crash without it)"
                    ),
                };
                extra.push(NcclVar {
                    name: k.to_string(),
                    value: Some(v.clone()),
                    reason: why,
                });
                advised.push((k, v));
            }
        } else {
            reason.push_str(&format!(
                "; no NCCL variable makes NCCL {auto_v} pick the right GID everywhere (it \
                 would pick {}): fix the GID tables (address order, see \
                 gid-index-inconsistent)",
                m.wrong(&m.auto_none)
            ));
        }
    }
    adv.vars.push(NcclVar {
        name: "NCCL_IB_GID_INDEX".into(),
        value: None,
        reason,
    });
    adv.vars.extend(extra);
    advised
}

/// Per port: its target, and what NCCL picks with nothing set and with the
/// `advised` settings, with the automatic selection and before it.
fn gid_picks(adv: &mut NcclAdvice, m: &GidModel, advised: &[Setting]) {
    let env = env_of(advised);
    let auto_adv = m.picks(&env, m.v.auto);
    let legacy_adv = m.picks(&env, m.v.legacy);
    for (k, c) in m.chosen.iter().enumerate() {
        let t = GidModel::target(c);
        adv.picks.push(GidPick {
            port: c.r.clone(),
            netdev: c.netdev.clone(),
            target: t.map(|i| choice(c.port, i)),
            auto_unset: outcome(c.port, m.auto_none[k].clone(), t),
            auto_advised: outcome(c.port, auto_adv[k].clone(), t),
            legacy_unset: outcome(c.port, m.legacy_none[k].clone(), t),
            legacy_advised: outcome(c.port, legacy_adv[k].clone(), t),
        });
    }
}

/// `NCCL_IB_TC` from the NICs' DCB QoS: recommended only when NCCL's default
/// traffic class (0) lands on a priority without PFC while PFC is on, and DSCP
/// trust lets a traffic class choose the priority.
fn traffic_class(state: &HostState, netdevs: &[String], adv: &mut NcclAdvice) {
    let qos: Vec<(&str, Option<&crate::model::Qos>)> = netdevs
        .iter()
        .map(|n| {
            (
                n.as_str(),
                state
                    .interface(n)
                    .and_then(|i| i.qos.as_ref())
                    .filter(|q| q.dcb_available),
            )
        })
        .collect();
    let known: Vec<&crate::model::Qos> = qos.iter().filter_map(|(_, q)| *q).collect();
    let default_note =
        "NCCL_IB_TIMEOUT is left at NCCL's default; NCCL_IB_TC too: the NICs report \
                        no DCB QoS here, so set it only to match the fabric's lossless (PFC/ECN) \
                        traffic class";
    if known.is_empty() || known.len() != qos.len() {
        adv.notes.push(default_note.into());
        return;
    }
    let sigs: BTreeSet<String> = known
        .iter()
        .map(|q| crate::doctor::qos_signature(q))
        .collect();
    if sigs.len() > 1 {
        adv.notes.push(
            "NCCL_IB_TC is not recommended: the NICs' QoS differs (see qos-inconsistent), so \
             no traffic class lands on a lossless priority on every rail; fix that first"
                .into(),
        );
        return;
    }
    let q = known[0];
    let pfc = q.pfc_enabled.clone().unwrap_or_default();
    let Some(p0) = q.priority_for_tc(0, 0) else {
        adv.notes.push(default_note.into());
        return;
    };
    if pfc.is_empty() || pfc.contains(&p0) {
        adv.notes.push(format!(
            "NCCL_IB_TC is left unset: NCCL's default traffic class 0 lands on priority {p0}{}",
            if pfc.is_empty() {
                " and no priority has PFC (lossy RoCE, ECN only)".to_string()
            } else {
                ", which has PFC".to_string()
            }
        ));
        return;
    }
    if q.trust != Some(crate::model::Trust::Dscp) {
        adv.notes.push(format!(
            "NCCL's default traffic class lands on priority {p0} without PFC (PFC is on {}), and \
             the NICs trust PCP, so NCCL_IB_TC cannot move it: switch them to DSCP trust \
             (mlnx_qos --trust dscp), then re-run",
            pfc.iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join(",")
        ));
        return;
    }
    let dscps: Vec<u8> = q
        .dscp_prio
        .iter()
        .filter(|(_, p)| pfc.first() == Some(*p))
        .map(|(d, _)| *d)
        .collect();
    let Some(d) = dscps.iter().find(|d| **d == 26).or(dscps.first()).copied() else {
        adv.notes.push(default_note.into());
        return;
    };
    let prio = pfc.first().copied().unwrap_or(0);
    adv.vars.push(NcclVar {
        name: "NCCL_IB_TC".into(),
        value: Some((u32::from(d) << 2).to_string()),
        reason: format!(
            "NCCL's default traffic class 0 lands on priority {p0}, where PFC is off; DSCP {d} \
             maps to priority {prio}, which has PFC on every NIC (DSCP trust): traffic class \
             {d} << 2 (the NIC sets the ECN bits itself)"
        ),
    });
    adv.notes
        .push("NCCL_IB_TIMEOUT is left at NCCL's default".into());
}

/// Derive the NCCL settings for a host.
pub fn nccl_env_with(state: &HostState, opts: &NcclOptions) -> NcclAdvice {
    let mut adv = NcclAdvice::default();
    let scope = nic_scope(state);
    let versions = Versions::of(opts);

    // Ports: the RDMA ports of the NICs in scope; when the RDMA netdevs are in
    // another namespace, say so instead of "no active port".
    let ports = scope_ports(state, &scope);
    let elsewhere = ports_elsewhere(state);

    // Which family the job's GIDs are of: IPv4 unless every target is IPv6.
    let fam = job_family(&ports.active);
    let (chosen, left_out): (Vec<Candidate>, Vec<Candidate>) =
        ports
            .active
            .into_iter()
            .partition(|c| match (fam, c.target) {
                (AddrFamily::Inet, Some((_, a))) => a.is_ipv4(),
                (AddrFamily::Inet6, Some((_, a))) => a.is_ipv6(),
                _ => false,
            });
    let chosen_nd: Vec<String> = chosen.iter().filter_map(|c| c.netdev.clone()).collect();
    let left_reasons: Vec<String> = left_out
        .iter()
        .map(|c| left_out_reason(c, versions.auto))
        .collect();

    // NCCL_IB_HCA
    adv.vars.push(if chosen.is_empty() {
        no_hca(state, &scope, &elsewhere, &left_reasons)
    } else {
        hca(&chosen, &ports.inactive, &left_reasons)
    });
    if !ports.ib.is_empty() {
        adv.notes.push(format!(
            "InfiniBand ports {} are not RoCE: NCCL addresses them by LID (GID 0, or the routable-FLID GID from 2.22); the GID advice applies to RoCE ports",
            port_list(&ports.ib)
        ));
    }

    // The GID: what NCCL picks with nothing set, and the smallest setting that
    // makes it pick the target everywhere.
    if !chosen.is_empty() {
        let nets: BTreeMap<IpAddr, ipnet::IpNet> = state
            .addresses
            .iter()
            .map(|a| (a.address, a.network()))
            .collect();
        gid_advice(&mut adv, &chosen, &nets, fam, &versions);
        if fam == AddrFamily::Inet {
            if let Some(note) = ipv6_alternative(state, &chosen, &nets, &versions) {
                adv.notes.push(note);
            }
        }
    }

    // NCCL_SOCKET_IFNAME
    adv.vars.push(socket_ifname(state));

    traffic_class(state, &chosen_nd, &mut adv);
    if let Some(note) = retransmit_note(state) {
        adv.notes.push(note);
    }
    adv
}

/// The RoCE v2 GID of the managed address of `family` of the port's netdev.
fn family_target(state: &HostState, c: &Candidate, family: Family) -> Option<(u32, IpAddr)> {
    let a = nic_address(state, c.netdev.as_deref()?, family)?;
    roce_v2_gid_index(c.port, a.address).map(|i| (i, a.address))
}

/// On dual-stack rails (every chosen port also holds the RoCE v2 GID of its
/// NIC's IPv6 address) the advice is for the IPv4 GIDs, NCCL's default
/// family. A job may run over IPv6 instead (every node the same way): the
/// note says which setting makes NCCL pick the IPv6 GIDs, found by the same
/// model and search as the main advice, and what it then picks.
fn ipv6_alternative(
    state: &HostState,
    chosen: &[Candidate],
    nets: &BTreeMap<IpAddr, ipnet::IpNet>,
    v: &Versions,
) -> Option<String> {
    let alt: Vec<Candidate> = chosen
        .iter()
        .map(|c| {
            family_target(state, c, Family::Inet6).map(|t| Candidate {
                r: c.r.clone(),
                port: c.port,
                netdev: c.netdev.clone(),
                target: Some(t),
            })
        })
        .collect::<Option<_>>()?;
    let mut scratch = NcclAdvice::default();
    gid_advice(&mut scratch, &alt, nets, AddrFamily::Inet6, v);
    let set = scratch.env_lines();
    let targets = alt
        .iter()
        .filter_map(|c| c.target.map(|(i, a)| format!("{}={i} ({a})", c.r)))
        .collect::<Vec<_>>()
        .join(", ");
    let how = if set.is_empty() {
        "no NCCL variable makes NCCL pick them on every port: fix the GID tables \
         (gid-index-inconsistent)"
            .to_string()
    } else {
        let legacy = if set.iter().any(|l| l.starts_with("NCCL_IB_GID_INDEX=")) {
            ""
        } else {
            " (NCCL 2.21 and later; before 2.21 no setting fits every port)"
        };
        format!(
            "set {} instead of the GID variables above{legacy}",
            set.join(" ")
        )
    };
    Some(format!(
        "the NICs are dual-stack: this advice makes NCCL use their IPv4 RoCE v2 GIDs \
         (NCCL_IB_ADDR_FAMILY defaults to AF_INET); to run the job over their IPv6 GIDs \
         instead ({targets}), on every node of the job, {how}"
    ))
}

/// The RDMA ports of the NICs in scope, by what the advice does with them.
struct ScopePorts<'s> {
    /// Active RoCE ports: the candidates for `NCCL_IB_HCA`.
    active: Vec<Candidate<'s>>,
    /// RoCE ports that are not active.
    inactive: Vec<PortRef>,
    /// InfiniBand ports.
    ib: Vec<PortRef>,
}

fn scope_ports<'s>(state: &'s HostState, scope: &NicScope) -> ScopePorts<'s> {
    let mut ports = ScopePorts {
        active: Vec::new(),
        inactive: Vec::new(),
        ib: Vec::new(),
    };
    for nic in &scope.nics {
        for r in &nic.rdma_ports {
            let Some(p) = find_port(state, r) else {
                continue;
            };
            if !p.is_roce() {
                ports.ib.push(r.clone());
            } else if p.is_active() {
                let d = state.rdma.iter().find(|d| d.name == r.device);
                ports.active.push(Candidate {
                    r: r.clone(),
                    port: p,
                    netdev: d.and_then(|d| port_netdev(d, p)),
                    target: d.and_then(|d| target_gid(state, d, p)),
                });
            } else {
                ports.inactive.push(r.clone());
            }
        }
    }
    ports
}

/// Active RoCE ports whose netdev is not in this namespace (moved to a
/// container's), with that netdev's name.
fn ports_elsewhere(state: &HostState) -> Vec<(PortRef, String)> {
    state
        .rdma
        .iter()
        .flat_map(|d| d.ports.iter().map(move |p| (d, p)))
        .filter(|(_, p)| p.is_roce() && p.is_active())
        .filter_map(|(d, p)| {
            let nd = port_netdev(d, p)?;
            state
                .interface(&nd)
                .is_none()
                .then(|| (PortRef::of(d, p), nd))
        })
        .collect()
}

fn port_list(v: &[PortRef]) -> String {
    v.iter()
        .map(|r| r.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// IPv6 when every active port's target is an IPv6 GID, else IPv4. A job's
/// GIDs are of one family: without `NCCL_IB_GID_INDEX` NCCL considers only GIDs
/// of `NCCL_IB_ADDR_FAMILY` (`envIbAddrFamily`, `AF_INET` unless the value is
/// exactly `AF_INET6`; NVIDIA/nccl `v2.30.7-1`, `src/transport/net_ib/connect.cc`),
/// and a RoCE v2 connection needs both ends in the same family.
fn job_family(active: &[Candidate]) -> AddrFamily {
    if !active.is_empty()
        && active
            .iter()
            .all(|c| c.target.is_some_and(|(_, a)| a.is_ipv6()))
    {
        AddrFamily::Inet6
    } else {
        AddrFamily::Inet
    }
}

/// Why an active port is left out of `NCCL_IB_HCA` (it has no target GID of
/// the job's family), and what NCCL `auto_v` would use on it.
fn left_out_reason(c: &Candidate, auto_v: NcclVersion) -> String {
    let pick = nccl_select_gid(c.port, &NcclEnv::default(), auto_v);
    let what = match pick.index().map(|i| choice(c.port, i)) {
        Some(g) => format!(
            "NCCL would use GID {} ({} {})",
            g.index,
            g.gid,
            g.gid_type
                .as_ref()
                .map(|t| t.short().to_string())
                .unwrap_or_default()
        ),
        None => "NCCL would fail on it".to_string(),
    };
    let why = match (&c.netdev, c.target) {
        (Some(nd), Some((_, a))) if a.is_ipv6() => format!(
            "{nd} has no IPv4 address, only {a}: with NCCL's default address family AF_INET {what}, not a GID of its address (NCCL_IB_ADDR_FAMILY=AF_INET6 would break the IPv4 NICs)"
        ),
        (Some(nd), _) => format!(
            "its GID table holds no RoCE v2 GID of an address of {nd} (see gid-rocev2-missing); {what}"
        ),
        (None, _) => format!("its netdev is unknown; {what}"),
    };
    format!("{}: {why}", c.r)
}

/// `NCCL_IB_HCA` when no port can be chosen: unset, and why.
fn no_hca(
    state: &HostState,
    scope: &NicScope,
    elsewhere: &[(PortRef, String)],
    left_reasons: &[String],
) -> NcclVar {
    let reason = if state.rdma.is_empty() {
        "no RDMA devices on this host: NCCL will use sockets".to_string()
    } else if !elsewhere.is_empty() && scope.nics.iter().all(|n| n.rdma_ports.is_empty()) {
        format!(
            "the active RoCE ports' netdevs are not in this network namespace ({}): they were moved to another one (a container's); NCCL run here can open the RDMA devices (shared RDMA netns mode) but not resolve their addresses: run `roce-net nccl-env` inside the namespace that holds the netdevs",
            elsewhere
                .iter()
                .map(|(r, nd)| format!("{r} -> {nd}"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    } else if !left_reasons.is_empty() {
        format!("no port NCCL can use as it is: {}", left_reasons.join("; "))
    } else {
        "no active RoCE port: bring the ports up (see the port-down findings) first".into()
    };
    NcclVar {
        name: "NCCL_IB_HCA".into(),
        value: None,
        reason,
    }
}

/// `NCCL_IB_HCA` naming the chosen ports exactly, and what was left out.
fn hca(chosen: &[Candidate], inactive: &[PortRef], left_reasons: &[String]) -> NcclVar {
    let refs: Vec<PortRef> = chosen.iter().map(|c| c.r.clone()).collect();
    let mut reason = format!(
        "the {} active RoCE port(s) backing the NICs in scope; the leading '=' makes NCCL match these names exactly (without it each entry is a prefix, so mlx5_1 would also select mlx5_10..mlx5_17)",
        refs.len()
    );
    if !inactive.is_empty() {
        reason.push_str(&format!(
            "; left out because not active: {}",
            port_list(inactive)
        ));
    }
    if !left_reasons.is_empty() {
        reason.push_str(&format!("; left out: {}", left_reasons.join("; ")));
    }
    NcclVar {
        name: "NCCL_IB_HCA".into(),
        value: Some(format!("={}", port_list(&refs))),
        reason,
    }
}

/// `NCCL_SOCKET_IFNAME`: the interface of the default route when it is not an
/// RDMA NIC, else the first non-RDMA interface with an IPv4 address.
fn socket_ifname(state: &HostState) -> NcclVar {
    let rdma_nd: BTreeSet<String> = crate::scope::rdma_netdevs(state).into_keys().collect();
    let default_dev = state
        .routes
        .iter()
        .filter(|r| {
            r.family == Family::Inet
                && r.table == RT_TABLE_MAIN
                && r.dst.prefix_len() == 0
                && r.kind == crate::model::RouteType::Unicast
        })
        .min_by_key(|r| r.metric.unwrap_or(0))
        .and_then(|r| r.dev.clone());
    let mut ifaces: Vec<_> = state.interfaces.iter().collect();
    ifaces.sort_by_key(|i| i.index);
    let fallback = ifaces
        .iter()
        .find(|i| {
            i.name != "lo"
                && i.admin_up
                && !rdma_nd.contains(&i.name)
                && !crate::scope::global_ipv4(state, &i.name).is_empty()
        })
        .map(|i| i.name.clone());
    let sock = match &default_dev {
        Some(d) if !rdma_nd.contains(d) => Some((
            d.clone(),
            format!(
                "{d} carries the default route and is not an RDMA NIC: NCCL's bootstrap and \
                 socket traffic stays on the management network; '=' matches the name exactly"
            ),
        )),
        _ => fallback.map(|f| {
            (
                f.clone(),
                format!(
                    "{f} is the first non-RDMA interface with an IPv4 address{}; '=' matches the \
                     name exactly",
                    match &default_dev {
                        Some(d) => format!(" (the default route uses RDMA NIC {d})"),
                        None => " (there is no default route)".into(),
                    }
                ),
            )
        }),
    };
    match sock {
        Some((n, reason)) => NcclVar {
            name: "NCCL_SOCKET_IFNAME".into(),
            value: Some(format!("={n}")),
            reason,
        },
        None => NcclVar {
            name: "NCCL_SOCKET_IFNAME".into(),
            value: None,
            reason: "no non-RDMA interface with an IPv4 address: NCCL picks one itself".into(),
        },
    }
}

/// A note when RDMA ports counted ACK timeouts: the path is lossy, and raising
/// `NCCL_IB_TIMEOUT` would only hide it.
fn retransmit_note(state: &HostState) -> Option<String> {
    let retrans: Vec<String> = state
        .rdma
        .iter()
        .flat_map(|d| d.ports.iter().map(move |p| (d, p)))
        .filter(|(_, p)| {
            ["local_ack_timeout_err", "req_transport_retries_exceeded"]
                .iter()
                .any(|c| p.hw_counters.get(*c).copied().unwrap_or(0) > 0)
        })
        .map(|(d, p)| PortRef::of(d, p).to_string())
        .collect();
    (!retrans.is_empty()).then(|| {
        format!(
            "{} counted ACK timeouts: fix neighbours, routing and PFC/ECN first; raising \
             NCCL_IB_TIMEOUT (e.g. 22) only hides a lossy path",
            retrans.join(", ")
        )
    })
}
