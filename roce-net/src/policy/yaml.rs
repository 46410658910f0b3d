//! YAML policy documents, read into a `serde_json::Value` (which `de.rs` turns
//! into a [`super::Policy`] with field paths) and written back.
//!
//! Reading walks the events of `yaml-rust2`'s parser (a state machine, no
//! recursion) and builds the value itself, so that it can refuse what a policy
//! must never be: a mapping with the same key twice (`routing:` twice would
//! silently keep one of them), nesting deeper than [`MAX_DEPTH`], a document over
//! [`MAX_BYTES`], more than [`MAX_NODES`] nodes (aliases count with what they
//! expand to, so an alias bomb stops early), more than one document, non-scalar
//! keys, tags other than the core schema's, and characters YAML does not allow
//! in a stream (a NUL byte, other control characters: the scanner would stop at a
//! NUL and hand back only what came before it, and a crash-zeroed file would read
//! as the empty, default policy). Every error names the line.
//!
//! Plain scalars are resolved by the YAML 1.2 core schema (`null`/`~`/empty,
//! `true`/`false` in three spellings, decimal, `0o` and `0x` integers, floats,
//! `.inf`, `.nan`); quoted scalars are strings.

use crate::error::{Error, ErrorKind, Result};
use serde_json::{Map, Number, Value};
use std::collections::HashMap;
use yaml_rust2::parser::{Event, Parser, Tag};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// Deepest nesting of mappings and sequences accepted (a policy needs 4).
pub const MAX_DEPTH: usize = 64;
/// Largest document accepted, in bytes.
pub const MAX_BYTES: usize = 1 << 20;
/// Most nodes (scalars, mappings, sequences, with aliases expanded) accepted.
pub const MAX_NODES: usize = 100_000;

fn err(at: Option<&Marker>, msg: impl std::fmt::Display) -> Error {
    let text = match at {
        Some(m) => format!(
            "policy is not valid YAML: line {} column {}: {msg}",
            m.line(),
            m.col() + 1
        ),
        None => format!("policy is not valid YAML: {msg}"),
    };
    Error::new(ErrorKind::Policy, text)
}

/// A node being built: a mapping (with where each key was first seen and the
/// key waiting for its value) or a sequence.
enum Open {
    Map {
        map: Map<String, Value>,
        lines: HashMap<String, usize>,
        key: Option<String>,
        anchor: usize,
    },
    Seq {
        seq: Vec<Value>,
        anchor: usize,
    },
}

