//! `roce-net probe arp`: ARP requests from one NIC, every distinct MAC that
//! answers. (`probe rdma` is `rdma.rs`.)

use super::context::{host, Context};
use super::exit;
use super::output::{out, print_json};
use crate::render;
use roce_net::{Error, ErrorKind};
use std::net::Ipv4Addr;
use std::time::Duration;

/// `probe arp --dev IF --target IP [--count N] [--timeout S]`: exit 0 when
/// exactly one MAC answered, 6 when none or several did.
pub(super) fn arp(
    cli: &Context,
    dev: &str,
    target: Ipv4Addr,
    count: u32,
    timeout: f64,
) -> Result<u8, Error> {
    if !timeout.is_finite() || timeout <= 0.0 || timeout > 3600.0 {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("--timeout must be more than 0 and at most 3600 seconds, not {timeout}"),
        ));
    }
    let opts = roce_net::ArpProbeOptions::new(count, Duration::from_secs_f64(timeout));
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
