//! Renderers: golden files per backend for a 4-NIC host (one NIC is a VLAN named
//! with a dot, one table is 100000), plus targeted checks of each backend's syntax.
//!
//! Regenerate the golden files with `UPDATE_GOLDEN=1 cargo test -p roce-net --test it persist_render::`.

use roce_net::ErrorKind;
use roce_net::{
    protocol, ConfKey, ConfTarget, Family, Route, RouteType, Rule, RuleAction, Scope, Sysctl,
    TuningKey,
};
use roce_net::{Backend, NetplanDevice, NetplanRenderer, NmProfile, RenderOptions, RenderedFile};
use roce_net::{DesiredState, NicDesired};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use yaml_rust2::Yaml;

use crate::golden_support;

const NICS: [(&str, &str, u32); 4] = [
    ("ens1f0np0", "198.18.0.10", 100000),
    ("ens1f1np1", "198.18.0.11", 100001),
    ("ens2f0np0", "198.18.0.12", 100002),
    ("bond0.100", "198.18.0.13", 100003),
];

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn subnet_route(ifname: &str, addr: &str, table: u32) -> Route {
    Route {
        family: Family::Inet,
        table,
        dst: "198.18.0.0/24".parse().unwrap(),
        kind: RouteType::Unicast,
        dev: Some(ifname.into()),
        prefsrc: Some(ip(addr)),
        gateway: None,
        scope: Scope::Link,
        protocol: protocol::ROCE_NET_DEFAULT,
        metric: None,
        tos: 0,
        multipath: vec![],
    }
}

fn yaml_str(s: &str) -> Yaml {
    Yaml::String(s.to_string())
}

fn source_rule(addr: &str, table: u32, priority: u32) -> Rule {
    Rule::source(addr.parse().unwrap(), table, priority).protocol(protocol::ROCE_NET_DEFAULT)
}

fn conf(target: ConfTarget, key: ConfKey) -> Sysctl {
    Sysctl::Conf { target, key }
}

/// The seed scenario: four NICs in one /24, one table and one rule per NIC,
/// plus a gateway route on the first NIC to exercise `Gateway=`/`via`.
fn desired() -> DesiredState {
    let mut d = DesiredState {
        protocol: protocol::ROCE_NET_DEFAULT,
        ..DesiredState::default()
    };
    for (i, (ifname, addr, table)) in NICS.iter().enumerate() {
        let prio = 1000 + i as u32;
        let name = format!("rnet-{}", ifname.replace('.', "-"));
        d.nics.push(NicDesired {
            ifname: ifname.to_string(),
            addresses: vec![format!("{addr}/24").parse().unwrap()],
            table: *table,
            table_name: name.clone(),
            rule_priority: prio,
        });
        d.routes.push(subnet_route(ifname, addr, *table));
        d.rules.push(source_rule(addr, *table, prio));
        d.table_names.insert(*table, name);
    }
    let mut gw = subnet_route("ens1f0np0", "198.18.0.10", 100000);
    gw.dst = "198.19.0.0/16".parse().unwrap();
    gw.gateway = Some(ip("198.18.0.1"));
    gw.scope = Scope::Universe;
    gw.metric = Some(100);
    d.routes.push(gw);
    for key in [ConfKey::ArpIgnore, ConfKey::ArpAnnounce, ConfKey::RpFilter] {
        let v = match key {
            ConfKey::ArpIgnore => "1",
            _ => "2",
        };
        d.sysctls.push((conf(ConfTarget::All, key), v.into()));
        for (ifname, _, _) in NICS {
            d.sysctls
                .push((conf(ConfTarget::Interface(ifname.into()), key), v.into()));
        }
    }
    d.sysctls.push((
        Sysctl::Tuning(TuningKey::UdpMem),
        "65536\t131072\t262144".into(),
    ));
    d
}

