//! Builders for hand-made HostStates used by the doctor, fib, nccl and fleet tests.
//! Routes and rules are written in a small `ip route` / `ip rule`-like syntax.
#![allow(dead_code)]

use roce_net::*;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

// The parent module's: the test binary's root, or `fib::tests` in the crate.
use super::golden_support;

pub struct B(pub HostState);

pub fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

pub fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/doctor")
}

pub fn load(name: &str) -> HostState {
    HostState::load(&fixture_dir().join(name)).unwrap()
}

/// Compare a committed fixture with the builder's state, so the committed JSON
/// and the builder never drift apart. A missing fixture fails; `UPDATE_GOLDEN=1`
/// writes it (`golden_support`).
pub fn golden(name: &str, state: &HostState) -> HostState {
    golden_in(&fixture_dir(), name, state, golden_support::updating())
}

/// [`golden`] in `dir`, with the update switch given.
pub fn golden_in(dir: &Path, name: &str, state: &HostState, update: bool) -> HostState {
    let path = dir.join(name);
    let text = golden_support::expected_with(&path, &(state.to_json() + "\n"), update);
    let on_disk =
        HostState::from_json(&text).unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()));
    assert_eq!(
        &on_disk, state,
        "fixture {name} differs from its builder; rerun with UPDATE_GOLDEN=1"
    );
    on_disk
}

fn conf(v: i32) -> ConfValues {
    ConfValues {
        arp_ignore: Some(v),
        arp_announce: Some(v),
        arp_filter: Some(0),
        rp_filter: Some(v),
        accept_local: Some(0),
        arp_notify: Some(0),
        ..ConfValues::default()
    }
}

impl B {
    /// A host with `lo` (index 1), the default rules and all sysctls zero.
    pub fn new(host: &str) -> B {
        let mut s = HostState::empty(host);
        s.sysctls.all = conf(0);
        s.sysctls.default = conf(0);
        let mut b = B(s);
        b.0.interfaces.push(Interface {
            index: 1,
            name: "lo".into(),
            kind: None,
            mac: Some("00:00:00:00:00:00".parse().unwrap()),
            mtu: 65536,
            admin_up: true,
            oper_state: OperState::Unknown,
            carrier: Some(true),
            master: None,
            stats: LinkStats::default(),
            ethtool_stats: None,
            qos: None,
        });
        b.0.sysctls
            .interfaces
            .insert("lo".into(), InterfaceConf::default());
        b.addr_scoped("lo", "127.0.0.1/8", Scope::Host);
        b.rule("pref 0 lookup local");
        b.rule("pref 32766 lookup main");
        b.rule("pref 32767 lookup default");
        b.rule("-6 pref 0 lookup local");
        b.rule("-6 pref 32766 lookup main");
        b
    }

    /// A physical NIC, up with carrier.
    pub fn nic(&mut self, name: &str, index: u32, mac: &str, mtu: u32) -> &mut Self {
        self.0.interfaces.push(Interface {
            index,
            name: name.into(),
            kind: None,
            mac: Some(mac.parse().unwrap()),
            mtu,
            admin_up: true,
            oper_state: OperState::Up,
            carrier: Some(true),
            master: None,
            stats: LinkStats::default(),
            ethtool_stats: None,
            qos: None,
        });
        let c = InterfaceConf {
            configured: conf(0),
            ..Default::default()
        };
        self.0.sysctls.interfaces.insert(name.into(), c);
        self.0.sysctls.recompute_effective();
        self
    }

    pub fn iface_mut(&mut self, name: &str) -> &mut Interface {
        self.0
            .interfaces
            .iter_mut()
            .find(|i| i.name == name)
            .unwrap()
    }

    /// Set a sysctl on `all` or an interface and recompute effective values.
    pub fn sysctl(&mut self, target: &str, key: ConfKey, v: i32) -> &mut Self {
        if target == "all" {
            self.0.sysctls.all.set(key, Some(v));
        } else {
            self.0
                .sysctls
                .interfaces
                .get_mut(target)
                .unwrap()
                .configured
                .set(key, Some(v));
        }
        self.0.sysctls.recompute_effective();
        self
    }

