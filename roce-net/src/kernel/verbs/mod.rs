//! RDMA through libibverbs: the verbs view of devices, ports and GID tables, and
//! (for `probe rdma`) queue pairs. The libibverbs code is compiled only with the
//! `verbs` cargo feature and loads the library at run time (see `lib.rs`); without
//! the feature, [`verbs_view`] answers [`NoRdmaReason::NotBuilt`].

#[cfg(feature = "verbs")]
pub(crate) mod ffi;
#[cfg(feature = "verbs")]
pub(crate) mod lib;
#[cfg(feature = "verbs")]
mod view;

use crate::model::{NoRdma, NoRdmaReason, VerbsView};
use std::path::{Path, PathBuf};

/// Where the verbs view looks.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct VerbsOptions {
    /// The libibverbs to load: a soname or a path (default `libibverbs.so.1`,
    /// found by the dynamic loader; give a path for MLNX_OFED in `/opt`).
    pub library: Option<PathBuf>,
    /// The sysfs root, for the legacy GID type and to explain an empty device
    /// list (default `/sys`).
    pub sysfs_root: PathBuf,
    /// The `/dev` root, to tell a container without `/dev/infiniband` (default `/dev`).
    pub dev_root: PathBuf,
}

impl Default for VerbsOptions {
    fn default() -> Self {
        VerbsOptions {
            library: None,
            sysfs_root: PathBuf::from("/sys"),
            dev_root: PathBuf::from("/dev"),
        }
    }
}

impl VerbsOptions {
    /// Load this libibverbs (soname or path) instead of `libibverbs.so.1`.
    pub fn with_library(mut self, lib: impl Into<PathBuf>) -> VerbsOptions {
        self.library = Some(lib.into());
        self
    }
    /// Read sysfs under `root` instead of `/sys`.
    pub fn with_sysfs_root(mut self, root: impl Into<PathBuf>) -> VerbsOptions {
        self.sysfs_root = root.into();
        self
    }
    /// Look for `infiniband/` under `root` instead of `/dev`.
    pub fn with_dev_root(mut self, root: impl Into<PathBuf>) -> VerbsOptions {
        self.dev_root = root.into();
        self
    }
}

/// The message for a build without the feature.
#[cfg(not(feature = "verbs"))]
pub(crate) fn not_built() -> NoRdma {
    NoRdma {
        reason: NoRdmaReason::NotBuilt,
        detail: "this roce-net was built without the `verbs` cargo feature, so it cannot use \
                 libibverbs; build it with `cargo build --release --locked --features verbs \
                 --bin roce-net` (scripts/lab.sh builds that; the portable binary and the \
                 Python wheel have it)"
            .to_string(),
    }
}

/// Read the verbs view: every device libibverbs lists, its ports and GID tables.
/// Never fails: when RDMA is unusable the view says why (`unavailable`).
pub fn verbs_view(opts: &VerbsOptions) -> VerbsView {
    #[cfg(feature = "verbs")]
    {
        view::read(opts)
    }
    #[cfg(not(feature = "verbs"))]
    {
        let _ = opts;
        let n = not_built();
        VerbsView::unavailable(n.reason, n.detail)
    }
}

/// Names under `<sysfs>/class/infiniband`, sorted (empty when missing).
#[cfg_attr(not(feature = "verbs"), allow(dead_code))]
pub(crate) fn sysfs_devices(sysfs_root: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(sysfs_root.join("class/infiniband"))
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().into_string().ok())
                .take(4096)
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Explain why `ibv_get_device_list` failed with `errno`, or listed nothing
/// (`errno` = `None`), from what sysfs shows.
#[cfg_attr(not(feature = "verbs"), allow(dead_code))]
pub(crate) fn explain_device_list(errno: Option<i32>, sysfs_root: &Path) -> NoRdma {
    let sys = sysfs_devices(sysfs_root);
    let verbs_class = sysfs_root.join("class/infiniband_verbs");
    match errno {
        Some(e) if e == libc::ENOSYS => NoRdma {
            reason: NoRdmaReason::NoKernelSupport,
            detail: format!(
                "the kernel has no RDMA user-space support: libibverbs' device list failed \
                 with ENOSYS ({} {}); load the RDMA modules (ib_uverbs and the NIC's driver, \
                 e.g. mlx5_ib) or use a kernel built with CONFIG_INFINIBAND_USER_ACCESS{}",
                verbs_class.display(),
                if verbs_class.exists() {
                    "exists but its ABI version is not supported"
                } else {
                    "is missing"
                },
                if sys.is_empty() {
                    String::new()
                } else {
                    format!("; sysfs lists {}", sys.join(", "))
                }
            ),
        },
        Some(e) => NoRdma {
            reason: NoRdmaReason::NoDevices,
            detail: format!(
                "libibverbs could not list RDMA devices: {}",
                std::io::Error::from_raw_os_error(e)
            ),
        },
        None if sys.is_empty() => NoRdma {
            reason: NoRdmaReason::NoDevices,
            detail: format!(
                "no RDMA devices: libibverbs lists none and {} is empty or missing",
                sysfs_root.join("class/infiniband").display()
            ),
        },
        None => NoRdma {
            reason: NoRdmaReason::NoDevices,
            detail: format!(
                "sysfs lists RDMA devices ({}) but libibverbs lists none: the user-space \
                 provider for this NIC is missing (Debian/Ubuntu: ibverbs-providers; RHEL: \
                 libibverbs with rdma-core's providers) or IBV_DRIVERS/RDMAV_DRIVERS \
                 points elsewhere",
                sys.join(", ")
            ),
        },
    }
}

