//! A model of NCCL's own GID selection, written from its source, so the advice
//! is what NCCL really does with a given environment on a given GID table.
//!
//! It follows NVIDIA/nccl tag `v2.30.7-1`, `src/transport/net_ib/connect.cc`:
//! `ncclIbGetGidIndex()`, `ncclUpdateGidIndex()`, `envIbAddrFamily()`,
//! `envIbAddrRange()`, `getGidAddrFamily()`, `matchGidAddrPrefix()`,
//! `configuredGid()`, `linkLocalGid()`, `validGid()`, `ncclIbRoceGetVersionNum()`,
//! and the parameter parser `ncclLoadParam()` (`src/misc/param.cc`: `strtoll(str,
//! NULL, 0)`). Behaviour that differs in older releases, from the tags:
//!
//! * before `v2.21.5-1` (`src/transport/net_ib.cc`) `NCCL_IB_GID_INDEX` defaults to
//!   0 and nothing is selected: RoCE uses GID 0 (the link-local RoCE v1 GID);
//! * `v2.21`/`v2.22`: an `NCCL_IB_ADDR_RANGE` without `/` makes `envIbAddrRange`
//!   write through a NULL pointer (`strstr(..) + 1`): the process crashes;
//! * before `v2.26.2-1`: a failed read of `gid_attrs/types/<i>` (the kernel's
//!   `EINVAL` for a slot without attributes, e.g. in a container's sysfs) fails
//!   the device with `ncclSystemError`; from 2.26 the slot is skipped;
//! * from `v2.22.3-1` InfiniBand ports also go through `ncclIbGetGidIndex`: index
//!   `NCCL_IB_ROUTABLE_FLID_GID_INDEX` (default 1) when its GID has a non-zero
//!   FLID, else 0; before, IB ports are addressed by LID and GID 0.
//!
//! The GID table is the snapshot's: slots it omits are empty (all-zero GIDs),
//! up to `gid_tbl_len` (or the highest populated slot when an old snapshot lacks
//! it). A slot whose type the snapshot could not read counts as the kernel's
//! `EINVAL`. Where NCCL reads an uninitialised variable (the current slot's RoCE
//! version when its type read fails), the model takes the comparison as "differs".

use crate::model::{GidType, RdmaPort};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv6Addr};

/// An NCCL release, `major.minor` (the patch level never changes the selection).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub struct NcclVersion {
    /// Major version (2).
    pub major: u32,
    /// Minor version (30).
    pub minor: u32,
}

impl NcclVersion {
    /// The release the model follows (`v2.30.7-1`).
    pub const MODEL: NcclVersion = NcclVersion {
        major: 2,
        minor: 30,
    };
    /// The first release that selects the GID by itself.
    pub const AUTO_GID: NcclVersion = NcclVersion {
        major: 2,
        minor: 21,
    };

    /// Parse `2.30`, `2.30.7`, `2.30.7-1` or `v2.30.7-1`.
    pub fn parse(s: &str) -> Option<NcclVersion> {
        let s = s.trim().trim_start_matches('v');
        let mut it = s.split(['.', '-']);
        let major = it.next()?.parse().ok()?;
        let minor = it.next()?.parse().ok()?;
        Some(NcclVersion { major, minor })
    }

    fn at_least(self, major: u32, minor: u32) -> bool {
        self >= NcclVersion { major, minor }
    }

    /// True when NCCL selects the RoCE GID by itself (2.21 and later).
    pub fn auto_gid(self) -> bool {
        self >= Self::AUTO_GID
    }
}

impl std::fmt::Display for NcclVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// NCCL's environment: variable name -> value, as NCCL sees it (`ncclGetEnv`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NcclEnv {
    /// The variables (only `NCCL_*` ones matter here).
    pub vars: BTreeMap<String, String>,
}

