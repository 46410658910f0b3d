//! Reading the verbs view through the loaded libibverbs.

use super::ffi::*;
use super::lib::{guid_text, Lib};
use super::{explain_device_list, explain_open_failure, VerbsOptions};
use crate::model::{
    ib_mtu_bytes, GidQuery, GidType, LinkLayer, PhysState, PortState, VerbsDevice, VerbsGid,
    VerbsPort, VerbsView, Warning,
};
use std::ffi::CStr;
use std::net::Ipv6Addr;
use std::path::Path;

/// Largest GID table read per port (the kernel's limit is 256 on mlx5; IB
/// allows up to 2^15): bounds the work on a corrupt `gid_tbl_len`.
const MAX_GIDS_PER_PORT: u32 = 1024;

/// `ENODATA`: `ibv_query_gid_ex` on an empty slot.
const ENODATA: i32 = libc::ENODATA;

pub(crate) fn read(opts: &VerbsOptions) -> VerbsView {
    let lib = match Lib::load(opts.library.as_deref()) {
        Ok(l) => l,
        Err(n) => return VerbsView::unavailable(n.reason, n.detail),
    };
    let mut view = VerbsView {
        library: Some(lib.name.clone()),
        gid_query: None,
        unavailable: None,
        devices: Vec::new(),
        warnings: Vec::new(),
    };
    let list = match lib.devices() {
        Ok(l) => l,
        Err(e) => {
            view.unavailable = Some(explain_device_list(Some(e), &opts.sysfs_root));
            return view;
        }
    };
    if list.is_empty() {
        view.unavailable = Some(explain_device_list(None, &opts.sysfs_root));
        return view;
    }
    let mut no_files = None;
    let mut opened = 0;
    for d in list {
        let mut dev = VerbsDevice {
            name: d.name.clone(),
            node_guid: Some(guid_text(d.guid)),
            fw_ver: None,
            ports: Vec::new(),
            error: None,
        };
        match lib.open_by_name(&d.name) {
            Err(e) => {
                if let Some(n) = explain_open_failure(e, &d.name, &opts.dev_root) {
                    no_files = Some(n);
                }
                dev.error = Some(format!(
                    "ibv_open_device: {}",
                    std::io::Error::from_raw_os_error(e)
                ));
            }
            Ok(ctx) => {
                opened += 1;
                let src = LibGids { lib, ctx };
                let q = read_device(
                    lib,
                    ctx,
                    &src,
                    &opts.sysfs_root,
                    &mut dev,
                    &mut view.warnings,
                );
                view.gid_query = view.gid_query.or(q);
                // SAFETY: ctx was opened above and is not used after this.
                unsafe { (lib.close_device)(ctx) };
            }
        }
        view.devices.push(dev);
    }
    if opened == 0 {
        view.unavailable = no_files;
    }
    view.devices.sort_by(|a, b| a.name.cmp(&b.name));
    view
}

