//! The two ends of a probe session over a [`Backend`]: exchange, connect, move
//! data, report; every wait bounded by the session deadline.

use super::explain::{explain_rdma_failure, ExplainInput};
use super::select::{select_rdma_port, RdmaSelection};
use super::status::{errno_name, wc_status_name};
use super::wire::{pattern, Channel, Endpoint, Msg, Params, WireError, PROTO, VERSION};
use super::{
    Backend, Bandwidth, ConnectParams, EndpointSummary, FailureValue, Latency, ProbeRole, Queue,
    RdmaProbeOptions, RdmaProbeReport, RdmaServerReport, Stage, VerbsFailure,
};
use crate::error::{Error, ErrorKind, Result};
use crate::fib::{fib_lookup, Flow};
use crate::model::HostState;
use std::collections::{BTreeMap, HashSet};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
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
            .take(4096)
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

fn check_hello(m: Msg, stage: Stage) -> std::result::Result<(Endpoint, Option<Params>), Fail> {
    match m {
        Msg::Hello {
            proto,
            version,
            endpoint,
            params,
        } => {
            if proto != PROTO {
                return Err(Fail::other(
                    stage,
                    format!("the peer speaks {proto:?}, not {PROTO}"),
                ));
            }
            if version != VERSION {
                return Err(Fail::other(
                    stage,
                    format!(
                        "the peer speaks protocol version {version}, this roce-net {VERSION}: \
                         run the same roce-net version on both ends"
                    ),
                ));
            }
            Ok((*endpoint, params))
        }
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
            format!("expected the peer's hello, got {other:?}"),
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

/// A queue pair with the completions that arrived while another one was awaited
/// (a receive completing while the send before it is still unacknowledged).
struct Qp<'a> {
    q: &'a mut dyn Queue,
    stash: Vec<super::Completion>,
}

impl Qp<'_> {
    fn post_recv(
        &mut self,
        wr_id: u64,
        off: usize,
        len: usize,
    ) -> std::result::Result<(), VerbsFailure> {
        self.q.post_recv(wr_id, off, len)
    }
    fn post_send(
        &mut self,
        wr_id: u64,
        off: usize,
        len: usize,
    ) -> std::result::Result<(), VerbsFailure> {
        self.q.post_send(wr_id, off, len)
    }
    fn post_write(
        &mut self,
        wr_id: u64,
        off: usize,
        len: usize,
        raddr: u64,
        rkey: u32,
    ) -> std::result::Result<(), VerbsFailure> {
        self.q.post_write(wr_id, off, len, raddr, rkey)
    }
    fn write_local(&mut self, off: usize, data: &[u8]) {
        self.q.write_local(off, data)
    }
    fn read_local(&self, off: usize, len: usize) -> Vec<u8> {
        self.q.read_local(off, len)
    }
    /// The next completion: a stashed one first, else one from the device.
    fn poll(
        &mut self,
        want: &HashSet<u64>,
    ) -> std::result::Result<Option<super::Completion>, VerbsFailure> {
        if let Some(i) = self.stash.iter().position(|c| want.contains(&c.wr_id)) {
            return Ok(Some(self.stash.remove(i)));
        }
        loop {
            match self.q.poll()? {
                Some(c) if c.status == 0 && !want.contains(&c.wr_id) => {
                    if self.stash.len() < 4096 {
                        self.stash.push(c);
                    }
                }
                other => return Ok(other),
            }
        }
    }
}

/// A completion with an error status, as the failure of `stage`.
fn failed_completion(stage: Stage, c: &super::Completion) -> Fail {
    Fail::new(
        stage,
        FailureValue::Completion {
            status: c.status,
            name: wc_status_name(c.status),
            vendor_err: c.vendor_err,
        },
    )
}

/// How a completion wait idles while the queue is empty: spin at first, then
/// sleep 50 us between polls; every 1 024 empty polls, fail on the deadline or
/// on the peer's Abort.
struct Idle {
    /// When the wait began (for the timeout's `waited_ms`).
    t0: Instant,
    /// Empty polls since the last completion.
    spins: u32,
}

impl Idle {
    fn new() -> Idle {
        Idle {
            t0: Instant::now(),
            spins: 0,
        }
    }