/// Explain `ibv_open_device` failing with `errno` on `device`: a missing
/// `/dev/infiniband` is [`NoRdmaReason::NoDeviceFiles`]; anything else is `None`
/// (a per-device error, not "no RDMA").
#[cfg_attr(not(feature = "verbs"), allow(dead_code))]
pub(crate) fn explain_open_failure(errno: i32, device: &str, dev_root: &Path) -> Option<NoRdma> {
    let dir = dev_root.join("infiniband");
    let missing = std::fs::read_dir(&dir)
        .map(|mut rd| rd.next().is_none())
        .unwrap_or(true);
    if (errno == libc::ENOENT || errno == libc::ENODEV || errno == libc::ENXIO) && missing {
        Some(NoRdma {
            reason: NoRdmaReason::NoDeviceFiles,
            detail: format!(
                "{device} exists but {} has no character devices (opening it failed: {}): \
                 in a container, pass the RDMA devices in (docker/podman: --device \
                 /dev/infiniband; Kubernetes: an RDMA device plugin)",
                dir.display(),
                std::io::Error::from_raw_os_error(errno)
            ),
        })
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enosys_is_no_kernel_support() {
        let t = tempfile::tempdir().unwrap();
        let n = explain_device_list(Some(libc::ENOSYS), t.path());
        assert_eq!(n.reason, NoRdmaReason::NoKernelSupport);
        assert!(
            n.detail.contains("class/infiniband_verbs is missing"),
            "{}",
            n.detail
        );
        assert!(n.detail.contains("ib_uverbs"), "{}", n.detail);
    }

    #[test]
    fn empty_list_with_sysfs_devices_blames_the_provider() {
        let root =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs/connectx8");
        let n = explain_device_list(None, &root);
        assert_eq!(n.reason, NoRdmaReason::NoDevices);
        assert!(n.detail.contains("mlx5_0"), "{}", n.detail);
        assert!(n.detail.contains("ibverbs-providers"), "{}", n.detail);
        let t = tempfile::tempdir().unwrap();
        let n = explain_device_list(None, t.path());
        assert_eq!(n.reason, NoRdmaReason::NoDevices);
        assert!(n.detail.starts_with("no RDMA devices"), "{}", n.detail);
    }

    #[test]
    fn open_failure_without_dev_infiniband_is_no_device_files() {
        let t = tempfile::tempdir().unwrap();
        let n = explain_open_failure(libc::ENOENT, "mlx5_0", t.path()).unwrap();
        assert_eq!(n.reason, NoRdmaReason::NoDeviceFiles);
        assert!(
            n.detail.contains("--device /dev/infiniband"),
            "{}",
            n.detail
        );
        // With the character devices present, ENOENT is a device error, not "no RDMA".
        std::fs::create_dir(t.path().join("infiniband")).unwrap();
        std::fs::write(t.path().join("infiniband/uverbs0"), "").unwrap();
        assert!(explain_open_failure(libc::ENOENT, "mlx5_0", t.path()).is_none());
        // EACCES is never "no RDMA".
        let e = tempfile::tempdir().unwrap();
        assert!(explain_open_failure(libc::EACCES, "mlx5_0", e.path()).is_none());
    }

    #[cfg(not(feature = "verbs"))]
    #[test]
    fn without_the_feature_the_view_says_not_built() {
        let v = verbs_view(&VerbsOptions::default());
        assert_eq!(v.unavailable.unwrap().reason, NoRdmaReason::NotBuilt);
        assert!(v.devices.is_empty());
    }
}
