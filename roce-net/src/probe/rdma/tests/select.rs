//! The device, port and GID index chosen from a source address, on the sysfs
//! fixture trees and the doctor's fixture snapshots.

use super::{doctor_fixture, ip};
use crate::error::ErrorKind;
use crate::model::GidType;
use crate::probe::rdma::select::select_rdma_port;
use crate::HostState;
use std::path::PathBuf;

/// The connectx8 sysfs tree read through the real reader, with netdevs and
/// addresses matching its GID tables (ens<N>f0np0 = 198.18.0.<11+N>).
fn connectx8() -> HostState {
    let mut st = doctor_fixture("healthy.json");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs/connectx8");
    let mut ifaces = Vec::new();
    let mut addrs = Vec::new();
    let base = st
        .interfaces
        .iter()
        .find(|i| i.name == "ens1")
        .unwrap()
        .clone();
    let base_addr = st
        .addresses
        .iter()
        .find(|a| a.ifname == "ens1")
        .unwrap()
        .clone();
    for n in 0..8u32 {
        let mut i = base.clone();
        i.name = format!("ens{}f0np0", n + 1);
        i.index = 10 + n;
        ifaces.push(i);
        let mut a = base_addr.clone();
        a.ifname = format!("ens{}f0np0", n + 1);
        a.ifindex = 10 + n;
        a.address = ip(&format!("198.18.0.{}", 11 + n));
        addrs.push(a);
    }
    st.interfaces.retain(|i| !i.name.starts_with("ens"));
    st.addresses.retain(|a| !a.ifname.starts_with("ens"));
    st.interfaces.extend(ifaces);
    st.addresses.extend(addrs);
    let mut w = Vec::new();
    st.rdma = crate::kernel::sysfs::read_rdma_sysfs(&root, &st.interfaces, &mut w);
    assert!(w.is_empty(), "{w:?}");
    st
}

#[test]
fn the_source_address_picks_its_nics_port_and_roce_v2_gid() {
    let st = connectx8();
    // Check the fixture first: the GID of 198.18.0.13 is on mlx5_2, v1 and v2.
    let p = &st.rdma.iter().find(|d| d.name == "mlx5_2").unwrap().ports[0];
    let mapped: Vec<_> = p
        .gids
        .iter()
        .filter(|g| g.ipv4 == Some("198.18.0.13".parse().unwrap()))
        .collect();
    assert!(mapped.len() >= 2, "{mapped:?}");
    let s = select_rdma_port(&st, ip("198.18.0.13"), None, None, None).unwrap();
    assert_eq!(
        (s.device.as_str(), s.port, s.netdev.as_str()),
        ("mlx5_2", 1, "ens3f0np0")
    );
    assert_eq!(s.gid_type, Some(GidType::RoceV2));
    let want = mapped
        .iter()
        .filter(|g| g.gid_type == Some(GidType::RoceV2))
        .map(|g| g.index)
        .min();
    assert_eq!(Some(s.gid_index), want);
    assert_eq!(
        s.gid,
        "::ffff:198.18.0.13".parse::<std::net::Ipv6Addr>().unwrap()
    );
    // The same index the NCCL advice names for the port: no note.
    assert_eq!(s.nccl_gid_index, Some(s.gid_index));
    assert!(s.notes.is_empty(), "{:?}", s.notes);
    assert!(s.port_active());
}

#[test]
fn every_nic_of_the_fixture_agrees_with_the_nccl_advice() {
    let st = connectx8();
    let nccl = crate::scope::roce_v2_gid_indices(&st);
    for n in 0..8u32 {
        let s =
            select_rdma_port(&st, ip(&format!("198.18.0.{}", 11 + n)), None, None, None).unwrap();
        let r = crate::model::PortRef {
            device: s.device.clone(),
            port: s.port,
        };
        assert_eq!(nccl.get(&r).copied().flatten(), Some(s.gid_index), "{r}");
    }
}

