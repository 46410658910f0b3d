//! From a verbs error, a completion status or a timeout to its likely cause, with
//! the evidence from the host's snapshot and what the peer told us.
//!
//! The rules, in the order they are tried:
//!
//! 1. TCP connect failed: `peer-unreachable` (no server, or no TCP path); the
//!    ends do not share the probe token: `token-mismatch`.
//! 2. The peer aborted: `peer-failed`, carrying the peer's own explanation.
//! 3. The local port is not `ACTIVE`: `port-not-active`.
//! 4. The GID in use is link-local, RoCE v1, or of another family than the
//!    peer's: `gid-link-local`, `gid-roce-v1`, `gid-wrong-family`.
//! 5. The path MTU is above either port's active MTU: `path-mtu-above-active`.
//! 6. Status 12 (transport retry counter exceeded) and the neighbour entry for
//!    the peer's address holds a MAC that is not the peer NIC's: `arp-flux`
//!    (the evidence names whose MAC it is when the peer owns it on another NIC).
//! 7. `ETIMEDOUT` (or `ENETUNREACH`, `EHOSTUNREACH`, `EADDRNOTAVAIL`, `ENODATA`)
//!    moving the QP to RTR, where the kernel resolves the peer's MAC, or status 12
//!    with no usable neighbour entry: `no-route-or-arp`, with the offline route
//!    lookup and the neighbour state as evidence.
//! 8. Status 12 otherwise: `retry-exceeded` (the path drops RoCE: PFC/ECN,
//!    firewall on UDP 4791, a switch MTU); 13: `rnr-retry-exceeded`; 10:
//!    `remote-access`.
//! 9. Open failures: `device-error` (permissions, locked-memory limit).
//! 10. A wait that ran out: `timeout`; anything else: `unknown`.

use super::select::{gid_ipv4, is_link_local, RdmaSelection};
use super::status::{WC_REM_ACCESS_ERR, WC_RETRY_EXC_ERR, WC_RNR_RETRY_EXC_ERR};
use super::{EndpointSummary, FailureValue, ProbeFailure, Stage};
use crate::fib::{fib_lookup, Flow};
use crate::model::{ifname_word, shell_word};
use crate::model::{GidType, HostState, NeighState};
use schemars::JsonSchema;
use serde::Serialize;
use std::collections::BTreeMap;

crate::named::named_enum! {
    /// The likely cause of a failed probe.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, JsonSchema)]
    #[non_exhaustive]
    pub enum Cause (fn id, serde) {
        /// A neighbour entry maps the peer's address to a MAC that is not the peer
        /// NIC's: RoCE frames go to the wrong NIC and are dropped.
        ArpFlux = "arp-flux",
        /// No route to the peer's address, or its MAC could not be resolved.
        NoRouteOrArp = "no-route-or-arp",
        /// The queue pair's path MTU is above a port's active MTU.
        PathMtuAboveActive = "path-mtu-above-active",
        /// The GID is link-local (`fe80::`): RoCE v2 from it is not routable.
        GidLinkLocal = "gid-link-local",
        /// The GID is RoCE v1: not routable.
        GidRoceV1 = "gid-roce-v1",
        /// The two ends' GIDs are of different address families.
        GidWrongFamily = "gid-wrong-family",
        /// The port is not `ACTIVE`.
        PortNotActive = "port-not-active",
        /// Retries exhausted with a resolved neighbour: the path drops RoCE traffic.
        RetryExceeded = "retry-exceeded",
        /// The peer had no receive posted (a peer out of step).
        RnrRetryExceeded = "rnr-retry-exceeded",
        /// The peer refused an RDMA write (wrong key or address).
        RemoteAccess = "remote-access",
        /// The TCP connection to the probe server failed.
        PeerUnreachable = "peer-unreachable",
        /// The two ends do not hold the same probe token (or only one has one).
        TokenMismatch = "token-mismatch",
        /// The peer reported its own failure.
        PeerFailed = "peer-failed",
        /// The device could not be opened or set up.
        DeviceError = "device-error",
        /// A step did not finish in time.
        Timeout = "timeout",
        /// None of the above.
        Unknown = "unknown",
    }
}

