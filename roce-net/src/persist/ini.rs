//! The one reader of INI-style configuration files, in the two dialects the
//! stacks roce-net reads use:
//!
//! * [`Dialect::Systemd`] (`systemd.syntax(7)`, `config_parse` in systemd's
//!   `conf-parser.c`): `#` and `;` start comment lines, also inside a
//!   continued line (they are dropped, not joined); a line ending in an
//!   unescaped backslash continues on the next one, the backslash becoming a
//!   space; `[Section]` is taken verbatim between the brackets; key and value
//!   are stripped of surrounding whitespace.
//! * [`Dialect::KeyFile`] (GLib's `GKeyFile`, NetworkManager's keyfiles):
//!   only `#` starts a comment; no continuation lines; leading whitespace of a
//!   line and of a value is skipped, and the key loses its trailing
//!   whitespace, but a value keeps its own.
//!
//! Lines without `=` outside a section header are skipped (systemd logs them
//! and goes on; GKeyFile refuses the file, which roce-net then reads as
//! configuring nothing it recognises either way).

/// Which tool's rules a file is read by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dialect {
    /// systemd unit-style files (`.network` files and their drop-ins).
    Systemd,
    /// GLib key files (NetworkManager's `.nmconnection`).
    KeyFile,
}

/// `(section, key, value, line)` of each assignment, in file order; `line` is
/// the 1-based line the assignment starts on.
pub(super) fn parse(text: &str, dialect: Dialect) -> Vec<(String, String, String, usize)> {
    let mut out = Vec::new();
    let mut section = String::new();
    // A continued systemd line: the text so far and the line it started on.
    let mut pending: Option<(String, usize)> = None;
    for (i, raw) in text.lines().enumerate() {
        let trimmed = raw.trim_start();
        let comment = match dialect {
            Dialect::Systemd => trimmed.starts_with(['#', ';']),
            Dialect::KeyFile => trimmed.starts_with('#'),
        };
        if comment {
            continue;
        }
        let (line, start) = match pending.take() {
            Some((mut so_far, start)) => {
                so_far.push_str(raw);
                (so_far, start)
            }
            None => (raw.to_string(), i + 1),
        };
        if dialect == Dialect::Systemd && ends_in_unescaped_backslash(&line) {
            let mut joined = line;
            joined.pop();
            joined.push(' ');
            pending = Some((joined, start));
            continue;
        }
        statement(&line, dialect, start, &mut section, &mut out);
    }
    // A file that ends inside a continuation: systemd parses what it has.
    if let Some((line, start)) = pending {
        statement(&line, dialect, start, &mut section, &mut out);
    }
    out
}

fn ends_in_unescaped_backslash(line: &str) -> bool {
    line.bytes().rev().take_while(|b| *b == b'\\').count() % 2 == 1
}

fn statement(
    line: &str,
    dialect: Dialect,
    number: usize,
    section: &mut String,
    out: &mut Vec<(String, String, String, usize)>,
) {
    let l = match dialect {
        Dialect::Systemd => line.trim(),
        Dialect::KeyFile => line.trim_start(),
    };
    if l.is_empty() {
        return;
    }
    if let Some(rest) = l.strip_prefix('[') {
        // systemd: the whole stripped line must end in `]`; GKeyFile: up to
        // the last `]`.
        let name = match dialect {
            Dialect::Systemd => rest.strip_suffix(']'),
            Dialect::KeyFile => rest.rfind(']').map(|e| &rest[..e]),
        };
        if let Some(name) = name {
            *section = name.to_string();
        }
        return;
    }
    let Some((k, v)) = l.split_once('=') else {
        return;
    };
    let v = match dialect {
        Dialect::Systemd => v.trim(),
        Dialect::KeyFile => v.trim_start(),
    };
    out.push((
        section.clone(),
        k.trim_end().to_string(),
        v.to_string(),
        number,
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(text: &str, d: Dialect) -> Vec<(String, String, String)> {
        parse(text, d)
            .into_iter()
            .map(|(s, k, v, _)| (s, k, v))
            .collect()
    }

    fn t(s: &str, k: &str, v: &str) -> (String, String, String) {
        (s.into(), k.into(), v.into())
    }

    /// systemd.syntax(7): "Lines ending in a backslash are concatenated with
    /// the following line while reading and the backslash is replaced by a
    /// space character"; comment lines inside are dropped.
    #[test]
    fn systemd_line_continuations() {
        let text = "[Match]\nName=r0 \\\n  r1 \\\n# a comment inside\n  r2\nType=ether\n";
        assert_eq!(
            kv(text, Dialect::Systemd),
            vec![
                t("Match", "Name", "r0    r1    r2"),
                t("Match", "Type", "ether")
            ]
        );
        // The assignment is reported at the line it starts on.
        assert_eq!(parse(text, Dialect::Systemd)[1].3, 6);
        // An escaped backslash does not continue; a continuation at the end of
        // the file is still read.
        assert_eq!(
            kv("[A]\nK=a\\\\\nL=b \\", Dialect::Systemd),
            vec![t("A", "K", "a\\\\"), t("A", "L", "b")]
        );
        // A section header can be continued too.
        assert_eq!(
            kv("[Ma\\\ntch]\nName=r0\n", Dialect::Systemd),
            vec![t("Ma tch", "Name", "r0")]
        );
    }

    #[test]
    fn systemd_comments_and_sections() {
        let text = "; c\n  # c\n[Match]\n Name = r0 \n[ Match ]\nName=r1\nbogus\n";
        assert_eq!(
            kv(text, Dialect::Systemd),
            vec![t("Match", "Name", "r0"), t(" Match ", "Name", "r1")]
        );
    }

    /// GKeyFile: `;` is not a comment, a backslash does not continue, a value
    /// keeps its trailing whitespace.
    #[test]
    fn keyfile_rules() {
        let text = "[connection]\nid=a \\\n;x=1\ninterface-name=r0 \n  uuid = u\n";
        assert_eq!(
            kv(text, Dialect::KeyFile),
            vec![
                t("connection", "id", "a \\"),
                t("connection", ";x", "1"),
                t("connection", "interface-name", "r0 "),
                t("connection", "uuid", "u"),
            ]
        );
    }
}
