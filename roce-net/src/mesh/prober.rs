//! One probe, level by level: who answers the neighbour request for the
//! peer's address and from which MAC; whether the IP echo leaves by the
//! source's own NIC, reaches the peer's NIC and comes back on the source's,
//! small and at the path's MTU; and, where both NICs back RDMA ports, a short
//! RC transfer with `probe rdma`. Each level's failure carries its cause,
//! evidence and fix.

use super::echo::{self, Datagram, EchoSocket, Kind, HEADER};
use super::result::{causes, LevelResult, MeshLevel, MeshStatus, NicSeen, ProbeRecord};
use super::schedule::{MeshOptions, ScheduledProbe};
use crate::host::Host;
use crate::model::{HostState, RouteDecision};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

/// The size of the small echo (a datagram any link carries).
const SMALL: usize = 128;

/// What every probe of a node shares.
pub(crate) struct Ctx<'a> {
    pub state: &'a HostState,
    #[cfg_attr(not(feature = "verbs"), allow(dead_code))]
    pub host: &'a Host,
    pub options: &'a MeshOptions,
    pub token: u64,
    pub plan: u64,
    /// Who owns each MAC of the plan: `host nic`.
    pub macs: &'a std::collections::BTreeMap<String, String>,
    /// The kernel's route for (source, destination), read before the rounds.
    pub egress: &'a HashMap<(IpAddr, IpAddr), std::result::Result<RouteDecision, String>>,
    /// This node's NICs as seen at the start.
    pub seen: &'a HashMap<String, NicSeen>,
    /// A command run on this node (over SSH, in its namespace).
    pub here: &'a (dyn Fn(&str) -> String + Sync),
    /// When the probe's round ends.
    #[cfg_attr(not(feature = "verbs"), allow(dead_code))]
    pub round_end: Instant,
    /// The libibverbs the RDMA level loads.
    #[cfg_attr(not(feature = "verbs"), allow(dead_code))]
    pub verbs: &'a crate::kernel::verbs::VerbsOptions,
}

/// Run every level of `p` that applies.
pub(crate) fn run(ctx: &Ctx<'_>, p: &ScheduledProbe) -> ProbeRecord {
    let mut levels = Vec::new();
    let down = link_down(ctx, p);
    if p.levels.neighbor {
        levels.push(down.clone().unwrap_or_else(|| neighbor(ctx, p)));
    }
    if p.levels.ip {
        levels.push(match &down {
            Some(d) if !p.levels.neighbor => d.clone().with_level(MeshLevel::Ip),
            Some(_) => skipped(MeshLevel::Ip, "the link is down"),
            None => ip(ctx, p),
        });
    }
    if p.levels.rdma {
        levels.push(match &down {
            Some(d) if !p.levels.neighbor && !p.levels.ip => d.clone().with_level(MeshLevel::Rdma),
            Some(_) => skipped(MeshLevel::Rdma, "the link is down"),
            None => rdma(ctx, p),
        });
    }
    ProbeRecord {
        round: p.round,
        intra: p.intra,
        from: p.from.name.clone(),
        to_host: p.to_host.clone(),
        to: p.to.name.clone(),
        to_address: p.to.address,
        levels,
    }
}

impl LevelResult {
    fn with_level(mut self, l: MeshLevel) -> LevelResult {
        self.level = l;
        self
    }
}

fn skipped(level: MeshLevel, why: &str) -> LevelResult {
    LevelResult::not_passed(
        level,
        MeshStatus::Skipped,
        causes::NOT_AVAILABLE,
        format!("not run: {why}"),
        0,
    )
}

fn ms(t: Instant) -> u64 {
    t.elapsed().as_millis() as u64
}

/// The prober's NIC is not up: every level would fail, so none is sent.
fn link_down(ctx: &Ctx<'_>, p: &ScheduledProbe) -> Option<LevelResult> {
    let s = ctx.seen.get(&p.from.name)?;
    if !s.is_down() {
        return None;
    }
    let state = s.oper_state.clone().unwrap_or_else(|| "gone".into());
    let mut fix = vec![(ctx.here)(&format!("ip link show dev {}", p.from.name))];
    if s.admin_up == Some(false) {
        fix.push((ctx.here)(&format!("ip link set dev {} up", p.from.name)));
    }
    Some(
        LevelResult::not_passed(
            MeshLevel::Neighbor,
            MeshStatus::Fail,
            causes::LINK_DOWN,
            format!(
                "{} is {state}{}: nothing can leave it",
                p.from.name,
                match (s.admin_up, s.carrier) {
                    (Some(false), _) => " (administratively down)",
                    (_, Some(false)) => " (no carrier: cable, transceiver or switch port)",
                    _ => "",
                }
            ),
            0,
        )
        .evidence("nic", s)
        .fix(fix),
    )
}

