//! NCCL's GID selection (the model of NCCL 2.30's `ncclIbGetGidIndex`, see
//! `docs/nccl.md`) and roce-net's advice, on the sysfs fixture trees: for every
//! tree, what NCCL picks with no variables set and with the advice, for NCCL
//! 2.21+ and for releases before 2.21; and `nccl-env --check` on environments
//! people really write.

use crate::doctor_support;

use doctor_support::B;
use roce_net::{
    Address, HostState, Interface, LinkStats, NcclEnv, NcclOptions, NcclVersion, OperState, Scope,
    Selection,
};
use std::net::IpAddr;
use std::path::PathBuf;

fn tree(case: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sysfs")
        .join(case)
}

/// The host a fixture tree describes: its netdevs (`netdevs.json`, what netlink
/// would show), a default route via the management NIC, and the RDMA devices
/// read from the tree by the library's sysfs reader.
fn host(case: &str) -> HostState {
    let text = std::fs::read_to_string(tree(case).join("netdevs.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut b = B::new(case);
    for n in v["interfaces"].as_array().unwrap() {
        let name = n["name"].as_str().unwrap();
        let index = n["index"].as_u64().unwrap() as u32;
        b.0.interfaces.push(Interface {
            index,
            name: name.into(),
            kind: name.contains('.').then(|| "vlan".to_string()),
            mac: None,
            mtu: n["mtu"].as_u64().unwrap() as u32,
            admin_up: true,
            oper_state: OperState::Up,
            carrier: Some(true),
            master: None,
            stats: LinkStats::default(),
            ethtool_stats: None,
            qos: None,
        });
        for a in n["addresses"].as_array().unwrap() {
            let (ip, len) = a.as_str().unwrap().split_once('/').unwrap();
            b.0.addresses.push(Address {
                ifname: name.into(),
                ifindex: index,
                address: ip.parse().unwrap(),
                prefix_len: len.parse().unwrap(),
                scope: Scope::Universe,
                label: None,
                secondary: false,
                flags: Vec::new(),
            });
        }
    }
    b.route("default via 198.19.0.1 dev eno1 proto static");
    b.good_sysctls();
    let mut w = Vec::new();
    b.0.rdma = roce_net::read_rdma_sysfs(&tree(case), &b.0.interfaces, &mut w);
    assert!(w.is_empty(), "{case}: {w:?}");
    b.0
}

fn idx(o: &roce_net::PickOutcome) -> Option<u32> {
    o.selection.index()
}

fn val<'a>(a: &'a roce_net::NcclAdvice, name: &str) -> Option<&'a str> {
    a.get(name).and_then(|v| v.value.as_deref())
}

const V230: NcclVersion = NcclVersion::MODEL;

fn env(pairs: &[(&str, &str)]) -> NcclEnv {
    NcclEnv::from_pairs(pairs.iter().copied())
}

fn pick(s: &HostState, dev: &str, e: &NcclEnv, v: &str) -> Selection {
    let d = s.rdma.iter().find(|d| d.name == dev).unwrap();
    roce_net::nccl_select_gid(&d.ports[0], e, NcclVersion::parse(v).unwrap())
}

#[test]
fn vlan_after_the_physical_nic_nccl_picks_right_and_only_old_nccl_needs_the_index() {
    let s = host("vlan-after");
    let a = roce_net::nccl_env(&s);
    assert_eq!(a.picks.len(), 4);
    for p in &a.picks {
        assert_eq!(p.target.as_ref().unwrap().index, 3, "{p:?}");
        assert_eq!(idx(&p.auto_unset), Some(3), "NCCL 2.30 picks the rail GID");
        assert_eq!(idx(&p.legacy_unset), Some(0), "before 2.21: index 0");
        assert_eq!(p.legacy_unset.right, Some(false));
        assert_eq!(idx(&p.auto_advised), Some(3));
        assert_eq!(idx(&p.legacy_advised), Some(3));
    }
    assert_eq!(val(&a, "NCCL_IB_GID_INDEX"), Some("3"));
    let r = &a.get("NCCL_IB_GID_INDEX").unwrap().reason;
    assert!(
        r.contains("before 2.21") && r.contains("changes nothing"),
        "{r}"
    );
    // No no-op variables.
    for v in [
        "NCCL_IB_ROCE_VERSION_NUM",
        "NCCL_IB_ADDR_FAMILY",
        "NCCL_IB_ADDR_RANGE",
    ] {
        assert!(a.get(v).is_none(), "{v}: {:?}", a.get(v));
    }
    // For NCCL 2.30 alone nothing is needed.
    let a = roce_net::nccl_env_with(&s, &NcclOptions::for_version(Some(V230)));
    assert_eq!(val(&a, "NCCL_IB_GID_INDEX"), None);
    assert!(a
        .get("NCCL_IB_GID_INDEX")
        .unwrap()
        .reason
        .contains("by itself"));
}