    /// The RDMA-friendly sysctls on `all`: arp_ignore=1, arp_announce=2, rp_filter=2.
    pub fn good_sysctls(&mut self) -> &mut Self {
        self.sysctl("all", ConfKey::ArpIgnore, 1)
            .sysctl("all", ConfKey::ArpAnnounce, 2)
            .sysctl("all", ConfKey::RpFilter, 2);
        self.0.sysctls.tuning.netdev_max_backlog = Some(250000);
        self
    }

    pub fn addr(&mut self, dev: &str, cidr: &str) -> &mut Self {
        let scope = if cidr.starts_with("fe80") {
            Scope::Link
        } else {
            Scope::Universe
        };
        self.addr_scoped(dev, cidr, scope)
    }

    /// An address plus the routes the kernel adds for it.
    pub fn addr_scoped(&mut self, dev: &str, cidr: &str, scope: Scope) -> &mut Self {
        let net: ipnet::IpNet = cidr.parse().unwrap();
        let a = net.addr();
        let ifindex = self.0.interface(dev).map(|i| i.index).unwrap_or(0);
        let secondary = self
            .0
            .addresses
            .iter()
            .any(|x| x.ifname == dev && x.network() == net.trunc() && a.is_ipv4());
        self.0.addresses.push(Address {
            ifname: dev.into(),
            ifindex,
            address: a,
            prefix_len: net.prefix_len(),
            scope,
            label: if a.is_ipv4() { Some(dev.into()) } else { None },
            secondary,
            flags: if a.is_ipv6() {
                vec![AddressFlag::Permanent]
            } else {
                Vec::new()
            },
        });
        if a.is_ipv4() {
            self.route(&format!(
                "table local local {a} dev {dev} proto kernel scope host src {a}"
            ));
            if net.prefix_len() < 31 {
                let bc = match net.trunc() {
                    ipnet::IpNet::V4(n) => n.broadcast(),
                    _ => unreachable!(),
                };
                self.route(&format!(
                    "table local broadcast {bc} dev {dev} proto kernel scope link src {a}"
                ));
            }
            if dev == "lo" {
                self.route(&format!(
                    "table local local {} dev lo proto kernel scope host src {a}",
                    net.trunc()
                ));
            } else if !secondary && net.prefix_len() < 32 {
                self.route(&format!(
                    "{} dev {dev} proto kernel scope link src {a}",
                    net.trunc()
                ));
            }
        } else {
            self.route(&format!(
                "-6 table local local {a} dev {dev} proto kernel metric 0"
            ));
            if net.prefix_len() < 128 {
                self.route(&format!(
                    "-6 {} dev {dev} proto kernel metric 256",
                    net.trunc()
                ));
            }
        }
        self
    }

