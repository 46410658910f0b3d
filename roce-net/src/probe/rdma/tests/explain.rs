//! Every cause the translation knows, from recorded error values (the numbers
//! libibverbs and the kernel return) and the doctor's fixture snapshots.

use super::{doctor_fixture, ip, neigh};
use crate::model::{HostState, NeighState};
use crate::probe::rdma::explain::{explain_rdma_failure, Cause, ExplainInput};
use crate::probe::rdma::select::{select_rdma_port, RdmaSelection};
use crate::probe::rdma::status::{errno_name, wc_status_name};
use crate::probe::rdma::{EndpointSummary, FailureValue, ProbeFailure, Stage};
use std::collections::BTreeMap;

/// The peer: host gpu2, its ens1 = 198.18.0.21 with MAC 02:00:00:00:0c:10 and a
/// second NIC ens2 with 02:00:00:00:0c:11.
fn peer() -> EndpointSummary {
    EndpointSummary {
        host: "gpu2".into(),
        device: "mlx5_0".into(),
        port: 1,
        gid_index: 3,
        gid: "::ffff:198.18.0.21".parse().unwrap(),
        address: ip("198.18.0.21"),
        netdev: Some("ens1".into()),
        mac: Some("02:00:00:00:0c:10".into()),
        active_mtu: Some(4096),
        qpn: 0x11a,
    }
}

