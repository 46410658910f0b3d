//! The server end: accept connections until enough clients were served or the
//! duration passed; each session echoes the latency ping-pong and makes the
//! writes both ways.
//!
//! A connection counts as a client only once its hello is valid: it greeted
//! in this protocol and version, proved the token, and asked for parameters
//! within this server's own limits (`write_size`, `latency_size`). Until then
//! it is told nothing that identifies this host, holds no registered memory
//! and no client slot, and has at most `timeout`; at most
//! [`MAX_PENDING_CONNECTIONS`] such connections are open at once (more wait in
//! the kernel's backlog). When the server stops (its clients came, or its
//! duration passed) the connections still unproven are closed. So a server
//! ends within `duration` + `timeout` whatever its peers do, and registers at
//! most `clients` buffers of its own size.

use super::super::select::select_rdma_port;
use super::super::select::RdmaSelection;
use super::super::token::{self, Prover};
use super::super::wire::{Channel, Endpoint, Msg, Params, WireError, PROTO, VERSION};
use super::super::{
    Backend, FailureValue, ProbeRole, RdmaProbeOptions, RdmaProbeReport, RdmaServerReport,
    RejectedConnection, Stage, MAX_PENDING_CONNECTIONS, MAX_REJECTED_LISTED,
};
use super::completions::{wait, Qp, Until};
use super::transfer::{check_peer_writes, send_writes};
use super::{
    abort, connect_and_ready, open_queue, recv_msg, summary, Agreed, Fail, Refresh, Session,
    WR_RECV, WR_SEND,
};
use crate::error::{Error, ErrorKind, Result};
use crate::model::HostState;
use std::collections::{HashMap, HashSet};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The server end: accept clients until `opts.clients` sessions ran or
/// `opts.duration` passed.
pub(crate) fn server(
    b: &dyn Backend,
    state: &HostState,
    opts: &RdmaProbeOptions,
    refresh: Refresh<'_>,
) -> Result<RdmaServerReport> {
    b.available()?;
    let source = opts.source.ok_or_else(|| {
        Error::new(
            ErrorKind::InvalidInput,
            "a probe server needs --source: the local RDMA address clients should reach over RDMA",
        )
    })?;
    let sel = select_rdma_port(
        state,
        source,
        opts.device.as_deref(),
        opts.port,
        opts.gid_index,
    )?;
    let bind = SocketAddr::new(opts.listen.unwrap_or(source), opts.tcp_port);
    let listener = TcpListener::bind(bind).map_err(|e| {
        let hint = if e.raw_os_error() == Some(libc::EADDRNOTAVAIL) {
            " (no interface of this namespace has that address: give --listen one it has)"
        } else {
            ""
        };
        Error::io(
            e,
            format!("listening on TCP {bind} for probe clients{hint}"),
        )
    })?;
    listener
        .set_nonblocking(true)
        .map_err(|e| Error::io(e, "setting the listening socket non-blocking"))?;
    let listen = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| bind.to_string());
    let gate = Gate::new(opts.clients);
    let end = Instant::now() + opts.duration;
    let (tx, rx) = std::sync::mpsc::channel::<RdmaProbeReport>();
    let mut stopped = "duration".to_string();
    std::thread::scope(|scope| {
        let mut next = 0u64;
        loop {
            if gate.full() {
                stopped = "clients".to_string();
                break;
            }
            if Instant::now() >= end {
                break;
            }
            if gate.pending() >= MAX_PENDING_CONNECTIONS {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
            match listener.accept() {
                Ok((stream, peer)) => {
                    let id = next;
                    next += 1;
                    gate.hold(id, &stream);
                    let (tx, sel, gate) = (tx.clone(), sel.clone(), &gate);
                    scope.spawn(move || {
                        let c = Connection { stream, peer, id };
                        if let Some(rep) = serve_one(b, state, sel, c, opts, refresh, gate) {
                            let _ = tx.send(rep);
                        }
                    });
                }
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
        gate.close();
    });
    drop(tx);
    let sessions: Vec<RdmaProbeReport> = rx.into_iter().collect();
    let (rejected, rejected_count) = gate.rejected();
    Ok(RdmaServerReport {
        listen,
        local: None,
        ok: !sessions.is_empty() && sessions.iter().all(|s| s.ok),
        sessions,
        rejected,
        rejected_count,
        stopped,
    })
}

/// Who holds a client slot, and the connections not yet admitted.
struct Gate {
    clients: usize,
    inner: Mutex<GateState>,
}

#[derive(Default)]
struct GateState {
    /// Connections admitted as clients.
    sessions: usize,
    /// The server stopped accepting.
    closed: bool,
    /// Connections not yet admitted (a handle to close them when stopping).
    pending: HashMap<u64, TcpStream>,
    rejected: Vec<RejectedConnection>,
    rejected_count: u64,
}

impl Gate {
    fn new(clients: usize) -> Gate {
        Gate {
            clients,
            inner: Mutex::new(GateState::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, GateState> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn full(&self) -> bool {
        self.lock().sessions >= self.clients
    }

    fn pending(&self) -> usize {
        self.lock().pending.len()
    }

    /// A new connection, closed by [`Gate::close`] unless admitted first.
    fn hold(&self, id: u64, s: &TcpStream) {
        if let Ok(c) = s.try_clone() {
            self.lock().pending.insert(id, c);
        }
    }

    /// Take a client slot for connection `id` (admitted): why not, when the
    /// server already has its clients or stopped.
    fn claim(&self, id: u64) -> std::result::Result<(), String> {
        let mut g = self.lock();
        g.pending.remove(&id);
        if g.closed {
            return Err(
                "the server had stopped accepting (its clients came or its duration passed)".into(),
            );
        }
        if g.sessions >= self.clients {
            return Err(format!(
                "the server already had its {} client(s)",
                self.clients
            ));
        }
        g.sessions += 1;
        Ok(())
    }

    fn reject(&self, id: u64, r: RejectedConnection) {
        let mut g = self.lock();
        g.pending.remove(&id);
        g.rejected_count += 1;
        if g.rejected.len() < MAX_REJECTED_LISTED {
            g.rejected.push(r);
        }
    }

    /// Stop admitting, and close the connections not admitted yet (their
    /// threads then end at once instead of at their timeout).
    fn close(&self) {
        let mut g = self.lock();
        g.closed = true;
        for s in g.pending.values() {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    fn was_closed(&self) -> bool {
        self.lock().closed
    }

    fn rejected(&self) -> (Vec<RejectedConnection>, u64) {
        let g = self.lock();
        (g.rejected.clone(), g.rejected_count)
    }
}

/// An accepted connection.
struct Connection {
    stream: TcpStream,
    peer: SocketAddr,
    id: u64,
}

/// One connection: admitted as a client (its session's report), or refused
/// (`None`, recorded in the gate).
fn serve_one(
    b: &dyn Backend,
    state: &HostState,
    sel: RdmaSelection,
    c: Connection,
    opts: &RdmaProbeOptions,
    refresh: Refresh<'_>,
    gate: &Gate,
) -> Option<RdmaProbeReport> {
    let t0 = Instant::now();
    let deadline = t0 + opts.timeout;
    let refused = |reason: String| RejectedConnection {
        peer_tcp: c.peer.to_string(),
        reason,
        elapsed_ms: t0.elapsed().as_millis() as u64,
    };
    let _ = c.stream.set_nonblocking(false);
    let mut ch = match Channel::new(c.stream) {
        Ok(ch) => ch,
        Err(e) => {
            gate.reject(c.id, refused(format!("setting up the connection: {e}")));
            return None;
        }
    };
    let admitted = admit(&mut ch, opts, deadline).and_then(|h| match gate.claim(c.id) {
        Ok(()) => Ok(h),
        Err(why) => {
            refuse(&mut ch, Stage::Exchange, &why);
            Err(why)
        }
    });
    let (theirs, params) = match admitted {
        Ok(h) => h,
        Err(why) => {
            // The server's own stop closed it (see Gate::close).
            let why = if gate.was_closed() && why.starts_with(CLOSED) {
                format!(
                    "{why}: the server stopped accepting (its clients came or its duration passed)"
                )
            } else {
                why
            };
            gate.reject(c.id, refused(why));
            return None;
        }
    };
    // A client from here on.
    let mut s = Session::new(ProbeRole::Server, state, sel);
    s.t0 = t0;
    s.rep.peer_tcp = Some(c.peer.to_string());
    s.rep.peer = Some(summary(&theirs));
    s.peer_nic_macs = theirs.nic_macs.clone();
    let r = session(b, &mut s, &mut ch, &theirs, &params, deadline);
    Some(s.finish(r, refresh))
}

/// Tell a peer that is not (or not yet) a client why it is refused: the
/// reason only, nothing that identifies this host. Best effort.
fn refuse(ch: &mut Channel, stage: Stage, why: &str) {
    let f = Fail::other(stage, why);
    abort(ch, &f, &format!("the server refused this client: {why}"));
}

/// Why waiting for the peer's `what` failed, for the refusal's reason.
fn waiting(e: &WireError, what: &str) -> String {
    match &e.value {
        _ if e.closed => format!("{CLOSED} while waiting for its {what}"),
        FailureValue::Timeout { waited_ms } => format!("no {what} within {waited_ms} ms"),
        v => format!("{v} (waiting for its {what})"),
    }
}

/// How a refusal's reason starts when the connection closed.
const CLOSED: &str = "the connection closed";

/// The admission of a connection: its greeting, our challenge, its hello with
/// its proof of the token, parameters within this server's limits and facts
/// that are well formed. The client's facts and parameters, or why it is
/// refused (the peer is told, except when it is gone).
fn admit(
    ch: &mut Channel,
    opts: &RdmaProbeOptions,
    deadline: Instant,
) -> std::result::Result<(Endpoint, Params), String> {
    let refused = |ch: &mut Channel, stage: Stage, why: String| {
        refuse(ch, stage, &why);
        why
    };
    let lost = |ch: &mut Channel, e: WireError, what: &str| {
        let why = waiting(&e, what);
        if !e.closed {
            refuse(ch, Stage::Exchange, &why);
        }
        why
    };
    // 1. The greeting: the protocol and a nonce, nothing else.
    let theirs = match ch.recv(deadline) {
        Ok(Msg::Greeting {
            proto,
            version,
            nonce,
        }) => {
            if proto != PROTO {
                return Err(refused(
                    ch,
                    Stage::Exchange,
                    format!("not a roce-net probe client (it speaks {proto:?})"),
                ));
            }
            if version != VERSION {
                return Err(refused(
                    ch,
                    Stage::Exchange,
                    format!(
                        "a client of protocol version {version}, this server speaks {VERSION}: \
                         run the same roce-net version on both ends"
                    ),
                ));
            }
            if !token::is_nonce(&nonce) {
                return Err(refused(
                    ch,
                    Stage::Exchange,
                    "a greeting without a valid nonce".into(),
                ));
            }
            nonce
        }
        Ok(Msg::Hello { .. }) => {
            return Err(refused(
                ch,
                Stage::Exchange,
                format!(
                    "a client of protocol version 1 (it sent its hello first), this server \
                     speaks {VERSION}: run the same roce-net version on both ends"
                ),
            ))
        }
        Ok(m) => {
            return Err(refused(
                ch,
                Stage::Exchange,
                format!(
                    "not a roce-net probe client: its first message was {}, not a greeting",
                    m.name()
                ),
            ))
        }
        Err(e) => return Err(lost(ch, e, "greeting")),
    };
    // 2. Our nonce and our proof of the token.
    let ours = token::nonce().ok_or_else(|| {
        refused(
            ch,
            Stage::Exchange,
            "the server could not read the kernel's random pool for a nonce".into(),
        )
    })?;
    let proof = token::proof(opts.token.as_ref(), Prover::Server, &theirs, &ours);
    ch.send(
        &Msg::Challenge {
            proto: PROTO.into(),
            version: VERSION,
            nonce: ours.clone(),
            proof,
        },
        deadline,
    )
    .map_err(|e| waiting(&e, "challenge to be sent"))?;
    // 3. Its hello: first its proof, then what it asks for, then its facts.
    let (endpoint, params, proof) = match ch.recv(deadline) {
        Ok(Msg::Hello {
            endpoint,
            params,
            proof,
        }) => (endpoint, params, proof),
        Ok(Msg::Abort { message, .. }) => return Err(format!("the client gave up: {message}")),
        Ok(m) => {
            return Err(refused(
                ch,
                Stage::Exchange,
                format!("expected the client's hello, got {}", m.name()),
            ))
        }
        Err(e) => return Err(lost(ch, e, "hello")),
    };
    let proved = proof
        .as_deref()
        .is_some_and(|p| token::verify(opts.token.as_ref(), Prover::Client, &theirs, &ours, p));
    if !proved {
        let why = if opts.token.is_some() {
            "the client did not prove this server's probe token"
        } else {
            "the client did not prove the empty token of a server without one"
        };
        return Err(refused(ch, Stage::Token, why.into()));
    }
    let Some(p) = params else {
        return Err(refused(
            ch,
            Stage::Exchange,
            "the client sent no test parameters".into(),
        ));
    };
    if let Err(why) = within_limits(&p, opts) {
        return Err(refused(
            ch,
            Stage::Exchange,
            format!("the client asked for {why}"),
        ));
    }
    if let Err(why) = endpoint.check() {
        return Err(refused(
            ch,
            Stage::Exchange,
            format!("the client sent {why}"),
        ));
    }
    Ok((*endpoint, p))
}

/// The client's parameters are valid and within this server's own limits:
/// no message larger than the server's own sizes, so what it registers is
/// bounded by its options, not by the client's.
fn within_limits(p: &Params, opts: &RdmaProbeOptions) -> std::result::Result<(), String> {
    let check = RdmaProbeOptions {
        latency_size: p.latency_size,
        latency_iterations: p.latency_iterations,
        write_size: p.write_size,
        write_iterations: p.write_iterations,
        mtu: p.mtu,
        ..RdmaProbeOptions::default()
    };
    check.validate().map_err(|e| e.message().to_string())?;
    if p.write_size > opts.write_size {
        return Err(format!(
            "{}-byte writes; this server serves at most {} (its --size)",
            p.write_size, opts.write_size
        ));
    }
    if p.latency_size > opts.latency_size {
        return Err(format!(
            "{}-byte send/recv messages; this server serves at most {} (its --latency-size)",
            p.latency_size, opts.latency_size
        ));
    }
    Ok(())
}

/// An admitted client's session: the queue pair, our hello, the traffic.
fn session(
    b: &dyn Backend,
    s: &mut Session<'_>,
    ch: &mut Channel,
    theirs: &Endpoint,
    p: &Params,
    deadline: Instant,
) -> std::result::Result<(), Fail> {
    // The client's limit bounds the session too (plus a little for its last message).
    let theirs_limit = Duration::from_millis(p.timeout_ms.min(86_400_000)) + Duration::from_secs(1);
    let deadline = deadline.min(s.t0 + theirs_limit);
    if !s.sel.port_active() {
        let f = Fail::other(Stage::Preflight, "the server's port is not ACTIVE");
        abort(
            ch,
            &f,
            &format!(
                "the server's port {}:{} is not ACTIVE",
                s.sel.device, s.sel.port
            ),
        );
        return Err(f);
    }
    let agreed = Agreed::from_params(p);
    let (mut q, me) = open_queue(b, s, ch, &agreed, "the server")?;
    ch.send(
        &Msg::Hello {
            endpoint: Box::new(me.clone()),
            params: None,
            proof: None,
        },
        deadline,
    )
    .map_err(|e| Fail::wire(Stage::Exchange, e))?;
    let mut qp = Qp {
        q: q.as_mut(),
        stash: Vec::new(),
    };
    let r = server_traffic(&mut qp, ch, s, &me, theirs, &agreed, deadline);
    if let Err(f) = &r {
        if f.stage != Stage::Peer {
            abort(ch, f, "the server failed");
        }
    }
    r
}

fn server_traffic(
    q: &mut Qp<'_>,
    ch: &mut Channel,
    s: &mut Session<'_>,
    me: &Endpoint,
    theirs: &Endpoint,
    a: &Agreed,
    deadline: Instant,
) -> std::result::Result<(), Fail> {
    connect_and_ready(q, ch, s, me, theirs, a, deadline)?;
    // Echo each of the client's messages back.
    let lat = a.latency.size;
    for i in 0..a.latency.iterations {
        let mut want: HashSet<u64> = [WR_RECV | u64::from(i)].into();
        wait(q, ch, &mut want, Until::All, deadline, Stage::SendRecv)?;
        if i + 1 < a.latency.iterations {
            q.post_recv(WR_RECV | u64::from(i + 1), 0, lat)
                .map_err(|e| Fail::verbs(Stage::SendRecv, e))?;
        }
        // Echo what arrived.
        let data = q.read_local(0, lat);
        q.write_local(lat, &data);
        q.post_send(WR_SEND | u64::from(i), lat, lat)
            .map_err(|e| Fail::verbs(Stage::SendRecv, e))?;
        let mut want: HashSet<u64> = [WR_SEND | u64::from(i)].into();
        wait(q, ch, &mut want, Until::All, deadline, Stage::SendRecv)?;
    }
    // The client's writes, then ours to the client.
    check_peer_writes(q, ch, s, me, a.writes, deadline)?;
    let seed = u64::from(me.psn) << 8 | 0x22;
    send_writes(q, ch, s, theirs, a.writes, seed, deadline)?;
    // The client's report: its latency measurement.
    if let Msg::Result { report } = recv_msg(ch, deadline, Stage::Exchange)? {
        if let Some(l) = report.get("latency").cloned() {
            s.rep.latency = serde_json::from_value(l).ok();
        }
    }
    Ok(())
}
