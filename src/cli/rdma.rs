//! `roce-net probe rdma` and `roce-net verbs`: arguments, the library calls and
//! their rendering. Built with or without the `verbs` feature; without it both
//! answer "built without verbs" (exit 69).

use super::exit;
use clap::Args;
use roce_net::{Error, ErrorKind, Host, VerbsView};
use std::fmt::Write;
use std::net::IpAddr;
use std::path::PathBuf;

/// `probe rdma` options.
#[derive(Args, Debug)]
pub struct RdmaArgs {
    /// The server's address (its RDMA address, or any address it listens on).
    /// Omit with --server.
    #[arg(required_unless_present = "server", conflicts_with = "server")]
    pub peer: Option<IpAddr>,
    /// Run the server: accept clients until --clients sessions ran or --duration passed.
    #[arg(long)]
    pub server: bool,
    /// The local RDMA address to probe from (client default: the route's source
    /// for PEER; required with --server).
    #[arg(long, value_name = "IP")]
    pub source: Option<IpAddr>,
    /// RDMA device to use (must back the source address's netdev).
    #[arg(long, short = 'd', value_name = "DEV")]
    pub device: Option<String>,
    /// Port of the device.
    #[arg(long, short = 'i', value_name = "PORT")]
    pub ib_port: Option<u32>,
    /// GID index to use instead of the RoCE v2 GID of the source address.
    #[arg(long, short = 'x', value_name = "INDEX")]
    pub gid_index: Option<u32>,
    /// TCP port for the exchange.
    #[arg(long, value_name = "PORT", default_value_t = 18520)]
    pub tcp_port: u16,
    /// Server: the address to listen on (default: --source; 0.0.0.0 or :: for
    /// every address of the namespace).
    #[arg(long, value_name = "IP", requires = "server")]
    pub listen: Option<IpAddr>,
    /// A file holding the token both ends must prove they share before either
    /// says who it is (default: the environment variable ROCE_NET_PROBE_TOKEN,
    /// else none). 16 to 1024 bytes; one trailing newline is not part of it.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Bytes per RDMA write. Server: the largest a client may ask for (what
    /// it registers per client).
    #[arg(long, value_name = "BYTES", default_value_t = 65536)]
    pub size: usize,
    /// RDMA writes each way.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub iterations: u32,
    /// Bytes per send/recv message in the latency test. Server: the largest a
    /// client may ask for.
    #[arg(long, value_name = "BYTES", default_value_t = 64)]
    pub latency_size: usize,
    /// Round trips in the latency test.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub latency_iterations: u32,
    /// Path MTU (256..4096) instead of the smaller active MTU of both ports.
    #[arg(long, value_name = "BYTES")]
    pub mtu: Option<u32>,
    /// Client: seconds the whole probe may take. Server: per session.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    pub timeout: f64,
    /// Server: stop after this many client sessions.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub clients: usize,
    /// Server: stop accepting after this many seconds.
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    pub duration: f64,
    /// libibverbs to load (soname or path) instead of libibverbs.so.1.
    #[arg(long, value_name = "PATH")]
    pub libibverbs: Option<PathBuf>,
}

fn seconds(what: &str, v: f64) -> Result<std::time::Duration, Error> {
    if !v.is_finite() || v <= 0.0 || v > 86400.0 {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("--{what} must be more than 0 and at most 86400 seconds, not {v}"),
        ));
    }
    Ok(std::time::Duration::from_secs_f64(v))
}

/// `--libibverbs` as the library's option (`probe rdma`, `verbs`, `mesh run`).
pub(super) fn verbs_opts(lib: &Option<PathBuf>) -> roce_net::VerbsOptions {
    let o = roce_net::VerbsOptions::default();
    match lib {
        Some(l) => o.with_library(l.clone()),
        None => o,
    }
}

/// Run `probe rdma`.
pub fn probe(host: &Host, a: &RdmaArgs, json: bool) -> Result<u8, Error> {
    let timeout = seconds("timeout", a.timeout)?;
    let duration = seconds("duration", a.duration)?;
    if a.server && a.source.is_none() {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            "--server needs --source: the local RDMA address clients reach over RDMA",
        ));
    }
    run(host, a, timeout, duration, json)
}

