//! `show_gids` from mlnx-tools (`sbin/show_gids`, Mellanox/mlnx-tools commit
//! 8fbfd9c, and the `--dev`/`ls -v` revision adaec78), reproduced row for row.
//!
//! Rows: every populated GID slot except the all-zero GID and the all-zero
//! link-local GID `fe80::` (show_gids skips both, and NCCL never selects them).
//! IPv4 column: when the GID's first group is `0000`, the last 32 bits in dotted
//! decimal (show_gids' rule). VER: the type text from its first `v`/`V` on
//! (`IB/RoCE v1` -> `v1`, `RoCE v2` -> `v2`), empty when unknown. Slots are in
//! numeric order (the original lists them with `ls`, so slot 10 comes before 2;
//! its later revision uses `ls -v`), devices in byte order of their names (what
//! `ls` prints in the C locale), ports in numeric order.

use crate::error::{Error, ErrorKind, Result};
use crate::model::{GidEntry, GidType, HostState};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// Which GIDs to list (`show_gids [DEV [PORT]]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GidFilter {
    /// Only this RDMA device.
    pub device: Option<String>,
    /// Only this port (with `device`).
    pub port: Option<u32>,
}

/// One row of `show_gids`. `--json` serialises these; unknown values are `null`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GidRow {
    /// RDMA device.
    pub dev: String,
    /// Port number.
    pub port: u32,
    /// GID table index (what `NCCL_IB_GID_INDEX` names).
    pub index: u32,
    /// The GID as sysfs prints it (8 groups of 4 hex digits).
    pub gid: String,
    /// The IPv4 column; `null` when show_gids leaves it empty.
    pub ipv4: Option<String>,
    /// `v1`, `v2`; `null` when the type is unknown.
    pub ver: Option<String>,
    /// The netdev owning the GID; `null` when none (native InfiniBand).
    pub netdev: Option<String>,
}

/// The GID as the kernel's `%pI6` prints it.
pub(crate) fn gid_text(g: &std::net::Ipv6Addr) -> String {
    g.segments()
        .iter()
        .map(|s| format!("{s:04x}"))
        .collect::<Vec<_>>()
        .join(":")
}

fn ver_text(t: &GidType) -> Option<String> {
    let s = match t {
        GidType::RoceV1 => "IB/RoCE v1",
        GidType::RoceV2 => "RoCE v2",
        GidType::Ib => "IB",
        GidType::Other(s) => s.as_str(),
    };
    // `grep -o "[Vv].*"` on the type text.
    let at = s.find(['v', 'V'])?;
    Some(s[at..].to_string())
}

/// True for the GIDs show_gids lists.
pub(crate) fn listed(g: &GidEntry) -> bool {
    let s = g.gid.segments();
    let zero = s.iter().all(|x| *x == 0);
    let ll_zero = s[0] == 0xfe80 && s[1..].iter().all(|x| *x == 0);
    !zero && !ll_zero
}

/// The rows `show_gids` prints for this snapshot. A filter naming a device or
/// port the snapshot does not have is an error that lists what exists.
pub fn show_gids(state: &HostState, filter: &GidFilter) -> Result<Vec<GidRow>> {
    if let Some(d) = &filter.device {
        let Some(dev) = state.rdma.iter().find(|x| &x.name == d) else {
            let names: Vec<&str> = state.rdma.iter().map(|x| x.name.as_str()).collect();
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "no RDMA device {d:?} (devices: {})",
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                ),
            ));
        };
        if let Some(p) = filter.port {
            if !dev.ports.iter().any(|x| x.port == p) {
                let ports: Vec<String> = dev.ports.iter().map(|x| x.port.to_string()).collect();
                return Err(Error::new(
                    ErrorKind::NotFound,
                    format!(
                        "RDMA device {d} has no port {p} (ports: {})",
                        if ports.is_empty() {
                            "none".to_string()
                        } else {
                            ports.join(", ")
                        }
                    ),
                ));
            }
        }
    } else if filter.port.is_some() {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            "a port filter needs a device: gids <DEV> <PORT>",
        ));
    }
    let mut rows = Vec::new();
    for d in &state.rdma {
        if filter.device.as_ref().is_some_and(|f| f != &d.name) {
            continue;
        }
        let mut ports: Vec<_> = d.ports.iter().collect();
        ports.sort_by_key(|p| p.port);
        for p in ports {
            if filter.port.is_some_and(|f| f != p.port) {
                continue;
            }
            let mut gids: Vec<&GidEntry> = p.gids.iter().filter(|g| listed(g)).collect();
            gids.sort_by_key(|g| g.index);
            for g in gids {
                let seg = g.gid.segments();
                let ipv4 = (seg[0] == 0).then(|| {
                    let o = g.gid.octets();
                    format!("{}.{}.{}.{}", o[12], o[13], o[14], o[15])
                });
                rows.push(GidRow {
                    dev: d.name.clone(),
                    port: p.port,
                    index: g.index,
                    gid: gid_text(&g.gid),
                    ipv4,
                    ver: g.gid_type.as_ref().and_then(ver_text),
                    netdev: g.netdev.clone(),
                });
            }
        }
    }
    Ok(rows)
}

/// The rows in show_gids' text format: a tab-separated header, a dashes line, one
/// line per GID, `n_gids_found=N`.
pub fn render_show_gids(rows: &[GidRow]) -> String {
    let mut s = String::new();
    s.push_str("DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\n");
    s.push_str("---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---\n");
    for r in rows {
        let ver = r.ver.as_deref().unwrap_or("");
        let nd = r.netdev.as_deref().unwrap_or("");
        match &r.ipv4 {
            Some(v4) => {
                let _ = writeln!(
                    s,
                    "{}\t{}\t{}\t{}\t{v4}  \t{ver}\t{nd}",
                    r.dev, r.port, r.index, r.gid
                );
            }
            None => {
                let _ = writeln!(
                    s,
                    "{}\t{}\t{}\t{}\t\t\t{ver}\t{nd}",
                    r.dev, r.port, r.index, r.gid
                );
            }
        }
    }
    let _ = writeln!(s, "n_gids_found={}", rows.len());
    s
}
