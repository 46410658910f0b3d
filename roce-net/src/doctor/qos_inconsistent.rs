//! `qos-inconsistent`: the NICs in scope differ in PFC priorities, trust or the
//! DSCP map.

use super::{hw, Ctx, Finding, Severity};
use crate::model::ifname_word;

/// Check id.
pub const ID: &str = "qos-inconsistent";

/// The parts of a NIC's QoS that must match across rails, as text.
pub(crate) fn signature(q: &crate::model::Qos) -> String {
    let pfc = q
        .pfc_enabled
        .as_ref()
        .map(|v| {
            v.iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_else(|| "-".into());
    let map: Vec<String> = q
        .dscp_prio
        .iter()
        .map(|(d, p)| format!("{d}:{p}"))
        .collect();
    format!(
        "pfc [{pfc}] trust {} dscp-map [{}]",
        q.trust.map(|t| t.to_string()).unwrap_or_else(|| "-".into()),
        map.join(" ")
    )
}

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let nics: Vec<(hw::Nic, String)> = hw::nics(ctx)
        .into_iter()
        .filter_map(|n| {
            let s = n.qos().map(signature)?;
            Some((n, s))
        })
        .collect();
    if nics.len() < 2 {
        return Vec::new();
    }
    let mut count: std::collections::BTreeMap<&str, usize> = Default::default();
    for (_, s) in &nics {
        *count.entry(s.as_str()).or_default() += 1;
    }
    let best = count.values().copied().max().unwrap_or(0);
    let Some(common) = count
        .iter()
        .find(|(_, c)| **c == best)
        .map(|(s, _)| s.to_string())
    else {
        return Vec::new();
    };
    let all: std::collections::BTreeMap<&str, &str> =
        nics.iter().map(|(n, s)| (n.ifname, s.as_str())).collect();
    nics.iter()
        .filter(|(_, s)| *s != common)
        .map(|(n, s)| {
            Finding::new(
                ID,
                Severity::Warning,
                n.subject(),
                format!(
                    "{}: QoS {s} differs from the other NICs' {common}: NCCL spreads one job \
                     over every rail, so one rail with another lossless class drops or \
                     pauses the job's traffic",
                    n.ifname
                ),
            )
            .evidence("qos", s)
            .evidence("common", &common)
            .evidence("nics", &all)
            .checks(vec![
                format!("dcb pfc show dev {}", ifname_word(n.ifname)),
                format!("dcb app show dev {}", ifname_word(n.ifname)),
            ])
        })
        .collect()
}