impl NcclEnv {
    /// An environment from pairs.
    pub fn from_pairs<I, K, V>(pairs: I) -> NcclEnv
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        NcclEnv {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// The `NCCL_*` variables of the calling process's environment (values that
    /// are not UTF-8 are skipped).
    pub fn from_process() -> NcclEnv {
        NcclEnv {
            vars: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .filter(|(k, _)| k.starts_with("NCCL_"))
                .collect(),
        }
    }

    /// Parse a file the way NCCL reads `nccl.conf` (`setEnvFile`, param.cc):
    /// one `NAME=value` per line, lines starting with `#` or without `=` ignored,
    /// the value taken literally to the end of the line (no trimming, no quote
    /// removal). The first definition of a name wins, as NCCL's
    /// `setenv(name, value, 0)` does. Lines are bounded at 4095 bytes as NCCL's.
    pub fn parse_conf(text: &str) -> NcclEnv {
        let mut vars = BTreeMap::new();
        for raw in text.split('\n') {
            let line = raw.strip_suffix('\r').unwrap_or(raw);
            let line = truncate(line, 4095);
            if line.starts_with('#') {
                continue;
            }
            let Some((k, v)) = line.split_once('=') else {
                continue;
            };
            let k = truncate(k, 1023);
            let v = truncate(v, 1023);
            vars.entry(k.to_string()).or_insert_with(|| v.to_string());
        }
        NcclEnv { vars }
    }

    /// A variable's value; empty counts as unset for the variables modelled here
    /// (NCCL checks `strlen(env) == 0` for each of them).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// An integer parameter as `ncclLoadParam` reads it (`strtoll(s, NULL, 0)`;
    /// out of range: the default).
    pub fn param(&self, name: &str, default: i64) -> i64 {
        match self.get(name) {
            None => default,
            Some(s) => strtoll(s).unwrap_or(default),
        }
    }
}

fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// C's `strtoll(s, NULL, 0)`: leading whitespace, a sign, `0x` hex, `0` octal or
/// decimal digits up to the first other character; no digits give 0. `None` for
/// `ERANGE` (out of `i64`).
pub fn strtoll(s: &str) -> Option<i64> {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (radix, digits) = if (t.starts_with("0x") || t.starts_with("0X"))
        && t[2..].starts_with(|c: char| c.is_ascii_hexdigit())
    {
        (16, &t[2..])
    } else if t.starts_with('0') {
        (8, t)
    } else {
        (10, t)
    };
    let digits: String = digits.chars().take_while(|c| c.is_digit(radix)).collect();
    if digits.is_empty() {
        return Some(0);
    }
    let v = i128::from_str_radix(&digits, radix).ok()?;
    let v = if neg { -v } else { v };
    i64::try_from(v).ok()
}

/// C's `atoi` (and `strtol(s, NULL, 10)` saturated the same way here).
pub fn atoi(s: &str) -> i64 {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let digits: String = t.chars().take_while(|c| c.is_ascii_digit()).collect();
    let v: i128 = digits.parse().unwrap_or(0);
    let v = if neg { -v } else { v };
    v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// Address family NCCL selects GIDs of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum AddrFamily {
    /// `AF_INET`: IPv4-mapped GIDs.
    Inet,
    /// `AF_INET6`: every other GID.
    Inet6,
}

/// `envIbAddrFamily()`: `AF_INET6` only when the variable says exactly that.
pub fn addr_family(env: &NcclEnv) -> AddrFamily {
    match env.get("NCCL_IB_ADDR_FAMILY") {
        Some("AF_INET6") => AddrFamily::Inet6,
        _ => AddrFamily::Inet,
    }
}

/// What `envIbAddrRange()` made of `NCCL_IB_ADDR_RANGE`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum AddrRange {
    /// Unset, or ignored (invalid address or mask): every GID matches.
    Any,
    /// A prefix; `len` is what `strtol` read (a negative one matches nothing).
    Prefix {
        /// The base address.
        addr: IpAddr,
        /// The mask length.
        len: i64,
    },
    /// NCCL 2.21/2.22 crash on a value without `/`.
    Crash,
}

/// `envIbAddrRange(af)`, with the version's behaviour for a value without `/`.
pub fn addr_range(env: &NcclEnv, af: AddrFamily, version: NcclVersion) -> AddrRange {
    let Some(v) = env.get("NCCL_IB_ADDR_RANGE") else {
        return AddrRange::Any;
    };
    let v = truncate(v, 127);
    let Some((a, m)) = v.split_once('/') else {
        return if version.at_least(2, 23) {
            AddrRange::Any
        } else {
            AddrRange::Crash
        };
    };
    let addr: IpAddr = match af {
        AddrFamily::Inet => match a.parse::<std::net::Ipv4Addr>() {
            Ok(x) => IpAddr::V4(x),
            Err(_) => return AddrRange::Any,
        },
        AddrFamily::Inet6 => match a.parse::<Ipv6Addr>() {
            Ok(x) => IpAddr::V6(x),
            Err(_) => return AddrRange::Any,
        },
    };
    let len = atoi(m);
    let max = if af == AddrFamily::Inet { 32 } else { 128 };
    if len > max {
        return AddrRange::Any;
    }
    AddrRange::Prefix { addr, len }
}

