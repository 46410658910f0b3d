//! Whole probe sessions over the NIC model: the real exchange, deadlines and
//! reports. Without root, client and server run as two threads over loopback;
//! with root, as two processes in lab namespaces (the server is this test binary
//! re-run with `ROCE_NET_TEST_RDMA_CHILD` set, inside the peer namespace).

use super::fake::{FakeBackend, Mode};
use super::{ip, write_sysfs_device};
use crate::model::{Address, HostState, Interface, Scope};
use crate::probe::rdma::engine::{client, server};
use crate::probe::rdma::{
    Cause, FailureValue, RdmaProbeOptions, RdmaProbeReport, RdmaServerReport, Stage,
};
use crate::test_support::require_namespaces;
use crate::{Host, Lab, NetnsTarget};
use roce_net_testkit::hang_guard;
use serde::{Deserialize, Serialize};
use std::net::IpAddr;
use std::time::{Duration, Instant};

use roce_net_testkit::golden as golden_support;

const CHILD_ENV: &str = "ROCE_NET_TEST_RDMA_CHILD";

pub(super) fn quick(source: IpAddr, port: u16) -> RdmaProbeOptions {
    RdmaProbeOptions {
        source: Some(source),
        tcp_port: port,
        latency_iterations: 50,
        write_iterations: 40,
        write_size: 16384,
        timeout: Duration::from_secs(8),
        duration: Duration::from_secs(15),
        ..RdmaProbeOptions::default()
    }
}

/// A host whose `lo` backs a fake RDMA device with 127.0.0.<n>'s GIDs.
pub(crate) fn loopback_state(n: u8) -> HostState {
    let t = tempfile::tempdir().unwrap();
    let v4 = std::net::Ipv4Addr::new(127, 0, 0, n);
    write_sysfs_device(t.path(), "fake_lo", "lo", v4, "4: ACTIVE");
    let mut st = HostState::empty(&format!("loop{n}"));
    let lo: Interface = serde_json::from_value(serde_json::json!({
        "index": 1, "name": "lo", "kind": null, "mac": "00:00:00:00:00:00", "mtu": 65536,
        "admin_up": true, "oper_state": "UNKNOWN", "carrier": true, "master": null,
        "stats": {"rx_packets": 0, "tx_packets": 0, "rx_bytes": 0, "tx_bytes": 0,
                  "rx_dropped": 0, "tx_dropped": 0, "rx_errors": 0, "tx_errors": 0}
    }))
    .unwrap();
    st.interfaces.push(lo);
    st.addresses.push(Address {
        ifname: "lo".into(),
        ifindex: 1,
        address: IpAddr::V4(v4),
        prefix_len: 8,
        scope: Scope::Universe,
        label: Some("lo".into()),
        secondary: false,
        flags: Vec::new(),
    });
    let mut w = Vec::new();
    st.rdma = crate::kernel::sysfs::read_rdma_sysfs(t.path(), &st.interfaces, &mut w);
    assert!(w.is_empty(), "{w:?}");
    st
}

pub(super) fn no_refresh() -> Option<HostState> {
    None
}

/// Runs as a plain test: a client and a server thread over loopback. Run by the
/// lab tests with `ROCE_NET_TEST_RDMA_CHILD` set: the server of a lab session.
#[test]
fn session_over_loopback_or_lab_child() {
    if let Ok(cfg) = std::env::var(CHILD_ENV) {
        return child_server(&cfg);
    }
    let sst = loopback_state(2);
    let cst = loopback_state(3);
    let sopts = RdmaProbeOptions {
        clients: 1,
        ..quick(ip("127.0.0.2"), 28520)
    };
    let copts = RdmaProbeOptions {
        source: Some(ip("127.0.0.3")),
        ..quick(ip("127.0.0.2"), 28520)
    };
    let b = FakeBackend::new(Mode::Normal);
    let (srep, crep) = std::thread::scope(|s| {
        let sv = s.spawn(|| server(&b, &sst, &sopts, &no_refresh).unwrap());
        std::thread::sleep(Duration::from_millis(200));
        let c = client(&b, &cst, ip("127.0.0.2"), &copts, &no_refresh).unwrap();
        (sv.join().unwrap(), c)
    });
    check_success(&crep, &srep, "fake_lo");
    python_golden(&crep, "rdma_probe_report.json");
    python_golden(&srep, "rdma_server_report.json");
}