/// Parse one YAML document into a JSON value (`Null` for an empty stream).
pub fn parse(text: &str) -> Result<Value> {
    if text.len() > MAX_BYTES {
        return Err(err(
            None,
            format!(
                "the document is {} bytes; at most {MAX_BYTES} are accepted",
                text.len()
            ),
        ));
    }
    check_characters(text)?;
    let mut parser = Parser::new_from_str(text);
    let mut stack: Vec<Open> = Vec::new();
    let mut anchors: HashMap<usize, Value> = HashMap::new();
    let mut nodes = 0usize;
    let mut docs = 0usize;
    let mut result: Option<Value> = None;
    loop {
        let (ev, mark) = parser.next_token().map_err(|e| {
            // The scanner looks ahead over flow collections and stops at its own
            // depth limit before handing out their events.
            if e.info() == "recursion limit exceeded" {
                err(
                    Some(e.marker()),
                    format!("nested deeper than {MAX_DEPTH} levels"),
                )
            } else {
                err(Some(e.marker()), e.info())
            }
        })?;
        let value = match ev {
            Event::StreamStart | Event::Nothing | Event::DocumentEnd => continue,
            Event::StreamEnd => break,
            Event::DocumentStart => {
                docs += 1;
                if docs > 1 {
                    return Err(err(
                        Some(&mark),
                        "a second document (`---`); a policy is one document",
                    ));
                }
                continue;
            }
            Event::MappingStart(anchor, ref tag) | Event::SequenceStart(anchor, ref tag) => {
                let is_map = matches!(ev, Event::MappingStart(..));
                check_collection_tag(tag.as_ref(), is_map, &mark)?;
                nodes += 1;
                if nodes > MAX_NODES {
                    return Err(err(Some(&mark), format!("more than {MAX_NODES} nodes")));
                }
                if stack.len() >= MAX_DEPTH {
                    return Err(err(
                        Some(&mark),
                        format!("nested deeper than {MAX_DEPTH} levels"),
                    ));
                }
                stack.push(if is_map {
                    Open::Map {
                        map: Map::new(),
                        lines: HashMap::new(),
                        key: None,
                        anchor,
                    }
                } else {
                    Open::Seq {
                        seq: Vec::new(),
                        anchor,
                    }
                });
                continue;
            }
            Event::MappingEnd | Event::SequenceEnd => {
                let (v, anchor) = match stack.pop() {
                    Some(Open::Map { map, anchor, .. }) => (Value::Object(map), anchor),
                    Some(Open::Seq { seq, anchor }) => (Value::Array(seq), anchor),
                    None => return Err(err(Some(&mark), "unbalanced end of a collection")),
                };
                if anchor > 0 {
                    anchors.insert(anchor, v.clone());
                }
                v
            }
            Event::Scalar(s, style, anchor, tag) => {
                nodes += 1;
                if nodes > MAX_NODES {
                    return Err(err(Some(&mark), format!("more than {MAX_NODES} nodes")));
                }
                // A mapping key stays text, whatever it looks like.
                if let Some(Open::Map { key: None, .. }) = stack.last() {
                    if tag.is_some() {
                        return Err(err(Some(&mark), "tags on mapping keys are not supported"));
                    }
                    set_key(&mut stack, s, &mark)?;
                    continue;
                }
                let v = scalar(&s, style, tag.as_ref(), &mark)?;
                if anchor > 0 {
                    anchors.insert(anchor, v.clone());
                }
                v
            }
            Event::Alias(id) => {
                let Some(v) = anchors.get(&id) else {
                    return Err(err(Some(&mark), "alias to an unknown anchor"));
                };
                nodes = nodes.saturating_add(size(v));
                if nodes > MAX_NODES {
                    return Err(err(
                        Some(&mark),
                        format!("more than {MAX_NODES} nodes once aliases are expanded"),
                    ));
                }
                if let Some(Open::Map { key: None, .. }) = stack.last() {
                    let Value::String(k) = v else {
                        return Err(err(Some(&mark), "mapping keys must be scalars"));
                    };
                    let k = k.clone();
                    set_key(&mut stack, k, &mark)?;
                    continue;
                }
                v.clone()
            }
        };
        // Attach the finished value to its parent, or make it the document.
        match stack.last_mut() {
            None => result = Some(value),
            Some(Open::Seq { seq, .. }) => seq.push(value),
            Some(Open::Map { map, key, .. }) => match key.take() {
                Some(k) => {
                    map.insert(k, value);
                }
                None => return Err(err(Some(&mark), "mapping keys must be scalars")),
            },
        }
    }
    Ok(result.unwrap_or(Value::Null))
}

/// Refuse a character outside YAML's printable set (`c-printable`: tab, line
/// feed, carriage return, U+0020..U+007E, U+0085 and above U+009F except
/// surrogates and U+FFFE/U+FFFF), naming its line and column. `yaml-rust2` takes
/// a NUL for the end of the stream, so the rest of the document would be dropped
/// without a word.
fn check_characters(text: &str) -> Result<()> {
    let printable = |c: char| {
        matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{7e}' | '\u{85}')
            || (c >= '\u{a0}' && c != '\u{fffe}' && c != '\u{ffff}')
    };
    let mut line = 1usize;
    let mut col = 1usize;
    for c in text.chars() {
        if !printable(c) {
            let what = if c == '\0' {
                "a NUL byte".to_string()
            } else {
                format!("the control character U+{:04X}", c as u32)
            };
            return Err(err(
                None,
                format!(
                    "line {line} column {col}: {what}; a policy is text (a file \
                     of NULs is what a crash can leave: write the policy again)"
                ),
            ));
        }
        if c == '\n' {
            line += 1;
            col = 1;
        } else {
            col += 1;
        }
    }
    Ok(())
}