/// `getGidAddrFamily()`: IPv4-mapped (`::ffff:a.b.c.d`) or IPv4-mapped multicast
/// (`ff0e::ffff:a.b.c.d`) GIDs are `AF_INET`, everything else `AF_INET6` (the
/// empty GID included).
pub fn gid_family(g: &Ipv6Addr) -> AddrFamily {
    let w = words(g);
    let mapped = w[0] == 0 && w[1] == 0 && w[2] == 0x0000_ffff;
    let mapped_mc = w[0] == 0xff0e_0000 && w[1] == 0 && w[2] == 0x0000_ffff;
    if mapped || mapped_mc {
        AddrFamily::Inet
    } else {
        AddrFamily::Inet6
    }
}

fn words(g: &Ipv6Addr) -> [u32; 4] {
    let o = g.octets();
    [0, 1, 2, 3].map(|i| u32::from_be_bytes([o[4 * i], o[4 * i + 1], o[4 * i + 2], o[4 * i + 3]]))
}

fn netmask(bits: i64) -> u32 {
    // NETMASK(bits) = htonl(0xffffffff ^ ((1 << (32 - bits)) - 1)), bits in 1..=32.
    if bits >= 32 {
        u32::MAX
    } else {
        u32::MAX ^ ((1u32 << (32 - bits)) - 1)
    }
}

/// `matchGidAddrPrefix()`.
pub fn gid_matches(af: AddrFamily, range: &AddrRange, g: &Ipv6Addr) -> bool {
    let AddrRange::Prefix { addr, len } = range else {
        return true;
    };
    let mut len = *len;
    let gw = words(g);
    match (af, addr) {
        (AddrFamily::Inet, IpAddr::V4(b)) => {
            if len > 0 {
                let m = netmask(len);
                if (u32::from(*b) & m) != (gw[3] & m) {
                    return false;
                }
                len = 0;
            }
        }
        (AddrFamily::Inet6, IpAddr::V6(b)) => {
            let bw = words(b);
            let mut i = 0;
            while len > 0 && i < 4 {
                if len >= 32 {
                    if bw[i] != gw[i] {
                        break;
                    }
                    len -= 32;
                    i += 1;
                } else {
                    let m = netmask(len);
                    if (bw[i] & m) != (gw[i] & m) {
                        break;
                    }
                    len = 0;
                }
            }
        }
        _ => return true,
    }
    len == 0
}

/// `configuredGid()`: not all-zero, and not `fe80::` with a zero remainder.
pub fn configured_gid(g: &Ipv6Addr) -> bool {
    let w = words(g);
    let trailer = w[1] | w[2] | w[3];
    !((w[0] | trailer) == 0 || (w[0] == 0xfe80_0000 && trailer == 0))
}

/// `linkLocalGid()`: in `fe80::/64`.
pub fn link_local_gid(g: &Ipv6Addr) -> bool {
    let w = words(g);
    w[0] == 0xfe80_0000 && w[1] == 0
}

/// `validGid()`.
pub fn valid_gid(g: &Ipv6Addr) -> bool {
    configured_gid(g) && !link_local_gid(g)
}

/// How NCCL's GID selection ends on one port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Selection {
    /// NCCL uses this GID index.
    Index(u32),
    /// NCCL fails on this device (or crashes), for this reason.
    Fails(String),
}

