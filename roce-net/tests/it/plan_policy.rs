//! Policy parsing and validation: every refusal is `ErrorKind::Policy` and names
//! the field path; good policies resolve to the expected NICs, tables and gateways.

use roce_net::Backend;
use roce_net::{Address, HostState, Interface, Scope};

use roce_net::ErrorKind;
use roce_net::{FlushMode, PersistBackend, Policy, RpFilter};
use std::path::PathBuf;

fn fixture_host(case: &str) -> HostState {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/plan")
        .join(case)
        .join("current.json");
    HostState::load(&p).unwrap()
}

/// The "partial"-style host without RDMA: r1..r4 in 198.18.0.0/24, eth0 alone.
fn host() -> HostState {
    fixture_host("foreign")
}

#[track_caller]
fn parse_err(yaml: &str, prefix: &str) -> String {
    let e = Policy::from_yaml(yaml).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Policy, "{e}");
    let m = e.to_string();
    assert!(m.starts_with(prefix), "expected {prefix:?}, got {m:?}");
    m
}

#[track_caller]
fn host_err(h: &HostState, yaml: &str, prefix: &str) -> String {
    let p = Policy::from_yaml(yaml).unwrap_or_else(|e| panic!("{yaml}: {e}"));
    let e = p.validate(h).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Policy, "{e}");
    let m = e.to_string();
    assert!(m.starts_with(prefix), "expected {prefix:?}, got {m:?}");
    // plan() validates first and refuses the same way.
    assert_eq!(roce_net::plan(h, &p).unwrap_err().to_string(), m);
    m
}

#[test]
fn unknown_fields_are_refused_with_their_path() {
    parse_err("arpp: {}\n", "arpp: unknown field `arpp`");
    parse_err(
        "routing:\n  tabel_base: 5\n",
        "routing.tabel_base: unknown field",
    );
    parse_err("nics:\n  includes: [r1]\n", "nics.includes: unknown field");
    parse_err(
        "routing:\n  extra_routes:\n    - {dev: r1, dst: 198.18.9.0/24, gw: 198.18.0.1}\n",
        "routing.extra_routes[0].gw: unknown field",
    );
    parse_err(
        "tuning:\n  somaxconn: 5\n",
        "tuning.somaxconn: unknown field",
    );
    parse_err(
        "neighbors:\n  flush: all\n  age: 3\n",
        "neighbors.age: unknown field",
    );
    parse_err(
        "persistence:\n  path: /etc\n",
        "persistence.path: unknown field",
    );
    parse_err("arp:\n  arp_filter: 1\n", "arp.arp_filter: unknown field");
}