fn read_device(
    lib: &Lib,
    ctx: *mut ibv_context,
    src: &dyn GidSource,
    sysfs_root: &Path,
    dev: &mut VerbsDevice,
    warnings: &mut Vec<Warning>,
) -> Option<GidQuery> {
    // SAFETY: zeroed plain-data struct, filled by the library.
    let mut attr: ibv_device_attr = unsafe { std::mem::zeroed() };
    // SAFETY: ctx is an open context; attr is a valid out pointer of C's size.
    let rc = unsafe { (lib.query_device)(ctx, &mut attr) };
    if rc != 0 {
        dev.error = Some(format!(
            "ibv_query_device: {}",
            std::io::Error::from_raw_os_error(rc)
        ));
        return None;
    }
    // SAFETY: fw_ver is a NUL-terminated char array (the library writes it with
    // a bounded copy); the last byte is forced to NUL first.
    attr.fw_ver[63] = 0;
    let fw = unsafe { CStr::from_ptr(attr.fw_ver.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    dev.fw_ver = (!fw.is_empty()).then_some(fw);
    let mut ports = Vec::new();
    for p in 1..=u32::from(attr.phys_port_cnt) {
        let mut pa = ibv_port_attr::default();
        // SAFETY: ctx is open; pa is zeroed and larger than what C writes
        // (checked by the layout test). p fits u8 (phys_port_cnt is a u8).
        let rc = unsafe { (lib.query_port)(ctx, p as u8, &mut pa) };
        if rc != 0 {
            warnings.push(Warning {
                source: format!("verbs:{}:{p}", dev.name),
                message: format!("ibv_query_port: {}", std::io::Error::from_raw_os_error(rc)),
            });
            continue;
        }
        ports.push((
            p,
            VerbsPort {
                port: p,
                state: PortState::from_number(pa.state),
                phys_state: PhysState::from_verbs(pa.phys_state),
                link_layer: Some(LinkLayer::from_number(u32::from(pa.link_layer))),
                active_mtu: ib_mtu_bytes(pa.active_mtu),
                max_mtu: ib_mtu_bytes(pa.max_mtu),
                gid_tbl_len: u32::try_from(pa.gid_tbl_len).unwrap_or(0),
                gids: Vec::new(),
            },
        ));
    }
    let sizes: Vec<(u32, u32)> = ports.iter().map(|(p, a)| (*p, a.gid_tbl_len)).collect();
    let port_dir = |p: u32| sysfs_root.join(format!("class/infiniband/{}/ports/{p}", dev.name));
    let (q, mut gids) = read_gids(src, &sizes, &port_dir, &dev.name, warnings);
    for (p, mut a) in ports {
        a.gids = gids.remove(&p).unwrap_or_default();
        dev.ports.push(a);
    }
    Some(q)
}

/// The three ways libibverbs can read a GID table, behind a seam so the choice
/// between them is tested without hardware.
pub(crate) trait GidSource {
    /// `ibv_query_gid_table` into at most `max` entries; `None` if unavailable.
    fn table(&self, max: usize) -> Option<Result<Vec<ibv_gid_entry>, i32>>;
    /// `ibv_query_gid_ex`; `None` if unavailable; `Ok(None)` for an empty slot.
    fn ex(&self, port: u32, index: u32) -> Option<Result<Option<ibv_gid_entry>, i32>>;
    /// `ibv_query_gid`.
    fn legacy(&self, port: u32, index: u32) -> Result<ibv_gid, i32>;
}

struct LibGids<'a> {
    lib: &'a Lib,
    ctx: *mut ibv_context,
}

impl GidSource for LibGids<'_> {
    fn table(&self, max: usize) -> Option<Result<Vec<ibv_gid_entry>, i32>> {
        let f = self.lib.query_gid_table?;
        let mut v = vec![ibv_gid_entry::default(); max];
        // SAFETY: v has room for max entries of the size passed.
        let n = unsafe {
            f(
                self.ctx,
                v.as_mut_ptr(),
                max,
                0,
                std::mem::size_of::<ibv_gid_entry>(),
            )
        };
        Some(if n < 0 {
            Err(i32::try_from(-n).unwrap_or(libc::EIO))
        } else {
            v.truncate(usize::try_from(n).unwrap_or(0).min(max));
            Ok(v)
        })
    }
    fn ex(&self, port: u32, index: u32) -> Option<Result<Option<ibv_gid_entry>, i32>> {
        let f = self.lib.query_gid_ex?;
        let mut e = ibv_gid_entry::default();
        // SAFETY: e is a valid out pointer of the size passed.
        let rc = unsafe {
            f(
                self.ctx,
                port,
                index,
                &mut e,
                0,
                std::mem::size_of::<ibv_gid_entry>(),
            )
        };
        Some(match rc {
            0 => Ok(Some(e)),
            ENODATA => Ok(None),
            e => Err(e),
        })
    }
    fn legacy(&self, port: u32, index: u32) -> Result<ibv_gid, i32> {
        let mut g = ibv_gid::default();
        let (Ok(p), Ok(i)) = (u8::try_from(port), i32::try_from(index)) else {
            return Err(libc::EINVAL);
        };
        // SAFETY: g is a valid out pointer.
        let rc = unsafe { (self.lib.query_gid)(self.ctx, p, i, &mut g) };
        if rc == 0 {
            Ok(g)
        } else {
            Err(if rc < 0 { libc::EIO } else { rc })
        }
    }
}