/// Record a key in the innermost mapping, refusing one it already has.
fn set_key(stack: &mut [Open], k: String, mark: &Marker) -> Result<()> {
    let Some(Open::Map { lines, key, .. }) = stack.last_mut() else {
        return Ok(());
    };
    if let Some(first) = lines.get(&k).copied() {
        return Err(err(
            Some(mark),
            format!("duplicate key {k:?} (first at line {first}); give each key once"),
        ));
    }
    lines.insert(k.clone(), mark.line());
    *key = Some(k);
    Ok(())
}

/// Nodes in a value (for the alias budget).
fn size(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(size).sum::<usize>(),
        Value::Object(m) => 1 + m.values().map(size).sum::<usize>(),
        _ => 1,
    }
}

fn core_tag(tag: Option<&Tag>) -> Option<&str> {
    let t = tag?;
    if t.handle == "!!" || t.handle == "tag:yaml.org,2002:" {
        Some(t.suffix.as_str())
    } else {
        Some("")
    }
}

fn check_collection_tag(tag: Option<&Tag>, is_map: bool, mark: &Marker) -> Result<()> {
    match core_tag(tag) {
        None => Ok(()),
        Some("map") if is_map => Ok(()),
        Some("seq") if !is_map => Ok(()),
        Some(_) => Err(err(Some(mark), "only the core schema's tags are supported")),
    }
}

/// A scalar by the YAML 1.2 core schema (quoted scalars are strings).
fn scalar(s: &str, style: TScalarStyle, tag: Option<&Tag>, mark: &Marker) -> Result<Value> {
    let resolved = match core_tag(tag) {
        Some("str") => return Ok(Value::String(s.to_string())),
        Some("null") => return Ok(Value::Null),
        Some("bool") => plain(s).filter(Value::is_boolean),
        Some("int") => plain(s)
            .filter(Value::is_i64)
            .or_else(|| plain(s).filter(Value::is_u64)),
        Some("float") => plain(s).filter(Value::is_number),
        Some(_) => {
            return Err(err(Some(mark), "only the core schema's tags are supported"));
        }
        None if style != TScalarStyle::Plain => return Ok(Value::String(s.to_string())),
        None => plain(s).or_else(|| (!is_core_int(s)).then(|| Value::String(s.to_string()))),
    };
    if resolved.is_none() && is_core_int(s) {
        // An integer by the core schema that no field can hold: say so, rather
        // than reading it as text and reporting "invalid type: string" later.
        return Err(err(
            Some(mark),
            format!(
                "the integer {s} is out of range (at most {} and at least {}); quote it \
                 if it is meant as text",
                u64::MAX,
                i64::MIN
            ),
        ));
    }
    resolved.ok_or_else(|| err(Some(mark), format!("{s:?} does not match its tag")))
}

/// Whether `s` is an integer by the YAML 1.2 core schema (`[-+]?[0-9]+`,
/// `0o[0-7]+`, `0x[0-9a-fA-F]+`), whatever its size.
fn is_core_int(s: &str) -> bool {
    let all = |body: &str, f: fn(&u8) -> bool| !body.is_empty() && body.as_bytes().iter().all(f);
    if let Some(b) = s.strip_prefix("0x") {
        return all(b, u8::is_ascii_hexdigit);
    }
    if let Some(b) = s.strip_prefix("0o") {
        return all(b, |c| (b'0'..=b'7').contains(c));
    }
    let digits = s
        .strip_prefix('-')
        .or_else(|| s.strip_prefix('+'))
        .unwrap_or(s);
    all(digits, u8::is_ascii_digit)
}

