//! Sysctls through a `/proc/sys` root: fixture trees in a temp dir, and the real
//! `/proc/sys` inside a namespace this test creates.

use super::{
    read_shared_sysctls, read_shared_sysctls_of, read_sysctl, read_sysctls, reread_sysctls,
    write_sysctl, PROC_SYS,
};
use crate::model::{ConfKey, ConfTarget, Sysctl, TuningKey};
use crate::netns::NetnsTarget;
use crate::test_support as sf_common;
use crate::ErrorKind;
use std::path::Path;

/// A fake `/proc/sys` with conf/{all,default,<ifaces>} and the tuning files.
fn tree(confs: &[(&str, [u32; 6])]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for (dir, vals) in confs {
        let p = d.path().join("net/ipv4/conf").join(dir);
        std::fs::create_dir_all(&p).unwrap();
        for (k, v) in ConfKey::ALL.iter().zip(vals) {
            std::fs::write(p.join(k.file_name()), format!("{v}\n")).unwrap();
        }
    }
    std::fs::create_dir_all(d.path().join("net/core")).unwrap();
    std::fs::write(d.path().join("net/core/netdev_max_backlog"), "1000\n").unwrap();
    std::fs::write(d.path().join("net/core/rmem_max"), "212992\n").unwrap();
    std::fs::write(d.path().join("net/core/wmem_max"), "212992\n").unwrap();
    std::fs::write(
        d.path().join("net/ipv4/udp_mem"),
        "188124\t250835\t376248\n",
    )
    .unwrap();
    d
}

