//! How NCCL matches `NCCL_IB_HCA` and `NCCL_SOCKET_IFNAME` against device and
//! interface names, from NVIDIA/nccl `v2.30.7-1`:
//!
//! * `src/transport/net_ib/init.cc` (`ncclIbInitDevices`): a leading `^` excludes,
//!   then a leading `=` asks for exact names; `parseStringList` (`src/misc/utils.cc`)
//!   splits the rest on `,` into at most `MAX_IB_DEVS` (32) entries of
//!   `name[:port[:rail[:plane]]]`, skipping entries with an empty name, ports
//!   read with `atoi` (absent or empty: any port); `matchIfList` / `matchIf`
//!   compare the name as a prefix (`strncmp(name, entry, strlen(entry))`) or
//!   exactly, and an empty list selects everything (so `^` alone selects
//!   nothing). Only `ACTIVE` ports of InfiniBand or Ethernet link layer are
//!   considered.
//! * `src/misc/socket.cc` (`ncclFindInterfaces`) and `src/os/linux.cc`
//!   (`ncclOsFindInterfaces`): a value of at most one character is ignored; the
//!   same `^`/`=` prefix rules over at most `MAX_IFS` (16) entries; only running
//!   interfaces (`IFF_RUNNING`) with an IPv4 or IPv6 address (of
//!   `NCCL_SOCKET_FAMILY` when set), IPv6 loopback excluded.

use super::model::atoi;
use serde::{Deserialize, Serialize};

/// `MAX_IB_DEVS` (src/transport/net_ib/common.h).
pub const MAX_IB_DEVS: usize = 32;
/// `MAX_IFS` (src/include/socket.h).
pub const MAX_IFS: usize = 16;
/// `sizeof(netIf.prefix) - 1`.
const PREFIX_MAX: usize = 63;

/// One entry of a parsed list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListEntry {
    /// The name or prefix.
    pub name: String,
    /// The port, `-1` for any.
    pub port: i64,
    /// The entry as written.
    pub text: String,
}

/// A parsed `NCCL_IB_HCA` / `NCCL_SOCKET_IFNAME`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NameList {
    /// Leading `^`: the entries are excluded.
    pub exclude: bool,
    /// Leading `=` (after `^`): names must match exactly.
    pub exact: bool,
    /// The entries NCCL keeps.
    pub entries: Vec<ListEntry>,
    /// Entries past NCCL's limit, which it drops silently.
    pub dropped: Vec<String>,
}

/// Parse a list as NCCL does (`max`: [`MAX_IB_DEVS`] or [`MAX_IFS`]).
pub fn parse_list(value: &str, max: usize) -> NameList {
    let mut v = value;
    let exclude = v.starts_with('^');
    if exclude {
        v = &v[1..];
    }
    let exact = v.starts_with('=');
    if exact {
        v = &v[1..];
    }
    let mut entries = Vec::new();
    let mut dropped = Vec::new();
    // strtok_r: consecutive commas make no empty tokens.
    for tok in v.split(',').filter(|t| !t.is_empty()) {
        let mut parts = tok.splitn(4, ':');
        let name = parts.next().unwrap_or("");
        if name.is_empty() {
            continue;
        }
        if entries.len() >= max {
            dropped.push(tok.to_string());
            continue;
        }
        let port = match parts.next() {
            Some(p) if !p.is_empty() => atoi(p),
            _ => -1,
        };
        let mut n = name.to_string();
        if n.len() > PREFIX_MAX {
            let mut end = PREFIX_MAX;
            while !n.is_char_boundary(end) {
                end -= 1;
            }
            n.truncate(end);
        }
        entries.push(ListEntry {
            name: n,
            port,
            text: tok.to_string(),
        });
    }
    NameList {
        exclude,
        exact,
        entries,
        dropped,
    }
}

impl NameList {
    /// The entry that matches `name`/`port` (`matchIfList`), if any.
    pub fn matching_entry(&self, name: &str, port: i64) -> Option<&ListEntry> {
        self.entries.iter().find(|e| {
            let name_ok = if self.exact {
                name == e.name
            } else {
                name.starts_with(&e.name)
            };
            let port_ok = port == -1 || e.port == -1 || port == e.port;
            name_ok && port_ok
        })
    }

    /// True when NCCL selects `name`/`port` (`matchIfList(..) ^ searchNot`).
    pub fn selects(&self, name: &str, port: i64) -> bool {
        let m = self.entries.is_empty() || self.matching_entry(name, port).is_some();
        m != self.exclude
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hca_lists() {
        let l = parse_list("mlx5_1", MAX_IB_DEVS);
        assert!(l.selects("mlx5_1", 1) && l.selects("mlx5_10", 1) && l.selects("mlx5_15", 1));
        assert!(!l.selects("mlx5_2", 1));
        let l = parse_list("=mlx5_1:1", MAX_IB_DEVS);
        assert!(l.selects("mlx5_1", 1) && !l.selects("mlx5_10", 1) && !l.selects("mlx5_1", 2));
        let l = parse_list("^=mlx5_1", MAX_IB_DEVS);
        assert!(!l.selects("mlx5_1", 1) && l.selects("mlx5_10", 1));
        // `=^` is not an exclusion: the entry's name starts with '^'.
        let l = parse_list("=^mlx5_1", MAX_IB_DEVS);
        assert!(!l.exclude && !l.selects("mlx5_1", 1));
        // `^` alone excludes nothing, so it selects nothing; empty selects all.
        assert!(!parse_list("^", MAX_IB_DEVS).selects("mlx5_0", 1));
        assert!(parse_list("", MAX_IB_DEVS).selects("mlx5_0", 1));
        // Empty names are skipped, ports parsed with atoi.
        let l = parse_list(",:1,,mlx5_0:x,mlx5_2:", MAX_IB_DEVS);
        assert_eq!(l.entries.len(), 2);
        assert_eq!(l.entries[0].port, 0);
        assert_eq!(l.entries[1].port, -1);
        assert!(!l.selects("mlx5_0", 1), "port 0 matches no port");
        let many: Vec<String> = (0..40).map(|i| format!("=d{i}")).collect();
        let l = parse_list(&many.join(","), MAX_IB_DEVS);
        assert_eq!(l.entries.len(), 32);
        assert_eq!(l.dropped.len(), 8);
    }
}
