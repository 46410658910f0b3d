//! What a snapshot could not read: each part of the host that came back
//! partial carries a [`Warning`] instead of failing the whole snapshot.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Something that could not be read, so the snapshot is partial there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Warning {
    /// What was being read (a path, or a netlink object class).
    pub source: String,
    /// What went wrong.
    pub message: String,
}

impl Warning {
    /// The most characters of a warning's message that are kept.
    pub(crate) const MAX_CHARS: usize = 512;

    /// A warning about a file: the path and the message are escaped (no control
    /// character reaches a terminal or a log) and the message is cut at
    /// [`Warning::MAX_CHARS`] characters, so whatever a file holds, a warning
    /// stays one short line.
    pub(crate) fn about_file(path: &Path, message: String) -> Warning {
        use crate::input::escape_cut;
        use std::os::unix::ffi::OsStrExt;
        let (source, _) = escape_cut(path.as_os_str().as_bytes(), Self::MAX_CHARS, false);
        let (mut text, cut) = escape_cut(message.as_bytes(), Self::MAX_CHARS, false);
        if cut {
            text.push_str(&format!("... ({} bytes in all)", message.len()));
        }
        Warning {
            source,
            message: text,
        }
    }
}