#[test]
fn bad_values_name_the_field() {
    parse_err(
        "routing:\n  default_gateway:\n    r1: 198.18.0.300\n",
        "routing.default_gateway.r1: invalid IP address syntax",
    );
    parse_err(
        "routing:\n  extra_routes:\n    - {dev: r1, dst: 198.18.1.5/24}\n",
        "routing.extra_routes[0].dst: 198.18.1.5/24 has host bits set; did you mean 198.18.1.0/24?",
    );
    parse_err(
        "routing:\n  extra_routes:\n    - {dev: r1, dst: 198.18.1.0/33}\n",
        "routing.extra_routes[0].dst: invalid IP address syntax",
    );
    parse_err(
        "routing:\n  default_gateway:\n    r1: [198.18.0.1, 198.18.0.2]\n",
        "routing.default_gateway.r1[1]: a NIC has one default gateway per family; 198.18.0.2 is the second",
    );
    parse_err(
        "routing:\n  default_gateway:\n    r1: []\n",
        "routing.default_gateway.r1: an empty list gives no gateway",
    );
    parse_err(
        "routing:\n  default_gateway:\n    r1: [198.18.0.1, \"ff02::1\"]\n",
        "routing.default_gateway.r1[1]: ff02::1 cannot be a gateway",
    );
    parse_err(
        "routing:\n  extra_routes:\n    - {dev: r1, dst: \"fd00:198:18:9::/64\", via: 198.18.0.1}\n",
        "routing.extra_routes[0].via: 198.18.0.1 is not of fd00:198:18:9::/64's family",
    );
    parse_err("family: ipv5\n", "family: unknown variant `ipv5`");
    parse_err(
        "ipv6: {accept_ra_defrtr: 2}\n",
        "ipv6.accept_ra_defrtr: 2 is out of range 0..=1",
    );
    parse_err(
        "ipv6: {disable_ipv6: 1}\n",
        "ipv6.disable_ipv6: unknown field `disable_ipv6`",
    );
    parse_err(
        "routing:\n  default_gateway:\n    r1: 224.0.0.1\n",
        "routing.default_gateway.r1: 224.0.0.1 cannot be a gateway",
    );
    parse_err("rp_filter: medium\n", "rp_filter: unknown variant `medium`");
    parse_err(
        "neighbors: {flush: some}\n",
        "neighbors.flush: unknown variant `some`",
    );
    parse_err(
        "persistence: {backend: systemd}\n",
        "persistence.backend: unknown backend \"systemd\": use auto, sysctl.d",
    );
    parse_err(
        "arp: {arp_ignore: 9}\n",
        "arp.arp_ignore: 9 is out of range 0..=8",
    );
    parse_err(
        "arp: {arp_announce: 3}\n",
        "arp.arp_announce: 3 is out of range",
    );
    parse_err(
        "arp: {scope: [all, all]}\n",
        "arp.scope[1]: all is listed twice",
    );
    parse_err(
        "arp: {scope: [everything]}\n",
        "arp.scope[0]: unknown variant",
    );
    parse_err(
        "tuning: {udp_mem: [3, 2, 1]}\n",
        "tuning.udp_mem: [3, 2, 1] must be",
    );
    parse_err(
        "tuning: {udp_mem: [1, 2, 3, 4]}\n",
        "tuning.udp_mem: invalid length 4",
    );
    parse_err(
        "tuning: {rmem_max: -1}\n",
        "tuning.rmem_max: invalid value: integer `-1`",
    );
    parse_err(
        "tuning: {rmem_max: 0}\n",
        "tuning.rmem_max: 0 is out of range",
    );
    parse_err("nics: all\n", "nics: invalid value: string \"all\"");
    parse_err("nics: {include: []}\n", "nics.include: empty list");
    parse_err(
        "nics: {include: [\"r 1\"]}\n",
        "nics.include[0]: \"r 1\" is not an interface name",
    );
    parse_err(
        "routing: {tables: {\"r*\": 1000}}\n",
        "routing.tables.r*: \"r*\": globs",
    );
    parse_err(
        "routing: {table_name_prefix: \"ro ce\"}\n",
        "routing.table_name_prefix:",
    );
    parse_err("version: 2\n", "version: policy version 2 is not supported");
    parse_err(
        "routing: {rule_priority_base: 32766}\n",
        "routing.rule_priority_base: 32766 is out of range",
    );
    parse_err(
        "routing: {rule_priority_base: 0}\n",
        "routing.rule_priority_base: 0 is out of range",
    );
    parse_err("- a\n- b\n", "a policy must be a map");
    let m = parse_err("routing: [\n", "policy is not valid YAML");
    assert!(m.contains("line"), "{m}");
    // Interface names with dots are quoted in paths.
    parse_err(
        "routing:\n  tables:\n    eth0.100: 254\n",
        "routing.tables.\"eth0.100\": table 254 is reserved (main)",
    );
}

#[test]
fn reserved_tables_are_refused() {
    for (t, name) in [
        (0, "unspec"),
        (253, "default"),
        (254, "main"),
        (255, "local"),
    ] {
        parse_err(
            &format!("routing:\n  tables:\n    r1: {t}\n"),
            &format!("routing.tables.r1: table {t} is reserved ({name})"),
        );
    }
    // A base that lands a NIC on a reserved id is caught against the host.
    host_err(
        &host(),
        "routing: {table_base: 251}\n",
        "routing.table_base: table 253 (for r2) is reserved (default)",
    );
    host_err(
        &host(),
        "routing: {tables: {r1: 1003}}\n",
        "routing.table_base: table 1003 for r3 is also the table of r1",
    );
    host_err(
        &host(),
        "routing: {table_base: 4294967294}\n",
        "routing.table_base: table_base 4294967294 + 2 (for r2) overflows",
    );
}

