//! Tests of `probe rdma` that need no RDMA hardware: the device/GID choice on
//! fixture trees, the failure translation on recorded values and fixture
//! snapshots, and whole sessions over a software model of the NIC (loopback
//! without root; two processes in lab namespaces with root).

mod explain;
mod fake;
mod hostile;
mod select;
mod session;

/// For the mesh's RDMA level tests too.
pub(crate) use hostile::admitted;
pub(crate) use session::loopback_state;
/// For the wire's own tests too.
pub(super) use session::within;

/// The NIC model where a caller of `run_client`/`run_server` (the mesh) names
/// it as its libibverbs: `fake:normal` or `fake:black-hole`. The product has
/// no such seam (it is test-only).
pub(crate) fn fake_backend(v: &crate::kernel::verbs::VerbsOptions) -> Option<fake::FakeBackend> {
    let mode = match v.library.as_ref()?.to_str()? {
        "fake:normal" => fake::Mode::Normal,
        "fake:black-hole" => fake::Mode::BlackHole,
        _ => return None,
    };
    Some(fake::FakeBackend::new(mode))
}

use crate::model::{HostState, NeighState, Neighbor};
use std::net::{IpAddr, Ipv6Addr};
use std::path::{Path, PathBuf};

/// The doctor's fixture snapshots (roce-net/tests/fixtures/doctor).
pub fn doctor_fixture(name: &str) -> HostState {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/doctor")
        .join(name);
    HostState::load(&p).unwrap()
}

/// A neighbour entry as `ip neigh` would show it.
pub fn neigh(ip: &str, dev: &str, mac: &str, state: NeighState) -> Neighbor {
    Neighbor {
        ifname: dev.to_string(),
        ifindex: 0,
        ip: ip.parse().unwrap(),
        mac: if mac.is_empty() {
            None
        } else {
            Some(mac.parse().unwrap())
        },
        state: vec![state],
        router: false,
    }
}

/// A GID as sysfs prints it: 8 groups of 4 hex digits.
fn gid_text(g: Ipv6Addr) -> String {
    g.segments()
        .iter()
        .map(|s| format!("{s:04x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// Write an RDMA device `dev` with one RoCE port backed by `netdev` holding
/// `v4`, in the kernel's sysfs formats (as `tests/fixtures/sysfs/generate.py`
/// writes them): GID 0/1 link-local v1/v2, 2/3 the IPv4-mapped address v1/v2.
pub fn write_sysfs_device(
    root: &Path,
    dev: &str,
    netdev: &str,
    v4: std::net::Ipv4Addr,
    state: &str,
) {
    write_sysfs_device_with(root, dev, netdev, &[IpAddr::V4(v4)], state)
}

/// [`write_sysfs_device`] for any addresses of the netdev, in order: GID 0/1
/// link-local v1/v2, then a v1 and a v2 GID per address (IPv4-mapped for an
/// IPv4 one, the address itself for an IPv6 one, as `ib_cache.c` adds them).
pub fn write_sysfs_device_with(
    root: &Path,
    dev: &str,
    netdev: &str,
    addrs: &[IpAddr],
    state: &str,
) {
    let port = root.join(format!("class/infiniband/{dev}/ports/1"));
    for d in ["gids", "gid_attrs/types", "gid_attrs/ndevs"] {
        std::fs::create_dir_all(port.join(d)).unwrap();
    }
    let w = |rel: &str, s: &str| std::fs::write(port.join(rel), format!("{s}\n")).unwrap();
    w("state", state);
    w(
        "phys_state",
        if state.ends_with("ACTIVE") {
            "5: LinkUp"
        } else {
            "3: Disabled"
        },
    );
    w("link_layer", "Ethernet");
    w("rate", "100 Gb/sec (4X EDR)");
    let ll: Ipv6Addr = "fe80::1".parse().unwrap();
    let gids: Vec<Ipv6Addr> = std::iter::once(ll)
        .chain(addrs.iter().map(|a| crate::scope::gid_of(*a)))
        .collect();
    let mut i = 0;
    for g in &gids {
        for t in ["IB/RoCE v1", "RoCE v2"] {
            w(&format!("gids/{i}"), &gid_text(*g));
            w(&format!("gid_attrs/types/{i}"), t);
            w(&format!("gid_attrs/ndevs/{i}"), netdev);
            i += 1;
        }
    }
    // Empty slots read as zeros.
    for j in i..i + 4 {
        w(&format!("gids/{j}"), &gid_text(Ipv6Addr::UNSPECIFIED));
    }
}

pub fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}