// Order of ConfKey::ALL: arp_ignore, arp_announce, arp_filter, rp_filter, accept_local, arp_notify.
#[test]
fn reads_all_default_interfaces_and_effective_values() {
    let d = tree(&[
        ("all", [1, 2, 0, 2, 0, 0]),
        ("default", [0, 0, 0, 1, 0, 0]),
        ("eth0.100", [0, 0, 1, 1, 0, 1]),
        ("ens1f0np0", [2, 1, 0, 0, 1, 0]),
    ]);
    let mut w = Vec::new();
    let names: Vec<String> = ["eth0.100", "ens1f0np0", "gone0"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let v = read_sysctls(d.path(), &names, &mut w);
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(v.all.arp_ignore, Some(1));
    assert_eq!(v.all.rp_filter, Some(2));
    assert_eq!(v.default.rp_filter, Some(1));
    // An interface without a conf directory is left out.
    assert_eq!(v.interfaces.len(), 2);
    let dotted = &v.interfaces["eth0.100"];
    assert_eq!(dotted.configured.arp_ignore, Some(0));
    assert_eq!(dotted.configured.arp_notify, Some(1));
    // max(all, iface) for arp_ignore / arp_announce / rp_filter; OR for arp_filter.
    assert_eq!(dotted.effective.arp_ignore, Some(1));
    assert_eq!(dotted.effective.arp_announce, Some(2));
    assert_eq!(dotted.effective.rp_filter, Some(2));
    assert_eq!(dotted.effective.arp_filter, Some(1));
    let e = &v.interfaces["ens1f0np0"];
    assert_eq!(e.effective.arp_ignore, Some(2));
    assert_eq!(e.effective.accept_local, Some(1));
    assert_eq!(v.effective("ens1f0np0", ConfKey::ArpIgnore), Some(2));
    assert_eq!(v.tuning.netdev_max_backlog, Some(1000));
    assert_eq!(v.tuning.rmem_max, Some(212992));
    assert_eq!(v.tuning.wmem_max, Some(212992));
    assert_eq!(v.tuning.udp_mem, Some([188124, 250835, 376248]));
}

/// The IPv6 keys come from `net/ipv6/conf/<dir>` and combine with `all` as
/// net/ipv6 does; a tree without it (a kernel booted with `ipv6.disable=1`)
/// leaves them unknown without a warning; a write lands in the IPv6 directory.
#[test]
fn ipv6_keys_come_from_net_ipv6_conf() {
    let d = tree(&[("all", [0; 6]), ("default", [0; 6]), ("r0", [0; 6])]);
    let mut w = Vec::new();
    let v = read_sysctls(d.path(), &["r0".to_string()], &mut w);
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(v.interfaces["r0"].configured.accept_ra, None);
    assert_eq!(v.all.ndisc_notify, None);
    // disable_ipv6, accept_ra, accept_ra_defrtr, autoconf, accept_dad,
    // ndisc_notify, keep_addr_on_down, forwarding
    for (dir, vals) in [
        ("all", [0, 1, 1, 1, 1, 1, 0, 0]),
        ("default", [0, 1, 1, 1, 1, 0, 0, 0]),
        ("r0", [0, 2, 0, 1, 0, 0, 1, 1]),
    ] {
        let p = d.path().join("net/ipv6/conf").join(dir);
        std::fs::create_dir_all(&p).unwrap();
        for (k, v) in ConfKey::of(crate::model::Family::Inet6).zip(vals) {
            std::fs::write(p.join(k.file_name()), format!("{v}\n")).unwrap();
        }
    }
    let v = read_sysctls(d.path(), &["r0".to_string()], &mut w);
    assert!(w.is_empty(), "{w:?}");
    let r0 = &v.interfaces["r0"];
    assert_eq!(r0.configured.accept_ra, Some(2));
    assert_eq!(r0.effective.accept_ra_defrtr, Some(0), "own value only");
    assert_eq!(r0.effective.ndisc_notify, Some(1), "all or iface");
    assert_eq!(r0.effective.accept_dad, Some(1), "the larger");
    assert_eq!(r0.effective.keep_addr_on_down, Some(1), "all is 0: iface");
    assert_eq!(r0.configured.arp_ignore, Some(0));
    let s = Sysctl::Conf {
        target: ConfTarget::Interface("r0".into()),
        key: ConfKey::AcceptRaDefrtr,
    };
    assert_eq!(write_sysctl(d.path(), &s, "1").unwrap(), Some("0".into()));
    assert_eq!(
        std::fs::read_to_string(d.path().join("net/ipv6/conf/r0/accept_ra_defrtr")).unwrap(),
        "1\n"
    );
    let mut files = super::SysctlFiles::new(d.path());
    files.set(&s, "0").unwrap();
    let keep = Sysctl::Conf {
        target: ConfTarget::All,
        key: ConfKey::KeepAddrOnDown,
    };
    files.set(&keep, "-1").unwrap();
    let mut v = read_sysctls(d.path(), &["r0".to_string()], &mut w);
    assert_eq!(v.interfaces["r0"].configured.accept_ra_defrtr, Some(0));
    assert_eq!(v.interfaces["r0"].effective.keep_addr_on_down, Some(-1));
    // Verify's re-read of the shared ones goes to the same directory.
    std::fs::write(d.path().join("net/ipv6/conf/all/keep_addr_on_down"), "1\n").unwrap();
    reread_sysctls(d.path(), &mut v, &[keep]).unwrap();
    assert_eq!(v.all.keep_addr_on_down, Some(1));
    assert!(w.is_empty(), "{w:?}");
}

/// Apply's plan snapshot reads only the shared sysctls the policy sets: the
/// values it reads are the full read's, a directory it needs none of is not
/// opened (no warning for a missing `conf/default`), and tuning is read, with
/// its access, only when a tuning key is named.
#[test]
fn a_selection_of_shared_sysctls_reads_exactly_those() {
    let d = tree(&[("all", [1, 2, 1, 2, 1, 1])]);
    let conf = |target, key| Sysctl::Conf { target, key };
    let which = [
        conf(ConfTarget::All, ConfKey::ArpIgnore),
        conf(ConfTarget::All, ConfKey::RpFilter),
        conf(ConfTarget::Interface("eth0".into()), ConfKey::ArpAnnounce),
    ];
    let mut w = Vec::new();
    let v = read_shared_sysctls_of(d.path(), &which, &mut w);
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(v.all.arp_ignore, Some(1));
    assert_eq!(v.all.rp_filter, Some(2));
    assert_eq!(v.all.arp_announce, None);
    assert_eq!(v.all.arp_filter, None);
    assert_eq!(v.default, Default::default());
    assert_eq!(v.tuning, Default::default());
    assert_eq!(v.tuning_access, None);
    assert_eq!(v.initial_netns, None);
    assert!(v.interfaces.is_empty());

    let mut w = Vec::new();
    let full = read_shared_sysctls(d.path(), &mut w);
    assert_eq!(w.len(), 1, "the full read warns about conf/default: {w:?}");
    let mut w = Vec::new();
    let with_tuning = [
        conf(ConfTarget::Default, ConfKey::ArpAnnounce),
        Sysctl::Tuning(TuningKey::RmemMax),
    ];
    let v = read_shared_sysctls_of(d.path(), &with_tuning, &mut w);
    assert_eq!(w.len(), 1, "conf/default is named and missing: {w:?}");
    assert_eq!(v.all, Default::default());
    assert_eq!(v.tuning, full.tuning);
    assert_eq!(v.tuning_access, full.tuning_access);
    assert_eq!(v.initial_netns, full.initial_netns);
}

#[test]
fn malformed_values_warn_and_keep_the_rest() {
    let d = tree(&[
        ("all", [1, 2, 0, 2, 0, 0]),
        ("default", [0; 6]),
        ("eth1", [0; 6]),
    ]);
    std::fs::write(d.path().join("net/ipv4/conf/eth1/rp_filter"), "loose\n").unwrap();
    std::fs::remove_file(d.path().join("net/ipv4/conf/default/arp_notify")).unwrap();
    std::fs::write(d.path().join("net/ipv4/udp_mem"), "1 2\n").unwrap();
    std::fs::remove_file(d.path().join("net/core/netdev_max_backlog")).unwrap();
    let mut w = Vec::new();
    let v = read_sysctls(d.path(), &["eth1".to_string(), "../x".to_string()], &mut w);
    let has = |suffix: &str| w.iter().any(|x| x.source.ends_with(suffix));
    assert!(has("conf/eth1/rp_filter"), "{w:?}");
    assert!(has("conf/default/arp_notify"), "{w:?}");
    assert!(has("net/ipv4/udp_mem"), "{w:?}");
    assert!(w.iter().any(|x| x.message.contains("\"../x\"")), "{w:?}");
    assert_eq!(w.len(), 4, "{w:?}");
    let e = &v.interfaces["eth1"];
    assert_eq!(e.configured.rp_filter, None);
    // Unknown interface value: the kernel would still apply `all`.
    assert_eq!(e.effective.rp_filter, Some(2));
    assert_eq!(e.configured.arp_ignore, Some(0));
    assert_eq!(v.default.arp_notify, None);
    assert_eq!(v.tuning.udp_mem, None);
    // Missing host-wide key (as in a non-initial namespace): None, no warning.
    assert_eq!(v.tuning.netdev_max_backlog, None);
    assert_eq!(v.tuning.rmem_max, Some(212992));
}

/// A `conf/all` value that is not a number: the snapshot warns and keeps the
/// rest, verify's re-read fails naming the sysctl, both with the same reason.
#[test]
fn unparsable_shared_value_warns_in_a_snapshot_and_fails_verify() {
    let d = tree(&[("all", [1, 2, 0, 2, 0, 0]), ("default", [0; 6])]);
    std::fs::write(d.path().join("net/ipv4/conf/all/arp_announce"), "two\n").unwrap();
    let mut w = Vec::new();
    let mut v = read_shared_sysctls(d.path(), &mut w);
    assert_eq!(v.all.arp_announce, None);
    assert_eq!(v.all.arp_ignore, Some(1));
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].source.ends_with("conf/all/arp_announce"), "{w:?}");
    let reason = "value \"two\" is not an integer";
    assert!(w[0].message.contains(reason), "{w:?}");
    let s = Sysctl::Conf {
        target: ConfTarget::All,
        key: ConfKey::ArpAnnounce,
    };
    let e = reread_sysctls(d.path(), &mut v, std::slice::from_ref(&s)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Parse);
    let text = e.to_string();
    assert!(
        text.contains("arp_announce") && text.contains(reason),
        "{text}"
    );
    // A readable value is re-read into the view.
    std::fs::write(d.path().join("net/ipv4/conf/all/arp_announce"), "1\n").unwrap();
    reread_sysctls(d.path(), &mut v, &[s]).unwrap();
    assert_eq!(v.all.arp_announce, Some(1));
}

