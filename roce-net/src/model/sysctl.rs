use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

use super::Family;

/// How the kernel combines the `all` value with an interface's own value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Combine {
    /// `IN_DEV_MAXCONF`: the larger of `all` and the interface value counts.
    Max,
    /// `IN_DEV_ORCONF`: enabled if either is non-zero.
    Or,
    /// Only the interface's own value counts (`all` is not consulted; writing
    /// `all` may copy itself to every interface, as `disable_ipv6` does).
    Own,
    /// `all` when it is non-zero, else the interface's value
    /// (`keep_addr_on_down`, `addrconf_ifdown` in net/ipv6/addrconf.c).
    AllFirst,
}

/// A per-interface sysctl under `net.ipv4.conf.<iface>.` or
/// `net.ipv6.conf.<iface>.`: the family is the key's ([`ConfKey::family`]).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ConfKey {
    /// `arp_ignore` (0..=8).
    ArpIgnore,
    /// `arp_announce` (0..=2).
    ArpAnnounce,
    /// `arp_filter` (0..=1).
    ArpFilter,
    /// `rp_filter` (0 off, 1 strict, 2 loose).
    RpFilter,
    /// `accept_local` (0..=1).
    AcceptLocal,
    /// `arp_notify` (0..=1).
    ArpNotify,
    /// IPv6 `disable_ipv6` (0..=1): 1 removes every IPv6 address, and with it
    /// every IPv6 RoCE v2 GID.
    DisableIpv6,
    /// IPv6 `accept_ra` (0..=2): router advertisements are processed (2: even
    /// when forwarding).
    AcceptRa,
    /// IPv6 `accept_ra_defrtr` (0..=1): a router advertisement installs a
    /// default route (`proto ra`) in the main table.
    AcceptRaDefrtr,
    /// IPv6 `autoconf` (0..=1): addresses from advertised prefixes (SLAAC).
    Autoconf,
    /// IPv6 `accept_dad` (0..=2): duplicate address detection runs (2: a MAC-based
    /// link-local address that fails it disables IPv6 on the interface).
    AcceptDad,
    /// IPv6 `ndisc_notify` (0..=1): unsolicited neighbour advertisements when the
    /// link comes up or its MAC changes, and when an address finishes DAD.
    NdiscNotify,
    /// IPv6 `keep_addr_on_down` (-1..=1): static global addresses survive the link
    /// going down (>0); by default (0) they are flushed, and their GIDs go.
    KeepAddrOnDown,
    /// IPv6 `forwarding` (0..=1): the interface acts as a router; its neighbour
    /// advertisements carry the router flag (net/ipv6/ndisc.c,
    /// `ndisc_send_na`), and a peer drops a router whose advertisement clears
    /// it (`rt6_clean_tohost`).
    Forwarding,
}

impl ConfKey {
    /// Every key, in a stable order: IPv4's, then IPv6's.
    pub const ALL: [ConfKey; 14] = [
        ConfKey::ArpIgnore,
        ConfKey::ArpAnnounce,
        ConfKey::ArpFilter,
        ConfKey::RpFilter,
        ConfKey::AcceptLocal,
        ConfKey::ArpNotify,
        ConfKey::DisableIpv6,
        ConfKey::AcceptRa,
        ConfKey::AcceptRaDefrtr,
        ConfKey::Autoconf,
        ConfKey::AcceptDad,
        ConfKey::NdiscNotify,
        ConfKey::KeepAddrOnDown,
        ConfKey::Forwarding,
    ];

    /// The keys of one family, in [`ConfKey::ALL`]'s order.
    pub fn of(family: Family) -> impl Iterator<Item = ConfKey> {
        ConfKey::ALL
            .into_iter()
            .filter(move |k| k.family() == family)
    }

    /// The family whose `conf` directory holds it.
    pub fn family(self) -> Family {
        match self {
            ConfKey::ArpIgnore
            | ConfKey::ArpAnnounce
            | ConfKey::ArpFilter
            | ConfKey::RpFilter
            | ConfKey::AcceptLocal
            | ConfKey::ArpNotify => Family::Inet,
            _ => Family::Inet6,
        }
    }