/// Recorded reports (`roce-net/tests/fixtures/rdma/rdma_*.json`: a passed
/// client and its server, `no-route-or-arp`, `timeout`, `arp-flux`,
/// `peer-unreachable`), which the Python binding's tests and the Ansible
/// collection's unit tests read: keep their shape equal to what this build
/// produces. A missing file fails; `UPDATE_GOLDEN=1` rewrites them.
fn python_golden<T: Serialize>(r: &T, name: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/rdma")
        .join(name);
    report_shape_golden(&path, r, golden_support::updating());
}

/// The recorded report at `path` has the shape of `r` (the same keys, nested,
/// whatever the measured values).
fn report_shape_golden<T: Serialize>(path: &std::path::Path, r: &T, update: bool) {
    fn shape(v: &serde_json::Value) -> serde_json::Value {
        match v {
            serde_json::Value::Object(m) => {
                serde_json::Value::Object(m.iter().map(|(k, v)| (k.clone(), shape(v))).collect())
            }
            serde_json::Value::Array(a) => a.first().map(shape).unwrap_or(serde_json::Value::Null),
            _ => serde_json::Value::Null,
        }
    }
    let now = serde_json::to_value(r).unwrap();
    let text = serde_json::to_string_pretty(&now).unwrap() + "\n";
    let disk: serde_json::Value =
        serde_json::from_str(&golden_support::expected_with(path, &text, update)).unwrap();
    assert_eq!(
        shape(&disk),
        shape(&now),
        "{} has another shape; rerun with UPDATE_GOLDEN=1",
        path.display()
    );
}

/// A recorded report that is missing fails the test, and the test does not
/// write it (it used to create the file and compare it with itself).
#[test]
fn a_missing_recorded_report_fails_and_is_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rdma_probe_report.json");
    let r = std::panic::catch_unwind(|| {
        report_shape_golden(&path, &serde_json::json!({"ok": true}), false)
    });
    assert!(r.is_err(), "a missing golden file passed");
    assert!(!path.exists(), "the test wrote its own golden file");
}

fn check_success(c: &RdmaProbeReport, s: &RdmaServerReport, peer_device: &str) {
    assert!(c.ok, "client: {:#?}", c.failure);
    assert!(s.ok, "server: {:#?}", s.sessions);
    assert_eq!(s.stopped, "clients");
    let lat = c.latency.as_ref().unwrap();
    assert_eq!(lat.iterations, 50);
    assert!(
        lat.min_us > 0.0
            && lat.min_us <= lat.median_us
            && lat.median_us <= lat.p99_us
            && lat.p99_us <= lat.max_us,
        "{lat:?}"
    );
    for b in [
        c.write_to_peer.as_ref().unwrap(),
        c.write_from_peer.as_ref().unwrap(),
    ] {
        assert!(b.verified, "{b:?}");
        assert_eq!(b.bytes, 40 * 16384);
        assert!(b.gbit_per_s > 0.0);
    }
    let peer = c.peer.as_ref().unwrap();
    assert_eq!(peer.device, peer_device);
    assert_eq!(peer.gid_index, 3);
    let srv = &s.sessions[0];
    assert!(srv.ok);
    // The server saw the client's identity and its latency measurement.
    assert_eq!(
        srv.peer.as_ref().unwrap().qpn,
        c.local.as_ref().unwrap().qpn
    );
    // The same numbers, through JSON (serde_json's float parsing may differ by an ULP).
    let (a, b) = (srv.latency.as_ref().unwrap(), c.latency.as_ref().unwrap());
    assert_eq!(a.iterations, b.iterations);
    for (x, y) in [
        (a.min_us, b.min_us),
        (a.median_us, b.median_us),
        (a.p99_us, b.p99_us),
        (a.max_us, b.max_us),
    ] {
        assert!((x - y).abs() < 1e-6 * y.max(1.0), "{a:?} vs {b:?}");
    }
    assert_eq!(c.path_mtu, Some(1024));
}

