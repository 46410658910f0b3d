//! Discovery on admin-style trees (no root needed): which stack configures each
//! NIC and under which name, by each tool's own rules, and the backend choice.
//! The same fixtures are read by the real tools in `tests/it/persist_boot.rs`.

use roce_net::{
    Backend, Claim, HwAddr, Interface, LinkStats, NetplanRenderer, OperState, PersistRoot,
};
use roce_net_testkit::copy_tree;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

fn fixture(stack: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/boot")
        .join(stack)
}

fn iface(index: u32, name: &str, mac: &str) -> Interface {
    Interface {
        index,
        name: name.into(),
        kind: Some("veth".into()),
        mac: Some(mac.parse::<HwAddr>().unwrap()),
        mtu: 1500,
        admin_up: true,
        oper_state: OperState::Up,
        carrier: Some(true),
        master: None,
        stats: LinkStats::default(),
        ethtool_stats: None,
        qos: None,
    }
}

fn node(stack: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    copy_tree(&fixture(stack), d.path(), &|_| 0o600);
    d
}

fn claims(cfg: &roce_net::NodeConfig, nic: &str) -> Vec<Claim> {
    cfg.nic(nic).unwrap().claims.clone()
}

#[test]
fn networkd_first_match_in_name_order_with_shadowing_and_masks() {
    let d = node("networkd");
    let root = PersistRoot::new(d.path());
    let ifs = [
        iface(2, "r0", "02:00:00:00:03:00"),
        iface(3, "r1", "02:00:00:00:03:01"),
        iface(4, "r2", "02:00:00:00:03:02"),
        iface(5, "r3", "02:00:00:00:03:03"),
        iface(6, "eth7", "02:00:00:00:03:07"),
    ];
    let cfg = roce_net::discover_config(&root, &ifs, &["r0", "r1", "r2", "r3", "eth7"]);
    let file = |nic: &str| match &claims(&cfg, nic)[..] {
        [Claim::Networkd { file, .. }] => file.strip_prefix(d.path()).unwrap().to_path_buf(),
        other => panic!("{nic}: {other:?}"),
    };
    // /etc shadows /usr/lib's 20-r0.network.
    assert_eq!(file("r0"), Path::new("etc/systemd/network/20-r0.network"));
    // /run's 10-r1.network is masked by /etc's symlink to /dev/null; MAC match.
    assert_eq!(
        file("r1"),
        Path::new("etc/systemd/network/30-rdma1.network")
    );
    // Glob with a bracket expression and Type=ether.
    assert_eq!(file("r2"), Path::new("etc/systemd/network/40-rdma.network"));
    // A vendor file sorts before the glob file.
    assert_eq!(
        file("r3"),
        Path::new("usr/lib/systemd/network/35-r3.network")
    );
    // eth7 matches the decoy (Name=eth*).
    assert_eq!(
        file("eth7"),
        Path::new("etc/systemd/network/50-decoy.network")
    );
    let (b, why) = roce_net::choose_backend(&cfg).unwrap();
    assert_eq!(b, Backend::Networkd, "{why}");
}

#[test]
fn networkd_matches_it_cannot_evaluate_are_not_guessed() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("etc/systemd/network");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("10-pci.network"),
        "[Match]\nPath=pci-0000:17:00.0\nName=r0\n[Network]\nDHCP=yes\n",
    )
    .unwrap();
    std::fs::write(dir.join("20-r0.network"), "[Match]\nName=r0\n").unwrap();
    let root = PersistRoot::new(d.path());
    let ifs = [iface(2, "r0", "02:00:00:00:00:01")];
    let cfg = roce_net::discover_config(&root, &ifs, &["r0"]);
    assert!(claims(&cfg, "r0").is_empty());
    let e = roce_net::choose_backend(&cfg).unwrap_err();
    assert!(e.to_string().contains("Path"), "{e}");
    // networkd's own answer settles it while it runs.
    let links = d.path().join("run/systemd/netif/links");
    std::fs::create_dir_all(&links).unwrap();
    std::fs::write(
        links.join("2"),
        "ADMIN_STATE=configured\nNETWORK_FILE=/etc/systemd/network/10-pci.network\n",
    )
    .unwrap();
    let cfg = roce_net::discover_config(&root, &ifs, &["r0"]);
    assert!(
        matches!(&claims(&cfg, "r0")[..], [Claim::Networkd { name, from_state: true, .. }] if name == "10-pci.network"),
        "{cfg:?}"
    );
}

