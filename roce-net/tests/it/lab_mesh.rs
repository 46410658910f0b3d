//! The cluster mesh on a lab fleet: six hosts of four NICs on one switch
//! (`Lab::fleet`, every NIC in one /16, rails by position), every host's run in
//! its namespace at once, the merge of their results. One host left unfixed,
//! one NIC's cable pulled (its switch port down), one rail whose switch ports
//! carry only 1500 bytes while its NICs send 9000: the mesh names exactly
//! those three elements. The same fleet fixed passes. The responder ends at
//! its bound when a peer never comes, and a stopped run starts no more
//! rounds. What the tests hold is what ended each run (the responder's own
//! reason, the rounds recorded as not run), never how long it took.

use crate::lab_support;

use lab_support::{ip, require_root};
use roce_net::{
    ApplyOptions, FaultElement, Host, Lab, MeshInventory, MeshOptions, MeshPlan, MeshReport,
    MeshRunOptions, MeshStatus, Policy, RailBy,
};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

const HOSTS: usize = 6;
const NICS: usize = 4;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Short bounds: the lab's links answer in microseconds.
fn options(start_in_ms: u64) -> MeshOptions {
    let mut o = MeshOptions::default();
    o.neighbor_ms = 300;
    o.ip_ms = 300;
    o.start_at_ms = now_ms() + start_in_ms;
    o.token = roce_net::mesh_token();
    o
}

/// The plan from every host's snapshot.
fn plan(hosts: &[Host], o: &MeshOptions) -> MeshPlan {
    let states: Vec<_> = hosts.iter().map(|h| h.snapshot().unwrap()).collect();
    let inv = MeshInventory::from_states(&states, RailBy::Auto, None);
    roce_net::mesh_plan(&inv, o).unwrap()
}

/// The host's part of the plan (by its name, as the plan was made).
fn part(h: &Host, plan: &MeshPlan) -> roce_net::MeshNodePlan {
    let name = roce_net::fleet_host_label(&h.snapshot().unwrap());
    plan.node_plan(&name).unwrap()
}