/// Where each NIC is configured, as discovery would report it: every NIC is
/// known to every backend (a missing one is refused, see
/// `nics_the_backend_does_not_configure_are_refused`).
fn options() -> RenderOptions {
    let mut o = RenderOptions::default();
    for (i, (ifname, _, _)) in NICS.iter().enumerate() {
        o.networkd_files
            .insert(ifname.to_string(), format!("25-rdma{i}.network"));
        o.nm_connections.insert(
            ifname.to_string(),
            NmProfile {
                uuid: Some(format!("5fb0a4b3-0c5e-4d5c-9a4e-00000000000{i}")),
                id: if i == 0 {
                    "Wired connection 1".into()
                } else {
                    format!("RDMA port {i}")
                },
            },
        );
        o.ifupdown_ifaces.insert(ifname.to_string());
    }
    for (ifname, kind, id) in [
        ("ens1f0np0", "ethernets", "ens1f0np0"),
        ("ens1f1np1", "ethernets", "ens1f1np1"),
        ("ens2f0np0", "ethernets", "rdma2"),
        ("bond0.100", "vlans", "bond0.100"),
    ] {
        o.netplan_devices.insert(
            ifname.into(),
            NetplanDevice {
                kind: kind.into(),
                id: id.into(),
                renderer: NetplanRenderer::Networkd,
            },
        );
    }
    o
}

fn fixture_dir(b: Backend) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/persist")
        .join(b.name())
}

/// A manifest of paths, modes and notes, so a change to any of them shows up.
fn manifest(files: &[RenderedFile]) -> String {
    let mut s = String::new();
    for f in files {
        s.push_str(&format!(
            "{} {:o}\n  note: {}\n",
            f.path.display(),
            f.mode,
            f.note.as_deref().unwrap_or("-")
        ));
    }
    s
}

fn list_files(dir: &Path, out: &mut Vec<PathBuf>) {
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd {
            let p = e.unwrap().path();
            if p.is_dir() {
                list_files(&p, out);
            } else {
                out.push(p);
            }
        }
    }
}

#[test]
fn golden_files_per_backend() {
    let d = desired();
    let update = golden_support::updating();
    for b in Backend::all() {
        let files = roce_net::render_persistence(&d, b, &options()).unwrap();
        let dir = fixture_dir(b);
        let mut expected: Vec<(PathBuf, String)> = files
            .iter()
            .map(|f| {
                (
                    dir.join(f.path.strip_prefix("/").unwrap()),
                    f.content.clone(),
                )
            })
            .collect();
        expected.push((dir.join("MANIFEST"), manifest(&files)));
        if update {
            // Files the renderer no longer writes go too.
            let _ = std::fs::remove_dir_all(&dir);
        }
        for (p, c) in &expected {
            golden_support::check_text(p, c);
        }
        let mut on_disk = Vec::new();
        list_files(&dir, &mut on_disk);
        on_disk.sort();
        let mut want: Vec<PathBuf> = expected.iter().map(|(p, _)| p.clone()).collect();
        want.sort();
        assert_eq!(on_disk, want, "{b}: stale or missing golden files");
    }
}

fn find<'a>(files: &'a [RenderedFile], path: &str) -> &'a RenderedFile {
    files
        .iter()
        .find(|f| f.path == Path::new(path))
        .unwrap_or_else(|| {
            panic!(
                "{path} not rendered; got {:?}",
                files.iter().map(|f| &f.path).collect::<Vec<_>>()
            )
        })
}