#[test]
fn netplan_ids_by_mac_and_set_name_and_renderer() {
    let d = node("netplan-nm");
    let root = PersistRoot::new(d.path());
    let ifs = [
        iface(2, "r0", "02:00:00:00:04:00"),
        iface(3, "r1", "02:00:00:00:04:01"),
        iface(4, "r2", "02:00:00:00:04:02"),
    ];
    let cfg = roce_net::discover_config(&root, &ifs, &["r0", "r1", "r2"]);
    match &claims(&cfg, "r0")[..] {
        [Claim::Netplan {
            kind, id, renderer, ..
        }] => {
            assert_eq!((kind.as_str(), id.as_str()), ("ethernets", "ens1f0np0"));
            assert_eq!(*renderer, NetplanRenderer::NetworkManager);
        }
        other => panic!("{other:?}"),
    }
    assert!(claims(&cfg, "r2").is_empty());
    let e = roce_net::choose_backend(&cfg).unwrap_err();
    assert!(e.to_string().contains("r2"), "{e}");
    // The keyfiles netplan generates for NetworkManager are netplan's, not a
    // second stack.
    let gen = d.path().join("run/NetworkManager/system-connections");
    std::fs::create_dir_all(&gen).unwrap();
    let k = gen.join("netplan-ens1f0np0.nmconnection");
    std::fs::write(
        &k,
        "[connection]\nid=netplan-ens1f0np0\ntype=ethernet\ninterface-name=r0\n",
    )
    .unwrap();
    std::fs::set_permissions(&k, std::fs::Permissions::from_mode(0o600)).unwrap();
    let cfg = roce_net::discover_config(&root, &ifs[..2], &["r0", "r1"]);
    assert_eq!(claims(&cfg, "r0").len(), 1, "{cfg:?}");
    assert_eq!(roce_net::choose_backend(&cfg).unwrap().0, Backend::Netplan);
}

#[test]
fn networkmanager_profiles_by_interface_name_or_mac_and_insecure_files_ignored() {
    let d = node("networkmanager");
    let root = PersistRoot::new(d.path());
    let ifs = [
        iface(2, "ens1f0np0", "02:00:00:00:05:00"),
        iface(3, "ens1f1np1", "02:00:00:00:05:01"),
    ];
    let cfg = roce_net::discover_config(&root, &ifs, &["ens1f0np0", "ens1f1np1"]);
    let uuid = |nic: &str| match &claims(&cfg, nic)[..] {
        [Claim::NetworkManager { uuid, by_name, .. }] => (uuid.clone().unwrap(), *by_name),
        other => panic!("{nic}: {other:?}"),
    };
    assert_eq!(
        uuid("ens1f0np0"),
        ("0c3e4a0e-4e63-4a55-9d3c-6b8a2b1c0f01".into(), true)
    );
    assert_eq!(
        uuid("ens1f1np1"),
        ("7d2f6a43-9a1b-4c2e-8f0e-1d5c3b9a7e02".into(), false)
    );
    assert_eq!(
        roce_net::choose_backend(&cfg).unwrap().0,
        Backend::NetworkManager
    );
    // A keyfile others can read is ignored, as NetworkManager does.
    let f = d
        .path()
        .join("etc/NetworkManager/system-connections/ens1f0np0.nmconnection");
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    let cfg = roce_net::discover_config(&root, &ifs, &["ens1f0np0"]);
    assert!(claims(&cfg, "ens1f0np0").is_empty());
    assert!(cfg.warnings.iter().any(|w| w.contains("644")), "{cfg:?}");
}