#[test]
fn a_forced_gid_index_is_used_and_noted() {
    let st = connectx8();
    let s = select_rdma_port(&st, ip("198.18.0.11"), None, None, Some(0)).unwrap();
    assert_eq!(s.gid_index, 0);
    assert_eq!(s.gid_type, Some(GidType::RoceV1));
    let notes = s.notes.join("\n");
    assert!(notes.contains("link-local"), "{notes}");
    assert!(notes.contains("RoCE v1"), "{notes}");
    assert!(notes.contains("the NCCL advice names GID index"), "{notes}");
}

#[test]
fn bad_choices_are_refused_with_what_exists() {
    let st = connectx8();
    let e = select_rdma_port(&st, ip("198.18.9.9"), None, None, None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.message().contains("198.18.0.11 (ens1f0np0)"), "{e}");
    let e = select_rdma_port(&st, ip("198.18.0.11"), Some("mlx5_3"), None, None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.message().contains("mlx5_0:1"), "{e}");
    let e = select_rdma_port(&st, ip("198.18.0.11"), None, Some(2), None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    let e = select_rdma_port(&st, ip("198.18.0.11"), None, None, Some(200)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.message().contains("empty"), "{e}");
    // The management NIC has no RDMA port.
    let e = select_rdma_port(&st, ip("198.19.0.11"), None, None, None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(e.message().contains("no RDMA port backs eno1"), "{e}");
}

#[test]
fn a_port_without_a_roce_v2_gid_for_the_address_is_not_found() {
    let mut st = connectx8();
    for g in &mut st.rdma[0].ports[0].gids {
        if g.gid_type == Some(GidType::RoceV2) {
            g.gid_type = Some(GidType::RoceV1);
        }
    }
    let e = select_rdma_port(&st, ip("198.18.0.11"), None, None, None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(
        e.message().contains("no RoCE v2 GID for 198.18.0.11"),
        "{e}"
    );
    assert!(e.message().contains("gid-rocev2-missing"), "{e}");
}

#[test]
fn the_port_down_fixture_selects_but_is_not_active() {
    let st = doctor_fixture("port-down.bad.json");
    let s = select_rdma_port(&st, ip("198.18.0.14"), None, None, None).unwrap();
    assert_eq!(s.device, "mlx5_3");
    assert!(!s.port_active());
}

#[test]
fn options_are_validated_before_anything_opens() {
    use crate::probe::rdma::RdmaProbeOptions;
    use std::time::Duration;
    let ok = RdmaProbeOptions::default();
    ok.validate().unwrap();
    let cases: Vec<(RdmaProbeOptions, &str)> = vec![
        (
            RdmaProbeOptions {
                write_size: 0,
                ..ok.clone()
            },
            "write size 0",
        ),
        (
            RdmaProbeOptions {
                latency_size: 1 << 30,
                ..ok.clone()
            },
            "latency size",
        ),
        (
            RdmaProbeOptions {
                write_iterations: 0,
                ..ok.clone()
            },
            "write iterations 0",
        ),
        (
            RdmaProbeOptions {
                mtu: Some(1500),
                ..ok.clone()
            },
            "MTU 1500 is not an RDMA MTU",
        ),
        (
            RdmaProbeOptions {
                timeout: Duration::ZERO,
                ..ok.clone()
            },
            "timeout",
        ),
        (
            RdmaProbeOptions {
                clients: 0,
                ..ok.clone()
            },
            "clients 0",
        ),
        (
            RdmaProbeOptions {
                tcp_port: 0,
                ..ok.clone()
            },
            "TCP port 0",
        ),
        (
            RdmaProbeOptions {
                port: Some(0),
                ..ok.clone()
            },
            "RDMA port 0",
        ),
    ];
    for (o, want) in cases {
        let e = o.validate().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert!(e.message().contains(want), "{want}: {e}");
    }
}