    /// The file name under `/proc/sys/net/ipv4/conf/<iface>/` (or `ipv6`).
    pub fn file_name(self) -> &'static str {
        match self {
            ConfKey::ArpIgnore => "arp_ignore",
            ConfKey::ArpAnnounce => "arp_announce",
            ConfKey::ArpFilter => "arp_filter",
            ConfKey::RpFilter => "rp_filter",
            ConfKey::AcceptLocal => "accept_local",
            ConfKey::ArpNotify => "arp_notify",
            ConfKey::DisableIpv6 => "disable_ipv6",
            ConfKey::AcceptRa => "accept_ra",
            ConfKey::AcceptRaDefrtr => "accept_ra_defrtr",
            ConfKey::Autoconf => "autoconf",
            ConfKey::AcceptDad => "accept_dad",
            ConfKey::NdiscNotify => "ndisc_notify",
            ConfKey::KeepAddrOnDown => "keep_addr_on_down",
            ConfKey::Forwarding => "forwarding",
        }
    }

    /// From the file name.
    pub fn from_name(s: &str) -> Option<ConfKey> {
        ConfKey::ALL.into_iter().find(|k| k.file_name() == s)
    }

    /// The kernel's rule for combining `all` with the interface value: IPv4's
    /// `IN_DEV_MAXCONF`/`IN_DEV_ORCONF` (include/linux/inetdevice.h); IPv6's
    /// as net/ipv6 reads each (`ndisc_notify`: either, ndisc.c; `accept_dad`:
    /// DAD runs when either is at least 1, `addrconf_dad_begin`;
    /// `keep_addr_on_down`: `addrconf_ifdown`; the others the interface's own).
    pub fn combine(self) -> Combine {
        match self {
            ConfKey::ArpFilter | ConfKey::AcceptLocal | ConfKey::NdiscNotify => Combine::Or,
            ConfKey::ArpIgnore
            | ConfKey::ArpAnnounce
            | ConfKey::RpFilter
            | ConfKey::ArpNotify
            | ConfKey::AcceptDad => Combine::Max,
            ConfKey::KeepAddrOnDown => Combine::AllFirst,
            ConfKey::DisableIpv6
            | ConfKey::AcceptRa
            | ConfKey::AcceptRaDefrtr
            | ConfKey::Autoconf
            | ConfKey::Forwarding => Combine::Own,
        }
    }

    /// The values roce-net accepts (the kernel's documented ones).
    pub fn valid_range(self) -> std::ops::RangeInclusive<i32> {
        match self {
            ConfKey::ArpIgnore => 0..=8,
            ConfKey::ArpAnnounce | ConfKey::RpFilter | ConfKey::AcceptRa | ConfKey::AcceptDad => {
                0..=2
            }
            ConfKey::KeepAddrOnDown => -1..=1,
            ConfKey::ArpFilter
            | ConfKey::AcceptLocal
            | ConfKey::ArpNotify
            | ConfKey::DisableIpv6
            | ConfKey::AcceptRaDefrtr
            | ConfKey::Autoconf
            | ConfKey::NdiscNotify
            | ConfKey::Forwarding => 0..=1,
        }
    }

    /// The effective value the kernel uses for an interface.
    pub fn effective(self, all: Option<i32>, iface: Option<i32>) -> Option<i32> {
        match (self.combine(), all, iface) {
            (Combine::Own, _, i) => i,
            (Combine::AllFirst, Some(a), _) if a != 0 => Some(a),
            (Combine::AllFirst, Some(_), None) => Some(0),
            (Combine::AllFirst, _, i) => i,
            (c, Some(a), Some(i)) => Some(match c {
                Combine::Or => i32::from(a != 0 || i != 0),
                _ => a.max(i),
            }),
            (_, Some(a), None) => Some(a),
            (_, None, i) => i,
        }
    }
}

impl fmt::Display for ConfKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.file_name())
    }
}

/// Which `net.ipv4.conf.*` (or `net.ipv6.conf.*`) directory a value lives in.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ConfTarget {
    /// `conf/all`: combined with every interface's own value.
    All,
    /// `conf/default`: the value new interfaces start with.
    Default,
    /// `conf/<name>`. Names may contain dots; they are never split.
    Interface(String),
}

