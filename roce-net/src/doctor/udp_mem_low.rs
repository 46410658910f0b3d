//! `udp-mem-low`: `net.ipv4.udp_mem` is below what multi-NIC RoCE hosts need for
//! their UDP traffic (RoCE v2's kernel-side traffic, NCCL's socket transport,
//! storage): the seed case's RX drops went away only after raising it.

use super::{Ctx, Finding, Severity, Subject};

/// Check id.
pub const ID: &str = "udp-mem-low";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    if ctx.scope.nics.is_empty() {
        return Vec::new();
    }
    let Some(v) = ctx.state.sysctls.tuning.udp_mem else {
        return Vec::new();
    };
    let want = ctx.opts.min_udp_mem;
    if v.iter().zip(want.iter()).all(|(a, b)| a >= b) {
        return Vec::new();
    }
    let text = |x: [u64; 3]| format!("{} {} {}", x[0], x[1], x[2]);
    vec![Finding::new(
        ID,
        Severity::Info,
        Subject::default(),
        format!(
            "net.ipv4.udp_mem is {} pages (min pressure max); below {} UDP sockets start \
             dropping under load",
            text(v),
            text(want)
        ),
    )
    .evidence("value", v)
    .evidence("recommended", want)
    .fix(
        vec![format!("sysctl -w net.ipv4.udp_mem='{}'", text(want))],
        Some(&format!(
            "tuning.udp_mem: [{}, {}, {}]",
            want[0], want[1], want[2]
        )),
    )]
}
