//! The responder: on every NIC of the node at once, the IP echo and (with the
//! `verbs` feature, where the NIC backs an RDMA port) a `probe rdma` server,
//! each answering only its run's probes. Bounded twice: it stops when every
//! probe the schedule sends it has come (and said goodbye), and in any case
//! at its deadline (the plan's last round plus a grace) or when asked to stop.
//! It lives in the calling process's threads: nothing outlives the process.

use super::echo::{self, Datagram, EchoSocket, Kind};
use super::result::{AnsweredProbe, MeshLevel, ResponderReport};
use super::schedule::NodeSchedule;
use crate::host::Host;
use crate::model::HostState;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Most answered probes kept in a report.
const MAX_ANSWERED: usize = 4096;
/// Most missing probes named in a report.
const MAX_MISSING: usize = 256;
/// How often the loops look at the stop flag.
const TICK: Duration = Duration::from_millis(50);

/// What the responder needs.
pub(crate) struct Setup<'a> {
    pub schedule: &'a NodeSchedule,
    pub state: &'a HostState,
    #[cfg_attr(not(feature = "verbs"), allow(dead_code))]
    pub host: &'a Host,
    pub port: u16,
    pub token: u64,
    pub plan: u64,
    pub deadline: Instant,
    pub stop: &'a AtomicBool,
    /// Serve RDMA (the verbs feature, RDMA usable here).
    pub rdma: Option<RdmaServe>,
}

/// How the RDMA servers are set up.
#[derive(Debug, Clone)]
#[cfg_attr(not(feature = "verbs"), allow(dead_code))]
pub(crate) struct RdmaServe {
    /// Each session's bound.
    pub timeout: Duration,
    /// The TCP port every NIC's server listens on (on the NIC's address).
    pub port: u16,
    /// The run's token, which the probes prove they hold.
    pub token: String,
    /// The largest RDMA write a client may ask for.
    pub write_size: usize,
    /// The libibverbs the servers load.
    pub verbs: crate::kernel::verbs::VerbsOptions,
}

