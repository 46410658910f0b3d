use serde::{Deserialize, Deserializer};
use std::fmt;
use std::str::FromStr;

/// A link-layer address: 6 bytes for Ethernet, 20 for InfiniBand, any length in
/// general. Serialised as lowercase colon-separated hex, as `ip` prints it.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct HwAddr(pub Vec<u8>);

impl HwAddr {
    /// A MAC as a node's network configuration writes it (netplan
    /// `macaddress:`, networkd `MACAddress=`, NetworkManager `mac-address=`):
    /// colon or hyphen notation (a one-digit byte allowed, as
    /// `ether_aton(3)` allows), or Cisco's dotted `xxxx.xxxx.xxxx`; blanks
    /// and double quotes around it ignored. `None` when it is not one.
    pub(crate) fn from_config(s: &str) -> Option<HwAddr> {
        let s = s.trim().trim_matches('"');
        let hex: String = if s.contains('.') && s.len() == 14 {
            s.split('.').collect()
        } else {
            s.split([':', '-']).map(|p| format!("{p:0>2}")).collect()
        };
        hex_pairs(&hex).map(HwAddr)
    }

    /// True when every byte is zero (e.g. loopback's address).
    pub fn is_zero(&self) -> bool {
        self.0.iter().all(|b| *b == 0)
    }
    /// The raw bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Display for HwAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, b) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(":")?;
            }
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for HwAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HwAddr({self})")
    }
}

/// Bytes from hex digits two by two; `None` for an odd count or a non-hex pair.
fn hex_pairs(hex: &str) -> Option<Vec<u8>> {
    if hex.len() % 2 != 0 {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

/// `ip`'s notation: bytes of one or two hex digits separated by colons, any
/// number of them (an empty string is the empty address).
impl FromStr for HwAddr {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.is_empty() {
            return Ok(HwAddr(Vec::new()));
        }
        s.split(':')
            .map(|p| match hex_pairs(&format!("{p:0>2}")).as_deref() {
                Some(&[b]) if !p.is_empty() => Ok(b),
                _ => Err(format!("invalid hardware address {s:?}: bad byte {p:?}")),
            })
            .collect::<Result<Vec<u8>, String>>()
            .map(HwAddr)
    }
}

serialize_as_display!(
    HwAddr,
    "A string (colon-separated hex bytes, as `ip` prints them)."
);

impl<'de> Deserialize<'de> for HwAddr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn round_trip() {
        let m: HwAddr = "02:aa:00:0f:10:ff".parse().unwrap();
        assert_eq!(m.0, vec![2, 0xaa, 0, 0x0f, 0x10, 0xff]);
        assert_eq!(m.to_string(), "02:aa:00:0f:10:ff");
        assert!("02:zz".parse::<HwAddr>().is_err());
        assert!("02::00".parse::<HwAddr>().is_err());
        assert!("02:a:0".parse::<HwAddr>().is_ok_and(|m| m.0 == [2, 0xa, 0]));
        assert!("02:abc".parse::<HwAddr>().is_err());
        assert!(
            "02-00".parse::<HwAddr>().is_err(),
            "ip's notation is colons only"
        );
        assert_eq!("".parse::<HwAddr>(), Ok(HwAddr(Vec::new())));
    }

    #[test]
    fn macs_in_every_configuration_notation() {
        let want = Some(HwAddr(vec![0x02, 0, 0, 0, 0xab, 0x01]));
        assert_eq!(HwAddr::from_config("02:00:00:00:ab:01"), want);
        assert_eq!(HwAddr::from_config("02-00-00-00-AB-01"), want);
        assert_eq!(HwAddr::from_config("0200.0000.ab01"), want);
        assert_eq!(HwAddr::from_config(" \"2:0:0:0:ab:1\" "), want);
        assert_eq!(HwAddr::from_config("zz"), None);
        assert_eq!(HwAddr::from_config("02:0"), Some(HwAddr(vec![2, 0])));
    }
}
