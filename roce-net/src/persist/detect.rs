//! A coarse hint of which backend configures a host's network, from marker files
//! only. `roce-net persist` does not use it: [`super::discover`] reads each
//! stack's configuration and [`super::choose_backend`] picks the stack that
//! really configures the NICs.

use super::Backend;
use std::path::Path;

/// Which backend manages the host whose `/etc` is `etc_root` and whose `/run` is
/// `run_root` (pass `/etc` and `/run` for the running host).
///
/// In order: netplan when `/etc/netplan/*.yaml` exists (netplan generates the
/// networkd or NetworkManager configuration, so it must be the one edited);
/// systemd-networkd when it runs (`/run/systemd/netif/state`) or is enabled;
/// NetworkManager when it runs (`/run/NetworkManager`) or is enabled; ifupdown when
/// `/etc/network/interfaces` exists; otherwise `sysctl.d` (nothing to attach
/// routes to). Never fails: unreadable paths count as absent.
pub fn detect(etc_root: &Path, run_root: &Path) -> Backend {
    detect_explained(etc_root, run_root).0
}

/// [`detect`], with the reason for the choice (for `--verbose` output).
pub fn detect_explained(etc_root: &Path, run_root: &Path) -> (Backend, String) {
    let netplan = etc_root.join("netplan");
    if let Ok(rd) = std::fs::read_dir(&netplan) {
        let mut yamls: Vec<String> = rd
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".yaml") || n.ends_with(".yml"))
            .collect();
        yamls.sort();
        if let Some(first) = yamls.first() {
            return (
                Backend::Netplan,
                format!("{} exists", netplan.join(first).display()),
            );
        }
    }
    let wants = etc_root.join("systemd/system/multi-user.target.wants");
    let networkd_state = run_root.join("systemd/netif/state");
    if exists(&networkd_state) {
        return (
            Backend::Networkd,
            format!("{} exists (networkd is running)", networkd_state.display()),
        );
    }
    let networkd_unit = wants.join("systemd-networkd.service");
    if exists(&networkd_unit) {
        return (
            Backend::Networkd,
            format!("{} exists (networkd is enabled)", networkd_unit.display()),
        );
    }
    let nm_run = run_root.join("NetworkManager");
    if exists(&nm_run) {
        return (
            Backend::NetworkManager,
            format!("{} exists (NetworkManager is running)", nm_run.display()),
        );
    }
    let nm_unit = wants.join("NetworkManager.service");
    if exists(&nm_unit) {
        return (
            Backend::NetworkManager,
            format!("{} exists (NetworkManager is enabled)", nm_unit.display()),
        );
    }
    let ifupdown = etc_root.join("network/interfaces");
    if exists(&ifupdown) {
        return (Backend::Ifupdown, format!("{} exists", ifupdown.display()));
    }
    (
        Backend::SysctlD,
        "no netplan, systemd-networkd, NetworkManager or ifupdown configuration found".into(),
    )
}

/// Exists without following a final symlink (an enablement link may dangle in a
/// copied tree).
fn exists(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok()
}