/// Serve until done, the deadline or a stop; the report.
pub(crate) fn serve(s: &Setup<'_>) -> ResponderReport {
    let t0 = Instant::now();
    let mut rep = ResponderReport {
        levels: vec![MeshLevel::Ip],
        ..ResponderReport::default()
    };
    let names: HashMap<u32, String> = s
        .state
        .interfaces
        .iter()
        .map(|i| (i.index, i.name.clone()))
        .collect();
    // Expected IP probes: (prober address, our NIC).
    let mut expect_ip: BTreeSet<(IpAddr, String)> = BTreeSet::new();
    let mut expect_rdma: BTreeMap<String, usize> = BTreeMap::new();
    for p in &s.schedule.incoming {
        if p.levels.ip {
            expect_ip.insert((p.from.address, p.to.name.clone()));
        }
        if p.levels.rdma {
            *expect_rdma.entry(p.to.name.clone()).or_default() += 1;
        }
    }
    let (rdma_rx, mut rdma_left) = match &s.rdma {
        Some(r) => {
            rep.levels.push(MeshLevel::Rdma);
            match start_rdma(s, r, &expect_rdma, &mut rep) {
                Some((rx, n)) => (Some(rx), n),
                None => (None, 0),
            }
        }
        None => (None, 0),
    };
    let mut socks: Vec<(String, IpAddr, EchoSocket)> = Vec::new();
    for nic in &s.schedule.nics {
        match EchoSocket::bind(nic.address, s.port) {
            Ok(x) => socks.push((nic.name.clone(), nic.address, x)),
            Err(e) => rep
                .errors
                .push(format!("the IP echo on {} could not listen: {e}", nic.name)),
        }
    }
    let mut nl = crate::kernel::netlink::Netlink::open().ok();
    let mut reply_dev: HashMap<(IpAddr, IpAddr), Option<String>> = HashMap::new();
    let mut byes: BTreeSet<(IpAddr, String)> = BTreeSet::new();
    let mut seen: BTreeSet<(IpAddr, String)> = BTreeSet::new();
    let mut rdma_reports: Vec<(String, crate::mesh::result::AnsweredProbe)> = Vec::new();
    let mut buf = vec![0u8; 65536];
    let fds: Vec<i32> = socks.iter().map(|x| x.2.raw()).collect();
    rep.stopped = loop {
        if s.stop.load(Ordering::Relaxed) {
            break "interrupted".to_string();
        }
        let now = Instant::now();
        if now >= s.deadline {
            break "deadline".to_string();
        }
        let ip_done = expect_ip.iter().all(|k| byes.contains(k));
        if ip_done && rdma_left == 0 {
            break "done".to_string();
        }
        if let Some(rx) = &rdma_rx {
            while let Ok((nic, answered)) = rx.try_recv() {
                for a in answered.into_iter().flatten() {
                    rdma_reports.push((nic.clone(), a));
                }
                rdma_left = rdma_left.saturating_sub(1);
            }
        }
        let ready = echo::wait_any(&fds, echo::left(s.deadline).min(TICK));
        for i in ready {
            let (nic, addr, sock) = &socks[i];
            while let Ok(Some(r)) = sock.try_recv(&mut buf) {
                let Some(d) = Datagram::decode(&buf[..r.len]) else {
                    continue;
                };
                if d.token != s.token || d.plan != s.plan {
                    continue;
                }
                let key = (r.from.ip(), nic.clone());
                match d.kind {
                    Kind::Bye => {
                        byes.insert(key);
                    }
                    Kind::Request => {
                        let arrived = names.get(&r.ifindex).cloned().unwrap_or_default();
                        let dev = reply_dev
                            .entry((*addr, r.from.ip()))
                            .or_insert_with(|| {
                                nl.as_mut()
                                    .and_then(|nl| {
                                        nl.route_get(r.from.ip(), Some(*addr), None).ok()
                                    })
                                    .and_then(|d| d.dev)
                            })
                            .clone()
                            .unwrap_or_default();
                        let reply = Datagram {
                            kind: Kind::Reply,
                            arrived_on: arrived.clone(),
                            reply_dev: dev.clone(),
                            ..d
                        };
                        reply.encode(&mut buf[..r.len]);
                        let sent = sock
                            .send_to(&buf[..r.len], SocketAddr::new(r.from.ip(), r.from.port()));
                        if seen.insert(key) && rep.answered.len() < MAX_ANSWERED {
                            rep.answered.push(AnsweredProbe {
                                level: MeshLevel::Ip,
                                from_address: r.from.ip(),
                                to: nic.clone(),
                                arrived_on: Some(arrived),
                                reply_dev: Some(dev),
                                ok: sent.is_ok(),
                                cause: sent
                                    .err()
                                    .map(|e| format!("the reply could not be sent: {e}")),
                            });
                        }
                    }
                    Kind::Reply => {}
                }
            }
        }
    };
    // The RDMA servers that ended within the bound.
    if let Some(rx) = &rdma_rx {
        while let Ok((nic, answered)) = rx.try_recv() {
            if let Some(list) = answered {
                for a in list {
                    rdma_reports.push((nic.clone(), a));
                }
            }
        }
    }
    for (_, a) in rdma_reports {
        if rep.answered.len() < MAX_ANSWERED {
            rep.answered.push(a);
        }
    }
    for (from, nic) in &expect_ip {
        if !seen.contains(&(*from, nic.clone())) && rep.missing.len() < MAX_MISSING {
            let who = s
                .schedule
                .incoming
                .iter()
                .find(|p| p.from.address == *from && &p.to.name == nic)
                .map(|p| format!("{} {}", p.from_host, p.from.name))
                .unwrap_or_else(|| from.to_string());
            rep.missing.push(format!("{who} -> {nic} ip"));
        }
    }
    rep.elapsed_ms = t0.elapsed().as_millis() as u64;
    rep
}

type RdmaRx = std::sync::mpsc::Receiver<(String, Option<Vec<AnsweredProbe>>)>;

