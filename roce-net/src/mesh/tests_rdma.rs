//! The mesh's RDMA level without RDMA hardware: a node's responder (its
//! `probe rdma` servers) and another node's prober over loopback, through
//! the NIC model the probe's own tests use, named as the libibverbs both
//! load (a test-only seam, `probe::rdma::tests::fake_backend`). What is
//! tested: the responder serves the sessions its schedule expects and then
//! stops (done, not at its deadline), a silent client ending at its
//! per-session bound; the prober's RDMA level passes, and fails with the
//! peer's report when the path back to the prober drops RoCE.
//! Real RDMA (Soft-RoCE) runs in the VM tier.

use super::prober::{self, Ctx};
use super::responder::{self, RdmaServe, Setup};
use super::result::{MeshLevel, MeshStatus, ProbeRecord, ResponderReport};
use super::schedule::{mesh_plan, MeshLevels, MeshNodePlan, MeshOptions, MeshRdmaWorkload};
use super::{MeshInventory, MeshNic, MeshNode};
use crate::host::Host;
use crate::kernel::verbs::VerbsOptions;
use crate::probe::rdma::tests::loopback_state;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// The NIC model as the libibverbs to load: `normal` or `black-hole`.
fn model(mode: &str) -> VerbsOptions {
    VerbsOptions {
        library: Some(format!("fake:{mode}").into()),
        ..VerbsOptions::default()
    }
}

/// h1 (r0 = 127.0.0.`a`) and h2 (r0 = 127.0.0.`b`), one rail, the RDMA
/// level only, on `port` (the RDMA servers on `port + 1`): each node's part.
fn parts(a: u8, b: u8, port: u16) -> (MeshNodePlan, MeshNodePlan) {
    parts_with(a, b, port, MeshOptions::default())
}

/// [`parts`] from options `base`.
fn parts_with(a: u8, b: u8, port: u16, base: MeshOptions) -> (MeshNodePlan, MeshNodePlan) {
    let node = |host: &str, n: u8| {
        let ip = IpAddr::V4(Ipv4Addr::new(127, 0, 0, n));
        let mut nic = MeshNic::new("r0", ip, 8, "127.0.0.0/8#0");
        nic.rdma = true;
        MeshNode::new(host, vec![nic])
    };
    let o = MeshOptions {
        levels: MeshLevels {
            neighbor: false,
            ip: false,
            rdma: true,
        },
        port,
        rdma_ms: 3000,
        // Writes the model carries in one datagram.
        rdma_workload: MeshRdmaWorkload {
            write_size: 16384,
            ..MeshRdmaWorkload::default()
        },
        ..base
    };
    let plan = mesh_plan(&MeshInventory::new(vec![node("h1", a), node("h2", b)]), &o).unwrap();
    (plan.node_plan("h1").unwrap(), plan.node_plan("h2").unwrap())
}

/// h2's responder (NIC model `served`) while h1 probes it (NIC model
/// `probing`), one probe after the other: h1's records and h2's report.
fn run(
    a: u8,
    b: u8,
    port: u16,
    probing: &str,
    served: &str,
) -> (Vec<ProbeRecord>, ResponderReport) {
    let (h1, h2) = parts(a, b, port);
    let (st1, st2) = (loopback_state(a), loopback_state(b));
    let host = Host::current();
    let stop = AtomicBool::new(false);
    // The responder's own bound, far past what the sessions need: it must
    // stop because they are done, not at this deadline.
    let deadline = Instant::now() + Duration::from_secs(60);
    let setup = Setup {
        schedule: &h2.schedule,
        state: &st2,
        host: &host,
        port,
        token: 7,
        plan: 9,
        deadline,
        stop: &stop,
        rdma: Some(RdmaServe {
            timeout: Duration::from_millis(h2.options.rdma_ms),
            port: port + 1,
            token: h2.options.token.clone(),
            write_size: h2.options.rdma_workload.write_size as usize,
            verbs: model(served),
        }),
    };
    let verbs = model(probing);
    let here = |cmd: &str| cmd.to_string();
    let (egress, seen) = (HashMap::new(), HashMap::new());
    let ctx = Ctx {
        state: &st1,
        host: &host,
        options: &h1.options,
        token: 7,
        plan: 9,
        macs: &h1.macs,
        egress: &egress,
        seen: &seen,
        here: &here,
        round_end: deadline,
        verbs: &verbs,
    };
    std::thread::scope(|s| {
        let resp = s.spawn(|| responder::serve(&setup));
        let records: Vec<ProbeRecord> = h1
            .schedule
            .outgoing
            .iter()
            .filter(|p| p.to_host == "h2")
            .map(|p| {
                assert_eq!(p.rdma_port, port + 1);
                prober::run(&ctx, p)
            })
            .collect();
        (records, resp.join().unwrap())
    })
}