    /// `[-6] [table T] [TYPE] PREFIX|default [via GW] [dev D] [src S] [metric M]
    /// [scope SC] [proto P] [nexthop via GW dev D]...`
    pub fn route(&mut self, spec: &str) -> &mut Self {
        let mut t: Vec<&str> = spec.split_whitespace().collect();
        let mut family = Family::Inet;
        if t.first() == Some(&"-6") {
            family = Family::Inet6;
            t.remove(0);
        }
        let mut r = Route {
            family,
            table: RT_TABLE_MAIN,
            dst: "0.0.0.0/0".parse().unwrap(),
            kind: RouteType::Unicast,
            dev: None,
            prefsrc: None,
            gateway: None,
            scope: Scope::Universe,
            protocol: protocol::BOOT,
            metric: if family == Family::Inet6 {
                Some(1024)
            } else {
                None
            },
            tos: 0,
            multipath: vec![],
        };
        let mut scope_set = false;
        let mut i = 0;
        let mut dst_set = false;
        while i < t.len() {
            let w = t[i];
            let next = t.get(i + 1).copied().unwrap_or("");
            match w {
                "table" => {
                    r.table = match next {
                        "main" => RT_TABLE_MAIN,
                        "local" => RT_TABLE_LOCAL,
                        "default" => RT_TABLE_DEFAULT,
                        n => n.parse().unwrap(),
                    };
                    i += 2;
                }
                "via" => {
                    r.gateway = Some(ip(next));
                    i += 2;
                }
                "dev" => {
                    r.dev = Some(next.into());
                    i += 2;
                }
                "src" => {
                    r.prefsrc = Some(ip(next));
                    i += 2;
                }
                "metric" => {
                    r.metric = Some(next.parse().unwrap());
                    i += 2;
                }
                "tos" => {
                    r.tos = next.parse().unwrap();
                    i += 2;
                }
                "scope" => {
                    r.scope = Scope::parse(next).unwrap();
                    scope_set = true;
                    i += 2;
                }
                "proto" => {
                    r.protocol = match next {
                        "kernel" => protocol::KERNEL,
                        "static" => protocol::STATIC,
                        n => n.parse().unwrap(),
                    };
                    i += 2;
                }
                "nexthop" => {
                    let mut h = NextHop {
                        gateway: None,
                        dev: None,
                        weight: 1,
                    };
                    i += 1;
                    while i < t.len() && t[i] != "nexthop" {
                        match t[i] {
                            "via" => h.gateway = Some(ip(t[i + 1])),
                            "dev" => h.dev = Some(t[i + 1].into()),
                            "weight" => h.weight = t[i + 1].parse().unwrap(),
                            x => panic!("bad nexthop word {x}"),
                        }
                        i += 2;
                    }
                    r.multipath.push(h);
                }
                "unicast" | "local" | "broadcast" | "blackhole" | "unreachable" | "prohibit"
                | "throw" | "multicast" | "anycast"
                    if !dst_set =>
                {
                    r.kind = serde_json::from_value(serde_json::json!(w)).unwrap();
                    i += 1;
                }
                "default" => {
                    r.dst = if family == Family::Inet {
                        "0.0.0.0/0".parse().unwrap()
                    } else {
                        "::/0".parse().unwrap()
                    };
                    dst_set = true;
                    i += 1;
                }
                p => {
                    r.dst = if p.contains('/') {
                        p.parse().unwrap()
                    } else {
                        ipnet::IpNet::from(ip(p))
                    };
                    dst_set = true;
                    i += 1;
                }
            }
        }
        if !scope_set {
            r.scope = match r.kind {
                RouteType::Local => Scope::Host,
                RouteType::Broadcast => Scope::Link,
                RouteType::Unicast if r.gateway.is_none() && r.multipath.is_empty() => {
                    if r.dev.is_some() {
                        Scope::Link
                    } else {
                        Scope::Universe
                    }
                }
                _ => Scope::Universe,
            };
        }
        self.0.routes.push(r);
        self
    }

    /// `[-6] [not] pref N [from P] [to P] [iif D] [oif D] [fwmark M[/K]] [tos T]
    /// (lookup T | goto N | nop | blackhole | unreachable | prohibit)
    /// [suppress_prefixlength N]`
    pub fn rule(&mut self, spec: &str) -> &mut Self {
        let mut t: Vec<&str> = spec.split_whitespace().collect();
        let mut family = Family::Inet;
        if t.first() == Some(&"-6") {
            family = Family::Inet6;
            t.remove(0);
        }
        let mut r = Rule::lookup(0, 0).family(family).protocol(protocol::BOOT);
        let pfx = |s: &str| -> ipnet::IpNet {
            if s.contains('/') {
                s.parse().unwrap()
            } else {
                ipnet::IpNet::from(ip(s))
            }
        };
        let mut i = 0;
        while i < t.len() {
            let next = t.get(i + 1).copied().unwrap_or("");
            match t[i] {
                "not" => {
                    r.invert = true;
                    i += 1;
                }
                "pref" => {
                    r.priority = next.parse().unwrap();
                    i += 2;
                }
                "from" => {
                    r.src = Some(pfx(next));
                    i += 2;
                }
                "to" => {
                    r.dst = Some(pfx(next));
                    i += 2;
                }
                "iif" => {
                    r.iif = Some(next.into());
                    i += 2;
                }
                "oif" => {
                    r.oif = Some(next.into());
                    i += 2;
                }
                "tos" => {
                    r.tos = next.parse().unwrap();
                    i += 2;
                }
                "fwmark" => {
                    let (m, k) = match next.split_once('/') {
                        Some((m, k)) => (m, Some(k)),
                        None => (next, None),
                    };
                    let p = |x: &str| u32::from_str_radix(x.trim_start_matches("0x"), 16).unwrap();
                    r.fwmark = Some(p(m));
                    r.fwmask = Some(k.map(p).unwrap_or(u32::MAX));
                    i += 2;
                }
                "lookup" => {
                    r.table = match next {
                        "main" => RT_TABLE_MAIN,
                        "local" => RT_TABLE_LOCAL,
                        "default" => RT_TABLE_DEFAULT,
                        n => n.parse().unwrap(),
                    };
                    i += 2;
                }
                "goto" => {
                    r.action = RuleAction::Goto;
                    r.goto = Some(next.parse().unwrap());
                    i += 2;
                }
                "nop" => {
                    r.action = RuleAction::Nop;
                    i += 1;
                }
                "blackhole" => {
                    r.action = RuleAction::Blackhole;
                    i += 1;
                }
                "unreachable" => {
                    r.action = RuleAction::Unreachable;
                    i += 1;
                }
                "prohibit" => {
                    r.action = RuleAction::Prohibit;
                    i += 1;
                }
                "suppress_prefixlength" => {
                    r.suppress_prefixlen = Some(next.parse().unwrap());
                    i += 2;
                }
                "proto" => {
                    r.protocol = next.parse().unwrap();
                    i += 2;
                }
                x => panic!("bad rule word {x}"),
            }
        }
        self.0.rules.push(r);
        self
    }

