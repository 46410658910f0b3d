//! The shipped CLI's `probe rdma`, both ends, against hostile peers: two lab
//! namespaces joined by a veth pair named as the `connectx8` fixture's netdevs
//! (`ens1f0np0` 198.18.0.11 = mlx5_0 on the server's side, `ens2f0np0`
//! 198.18.0.12 = mlx5_1 on the peer's), the RDMA devices read from that
//! fixture (`--sysfs-root`) and opened through a stand-in libibverbs
//! (`--libibverbs`, `tests/fixtures/rdma/libibverbs-standin.c`, compiled here:
//! every verb succeeds, nothing ever completes). The hostile peers are this
//! test speaking TCP from the peer's namespace: port scans, silent and
//! trickling connections, garbage, oversized lines, the protocol's version 1,
//! the wrong token, forged text; and the real CLI as a client with and without
//! the token. Needs root (namespaces), `cc` and libibverbs-dev (`verbs.h`).

use super::{code, stderr};
use roce_net::NetnsTarget;
use roce_net_testkit::{hang_guard, require_namespaces, Netns};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

const SERVER: &str = "198.18.0.11";
const PEER: &str = "198.18.0.12";
const PORT: u16 = 18520;

/// The stand-in libibverbs, compiled once per test run.
pub(super) fn standin() -> &'static Path {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("roce-net-standin-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let so = dir.join("libibverbs-standin.so");
        let src = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/rdma/libibverbs-standin.c"
        );
        let out = Command::new("cc")
            .args(["-shared", "-fPIC", "-Wall", "-Werror", "-o"])
            .arg(&so)
            .arg(src)
            .output()
            .expect("running cc (install gcc)");
        assert!(
            out.status.success(),
            "compiling the stand-in libibverbs failed (install libibverbs-dev): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        so
    })
}