/// Start one RDMA server per NIC that expects sessions, each in a thread of
/// its own bounded by the deadline; their sessions come back on the channel.
/// The channel and how many servers started.
#[cfg(feature = "verbs")]
fn start_rdma(
    s: &Setup<'_>,
    r: &RdmaServe,
    expect: &BTreeMap<String, usize>,
    rep: &mut ResponderReport,
) -> Option<(RdmaRx, usize)> {
    use crate::probe::rdma::RdmaProbeOptions;
    let (tx, rx) = std::sync::mpsc::channel();
    let duration = echo::left(s.deadline);
    if duration.is_zero() {
        return Some((rx, 0));
    }
    let mut started = 0;
    for nic in &s.schedule.nics {
        let Some(&clients) = expect.get(&nic.name) else {
            continue;
        };
        if !nic.rdma || clients == 0 {
            continue;
        }
        let token = match token(&r.token) {
            Ok(t) => t,
            Err(e) => {
                rep.errors
                    .push(format!("the RDMA server of {}: {e}", nic.name));
                continue;
            }
        };
        let opts = RdmaProbeOptions {
            source: Some(nic.address),
            tcp_port: r.port,
            timeout: r.timeout,
            clients: clients.min(crate::probe::rdma::MAX_CLIENTS),
            duration,
            write_size: r.write_size.max(1),
            token,
            verbs: r.verbs.clone(),
            ..RdmaProbeOptions::default()
        };
        let state = s.state.clone();
        let host = s.host.clone();
        let tx = tx.clone();
        let name = nic.name.clone();
        // Detached: it ends by itself at `duration`; a stopped responder does
        // not wait for it (the process's end ends it sooner).
        let spawned = std::thread::Builder::new()
            .name(format!("mesh-rdma-{name}"))
            .spawn(move || {
                let refresh = || host.snapshot().ok();
                let out = match crate::probe::rdma::run_server(&state, &opts, &refresh) {
                    Ok(rep) => Some(
                        rep.sessions
                            .iter()
                            .map(|x| AnsweredProbe {
                                level: MeshLevel::Rdma,
                                from_address: x
                                    .peer
                                    .as_ref()
                                    .map(|p| p.address)
                                    .unwrap_or(std::net::Ipv4Addr::UNSPECIFIED.into()),
                                to: name.clone(),
                                arrived_on: None,
                                reply_dev: None,
                                ok: x.ok,
                                cause: x.failure.as_ref().map(|f| f.cause.id().to_string()),
                            })
                            .collect(),
                    ),
                    Err(e) => Some(vec![AnsweredProbe {
                        level: MeshLevel::Rdma,
                        from_address: std::net::Ipv4Addr::UNSPECIFIED.into(),
                        to: name.clone(),
                        arrived_on: None,
                        reply_dev: None,
                        ok: false,
                        cause: Some(format!("the RDMA server could not serve: {e}")),
                    }]),
                };
                let _ = tx.send((name, out));
            });
        match spawned {
            Ok(_) => started += 1,
            Err(e) => rep
                .errors
                .push(format!("starting the RDMA server of {}: {e}", nic.name)),
        }
    }
    Some((rx, started))
}

/// The run's token as `probe rdma`'s shared token (none for a plan made
/// without one).
#[cfg(feature = "verbs")]
pub(crate) fn token(t: &str) -> crate::error::Result<Option<crate::probe::rdma::ProbeToken>> {
    if t.is_empty() {
        return Ok(None);
    }
    crate::probe::rdma::ProbeToken::new(t.as_bytes()).map(Some)
}

#[cfg(not(feature = "verbs"))]
fn start_rdma(
    _s: &Setup<'_>,
    _r: &RdmaServe,
    _expect: &BTreeMap<String, usize>,
    rep: &mut ResponderReport,
) -> Option<(RdmaRx, usize)> {
    rep.levels.retain(|l| *l != MeshLevel::Rdma);
    rep.errors
        .push("RDMA not served: this roce-net was built without the verbs feature".into());
    None
}