#[test]
fn vlan_before_the_physical_nic_nccl_picks_the_vlan_and_the_rail_range_fixes_it() {
    let s = host("vlan-before");
    // The model, step by step: mlx5_0's table starts with the VLAN's GIDs.
    assert_eq!(
        pick(&s, "mlx5_0", &NcclEnv::default(), "2.30"),
        Selection::Index(5)
    );
    assert_eq!(
        pick(&s, "mlx5_1", &NcclEnv::default(), "2.30"),
        Selection::Index(3)
    );
    let a = roce_net::nccl_env(&s);
    let by: Vec<(String, u32, Option<u32>, Option<u32>)> = a
        .picks
        .iter()
        .map(|p| {
            (
                p.port.to_string(),
                p.target.as_ref().unwrap().index,
                idx(&p.auto_unset),
                idx(&p.auto_advised),
            )
        })
        .collect();
    assert_eq!(
        by,
        vec![
            ("mlx5_0:1".into(), 7, Some(5), Some(7)),
            ("mlx5_1:1".into(), 3, Some(3), Some(3)),
            ("mlx5_2:1".into(), 7, Some(5), Some(7)),
            ("mlx5_3:1".into(), 3, Some(3), Some(3)),
        ]
    );
    // NCCL alone picks the VLAN's GID (198.18.100.x) on mlx5_0: the advice names it.
    let gid = a.get("NCCL_IB_GID_INDEX").unwrap();
    assert_eq!(gid.value, None);
    assert!(gid.reason.contains("mlx5_0:1=5"), "{}", gid.reason);
    assert!(gid.reason.contains("ens1f0np0.100"), "{}", gid.reason);
    assert_eq!(val(&a, "NCCL_IB_ADDR_RANGE"), Some("198.18.0.0/24"));
    assert!(a.get("NCCL_IB_ROCE_VERSION_NUM").is_none());
    assert!(a.get("NCCL_IB_ADDR_FAMILY").is_none());
    assert!(a.picks.iter().all(|p| p.auto_advised.right == Some(true)));
    // Before 2.21 nothing per device exists: still index 0, and the advice says so.
    assert!(a.picks.iter().all(|p| idx(&p.legacy_advised) == Some(0)));
    assert!(gid.reason.contains("before 2.21"), "{}", gid.reason);
    // The advice's env, checked, is clean; NCCL's defaults are not.
    let advised = NcclEnv::from_pairs(
        a.env_lines()
            .iter()
            .map(|l| l.split_once('=').unwrap())
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    let opts = NcclOptions::for_version(Some(V230));
    assert!(roce_net::nccl_check(&s, &advised, &opts).is_empty());
    let f = roce_net::nccl_check(&s, &NcclEnv::default(), &opts);
    let wrong: Vec<_> = f.iter().filter(|f| f.id == "nccl-gid-pick-wrong").collect();
    assert_eq!(wrong.len(), 2, "{f:#?}");
    assert!(
        wrong[0].message.contains("198.18.100.11"),
        "{}",
        wrong[0].message
    );
    // The old advice (ROCE_VERSION_NUM=2, ADDR_FAMILY=AF_INET) changes nothing.
    let old = env(&[
        ("NCCL_IB_ROCE_VERSION_NUM", "2"),
        ("NCCL_IB_ADDR_FAMILY", "AF_INET"),
    ]);
    assert_eq!(pick(&s, "mlx5_0", &old, "2.30"), Selection::Index(5));
}

#[test]
fn vlan_only_host_targets_the_vlan_gid_at_index_3() {
    let s = host("vlan-only");
    let a = roce_net::nccl_env(&s);
    assert_eq!(
        val(&a, "NCCL_IB_HCA"),
        Some("=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1")
    );
    assert_eq!(val(&a, "NCCL_IB_GID_INDEX"), Some("3"));
    for p in &a.picks {
        let t = p.target.as_ref().unwrap();
        assert_eq!(t.index, 3);
        assert!(t.netdev.as_deref().unwrap().ends_with(".100"));
        assert_eq!(idx(&p.auto_unset), Some(3));
    }
    let all = serde_json::to_string(&a).unwrap();
    assert!(!all.contains("no RoCE v2 GID"), "{all}");
}

#[test]
fn ipv6_only_nic_is_left_out_with_the_gid_nccl_would_use() {
    let s = host("ipv6-only");
    // NCCL's default family AF_INET finds no IPv4 GID on mlx5_3: index 0, the
    // link-local RoCE v1 GID.
    assert_eq!(
        pick(&s, "mlx5_3", &NcclEnv::default(), "2.30"),
        Selection::Index(0)
    );
    assert_eq!(
        pick(
            &s,
            "mlx5_3",
            &env(&[("NCCL_IB_ADDR_FAMILY", "AF_INET6")]),
            "2.30"
        ),
        Selection::Index(3)
    );
    let a = roce_net::nccl_env(&s);
    assert_eq!(val(&a, "NCCL_IB_HCA"), Some("=mlx5_0:1,mlx5_1:1,mlx5_2:1"));
    let r = &a.get("NCCL_IB_HCA").unwrap().reason;
    assert!(
        r.contains("mlx5_3:1: ens4f0np0 has no IPv4 address, only 2001:db8:0:3::11"),
        "{r}"
    );
    assert!(r.contains("GID 0 (fe80::"), "{r}");
    assert_eq!(val(&a, "NCCL_IB_GID_INDEX"), Some("3"));
    // A host whose RoCE NICs are all IPv6: one index fits, and it is needed even
    // for NCCL 2.30 (AF_INET by default would keep the link-local GID 0).
    let mut v6 = s.clone();
    v6.rdma.retain(|d| d.name == "mlx5_3");
    let a = roce_net::nccl_env(&v6);
    assert_eq!(val(&a, "NCCL_IB_HCA"), Some("=mlx5_3:1"));
    assert_eq!(val(&a, "NCCL_IB_GID_INDEX"), Some("3"));
    assert_eq!(idx(&a.picks[0].auto_unset), Some(0));
    assert!(a
        .get("NCCL_IB_GID_INDEX")
        .unwrap()
        .reason
        .contains("fixes every release"));
}

#[test]
fn ipv6_rails_at_different_indices_get_the_address_family() {
    // Two IPv6-only NICs whose v2 GIDs sit at 3 and 5: only the automatic
    // selection with AF_INET6 fits both.
    let mut s = host("ipv6-only");
    s.rdma.retain(|d| d.name == "mlx5_3");
    let mut d = s.rdma[0].clone();
    d.name = "mlx5_4".into();
    d.ports[0].netdev = Some("ens5f0np0".into());
    d.netdevs = vec!["ens5f0np0".into()];
    for g in &mut d.ports[0].gids {
        g.netdev = Some("ens5f0np0".into());
        if g.index >= 2 {
            g.index += 2;
            g.gid = "2001:db8:0:4::11".parse().unwrap();
        }
    }
    // Slots 2/3: an IPv4 GID of an address the NIC no longer has is gone; put a
    // link-local pair of a macvlan there instead.
    let ll = d.ports[0].gids[0].clone();
    for (i, t) in [
        (2, roce_net::GidType::RoceV1),
        (3, roce_net::GidType::RoceV2),
    ] {
        let mut g = ll.clone();
        g.index = i;
        g.gid_type = Some(t);
        g.netdev = Some("mv0".into());
        d.ports[0].gids.push(g);
    }
    d.ports[0].gids.sort_by_key(|g| g.index);
    s.rdma.push(d);
    let mut i = s
        .interfaces
        .iter()
        .find(|i| i.name == "ens4f0np0")
        .unwrap()
        .clone();
    i.name = "ens5f0np0".into();
    i.index = 40;
    s.interfaces.push(i);
    s.addresses.push(Address {
        ifname: "ens5f0np0".into(),
        ifindex: 40,
        address: "2001:db8:0:4::11".parse().unwrap(),
        prefix_len: 64,
        scope: Scope::Universe,
        label: None,
        secondary: false,
        flags: Vec::new(),
    });
    let a = roce_net::nccl_env(&s);
    assert_eq!(val(&a, "NCCL_IB_HCA"), Some("=mlx5_3:1,mlx5_4:1"));
    assert_eq!(val(&a, "NCCL_IB_GID_INDEX"), None);
    assert_eq!(val(&a, "NCCL_IB_ADDR_FAMILY"), Some("AF_INET6"));
    let targets: Vec<u32> = a
        .picks
        .iter()
        .map(|p| p.target.as_ref().unwrap().index)
        .collect();
    assert_eq!(targets, vec![3, 5]);
    assert!(
        a.picks.iter().all(|p| p.auto_advised.right == Some(true)),
        "{:#?}",
        a.picks
    );
    assert!(a.picks.iter().all(|p| idx(&p.auto_unset) == Some(0)));
}

/// An environment from advice lines (`NAME=value`).
fn env_of_lines(lines: &[String]) -> NcclEnv {
    NcclEnv::from_pairs(
        lines
            .iter()
            .map(|l| l.split_once('=').unwrap())
            .map(|(k, v)| (k.to_string(), v.to_string())),
    )
}

/// The `NAME=value` settings a note proposes after "set ".
fn note_settings(note: &str) -> Vec<String> {
    let rest = note.split_once(", set ").unwrap().1;
    let upto = rest.find(" instead").unwrap();
    rest[..upto].split(' ').map(str::to_string).collect()
}

/// Dual-stack rails, IPv4 added first everywhere (IPv4 v2 GIDs at 3, IPv6 at
/// 5): NCCL's default family AF_INET picks the IPv4 GID by itself from 2.21;
/// the advice is the IPv4 one (`NCCL_IB_GID_INDEX=3`, for releases before
/// 2.21), and a note gives the explicit IPv6 index for a job over IPv6, which
/// the model proves picks the IPv6 GIDs on every release.
#[test]
fn dual_stack_rails_get_the_ipv4_gid_and_the_ipv6_index_in_a_note() {
    let s = host("dual-stack");
    let a = roce_net::nccl_env(&s);
    assert_eq!(
        val(&a, "NCCL_IB_HCA"),
        Some("=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1")
    );
    for p in &a.picks {
        assert_eq!(p.target.as_ref().unwrap().index, 3, "{p:?}");
        assert_eq!(idx(&p.auto_unset), Some(3), "AF_INET picks the IPv4 GID");
    }
    assert_eq!(val(&a, "NCCL_IB_GID_INDEX"), Some("3"));
    assert!(a.get("NCCL_IB_ADDR_FAMILY").is_none());
    let note = a
        .notes
        .iter()
        .find(|n| n.contains("dual-stack"))
        .unwrap_or_else(|| panic!("no dual-stack note: {:?}", a.notes));
    assert!(note.contains("mlx5_0:1=5 (fd00:198:18::11)"), "{note}");
    let v6 = note_settings(note);
    assert_eq!(v6, ["NCCL_IB_GID_INDEX=5"], "{note}");
    let e = env_of_lines(&v6);
    for d in ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"] {
        assert_eq!(pick(&s, d, &e, "2.30"), Selection::Index(5));
        assert_eq!(pick(&s, d, &e, "2.20"), Selection::Index(5));
    }
    // --check: the advice is clean; the IPv6 choice of the note is too (the
    // job runs over IPv6 on every port), and so is AF_INET6 alone on 2.30.
    let opts = NcclOptions::for_version(Some(V230));
    assert!(roce_net::nccl_check(&s, &env_of_lines(&a.env_lines()), &opts).is_empty());
    let f = roce_net::nccl_check(&s, &e, &opts);
    assert!(f.is_empty(), "{f:#?}");
    let f = roce_net::nccl_check(&s, &env(&[("NCCL_IB_ADDR_FAMILY", "AF_INET6")]), &opts);
    assert!(f.is_empty(), "{f:#?}");
    // An index that is the IPv6 GID on most ports but not all: the job is an
    // IPv6 one, wrong where the index is the IPv4 GID.
    let mut mixed = s.clone();
    let d = mixed.rdma.iter_mut().find(|d| d.name == "mlx5_3").unwrap();
    for g in &mut d.ports[0].gids {
        g.index = match g.index {
            2 => 4,
            3 => 5,
            4 => 2,
            5 => 3,
            i => i,
        };
    }
    d.ports[0].gids.sort_by_key(|g| g.index);
    let f = roce_net::nccl_check(&mixed, &e, &opts);
    let bad: Vec<_> = f.iter().filter(|f| f.id == "nccl-gid-index-bad").collect();
    assert_eq!(bad.len(), 1, "{f:#?}");
    assert_eq!(bad[0].subject.device.as_deref(), Some("mlx5_3"));
    assert!(
        bad[0]
            .message
            .contains("the NIC's address fd00:198:18::14 is GID 3"),
        "{}",
        bad[0].message
    );
}

