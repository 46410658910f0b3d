//! `gid-index-inconsistent`: the GID index holding each NIC's RoCE v2 IPv4 GID is
//! not the same on every port, so one `NCCL_IB_GID_INDEX` cannot fit all NICs.

use super::{Ctx, Finding, Severity, Subject};
use crate::scope::roce_v2_gid_indices;
use std::collections::BTreeMap;

/// Check id.
pub const ID: &str = "gid-index-inconsistent";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let idx: BTreeMap<String, u32> = roce_v2_gid_indices(ctx.state)
        .into_iter()
        .filter_map(|(p, i)| i.map(|i| (p.to_string(), i)))
        .collect();
    let mut count: BTreeMap<u32, usize> = BTreeMap::new();
    for i in idx.values() {
        *count.entry(*i).or_default() += 1;
    }
    if count.len() < 2 {
        return Vec::new();
    }
    // Majority index; ties go to the lower index.
    let Some((&common, _)) = count
        .iter()
        .max_by(|(ia, ca), (ib, cb)| ca.cmp(cb).then(ib.cmp(ia)))
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (port, i) in &idx {
        if *i == common {
            continue;
        }
        let (dev, num) = port.rsplit_once(':').unwrap_or((port.as_str(), "1"));
        out.push(
            Finding::new(
                ID,
                Severity::Warning,
                Subject::default().with_port(dev, num.parse().unwrap_or(1)),
                format!(
                    "{port} holds its RoCE v2 IPv4 GID at index {i}, the other ports at {common}: \
                     a single NCCL_IB_GID_INDEX is wrong for this NIC"
                ),
            )
            .evidence("gid_index", i)
            .evidence("common_index", common)
            .evidence("indices", &idx)
            .fix(vec!["unset NCCL_IB_GID_INDEX".to_string()], None)
            .checks(vec!["roce-net nccl-env".to_string()]),
        );
    }
    out
}
