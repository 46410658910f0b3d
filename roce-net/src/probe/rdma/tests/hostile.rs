//! The server and the client against hostile peers, over loopback with the
//! NIC model: port scans and silent connections, garbage, oversized lines,
//! old and foreign protocols, the wrong token, clients asking for more than
//! the server's own limits, peers that trickle after a valid hello, many
//! connections at once. Each end must end within its bound, count only
//! proven clients, register no more than its own options say, and tell an
//! unproven peer nothing that identifies it. (The same peers against the
//! shipped CLI, in namespaces with a stand-in libibverbs: tests/cli_rdma.rs.)

use super::fake::{FakeBackend, Mode};
use super::ip;
use super::session::{listening_on, loopback_state, no_refresh, quick, trickle, within};
use crate::probe::rdma::engine::{client, server};
use crate::probe::rdma::token::{self, Prover};
use crate::probe::rdma::{
    Cause, ProbeToken, RdmaProbeOptions, RdmaProbeReport, RdmaServerReport, Stage,
};
use roce_net_testkit::hang_guard;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A peer speaking (or not) the protocol by hand.
pub(crate) struct Raw {
    s: TcpStream,
    r: BufReader<TcpStream>,
}

impl Raw {
    /// Connect to `addr`, retrying while the server is not listening yet.
    fn connect(addr: &str) -> Raw {
        let a: SocketAddr = addr.parse().unwrap();
        let t = Instant::now();
        let s = loop {
            match TcpStream::connect_timeout(&a, Duration::from_secs(2)) {
                Ok(s) => break s,
                Err(e) if t.elapsed() < Duration::from_secs(5) => {
                    let _ = e;
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => panic!("connecting to {addr}: {e}"),
            }
        };
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        Raw {
            r: BufReader::new(s.try_clone().unwrap()),
            s,
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        let _ = self.s.write_all(bytes);
    }

    fn line(&mut self) -> serde_json::Value {
        let mut l = String::new();
        self.r.read_line(&mut l).unwrap();
        serde_json::from_str(&l).unwrap_or_else(|e| panic!("{e}: {l:?}"))
    }

    /// Everything the server sends until it closes the connection.
    fn rest(&mut self) -> String {
        let mut b = Vec::new();
        let _ = self.r.read_to_end(&mut b);
        String::from_utf8_lossy(&b).into_owned()
    }
}

/// A greeting with a fresh nonce.
fn greeting(nonce: &str) -> Vec<u8> {
    format!(
        "{{\"msg\":\"greeting\",\"proto\":\"roce-net-rdma-probe\",\"version\":2,\"nonce\":\"{nonce}\"}}\n"
    )
    .into_bytes()
}

/// A well-formed client hello from 127.0.0.`n` (the facts a roce-net client
/// would send), with `proof` and `write_size`.
fn hello(n: u8, proof: &str, write_size: usize) -> Vec<u8> {
    let v = serde_json::json!({
        "msg": "hello",
        "endpoint": {
            "host": "mallory", "device": "fake_lo", "port": 1, "gid_index": 3,
            "gid": format!("::ffff:127.0.0.{n}"), "address": format!("127.0.0.{n}"),
            "netdev": "lo", "mac": "00:00:00:00:00:00",
            "nic_macs": {"lo": "00:00:00:00:00:00"}, "active_mtu": 1024,
            "port_state": "ACTIVE", "lid": 0, "qpn": 1, "psn": 2, "rkey": 3,
            "addr": 4096, "len": 65536
        },
        "params": {
            "latency_size": 64, "latency_iterations": 50, "write_size": write_size,
            "write_iterations": 40, "mtu": null, "timeout_ms": 8000
        },
        "proof": proof
    });
    let mut b = serde_json::to_vec(&v).unwrap();
    b.push(b'\n');
    b
}

/// A client from 127.0.0.`n` that greets the server at `addr`, proves the
/// empty token, says hello (asking for a session of `timeout_ms`) and is
/// admitted: the connection.
pub(crate) fn admitted(addr: &str, n: u8, timeout_ms: u64) -> Raw {
    let mut p = Raw::connect(addr);
    let ours = token::nonce().unwrap();
    p.send(&greeting(&ours));
    let ch = p.line();
    let theirs = ch["nonce"].as_str().unwrap().to_string();
    let said = hello(
        n,
        &token::proof(None, Prover::Client, &ours, &theirs),
        16384,
    );
    let mut v: serde_json::Value = serde_json::from_slice(&said).unwrap();
    v["params"]["timeout_ms"] = timeout_ms.into();
    let mut said = serde_json::to_vec(&v).unwrap();
    said.push(b'\n');
    p.send(&said);
    let h = p.line();
    assert_eq!(h["msg"], "hello", "{h}");
    p
}

/// The server's identity as the tests' loopback hosts have it: none of it may
/// reach a peer that did not prove itself.
fn assert_nothing_identifying(n: u8, text: &str) {
    for secret in [
        format!("loop{n}"),
        format!("127.0.0.{n}"),
        "fake_lo".to_string(),
        "nic_macs".to_string(),
        "rkey".to_string(),
        "\"addr\"".to_string(),
        "\"host\"".to_string(),
    ] {
        assert!(!text.contains(&secret), "{secret:?} was sent: {text}");
    }
}

/// The options of a short session (a few round trips and writes: the
/// exchange is under test, not the traffic) on 127.0.0.`n`:`port`.
fn short(n: u8, port: u16) -> RdmaProbeOptions {
    RdmaProbeOptions {
        latency_iterations: 5,
        write_iterations: 4,
        ..quick(ip(&format!("127.0.0.{n}")), port)
    }
}

/// A server on 127.0.0.`n`:`port` with `o`, in a thread, failed when still
/// running after `limit` (a hang guard). Returns once it listens (or has
/// already ended), so a client started next never races its bind: a client
/// refused because the server thread had not run yet failed this file's
/// tests on a loaded machine.
fn serve(
    n: u8,
    o: RdmaProbeOptions,
    limit: Duration,
) -> std::thread::JoinHandle<(RdmaServerReport, Duration, Vec<usize>)> {
    let st = loopback_state(n);
    let port = o.tcp_port;
    // Where it listens: its --listen address (0.0.0.0 for every one) or its
    // source.
    let at = match o.listen {
        Some(std::net::IpAddr::V4(a)) => a,
        _ => std::net::Ipv4Addr::new(127, 0, 0, n),
    };
    let h = std::thread::spawn(move || {
        let b = FakeBackend::new(Mode::Normal);
        let (r, took) = within(limit, move || {
            let r = server(&b, &st, &o, &no_refresh).unwrap();
            let reg = b.registered.lock().unwrap().clone();
            (r, reg)
        });
        (r.0, took, r.1)
    });
    let t = Instant::now();
    while !listening_on(Some(at), port) && !h.is_finished() {
        assert!(
            t.elapsed() < limit,
            "the server on 127.0.0.{n}:{port} did not listen within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    h
}

/// A real client from 127.0.0.`n` to 127.0.0.`to`:`port`.
fn probe(n: u8, to: u8, port: u16, f: impl FnOnce(&mut RdmaProbeOptions)) -> RdmaProbeReport {
    let st = loopback_state(n);
    let mut o = RdmaProbeOptions {
        source: Some(ip(&format!("127.0.0.{n}"))),
        timeout: Duration::from_secs(20),
        ..short(to, port)
    };
    f(&mut o);
    client(
        &FakeBackend::new(Mode::Normal),
        &st,
        ip(&format!("127.0.0.{to}")),
        &o,
        &no_refresh,
    )
    .unwrap()
}

#[test]
fn port_scans_and_silent_connections_do_not_use_up_the_clients() {
    let o = RdmaProbeOptions {
        clients: 1,
        timeout: Duration::from_secs(10),
        duration: Duration::from_secs(20),
        ..short(30, 28540)
    };
    let sv = serve(30, o.clone(), hang_guard(o.duration + o.timeout));
    // A port scan (connect, close), and four connections that never speak.
    drop(Raw::connect("127.0.0.30:28540"));
    let silent: Vec<Raw> = (0..4).map(|_| Raw::connect("127.0.0.30:28540")).collect();
    let c = probe(31, 30, 28540, |_| {});
    let (r, _, _) = sv.join().unwrap();
    drop(silent);
    assert!(c.ok, "{:#?}", c.failure);
    assert!(r.ok, "{r:#?}");
    assert_eq!(r.stopped, "clients");
    assert_eq!(r.sessions.len(), 1);
    assert_eq!(r.rejected_count, 5, "{:#?}", r.rejected);
    // Served as soon as it came, not after the silent ones' timeout (they
    // would be "no greeting within"): the server stopped and closed them.
    let reasons: Vec<&str> = r.rejected.iter().map(|x| x.reason.as_str()).collect();
    assert!(
        reasons
            .iter()
            .all(|x| x.starts_with("the connection closed while waiting for its greeting")),
        "{reasons:#?}"
    );
}

#[test]
fn garbage_oversized_and_foreign_protocols_are_refused_without_a_word_about_the_host() {
    let o = RdmaProbeOptions {
        clients: 1,
        timeout: Duration::from_secs(10),
        duration: Duration::from_secs(20),
        ..short(32, 28541)
    };
    let sv = serve(32, o, Duration::from_secs(30));
    let addr = "127.0.0.32:28541";
    let nonce = token::nonce().unwrap();
    // What each peer sends, and how the server's reason starts.
    let mut oversized = vec![b'x'; 70_000];
    oversized.push(b'\n');
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            b"GET / HTTP/1.0\r\n\r\n".to_vec(),
            "the peer sent something that is not a roce-net probe message",
        ),
        (oversized, "the peer sent a line longer than"),
        // Version 1's first message: the client's facts, no greeting.
        (hello(40, "", 16384), "a client of protocol version 1"),
        (
            greeting(&nonce)
                .iter()
                .map(|b| if *b == b'2' { b'9' } else { *b })
                .collect(),
            "a client of protocol version 9",
        ),
        (
            greeting(&nonce)
                .iter()
                .map(|b| if *b == b'-' { b'_' } else { *b })
                .collect(),
            "not a roce-net probe client",
        ),
        (greeting("short"), "a greeting without a valid nonce"),
        (
            b"{\"msg\":\"ready\"}\n".to_vec(),
            "not a roce-net probe client: its first message was ready",
        ),
    ];
    for (bytes, want) in &cases {
        let mut p = Raw::connect(addr);
        p.send(bytes);
        let said = p.rest();
        assert_nothing_identifying(32, &said);
        assert!(said.contains("\"msg\":\"abort\""), "{said}");
        assert!(said.contains(want), "{want:?} not in {said}");
    }
    let c = probe(33, 32, 28541, |_| {});
    let (r, _, registered) = sv.join().unwrap();
    assert!(c.ok && r.ok, "{:#?} {r:#?}", c.failure);
    assert_eq!(r.sessions.len(), 1);
    assert_eq!(r.rejected_count as usize, cases.len());
    for ((_, want), got) in cases.iter().zip(&r.rejected) {
        assert!(got.reason.contains(want), "{want:?}: {got:?}");
    }
    // Memory was registered for the one client only.
    assert_eq!(registered, [16384]);
}

#[test]
fn nothing_identifying_reaches_a_peer_that_does_not_prove_the_token() {
    let t = ProbeToken::new(b"0123456789abcdef0123456789abcdef".to_vec()).unwrap();
    let o = RdmaProbeOptions {
        clients: 1,
        timeout: Duration::from_secs(10),
        duration: Duration::from_secs(20),
        token: Some(t.clone()),
        ..short(34, 28542)
    };
    let sv = serve(34, o, Duration::from_secs(30));
    let addr = "127.0.0.34:28542";
    // A peer without the token: greets, reads the challenge, sends its facts
    // with a made-up proof (and with none).
    for proof in ["00".repeat(32), String::new()] {
        let mut p = Raw::connect(addr);
        let ours = token::nonce().unwrap();
        p.send(&greeting(&ours));
        let ch = p.line();
        assert_eq!(ch["msg"], "challenge", "{ch}");
        p.send(&hello(41, &proof, 16384));
        let said = p.rest();
        assert_nothing_identifying(34, &format!("{ch}{said}"));
        assert!(
            said.contains("the client did not prove this server's probe token"),
            "{said}"
        );
    }
    // A roce-net client without the token, and with another one: each stops
    // at the server's proof, before saying who it is.
    let none = probe(35, 34, 28542, |_| {});
    let other = probe(35, 34, 28542, |o| {
        o.token = Some(ProbeToken::new(vec![b'z'; 32]).unwrap())
    });
    for (c, why) in [
        (
            &none,
            "the server requires a probe token, this client has none",
        ),
        (
            &other,
            "the server holds another probe token than this client",
        ),
    ] {
        let f = c.failure.as_ref().unwrap();
        assert_eq!(
            (f.stage, f.cause),
            (Stage::Token, Cause::TokenMismatch),
            "{f:#?}"
        );
        assert!(f.message.contains(why), "{}", f.message);
        assert!(c.peer.is_none());
    }
    // With the token: a session.
    let ok = probe(35, 34, 28542, |o| o.token = Some(t.clone()));
    let (r, _, _) = sv.join().unwrap();
    assert!(ok.ok, "{:#?}", ok.failure);
    assert_eq!(r.sessions.len(), 1);
    assert_eq!(r.rejected_count, 4, "{:#?}", r.rejected);
    let reasons: Vec<&str> = r.rejected.iter().map(|x| x.reason.as_str()).collect();
    assert_eq!(
        reasons[2..],
        [
            "the client gave up: the client refused the server's proof of the probe token",
            "the client gave up: the client refused the server's proof of the probe token"
        ]
    );
    // A client with a token against a server without one is refused too.
    let sv = serve(
        36,
        RdmaProbeOptions {
            clients: 1,
            duration: Duration::from_secs(3),
            ..short(36, 28543)
        },
        Duration::from_secs(15),
    );
    let c = probe(37, 36, 28543, |o| o.token = Some(t.clone()));
    let (r, _, _) = sv.join().unwrap();
    let f = c.failure.unwrap();
    assert_eq!(f.cause, Cause::TokenMismatch);
    assert!(f
        .message
        .contains("the server has no probe token, this client has one"));
    assert!(r.sessions.is_empty() && r.rejected_count == 1);
}

#[test]
fn a_client_cannot_make_the_server_register_more_than_its_own_size() {
    let o = RdmaProbeOptions {
        clients: 2,
        timeout: Duration::from_secs(10),
        duration: Duration::from_secs(20),
        ..short(38, 28544)
    };
    let sv = serve(38, o, Duration::from_secs(30));
    // 1 MiB writes from a server whose --size is 16 KiB: refused, nothing opened.
    let big = probe(39, 38, 28544, |o| o.write_size = 1 << 20);
    let f = big.failure.as_ref().unwrap();
    assert_eq!(f.cause, Cause::PeerFailed, "{f:#?}");
    assert!(
        f.message
            .contains("1048576-byte writes; this server serves at most 16384 (its --size)"),
        "{}",
        f.message
    );
    let bigger_ping = probe(39, 38, 28544, |o| o.latency_size = 4096);
    assert!(!bigger_ping.ok);
    // Smaller writes than the server's: it registers what they need, no more.
    let small = probe(39, 38, 28544, |o| o.write_size = 8192);
    let fine = probe(39, 38, 28544, |_| {});
    let (r, _, registered) = sv.join().unwrap();
    assert!(
        small.ok && fine.ok,
        "{:#?} {:#?}",
        small.failure,
        fine.failure
    );
    assert_eq!(r.sessions.len(), 2);
    assert_eq!(r.rejected_count, 2);
    let mut reg = registered.clone();
    reg.sort();
    assert_eq!(reg, [8192, 16384]);
}

#[test]
fn a_client_that_trickles_after_a_valid_hello_ends_at_the_servers_timeout() {
    let o = RdmaProbeOptions {
        clients: 1,
        timeout: Duration::from_secs(2),
        duration: Duration::from_millis(500),
        ..short(42, 28545)
    };
    // The trickler outlasts the guard: a server that waited for it would hit it.
    let sv = serve(42, o.clone(), hang_guard(o.timeout + o.duration));
    let mut p = Raw::connect("127.0.0.42:28545");
    let ours = token::nonce().unwrap();
    p.send(&greeting(&ours));
    let ch = p.line();
    let theirs = ch["nonce"].as_str().unwrap().to_string();
    p.send(&hello(
        43,
        &token::proof(None, Prover::Client, &ours, &theirs),
        16384,
    ));
    // Admitted: the server's facts, then it waits for our "ready", which
    // comes a byte at a time.
    let h = p.line();
    assert_eq!(h["msg"], "hello", "{h}");
    assert_eq!(h["endpoint"]["host"], "loop42");
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = p.s.try_clone().unwrap();
    let st = stop.clone();
    let tr = std::thread::spawn(move || trickle(s2, b"{\"msg\":\"rea", &st));
    let (r, _, _) = sv.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    tr.join().unwrap();
    // Its one client came; its session ended at its --timeout after it was
    // accepted, past the --duration.
    assert_eq!(r.stopped, "clients", "{r:#?}");
    let f = r.sessions[0].failure.as_ref().unwrap();
    assert_eq!(f.cause, Cause::Timeout, "{f:#?}");
}

#[test]
fn more_connections_than_the_server_holds_wait_and_it_still_ends_in_time() {
    let o = RdmaProbeOptions {
        clients: 1,
        timeout: Duration::from_secs(4),
        duration: Duration::from_secs(8),
        ..short(44, 28546)
    };
    let sv = serve(44, o.clone(), hang_guard(o.duration + o.timeout));
    let silent: Vec<Raw> = (0..crate::probe::rdma::MAX_PENDING_CONNECTIONS + 8)
        .map(|_| Raw::connect("127.0.0.44:28546"))
        .collect();
    // Behind them in the backlog: served once the first ones' timeout ran out.
    let c = probe(45, 44, 28546, |_| {});
    let (r, _, _) = sv.join().unwrap();
    drop(silent);
    assert!(c.ok, "{:#?}", c.failure);
    assert_eq!(r.stopped, "clients", "{r:#?}");
    assert_eq!(r.sessions.len(), 1);
    assert!(r.rejected_count >= crate::probe::rdma::MAX_PENDING_CONNECTIONS as u64);
}

#[test]
fn the_server_listens_on_its_source_address_unless_told_otherwise() {
    // Bound to 127.0.0.46 only: 127.0.0.47 (another address of the same
    // namespace) is refused.
    let only = serve(
        46,
        RdmaProbeOptions {
            duration: Duration::from_millis(800),
            ..short(46, 28547)
        },
        Duration::from_secs(10),
    );
    std::thread::sleep(Duration::from_millis(200));
    let e = TcpStream::connect("127.0.0.47:28547").unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused);
    let (r, _, _) = only.join().unwrap();
    assert_eq!(r.listen, "127.0.0.46:28547");
    // --listen 0.0.0.0: every address.
    let any = serve(
        46,
        RdmaProbeOptions {
            duration: Duration::from_millis(800),
            listen: Some(ip("0.0.0.0")),
            ..short(46, 28548)
        },
        Duration::from_secs(10),
    );
    drop(Raw::connect("127.0.0.47:28548"));
    let (r, _, _) = any.join().unwrap();
    assert_eq!(r.listen, "0.0.0.0:28548");
    assert_eq!(r.rejected_count, 1);
}