/// Dual-stack rails whose addresses came in different orders (IPv4 v2 GIDs at
/// 3, 3, 5, 5; IPv6 at 5, 5, 3, 3): no index fits; NCCL 2.21+ picks each
/// IPv4 GID by itself (its first IPv4 GID, then the v2 one after it), and for
/// IPv6 the note proposes NCCL_IB_ADDR_FAMILY=AF_INET6, proven on every port.
#[test]
fn dual_stack_rails_in_mixed_order_need_nothing_for_ipv4_and_the_family_for_ipv6() {
    let s = host("dual-stack-mixed");
    let a = roce_net::nccl_env(&s);
    let targets: Vec<u32> = a
        .picks
        .iter()
        .map(|p| p.target.as_ref().unwrap().index)
        .collect();
    assert_eq!(targets, [3, 3, 5, 5]);
    assert!(a.picks.iter().all(|p| p.auto_unset.right == Some(true)));
    assert_eq!(val(&a, "NCCL_IB_GID_INDEX"), None);
    let r = &a.get("NCCL_IB_GID_INDEX").unwrap().reason;
    assert!(
        r.contains("different indices") && r.contains("before 2.21"),
        "{r}"
    );
    let note = a.notes.iter().find(|n| n.contains("dual-stack")).unwrap();
    assert!(
        note.contains("mlx5_0:1=5 (fd00:198:18::11)")
            && note.contains("mlx5_3:1=3 (fd00:198:18::14)"),
        "{note}"
    );
    let v6 = note_settings(note);
    assert_eq!(v6, ["NCCL_IB_ADDR_FAMILY=AF_INET6"], "{note}");
    assert!(note.contains("before 2.21 no setting fits"), "{note}");
    let e = env_of_lines(&v6);
    for (d, i) in [("mlx5_0", 5), ("mlx5_1", 5), ("mlx5_2", 3), ("mlx5_3", 3)] {
        assert_eq!(pick(&s, d, &e, "2.30"), Selection::Index(i), "{d}");
    }
    let opts = NcclOptions::for_version(Some(V230));
    assert!(roce_net::nccl_check(&s, &e, &opts).is_empty());
    assert!(roce_net::nccl_check(&s, &NcclEnv::default(), &opts).is_empty());
}

