//! A small serde `Deserializer` over a `serde_json::Value` that remembers where it
//! is, so every error names the field path (`routing.tables.r1`,
//! `routing.extra_routes[0].via`). YAML, JSON and Python values are all turned into
//! a `serde_json::Value` first and decoded through this one path.

use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::fmt;

/// A decoding error with the path of the field it happened at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PathError {
    /// Field path; `None` for the document itself.
    pub(crate) path: Option<String>,
    /// What was wrong.
    pub(crate) msg: String,
}

impl PathError {
    /// Attach a path unless a deeper one is already known.
    fn at(mut self, path: &str) -> PathError {
        if self.path.is_none() && !path.is_empty() {
            self.path = Some(path.to_string());
        }
        self
    }
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.path {
            Some(p) => write!(f, "{p}: {}", self.msg),
            None => f.write_str(&self.msg),
        }
    }
}

impl std::error::Error for PathError {}

impl de::Error for PathError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        // serde's text quotes the offending key or value verbatim: its control
        // characters (a terminal escape in a policy key) are escaped as every
        // other piece of outside text is (`input::escape_cut`).
        let text = msg.to_string();
        let (text, _) = crate::input::escape_cut(text.as_bytes(), usize::MAX, false);
        PathError {
            path: None,
            msg: clip(text, MAX_MSG),
        }
    }
}

/// The longest map key a path shows whole, and the longest message.
const MAX_KEY: usize = 80;
const MAX_MSG: usize = 2048;

/// `s` cut to at most `max` bytes (at a character boundary), saying how long it
/// was: a policy key or value of 40 KB (found by fuzzing) must not become a 40 KB
/// error message, printed twice (in the path and in serde's text).
fn clip(s: String, max: usize) -> String {
    if s.len() <= max {
        return s;
    }
    // Its start and its end (serde's message ends with what was expected).
    let mut end = max / 2;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    let mut start = s.len() - max / 2;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    format!(
        "{}... ({} bytes in all) ...{}",
        &s[..end],
        s.len(),
        &s[start..]
    )
}

/// Join a map key onto a path, quoting keys that would make the path ambiguous
/// (interface names may contain dots).
pub(crate) fn join_key(parent: &str, key: &str) -> String {
    let needs_quotes = key.is_empty()
        || key.contains(['.', '[', ']', ' ', '"', ':'])
        || key.chars().any(char::is_control);
    let k = if needs_quotes {
        format!("{key:?}")
    } else {
        key.to_string()
    };
    let k = clip(k, MAX_KEY);
    if parent.is_empty() {
        k
    } else {
        format!("{parent}.{k}")
    }
}

/// Join a list index onto a path.
pub(crate) fn join_index(parent: &str, i: usize) -> String {
    format!("{parent}[{i}]")
}

/// Decode `T` from a value, with field paths in errors.
pub(crate) fn from_value<T: de::DeserializeOwned>(v: &Value) -> Result<T, PathError> {
    T::deserialize(Tracked {
        v,
        path: String::new(),
    })
}

struct Tracked<'a> {
    v: &'a Value,
    path: String,
}

fn unexpected(v: &Value) -> de::Unexpected<'_> {
    match v {
        Value::Null => de::Unexpected::Unit,
        Value::Bool(b) => de::Unexpected::Bool(*b),
        Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => de::Unexpected::Unsigned(u),
            (_, Some(i), _) => de::Unexpected::Signed(i),
            (_, _, Some(f)) => de::Unexpected::Float(f),
            _ => de::Unexpected::Other("number"),
        },
        Value::String(s) => de::Unexpected::Str(s),
        Value::Array(_) => de::Unexpected::Seq,
        Value::Object(_) => de::Unexpected::Map,
    }
}