    /// A completion arrived: spin again before sleeping.
    fn reset(&mut self) {
        self.spins = 0;
    }

    /// One empty poll.
    fn empty_poll(
        &mut self,
        ch: &mut Channel,
        deadline: Instant,
        stage: Stage,
    ) -> std::result::Result<(), Fail> {
        self.spins += 1;
        if self.spins % 1024 == 0 {
            if Instant::now() >= deadline {
                return Err(Fail::new(
                    stage,
                    FailureValue::Timeout {
                        waited_ms: self.t0.elapsed().as_millis() as u64,
                    },
                ));
            }
            if let Some(m) = ch.try_recv() {
                return Err(peer_stop(stage, m));
            }
        }
        if self.spins > 4096 {
            std::thread::sleep(Duration::from_micros(50));
        } else {
            std::hint::spin_loop();
        }
        Ok(())
    }
}

/// Wait for the completions in `want`, failing on an error completion, on the
/// deadline, or on an Abort from the peer.
fn wait(
    q: &mut Qp<'_>,
    ch: &mut Channel,
    want: &mut HashSet<u64>,
    deadline: Instant,
    stage: Stage,
) -> std::result::Result<Vec<super::Completion>, Fail> {
    let mut idle = Idle::new();
    let mut got = Vec::new();
    while !want.is_empty() {
        match q.poll(want).map_err(|e| Fail::verbs(stage, e))? {
            Some(c) => {
                idle.reset();
                if c.status != 0 {
                    return Err(failed_completion(stage, &c));
                }
                want.remove(&c.wr_id);
                got.push(c);
            }
            None => idle.empty_poll(ch, deadline, stage)?,
        }
    }
    Ok(got)
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
            format!("unexpected message from the peer: {other:?}"),
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

/// Writes `iterations` times `size` bytes of `pattern(seed)` to the peer.
#[allow(clippy::too_many_arguments)]
fn write_phase(
    q: &mut Qp<'_>,
    ch: &mut Channel,
    peer: &Endpoint,
    size: usize,
    iterations: u32,
    seed: u64,
    deadline: Instant,
    stage: Stage,
) -> std::result::Result<(f64, u64), Fail> {
    if (size as u64) > peer.len {
        return Err(Fail::other(
            stage,
            format!(
                "the peer's buffer has {} bytes, the writes need {size}",
                peer.len
            ),
        ));
    }
    q.write_local(0, &pattern(seed, size));
    let t = Instant::now();
    let mut posted = 0u32;
    let mut outstanding: HashSet<u64> = HashSet::new();
    while posted < iterations || !outstanding.is_empty() {
        while posted < iterations && outstanding.len() < DEPTH as usize {
            let id = WR_WRITE | u64::from(posted);
            q.post_write(id, 0, size, peer.addr, peer.rkey)
                .map_err(|e| Fail::verbs(stage, e))?;
            outstanding.insert(id);
            posted += 1;
        }
        let mut want = outstanding.clone();
        for c in wait_any(q, ch, &mut want, deadline, stage)? {
            outstanding.remove(&c.wr_id);
        }
    }
    Ok((
        t.elapsed().as_secs_f64(),
        u64::from(iterations) * size as u64,
    ))
}

/// The two ends of a session, named for messages: (us, the peer).
fn ends(role: ProbeRole) -> (&'static str, &'static str) {
    match role {
        ProbeRole::Client => ("the client", "the server"),
        ProbeRole::Server => ("the server", "the client"),
    }
}

/// Our half of the data check: [`write_phase`] into the peer's buffer, tell it
/// what we wrote (`WriteDone`), and wait for its `Verified`. Records
/// `write_to_peer` (unverified when the peer found a difference) and fails with
/// the peer's own account of the difference.
#[allow(clippy::too_many_arguments)]
fn send_writes(
    q: &mut Qp<'_>,
    ch: &mut Channel,
    s: &mut Session<'_>,
    theirs: &Endpoint,
    size: usize,
    iterations: u32,
    seed: u64,
    deadline: Instant,
) -> std::result::Result<(), Fail> {
    let stage = Stage::WriteToPeer;
    let (secs, bytes) = write_phase(q, ch, theirs, size, iterations, seed, deadline, stage)?;
    ch.send(
        &Msg::WriteDone {
            seed,
            len: size,
            seconds: secs,
            bytes,
        },
        deadline,
    )
    .map_err(|e| Fail::wire(stage, e))?;
    let (ok, detail) = match recv_msg(ch, deadline, stage)? {
        Msg::Verified { ok, detail } => (ok, detail),
        m => return Err(Fail::other(stage, format!("expected verified, got {m:?}"))),
    };
    s.rep.write_to_peer = Some(bandwidth(size, iterations, secs, bytes, ok));
    if !ok {
        let (us, peer) = ends(s.rep.role);
        return Err(Fail::other(
            stage,
            format!("{peer} found the data {us} wrote corrupted: {detail}"),
        ));
    }
    Ok(())
}

/// The peer's half of the data check, seen from here: wait for its
/// `WriteDone`, compare our buffer with the pattern it names, and answer
/// `Verified`. A length beyond our buffer (`me.len`) is refused before any
/// comparison, so a hostile peer cannot make us allocate more. Records
/// `write_from_peer` and fails with the same detail the peer is sent.
fn check_peer_writes(
    q: &mut Qp<'_>,
    ch: &mut Channel,
    s: &mut Session<'_>,
    me: &Endpoint,
    size: usize,
    iterations: u32,
    deadline: Instant,
) -> std::result::Result<(), Fail> {
    let stage = Stage::WriteFromPeer;
    let (seed, len, secs, bytes) = match recv_msg(ch, deadline, stage)? {
        Msg::WriteDone {
            seed,
            len,
            seconds,
            bytes,
        } => (seed, len, seconds, bytes),
        m => {
            return Err(Fail::other(
                stage,
                format!("expected write-done, got {m:?}"),
            ))
        }
    };
    let (us, peer) = ends(s.rep.role);
    let problem = if len as u64 > me.len {
        Some(format!(
            "{peer} says it wrote {len} bytes, more than {us}'s {}-byte buffer",
            me.len
        ))
    } else if len != size {
        // Both ends agreed on the write size: a shorter claim (down to 0 bytes)
        // would otherwise "verify" less than was written, or nothing.
        Some(format!(
            "{peer} says it wrote {len} bytes; the probe agreed on {size}-byte writes"
        ))
    } else if q.read_local(0, len) != pattern(seed, len) {
        Some(format!(
            "the last {len} bytes {peer} wrote to {us} differ from what it sent"
        ))
    } else {
        None
    };
    let ok = problem.is_none();
    ch.send(
        &Msg::Verified {
            ok,
            detail: problem.clone().unwrap_or_default(),
        },
        deadline,
    )
    .map_err(|e| Fail::wire(stage, e))?;
    s.rep.write_from_peer = Some(bandwidth(len, iterations, secs, bytes, ok));
    match problem {
        Some(p) => Err(Fail::other(stage, p)),
        None => Ok(()),
    }
}

fn bandwidth(size: usize, iterations: u32, seconds: f64, bytes: u64, verified: bool) -> Bandwidth {
    Bandwidth {
        size,
        iterations,
        bytes,
        seconds,
        gbit_per_s: if seconds > 0.0 {
            bytes as f64 * 8.0 / seconds / 1e9
        } else {
            0.0
        },
        verified,
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Choose the source address: the given one, else the one the routing table
/// picks for the peer (as `ip route get <peer>` would).
fn source_for(state: &HostState, peer: IpAddr, given: Option<IpAddr>) -> Result<IpAddr> {
    if let Some(s) = given {
        return Ok(s);
    }
    match fib_lookup(state, &Flow::to(peer)) {
        Ok(d) => d.prefsrc.ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidInput,
                format!("the route to {peer} has no source address: give --source"),
            )
        }),
        Err(e) => Err(Error::new(
            ErrorKind::InvalidInput,
            format!(
                "no route to {peer} ({e}): give --source, the local RDMA address to probe from"
            ),
        )),
    }
}