#[test]
fn every_backend_has_sysctls_and_all_but_sysctl_d_have_names() {
    let d = desired();
    for b in Backend::all() {
        let files = roce_net::render_persistence(&d, b, &options()).unwrap();
        let s = find(&files, "/etc/sysctl.d/90-roce-net.conf");
        // Dotted interface names are written with '/' so sysctl does not split them.
        assert!(
            s.content
                .contains("\nnet.ipv4.conf.bond0/100.arp_ignore = 1\n"),
            "{}",
            s.content
        );
        assert!(!s.content.contains("bond0.100.arp"), "{}", s.content);
        assert!(s
            .content
            .contains("\nnet.ipv4.udp_mem = 65536 131072 262144\n"));
        if b == Backend::SysctlD {
            assert_eq!(files.len(), 1);
            continue;
        }
        let t = find(&files, "/etc/iproute2/rt_tables.d/roce-net.conf");
        assert!(
            t.content.contains("\n100000\trnet-ens1f0np0\n"),
            "{}",
            t.content
        );
        assert!(
            t.content.contains("\n100003\trnet-bond0-100\n"),
            "{}",
            t.content
        );
        let p = find(&files, "/etc/iproute2/rt_protos.d/roce-net.conf");
        assert!(p.content.contains("\n201\troce-net\n"), "{}", p.content);
        if b == Backend::RtTablesD {
            assert_eq!(files.len(), 3);
        }
        for f in &files {
            assert!(f.path.is_absolute());
        }
    }
}

/// What `persist --backend`'s help and the error asking for a backend say each
/// backend writes ([`Backend::persists`]) is what it renders: the help said
/// `rt_tables.d` wrote the table names alone, while it renders the sysctl file
/// and the protocol names too.
#[test]
fn what_each_backend_is_said_to_write_is_what_it_renders() {
    let d = desired();
    for b in Backend::all() {
        let files = roce_net::render_persistence(&d, b, &options()).unwrap();
        let has = |p: &str| files.iter().any(|f| f.path == Path::new(p));
        let said = b.persists();
        assert!(has("/etc/sysctl.d/90-roce-net.conf") && said.contains("sysctls"));
        let names = has("/etc/iproute2/rt_tables.d/roce-net.conf")
            && has("/etc/iproute2/rt_protos.d/roce-net.conf");
        assert_eq!(names, said.contains("names"), "{b}: {said}");
        // Anything beyond the sysctls and the names holds routes and rules.
        let routes = files.len() > 3;
        assert_eq!(
            routes,
            said.contains("routes and rules") && !said.contains("no routes"),
            "{b}: {said}"
        );
        assert_eq!(said.contains("alone"), files.len() == 1, "{b}: {said}");
        assert!(Backend::choices().contains(b.name()), "{b}");
    }
}

#[test]
fn networkd_drop_ins_go_next_to_the_known_files() {
    let files = roce_net::render_persistence(&desired(), Backend::Networkd, &options()).unwrap();
    let known = find(
        &files,
        "/etc/systemd/network/25-rdma0.network.d/90-roce-net.conf",
    );
    assert!(known.note.as_deref().unwrap().contains("25-rdma0.network"));
    let c = &known.content;
    for line in [
        "[Route]\nDestination=198.18.0.0/24\nTable=100000\nPreferredSource=198.18.0.10\nScope=link\nProtocol=201\n",
        "[Route]\nDestination=198.19.0.0/16\nGateway=198.18.0.1\nTable=100000\nPreferredSource=198.18.0.10\nScope=global\nProtocol=201\nMetric=100\n",
        "[RoutingPolicyRule]\nFrom=198.18.0.10/32\nTable=100000\nPriority=1000\n",
    ] {
        assert!(c.contains(line), "missing {line:?} in\n{c}");
    }
    find(
        &files,
        "/etc/systemd/network/25-rdma3.network.d/90-roce-net.conf",
    );
    let conf = find(&files, "/etc/systemd/networkd.conf.d/90-roce-net.conf");
    assert!(conf
        .content
        .contains("[Network]\nManageForeignRoutingPolicyRules=no\nManageForeignRoutes=no\n"));
    // 1 sysctl + 2 names + networkd.conf + 4 drop-ins.
    assert_eq!(files.len(), 8);
}