#[test]
fn a_server_that_does_not_answer_is_bounded_by_the_timeout() {
    // A TCP listener that accepts and says nothing.
    let l = std::net::TcpListener::bind("127.0.0.4:28521").unwrap();
    let st = loopback_state(5);
    let o = RdmaProbeOptions {
        source: Some(ip("127.0.0.5")),
        timeout: Duration::from_millis(700),
        ..quick(ip("127.0.0.5"), 28521)
    };
    // The listener never accepts: a client that did not keep its deadline
    // would wait for ever.
    let (r, _) = within(hang_guard(o.timeout), move || {
        client(
            &FakeBackend::new(Mode::Normal),
            &st,
            ip("127.0.0.4"),
            &o,
            &no_refresh,
        )
        .unwrap()
    });
    drop(l);
    python_golden(&r, "rdma_probe_timeout.json");
    assert!(!r.ok);
    let f = r.failure.unwrap();
    assert_eq!(f.stage, Stage::Exchange);
    assert!(matches!(f.value, FailureValue::Timeout { .. }), "{f:?}");
    assert_eq!(f.cause, Cause::Timeout);
}

#[test]
fn no_rdma_is_an_error_before_any_connection() {
    let st = loopback_state(6);
    let o = quick(ip("127.0.0.6"), 28522);
    let e = client(
        &FakeBackend::new(Mode::NoRdma),
        &st,
        ip("127.0.0.7"),
        &o,
        &no_refresh,
    )
    .unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::NoRdma);
    let e = server(&FakeBackend::new(Mode::NoRdma), &st, &o, &no_refresh).unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::NoRdma);
}

#[test]
fn a_server_without_clients_stops_at_its_duration() {
    let st = loopback_state(8);
    let o = RdmaProbeOptions {
        duration: Duration::from_millis(300),
        ..quick(ip("127.0.0.8"), 28523)
    };
    let (r, _) = within(hang_guard(o.duration), move || {
        server(&FakeBackend::new(Mode::Normal), &st, &o, &no_refresh).unwrap()
    });
    assert_eq!(r.stopped, "duration");
    assert!(r.sessions.is_empty());
    assert!(!r.ok);
}

#[test]
fn a_rtr_failure_reaches_both_ends() {
    let sst = loopback_state(9);
    let cst = loopback_state(10);
    let sopts = quick(ip("127.0.0.9"), 28524);
    let copts = RdmaProbeOptions {
        source: Some(ip("127.0.0.10")),
        ..quick(ip("127.0.0.9"), 28524)
    };
    let (srep, crep) = std::thread::scope(|s| {
        let sb = FakeBackend::new(Mode::Normal);
        let sv = s.spawn(move || server(&sb, &sst, &sopts, &no_refresh).unwrap());
        std::thread::sleep(Duration::from_millis(200));
        let cb = FakeBackend::new(Mode::FailRtr(libc::ETIMEDOUT));
        let c = client(&cb, &cst, ip("127.0.0.9"), &copts, &no_refresh).unwrap();
        (sv.join().unwrap(), c)
    });
    python_golden(&crep, "rdma_probe_failure.json");
    let f = crep.failure.unwrap();
    assert_eq!(f.stage, Stage::ReadyToReceive);
    assert_eq!(f.cause, Cause::NoRouteOrArp, "{}", f.message);
    let sf = srep.sessions[0].failure.as_ref().unwrap();
    assert_eq!(sf.stage, Stage::Peer);
    assert_eq!(sf.cause, Cause::PeerFailed);
    assert!(
        sf.peer.as_deref().unwrap().contains("ready_to_receive"),
        "{sf:?}"
    );
}

/// A session over loopback between a server on 127.0.0.`n` and a client on
/// 127.0.0.`n+1`, each with its own NIC model.
fn pair_over_loopback(
    n: u8,
    port: u16,
    server_mode: Mode,
    client_mode: Mode,
) -> (RdmaServerReport, RdmaProbeReport) {
    let (sip, cip) = (format!("127.0.0.{n}"), format!("127.0.0.{}", n + 1));
    let sst = loopback_state(n);
    let cst = loopback_state(n + 1);
    let sopts = RdmaProbeOptions {
        clients: 1,
        ..quick(ip(&sip), port)
    };
    let copts = RdmaProbeOptions {
        source: Some(ip(&cip)),
        ..quick(ip(&sip), port)
    };
    std::thread::scope(|s| {
        let sb = FakeBackend::new(server_mode);
        let sv = s.spawn(move || server(&sb, &sst, &sopts, &no_refresh).unwrap());
        std::thread::sleep(Duration::from_millis(200));
        let cb = FakeBackend::new(client_mode);
        let c = client(&cb, &cst, ip(&sip), &copts, &no_refresh).unwrap();
        (sv.join().unwrap(), c)
    })
}