/// The client end.
pub(crate) fn client(
    b: &dyn Backend,
    state: &HostState,
    peer: IpAddr,
    opts: &RdmaProbeOptions,
    refresh: Refresh<'_>,
) -> Result<RdmaProbeReport> {
    b.available()?;
    let source = source_for(state, peer, opts.source)?;
    let sel = select_rdma_port(
        state,
        source,
        opts.device.as_deref(),
        opts.port,
        opts.gid_index,
    )?;
    let mut s = Session::new(ProbeRole::Client, state, sel);
    let deadline = s.t0 + opts.timeout;
    let r = client_run(b, &mut s, peer, opts, deadline);
    Ok(s.finish(r, refresh))
}

fn client_run(
    b: &dyn Backend,
    s: &mut Session<'_>,
    peer: IpAddr,
    opts: &RdmaProbeOptions,
    deadline: Instant,
) -> std::result::Result<(), Fail> {
    if !s.sel.port_active() {
        return Err(Fail::other(Stage::Preflight, "the port is not ACTIVE"));
    }
    let addr = SocketAddr::new(peer, opts.tcp_port);
    s.rep.peer_tcp = Some(addr.to_string());
    let left = deadline.saturating_duration_since(Instant::now());
    let tcp = TcpStream::connect_timeout(&addr, left).map_err(|e| {
        Fail::new(
            Stage::Connect,
            match e.raw_os_error() {
                Some(n) => FailureValue::Errno {
                    errno: n,
                    name: errno_name(n),
                },
                None => FailureValue::Timeout {
                    waited_ms: left.as_millis() as u64,
                },
            },
        )
    })?;
    let mut ch = Channel::new(tcp)
        .map_err(|e| Fail::other(Stage::Connect, format!("setting up the connection: {e}")))?;
    let buf = opts.write_size.max(2 * opts.latency_size);
    let mut q = match b.open(&s.sel, buf, DEPTH) {
        Ok(q) => q,
        Err(e) => {
            let f = Fail::verbs(Stage::Open, e);
            abort(&mut ch, &f, "the client could not open its queue pair");
            return Err(f);
        }
    };
    let me = endpoint(s.state, &s.sel, q.as_ref());
    s.rep.local = Some(summary(&me));
    let params = Params {
        latency_size: opts.latency_size,
        latency_iterations: opts.latency_iterations,
        write_size: opts.write_size,
        write_iterations: opts.write_iterations,
        mtu: opts.mtu,
        timeout_ms: opts.timeout.as_millis() as u64,
    };
    ch.send(
        &Msg::Hello {
            proto: PROTO.into(),
            version: VERSION,
            endpoint: Box::new(me.clone()),
            params: Some(params),
        },
        deadline,
    )
    .map_err(|e| Fail::wire(Stage::Exchange, e))?;
    let (theirs, _) = check_hello(
        recv_msg(&mut ch, deadline, Stage::Exchange)?,
        Stage::Exchange,
    )?;
    s.rep.peer = Some(summary(&theirs));
    s.peer_nic_macs = theirs.nic_macs.clone();
    let mut qp = Qp {
        q: q.as_mut(),
        stash: Vec::new(),
    };
    let r = client_traffic(&mut qp, &mut ch, s, &me, &theirs, opts, deadline);
    if let Err(f) = &r {
        if f.stage != Stage::Peer {
            abort(&mut ch, f, "the client failed");
        }
    }
    r
}