#[test]
fn nics_the_backend_does_not_configure_are_refused() {
    for b in [
        Backend::Networkd,
        Backend::Netplan,
        Backend::NetworkManager,
        Backend::Ifupdown,
    ] {
        let mut o = options();
        o.networkd_files.remove("ens2f0np0");
        o.netplan_devices.remove("ens2f0np0");
        o.nm_connections.remove("ens2f0np0");
        o.ifupdown_ifaces.remove("ens2f0np0");
        let e = roce_net::render_persistence(&desired(), b, &o).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{b}");
        assert!(e.to_string().contains("ens2f0np0"), "{b}: {e}");
    }
    // sysctl.d and rt_tables.d attach nothing to an interface.
    roce_net::render_persistence(&desired(), Backend::SysctlD, &RenderOptions::default()).unwrap();
}

#[test]
fn netplan_yaml_parses_and_has_the_expected_structure() {
    let files = roce_net::render_persistence(&desired(), Backend::Netplan, &options()).unwrap();
    let f = find(&files, "/etc/netplan/90-roce-net.yaml");
    assert_eq!(f.mode, 0o600);
    let docs = yaml_rust2::YamlLoader::load_from_str(&f.content).unwrap();
    let v = &docs[0];
    let net = &v["network"];
    assert_eq!(net["version"], Yaml::Integer(2));
    // The definition's own section and ID are used, whatever the kernel name.
    let vlan = &net["vlans"]["bond0.100"];
    assert_eq!(vlan["routes"][0]["to"], yaml_str("198.18.0.0/24"));
    assert_eq!(vlan["routes"][0]["from"], yaml_str("198.18.0.13"));
    assert_eq!(vlan["routes"][0]["scope"], yaml_str("link"));
    assert_eq!(vlan["routes"][0]["table"], Yaml::Integer(100003));
    assert_eq!(
        vlan["routing-policy"][0]["from"],
        yaml_str("198.18.0.13/32")
    );
    assert_eq!(vlan["routing-policy"][0]["priority"], Yaml::Integer(1003));
    assert!(net["ethernets"]["rdma2"]["routes"].as_vec().is_some());
    // Not defined at all (a missing key reads as BadValue).
    assert!(net["ethernets"]["ens2f0np0"].is_badvalue());
    let e0 = &net["ethernets"]["ens1f0np0"];
    assert_eq!(e0["routes"][1]["via"], yaml_str("198.18.0.1"));
    assert_eq!(e0["routes"][1]["metric"], Yaml::Integer(100));
    // No addresses or DHCP anywhere: this file must not redefine them.
    let body: String = f
        .content
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect();
    assert!(!body.contains("addresses"), "{body}");
    assert!(!body.contains("dhcp"), "{body}");
}

