//! OFED's `ibdev2netdev` (Mellanox/mlnx-tools `ofed_scripts/ibdev2netdev`),
//! reproduced from a snapshot, with its mapping bug fixed.
//!
//! Plain: `mlx5_0 port 1 ==> ens1f0np0 (Up)`. Verbose (`-v`):
//! `<pci> <dev> (MT<device id> - <part number>) <product name> fw <fw> port <p> (<state>) ==> <netdev> (<link>)`,
//! with the script's padding (`%-11s` part number, `%-15s` product name, `%-6s`
//! port state) and its `NA` for what cannot be read. The link state is the
//! netdev's carrier (`Up`/`Down`); `NA` when the netdev is not in this
//! namespace's snapshot.
//!
//! The port's netdev is the one the GID table names, else the function's netdev
//! whose `dev_port` is `port - 1`. The script instead falls back to the first
//! netdev whose PCI `resource` equals the device's, which maps port 2 of a
//! dual-port mlx4 to port 1's netdev. Ports without any netdev are left out, as
//! the script leaves them out.

use crate::model::{HostState, PortState};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// One mapped port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Ibdev2NetdevRow {
    /// RDMA device.
    pub device: String,
    /// Port number.
    pub port: u32,
    /// The netdev behind the port.
    pub netdev: String,
    /// `Up`, `Down`, or `NA` (netdev not in the snapshot).
    pub link_state: String,
    /// PCI address of the function.
    pub pci_addr: Option<String>,
    /// `MT<decimal PCI device id>` (`MT4129`).
    pub device_id: Option<String>,
    /// VPD part number.
    pub part_number: Option<String>,
    /// VPD product name.
    pub product_name: Option<String>,
    /// Firmware version.
    pub fw_ver: Option<String>,
    /// Port state (`ACTIVE`, `DOWN`, ...).
    #[schemars(with = "Option<String>")]
    pub port_state: Option<PortState>,
}

fn mt_id(hex: &str) -> Option<String> {
    let h = hex.trim();
    let n = match h.strip_prefix("0x").or_else(|| h.strip_prefix("0X")) {
        Some(x) => u32::from_str_radix(x, 16).ok()?,
        None => h.parse().ok()?,
    };
    Some(format!("MT{n}"))
}

/// The ports `ibdev2netdev` lists, in device then port order.
pub fn ibdev2netdev(state: &HostState) -> Vec<Ibdev2NetdevRow> {
    let mut out = Vec::new();
    for d in &state.rdma {
        let mut ports: Vec<_> = d.ports.iter().collect();
        ports.sort_by_key(|p| p.port);
        for p in ports {
            let Some(nd) = crate::scope::port_netdev(d, p) else {
                continue;
            };
            let link_state = match state.interface(&nd) {
                None => "NA",
                Some(i) if i.carrier == Some(true) && i.admin_up => "Up",
                Some(_) => "Down",
            };
            out.push(Ibdev2NetdevRow {
                device: d.name.clone(),
                port: p.port,
                netdev: nd,
                link_state: link_state.to_string(),
                pci_addr: d.pci_addr.clone(),
                device_id: d.pci_device_id.as_deref().and_then(mt_id),
                part_number: d.part_number.clone(),
                product_name: d.product_name.clone(),
                fw_ver: d.fw_ver.clone(),
                port_state: p.state.clone(),
            });
        }
    }
    out
}

/// The rows as `ibdev2netdev` (or `ibdev2netdev -v`) prints them.
pub fn render_ibdev2netdev(rows: &[Ibdev2NetdevRow], verbose: bool) -> String {
    let mut s = String::new();
    for r in rows {
        if verbose {
            let na = |v: &Option<String>| v.clone().unwrap_or_else(|| "NA".into());
            let part = match &r.part_number {
                Some(p) => format!("{p:<11}"),
                None => "NA".into(),
            };
            let desc = match &r.product_name {
                Some(p) => format!("{p:<15}"),
                None => String::new(),
            };
            let state = match &r.port_state {
                Some(p) => format!("{p:<6}"),
                None => "NA".into(),
            };
            let _ = writeln!(
                s,
                "{} {} ({} - {part}) {desc} fw {} port {} ({state}) ==> {} ({})",
                na(&r.pci_addr),
                r.device,
                na(&r.device_id),
                na(&r.fw_ver),
                r.port,
                r.netdev,
                r.link_state
            );
        } else {
            let _ = writeln!(
                s,
                "{} port {} ==> {} ({})",
                r.device, r.port, r.netdev, r.link_state
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn device_id() {
        assert_eq!(super::mt_id("0x1021").as_deref(), Some("MT4129"));
        assert_eq!(super::mt_id("0x101b\n").as_deref(), Some("MT4123"));
        assert_eq!(super::mt_id("zz"), None);
    }
}
