//! The apply journal: every change with its inverse, written before and after each
//! step, so a rollback can undo an apply that crashed or was killed half way.
//!
//! The journal proper (`<key>.journal.json`) is rewritten whole, atomically, when an
//! apply starts and at every change of [`JournalState`]. While changes are being
//! applied, each step's progress is instead appended to the step log
//! (`<key>.journal.log`, one `<index> <status>` line per transition, each written
//! with one `write`), so recording a step costs the same whatever
//! the plan's size; rewriting the whole journal twice per step made a large apply
//! quadratic (1 795 changes: 11 s). [`Journal::load`] replays the step log onto a
//! journal left in the `applying` state; in every other state the journal was
//! rewritten after the last step log entry and is complete on its own.
//!
//! Nothing is fsynced. The journal must survive the *process* (a crash, `kill -9`,
//! a lost SSH session), and a `write` reaching the page cache does. It need not
//! survive the machine: the kernel state it describes (routes, rules, sysctls) is
//! gone after a reboot too, and the default state directory `/run` is a tmpfs.
//! Syncing each step cost milliseconds per change on a disk-backed directory.

use crate::error::{Error, ErrorKind, Result};
use crate::plan::Change;
use serde::{Deserialize, Serialize};
use std::fs::File;
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

impl StepStatus {
    fn log_word(self) -> &'static str {
        match self {
            StepStatus::Pending => "pending",
            StepStatus::Started => "started",
            StepStatus::Done => "done",
            StepStatus::Undone => "undone",
        }
    }

    fn from_log_word(w: &str) -> Option<StepStatus> {
        Some(match w {
            "pending" => StepStatus::Pending,
            "started" => StepStatus::Started,
            "done" => StepStatus::Done,
            "undone" => StepStatus::Undone,
            _ => return None,
        })
    }
}

impl Journal {
    /// The journal file for a namespace key.
    pub fn path(state_dir: &Path, key: &str) -> PathBuf {
        state_dir.join(format!("{key}.journal.json"))
    }

    /// The step log for a namespace key (see the module documentation).
    pub fn log_path(state_dir: &Path, key: &str) -> PathBuf {
        state_dir.join(format!("{key}.journal.log"))
    }

    /// Write atomically (temp file, rename); see the module notes on syncing.
    pub fn save(&self, state_dir: &Path) -> Result<()> {
        let path = Self::path(state_dir, &self.key);
        let tmp = path.with_extension("json.tmp");
        let text = serde_json::to_vec_pretty(self)
            .map_err(|e| Error::new(ErrorKind::Io, format!("serialising journal: {e}")))?;
        let write = || -> std::io::Result<()> {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(&text)?;
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
        let mut j: Journal = serde_json::from_str(&text).map_err(|e| {
            Error::new(
                ErrorKind::Parse,
                format!(
                    "journal {} is corrupt ({e}); inspect it and remove it by hand",
                    path.display()
                ),
            )
        })?;
        if j.state == JournalState::Applying {
            j.replay_log(state_dir)?;
        }
        Ok(Some(j))
    }

    /// Apply the step log's entries to the steps, in order. A last line without
    /// its newline (a write cut short) is ignored.
    fn replay_log(&mut self, state_dir: &Path) -> Result<()> {
        let path = Self::log_path(state_dir, &self.key);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => {
                return Err(Error::io(
                    e,
                    format!("reading journal step log {}", path.display()),
                ))
            }
        };
        let complete = match text.rfind('\n') {
            Some(end) => &text[..end],
            None => return Ok(()),
        };
        for (n, line) in complete.lines().enumerate() {
            let mut words = line.split_whitespace();
            let entry = match (words.next(), words.next(), words.next()) {
                (Some(i), Some(s), None) => i
                    .parse::<usize>()
                    .ok()
                    .filter(|i| *i < self.steps.len())
                    .zip(StepStatus::from_log_word(s)),
                _ => None,
            };
            let Some((i, status)) = entry else {
                return Err(Error::new(
                    ErrorKind::Parse,
                    format!(
                        "journal step log {} is corrupt at line {} ({line:?}); inspect it and \
                         remove it by hand",
                        path.display(),
                        n + 1
                    ),
                ));
            };
            self.steps[i].status = status;
        }
        Ok(())
    }
}

/// The open step log of the apply in progress.
pub(crate) struct StepLog {
    file: File,
    path: PathBuf,
    /// Lines recorded but not yet written; see [`StepLog::flush`].
    pending: String,
}

