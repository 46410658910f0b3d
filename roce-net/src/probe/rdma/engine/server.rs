//! The server end: accept clients until enough sessions ran or the duration
//! passed; each session echoes the latency ping-pong and makes the writes
//! both ways.

use super::super::select::select_rdma_port;
use super::super::select::RdmaSelection;
use super::super::wire::{Channel, Endpoint, Msg, PROTO, VERSION};
use super::super::{
    Backend, ProbeRole, RdmaProbeOptions, RdmaProbeReport, RdmaServerReport, Stage,
};
use super::completions::{wait, Qp, Until};
use super::transfer::{check_peer_writes, send_writes};
use super::{
    abort, check_hello, connect_and_ready, open_queue, recv_msg, summary, Agreed, Fail, Refresh,
    Session, WR_RECV, WR_SEND,
};
use crate::error::{Error, ErrorKind, Result};
use crate::model::HostState;
use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
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
        let agreed = Agreed::from_params(&p);
        let (mut q, me) = open_queue(b, &mut s, &mut ch, &agreed, "the server")?;
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
        let r = server_traffic(&mut qp, &mut ch, &mut s, &me, &theirs, &agreed, deadline);
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