#[test]
fn rocev1_only_devices_have_no_v2_target_and_nccl_takes_the_v1_ipv4_gid() {
    let s = host("rocev1-only");
    // NCCL switches family at the first IPv4 GID even when it is v1, then finds
    // no v2 to prefer: index 1, RoCE v1.
    assert_eq!(
        pick(&s, "mlx4_0", &NcclEnv::default(), "2.30"),
        Selection::Index(1)
    );
    let a = roce_net::nccl_env(&s);
    assert_eq!(val(&a, "NCCL_IB_HCA"), None);
    let r = &a.get("NCCL_IB_HCA").unwrap().reason;
    assert!(r.contains("holds no RoCE v2 GID"), "{r}");
    assert!(
        r.contains("NCCL would use GID 1 (::ffff:198.18.3.1 v1)"),
        "{r}"
    );
    assert!(a.picks.is_empty());
    // The doctor says the same thing in its own terms.
    let ids: Vec<String> = roce_net::doctor(&s).into_iter().map(|f| f.id).collect();
    assert!(ids.contains(&"gid-rocev2-missing".to_string()), "{ids:?}");
}

#[test]
fn sixteen_nics_with_255_slots_and_the_prefix_trap() {
    let s = host("connectx16");
    let a = roce_net::nccl_env(&s);
    let hca = val(&a, "NCCL_IB_HCA").unwrap();
    let want: Vec<String> = (0..16).map(|i| format!("mlx5_{i}:1")).collect();
    assert_eq!(hca, format!("={}", want.join(",")));
    assert_eq!(val(&a, "NCCL_IB_GID_INDEX"), Some("3"));
    assert_eq!(a.picks.len(), 16);
    assert!(a.picks.iter().all(|p| idx(&p.auto_unset) == Some(3)));
    // NCCL walks all 255 slots; the model does too (empty ones are zero GIDs).
    assert!(s.rdma.iter().all(|d| d.ports[0].gid_tbl_len == Some(255)));
    // `NCCL_IB_HCA=mlx5_1` also selects mlx5_10..mlx5_15.
    let opts = NcclOptions::default();
    let f = roce_net::nccl_check(&s, &env(&[("NCCL_IB_HCA", "mlx5_1")]), &opts);
    let over: Vec<_> = f.iter().filter(|f| f.id == "nccl-hca-overmatch").collect();
    assert_eq!(over.len(), 1, "{f:#?}");
    assert_eq!(
        over[0].evidence["also_matches"],
        serde_json::json!(["mlx5_10", "mlx5_11", "mlx5_12", "mlx5_13", "mlx5_14", "mlx5_15"])
    );
    assert_eq!(over[0].remediation.commands, ["NCCL_IB_HCA==mlx5_1"]);
    let f = roce_net::nccl_check(&s, &env(&[("NCCL_IB_HCA", "=mlx5_1")]), &opts);
    assert!(f.is_empty(), "{f:#?}");
    // The link-health checks see the degraded rail and the odd firmware.
    let ids: Vec<String> = roce_net::doctor(&s).into_iter().map(|f| f.id).collect();
    assert!(ids.contains(&"link-degraded".to_string()), "{ids:?}");
    assert!(ids.contains(&"firmware-differs".to_string()), "{ids:?}");
}