#[test]
fn bad_protocols_are_refused() {
    for p in [0, 1, 2, 3, 4, 16] {
        let m = parse_err(&format!("protocol: {p}\n"), &format!("protocol: {p} ("));
        assert!(m.contains("choose an unused number"), "{m}");
    }
    parse_err(
        "protocol: 300\n",
        "protocol: invalid value: integer `300`, expected u8",
    );
    parse_err(
        "protocol: roce\n",
        "protocol: invalid type: string \"roce\"",
    );
    assert_eq!(Policy::from_yaml("protocol: 5\n").unwrap().protocol, 5);
    assert_eq!(Policy::from_yaml("protocol: 255\n").unwrap().protocol, 255);
}

#[test]
fn missing_nics_are_refused() {
    let h = host();
    let m = host_err(
        &h,
        "nics: {include: [r1, r9]}\n",
        "nics.include[1]: interface r9 does not exist on this host",
    );
    assert!(m.contains("eth0, r1, r2, r3, r4"), "{m}");
    host_err(
        &h,
        "routing: {tables: {r9: 5000}}\n",
        "routing.tables.r9: interface r9 does not exist on this host (managed: r1, r2, r3, r4)",
    );
    host_err(
        &h,
        "routing: {tables: {eth0: 5000}}\n",
        "routing.tables.eth0: eth0 is not a managed NIC",
    );
    host_err(
        &h,
        "routing: {default_gateway: {r9: 198.18.0.1}}\n",
        "routing.default_gateway.r9: interface r9 does not exist",
    );
    host_err(
        &h,
        "routing:\n  extra_routes:\n    - {dev: eth0, dst: 198.18.9.0/24}\n",
        "routing.extra_routes[0].dev: eth0 is not a managed NIC",
    );
    // A named NIC without an IPv4 address.
    let mut h2 = h.clone();
    h2.addresses.retain(|a| a.ifname != "r3");
    host_err(
        &h2,
        "nics: {include: [r1, r3]}\n",
        "nics.include[1]: interface r3 has no global IPv4 or IPv6 address",
    );
    // Globs skip such NICs instead.
    let p = Policy::from_yaml("nics: {include: [\"r*\"]}\n").unwrap();
    assert_eq!(p.select_nics(&h2).unwrap(), ["r1", "r2", "r4"]);
}

#[test]
fn gateways_must_be_on_link() {
    let h = host();
    host_err(
        &h,
        "routing: {default_gateway: {r1: 198.19.0.1}}\n",
        "routing.default_gateway.r1: gateway 198.19.0.1 is not in r1's subnet 198.18.0.0/24",
    );
    host_err(
        &h,
        "routing: {default_gateway: {r2: 198.18.0.12}}\n",
        "routing.default_gateway.r2: gateway 198.18.0.12 is r2's own",
    );
    host_err(
        &h,
        "routing:\n  extra_routes:\n    - {dev: r1, dst: 198.18.9.0/24, via: 198.19.0.1}\n",
        "routing.extra_routes[0].via: gateway 198.19.0.1 is not in r1's subnet",
    );
    host_err(
        &h,
        "routing:\n  default_gateway: {\"r*\": 198.18.0.1, \"*1\": 198.18.0.2}\n",
        "routing.default_gateway.r*: r1 matches both \"*1\" and \"r*\"",
    );
    host_err(
        &h,
        "routing:\n  default_gateway: {r1: 198.18.0.1}\n  extra_routes:\n    - {dev: r1, dst: 0.0.0.0/0, via: 198.18.0.2}\n",
        "routing.extra_routes[0].dst: a default route for r1 is already given",
    );
    // An exact name wins over a glob.
    let p = Policy::from_yaml("routing:\n  default_gateway: {\"*\": 198.18.0.1, r2: 198.18.0.2}\n")
        .unwrap();
    let d = roce_net::desired_state(&h, &p).unwrap();
    let gws: Vec<String> = d
        .routes
        .iter()
        .filter_map(|r| r.gateway.map(|g| format!("{}:{g}", r.dev.clone().unwrap())))
        .collect();
    assert_eq!(
        gws,
        [
            "r1:198.18.0.1",
            "r2:198.18.0.2",
            "r3:198.18.0.1",
            "r4:198.18.0.1"
        ]
    );
}

