//! `ipv6-dad`: an IPv6 address of a NIC in scope failed duplicate address
//! detection (another host answered for it), or is still in it. The kernel
//! never uses a `dadfailed` address as a source, and refuses one still
//! `tentative` (without `optimistic`) as a route's `src`, so neither carries
//! RoCE traffic: the address's GID is of no use until DAD succeeds.

use super::{Ctx, Finding, Severity, Subject};
use crate::model::{AddressFlag, ConfKey, Family, OperState};

/// Check id.
pub const ID: &str = "ipv6-dad";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for nic in &ctx.scope.nics {
        for a in nic.global_of(Family::Inet6) {
            if a.has(AddressFlag::Temporary) || a.is_usable() {
                continue;
            }
            let link = ctx.state.interface(&nic.ifname);
            let up = link.is_some_and(|l| l.oper_state == OperState::Up);
            let gid = nic.rdma_ports.iter().find_map(|r| {
                let p = crate::scope::find_port(ctx.state, r)?;
                crate::scope::roce_v2_gid_index(p, a.address).map(|i| format!("{r} index {i}"))
            });
            let failed = a.has(AddressFlag::Dadfailed);
            let (sev, msg, cmds) = if failed {
                (
                    Severity::Error,
                    format!(
                        "{} on {} failed duplicate address detection: another host on the link \
                         holds it, and the kernel will not use it (nor its RoCE GID) until the \
                         duplicate is gone and the address is added again",
                        a.address, nic.ifname
                    ),
                    vec![
                        a.ip_command(crate::model::IpVerb::Delete),
                        a.ip_command(crate::model::IpVerb::Add),
                    ],
                )
            } else if !up {
                (
                    Severity::Warning,
                    format!(
                        "{} on {} is still tentative: duplicate address detection waits for \
                         the link, which is not up; until it finishes the address carries no \
                         traffic",
                        a.address, nic.ifname
                    ),
                    vec![format!(
                        "ip link set dev {} up",
                        crate::model::ifname_word(&nic.ifname)
                    )],
                )
            } else {
                (
                    Severity::Warning,
                    format!(
                        "{} on {} is still tentative (duplicate address detection runs: a \
                         second or so, longer with dad_transmits); until it finishes the \
                         address carries no traffic",
                        a.address, nic.ifname
                    ),
                    Vec::new(),
                )
            };
            out.push(
                Finding::new(
                    ID,
                    sev,
                    Subject::interface(&nic.ifname).with_address(a.address),
                    msg,
                )
                .evidence("address", format!("{}/{}", a.address, a.prefix_len))
                .evidence("flags", &a.flags)
                .evidence("oper_state", link.map(|l| l.oper_state))
                .evidence(
                    "accept_dad",
                    ctx.state.sysctls.effective(&nic.ifname, ConfKey::AcceptDad),
                )
                .evidence("gid", gid)
                .fix(cmds, None)
                .checks(vec![format!(
                    "ip -6 addr show dev {}",
                    crate::model::ifname_word(&nic.ifname)
                )]),
            );
        }
    }
    out
}
