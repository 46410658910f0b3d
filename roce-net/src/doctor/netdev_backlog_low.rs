//! `netdev-backlog-low`: `net.core.netdev_max_backlog` is below the recommended
//! value for fast NICs (kernel-path traffic only: NCCL bootstrap, storage, TCP).

use super::{Ctx, Finding, Severity, Subject};

/// Check id.
pub const ID: &str = "netdev-backlog-low";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    if ctx.scope.nics.is_empty() {
        return Vec::new();
    }
    let Some(v) = ctx.state.sysctls.tuning.netdev_max_backlog else {
        return Vec::new();
    };
    let want = ctx.opts.min_netdev_max_backlog;
    if v >= want {
        return Vec::new();
    }
    vec![Finding::new(
        ID,
        Severity::Info,
        Subject::default(),
        format!(
            "net.core.netdev_max_backlog is {v}; {want} or more avoids drops at high packet rates"
        ),
    )
    .evidence("value", v)
    .evidence("recommended", want)
    .fix(
        vec![
            crate::model::Sysctl::Tuning(crate::model::TuningKey::NetdevMaxBacklog)
                .write_command(&want.to_string()),
        ],
        Some(&format!("tuning.netdev_max_backlog: {want}")),
    )]
}