/// Everything the translation looks at.
#[derive(Debug, Clone)]
pub struct ExplainInput<'a> {
    /// Where it failed.
    pub stage: Stage,
    /// What was reported.
    pub value: &'a FailureValue,
    /// This host's snapshot.
    pub state: &'a HostState,
    /// This end's device, port and GID.
    pub local: Option<&'a RdmaSelection>,
    /// What the peer said about itself.
    pub peer: Option<&'a EndpointSummary>,
    /// MACs of the peer's interfaces, by name.
    pub peer_nic_macs: &'a BTreeMap<String, String>,
    /// The path MTU the queue pair was given.
    pub path_mtu: Option<u32>,
    /// The TCP address the client connected to.
    pub peer_tcp: Option<&'a str>,
    /// The peer's own message, for [`Stage::Peer`].
    pub peer_message: Option<&'a str>,
    /// The snapshot taken when the probe started, when `state` is a fresh one
    /// read after the failure (a neighbour entry may have changed in between).
    pub initial: Option<&'a HostState>,
}

struct Out {
    cause: Cause,
    message: String,
    evidence: BTreeMap<String, serde_json::Value>,
    fix: Vec<String>,
}

impl Out {
    fn new(cause: Cause, message: String) -> Out {
        Out {
            cause,
            message,
            evidence: BTreeMap::new(),
            fix: Vec::new(),
        }
    }
    fn ev(mut self, k: &str, v: impl Serialize) -> Out {
        self.evidence.insert(
            k.to_string(),
            serde_json::to_value(v).unwrap_or(serde_json::Value::Null),
        );
        self
    }
    fn fix(mut self, f: impl IntoIterator<Item = String>) -> Out {
        self.fix.extend(f);
        self
    }
}

fn completion(v: &FailureValue) -> Option<u32> {
    match v {
        FailureValue::Completion { status, .. } => Some(*status),
        _ => None,
    }
}

fn errno(v: &FailureValue) -> Option<i32> {
    match v {
        FailureValue::Errno { errno, .. } => Some(*errno),
        _ => None,
    }
}

fn after_connect(s: Stage) -> bool {
    matches!(
        s,
        Stage::ReadyToReceive
            | Stage::ReadyToSend
            | Stage::SendRecv
            | Stage::WriteToPeer
            | Stage::WriteFromPeer
    )
}

/// Translate a failure into its likely cause (see the module docs for the rules).
pub fn explain_rdma_failure(i: &ExplainInput<'_>) -> ProbeFailure {
    let o = rules(i);
    let mut message = format!(
        "{} at {}: {} — {}",
        o.cause.id(),
        i.stage,
        i.value,
        o.message
    );
    if let (Stage::Peer, Some(m)) = (i.stage, i.peer_message) {
        message = format!("peer-failed: the peer reported: {m}");
    }
    ProbeFailure {
        stage: i.stage,
        value: i.value.clone(),
        cause: o.cause,
        message,
        evidence: o.evidence,
        fix: o.fix,
        peer: i.peer_message.map(str::to_string),
    }
}

/// The neighbour entry for `next_hop` the kernel would use: on the route's
/// device, else on this end's netdev, else any.
fn peer_neighbor<'s>(
    st: &'s HostState,
    next_hop: std::net::IpAddr,
    via_dev: Option<&str>,
    netdev: &str,
) -> Option<&'s crate::model::Neighbor> {
    let neighs: Vec<&crate::model::Neighbor> =
        st.neighbors.iter().filter(|n| n.ip == next_hop).collect();
    neighs
        .iter()
        .find(|n| Some(n.ifname.as_str()) == via_dev)
        .or_else(|| neighs.iter().find(|n| n.ifname == netdev))
        .or(neighs.first())
        .copied()
}

