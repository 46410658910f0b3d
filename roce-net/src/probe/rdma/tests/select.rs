//! The device, port and GID index chosen from a source address, on the sysfs
//! fixture trees and the doctor's fixture snapshots.

use super::{doctor_fixture, ip, write_sysfs_device_with};
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

/// ens1 and ens2 of the doctor's healthy host, dual-stack (their IPv4
/// addresses and `fd00:198:18::11`/`::12`/64 on one prefix), each backed by
/// an RDMA device whose GID table the kernel's sysfs format holds: 0/1
/// link-local, 2/3 the IPv4-mapped address, 4/5 the IPv6 one (v1, v2), as
/// rxe or mlx5 build it after `ip -6 addr add fd00:198:18::11/64 dev ens1`.
fn dual_stack() -> HostState {
    let mut st = doctor_fixture("healthy.json");
    let t = tempfile::tempdir().unwrap();
    for (n, dev) in [(1u8, "mlx5_0"), (2, "mlx5_1")] {
        let ifname = format!("ens{n}");
        let mut a = st
            .addresses
            .iter()
            .find(|a| a.ifname == ifname && a.address.is_ipv4())
            .unwrap()
            .clone();
        let v4 = a.address;
        a.address = ip(&format!("fd00:198:18::1{n}"));
        a.prefix_len = 64;
        a.label = None;
        st.addresses.push(a);
        write_sysfs_device_with(
            t.path(),
            dev,
            &ifname,
            &[v4, ip(&format!("fd00:198:18::1{n}"))],
            "4: ACTIVE",
        );
    }
    let mut w = Vec::new();
    st.rdma = crate::kernel::sysfs::read_rdma_sysfs(t.path(), &st.interfaces, &mut w);
    assert!(w.is_empty(), "{w:?}");
    st
}

#[test]
fn an_ipv6_source_picks_the_roce_v2_gid_of_that_ipv6_address() {
    let st = dual_stack();
    // `roce-net probe rdma --source fd00:198:18::12`: ens2's device, the v2
    // GID of the IPv6 address (index 5), not the IPv4-mapped one beside it.
    let s = select_rdma_port(&st, ip("fd00:198:18::12"), None, None, None).unwrap();
    assert_eq!((s.device.as_str(), s.netdev.as_str()), ("mlx5_1", "ens2"));
    assert_eq!(
        s.gid,
        "fd00:198:18::12".parse::<std::net::Ipv6Addr>().unwrap()
    );
    assert_eq!((s.gid_index, s.gid_type), (5, Some(GidType::RoceV2)));
    assert_eq!(s.address, ip("fd00:198:18::12"));
    // The NCCL advice names the IPv4 GID (NCCL_IB_ADDR_FAMILY's default
    // AF_INET): the probe says it uses another one.
    assert_eq!(s.nccl_gid_index, Some(3));
    assert!(
        s.notes
            .iter()
            .any(|n| n.contains("names GID index 3") && n.contains("uses index 5")),
        "{:?}",
        s.notes
    );
    // The IPv4 source on the same NIC still picks its own GID, with no note.
    let s = select_rdma_port(&st, ip("198.18.0.12"), None, None, None).unwrap();
    assert_eq!((s.gid_index, s.gid_type), (3, Some(GidType::RoceV2)));
    assert!(s.notes.is_empty(), "{:?}", s.notes);
}

#[test]
fn an_ipv6_source_without_its_gid_is_refused_naming_the_table() {
    // The address is on ens1 but the device's table lacks its GID (still
    // tentative, or DAD failed): refused, not a fall back to another GID.
    let mut st = dual_stack();
    let p = &mut st
        .rdma
        .iter_mut()
        .find(|d| d.name == "mlx5_0")
        .unwrap()
        .ports[0];
    p.gids.retain(|g| g.index < 4);
    let e = select_rdma_port(&st, ip("fd00:198:18::11"), None, None, None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(
        e.message().contains("no RoCE v2 GID for fd00:198:18::11"),
        "{e}"
    );
    assert!(e.message().contains("::ffff:198.18.0.11"), "{e}");
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