impl<'de> de::Deserializer<'de> for Tracked<'_> {
    type Error = PathError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, PathError> {
        match self.v {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) => {
                if let Some(u) = n.as_u64() {
                    visitor.visit_u64(u)
                } else if let Some(i) = n.as_i64() {
                    visitor.visit_i64(i)
                } else {
                    visitor.visit_f64(n.as_f64().unwrap_or(f64::NAN))
                }
            }
            Value::String(s) => visitor.visit_str(s),
            Value::Array(a) => {
                let mut seq = Seq {
                    iter: a.iter().enumerate(),
                    path: &self.path,
                };
                let out = visitor.visit_seq(&mut seq)?;
                let left = seq.iter.len();
                if left > 0 {
                    return Err(de::Error::invalid_length(
                        a.len(),
                        &format!("{} element(s)", a.len() - left).as_str(),
                    ));
                }
                Ok(out)
            }
            Value::Object(m) => visitor.visit_map(Map {
                iter: m.iter(),
                value: None,
                path: &self.path,
            }),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, PathError> {
        match self.v {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, PathError> {
        match self.v {
            Value::String(s) => visitor.visit_enum(s.as_str().into_deserializer()),
            other => Err(de::Error::invalid_type(unexpected(other), &"a string")),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, PathError> {
        visitor.visit_newtype_struct(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map struct
        identifier ignored_any
    }
}

struct Seq<'a, 'p> {
    iter: std::iter::Enumerate<std::slice::Iter<'a, Value>>,
    path: &'p str,
}

impl<'de> SeqAccess<'de> for &mut Seq<'_, '_> {
    type Error = PathError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, PathError> {
        match self.iter.next() {
            None => Ok(None),
            Some((i, v)) => {
                let p = join_index(self.path, i);
                seed.deserialize(Tracked { v, path: p.clone() })
                    .map(Some)
                    .map_err(|e| e.at(&p))
            }
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

struct Map<'a, 'p> {
    iter: serde_json::map::Iter<'a>,
    value: Option<(&'a String, &'a Value)>,
    path: &'p str,
}

impl<'de> MapAccess<'de> for Map<'_, '_> {
    type Error = PathError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, PathError> {
        match self.iter.next() {
            None => Ok(None),
            Some((k, v)) => {
                self.value = Some((k, v));
                let key: de::value::StrDeserializer<'_, PathError> = k.as_str().into_deserializer();
                seed.deserialize(key)
                    .map(Some)
                    .map_err(|e| e.at(&join_key(self.path, k)))
            }
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, PathError> {
        let (k, v) = self
            .value
            .take()
            .ok_or_else(|| <PathError as de::Error>::custom("value asked for before its key"))?;
        let p = join_key(self.path, k);
        seed.deserialize(Tracked { v, path: p.clone() })
            .map_err(|e| e.at(&p))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use std::collections::BTreeMap;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Inner {
        a: u8,
        #[serde(default)]
        m: BTreeMap<String, std::net::IpAddr>,
        #[serde(default)]
        l: Vec<[u64; 2]>,
    }
    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Outer {
        inner: Inner,
    }

    fn err(v: serde_json::Value) -> String {
        from_value::<Outer>(&v).unwrap_err().to_string()
    }

    #[test]
    fn long_keys_and_messages_are_clipped() {
        let key = "t".repeat(40_000);
        let e = crate::Policy::from_value(
            serde_json::json!({"version": 1, "routing": {key.as_str(): 1}}),
        )
        .unwrap_err()
        .to_string();
        assert!(e.len() < 4096, "{} bytes", e.len());
        assert!(e.starts_with("routing.tttt"), "{e}");
        assert!(e.contains("bytes in all)"), "{e}");
        assert!(e.contains("expected one of"), "{e}");
        // Multi-byte characters are cut at a boundary.
        assert_eq!(clip("é".repeat(10), 9), "éé... (20 bytes in all) ...éé");
    }

    /// A policy key or value holding a terminal escape never reaches the
    /// terminal verbatim: not in the path, not in serde's message.
    #[test]
    fn control_characters_in_keys_and_values_are_escaped() {
        for (doc, shows) in [
            (
                serde_json::json!({"version": 1, "routing": {"\u{1b}[31mred": 1}}),
                "routing.\"\\u{1b}[31mred\": unknown field `\\u{1b}[31mred`",
            ),
            (
                serde_json::json!({"version": 1, "routing": {"tab\there": 1}}),
                "routing.\"tab\\there\": unknown field `tab\\there`",
            ),
            (
                serde_json::json!({"version": 1, "routing": {"bell\u{7}": 1}}),
                "routing.\"bell\\u{7}\": unknown field `bell\\u{7}`",
            ),
            (
                serde_json::json!({"version": 1, "rp_filter": "\u{7}loose"}),
                "\\u{7}loose",
            ),
        ] {
            let e = crate::Policy::from_value(doc).unwrap_err().to_string();
            assert!(!e.chars().any(|c| c.is_control()), "{e:?}");
            assert!(e.contains(shows), "{e}");
        }
    }

    #[test]
    fn paths_in_errors() {
        let e = err(serde_json::json!({"inner": {"a": 1, "zz": 2}}));
        assert!(e.starts_with("inner.zz: unknown field `zz`"), "{e}");
        let e = err(serde_json::json!({"inner": {"a": 300}}));
        assert!(
            e.starts_with("inner.a: invalid value: integer `300`"),
            "{e}"
        );
        let e = err(serde_json::json!({"inner": {"a": 1, "m": {"eth0.5": "1.2.3"}}}));
        assert!(
            e.starts_with("inner.m.\"eth0.5\": invalid IP address"),
            "{e}"
        );
        let e = err(serde_json::json!({"inner": {"a": 1, "l": [[1, 2], [1, 2, 3]]}}));
        assert!(e.starts_with("inner.l[1]: invalid length 3"), "{e}");
        let e = err(serde_json::json!({"inner": {}}));
        assert!(e.starts_with("inner: missing field `a`"), "{e}");
        let e = err(serde_json::json!({"x": 1}));
        assert!(e.starts_with("x: unknown field `x`"), "{e}");
    }
}