fn neighbor_text(n: &crate::model::Neighbor) -> String {
    format!(
        "{} dev {} lladdr {} {}",
        n.ip,
        n.ifname,
        n.mac
            .as_ref()
            .map(|m| m.to_string())
            .unwrap_or_else(|| "-".into()),
        n.state
            .iter()
            .map(|s| format!("{s:?}").to_uppercase())
            .collect::<Vec<_>>()
            .join(",")
    )
}

/// The rules of the module docs, tried in their order.
fn rules(i: &ExplainInput<'_>) -> Out {
    // 1. TCP.
    if i.stage == Stage::Connect {
        return peer_unreachable(i);
    }
    if i.stage == Stage::Token {
        return Out::new(
            Cause::TokenMismatch,
            "the probe token of the two ends differs: nothing else was exchanged".into(),
        )
        .ev("peer_tcp", i.peer_tcp)
        .fix([
            "give both ends the same token: --token-file FILE or ROCE_NET_PROBE_TOKEN (or none on either)"
                .to_string(),
        ]);
    }
    // 2. The peer's own failure.
    if i.stage == Stage::Peer {
        return Out::new(Cause::PeerFailed, "see the peer's report".into())
            .ev("peer_message", i.peer_message);
    }
    let Some(local) = i.local else {
        return Out::new(Cause::Unknown, "no device was selected".into());
    };
    let port = format!("{}:{}", local.device, local.port);
    // 3. Port state.
    if !local.port_active() {
        return port_not_active(local, &port);
    }
    let failed_after_connect = after_connect(i.stage) || i.stage == Stage::Preflight;
    // 4. GID.
    if failed_after_connect && !local.is_infiniband() {
        if let Some(o) = gid_unusable(i, local, &port) {
            return o;
        }
    }
    // 5. MTU.
    if let Some(o) = mtu_above_active(i, local) {
        return o;
    }
    // 6. and 7.: the neighbour of the peer's address.
    if let Some(o) = neighbor_rules(i, local) {
        return o;
    }
    // 8. The other completion statuses (12 is in the neighbour rules).
    if let Some(o) = peer_side_status(completion(i.value)) {
        return o;
    }
    // 9. Open.
    if i.stage == Stage::Open {
        return device_error(errno(i.value), &port);
    }
    // 10. A wait that ran out; anything else.
    if matches!(i.value, FailureValue::Timeout { .. }) {
        return Out::new(
            Cause::Timeout,
            format!(
                "the {} step did not finish in time; the peer may be slow, stuck or gone",
                i.stage
            ),
        );
    }
    Out::new(
        Cause::Unknown,
        "no known cause matches; the raw value and the peer's report are attached".into(),
    )
}

/// Rule 1: the TCP connection to the probe server failed.
fn peer_unreachable(i: &ExplainInput<'_>) -> Out {
    let refused = errno(i.value) == Some(libc::ECONNREFUSED);
    Out::new(
        Cause::PeerUnreachable,
        if refused {
            format!(
                "nothing listens on {}: start `roce-net probe rdma --server --source <its RDMA address>` on the peer first",
                i.peer_tcp.unwrap_or("the peer")
            )
        } else {
            format!(
                "no TCP connection to {}: check the address, a firewall, and that the server runs",
                i.peer_tcp.unwrap_or("the peer")
            )
        },
    )
    .ev("peer_tcp", i.peer_tcp)
}

/// Rule 3: the local port is not `ACTIVE`.
fn port_not_active(local: &RdmaSelection, port: &str) -> Out {
    Out::new(
        Cause::PortNotActive,
        format!(
            "{port} is {} / {}: a port that is not ACTIVE carries no RDMA traffic",
            local.port_state.as_deref().unwrap_or("unknown"),
            local.phys_state.as_deref().unwrap_or("unknown")
        ),
    )
    .ev("port", port)
    .ev("state", &local.port_state)
    .ev("phys_state", &local.phys_state)
    .ev("netdev", &local.netdev)
    .fix([
        format!("ip link set {} up", ifname_word(&local.netdev)),
        format!(
            "rdma link show {}/{}",
            shell_word(&local.device),
            local.port
        ),
        "check the cable, the switch port and the NIC firmware".to_string(),
    ])
}

