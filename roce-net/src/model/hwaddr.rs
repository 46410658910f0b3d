use serde::{Deserialize, Deserializer};
use std::fmt;
use std::str::FromStr;

/// A link-layer address: 6 bytes for Ethernet, 20 for InfiniBand, any length in
/// general. Serialised as lowercase colon-separated hex, as `ip` prints it.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct HwAddr(pub Vec<u8>);

impl HwAddr {
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

impl FromStr for HwAddr {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.is_empty() {
            return Ok(HwAddr(Vec::new()));
        }
        s.split(':')
            .map(|p| {
                if p.is_empty() || p.len() > 2 {
                    return Err(format!("invalid hardware address {s:?}: bad byte {p:?}"));
                }
                u8::from_str_radix(p, 16)
                    .map_err(|_| format!("invalid hardware address {s:?}: bad byte {p:?}"))
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
    }
}
