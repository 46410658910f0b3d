//! Fleet report over three small hosts.

use crate::doctor_support;

use doctor_support::{healthy, B};
use roce_net::Severity;

use roce_net::GidType;
use serde_json::json;
use std::collections::BTreeSet;

/// A host that differs from `healthy` in every fleet-compared way: three NICs in
/// another subnet, MTU 4200, RoCE v2 GIDs at index 5, and gpu1's ens1 address on
/// its management NIC.
fn odd_host() -> B {
    let mut b = B::new("gpu3");
    b.nic("eno1", 2, "02:00:00:00:00:31", 1500);
    b.addr("eno1", "198.18.0.11/24");
    for n in 0..3u8 {
        let name = format!("ens{}", n + 1);
        b.nic(
            &name,
            u32::from(n) + 3,
            &format!("02:00:00:00:31:{n:02x}"),
            4200,
        );
        let a = format!("198.18.1.{}", 31 + n);
        b.addr(&name, &format!("{a}/24"));
        let t = 1001 + u32::from(n);
        b.route(&format!(
            "table {t} 198.18.1.0/24 dev {name} scope link src {a}"
        ));
        b.rule(&format!("pref {t} from {a} lookup {t}"));
    }
    for n in 0..3u8 {
        let name = format!("ens{}", n + 1);
        b.rdma(&format!("mlx5_{n}"), &name);
        let v6: std::net::Ipv6Addr = "2001:db8::31".parse().unwrap();
        let p = b.port_mut(&format!("mlx5_{n}"));
        for g in p.gids.iter_mut().filter(|g| g.ipv4.is_some()) {
            g.index += 2;
        }
        p.gids
            .push(doctor_support::gid(2, v6, GidType::RoceV1, &name, None));
        p.gids
            .push(doctor_support::gid(3, v6, GidType::RoceV2, &name, None));
    }
    b.good_sysctls();
    b
}