/// Rule 4: the GID in use is link-local, RoCE v1, or of another family than
/// the peer's.
fn gid_unusable(i: &ExplainInput<'_>, local: &RdmaSelection, port: &str) -> Option<Out> {
    if is_link_local(&local.gid) {
        return Some(
            Out::new(
                Cause::GidLinkLocal,
                format!(
                    "GID index {} on {port} is link-local ({}): RoCE v2 packets from it carry \
                     an fe80:: source and are not routed; use the RoCE v2 GID of the NIC's \
                     address",
                    local.gid_index, local.gid
                ),
            )
            .ev("gid_index", local.gid_index)
            .ev("gid", local.gid)
            .ev("nccl_gid_index", local.nccl_gid_index)
            .fix(["roce-net gids".to_string(), "roce-net nccl-env".to_string()]),
        );
    }
    if local.gid_type == Some(GidType::RoceV1) {
        return Some(
            Out::new(
                Cause::GidRoceV1,
                format!(
                    "GID index {} on {port} is RoCE v1 ({}): v1 frames are not IP packets, \
                     are never routed, and NCCL expects RoCE v2; use the RoCE v2 GID of the \
                     same address",
                    local.gid_index, local.gid
                ),
            )
            .ev("gid_index", local.gid_index)
            .ev("gid_type", "v1")
            .ev("nccl_gid_index", local.nccl_gid_index)
            .fix(["roce-net gids".to_string(), "roce-net nccl-env".to_string()]),
        );
    }
    let p = i.peer?;
    let mine = gid_ipv4(&local.gid).is_some();
    let theirs = gid_ipv4(&p.gid).is_some();
    if mine == theirs {
        return None;
    }
    let fam = |v4: bool| if v4 { "IPv4" } else { "IPv6" };
    Some(
        Out::new(
            Cause::GidWrongFamily,
            format!(
                "this end's GID {} is {} and the peer's {} is {}: RoCE v2 cannot carry \
                 one family to the other; give both ends GIDs of the same family \
                 (NCCL_IB_ADDR_FAMILY)",
                local.gid,
                fam(mine),
                p.gid,
                fam(theirs)
            ),
        )
        .ev("local_gid", local.gid)
        .ev("peer_gid", p.gid)
        .ev("local_gid_index", local.gid_index)
        .ev("peer_gid_index", p.gid_index),
    )
}

/// Rule 5: after the connection, a path MTU above either port's active MTU.
fn mtu_above_active(i: &ExplainInput<'_>, local: &RdmaSelection) -> Option<Out> {
    let mtu = i.path_mtu?;
    let local_active = local.active_mtu;
    let peer_active = i.peer.and_then(|p| p.active_mtu);
    let over = [local_active, peer_active]
        .into_iter()
        .flatten()
        .any(|a| mtu > a);
    if !(over && (after_connect(i.stage))) {
        return None;
    }
    Some(
        Out::new(
            Cause::PathMtuAboveActive,
            format!(
                "the queue pair's path MTU is {mtu} but the active MTU is {} here and {} \
                 at the peer: packets larger than a port can carry are dropped; use the \
                 smaller (leave --mtu unset) or raise the netdev MTU (9000 gives 4096)",
                local_active
                    .map(|m| m.to_string())
                    .unwrap_or("unknown".into()),
                peer_active
                    .map(|m| m.to_string())
                    .unwrap_or("unknown".into())
            ),
        )
        .ev("path_mtu", mtu)
        .ev("local_active_mtu", local_active)
        .ev("peer_active_mtu", peer_active)
        .ev("netdev_mtu", local.netdev_mtu)
        .fix([format!(
            "ip link set {} mtu 9000",
            ifname_word(&local.netdev)
        )]),
    )
}

/// How this end reaches the peer's address `ip`: the offline route lookup, the
/// device the route leaves by, the next hop, and the neighbour entry for it the
/// kernel uses.
struct PeerPath<'s> {
    ip: std::net::IpAddr,
    route: Result<crate::fib::FibDecision, crate::fib::FibError>,
    via_dev: Option<String>,
    next_hop: std::net::IpAddr,
    on_dev: Option<&'s crate::model::Neighbor>,
}