impl Selection {
    /// The index, when NCCL gets one.
    pub fn index(&self) -> Option<u32> {
        match self {
            Selection::Index(i) => Some(*i),
            Selection::Fails(_) => None,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Ver {
    Known(i64),
    /// The read succeeded but named no RoCE version (the variable keeps its
    /// initial value: uninitialised before 2.26 for the candidate, -1 from 2.26).
    Unset,
}

struct Table<'a> {
    port: &'a RdmaPort,
    len: u32,
}

impl Table<'_> {
    fn gid(&self, i: u32) -> Ipv6Addr {
        self.port
            .gids
            .iter()
            .find(|g| g.index == i)
            .map(|g| g.gid)
            .unwrap_or(Ipv6Addr::UNSPECIFIED)
    }
    /// `ncclIbRoceGetVersionNum()`: `Err` when NCCL fails on the read.
    fn version(&self, i: u32, version: NcclVersion) -> Result<Ver, String> {
        let t = self
            .port
            .gids
            .iter()
            .find(|g| g.index == i && !g.gid.is_unspecified())
            .and_then(|g| g.gid_type.as_ref());
        let Some(t) = t else {
            // Empty slot, or a type the kernel would not give: read() fails, EINVAL.
            return if version.at_least(2, 26) {
                Ok(Ver::Unset)
            } else {
                Err(format!(
                    "NCCL {version} fails on the device: reading gid_attrs/types/{i} fails with \
                     EINVAL and ncclIbRoceGetVersionNum returns ncclSystemError (NCCL 2.26 and \
                     later skip the slot)"
                ))
            };
        };
        let text = match t {
            GidType::RoceV1 => "IB/RoCE v1",
            GidType::RoceV2 => "RoCE v2",
            GidType::Ib => "IB",
            GidType::Other(s) => s.as_str(),
        };
        Ok(
            if text.starts_with("IB/RoCE v1") || text.starts_with("RoCE v1") {
                Ver::Known(1)
            } else if text.starts_with("RoCE v2") {
                Ver::Known(2)
            } else {
                Ver::Unset
            },
        )
    }
}

/// The GID table length NCCL walks (`gid_tbl_len`).
pub fn table_len(port: &RdmaPort) -> u32 {
    port.gid_tbl_len
        .unwrap_or_else(|| port.gids.iter().map(|g| g.index + 1).max().unwrap_or(0))
}

/// The GID index NCCL `version` selects on `port` with environment `env`.
pub fn nccl_select_gid(port: &RdmaPort, env: &NcclEnv, version: NcclVersion) -> Selection {
    let t = Table {
        port,
        len: table_len(port),
    };
    if !port.is_roce() {
        if !version.at_least(2, 22) {
            return Selection::Index(0);
        }
        let routable = env.param("NCCL_IB_ROUTABLE_FLID_GID_INDEX", 1);
        if routable >= 0 && routable < i64::from(t.len) {
            let i = routable as u32;
            let o = t.gid(i).octets();
            if u16::from_be_bytes([o[4], o[5]]) != 0 {
                return Selection::Index(i);
            }
        }
        return Selection::Index(0);
    }
    if !version.auto_gid() {
        let i = env.param("NCCL_IB_GID_INDEX", 0);
        return fixed(i, &t);
    }
    let i = env.param("NCCL_IB_GID_INDEX", -1);
    if i >= 0 {
        return fixed(i, &t);
    }
    let af = addr_family(env);
    let want_ver = env.param("NCCL_IB_ROCE_VERSION_NUM", 2);
    let range = addr_range(env, af, version);
    if range == AddrRange::Crash {
        return Selection::Fails(format!(
            "NCCL {version} crashes: NCCL_IB_ADDR_RANGE has no '/' and envIbAddrRange writes \
             through a NULL pointer (fixed in 2.23)"
        ));
    }
    let mut cur = 0u32;
    for cand in 1..t.len {
        let g = t.gid(cur);
        let c = t.gid(cand);
        let fam = gid_family(&g);
        let cfam = gid_family(&c);
        let m = gid_matches(af, &range, &c);
        if cfam != fam && cfam == af && m {
            cur = cand;
            continue;
        }
        if cfam != af || !valid_gid(&c) || !m {
            continue;
        }
        let v = match t.version(cur, version) {
            Ok(v) => v,
            Err(e) => return Selection::Fails(e),
        };
        let cv = match t.version(cand, version) {
            // From 2.26 the candidate's version starts at -1 and stays there.
            Ok(Ver::Unset) if version.at_least(2, 26) => Ver::Known(-1),
            Ok(v) => v,
            Err(e) => return Selection::Fails(e),
        };
        let differs = match (v, cv) {
            (Ver::Known(a), Ver::Known(b)) => a != b,
            _ => true,
        };
        if (differs || !valid_gid(&g)) && cv == Ver::Known(want_ver) {
            cur = cand;
        }
    }
    Selection::Index(cur)
}

fn fixed(i: i64, t: &Table) -> Selection {
    if i < 0 || i >= i64::from(t.len) {
        Selection::Fails(format!(
            "NCCL_IB_GID_INDEX {i} is outside the port's GID table (0..{}): ibv_query_gid fails",
            t.len
        ))
    } else {
        Selection::Index(i as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_number_parsing() {
        assert_eq!(strtoll("3"), Some(3));
        assert_eq!(strtoll(" 3abc"), Some(3));
        assert_eq!(strtoll("abc"), Some(0));
        assert_eq!(strtoll("010"), Some(8));
        assert_eq!(strtoll("0x10"), Some(16));
        assert_eq!(strtoll("0x"), Some(0));
        assert_eq!(strtoll("-1"), Some(-1));
        assert_eq!(strtoll("99999999999999999999"), None);
        assert_eq!(atoi("24"), 24);
        assert_eq!(atoi("2x"), 2);
        assert_eq!(atoi("x"), 0);
        assert_eq!(atoi("-3"), -3);
    }

    #[test]
    fn versions() {
        assert_eq!(
            NcclVersion::parse("v2.30.7-1"),
            Some(NcclVersion {
                major: 2,
                minor: 30
            })
        );
        assert_eq!(
            NcclVersion::parse("2.20"),
            Some(NcclVersion {
                major: 2,
                minor: 20
            })
        );
        assert_eq!(NcclVersion::parse("two"), None);
        assert!(!NcclVersion::parse("2.20").unwrap().auto_gid());
        assert!(NcclVersion::parse("2.21.5").unwrap().auto_gid());
    }

    #[test]
    fn conf_file_is_read_as_nccl_reads_it() {
        let e = NcclEnv::parse_conf(
            "# comment\nNCCL_IB_HCA==mlx5_0\nNCCL_IB_HCA=mlx5_9\nNCCL_IB_TC= 106\nnoequals\n\
             NCCL_SOCKET_IFNAME=\"eno1\"\r\n",
        );
        assert_eq!(e.get("NCCL_IB_HCA"), Some("=mlx5_0"));
        assert_eq!(e.get("NCCL_IB_TC"), Some(" 106"));
        assert_eq!(e.get("NCCL_SOCKET_IFNAME"), Some("\"eno1\""));
        assert_eq!(e.vars.len(), 3);
        assert_eq!(e.param("NCCL_IB_TC", -1), 106);
    }

    #[test]
    fn gid_classes() {
        let p = |s: &str| s.parse::<Ipv6Addr>().unwrap();
        assert_eq!(gid_family(&p("::ffff:198.18.0.1")), AddrFamily::Inet);
        assert_eq!(gid_family(&p("ff0e::ffff:198.18.0.1")), AddrFamily::Inet);
        assert_eq!(gid_family(&p("fe80::1")), AddrFamily::Inet6);
        assert_eq!(gid_family(&p("::")), AddrFamily::Inet6);
        assert!(!configured_gid(&p("::")));
        assert!(!configured_gid(&p("fe80::")));
        assert!(configured_gid(&p("fe80::1")));
        assert!(link_local_gid(&p("fe80::1")) && !valid_gid(&p("fe80::1")));
        assert!(valid_gid(&p("::ffff:198.18.0.1")) && valid_gid(&p("2001:db8::1")));
    }

    #[test]
    fn address_ranges() {
        let v = NcclVersion::MODEL;
        let env = |r: &str| NcclEnv::from_pairs([("NCCL_IB_ADDR_RANGE", r)]);
        let g = "::ffff:198.18.0.11".parse().unwrap();
        let r = addr_range(&env("198.18.0.0/24"), AddrFamily::Inet, v);
        assert!(gid_matches(AddrFamily::Inet, &r, &g));
        let r = addr_range(&env("198.18.1.0/24"), AddrFamily::Inet, v);
        assert!(!gid_matches(AddrFamily::Inet, &r, &g));
        // /0 and unparsable values match everything; a negative mask nothing.
        for any in ["198.18.1.0/0", "nonsense/24", "198.18.1.0/33", "198.18.0.0"] {
            let r = addr_range(&env(any), AddrFamily::Inet, v);
            assert!(gid_matches(AddrFamily::Inet, &r, &g), "{any}");
        }
        let r = addr_range(&env("198.18.0.0/-1"), AddrFamily::Inet, v);
        assert!(!gid_matches(AddrFamily::Inet, &r, &g));
        assert_eq!(
            addr_range(
                &env("198.18.0.0"),
                AddrFamily::Inet,
                NcclVersion::parse("2.22").unwrap()
            ),
            AddrRange::Crash
        );
        let g6 = "2001:db8:0:3::11".parse().unwrap();
        let r = addr_range(&env("2001:db8:0:3::/64"), AddrFamily::Inet6, v);
        assert!(gid_matches(AddrFamily::Inet6, &r, &g6));
        let r = addr_range(&env("2001:db8:0:4::/64"), AddrFamily::Inet6, v);
        assert!(!gid_matches(AddrFamily::Inet6, &r, &g6));
        let r = addr_range(&env("2001:db8::/36"), AddrFamily::Inet6, v);
        assert!(gid_matches(AddrFamily::Inet6, &r, &g6));
    }
}
