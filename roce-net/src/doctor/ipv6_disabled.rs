//! `ipv6-disabled`: IPv6 is disabled on a NIC in scope (`disable_ipv6=1`) while
//! other NICs in scope use it: the NIC has no IPv6 address, so no IPv6 RoCE v2
//! GID, and peers that reach the host over IPv6 GIDs cannot reach this rail.
//! An error when the NIC has no IPv4 address either (no usable RoCE v2 GID at
//! all), a warning when its IPv4 GID still carries RDMA.
//!
//! Writing 1 removes every IPv6 address of the NIC (`addrconf_ifdown`);
//! writing 0 back brings the link-local one again, not the others: the fix
//! says so, and the network stack (networkd, NetworkManager, ifupdown) must
//! add them again.

use super::{Ctx, Finding, Severity, Subject};
use crate::model::{ConfKey, ConfTarget, Family, Sysctl};

/// Check id.
pub const ID: &str = "ipv6-disabled";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let with_v6: Vec<&str> = ctx
        .scope
        .nics
        .iter()
        .filter(|n| n.address(Family::Inet6).is_some())
        .map(|n| n.ifname.as_str())
        .collect();
    if with_v6.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for nic in &ctx.scope.nics {
        if ctx
            .state
            .sysctls
            .effective(&nic.ifname, ConfKey::DisableIpv6)
            != Some(1)
        {
            continue;
        }
        let set = Sysctl::Conf {
            target: ConfTarget::Interface(nic.ifname.clone()),
            key: ConfKey::DisableIpv6,
        };
        let ipv4 = nic.address(Family::Inet).map(|a| a.address);
        let (severity, rest) = match ipv4 {
            Some(a) => (
                Severity::Warning,
                format!("RDMA over its IPv4 GID ({a}) still works, IPv6 peers cannot reach it"),
            ),
            None => (
                Severity::Error,
                "with no IPv4 address either, it has no usable RoCE v2 GID".to_string(),
            ),
        };
        out.push(
            Finding::new(
                ID,
                severity,
                Subject::interface(&nic.ifname),
                format!(
                    "IPv6 is disabled on {} (disable_ipv6=1) while {} use it: {} has no IPv6 \
                     address and so no IPv6 RoCE v2 GID ({rest}); enable it, then have the \
                     network stack add its address again (disabling removed it)",
                    nic.ifname,
                    with_v6.join(", "),
                    nic.ifname
                ),
            )
            .evidence("nics_with_ipv6", &with_v6)
            .evidence("ipv4_address", ipv4)
            .evidence("all", ctx.state.sysctls.all.get(ConfKey::DisableIpv6))
            .fix(vec![set.write_command("0")], None),
        );
    }
    out
}
