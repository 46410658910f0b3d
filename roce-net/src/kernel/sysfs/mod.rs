//! RDMA devices, ports, GID tables and counters from sysfs (docs/architecture.md, decision 8).
//!
//! Everything is read from `<root>/class/infiniband/<dev>/` with plain file reads,
//! so it works on down ports, inside containers and without any RDMA library.
//! Reading never fails as a whole: a file that cannot be read or parsed becomes a
//! [`Warning`] and the rest of the device is still returned. See `docs/rdma-sysfs.md`.

pub(crate) mod gids;
mod text;
mod vpd;

use crate::model::{
    active_mtu_for_netdev_mtu, Interface, LinkLayer, PhysState, PortState, RdmaCmPort, RdmaDevice,
    RdmaPort, Warning,
};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

#[cfg(any(fuzzing, test))]
pub(crate) use gids::parse_gid;
pub use text::strip_enum_prefix;

use text::{read_attr, warn};

/// Where RDMA devices live, relative to the sysfs root.
pub const CLASS_INFINIBAND: &str = "class/infiniband";

/// Where rdma_cm's configfs directories live, relative to the sysfs root
/// (configfs is mounted on `/sys/kernel/config`).
pub const RDMA_CM_CONFIGFS: &str = "kernel/config/rdma_cm";

/// Files under `hw_counters/` that are settings, not counters.
const NOT_COUNTERS: [&str; 1] = ["lifespan"];

/// Read every RDMA device under `<root>/class/infiniband`, sorted by name.
///
/// `ifaces` supplies netdev MTUs, from which the active IB MTU of RoCE ports is
/// derived. A missing `class/infiniband` (no RDMA devices, or no RDMA support in the
/// kernel) gives an empty list and no warning.
pub fn read_rdma_sysfs(
    root: &Path,
    ifaces: &[Interface],
    warnings: &mut Vec<Warning>,
) -> Vec<RdmaDevice> {
    read_rdma_with(root, ifaces, true, warnings)
}

/// [`read_rdma_sysfs`] of only what decides which netdev backs each port (what the
/// planner's NIC scope reads): devices, their netdevs, ports and their state,
/// and each port's GIDs up to the first that names a netdev (the one
/// `read_rdma_sysfs` takes the port's netdev from). No counters, no VPD, no rdma_cm
/// mode, no further GIDs: on a node with eight RoCE ports that is a few dozen
/// files instead of thousands (a GID table has 255 slots of three files, a
/// port a hundred counters).
pub fn read_rdma_topology(
    root: &Path,
    ifaces: &[Interface],
    warnings: &mut Vec<Warning>,
) -> Vec<RdmaDevice> {
    read_rdma_with(root, ifaces, false, warnings)
}

fn read_rdma_with(
    root: &Path,
    ifaces: &[Interface],
    full: bool,
    warnings: &mut Vec<Warning>,
) -> Vec<RdmaDevice> {
    let class = root.join(CLASS_INFINIBAND);
    let names = match list_dir(&class) {
        Ok(n) => n,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            warn(
                warnings,
                &class,
                format!("cannot list RDMA devices: {e}; no RDMA devices are reported"),
            );
            return Vec::new();
        }
    };
    let mut devices = Vec::with_capacity(names.len());
    for name in names {
        match name {
            Ok(name) => {
                let cm = root.join(RDMA_CM_CONFIGFS).join(&name);
                devices.push(read_device(
                    &class.join(&name),
                    &cm,
                    name,
                    ifaces,
                    full,
                    warnings,
                ))
            }
            Err(raw) => warn(
                warnings,
                &class.join(&raw),
                "device name is not valid UTF-8; skipped".to_string(),
            ),
        }
    }
    devices
}

/// Directory entries as names, sorted; non-UTF-8 names come back as `Err(raw)`.
fn list_dir(dir: &Path) -> io::Result<Vec<Result<String, std::ffi::OsString>>> {
    let mut names = Vec::new();
    for ent in std::fs::read_dir(dir)? {
        let ent = ent?;
        names.push(ent.file_name().into_string());
    }
    names.sort_by(|a, b| match (a, b) {
        (Ok(a), Ok(b)) => a.cmp(b),
        (Ok(_), Err(_)) => std::cmp::Ordering::Less,
        (Err(_), Ok(_)) => std::cmp::Ordering::Greater,
        (Err(a), Err(b)) => a.cmp(b),
    });
    Ok(names)
}