impl<'s> PeerPath<'s> {
    fn of(st: &'s HostState, local: &RdmaSelection, ip: std::net::IpAddr) -> Self {
        // The neighbour the kernel uses: on the netdev the route leaves by.
        let route = fib_lookup(st, &Flow::to(ip).from(local.address));
        let via_dev = route.as_ref().ok().and_then(|d| d.dev.clone());
        let next_hop = route.as_ref().ok().and_then(|d| d.gateway).unwrap_or(ip);
        let on_dev = peer_neighbor(st, next_hop, via_dev.as_deref(), &local.netdev);
        PeerPath {
            ip,
            route,
            via_dev,
            next_hop,
            on_dev,
        }
    }
}

/// Rules 6 and 7 (and 8's status 12): after status 12, or an address-resolution
/// errno moving to RTR, the neighbour entry for the peer's address decides:
/// ARP flux, no route or no neighbour, or a path that drops RoCE.
fn neighbor_rules(i: &ExplainInput<'_>, local: &RdmaSelection) -> Option<Out> {
    let status = completion(i.value);
    let resolve_errno = matches!(
        errno(i.value),
        Some(libc::ETIMEDOUT)
            | Some(libc::ENETUNREACH)
            | Some(libc::EHOSTUNREACH)
            | Some(libc::EADDRNOTAVAIL)
            | Some(libc::ENODATA)
    );
    if !(status == Some(WC_RETRY_EXC_ERR) || (i.stage == Stage::ReadyToReceive && resolve_errno)) {
        return None;
    }
    if let Some(peer) = i.peer {
        let path = PeerPath::of(i.state, local, peer.address);
        let peer_mac = peer.mac.as_deref().map(str::to_lowercase);
        if let Some(pm) = peer_mac.as_ref() {
            if let Some(o) = flipped_entry(i, local, peer, &path, pm) {
                return Some(o);
            }
        }
        if let Some(n) = path
            .on_dev
            .filter(|n| n.is_resolved() && path.next_hop == path.ip)
        {
            if let Some(o) = wrong_mac(i, peer, &path, n, &peer_mac) {
                return Some(o);
            }
        } else {
            return Some(unresolved(local, &path));
        }
        if status == Some(WC_RETRY_EXC_ERR) {
            return Some(retry_exceeded(i, local, &path));
        }
    }
    if i.stage == Stage::ReadyToReceive {
        return Some(Out::new(
            Cause::NoRouteOrArp,
            "moving the queue pair to RTR the kernel could not resolve the peer's address".into(),
        ));
    }
    None
}

/// The MAC of a resolved neighbour entry, lowercase.
fn resolved_mac(n: Option<&crate::model::Neighbor>) -> Option<String> {
    n.filter(|n| n.is_resolved())
        .and_then(|n| n.mac.as_ref())
        .map(|m| m.to_string().to_lowercase())
}

