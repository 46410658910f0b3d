//! JSON policy documents read into a [`serde_json::Value`] that refuses a key
//! given twice in one object.
//!
//! `serde_json::Value` keeps the last of two equal keys, so a second `"routing"`
//! would silently drop the first (the YAML reader, `yaml.rs`, refuses the same).
//! Nesting is bounded by serde_json's own recursion limit (128 levels), the size
//! by the caller ([`super::yaml::MAX_BYTES`]).

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::fmt;

/// A JSON value whose objects had no repeated key.
pub(crate) struct Strict(pub(crate) Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom(format!("{v} is not a finite number")))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Strict::deserialize(d).map(|s| s.0)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(Strict(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(de::Error::custom(format!(
                    "duplicate key {}; give each key once",
                    crate::input::excerpt(&key, 64)
                )));
            }
            let Strict(v) = map.next_value()?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

/// Parse `text` as one JSON value, refusing repeated keys.
pub(crate) fn parse(text: &str) -> serde_json::Result<Value> {
    let mut d = serde_json::Deserializer::from_str(text);
    let Strict(v) = Strict::deserialize(&mut d)?;
    d.end()?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_keys_are_refused_at_any_depth() {
        let e = parse(r#"{"routing": {"table_base": 2000}, "routing": {"enabled": false}}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("duplicate key \"routing\""), "{e}");
        assert!(e.contains("line 1 column"), "names where: {e}");
        let e = parse(r#"{"routing": {"tables": {"r1": 1001, "r1": 1002}}}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("duplicate key \"r1\""), "{e}");
        // The same key in different objects is fine, and values are kept exactly.
        let v = parse(r#"{"a": {"x": 1}, "b": {"x": -2.5, "y": [true, null, "s"]}}"#).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"a": {"x": 1}, "b": {"x": -2.5, "y": [true, null, "s"]}})
        );
    }

    #[test]
    fn deep_nesting_and_trailing_text_are_refused() {
        let deep = "[".repeat(100_000) + &"]".repeat(100_000);
        assert!(parse(&deep)
            .unwrap_err()
            .to_string()
            .contains("recursion limit"));
        assert!(parse("{} {}").is_err());
    }
}