#[test]
fn foreign_table_and_priority_users_are_named() {
    let h = fixture_host("foreign");
    // The host has foreign rules at 500 (table 100), 1500 (table 300), 2000 (table 200).
    let m = host_err(
        &h,
        "routing: {rule_priority_base: 1499}\n",
        "routing.rule_priority_base: rule priority 1500 (for r1) is already used by a rule roce-net does not own (protocol 186 is not 201)",
    );
    assert!(
        m.contains("`from 198.18.0.0/24 lookup 300 pref 1500 proto 186`"),
        "{m}"
    );
    let m = host_err(
        &h,
        "routing: {tables: {r2: 100}}\n",
        "routing.tables.r2: table 100 (for r2) already holds a route roce-net does not own (protocol 4 is not 201)",
    );
    assert!(
        m.contains("`default via 198.19.0.1 dev eth0 table 100 proto 4`"),
        "{m}"
    );
    // Table 200 holds a foreign route too; a table only a foreign rule points at:
    let mut h2 = h.clone();
    h2.routes.retain(|r| r.table != 200);
    host_err(
        &h2,
        "routing: {tables: {r3: 200}}\n",
        "routing.tables.r3: table 200 (for r3) is already used by a rule roce-net does not own (protocol 0 is not 201): `from all fwmark 0x1 lookup 200 pref 2000 proto 0`",
    );
    // With another protocol, our own objects become foreign too: those identical
    // to what the policy wants are adopted (as after a reboot recreated them),
    let owned = fixture_host("compliant");
    let p = Policy::from_yaml("protocol: 202\n").unwrap();
    assert!(roce_net::plan(&owned, &p).unwrap().is_empty());
    // anything else in our tables is refused.
    let mut owned = owned;
    for r in owned.routes.iter_mut().filter(|r| r.table == 1001) {
        r.dst = "198.18.5.0/24".parse().unwrap();
    }
    host_err(
        &owned,
        "protocol: 202\n",
        "routing.table_base: table 1001 (for r1) already holds a route roce-net does not own (protocol 201 is not 202)",
    );
}

#[test]
fn table_name_clash_is_refused() {
    let mut h = host();
    h.table_names.insert(77, "roce_r2".into());
    host_err(
        &h,
        "{}\n",
        "routing.table_name_prefix: table name \"roce_r2\" (for table 1002) is already registered for table 77",
    );
    // Not registering names avoids the clash.
    let p = Policy::from_yaml("register_table_names: false\n").unwrap();
    let pl = roce_net::plan(&h, &p).unwrap();
    assert!(pl.desired.table_names.is_empty());
    assert!(!pl.render_diff().contains("table-name"));
    // Then tables are shown by number only.
    assert!(
        pl.render_diff().contains("table 1002 proto 201"),
        "{}",
        pl.render_diff()
    );
}

/// The names file's one rule is the policy's: a NIC whose
/// table name rt_tables.d cannot hold (the kernel allows `+` in interface
/// names) is refused at plan time, not accepted by plan and apply and then
/// refused by persist.
#[test]
fn a_table_name_the_names_file_cannot_hold_is_refused_at_plan_time() {
    let mut h = host();
    add_nic(&mut h, "eth+1", 30, "198.18.0.30");
    let m = host_err(
        &h,
        "nics: {include: [r1, \"eth+1\"]}\n",
        "routing.table_name_prefix: table name \"roce_eth+1\" for eth+1 (table 1001) is not a valid iproute2 table name: it contains \"+\"",
    );
    assert!(m.contains("register_table_names: false"), "{m}");
    // Without registering names, the NIC is fine.
    let p = Policy::from_yaml("nics: {include: [r1, \"eth+1\"]}\nregister_table_names: false\n")
        .unwrap();
    roce_net::plan(&h, &p).unwrap();
}

#[test]
fn auto_selection() {
    // With RDMA devices: their netdevs, whatever the subnets.
    let mut h = fixture_host("fresh");
    h.rdma.truncate(2);
    let p = Policy::default();
    assert_eq!(p.select_nics(&h).unwrap(), ["r1", "r2"]);
    // Without: NICs that share a subnet with another NIC; eth0 is alone.
    h.rdma.clear();
    assert_eq!(p.select_nics(&h).unwrap(), ["r1", "r2", "r3", "r4"]);
    // Nothing shares a subnet: a clear refusal rather than an empty plan.
    h.addresses
        .retain(|a| !["r2", "r3", "r4"].contains(&a.ifname.as_str()));
    let e = p.validate(&h).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Policy);
    assert!(
        e.to_string()
            .starts_with("nics: no NIC to manage: automatic selection found none"),
        "{e}"
    );
}