/// What both ends do before traffic: bring the QP to RTS at the path MTU
/// (recorded in the report), post the first latency receive, and exchange
/// `Ready` so neither side sends before the other can receive. Returns the
/// latency message size.
#[allow(clippy::too_many_arguments)]
fn connect_and_ready(
    q: &mut Qp<'_>,
    ch: &mut Channel,
    s: &mut Session<'_>,
    me: &Endpoint,
    theirs: &Endpoint,
    mtu: Option<u32>,
    latency_size: usize,
    deadline: Instant,
) -> std::result::Result<usize, Fail> {
    let chosen = mtu;
    let mtu = path_mtu(mtu, me.active_mtu, theirs.active_mtu);
    s.rep.path_mtu = Some(mtu);
    if let Some(note) = mtu_note(chosen, me, theirs, mtu) {
        s.rep.notes.push(note);
    }
    connect_qp(q.q, &s.sel, theirs, mtu)?;
    let lat = latency_size;
    q.post_recv(WR_RECV, 0, lat)
        .map_err(|e| Fail::verbs(Stage::SendRecv, e))?;
    ch.send(&Msg::Ready, deadline)
        .map_err(|e| Fail::wire(Stage::Exchange, e))?;
    match recv_msg(ch, deadline, Stage::Exchange)? {
        Msg::Ready => {}
        m => {
            return Err(Fail::other(
                Stage::Exchange,
                format!("expected ready, got {m:?}"),
            ))
        }
    }
    Ok(lat)
}

