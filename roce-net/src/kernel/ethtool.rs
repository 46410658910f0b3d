//! A netdev's driver statistics (`ethtool -S`) over the ethtool ioctl
//! (`SIOCETHTOOL`): `ETHTOOL_GSSET_INFO` for the count of `ETH_SS_STATS` strings,
//! `ETHTOOL_GSTRINGS` for their names, `ETHTOOL_GSTATS` for the values, exactly
//! the calls `ethtool -S` makes (ethtool 6.x `do_gnicstats`). Ethtool netlink has
//! no message for these driver-defined statistics.
//!
//! Kernels before the December 2025 fix in `net/ethtool/ioctl.c` copy as many
//! entries as the driver has *now*, whatever the caller sized its buffer for; a
//! driver whose count grows between the calls (channels reconfigured) would
//! overrun it. The buffers here are therefore twice the announced count plus a
//! margin, the request asks for "whatever you have" (length 0, which the fixed
//! kernels also accept), and a reply whose strings and values disagree in number
//! is read again. Counts are bounded ([`MAX_STATS`]).

use std::io;
use std::os::fd::RawFd;

const SIOCETHTOOL: libc::c_ulong = 0x8946;
const ETHTOOL_GSTRINGS: u32 = 0x1b;
const ETHTOOL_GSTATS: u32 = 0x1d;
const ETHTOOL_GSSET_INFO: u32 = 0x37;
const ETH_SS_STATS: u32 = 1;
const ETH_GSTRING_LEN: usize = 32;

/// The most statistics accepted from one netdev (mlx5 with 256 channels has
/// about 20000).
pub(crate) const MAX_STATS: usize = 1 << 16;
const ATTEMPTS: usize = 3;

fn ifreq(ifname: &str, data: *mut libc::c_void) -> io::Result<libc::ifreq> {
    // The kernel's bytes of the model's (escaped) name: `r\x1b` is ESC.
    let raw = crate::model::ifname_to_kernel(ifname)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
    let b = raw.as_slice();
    if b.is_empty() || b.len() >= libc::IFNAMSIZ || b.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{ifname:?} is not a valid interface name"),
        ));
    }
    // SAFETY: an all-zero ifreq is valid; the name stays NUL-terminated.
    let mut r: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in r.ifr_name.iter_mut().zip(b) {
        *d = *s as libc::c_char;
    }
    r.ifr_ifru.ifru_data = data as *mut libc::c_char;
    Ok(r)
}

/// Run one `SIOCETHTOOL` command whose argument is `buf`.
fn ethtool(fd: RawFd, ifname: &str, buf: &mut [u64]) -> io::Result<()> {
    let mut r = ifreq(ifname, buf.as_mut_ptr() as *mut libc::c_void)?;
    // SAFETY: `r` is a valid ifreq naming the interface, pointing at `buf`, which
    // is large enough for the command's reply (see the module documentation).
    let rc = unsafe { libc::ioctl(fd, SIOCETHTOOL as _, &mut r) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn u32_at(buf: &[u64], byte: usize) -> u32 {
    let w = buf[byte / 8].to_ne_bytes();
    let o = byte % 8;
    u32::from_ne_bytes([w[o], w[o + 1], w[o + 2], w[o + 3]])
}

fn set_u32(buf: &mut [u64], byte: usize, v: u32) {
    let mut w = buf[byte / 8].to_ne_bytes();
    let o = byte % 8;
    w[o..o + 4].copy_from_slice(&v.to_ne_bytes());
    buf[byte / 8] = u64::from_ne_bytes(w);
}

/// How many `ETH_SS_STATS` strings the driver has; `None` when it has none.
fn stats_count(fd: RawFd, ifname: &str) -> io::Result<Option<usize>> {
    // struct ethtool_sset_info { u32 cmd; u32 reserved; u64 sset_mask; u32 data[1]; }
    let mut buf = [0u64; 3];
    set_u32(&mut buf, 0, ETHTOOL_GSSET_INFO);
    buf[1] = 1 << ETH_SS_STATS;
    match ethtool(fd, ifname, &mut buf) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => return Ok(None),
        Err(e) => return Err(e),
    }
    if buf[1] & (1 << ETH_SS_STATS) == 0 {
        return Ok(None);
    }
    let n = u32_at(&buf, 16) as usize;
    if n > MAX_STATS {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("the driver announces {n} statistics, more than the {MAX_STATS} accepted"),
        ));
    }
    Ok((n > 0).then_some(n))
}

