//! `rp-filter-strict`: strict reverse-path filtering drops replies that arrive on a
//! NIC other than the one the main table would use to reach the sender.

use super::{inet_sysctl_findings, Ctx, Finding};
use crate::model::ConfKey;

/// Check id.
pub const ID: &str = "rp-filter-strict";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    // max(all, iface): raising the interface to 2 is enough.
    let want = (ConfKey::RpFilter, 2);
    inet_sysctl_findings(ctx, ID, want, "rp_filter: loose", |nic, eff| {
        (eff == 1).then(|| {
            format!(
                "{nic} has strict rp_filter (1): packets whose reverse route leaves by another \
                 NIC are dropped (want loose, 2)"
            )
        })
    })
}