/// UTF-8 names in a directory, sorted. Missing directory: `None` (callers decide
/// whether that deserves a warning); other failures: a warning and `None`.
fn names_in(dir: &Path, warnings: &mut Vec<Warning>) -> Option<Vec<String>> {
    match list_dir(dir) {
        Ok(names) => Some(
            names
                .into_iter()
                .filter_map(|n| match n {
                    Ok(n) => Some(n),
                    Err(raw) => {
                        warn(
                            warnings,
                            &dir.join(&raw),
                            "name is not valid UTF-8; skipped".to_string(),
                        );
                        None
                    }
                })
                .collect(),
        ),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => {
            warn(warnings, dir, format!("cannot list directory: {e}"));
            None
        }
    }
}

/// The netdevs of a PCI function (`device/net/`), sorted, in the model's name
/// escaping (a netdev name need not be UTF-8). Missing directory: empty.
fn netdev_names(dir: &Path, warnings: &mut Vec<Warning>) -> Vec<String> {
    use std::os::unix::ffi::OsStrExt;
    match list_dir(dir) {
        Ok(names) => {
            let mut v: Vec<String> = names
                .into_iter()
                .map(|n| match n {
                    Ok(s) => crate::model::ifname_from_kernel(s.as_bytes()),
                    Err(raw) => crate::model::ifname_from_kernel(raw.as_bytes()),
                })
                .collect();
            v.sort();
            v
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(e) => {
            warn(warnings, dir, format!("cannot list directory: {e}"));
            Vec::new()
        }
    }
}

/// The path of a netdev's entry under `device/net/` (the kernel's bytes of the
/// model name).
fn netdev_path(net_dir: &Path, name: &str) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let raw = crate::model::ifname_to_kernel(name).ok()?;
    Some(net_dir.join(std::ffi::OsStr::from_bytes(&raw)))
}

/// An optional device attribute: missing is normal (drivers differ), other
/// failures are warnings.
fn optional_attr(path: &Path, warnings: &mut Vec<Warning>) -> Option<String> {
    match read_attr(path) {
        Ok(s) if s.is_empty() => None,
        Ok(s) => Some(s),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => {
            warn(warnings, path, format!("cannot read: {e}"));
            None
        }
    }
}

fn read_device(
    dir: &Path,
    cm_dir: &Path,
    name: String,
    ifaces: &[Interface],
    full: bool,
    warnings: &mut Vec<Warning>,
) -> RdmaDevice {
    let node_guid = optional_attr(&dir.join("node_guid"), warnings);
    let fw_ver = optional_attr(&dir.join("fw_ver"), warnings);
    let hca_type = optional_attr(&dir.join("hca_type"), warnings)
        .or_else(|| optional_attr(&dir.join("board_id"), warnings));

    let device_link = dir.join("device");
    let pci_addr = match std::fs::read_link(&device_link) {
        Ok(target) => target
            .file_name()
            .and_then(|n| n.to_str())
            .map(str::to_string),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => {
            warn(
                warnings,
                &device_link,
                format!("cannot resolve the parent device link: {e}"),
            );
            None
        }
    };
    let net_dir = device_link.join("net");
    let netdevs = netdev_names(&net_dir, warnings);
    let pci_device_id = optional_attr(&device_link.join("device"), warnings);
    let vpd = if full {
        read_vpd(&device_link.join("vpd"), warnings)
    } else {
        vpd::Vpd::default()
    };

    let ports_dir = dir.join("ports");
    let mut port_nums = Vec::new();
    match names_in(&ports_dir, warnings) {
        Some(names) => {
            for n in names {
                match n.parse::<u32>() {
                    Ok(p) => port_nums.push(p),
                    Err(_) => warn(
                        warnings,
                        &ports_dir.join(&n),
                        "port directory name is not a number; skipped".to_string(),
                    ),
                }
            }
        }
        None => {
            if !ports_dir.exists() {
                warn(
                    warnings,
                    &ports_dir,
                    "device has no ports directory; no ports reported".to_string(),
                );
            }
        }
    }
    port_nums.sort_unstable();

    let ctx = DeviceCtx {
        net_dir: &net_dir,
        netdevs: &netdevs,
        ifaces,
        cm_dir,
        full,
    };
    let ports = port_nums
        .into_iter()
        .map(|p| read_port(&ports_dir.join(p.to_string()), p, &ctx, warnings))
        .collect();

    RdmaDevice {
        name,
        node_guid,
        fw_ver,
        hca_type,
        pci_addr,
        netdevs,
        pci_device_id,
        product_name: vpd.id,
        part_number: vpd.part_number,
        ports,
    }
}