impl ConfTarget {
    /// The directory name under `/proc/sys/net/ipv4/conf/` (or `ipv6`).
    pub fn dir_name(&self) -> &str {
        match self {
            ConfTarget::All => "all",
            ConfTarget::Default => "default",
            ConfTarget::Interface(n) => n,
        }
    }
}

/// Host-wide tuning sysctls.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum TuningKey {
    /// `net.core.netdev_max_backlog`.
    NetdevMaxBacklog,
    /// `net.core.rmem_max`.
    RmemMax,
    /// `net.core.wmem_max`.
    WmemMax,
    /// `net.ipv4.udp_mem` (three numbers, pages).
    UdpMem,
}

impl TuningKey {
    /// Every key, in a stable order.
    pub const ALL: [TuningKey; 4] = [
        TuningKey::NetdevMaxBacklog,
        TuningKey::RmemMax,
        TuningKey::WmemMax,
        TuningKey::UdpMem,
    ];
    /// Path relative to `/proc/sys/`.
    pub fn proc_path(self) -> &'static str {
        match self {
            TuningKey::NetdevMaxBacklog => "net/core/netdev_max_backlog",
            TuningKey::RmemMax => "net/core/rmem_max",
            TuningKey::WmemMax => "net/core/wmem_max",
            TuningKey::UdpMem => "net/ipv4/udp_mem",
        }
    }
    /// The dotted sysctl name (safe here: no interface names inside).
    pub fn dotted(self) -> &'static str {
        match self {
            TuningKey::NetdevMaxBacklog => "net.core.netdev_max_backlog",
            TuningKey::RmemMax => "net.core.rmem_max",
            TuningKey::WmemMax => "net.core.wmem_max",
            TuningKey::UdpMem => "net.ipv4.udp_mem",
        }
    }
    /// From the dotted name or the snake-case key name.
    pub fn from_name(s: &str) -> Option<TuningKey> {
        TuningKey::ALL.into_iter().find(|k| {
            k.dotted() == s
                || serde_json::to_value(k)
                    .ok()
                    .and_then(|v| v.as_str().map(|x| x == s))
                    == Some(true)
        })
    }
}

/// A sysctl roce-net reads or writes, identified by structure, never by a dotted
/// string (interface names may contain dots).
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Sysctl {
    /// `net.ipv4.conf.<target>.<key>`, or `net.ipv6.conf...` for an IPv6 key.
    Conf {
        /// Directory.
        target: ConfTarget,
        /// Key.
        key: ConfKey,
    },
    /// A host-wide tuning value.
    Tuning(TuningKey),
}

/// The `conf` directory of a family under `/proc/sys`: `net/ipv4/conf` or
/// `net/ipv6/conf`.
pub(crate) fn conf_dir(family: Family) -> &'static str {
    match family {
        Family::Inet => "net/ipv4/conf",
        Family::Inet6 => "net/ipv6/conf",
    }
}

impl Sysctl {
    /// Path relative to `/proc/sys/`.
    pub fn proc_path(&self) -> String {
        match self {
            Sysctl::Conf { target, key } => {
                format!(
                    "{}/{}/{}",
                    conf_dir(key.family()),
                    target.dir_name(),
                    key.file_name()
                )
            }
            Sysctl::Tuning(t) => t.proc_path().to_string(),
        }
    }
    /// The name as `sysctl(8)` shows it. Dots in interface names are written as `/`,
    /// as `sysctl` itself does, so the string stays unambiguous.
    pub fn display_name(&self) -> String {
        match self {
            Sysctl::Conf { target, key } => format!(
                "{}.{}.{}",
                conf_dir(key.family()).replace('/', "."),
                target.dir_name().replace('.', "/"),
                key.file_name()
            ),
            Sysctl::Tuning(t) => t.dotted().to_string(),
        }
    }
}

impl fmt::Display for Sysctl {
    /// The name as `sysctl(8)` shows it ([`Sysctl::display_name`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display_name())
    }
}

impl Sysctl {
    /// `name=value` as `sysctl -w` and `sysctl.d` take it (values with several
    /// fields separated by single spaces).
    pub fn assign<'a>(&'a self, value: &'a str) -> SysctlAssignment<'a> {
        SysctlAssignment {
            sysctl: self,
            value,
        }
    }