#[test]
fn write_checks_range_writes_and_reads_back() {
    let d = tree(&[("all", [0; 6]), ("default", [0; 6]), ("eth0.100", [0; 6])]);
    let rp = Sysctl::Conf {
        target: ConfTarget::Interface("eth0.100".into()),
        key: ConfKey::RpFilter,
    };
    assert_eq!(write_sysctl(d.path(), &rp, "2").unwrap(), Some("0".into()));
    assert_eq!(read_sysctl(d.path(), &rp).unwrap(), "2");
    let file = d.path().join("net/ipv4/conf/eth0.100/rp_filter");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "2\n");

    // Out of range: refused before writing.
    let e = write_sysctl(d.path(), &rp, "3").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(
        e.to_string().contains("net.ipv4.conf.eth0/100.rp_filter"),
        "{e}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "2\n");

    let udp = Sysctl::Tuning(TuningKey::UdpMem);
    let prev = write_sysctl(d.path(), &udp, "100 200 300").unwrap();
    assert_eq!(prev.as_deref(), Some("188124\t250835\t376248"));
    assert_eq!(read_sysctl(d.path(), &udp).unwrap(), "100\t200\t300");
    assert_eq!(
        write_sysctl(d.path(), &udp, "1 2").unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
}

#[test]
fn write_to_missing_interface_or_bad_name_fails_clearly() {
    let d = tree(&[("all", [0; 6]), ("default", [0; 6])]);
    let s = Sysctl::Conf {
        target: ConfTarget::Interface("nope0".into()),
        key: ConfKey::ArpIgnore,
    };
    let e = write_sysctl(d.path(), &s, "1").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(
        e.to_string().contains("\"nope0\" has no IPv4 settings"),
        "{e}"
    );
    assert!(!d.path().join("net/ipv4/conf/nope0").exists());
    let bad = Sysctl::Conf {
        target: ConfTarget::Interface("../all".into()),
        key: ConfKey::ArpIgnore,
    };
    assert_eq!(
        read_sysctl(d.path(), &bad).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
}

#[test]
fn read_back_mismatch_is_a_verify_error() {
    // A sysctl file that swallows writes: /dev/null reads back empty.
    let d = tree(&[("all", [0; 6]), ("default", [0; 6])]);
    let f = d.path().join("net/ipv4/conf/all/arp_announce");
    std::fs::remove_file(&f).unwrap();
    std::os::unix::fs::symlink("/dev/null", &f).unwrap();
    let s = Sysctl::Conf {
        target: ConfTarget::All,
        key: ConfKey::ArpAnnounce,
    };
    let e = write_sysctl(d.path(), &s, "2").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Verify);
    assert!(e.message().contains("reads back \"\""), "{e}");
}

/// The real `/proc/sys` inside a namespace: values set there with `sysctl -w` are
/// what the library reads, and what the library writes is what `sysctl` shows.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn reads_and_writes_per_namespace_values() {
    sf_common::require_namespaces("reads_and_writes_per_namespace_values");
    let ns = sf_common::Netns::new("sysctl");
    ns.ip(&[
        "link", "add", "d0.5", "type", "veth", "peer", "name", "d0.6",
    ]);
    let proc_sys = Path::new(PROC_SYS);
    let all_ai = Sysctl::Conf {
        target: ConfTarget::All,
        key: ConfKey::ArpIgnore,
    };
    // A value that differs from this machine's own, so reading the wrong namespace shows.
    let host = read_sysctl(proc_sys, &all_ai).unwrap();
    let want = if host == "2" { "1" } else { "2" };
    ns.exec(&[
        "sysctl",
        "-qw",
        &format!("net.ipv4.conf.all.arp_ignore={want}"),
    ]);

    let target = NetnsTarget::named(&ns.name).unwrap();
    let got = target.run(|| read_sysctl(proc_sys, &all_ai)).unwrap();
    assert_eq!(got, want);
    assert_eq!(
        read_sysctl(proc_sys, &all_ai).unwrap(),
        host,
        "host value must be untouched"
    );

    let (view, warnings) = target
        .run(|| {
            let mut w = Vec::new();
            let v = read_sysctls(proc_sys, &["lo".into(), "d0.5".into()], &mut w);
            Ok((v, w))
        })
        .unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(view.all.arp_ignore, Some(want.parse().unwrap()));
    assert_eq!(
        view.interfaces["d0.5"].effective.arp_ignore,
        Some(want.parse().unwrap())
    );

    // Write through the library on the dotted interface; `sysctl` (which spells the
    // dot as `/`) sees it.
    let rp = Sysctl::Conf {
        target: ConfTarget::Interface("d0.5".into()),
        key: ConfKey::RpFilter,
    };
    let before = ns.exec(&["sysctl", "-n", "net.ipv4.conf.d0/5.rp_filter"]);
    let new = if before == "2" { "1" } else { "2" };
    let prev = target.run(|| write_sysctl(proc_sys, &rp, new)).unwrap();
    assert_eq!(prev.as_deref(), Some(before.as_str()));
    assert_eq!(
        ns.exec(&["sysctl", "-n", "net.ipv4.conf.d0/5.rp_filter"]),
        new
    );
    // Out-of-range values never reach the kernel (which would accept arp_ignore=9).
    let e = target
        .run(|| write_sysctl(proc_sys, &all_ai, "9"))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert_eq!(
        ns.exec(&["sysctl", "-n", "net.ipv4.conf.all.arp_ignore"]),
        want
    );
}