pub(super) fn fixture() -> String {
    format!(
        "{}/roce-net/tests/fixtures/sysfs/connectx8",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// The server's namespace and the peer's, joined by a veth pair.
pub(super) struct Pair {
    pub(super) server: Netns,
    pub(super) peer: Netns,
    pub(super) dir: tempfile::TempDir,
}

pub(super) fn pair(test: &str, tag: &str) -> Pair {
    require_namespaces(test);
    let server = Netns::new(&format!("{tag}s"));
    let peer = Netns::new(&format!("{tag}p"));
    roce_net_testkit::run(&[
        "ip",
        "link",
        "add",
        "ens1f0np0",
        "netns",
        &server.name,
        "type",
        "veth",
        "peer",
        "name",
        "ens2f0np0",
        "netns",
        &peer.name,
    ]);
    server.ip(&["addr", "add", "198.18.0.11/24", "dev", "ens1f0np0"]);
    peer.ip(&["addr", "add", "198.18.0.12/24", "dev", "ens2f0np0"]);
    for (ns, dev) in [(&server, "ens1f0np0"), (&peer, "ens2f0np0")] {
        ns.ip(&["link", "set", dev, "up"]);
        ns.ip(&["link", "set", "lo", "up"]);
    }
    Pair {
        server,
        peer,
        dir: tempfile::tempdir().unwrap(),
    }
}

/// `roce-net --json --sysfs-root connectx8 probe rdma ARGS --libibverbs
/// <stand-in>` in namespace `ns`, with `env`.
fn cli(ns: &Netns, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", &ns.name, env!("CARGO_BIN_EXE_roce-net")])
        .args(["--sysfs-root", &fixture(), "probe", "rdma"])
        .args(args)
        .arg("--libibverbs")
        .arg(standin())
        .env_remove("ROCE_NET_PROBE_TOKEN");
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

/// Whether something listens on TCP `port` in the calling thread's namespace.
fn listening(port: u16) -> bool {
    let text = std::fs::read_to_string("/proc/thread-self/net/tcp").unwrap_or_default();
    text.lines().skip(1).any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.len() > 3 && f[3] == "0A" && f[1].ends_with(&format!(":{port:04X}"))
    })
}

/// A running `probe rdma --server`.
struct Server {
    child: Child,
    started: Instant,
}

/// `probe rdma --json --server --source 198.18.0.11 ARGS`, listening.
fn serve(p: &Pair, args: &[&str], env: &[(&str, &str)]) -> Server {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    serve_as(p, &all, env)
}

/// `probe rdma --server --source 198.18.0.11 ARGS`, listening.
fn serve_as(p: &Pair, args: &[&str], env: &[(&str, &str)]) -> Server {
    let mut all = vec!["--server", "--source", SERVER];
    all.extend_from_slice(args);
    let mut c = cli(&p.server, &all, env);
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let started = Instant::now();
    let child = c.spawn().unwrap();
    let ns = NetnsTarget::named(&p.server.name).unwrap();
    while !ns.run(|| Ok(listening(PORT))).unwrap() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the server never listened"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Server { child, started }
}

impl Server {
    /// Its report, exit code and run time; fails when it is still running
    /// after `limit`, a hang guard (and kills it).
    fn finish(mut self, limit: Duration) -> (serde_json::Value, i32, Duration, String) {
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                let took = self.started.elapsed();
                let mut out = String::new();
                let mut err = String::new();
                self.child
                    .stdout
                    .take()
                    .unwrap()
                    .read_to_string(&mut out)
                    .unwrap();
                self.child
                    .stderr
                    .take()
                    .unwrap()
                    .read_to_string(&mut err)
                    .unwrap();
                let v = serde_json::from_str(&out).unwrap_or(serde_json::Value::String(out));
                return (v, s.code().unwrap_or(-1), took, err);
            }
            if self.started.elapsed() > limit {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("the server still ran after {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The real CLI as a client from the peer's namespace: its report, exit code
/// and run time (killed and failed after `limit`).
fn probe(
    p: &Pair,
    to: &str,
    args: &[&str],
    env: &[(&str, &str)],
    limit: Duration,
) -> (serde_json::Value, i32, Duration) {
    probe_from(p, PEER, to, args, env, limit)
}

/// [`probe`] with `--source source`.
fn probe_from(
    p: &Pair,
    source: &str,
    to: &str,
    args: &[&str],
    env: &[(&str, &str)],
    limit: Duration,
) -> (serde_json::Value, i32, Duration) {
    let mut all = vec!["--source", source, to];
    all.extend_from_slice(args);
    let mut c = cli(&p.peer, &all, env);
    c.arg("--json");
    let t = Instant::now();
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            let mut out = String::new();
            child
                .stdout
                .take()
                .unwrap()
                .read_to_string(&mut out)
                .unwrap();
            let v = serde_json::from_str(&out).unwrap_or(serde_json::Value::String(out));
            return (v, s.code().unwrap_or(-1), t.elapsed());
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the client still ran after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A TCP connection from the peer's namespace to `addr`.
fn connect(p: &Pair, addr: &str) -> std::io::Result<TcpStream> {
    let a: SocketAddr = addr.parse().unwrap();
    NetnsTarget::named(&p.peer.name)
        .unwrap()
        .run(|| Ok(TcpStream::connect_timeout(&a, Duration::from_secs(3))))
        .unwrap()
}

/// Send `bytes` to the server, then everything it says until it closes.
fn say(p: &Pair, bytes: &[u8]) -> String {
    let mut s = connect(p, &format!("{SERVER}:{PORT}")).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = s.write_all(bytes);
    let mut b = Vec::new();
    let _ = s.read_to_end(&mut b);
    String::from_utf8_lossy(&b).into_owned()
}

fn greeting(nonce: &str) -> Vec<u8> {
    format!(
        "{{\"msg\":\"greeting\",\"proto\":\"roce-net-rdma-probe\",\"version\":2,\"nonce\":\"{nonce}\"}}\n"
    )
    .into_bytes()
}

/// A client's facts as a roce-net client sends them, `host` its host name.
fn hello(host: &str, proof: &str) -> Vec<u8> {
    let v = serde_json::json!({
        "msg": "hello",
        "proto": "roce-net-rdma-probe",
        "version": 1,
        "endpoint": {
            "host": host, "device": "mlx5_1", "port": 1, "gid_index": 3,
            "gid": "::ffff:198.18.0.12", "address": PEER, "netdev": "ens2f0np0",
            "mac": "02:00:00:00:00:12", "nic_macs": {"ens2f0np0": "02:00:00:00:00:12"},
            "active_mtu": 1024, "port_state": "ACTIVE", "lid": 0, "qpn": 1, "psn": 2,
            "rkey": 3, "addr": 4096, "len": 65536
        },
        "params": {
            "latency_size": 64, "latency_iterations": 10, "write_size": 4096,
            "write_iterations": 10, "mtu": null, "timeout_ms": 20000
        },
        "proof": proof
    });
    let mut b = serde_json::to_vec(&v).unwrap();
    b.push(b'\n');
    b
}

/// A connection from the peer's namespace that greets, answers the server's
/// challenge with the proof of the empty token and the facts of a client
/// named `host`, and is admitted: the stream, and the server's hello.
fn admitted(p: &Pair, host: &str) -> (TcpStream, String) {
    let mut s = connect(p, &format!("{SERVER}:{PORT}")).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let ours = "00112233445566778899aabbccddeeff";
    s.write_all(&greeting(ours)).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let ch: serde_json::Value = serde_json::from_str(&line).unwrap();
    let theirs = ch["nonce"].as_str().unwrap();
    s.write_all(&hello(host, &empty_proof(ours, theirs)))
        .unwrap();
    line.clear();
    r.read_line(&mut line).unwrap();
    assert!(line.contains("\"msg\":\"hello\""), "not admitted: {line}");
    (s, line)
}

/// Nothing a stranger was told identifies the server: no facts, no names.
fn assert_nothing_identifying(text: &str) {
    let host = roce_net::hostname();
    for secret in [
        "\"endpoint\"",
        "\"host\"",
        "nic_macs",
        "rkey",
        "mlx5_0",
        "ens1f0np0",
        SERVER,
    ] {
        assert!(
            !text.contains(secret),
            "{secret:?} was sent to a stranger: {text}"
        );
    }
    if host.len() >= 4 {
        assert!(
            !text.contains(&host),
            "the host name was sent to a stranger: {text}"
        );
    }
}

/// Write `bytes` then `x`s, one byte every 50 ms, until `stop` or 120 s:
/// past the hang guard of the tests that use it, so an end that waited for
/// the trickler instead of its own bound hits the guard.
fn trickle(mut s: TcpStream, bytes: Vec<u8>, stop: Arc<AtomicBool>) {
    let t = Instant::now();
    let mut it = bytes.into_iter().chain(std::iter::repeat(b'x'));
    while !stop.load(Ordering::Relaxed) && t.elapsed() < Duration::from_secs(120) {
        if s.write_all(&[it.next().unwrap_or(b'x')]).is_err() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn failure(report: &serde_json::Value) -> (&str, &str, &str) {
    let f = &report["failure"];
    (
        f["stage"].as_str().unwrap_or_default(),
        f["cause"].as_str().unwrap_or_default(),
        f["message"].as_str().unwrap_or_default(),
    )
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn the_server_counts_only_proven_clients_and_tells_strangers_nothing() {
    let p = pair(
        "the_server_counts_only_proven_clients_and_tells_strangers_nothing",
        "rdh1",
    );
    let srv = serve(
        &p,
        &["--clients", "1", "--timeout", "4", "--duration", "20"],
        &[],
    );
    // A port scan; garbage; a line over the protocol's 64 KiB; a client of
    // protocol version 1 (its facts first); a greeting then a made-up proof.
    drop(connect(&p, &format!("{SERVER}:{PORT}")).unwrap());
    let mut big = vec![b'x'; 70_000];
    big.push(b'\n');
    let mut lied = greeting("00112233445566778899aabbccddeeff");
    lied.extend(hello("mallory", &"00".repeat(32)));
    let said: Vec<(String, &str)> = vec![
        (
            say(&p, b"GET / HTTP/1.0\r\n\r\n"),
            "not a roce-net probe message",
        ),
        (say(&p, &big), "longer than 65536 bytes"),
        (
            say(&p, &hello("mallory", "")),
            "a client of protocol version 1",
        ),
        (say(&p, &lied), "did not prove the empty token"),
    ];
    for (text, why) in &said {
        assert_nothing_identifying(text);
        assert!(text.contains(why), "{why:?} not in {text}");
    }
    // Three connections that never speak, open while the real client comes.
    let silent: Vec<TcpStream> = (0..3)
        .map(|_| connect(&p, &format!("{SERVER}:{PORT}")).unwrap())
        .collect();
    let (c, rc, _) = probe(
        &p,
        SERVER,
        &["--timeout", "3"],
        &[],
        Duration::from_secs(30),
    );
    // Admitted: it learnt the server's facts, and waited for a completion the
    // stand-in never gives.
    assert_eq!(rc, 6, "{c}");
    assert_eq!(c["peer"]["device"], "mlx5_0", "{c}");
    assert_eq!(failure(&c).0, "send_recv", "{c}");
    // A hang guard over its bound, --duration 20 + --timeout 4.
    let (r, code, _, err) = srv.finish(hang_guard(Duration::from_secs(24)));
    drop(silent);
    assert_eq!(code, 6, "{r} {err}");
    assert_eq!(r["stopped"], "clients", "{r}");
    assert_eq!(r["sessions"].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(r["sessions"][0]["peer"]["device"], "mlx5_1", "{r}");
    // The scan, the four strangers and the three silent ones; the silent
    // ones closed when the server stopped for its client, not at their
    // timeout ("no greeting within") or its duration.
    assert_eq!(r["rejected_count"], 8, "{r}");
    let reasons: Vec<&str> = r["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["reason"].as_str().unwrap_or_default())
        .collect();
    let stopped = reasons
        .iter()
        .filter(|x| {
            x.ends_with("the server stopped accepting (its clients came or its duration passed)")
        })
        .count();
    assert!(stopped >= 3, "{reasons:#?}");
    assert!(
        !reasons.iter().any(|x| x.starts_with("no greeting within")),
        "{reasons:#?}"
    );
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn with_a_token_the_server_serves_only_clients_that_prove_it() {
    let p = pair(
        "with_a_token_the_server_serves_only_clients_that_prove_it",
        "rdh2",
    );
    let token = "3f1b9c0d2e4a5b6c7d8e9f0a1b2c3d4e";
    let file = p.dir.path().join("probe.token");
    std::fs::write(&file, format!("{token}\n")).unwrap();
    let srv = serve(
        &p,
        &[
            "--clients",
            "1",
            "--timeout",
            "4",
            "--duration",
            "25",
            "--token-file",
            file.to_str().unwrap(),
        ],
        &[],
    );
    let text = say(&p, &{
        let mut b = greeting("00112233445566778899aabbccddeeff");
        b.extend(hello("mallory", &"ab".repeat(32)));
        b
    });
    assert_nothing_identifying(&text);
    assert!(
        text.contains("did not prove this server's probe token"),
        "{text}"
    );
    // Without a token, and with another one: refused before they say who they are.
    let other = [("ROCE_NET_PROBE_TOKEN", "another-token-of-32-bytes-000000")];
    for (env, why) in [
        (
            &[][..],
            "the server requires a probe token, this client has none",
        ),
        (
            &other[..],
            "the server holds another probe token than this client",
        ),
    ] {
        let (c, rc, _) = probe(
            &p,
            SERVER,
            &["--timeout", "3"],
            env,
            Duration::from_secs(30),
        );
        assert_eq!(rc, 6, "{c}");
        let (stage, cause, message) = failure(&c);
        assert_eq!((stage, cause), ("token", "token-mismatch"), "{c}");
        assert!(message.contains(why), "{message}");
        assert!(c["peer"].is_null(), "{c}");
    }
    // The same token, from the environment: admitted.
    let (c, rc, _) = probe(
        &p,
        SERVER,
        &["--timeout", "3"],
        &[("ROCE_NET_PROBE_TOKEN", token)],
        Duration::from_secs(30),
    );
    assert_eq!(rc, 6, "{c}");
    assert_eq!(failure(&c).0, "send_recv", "{c}");
    assert_eq!(c["peer"]["device"], "mlx5_0");
    let (r, _, _, err) = srv.finish(Duration::from_secs(45));
    assert_eq!(r["sessions"].as_array().unwrap().len(), 1, "{r} {err}");
    assert_eq!(r["rejected_count"], 3, "{r}");
    let reasons: Vec<&str> = r["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["reason"].as_str().unwrap())
        .collect();
    assert_eq!(
        reasons[1..],
        [
            "the client gave up: the client refused the server's proof of the probe token",
            "the client gave up: the client refused the server's proof of the probe token"
        ],
        "{reasons:?}"
    );
    // A token shorter than 16 bytes is refused before anything runs.
    std::fs::write(&file, "short\n").unwrap();
    let o = cli(
        &p.peer,
        &[SERVER, "--token-file", file.to_str().unwrap()],
        &[],
    )
    .output()
    .unwrap();
    assert_eq!(code(&o), 65, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("a probe token of 5 bytes"),
        "{}",
        stderr(&o)
    );
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn the_server_listens_on_its_source_and_registers_no_more_than_its_size() {
    let p = pair(
        "the_server_listens_on_its_source_and_registers_no_more_than_its_size",
        "rdh3",
    );
    // Another address of the server's namespace, on the same NIC.
    p.server
        .ip(&["addr", "add", "198.18.0.200/24", "dev", "ens1f0np0"]);
    let log = p.dir.path().join("registered");
    let log_s = log.to_str().unwrap().to_string();
    let srv = serve(
        &p,
        &["--clients", "1", "--timeout", "4", "--duration", "25"],
        &[("ROCE_NET_STANDIN_LOG", &log_s)],
    );
    let e = connect(&p, "198.18.0.200:18520").unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused);
    // 1 MiB writes against the server's 64 KiB --size: refused, nothing registered.
    let (c, rc, _) = probe(
        &p,
        SERVER,
        &["--timeout", "3", "--size", "1048576"],
        &[],
        Duration::from_secs(30),
    );
    assert_eq!(rc, 6, "{c}");
    let (_, cause, message) = failure(&c);
    assert_eq!(cause, "peer-failed", "{c}");
    assert!(
        message.contains("1048576-byte writes; this server serves at most 65536 (its --size)"),
        "{message}"
    );
    let (c, _, _) = probe(
        &p,
        SERVER,
        &["--timeout", "3"],
        &[],
        Duration::from_secs(30),
    );
    assert_eq!(failure(&c).0, "send_recv", "{c}");
    let (r, _, _, err) = srv.finish(Duration::from_secs(45));
    assert_eq!(r["listen"], "198.18.0.11:18520", "{r} {err}");
    assert_eq!(r["sessions"].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(r["rejected_count"], 1, "{r}");
    // One client, one buffer of the server's own size.
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "reg_mr 65536\n");
    // --listen 0.0.0.0: every address.
    let srv = serve(&p, &["--duration", "2", "--listen", "0.0.0.0"], &[]);
    drop(connect(&p, "198.18.0.200:18520").unwrap());
    let (r, _, _, _) = srv.finish(Duration::from_secs(20));
    assert_eq!(r["listen"], "0.0.0.0:18520", "{r}");
    assert_eq!(r["rejected_count"], 1, "{r}");
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn both_ends_end_within_their_bounds_against_peers_that_trickle() {
    let p = pair(
        "both_ends_end_within_their_bounds_against_peers_that_trickle",
        "rdh4",
    );
    let stop = Arc::new(AtomicBool::new(false));
    // The server against two tricklers: one that never finishes its greeting,
    // one admitted (its greeting and hello, by hand) that trickles its "ready".
    let srv = serve(
        &p,
        &["--clients", "2", "--timeout", "3", "--duration", "4"],
        &[],
    );
    let t1 = {
        let s = connect(&p, &format!("{SERVER}:{PORT}")).unwrap();
        let stop = stop.clone();
        std::thread::spawn(move || trickle(s, b"{\"msg\":\"greeting\",".to_vec(), stop))
    };
    let (s, _) = admitted(&p, "trickler");
    let t2 = {
        let stop = stop.clone();
        std::thread::spawn(move || trickle(s, b"{\"msg\":\"rea".to_vec(), stop))
    };
    // A hang guard over its bound, --duration 4 + --timeout 3: the tricklers
    // outlast it.
    let (rep, _, took, err) = srv.finish(hang_guard(Duration::from_secs(7)));
    eprintln!("probe rdma --server --duration 4 --timeout 3 against two tricklers ran {took:?}");
    assert_eq!(rep["stopped"], "duration", "{rep} {err}");
    assert_eq!(rep["sessions"][0]["failure"]["cause"], "timeout", "{rep}");
    assert_eq!(rep["rejected_count"], 1, "{rep}");
    // The client against a server that trickles its challenge.
    let l = NetnsTarget::named(&p.server.name)
        .unwrap()
        .run(|| Ok(TcpListener::bind(format!("{SERVER}:{PORT}")).unwrap()))
        .unwrap();
    let t3 = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            if let Ok((s, _)) = l.accept() {
                trickle(s, b"{\"msg\":\"challenge\",".to_vec(), stop);
            }
        })
    };
    // A hang guard over its bound, --timeout 2: the trickler outlasts it.
    let (c, rc, took) = probe(
        &p,
        SERVER,
        &["--timeout", "2"],
        &[],
        hang_guard(Duration::from_secs(2)),
    );
    eprintln!("probe rdma --timeout 2 against a trickling server ran {took:?}");
    stop.store(true, Ordering::Relaxed);
    for t in [t1, t2, t3] {
        t.join().unwrap();
    }
    assert_eq!(rc, 6, "{c}");
    assert_eq!(failure(&c).1, "timeout", "{c}");
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn the_clients_exchange_leaves_from_its_source_not_by_the_main_tables_nic() {
    let p = pair(
        "the_clients_exchange_leaves_from_its_source_not_by_the_main_tables_nic",
        "rdh6",
    );
    // A second link: the peer's ens3f0np0 (mlx5_2, 198.18.0.13/32) to the
    // server's rntb. The peer's main table reaches the server by ens2f0np0
    // only; 198.18.0.13 has a per-NIC source rule to its own NIC, as apply
    // makes it. The server answers 198.18.0.13 by rntb.
    roce_net_testkit::run(&[
        "ip",
        "link",
        "add",
        "rntb",
        "netns",
        &p.server.name,
        "type",
        "veth",
        "peer",
        "name",
        "ens3f0np0",
        "netns",
        &p.peer.name,
    ]);
    p.server.ip(&["link", "set", "rntb", "up"]);
    p.server.ip(&[
        "route",
        "add",
        "198.18.0.13/32",
        "dev",
        "rntb",
        "src",
        SERVER,
    ]);
    p.peer
        .ip(&["addr", "add", "198.18.0.13/32", "dev", "ens3f0np0"]);
    p.peer.ip(&["link", "set", "ens3f0np0", "up"]);
    p.peer.ip(&[
        "route",
        "add",
        "198.18.0.0/24",
        "dev",
        "ens3f0np0",
        "table",
        "1002",
    ]);
    p.peer.ip(&[
        "rule",
        "add",
        "from",
        "198.18.0.13",
        "table",
        "1002",
        "pref",
        "100",
    ]);
    let srv = serve(
        &p,
        &["--clients", "2", "--timeout", "4", "--duration", "40"],
        &[],
    );
    // Both links up: a connect that is not bound to --source would leave
    // from 198.18.0.12, the main table's choice. Then the main table's NIC
    // down: a connect not bound would find no route at all.
    for down in [false, true] {
        if down {
            p.peer.ip(&["link", "set", "ens2f0np0", "down"]);
        }
        let (c, rc, _) = probe_from(
            &p,
            "198.18.0.13",
            SERVER,
            &["--timeout", "3"],
            &[],
            Duration::from_secs(30),
        );
        // Admitted (the stand-in never completes the RDMA that follows).
        assert_eq!(rc, 6, "ens2f0np0 down: {down}: {c}");
        assert_eq!(failure(&c).0, "send_recv", "ens2f0np0 down: {down}: {c}");
        assert_eq!(c["peer"]["device"], "mlx5_0", "{c}");
    }
    let (r, _, _, err) = srv.finish(Duration::from_secs(60));
    let sessions = r["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2, "{r} {err}");
    for s in sessions {
        let tcp = s["peer_tcp"].as_str().unwrap_or_default();
        assert!(tcp.starts_with("198.18.0.13:"), "{tcp} in {r}");
        assert_eq!(s["peer"]["device"], "mlx5_2", "{r}");
    }
}

/// The proof of the empty token (a server without one), as a client makes it:
/// HMAC-SHA256 with an empty key over the client's label and both nonces
/// (`probe/rdma/token.rs`; its tests check the same against Python's `hmac`).
fn empty_proof(client: &str, server: &str) -> String {
    use hmac::Mac;
    let mut m = <hmac::Hmac<sha2::Sha256> as Mac>::new_from_slice(b"").unwrap();
    m.update(b"roce-net-rdma-probe 2 client\0");
    m.update(client.as_bytes());
    m.update(b"\0");
    m.update(server.as_bytes());
    m.finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn a_peers_text_cannot_forge_a_line_of_the_servers_report() {
    let p = pair(
        "a_peers_text_cannot_forge_a_line_of_the_servers_report",
        "rdh5",
    );
    let forged = "evil\nOK vm mlx5_9:1 gid 3 (198.18.0.99) x mtu 4096 (1 ms)\n  RDMA write to peer 65536 B x 1000: 99.00 Gb/s, data verified\u{202e}";
    for json in [false, true] {
        let mut args = vec!["--clients", "1", "--timeout", "2", "--duration", "10"];
        if json {
            args.push("--json");
        }
        // Once as text (what people read), once as JSON. Admitted with a
        // forged host name, then silent: the session fails and the report
        // names the peer.
        let srv = serve_as(&p, &args, &[]);
        let (s, _) = admitted(&p, forged);
        let (out, _, _, err) = srv.finish(Duration::from_secs(30));
        drop(s);
        let text = match &out {
            serde_json::Value::String(t) => t.clone(),
            v => v.to_string(),
        };
        assert!(!text.contains('\u{202e}'), "{text}");
        if json {
            assert_eq!(
                out["sessions"][0]["peer"]["host"],
                "evil\\nOK vm mlx5_9:1 gid 3 (198.18.0.99) x mtu 4096 (1 ms)\\n  RDMA write to peer 65536 B x 1000: 99.00 Gb/s, data verified\\u{202e}",
                "{out} {err}"
            );
        } else {
            assert!(text.contains("evil\\nOK vm mlx5_9"), "{text} {err}");
            assert!(
                text.lines()
                    .all(|l| (!l.starts_with("OK") && !l.contains("data verified"))
                        || l.contains("evil\\n")),
                "a forged line: {text}"
            );
        }
    }
}
