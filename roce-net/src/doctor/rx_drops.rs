//! `rx-drops`: a NIC in scope dropped a significant share of received packets.

use super::{Ctx, Finding, Severity, Subject};
use crate::model::ifname_word;

/// Check id.
pub const ID: &str = "rx-drops";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for nic in &ctx.scope.nics {
        let Some(i) = ctx.state.interface(&nic.ifname) else {
            continue;
        };
        let s = i.stats;
        if s.rx_dropped < ctx.opts.rx_drops_min {
            continue;
        }
        let ratio = s.rx_dropped as f64 / (s.rx_packets.max(1)) as f64;
        if ratio < ctx.opts.rx_drops_ratio {
            continue;
        }
        out.push(
            Finding::new(
                ID,
                Severity::Warning,
                Subject::interface(&nic.ifname),
                format!(
                    "{} dropped {} of {} received packets ({:.3}%) since boot",
                    nic.ifname,
                    s.rx_dropped,
                    s.rx_packets,
                    ratio * 100.0
                ),
            )
            .evidence("rx_dropped", s.rx_dropped)
            .evidence("rx_packets", s.rx_packets)
            .evidence("rx_errors", s.rx_errors)
            .evidence("ratio", ratio)
            .checks(vec![
                format!(
                    "ethtool -S {} | grep -iE 'drop|discard|out_of_buffer'",
                    ifname_word(&nic.ifname)
                ),
                format!("ethtool -g {}", ifname_word(&nic.ifname)),
            ]),
        );
    }
    out
}