/// A plain scalar's value when it is not a string.
fn plain(s: &str) -> Option<Value> {
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return Some(Value::Null),
        "true" | "True" | "TRUE" => return Some(Value::Bool(true)),
        "false" | "False" | "FALSE" => return Some(Value::Bool(false)),
        _ => {}
    }
    let (neg, digits) = match s.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let radix = |p: &str, r: u32| -> Option<Value> {
        let body = s.strip_prefix(p)?;
        if body.is_empty() {
            return None;
        }
        u64::from_str_radix(body, r)
            .ok()
            .map(|v| Value::Number(v.into()))
    };
    if let Some(v) = radix("0x", 16).or_else(|| radix("0o", 8)) {
        return Some(v);
    }
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return if neg {
            s.parse::<i64>().ok().map(|v| Value::Number(v.into()))
        } else {
            digits.parse::<u64>().ok().map(|v| Value::Number(v.into()))
        };
    }
    // `.inf`/`.nan` have no JSON number: keep the text (no policy field takes it).
    if matches!(digits, ".inf" | ".Inf" | ".INF" | ".nan" | ".NaN" | ".NAN") {
        return Some(Value::String(s.to_string()));
    }
    if is_core_float(digits) {
        return s
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number);
    }
    None
}

/// `( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?`, the core
/// schema's float without its sign.
fn is_core_float(d: &str) -> bool {
    let b = d.as_bytes();
    let mut i = 0;
    let mut mantissa = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
        mantissa += 1;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
            mantissa += 1;
        }
    }
    if mantissa == 0 {
        return false;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    i == b.len()
}

/// A JSON value as a YAML document (block style, keys in the value's order).
pub fn emit(v: &Value) -> String {
    let mut out = String::new();
    let mut e = yaml_rust2::YamlEmitter::new(&mut out);
    if e.dump(&to_yaml(v)).is_err() {
        return String::new();
    }
    out.push('\n');
    out
}