    /// The command that sets it now: `sysctl -w net.ipv4.conf.r1.arp_ignore=1`
    /// (one shell word: quoted when the value has several fields or the interface
    /// name needs it, see [`super::shell_word`]).
    pub fn write_command(&self, value: &str) -> String {
        let text = self.assign(value).to_string();
        // An interface name in the model's escaped form (`\xNN`) is written as
        // the kernel's bytes, as `sysctl` must find them under /proc/sys.
        if let Sysctl::Conf {
            target: ConfTarget::Interface(name),
            key,
        } = self
        {
            let shown = name.replace('.', "/");
            let head = format!("{}.", conf_dir(key.family()).replace('/', "."));
            if let (Ok(raw), Some(rest)) = (
                super::ifname_to_kernel(name),
                text.strip_prefix(head.as_str())
                    .and_then(|t| t.strip_prefix(shown.as_str())),
            ) {
                let mut b = head.as_bytes().to_vec();
                b.extend(raw.iter().map(|&c| if c == b'.' { b'/' } else { c }));
                b.extend_from_slice(rest.as_bytes());
                return format!("sysctl -w {}", super::shell::shell_word_bytes(&b));
            }
        }
        format!("sysctl -w {}", super::shell_word(&text))
    }
}

/// A sysctl with a value ([`Sysctl::assign`]): `net.ipv4.conf.all.arp_ignore=1`.
#[derive(Debug, Clone, Copy)]
pub struct SysctlAssignment<'a> {
    sysctl: &'a Sysctl,
    value: &'a str,
}

impl fmt::Display for SysctlAssignment<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.sysctl, SysctlValue(Some(self.value)))
    }
}

/// A sysctl value as shown in plans: fields separated by single spaces (the
/// kernel separates them by tabs), `(unread)` when it could not be read.
#[derive(Debug, Clone, Copy)]
pub struct SysctlValue<'a>(pub Option<&'a str>);

impl fmt::Display for SysctlValue<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(v) => {
                for (i, w) in v.split_whitespace().enumerate() {
                    if i > 0 {
                        f.write_str(" ")?;
                    }
                    f.write_str(w)?;
                }
                Ok(())
            }
            None => f.write_str("(unread)"),
        }
    }
}

/// The per-interface values of every [`ConfKey`], both families; `None` where
/// unreadable (or absent: an interface without IPv6 has no `net.ipv6.conf`
/// directory, a kernel without IPv6 none at all). The IPv6 keys are left out
/// of the JSON while unknown, so snapshots of older roce-net read back the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ConfValues {
    /// `arp_ignore`.
    pub arp_ignore: Option<i32>,
    /// `arp_announce`.
    pub arp_announce: Option<i32>,
    /// `arp_filter`.
    pub arp_filter: Option<i32>,
    /// `rp_filter`.
    pub rp_filter: Option<i32>,
    /// `accept_local`.
    pub accept_local: Option<i32>,
    /// `arp_notify`.
    pub arp_notify: Option<i32>,
    /// IPv6 `disable_ipv6`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_ipv6: Option<i32>,
    /// IPv6 `accept_ra`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_ra: Option<i32>,
    /// IPv6 `accept_ra_defrtr`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_ra_defrtr: Option<i32>,
    /// IPv6 `autoconf`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autoconf: Option<i32>,
    /// IPv6 `accept_dad`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_dad: Option<i32>,
    /// IPv6 `ndisc_notify`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ndisc_notify: Option<i32>,
    /// IPv6 `keep_addr_on_down`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_addr_on_down: Option<i32>,
    /// IPv6 `forwarding`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forwarding: Option<i32>,
}

