//! The desired state a user writes (YAML, JSON, or a value from Python), validated
//! with field paths.
//!
//! A [`Policy`] says which NICs roce-net manages and how: which address families,
//! ARP sysctls, `rp_filter`, IPv6 settings, one routing table per NIC with a
//! source rule for each of its managed addresses, the neighbour flush, optional
//! tuning, the protocol number that marks ownership, and where the result is
//! persisted. Every section has defaults, so an empty document is a valid policy.
//! Unknown fields are refused everywhere, and every error names the field path
//! (`routing.tables.r1: table 254 is reserved (main)`).
//!
//! The schema reference is `docs/policy.md`.

mod backend;
mod checks;
mod de;
pub(crate) mod glob;
mod host_tuning;
mod json;
mod resolve;
mod schema;
pub(crate) mod yaml;

pub use backend::Backend;
#[cfg(any(test, feature = "testing"))]
pub use schema::DEFAULT_CRITICAL_CHECKS;
pub use schema::{
    ArpPolicy, ConfScope, ExtraRoute, FlushMode, Gateways, HealthPolicy, Ipv6Policy,
    NeighborPolicy, NicSelection, PersistBackend, PersistencePolicy, Policy, RoutingPolicy,
    RpFilter, TuningPolicy,
};
use schema::{MAIN_RULE_PRIORITY, POLICY_VERSION};

pub(crate) use host_tuning::wanted as tuning_wanted;
pub(crate) use resolve::{ForeignObject, Layout, Obstacle};

use crate::error::{Error, ErrorKind, Result};

/// A policy error at a field path.
pub(crate) fn policy_err(path: &str, msg: impl std::fmt::Display) -> Error {
    if path.is_empty() {
        Error::new(ErrorKind::Policy, msg.to_string())
    } else {
        Error::new(ErrorKind::Policy, format!("{path}: {msg}"))
    }
}
impl Policy {
    /// Parse a YAML policy document (an empty document is the default policy).
    /// Refuses duplicate keys, nesting deeper than 64 levels, documents over
    /// 1 MiB, more than one document and a NUL or other control character,
    /// naming the line.
    pub fn from_yaml(text: &str) -> Result<Policy> {
        Policy::from_value(yaml::parse(text)?)
    }

    /// Parse a JSON policy document. Refuses a key given twice in one object,
    /// nesting deeper than 128 levels and documents over 1 MiB.
    pub fn from_json(text: &str) -> Result<Policy> {
        if text.len() > yaml::MAX_BYTES {
            return Err(Error::new(
                ErrorKind::Policy,
                format!(
                    "policy is not valid JSON: the document is {} bytes; at most {} are accepted",
                    text.len(),
                    yaml::MAX_BYTES
                ),
            ));
        }
        let v = json::parse(text)
            .map_err(|e| Error::new(ErrorKind::Policy, format!("policy is not valid JSON: {e}")))?;
        Policy::from_value(v)
    }

    /// Build a policy from a JSON value (e.g. a Python dict converted by the binding).
    /// `null` is the default policy.
    pub fn from_value(v: serde_json::Value) -> Result<Policy> {
        let policy: Policy = if v.is_null() {
            Policy::default()
        } else {
            if !v.is_object() {
                return Err(Error::new(
                    ErrorKind::Policy,
                    "a policy must be a map of sections (nics, arp, rp_filter, routing, ...)",
                ));
            }
            de::from_value(&v).map_err(|e| Error::new(ErrorKind::Policy, e.to_string()))?
        };
        policy.check()?;
        Ok(policy)
    }

    /// Read a policy file; `.json` files are read as JSON, everything else as YAML.
    pub fn load(path: &std::path::Path) -> Result<Policy> {
        let text = crate::input::read_input_text(path, crate::input::InputKind::Policy)?;
        let is_json = path.extension().and_then(|e| e.to_str()) == Some("json");
        let p = if is_json {
            Policy::from_json(&text)
        } else {
            Policy::from_yaml(&text)
        };
        p.map_err(|e| e.context(format!("in policy {}", path.display())))
    }

    /// The policy as a JSON value (every field, defaults filled in).
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// The policy as pretty JSON (every field, defaults filled in).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// The policy as YAML (every field, defaults filled in).
    pub fn to_yaml(&self) -> String {
        yaml::emit(&self.to_value())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_round_trips() {
        let p = Policy::default();
        assert_eq!(Policy::from_value(p.to_value()).unwrap(), p);
        assert_eq!(Policy::from_yaml("").unwrap(), p);
        assert_eq!(Policy::from_yaml("nics: auto\n").unwrap(), p);
        assert_eq!(Policy::from_json("{}").unwrap(), p);
    }

    /// A crash-zeroed policy file is refused, never read as the default policy;
    /// a NUL in JSON is refused as well.
    #[test]
    fn a_file_of_nuls_is_not_the_default_policy() {
        let d = tempfile::tempdir().unwrap();
        for name in ["p.yaml", "p.json"] {
            let f = d.path().join(name);
            std::fs::write(&f, vec![0u8; 4096]).unwrap();
            let e = Policy::load(&f).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Policy, "{e}");
            assert!(e.to_string().contains(name), "{e}");
        }
        assert!(Policy::from_yaml("rp_filter: keep\n\0\nrouting: {enabled: false}\n").is_err());
    }
}