#[test]
fn consistent_fleet_has_no_cross_host_findings() {
    let hosts = [
        healthy("gpu1", 11).0,
        healthy("gpu2", 21).0,
        healthy("gpu3", 31).0,
    ];
    let r = roce_net::fleet_report(&hosts);
    assert!(r.findings.is_empty(), "{:#?}", r.findings);
    assert_eq!(r.hosts.len(), 3);
    let h = &r.hosts[1];
    assert_eq!(h.hostname, "gpu2");
    assert_eq!(h.nics, vec!["ens1", "ens2", "ens3", "ens4"]);
    assert_eq!(h.rdma_devices, vec!["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]);
    assert_eq!(h.gid_index, Some(3));
    assert_eq!(h.mtus, BTreeSet::from([9000]));
    assert_eq!(
        h.subnets,
        BTreeSet::from(["198.18.0.0/24".parse().unwrap()])
    );
    assert_eq!(h.max_severity, None);
}

#[test]
fn odd_host_is_named_in_every_fleet_finding() {
    let hosts = [healthy("gpu1", 11).0, healthy("gpu2", 21).0, odd_host().0];
    let r = roce_net::fleet_report(&hosts);
    let ids: BTreeSet<&str> = r.findings.iter().map(|f| f.id.as_str()).collect();
    // Every host-level comparison (the per-subnet and neighbour checks need
    // hosts sharing a subnet: tests/it/fleet_cross_host.rs; the hardware ones need
    // hosts that report firmware, rates and QoS:
    // `firmware_rate_and_qos_are_compared_across_hosts`).
    let per_host: BTreeSet<&str> = roce_net::FLEET_CHECK_IDS
        .iter()
        .copied()
        .filter(|id| {
            ![
                "fleet-neighbor-wrong-mac",
                "fleet-subnet-nic-count-differs",
                "fleet-subnet-mtu-differs",
                "fleet-firmware-differs",
                "fleet-rate-differs",
                "fleet-qos-differs",
                "fleet-host-repeated",
            ]
            .contains(id)
        })
        .collect();
    assert_eq!(ids, per_host);
    for f in &r.findings {
        if f.id == "fleet-duplicate-address" {
            assert_eq!(f.severity, Severity::Error);
            assert_eq!(f.subject.address.as_deref(), Some("198.18.0.11"));
            assert_eq!(f.evidence["holders"], json!(["gpu1/ens1", "gpu3/eno1"]));
        } else {
            assert_eq!(f.subject.host.as_deref(), Some("gpu3"), "{f:#?}");
            assert_eq!(f.severity, Severity::Warning);
        }
    }
    let by = |id: &str| r.findings.iter().find(|f| f.id == id).unwrap();
    assert_eq!(by("fleet-gid-index-differs").evidence["value"], json!("5"));
    assert_eq!(
        by("fleet-gid-index-differs").evidence["majority"],
        json!("3")
    );
    assert_eq!(by("fleet-mtu-differs").evidence["value"], json!("4200"));
    assert_eq!(by("fleet-nic-count-differs").evidence["value"], json!(3));
    assert_eq!(by("fleet-nic-count-differs").evidence["majority"], json!(4));
    assert_eq!(
        by("fleet-subnet-layout-differs").evidence["value"],
        json!("198.18.1.0/24")
    );
    let odd = &r.hosts[2];
    assert_eq!(odd.gid_index, Some(5));
    assert_eq!(odd.nics.len(), 3);
    // Errors first.
    assert_eq!(r.findings[0].id, "fleet-duplicate-address");
}

#[test]
fn single_host_has_no_cross_host_findings() {
    let r = roce_net::fleet_report(&[odd_host().0]);
    assert!(r.findings.is_empty());
    assert_eq!(r.hosts.len(), 1);
}

#[test]
fn fleet_findings_carry_fixes() {
    let hosts = [healthy("gpu1", 11).0, healthy("gpu2", 21).0, odd_host().0];
    let r = roce_net::fleet_report(&hosts);
    let by = |id: &str| r.findings.iter().find(|f| f.id == id).unwrap();
    assert_eq!(
        by("fleet-mtu-differs").remediation.commands,
        vec![
            "ssh gpu3 ip link set dev ens1 mtu 9000",
            "ssh gpu3 ip link set dev ens2 mtu 9000",
            "ssh gpu3 ip link set dev ens3 mtu 9000"
        ]
    );
    // The policy has no MTU key, so the fix suggests none; every policy snippet
    // a fleet finding does suggest must be a policy the planner accepts.
    assert_eq!(by("fleet-mtu-differs").remediation.policy, None);
    for f in &r.findings {
        if let Some(p) = &f.remediation.policy {
            roce_net::Policy::from_yaml(p)
                .unwrap_or_else(|e| panic!("{}: suggested policy {p:?} is refused: {e}", f.id));
        }
    }
    assert_eq!(
        by("fleet-duplicate-address").remediation.commands,
        vec!["ssh gpu3 ip addr del 198.18.0.11/24 dev eno1"]
    );
    // Every finding says what to run: a fix, or (where nothing can be run
    // that fixes it, such as a missing NIC) the commands that show more.
    for f in &r.findings {
        let rem = &f.remediation;
        assert!(
            !rem.commands.is_empty() || !rem.checks.is_empty(),
            "{}",
            f.id
        );
    }
    // Diagnostics are never fixes.
    assert!(by("fleet-nic-count-differs")
        .remediation
        .commands
        .is_empty());
    assert_eq!(
        by("fleet-nic-count-differs").remediation.checks,
        vec!["ssh gpu3 rdma link show", "ssh gpu3 ip -br link"]
    );
}

/// Lab hosts share the machine's host name: a fix command without the
/// namespace would act on the machine's own namespace. Every command of every
/// finding about a host in a namespace runs there, on that host.
#[test]
fn fleet_fixes_for_hosts_in_namespaces_run_in_the_namespace() {
    let mut hosts = [healthy("gpu1", 11).0, healthy("gpu2", 21).0, odd_host().0];
    for (i, h) in hosts.iter_mut().enumerate() {
        h.hostname = "lab".into();
        h.netns = Some(format!("rnt-t-h{i}"));
    }
    let r = roce_net::fleet_report(&hosts);
    let ids: BTreeSet<&str> = r.findings.iter().map(|f| f.id.as_str()).collect();
    for id in [
        "fleet-mtu-differs",
        "fleet-duplicate-address",
        "fleet-nic-count-differs",
        "fleet-subnet-layout-differs",
        "fleet-gid-index-differs",
    ] {
        assert!(ids.contains(id), "{id} missing: {ids:?}");
    }
    for f in &r.findings {
        let rem = &f.remediation;
        for c in rem.commands.iter().chain(&rem.checks) {
            if c == "unset NCCL_IB_GID_INDEX" {
                continue;
            }
            let ok = [
                "ssh lab ip -n rnt-t-h2 ",
                "ssh lab roce-net --netns rnt-t-h2 ",
            ]
            .iter()
            .any(|p| c.starts_with(p))
                || c.starts_with("ssh lab ip netns exec rnt-t-h2 ");
            assert!(ok, "{}: {c:?} does not run in gpu3's namespace", f.id);
        }
    }
    let dup = r
        .findings
        .iter()
        .find(|f| f.id == "fleet-duplicate-address")
        .unwrap();
    assert_eq!(
        dup.remediation.commands,
        vec!["ssh lab ip -n rnt-t-h2 addr del 198.18.0.11/24 dev eno1"]
    );
    let gid = r
        .findings
        .iter()
        .find(|f| f.id == "fleet-gid-index-differs")
        .unwrap();
    assert_eq!(gid.remediation.commands, vec!["unset NCCL_IB_GID_INDEX"]);
    assert_eq!(
        gid.remediation.checks,
        vec!["ssh lab roce-net --netns rnt-t-h2 nccl-env"]
    );
}

/// The same host's snapshot given twice is one host: named in
/// `fleet-host-repeated`, compared once, and never told to delete its own
/// address as a duplicate.
#[test]
fn the_same_host_given_twice_is_named_not_a_duplicate_address() {
    let a = healthy("gpu1", 11).0;
    let r = roce_net::fleet_report(&[a.clone(), a.clone()]);
    let ids: Vec<&str> = r.findings.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(ids, vec!["fleet-host-repeated"], "{:#?}", r.findings);
    assert_eq!(r.findings[0].subject.host.as_deref(), Some("gpu1"));
    assert_eq!(r.findings[0].evidence["snapshots"], json!([1, 2]));
    assert_eq!(r.hosts.len(), 2, "every snapshot keeps its summary");

    // With a third host: the repeat does not outvote it, and gpu3 (holding
    // gpu1's address) is the only one told to delete it.
    let mut lab = vec![a.clone(), odd_host().0, a];
    for (i, h) in lab.iter_mut().enumerate() {
        h.hostname = "lab".into();
        h.netns = Some(if i == 1 { "rnt-t-b" } else { "rnt-t-a" }.into());
    }
    let r = roce_net::fleet_report(&lab);
    let rep: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.id == "fleet-host-repeated")
        .collect();
    assert_eq!(rep.len(), 1);
    assert_eq!(rep[0].subject.host.as_deref(), Some("lab:rnt-t-a"));
    assert_eq!(rep[0].evidence["snapshots"], json!([1, 3]));
    let dup: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.id == "fleet-duplicate-address")
        .collect();
    assert_eq!(dup.len(), 1, "{:#?}", r.findings);
    assert!(dup[0].message.contains("on 2 hosts"), "{}", dup[0].message);
    assert_eq!(
        dup[0].remediation.commands,
        vec!["ssh lab ip -n rnt-t-b addr del 198.18.0.11/24 dev eno1"]
    );
    // Two hosts, so no majority: a 1:1 tie names both, and the repeat must not
    // have made a 2-1 majority for gpu1's MTU.
    let mtu: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.id == "fleet-mtu-differs")
        .collect();
    assert_eq!(mtu.len(), 2);
    assert!(mtu.iter().all(|f| !f.evidence.contains_key("majority")));
    assert_eq!(mtu[0].evidence["counts"].as_object().unwrap().len(), 2);
    assert!(mtu[0].evidence["counts"]
        .as_object()
        .unwrap()
        .values()
        .all(|c| c == &json!(1)));
}