fn other_message(f: &crate::probe::rdma::ProbeFailure) -> &str {
    match &f.value {
        FailureValue::Other { message } => message,
        v => panic!("expected a message, got {v:?}"),
    }
}

#[test]
fn data_the_server_stores_corrupted_fails_both_ends_with_the_servers_account() {
    let (srep, crep) = pair_over_loopback(11, 28525, Mode::CorruptWrites, Mode::Normal);
    let detail = "the last 16384 bytes the client wrote to the server differ from what it sent";
    // The server checked and said why.
    let sv = &srep.sessions[0];
    assert!(!sv.ok && !srep.ok);
    assert!(!sv.write_from_peer.as_ref().unwrap().verified);
    let sf = sv.failure.as_ref().unwrap();
    assert_eq!(sf.stage, Stage::WriteFromPeer);
    assert_eq!(other_message(sf), detail);
    // The client's writes are unverified, with the server's detail in its error.
    assert!(!crep.ok);
    let w = crep.write_to_peer.as_ref().unwrap();
    assert!(!w.verified && w.bytes == 40 * 16384, "{w:?}");
    assert!(crep.write_from_peer.is_none());
    let cf = crep.failure.as_ref().unwrap();
    assert_eq!(cf.stage, Stage::WriteToPeer);
    assert_eq!(
        other_message(cf),
        format!("the server found the data the client wrote corrupted: {detail}")
    );
}

#[test]
fn a_server_told_its_data_arrived_corrupted_reports_the_clients_detail() {
    let (srep, crep) = pair_over_loopback(13, 28526, Mode::Normal, Mode::CorruptWrites);
    let detail = "the last 16384 bytes the server wrote to the client differ from what it sent";
    // The client's writes arrived intact; the server's did not.
    assert!(!crep.ok);
    assert!(crep.write_to_peer.as_ref().unwrap().verified);
    assert!(!crep.write_from_peer.as_ref().unwrap().verified);
    let cf = crep.failure.as_ref().unwrap();
    assert_eq!(cf.stage, Stage::WriteFromPeer);
    assert_eq!(other_message(cf), detail);
    let sv = &srep.sessions[0];
    assert!(!sv.ok);
    assert!(sv.write_from_peer.as_ref().unwrap().verified);
    let w = sv.write_to_peer.as_ref().unwrap();
    assert!(!w.verified && w.bytes == 40 * 16384, "{w:?}");
    let sf = sv.failure.as_ref().unwrap();
    assert_eq!(sf.stage, Stage::WriteToPeer);
    assert_eq!(
        other_message(sf),
        format!("the client found the data the server wrote corrupted: {detail}")
    );
}

// ---- Hostile peers: nothing they do holds an end past its bound ----

/// Run `f` on its own thread and return what it gave and how long it took;
/// fail when it has not returned after `limit` (the thread is left behind, so
/// a regression fails the test instead of hanging it).
pub(in crate::probe::rdma) fn within<T: Send + 'static>(
    limit: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> (T, Duration) {
    let (tx, rx) = std::sync::mpsc::channel();
    let t = Instant::now();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(v) => (v, t.elapsed()),
        Err(_) => panic!("still running after {limit:?} (the test's hang guard)"),
    }
}

