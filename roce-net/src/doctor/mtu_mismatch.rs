//! `mtu-mismatch`: NICs in scope with different MTUs (or not the expected one).

use super::{Ctx, Finding, Severity, Subject};
use crate::model::ifname_word;
use std::collections::BTreeMap;

/// Check id.
pub const ID: &str = "mtu-mismatch";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let mtus: BTreeMap<String, u32> = ctx
        .scope
        .nics
        .iter()
        .filter_map(|n| {
            ctx.state
                .interface(&n.ifname)
                .map(|i| (n.ifname.clone(), i.mtu))
        })
        .collect();
    let expected = match ctx.opts.expected_mtu {
        Some(m) => m,
        None => {
            // Most common MTU; ties go to the larger one.
            let mut count: BTreeMap<u32, usize> = BTreeMap::new();
            for m in mtus.values() {
                *count.entry(*m).or_default() += 1;
            }
            match count.iter().max_by_key(|(m, c)| (**c, **m)) {
                Some((m, _)) => *m,
                None => return Vec::new(),
            }
        }
    };
    let mut out = Vec::new();
    for (name, mtu) in &mtus {
        if *mtu == expected {
            continue;
        }
        out.push(
            Finding::new(
                ID,
                Severity::Warning,
                Subject::interface(name),
                format!(
                    "{name} has MTU {mtu} while the other NICs in scope use {expected}: \
                     RDMA path MTU and peers' expectations differ"
                ),
            )
            .evidence("mtu", mtu)
            .evidence("expected", expected)
            .evidence(
                "active_ib_mtu",
                crate::model::active_mtu_for_netdev_mtu(*mtu),
            )
            .evidence("mtus", &mtus)
            .fix(
                vec![format!(
                    "ip link set dev {} mtu {expected}",
                    ifname_word(name)
                )],
                None,
            ),
        );
    }
    out
}