/// For the same policy, a device netplan hands to NetworkManager gets each
/// route with the metric NetworkManager's own backend writes: a route
/// without one would come up with the device's metric (100 and up), not the
/// one planned. Both families, the default metric and an explicit one.
#[test]
fn netplan_for_networkmanager_and_networkmanager_give_routes_one_metric() {
    let mut d = desired();
    let mut v6 = subnet_route("ens1f1np1", "198.18.0.11", 100001);
    v6.family = Family::Inet6;
    v6.dst = "2001:db8::/64".parse().unwrap();
    v6.prefsrc = None;
    v6.scope = Scope::Universe;
    d.routes.push(v6);
    let mut o = options();
    for dev in o.netplan_devices.values_mut() {
        dev.renderer = NetplanRenderer::NetworkManager;
    }
    // The metric of each route (its destination and table), as each writer
    // hands it to NetworkManager.
    let np = roce_net::render_persistence(&d, Backend::Netplan, &o).unwrap();
    let docs =
        yaml_rust2::YamlLoader::load_from_str(&find(&np, "/etc/netplan/90-roce-net.yaml").content)
            .unwrap();
    let mut from_netplan = std::collections::BTreeMap::new();
    for section in ["ethernets", "vlans"] {
        for (_id, dev) in docs[0]["network"][section].as_hash().unwrap() {
            for r in dev["routes"].as_vec().unwrap() {
                let key = (
                    r["to"].as_str().unwrap().to_string(),
                    r["table"].as_i64().unwrap(),
                );
                from_netplan.insert(key, r["metric"].as_i64());
            }
        }
    }
    let nm = roce_net::render_persistence(&d, Backend::NetworkManager, &o).unwrap();
    let script = &find(&nm, "/etc/roce-net/nm-apply.sh").content;
    let mut from_nm = std::collections::BTreeMap::new();
    for value in script.split(".routes '").skip(1) {
        let value = value.split('\'').next().unwrap();
        let words: Vec<&str> = value.split(' ').collect();
        let table: i64 = value
            .split("table=")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        // `dst [next-hop] metric attr=...`: the metric is the last bare word.
        let metric = words
            .iter()
            .rev()
            .find(|w| !w.contains('='))
            .unwrap()
            .parse::<i64>()
            .ok();
        from_nm.insert((words[0].to_string(), table), metric);
    }
    assert_eq!(from_netplan.len(), d.routes.len(), "{from_netplan:?}");
    assert_eq!(
        from_netplan, from_nm,
        "netplan's routes for NetworkManager vs NetworkManager's own"
    );
    assert_eq!(from_nm[&("198.18.0.0/24".to_string(), 100000)], Some(0));
    assert_eq!(from_nm[&("198.19.0.0/16".to_string(), 100000)], Some(100));
    assert_eq!(from_nm[&("2001:db8::/64".to_string(), 100001)], Some(1024));
}

