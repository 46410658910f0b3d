//! Interface names as the model keeps them: any kernel name, losslessly, as text.
//!
//! The kernel accepts any bytes in an interface name except NUL, `/`, `:` and
//! whitespace (`dev_valid_name()`, net/core/dev.c), so a name need not be UTF-8
//! (`ip link add $'r\xff' type dummy`) and may hold control characters. The model
//! keeps names as `String`s in one documented escaping that round-trips:
//!
//! - a backslash is written `\\`;
//! - a byte that is not part of valid UTF-8, and every byte of a control character
//!   (U+0000–U+001F, U+007F–U+009F), is written `\xNN` (two lowercase hex digits);
//! - everything else is itself.
//!
//! So `eth0` is `eth0`, the bytes `r 0xff` are `r\xff`, and a literal name `a\b` is
//! `a\\b`. [`ifname_from_kernel`] escapes, [`ifname_to_kernel`] gives back the exact
//! bytes for every write to the kernel (netlink names, `/proc/sys/net/.../conf/<name>`
//! paths). The escaped form is also what is shown, so a name never reaches a
//! terminal raw.

use crate::error::{Error, ErrorKind, Result};

/// The model's (escaped) form of a kernel interface name; see the module docs.
pub fn ifname_from_kernel(raw: &[u8]) -> String {
    // Fast path: plain printable UTF-8 without backslashes is kept as is.
    if let Ok(s) = std::str::from_utf8(raw) {
        if !s.chars().any(|c| c == '\\' || c.is_control()) {
            return s.to_string();
        }
    }
    let mut out = String::with_capacity(raw.len() + 8);
    for chunk in raw.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c == '\\' {
                out.push_str("\\\\");
            } else if c.is_control() {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("\\x{b:02x}"));
                }
            } else {
                out.push(c);
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// The exact bytes of the kernel name that `name` (the model's escaped form) stands
/// for. Fails on a backslash that starts neither `\\` nor `\xNN`.
pub fn ifname_to_kernel(name: &str) -> Result<Vec<u8>> {
    let b = name.as_bytes();
    if !b.contains(&b'\\') {
        return Ok(b.to_vec());
    }
    let bad = || {
        Error::new(
            ErrorKind::InvalidInput,
            format!(
                "interface name {} has an invalid escape: write a backslash as \\\\ and \
                 a raw byte as \\xNN",
                crate::input::excerpt(name, 64)
            ),
        )
    };
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        match b.get(i + 1) {
            Some(b'\\') => {
                out.push(b'\\');
                i += 2;
            }
            Some(b'x') => {
                let hex = b.get(i + 2..i + 4).ok_or_else(bad)?;
                let hex = std::str::from_utf8(hex).map_err(|_| bad())?;
                out.push(u8::from_str_radix(hex, 16).map_err(|_| bad())?);
                i += 4;
            }
            _ => return Err(bad()),
        }
    }
    Ok(out)
}

/// Whether the kernel would accept `raw` as an interface name
/// (`dev_valid_name()`: 1–15 bytes, not `.` or `..`, no NUL, `/`, `:` or
/// whitespace as the kernel's `isspace` sees it, which includes 0xA0).
pub fn ifname_is_valid(raw: &[u8]) -> bool {
    // The kernel's ctype table (lib/ctype.c) marks 0x09-0x0d, 0x20 and 0xa0 as space.
    let space = |c: u8| matches!(c, 0x09..=0x0d | 0x20 | 0xa0);
    !raw.is_empty()
        && raw.len() < 16
        && raw != b"."
        && raw != b".."
        && !raw
            .iter()
            .any(|&c| c == 0 || c == b'/' || c == b':' || space(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_are_unchanged() {
        for n in ["eth0", "enp1s0f0np0", "mlx5.100", "ü-nic"] {
            assert_eq!(ifname_from_kernel(n.as_bytes()), n);
            assert_eq!(ifname_to_kernel(n).unwrap(), n.as_bytes());
        }
    }

    #[test]
    fn raw_bytes_controls_and_backslashes_round_trip() {
        let cases: [(&[u8], &str); 5] = [
            (b"r\xff", "r\\xff"),
            (b"a\\b", "a\\\\b"),
            (b"e\x1b[2J", "e\\x1b[2J"),
            (b"\xc2\x85x", "\\xc2\\x85x"),
            (b"r\\xff", "r\\\\xff"),
        ];
        for (raw, shown) in cases {
            assert_eq!(ifname_from_kernel(raw), shown);
            assert_eq!(ifname_to_kernel(shown).unwrap(), raw);
        }
        // The two that look alike stay apart.
        assert_ne!(ifname_from_kernel(b"r\xff"), ifname_from_kernel(b"r\\xff"));
    }

    #[test]
    fn bad_escapes_are_refused() {
        for s in ["a\\", "a\\q", "a\\x4", "a\\xzz"] {
            let e = ifname_to_kernel(s).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{s}");
        }
        // Upper-case hex is accepted on input.
        assert_eq!(ifname_to_kernel("\\xFF").unwrap(), b"\xff");
    }

    #[test]
    fn kernel_validity() {
        assert!(ifname_is_valid(b"r\xff"));
        assert!(ifname_is_valid(b"a\x01"));
        for bad in [
            &b""[..],
            b".",
            b"..",
            b"a/b",
            b"a:1",
            b"a b",
            b"a\xa0",
            b"0123456789abcdef",
        ] {
            assert!(!ifname_is_valid(bad), "{bad:?}");
        }
        assert!(ifname_is_valid(b"0123456789abcde"));
    }
}