#[test]
fn netdevs_in_another_namespace_are_named_not_called_down() {
    let s = host("netns-other");
    let a = roce_net::nccl_env(&s);
    let hca = a.get("NCCL_IB_HCA").unwrap();
    assert_eq!(hca.value, None);
    assert!(
        hca.reason.contains("not in this network namespace"),
        "{}",
        hca.reason
    );
    assert!(
        hca.reason.contains("mlx5_0:1 -> ens1f0np0"),
        "{}",
        hca.reason
    );
    assert!(!hca.reason.contains("bring the ports up"), "{}", hca.reason);
    // NCCL itself (which never looks at the netdev) would still take index 3.
    assert_eq!(
        pick(&s, "mlx5_0", &NcclEnv::default(), "2.30"),
        Selection::Index(3)
    );
}

#[test]
fn infiniband_port_uses_gid_0_and_mixing_link_layers_is_refused() {
    let s = host("ib-port");
    // IB: the routable-FLID index (1) holds fe80:: with a zero FLID, so 0.
    assert_eq!(
        pick(&s, "mlx5_0", &NcclEnv::default(), "2.30"),
        Selection::Index(0)
    );
    assert_eq!(
        pick(&s, "mlx5_0", &NcclEnv::default(), "2.20"),
        Selection::Index(0)
    );
    let a = roce_net::nccl_env(&s);
    assert_eq!(val(&a, "NCCL_IB_HCA"), Some("=mlx5_1:1"));
    assert!(a
        .notes
        .iter()
        .any(|n| n.contains("mlx5_0:1") && n.contains("LID")));
    assert_eq!(val(&a, "NCCL_IB_GID_INDEX"), Some("3"));
    let opts = NcclOptions::default();
    let f = roce_net::nccl_check(&s, &NcclEnv::default(), &opts);
    assert!(
        f.iter().any(|f| f.id == "nccl-hca-mixed-link-layers"),
        "{f:#?}"
    );
    let f = roce_net::nccl_check(&s, &env(&[("NCCL_IB_HCA", "=mlx5_1")]), &opts);
    assert!(f.is_empty(), "{f:#?}");
}

