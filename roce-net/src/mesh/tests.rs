//! The merge's elimination on generated results: each scenario breaks known
//! elements and the report must name exactly those.

use super::result::causes;
use super::*;
use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr};

/// `hosts` nodes `h1..` of `nics` RDMA NICs `r0..` in one /16 (rails by
/// position, as a GPU node with every NIC in one subnet).
pub(crate) fn inventory(hosts: usize, nics: usize) -> MeshInventory {
    let nodes = (1..=hosts)
        .map(|h| {
            let list: Vec<MeshNic> = (0..nics)
                .map(|k| {
                    let ip = IpAddr::V4(Ipv4Addr::new(198, 18, h as u8, 11 + k as u8));
                    let mut n =
                        MeshNic::new(&format!("r{k}"), ip, 16, &format!("198.18.0.0/16#{k}"));
                    n.rdma = true;
                    n.mac = Some(format!("02:00:00:00:{h:02x}:{k:02x}"));
                    n
                })
                .collect();
            MeshNode::new(&format!("h{h}"), list)
        })
        .collect();
    MeshInventory::new(nodes)
}

pub(crate) fn plan(hosts: usize, nics: usize) -> MeshPlan {
    mesh_plan(&inventory(hosts, nics), &MeshOptions::default()).unwrap()
}