/// A snapshot's per-interface values come from the link dump
/// (`IFLA_INET_CONF` and `IFLA_INET6_CONF`), not from thirteen `/proc/sys`
/// files per interface: checked here against the kernel's own files and
/// `sysctl(8)` for every key of both families, on names with dots, with values
/// that differ per interface and key (all written with `sysctl -w`, as an
/// administrator would), and negative values (`keep_addr_on_down=-1` is one
/// the kernel documents; `arp_notify=-1` one `/proc/sys` stores all the same).
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn link_dump_values_are_the_proc_sys_values() {
    sf_common::require_namespaces("link_dump_values_are_the_proc_sys_values");
    let ns = sf_common::Netns::new("inetconf");
    ns.ip(&["link", "add", "v0.7", "type", "veth", "peer", "name", "v1"]);
    ns.ip(&["link", "add", "v2", "type", "veth", "peer", "name", "v3"]);
    let names = ["lo", "v0.7", "v1", "v2", "v3"];
    let sysctl = |name: &str, key: ConfKey| {
        Sysctl::Conf {
            target: ConfTarget::Interface(name.to_string()),
            key,
        }
        .display_name()
    };
    for (n, name) in names.iter().enumerate() {
        for (k, key) in ConfKey::ALL.iter().enumerate() {
            let r = key.valid_range();
            let span = (r.end() - r.start() + 1) as usize;
            let v = *r.start() + ((n + k) % span) as i32;
            ns.exec(&["sysctl", "-qw", &format!("{}={v}", sysctl(name, *key))]);
        }
    }
    ns.exec(&["sysctl", "-qw", "net.ipv4.conf.v3.arp_notify=-1"]);
    ns.exec(&["sysctl", "-qw", "net.ipv4.conf.all.arp_ignore=1"]);
    ns.exec(&["sysctl", "-qw", "net.ipv6.conf.all.ndisc_notify=1"]);

    let host = crate::host::Host::netns(&ns.name).unwrap();
    let st = host.snapshot().unwrap();
    let target = NetnsTarget::named(&ns.name).unwrap();
    let owned: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    let (files, _) = target
        .run(|| {
            let mut w = Vec::new();
            Ok((read_sysctls(Path::new(PROC_SYS), &owned, &mut w), w))
        })
        .unwrap();
    for name in names {
        let got = &st.sysctls.interfaces[name];
        for key in ConfKey::ALL {
            let text = ns.exec(&["sysctl", "-n", &sysctl(name, key)]);
            let want = text.parse::<i32>().ok();
            assert!(want.is_some(), "{name} {key:?}: {text}");
            assert_eq!(
                got.configured.get(key),
                want,
                "{name} {key:?} (sysctl says {text})"
            );
            assert_eq!(
                got.configured.get(key),
                files.interfaces[name].configured.get(key),
                "{name} {key:?}"
            );
        }
        assert_eq!(got.effective, files.interfaces[name].effective, "{name}");
    }
    assert_eq!(st.sysctls.interfaces["v3"].configured.arp_notify, Some(-1));
    assert_eq!(st.sysctls.all.ndisc_notify, Some(1));
    assert_eq!(st.sysctls.interfaces["v1"].effective.ndisc_notify, Some(1));
    assert!(st.warnings.is_empty(), "{:?}", st.warnings);
}