impl ConfValues {
    fn slot(&mut self, key: ConfKey) -> &mut Option<i32> {
        match key {
            ConfKey::ArpIgnore => &mut self.arp_ignore,
            ConfKey::ArpAnnounce => &mut self.arp_announce,
            ConfKey::ArpFilter => &mut self.arp_filter,
            ConfKey::RpFilter => &mut self.rp_filter,
            ConfKey::AcceptLocal => &mut self.accept_local,
            ConfKey::ArpNotify => &mut self.arp_notify,
            ConfKey::DisableIpv6 => &mut self.disable_ipv6,
            ConfKey::AcceptRa => &mut self.accept_ra,
            ConfKey::AcceptRaDefrtr => &mut self.accept_ra_defrtr,
            ConfKey::Autoconf => &mut self.autoconf,
            ConfKey::AcceptDad => &mut self.accept_dad,
            ConfKey::NdiscNotify => &mut self.ndisc_notify,
            ConfKey::KeepAddrOnDown => &mut self.keep_addr_on_down,
            ConfKey::Forwarding => &mut self.forwarding,
        }
    }
    /// The value of one key.
    pub fn get(&self, key: ConfKey) -> Option<i32> {
        let mut copy = *self;
        *copy.slot(key)
    }
    /// Set one key.
    pub fn set(&mut self, key: ConfKey, v: Option<i32>) {
        *self.slot(key) = v;
    }
    /// Combine `all` with an interface's values by the kernel's rules.
    pub fn effective(all: &ConfValues, iface: &ConfValues) -> ConfValues {
        let mut out = ConfValues::default();
        for k in ConfKey::ALL {
            out.set(k, k.effective(all.get(k), iface.get(k)));
        }
        out
    }
}

/// One interface's sysctls: what is configured on it and what the kernel uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct InterfaceConf {
    /// The values in `conf/<iface>/`.
    pub configured: ConfValues,
    /// The values the kernel acts on (combined with `conf/all`).
    pub effective: ConfValues,
}

/// Host-wide tuning values.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct Tuning {
    /// `net.core.netdev_max_backlog`.
    pub netdev_max_backlog: Option<u64>,
    /// `net.core.rmem_max`.
    pub rmem_max: Option<u64>,
    /// `net.core.wmem_max`.
    pub wmem_max: Option<u64>,
    /// `net.ipv4.udp_mem` (min, pressure, max), in pages.
    pub udp_mem: Option<[u64; 3]>,
}

impl Tuning {
    /// The value of a key as the text `/proc/sys` holds.
    pub fn get_text(&self, key: TuningKey) -> Option<String> {
        match key {
            TuningKey::NetdevMaxBacklog => self.netdev_max_backlog.map(|v| v.to_string()),
            TuningKey::RmemMax => self.rmem_max.map(|v| v.to_string()),
            TuningKey::WmemMax => self.wmem_max.map(|v| v.to_string()),
            TuningKey::UdpMem => self.udp_mem.map(|[a, b, c]| format!("{a}\t{b}\t{c}")),
        }
    }
}

/// Every sysctl roce-net cares about, for one network namespace.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct SysctlView {
    /// `net.ipv4.conf.all.*` and `net.ipv6.conf.all.*`.
    pub all: ConfValues,
    /// `net.ipv4.conf.default.*` and `net.ipv6.conf.default.*`.
    pub default: ConfValues,
    /// `net.ipv4.conf.<iface>.*` and `net.ipv6.conf.<iface>.*`, by interface name.
    pub interfaces: BTreeMap<String, InterfaceConf>,
    /// Host tuning.
    pub tuning: Tuning,
    /// Whether this is the initial network namespace, where the host-wide tuning
    /// keys live (`None`: not recorded, e.g. a snapshot from an older roce-net).
    /// Known from `net/core/netdev_max_backlog`, which the kernel registers for the
    /// initial namespace only (net/core/sysctl_net_core.c, `net_core_table`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_netns: Option<bool>,
    /// What this namespace lets roce-net do with each tuning key: whether it shows
    /// the file and whether the file is writable (`None`: not recorded). In a
    /// non-initial namespace `netdev_max_backlog` and `udp_mem` are absent and
    /// (since Linux 6.x) `rmem_max`/`wmem_max` are read-only views of the initial
    /// namespace's values; the planner refuses to tune such keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tuning_access: Option<BTreeMap<TuningKey, SysctlAccess>>,
}

/// Whether a sysctl file exists in a namespace and can be written there.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum SysctlAccess {
    /// Present and writable (its mode has the owner's write bit).
    Writable,
    /// Present, read-only (a view of the initial namespace's value).
    ReadOnly,
    /// Not shown in this namespace.
    Absent,
}

