//! A port's GID table: `gids/<i>`, `gid_attrs/types/<i>`, `gid_attrs/ndevs/<i>`.
use super::text::{read_attr, read_attr_bytes, warn};
use crate::model::{GidEntry, GidType, Warning};
use std::io;
use std::net::Ipv6Addr;
use std::path::Path;

/// Parse the kernel's GID text (`fe80:0000:0000:0000:ba3f:d2ff:fe10:00a0`, eight
/// groups of four hex digits); `None` when it is not a 128-bit address.
pub fn parse_gid(s: &str) -> Option<Ipv6Addr> {
    s.trim().parse().ok()
}

/// Errors that mean "this slot has no such attribute": EINVAL (the kernel's answer
/// for an empty or just-removed slot), ENODEV/ENOENT (no netdev, e.g. native IB).
fn is_absent(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound
        || matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::ENODEV))
}

/// Read the populated GID entries of the port in `port_dir`, sorted by index, and
/// the table's length (highest slot + 1, the `gid_tbl_len` verbs reports).
/// Empty (all-zero) slots are omitted without opening their attribute files.
/// With `until_netdev`, reading stops after the first entry that names a netdev.
pub(crate) fn read_gids(
    port_dir: &Path,
    until_netdev: bool,
    warnings: &mut Vec<Warning>,
) -> (Vec<GidEntry>, Option<u32>) {
    let gids_dir = port_dir.join("gids");
    let Some(names) = super::names_in(&gids_dir, warnings) else {
        return (Vec::new(), None);
    };
    let mut indices: Vec<u32> = Vec::with_capacity(names.len());
    for n in names {
        match n.parse::<u32>() {
            Ok(i) => indices.push(i),
            Err(_) => warn(
                warnings,
                &gids_dir.join(&n),
                "GID file name is not an index; skipped".to_string(),
            ),
        }
    }
    indices.sort_unstable();
    let tbl_len = indices.last().map(|i| i.saturating_add(1));

    let types_dir = port_dir.join("gid_attrs").join("types");
    let ndevs_dir = port_dir.join("gid_attrs").join("ndevs");
    let mut out = Vec::new();
    for index in indices {
        let idx = index.to_string();
        let path = gids_dir.join(&idx);
        let text = match read_attr(&path) {
            Ok(t) => t,
            Err(e) => {
                warn(
                    warnings,
                    &path,
                    format!("cannot read GID: {e}; slot skipped"),
                );
                continue;
            }
        };
        let Some(gid) = parse_gid(&text) else {
            warn(
                warnings,
                &path,
                format!(
                    "GID {} is not a 128-bit address; slot skipped",
                    crate::input::excerpt(&text, 64)
                ),
            );
            continue;
        };
        if gid.is_unspecified() {
            continue;
        }

        let type_path = types_dir.join(&idx);
        let gid_type = match read_attr(&type_path) {
            Ok(t) => Some(GidType::from_sysfs(&t)),
            // The slot was emptied between reading the GID and its type.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => continue,
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => {
                warn(warnings, &type_path, format!("cannot read GID type: {e}"));
                None
            }
        };
        let ndev_path = ndevs_dir.join(&idx);
        // A netdev name need not be UTF-8: kept in the model's escaping.
        let netdev = match read_attr_bytes(&ndev_path) {
            Ok(t) if t.is_empty() => None,
            Ok(t) => Some(crate::model::ifname_from_kernel(&t)),
            Err(e) if is_absent(&e) => None,
            Err(e) => {
                warn(warnings, &ndev_path, format!("cannot read GID netdev: {e}"));
                None
            }
        };
        let named = netdev.is_some();
        out.push(GidEntry {
            index,
            gid,
            gid_type,
            netdev,
            ipv4: gid.to_ipv4_mapped(),
        });
        if until_netdev && named {
            break;
        }
    }
    (out, tbl_len)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn gid_text() {
        let g = parse_gid("0000:0000:0000:0000:0000:ffff:c612:000b\n").unwrap();
        assert_eq!(g.to_ipv4_mapped(), Some("198.18.0.11".parse().unwrap()));
        let ll = parse_gid("fe80:0000:0000:0000:ba3f:d2ff:fe10:00a0").unwrap();
        assert_eq!(ll, "fe80::ba3f:d2ff:fe10:a0".parse::<Ipv6Addr>().unwrap());
        assert_eq!(ll.to_ipv4_mapped(), None);
        assert!(parse_gid("0000:0000:0000:0000:0000:0000:0000:0000")
            .unwrap()
            .is_unspecified());
        assert_eq!(parse_gid("zzzz:garbage"), None);
        assert_eq!(parse_gid(""), None);
    }
}