fn to_yaml(v: &Value) -> yaml_rust2::Yaml {
    use yaml_rust2::Yaml;
    match v {
        Value::Null => Yaml::Null,
        Value::Bool(b) => Yaml::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Yaml::Integer(i),
            None => Yaml::Real(n.to_string()),
        },
        Value::String(s) => Yaml::String(s.clone()),
        Value::Array(a) => Yaml::Array(a.iter().map(to_yaml).collect()),
        Value::Object(m) => Yaml::Hash(
            m.iter()
                .map(|(k, v)| (Yaml::String(k.clone()), to_yaml(v)))
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msg(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    #[test]
    fn scalars_follow_the_core_schema() {
        let v = parse(
            "a: 1\nb: -2\nc: 0x1f\nd: 0o17\ne: 1.5\nf: true\ng: False\nh: ~\ni:\nj: '1'\n\
             k: \"true\"\nl: 198.18.0.1\nm: r1\nn: 18446744073709551615\no: 1e3\np: yes\n",
        )
        .unwrap();
        assert_eq!(
            v,
            json!({"a": 1, "b": -2, "c": 31, "d": 15, "e": 1.5, "f": true, "g": false,
                   "h": null, "i": null, "j": "1", "k": "true", "l": "198.18.0.1", "m": "r1",
                   "n": 18446744073709551615u64, "o": 1000.0, "p": "yes"})
        );
        assert_eq!(parse("").unwrap(), Value::Null);
        assert_eq!(parse("# only a comment\n").unwrap(), Value::Null);
        assert_eq!(parse("!!str 12").unwrap(), json!("12"));
        assert_eq!(
            parse("a: &x {b: [1, 2]}\nc: *x\n").unwrap(),
            json!({"a": {"b": [1, 2]}, "c": {"b": [1, 2]}})
        );
    }

    #[test]
    fn duplicate_keys_are_refused_with_both_lines() {
        let m = msg("routing:\n  table_base: 2000\narp: {}\nrouting:\n  enabled: false\n");
        assert_eq!(
            m,
            "policy is not valid YAML: line 4 column 1: duplicate key \"routing\" \
             (first at line 1); give each key once"
        );
        let m = msg("routing: {tables: {r1: 1001, r1: 1002}}\n");
        assert!(m.contains("duplicate key \"r1\""), "{m}");
        // The same key in different mappings is fine.
        assert!(parse("a: {x: 1}\nb: {x: 2}\n").is_ok());
    }

    #[test]
    fn deep_nesting_fails_fast_at_the_limit() {
        let deep = "[".repeat(100_000) + &"]".repeat(100_000);
        let m = msg(&deep);
        assert!(m.contains("nested deeper than 64 levels"), "{m}");
        assert!(
            m.starts_with("policy is not valid YAML: line 1 column"),
            "{m}"
        );
        let mut block = String::new();
        for i in 0..100 {
            block.push_str(&" ".repeat(i));
            block.push_str("a:\n");
        }
        assert!(msg(&block).contains("nested deeper than 64 levels"));
        let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(parse(&ok).is_ok());
    }

    #[test]
    fn size_documents_aliases_and_tags_are_bounded() {
        let big = format!("a: \"{}\"\n", "x".repeat(MAX_BYTES));
        assert!(msg(&big).contains("at most 1048576 are accepted"));
        assert!(msg("a: 1\n---\nb: 2\n").contains("a second document"));
        // A billion-laughs document stops at the node budget.
        let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..10 {
            let refs = vec![format!("*a{}", i - 1); 10].join(", ");
            bomb.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
        }
        assert!(
            msg(&bomb).contains("once aliases are expanded"),
            "{}",
            msg(&bomb)
        );
        assert!(msg("a: !custom 1\n").contains("core schema"));
        assert!(msg("? [a, b]\n: 1\n").contains("mapping keys must be scalars"));
        assert!(msg("routing: [\n").starts_with("policy is not valid YAML: line"));
    }

    /// A NUL ends `yaml-rust2`'s stream: without the check the rest of the
    /// document was dropped, and a file of NULs was the default policy.
    #[test]
    fn nul_and_control_characters_are_refused() {
        let m = msg("rp_filter: keep\n\0\nrouting: {enabled: false}\n");
        assert_eq!(
            m,
            "policy is not valid YAML: line 2 column 1: a NUL byte; a policy is text \
             (a file of NULs is what a crash can leave: write the policy again)"
        );
        assert!(msg(&"\0".repeat(4096)).contains("line 1 column 1: a NUL byte"));
        assert!(msg("a: \"x\u{1b}\"\n").contains("line 1 column 6: the control character U+001B"));
        assert!(msg("a: 1\u{7f}\n").contains("U+007F"));
        // Tabs, CRLF, NEL and non-ASCII text stay fine.
        assert_eq!(
            parse("a:\t\"caf\u{e9}\"\r\nb: 1\r\n").unwrap(),
            json!({"a": "caf\u{e9}", "b": 1})
        );
    }

    /// An integer too large for any field was read as text before, and the
    /// policy then said "invalid type: string".
    #[test]
    fn an_integer_out_of_range_says_so() {
        let m = msg("arp:\n  arp_ignore: 99999999999999999999999\n");
        assert!(
            m.starts_with(
                "policy is not valid YAML: line 2 column 15: the integer \
                 99999999999999999999999 is out of range"
            ),
            "{m}"
        );
        assert!(msg("a: -99999999999999999999\n").contains("out of range"));
        assert!(msg("a: 0x1ffffffffffffffff\n").contains("out of range"));
        assert!(msg("a: !!int 99999999999999999999999\n").contains("out of range"));
        // Quoted, or not an integer, it is text as before.
        assert_eq!(
            parse("a: '99999999999999999999999'\nb: 1.2.3\nc: 0x\n").unwrap(),
            json!({"a": "99999999999999999999999", "b": "1.2.3", "c": "0x"})
        );
        let e = crate::policy::Policy::from_yaml("arp: {arp_ignore: 99999999999999999999999}\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("out of range") && !e.contains("invalid type"),
            "{e}"
        );
    }

    #[test]
    fn emitted_documents_read_back() {
        let v = json!({"version": 1, "nics": "auto", "s": "true", "n": null, "ip": "198.18.0.1",
                       "list": ["a", 2, {"k": "v: w"}], "empty": {}, "f": 1.5});
        let text = emit(&v);
        assert_eq!(parse(&text).unwrap(), v, "{text}");
    }
}