    pub fn neigh(
        &mut self,
        dev: &str,
        addr: &str,
        mac: Option<&str>,
        state: NeighState,
    ) -> &mut Self {
        let ifindex = self.0.interface(dev).map(|i| i.index).unwrap_or(0);
        self.0.neighbors.push(Neighbor {
            ifname: dev.into(),
            ifindex,
            ip: ip(addr),
            mac: mac.map(|m| m.parse().unwrap()),
            state: vec![state],
            router: false,
        });
        self
    }

    /// An mlx5-like RDMA device with one RoCE port on `netdev`; GIDs: fe80 link-local
    /// v1/v2 at 0/1, then the GIDs of the netdev's global addresses as v1/v2 at
    /// 2/3, ... (IPv4-mapped for IPv4, the address itself for IPv6, as the kernel
    /// fills the table).
    pub fn rdma(&mut self, name: &str, netdev: &str) -> &mut Self {
        let mut gids = Vec::new();
        let ll: std::net::Ipv6Addr = "fe80::1".parse().unwrap();
        gids.push(gid(0, ll, GidType::RoceV1, netdev, None));
        gids.push(gid(1, ll, GidType::RoceV2, netdev, None));
        let mut idx = 2;
        for a in self.0.addresses.clone() {
            if a.ifname != netdev {
                continue;
            }
            let v4 = match a.address {
                IpAddr::V4(v4) => Some(v4),
                IpAddr::V6(_) if a.is_global() => None,
                IpAddr::V6(_) => continue,
            };
            let g = roce_net::gid_of(a.address);
            gids.push(gid(idx, g, GidType::RoceV1, netdev, v4));
            gids.push(gid(idx + 1, g, GidType::RoceV2, netdev, v4));
            idx += 2;
        }
        let mtu = self.0.interface(netdev).map(|i| i.mtu).unwrap_or(1500);
        self.0.rdma.push(RdmaDevice {
            name: name.into(),
            node_guid: Some("b8ce:f603:00aa:bb00".into()),
            fw_ver: Some("28.39.1002".into()),
            hca_type: Some("MT4129".into()),
            pci_addr: None,
            netdevs: vec![netdev.into()],
            pci_device_id: None,
            product_name: None,
            part_number: None,
            ports: vec![RdmaPort {
                port: 1,
                state: Some("ACTIVE".into()),
                phys_state: Some("LinkUp".into()),
                link_layer: Some("Ethernet".into()),
                rate: Some("400 Gb/sec (4X NDR)".into()),
                netdev: Some(netdev.into()),
                active_mtu: active_mtu_for_netdev_mtu(mtu),
                gids,
                counters: BTreeMap::new(),
                hw_counters: BTreeMap::new(),
                gid_tbl_len: None,
                rdma_cm: None,
            }],
        });
        self
    }

    pub fn port_mut(&mut self, dev: &str) -> &mut RdmaPort {
        &mut self
            .0
            .rdma
            .iter_mut()
            .find(|d| d.name == dev)
            .unwrap()
            .ports[0]
    }

    pub fn build(&self) -> HostState {
        self.0.clone()
    }
}