/// Write `bytes` to `s` one byte every 50 ms (each well inside any per-read
/// timeout), then keep the connection open, until `stop` or 60 s: longer than
/// the hang guard of any test that uses it, so a run that waits for the
/// trickler instead of its own bound hits the guard.
pub(super) fn trickle(
    mut s: std::net::TcpStream,
    bytes: &'static [u8],
    stop: &std::sync::atomic::AtomicBool,
) {
    use std::io::Write;
    use std::sync::atomic::Ordering;
    let t = Instant::now();
    let mut it = bytes.iter().cycle();
    while !stop.load(Ordering::Relaxed) && t.elapsed() < Duration::from_secs(60) {
        let b = it.next().copied().unwrap_or(b'x');
        if s.write_all(&[b]).is_err() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A JSON line that never ends: a trickling peer's bytes.
pub(super) const NEVER_ENDS: &[u8] =
    b"{\"msg\":\"hello\",\"proto\":\"roce-net-rdma-probe\",\"pad\":\"xxxxxxxxxxxxxxxx";

#[test]
fn a_client_that_trickles_cannot_hold_the_server_past_duration_and_timeout() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let st = loopback_state(20);
    let o = RdmaProbeOptions {
        timeout: Duration::from_secs(1),
        duration: Duration::from_secs(1),
        ..quick(ip("127.0.0.20"), 28530)
    };
    let stop = Arc::new(AtomicBool::new(false));
    let peer = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            let s = std::net::TcpStream::connect("127.0.0.20:28530").unwrap();
            trickle(s, NEVER_ENDS, &stop);
        })
    };
    // Its bound: --duration + --timeout. The trickler outlasts the guard.
    let (r, _) = within(hang_guard(o.duration + o.timeout), move || {
        server(&FakeBackend::new(Mode::Normal), &st, &o, &no_refresh).unwrap()
    });
    stop.store(true, Ordering::Relaxed);
    peer.join().unwrap();
    assert_eq!(r.stopped, "duration", "{r:#?}");
    // Never a client: refused, and the server says why.
    assert!(!r.ok && r.sessions.is_empty(), "{r:#?}");
    assert_eq!(r.rejected_count, 1);
    // Closed when the server stopped at its duration (or, had the trickler
    // come late, at its own timeout).
    let why = &r.rejected[0].reason;
    assert!(
        why == "the connection closed while waiting for its greeting: the server stopped \
                accepting (its clients came or its duration passed)"
            || why.starts_with("no greeting within"),
        "{why}"
    );
}

#[test]
fn a_server_that_trickles_cannot_hold_the_client_past_its_timeout() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let l = std::net::TcpListener::bind("127.0.0.21:28531").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let peer = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let (s, _) = l.accept().unwrap();
            trickle(s, NEVER_ENDS, &stop);
        })
    };
    let st = loopback_state(22);
    let o = RdmaProbeOptions {
        source: Some(ip("127.0.0.22")),
        timeout: Duration::from_secs(1),
        ..quick(ip("127.0.0.22"), 28531)
    };
    // Its bound: --timeout. The trickler outlasts the guard.
    let (r, _) = within(hang_guard(o.timeout), move || {
        client(
            &FakeBackend::new(Mode::Normal),
            &st,
            ip("127.0.0.21"),
            &o,
            &no_refresh,
        )
        .unwrap()
    });
    stop.store(true, Ordering::Relaxed);
    peer.join().unwrap();
    let f = r.failure.unwrap();
    assert_eq!(f.stage, Stage::Exchange);
    assert!(matches!(f.value, FailureValue::Timeout { .. }), "{f:?}");
    assert_eq!(f.cause, Cause::Timeout);
}

// ---- Two processes in lab namespaces ----

#[derive(Serialize, Deserialize)]
struct ChildCfg {
    netns: String,
    sysfs: String,
    source: IpAddr,
    port: u16,
    mode: String,
    out: String,
}

fn child_server(cfg: &str) {
    let c: ChildCfg = serde_json::from_str(cfg).unwrap();
    let mode = match c.mode.as_str() {
        "blackhole" => Mode::BlackHole,
        _ => Mode::Normal,
    };
    let host = Host::netns(&c.netns).unwrap().with_sysfs_root(&c.sysfs);
    let st = host.snapshot().unwrap();
    let o = RdmaProbeOptions {
        clients: 1,
        ..quick(c.source, c.port)
    };
    let rep = NetnsTarget::named(&c.netns)
        .unwrap()
        .run(|| server(&FakeBackend::new(mode), &st, &o, &no_refresh))
        .unwrap();
    std::fs::write(&c.out, serde_json::to_string(&rep).unwrap()).unwrap();
}

struct PairLab {
    lab: Lab,
    host: String,
    peer: String,
    host_sysfs: tempfile::TempDir,
    peer_sysfs: tempfile::TempDir,
}