fn client_traffic(
    q: &mut Qp<'_>,
    ch: &mut Channel,
    s: &mut Session<'_>,
    me: &Endpoint,
    theirs: &Endpoint,
    opts: &RdmaProbeOptions,
    deadline: Instant,
) -> std::result::Result<(), Fail> {
    let lat = connect_and_ready(q, ch, s, me, theirs, opts.mtu, opts.latency_size, deadline)?;
    // Ping-pong.
    q.write_local(lat, &pattern(1, lat));
    let mut rtts = Vec::with_capacity(opts.latency_iterations as usize);
    for i in 0..opts.latency_iterations {
        let t = Instant::now();
        q.post_send(WR_SEND | u64::from(i), lat, lat)
            .map_err(|e| Fail::verbs(Stage::SendRecv, e))?;
        let mut want: HashSet<u64> = [WR_SEND | u64::from(i), WR_RECV | u64::from(i)].into();
        // Re-post the next receive as soon as this one completes, before the
        // server can send again.
        let mut recv_done = false;
        while !want.is_empty() {
            let mut one: HashSet<u64> = want.clone();
            let got = wait_any(q, ch, &mut one, deadline, Stage::SendRecv)?;
            for c in got {
                want.remove(&c.wr_id);
                if c.wr_id == WR_RECV | u64::from(i) && !recv_done {
                    recv_done = true;
                    rtts.push(t.elapsed().as_secs_f64() * 1e6 / 2.0);
                    if i + 1 < opts.latency_iterations {
                        q.post_recv(WR_RECV | u64::from(i + 1), 0, lat)
                            .map_err(|e| Fail::verbs(Stage::SendRecv, e))?;
                    }
                }
            }
        }
    }
    rtts.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    s.rep.latency = Some(Latency {
        size: lat,
        iterations: opts.latency_iterations,
        min_us: rtts.first().copied().unwrap_or(0.0),
        median_us: percentile(&rtts, 0.5),
        p99_us: percentile(&rtts, 0.99),
        max_us: rtts.last().copied().unwrap_or(0.0),
    });
    // Writes to the server, then the server's writes to us.
    let seed = u64::from(me.psn) << 8 | 0x11;
    send_writes(
        q,
        ch,
        s,
        theirs,
        opts.write_size,
        opts.write_iterations,
        seed,
        deadline,
    )?;
    check_peer_writes(
        q,
        ch,
        s,
        me,
        opts.write_size,
        opts.write_iterations,
        deadline,
    )?;
    let report = serde_json::to_value(&s.rep).unwrap_or(serde_json::Value::Null);
    ch.send(
        &Msg::Result {
            report: Box::new(report),
        },
        deadline,
    )
    .map_err(|e| Fail::wire(Stage::Exchange, e))?;
    Ok(())
}