/// Decode `ETH_GSTRING_LEN`-byte NUL-padded names.
pub(crate) fn decode_strings(bytes: &[u8], n: usize) -> Vec<String> {
    bytes
        .chunks(ETH_GSTRING_LEN)
        .take(n)
        .map(|c| {
            let end = c.iter().position(|b| *b == 0).unwrap_or(c.len());
            String::from_utf8_lossy(&c[..end]).into_owned()
        })
        .collect()
}

/// Pair names with values; a name the driver repeats keeps its first value
/// (`ethtool -S` prints both lines).
pub(crate) fn pair(names: Vec<String>, values: &[u64]) -> std::collections::BTreeMap<String, u64> {
    let mut out = std::collections::BTreeMap::new();
    for (n, v) in names.into_iter().zip(values) {
        out.entry(n).or_insert(*v);
    }
    out
}

/// The driver's statistics of `ifname` in the namespace of `fd` (any socket of
/// that namespace), as `ethtool -S` lists them, in the driver's order. `None` when
/// the driver has no statistics (`EOPNOTSUPP`, or a zero count).
pub(crate) fn driver_stats(fd: RawFd, ifname: &str) -> io::Result<Option<Vec<(String, u64)>>> {
    for _ in 0..ATTEMPTS {
        let Some(n) = stats_count(fd, ifname)? else {
            return Ok(None);
        };
        let cap = n * 2 + 64;
        // struct ethtool_gstrings { u32 cmd; u32 string_set; u32 len; u8 data[]; }
        let mut sbuf = vec![0u64; (12 + cap * ETH_GSTRING_LEN).div_ceil(8)];
        set_u32(&mut sbuf, 0, ETHTOOL_GSTRINGS);
        set_u32(&mut sbuf, 4, ETH_SS_STATS);
        set_u32(&mut sbuf, 8, 0);
        ethtool(fd, ifname, &mut sbuf)?;
        let ns = u32_at(&sbuf, 8) as usize;
        // struct ethtool_stats { u32 cmd; u32 n_stats; u64 data[]; }
        let mut vbuf = vec![0u64; 1 + cap];
        set_u32(&mut vbuf, 0, ETHTOOL_GSTATS);
        set_u32(&mut vbuf, 4, 0);
        ethtool(fd, ifname, &mut vbuf)?;
        let nv = u32_at(&vbuf, 4) as usize;
        if ns > cap || nv > cap {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the driver's statistics grew from {n} to {} while being read",
                    ns.max(nv)
                ),
            ));
        }
        if ns != nv || ns == 0 {
            // The set changed between the calls (or the fixed kernel refused a
            // mismatched length): read it again.
            continue;
        }
        // SAFETY: the bytes of a Vec<u64> are initialised; reading them as u8 is fine.
        let bytes: &[u8] =
            unsafe { std::slice::from_raw_parts(sbuf.as_ptr() as *const u8, sbuf.len() * 8) };
        let names = decode_strings(&bytes[12..12 + ns * ETH_GSTRING_LEN], ns);
        let values = &vbuf[1..1 + nv];
        return Ok(Some(
            names.into_iter().zip(values.iter().copied()).collect(),
        ));
    }
    Err(io::Error::new(
        io::ErrorKind::Interrupted,
        format!("the driver's statistics kept changing while being read ({ATTEMPTS} attempts)"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_nul_padded_and_duplicates_keep_the_first() {
        let mut b = vec![0u8; 3 * ETH_GSTRING_LEN];
        b[..12].copy_from_slice(b"peer_ifindex");
        b[32..32 + 22].copy_from_slice(b"rx_queue_0_xdp_packets");
        b[64..64 + 12].copy_from_slice(b"peer_ifindex");
        let names = decode_strings(&b, 3);
        assert_eq!(
            names,
            ["peer_ifindex", "rx_queue_0_xdp_packets", "peer_ifindex"]
        );
        let m = pair(names, &[5, 0, 9]);
        assert_eq!(m.len(), 2);
        assert_eq!(m["peer_ifindex"], 5);
        // A full 32-byte name has no NUL.
        let full = [b'a'; 32];
        assert_eq!(decode_strings(&full, 1), ["a".repeat(32)]);
    }

    #[test]
    fn bad_interface_names_are_refused_before_the_ioctl() {
        for bad in ["", "a-name-longer-than-15", "nul\0x"] {
            let e = driver_stats(-1, bad).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{bad:?}");
        }
    }
}