#[cfg(not(feature = "verbs"))]
fn run(
    _host: &Host,
    a: &RdmaArgs,
    _timeout: std::time::Duration,
    _duration: std::time::Duration,
    _json: bool,
) -> Result<u8, Error> {
    let v = roce_net::verbs_view(&verbs_opts(&a.libibverbs));
    let detail = v
        .unavailable
        .map(|n| n.detail)
        .unwrap_or_else(|| "built without the verbs feature".into());
    Err(Error::new(
        ErrorKind::NoRdma,
        format!("not_built: {detail}"),
    ))
}

#[cfg(feature = "verbs")]
fn run(
    host: &Host,
    a: &RdmaArgs,
    timeout: std::time::Duration,
    duration: std::time::Duration,
    json: bool,
) -> Result<u8, Error> {
    let mut o = roce_net::RdmaProbeOptions::default();
    o.source = a.source;
    o.device = a.device.clone();
    o.port = a.ib_port;
    o.gid_index = a.gid_index;
    o.tcp_port = a.tcp_port;
    o.write_size = a.size;
    o.write_iterations = a.iterations;
    o.latency_size = a.latency_size;
    o.latency_iterations = a.latency_iterations;
    o.mtu = a.mtu;
    o.listen = a.listen;
    o.token = token(a)?;
    o.timeout = timeout;
    o.clients = a.clients;
    o.duration = duration;
    o.verbs = verbs_opts(&a.libibverbs);
    if a.server {
        let r = host.probe_rdma_server(&o)?;
        if json {
            super::output::print_json(&r)?;
        } else {
            let mut s = format!(
                "probe rdma server on {}: {} session(s), {} connection(s) refused, stopped on {}\n",
                r.listen,
                r.sessions.len(),
                r.rejected_count,
                r.stopped
            );
            for x in &r.sessions {
                s.push_str(&report(x));
            }
            s.push_str(&rejected(&r));
            super::output::out(&s);
        }
        return Ok(exit::for_probe(r.ok));
    }
    let peer = a
        .peer
        .ok_or_else(|| Error::new(ErrorKind::InvalidInput, "give PEER or --server"))?;
    let r = host.probe_rdma(peer, &o)?;
    if json {
        super::output::print_json(&r)?;
    } else {
        super::output::out(&report(&r));
    }
    Ok(exit::for_probe(r.ok))
}

/// The environment variable holding the probe token when `--token-file` is
/// not given.
#[cfg(feature = "verbs")]
const TOKEN_ENV: &str = "ROCE_NET_PROBE_TOKEN";

/// The probe token: `--token-file`, else `ROCE_NET_PROBE_TOKEN`, else none.
#[cfg(feature = "verbs")]
fn token(a: &RdmaArgs) -> Result<Option<roce_net::ProbeToken>, Error> {
    use std::os::unix::ffi::OsStringExt;
    if let Some(p) = &a.token_file {
        return roce_net::ProbeToken::from_file(p).map(Some);
    }
    match std::env::var_os(TOKEN_ENV) {
        Some(v) if !v.is_empty() => {
            roce_net::ProbeToken::new(v.into_vec())
                .map(Some)
                .map_err(|e| {
                    Error::new(
                        ErrorKind::InvalidInput,
                        format!("{TOKEN_ENV}: {}", e.message()),
                    )
                })
        }
        _ => Ok(None),
    }
}

/// The connections a server refused, one line each.
#[cfg(feature = "verbs")]
fn rejected(r: &roce_net::RdmaServerReport) -> String {
    let mut s = String::new();
    for x in &r.rejected {
        let _ = writeln!(
            s,
            "refused {} after {} ms: {}",
            x.peer_tcp, x.elapsed_ms, x.reason
        );
    }
    let more = r.rejected_count.saturating_sub(r.rejected.len() as u64);
    if more > 0 {
        let _ = writeln!(s, "refused {more} more connection(s)");
    }
    s
}

