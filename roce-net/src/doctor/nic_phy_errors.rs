//! `nic-phy-errors`: frames with CRC or symbol errors at the physical layer
//! (mlx5 `rx_crc_errors_phy`, `rx_symbol_err_phy`): cable, transceiver or switch
//! port.

use super::{hw, Ctx, Finding, Severity};
use crate::model::ifname_word;

/// Check id.
pub const ID: &str = "nic-phy-errors";

const COUNTERS: [&str; 2] = ["rx_crc_errors_phy", "rx_symbol_err_phy"];

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for nic in hw::nics(ctx) {
        let Some(s) = nic.stats() else { continue };
        let seen: std::collections::BTreeMap<&str, u64> = COUNTERS
            .iter()
            .filter_map(|c| s.get(*c).map(|v| (*c, *v)))
            .filter(|(_, v)| *v > 0)
            .collect();
        let total: u64 = seen.values().sum();
        if seen.is_empty() || total < ctx.opts.phy_errors_min {
            continue;
        }
        out.push(
            Finding::new(
                ID,
                Severity::Warning,
                nic.subject(),
                format!(
                    "{} received {total} frames with physical-layer errors ({}): a bad cable, \
                     transceiver or switch port corrupts traffic, and every corrupted RoCE \
                     packet is a retransmission",
                    nic.ifname,
                    seen.keys().copied().collect::<Vec<_>>().join(", ")
                ),
            )
            .evidence("counters", &seen)
            .checks(vec![
                format!("ethtool {}", ifname_word(nic.ifname)),
                format!("ethtool -m {}", ifname_word(nic.ifname)),
                format!("ethtool -S {} | grep -E '_phy:'", ifname_word(nic.ifname)),
            ]),
        );
    }
    out
}