/// Every host runs its part at once; the merged report, and why each host's
/// responder stopped.
fn run_all(hosts: &[Host], plan: &MeshPlan) -> (MeshReport, Vec<String>) {
    let results: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = hosts
            .iter()
            .map(|h| {
                s.spawn(move || {
                    h.mesh_run(&part(h, plan), &MeshRunOptions::default())
                        .unwrap()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for r in &results {
        assert!(
            r.responder.errors.is_empty(),
            "{}: {:?}",
            r.host,
            r.responder.errors
        );
    }
    let stopped = results
        .iter()
        .map(|r| r.responder.stopped.clone())
        .collect();
    (roce_net::mesh_report(plan, results).unwrap(), stopped)
}

/// A lab fleet (`Lab::fleet`) whose hosts are seen through their
/// namespaces with one injected /etc, and the state directory of `apply`.
struct Fleet {
    /// Held for its drop, which removes the namespaces.
    _lab: Lab,
    ns: Vec<String>,
    sw: String,
    hosts: Vec<Host>,
    _etc: tempfile::TempDir,
    run: tempfile::TempDir,
}

impl Fleet {
    fn new(name: &str, hosts: usize, nics: usize) -> Fleet {
        let lab = Lab::fleet(name, hosts, nics).unwrap();
        let ns = lab.fleet_hosts().to_vec();
        let sw = lab.switch_ns().unwrap().to_string();
        let etc = tempfile::tempdir().unwrap();
        let hosts = ns
            .iter()
            .map(|n| Host::netns(n).unwrap().with_etc_root(etc.path()))
            .collect();
        Fleet {
            _lab: lab,
            ns,
            sw,
            hosts,
            _etc: etc,
            run: tempfile::tempdir().unwrap(),
        }
    }

    /// Fix `h` as `roce-net apply` does under the default policy.
    fn apply(&self, h: &Host) {
        let opts = ApplyOptions {
            state_dir: self.run.path().to_path_buf(),
            ..Default::default()
        };
        let p = roce_net::plan(&h.snapshot().unwrap(), &Policy::default()).unwrap();
        roce_net::apply(h, &p, &opts).unwrap();
    }

    /// `h1`, `h2`, ... for a host's name, by its namespace's position.
    fn label(&self, h: &str) -> String {
        self.ns
            .iter()
            .position(|n| h.ends_with(&format!(":{n}")))
            .map_or(h.to_string(), |k| format!("h{}", k + 1))
    }
}

fn named(r: &MeshReport, label: &dyn Fn(&str) -> String) -> BTreeSet<String> {
    r.faults
        .iter()
        .map(|f| {
            format!(
                "{} {} {} {} {}",
                f.element.name(),
                f.host.as_deref().map_or("-".to_string(), label),
                f.nic.as_deref().unwrap_or("-"),
                f.rail.as_deref().unwrap_or("-"),
                f.cause
            )
        })
        .collect()
}

#[test]
#[ignore = "needs root: builds a fleet of network namespaces"]
fn the_mesh_names_the_unfixed_host_the_pulled_cable_and_the_rail_with_small_frames() {
    require_root("the_mesh_names_the_unfixed_host_the_pulled_cable_and_the_rail_with_small_frames");
    let fleet = Fleet::new("mesh", HOSTS, NICS);
    let (ns, sw, hosts) = (&fleet.ns, &fleet.sw, &fleet.hosts);
    // Host k (from 1), NIC i: switch port s<(k-1)*NICS + i> (Lab::connect's order).
    let port = |k: usize, i: usize| format!("s{}", (k - 1) * NICS + i);
    let label = |h: &str| fleet.label(h);
    let apply = |h: &Host| fleet.apply(h);
    // Every host fixed but h2.
    for (k, h) in hosts.iter().enumerate() {
        if k != 1 {
            apply(h);
        }
    }
    // Rail #2: the NICs send 9000 bytes, their switch ports carry 1500.
    for n in ns {
        ip(n, &["link", "set", "dev", "r2", "mtu", "9000"]);
    }
    // h4 r1's cable pulled: its switch port down.
    ip(sw, &["link", "set", "dev", &port(4, 1), "down"]);

    let p = plan(hosts, &options(1500));
    assert_eq!(p.round_count(), 3);
    let (r, stopped) = run_all(hosts, &p);
    let want: BTreeSet<String> = [
        "host h2 - - arp-flux",
        "nic h4 r1 198.18.0.0/16#1 link-down",
        "rail - - 198.18.0.0/16#2 mtu",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(named(&r, &label), want, "{}", r.table().join("\n"));
    assert!(!r.passed);
    // Bounded by the plan: each responder ended by its own deadline (the last
    // round's end and the grace) or because every probe it expected came,
    // never waiting on something else; each probe has its level's bound.
    assert!(
        stopped.iter().all(|s| s == "done" || s == "deadline"),
        "{stopped:?}"
    );
    // Each fault carries its evidence, fix and the host's doctor findings.
    let host = r
        .faults
        .iter()
        .find(|f| f.element == FaultElement::Host)
        .unwrap();
    assert!(
        host.fix[0].contains("roce-net --netns") && host.fix[0].contains("apply"),
        "{:?}",
        host.fix
    );
    assert!(
        host.findings.iter().any(|f| f.id == "arp-ignore"),
        "the unfixed host's doctor findings: {:#?}",
        host.findings
    );
    let nic = r
        .faults
        .iter()
        .find(|f| f.element == FaultElement::Nic)
        .unwrap();
    assert!(nic.message.contains("link is down"), "{}", nic.message);
    let rail = r
        .faults
        .iter()
        .find(|f| f.element == FaultElement::Rail)
        .unwrap();
    assert_eq!(
        rail.evidence["hosts"],
        serde_json::json!(HOSTS),
        "{:#?}",
        rail.evidence
    );
    println!("{}", r.table().join("\n"));

    // Fixed: h2 applied, the cable back, the rail's switch ports at 9000.
    apply(&hosts[1]);
    ip(sw, &["link", "set", "dev", &port(4, 1), "up"]);
    for k in 1..=HOSTS {
        ip(sw, &["link", "set", "dev", &port(k, 2), "mtu", "9000"]);
    }
    wait_up(&ns[3], "r1");
    let p = plan(hosts, &options(1500));
    let (r, stopped) = run_all(hosts, &p);
    assert!(r.passed, "{}", r.table().join("\n"));
    // Every expected probe came and said goodbye: no responder waited for
    // its deadline.
    assert!(stopped.iter().all(|s| s == "done"), "{stopped:?}");
    assert_eq!(r.summary.failed, 0);
    assert_eq!(r.summary.passed, r.summary.probes);
    assert_eq!(r.summary.probes, NICS * HOSTS * (HOSTS - 1));
    drop(fleet);
}

/// Wait (bounded) until `dev` in `ns` is operationally up again.
fn wait_up(ns: &str, dev: &str) {
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end {
        if ip(ns, &["-br", "link", "show", "dev", dev]).contains(" UP ") {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{dev} in {ns} did not come up");
}

/// The UDP port can be bound again in `ns`: nothing listens on it any more.
fn port_free(host: &Host, addr: std::net::IpAddr, port: u16) -> bool {
    host.target()
        .run(|| Ok(std::net::UdpSocket::bind((addr, port)).is_ok()))
        .unwrap()
}

#[test]
#[ignore = "needs root: builds a fleet of network namespaces"]
fn the_responder_ends_at_its_bound_when_a_peer_never_comes_and_a_stopped_run_starts_no_round() {
    require_root(
        "the_responder_ends_at_its_bound_when_a_peer_never_comes_and_a_stopped_run_starts_no_round",
    );
    let lab = Lab::fleet("meshb", 3, 2).unwrap();
    let ns = lab.fleet_hosts().to_vec();
    let hosts: Vec<Host> = ns.iter().map(|n| Host::netns(n).unwrap()).collect();
    let addr = lab.nics()[0].address;

    // A plan of h1 and h2, and only h1 runs: h2's probes never come. Its responder waits for them to
    // the end of the last round plus the grace, and not a moment longer: its
    // own reason for stopping is that deadline (its loop looks at it every
    // tick), the run returns, and its port is free again.
    let o = options(300);
    let p = plan(&hosts[..2], &o);
    let r = hosts[0]
        .mesh_run(&part(&hosts[0], &p), &MeshRunOptions::default())
        .unwrap();
    assert_eq!(r.responder.stopped, "deadline", "{:#?}", r.responder);
    assert!(!r.responder.missing.is_empty(), "{:#?}", r.responder);
    assert!(
        r.responder.missing[0].contains("-> r0 ip"),
        "{:?}",
        r.responder.missing
    );
    assert!(
        port_free(&hosts[0], addr, o.port),
        "the echo port is still in use"
    );
    // h1's own probes of h2 got no answer: the report names h2 (no result).
    let rep = roce_net::mesh_report(&p, vec![r]).unwrap();
    assert_eq!(rep.faults.len(), 1, "{}", rep.table().join("\n"));
    assert_eq!(rep.faults[0].cause, "no-result");

    // Stopped in the middle of a long run (all three hosts, one peer per
    // round: h2 in one round, h3 in the next, rounds of over 4 s): the
    // responder says it was interrupted, the probe in flight finishes (its own
    // bound, 2 x ip_ms) and no round that begins after the stop is run.
    let mut o = options(200);
    o.rounds = 20;
    o.peers = 1;
    o.ip_ms = 2000;
    let p = plan(&hosts, &o);
    let stop = Arc::new(AtomicBool::new(false));
    let mut opts = MeshRunOptions::default();
    opts.stop = Some(stop.clone());
    let (h0, opts) = (&hosts[0], &opts);
    let (r, asked_ms) = std::thread::scope(|s| {
        let np = part(h0, &p);
        let h = s.spawn(move || h0.mesh_run(&np, opts).unwrap());
        std::thread::sleep(Duration::from_millis(1500));
        let asked_ms = now_ms();
        stop.store(true, Ordering::Relaxed);
        (h.join().unwrap(), asked_ms)
    });
    assert_eq!(r.responder.stopped, "interrupted", "{:#?}", r.responder);
    // A round's start by the plan's wall clock (50 ms for the run reading that
    // clock once, at its start, to turn it into instants).
    let after_stop: Vec<_> = r
        .probes
        .iter()
        .filter(|x| o.start_at_ms + u64::from(x.round) * p.round_ms() > asked_ms + 50)
        .collect();
    assert!(
        !after_stop.is_empty(),
        "a round with probes begins after the stop: {:#?}",
        r.probes
    );
    for x in &after_stop {
        assert!(
            x.levels.iter().all(|l| l.status == MeshStatus::Skipped),
            "round {} began after the stop and ran: {x:#?}",
            x.round
        );
    }
    assert!(
        port_free(&hosts[0], addr, o.port),
        "the echo port is still in use"
    );
    drop(lab);
}

/// What systemd-networkd does to a NIC that loses its carrier under its
/// defaults (`IgnoreCarrierLoss=` unset, so `ConfigureWithoutCarrier=no`):
/// it drops the NIC's addresses. Here by hand: `ip addr flush`.
fn flush(ns: &str, dev: &str) {
    ip(ns, &["addr", "flush", "dev", dev]);
}

#[test]
#[ignore = "needs root: builds a fleet of network namespaces"]
fn a_nic_that_lost_its_addresses_is_named_not_dropped_from_the_plan() {
    require_root("a_nic_that_lost_its_addresses_is_named_not_dropped_from_the_plan");
    let fleet = Fleet::new("meshna", 3, 2);
    let (ns, sw, hosts) = (&fleet.ns, &fleet.sw, &fleet.hosts);
    for h in hosts {
        fleet.apply(h);
    }
    let label = |h: &str| fleet.label(h);
    // h3 r1: its cable pulled (switch port s5) and its addresses gone, as
    // networkd does on carrier loss. h2 r0: link up, its address flushed.
    ip(sw, &["link", "set", "dev", "s5", "down"]);
    flush(&ns[2], "r1");
    flush(&ns[1], "r0");

    // The doctor's scope alone (no RDMA devices here: the NICs that share a
    // subnet): h2's and h3's remaining NIC shares its subnet with no NIC of
    // its host, so both entries are empty. Each such node is named, and a
    // schedule with no probe is not a pass.
    let p = plan(hosts, &options(1500));
    assert!(p.inventory.nodes[1].nics.is_empty(), "{:#?}", p.inventory);
    let (r, _) = run_all(hosts, &p);
    let want: BTreeSet<String> = ["host h2 - - no-nics", "host h3 - - no-nics"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(named(&r, &label), want, "{}", r.table().join("\n"));
    assert!(!r.passed);

    // The entries name the node's rails (`mesh node --nic r0,r1`): both NICs
    // without an address are in the result, each once, with its own cause,
    // on its rail; the others keep their rails and every probe passes.
    let names = ["r0".to_string(), "r1".to_string()];
    let states: Vec<_> = hosts.iter().map(|h| h.snapshot().unwrap()).collect();
    let nodes: Vec<_> = states
        .iter()
        .map(|s| roce_net::mesh_node_with(s, RailBy::Auto, None, &names))
        .collect();
    let inv = MeshInventory::new(nodes);
    let p = roce_net::mesh_plan(&inv, &options(1500)).unwrap();
    let (r, _) = run_all(hosts, &p);
    let want: BTreeSet<String> = [
        "nic h2 r0 198.18.0.0/16#0 no-address",
        "nic h3 r1 198.18.0.0/16#1 link-down",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(named(&r, &label), want, "{}", r.table().join("\n"));
    assert!(!r.passed);
    assert_eq!(r.summary.unprobed, 2);
    assert_eq!(r.summary.failed, 0, "{}", r.table().join("\n"));
    assert!(r.summary.probes > 0 && r.summary.passed == r.summary.probes);
    let h2 = &p.inventory.nodes[1];
    assert_eq!(h2.nics[0].name, "r1");
    assert_eq!(h2.nics[0].rail, "198.18.0.0/16#1", "h2 r1 kept its rail");
    // No probe to or from a NIC without an address.
    for x in p.probes() {
        for id in [x.from, x.to] {
            let (node, nic) = p.nic(id).unwrap();
            let at = (label(&node.host), nic.name.as_str());
            assert!(
                at != ("h2".into(), "r0") && at != ("h3".into(), "r1"),
                "{at:?}"
            );
        }
    }
    let fault = |nic: &str| {
        r.faults
            .iter()
            .find(|f| f.nic.as_deref() == Some(nic))
            .unwrap()
    };
    let down = fault("r1");
    assert_eq!(down.element, FaultElement::Nic);
    assert_eq!(down.evidence["nic"]["carrier"], serde_json::json!(false));
    assert_eq!(down.evidence["probed"], serde_json::json!(false));
    let addrs = down.evidence["addresses"].as_array().unwrap();
    assert!(
        addrs
            .iter()
            .all(|a| !a.as_str().unwrap().starts_with("198.18.")),
        "{addrs:?}"
    );
    assert!(down.message.contains("link is down"), "{}", down.message);
    assert!(
        down.fix[0].ends_with(&format!("ip -n {} link show dev r1", ns[2])),
        "{:?}",
        down.fix
    );
    assert!(down.fix[1].contains("switch port"), "{:?}", down.fix);
    let bare = fault("r0");
    assert_eq!(
        bare.evidence["nic"]["oper_state"], "UP",
        "{:#?}",
        bare.evidence
    );
    assert!(bare.message.contains("no address"), "{}", bare.message);
    assert!(
        bare.fix[0].ends_with(&format!("ip -n {} addr show dev r0", ns[1])),
        "{:?}",
        bare.fix
    );
    drop(fleet);
}

/// Hosts of four NICs without RDMA devices, entries from snapshots alone (no
/// `--nic`): the scope is the NICs that share a subnet, which a NIC whose
/// addresses are gone no longer does. Its link is still there and looks like
/// its siblings (`r1` like `r0`), so it keeps its position: the report names
/// exactly that NIC, and its siblings stay on their rails (`r2` is `#2` on
/// every host, not `#1` on the host that lost `r1`). An unused port of the
/// same shape, administratively down, is not taken for a NIC.
#[test]
#[ignore = "needs root: builds a fleet of network namespaces"]
fn without_rdma_a_nic_that_lost_its_addresses_keeps_its_position_on_the_rails() {
    require_root("without_rdma_a_nic_that_lost_its_addresses_keeps_its_position_on_the_rails");
    let fleet = Fleet::new("meshpos", 3, NICS);
    let (ns, sw, hosts) = (&fleet.ns, &fleet.sw, &fleet.hosts);
    for h in hosts {
        fleet.apply(h);
    }
    let label = |h: &str| fleet.label(h);
    // h2 r1's cable pulled (switch port s5) and its addresses gone, as
    // networkd does on carrier loss: the host side stays administratively up.
    ip(sw, &["link", "set", "dev", "s5", "down"]);
    flush(&ns[1], "r1");
    // h3 has a port of the same shape nobody configured (a veth `r9`, left
    // administratively down): not a NIC of the mesh, so not in its entry.
    ip(
        &ns[2],
        &["link", "add", "r9", "type", "veth", "peer", "name", "x9"],
    );
    let seen = |h: &Host, n: &str| {
        let i = h.snapshot().unwrap().interface(n).cloned().unwrap();
        (i.admin_up, i.carrier)
    };
    assert_eq!(seen(&hosts[1], "r1"), (true, Some(false)));
    assert!(!seen(&hosts[2], "r9").0);

    let p = plan(hosts, &options(1500));
    // Every NIC of every host on the rail of its position, r1 of h2 too.
    for node in &p.inventory.nodes {
        let rails: Vec<(&str, Option<&str>)> = node
            .nics
            .iter()
            .map(|n| (n.name.as_str(), Some(n.rail.as_str())))
            .chain(
                node.unprobed
                    .iter()
                    .map(|u| (u.name.as_str(), u.rail.as_deref())),
            )
            .collect();
        assert_eq!(rails.len(), NICS, "{}: {rails:?}", node.host);
        for (name, rail) in rails {
            assert_eq!(
                rail,
                Some(format!("198.18.0.0/16#{}", &name[1..]).as_str()),
                "{} {name}",
                node.host
            );
        }
    }
    let (r, _) = run_all(hosts, &p);
    let want: BTreeSet<String> = ["nic h2 r1 198.18.0.0/16#1 link-down".to_string()].into();
    assert_eq!(named(&r, &label), want, "{}", r.table().join("\n"));
    assert!(!r.passed);
    assert_eq!(r.summary.unprobed, 1);
    assert_eq!(r.summary.failed, 0, "{}", r.table().join("\n"));
    assert!(r.summary.probes > 0 && r.summary.passed == r.summary.probes);
    drop(fleet);
}