#[test]
fn firmware_rate_and_qos_are_compared_across_hosts() {
    use doctor_support::healthy_hw;
    let a = healthy_hw("gpu1", 11).build();
    let b = healthy_hw("gpu2", 21).build();
    let mut c = healthy_hw("gpu3", 31);
    for d in &mut c.0.rdma {
        d.fw_ver = Some("28.37.1014".into());
        d.ports[0].rate = Some("200 Gb/sec (2X NDR)".into());
    }
    for n in 1..=4 {
        c.iface_mut(&format!("ens{n}"))
            .qos
            .as_mut()
            .unwrap()
            .pfc_enabled = Some(vec![4]);
    }
    let c = c.build();
    let r = roce_net::fleet_report(&[a.clone(), b.clone(), c]);
    let ids: BTreeSet<&str> = r.findings.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(
        ids,
        BTreeSet::from([
            "fleet-firmware-differs",
            "fleet-rate-differs",
            "fleet-qos-differs"
        ]),
        "{:#?}",
        r.findings
    );
    assert!(r
        .findings
        .iter()
        .all(|f| f.subject.host.as_deref() == Some("gpu3")));
    let fw = r
        .findings
        .iter()
        .find(|f| f.id == "fleet-firmware-differs")
        .unwrap();
    assert_eq!(fw.evidence["model"], json!("0x1021"));
    assert_eq!(fw.evidence["value"], json!("28.37.1014"));
    assert_eq!(fw.evidence["majority"], json!("28.39.1002"));
    let rate = r
        .findings
        .iter()
        .find(|f| f.id == "fleet-rate-differs")
        .unwrap();
    assert_eq!(rate.evidence["value"], json!("200"));
    assert_eq!(r.hosts[0].rates, BTreeSet::from(["400".to_string()]));
    assert_eq!(r.hosts[0].qos.len(), 1);
    for id in [
        "fleet-firmware-differs",
        "fleet-rate-differs",
        "fleet-qos-differs",
    ] {
        assert!(roce_net::FLEET_CHECK_IDS.contains(&id));
    }
    // Identical hosts: nothing.
    assert!(roce_net::fleet_report(&[a, b]).findings.is_empty());
}

