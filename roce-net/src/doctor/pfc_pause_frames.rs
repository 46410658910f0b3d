//! `pfc-pause-frames`: per-priority pause frames (mlx5 `rx_prio<N>_pause`,
//! `tx_prio<N>_pause`) on a priority without PFC, or in large numbers.

use super::{hw, Ctx, Finding, Severity};
use crate::model::ifname_word;

/// Check id.
pub const ID: &str = "pfc-pause-frames";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for nic in hw::nics(ctx) {
        let Some(s) = nic.stats() else { continue };
        let rx = hw::per_prio(s, "rx_prio", "_pause");
        let tx = hw::per_prio(s, "tx_prio", "_pause");
        let prios: std::collections::BTreeSet<u8> = rx.keys().chain(tx.keys()).copied().collect();
        let qos = nic.qos();
        let pfc = qos.and_then(|q| q.pfc_enabled.clone());
        for p in prios {
            let (r, t) = (
                rx.get(&p).copied().unwrap_or(0),
                tx.get(&p).copied().unwrap_or(0),
            );
            let off = pfc.as_ref().is_some_and(|v| !v.contains(&p));
            let (sev, msg) = if off {
                (
                    Severity::Warning,
                    format!(
                        "{} counted pause frames on priority {p} (received {r}, sent {t}), \
                         where PFC is off: the switch and the host disagree about which \
                         priority is lossless",
                        nic.ifname
                    ),
                )
            } else if r.saturating_add(t) >= ctx.opts.pause_frames_min {
                (
                    Severity::Info,
                    format!(
                        "{} counted {} pause frames on priority {p} (received {r}, sent {t}): \
                         heavy congestion on the lossless class{}",
                        nic.ifname,
                        r.saturating_add(t),
                        if r > t {
                            " (mostly from the switch: the fabric is congested)"
                        } else {
                            " (mostly sent: this host does not drain its receive queue)"
                        }
                    ),
                )
            } else {
                continue;
            };
            out.push(
                Finding::new(ID, sev, nic.subject(), msg)
                    .evidence("priority", p)
                    .evidence("rx_pause", r)
                    .evidence("tx_pause", t)
                    .evidence("pfc_enabled", &pfc)
                    .checks(vec![
                        format!("dcb pfc show dev {}", ifname_word(nic.ifname)),
                        format!(
                            "ethtool -S {} | grep -E 'prio{p}_'",
                            ifname_word(nic.ifname)
                        ),
                    ]),
            );
        }
    }
    out
}
