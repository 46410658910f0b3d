//! The apply journal: every change with its inverse, written before and after each
//! step, so a rollback can undo an apply that crashed or was killed half way.

use crate::error::{Error, ErrorKind, Result};
use crate::plan::Change;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where an apply stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum JournalState {
    /// Changes are being applied (a journal left in this state means a crash).
    Applying,
    /// Applied and verified; waiting for `confirm` until `deadline` (Unix seconds).
    PendingConfirm {
        /// When the watchdog rolls back.
        deadline: u64,
    },
    /// Applied and verified (and confirmed, if a confirm timeout was set).
    Committed,
    /// Undone.
    RolledBack,
    /// Undoing failed part way; see `errors`.
    RollbackFailed,
}

/// How far one step got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// Not started.
    Pending,
    /// Started: the kernel may or may not have applied it.
    Started,
    /// Applied.
    Done,
    /// Undone by rollback.
    Undone,
}

/// One change and how to undo it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// The change.
    pub change: Change,
    /// Its inverse.
    pub inverse: Change,
    /// Progress.
    pub status: StepStatus,
}

/// The journal of one apply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Journal {
    /// Namespace key (see [`super::namespace_key`]).
    pub key: String,
    /// Namespace name, when named.
    pub netns: Option<String>,
    /// When the apply started (Unix seconds).
    pub started_at: u64,
    /// Where it stands.
    #[serde(flatten)]
    pub state: JournalState,
    /// The steps, in application order.
    pub steps: Vec<Step>,
    /// Errors met while rolling back.
    #[serde(default)]
    pub errors: Vec<String>,
}

impl Journal {
    /// The journal file for a namespace key.
    pub fn path(state_dir: &Path, key: &str) -> PathBuf {
        state_dir.join(format!("{key}.journal.json"))
    }

    /// Write atomically (temp file, fsync, rename).
    pub fn save(&self, state_dir: &Path) -> Result<()> {
        let path = Self::path(state_dir, &self.key);
        let tmp = path.with_extension("json.tmp");
        let text = serde_json::to_vec_pretty(self)
            .map_err(|e| Error::new(ErrorKind::Io, format!("serialising journal: {e}")))?;
        let write = || -> std::io::Result<()> {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(&text)?;
            f.sync_all()?;
            std::fs::rename(&tmp, &path)
        };
        write().map_err(|e| Error::io(e, format!("writing journal {}", path.display())))
    }

    /// Read the journal for a namespace key; `None` when there is none.
    pub fn load(state_dir: &Path, key: &str) -> Result<Option<Journal>> {
        let path = Self::path(state_dir, key);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(e, format!("reading journal {}", path.display()))),
        };
        serde_json::from_str(&text).map(Some).map_err(|e| {
            Error::new(
                ErrorKind::Parse,
                format!(
                    "journal {} is corrupt ({e}); inspect it and remove it by hand",
                    path.display()
                ),
            )
        })
    }
}