#[test]
fn ifupdown_stanzas_through_source_and_no_scripts() {
    let d = node("ifupdown");
    let root = PersistRoot::new(d.path());
    let ifs = [
        iface(2, "r0", "02:00:00:00:06:00"),
        iface(3, "r1", "02:00:00:00:06:01"),
    ];
    let cfg = roce_net::discover_config(&root, &ifs, &["r0", "r1"]);
    match &claims(&cfg, "r1")[..] {
        [Claim::Ifupdown {
            file,
            line,
            brought_up,
            no_scripts,
        }] => {
            assert!(file.ends_with("interfaces.d/rdma1"), "{file:?}");
            assert_eq!((*line, *brought_up, *no_scripts), (2, true, false));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(roce_net::choose_backend(&cfg).unwrap().0, Backend::Ifupdown);
    // no-scripts: the hook would never run, so the backend refuses the NIC.
    let f = d.path().join("etc/network/interfaces.d/rdma1");
    let mut s = std::fs::read_to_string(&f).unwrap();
    s.push_str("no-scripts r1\n");
    std::fs::write(&f, s).unwrap();
    let cfg = roce_net::discover_config(&root, &ifs, &["r0", "r1"]);
    let e = roce_net::RenderOptions::from_config(&cfg, Backend::Ifupdown).unwrap_err();
    assert!(e.to_string().contains("no-scripts"), "{e}");
}

#[test]
fn two_stacks_on_one_nic_or_nics_split_across_stacks_are_errors() {
    let d = node("ifupdown");
    // networkd also claims r0: a fight at boot.
    let dir = d.path().join("etc/systemd/network");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("10-r0.network"), "[Match]\nName=r0\n").unwrap();
    let root = PersistRoot::new(d.path());
    let ifs = [
        iface(2, "r0", "02:00:00:00:06:00"),
        iface(3, "r1", "02:00:00:00:06:01"),
    ];
    let cfg = roce_net::discover_config(&root, &ifs, &["r0", "r1"]);
    let e = roce_net::choose_backend(&cfg).unwrap_err();
    assert!(e.to_string().contains("fight"), "{e}");
    // Chosen explicitly, the fight is a warning.
    let (_, warnings) = roce_net::RenderOptions::from_config(&cfg, Backend::Ifupdown).unwrap();
    assert!(warnings.iter().any(|w| w.contains("r0")), "{warnings:?}");
    // r1 only in networkd, r0 only in ifupdown: split.
    std::fs::remove_file(dir.join("10-r0.network")).unwrap();
    std::fs::write(dir.join("10-r1.network"), "[Match]\nName=r1\n").unwrap();
    std::fs::remove_file(d.path().join("etc/network/interfaces.d/rdma1")).unwrap();
    let cfg = roce_net::discover_config(&root, &ifs, &["r0", "r1"]);
    let e = roce_net::choose_backend(&cfg).unwrap_err();
    assert!(e.to_string().contains("different stacks"), "{e}");
}

#[test]
fn remove_restores_what_persist_replaced_and_leaves_foreign_files() {
    let d = tempfile::tempdir().unwrap();
    let root = PersistRoot::new(d.path());
    // The admin had their own file at roce-net's sysctl path.
    let sysctl = d.path().join("etc/sysctl.d/90-roce-net.conf");
    std::fs::create_dir_all(sysctl.parent().unwrap()).unwrap();
    std::fs::write(&sysctl, "net.core.somaxconn = 4096\n").unwrap();
    let mut desired = roce_net::DesiredState {
        protocol: 201,
        ..Default::default()
    };
    desired.table_names.insert(1001, "roce_r0".into());
    let files =
        roce_net::render_persistence(&desired, Backend::RtTablesD, &Default::default()).unwrap();
    let w = roce_net::write_persistence_at(&files, &root, false).unwrap();
    assert_eq!(w.originals.len(), 1, "{w:?}");
    // Written twice: the original is kept once, not replaced by roce-net's own.
    let mut again = files.clone();
    again[0].content.push_str("# changed\n");
    roce_net::write_persistence_at(&again, &root, false).unwrap();
    // A foreign file at another roce-net path is left alone.
    let netplan = d.path().join("etc/netplan/90-roce-net.yaml");
    std::fs::create_dir_all(netplan.parent().unwrap()).unwrap();
    std::fs::write(&netplan, "network: {version: 2}\n").unwrap();
    let r = roce_net::remove_persistence(&root, &[], true).unwrap();
    assert!(r.dry_run && r.restored == vec![sysctl.clone()], "{r:?}");
    assert!(sysctl.with_extension("conf").exists());
    let r = roce_net::remove_persistence(&root, &[], false).unwrap();
    assert_eq!(r.foreign, vec![netplan.clone()], "{r:?}");
    assert_eq!(
        std::fs::read_to_string(&sysctl).unwrap(),
        "net.core.somaxconn = 4096\n"
    );
    // The table-names file, which names a table, stays: host-wide and shared
    // with live applies (persist_write.rs has the details).
    assert_eq!(r.left.len(), 1, "{r:?}");
    assert!(r.left[0].0.ends_with("rt_tables.d/roce-net.conf"), "{r:?}");
    let left: Vec<String> = walk(d.path());
    assert_eq!(
        left,
        [
            // Not the host-wide lock of the names file: it exists only while
            // a writer holds it.
            "etc/iproute2/rt_tables.d/roce-net.conf",
            "etc/netplan/90-roce-net.yaml",
            "etc/sysctl.d/90-roce-net.conf"
        ],
        "{r:?}"
    );
}

fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

/// The backend is chosen from what configures the NICs, never from which
/// network service merely runs or is enabled (the marker-file guess
/// `detect_backend` made, which `persist` never used, is gone): on an ifupdown
/// node where networkd and NetworkManager also run, the choice is ifupdown; a
/// node where nothing configures the NICs is refused by name; no NIC at all
/// persists only the sysctls.
#[test]
fn the_choice_follows_the_nics_configuration_not_the_running_services() {
    let d = node("ifupdown");
    let root = PersistRoot::new(d.path());
    let ifs = [
        iface(2, "r0", "02:00:00:00:06:00"),
        iface(3, "r1", "02:00:00:00:06:01"),
    ];
    for marker in [
        "run/systemd/netif/state",
        "etc/systemd/system/multi-user.target.wants/systemd-networkd.service",
        "etc/systemd/system/multi-user.target.wants/NetworkManager.service",
    ] {
        let p = d.path().join(marker);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, "").unwrap();
    }
    std::fs::create_dir_all(d.path().join("run/NetworkManager")).unwrap();
    let cfg = roce_net::discover_config(&root, &ifs, &["r0", "r1"]);
    let (b, why) = roce_net::choose_backend(&cfg).unwrap();
    assert_eq!(b, Backend::Ifupdown, "{why}");

    let empty = tempfile::tempdir().unwrap();
    let root = PersistRoot::new(empty.path());
    let cfg = roce_net::discover_config(&root, &ifs, &["r0"]);
    let e = roce_net::choose_backend(&cfg).unwrap_err();
    assert!(e.to_string().contains("r0"), "{e}");
    let cfg = roce_net::discover_config(&root, &ifs, &[]);
    assert_eq!(roce_net::choose_backend(&cfg).unwrap().0, Backend::SysctlD);
}

