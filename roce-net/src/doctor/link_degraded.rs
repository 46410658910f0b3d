//! `link-degraded`: an active RDMA port runs at a lower rate or width than the
//! host's other ports of the same link layer.

use super::{Ctx, Finding, Severity, Subject};
use crate::model::{ifname_word, shell_word, PortRef};
use crate::scope::port_netdev;

/// Check id.
pub const ID: &str = "link-degraded";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let ports: Vec<_> = ctx
        .state
        .rdma
        .iter()
        .flat_map(|d| d.ports.iter().map(move |p| (d, p)))
        .filter(|(_, p)| p.is_active() && p.rate_gbps().is_some())
        .collect();
    let mut out = Vec::new();
    for (d, p) in &ports {
        let same: Vec<_> = ports
            .iter()
            .filter(|(_, q)| q.link_layer == p.link_layer)
            .collect();
        if same.len() < 2 {
            continue;
        }
        let best_rate = same
            .iter()
            .filter_map(|(_, q)| q.rate_gbps())
            .fold(0.0_f64, f64::max);
        let best_width = same.iter().filter_map(|(_, q)| q.width()).max();
        let rate = p.rate_gbps().unwrap_or(0.0);
        let width = p.width();
        let slow = rate < best_rate;
        let narrow = matches!((width, best_width), (Some(w), Some(b)) if w < b);
        if !slow && !narrow {
            continue;
        }
        let nd = port_netdev(d, p);
        let mut subject = Subject::default().with_port(&d.name, p.port);
        subject.interface = nd.clone();
        let mut checks = Vec::new();
        if let Some(n) = &nd {
            checks.push(format!("ethtool {}", ifname_word(n)));
            checks.push(format!("ethtool -m {}", ifname_word(n)));
        }
        checks.push(format!(
            "cat /sys/class/infiniband/{}/ports/{}/rate",
            shell_word(&d.name),
            p.port
        ));
        out.push(
            Finding::new(
                ID,
                Severity::Warning,
                subject,
                format!(
                    "{} runs at {} while the host's best {} port runs at {best_rate} Gb/s{}: \
                     a degraded link (cable, transceiver, switch port or auto-negotiation) \
                     slows every collective that crosses this rail",
                    PortRef::of(d, p),
                    p.rate.as_deref().unwrap_or("?"),
                    p.link_layer.as_deref().unwrap_or(""),
                    match best_width {
                        Some(b) => format!(" on {b}X"),
                        None => String::new(),
                    }
                ),
            )
            .evidence("rate", &p.rate)
            .evidence("rate_gbps", rate)
            .evidence("best_rate_gbps", best_rate)
            .evidence("width", width)
            .evidence("best_width", best_width)
            // Nothing to run that fixes a link: the commands show it.
            .checks(checks),
        );
    }
    out
}