/// A sysfs attribute (at most a page), trimmed; `None` when unreadable.
fn read_small(path: &Path) -> Option<String> {
    // Bounded and never blocking on a FIFO under a `--sysfs-root`.
    let buf = crate::input::read_attribute(path).ok()?;
    let s = String::from_utf8(buf).ok()?;
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

fn gid_type(t: u32) -> Option<GidType> {
    match t {
        IBV_GID_TYPE_IB => Some(GidType::Ib),
        IBV_GID_TYPE_ROCE_V1 => Some(GidType::RoceV1),
        IBV_GID_TYPE_ROCE_V2 => Some(GidType::RoceV2),
        _ => Some(GidType::Other(format!("type {t}"))),
    }
}

fn from_entry(e: &ibv_gid_entry) -> VerbsGid {
    VerbsGid {
        index: e.gid_index,
        gid: Ipv6Addr::from(e.gid.raw),
        gid_type: gid_type(e.gid_type),
        ndev_ifindex: (e.ndev_ifindex != 0).then_some(e.ndev_ifindex),
    }
}

/// Read every port's GIDs with the best call available: the whole table, else
/// per-index `ibv_query_gid_ex`, else `ibv_query_gid` with the type from sysfs.
pub(crate) fn read_gids(
    src: &dyn GidSource,
    ports: &[(u32, u32)],
    port_dir: &dyn Fn(u32) -> std::path::PathBuf,
    dev: &str,
    warnings: &mut Vec<Warning>,
) -> (GidQuery, std::collections::BTreeMap<u32, Vec<VerbsGid>>) {
    let mut out: std::collections::BTreeMap<u32, Vec<VerbsGid>> =
        ports.iter().map(|(p, _)| (*p, Vec::new())).collect();
    let bounded = |n: u32| n.min(MAX_GIDS_PER_PORT);
    let total: usize = ports.iter().map(|(_, n)| bounded(*n) as usize).sum();
    let warn = |warnings: &mut Vec<Warning>, what: String| {
        warnings.push(Warning {
            source: format!("verbs:{dev}"),
            message: what,
        })
    };
    match src.table(total.max(1)) {
        Some(Ok(entries)) => {
            for e in &entries {
                if let Some(v) = out.get_mut(&e.port_num) {
                    v.push(from_entry(e));
                }
            }
            for v in out.values_mut() {
                v.sort_by_key(|g| g.index);
            }
            return (GidQuery::Table, out);
        }
        Some(Err(e)) => warn(
            warnings,
            format!(
                "ibv_query_gid_table: {}; reading entry by entry",
                std::io::Error::from_raw_os_error(e)
            ),
        ),
        None => {}
    }
    let mut query = GidQuery::Ex;
    for (p, n) in ports {
        for i in 0..bounded(*n) {
            match src.ex(*p, i) {
                Some(Ok(Some(e))) => {
                    if let Some(v) = out.get_mut(p) {
                        v.push(from_entry(&e));
                    }
                    continue;
                }
                Some(Ok(None)) => continue,
                Some(Err(e)) => {
                    warn(
                        warnings,
                        format!(
                            "ibv_query_gid_ex port {p} index {i}: {}",
                            std::io::Error::from_raw_os_error(e)
                        ),
                    );
                    continue;
                }
                None => query = GidQuery::Legacy,
            }
            // Legacy: the GID from libibverbs, its type and netdev from sysfs.
            match src.legacy(*p, i) {
                Ok(g) if g.raw == [0u8; 16] => {}
                Ok(g) => {
                    let dir = port_dir(*p);
                    let t = read_small(&dir.join(format!("gid_attrs/types/{i}")))
                        .map(|s| GidType::from_sysfs(&s));
                    if let Some(v) = out.get_mut(p) {
                        v.push(VerbsGid {
                            index: i,
                            gid: Ipv6Addr::from(g.raw),
                            gid_type: t,
                            ndev_ifindex: None,
                        });
                    }
                }
                Err(e) => warn(
                    warnings,
                    format!(
                        "ibv_query_gid port {p} index {i}: {}",
                        std::io::Error::from_raw_os_error(e)
                    ),
                ),
            }
        }
    }
    (query, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn entry(port: u32, index: u32, gid: &str, t: u32, ifindex: u32) -> ibv_gid_entry {
        ibv_gid_entry {
            gid: ibv_gid {
                raw: gid.parse::<Ipv6Addr>().unwrap().octets(),
            },
            gid_index: index,
            port_num: port,
            gid_type: t,
            ndev_ifindex: ifindex,
        }
    }

    /// A GID table of one or two ports, and which calls "exist".
    struct Fake {
        table: bool,
        ex: bool,
        entries: Vec<ibv_gid_entry>,
        table_fails: bool,
    }

    impl GidSource for Fake {
        fn table(&self, max: usize) -> Option<Result<Vec<ibv_gid_entry>, i32>> {
            if !self.table {
                return None;
            }
            if self.table_fails {
                return Some(Err(libc::EOPNOTSUPP));
            }
            Some(Ok(self.entries.iter().take(max).copied().collect()))
        }
        fn ex(&self, port: u32, index: u32) -> Option<Result<Option<ibv_gid_entry>, i32>> {
            if !self.ex {
                return None;
            }
            Some(Ok(self
                .entries
                .iter()
                .find(|e| e.port_num == port && e.gid_index == index)
                .copied()))
        }
        fn legacy(&self, port: u32, index: u32) -> Result<ibv_gid, i32> {
            Ok(self
                .entries
                .iter()
                .find(|e| e.port_num == port && e.gid_index == index)
                .map(|e| e.gid)
                .unwrap_or_default())
        }
    }

    fn entries() -> Vec<ibv_gid_entry> {
        vec![
            entry(1, 0, "fe80::ba3f:d2ff:fe10:a0", IBV_GID_TYPE_ROCE_V1, 5),
            entry(1, 1, "fe80::ba3f:d2ff:fe10:a0", IBV_GID_TYPE_ROCE_V2, 5),
            entry(1, 3, "::ffff:198.18.0.11", IBV_GID_TYPE_ROCE_V2, 5),
        ]
    }

    fn read_with(
        f: &Fake,
        sysfs_port: &Path,
    ) -> (GidQuery, BTreeMap<u32, Vec<VerbsGid>>, Vec<Warning>) {
        let mut w = Vec::new();
        let p = sysfs_port.to_path_buf();
        let (q, m) = read_gids(f, &[(1, 16)], &|_| p.clone(), "mlx5_0", &mut w);
        (q, m, w)
    }

    #[test]
    fn table_call_is_preferred() {
        let f = Fake {
            table: true,
            ex: true,
            entries: entries(),
            table_fails: false,
        };
        let (q, m, w) = read_with(&f, Path::new("/nonexistent"));
        assert_eq!(q, GidQuery::Table);
        assert!(w.is_empty());
        let g = &m[&1];
        assert_eq!(g.iter().map(|g| g.index).collect::<Vec<_>>(), vec![0, 1, 3]);
        assert_eq!(g[2].gid_type, Some(GidType::RoceV2));
        assert_eq!(g[2].ndev_ifindex, Some(5));
        assert_eq!(g[2].gid, "::ffff:198.18.0.11".parse::<Ipv6Addr>().unwrap());
    }

    #[test]
    fn failing_table_falls_back_to_ex_with_a_warning() {
        let f = Fake {
            table: true,
            ex: true,
            entries: entries(),
            table_fails: true,
        };
        let (q, m, w) = read_with(&f, Path::new("/nonexistent"));
        assert_eq!(q, GidQuery::Ex);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].message.contains("ibv_query_gid_table"));
        assert_eq!(m[&1].len(), 3);
        assert_eq!(m[&1][0].gid_type, Some(GidType::RoceV1));
    }

    #[test]
    fn old_rdma_core_uses_query_gid_and_the_sysfs_type() {
        // The port directory of the connectx8 fixture: types are in gid_attrs/types.
        let port = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/sysfs/connectx8/class/infiniband/mlx5_0/ports/1");
        let f = Fake {
            table: false,
            ex: false,
            entries: entries(),
            table_fails: false,
        };
        let (q, m, w) = read_with(&f, &port);
        assert_eq!(q, GidQuery::Legacy);
        assert!(w.is_empty(), "{w:?}");
        let g = &m[&1];
        assert_eq!(g.iter().map(|g| g.index).collect::<Vec<_>>(), vec![0, 1, 3]);
        let fixture_types: Vec<Option<GidType>> = [0, 1, 3]
            .iter()
            .map(|i| {
                std::fs::read_to_string(port.join(format!("gid_attrs/types/{i}")))
                    .ok()
                    .map(|s| GidType::from_sysfs(&s))
            })
            .collect();
        assert_eq!(
            g.iter().map(|g| g.gid_type.clone()).collect::<Vec<_>>(),
            fixture_types
        );
        assert!(g.iter().all(|g| g.ndev_ifindex.is_none()));
    }

    /// On this kind of machine (no RDMA in the kernel), the real libibverbs
    /// answers ENOSYS; with RDMA support it lists devices or says there are none.
    #[test]
    fn the_real_library_gives_a_specific_answer() {
        let v = read(&VerbsOptions::default());
        assert_eq!(v.library.as_deref(), Some("libibverbs.so.1"));
        if Path::new("/sys/class/infiniband_verbs").exists() {
            assert!(
                !v.devices.is_empty() || v.unavailable.is_some(),
                "neither devices nor a reason: {v:?}"
            );
        } else {
            let n = v.unavailable.expect("a reason");
            assert_eq!(
                n.reason,
                crate::model::NoRdmaReason::NoKernelSupport,
                "{}",
                n.detail
            );
            assert!(v.devices.is_empty());
        }
    }
}