#[test]
fn check_flags_gid_index_link_local_v1_family_and_empty() {
    let s = host("vlan-before");
    let opts = NcclOptions::default();
    let hca = ("NCCL_IB_HCA", "=mlx5_0,mlx5_1,mlx5_2,mlx5_3");
    for (i, what) in [
        ("0", "link-local"),
        ("2", "link-local"),
        ("6", "RoCE v1"),
        ("5", "ens1f0np0.100"),
        ("12", "empty slot"),
    ] {
        let f = roce_net::nccl_check(&s, &env(&[hca, ("NCCL_IB_GID_INDEX", i)]), &opts);
        assert!(
            f.iter()
                .any(|f| f.id == "nccl-gid-index-bad" && f.message.contains(what)),
            "index {i}: {f:#?}"
        );
    }
    // Out of the table (16 slots here): NCCL fails to query it.
    let f = roce_net::nccl_check(&s, &env(&[hca, ("NCCL_IB_GID_INDEX", "99")]), &opts);
    assert!(f
        .iter()
        .any(|f| f.id == "nccl-gid-index-bad" && f.message.contains("outside")));
    // "3abc" is read as 3 by strtoll; "010" as 8.
    let f = roce_net::nccl_check(&s, &env(&[hca, ("NCCL_IB_GID_INDEX", "010")]), &opts);
    assert!(f.iter().any(
        |f| f.id == "nccl-value-misparsed" && f.evidence["nccl_reads"] == serde_json::json!(8)
    ));
}

