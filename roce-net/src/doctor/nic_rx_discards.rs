//! `nic-rx-discards`: the NIC dropped received packets for lack of buffer
//! (mlx5 `rx_discards_phy`): the port is congested.

use super::{hw, Ctx, Finding, Severity};
use crate::model::ifname_word;

/// Check id.
pub const ID: &str = "nic-rx-discards";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for nic in hw::nics(ctx) {
        let Some(s) = nic.stats() else { continue };
        let Some(&v) = s.get("rx_discards_phy") else {
            continue;
        };
        if v < ctx.opts.rx_drops_min {
            continue;
        }
        let pfc = nic.qos().and_then(|q| q.pfc_enabled.clone());
        out.push(
            Finding::new(
                ID,
                Severity::Warning,
                nic.subject(),
                format!(
                    "{} discarded {v} received packets in the adapter for lack of receive \
                     buffer (rx_discards_phy): the port is congested, and RoCE traffic on a \
                     priority without PFC is lost and retransmitted",
                    nic.ifname
                ),
            )
            .evidence("rx_discards_phy", v)
            .evidence("rx_packets_phy", s.get("rx_packets_phy"))
            .evidence("pfc_enabled", pfc)
            .checks(vec![
                format!(
                    "ethtool -S {} | grep -E 'discard|out_of_buffer|prio[0-7]_pause'",
                    ifname_word(nic.ifname)
                ),
                format!("dcb pfc show dev {}", ifname_word(nic.ifname)),
            ]),
        );
    }
    out
}