/// Like [`wait`] but returns as soon as any wanted completion arrived.
fn wait_any(
    q: &mut Qp<'_>,
    ch: &mut Channel,
    want: &mut HashSet<u64>,
    deadline: Instant,
    stage: Stage,
) -> std::result::Result<Vec<super::Completion>, Fail> {
    let all = want.clone();
    let mut got = Vec::new();
    loop {
        // Wait for any one of them.
        let mut idle = Idle::new();
        loop {
            match q.poll(&all).map_err(|e| Fail::verbs(stage, e))? {
                Some(c) => {
                    if c.status != 0 {
                        return Err(failed_completion(stage, &c));
                    }
                    got.push(c);
                    break;
                }
                None => idle.empty_poll(ch, deadline, stage)?,
            }
        }
        if got.iter().any(|c| all.contains(&c.wr_id)) {
            return Ok(got);
        }
    }
}

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
    let bind = SocketAddr::new(
        match source {
            IpAddr::V4(_) => IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
            IpAddr::V6(_) => IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
        },
        opts.tcp_port,
    );
    let listener = TcpListener::bind(bind)
        .map_err(|e| Error::io(e, format!("listening on TCP {bind} for probe clients")))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| Error::io(e, "setting the listening socket non-blocking"))?;
    let listen = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| bind.to_string());
    let end = Instant::now() + opts.duration;
    let (tx, rx) = std::sync::mpsc::channel::<RdmaProbeReport>();
    let mut started = 0usize;
    let mut stopped = "duration".to_string();
    std::thread::scope(|scope| {
        while Instant::now() < end {
            if started >= opts.clients {
                stopped = "clients".to_string();
                break;
            }
            match listener.accept() {
                Ok((stream, _)) => {
                    started += 1;
                    let tx = tx.clone();
                    let sel = sel.clone();
                    scope.spawn(move || {
                        let rep = serve_one(b, state, sel, stream, opts, refresh);
                        let _ = tx.send(rep);
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    });
    drop(tx);
    let sessions: Vec<RdmaProbeReport> = rx.into_iter().collect();
    Ok(RdmaServerReport {
        listen,
        local: None,
        ok: !sessions.is_empty() && sessions.iter().all(|s| s.ok),
        sessions,
        stopped,
    })
}

fn serve_one(
    b: &dyn Backend,
    state: &HostState,
    sel: RdmaSelection,
    stream: TcpStream,
    opts: &RdmaProbeOptions,
    refresh: Refresh<'_>,
) -> RdmaProbeReport {
    let mut s = Session::new(ProbeRole::Server, state, sel);
    s.rep.peer_tcp = stream.peer_addr().ok().map(|a| a.to_string());
    let r = (|| {
        let _ = stream.set_nonblocking(false);
        let mut ch = Channel::new(stream)
            .map_err(|e| Fail::other(Stage::Connect, format!("accepting the client: {e}")))?;
        let mut deadline = s.t0 + opts.timeout;
        let (theirs, params) = check_hello(
            recv_msg(&mut ch, deadline, Stage::Exchange)?,
            Stage::Exchange,
        )?;
        s.rep.peer = Some(summary(&theirs));
        s.peer_nic_macs = theirs.nic_macs.clone();
        let Some(p) = params else {
            return Err(Fail::other(
                Stage::Exchange,
                "the client sent no test parameters",
            ));
        };
        let check = RdmaProbeOptions {
            latency_size: p.latency_size,
            latency_iterations: p.latency_iterations,
            write_size: p.write_size,
            write_iterations: p.write_iterations,
            mtu: p.mtu,
            ..RdmaProbeOptions::default()
        };
        if let Err(e) = check.validate() {
            let f = Fail::other(
                Stage::Exchange,
                format!("the client asked for {}", e.message()),
            );
            abort(
                &mut ch,
                &f,
                &format!("the server refuses the parameters: {}", e.message()),
            );
            return Err(f);
        }
        // The client's limit bounds the session too (plus a little for its last message).
        let theirs_limit =
            Duration::from_millis(p.timeout_ms.min(86_400_000)) + Duration::from_secs(1);
        deadline = deadline.min(s.t0 + theirs_limit);
        if !s.sel.port_active() {
            let f = Fail::other(Stage::Preflight, "the server's port is not ACTIVE");
            abort(
                &mut ch,
                &f,
                &format!(
                    "the server's port {}:{} is not ACTIVE",
                    s.sel.device, s.sel.port
                ),
            );
            return Err(f);
        }
        let buf = p.write_size.max(2 * p.latency_size);
        let mut q = match b.open(&s.sel, buf, DEPTH) {
            Ok(q) => q,
            Err(e) => {
                let f = Fail::verbs(Stage::Open, e);
                abort(&mut ch, &f, "the server could not open its queue pair");
                return Err(f);
            }
        };
        let me = endpoint(s.state, &s.sel, q.as_ref());
        s.rep.local = Some(summary(&me));
        ch.send(
            &Msg::Hello {
                proto: PROTO.into(),
                version: VERSION,
                endpoint: Box::new(me.clone()),
                params: None,
            },
            deadline,
        )
        .map_err(|e| Fail::wire(Stage::Exchange, e))?;
        let mut qp = Qp {
            q: q.as_mut(),
            stash: Vec::new(),
        };
        let r = server_traffic(&mut qp, &mut ch, &mut s, &me, &theirs, &p, deadline);
        if let Err(f) = &r {
            if f.stage != Stage::Peer {
                abort(&mut ch, f, "the server failed");
            }
        }
        r
    })();
    s.finish(r, refresh)
}

fn server_traffic(
    q: &mut Qp<'_>,
    ch: &mut Channel,
    s: &mut Session<'_>,
    me: &Endpoint,
    theirs: &Endpoint,
    p: &Params,
    deadline: Instant,
) -> std::result::Result<(), Fail> {
    let lat = connect_and_ready(q, ch, s, me, theirs, p.mtu, p.latency_size, deadline)?;
    for i in 0..p.latency_iterations {
        let mut want: HashSet<u64> = [WR_RECV | u64::from(i)].into();
        wait(q, ch, &mut want, deadline, Stage::SendRecv)?;
        if i + 1 < p.latency_iterations {
            q.post_recv(WR_RECV | u64::from(i + 1), 0, lat)
                .map_err(|e| Fail::verbs(Stage::SendRecv, e))?;
        }
        // Echo what arrived.
        let data = q.read_local(0, lat);
        q.write_local(lat, &data);
        q.post_send(WR_SEND | u64::from(i), lat, lat)
            .map_err(|e| Fail::verbs(Stage::SendRecv, e))?;
        let mut want: HashSet<u64> = [WR_SEND | u64::from(i)].into();
        wait(q, ch, &mut want, deadline, Stage::SendRecv)?;
    }
    // The client's writes, then ours to the client.
    check_peer_writes(q, ch, s, me, p.write_size, p.write_iterations, deadline)?;
    let seed = u64::from(me.psn) << 8 | 0x22;
    send_writes(
        q,
        ch,
        s,
        theirs,
        p.write_size,
        p.write_iterations,
        seed,
        deadline,
    )?;
    // The client's report: its latency measurement.
    if let Msg::Result { report } = recv_msg(ch, deadline, Stage::Exchange)? {
        if let Some(l) = report.get("latency").cloned() {
            s.rep.latency = serde_json::from_value(l).ok();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! `check_peer_writes` against a peer speaking the wire protocol by hand:
    //! what a session over the NIC model cannot make a peer claim.
    use super::*;
    use crate::probe::rdma::{Completion, ConnectParams, QueueInfo};

    /// Memory only: the check reads the local buffer and nothing else.
    struct Memory(Vec<u8>);

    impl Queue for Memory {
        fn info(&self) -> QueueInfo {
            QueueInfo {
                qpn: 1,
                psn: 2,
                lid: 0,
                rkey: 3,
                addr: 0x1000,
                len: self.0.len() as u64,
                active_mtu: Some(1024),
                port_state: Some("ACTIVE".into()),
            }
        }
        fn connect(&mut self, _: &ConnectParams) -> std::result::Result<(), (Stage, VerbsFailure)> {
            Ok(())
        }
        fn write_local(&mut self, off: usize, data: &[u8]) {
            self.0[off..off + data.len()].copy_from_slice(data);
        }
        fn read_local(&self, off: usize, len: usize) -> Vec<u8> {
            let end = off.saturating_add(len).min(self.0.len());
            self.0[off.min(end)..end].to_vec()
        }
        fn post_recv(
            &mut self,
            _: u64,
            _: usize,
            _: usize,
        ) -> std::result::Result<(), VerbsFailure> {
            Err(VerbsFailure::new("memory: no receives", None))
        }
        fn post_send(
            &mut self,
            _: u64,
            _: usize,
            _: usize,
        ) -> std::result::Result<(), VerbsFailure> {
            Err(VerbsFailure::new("memory: no sends", None))
        }
        fn post_write(
            &mut self,
            _: u64,
            _: usize,
            _: usize,
            _: u64,
            _: u32,
        ) -> std::result::Result<(), VerbsFailure> {
            Err(VerbsFailure::new("memory: no writes", None))
        }
        fn poll(&mut self) -> std::result::Result<Option<Completion>, VerbsFailure> {
            Ok(None)
        }
    }

    fn selection() -> RdmaSelection {
        serde_json::from_value(serde_json::json!({
            "device": "mem0", "port": 1, "gid_index": 3, "gid": "::ffff:198.18.0.1",
            "gid_type": null, "address": "198.18.0.1", "netdev": "eth0", "mac": null,
            "netdev_mtu": null, "port_state": "ACTIVE", "phys_state": null,
            "link_layer": "Ethernet", "active_mtu": 1024, "nccl_gid_index": null,
            "notes": []
        }))
        .unwrap()
    }

    /// The client (holding `buf`), having agreed on 4096-byte writes, is told by
    /// the "server" that it wrote `len` bytes of `pattern(7)`: what the client
    /// answers and concludes.
    fn client_checks(buf: Vec<u8>, len: usize) -> (Msg, std::result::Result<(), Fail>, Bandwidth) {
        let st = HostState::empty("h");
        let mut s = Session::new(ProbeRole::Client, &st, selection());
        let mut mem = Memory(buf);
        let me = endpoint(&st, &s.sel, &mem);
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut peer = Channel::new(TcpStream::connect(l.local_addr().unwrap()).unwrap()).unwrap();
        let mut ch = Channel::new(l.accept().unwrap().0).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let done = Msg::WriteDone {
            seed: 7,
            len,
            seconds: 0.5,
            bytes: (len as u64).saturating_mul(10),
        };
        peer.send(&done, deadline).unwrap();
        let mut q = Qp {
            q: &mut mem,
            stash: Vec::new(),
        };
        let r = check_peer_writes(&mut q, &mut ch, &mut s, &me, 4096, 10, deadline);
        (
            peer.recv(deadline).unwrap(),
            r,
            s.rep.write_from_peer.unwrap(),
        )
    }

    fn failed_with(r: std::result::Result<(), Fail>, want: &str) {
        let f = r.expect_err("the check should fail");
        assert_eq!(f.stage, Stage::WriteFromPeer);
        match f.value {
            FailureValue::Other { message } => assert_eq!(message, want),
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn the_pattern_the_peer_names_is_verified() {
        let mut buf = pattern(7, 4096);
        buf.extend([0u8; 1024]);
        let (answer, r, bw) = client_checks(buf, 4096);
        assert!(r.is_ok());
        assert!(matches!(answer, Msg::Verified { ok: true, detail } if detail.is_empty()));
        assert!(bw.verified && bw.size == 4096 && bw.bytes == 40960);
    }

    #[test]
    fn a_difference_is_refused_with_the_same_account_on_both_ends() {
        let mut buf = pattern(7, 4096);
        buf[4095] ^= 1;
        let (answer, r, bw) = client_checks(buf, 4096);
        let want = "the last 4096 bytes the server wrote to the client differ from what it sent";
        assert!(matches!(answer, Msg::Verified { ok: false, ref detail } if detail == want));
        failed_with(r, want);
        assert!(!bw.verified);
    }

    #[test]
    fn a_length_beyond_our_buffer_is_refused_before_any_comparison() {
        // Even a buffer that holds the pattern's first 4096 bytes: the claim is
        // checked against the buffer first (a huge claim would otherwise
        // allocate that much for the pattern).
        let (answer, r, bw) = client_checks(pattern(7, 4096), 4097);
        let want = "the server says it wrote 4097 bytes, more than the client's 4096-byte buffer";
        assert!(matches!(answer, Msg::Verified { ok: false, ref detail } if detail == want));
        failed_with(r, want);
        assert!(!bw.verified);
        let (_, r, _) = client_checks(vec![0; 64], usize::MAX);
        assert!(r.is_err());
    }

    #[test]
    fn a_claim_of_fewer_bytes_than_agreed_verifies_nothing() {
        // The first 100 bytes hold the pattern, the rest does not: a peer that
        // claims 100 (or 0) bytes must not pass the check.
        let mut buf = pattern(7, 100);
        buf.extend([0u8; 3996]);
        for len in [100, 0] {
            let (answer, r, bw) = client_checks(buf.clone(), len);
            let want = format!(
                "the server says it wrote {len} bytes; the probe agreed on 4096-byte writes"
            );
            assert!(matches!(answer, Msg::Verified { ok: false, ref detail } if *detail == want));
            failed_with(r, &want);
            assert!(!bw.verified);
        }
    }
}
