//! `roce-priority-no-pfc`: the priority RoCE traffic lands on at this NIC has no
//! PFC.

use super::{hw, Ctx, Finding, Severity};
use crate::model::ifname_word;

/// Check id.
pub const ID: &str = "roce-priority-no-pfc";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for nic in hw::nics(ctx) {
        if nic.port.is_none() {
            continue;
        }
        let Some(q) = nic.qos() else { continue };
        let Some(pfc) = &q.pfc_enabled else { continue };
        let (tos, why) = hw::roce_tos(ctx, &nic);
        let Some(prio) = q.priority_for_tc(tos, 0) else {
            continue;
        };
        if pfc.contains(&prio) {
            continue;
        }
        let trust = q.trust.map(|t| t.to_string());
        let (sev, msg) = if pfc.is_empty() {
            (
                Severity::Info,
                format!(
                    "{}: PFC is off on every priority, so RoCE runs lossy (it then relies on \
                     ECN and the adapter's retransmission); TOS {tos} from {why} lands on \
                     priority {prio}",
                    nic.ifname
                ),
            )
        } else {
            (
                Severity::Warning,
                format!(
                    "{}: RoCE traffic with TOS {tos} (DSCP {}, from {why}) lands on priority \
                     {prio} (trust {}), but PFC is on priority {}: that traffic is lossy while \
                     the fabric expects it lossless",
                    nic.ifname,
                    tos >> 2,
                    trust.as_deref().unwrap_or("unknown"),
                    pfc.iter()
                        .map(|p| p.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                ),
            )
        };
        // Every fix entry is a command to paste; the other way out (a traffic
        // class PFC already covers) is said in the message.
        let checks = vec![format!("dcb pfc show dev {}", ifname_word(nic.ifname))];
        let mut fix = Vec::new();
        let mut msg = msg;
        if let Some(first) = pfc.first() {
            msg.push_str(&format!(
                "; set the RoCE traffic class to a DSCP mapped to priority {first} \
                 (NCCL_IB_TC, rdma_cm default_roce_tos), or enable PFC on priority {prio}"
            ));
            fix.push(format!(
                "dcb pfc set dev {} prio-pfc {prio}:on",
                ifname_word(nic.ifname)
            ));
        }
        out.push(
            Finding::new(ID, sev, nic.subject(), msg)
                .evidence("tos", tos)
                .evidence("tos_source", why)
                .evidence("priority", prio)
                .evidence("trust", &trust)
                .evidence("pfc_enabled", pfc)
                .fix(fix, None)
                .checks(checks),
        );
    }
    out
}
