//! The two ends of a probe session over a [`Backend`]: exchange, connect, move
//! data, report; every wait bounded by the session deadline.
//!
//! One concept per file: what both ends share is here (the session and its
//! failure, the hello exchange, connecting the queue pair); `client.rs` and
//! `server.rs` are the two ends; `transfer.rs` the verified RDMA writes both
//! make; `completions.rs` the queue pair's completions and the one loop that
//! waits for them.

mod client;
mod completions;
mod server;
mod transfer;

pub(crate) use client::client;
pub(crate) use server::server;

use super::explain::{explain_rdma_failure, ExplainInput};
use super::select::RdmaSelection;
use super::status::errno_name;
use super::wire::{Channel, Endpoint, Msg, Params, WireError, MAX_NIC_MACS};
use super::{
    Backend, ConnectParams, EndpointSummary, FailureValue, ProbeRole, Queue, RdmaProbeOptions,
    RdmaProbeReport, Stage, VerbsFailure,
};
use crate::model::HostState;
use completions::Qp;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Outstanding RDMA writes (perftest's default tx depth is 128; a probe needs
/// far fewer to fill a link with 64 KiB writes).
const DEPTH: u32 = 16;
/// How long an Abort may take to reach the peer.
const ABORT_GRACE: Duration = Duration::from_millis(500);

/// A fresh snapshot for explaining a failure (neighbour entries appear while the
/// kernel resolves the peer); `None` keeps the one taken before the run.
pub(crate) type Refresh<'a> = &'a (dyn Fn() -> Option<HostState> + Sync);

/// Why a session stopped early.
struct Fail {
    stage: Stage,
    value: FailureValue,
    peer_message: Option<String>,
}

impl Fail {
    fn new(stage: Stage, value: FailureValue) -> Fail {
        Fail {
            stage,
            value,
            peer_message: None,
        }
    }
    fn wire(stage: Stage, e: WireError) -> Fail {
        Fail::new(stage, e.value)
    }
    fn verbs(stage: Stage, e: VerbsFailure) -> Fail {
        Fail::new(
            stage,
            match e.errno {
                Some(n) => FailureValue::Errno {
                    errno: n,
                    name: errno_name(n),
                },
                None => FailureValue::Other {
                    message: format!("{} failed", e.call),
                },
            },
        )
    }
    fn other(stage: Stage, m: impl Into<String>) -> Fail {
        Fail::new(stage, FailureValue::Other { message: m.into() })
    }
}

/// What a session learnt, kept for the report and the explanation.
struct Session<'a> {
    state: &'a HostState,
    sel: RdmaSelection,
    rep: RdmaProbeReport,
    peer_nic_macs: BTreeMap<String, String>,
    t0: Instant,
}