#[test]
fn a_selection_of_no_nic_says_why() {
    let h = fixture_host("fresh");
    let why = |yaml: &str| {
        let e = Policy::from_yaml(yaml).unwrap().validate(&h).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Policy, "{e}");
        e.to_string()
    };
    // A glob that matches nothing: said so, with the interfaces there are.
    let e = why("nics: {include: [\"eth*1\", \"mlx*\"]}\n");
    assert!(
        e.starts_with("nics: no NIC to manage: nics.include (eth*1, mlx*) matches no interface here (interfaces: ")
            && e.contains("r1"),
        "{e}"
    );
    // Everything included is excluded.
    let e = why("nics: {include: [\"r*\"], exclude: [\"r*\"]}\n");
    assert!(
        e.contains("nics.exclude (r*) leaves none of the included interfaces (r1, r2, r3, r4)"),
        "{e}"
    );
    // Matched, but without an IPv4 address.
    let mut h2 = h.clone();
    h2.addresses.retain(|a| !a.ifname.starts_with('r'));
    let e = Policy::from_yaml("nics: {include: [\"r?\"]}\n")
        .unwrap()
        .validate(&h2)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(
            "none of the selected interfaces (r1, r2, r3, r4) has a global IPv4 or IPv6 address"
        ),
        "{e}"
    );
}

fn add_nic(h: &mut HostState, name: &str, index: u32, ip: &str) {
    let mut i: Interface = h.interface("r1").unwrap().clone();
    i.name = name.into();
    i.index = index;
    h.interfaces.push(i);
    h.addresses.push(Address {
        ifname: name.into(),
        ifindex: index,
        address: ip.parse().unwrap(),
        prefix_len: 24,
        scope: Scope::Universe,
        label: None,
        secondary: false,
        flags: Vec::new(),
    });
}

#[test]
fn numbering_follows_natural_name_order_and_globs() {
    let mut h = host();
    add_nic(&mut h, "r10", 20, "198.18.0.20");
    let p = Policy::from_yaml("nics: {include: [\"r?\", r10], exclude: [r3]}\n").unwrap();
    let d = roce_net::desired_state(&h, &p).unwrap();
    let layout: Vec<(String, u32, u32)> = d
        .nics
        .iter()
        .map(|n| (n.ifname.clone(), n.table, n.rule_priority))
        .collect();
    assert_eq!(
        layout,
        [
            ("r1".to_string(), 1001, 1001),
            ("r2".to_string(), 1002, 1002),
            ("r4".to_string(), 1003, 1003),
            ("r10".to_string(), 1004, 1004),
        ]
    );
    // Explicit tables win; others keep base + n.
    let p = Policy::from_yaml("routing: {tables: {r2: 100000}, table_base: 5000}\n").unwrap();
    let d = roce_net::desired_state(&h, &p).unwrap();
    let t: Vec<u32> = d.nics.iter().map(|n| n.table).collect();
    assert_eq!(t, [5001, 100000, 5003, 5004, 5005]);
}

#[test]
fn json_and_value_match_yaml() {
    let yaml = "nics: {include: [r1, r2]}\nrp_filter: strict\nrouting: {table_base: 2000}\nneighbors: {flush: none}\npersistence: {backend: networkd}\n";
    let a = Policy::from_yaml(yaml).unwrap();
    let b = Policy::from_json(&a.to_json()).unwrap();
    let c = Policy::from_value(a.to_value()).unwrap();
    let d = Policy::from_yaml(&a.to_yaml()).unwrap();
    assert_eq!(a, d, "{}", a.to_yaml());
    assert_eq!(a, b);
    assert_eq!(a, c);
    assert_eq!(a.rp_filter, RpFilter::Strict);
    assert_eq!(a.neighbors.flush, FlushMode::None);
    assert_eq!(
        a.persistence.backend,
        PersistBackend::fixed(Backend::Networkd)
    );
    assert_eq!(a.persistence.backend.backend(), Some(Backend::Networkd));
    assert_eq!(PersistBackend::AUTO.backend(), None);
    let e = Policy::from_json("{\"routing\": {\"tables\": {\"r1\": 255}}}").unwrap_err();
    assert_eq!(e.to_string(), "routing.tables.r1: table 255 is reserved (local); pick another id (ids above 255 are fine)");
    let e = Policy::from_value(serde_json::json!({"rp_filter": 2})).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("rp_filter: invalid type: integer `2`, expected a string"),
        "{e}"
    );
    assert!(Policy::from_json("{")
        .unwrap_err()
        .to_string()
        .starts_with("policy is not valid JSON"));
    assert_eq!(
        Policy::from_value(serde_json::Value::Null).unwrap(),
        Policy::default()
    );
}

