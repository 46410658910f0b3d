//! `pfc-pause-storm`: the adapter's pause-storm watchdog fired (mlx5
//! `tx_pause_storm_warning_events`, `tx_pause_storm_error_events`).

use super::{hw, Ctx, Finding, Severity};
use crate::model::ifname_word;

/// Check id.
pub const ID: &str = "pfc-pause-storm";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for nic in hw::nics(ctx) {
        let Some(s) = nic.stats() else { continue };
        let err = s.get("tx_pause_storm_error_events").copied().unwrap_or(0);
        let warn = s.get("tx_pause_storm_warning_events").copied().unwrap_or(0);
        if err == 0 && warn == 0 {
            continue;
        }
        let (sev, what) = if err > 0 {
            (
                Severity::Error,
                "sent pause frames for so long that its watchdog stopped sending them \
                 (tx_pause_storm_error_events): the host could not drain its receive queue, \
                 and with pause off the lossless class drops packets",
            )
        } else {
            (
                Severity::Warning,
                "sent pause frames continuously long enough to raise the storm warning \
                 (tx_pause_storm_warning_events): the host is not draining its receive queue",
            )
        };
        out.push(
            Finding::new(ID, sev, nic.subject(), format!("{} {what}", nic.ifname))
                .evidence("tx_pause_storm_error_events", err)
                .evidence("tx_pause_storm_warning_events", warn)
                .evidence(
                    "tx_pause_per_priority",
                    hw::per_prio(s, "tx_prio", "_pause"),
                )
                .checks(vec![
                    format!(
                        "ethtool -S {} | grep -E 'pause|discard|out_of_buffer'",
                        ifname_word(nic.ifname)
                    ),
                    "dmesg | grep -i 'pause storm'".to_string(),
                ]),
        );
    }
    out
}
