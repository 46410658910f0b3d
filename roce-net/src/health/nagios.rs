//! A verdict as a Nagios plugin prints it (Nagios Plugin Development
//! Guidelines, "Plugin Output for Nagios" and "Performance data"): one status
//! line `ROCE-NET <STATUS> - <what> | <label>=<value>;;;0 ...`, then the long
//! output, one line per finding behind the verdict (and per fault of the
//! cluster mesh involving the host, with `--mesh`). The exit code (0 OK, 1
//! WARNING, 2 CRITICAL, 3 UNKNOWN) is the CLI's (`src/cli/exit.rs`).

use super::{HealthStatus, HealthVerdict, IdCount};
use crate::doctor::Severity;
use std::fmt::Write as _;

/// Ids named per class on the status line; the rest are counted.
const MAX_IDS: usize = 8;
/// Findings listed after the status line; the rest are counted.
const MAX_LONG_LINES: usize = 20;
/// Characters of one reason that something could not be read.
const MAX_REASON: usize = 200;

pub(super) fn render(v: &HealthVerdict) -> String {
    let mut out = format!("ROCE-NET {} - {}", v.status.label(), what(v));
    let nothing_read = v.status == HealthStatus::Unknown && v.findings.is_empty();
    if !nothing_read {
        let critical: usize = v.critical.iter().map(|c| c.count).sum();
        let _ = write!(
            out,
            " | critical={critical};;;0 error={};;;0 warning={};;;0 info={};;;0",
            v.summary.error, v.summary.warning, v.summary.info
        );
    }
    if let Some(m) = v.mesh.as_ref().filter(|m| m.tested_at > 0) {
        // The faults involving the host, and the report's age at the verdict.
        let sep = if nothing_read { " | " } else { " " };
        let _ = write!(
            out,
            "{sep}mesh_faults={};;;0 mesh_age={}s;;;0",
            m.fault_count,
            v.checked_at.saturating_sub(m.tested_at)
        );
    }
    out.push('\n');
    // (class, id, subject, sentence): the doctor's findings, then the mesh's faults.
    let doctor = v.findings.iter().filter_map(|f| {
        let class = if v.critical.iter().any(|c| c.id == f.id) && f.severity == Severity::Error {
            "CRITICAL"
        } else if f.id == super::PARTIAL {
            "UNKNOWN"
        } else if f.severity >= Severity::Warning {
            "WARNING"
        } else {
            return None;
        };
        Some((
            class,
            f.id.as_str(),
            f.subject.to_string(),
            f.message.as_str(),
        ))
    });
    let mesh = v.mesh.iter().flat_map(|m| &m.faults).filter_map(|f| {
        let id = super::mesh_check_id(f.element);
        let class = if v.critical.iter().any(|c| c.id == id) {
            "CRITICAL"
        } else if v.warning.iter().any(|c| c.id == id) {
            "WARNING"
        } else {
            return None;
        };
        Some((class, id, f.cause.clone(), f.message.as_str()))
    });
    let mut rest = 0;
    for (i, (class, id, subject, message)) in doctor.chain(mesh).enumerate() {
        if i >= MAX_LONG_LINES {
            rest += 1;
            continue;
        }
        let _ = writeln!(out, "{class} {id} {}: {}", safe(&subject), safe(message));
    }
    if rest > 0 {
        let _ = writeln!(
            out,
            "... and {rest} more (roce-net doctor and the mesh report list them all)"
        );
    }
    out
}

/// The status line's text after `ROCE-NET <STATUS> - `.
fn what(v: &HealthVerdict) -> String {
    let mut parts = Vec::new();
    if !v.critical.is_empty() {
        parts.push(format!("cannot carry RDMA: {}", ids(&v.critical)));
    }
    if let Some(first) = v.unknown.first() {
        let mut s = safe(&cut(first, MAX_REASON));
        if v.unknown.len() > 1 {
            let _ = write!(s, " (and {} more)", v.unknown.len() - 1);
        }
        parts.push(s);
    }
    if !v.warning.is_empty() {
        parts.push(format!("degraded: {}", ids(&v.warning)));
    }
    if parts.is_empty() {
        let mut s = String::from("no error or warning found");
        if v.summary.info > 0 {
            let _ = write!(s, " ({} info)", v.summary.info);
        }
        parts.push(s);
    }
    if !v.ignored.is_empty() {
        parts.push(format!("ignored by policy: {}", ids(&v.ignored)));
    }
    parts.join("; ")
}

/// `id(count), ...`, at most [`MAX_IDS`] named.
fn ids(list: &[IdCount]) -> String {
    let mut s: Vec<String> = list
        .iter()
        .take(MAX_IDS)
        .map(|c| format!("{}({})", c.id, c.count))
        .collect();
    if list.len() > MAX_IDS {
        s.push(format!("+{} more", list.len() - MAX_IDS));
    }
    s.join(", ")
}

/// Text from the host on one line that cannot start the performance data: a
/// `|` (an interface name may hold one) becomes `¦`, a line break a space.
fn safe(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '|' => '¦',
            '\n' | '\r' => ' ',
            c => c,
        })
        .collect()
}

/// At most `max` characters, with `...` when cut.
fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut t: String = s.chars().take(max.saturating_sub(3)).collect();
    t.push_str("...");
    t
}
