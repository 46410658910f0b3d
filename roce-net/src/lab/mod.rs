//! Throwaway network-namespace topologies for demos, tests and benchmarks.
//!
//! A [`Lab`] owns the namespaces it creates and removes them when it is dropped,
//! also while a panic unwinds (unless told to [`Lab::set_keep`] them, for the
//! `roce-net lab --keep` demo). Everything is built through this library's own
//! netlink layer and [`crate::netns::netns_add`]; nothing touches the caller's
//! namespace. Namespace names are `rnt-<tag>-<pid>-<n>-<role>`, unique per process
//! and lab, so parallel tests never collide. Addresses come from 198.18.0.0/15.
//!
//! The switch is a bridge (`br0`) in its own namespace (`...-sw`); every
//! [`Lab::connect`] adds a veth pair whose switch end (`s<N>`) is enslaved to it.
//!
//! ```no_run
//! # fn main() -> roce_net::Result<()> {
//! let lab = roce_net::Lab::seed(4)?;          // the seed scenario
//! let host = lab.host()?;                          // a Host in the host namespace
//! let state = host.snapshot()?;
//! assert_eq!(lab.nics().len(), 4);
//! # let _ = state; Ok(()) }
//! ```

use crate::error::{Error, ErrorKind, Result};
use crate::host::Host;
use crate::kernel::netlink::Netlink;
use crate::netns::{self, NetnsTarget};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicU32, Ordering};

static LAB_COUNTER: AtomicU32 = AtomicU32::new(0);

/// The namespaces of every lab of this process that is not kept, so that an
/// interrupted program can remove them ([`Lab::interrupt`]); `None` once
/// interrupted: no lab creates a namespace after that.
static LIVE: std::sync::Mutex<Option<Vec<String>>> = std::sync::Mutex::new(Some(Vec::new()));

fn live() -> std::sync::MutexGuard<'static, Option<Vec<String>>> {
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Take `names` out of the registry (the lab removes them itself, or keeps them).
fn unregister(names: &[String]) {
    if let Some(set) = live().as_mut() {
        set.retain(|x| !names.contains(x));
    }
}

/// What [`Lab::interrupt`] removed, and what it could not.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct LabInterrupted {
    /// Namespaces removed.
    pub removed: Vec<String>,
    /// Namespaces that could not be removed, with why.
    pub failed: Vec<(String, Error)>,
}

/// The bridge acting as the switch, inside the switch namespace.
pub const SWITCH_BRIDGE: &str = "br0";
/// Host NIC addresses of the seed lab start at 198.18.0.`SEED_HOST_FIRST`.
pub const SEED_HOST_FIRST: u8 = 11;
/// The seed lab's peer address is 198.18.0.`SEED_PEER_HOST`.
pub const SEED_PEER_HOST: u8 = 100;
/// Most NICs [`Lab::seed`] accepts (addresses .11 to .74 stay below the peer's).
pub const SEED_MAX_NICS: usize = 64;
/// Most hosts [`Lab::fleet`] accepts (host `k` uses 198.18.`k`.0/24 inside the /16).
pub const FLEET_MAX_HOSTS: usize = 200;
/// Most NICs per host [`Lab::fleet`] accepts.
pub const FLEET_MAX_NICS: usize = 16;

/// The seed lab's IPv6 prefix (a unique local one, never routed): NIC `r<i>`
/// has `fd00:198:18::<11 + i>` (the digits of its IPv4 address's last octet),
/// the peer `fd00:198:18::100`.
pub const SEED_IPV6_PREFIX: &str = "fd00:198:18::/64";

/// One lab interface: a veth end in a lab namespace, plugged into the switch.
#[derive(
    Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct LabNic {
    /// The namespace the interface lives in.
    pub namespace: String,
    /// Interface name inside that namespace (`r0`, `p0`, ...).
    pub name: String,
    /// Its first address (the IPv4 one of a dual-stack lab).
    pub address: IpAddr,
    /// Prefix length of the address.
    pub prefix_len: u8,
    /// Every address it has, with prefix lengths, the first one first
    /// (`198.18.0.11/24`, `fd00:198:18::11/64`).
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub addresses: Vec<ipnet::IpNet>,
}