/// Many writes through one `SysctlFiles`: each lands in its own file, and no
/// more than `MAX_CONF_DIRS` directory descriptors stay open however many
/// interfaces there are (the rest open their whole path).
#[test]
fn sysctl_files_write_many_interfaces_with_bounded_descriptors() {
    let n = super::MAX_CONF_DIRS + 20;
    let names: Vec<String> = (0..n).map(|i| format!("e{i}.7")).collect();
    let mut confs: Vec<(&str, [u32; 6])> = vec![("all", [0; 6]), ("default", [0; 6])];
    confs.extend(names.iter().map(|n| (n.as_str(), [0; 6])));
    let d = tree(&confs);
    let mut files = super::SysctlFiles::new(d.path());
    for (i, name) in names.iter().enumerate() {
        for key in [ConfKey::ArpIgnore, ConfKey::RpFilter] {
            let s = Sysctl::Conf {
                target: ConfTarget::Interface(name.clone()),
                key,
            };
            let v = (i % 2 + 1).to_string();
            // Both ways of writing open the same descriptors (apply writes
            // without reading back, rollback reads back).
            if key == ConfKey::ArpIgnore {
                files.set(&s, &v).unwrap();
            } else {
                files.write(&s, &v).unwrap();
            }
        }
    }
    assert!(
        files.dirs.len() <= super::MAX_CONF_DIRS,
        "{}",
        files.dirs.len()
    );
    for (i, name) in names.iter().enumerate() {
        let dir = d.path().join("net/ipv4/conf").join(name);
        let want = format!("{}\n", i % 2 + 1);
        assert_eq!(
            std::fs::read_to_string(dir.join("arp_ignore")).unwrap(),
            want
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("rp_filter")).unwrap(),
            want
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("arp_announce")).unwrap(),
            "0\n"
        );
    }
    // A missing interface is NotFound naming it, through the cache as without.
    let gone = Sysctl::Conf {
        target: ConfTarget::Interface("gone0".into()),
        key: ConfKey::ArpIgnore,
    };
    assert_eq!(
        files.set(&gone, "1").unwrap_err().kind(),
        ErrorKind::NotFound
    );
}

/// Writing without the read-back checks the value as `set` does: out of range is
/// `InvalidInput` and the file is left as it was.
#[test]
fn sysctl_write_without_read_back_still_refuses_bad_values() {
    let d = tree(&[("all", [0; 6]), ("r0", [0; 6])]);
    let mut files = super::SysctlFiles::new(d.path());
    let s = Sysctl::Conf {
        target: ConfTarget::Interface("r0".into()),
        key: ConfKey::ArpIgnore,
    };
    let file = d.path().join("net/ipv4/conf/r0/arp_ignore");
    let err = files.write(&s, "9").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "0\n");
    files.write(&s, "2").unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "2\n");
}
