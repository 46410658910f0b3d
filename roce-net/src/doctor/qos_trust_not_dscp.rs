//! `qos-trust-not-dscp`: RoCE traffic carries a DSCP (rdma_cm
//! `default_roce_tos`) but the NIC classifies by PCP, so the DSCP is ignored.

use super::{hw, Ctx, Finding, Severity};
use crate::model::ifname_word;
use crate::model::Trust;

/// Check id.
pub const ID: &str = "qos-trust-not-dscp";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for nic in hw::nics(ctx) {
        let Some(q) = nic.qos() else { continue };
        if q.trust != Some(Trust::Pcp) {
            continue;
        }
        let (tos, why) = hw::roce_tos(ctx, &nic);
        if tos >> 2 == 0 {
            continue;
        }
        out.push(
            Finding::new(
                ID,
                Severity::Warning,
                nic.subject(),
                format!(
                    "{}: RoCE packets carry DSCP {} (TOS {tos} from {why}) but the NIC trusts \
                     PCP, so the DSCP does not choose the priority: untagged RoCE traffic \
                     lands on priority 0",
                    nic.ifname,
                    tos >> 2
                ),
            )
            .evidence("tos", tos)
            .evidence("dscp", tos >> 2)
            .evidence("trust", "pcp")
            .fix(
                vec![format!(
                    "mlnx_qos -i {} --trust dscp",
                    ifname_word(nic.ifname)
                )],
                None,
            )
            .checks(vec![format!(
                "dcb app show dev {}",
                ifname_word(nic.ifname)
            )]),
        );
    }
    out
}
