//! What the CLI prints: text made safe for a terminal, JSON, errors (as text
//! or the documented JSON error), and the hints in them completed with this
//! command line's global options.

use roce_net::{Error, ErrorKind};
use std::io::Write;

/// The library's messages name the next command in backquotes (`` `roce-net
/// rollback` ``, `` `roce-net archive` ``): it knows which step comes next, not
/// which global options this command line had. Every such command is
/// completed here with `prefix` (see [`super::context::command_prefix`]), so a hint copied as
/// printed acts on the same namespace and state directory.
pub(crate) fn localize_hints(msg: &str, prefix: &str) -> String {
    if prefix == "roce-net" {
        return msg.to_string();
    }
    msg.replace("`roce-net ", &format!("`{prefix} "))
        .replace("`roce-net`", &format!("`{prefix}`"))
}

/// A command-line error (exit 64), under `--json` as the documented JSON error
/// (kind `usage`; `message` is the parser's text, its `error: ` label dropped).
pub(crate) fn usage_error(text: &str, json: bool) {
    let text = text.trim_end();
    if json {
        let message = text.strip_prefix("error: ").unwrap_or(text);
        let v = serde_json::json!({
            "error": {
                "kind": "usage",
                "message": message,
                "errno": null,
                "extack": null,
                "causes": [],
            }
        });
        eprintln!("{v}");
    } else {
        eprintln!("roce-net: error: {text}");
    }
}

/// An error on stderr: one line of text, or under `--json` the documented JSON
/// error with the chain of its causes.
pub(super) fn report_error(e: &Error, json: bool, prefix: &str) {
    if json {
        // The chain of causes, outermost first (each with its own kind, errno,
        // kernel text and context).
        let mut causes = Vec::new();
        let mut c = e.cause();
        while let Some(x) = c {
            causes.push(serde_json::json!({
                "kind": x.kind().name(),
                "message": localize_hints(x.message(), prefix),
                "context": x.context_chain(),
                "errno": x.errno_value(),
                "extack": x.extack(),
            }));
            c = x.cause();
        }
        let v = serde_json::json!({
            "error": {
                "kind": e.kind().name(),
                "message": localize_hints(&e.to_string(), prefix),
                "errno": e.errno_value(),
                "extack": e.extack(),
                "causes": causes,
            }
        });
        eprintln!("{v}");
    } else {
        eprintln!(
            "roce-net: error: {}",
            roce_net::terminal_safe(&localize_hints(&e.to_string(), prefix))
        );
    }
}

/// Print text to stdout, every control character in it escaped visibly
/// ([`roce_net::terminal_safe`]: names from the host or a snapshot never reach
/// the terminal raw); a closed pipe (`| head`) is not an error.
pub fn out(s: &str) {
    out_raw(&roce_net::terminal_safe(s));
}

fn out_raw(s: &str) {
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(s.as_bytes());
    if !s.ends_with('\n') {
        let _ = o.write_all(b"\n");
    }
}

/// Print JSON. serde escapes C0 controls in strings; DEL and the C1 codes it
/// leaves raw are written as `\u00XX` escapes too (they only occur in strings).
pub(crate) fn print_json<T: serde::Serialize>(v: &T) -> Result<(), Error> {
    let s = serde_json::to_string_pretty(v)
        .map_err(|e| Error::new(ErrorKind::Io, format!("serialising output: {e}")))?;
    let s = if s.chars().any(|c| ('\u{7f}'..='\u{9f}').contains(&c)) {
        s.chars()
            .map(|c| match c {
                '\u{7f}'..='\u{9f}' => format!("\\u{:04x}", c as u32),
                c => c.to_string(),
            })
            .collect()
    } else {
        s
    };
    out_raw(&s);
    Ok(())
}