impl SysctlView {
    /// The effective value of `key` on `iface` (what `all` alone makes it when
    /// the interface has no entry).
    pub fn effective(&self, iface: &str, key: ConfKey) -> Option<i32> {
        match self.interfaces.get(iface) {
            Some(c) => c.effective.get(key),
            None => key.effective(self.all.get(key), None),
        }
    }

    /// The configured value of a sysctl as text, as `/proc/sys` holds it.
    pub fn get_text(&self, s: &Sysctl) -> Option<String> {
        match s {
            Sysctl::Conf { target, key } => match target {
                ConfTarget::All => self.all.get(*key),
                ConfTarget::Default => self.default.get(*key),
                ConfTarget::Interface(n) => {
                    self.interfaces.get(n).and_then(|c| c.configured.get(*key))
                }
            }
            .map(|v| v.to_string()),
            Sysctl::Tuning(t) => self.tuning.get_text(*t),
        }
    }

    /// Recompute every interface's effective values from `all` and its own values.
    pub fn recompute_effective(&mut self) {
        let all = self.all;
        for c in self.interfaces.values_mut() {
            c.effective = ConfValues::effective(&all, &c.configured);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_combine_rules() {
        assert_eq!(ConfKey::ArpIgnore.effective(Some(0), Some(1)), Some(1));
        assert_eq!(ConfKey::ArpIgnore.effective(Some(2), Some(1)), Some(2));
        assert_eq!(ConfKey::RpFilter.effective(Some(2), Some(1)), Some(2));
        assert_eq!(ConfKey::ArpFilter.effective(Some(0), Some(1)), Some(1));
        assert_eq!(ConfKey::AcceptLocal.effective(Some(1), Some(0)), Some(1));
        assert_eq!(ConfKey::ArpFilter.effective(Some(0), Some(0)), Some(0));
        // IPv6: ndisc_notify either; accept_dad the larger (DAD runs when either
        // is at least 1); keep_addr_on_down `all` unless it is 0; accept_ra and
        // the others only the interface's own value.
        assert_eq!(ConfKey::NdiscNotify.effective(Some(1), Some(0)), Some(1));
        assert_eq!(ConfKey::AcceptDad.effective(Some(0), Some(1)), Some(1));
        assert_eq!(
            ConfKey::KeepAddrOnDown.effective(Some(-1), Some(1)),
            Some(-1)
        );
        assert_eq!(ConfKey::KeepAddrOnDown.effective(Some(0), Some(1)), Some(1));
        assert_eq!(ConfKey::AcceptRa.effective(Some(0), Some(1)), Some(1));
        assert_eq!(ConfKey::AcceptRaDefrtr.effective(Some(1), Some(0)), Some(0));
        assert_eq!(ConfKey::DisableIpv6.effective(Some(1), None), None);
    }

    #[test]
    fn ipv6_keys_live_under_net_ipv6() {
        let s = Sysctl::Conf {
            target: ConfTarget::Interface("eth0.100".into()),
            key: ConfKey::AcceptRaDefrtr,
        };
        assert_eq!(s.proc_path(), "net/ipv6/conf/eth0.100/accept_ra_defrtr");
        assert_eq!(s.display_name(), "net.ipv6.conf.eth0/100.accept_ra_defrtr");
        assert_eq!(
            s.write_command("0"),
            "sysctl -w net.ipv6.conf.eth0/100.accept_ra_defrtr=0"
        );
        assert_eq!(ConfKey::of(Family::Inet6).count(), 8);
        assert_eq!(ConfKey::of(Family::Inet).count(), 6);
    }

    #[test]
    fn dotted_interface_names_stay_unambiguous() {
        let s = Sysctl::Conf {
            target: ConfTarget::Interface("eth0.100".into()),
            key: ConfKey::RpFilter,
        };
        assert_eq!(s.proc_path(), "net/ipv4/conf/eth0.100/rp_filter");
        assert_eq!(s.display_name(), "net.ipv4.conf.eth0/100.rp_filter");
    }

    #[test]
    fn tuning_names() {
        assert_eq!(
            TuningKey::from_name("net.core.rmem_max"),
            Some(TuningKey::RmemMax)
        );
        assert_eq!(TuningKey::from_name("udp_mem"), Some(TuningKey::UdpMem));
        assert_eq!(TuningKey::from_name("nope"), None);
    }
}