/// The device's PCI VPD (product name, part number). Missing, unreadable without
/// privileges (the file is root-only), or failing in the device (`EIO`, `ENXIO`,
/// `ETIMEDOUT`: VPD reads go to the adapter's flash) are "unknown", not warnings.
fn read_vpd(path: &Path, warnings: &mut Vec<Warning>) -> vpd::Vpd {
    use std::io::Read;
    let quiet = |e: &io::Error| {
        matches!(
            e.kind(),
            io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied
        ) || matches!(
            e.raw_os_error(),
            Some(libc::EIO) | Some(libc::ENXIO) | Some(libc::ETIMEDOUT) | Some(libc::EINVAL)
        )
    };
    let mut buf = Vec::new();
    let res = crate::input::open_regular_io(path)
        .and_then(|f| f.take(vpd::VPD_MAX as u64).read_to_end(&mut buf));
    match res {
        Ok(_) => vpd::parse_vpd(&buf),
        Err(e) if quiet(&e) => vpd::Vpd::default(),
        Err(e) => {
            warn(warnings, path, format!("cannot read the PCI VPD: {e}"));
            vpd::Vpd::default()
        }
    }
}

/// rdma_cm's configfs defaults for a port, when the device's configfs directory
/// exists (an administrator creates it with `mkdir`); unreadable files are
/// warnings.
fn read_rdma_cm(cm_dir: &Path, port: u32, warnings: &mut Vec<Warning>) -> Option<RdmaCmPort> {
    if !cm_dir.is_dir() {
        return None;
    }
    let pdir = cm_dir.join("ports").join(port.to_string());
    let mode = optional_attr(&pdir.join("default_roce_mode"), warnings);
    let tos_path = pdir.join("default_roce_tos");
    let tos = optional_attr(&tos_path, warnings).and_then(|t| match t.parse::<u8>() {
        Ok(v) => Some(v),
        Err(_) => {
            warn(
                warnings,
                &tos_path,
                format!("TOS {t:?} is not a number from 0 to 255; ignored"),
            );
            None
        }
    });
    if mode.is_none() && tos.is_none() {
        return None;
    }
    Some(RdmaCmPort {
        default_roce_mode: mode,
        default_roce_tos: tos,
    })
}

struct DeviceCtx<'a> {
    net_dir: &'a Path,
    netdevs: &'a [String],
    ifaces: &'a [Interface],
    cm_dir: &'a Path,
    /// Everything, or only what decides the port's netdev ([`read_rdma_topology`]).
    full: bool,
}

/// A port attribute every port has: missing or unreadable is a warning.
fn port_attr(path: &Path, warnings: &mut Vec<Warning>) -> Option<String> {
    match read_attr(path) {
        Ok(s) => Some(s),
        Err(e) => {
            warn(warnings, path, format!("cannot read: {e}"));
            None
        }
    }
}

/// `4: ACTIVE` -> `ACTIVE`; anything else is kept verbatim with a warning.
fn enum_attr(path: &Path, warnings: &mut Vec<Warning>) -> Option<String> {
    let raw = port_attr(path, warnings)?;
    match strip_enum_prefix(&raw) {
        Some(s) => Some(s.to_string()),
        None => {
            warn(
                warnings,
                path,
                format!(
                    "expected `<number>: <name>`, found {}; kept verbatim",
                    crate::input::excerpt(&raw, 64)
                ),
            );
            Some(raw)
        }
    }
}