#[test]
fn defaults_are_documented_values() {
    let p = Policy::default();
    assert!(p.nics.is_auto());
    assert_eq!((p.arp.arp_ignore, p.arp.arp_announce), (1, 2));
    assert_eq!(p.rp_filter, RpFilter::Loose);
    assert_eq!(p.routing.table_base, 1000);
    assert_eq!(p.routing.rule_priority_base, 1000);
    assert_eq!(p.routing.table_name_prefix, "roce_");
    assert!(p.routing.subnet_route && p.routing.enabled && p.register_table_names);
    assert_eq!(p.neighbors.flush, FlushMode::Polluted);
    assert_eq!(p.protocol, roce_net::protocol::ROCE_NET_DEFAULT);
    assert_eq!(p.tuning, Default::default());
    let v = p.to_value();
    assert_eq!(v["nics"], "auto");
    assert_eq!(v["persistence"]["backend"], "auto");
}

/// The full example in docs/policy.md parses and plans on the fixture host.
#[test]
fn documented_example_is_valid() {
    let doc = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/policy.md");
    let text = std::fs::read_to_string(&doc).unwrap();
    let start = text
        .find("<!-- full-example -->")
        .expect("marker in docs/policy.md");
    let rest = &text[start..];
    let body_start = rest.find("```yaml\n").unwrap() + "```yaml\n".len();
    let body = &rest[body_start..];
    let yaml = &body[..body.find("```").unwrap()];
    let p = Policy::from_yaml(yaml).unwrap_or_else(|e| panic!("docs example: {e}"));
    let h = host();
    let pl = roce_net::plan(&h, &p).unwrap();
    assert!(!pl.is_empty());
}

#[test]
fn routing_disabled_removes_owned_routing_only() {
    let h = fixture_host("compliant");
    let p = Policy::from_yaml("routing: {enabled: false}\ntuning: {netdev_max_backlog: 250000, rmem_max: 16777216, wmem_max: 16777216}\n").unwrap();
    let pl = roce_net::plan(&h, &p).unwrap();
    assert!(pl.desired.routes.is_empty() && pl.desired.rules.is_empty());
    assert!(pl.desired.table_names.is_empty());
    let diff = pl.render_diff();
    assert_eq!(
        diff.lines().filter(|l| l.starts_with("- rule ")).count(),
        4,
        "{diff}"
    );
    assert_eq!(
        diff.lines().filter(|l| l.starts_with("- route ")).count(),
        4,
        "{diff}"
    );
    assert_eq!(
        diff.lines().count(),
        8,
        "only deletions of owned objects:\n{diff}"
    );
}

/// A policy file that says `routing:` twice is refused with the key and both
/// lines, not silently read with one of the two sections.
#[test]
fn duplicate_sections_are_refused() {
    let m = parse_err(
        "routing:\n  table_base: 2000\nrouting:\n  table_base: 3000\n",
        "policy is not valid YAML",
    );
    assert!(
        m.contains("line 3") && m.contains("duplicate key \"routing\" (first at line 1)"),
        "{m}"
    );
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("p.yaml");
    std::fs::write(&p, "nics: auto\nnics: {include: [r1]}\n").unwrap();
    let e = Policy::load(&p).unwrap_err();
    assert!(e.to_string().contains("duplicate key \"nics\""), "{e}");
    // 100,000 levels of nesting fail at once with a clear error.
    let deep = "a: ".to_string() + &"[".repeat(100_000) + &"]".repeat(100_000);
    let m = parse_err(&deep, "policy is not valid YAML");
    assert!(m.contains("nested deeper than 64 levels"), "{m}");
}