impl<'a> Session<'a> {
    fn new(role: ProbeRole, state: &'a HostState, sel: RdmaSelection) -> Session<'a> {
        let notes = sel.notes.clone();
        Session {
            state,
            sel,
            rep: RdmaProbeReport {
                role,
                ok: false,
                local: None,
                peer: None,
                peer_tcp: None,
                path_mtu: None,
                latency: None,
                write_to_peer: None,
                write_from_peer: None,
                failure: None,
                notes,
                elapsed_ms: 0,
            },
            peer_nic_macs: BTreeMap::new(),
            t0: Instant::now(),
        }
    }

    fn finish(mut self, r: std::result::Result<(), Fail>, refresh: Refresh<'_>) -> RdmaProbeReport {
        self.rep.elapsed_ms = self.t0.elapsed().as_millis() as u64;
        match r {
            Ok(()) => self.rep.ok = true,
            Err(f) => {
                let fresh = refresh();
                let st = fresh.as_ref().unwrap_or(self.state);
                let input = ExplainInput {
                    stage: f.stage,
                    value: &f.value,
                    state: st,
                    local: Some(&self.sel),
                    peer: self.rep.peer.as_ref(),
                    peer_nic_macs: &self.peer_nic_macs,
                    path_mtu: self.rep.path_mtu,
                    peer_tcp: self.rep.peer_tcp.as_deref(),
                    peer_message: f.peer_message.as_deref(),
                    initial: fresh.as_ref().map(|_| self.state),
                };
                self.rep.failure = Some(explain_rdma_failure(&input));
            }
        }
        self.rep
    }
}

fn summary(e: &Endpoint) -> EndpointSummary {
    EndpointSummary {
        host: e.host.clone(),
        device: e.device.clone(),
        port: e.port,
        gid_index: e.gid_index,
        gid: e.gid,
        address: e.address,
        netdev: e.netdev.clone(),
        mac: e.mac.clone(),
        active_mtu: e.active_mtu,
        qpn: e.qpn,
    }
}

fn endpoint(state: &HostState, sel: &RdmaSelection, q: &dyn Queue) -> Endpoint {
    let info = q.info();
    Endpoint {
        host: state.hostname.clone(),
        device: sel.device.clone(),
        port: sel.port,
        gid_index: sel.gid_index,
        gid: sel.gid,
        address: sel.address,
        netdev: Some(sel.netdev.clone()),
        mac: sel.mac.clone(),
        nic_macs: state
            .interfaces
            .iter()
            .filter_map(|i| i.mac.as_ref().map(|m| (i.name.clone(), m.to_string())))
            .take(MAX_NIC_MACS)
            .collect(),
        active_mtu: info.active_mtu.or(sel.active_mtu),
        port_state: info.port_state.or(sel.port_state.clone()),
        lid: info.lid,
        qpn: info.qpn,
        psn: info.psn,
        rkey: info.rkey,
        addr: info.addr,
        len: info.len,
    }
}

/// The peer's hello: its facts, the parameters (a client's) and its proof of
/// the token (a client's); an Abort is the peer's own failure.
fn expect_hello(
    m: Msg,
    stage: Stage,
) -> std::result::Result<(Endpoint, Option<Params>, Option<String>), Fail> {
    match m {
        Msg::Hello {
            endpoint,
            params,
            proof,
        } => Ok((*endpoint, params, proof)),
        Msg::Abort {
            stage,
            value,
            message,
        } => Err(Fail {
            stage: Stage::Peer,
            value,
            peer_message: Some(format!("{} at {stage}", message)),
        }),
        other => Err(Fail::other(
            stage,
            format!("expected the peer's hello, got {}", other.name()),
        )),
    }
}

/// Tell the peer why we stop (best effort, short grace).
fn abort(ch: &mut Channel, f: &Fail, message: &str) {
    let _ = ch.send(
        &Msg::Abort {
            stage: f.stage,
            value: f.value.clone(),
            message: message.to_string(),
        },
        Instant::now() + ABORT_GRACE,
    );
}

fn peer_stop(stage: Stage, m: std::result::Result<Msg, WireError>) -> Fail {
    match m {
        Ok(Msg::Abort {
            stage: s,
            value,
            message,
        }) => Fail {
            stage: Stage::Peer,
            value,
            peer_message: Some(format!("{message} at {s}")),
        },
        Ok(other) => Fail::other(
            stage,
            format!("unexpected message from the peer: {}", other.name()),
        ),
        Err(e) => Fail::wire(stage, e),
    }
}

fn recv_msg(ch: &mut Channel, deadline: Instant, stage: Stage) -> std::result::Result<Msg, Fail> {
    match ch.recv(deadline) {
        Ok(Msg::Abort {
            stage: s,
            value,
            message,
        }) => Err(Fail {
            stage: Stage::Peer,
            value,
            peer_message: Some(format!("{message} at {s}")),
        }),
        Ok(m) => Ok(m),
        Err(e) => Err(Fail::wire(stage, e)),
    }
}

const WR_RECV: u64 = 1 << 40;
const WR_SEND: u64 = 2 << 40;
const WR_WRITE: u64 = 3 << 40;

/// One kind of traffic the two ends agreed on: messages of `size` bytes,
/// `iterations` times.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Transfer {
    size: usize,
    iterations: u32,
}

/// What the two ends agreed on: the client's options, and the server's copy
/// of them from the client's hello.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Agreed {
    /// The path MTU asked for (`None`: the smaller active MTU of the ports).
    mtu: Option<u32>,
    /// The ping-pong of send/receive messages.
    latency: Transfer,
    /// The RDMA writes each end makes into the other's buffer.
    writes: Transfer,
}

impl Agreed {
    fn from_options(o: &RdmaProbeOptions) -> Agreed {
        Agreed {
            mtu: o.mtu,
            latency: Transfer {
                size: o.latency_size,
                iterations: o.latency_iterations,
            },
            writes: Transfer {
                size: o.write_size,
                iterations: o.write_iterations,
            },
        }
    }