#[test]
fn fleet_built_one_saved_snapshot_at_a_time_matches_the_in_memory_report() {
    // What `roce-net fleet` does: save each host (compact or gzip), then load,
    // add and drop one snapshot at a time.
    let hosts = [healthy("gpu1", 11).0, healthy("gpu2", 21).0, odd_host().0];
    let whole = roce_net::fleet_report(&hosts);
    assert!(!whole.findings.is_empty());
    let dir = tempfile::tempdir().unwrap();
    let mut fleet = roce_net::FleetBuilder::new(&roce_net::DoctorOptions::default());
    assert!(fleet.is_empty());
    for (i, h) in hosts.iter().enumerate() {
        let p = dir
            .path()
            .join(format!("{}.json{}", h.hostname, [".gz", ""][i % 2]));
        h.save(&p, roce_net::SnapshotFormat::for_path(&p, false))
            .unwrap();
        fleet.add(roce_net::HostState::load(&p).unwrap());
    }
    assert_eq!(fleet.len(), 3);
    assert_eq!(fleet.finish(), whole);

    // The same files loaded on threads: the same report, hosts in the order given.
    let paths: Vec<std::path::PathBuf> = hosts
        .iter()
        .enumerate()
        .map(|(i, h)| {
            dir.path()
                .join(format!("{}.json{}", h.hostname, [".gz", ""][i % 2]))
        })
        .collect();
    for threads in [1, 2, 8] {
        let mut fleet = roce_net::FleetBuilder::new(&roce_net::DoctorOptions::default());
        fleet.add_files(&paths, threads).unwrap();
        assert_eq!(fleet.finish(), whole, "{threads} threads");
    }

    // A file that cannot be read: the first such file's error, and no host added.
    std::fs::write(dir.path().join("bad.json"), "{ not json").unwrap();
    let mut with_bad = paths.clone();
    with_bad.insert(1, dir.path().join("missing.json"));
    with_bad.push(dir.path().join("bad.json"));
    let mut fleet = roce_net::FleetBuilder::new(&roce_net::DoctorOptions::default());
    let e = fleet.add_files(&with_bad, 2).unwrap_err();
    assert_eq!(e.kind(), roce_net::ErrorKind::NotFound, "{e}");
    assert!(e.to_string().contains("missing.json"), "{e}");
    assert!(fleet.is_empty());
}

#[test]
fn fleet_evidence_counts_values_and_names_a_bounded_set_of_hosts() {
    let hosts = [healthy("gpu1", 11).0, healthy("gpu2", 21).0, odd_host().0];
    let r = roce_net::fleet_report(&hosts);
    let mtu = r
        .findings
        .iter()
        .find(|f| f.id == "fleet-mtu-differs")
        .unwrap();
    assert_eq!(mtu.evidence["counts"], json!({"4200": 1, "9000": 2}));
    // A small fleet: every host's value.
    assert_eq!(
        mtu.evidence["hosts"],
        json!({"gpu1": "9000", "gpu2": "9000", "gpu3": "4200"})
    );

    // 35 hosts at 9000, 34 at 4200: every 4200 host gets a finding, each naming
    // at most FLEET_MAX_EVIDENCE_HOSTS hosts, those that differ from the majority first.
    let mut fleet: Vec<roce_net::HostState> =
        (0..35).map(|i| healthy(&format!("ok{i}"), 11).0).collect();
    for i in 0..34 {
        let mut h = odd_host().0;
        h.hostname = format!("odd{i}");
        fleet.push(h);
    }
    let r = roce_net::fleet_report(&fleet);
    let mtu: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.id == "fleet-mtu-differs")
        .collect();
    assert_eq!(mtu.len(), 34);
    for f in mtu {
        assert_eq!(f.evidence["counts"], json!({"4200": 34, "9000": 35}));
        let hosts = f.evidence["hosts"].as_object().unwrap();
        assert_eq!(hosts.len(), roce_net::FLEET_MAX_EVIDENCE_HOSTS);
        assert!(hosts.values().all(|v| v == "4200"), "{hosts:?}");
        assert!(hosts.contains_key("odd0") && hosts.contains_key("odd1"));
    }
}
