//! `nic-rx-out-of-buffer`: the driver had no receive buffers posted when packets
//! arrived (mlx5 `rx_out_of_buffer`): the host does not refill its rings fast
//! enough.

use super::{hw, Ctx, Finding, Severity};
use crate::model::ifname_word;

/// Check id.
pub const ID: &str = "nic-rx-out-of-buffer";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for nic in hw::nics(ctx) {
        let Some(s) = nic.stats() else { continue };
        let Some(&v) = s.get("rx_out_of_buffer") else {
            continue;
        };
        if v < ctx.opts.rx_drops_min {
            continue;
        }
        out.push(
            Finding::new(
                ID,
                Severity::Warning,
                nic.subject(),
                format!(
                    "{} dropped {v} packets because its receive rings had no buffers posted \
                     (rx_out_of_buffer): the CPU does not keep up; kernel traffic (NCCL \
                     bootstrap, TCP, storage) loses packets, RDMA itself does not",
                    nic.ifname
                ),
            )
            .evidence("rx_out_of_buffer", v)
            .fix(
                vec![format!("ethtool -G {} rx 8192", ifname_word(nic.ifname))],
                None,
            )
            .checks(vec![
                format!("ethtool -g {}", ifname_word(nic.ifname)),
                format!("ethtool -l {}", ifname_word(nic.ifname)),
            ]),
        );
    }
    out
}