#[test]
fn check_flags_socket_ifname_ranges_quotes_and_traffic_class() {
    let mut s = host("vlan-after");
    let opts = NcclOptions::default();
    let hca = ("NCCL_IB_HCA", "=mlx5_0,mlx5_1,mlx5_2,mlx5_3");
    let f = roce_net::nccl_check(&s, &env(&[hca, ("NCCL_SOCKET_IFNAME", "=eth0")]), &opts);
    assert!(f
        .iter()
        .any(|f| f.id == "nccl-socket-ifname-matches-nothing"
            && f.severity == roce_net::Severity::Error));
    let f = roce_net::nccl_check(&s, &env(&[hca, ("NCCL_SOCKET_IFNAME", "ens")]), &opts);
    assert!(
        f.iter().any(|f| f.id == "nccl-socket-ifname-overmatch"),
        "{f:#?}"
    );
    let f = roce_net::nccl_check(&s, &env(&[hca, ("NCCL_SOCKET_IFNAME", "=eno1")]), &opts);
    assert!(f.is_empty(), "{f:#?}");
    // A range without '/': ignored by 2.23+, a crash in 2.21/2.22.
    let f = roce_net::nccl_check(
        &s,
        &env(&[hca, ("NCCL_IB_ADDR_RANGE", "198.18.0.0")]),
        &opts,
    );
    assert!(f.iter().any(|f| f.id == "nccl-addr-range-invalid"));
    let old = NcclOptions::for_version(NcclVersion::parse("2.22"));
    let f = roce_net::nccl_check(&s, &env(&[hca, ("NCCL_IB_ADDR_RANGE", "198.18.0.0")]), &old);
    assert!(f
        .iter()
        .any(|f| f.id == "nccl-gid-pick-wrong" && f.message.contains("crashes")));
    // nccl.conf keeps quotes literally: the HCA list then matches nothing.
    let conf = NcclEnv::parse_conf("NCCL_IB_HCA=\"=mlx5_0\"\n");
    let f = roce_net::nccl_check(&s, &conf, &opts);
    assert!(f.iter().any(|f| f.id == "nccl-value-misparsed"));
    assert!(f
        .iter()
        .any(|f| f.id == "nccl-hca-matches-nothing" && f.severity == roce_net::Severity::Error));
    // NCCL_IB_TC on NICs with PFC on priority 3 and DSCP trust.
    for n in 1..=4 {
        let i = s
            .interfaces
            .iter_mut()
            .find(|i| i.name == format!("ens{n}f0np0"))
            .unwrap();
        i.qos = Some(doctor_support::roce_qos());
    }
    let f = roce_net::nccl_check(&s, &env(&[hca, ("NCCL_IB_TC", "106")]), &opts);
    assert!(f.is_empty(), "{f:#?}");
    let f = roce_net::nccl_check(&s, &env(&[hca, ("NCCL_IB_TC", "32")]), &opts);
    let tc: Vec<_> = f.iter().filter(|f| f.id == "nccl-tc-no-pfc").collect();
    assert_eq!(tc.len(), 4, "{f:#?}");
    assert_eq!(tc[0].evidence["priority"], serde_json::json!(1));
    assert_eq!(tc[0].remediation.commands, ["NCCL_IB_TC=104"]);
    // NCCL_IB_TC unset means traffic class 0: priority 0, no PFC there.
    let f = roce_net::nccl_check(&s, &env(&[hca]), &opts);
    assert_eq!(f.iter().filter(|f| f.id == "nccl-tc-no-pfc").count(), 4);
    for n in 1..=4 {
        let i = s
            .interfaces
            .iter_mut()
            .find(|i| i.name == format!("ens{n}f0np0"))
            .unwrap();
        let q = i.qos.as_mut().unwrap();
        q.trust = Some(roce_net::Trust::Pcp);
        q.dscp_prio.clear();
        q.pfc_enabled = Some(vec![0]);
    }
    let f = roce_net::nccl_check(&s, &env(&[hca, ("NCCL_IB_TC", "106")]), &opts);
    assert_eq!(
        f.iter().filter(|f| f.id == "nccl-tc-trust-pcp").count(),
        4,
        "{f:#?}"
    );
}

#[test]
fn model_details_from_the_source() {
    let s = host("vlan-after");
    let d = &s.rdma[0];
    let mut p = d.ports[0].clone();
    // NCCL_IB_ROCE_VERSION_NUM=1 keeps the v1 GID of the first IPv4 address.
    let e1 = env(&[("NCCL_IB_ROCE_VERSION_NUM", "1")]);
    assert_eq!(
        roce_net::nccl_select_gid(&p, &e1, V230),
        Selection::Index(2)
    );
    // A negative mask matches nothing: index 0.
    let neg = env(&[("NCCL_IB_ADDR_RANGE", "198.18.0.0/-8")]);
    assert_eq!(
        roce_net::nccl_select_gid(&p, &neg, V230),
        Selection::Index(0)
    );
    // A valid GID whose type cannot be read: 2.21-2.25 fail the device, 2.26+ skip.
    p.gids.iter_mut().find(|g| g.index == 3).unwrap().gid_type = None;
    let none = NcclEnv::default();
    assert!(matches!(
        roce_net::nccl_select_gid(&p, &none, NcclVersion::parse("2.25").unwrap()),
        Selection::Fails(_)
    ));
    // ... and 2.26 then moves on to the next v2 GID of the family: the VLAN's at 7.
    assert_eq!(
        roce_net::nccl_select_gid(&p, &none, NcclVersion::parse("2.26").unwrap()),
        Selection::Index(7)
    );
    // GID 0 before 2.21, whatever the table.
    assert_eq!(
        roce_net::nccl_select_gid(&d.ports[0], &none, NcclVersion::parse("2.20").unwrap()),
        Selection::Index(0)
    );
    let ip: IpAddr = "198.18.0.11".parse().unwrap();
    assert_eq!(roce_net::target_gid(&s, d, &d.ports[0]), Some((3, ip)));
}

