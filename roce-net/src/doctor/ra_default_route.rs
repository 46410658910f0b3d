//! `ra-default-route`: a router advertisement received on a NIC in scope put a
//! default route through it into the main table (`proto ra`). Traffic to any
//! address outside the host's prefixes may then leave by a RoCE NIC, and with
//! the same advertisement on several rails the kernel spreads it over them.
//!
//! The kernel adds such a route itself (`rt6_add_dflt_router`, `RTPROT_RA`)
//! when the NIC accepts router advertisements (`accept_ra`) and their default
//! routers (`accept_ra_defrtr`); NetworkManager and systemd-networkd, which
//! handle router advertisements themselves with the kernel's `accept_ra` at 0,
//! install theirs with the same protocol. Only the first is stopped by the
//! sysctl, so the message says which case the snapshot shows.

use super::{Ctx, Finding, Severity, Subject};
use crate::model::{protocol, ConfKey, ConfTarget, Family, IpVerb, Sysctl, RT_TABLE_MAIN};

/// Check id.
pub const ID: &str = "ra-default-route";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for nic in &ctx.scope.nics {
        let routes: Vec<_> = ctx
            .state
            .routes
            .iter()
            .filter(|r| {
                r.family == Family::Inet6
                    && r.table == RT_TABLE_MAIN
                    && r.protocol == protocol::RA
                    && r.dst.prefix_len() == 0
                    && (r.dev.as_deref() == Some(nic.ifname.as_str())
                        || r.multipath
                            .iter()
                            .any(|h| h.dev.as_deref() == Some(nic.ifname.as_str())))
            })
            .collect();
        if routes.is_empty() {
            continue;
        }
        let conf = |k| ctx.state.sysctls.effective(&nic.ifname, k);
        let accept_ra = conf(ConfKey::AcceptRa);
        let defrtr = conf(ConfKey::AcceptRaDefrtr);
        let forwarding = conf(ConfKey::Forwarding);
        // The kernel processes router advertisements with accept_ra 1 on a
        // host that does not forward, or with 2 (net/ipv6/ndisc.c, ipv6_accept_ra).
        let kernel_takes_ra = match accept_ra {
            Some(2) => true,
            Some(1) => forwarding != Some(1),
            Some(_) => false,
            None => true,
        };
        let mut cmds = Vec::new();
        if kernel_takes_ra && defrtr != Some(0) {
            cmds.push(
                Sysctl::Conf {
                    target: ConfTarget::Interface(nic.ifname.clone()),
                    key: ConfKey::AcceptRaDefrtr,
                }
                .write_command("0"),
            );
        }
        cmds.extend(routes.iter().map(|r| r.ip_command(IpVerb::Delete)));
        let shown = routes
            .iter()
            .map(|r| r.to_string())
            .collect::<Vec<_>>()
            .join("; ");
        let who = if kernel_takes_ra {
            "the kernel takes its routers as default routers (accept_ra_defrtr); turn that \
             off before deleting the route, or the next advertisement adds it again"
                .to_string()
        } else {
            format!(
                "the kernel takes no advertisements on {} (accept_ra=0), so a network manager \
                 installed it: NetworkManager `ipv6.never-default yes`, systemd-networkd \
                 `[IPv6AcceptRA] UseGateway=no`, or no IPv6 autoconfiguration on this NIC",
                nic.ifname
            )
        };
        out.push(
            Finding::new(
                ID,
                Severity::Warning,
                Subject::interface(&nic.ifname),
                format!(
                    "a router advertisement on {} put a default route through it in the main \
                     table ({shown}): traffic to any other network may leave by this RoCE NIC; \
                     {who}",
                    nic.ifname,
                ),
            )
            .evidence(
                "routes",
                routes.iter().map(|r| r.to_string()).collect::<Vec<_>>(),
            )
            .evidence("accept_ra_defrtr", defrtr)
            .evidence("accept_ra", accept_ra)
            .evidence("forwarding", forwarding)
            .evidence("kernel_takes_ra", kernel_takes_ra)
            .fix(cmds, Some("ipv6.accept_ra_defrtr: 0")),
        );
    }
    out
}