/// Run a rendered script with fake commands on PATH that log their arguments.
fn run_with_fakes(script: &str, fakes: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    for f in fakes {
        let p = dir.path().join(f);
        std::fs::write(
            &p,
            format!(
                "#!/bin/sh\necho \"{f} $*\" >> '{}'\nexit 0\n",
                log.display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let sp = dir.path().join("script");
    std::fs::write(&sp, script).unwrap();
    let out = std::process::Command::new("sh")
        .arg(&sp)
        .env("PATH", format!("{}:/usr/bin:/bin", dir.path().display()))
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        std::fs::read_to_string(&log).unwrap_or_default(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn networkmanager_script_modifies_existing_profiles_only() {
    let files =
        roce_net::render_persistence(&desired(), Backend::NetworkManager, &options()).unwrap();
    let f = find(&files, "/etc/roce-net/nm-apply.sh");
    assert_eq!(f.mode, 0o700);
    let u0 = "uuid '5fb0a4b3-0c5e-4d5c-9a4e-000000000000'";
    assert!(f.content.contains(&format!(
        "add {u0} ipv4.routes '198.18.0.0/24 0 table=100000 src=198.18.0.10'\n"
    )));
    assert!(f.content.contains(&format!(
        "add {u0} ipv4.routes '198.19.0.0/16 198.18.0.1 100 table=100000 src=198.18.0.10'\n"
    )));
    assert!(f.content.contains(
        "add uuid '5fb0a4b3-0c5e-4d5c-9a4e-000000000003' ipv4.routing-rules 'priority 1003 from 198.18.0.13/32 table 100003'\n"
    ));
    for l in f
        .content
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
    {
        assert!(
            !(l.contains("route-table") && (l.contains("modify") || l.starts_with("\tadd"))),
            "must not set ipv4.route-table: {l}"
        );
    }
    // Executed against a fake nmcli: every value is removed, then added, per profile.
    let (rc, log, _) = run_with_fakes(&f.content, &["nmcli"], &[]);
    assert_eq!(rc, 0);
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(
        lines[0],
        "nmcli -g connection.uuid connection show uuid 5fb0a4b3-0c5e-4d5c-9a4e-000000000000"
    );
    assert_eq!(
        lines[1],
        "nmcli -g ipv4.route-table connection show uuid 5fb0a4b3-0c5e-4d5c-9a4e-000000000000"
    );
    assert_eq!(
        lines[2],
        "nmcli connection modify uuid 5fb0a4b3-0c5e-4d5c-9a4e-000000000000 -ipv4.routes 198.18.0.0/24 0 table=100000 src=198.18.0.10"
    );
    assert_eq!(
        lines[3],
        "nmcli connection modify uuid 5fb0a4b3-0c5e-4d5c-9a4e-000000000000 +ipv4.routes 198.18.0.0/24 0 table=100000 src=198.18.0.10"
    );
    let adds = lines.iter().filter(|l| l.contains(" +ipv4.")).count();
    assert_eq!(adds, 9, "{log}");
    // The undo script removes the same values and adds nothing.
    let u = find(&files, "/etc/roce-net/nm-remove.sh");
    let (rc, log, _) = run_with_fakes(&u.content, &["nmcli"], &[]);
    assert_eq!(rc, 0);
    assert_eq!(
        log.lines().filter(|l| l.contains(" -ipv4.")).count(),
        9,
        "{log}"
    );
    assert!(!log.contains(" +ipv4."), "{log}");
}

#[test]
fn ifupdown_hook_applies_only_its_interfaces() {
    let files = roce_net::render_persistence(&desired(), Backend::Ifupdown, &options()).unwrap();
    let up = find(&files, "/etc/network/if-up.d/roce-net");
    let down = find(&files, "/etc/network/if-down.d/roce-net");
    assert_eq!(up.mode, 0o755);
    // Strip the PATH line so the fake `ip` is found.
    let script = |s: &str| {
        s.lines()
            .filter(|l| !l.starts_with("PATH="))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let (rc, log, _) = run_with_fakes(
        &script(&up.content),
        &["ip"],
        &[("IFACE", "bond0.100"), ("MODE", "start")],
    );
    assert_eq!(rc, 0);
    assert_eq!(
        log,
        "ip -4 route replace 198.18.0.0/24 dev bond0.100 src 198.18.0.13 table 100003 proto 201\n\
         ip -4 rule del from 198.18.0.13 lookup 100003 pref 1003 proto 201\n\
         ip -4 rule add from 198.18.0.13 lookup 100003 pref 1003 proto 201\n"
    );
    let (rc, log, _) = run_with_fakes(
        &script(&up.content),
        &["ip"],
        &[("IFACE", "eth9"), ("MODE", "start")],
    );
    assert_eq!(
        (rc, log.as_str()),
        (0, ""),
        "foreign interface must be ignored"
    );
    let (rc, log, _) = run_with_fakes(
        &script(&down.content),
        &["ip"],
        &[("IFACE", "ens1f0np0"), ("MODE", "stop")],
    );
    assert_eq!(rc, 0);
    assert!(log.contains("ip -4 rule del from 198.18.0.10 lookup 100000 pref 1000 proto 201\n"));
    assert!(log.contains("ip -4 route del 198.19.0.0/16 via 198.18.0.1 dev ens1f0np0 src 198.18.0.10 table 100000 proto 201 metric 100\n"));
    assert!(!log.contains(" add "));
}

#[test]
fn unsafe_names_and_orphans_are_refused() {
    let mut d = desired();
    d.nics[0].ifname = "eth0;reboot".into();
    let e = roce_net::render_persistence(&d, Backend::SysctlD, &options()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.to_string().contains("eth0;reboot"), "{e}");

    let mut d = desired();
    d.routes[0].dev = Some("eth7".into());
    let e = roce_net::render_persistence(&d, Backend::Networkd, &options()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.to_string().contains("belongs to none of the NICs"), "{e}");
    // Backends that render no routes do not care.
    roce_net::render_persistence(&d, Backend::RtTablesD, &options()).unwrap();

    let mut d = desired();
    d.rules[0].action = RuleAction::Blackhole;
    let e = roce_net::render_persistence(&d, Backend::Netplan, &options()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported);

    let mut o = options();
    o.networkd_files
        .insert("ens1f0np0".into(), "../../evil.network".into());
    let e = roce_net::render_persistence(&desired(), Backend::Networkd, &o).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
}

#[test]
fn backend_names_round_trip() {
    for b in Backend::all() {
        assert_eq!(b.to_string().parse::<Backend>().unwrap(), b);
        let json = serde_json::to_string(&b).unwrap();
        assert_eq!(json, format!("\"{b}\""));
    }
    assert_eq!(
        "NetworkManager".parse::<Backend>().unwrap(),
        Backend::NetworkManager
    );
    assert_eq!(
        "systemd-networkd".parse::<Backend>().unwrap(),
        Backend::Networkd
    );
    let e = "wicked".parse::<Backend>().unwrap_err();
    assert!(e.to_string().contains("networkmanager"), "{e}");
}

#[test]
fn ipv6_nics_use_the_ipv6_commands_and_properties() {
    let mut d = DesiredState {
        protocol: 201,
        ..DesiredState::default()
    };
    d.nics.push(NicDesired {
        ifname: "eth1".into(),
        addresses: vec!["2001:db8::10/64".parse().unwrap()],
        table: 100000,
        table_name: "rnet-eth1".into(),
        rule_priority: 1000,
    });
    let mut r = subnet_route("eth1", "2001:db8::10", 100000);
    r.family = Family::Inet6;
    r.dst = "2001:db8::/64".parse().unwrap();
    r.scope = Scope::Universe;
    d.routes.push(r);
    let mut rule = source_rule("2001:db8::10", 100000, 1000);
    rule.family = Family::Inet6;
    rule.src = Some("2001:db8::10/128".parse().unwrap());
    d.rules.push(rule);
    let mut o = RenderOptions::default();
    o.ifupdown_ifaces.insert("eth1".into());
    o.nm_connections.insert(
        "eth1".into(),
        NmProfile {
            uuid: None,
            id: "eth1".into(),
        },
    );
    o.netplan_devices.insert(
        "eth1".into(),
        NetplanDevice {
            kind: "ethernets".into(),
            id: "eth1".into(),
            renderer: NetplanRenderer::Networkd,
        },
    );
    // netplan refuses a `scope: global` route without `via`; IPv6 on-link
    // routes say `link`, which the kernel ignores for IPv6 (`netplan generate`
    // reads it in tests/it/persist_boot.rs).
    let np = roce_net::render_persistence(&d, Backend::Netplan, &o).unwrap();
    let yaml = &find(&np, "/etc/netplan/90-roce-net.yaml").content;
    assert!(
        yaml.contains(
            "        - to: \"2001:db8::/64\"\n          from: \"2001:db8::10\"\n          scope: link\n"
        ),
        "{yaml}"
    );
    let up = roce_net::render_persistence(&d, Backend::Ifupdown, &o).unwrap();
    let hook = &find(&up, "/etc/network/if-up.d/roce-net").content;
    assert!(
        hook.contains(
            "\tip -6 route replace 2001:db8::/64 dev eth1 src 2001:db8::10 table 100000 proto 201 || rc=1\n"
        ),
        "{hook}"
    );
    assert!(
        hook.contains(
            "\tip -6 rule add from 2001:db8::10 lookup 100000 pref 1000 proto 201 || rc=1\n"
        ),
        "{hook}"
    );
    let nm = roce_net::render_persistence(&d, Backend::NetworkManager, &o).unwrap();
    let script = &find(&nm, "/etc/roce-net/nm-apply.sh").content;
    assert!(
        script.contains("if check_profile id 'eth1' ipv6; then"),
        "{script}"
    );
    assert!(
        script.contains(
            "add id 'eth1' ipv6.routes '2001:db8::/64 1024 table=100000 src=2001:db8::10'"
        ),
        "{script}"
    );
    assert!(
        script.contains(
            "add id 'eth1' ipv6.routing-rules 'priority 1000 from 2001:db8::10/128 table 100000'"
        ),
        "{script}"
    );
}
