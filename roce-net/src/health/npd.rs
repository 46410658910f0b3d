//! A verdict as one line for a node-problem-detector custom plugin (its
//! `pkg/custompluginmonitor/plugin/plugin.go`: stdout, trimmed, cut at the
//! config's `max_output_length`, 80 bytes by default in `types/config.go`) and
//! for a Slurm drain reason (`roce-net: <finding ids>`). The exit code (0 OK,
//! 1 problem, anything else unknown) is the CLI's (`src/cli/exit.rs`).

use super::{HealthStatus, HealthVerdict, IdCount};

/// The most bytes of the line: node-problem-detector's default
/// `max_output_length` (commit 01a6793b of kubernetes/node-problem-detector,
/// `pkg/custompluginmonitor/types/config.go`, `defaultMaxOutputLength = 80`),
/// so a config that does not set it still gets the whole line.
pub const NPD_MAX_LINE: usize = 80;

pub(super) fn line(v: &HealthVerdict) -> String {
    match v.status {
        HealthStatus::Critical => ids_line("roce-net: ", &v.critical),
        HealthStatus::Warning => ids_line("roce-net: warning: ", &v.warning),
        HealthStatus::Ok => "roce-net: ok".to_string(),
        HealthStatus::Unknown => {
            let why = v.unknown.first().map(String::as_str).unwrap_or("unknown");
            let one: String = why
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect();
            cut(&format!("roce-net: unknown: {one}"), NPD_MAX_LINE)
        }
    }
}

/// `prefix` and as many ids as fit, comma-separated; `,+N` says how many more
/// there are when not all fit.
fn ids_line(prefix: &str, ids: &[IdCount]) -> String {
    let mut s = prefix.to_string();
    for (i, c) in ids.iter().enumerate() {
        let sep = if i == 0 { "" } else { "," };
        let left = ids.len() - i - 1;
        // Room for this id, and for the `,+N` of the rest if any remain.
        let tail = if left > 0 {
            format!(",+{left}").len()
        } else {
            0
        };
        if s.len() + sep.len() + c.id.len() + tail > NPD_MAX_LINE {
            s.push_str(&format!("{sep}+{}", ids.len() - i));
            return s;
        }
        s.push_str(sep);
        s.push_str(&c.id);
    }
    s
}

/// At most `max` bytes, cut at a character boundary.
fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}
