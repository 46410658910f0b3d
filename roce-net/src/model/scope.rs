use serde::{Deserialize, Deserializer};
use std::fmt;

/// Route or address scope (`RT_SCOPE_*`), serialised with iproute2's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Scope {
    /// `global` (0): valid everywhere.
    #[default]
    Universe,
    /// `site` (200).
    Site,
    /// `link` (253): valid on the attached link only.
    Link,
    /// `host` (254): valid inside this host only.
    Host,
    /// `nowhere` (255).
    Nowhere,
    /// Any other number.
    Other(u8),
}

impl Scope {
    /// The kernel's number.
    pub fn as_u8(self) -> u8 {
        match self {
            Scope::Universe => 0,
            Scope::Site => 200,
            Scope::Link => 253,
            Scope::Host => 254,
            Scope::Nowhere => 255,
            Scope::Other(n) => n,
        }
    }
    /// From the kernel's number.
    pub fn from_u8(n: u8) -> Scope {
        match n {
            0 => Scope::Universe,
            200 => Scope::Site,
            253 => Scope::Link,
            254 => Scope::Host,
            255 => Scope::Nowhere,
            n => Scope::Other(n),
        }
    }
    /// From iproute2's name or a number.
    pub fn parse(s: &str) -> Option<Scope> {
        Some(match s {
            "global" | "universe" => Scope::Universe,
            "site" => Scope::Site,
            "link" => Scope::Link,
            "host" => Scope::Host,
            "nowhere" => Scope::Nowhere,
            n => Scope::from_u8(n.parse().ok()?),
        })
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::Universe => f.write_str("global"),
            Scope::Site => f.write_str("site"),
            Scope::Link => f.write_str("link"),
            Scope::Host => f.write_str("host"),
            Scope::Nowhere => f.write_str("nowhere"),
            Scope::Other(n) => write!(f, "{n}"),
        }
    }
}

serialize_as_display!(
    Scope,
    "A string (iproute2's name, or the number of a scope without one)."
);

impl<'de> Deserialize<'de> for Scope {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Scope::parse(&s).ok_or_else(|| serde::de::Error::custom(format!("unknown scope {s:?}")))
    }
}