fn neighbor(ctx: &Ctx<'_>, p: &ScheduledProbe) -> LevelResult {
    let t0 = Instant::now();
    let (IpAddr::V4(target), IpAddr::V4(source)) = (p.to.address, p.from.address) else {
        return skipped(
            MeshLevel::Neighbor,
            "IPv6 neighbour discovery is not probed by this build (the IP and RDMA levels are)",
        );
    };
    let opts =
        crate::probe::ArpProbeOptions::new(2, Duration::from_millis(ctx.options.neighbor_ms))
            .with_source(source);
    let r = match crate::probe::probe_arp(&p.from.name, target, opts) {
        Ok(r) => r,
        Err(e) => {
            return LevelResult::not_passed(
                MeshLevel::Neighbor,
                MeshStatus::Fail,
                if e.errno_value() == Some(libc::ENETDOWN) {
                    causes::LINK_DOWN
                } else {
                    causes::PROBE_ERROR
                },
                format!("ARP request for {target} on {}: {e}", p.from.name),
                ms(t0),
            )
        }
    };
    let want = p.to.mac.as_deref().map(str::to_ascii_lowercase);
    let answered: Vec<String> = r
        .replies
        .iter()
        .map(|x| x.mac.to_string().to_ascii_lowercase())
        .collect();
    let owners: Vec<String> = answered
        .iter()
        .map(|m| match ctx.macs.get(m) {
            Some(o) => format!("{m} ({o})"),
            None => m.clone(),
        })
        .collect();
    let elapsed = ms(t0);
    let who = format!("{} {}", p.to_host, p.to.name);
    let flux_fix = |_: ()| {
        vec![
            format!("on {}: roce-net apply (arp_ignore=1, arp_announce=2: only the NIC that owns an address answers for it)", p.to_host),
            (ctx.here)(&format!("ip neigh del {target} dev {}", p.from.name)),
        ]
    };
    match answered.as_slice() {
        [] => LevelResult::not_passed(
            MeshLevel::Neighbor,
            MeshStatus::Fail,
            causes::NO_ANSWER,
            format!(
                "nobody answered ARP for {target} ({who}) on {} within {} ms",
                p.from.name, ctx.options.neighbor_ms
            ),
            elapsed,
        )
        .evidence("requests_sent", r.requests_sent)
        .fix([
            format!("check {who}: its link, and that it holds {target}"),
            (ctx.here)(&format!("ip neigh show {target}")),
        ]),
        [one] if want.as_deref().is_none_or(|w| w == one) => LevelResult::pass(
            MeshLevel::Neighbor,
            format!("{target} answered by {one} on {}", p.from.name),
            elapsed,
        ),
        [one] => {
            let owner = ctx.macs.get(one);
            let cause = if owner.is_some() {
                causes::ARP_FLUX
            } else {
                causes::WRONG_MAC
            };
            LevelResult::not_passed(
                MeshLevel::Neighbor,
                MeshStatus::Fail,
                cause,
                format!(
                    "{target} ({who}) is answered by {}, not by {}",
                    owners.join(", "),
                    want.as_deref().unwrap_or("?")
                ),
                elapsed,
            )
            .evidence("answered", &owners)
            .evidence("expected", &want)
            .fix(flux_fix(()))
        }
        _ => LevelResult::not_passed(
            MeshLevel::Neighbor,
            MeshStatus::Fail,
            causes::ARP_FLUX,
            format!(
                "{target} ({who}) is answered by {} MACs: {}",
                answered.len(),
                owners.join(", ")
            ),
            elapsed,
        )
        .evidence("answered", &owners)
        .evidence("expected", &want)
        .fix(flux_fix(())),
    }
}