/// host: r0 = 198.18.0.11; peer: p0 = 198.18.0.100 and p1 = 198.18.0.101, one
/// switch; fake devices fake_r0, fake_p0, fake_p1. The peer has the ARP fix
/// (arp_ignore=1, arp_announce=2) so real ARP gives the right MAC.
fn pair_lab(test: &str) -> PairLab {
    require_namespaces(test);
    let mut lab = Lab::new("rp").unwrap();
    lab.add_switch("sw").unwrap();
    let host = lab.add_namespace("host").unwrap();
    let peer = lab.add_namespace("peer").unwrap();
    lab.connect(&host, "r0", ip("198.18.0.11"), 24).unwrap();
    lab.connect(&peer, "p0", ip("198.18.0.100"), 24).unwrap();
    lab.connect(&peer, "p1", ip("198.18.0.101"), 24).unwrap();
    for (k, v) in [("arp_ignore", "1"), ("arp_announce", "2")] {
        crate::test_support::run(&[
            "ip",
            "netns",
            "exec",
            &peer,
            "sysctl",
            "-qw",
            &format!("net.ipv4.conf.all.{k}={v}"),
        ]);
    }
    let hs = tempfile::tempdir().unwrap();
    let ps = tempfile::tempdir().unwrap();
    write_sysfs_device(
        hs.path(),
        "fake_r0",
        "r0",
        "198.18.0.11".parse().unwrap(),
        "4: ACTIVE",
    );
    write_sysfs_device(
        ps.path(),
        "fake_p0",
        "p0",
        "198.18.0.100".parse().unwrap(),
        "4: ACTIVE",
    );
    write_sysfs_device(
        ps.path(),
        "fake_p1",
        "p1",
        "198.18.0.101".parse().unwrap(),
        "4: ACTIVE",
    );
    PairLab {
        lab,
        host,
        peer,
        host_sysfs: hs,
        peer_sysfs: ps,
    }
}

/// Whether something listens on TCP `port` (IPv4) in the calling thread's
/// namespace.
fn listening(port: u16) -> bool {
    listening_on(None, port)
}

/// Whether something listens on TCP `port` (IPv4), on `addr` when given, in
/// the calling thread's namespace. `/proc/net/tcp` prints a local address as
/// the 32-bit word it is in memory (network order), in hex.
pub(super) fn listening_on(addr: Option<std::net::Ipv4Addr>, port: u16) -> bool {
    let text = std::fs::read_to_string("/proc/thread-self/net/tcp").unwrap_or_default();
    let want = match addr {
        Some(a) => format!("{:08X}:{port:04X}", u32::from_ne_bytes(a.octets())),
        None => format!(":{port:04X}"),
    };
    text.lines().skip(1).any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.len() > 3 && f[3] == "0A" && f[1].ends_with(&want)
    })
}

