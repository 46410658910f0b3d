//! The boot-time repair of a persist interrupted while switching its set of
//! files ([`super::switch`]): a small shell script roce-net installs as a
//! systemd generator, [`BOOT_REPAIR_PATH`] (`boot_repair.sh`).
//!
//! Run by systemd at every boot (and `daemon-reload`), the generator adds
//! `roce-net-persist-repair.service` to `sysinit.target`; the unit runs the
//! same script with `--repair /etc` once `/etc` is writable
//! (`After=systemd-remount-fs.service`), before `systemd-sysctl.service` loads
//! `sysctl.d` and before `network-pre.target` (networkd, NetworkManager,
//! ifupdown's `networking.service` and `ifup@` start after it). It repairs as
//! [`super::switch::repair`] does: a persist that left a `-new` file is put
//! back, one that left none is finished. The one boot tool that reads
//! persistence before any unit can run, netplan's generator, reads only
//! `/etc/netplan/90-roce-net.yaml`, which persist switches last: what that
//! generator saw is the set the repair keeps.
//!
//! Installed by a persist that switches files, before it switches them (as a
//! set of one file, so an interrupted installation leaves the previous script
//! or none: `write.rs`); removed by `persist --remove`. Hosts without systemd never run it:
//! there a persist interrupted while switching is repaired by the next
//! `roce-net persist`, as before.

/// Where the repair is installed: a systemd generator directory in `/etc`.
pub const BOOT_REPAIR_PATH: &str = "/etc/systemd/system-generators/roce-net-persist-repair";

/// The script (POSIX `sh`: dash, busybox and bash run it).
pub(crate) const SCRIPT: &str = include_str!("boot_repair.sh");

/// Its mode: systemd runs only executable generators.
pub(crate) const MODE: u32 = 0o755;

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// The script looks in every directory persistence writes to.
    #[test]
    fn the_script_scans_every_directory_persist_writes() {
        let dirs: Vec<&str> = SCRIPT
            .split("dirs=\"")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .unwrap_or_default()
            .split_whitespace()
            .collect();
        for p in super::super::OWNED_PATHS {
            let parent = Path::new(p).parent().unwrap().to_string_lossy();
            let want = format!("$etc{}", parent.strip_prefix("/etc").unwrap());
            assert!(dirs.contains(&want.as_str()), "{want} not in {dirs:?}");
        }
        assert!(SCRIPT.contains("\"$etc\"/systemd/network/*.network.d"));
        assert!(SCRIPT.contains(&format!("self={BOOT_REPAIR_PATH}\n")));
        assert_eq!(SCRIPT.lines().nth(1), Some(super::super::common::HEADER));
    }
}
