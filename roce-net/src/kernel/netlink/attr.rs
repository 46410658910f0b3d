//! The one walker of netlink attributes read straight from a message's bytes
//! (link messages in `link.rs`, raw interface names in `names.rs`, DCB replies
//! in `dcb.rs`).
//!
//! An attribute is a `struct nlattr` (include/uapi/linux/netlink.h): a `u16`
//! length that counts the header, a `u16` type whose top two bits are the
//! `NLA_F_NESTED` and `NLA_F_NET_BYTEORDER` flags, then the value, padded to
//! `NLA_ALIGNTO` bytes. The constants are libc's.

use crate::error::{Error, ErrorKind};

/// The attribute header's size (`NLA_HDRLEN`: `struct nlattr`, already aligned).
const NLA_HDRLEN: usize = std::mem::size_of::<libc::nlattr>();
/// The type without its flag bits (`NLA_TYPE_MASK` is a C `int`; its low 16
/// bits are the mask of the `u16` type).
const NLA_TYPE_MASK: u16 = libc::NLA_TYPE_MASK as u16;
/// Attributes start at multiples of `NLA_ALIGNTO` bytes.
const NLA_ALIGNTO: usize = libc::NLA_ALIGNTO as usize;

/// One attribute of the buffer walked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Attr<'a> {
    /// Its type, without the flag bits.
    pub(super) kind: u16,
    /// Its value, without header and padding.
    pub(super) value: &'a [u8],
    /// Where the value starts in the buffer walked.
    pub(super) offset: usize,
}

/// An attribute whose length does not fit the buffer (or its own header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct BadAttr {
    /// Its type, without the flag bits.
    pub(super) kind: u16,
    /// The length it claims.
    pub(super) len: usize,
}

impl BadAttr {
    /// The parse error for an attribute of a `what` message (`link`).
    pub(super) fn error(self, what: &str) -> Error {
        Error::new(
            ErrorKind::Parse,
            format!(
                "a {what} attribute of type {} has a bad length ({})",
                self.kind, self.len
            ),
        )
    }
}

/// The attributes in `buf`, in order; at the first that does not fit, a
/// [`BadAttr`] and then nothing more. A reader that leaves malformed input to
/// another decoder stops there quietly (`.map_while(Result::ok)`); one that
/// decodes reports it. A trailing piece shorter than a header is not an
/// attribute and ends the walk.
pub(super) fn attributes(buf: &[u8]) -> impl Iterator<Item = Result<Attr<'_>, BadAttr>> {
    let mut off = 0;
    std::iter::from_fn(move || {
        let hdr = buf.get(off..off + NLA_HDRLEN)?;
        let len = usize::from(u16::from_ne_bytes([hdr[0], hdr[1]]));
        let kind = u16::from_ne_bytes([hdr[2], hdr[3]]) & NLA_TYPE_MASK;
        let Some(value) = buf
            .get(off + NLA_HDRLEN..off + len)
            .filter(|_| len >= NLA_HDRLEN)
        else {
            off = buf.len();
            return Some(Err(BadAttr { kind, len }));
        };
        let at = off + NLA_HDRLEN;
        off += len.next_multiple_of(NLA_ALIGNTO);
        Some(Ok(Attr {
            kind,
            value,
            offset: at,
        }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One attribute as the kernel lays it out (`nla_put`): header, value,
    /// padding to four bytes.
    fn attr(kind: u16, value: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&(4 + value.len() as u16).to_ne_bytes());
        v.extend_from_slice(&kind.to_ne_bytes());
        v.extend_from_slice(value);
        v.resize(v.len().next_multiple_of(4), 0);
        v
    }

    #[test]
    fn attributes_in_order_with_flags_masked_and_padding_skipped() {
        let mut buf = attr(3, b"eth0\0");
        // NLA_F_NESTED (0x8000) on type 26 (IFLA_AF_SPEC).
        buf.extend(attr(0x8000 | 26, &attr(2, &[1, 0, 0, 0])));
        buf.extend(attr(4, &1500u32.to_ne_bytes()));
        let got: Vec<Attr> = attributes(&buf).map(|a| a.unwrap()).collect();
        assert_eq!(got.iter().map(|a| a.kind).collect::<Vec<_>>(), [3, 26, 4]);
        assert_eq!(got[0].value, b"eth0\0");
        assert_eq!(got[0].offset, 4);
        // 4 + 5 bytes, padded to 12: the next header at 12, its value at 16.
        assert_eq!(got[1].offset, 16);
        let inner: Vec<Attr> = attributes(got[1].value).map(|a| a.unwrap()).collect();
        assert_eq!((inner[0].kind, inner[0].value), (2, &[1, 0, 0, 0][..]));
        assert_eq!(got[2].value, 1500u32.to_ne_bytes());
        assert_eq!(attributes(&[]).count(), 0);
        // Fewer bytes than a header: not an attribute.
        assert_eq!(attributes(&[8, 0]).count(), 0);
    }

    #[test]
    fn a_bad_length_ends_the_walk_with_an_error() {
        let mut buf = attr(1, &[1, 2, 3, 4]);
        // Claims 200 bytes where 8 are left.
        buf.extend_from_slice(&200u16.to_ne_bytes());
        buf.extend_from_slice(&4u16.to_ne_bytes());
        buf.extend_from_slice(&[0; 4]);
        buf.extend(attr(5, &[9]));
        let got: Vec<_> = attributes(&buf).collect();
        assert_eq!(got.len(), 2);
        assert!(got[0].is_ok());
        assert_eq!(got[1], Err(BadAttr { kind: 4, len: 200 }));
        assert_eq!(
            got[1].unwrap_err().error("link").to_string(),
            "a link attribute of type 4 has a bad length (200)"
        );
        // Shorter than its own header.
        let short = [2u8, 0, 7, 0, 0, 0];
        assert_eq!(
            attributes(&short).collect::<Vec<_>>(),
            [Err(BadAttr { kind: 7, len: 2 })]
        );
        // Stopping quietly, as the name reader and the DCB decoder do.
        assert_eq!(attributes(&buf).map_while(Result::ok).count(), 1);
    }
}