#[test]
fn traffic_class_is_recommended_only_when_the_default_is_lossy() {
    // PFC on priority 3 with DSCP trust: NCCL's TC 0 lands on priority 0 -> 104
    // (DSCP 26 << 2), and with it --check is clean.
    let s = doctor_support::healthy_hw("gpu1", 11).build();
    let a = roce_net::nccl_env(&s);
    assert_eq!(val(&a, "NCCL_IB_TC"), Some("104"));
    let r = &a.get("NCCL_IB_TC").unwrap().reason;
    assert!(r.contains("priority 0") && r.contains("DSCP 26"), "{r}");
    let e = NcclEnv::from_pairs(
        a.env_lines()
            .iter()
            .map(|l| l.split_once('=').unwrap())
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    assert!(roce_net::nccl_check(&s, &e, &NcclOptions::default()).is_empty());
    // PFC on priority 0: the default is already lossless, nothing to set.
    let mut b = doctor_support::healthy_hw("gpu1", 11);
    for n in 1..=4 {
        b.iface_mut(&format!("ens{n}"))
            .qos
            .as_mut()
            .unwrap()
            .pfc_enabled = Some(vec![0, 3]);
    }
    let a = roce_net::nccl_env(&b.build());
    assert!(a.get("NCCL_IB_TC").is_none());
    assert!(
        a.notes.iter().any(|n| n.contains("which has PFC")),
        "{:?}",
        a.notes
    );
    // PCP trust: a traffic class cannot help; say what can.
    let mut b = doctor_support::healthy_hw("gpu1", 11);
    for n in 1..=4 {
        let q = b.iface_mut(&format!("ens{n}")).qos.as_mut().unwrap();
        q.trust = Some(roce_net::Trust::Pcp);
        q.dscp_prio.clear();
    }
    let a = roce_net::nccl_env(&b.build());
    assert!(a.get("NCCL_IB_TC").is_none());
    assert!(
        a.notes.iter().any(|n| n.contains("--trust dscp")),
        "{:?}",
        a.notes
    );
    // No DCB data: the variable is left alone, as before.
    let a = roce_net::nccl_env(&doctor_support::healthy("gpu1", 11).build());
    assert!(a.get("NCCL_IB_TC").is_none());
}

/// Every check id is unique across the doctor, the fleet and `nccl-env
/// --check`, and documented where people look it up: the doctor's as a section
/// of docs/checks.md, the fleet's as a row of its tables, the NCCL checks' as a
/// row of docs/nccl.md's table (and named in docs/checks.md's pointer to it).
#[test]
fn check_ids_are_unique_and_documented() {
    let doc = |name: &str| {
        let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../docs")
            .join(name);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    };
    let (checks_md, nccl_md) = (doc("checks.md"), doc("nccl.md"));
    let mut seen = std::collections::BTreeSet::new();
    let mut missing = Vec::new();
    for id in roce_net::CHECK_IDS {
        assert!(seen.insert(*id), "{id} twice");
        if !checks_md.contains(&format!("\n## {id}\n")) {
            missing.push(format!("docs/checks.md: ## {id}"));
        }
    }
    for id in roce_net::FLEET_CHECK_IDS {
        assert!(id.starts_with("fleet-") && seen.insert(*id), "{id} twice");
        if !checks_md.contains(&format!("| `{id}` |")) {
            missing.push(format!("docs/checks.md: | `{id}` |"));
        }
    }
    assert_eq!(roce_net::NCCL_CHECK_IDS.len(), 12);
    for id in roce_net::NCCL_CHECK_IDS {
        assert!(id.starts_with("nccl-") && seen.insert(*id), "{id} twice");
        if !nccl_md.contains(&format!("| `{id}` |")) {
            missing.push(format!("docs/nccl.md: | `{id}` |"));
        }
        if !checks_md.contains(&format!("`{id}`")) {
            missing.push(format!("docs/checks.md: `{id}`"));
        }
    }
    assert!(missing.is_empty(), "undocumented check ids: {missing:#?}");
}