fn read_port(dir: &Path, port: u32, ctx: &DeviceCtx<'_>, warnings: &mut Vec<Warning>) -> RdmaPort {
    let state = enum_attr(&dir.join("state"), warnings).map(|s| PortState::from_name(&s));
    let phys_state = enum_attr(&dir.join("phys_state"), warnings).map(|s| PhysState::from_name(&s));
    let link_layer = port_attr(&dir.join("link_layer"), warnings).map(|s| LinkLayer::from_name(&s));
    // The kernel fails `rate` with EINVAL when the port reports no valid width/speed
    // (typical of a down port): that is "unknown", not an error.
    let rate_path = dir.join("rate");
    let rate = match read_attr(&rate_path) {
        Ok(s) => Some(s),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => None,
        Err(e) => {
            warn(warnings, &rate_path, format!("cannot read: {e}"));
            None
        }
    };

    let (gids, gid_tbl_len) = gids::read_gids(dir, !ctx.full, warnings);
    let (counters, hw_counters) = if ctx.full {
        (
            read_counters(&dir.join("counters"), warnings),
            read_counters(&dir.join("hw_counters"), warnings),
        )
    } else {
        Default::default()
    };

    let netdev = gids
        .iter()
        .find_map(|g| g.netdev.clone())
        .or_else(|| netdev_by_dev_port(port, ctx));

    let active_mtu = if link_layer == Some(LinkLayer::Ethernet) {
        netdev
            .as_deref()
            .and_then(|nd| ctx.ifaces.iter().find(|i| i.name == nd))
            .and_then(|i| active_mtu_for_netdev_mtu(i.mtu))
    } else {
        None
    };

    RdmaPort {
        port,
        state,
        phys_state,
        link_layer,
        rate,
        netdev,
        active_mtu,
        gids,
        counters,
        hw_counters,
        gid_tbl_len,
        rdma_cm: if ctx.full {
            read_rdma_cm(ctx.cm_dir, port, warnings)
        } else {
            None
        },
    }
}

/// The netdev of the PCI function whose `dev_port` is `port - 1` (the kernel numbers
/// netdev ports from 0, RDMA ports from 1). When no netdev reports `dev_port` and the
/// function has exactly one netdev, that one.
fn netdev_by_dev_port(port: u32, ctx: &DeviceCtx<'_>) -> Option<String> {
    let want = port.checked_sub(1)?;
    let mut any_dev_port = false;
    for nd in ctx.netdevs {
        let Some(nd_dir) = netdev_path(ctx.net_dir, nd) else {
            continue;
        };
        if let Ok(s) = read_attr(&nd_dir.join("dev_port")) {
            if let Ok(v) = s.parse::<u32>() {
                any_dev_port = true;
                if v == want {
                    return Some(nd.clone());
                }
            }
        }
    }
    if !any_dev_port && ctx.netdevs.len() == 1 && port == 1 {
        return ctx.netdevs.first().cloned();
    }
    None
}

/// Every counter file in a directory as u64. A missing directory is empty (not every
/// driver has `hw_counters`); a counter the driver reports as unsupported
/// (EOPNOTSUPP, ENOSYS) is left out; another unreadable or non-numeric file is a
/// warning.
fn read_counters(dir: &Path, warnings: &mut Vec<Warning>) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let Some(names) = names_in(dir, warnings) else {
        return out;
    };
    for name in names {
        if NOT_COUNTERS.contains(&name.as_str()) {
            continue;
        }
        let path: PathBuf = dir.join(&name);
        match read_attr(&path) {
            Ok(s) => match s.parse::<u64>() {
                Ok(v) => {
                    out.insert(name, v);
                }
                Err(_) => warn(
                    warnings,
                    &path,
                    format!(
                        "counter value {} is not an unsigned number; skipped",
                        crate::input::excerpt(&s, 64)
                    ),
                ),
            },
            // The driver says it does not implement this counter: not a fault.
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS)
                ) => {}
            Err(e) => warn(warnings, &path, format!("cannot read counter: {e}")),
        }
    }
    out
}

#[cfg(test)]
mod tests;
