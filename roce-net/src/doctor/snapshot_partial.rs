//! `snapshot-partial`: parts of the host could not be read, so some checks may have
//! nothing to look at (they skip values they cannot see rather than guess).

use super::{Ctx, Finding, Severity, Subject};

/// Check id.
pub const ID: &str = "snapshot-partial";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    if ctx.state.warnings.is_empty() {
        return Vec::new();
    }
    let list: Vec<String> = ctx
        .state
        .warnings
        .iter()
        .map(|w| format!("{}: {}", w.source, w.message))
        .collect();
    vec![Finding::new(
        ID,
        Severity::Info,
        Subject::default(),
        format!(
            "{} part(s) of the host could not be read; checks depending on them were skipped",
            list.len()
        ),
    )
    .evidence("warnings", list)
    // Re-reading each unreadable file shows the error first hand; capture the
    // snapshot again as root once it reads.
    .checks(
        ctx.state
            .warnings
            .iter()
            .filter(|w| w.source.starts_with('/'))
            .map(|w| format!("cat {}", crate::model::shell_word(&w.source)))
            .collect(),
    )]
}
