//! The client end: choose the source, connect to the server, the latency
//! ping-pong, then the writes both ways.

use super::super::select::select_rdma_port;
use super::super::status::errno_name;
use super::super::token::{self, ProbeToken, Prover};
use super::super::wire::{pattern, Channel, Endpoint, Msg, Params, PROTO, VERSION};
use super::super::{
    Backend, FailureValue, Latency, ProbeRole, RdmaProbeOptions, RdmaProbeReport, Stage,
};
use super::completions::{wait, Qp, Until};
use super::transfer::{check_peer_writes, send_writes};
use super::{
    abort, connect_and_ready, expect_hello, open_queue, recv_msg, summary, Agreed, Fail, Refresh,
    Session, WR_RECV, WR_SEND,
};
use crate::error::{Error, ErrorKind, Result};
use crate::fib::{fib_lookup, Flow};
use crate::model::HostState;
use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};
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
    let r = client_run(b, &mut s, source, peer, opts, deadline);
    Ok(s.finish(r, refresh))
}

fn client_run(
    b: &dyn Backend,
    s: &mut Session<'_>,
    source: IpAddr,
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
    // From the source address, so the exchange leaves by the source's own
    // NIC as the RDMA traffic does (a per-NIC source rule applies to it),
    // not by whatever NIC the main table picks for the peer.
    let tcp = crate::sys::tcp_connect_from(source, addr, left).map_err(|e| {
        Fail::new(
            Stage::Connect,
            match e.errno_value() {
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
    // Greet with nothing that identifies this end, and check the server's
    // proof of the token before saying who we are.
    let ours = token::nonce().ok_or_else(|| {
        Fail::other(
            Stage::Token,
            "the kernel's random pool could not be read for a nonce",
        )
    })?;
    ch.send(
        &Msg::Greeting {
            proto: PROTO.into(),
            version: VERSION,
            nonce: ours.clone(),
        },
        deadline,
    )
    .map_err(|e| Fail::wire(Stage::Exchange, e))?;
    let theirs_nonce = server_challenge(&mut ch, opts.token.as_ref(), &ours, deadline)?;
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
            endpoint: Box::new(me.clone()),
            params: Some(params),
            proof: Some(token::proof(
                opts.token.as_ref(),
                Prover::Client,
                &ours,
                &theirs_nonce,
            )),
        },
        deadline,
    )
    .map_err(|e| Fail::wire(Stage::Exchange, e))?;
    let (theirs, _, _) = expect_hello(
        recv_msg(&mut ch, deadline, Stage::Exchange)?,
        Stage::Exchange,
    )?;
    if let Err(why) = theirs.check() {
        let f = Fail::other(Stage::Exchange, format!("the server sent {why}"));
        abort(&mut ch, &f, "the client refused the server's hello");
        return Err(f);
    }
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

/// The server's answer to our greeting: its nonce, once its proof of the
/// token checked out. A mismatch fails at [`Stage::Token`] (the server is
/// told, without anything that identifies this end).
fn server_challenge(
    ch: &mut Channel,
    tok: Option<&ProbeToken>,
    ours: &str,
    deadline: Instant,
) -> std::result::Result<String, Fail> {
    let m = match ch.recv(deadline) {
        Ok(m) => m,
        Err(e) if e.closed => {
            return Err(Fail::other(
                Stage::Exchange,
                format!(
                    "the server closed the connection on this client's greeting: it refused \
                     this client (its report says why), or it runs another roce-net version \
                     (this one speaks protocol {VERSION})"
                ),
            ))
        }
        Err(e) => return Err(Fail::wire(Stage::Exchange, e)),
    };
    let (proto, version, nonce, proof) = match m {
        Msg::Challenge {
            proto,
            version,
            nonce,
            proof,
        } => (proto, version, nonce, proof),
        Msg::Abort { .. } => return Err(super::peer_stop(Stage::Exchange, Ok(m))),
        other => {
            return Err(Fail::other(
                Stage::Exchange,
                format!("expected the server's challenge, got {}", other.name()),
            ))
        }
    };
    if proto != PROTO || version != VERSION {
        return Err(Fail::other(
            Stage::Exchange,
            format!(
                "the server speaks {proto:?} version {version}, this client {PROTO} version \
                 {VERSION}: run the same roce-net version on both ends"
            ),
        ));
    }
    if !token::is_nonce(&nonce) {
        return Err(Fail::other(
            Stage::Exchange,
            "the server's challenge has no valid nonce",
        ));
    }
    if token::verify(tok, Prover::Server, ours, &nonce, &proof) {
        return Ok(nonce);
    }
    let why = match tok {
        Some(_) if token::verify(None, Prover::Server, ours, &nonce, &proof) => {
            "the server has no probe token, this client has one"
        }
        Some(_) => "the server holds another probe token than this client",
        None => "the server requires a probe token, this client has none",
    };
    let f = Fail::other(Stage::Token, why);
    abort(
        ch,
        &f,
        "the client refused the server's proof of the probe token",
    );
    Err(f)
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