/// A random probe id.
fn probe_id() -> u64 {
    let mut b = [0u8; 8];
    if !crate::sys::getrandom(&mut b) {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        return t ^ u64::from(std::process::id()) << 32;
    }
    u64::from_ne_bytes(b)
}

/// The reply to one echo of `size` bytes, or why there was none.
enum Echo {
    Reply {
        d: Datagram,
        ifindex: u32,
        rtt_us: u64,
    },
    TooBig(std::io::Error),
    SendError(std::io::Error),
    Lost,
}

fn exchange(ctx: &Ctx<'_>, sock: &EchoSocket, to: SocketAddr, size: usize, id: u64) -> Echo {
    let mut buf = vec![0u8; size.max(HEADER)];
    let mut rbuf = vec![0u8; size.max(HEADER) + 64];
    let wait = Duration::from_millis(ctx.options.ip_ms);
    let t0 = Instant::now();
    let deadline = t0 + wait;
    let mut sent = 0u32;
    let mut next = t0;
    loop {
        if Instant::now() >= next && sent < 3 {
            Datagram {
                kind: Kind::Request,
                token: ctx.token,
                plan: ctx.plan,
                probe: id,
                seq: sent,
                arrived_on: String::new(),
                reply_dev: String::new(),
            }
            .encode(&mut buf);
            if let Err(e) = sock.send_to(&buf, to) {
                if e.raw_os_error() == Some(libc::EMSGSIZE) {
                    return Echo::TooBig(e);
                }
                if sent == 0 {
                    return Echo::SendError(e);
                }
            }
            sent += 1;
            next = t0 + wait * sent / 3;
        }
        if Instant::now() >= deadline {
            return Echo::Lost;
        }
        let until = if sent < 3 {
            next.min(deadline)
        } else {
            deadline
        };
        if echo::wait_any(&[sock.raw()], echo::left(until)).is_empty() {
            continue;
        }
        while let Ok(Some(r)) = sock.try_recv(&mut rbuf) {
            let Some(d) = Datagram::decode(&rbuf[..r.len]) else {
                continue;
            };
            if d.kind == Kind::Reply
                && d.probe == id
                && d.token == ctx.token
                && r.from.ip() == to.ip()
            {
                return Echo::Reply {
                    d,
                    ifindex: r.ifindex,
                    rtt_us: t0.elapsed().as_micros() as u64,
                };
            }
        }
    }
}

fn bye(ctx: &Ctx<'_>, sock: &EchoSocket, to: SocketAddr, id: u64) {
    let mut buf = vec![0u8; HEADER];
    Datagram {
        kind: Kind::Bye,
        token: ctx.token,
        plan: ctx.plan,
        probe: id,
        seq: 0,
        arrived_on: String::new(),
        reply_dev: String::new(),
    }
    .encode(&mut buf);
    for _ in 0..2 {
        let _ = sock.send_to(&buf, to);
    }
}