/// A set of network namespaces removed on drop (see the module docs).
#[derive(Debug)]
pub struct Lab {
    prefix: String,
    namespaces: Vec<String>,
    keep: bool,
    switch: Option<String>,
    ports: u32,
    host: Option<String>,
    peer: Option<String>,
    nics: Vec<LabNic>,
    peer_nic: Option<LabNic>,
    fleet: Vec<String>,
}

/// Run `f` with a netlink socket inside the named namespace.
fn in_ns<T: Send>(ns: &str, f: impl FnOnce(&mut Netlink) -> Result<T> + Send) -> Result<T> {
    NetnsTarget::named(ns)?.run(|| {
        let mut nl = Netlink::open()?;
        f(&mut nl)
    })
}

impl Lab {
    /// An empty lab. `tag` (lowercase letters, digits and `-`, at most 16
    /// characters) goes into every namespace name: `rnt-<tag>-<pid>-<n>-<role>`.
    pub fn new(tag: &str) -> Result<Lab> {
        if tag.is_empty()
            || tag.len() > 16
            || !tag
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!("invalid lab tag {tag:?}: use 1-16 of a-z, 0-9 and '-'"),
            ));
        }
        let n = LAB_COUNTER.fetch_add(1, Ordering::Relaxed);
        Ok(Lab {
            prefix: format!("rnt-{tag}-{}-{n}", std::process::id()),
            namespaces: Vec::new(),
            keep: false,
            switch: None,
            ports: 0,
            host: None,
            peer: None,
            nics: Vec::new(),
            peer_nic: None,
            fleet: Vec::new(),
        })
    }

    /// The seed scenario (docs/architecture.md, "Testing"), tagged `lab`: see [`Lab::seed_tagged`].
    pub fn seed(nics: usize) -> Result<Lab> {
        Lab::seed_tagged("lab", nics)
    }

    /// The seed scenario: a host namespace (`...-host`) with `nics` NICs `r0..`
    /// addressed 198.18.0.11/24, .12/24, ... (all in one /24, so the kernel puts
    /// one subnet route per NIC in table main: the asymmetric-routing setup), and
    /// a peer namespace (`...-peer`) with `p0` = 198.18.0.100/24, all on one
    /// bridge in `...-sw`. All links are up; sysctls are the kernel defaults
    /// (`arp_ignore` 0 etc.), no fix applied.
    pub fn seed_tagged(tag: &str, nics: usize) -> Result<Lab> {
        Lab::seed_families(tag, nics, crate::model::AddressFamilies::Ipv4)
    }

    /// The seed scenario with the NICs addressed in `families`: IPv4 as
    /// [`Lab::seed_tagged`]; IPv6 in [`SEED_IPV6_PREFIX`] (`r0` =
    /// `fd00:198:18::11/64`, ..., the peer `fd00:198:18::100/64`: one prefix
    /// route per NIC in the main table, the same asymmetric egress); both for a
    /// dual-stack host. IPv6 addresses are added with `nodad`, so they are
    /// usable at once (no other host holds them); the link-local ones go through
    /// duplicate address detection as usual.
    pub fn seed_families(
        tag: &str,
        nics: usize,
        families: crate::model::AddressFamilies,
    ) -> Result<Lab> {
        if nics == 0 || nics > SEED_MAX_NICS {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!("a seed lab has 1 to {SEED_MAX_NICS} NICs, not {nics}"),
            ));
        }
        let mut lab = Lab::new(tag)?;
        lab.add_switch("sw")?;
        let host = lab.add_namespace("host")?;
        let peer = lab.add_namespace("peer")?;
        // Host `last_octet` of the seed's IPv4 /24 and of its IPv6 prefix.
        let addrs = |last_octet: u8| -> Vec<ipnet::IpNet> {
            let mut v = Vec::new();
            if families.includes(crate::model::Family::Inet) {
                let ip = IpAddr::V4(Ipv4Addr::new(198, 18, 0, last_octet));
                v.extend(ipnet::IpNet::new(ip, 24));
            }
            if families.includes(crate::model::Family::Inet6) {
                // The octet's decimal digits as the last group: .11 -> ::11.
                let group = u16::from_str_radix(&last_octet.to_string(), 16).unwrap_or(0);
                let ip = IpAddr::V6(std::net::Ipv6Addr::new(
                    0xfd00, 0x198, 0x18, 0, 0, 0, 0, group,
                ));
                v.extend(ipnet::IpNet::new(ip, 64));
            }
            v
        };
        for i in 0..nics {
            let nic =
                lab.connect_addrs(&host, &format!("r{i}"), &addrs(SEED_HOST_FIRST + i as u8))?;
            lab.nics.push(nic);
        }
        lab.peer_nic = Some(lab.connect_addrs(&peer, "p0", &addrs(SEED_PEER_HOST))?);
        lab.host = Some(host);
        lab.peer = Some(peer);
        lab.wait_links_up()?;
        Ok(lab)
    }

    /// Wait until every lab NIC (and the peer's) and every link of the switch
    /// (the bridge and its ports) is operationally up: a veth reports `UP` only
    /// after the kernel's link watch has run (up to a second after `ip link set
    /// up`), and a snapshot taken before that sees the NICs `down`. The bridge
    /// comes up later still: its carrier goes on once a port forwards, which
    /// is itself a link watch event, so under load the NICs can be `UP` while
    /// `br0` is still `UNKNOWN` (a snapshot of the switch then differs from one
    /// read a moment later). Bounded: an error after 10 s names the links still
    /// down.
    fn wait_links_up(&self) -> Result<()> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let mut down = Vec::new();
            for nic in self.nics.iter().chain(self.peer_nic.iter()) {
                let l = in_ns(&nic.namespace, |nl| nl.link(&nic.name))?;
                if l.oper_state != crate::model::OperState::Up {
                    down.push(format!("{}/{}", nic.namespace, nic.name));
                }
            }
            if let Some(sw) = &self.switch {
                for l in in_ns(sw, |nl| nl.links())? {
                    if l.name != "lo" && l.oper_state != crate::model::OperState::Up {
                        down.push(format!("{sw}/{}", l.name));
                    }
                }
            }
            if down.is_empty() {
                return Ok(());
            }
            if std::time::Instant::now() >= deadline {
                return Err(Error::new(
                    ErrorKind::Io,
                    format!(
                        "lab links still not operationally up after 10 s: {}",
                        down.join(", ")
                    ),
                ));
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// A fleet: `hosts` host namespaces `...-h1`, `...-h2`, ... on one switch,
    /// each with `nics` NICs `r0..` addressed 198.18.`k`.11/16, .12/16, ... on
    /// host `k` (every NIC of every host in one subnet, so each host has the
    /// seed's ARP-flux and asymmetric-routing setup and every host is every
    /// other's peer). Links up, kernel-default sysctls, no fix applied.
    /// [`Lab::nics`] lists every host's NICs, host by host.
    pub fn fleet(tag: &str, hosts: usize, nics: usize) -> Result<Lab> {
        if hosts == 0 || hosts > FLEET_MAX_HOSTS || nics == 0 || nics > FLEET_MAX_NICS {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "a fleet lab has 1 to {FLEET_MAX_HOSTS} hosts with 1 to {FLEET_MAX_NICS} \
                     NICs each, not {hosts} hosts with {nics}"
                ),
            ));
        }
        let mut lab = Lab::new(tag)?;
        lab.add_switch("sw")?;
        for k in 1..=hosts {
            let ns = lab.add_namespace(&format!("h{k}"))?;
            for i in 0..nics {
                let ip = IpAddr::V4(Ipv4Addr::new(198, 18, k as u8, SEED_HOST_FIRST + i as u8));
                let nic = lab.connect(&ns, &format!("r{i}"), ip, 16)?;
                lab.nics.push(nic);
            }
            lab.fleet.push(ns);
        }
        lab.wait_links_up()?;
        Ok(lab)
    }

    /// The fleet lab's host namespaces, `...-h1` first (empty for other labs).
    pub fn fleet_hosts(&self) -> &[String] {
        &self.fleet
    }

    /// The name prefix shared by this lab's namespaces.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Every namespace this lab created, in creation order.
    pub fn namespaces(&self) -> &[String] {
        &self.namespaces
    }

    /// The seed lab's host namespace.
    pub fn host_ns(&self) -> Option<&str> {
        self.host.as_deref()
    }

    /// The seed lab's peer namespace.
    pub fn peer_ns(&self) -> Option<&str> {
        self.peer.as_deref()
    }

    /// The switch namespace (holding bridge [`SWITCH_BRIDGE`]), once added.
    pub fn switch_ns(&self) -> Option<&str> {
        self.switch.as_deref()
    }

    /// The host NICs: the seed lab's, `r0` first, or every fleet host's, host by host.
    pub fn nics(&self) -> &[LabNic] {
        &self.nics
    }

    /// The seed lab's peer NIC (`p0`).
    pub fn peer_nic(&self) -> Option<&LabNic> {
        self.peer_nic.as_ref()
    }

    /// A [`Host`] handle on the seed lab's host namespace.
    pub fn host(&self) -> Result<Host> {
        match &self.host {
            Some(ns) => Host::netns(ns),
            None => Err(Error::new(
                ErrorKind::InvalidInput,
                "this lab has no host namespace (build it with Lab::seed)",
            )),
        }
    }

    /// Keep the namespaces when the lab is dropped (for demos); `ip netns del`
    /// or [`crate::netns::netns_del`] removes them later. A kept lab's namespaces
    /// are left alone by [`Lab::interrupt`] too.
    pub fn set_keep(&mut self, keep: bool) {
        self.keep = keep;
        if keep {
            unregister(&self.namespaces);
        } else if let Some(set) = live().as_mut() {
            for n in &self.namespaces {
                if !set.contains(n) {
                    set.push(n.clone());
                }
            }
        }
    }

    /// Remove the namespaces of every lab of this process that is not kept,
    /// and make every later attempt to build one fail: what a program does when
    /// it is interrupted (`SIGINT`, `SIGTERM`, `SIGHUP`), from the thread that
    /// received the signal, while another may be building a lab. A namespace
    /// being created when it is called is finished first, then removed.
    pub fn interrupt() -> LabInterrupted {
        let mut g = live();
        let names = g.take().unwrap_or_default();
        let mut out = LabInterrupted::default();
        for ns in names.iter().rev() {
            match netns::netns_del(ns) {
                Ok(()) => out.removed.push(ns.clone()),
                Err(e) if e.kind() == ErrorKind::NotFound => out.removed.push(ns.clone()),
                Err(e) => out.failed.push((ns.clone(), e)),
            }
        }
        out
    }

    /// Create a namespace `<prefix>-<role>` owned by this lab, with `lo` up.
    pub fn add_namespace(&mut self, role: &str) -> Result<String> {
        let name = format!("{}-{role}", self.prefix);
        {
            // Created and registered under the registry's lock, so an interrupt
            // either sees it or stops it before it exists.
            let mut g = live();
            let Some(set) = g.as_mut() else {
                return Err(Error::new(
                    ErrorKind::InvalidInput,
                    format!(
                        "lab {}: interrupted; its namespaces were removed",
                        self.prefix
                    ),
                ));
            };
            netns::netns_add(&name)
                .map_err(|e| e.context(format!("building lab {}", self.prefix)))?;
            if !self.keep {
                set.push(name.clone());
            }
        }
        self.namespaces.push(name.clone());
        in_ns(&name, |nl| nl.link_set_up("lo"))?;
        Ok(name)
    }

    /// Create the switch: namespace `<prefix>-<role>` with bridge [`SWITCH_BRIDGE`] up.
    pub fn add_switch(&mut self, role: &str) -> Result<String> {
        if let Some(sw) = &self.switch {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!("lab {} already has a switch ({sw})", self.prefix),
            ));
        }
        let ns = self.add_namespace(role)?;
        in_ns(&ns, |nl| {
            nl.link_add_bridge(SWITCH_BRIDGE)?;
            nl.link_set_up(SWITCH_BRIDGE)
        })?;
        self.switch = Some(ns.clone());
        Ok(ns)
    }

    /// Plug namespace `ns` into the switch: a veth pair whose end `ifname` lives in
    /// `ns` with address `ip/prefix_len`, and whose other end `s<N>` is a bridge
    /// port. Both ends are brought up before the address is added.
    pub fn connect(
        &mut self,
        ns: &str,
        ifname: &str,
        ip: IpAddr,
        prefix_len: u8,
    ) -> Result<LabNic> {
        let net = ipnet::IpNet::new(ip, prefix_len).map_err(|e| {
            Error::new(
                ErrorKind::InvalidInput,
                format!("lab address {ip}/{prefix_len} for {ifname}: {e}"),
            )
        })?;
        self.connect_addrs(ns, ifname, &[net])
    }

    /// [`Lab::connect`] with several addresses (at least one; IPv6 ones added
    /// with `nodad`, usable at once).
    pub fn connect_addrs(
        &mut self,
        ns: &str,
        ifname: &str,
        addrs: &[ipnet::IpNet],
    ) -> Result<LabNic> {
        let Some(first) = addrs.first().copied() else {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!("lab NIC {ifname} needs at least one address"),
            ));
        };
        let Some(sw) = self.switch.clone() else {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "lab {}: add a switch before connecting {ifname}",
                    self.prefix
                ),
            ));
        };
        let target = NetnsTarget::named(ns)?;
        let port = format!("s{}", self.ports);
        self.ports += 1;
        in_ns(&sw, |nl| {
            nl.link_add_veth(&port, ifname, Some(&target))?;
            nl.link_set_master(&port, SWITCH_BRIDGE)?;
            nl.link_set_up(&port)
        })?;
        in_ns(ns, |nl| {
            nl.link_set_up(ifname)?;
            for a in addrs {
                if a.addr().is_ipv6() {
                    nl.addr_add_nodad(ifname, a.addr(), a.prefix_len())?;
                } else {
                    nl.addr_add(ifname, a.addr(), a.prefix_len())?;
                }
            }
            Ok(())
        })?;
        Ok(LabNic {
            namespace: ns.to_string(),
            name: ifname.to_string(),
            address: first.addr(),
            prefix_len: first.prefix_len(),
            addresses: addrs.to_vec(),
        })
    }

    /// Remove every namespace now, reporting the first failure.
    pub fn destroy(mut self) -> Result<()> {
        self.keep = false;
        let names = std::mem::take(&mut self.namespaces);
        unregister(&names);
        let mut first = None;
        for ns in names.iter().rev() {
            match netns::netns_del(ns) {
                // Removed already by an interrupt (names hold the pid: never reused).
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => {
                    first.get_or_insert(e);
                }
                Ok(()) => {}
            }
        }
        first.map_or(Ok(()), Err)
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        let names = std::mem::take(&mut self.namespaces);
        unregister(&names);
        for ns in names.iter().rev() {
            let _ = netns::netns_del(ns);
        }
    }
}