#[cfg(feature = "verbs")]
fn endpoint(e: &roce_net::EndpointSummary) -> String {
    format!(
        "{} {}:{} gid {} ({}) {} mtu {}",
        e.host,
        e.device,
        e.port,
        e.gid_index,
        e.address,
        e.netdev.as_deref().unwrap_or("?"),
        e.active_mtu.map(|m| m.to_string()).unwrap_or("?".into())
    )
}

/// One session, for people.
#[cfg(feature = "verbs")]
pub fn report(r: &roce_net::RdmaProbeReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} {}{} ({} ms)",
        if r.ok { "OK" } else { "FAILED" },
        r.local.as_ref().map(endpoint).unwrap_or_default(),
        r.peer
            .as_ref()
            .map(|p| format!(" <-> {}", endpoint(p)))
            .unwrap_or_else(|| r
                .peer_tcp
                .as_ref()
                .map(|t| format!(" <-> {t}"))
                .unwrap_or_default()),
        r.elapsed_ms
    );
    if let Some(m) = r.path_mtu {
        let _ = writeln!(s, "  path MTU {m}");
    }
    if let Some(l) = &r.latency {
        let _ = writeln!(
            s,
            "  send/recv {} B x {}: latency min {:.2} us, median {:.2} us, p99 {:.2} us, max {:.2} us",
            l.size, l.iterations, l.min_us, l.median_us, l.p99_us, l.max_us
        );
    }
    for (what, b) in [
        ("write to peer  ", &r.write_to_peer),
        ("write from peer", &r.write_from_peer),
    ] {
        if let Some(b) = b {
            let _ = writeln!(
                s,
                "  RDMA {what} {} B x {}: {:.2} Gb/s{}",
                b.size,
                b.iterations,
                b.gbit_per_s,
                if b.verified {
                    ", data verified"
                } else {
                    ", DATA DIFFERS"
                }
            );
        }
    }
    if let Some(f) = &r.failure {
        let _ = writeln!(s, "  {}", f.message);
        for (k, v) in &f.evidence {
            let _ = writeln!(s, "    {k}: {v}");
        }
        for c in &f.fix {
            let _ = writeln!(s, "    fix: {c}");
        }
    }
    for n in &r.notes {
        let _ = writeln!(s, "  note: {n}");
    }
    s
}

/// `roce-net verbs`: the verbs view, or why there is none (exit 69).
pub fn verbs(host: &Host, lib: &Option<PathBuf>, json: bool) -> Result<u8, Error> {
    let v = host.verbs_view(&verbs_opts(lib));
    if json {
        super::output::print_json(&v)?;
    } else {
        super::output::out(&render_view(&v));
    }
    Ok(if v.unavailable.is_some() {
        exit::NO_RDMA
    } else {
        exit::OK
    })
}

fn render_view(v: &VerbsView) -> String {
    let mut s = String::new();
    if let Some(n) = &v.unavailable {
        let _ = writeln!(s, "no RDMA ({}): {}", n.reason, n.detail);
        return s;
    }
    let _ = writeln!(
        s,
        "{} ({} GID query)",
        v.library.as_deref().unwrap_or("libibverbs"),
        v.gid_query
            .map(|q| format!("{q:?}").to_lowercase())
            .unwrap_or("no".into())
    );
    for d in &v.devices {
        if let Some(e) = &d.error {
            let _ = writeln!(s, "{}: {e}", d.name);
            continue;
        }
        for p in &d.ports {
            let _ = writeln!(
                s,
                "{} port {}: {} {} {} active_mtu {}",
                d.name,
                p.port,
                p.state,
                p.phys_state.as_deref().unwrap_or("?"),
                p.link_layer.as_deref().unwrap_or("?"),
                p.active_mtu.map(|m| m.to_string()).unwrap_or("?".into())
            );
            for g in &p.gids {
                let _ = writeln!(
                    s,
                    "  {:>3} {} {}",
                    g.index,
                    g.gid,
                    g.gid_type
                        .as_ref()
                        .map(|t| t.short().to_string())
                        .unwrap_or("?".into())
                );
            }
        }
    }
    for w in &v.warnings {
        let _ = writeln!(s, "warning: {}: {}", w.source, w.message);
    }
    s
}