fn peer_macs() -> BTreeMap<String, String> {
    [
        ("ens1", "02:00:00:00:0c:10"),
        ("ens2", "02:00:00:00:0c:11"),
        ("eno1", "02:00:00:00:0c:01"),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect()
}

/// `IBV_WC_RETRY_EXC_ERR` as a ConnectX reports it (vendor syndrome 0x81).
fn status12() -> FailureValue {
    FailureValue::Completion {
        status: 12,
        name: wc_status_name(12),
        vendor_err: 0x81,
    }
}

fn errno(e: i32) -> FailureValue {
    FailureValue::Errno {
        errno: e,
        name: errno_name(e),
    }
}

fn run(
    st: &HostState,
    sel: &RdmaSelection,
    stage: Stage,
    value: &FailureValue,
    peer: Option<&EndpointSummary>,
    mtu: Option<u32>,
) -> ProbeFailure {
    let macs = peer_macs();
    explain_rdma_failure(&ExplainInput {
        stage,
        value,
        state: st,
        local: Some(sel),
        peer,
        peer_nic_macs: &macs,
        path_mtu: mtu,
        peer_tcp: Some("198.18.0.21:18520"),
        peer_message: None,
        initial: None,
    })
}

fn healthy() -> (HostState, RdmaSelection) {
    let st = doctor_fixture("healthy.json");
    let sel = select_rdma_port(&st, ip("198.18.0.11"), None, None, None).unwrap();
    (st, sel)
}

/// The entry held another NIC's MAC when the probe started and the peer's own
/// when the failure was explained (the VM tier saw this with a strict
/// rp_filter): still ARP flux, not "the path drops RoCE".
#[test]
fn status_12_with_an_entry_that_flipped_during_the_probe_is_arp_flux() {
    let (mut first, sel) = healthy();
    let mut now = first.clone();
    first.neighbors.push(neigh(
        "198.18.0.21",
        "ens1",
        "02:00:00:00:0c:11",
        NeighState::Reachable,
    ));
    now.neighbors.push(neigh(
        "198.18.0.21",
        "ens1",
        "02:00:00:00:0c:10",
        NeighState::Delay,
    ));
    let macs = peer_macs();
    let peer = peer();
    let value = status12();
    let input = ExplainInput {
        stage: Stage::SendRecv,
        value: &value,
        state: &now,
        local: Some(&sel),
        peer: Some(&peer),
        peer_nic_macs: &macs,
        path_mtu: Some(4096),
        peer_tcp: Some("198.18.0.21:18520"),
        peer_message: None,
        initial: Some(&first),
    };
    let f = explain_rdma_failure(&input);
    assert_eq!(f.cause, Cause::ArpFlux, "{}", f.message);
    assert_eq!(f.evidence["mac_owner_on_peer"], "ens2");
    assert!(f.evidence["neighbor_at_start"]
        .as_str()
        .unwrap()
        .contains("lladdr 02:00:00:00:0c:11"));
    assert!(f.message.contains("flips"), "{}", f.message);
    // Without the first snapshot the same fresh state reads as a lossy path.
    let f = explain_rdma_failure(&ExplainInput {
        initial: None,
        ..input
    });
    assert_eq!(f.cause, Cause::RetryExceeded, "{}", f.message);
}

#[test]
fn status_12_with_the_peers_other_nic_mac_is_arp_flux() {
    let (mut st, sel) = healthy();
    st.neighbors.push(neigh(
        "198.18.0.21",
        "ens1",
        "02:00:00:00:0c:11",
        NeighState::Reachable,
    ));
    let f = run(
        &st,
        &sel,
        Stage::SendRecv,
        &status12(),
        Some(&peer()),
        Some(4096),
    );
    assert_eq!(f.cause, Cause::ArpFlux, "{}", f.message);
    assert_eq!(f.evidence["mac_owner_on_peer"], "ens2");
    assert_eq!(f.evidence["peer_mac"], "02:00:00:00:0c:10");
    assert!(f.evidence["neighbor"]
        .as_str()
        .unwrap()
        .contains("lladdr 02:00:00:00:0c:11"));
    assert!(
        f.message.contains("transport retry counter exceeded"),
        "{}",
        f.message
    );
    assert!(f.message.contains("ARP flux"), "{}", f.message);
    assert!(
        f.fix
            .iter()
            .any(|c| c == "here: ip neigh del 198.18.0.21 dev ens1"),
        "{:?}",
        f.fix
    );
}

#[test]
fn status_12_with_a_mac_nobody_owns_is_still_arp_flux_and_says_so() {
    let (mut st, sel) = healthy();
    st.neighbors.push(neigh(
        "198.18.0.21",
        "ens1",
        "02:99:00:00:00:01",
        NeighState::Stale,
    ));
    let f = run(
        &st,
        &sel,
        Stage::WriteToPeer,
        &status12(),
        Some(&peer()),
        Some(4096),
    );
    assert_eq!(f.cause, Cause::ArpFlux);
    assert_eq!(f.evidence["mac_owner_on_peer"], serde_json::Value::Null);
    assert!(
        f.message.contains("no interface of the peer has that MAC"),
        "{}",
        f.message
    );
}

#[test]
fn status_12_with_the_right_mac_is_a_lossy_path() {
    let (mut st, sel) = healthy();
    st.neighbors.push(neigh(
        "198.18.0.21",
        "ens1",
        "02:00:00:00:0c:10",
        NeighState::Reachable,
    ));
    let f = run(
        &st,
        &sel,
        Stage::SendRecv,
        &status12(),
        Some(&peer()),
        Some(4096),
    );
    assert_eq!(f.cause, Cause::RetryExceeded, "{}", f.message);
    assert!(f.message.contains("PFC"), "{}", f.message);
}

#[test]
fn etimedout_at_rtr_with_a_failed_neighbour_is_no_route_or_arp() {
    let (mut st, sel) = healthy();
    st.neighbors
        .push(neigh("198.18.0.21", "ens1", "", NeighState::Failed));
    let f = run(
        &st,
        &sel,
        Stage::ReadyToReceive,
        &errno(libc::ETIMEDOUT),
        Some(&peer()),
        Some(4096),
    );
    assert_eq!(f.cause, Cause::NoRouteOrArp, "{}", f.message);
    assert_eq!(f.evidence["neighbor_failed"], true);
    assert!(f.message.contains("ETIMEDOUT"), "{}", f.message);
    assert!(f.message.contains("route leaves by ens1"), "{}", f.message);
    assert!(
        f.fix
            .iter()
            .any(|c| c.starts_with("arping -I ens1 198.18.0.21")),
        "{:?}",
        f.fix
    );
}

#[test]
fn etimedout_at_rtr_without_any_route_names_the_missing_route() {
    let (st, sel) = healthy();
    let mut p = peer();
    p.address = ip("203.0.113.9");
    p.gid = "::ffff:203.0.113.9".parse().unwrap();
    // healthy.json has a default route via eno1; take it away.
    let mut st = st;
    st.routes.retain(|r| r.dst.prefix_len() != 0);
    let f = run(
        &st,
        &sel,
        Stage::ReadyToReceive,
        &errno(libc::ETIMEDOUT),
        Some(&p),
        None,
    );
    assert_eq!(f.cause, Cause::NoRouteOrArp, "{}", f.message);
    assert!(
        f.message
            .contains("no route from 198.18.0.11 to 203.0.113.9"),
        "{}",
        f.message
    );
    assert!(f.evidence["route_error"].is_string());
}

#[test]
fn a_path_mtu_above_the_active_mtu_is_named() {
    let (st, sel) = healthy();
    let mut p = peer();
    p.active_mtu = Some(1024);
    let f = run(
        &st,
        &sel,
        Stage::SendRecv,
        &status12(),
        Some(&p),
        Some(4096),
    );
    assert_eq!(f.cause, Cause::PathMtuAboveActive, "{}", f.message);
    assert_eq!(f.evidence["path_mtu"], 4096);
    assert_eq!(f.evidence["peer_active_mtu"], 1024);
    assert_eq!(f.evidence["local_active_mtu"], 4096);
}

#[test]
fn a_link_local_gid_index_is_named() {
    let st = doctor_fixture("healthy.json");
    let sel = select_rdma_port(&st, ip("198.18.0.11"), None, None, Some(1)).unwrap();
    let f = run(
        &st,
        &sel,
        Stage::ReadyToReceive,
        &errno(libc::EINVAL),
        Some(&peer()),
        Some(4096),
    );
    assert_eq!(f.cause, Cause::GidLinkLocal, "{}", f.message);
    assert_eq!(f.evidence["gid_index"], 1);
    assert_eq!(f.evidence["nccl_gid_index"], 3);
}

#[test]
fn a_roce_v1_gid_index_is_named() {
    let st = doctor_fixture("healthy.json");
    let sel = select_rdma_port(&st, ip("198.18.0.11"), None, None, Some(2)).unwrap();
    let f = run(
        &st,
        &sel,
        Stage::SendRecv,
        &status12(),
        Some(&peer()),
        Some(4096),
    );
    assert_eq!(f.cause, Cause::GidRoceV1, "{}", f.message);
}

#[test]
fn gids_of_different_families_are_named() {
    let (st, sel) = healthy();
    let mut p = peer();
    p.gid = "2001:db8::21".parse().unwrap();
    p.address = ip("2001:db8::21");
    let f = run(
        &st,
        &sel,
        Stage::ReadyToReceive,
        &errno(libc::EINVAL),
        Some(&p),
        Some(4096),
    );
    assert_eq!(f.cause, Cause::GidWrongFamily, "{}", f.message);
    assert!(
        f.message.contains("IPv4") && f.message.contains("IPv6"),
        "{}",
        f.message
    );
}

#[test]
fn a_port_that_is_not_active_comes_first() {
    let st = doctor_fixture("port-down.bad.json");
    let sel = select_rdma_port(&st, ip("198.18.0.14"), None, None, None).unwrap();
    let f = run(
        &st,
        &sel,
        Stage::Preflight,
        &FailureValue::Other {
            message: "the port is not ACTIVE".into(),
        },
        None,
        None,
    );
    assert_eq!(f.cause, Cause::PortNotActive, "{}", f.message);
    assert_eq!(f.evidence["state"], "DOWN");
    assert_eq!(f.evidence["phys_state"], "Disabled");
    assert!(
        f.fix.iter().any(|c| c == "ip link set ens4 up"),
        "{:?}",
        f.fix
    );
}

#[test]
fn tcp_failures_are_peer_unreachable() {
    let (st, sel) = healthy();
    let f = run(
        &st,
        &sel,
        Stage::Connect,
        &errno(libc::ECONNREFUSED),
        None,
        None,
    );
    assert_eq!(f.cause, Cause::PeerUnreachable);
    assert!(
        f.message.contains("nothing listens on 198.18.0.21:18520"),
        "{}",
        f.message
    );
    let f = run(
        &st,
        &sel,
        Stage::Connect,
        &FailureValue::Timeout { waited_ms: 3000 },
        None,
        None,
    );
    assert_eq!(f.cause, Cause::PeerUnreachable);
}

#[test]
fn other_completion_statuses_and_open_errors() {
    let (mut st, sel) = healthy();
    st.neighbors.push(neigh(
        "198.18.0.21",
        "ens1",
        "02:00:00:00:0c:10",
        NeighState::Reachable,
    ));
    let rnr = FailureValue::Completion {
        status: 13,
        name: wc_status_name(13),
        vendor_err: 0,
    };
    assert_eq!(
        run(&st, &sel, Stage::SendRecv, &rnr, Some(&peer()), Some(4096)).cause,
        Cause::RnrRetryExceeded
    );
    let acc = FailureValue::Completion {
        status: 10,
        name: wc_status_name(10),
        vendor_err: 0,
    };
    assert_eq!(
        run(
            &st,
            &sel,
            Stage::WriteToPeer,
            &acc,
            Some(&peer()),
            Some(4096)
        )
        .cause,
        Cause::RemoteAccess
    );
    let f = run(&st, &sel, Stage::Open, &errno(libc::ENOMEM), None, None);
    assert_eq!(f.cause, Cause::DeviceError);
    assert!(f.message.contains("ulimit -l"), "{}", f.message);
    let f = run(&st, &sel, Stage::Open, &errno(libc::EACCES), None, None);
    assert!(f.message.contains("rdma group"), "{}", f.message);
    let f = run(
        &st,
        &sel,
        Stage::SendRecv,
        &FailureValue::Timeout { waited_ms: 10_000 },
        Some(&peer()),
        Some(4096),
    );
    assert_eq!(f.cause, Cause::Timeout);
}

#[test]
fn cause_ids_are_stable_and_serialise_as_ids() {
    for c in [
        Cause::ArpFlux,
        Cause::NoRouteOrArp,
        Cause::PathMtuAboveActive,
        Cause::GidLinkLocal,
        Cause::GidRoceV1,
        Cause::GidWrongFamily,
        Cause::PortNotActive,
    ] {
        assert_eq!(serde_json::to_value(c).unwrap(), c.id());
    }
}