impl StepLog {
    /// Start an empty step log for the journal of `key`, dropping the one an
    /// earlier apply left (its journal is complete without it). Create it before
    /// the new journal is first written.
    pub(crate) fn create(state_dir: &Path, key: &str) -> Result<StepLog> {
        let path = Journal::log_path(state_dir, key);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io(e, format!("creating journal step log {}", path.display())))?;
        Ok(StepLog {
            file,
            path,
            pending: String::new(),
        })
    }

    /// Set step `index`'s status in `j` and record it. The line is buffered: call
    /// [`StepLog::flush`] before the step's change reaches the kernel. A `done`
    /// line thus goes out with the next step's `started` line in one `write`
    /// (half the system calls of an apply); a crash between a change and that
    /// write leaves the step `started`, which rollback undoes all the same.
    pub(crate) fn set(&mut self, j: &mut Journal, index: usize, status: StepStatus) {
        j.steps[index].status = status;
        self.pending
            .push_str(&format!("{index} {}\n", status.log_word()));
    }

    /// Write the buffered lines (durable across the death of this process).
    pub(crate) fn flush(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        self.file.write_all(self.pending.as_bytes()).map_err(|e| {
            Error::io(
                e,
                format!("writing journal step log {}", self.path.display()),
            )
        })?;
        self.pending.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn journal(steps: usize) -> Journal {
        let change = |id: u32| Change::RegisterTableName {
            id,
            name: format!("t{id}"),
            before: None,
        };
        Journal {
            key: "net-1".into(),
            netns: None,
            started_at: 1,
            state: JournalState::Applying,
            steps: (0..steps as u32)
                .map(|i| Step {
                    change: change(1000 + i),
                    inverse: change(1000 + i).inverse().unwrap(),
                    status: StepStatus::Pending,
                })
                .collect(),
            errors: Vec::new(),
        }
    }

    fn statuses(j: &Journal) -> Vec<StepStatus> {
        j.steps.iter().map(|s| s.status).collect()
    }

    #[test]
    fn step_log_is_replayed_onto_an_applying_journal() {
        let d = tempfile::tempdir().unwrap();
        let mut j = journal(3);
        let mut log = StepLog::create(d.path(), &j.key).unwrap();
        j.save(d.path()).unwrap();
        log.set(&mut j, 0, StepStatus::Started);
        log.set(&mut j, 0, StepStatus::Done);
        log.set(&mut j, 1, StepStatus::Started);
        // Buffered lines are not in the file until flushed.
        let unflushed = Journal::load(d.path(), "net-1").unwrap().unwrap();
        assert_eq!(statuses(&unflushed), vec![StepStatus::Pending; 3]);
        log.flush().unwrap();
        let loaded = Journal::load(d.path(), "net-1").unwrap().unwrap();
        use StepStatus::*;
        assert_eq!(statuses(&loaded), vec![Done, Started, Pending]);
        assert_eq!(loaded, j, "the loaded journal is the one in memory");
        // The journal file alone still says nothing was done.
        let text = std::fs::read_to_string(Journal::path(d.path(), "net-1")).unwrap();
        let plain: Journal = serde_json::from_str(&text).unwrap();
        assert_eq!(statuses(&plain), vec![Pending, Pending, Pending]);
    }

    #[test]
    fn a_cut_short_last_line_is_ignored_and_corruption_refused() {
        let d = tempfile::tempdir().unwrap();
        let mut j = journal(2);
        let mut log = StepLog::create(d.path(), &j.key).unwrap();
        j.save(d.path()).unwrap();
        log.set(&mut j, 0, StepStatus::Started);
        log.flush().unwrap();
        let path = Journal::log_path(d.path(), "net-1");
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(b"0 do").unwrap();
        let loaded = Journal::load(d.path(), "net-1").unwrap().unwrap();
        assert_eq!(
            statuses(&loaded),
            vec![StepStatus::Started, StepStatus::Pending]
        );
        for bad in [
            "0 done\n5 done\n",
            "0 finished\n",
            "x started\n",
            "0 done extra\n",
        ] {
            std::fs::write(&path, bad).unwrap();
            let e = Journal::load(d.path(), "net-1").unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Parse, "{bad:?}");
            assert!(e.to_string().contains("journal.log"), "{e}");
        }
    }

    #[test]
    fn a_journal_saved_after_the_log_ignores_it() {
        let d = tempfile::tempdir().unwrap();
        let mut j = journal(2);
        let mut log = StepLog::create(d.path(), &j.key).unwrap();
        j.save(d.path()).unwrap();
        log.set(&mut j, 0, StepStatus::Started);
        log.set(&mut j, 0, StepStatus::Done);
        log.flush().unwrap();
        // Rolled back: the full journal is written; the log is now stale.
        j.steps[0].status = StepStatus::Undone;
        j.state = JournalState::RolledBack;
        j.save(d.path()).unwrap();
        let loaded = Journal::load(d.path(), "net-1").unwrap().unwrap();
        assert_eq!(
            statuses(&loaded),
            vec![StepStatus::Undone, StepStatus::Pending]
        );
        // The next apply starts a fresh log before writing its journal.
        let next = journal(2);
        let _log = StepLog::create(d.path(), &next.key).unwrap();
        next.save(d.path()).unwrap();
        let loaded = Journal::load(d.path(), "net-1").unwrap().unwrap();
        assert_eq!(
            statuses(&loaded),
            vec![StepStatus::Pending, StepStatus::Pending]
        );
        assert_eq!(loaded, next);
    }
}