fn ip(ctx: &Ctx<'_>, p: &ScheduledProbe) -> LevelResult {
    let t0 = Instant::now();
    let from = &p.from;
    let to_nic = &p.to;
    let who = format!("{} {}", p.to_host, to_nic.name);
    let peer = SocketAddr::new(to_nic.address, ctx.options.port);
    let route = ctx.egress.get(&(from.address, to_nic.address));
    let egress_dev = route
        .and_then(|r| r.as_ref().ok())
        .and_then(|d| d.dev.clone());
    let sock = match EchoSocket::bind(from.address, 0) {
        Ok(s) => s,
        Err(e) => {
            return LevelResult::not_passed(
                MeshLevel::Ip,
                MeshStatus::Fail,
                causes::PROBE_ERROR,
                format!("opening the IP echo's socket: {e}"),
                ms(t0),
            )
        }
    };
    let id = probe_id();
    let small = exchange(ctx, &sock, peer, SMALL, id);
    let mtu = from.mtu.min(to_nic.mtu);
    let large_size = echo::payload_for_mtu(mtu, from.address.is_ipv6());
    let large = match &small {
        Echo::Reply { .. } if large_size > SMALL => {
            Some(exchange(ctx, &sock, peer, large_size, id))
        }
        _ => None,
    };
    bye(ctx, &sock, peer, id);
    let elapsed = ms(t0);
    let names: HashMap<u32, &str> = ctx
        .state
        .interfaces
        .iter()
        .map(|i| (i.index, i.name.as_str()))
        .collect();
    let base = |r: LevelResult| {
        r.evidence("egress", &egress_dev).evidence(
            "route",
            route.map(|r| match r {
                Ok(d) => format!(
                    "{} from {} dev {} table {}",
                    to_nic.address,
                    from.address,
                    d.dev.as_deref().unwrap_or("?"),
                    d.table
                ),
                Err(e) => e.clone(),
            }),
        )
    };
    let fail = |cause: &str, msg: String| {
        LevelResult::not_passed(MeshLevel::Ip, MeshStatus::Fail, cause, msg, elapsed)
    };
    // The request must leave by the source's own NIC.
    if let Some(dev) = &egress_dev {
        if dev != &from.name {
            return base(fail(
                causes::ASYMMETRIC_EGRESS,
                format!(
                    "the request from {} ({}) to {} ({who}) leaves by {dev}, not {}: no source rule routes it by its own NIC",
                    from.address, from.name, to_nic.address, from.name
                ),
            ))
            .fix([(ctx.here)("roce-net apply")]);
        }
    }
    let (d, ifindex, rtt_us) = match small {
        Echo::Reply { d, ifindex, rtt_us } => (d, ifindex, rtt_us),
        Echo::Lost => {
            return base(fail(
                causes::NO_REPLY,
                format!(
                    "no reply from {} ({who}) to {SMALL}-byte echoes from {} within {} ms",
                    to_nic.address, from.name, ctx.options.ip_ms
                ),
            ))
            .fix([(ctx.here)(&format!("ip neigh show {}", to_nic.address))])
        }
        Echo::TooBig(e) | Echo::SendError(e) => {
            return base(fail(
                causes::PROBE_ERROR,
                format!(
                    "sending an echo from {} to {}: {e}",
                    from.address, to_nic.address
                ),
            ))
        }
    };
    let back_on = names.get(&ifindex).copied().unwrap_or("?");
    if d.arrived_on != to_nic.name {
        return base(fail(
            causes::ARP_FLUX,
            format!(
                "the request for {} arrived at {} on {}, not {}: this node's neighbour entry for {} holds another NIC's MAC",
                to_nic.address, p.to_host, d.arrived_on, to_nic.name, to_nic.address
            ),
        ))
        .evidence("arrived_on", &d.arrived_on)
        .fix([
            (ctx.here)(&format!("ip neigh del {} dev {}", to_nic.address, from.name)),
            format!("on {}: roce-net apply", p.to_host),
        ]);
    }
    if d.reply_dev != to_nic.name && !d.reply_dev.is_empty() {
        return base(fail(
            causes::ASYMMETRIC_EGRESS,
            format!(
                "{}'s reply from {} leaves by {}, not {}: no source rule routes it by its own NIC",
                p.to_host, to_nic.address, d.reply_dev, to_nic.name
            ),
        ))
        .evidence("reply_dev", &d.reply_dev)
        .fix([format!("on {}: roce-net apply", p.to_host)]);
    }
    if back_on != from.name {
        return base(fail(
            causes::ARP_FLUX,
            format!(
                "the reply from {} ({who}) arrived on {back_on}, not {}: {}'s neighbour entry for {} holds another NIC's MAC",
                to_nic.address, from.name, p.to_host, from.address
            ),
        ))
        .evidence("reply_arrived_on", back_on)
        .fix([
            format!("on {}: ip neigh del {} dev {}", p.to_host, from.address, to_nic.name),
            (ctx.here)("roce-net apply"),
        ]);
    }
    match large {
        None | Some(Echo::Reply { .. }) => LevelResult::pass(
            MeshLevel::Ip,
            format!(
                "echoes of {SMALL} and {large_size} bytes from {} ({}) to {} ({who}) came back on {}, round trip {} us",
                from.address, from.name, to_nic.address, from.name, rtt_us
            ),
            elapsed,
        ),
        Some(Echo::TooBig(e)) => base(fail(
            causes::MTU,
            format!(
                "a {large_size}-byte echo (MTU {mtu}) from {} to {} cannot be sent: {e}: the route's MTU is below the NICs'",
                from.address, to_nic.address
            ),
        ))
        .evidence("mtu", mtu),
        Some(_) => base(fail(
            causes::MTU,
            format!(
                "{SMALL}-byte echoes from {} to {} ({who}) pass, {large_size}-byte ones (MTU {mtu}, DF set) are lost: the path carries less than both NICs' MTU",
                from.name, to_nic.address
            ),
        ))
        .evidence("mtu", mtu)
        .evidence("nic_mtus", (from.mtu, to_nic.mtu))
        .fix([format!(
            "make the MTU of {} {}, {who} and the switch ports between them agree (ip link set dev {} mtu ...)",
            p.from_host, from.name, from.name
        )]),
    }
}