/// Rule 6a: the entry flipped during the probe: it held another NIC's MAC
/// when the probe started and holds the peer's own (`pm`) now (the peer's
/// NICs answer for each other; seen on Soft-RoCE with a strict rp_filter,
/// where the peer's own ARP corrects the entry and its replies from the wrong
/// NIC spoil it again: docs/vm.md).
fn flipped_entry(
    i: &ExplainInput<'_>,
    local: &RdmaSelection,
    peer: &EndpointSummary,
    path: &PeerPath,
    pm: &String,
) -> Option<Out> {
    let first = i.initial?;
    let ip = path.ip;
    let was = peer_neighbor(first, path.next_hop, path.via_dev.as_deref(), &local.netdev);
    let (then, now) = (resolved_mac(was), resolved_mac(path.on_dev));
    if !(completion(i.value) == Some(WC_RETRY_EXC_ERR)
        && path.next_hop == ip
        && now.as_ref() == Some(pm)
        && then.as_ref().is_some_and(|t| t != pm))
    {
        return None;
    }
    let then = then.unwrap_or_default();
    let owner = i
        .peer_nic_macs
        .iter()
        .find(|(_, m)| m.to_lowercase() == then)
        .map(|(nd, _)| nd.clone());
    Some(
        Out::new(
            Cause::ArpFlux,
            format!(
                "when the probe started, this host's neighbour entry for the peer's \
                 {ip} held {then} ({}), not the MAC of the peer's {} ({pm}); it \
                 holds the right one now: the entry flips between the peer's NICs \
                 (ARP flux on the peer: its NICs answer ARP for each other's \
                 addresses), and RoCE frames sent to the wrong one are dropped",
                owner
                    .as_deref()
                    .map(|o| format!("the peer's {o}"))
                    .unwrap_or_else(|| "no interface of the peer".to_string()),
                peer.netdev.as_deref().unwrap_or("RDMA netdev"),
            ),
        )
        .ev("neighbor_at_start", was.map(neighbor_text))
        .ev("neighbor", path.on_dev.map(neighbor_text))
        .ev("peer_netdev", &peer.netdev)
        .ev("peer_mac", pm)
        .ev("mac_owner_on_peer", &owner)
        .ev("route_dev", &path.via_dev)
        .fix([
            fix_arp_on_peer(peer),
            format!("then: roce-net probe rdma {ip} again"),
        ]),
    )
}

/// The fix of ARP flux on the peer: roce-net's ARP settings and routing there.
fn fix_arp_on_peer(peer: &EndpointSummary) -> String {
    format!(
        "on the peer ({}): roce-net apply (arp_ignore=1, arp_announce=2 and \
         per-NIC source routing)",
        peer.host
    )
}

/// Rule 6: after status 12, the resolved entry `n` for the peer's address
/// holds a MAC that is not the peer NIC's.
fn wrong_mac(
    i: &ExplainInput<'_>,
    peer: &EndpointSummary,
    path: &PeerPath,
    n: &crate::model::Neighbor,
    peer_mac: &Option<String>,
) -> Option<Out> {
    let ip = path.ip;
    let mac = n.mac.as_ref().map(|m| m.to_string().to_lowercase());
    if !(completion(i.value) == Some(WC_RETRY_EXC_ERR) && peer_mac.is_some() && mac != *peer_mac) {
        return None;
    }
    let owner = i
        .peer_nic_macs
        .iter()
        .find(|(_, m)| Some(m.to_lowercase()) == mac)
        .map(|(nd, _)| nd.clone());
    let whose = match &owner {
        Some(nd) => format!(
            "that is the MAC of the peer's {nd}, another NIC: the peer answered \
             ARP for {ip} from the wrong NIC (ARP flux, arp_ignore=0 on the peer)"
        ),
        None => "no interface of the peer has that MAC: a stale or foreign entry".to_string(),
    };
    Some(
        Out::new(
            Cause::ArpFlux,
            format!(
                "this host's neighbour entry for the peer's {ip} holds {} but the \
                 peer's {} has {}; {whose}. RoCE frames go to that MAC and its NIC \
                 drops them, so every retry times out",
                mac.clone().unwrap_or_default(),
                peer.netdev.as_deref().unwrap_or("RDMA netdev"),
                peer_mac.clone().unwrap_or_default()
            ),
        )
        .ev("neighbor", neighbor_text(n))
        .ev("peer_netdev", &peer.netdev)
        .ev("peer_mac", peer_mac)
        .ev("mac_owner_on_peer", &owner)
        .ev("route_dev", &path.via_dev)
        .fix([
            fix_arp_on_peer(peer),
            format!("here: ip neigh del {ip} dev {}", n.ifname),
            format!("then: roce-net probe rdma {ip} again"),
        ]),
    )
}

