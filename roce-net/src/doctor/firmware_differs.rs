//! `firmware-differs`: RDMA devices of the same model run different firmware.

use super::{Ctx, Finding, Severity, Subject};
use crate::model::shell_word;
use std::collections::BTreeMap;

/// Check id.
pub const ID: &str = "firmware-differs";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    // Model: PCI device id, else HCA type (board id).
    let mut by_model: BTreeMap<String, Vec<(&str, &str)>> = BTreeMap::new();
    for d in &ctx.state.rdma {
        let (Some(model), Some(fw)) = (
            d.pci_device_id.as_ref().or(d.hca_type.as_ref()),
            d.fw_ver.as_deref(),
        ) else {
            continue;
        };
        by_model
            .entry(model.clone())
            .or_default()
            .push((d.name.as_str(), fw));
    }
    let mut out = Vec::new();
    for (model, devs) in by_model {
        let mut count: BTreeMap<&str, usize> = BTreeMap::new();
        for (_, fw) in &devs {
            *count.entry(fw).or_default() += 1;
        }
        if count.len() < 2 {
            continue;
        }
        let best = count.values().copied().max().unwrap_or(0);
        // Ties go to the newest-looking (largest) version string.
        let Some(common) = count
            .iter()
            .filter(|(_, c)| **c == best)
            .map(|(f, _)| *f)
            .max()
        else {
            continue;
        };
        let all: BTreeMap<&str, &str> = devs.iter().copied().collect();
        for (name, fw) in &devs {
            if *fw == common {
                continue;
            }
            out.push(
                Finding::new(
                    ID,
                    Severity::Warning,
                    Subject {
                        device: Some(name.to_string()),
                        ..Default::default()
                    },
                    format!(
                        "{name} runs firmware {fw} while the other {model} devices run \
                         {common}: firmware differences change congestion control, PFC and \
                         RoCE behaviour between rails; update with the vendor's firmware \
                         tools (mlxfwmanager) to one version"
                    ),
                )
                .evidence("fw_ver", fw)
                .evidence("common", common)
                .evidence("model", &model)
                .evidence("devices", &all)
                .checks(vec![
                    // Nothing to run that updates firmware: the update is said in
                    // the message, the query shows what runs.
                    format!(
                        "mstflint -d {} query",
                        shell_word(
                            &ctx.state
                                .rdma
                                .iter()
                                .find(|d| d.name == *name)
                                .and_then(|d| d.pci_addr.clone())
                                .unwrap_or_else(|| name.to_string())
                        )
                    ),
                ]),
            );
        }
    }
    out
}
