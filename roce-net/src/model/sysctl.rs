use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// How the kernel combines the `all` value with an interface's own value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Combine {
    /// `IN_DEV_MAXCONF`: the larger of `all` and the interface value counts.
    Max,
    /// `IN_DEV_ORCONF`: enabled if either is non-zero.
    Or,
}

/// A per-interface IPv4 sysctl under `net.ipv4.conf.<iface>.`.
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
}

impl ConfKey {
    /// Every key, in a stable order.
    pub const ALL: [ConfKey; 6] = [
        ConfKey::ArpIgnore,
        ConfKey::ArpAnnounce,
        ConfKey::ArpFilter,
        ConfKey::RpFilter,
        ConfKey::AcceptLocal,
        ConfKey::ArpNotify,
    ];

    /// The file name under `/proc/sys/net/ipv4/conf/<iface>/`.
    pub fn file_name(self) -> &'static str {
        match self {
            ConfKey::ArpIgnore => "arp_ignore",
            ConfKey::ArpAnnounce => "arp_announce",
            ConfKey::ArpFilter => "arp_filter",
            ConfKey::RpFilter => "rp_filter",
            ConfKey::AcceptLocal => "accept_local",
            ConfKey::ArpNotify => "arp_notify",
        }
    }

    /// From the file name.
    pub fn from_name(s: &str) -> Option<ConfKey> {
        ConfKey::ALL.into_iter().find(|k| k.file_name() == s)
    }

    /// The kernel's rule for combining `all` with the interface value.
    pub fn combine(self) -> Combine {
        match self {
            ConfKey::ArpFilter | ConfKey::AcceptLocal => Combine::Or,
            _ => Combine::Max,
        }
    }

    /// The values the kernel accepts.
    pub fn valid_range(self) -> std::ops::RangeInclusive<u32> {
        match self {
            ConfKey::ArpIgnore => 0..=8,
            ConfKey::ArpAnnounce | ConfKey::RpFilter => 0..=2,
            ConfKey::ArpFilter | ConfKey::AcceptLocal | ConfKey::ArpNotify => 0..=1,
        }
    }

    /// The effective value the kernel uses for an interface.
    pub fn effective(self, all: Option<u32>, iface: Option<u32>) -> Option<u32> {
        match (all, iface) {
            (Some(a), Some(i)) => Some(match self.combine() {
                Combine::Max => a.max(i),
                Combine::Or => u32::from(a != 0 || i != 0),
            }),
            (Some(a), None) => Some(a),
            (None, Some(i)) => Some(i),
            (None, None) => None,
        }
    }
}

impl fmt::Display for ConfKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.file_name())
    }
}

/// Which `net.ipv4.conf.*` directory a value lives in.
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
    /// The directory name under `/proc/sys/net/ipv4/conf/`.
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
    /// `net.ipv4.conf.<target>.<key>`.
    Conf {
        /// Directory.
        target: ConfTarget,
        /// Key.
        key: ConfKey,
    },
    /// A host-wide tuning value.
    Tuning(TuningKey),
}

impl Sysctl {
    /// Path relative to `/proc/sys/`.
    pub fn proc_path(&self) -> String {
        match self {
            Sysctl::Conf { target, key } => {
                format!("net/ipv4/conf/{}/{}", target.dir_name(), key.file_name())
            }
            Sysctl::Tuning(t) => t.proc_path().to_string(),
        }
    }
    /// The name as `sysctl(8)` shows it. Dots in interface names are written as `/`,
    /// as `sysctl` itself does, so the string stays unambiguous.
    pub fn display_name(&self) -> String {
        match self {
            Sysctl::Conf { target, key } => format!(
                "net.ipv4.conf.{}.{}",
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
            ..
        } = self
        {
            let shown = name.replace('.', "/");
            let head = "net.ipv4.conf.";
            if let (Ok(raw), Some(rest)) = (
                super::ifname_to_kernel(name),
                text.strip_prefix(head)
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

/// The per-interface values of every [`ConfKey`]; `None` where unreadable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ConfValues {
    /// `arp_ignore`.
    pub arp_ignore: Option<u32>,
    /// `arp_announce`.
    pub arp_announce: Option<u32>,
    /// `arp_filter`.
    pub arp_filter: Option<u32>,
    /// `rp_filter`.
    pub rp_filter: Option<u32>,
    /// `accept_local`.
    pub accept_local: Option<u32>,
    /// `arp_notify`.
    pub arp_notify: Option<u32>,
}

impl ConfValues {
    /// The value of one key.
    pub fn get(&self, key: ConfKey) -> Option<u32> {
        match key {
            ConfKey::ArpIgnore => self.arp_ignore,
            ConfKey::ArpAnnounce => self.arp_announce,
            ConfKey::ArpFilter => self.arp_filter,
            ConfKey::RpFilter => self.rp_filter,
            ConfKey::AcceptLocal => self.accept_local,
            ConfKey::ArpNotify => self.arp_notify,
        }
    }
    /// Set one key.
    pub fn set(&mut self, key: ConfKey, v: Option<u32>) {
        let slot = match key {
            ConfKey::ArpIgnore => &mut self.arp_ignore,
            ConfKey::ArpAnnounce => &mut self.arp_announce,
            ConfKey::ArpFilter => &mut self.arp_filter,
            ConfKey::RpFilter => &mut self.rp_filter,
            ConfKey::AcceptLocal => &mut self.accept_local,
            ConfKey::ArpNotify => &mut self.arp_notify,
        };
        *slot = v;
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
    /// `net.ipv4.conf.all.*`.
    pub all: ConfValues,
    /// `net.ipv4.conf.default.*`.
    pub default: ConfValues,
    /// `net.ipv4.conf.<iface>.*`, by interface name.
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
    /// The effective value of `key` on `iface` (falls back to `all` when the
    /// interface has no entry).
    pub fn effective(&self, iface: &str, key: ConfKey) -> Option<u32> {
        match self.interfaces.get(iface) {
            Some(c) => c.effective.get(key),
            None => self.all.get(key),
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