/// A node whose NICs no stack configures (the lab's, a node configured by
/// hand or by a tool roce-net does not read): the error names the NICs once,
/// not the same sentence per NIC, and says which `--backend` values there are
/// and what each persists (the first hour: it said only "choose with
/// --backend", and `--backend networkd` then failed too).
#[test]
fn nics_no_stack_configures_are_named_once_with_the_backends_to_choose() {
    let d = tempfile::tempdir().unwrap();
    let root = PersistRoot::new(d.path());
    let ifs: Vec<Interface> = (0..4)
        .map(|i| iface(2 + i, &format!("r{i}"), &format!("02:00:00:00:07:0{i}")))
        .collect();
    let cfg = roce_net::discover_config(&root, &ifs, &["r0", "r1", "r2", "r3"]);
    let e = roce_net::choose_backend(&cfg).unwrap_err().to_string();
    assert!(e.contains("r0, r1, r2, r3: no netplan"), "{e}");
    assert_eq!(e.matches("no netplan").count(), 1, "{e}");
    for b in [
        "sysctl.d",
        "rt_tables.d",
        "networkd",
        "netplan",
        "networkmanager",
        "ifupdown",
    ] {
        assert!(e.contains(b), "{b}: {e}");
    }
}

/// A FIFO among netplan's files is skipped with a warning naming it, and
/// discovery goes on: it waited for a writer forever before the read went
/// through `input.rs` (checked: this test timed out on the old `File::open`).
#[test]
fn a_fifo_among_the_configuration_files_is_skipped_without_blocking() {
    let d = node("netplan-nm");
    let fifo = d.path().join("etc/netplan/60-fifo.yaml");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let root = PersistRoot::new(d.path());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let ifs = [iface(2, "r0", "02:00:00:00:04:00")];
        let _ = tx.send(roce_net::discover_config(&root, &ifs, &["r0"]));
    });
    let cfg = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("discovery blocked on a FIFO");
    assert_eq!(claims(&cfg, "r0").len(), 1, "{cfg:?}");
    assert!(
        cfg.warnings
            .iter()
            .any(|w| w.contains("60-fifo.yaml") && w.contains("FIFO")),
        "{:?}",
        cfg.warnings
    );
}
