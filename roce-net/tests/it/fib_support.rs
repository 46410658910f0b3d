//! Shared by the FIB lab tests (`lab_fib.rs`, `lab_prop.rs`): generated
//! `ip route get` queries over a snapshot, and the comparison of the offline
//! lookup with the kernel's answer.
#![allow(dead_code)]

use roce_net::{FibDecision, FibError, FibMode, Flow};
use roce_net::{Host, HostState, RouteDecision};
use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr};

/// Deterministic xorshift64* generator: the same queries on every run.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

pub fn in_lab_space(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => a.octets()[0] == 198 && (a.octets()[1] & 0xfe) == 18,
        IpAddr::V6(_) => false,
    }
}

/// A random host inside `net` (network and broadcast addresses included).
pub fn host_in(rng: &mut Rng, net: ipnet::Ipv4Net) -> Ipv4Addr {
    let base = u32::from(net.network());
    let size = 1u64 << (32 - u32::from(net.prefix_len()));
    Ipv4Addr::from(base + (rng.next() % size) as u32)
}

/// One `ip route get` query.
#[derive(Debug, Clone)]
pub struct Query {
    pub dst: IpAddr,
    pub src: Option<IpAddr>,
    pub oif: Option<String>,
}

impl std::fmt::Display for Query {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.dst)?;
        if let Some(s) = self.src {
            write!(f, " from {s}")?;
        }
        if let Some(o) = &self.oif {
            write!(f, " oif {o}")?;
        }
        Ok(())
    }
}

