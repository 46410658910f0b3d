//! The PCI Vital Product Data of an RDMA device's function (`device/vpd`): the
//! identifier string (product name) and the `PN` (part number) keyword.
//!
//! Layout (PCI Local Bus Specification 3.0, section 6.4 and appendix I): a run of
//! resource items. Large items: a tag byte with bit 7 set (`0x82` identifier
//! string, `0x90` read-only VPD-R, `0x91` writable VPD-W), a 16-bit little-endian
//! length, the data. Small items: one byte `0nnnnlll` (name `nnnn`, length `lll`);
//! name 0xF (`0x78`) ends the data. VPD-R/VPD-W data are keywords: two ASCII
//! characters, a length byte, the value.

/// What roce-net keeps of the VPD.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Vpd {
    /// The identifier string (product name), trimmed.
    pub id: Option<String>,
    /// The `PN` keyword, trimmed.
    pub part_number: Option<String>,
}

/// The largest VPD the PCI spec allows (the VPD address register is 15 bits).
pub(crate) const VPD_MAX: usize = 32768;

fn text(b: &[u8]) -> Option<String> {
    let s: String = b
        .iter()
        .take_while(|c| **c != 0)
        .map(|c| {
            if c.is_ascii_graphic() || *c == b' ' {
                *c as char
            } else {
                '?'
            }
        })
        .collect();
    let s = s.trim().to_string();
    (!s.is_empty()).then_some(s)
}

/// Parse VPD bytes; malformed or truncated data yields what was read up to there.
pub(crate) fn parse_vpd(data: &[u8]) -> Vpd {
    let mut out = Vpd::default();
    let mut i = 0;
    while i < data.len() {
        let tag = data[i];
        if tag & 0x80 == 0 {
            // Small resource: 0x78 is the end tag; others are skipped.
            if tag & 0x78 == 0x78 {
                break;
            }
            i += 1 + usize::from(tag & 0x07);
            continue;
        }
        let Some(len) = data.get(i + 1..i + 3) else {
            break;
        };
        let len = usize::from(u16::from_le_bytes([len[0], len[1]]));
        let start = i + 3;
        let end = start.saturating_add(len).min(data.len());
        let body = &data[start..end];
        match tag {
            0x82 => out.id = text(body),
            0x90 | 0x91 => {
                let mut k = 0;
                while k + 3 <= body.len() {
                    let key = &body[k..k + 2];
                    let klen = usize::from(body[k + 2]);
                    let v = &body[k + 3..(k + 3 + klen).min(body.len())];
                    if key == b"PN" && out.part_number.is_none() {
                        out.part_number = text(v);
                    }
                    k += 3 + klen;
                }
            }
            _ => {}
        }
        if end < start + len {
            break;
        }
        i = end;
    }
    out
}

#[cfg(test)]
pub(crate) fn build_vpd(id: &str, fields: &[(&str, &str)]) -> Vec<u8> {
    let mut v = vec![0x82];
    v.extend_from_slice(&(id.len() as u16).to_le_bytes());
    v.extend_from_slice(id.as_bytes());
    let mut r = Vec::new();
    for (k, val) in fields {
        r.extend_from_slice(k.as_bytes());
        r.push(val.len() as u8);
        r.extend_from_slice(val.as_bytes());
    }
    v.push(0x90);
    v.extend_from_slice(&(r.len() as u16).to_le_bytes());
    v.extend_from_slice(&r);
    v.push(0x78);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connectx_vpd() {
        let v = build_vpd(
            "NVIDIA ConnectX-7 HHHL adapter card, 400GbE / NDR IB (default mode), Single-port OSFP, PCIe 5.0 x16",
            &[
                ("PN", "MCX75310AAS-NEAT    "),
                ("EC", "A7"),
                ("SN", "MT2245X00001"),
                ("RV", "\u{1}"),
            ],
        );
        let p = parse_vpd(&v);
        assert!(p.id.as_deref().unwrap().starts_with("NVIDIA ConnectX-7"));
        assert_eq!(p.part_number.as_deref(), Some("MCX75310AAS-NEAT"));
    }

    #[test]
    fn truncated_and_garbage() {
        let v = build_vpd("ConnectX-6 Dx", &[("PN", "MCX623106AN-CDAT")]);
        // Cut inside the VPD-R item: the identifier survives, PN too if complete.
        let p = parse_vpd(&v[..v.len() - 1]);
        assert_eq!(p.id.as_deref(), Some("ConnectX-6 Dx"));
        assert_eq!(p.part_number.as_deref(), Some("MCX623106AN-CDAT"));
        let p = parse_vpd(&v[..10]);
        assert_eq!(p.part_number, None);
        assert_eq!(parse_vpd(&[]), Vpd::default());
        assert_eq!(parse_vpd(&[0xff, 0xff]), Vpd::default());
        assert_eq!(
            parse_vpd(&[0x82, 0xff, 0xff, b'a']).id.as_deref(),
            Some("a")
        );
    }
}
