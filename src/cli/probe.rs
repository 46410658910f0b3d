//! `roce-net probe arp` and `probe nd`: ARP requests (IPv4) or neighbour
//! solicitations (IPv6) from one NIC, every distinct MAC that answers.
//! (`probe rdma` is `rdma.rs`.)

use super::context::{host, Context};
use super::exit;
use super::output::{out, print_json};
use crate::render;
use roce_net::{Error, ErrorKind};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Duration;

/// `--timeout` of both probes, checked: more than 0, at most an hour.
fn probe_timeout(timeout: f64) -> Result<Duration, Error> {
    if !timeout.is_finite() || timeout <= 0.0 || timeout > 3600.0 {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("--timeout must be more than 0 and at most 3600 seconds, not {timeout}"),
        ));
    }
    Ok(Duration::from_secs_f64(timeout))
}

/// `probe arp --dev IF --target IP [--count N] [--timeout S] [--source IP]`:
/// exit 0 when exactly one MAC answered, 6 when none or several did.
pub(super) fn arp(
    cli: &Context,
    dev: &str,
    target: Ipv4Addr,
    count: u32,
    timeout: f64,
    source: Option<Ipv4Addr>,
) -> Result<u8, Error> {
    let mut opts = roce_net::ArpProbeOptions::new(count, probe_timeout(timeout)?);
    if let Some(s) = source {
        opts = opts.with_source(s);
    }
    let r = host(cli)?.probe_arp(dev, target, opts)?;
    if cli.json {
        print_json(&r)?;
    } else {
        out(&render::arp_probe(dev, target, &r));
    }
    // One MAC answering is the only healthy outcome: none means the
    // address is unreachable, several mean ARP flux.
    Ok(exit::for_probe(r.replies.len() == 1))
}

/// `probe nd --dev IF --target IPV6 [--count N] [--timeout S] [--source
/// IPV6]`: IPv6's `probe arp`, the same exit codes (0 when exactly one MAC
/// was advertised, 6 when none or several were).
pub(super) fn nd(
    cli: &Context,
    dev: &str,
    target: Ipv6Addr,
    count: u32,
    timeout: f64,
    source: Option<Ipv6Addr>,
) -> Result<u8, Error> {
    let mut opts = roce_net::NdProbeOptions::new(count, probe_timeout(timeout)?);
    if let Some(s) = source {
        opts = opts.with_source(s);
    }
    let r = host(cli)?.probe_nd(dev, target, opts)?;
    if cli.json {
        print_json(&r)?;
    } else {
        out(&render::nd_probe(dev, target, &r));
    }
    // As for ARP: none is unreachable, several is a NIC answering for an
    // address that is not its own (proxy ND, a duplicate address).
    Ok(exit::for_probe(r.replies.len() == 1))
}