/// The query mix: local addresses, hosts on connected subnets, hosts in the
/// prefixes routes and rules mention, and anything in 198.18.0.0/15; sources are
/// none, a local address (the secondary one and the down device's included), or
/// now and then an address the host does not own. With `oifs`, most queries are
/// bound to one of those devices.
pub fn queries(st: &HostState, n: usize, seed: u64, oifs: &[&str]) -> Vec<Query> {
    let mut rng = Rng(seed);
    let locals: Vec<IpAddr> = st
        .addresses
        .iter()
        .map(|a| a.address)
        .filter(|a| in_lab_space(*a))
        .collect();
    let subnets: Vec<ipnet::Ipv4Net> = st
        .addresses
        .iter()
        .filter(|a| in_lab_space(a.address))
        .filter_map(|a| match a.network() {
            ipnet::IpNet::V4(n) => Some(n),
            ipnet::IpNet::V6(_) => None,
        })
        .collect();
    let mut mentioned: BTreeSet<ipnet::Ipv4Net> = BTreeSet::new();
    for r in &st.routes {
        if let ipnet::IpNet::V4(n) = r.dst {
            if r.dst.prefix_len() > 0 && in_lab_space(r.dst.addr()) {
                mentioned.insert(n);
            }
        }
    }
    for r in &st.rules {
        for net in [r.dst, r.src].into_iter().flatten() {
            if let ipnet::IpNet::V4(n) = net {
                if net.prefix_len() > 0 {
                    mentioned.insert(n);
                }
            }
        }
    }
    let mentioned: Vec<ipnet::Ipv4Net> = mentioned.into_iter().collect();
    let lab: ipnet::Ipv4Net = "198.18.0.0/15".parse().unwrap();
    let foreign = IpAddr::V4(Ipv4Addr::new(198, 18, 77, 77));
    (0..n)
        .map(|_| {
            let dst = match rng.below(100) {
                0..=14 => *rng.pick(&locals),
                15..=34 => {
                    let net = *rng.pick(&subnets);
                    IpAddr::V4(host_in(&mut rng, net))
                }
                35..=79 => {
                    let net = *rng.pick(&mentioned);
                    IpAddr::V4(host_in(&mut rng, net))
                }
                _ => IpAddr::V4(host_in(&mut rng, lab)),
            };
            let src = match rng.below(100) {
                0..=33 => None,
                34..=94 => Some(*rng.pick(&locals)),
                95..=97 => Some(foreign),
                // lo's own address: only valid towards local destinations.
                _ => Some(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            };
            let oif = if oifs.is_empty() || rng.below(100) < 15 {
                None
            } else {
                Some(rng.pick(oifs).to_string())
            };
            Query { dst, src, oif }
        })
        .collect()
}

/// Whether an offline error is the same class of failure as the kernel's errno.
pub fn same_failure(e: FibError, errno: i32) -> bool {
    match e {
        FibError::NoRoute => errno == libc::ENETUNREACH,
        // Unreachable routes answer EHOSTUNREACH, unreachable rules ENETUNREACH.
        FibError::Unreachable => errno == libc::EHOSTUNREACH || errno == libc::ENETUNREACH,
        FibError::Prohibit => errno == libc::EACCES,
        FibError::Blackhole => errno == libc::EINVAL,
        FibError::InvalidSource => errno == libc::EINVAL || errno == libc::ENETUNREACH,
        FibError::NoDevice => errno == libc::ENODEV,
        // 0.0.0.0/8 and similar destinations: the kernel answers EINVAL.
        FibError::InvalidDestination => errno == libc::EINVAL,
        FibError::FamilyMismatch => false,
    }
}

pub type KernelAnswer = Result<RouteDecision, Option<i32>>;

pub fn describe_kernel(k: &KernelAnswer) -> String {
    match k {
        Ok(d) => format!(
            "{:?} table {} dev {} src {} via {}",
            d.kind,
            d.table,
            d.dev.as_deref().unwrap_or("-"),
            d.prefsrc.map(|x| x.to_string()).unwrap_or("-".into()),
            d.gateway.map(|x| x.to_string()).unwrap_or("-".into()),
        ),
        Err(Some(e)) => format!("error {}", std::io::Error::from_raw_os_error(*e)),
        Err(None) => "error without errno".into(),
    }
}

pub fn describe_fib(f: &Result<FibDecision, FibError>) -> String {
    match f {
        Ok(d) => format!(
            "{:?} table {} dev {} src {} via {} (rule {}, route {})",
            d.kind,
            d.table.map(|t| t.to_string()).unwrap_or("-".into()),
            d.dev.as_deref().unwrap_or("-"),
            d.prefsrc.map(|x| x.to_string()).unwrap_or("-".into()),
            d.gateway.map(|x| x.to_string()).unwrap_or("-".into()),
            d.rule_priority.map(|p| p.to_string()).unwrap_or("-".into()),
            d.route
                .as_ref()
                .map(|r| format!(
                    "{:?} {} table {} metric {:?}",
                    r.kind, r.dst, r.table, r.metric
                ))
                .unwrap_or("-".into()),
        ),
        Err(e) => format!("error {e:?}"),
    }
}

pub fn agree(k: &KernelAnswer, f: &Result<FibDecision, FibError>) -> bool {
    match (k, f) {
        (Ok(k), Ok(f)) => {
            k.kind == f.kind
                && k.table == f.table.unwrap_or(0)
                && k.dev == f.dev
                && k.prefsrc == f.prefsrc
                && k.gateway == f.gateway
        }
        (Err(Some(errno)), Err(e)) => same_failure(*e, *errno),
        _ => false,
    }
}

/// Ask the kernel every query through one netlink socket, resolve each offline
/// with `mode`, and return the outcome counts (by the kernel's answer). Panics
/// listing the first disagreements.
pub fn compare(
    host: &Host,
    st: &HostState,
    qs: &[Query],
    mode: FibMode,
) -> BTreeMap<String, usize> {
    let kernel: Vec<KernelAnswer> = host
        .with_netlink(|nl| {
            Ok(qs
                .iter()
                .map(|q| {
                    nl.route_get(q.dst, q.src, q.oif.as_deref())
                        .map_err(|e| e.errno_value())
                })
                .collect())
        })
        .unwrap();
    let mut mismatches = Vec::new();
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    for (q, k) in qs.iter().zip(&kernel) {
        let flow = Flow {
            dst: q.dst,
            src: q.src,
            iif: None,
            oif: q.oif.clone(),
            fwmark: 0,
            tos: 0,
        };
        let f = roce_net::fib_lookup_with(st, &flow, mode);
        let key = match k {
            Ok(d) => format!("{:?} table {}", d.kind, d.table),
            Err(Some(e)) => format!("errno {e}"),
            Err(None) => "error".into(),
        };
        *outcomes.entry(key).or_default() += 1;
        if !agree(k, &f) {
            mismatches.push(format!(
                "{q}:\n    kernel {}\n    fib    {}",
                describe_kernel(k),
                describe_fib(&f)
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} lookups disagree with the kernel; first ones:\n{}\noutcomes: {outcomes:#?}",
        mismatches.len(),
        qs.len(),
        mismatches
            .iter()
            .take(15)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    outcomes
}

pub fn assert_seen(outcomes: &BTreeMap<String, usize>, wanted: &[&str]) {
    for want in wanted {
        assert!(
            outcomes.keys().any(|o| o.starts_with(want)),
            "no lookup ended as {want}: {outcomes:#?}"
        );
    }
}