/// What breaks a probe: the level and cause it fails with, and whether the
/// target's responder saw the IP request.
type Truth<'a> = &'a dyn Fn(&ScheduledProbe) -> Option<(MeshLevel, &'static str)>;

/// Every node's result, as the run would write it when `truth` says which
/// probes fail; `missing` nodes send none.
pub(crate) fn results(plan: &MeshPlan, truth: Truth<'_>, missing: &[&str]) -> Vec<MeshNodeResult> {
    plan.inventory
        .nodes
        .iter()
        .filter(|n| !missing.contains(&n.host.as_str()))
        .map(|n| node_result(plan, &n.host, truth))
        .collect()
}

pub(crate) fn node_result(plan: &MeshPlan, host: &str, truth: Truth<'_>) -> MeshNodeResult {
    let s = plan.node_schedule(host).unwrap();
    let probes = s
        .outgoing
        .iter()
        .map(|p| {
            let bad = truth(p);
            let mut levels = Vec::new();
            let mut failed = false;
            for (on, level) in [
                (p.levels.neighbor, MeshLevel::Neighbor),
                (p.levels.ip, MeshLevel::Ip),
                (p.levels.rdma, MeshLevel::Rdma),
            ] {
                if !on {
                    continue;
                }
                let l = match bad {
                    _ if failed => LevelResult::not_passed(
                        level,
                        MeshStatus::Skipped,
                        "after-failure",
                        "not run after a failure".into(),
                        0,
                    ),
                    Some((bl, cause)) if bl == level => {
                        failed = true;
                        LevelResult::not_passed(
                            level,
                            MeshStatus::Fail,
                            cause,
                            format!(
                                "{} {} -> {} {}: {cause}",
                                p.from_host, p.from.name, p.to_host, p.to.name
                            ),
                            5,
                        )
                        .evidence("where", level.name())
                        .fix([format!("fix {} {}", p.from_host, p.from.name)])
                    }
                    _ => LevelResult::pass(level, "ok".into(), 1),
                };
                levels.push(l);
            }
            ProbeRecord {
                round: p.round,
                intra: p.intra,
                from: p.from.name.clone(),
                to_host: p.to_host.clone(),
                to: p.to.name.clone(),
                to_address: p.to.address,
                levels,
            }
        })
        .collect();
    MeshNodeResult {
        version: MESH_RESULT_VERSION,
        plan: plan.id.clone(),
        host: host.to_string(),
        hostname: host.to_string(),
        netns: None,
        started_at_ms: 0,
        elapsed_ms: 0,
        nics: Vec::new(),
        findings: Vec::new(),
        probes,
        responder: ResponderReport {
            levels: vec![MeshLevel::Ip, MeshLevel::Rdma],
            stopped: "done".into(),
            ..ResponderReport::default()
        },
        notes: Vec::new(),
    }
}

fn named(r: &MeshReport) -> BTreeSet<String> {
    r.faults
        .iter()
        .map(|f| {
            format!(
                "{} {} {} {} {}",
                f.element.name(),
                f.host.as_deref().unwrap_or("-"),
                f.nic.as_deref().unwrap_or("-"),
                f.rail.as_deref().unwrap_or("-"),
                f.cause
            )
        })
        .collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// h5 r1's link is down: its own probes say so, its peers get no answer, its
/// RDMA pairs on the host fail too.
pub(crate) fn link_down(p: &ScheduledProbe) -> Option<(MeshLevel, &'static str)> {
    let at = |h: &str, n: &str| h == "h5" && n == "r1";
    if at(&p.from_host, &p.from.name) {
        return Some(if p.intra {
            (MeshLevel::Rdma, "port-not-active")
        } else {
            (MeshLevel::Neighbor, causes::LINK_DOWN)
        });
    }
    if at(&p.to_host, &p.to.name) {
        return Some(if p.intra {
            (MeshLevel::Rdma, "peer-failed")
        } else {
            (MeshLevel::Neighbor, causes::NO_ANSWER)
        });
    }
    None
}

/// h3 left unfixed: every address of it answered by several MACs, and its
/// probes from any NIC but r0 leave by r0.
pub(crate) fn unfixed(p: &ScheduledProbe) -> Option<(MeshLevel, &'static str)> {
    if p.intra {
        return None;
    }
    if p.to_host == "h3" {
        return Some((MeshLevel::Neighbor, causes::ARP_FLUX));
    }
    if p.from_host == "h3" && p.from.name != "r0" {
        return Some((MeshLevel::Ip, causes::ASYMMETRIC_EGRESS));
    }
    None
}

/// Rail #2's switch carries only small frames.
pub(crate) fn rail_mtu(p: &ScheduledProbe) -> Option<(MeshLevel, &'static str)> {
    (!p.intra && p.from.rail.ends_with("#2")).then_some((MeshLevel::Ip, causes::MTU))
}

/// h4's first probe to another host, and a truth in which that probe alone
/// fails (no reply to its IP echo): one pair broken one way.
pub(crate) fn one_pair_fails(
    plan: &MeshPlan,
) -> (
    ScheduledProbe,
    impl Fn(&ScheduledProbe) -> Option<(MeshLevel, &'static str)>,
) {
    let one = plan
        .node_schedule("h4")
        .unwrap()
        .outgoing
        .into_iter()
        .find(|x| !x.intra)
        .unwrap();
    let broken = one.clone();
    let truth = move |x: &ScheduledProbe| {
        (x.from_host == broken.from_host
            && x.from.name == broken.from.name
            && x.to_host == broken.to_host
            && x.to.name == broken.to.name)
            .then_some((MeshLevel::Ip, causes::NO_REPLY))
    };
    (one, truth)
}

#[test]
fn a_healthy_fleet_passes_with_every_probe_judged() {
    let p = plan(12, 4);
    let r = mesh_report(&p, results(&p, &|_| None, &[])).unwrap();
    assert!(r.passed, "{:#?}", r.faults);
    assert_eq!(r.verdict, "pass");
    assert_eq!(r.summary.passed, r.summary.probes);
    assert_eq!(r.summary.failed, 0);
    assert_eq!(r.table().len(), 1, "{:?}", r.table());
}

#[test]
fn a_mesh_whose_probes_were_all_not_made_is_not_a_pass() {
    // Every node sent a result, but none made its probes (each started after
    // its slots): no element is to blame, and nothing is proven either.
    let p = plan(3, 2);
    let mut rs = results(&p, &|_| None, &[]);
    for r in &mut rs {
        r.probes.clear();
    }
    let r = mesh_report(&p, rs).unwrap();
    assert_eq!(r.summary.passed + r.summary.failed, 0, "{:?}", r.summary);
    assert!(r.summary.probes > 0);
    assert!(!r.passed, "{r:#?}");
    assert_eq!(r.verdict, "fail");
    assert!(r.message.contains("no probe was judged"), "{}", r.message);
}

#[test]
fn a_pair_failing_both_ways_keeps_the_down_nics_own_cause() {
    // Three nodes: each peer of h3 r1 probes it before h3 r1 probes that
    // peer, so the pair's first failure is the peer's `no-answer`; h3's own
    // run saw r1 down, so the NIC is named with its own `link-down`.
    let down = |p: &ScheduledProbe| {
        let at = |h: &str, n: &str| h == "h3" && n == "r1";
        if p.intra {
            return None;
        }
        if at(&p.from_host, &p.from.name) {
            return Some((MeshLevel::Neighbor, causes::LINK_DOWN));
        }
        at(&p.to_host, &p.to.name).then_some((MeshLevel::Neighbor, causes::NO_ANSWER))
    };
    let p = plan(3, 2);
    let mut res = results(&p, &down, &[]);
    for r in res.iter_mut().filter(|r| r.host == "h3") {
        r.nics.push(NicSeen {
            name: "r1".into(),
            oper_state: Some("LOWERLAYERDOWN".into()),
            carrier: Some(false),
            admin_up: Some(true),
            mtu: Some(1500),
            mac: None,
        });
    }
    let r = mesh_report(&p, res).unwrap();
    assert_eq!(
        named(&r),
        set(&["nic h3 r1 198.18.0.0/16#1 link-down"]),
        "{:#?}",
        r.faults
    );
}

#[test]
fn a_nic_whose_link_is_down_is_named_once_with_its_own_cause() {
    let p = plan(12, 4);
    let r = mesh_report(&p, results(&p, &link_down, &[])).unwrap();
    assert_eq!(
        named(&r),
        set(&["nic h5 r1 198.18.0.0/16#1 link-down"]),
        "{:#?}",
        r.faults
    );
    let f = &r.faults[0];
    assert!(f.message.contains("link is down"), "{}", f.message);
    assert!(
        f.fix.iter().any(|x| x.contains("ip link show dev r1")),
        "{:?}",
        f.fix
    );
}

#[test]
fn an_unfixed_host_is_one_host_fault_not_one_per_nic() {
    let p = plan(12, 4);
    let r = mesh_report(&p, results(&p, &unfixed, &[])).unwrap();
    assert_eq!(named(&r), set(&["host h3 - - arp-flux"]), "{:#?}", r.faults);
    assert!(
        r.faults[0].fix[0].contains("roce-net apply"),
        "{:?}",
        r.faults[0].fix
    );
}

#[test]
fn a_host_whose_addresses_other_nics_answer_fails_as_a_target_only_and_is_named() {
    // Its own probes pass (its source routing is in place), every probe to it
    // sees several MACs for its addresses (arp_ignore left at 0).
    let p = plan(12, 4);
    let to_h6 = |x: &ScheduledProbe| {
        (!x.intra && x.to_host == "h6").then_some((MeshLevel::Neighbor, causes::ARP_FLUX))
    };
    let r = mesh_report(&p, results(&p, &to_h6, &[])).unwrap();
    assert_eq!(named(&r), set(&["host h6 - - arp-flux"]), "{:#?}", r.faults);
}

#[test]
fn a_rail_whose_pairs_all_fail_is_the_rail() {
    let p = plan(12, 4);
    let r = mesh_report(&p, results(&p, &rail_mtu, &[])).unwrap();
    assert_eq!(
        named(&r),
        set(&["rail - - 198.18.0.0/16#2 mtu"]),
        "{:#?}",
        r.faults
    );
    assert!(
        r.faults[0].message.contains("MTU"),
        "{}",
        r.faults[0].message
    );
}

#[test]
fn three_broken_elements_at_once_are_exactly_those_three() {
    let p = plan(12, 4);
    let all = |x: &ScheduledProbe| rail_mtu(x).or_else(|| unfixed(x)).or_else(|| link_down(x));
    let r = mesh_report(&p, results(&p, &all, &[])).unwrap();
    assert_eq!(
        named(&r),
        set(&[
            "host h3 - - arp-flux",
            "nic h5 r1 198.18.0.0/16#1 link-down",
            "rail - - 198.18.0.0/16#2 mtu",
        ]),
        "{:#?}",
        r.faults
    );
    assert!(!r.passed);
    let t = r.table();
    assert!(
        t[0].contains("FAIL") && t[0].contains("3 fault(s)"),
        "{t:?}"
    );
    assert!(
        t.iter()
            .any(|l| l.starts_with("nic ") && l.contains("link-down")),
        "{t:?}"
    );
}

#[test]
fn a_node_without_a_result_is_named_and_its_peers_are_not_blamed() {
    let p = plan(12, 4);
    let to_h7 = |x: &ScheduledProbe| {
        (x.to_host == "h7").then_some((MeshLevel::Neighbor, causes::NO_ANSWER))
    };
    let r = mesh_report(&p, results(&p, &to_h7, &["h7"])).unwrap();
    assert_eq!(
        named(&r),
        set(&["host h7 - - no-result"]),
        "{:#?}",
        r.faults
    );
}

#[test]
fn a_pair_that_fails_alone_is_a_pair_fault_on_the_side_the_cause_points_to() {
    let p = plan(12, 4);
    let (t, truth) = one_pair_fails(&p);
    let mut res = results(&p, &truth, &[]);
    let r = mesh_report(&p, res.clone()).unwrap();
    assert_eq!(r.faults.len(), 1, "{:#?}", r.faults);
    let f = &r.faults[0];
    assert_eq!(f.element, FaultElement::Pair);
    assert_eq!(
        f.host.as_deref(),
        Some("h4"),
        "no sign the request arrived: the prober's side"
    );
    // The target's responder saw the request and replied: the way back.
    let tr = res.iter_mut().find(|n| n.host == t.to_host).unwrap();
    tr.responder.answered.push(AnsweredProbe {
        level: MeshLevel::Ip,
        from_address: t.from.address,
        to: t.to.name.clone(),
        arrived_on: Some(t.to.name.clone()),
        reply_dev: Some("r0".into()),
        ok: true,
        cause: None,
    });
    let r = mesh_report(&p, res).unwrap();
    let f = &r.faults[0];
    assert_eq!(f.host.as_deref(), Some(t.to_host.as_str()), "{f:#?}");
    assert_eq!(f.evidence["one_way"], serde_json::json!(true));
}

#[test]
fn nics_that_reach_other_hosts_but_not_each_other_are_their_host() {
    let p = plan(12, 4);
    let intra = |x: &ScheduledProbe| {
        (x.intra && x.from_host == "h9").then_some((MeshLevel::Rdma, "retry-exceeded"))
    };
    let r = mesh_report(&p, results(&p, &intra, &[])).unwrap();
    assert_eq!(
        named(&r),
        set(&["host h9 - - retry-exceeded"]),
        "{:#?}",
        r.faults
    );
    assert!(
        r.faults[0].message.contains("not each other"),
        "{}",
        r.faults[0].message
    );
}

#[test]
fn three_nodes_of_two_nics_name_one_broken_nic_not_its_rail() {
    // The VM tier's fleet: three guests, two RDMA NICs each.
    let p = plan(3, 2);
    let broken = |x: &ScheduledProbe| {
        let at = |h: &str, n: &str| h == "h2" && n == "r1";
        (at(&x.from_host, &x.from.name) || at(&x.to_host, &x.to.name))
            .then_some((MeshLevel::Rdma, "retry-exceeded"))
    };
    let r = mesh_report(&p, results(&p, &broken, &[])).unwrap();
    assert_eq!(
        named(&r),
        set(&["nic h2 r1 198.18.0.0/16#1 retry-exceeded"]),
        "{:#?}",
        r.faults
    );
}

#[test]
fn results_of_another_plan_or_node_are_refused() {
    let p = plan(4, 2);
    let mut r = node_result(&p, "h1", &|_| None);
    r.plan = "0000".into();
    let e = mesh_report(&p, vec![r]).unwrap_err();
    assert!(e.message().contains("not"), "{e}");
    let mut r = node_result(&p, "h1", &|_| None);
    r.host = "stranger".into();
    assert!(mesh_report(&p, vec![r]).is_err());
}

#[test]
fn a_node_plan_holds_its_schedule_and_the_macs_of_the_nodes_it_meets() {
    let p = plan(12, 4);
    let np = p.node_plan("h5").unwrap();
    assert_eq!(np.schedule, p.node_schedule("h5").unwrap());
    assert_eq!(np.options, p.options);
    let met: BTreeSet<&str> = np
        .schedule
        .outgoing
        .iter()
        .chain(np.schedule.incoming.iter())
        .flat_map(|x| [x.from_host.as_str(), x.to_host.as_str()])
        .collect();
    // Every NIC of every node it meets, and none of the others'.
    assert_eq!(np.macs.len(), met.len() * 4, "{:?}", np.macs);
    assert_eq!(np.macs["02:00:00:00:05:02"], "h5 r2");
    assert!(met.len() < 12, "a node meets only its peers: {met:?}");
    assert_eq!(p.node_plans().count(), 12);
    let file = MeshPlanFile::Node(np.clone());
    assert_eq!(file.for_node("h5").unwrap(), np);
    let e = file.for_node("h6").unwrap_err();
    assert!(e.message().contains("for node h5, not for h6"), "{e}");
}

/// `inventory(hosts, nics)` with these NICs (host, NIC, cause, whether its
/// node could tell its rail) moved out of the probed NICs into the node's
/// unprobed ones, as `mesh_node` lists a NIC without an address.
fn without_address(hosts: usize, nics: usize, gone: &[(&str, &str, &str, bool)]) -> MeshPlan {
    let mut inv = inventory(hosts, nics);
    for &(h, n, cause, with_rail) in gone {
        let node = inv.nodes.iter_mut().find(|x| x.host == h).unwrap();
        let k = node.nics.iter().position(|x| x.name == n).unwrap();
        let nic = node.nics.remove(k);
        let down = cause == causes::LINK_DOWN;
        node.unprobed.push(MeshUnprobedNic {
            name: nic.name.clone(),
            cause: cause.to_string(),
            rail: with_rail.then(|| nic.rail.clone()),
            rdma: true,
            seen: NicSeen {
                name: nic.name.clone(),
                oper_state: Some(if down { "DOWN" } else { "UP" }.into()),
                carrier: Some(!down),
                admin_up: Some(true),
                mtu: Some(1500),
                mac: nic.mac.clone(),
            },
            addresses: vec!["fe80::1/64".into()],
        });
    }
    mesh_plan(&inv, &MeshOptions::default()).unwrap()
}

#[test]
fn nics_without_an_address_are_named_once_each_and_never_probed() {
    // h5 r1 lost its carrier and with it its address (its rail known), h7 r2
    // its address alone (its rail taken from the r2 NICs of the other nodes),
    // every NIC of h9 is down; h3 is unfixed as well: still one host fault.
    let mut gone = vec![
        ("h5", "r1", causes::LINK_DOWN, true),
        ("h7", "r2", causes::NO_ADDRESS, false),
    ];
    for k in ["r0", "r1", "r2", "r3"] {
        gone.push(("h9", k, causes::LINK_DOWN, false));
    }
    let p = without_address(12, 4, &gone);
    let unprobed = |h: &str, n: &str| gone.iter().any(|g| g.0 == h && g.1 == n);
    for x in p.probes() {
        for id in [x.from, x.to] {
            let (node, nic) = p.nic(id).unwrap();
            assert!(
                !unprobed(&node.host, &nic.name),
                "{} {}",
                node.host,
                nic.name
            );
        }
    }
    let r = mesh_report(&p, results(&p, &unfixed, &[])).unwrap();
    assert_eq!(
        named(&r),
        set(&[
            "host h3 - - arp-flux",
            "host h9 - - link-down",
            "nic h5 r1 198.18.0.0/16#1 link-down",
            "nic h7 r2 198.18.0.0/16#2 no-address",
        ]),
        "{:#?}",
        r.faults
    );
    assert_eq!(r.summary.unprobed, 6);
    assert!(!r.passed);
    let f = r
        .faults
        .iter()
        .find(|f| f.nic.as_deref() == Some("r1"))
        .unwrap();
    assert_eq!(f.element, FaultElement::Nic);
    assert_eq!(f.evidence["nic"]["carrier"], serde_json::json!(false));
    assert_eq!(f.evidence["addresses"], serde_json::json!(["fe80::1/64"]));
    assert_eq!(f.evidence["probed"], serde_json::json!(false));
    assert!(f.fix[0].contains("ip link show dev r1"), "{:?}", f.fix);
    assert!(f.fix[1].contains("switch port"), "{:?}", f.fix);
    let f = r
        .faults
        .iter()
        .find(|f| f.nic.as_deref() == Some("r2"))
        .unwrap();
    assert!(f.fix[0].contains("ip addr show dev r2"), "{:?}", f.fix);
    // The report's nodes keep every rail of their NICs, probed or not.
    let h5 = r.nodes.iter().find(|n| n.host == "h5").unwrap();
    assert_eq!(h5.rails.len(), 4, "{h5:?}");
}

#[test]
fn a_rail_whose_nics_lost_their_addresses_on_most_hosts_is_the_rail() {
    // Rail #3's switch died: four of six hosts' r3 lost carrier and address.
    let gone: Vec<_> = ["h1", "h2", "h3", "h4"]
        .iter()
        .map(|h| (*h, "r3", causes::LINK_DOWN, false))
        .collect();
    let p = without_address(6, 4, &gone);
    let r = mesh_report(&p, results(&p, &|_| None, &[])).unwrap();
    assert_eq!(
        named(&r),
        set(&["rail - - 198.18.0.0/16#3 link-down"]),
        "{:#?}",
        r.faults
    );
    assert_eq!(r.faults[0].evidence["hosts"], serde_json::json!(4));
}

#[test]
fn a_node_whose_entry_lists_no_nic_is_named_and_no_probe_is_no_pass() {
    // h2's entry is empty (its only NIC left in a subnet of its own lost its
    // address, so the scope is empty): it is named; h1 alone has no peer, so
    // the plan has no probe, and that proves nothing.
    let mut inv = inventory(2, 1);
    inv.nodes[1].nics.clear();
    let p = mesh_plan(&inv, &MeshOptions::default()).unwrap();
    assert_eq!(p.probes().len(), 0);
    let r = mesh_report(&p, results(&p, &|_| None, &[])).unwrap();
    assert_eq!(named(&r), set(&["host h2 - - no-nics"]), "{:#?}", r.faults);
    assert!(!r.passed);
    let alone = mesh_plan(&inventory(1, 1), &MeshOptions::default()).unwrap();
    let r = mesh_report(&alone, results(&alone, &|_| None, &[])).unwrap();
    assert!(r.faults.is_empty() && !r.passed, "{r:#?}");
    assert!(r.message.contains("schedules no probe"), "{}", r.message);
}