/// Start the server process in the peer namespace and wait until it listens.
fn start_child(p: &PairLab, mode: &str, out: &std::path::Path) -> std::process::Child {
    let cfg = ChildCfg {
        netns: p.peer.clone(),
        sysfs: p.peer_sysfs.path().display().to_string(),
        source: ip("198.18.0.100"),
        port: crate::probe::rdma::DEFAULT_TCP_PORT,
        mode: mode.into(),
        out: out.display().to_string(),
    };
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "probe::rdma::tests::session::session_over_loopback_or_lab_child",
            "--test-threads=1",
            "--nocapture",
        ])
        .env(CHILD_ENV, serde_json::to_string(&cfg).unwrap())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    let peer = NetnsTarget::named(&p.peer).unwrap();
    while !peer
        .run(|| Ok(listening(crate::probe::rdma::DEFAULT_TCP_PORT)))
        .unwrap()
    {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "the server process never listened"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

fn finish_child(mut c: std::process::Child, out: &std::path::Path) -> RdmaServerReport {
    let t = Instant::now();
    loop {
        if let Some(s) = c.try_wait().unwrap() {
            assert!(s.success(), "server process failed: {s}");
            break;
        }
        if t.elapsed() > Duration::from_secs(30) {
            let _ = c.kill();
            let _ = c.wait();
            panic!("server process did not finish");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap()
}

fn run_client(p: &PairLab, mode: Mode) -> RdmaProbeReport {
    let host = Host::netns(&p.host)
        .unwrap()
        .with_sysfs_root(p.host_sysfs.path());
    let st = host.snapshot().unwrap();
    let o = RdmaProbeOptions {
        source: Some(ip("198.18.0.11")),
        ..quick(ip("198.18.0.11"), crate::probe::rdma::DEFAULT_TCP_PORT)
    };
    let refresh = || host.snapshot().ok();
    NetnsTarget::named(&p.host)
        .unwrap()
        .run(|| {
            client(
                &FakeBackend::new(mode),
                &st,
                ip("198.18.0.100"),
                &o,
                &refresh,
            )
        })
        .unwrap()
}

fn peer_mac(p: &PairLab, ifname: &str) -> String {
    let st = Host::netns(&p.peer).unwrap().snapshot().unwrap();
    st.interface(ifname)
        .unwrap()
        .mac
        .as_ref()
        .unwrap()
        .to_string()
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn lab_probe_between_two_processes_moves_data_both_ways() {
    let p = pair_lab("lab_probe_between_two_processes_moves_data_both_ways");
    let out = p.host_sysfs.path().join("server.json");
    let child = start_child(&p, "normal", &out);
    let c = run_client(&p, Mode::Normal);
    let s = finish_child(child, &out);
    check_success(&c, &s, "fake_p0");
    let peer = c.peer.as_ref().unwrap();
    assert_eq!(peer.netdev.as_deref(), Some("p0"));
    assert_eq!(peer.mac.as_deref(), Some(peer_mac(&p, "p0").as_str()));
    assert_eq!(s.sessions[0].peer.as_ref().unwrap().device, "fake_r0");
    drop(p.lab);
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn lab_probe_through_a_polluted_neighbour_is_arp_flux_until_fixed() {
    let p = pair_lab("lab_probe_through_a_polluted_neighbour_is_arp_flux_until_fixed");
    let wrong = peer_mac(&p, "p1");
    // The host learnt the peer's p0 address with p1's MAC (what ARP flux leaves).
    crate::test_support::run(&[
        "ip",
        "-n",
        &p.host,
        "neigh",
        "replace",
        "198.18.0.100",
        "lladdr",
        &wrong,
        "dev",
        "r0",
        "nud",
        "permanent",
    ]);
    let out = p.host_sysfs.path().join("server.json");
    let child = start_child(&p, "normal", &out);
    // It stops at the transport's retry count (status 12, below), not at
    // its timeout.
    let c = run_client(&p, Mode::Normal);
    let s = finish_child(child, &out);
    assert!(!c.ok);
    let f = c.failure.as_ref().unwrap();
    assert_eq!(f.stage, Stage::SendRecv, "{f:#?}");
    assert!(
        matches!(f.value, FailureValue::Completion { status: 12, .. }),
        "{f:#?}"
    );
    assert_eq!(f.cause, Cause::ArpFlux, "{}", f.message);
    assert_eq!(f.evidence["mac_owner_on_peer"], "p1");
    python_golden(&c, "rdma_probe_arp_flux.json");
    assert!(!s.ok);
    assert_eq!(
        s.sessions[0].failure.as_ref().unwrap().cause,
        Cause::PeerFailed
    );
    // The fix: the right MAC. Now RDMA works.
    let right = peer_mac(&p, "p0");
    crate::test_support::run(&[
        "ip",
        "-n",
        &p.host,
        "neigh",
        "replace",
        "198.18.0.100",
        "lladdr",
        &right,
        "dev",
        "r0",
        "nud",
        "reachable",
    ]);
    let child = start_child(&p, "normal", &out);
    let c = run_client(&p, Mode::Normal);
    let s = finish_child(child, &out);
    check_success(&c, &s, "fake_p0");
    drop(p.lab);
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn lab_probe_to_a_peer_that_drops_roce_is_retry_exceeded() {
    let p = pair_lab("lab_probe_to_a_peer_that_drops_roce_is_retry_exceeded");
    let out = p.host_sysfs.path().join("server.json");
    let child = start_child(&p, "blackhole", &out);
    let c = run_client(&p, Mode::Normal);
    let _ = finish_child(child, &out);
    let f = c.failure.as_ref().unwrap();
    assert!(
        matches!(f.value, FailureValue::Completion { status: 12, .. }),
        "{f:#?}"
    );
    // Real ARP resolved the right MAC: the path, not the neighbour, is at fault.
    assert_eq!(f.cause, Cause::RetryExceeded, "{}", f.message);
    let n = f.evidence["neighbor"].as_str().unwrap();
    assert!(n.contains(&peer_mac(&p, "p0")), "{n}");
    drop(p.lab);
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn lab_probe_without_a_server_is_peer_unreachable() {
    let p = pair_lab("lab_probe_without_a_server_is_peer_unreachable");
    let c = run_client(&p, Mode::Normal);
    python_golden(&c, "rdma_probe_unreachable.json");
    let f = c.failure.as_ref().unwrap();
    assert_eq!(f.stage, Stage::Connect);
    assert_eq!(f.cause, Cause::PeerUnreachable);
    assert!(
        matches!(
            f.value,
            FailureValue::Errno {
                errno: libc::ECONNREFUSED,
                ..
            }
        ),
        "{f:?}"
    );
    drop(p.lab);
}