    fn from_params(p: &Params) -> Agreed {
        Agreed {
            mtu: p.mtu,
            latency: Transfer {
                size: p.latency_size,
                iterations: p.latency_iterations,
            },
            writes: Transfer {
                size: p.write_size,
                iterations: p.write_iterations,
            },
        }
    }
}

/// Path MTU: the requested one, else the smaller active MTU of the two ports.
fn path_mtu(opt: Option<u32>, a: Option<u32>, b: Option<u32>) -> u32 {
    opt.unwrap_or_else(|| match (a, b) {
        (Some(x), Some(y)) => x.min(y),
        (Some(x), None) | (None, Some(x)) => x,
        (None, None) => 1024,
    })
}

/// When the two ports' active MTUs differ, say so: the path runs at the
/// smaller one (RDMA works, as the VM tier shows with one NIC at MTU 9000 and
/// its peer at 1500), but the ends are configured differently, which is what
/// the doctor's `mtu-mismatch` finds on a host.
fn mtu_note(chosen: Option<u32>, me: &Endpoint, theirs: &Endpoint, path: u32) -> Option<String> {
    let (Some(a), Some(b)) = (me.active_mtu, theirs.active_mtu) else {
        return None;
    };
    if a == b || chosen.is_some() {
        return None;
    }
    Some(format!(
        "the ports' active MTUs differ ({a} on {} {}:{}, {b} on {} {}:{}): the path \
         uses {path}; check both NICs' and the switch's MTU (roce-net doctor: mtu-mismatch)",
        me.host, me.device, me.port, theirs.host, theirs.device, theirs.port
    ))
}

fn connect_qp(
    q: &mut dyn Queue,
    sel: &RdmaSelection,
    peer: &Endpoint,
    mtu: u32,
) -> std::result::Result<(), Fail> {
    q.connect(&ConnectParams {
        dest_qpn: peer.qpn,
        dest_psn: peer.psn,
        dest_lid: peer.lid,
        dgid: peer.gid,
        sgid_index: sel.gid_index,
        port: sel.port,
        path_mtu: mtu,
    })
    .map_err(|(stage, e)| Fail::verbs(stage, e))
}

/// Open this end's queue pair, with a buffer for `a`'s traffic, and record its
/// endpoint in the report; when it cannot be opened, tell the peer (`who`:
/// "the client", "the server") before failing.
fn open_queue(
    b: &dyn Backend,
    s: &mut Session<'_>,
    ch: &mut Channel,
    a: &Agreed,
    who: &str,
) -> std::result::Result<(Box<dyn Queue>, Endpoint), Fail> {
    let buf = a.writes.size.max(2 * a.latency.size);
    match b.open(&s.sel, buf, DEPTH) {
        Ok(q) => {
            let me = endpoint(s.state, &s.sel, q.as_ref());
            s.rep.local = Some(summary(&me));
            Ok((q, me))
        }
        Err(e) => {
            let f = Fail::verbs(Stage::Open, e);
            abort(ch, &f, &format!("{who} could not open its queue pair"));
            Err(f)
        }
    }
}

/// What both ends do before traffic: bring the QP to RTS at the path MTU
/// (recorded in the report), post the first latency receive, and exchange
/// `Ready` so neither side sends before the other can receive.
fn connect_and_ready(
    q: &mut Qp<'_>,
    ch: &mut Channel,
    s: &mut Session<'_>,
    me: &Endpoint,
    theirs: &Endpoint,
    a: &Agreed,
    deadline: Instant,
) -> std::result::Result<(), Fail> {
    let mtu = path_mtu(a.mtu, me.active_mtu, theirs.active_mtu);
    s.rep.path_mtu = Some(mtu);
    if let Some(note) = mtu_note(a.mtu, me, theirs, mtu) {
        s.rep.notes.push(note);
    }
    connect_qp(q.q, &s.sel, theirs, mtu)?;
    q.post_recv(WR_RECV, 0, a.latency.size)
        .map_err(|e| Fail::verbs(Stage::SendRecv, e))?;
    ch.send(&Msg::Ready, deadline)
        .map_err(|e| Fail::wire(Stage::Exchange, e))?;
    match recv_msg(ch, deadline, Stage::Exchange)? {
        Msg::Ready => Ok(()),
        m => Err(Fail::other(
            Stage::Exchange,
            format!("expected ready, got {}", m.name()),
        )),
    }
}