pub fn gid(
    index: u32,
    g: std::net::Ipv6Addr,
    t: GidType,
    netdev: &str,
    v4: Option<std::net::Ipv4Addr>,
) -> GidEntry {
    GidEntry {
        index,
        gid: g,
        gid_type: Some(t),
        netdev: Some(netdev.into()),
        ipv4: v4,
    }
}

/// The seed scenario's healthy host: four RoCE NICs in one /24, per-NIC tables
/// 1001..1004 with source rules, good sysctls, jumbo MTU, a management NIC.
pub fn healthy(host: &str, octet_base: u8) -> B {
    let mut b = B::new(host);
    b.nic("eno1", 2, "02:00:00:00:00:01", 1500);
    b.addr("eno1", &format!("198.19.0.{octet_base}/24"));
    b.route("default via 198.19.0.1 dev eno1 proto static");
    for n in 0..4u8 {
        let name = format!("ens{}", n + 1);
        let mac = format!("02:00:00:00:{:02x}:{:02x}", octet_base, n + 0x10);
        b.nic(&name, u32::from(n) + 3, &mac, 9000);
        let a = format!("198.18.0.{}", octet_base + n);
        b.addr(&name, &format!("{a}/24"));
        let table = 1001 + u32::from(n);
        b.route(&format!(
            "table {table} 198.18.0.0/24 dev {name} proto 201 scope link src {a}"
        ));
        b.rule(&format!("pref {table} from {a} lookup {table} proto 201"));
    }
    for n in 0..4u8 {
        let name = format!("ens{}", n + 1);
        b.rdma(&format!("mlx5_{n}"), &name);
    }
    b.good_sysctls();
    b
}

/// The mlx5 ethtool statistics a quiet, healthy ConnectX port shows (a subset).
pub fn mlx5_stats() -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for (k, v) in [
        ("rx_packets_phy", 9_000_000_000u64),
        ("tx_packets_phy", 8_000_000_000),
        ("rx_discards_phy", 0),
        ("rx_out_of_buffer", 0),
        ("rx_crc_errors_phy", 0),
        ("rx_symbol_err_phy", 0),
        ("tx_pause_storm_warning_events", 0),
        ("tx_pause_storm_error_events", 0),
    ] {
        m.insert(k.to_string(), v);
    }
    for p in 0..8 {
        m.insert(format!("rx_prio{p}_pause"), if p == 3 { 1200 } else { 0 });
        m.insert(format!("tx_prio{p}_pause"), if p == 3 { 800 } else { 0 });
    }
    m
}

/// DCB as a RoCE-tuned ConnectX reports it: PFC on priority 3, DSCP trust, the
/// default DSCP map (priority = DSCP >> 3, so DSCP 26 -> 3).
pub fn roce_qos() -> Qos {
    Qos {
        dcb_available: true,
        pfc_enabled: Some(vec![3]),
        pfc_cap: Some(8),
        pfc_requests: vec![0; 8],
        pfc_indications: vec![0; 8],
        prio_tc: Some((0..8).collect()),
        trust: Some(Trust::Dscp),
        dscp_prio: (0..64u8).map(|d| (d, d >> 3)).collect(),
        app: Vec::new(),
        dcbx: Some(0x5),
    }
}

/// The healthy seed host with what a RoCE-tuned host also shows: quiet mlx5
/// counters, PFC on priority 3 with DSCP trust on every NIC, rdma_cm's TOS 106
/// (DSCP 26), 400 Gb/s links, one firmware, the seed's udp_mem.
pub fn healthy_hw(host: &str, octet_base: u8) -> B {
    let mut b = healthy(host, octet_base);
    for n in 1..=4 {
        let i = b.iface_mut(&format!("ens{n}"));
        i.ethtool_stats = Some(mlx5_stats());
        i.qos = Some(roce_qos());
    }
    for d in &mut b.0.rdma {
        d.pci_device_id = Some("0x1021".into());
        for p in &mut d.ports {
            p.gid_tbl_len = Some(255);
            p.rdma_cm = Some(RdmaCmPort {
                default_roce_mode: Some("RoCE v2".into()),
                default_roce_tos: Some(106),
            });
        }
    }
    b.0.sysctls.tuning.udp_mem = Some([764_304, 1_019_072, 1_528_608]);
    b
}