/// Rule 7: no resolved neighbour entry for the peer's address: resolution
/// failed, or there is no route.
fn unresolved(local: &RdmaSelection, path: &PeerPath) -> Out {
    let (ip, next_hop, on_dev, route) = (path.ip, path.next_hop, path.on_dev, &path.route);
    let why = match route {
        Err(e) => format!(
            "the routing table has no route from {} to {ip} ({e})",
            local.address
        ),
        Ok(d) => format!(
            "the route leaves by {} and the neighbour entry for {next_hop} is {}",
            d.dev.as_deref().unwrap_or("?"),
            on_dev
                .map(neighbor_text)
                .unwrap_or_else(|| "absent".to_string())
        ),
    };
    Out::new(
        Cause::NoRouteOrArp,
        format!(
            "the kernel could not resolve the peer's MAC for {ip}: {why}. Check \
             the route and that the peer answers ARP on its RDMA NIC"
        ),
    )
    .ev("peer_address", ip)
    .ev(
        "route",
        route.as_ref().ok().map(|d| {
            format!(
                "dev {} src {}",
                d.dev.as_deref().unwrap_or("?"),
                d.prefsrc.map(|s| s.to_string()).unwrap_or("-".into())
            )
        }),
    )
    .ev("route_error", route.as_ref().err().map(|e| e.to_string()))
    .ev("neighbor", on_dev.map(neighbor_text))
    .ev(
        "neighbor_failed",
        on_dev.is_some_and(|n| {
            n.state
                .iter()
                .any(|s| matches!(s, NeighState::Failed | NeighState::Incomplete))
        }),
    )
    .fix([
        format!("ip route get {ip} from {}", local.address),
        format!("arping -I {} {ip}", ifname_word(&local.netdev)),
        format!("ip neigh show {ip}"),
    ])
}

/// Rule 8, status 12 with the right MAC in the entry: the path drops RoCE.
fn retry_exceeded(i: &ExplainInput<'_>, local: &RdmaSelection, path: &PeerPath) -> Out {
    let ip = path.ip;
    Out::new(
        Cause::RetryExceeded,
        format!(
            "no ACK from the peer after every retry, though the neighbour entry for \
             {ip} holds the peer NIC's MAC: the path drops RoCE traffic (PFC/ECN \
             on the switch, a firewall on UDP 4791, a switch MTU below the path \
             MTU){}",
            match &path.via_dev {
                Some(d) if d != &local.netdev => format!(
                    "; also, the route from {} leaves by {d}, not by {} \
                     (asymmetric routing: see the doctor)",
                    local.address, local.netdev
                ),
                _ => String::new(),
            }
        ),
    )
    .ev("neighbor", path.on_dev.map(neighbor_text))
    .ev("route_dev", &path.via_dev)
    .ev("path_mtu", i.path_mtu)
    .fix([
        "roce-net doctor".to_string(),
        format!("check PFC/ECN on the switch ports of {}", local.netdev),
    ])
}

/// Rule 8, the statuses about the peer's side: 13 (no receive posted) and 10
/// (remote access).
fn peer_side_status(status: Option<u32>) -> Option<Out> {
    match status {
        Some(WC_RNR_RETRY_EXC_ERR) => Some(Out::new(
            Cause::RnrRetryExceeded,
            "the peer had no receive posted after every RNR retry: it is out of step \
             (another program on its queue pair, or a different protocol version)"
                .into(),
        )),
        Some(WC_REM_ACCESS_ERR) => Some(Out::new(
            Cause::RemoteAccess,
            "the peer refused the RDMA write (wrong rkey or address): the two ends \
             disagree on the buffer they exchanged"
                .into(),
        )),
        _ => None,
    }
}

/// Rule 9: the device could not be opened or set up.
fn device_error(err: Option<i32>, port: &str) -> Out {
    let hint = match err {
        Some(libc::ENOMEM) => {
            "registering memory failed: raise the locked-memory limit (ulimit -l unlimited, \
             or LimitMEMLOCK=infinity for a service)"
        }
        Some(libc::EACCES) | Some(libc::EPERM) => {
            "permission denied on /dev/infiniband: run as root or add the user to the \
             rdma group"
        }
        _ => "the device could not be set up",
    };
    Out::new(Cause::DeviceError, format!("{hint} ({port})")).ev("port", port)
}
