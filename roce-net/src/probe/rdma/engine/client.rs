//! The client end: choose the source, connect to the server, the latency
//! ping-pong, then the writes both ways.

use super::super::select::select_rdma_port;
use super::super::status::errno_name;
use super::super::wire::{pattern, Channel, Endpoint, Msg, Params, PROTO, VERSION};
use super::super::{
    Backend, FailureValue, Latency, ProbeRole, RdmaProbeOptions, RdmaProbeReport, Stage,
};
use super::completions::{wait, Qp, Until};
use super::transfer::{check_peer_writes, send_writes};
use super::{
    abort, check_hello, connect_and_ready, open_queue, recv_msg, summary, Agreed, Fail, Refresh,
    Session, WR_RECV, WR_SEND,
};
use crate::error::{Error, ErrorKind, Result};
use crate::fib::{fib_lookup, Flow};
use crate::model::HostState;
use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::Instant;

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
    let agreed = Agreed::from_options(opts);
    let (mut q, me) = open_queue(b, s, &mut ch, &agreed, "the client")?;
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
    let r = client_traffic(&mut qp, &mut ch, s, &me, &theirs, &agreed, deadline);
    if let Err(f) = &r {
        if f.stage != Stage::Peer {
            abort(&mut ch, f, "the client failed");
        }
    }
    r
}

fn client_traffic(
    q: &mut Qp<'_>,
    ch: &mut Channel,
    s: &mut Session<'_>,
    me: &Endpoint,
    theirs: &Endpoint,
    a: &Agreed,
    deadline: Instant,
) -> std::result::Result<(), Fail> {
    connect_and_ready(q, ch, s, me, theirs, a, deadline)?;
    // Ping-pong.
    let (lat, rounds) = (a.latency.size, a.latency.iterations);
    q.write_local(lat, &pattern(1, lat));
    let mut rtts = Vec::with_capacity(rounds as usize);
    for i in 0..rounds {
        let t = Instant::now();
        q.post_send(WR_SEND | u64::from(i), lat, lat)
            .map_err(|e| Fail::verbs(Stage::SendRecv, e))?;
        let mut want: HashSet<u64> = [WR_SEND | u64::from(i), WR_RECV | u64::from(i)].into();
        // Re-post the next receive as soon as this one completes, before the
        // server can send again.
        while !want.is_empty() {
            for c in wait(q, ch, &mut want, Until::Any, deadline, Stage::SendRecv)? {
                if c.wr_id == WR_RECV | u64::from(i) {
                    rtts.push(t.elapsed().as_secs_f64() * 1e6 / 2.0);
                    if i + 1 < rounds {
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
        iterations: rounds,
        min_us: rtts.first().copied().unwrap_or(0.0),
        median_us: percentile(&rtts, 0.5),
        p99_us: percentile(&rtts, 0.99),
        max_us: rtts.last().copied().unwrap_or(0.0),
    });
    // Writes to the server, then the server's writes to us.
    let seed = u64::from(me.psn) << 8 | 0x11;
    send_writes(q, ch, s, theirs, a.writes, seed, deadline)?;
    check_peer_writes(q, ch, s, me, a.writes, deadline)?;
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