#[cfg(feature = "verbs")]
fn rdma(ctx: &Ctx<'_>, p: &ScheduledProbe) -> LevelResult {
    use crate::probe::rdma::RdmaProbeOptions;
    let t0 = Instant::now();
    let w = &ctx.options.rdma_workload;
    let token = match super::responder::token(&ctx.options.token) {
        Ok(t) => t,
        Err(e) => {
            return LevelResult::not_passed(
                MeshLevel::Rdma,
                MeshStatus::Fail,
                causes::PROBE_ERROR,
                format!("the run's token cannot be a probe rdma token: {e}"),
                0,
            )
        }
    };
    let opts = RdmaProbeOptions {
        source: Some(p.from.address),
        tcp_port: p.rdma_port,
        timeout: Duration::from_millis(ctx.options.rdma_ms),
        latency_iterations: w.latency_iterations,
        write_size: w.write_size as usize,
        write_iterations: w.write_iterations,
        token,
        verbs: ctx.verbs.clone(),
        ..RdmaProbeOptions::default()
    };
    let refresh = || ctx.host.snapshot().ok();
    let who = format!("{} {}", p.to_host, p.to.name);
    loop {
        let rep = match crate::probe::rdma::run_client(ctx.state, p.to.address, &opts, &refresh) {
            Ok(r) => r,
            Err(e) if e.kind() == crate::error::ErrorKind::NoRdma => {
                return skipped(MeshLevel::Rdma, &format!("RDMA is not available here: {e}"))
            }
            Err(e) => {
                return LevelResult::not_passed(
                    MeshLevel::Rdma,
                    MeshStatus::Fail,
                    causes::PROBE_ERROR,
                    format!(
                        "probing RDMA from {} to {}: {e}",
                        p.from.address, p.to.address
                    ),
                    ms(t0),
                )
            }
        };
        if rep.ok {
            let lat = rep.latency.as_ref().map_or(String::new(), |l| {
                format!(", send/recv median {:.1} us", l.median_us)
            });
            return LevelResult::pass(
                MeshLevel::Rdma,
                format!(
                    "RDMA from {} ({}) to {} ({who}): data verified both ways{lat}",
                    p.from.address, p.from.name, p.to.address
                ),
                ms(t0),
            );
        }
        let Some(f) = rep.failure else {
            return LevelResult::not_passed(
                MeshLevel::Rdma,
                MeshStatus::Fail,
                "unknown",
                "the RDMA probe failed without a failure report".into(),
                ms(t0),
            );
        };
        // The peer's server not listening yet (it started late): again, in the round.
        let refused = matches!(&f.value, crate::probe::rdma::FailureValue::Errno { name, .. } if name == "ECONNREFUSED");
        if refused && Instant::now() + Duration::from_millis(500) + opts.timeout < ctx.round_end {
            std::thread::sleep(Duration::from_millis(300));
            continue;
        }
        let mut r = LevelResult::not_passed(
            MeshLevel::Rdma,
            MeshStatus::Fail,
            f.cause.id(),
            f.message.clone(),
            ms(t0),
        )
        .evidence("stage", f.stage.name())
        .evidence("value", &f.value)
        .fix(f.fix.clone());
        for (k, v) in f.evidence {
            r.evidence.insert(k, v);
        }
        return r;
    }
}

#[cfg(not(feature = "verbs"))]
fn rdma(_ctx: &Ctx<'_>, _p: &ScheduledProbe) -> LevelResult {
    skipped(
        MeshLevel::Rdma,
        "this roce-net was built without the verbs feature (probe rdma)",
    )
}