#[test]
fn the_responder_serves_the_sessions_it_expects_and_the_probes_pass() {
    let (records, rep) = run(60, 61, 28610, "normal", "normal");
    assert!(!records.is_empty());
    for r in &records {
        let l = &r.levels[0];
        assert_eq!(l.level, MeshLevel::Rdma, "{r:#?}");
        assert_eq!(l.status, MeshStatus::Pass, "{r:#?}");
    }
    // As many sessions as probes came, each answered, then done.
    assert_eq!(rep.stopped, "done", "{rep:#?}");
    assert!(rep.levels.contains(&MeshLevel::Rdma), "{rep:#?}");
    assert!(rep.errors.is_empty(), "{rep:#?}");
    assert_eq!(rep.answered.len(), records.len(), "{rep:#?}");
    for a in &rep.answered {
        assert_eq!(
            (a.level, a.ok, a.to.as_str()),
            (MeshLevel::Rdma, true, "r0"),
            "{a:#?}"
        );
        assert_eq!(a.from_address, IpAddr::V4(Ipv4Addr::new(127, 0, 0, 60)));
    }
}

#[test]
fn a_path_that_drops_roce_fails_the_level_and_the_responder_still_ends_done() {
    let (records, rep) = run(62, 63, 28620, "black-hole", "normal");
    assert!(!records.is_empty());
    for r in &records {
        let l = &r.levels[0];
        assert_eq!(l.level, MeshLevel::Rdma, "{r:#?}");
        // The server's sends to it are never acknowledged (status 12), and
        // it says so to the prober.
        assert_eq!(l.status, MeshStatus::Fail, "{r:#?}");
        assert_eq!(l.cause.as_deref(), Some("peer-failed"), "{r:#?}");
        assert!(l.message.contains("send_recv"), "{r:#?}");
    }
    // Every expected session came and failed: the responder is done, not
    // at its deadline. (Its cause is explained from this machine's own
    // tables, so it is not asserted.)
    assert_eq!(rep.stopped, "done", "{rep:#?}");
    assert_eq!(rep.answered.len(), records.len(), "{rep:#?}");
    for a in &rep.answered {
        assert_eq!((a.level, a.ok), (MeshLevel::Rdma, false), "{a:#?}");
        assert!(a.cause.is_some(), "{a:#?}");
    }
}

#[test]
fn a_session_that_stalls_ends_at_the_responders_session_bound() {
    use crate::probe::rdma::tests::admitted;
    // One probe of h1 to h2: h2's responder expects one session.
    let one = MeshOptions {
        peers: 1,
        rounds: 1,
        ..MeshOptions::default()
    };
    let (_, h2) = parts_with(64, 65, 28630, one);
    let expected = h2
        .schedule
        .incoming
        .iter()
        .filter(|p| p.levels.rdma)
        .count();
    assert_eq!(expected, 1, "{:#?}", h2.schedule.incoming);
    let st2 = loopback_state(65);
    let host = Host::current();
    let stop = AtomicBool::new(false);
    let setup = Setup {
        schedule: &h2.schedule,
        state: &st2,
        host: &host,
        port: 28630,
        token: 7,
        plan: 9,
        // Far past the session bound: the responder must be done first.
        deadline: Instant::now() + Duration::from_secs(60),
        stop: &stop,
        rdma: Some(RdmaServe {
            timeout: Duration::from_secs(1),
            port: 28631,
            token: String::new(),
            write_size: 16384,
            verbs: model("normal"),
        }),
    };
    let rep = std::thread::scope(|s| {
        let resp = s.spawn(|| responder::serve(&setup));
        // A client that proves itself, is admitted (asking for a session
        // longer than the responder's deadline), and then says nothing, open
        // until the responder has ended.
        let p = admitted("127.0.0.65:28631", 64, 120_000);
        let rep = resp.join().unwrap();
        drop(p);
        rep
    });
    assert_eq!(rep.stopped, "done", "{rep:#?}");
    assert_eq!(rep.answered.len(), 1, "{rep:#?}");
    let a = &rep.answered[0];
    assert_eq!((a.level, a.ok), (MeshLevel::Rdma, false), "{a:#?}");
    assert_eq!(a.cause.as_deref(), Some("timeout"), "{a:#?}");
}

#[test]
fn the_rdma_level_loads_the_libibverbs_it_is_given_with_the_hosts_sysfs_root() {
    let lib = "/nonexistent/roce-net-mesh/libibverbs.so.1";
    let root = "/nonexistent/roce-net-mesh/sys";
    let host = Host::current().with_sysfs_root(root);
    let verbs = host.own_verbs(&VerbsOptions::default().with_library(lib));
    assert_eq!(verbs.library.as_deref(), Some(std::path::Path::new(lib)));
    assert_eq!(verbs.sysfs_root, std::path::Path::new(root));
    // h2 answers RDMA probes: it loads that library, and says why it cannot
    // serve (the library, not the system's libibverbs).
    let (_, h2) = parts(66, 67, 28640);
    let mut notes = Vec::new();
    assert!(host.rdma_serve(&h2, &verbs, &mut notes).is_none());
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("RDMA is not available here") && notes[0].contains(lib),
        "{notes:?}"
    );
}
