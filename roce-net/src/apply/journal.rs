//! The apply journal: every change with its inverse, written before and after each
//! step, so a rollback can undo an apply that crashed or was killed half way.
//!
//! The journal proper (`<key>.journal.json`) is rewritten whole, atomically, when an
//! apply starts and at every change of [`JournalState`]. While changes are being
//! applied or undone, each step's progress is instead appended to the step log
//! (`<key>.journal.log`, one `<index> <status>` line per transition, each written
//! with one `write`), so recording a step costs the same whatever the plan's size;
//! rewriting the whole journal twice per step made a large apply quadratic (1 795
//! changes: 11 s). The step log starts with a header naming the apply (its
//! `apply_id`) and the phase (`apply` or `rollback`); [`Journal::load`] replays a
//! log whose header matches onto a journal in the `applying` or `rolling_back`
//! state, and ignores any other log (one left by an earlier phase or apply). In
//! every other state the journal was rewritten after the last step log entry and
//! is complete on its own.
//!
//! Each journal records the identity of its namespace ([`NamespaceId`]): a
//! journal is only ever used for the namespace it names, whatever its file name.
//!
//! Nothing is fsynced. The journal must survive the *process* (a crash, `kill -9`,
//! a lost SSH session), and a `write` reaching the page cache does. It need not
//! survive the machine: the kernel state it describes (routes, rules, sysctls) is
//! gone after a reboot too, and the default state directory `/run` is a tmpfs.
//! Syncing each step cost milliseconds per change on a disk-backed directory.

use super::identity::NamespaceId;
use crate::error::{Error, ErrorKind, Result};
use crate::files::statedir::StateDir;
use crate::plan::Change;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;

/// The journal format this build writes and reads.
pub const JOURNAL_VERSION: u32 = 2;

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
    /// Being undone (a journal left in this state means a rollback was killed;
    /// running rollback again finishes it).
    RollingBack,
    /// Undone.
    RolledBack,
    /// Undoing failed part way; see `errors`.
    RollbackFailed,
}

impl JournalState {
    /// The state's name as in JSON (`applying`, `pending_confirm`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            JournalState::Applying => "applying",
            JournalState::PendingConfirm { .. } => "pending_confirm",
            JournalState::Committed => "committed",
            JournalState::RollingBack => "rolling_back",
            JournalState::RolledBack => "rolled_back",
            JournalState::RollbackFailed => "rollback_failed",
        }
    }

    /// True while the host may hold changes the journal can still undo and the
    /// apply is not finished: `applying`, `pending_confirm`, `rolling_back`.
    pub fn is_open(&self) -> bool {
        matches!(
            self,
            JournalState::Applying
                | JournalState::PendingConfirm { .. }
                | JournalState::RollingBack
        )
    }
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
    /// Found already in place when applied (another writer made the same
    /// change, e.g. a table name shared by every namespace): not this apply's to
    /// undo.
    Skipped,
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
    /// Undo with append semantics (`ip route append`): the route this step
    /// deletes shared its key (table, destination, TOS, metric) with another
    /// route when the apply started, so putting it back must not demand an
    /// empty place.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub append: bool,
}

/// The namespace a journal belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamespaceRecord {
    /// Its identity (cookie and boot id).
    #[serde(flatten)]
    pub id: NamespaceId,
    /// Its name (`ip netns` name), when it was reached by name.
    pub name: Option<String>,
    /// Its file, when it was reached by path.
    pub path: Option<PathBuf>,
}

impl std::fmt::Display for NamespaceRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.name, &self.path) {
            (Some(n), _) => write!(f, "network namespace {n:?}, {}", self.id),
            (None, Some(p)) => write!(f, "network namespace {}, {}", p.display(), self.id),
            (None, None) => write!(f, "the caller's network namespace, {}", self.id),
        }
    }
}

/// What the confirm-timeout watchdog did, recorded in the journal it guards.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchdogRecord {
    /// The watchdog's process id, when it runs as its own process.
    pub pid: Option<u32>,
    /// When that process started (clock ticks after boot, as
    /// `/proc/PID/stat` gives it), so a pid reused by another process is not
    /// taken for the watchdog.
    #[serde(default)]
    pub started: Option<u64>,
    /// How it ended: `rolled_back`, `rollback_failed`, `confirmed`,
    /// `namespace_changed`, `namespace_gone`, `failed`, `stood_down` (its apply
    /// was rolled back before the deadline, by hand or by a failed apply);
    /// `None` while it waits.
    pub outcome: Option<String>,
    /// When it ended (Unix seconds).
    pub at: Option<u64>,
    /// What it did or why it did nothing, in words.
    pub message: Option<String>,
}

/// The journal of one apply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "JournalRepr")]
pub struct Journal {
    /// Journal format ([`JOURNAL_VERSION`]).
    pub version: u32,
    /// Namespace key (see [`NamespaceId::key`]).
    pub key: String,
    /// The namespace it belongs to.
    pub namespace: NamespaceRecord,
    /// A random id of this apply (the watchdog guards exactly this one).
    pub apply_id: String,
    /// When the apply started (Unix seconds).
    pub started_at: u64,
    /// With a confirm timeout: when the watchdog rolls back unless confirmed,
    /// recorded before the first change.
    #[serde(default)]
    pub confirm_deadline: Option<u64>,
    /// The same deadline on `CLOCK_BOOTTIME` (milliseconds), which a step of
    /// the wall clock does not move: when recorded, it decides.
    #[serde(default)]
    pub confirm_deadline_boot_ms: Option<u64>,
    /// Where it stands.
    #[serde(flatten)]
    pub state: JournalState,
    /// The steps, in application order.
    pub steps: Vec<Step>,
    /// What made the apply roll back (the error, with the kernel's text).
    #[serde(default)]
    pub failure: Option<String>,
    /// Errors met while rolling back: what could not be restored.
    #[serde(default)]
    pub errors: Vec<String>,
    /// The confirm-timeout watchdog's record.
    #[serde(default)]
    pub watchdog: Option<WatchdogRecord>,
}

/// Each step of a journal as JSON but for its status: `{"change":…,"inverse":…`
/// (and `"append":true`), the object left open. The changes of a journal never
/// change once it is made, only the statuses do, so an apply or a rollback
/// renders them once for its two or three saves instead of at each (they were
/// nine tenths of a save's work, and a save a fifth of the CLI's own).
pub(crate) struct StepsJson(Vec<String>);

impl StepsJson {
    /// The steps of `j`.
    pub(crate) fn of(j: &Journal) -> Result<StepsJson> {
        j.steps
            .iter()
            .map(|s| {
                let mut text = serde_json::to_string(&StepBody {
                    change: &s.change,
                    inverse: &s.inverse,
                    append: s.append,
                })
                .map_err(serialising)?;
                if text.pop() != Some('}') {
                    return Err(serialising("a journal step is not a JSON object"));
                }
                Ok(text)
            })
            .collect::<Result<Vec<_>>>()
            .map(StepsJson)
    }
}

/// A [`Step`] without its status, as [`StepsJson`] renders it.
#[derive(Serialize)]
struct StepBody<'a> {
    change: &'a Change,
    inverse: &'a Change,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    append: bool,
}

/// A [`Journal`] without its steps, as [`Journal::save_with`] writes it (the
/// same keys, the steps appended after them).
#[derive(Serialize)]
struct JournalRest<'a> {
    version: u32,
    key: &'a str,
    namespace: &'a NamespaceRecord,
    apply_id: &'a str,
    started_at: u64,
    confirm_deadline: Option<u64>,
    confirm_deadline_boot_ms: Option<u64>,
    #[serde(flatten)]
    state: &'a JournalState,
    failure: &'a Option<String>,
    errors: &'a [String],
    watchdog: &'a Option<WatchdogRecord>,
}

fn serialising(e: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Io, format!("serialising journal: {e}"))
}

/// The journal as stored, read without `flatten` (which made serde buffer the
/// whole document, steps included, before reading any of it).
#[derive(Deserialize)]
struct JournalRepr {
    version: u32,
    key: String,
    namespace: NamespaceRecord,
    apply_id: String,
    started_at: u64,
    #[serde(default)]
    confirm_deadline: Option<u64>,
    #[serde(default)]
    confirm_deadline_boot_ms: Option<u64>,
    state: String,
    #[serde(default)]
    deadline: Option<u64>,
    steps: Vec<Step>,
    #[serde(default)]
    failure: Option<String>,
    #[serde(default)]
    errors: Vec<String>,
    #[serde(default)]
    watchdog: Option<WatchdogRecord>,
}

fn state_of(name: &str, deadline: Option<u64>) -> std::result::Result<JournalState, String> {
    Ok(match (name, deadline) {
        ("applying", _) => JournalState::Applying,
        ("pending_confirm", Some(deadline)) => JournalState::PendingConfirm { deadline },
        ("pending_confirm", None) => return Err("pending_confirm without a deadline".into()),
        ("committed", _) => JournalState::Committed,
        ("rolling_back", _) => JournalState::RollingBack,
        ("rolled_back", _) => JournalState::RolledBack,
        ("rollback_failed", _) => JournalState::RollbackFailed,
        (other, _) => return Err(format!("unknown state {other:?}")),
    })
}

impl TryFrom<JournalRepr> for Journal {
    type Error = String;
    fn try_from(r: JournalRepr) -> std::result::Result<Journal, String> {
        Ok(Journal {
            version: r.version,
            key: r.key,
            namespace: r.namespace,
            apply_id: r.apply_id,
            started_at: r.started_at,
            confirm_deadline: r.confirm_deadline,
            confirm_deadline_boot_ms: r.confirm_deadline_boot_ms,
            state: state_of(&r.state, r.deadline)?,
            steps: r.steps,
            failure: r.failure,
            errors: r.errors,
            watchdog: r.watchdog,
        })
    }
}

/// The part of a journal an apply reads to decide whether it may start (the
/// steps are skipped, not parsed).
#[derive(Debug, Clone)]
pub(crate) struct JournalHead {
    pub state: JournalState,
    pub errors: Vec<String>,
}

#[derive(Deserialize)]
struct HeadRepr {
    version: u32,
    key: String,
    namespace: NamespaceRecord,
    state: String,
    #[serde(default)]
    deadline: Option<u64>,
    #[serde(default)]
    errors: Vec<String>,
}

impl StepStatus {
    fn log_word(self) -> &'static str {
        match self {
            StepStatus::Pending => "pending",
            StepStatus::Started => "started",
            StepStatus::Done => "done",
            StepStatus::Undone => "undone",
            StepStatus::Skipped => "skipped",
        }
    }

    fn from_log_word(w: &str) -> Option<StepStatus> {
        Some(match w {
            "pending" => StepStatus::Pending,
            "started" => StepStatus::Started,
            "done" => StepStatus::Done,
            "undone" => StepStatus::Undone,
            "skipped" => StepStatus::Skipped,
            _ => return None,
        })
    }
}

/// Which phase a step log records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Apply,
    Rollback,
}

impl Phase {
    fn word(self) -> &'static str {
        match self {
            Phase::Apply => "apply",
            Phase::Rollback => "rollback",
        }
    }
}

const LOG_MAGIC: &str = "roce-net-steps";

fn header(apply_id: &str, phase: Phase) -> String {
    format!(
        "{LOG_MAGIC} {JOURNAL_VERSION} {apply_id} {}\n",
        phase.word()
    )
}

/// What to do about a journal that cannot be used.
fn archive_hint() -> &'static str {
    "nothing was changed. Run `roce-net archive` to move it aside (it is kept under \
     the state directory's archive/), then check the host with `roce-net doctor` and \
     `roce-net plan`"
}

impl WatchdogRecord {
    /// Whether the recorded watchdog process still runs: `None` when no
    /// process was recorded (a watchdog run in-process), `Some(false)` when it
    /// is gone (killed) or its pid now belongs to another process.
    pub fn running(&self) -> Option<bool> {
        let pid = self.pid?;
        let now = super::clock::process_start(pid);
        Some(match self.started {
            Some(s) => now == Some(s),
            None => now.is_some(),
        })
    }
}

impl Journal {
    /// Whether the confirm deadline has passed (`false` without one), timed
    /// on the boot clock when the journal recorded it.
    pub fn deadline_passed(&self) -> bool {
        match self.confirm_deadline {
            Some(d) => super::clock::left(d, self.confirm_deadline_boot_ms).is_zero(),
            None => false,
        }
    }

    /// The journal file name for a namespace key.
    pub fn file_name(key: &str) -> String {
        format!("{key}.journal.json")
    }

    /// The step log file name for a namespace key.
    pub fn log_name(key: &str) -> String {
        format!("{key}.journal.log")
    }

    /// The name of the record of what `persist` wrote for the namespace's
    /// last apply (`apply/persisted.rs`).
    pub(crate) fn persisted_name(key: &str) -> String {
        format!("{key}.persisted.json")
    }

    /// Write atomically (temporary file, rename); see the module notes on syncing.
    pub(crate) fn save(&self, dir: &StateDir) -> Result<()> {
        self.save_with(dir, &StepsJson::of(self)?)
    }

    /// [`Journal::save`] with the steps' changes rendered already (`steps`,
    /// made from this journal by [`StepsJson::of`]; only the statuses are
    /// rendered here). A `steps` of another length is made again.
    pub(crate) fn save_with(&self, dir: &StateDir, steps: &StepsJson) -> Result<()> {
        let fresh;
        let steps = if steps.0.len() == self.steps.len() {
            steps
        } else {
            fresh = StepsJson::of(self)?;
            &fresh
        };
        let rest = JournalRest {
            version: self.version,
            key: &self.key,
            namespace: &self.namespace,
            apply_id: &self.apply_id,
            started_at: self.started_at,
            confirm_deadline: self.confirm_deadline,
            confirm_deadline_boot_ms: self.confirm_deadline_boot_ms,
            state: &self.state,
            failure: &self.failure,
            errors: &self.errors,
            watchdog: &self.watchdog,
        };
        let body: usize = steps.0.iter().map(|s| s.len() + 24).sum();
        let mut text = Vec::with_capacity(1024 + body);
        serde_json::to_writer(&mut text, &rest).map_err(serialising)?;
        // The object without its closing brace, then the steps and the brace.
        if text.pop() != Some(b'}') {
            return Err(serialising("the journal is not a JSON object"));
        }
        text.extend_from_slice(b",\"steps\":[");
        for (i, (json, step)) in steps.0.iter().zip(&self.steps).enumerate() {
            if i > 0 {
                text.push(b',');
            }
            text.extend_from_slice(json.as_bytes());
            text.extend_from_slice(b",\"status\":\"");
            text.extend_from_slice(step.status.log_word().as_bytes());
            text.extend_from_slice(b"\"}");
        }
        text.extend_from_slice(b"]}");
        dir.write_atomic(&Self::file_name(&self.key), &text)
    }

    /// Read the journal for a namespace key; `None` when there is none. The
    /// journal must belong to the namespace `id` (`target` names it in messages).
    pub(crate) fn load(
        dir: &StateDir,
        key: &str,
        id: &NamespaceId,
        target: &str,
    ) -> Result<Option<Journal>> {
        let Some(mut j) = Self::load_unchecked(dir, key)? else {
            return Ok(None);
        };
        check_owner(dir, key, &j.namespace, id, target)?;
        if j.state == JournalState::Applying {
            j.replay_log(dir, Phase::Apply)?;
        } else if j.state == JournalState::RollingBack {
            j.replay_log(dir, Phase::Rollback)?;
        }
        Ok(Some(j))
    }

    /// Read and parse without checking the namespace or replaying the step log.
    pub(crate) fn load_unchecked(dir: &StateDir, key: &str) -> Result<Option<Journal>> {
        let name = Self::file_name(key);
        let Some(bytes) = dir.read(&name)? else {
            return Ok(None);
        };
        let j: Journal = parse(dir, &name, &bytes)?;
        check_key(dir, &name, &j.key, key)?;
        if j.version != JOURNAL_VERSION {
            return Err(corrupt(
                dir,
                &name,
                format!(
                    "format version {}; this roce-net reads version {JOURNAL_VERSION}",
                    j.version
                ),
            ));
        }
        Ok(Some(j))
    }

    /// The state and rollback errors of the journal for `key`, checked to be
    /// the namespace `id`'s, without parsing its steps.
    pub(crate) fn load_head(
        dir: &StateDir,
        key: &str,
        id: &NamespaceId,
        target: &str,
    ) -> Result<Option<JournalHead>> {
        let name = Self::file_name(key);
        let Some(bytes) = dir.read(&name)? else {
            return Ok(None);
        };
        let h: HeadRepr = parse(dir, &name, &bytes)?;
        check_key(dir, &name, &h.key, key)?;
        check_owner(dir, key, &h.namespace, id, target)?;
        if h.version != JOURNAL_VERSION {
            return Err(corrupt(
                dir,
                &name,
                format!(
                    "format version {}; this roce-net reads version {JOURNAL_VERSION}",
                    h.version
                ),
            ));
        }
        let state = state_of(&h.state, h.deadline)
            .map_err(|e| corrupt(dir, &name, format!("corrupt: {e}")))?;
        Ok(Some(JournalHead {
            state,
            errors: h.errors,
        }))
    }

    /// Apply the step log's entries to the steps, in order, when the log belongs
    /// to this apply and phase. A last line without its newline (a write cut
    /// short) is ignored.
    fn replay_log(&mut self, dir: &StateDir, phase: Phase) -> Result<()> {
        let name = Self::log_name(&self.key);
        let Some(bytes) = dir.read(&name)? else {
            return Ok(());
        };
        let path = dir.file(&name);
        let text = String::from_utf8_lossy(&bytes);
        let complete = match text.rfind('\n') {
            Some(end) => &text[..end],
            None => return Ok(()),
        };
        let mut lines = complete.lines().enumerate();
        match lines.next() {
            Some((_, h)) if format!("{h}\n") == header(&self.apply_id, phase) => {}
            // Another apply's or phase's log: this journal is complete without it.
            _ => return Ok(()),
        }
        for (n, line) in lines {
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
                        "journal step log {} is corrupt at line {} ({line:?}); {}",
                        path.display(),
                        n + 1,
                        archive_hint()
                    ),
                ));
            };
            self.steps[i].status = status;
        }
        Ok(())
    }
}

fn corrupt(dir: &StateDir, name: &str, why: String) -> Error {
    Error::new(
        ErrorKind::Parse,
        format!(
            "journal {} cannot be used ({why}); {}",
            dir.file(name).display(),
            archive_hint()
        ),
    )
}

/// Parse a journal (or a part of one); a document of another format version,
/// or none, is named as such.
fn parse<T: serde::de::DeserializeOwned>(dir: &StateDir, name: &str, bytes: &[u8]) -> Result<T> {
    #[derive(Deserialize)]
    struct Version {
        version: Option<u64>,
    }
    match serde_json::from_slice::<T>(bytes) {
        Ok(v) => Ok(v),
        Err(e) => Err(corrupt(
            dir,
            name,
            match serde_json::from_slice::<Version>(bytes).map(|v| v.version) {
                Ok(Some(n)) if n != u64::from(JOURNAL_VERSION) => {
                    format!("format version {n}; this roce-net reads version {JOURNAL_VERSION}")
                }
                Ok(None) => "no format version: written by an older roce-net, which did not \
                             record which namespace it belongs to"
                    .to_string(),
                _ => format!("corrupt: {e}"),
            },
        )),
    }
}

fn check_key(dir: &StateDir, name: &str, found: &str, key: &str) -> Result<()> {
    if found != key {
        return Err(corrupt(
            dir,
            name,
            format!("it names key {found:?}, but its file is for {key:?}"),
        ));
    }
    Ok(())
}

/// Refuse a journal written for another namespace, naming both.
fn check_owner(
    dir: &StateDir,
    key: &str,
    owner: &NamespaceRecord,
    id: &NamespaceId,
    target: &str,
) -> Result<()> {
    if owner.id != *id {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!(
                "journal {} belongs to {owner}, not to {target} ({id}): it was written for \
                 another network namespace (or another boot) and is never used here; {}",
                dir.file(&Journal::file_name(key)).display(),
                archive_hint()
            ),
        ));
    }
    Ok(())
}

/// The open step log of the apply or rollback in progress.
pub(crate) struct StepLog {
    file: File,
    path: PathBuf,
    /// Lines recorded but not yet written; see [`StepLog::flush`].
    pending: String,
}

impl StepLog {
    /// Start a new step log for `j` and `phase`, replacing any earlier one. The
    /// header ties it to this apply and phase, so creating it before or after
    /// the journal is saved is equally safe.
    pub(crate) fn create(dir: &StateDir, j: &Journal, phase: Phase) -> Result<StepLog> {
        let name = Journal::log_name(&j.key);
        let file = dir.create_fresh(&name)?;
        Ok(StepLog {
            file,
            path: dir.file(&name),
            pending: header(&j.apply_id, phase),
        })
    }

    /// Set step `index`'s status in `j` and record it. The line is buffered: call
    /// [`StepLog::flush`] before the step's change reaches the kernel. A `done`
    /// line thus goes out with the next step's `started` line in one `write`
    /// (half the system calls of an apply); a crash between a change and that
    /// write leaves the step `started`, which rollback undoes all the same.
    pub(crate) fn set(&mut self, j: &mut Journal, index: usize, status: StepStatus) {
        j.steps[index].status = status;
        // The index's digits without the formatting machinery (two lines a
        // step: it showed in the profile of an apply).
        let mut digits = [0u8; 20];
        let (mut at, mut n) = (digits.len(), index);
        loop {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.pending
            .push_str(std::str::from_utf8(&digits[at..]).unwrap_or("0"));
        self.pending.push(' ');
        self.pending.push_str(status.log_word());
        self.pending.push('\n');
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

    fn id() -> NamespaceId {
        NamespaceId {
            cookie: 7,
            boot_id: "00000000-0000-0000-0000-000000000001".into(),
        }
    }

    fn journal(steps: usize) -> Journal {
        let change = |id: u32| Change::RegisterTableName {
            id,
            name: format!("t{id}"),
            before: None,
        };
        Journal {
            version: JOURNAL_VERSION,
            key: id().key(),
            namespace: NamespaceRecord {
                id: id(),
                name: Some("rnt-x".into()),
                path: None,
            },
            apply_id: "a1".into(),
            started_at: 1,
            confirm_deadline: None,
            confirm_deadline_boot_ms: None,
            state: JournalState::Applying,
            steps: (0..steps as u32)
                .map(|i| Step {
                    change: change(1000 + i),
                    inverse: change(1000 + i).inverse().unwrap(),
                    status: StepStatus::Pending,
                    append: false,
                })
                .collect(),
            failure: None,
            errors: Vec::new(),
            watchdog: None,
        }
    }

    fn statuses(j: &Journal) -> Vec<StepStatus> {
        j.steps.iter().map(|s| s.status).collect()
    }

    fn load(d: &StateDir) -> Result<Option<Journal>> {
        Journal::load(d, &id().key(), &id(), "the test namespace")
    }

    #[test]
    fn step_log_is_replayed_onto_an_applying_journal() {
        let t = tempfile::tempdir().unwrap();
        let d = StateDir::create(t.path()).unwrap();
        let mut j = journal(3);
        let mut log = StepLog::create(&d, &j, Phase::Apply).unwrap();
        j.save(&d).unwrap();
        log.set(&mut j, 0, StepStatus::Started);
        log.set(&mut j, 0, StepStatus::Done);
        log.set(&mut j, 1, StepStatus::Started);
        // Buffered lines are not in the file until flushed.
        let unflushed = load(&d).unwrap().unwrap();
        assert_eq!(statuses(&unflushed), vec![StepStatus::Pending; 3]);
        log.flush().unwrap();
        let loaded = load(&d).unwrap().unwrap();
        use StepStatus::*;
        assert_eq!(statuses(&loaded), vec![Done, Started, Pending]);
        assert_eq!(loaded, j, "the loaded journal is the one in memory");
        // The journal file alone still says nothing was done.
        let plain = Journal::load_unchecked(&d, &j.key).unwrap().unwrap();
        assert_eq!(statuses(&plain), vec![Pending, Pending, Pending]);
    }

    /// The journal written with its steps rendered once is the journal serde
    /// writes whole (the same JSON value) and loads back equal, in every
    /// state, with every status and with an `append` step; a rendering of
    /// another journal's steps (another length) is not used.
    #[test]
    fn a_save_with_the_steps_rendered_once_is_the_whole_journal() {
        let t = tempfile::tempdir().unwrap();
        let d = StateDir::create(t.path()).unwrap();
        let mut j = journal(5);
        j.steps[1].append = true;
        j.watchdog = Some(WatchdogRecord {
            pid: Some(42),
            started: Some(7),
            outcome: None,
            at: None,
            message: Some("say \"so\"\n".into()),
        });
        let rendered = StepsJson::of(&j).unwrap();
        let states = [
            JournalState::Applying,
            JournalState::PendingConfirm { deadline: 99 },
            JournalState::Committed,
            JournalState::RollingBack,
            JournalState::RolledBack,
            JournalState::RollbackFailed,
        ];
        let all = [
            StepStatus::Pending,
            StepStatus::Started,
            StepStatus::Done,
            StepStatus::Undone,
            StepStatus::Skipped,
        ];
        for (n, state) in states.into_iter().enumerate() {
            j.state = state;
            for (i, st) in j.steps.iter_mut().enumerate() {
                st.status = all[(i + n) % all.len()];
            }
            j.errors = vec![format!("error {n}")];
            j.failure = (n % 2 == 0).then(|| "it failed".to_string());
            j.save_with(&d, &rendered).unwrap();
            let bytes = std::fs::read(d.file(&Journal::file_name(&j.key))).unwrap();
            let written: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(
                written,
                serde_json::to_value(&j).unwrap(),
                "{}",
                j.state.name()
            );
            assert_eq!(Journal::load_unchecked(&d, &j.key).unwrap().unwrap(), j);
        }
        let other = StepsJson::of(&journal(2)).unwrap();
        j.save_with(&d, &other).unwrap();
        assert_eq!(Journal::load_unchecked(&d, &j.key).unwrap().unwrap(), j);
    }

    #[test]
    fn a_cut_short_last_line_is_ignored_and_corruption_refused() {
        let t = tempfile::tempdir().unwrap();
        let d = StateDir::create(t.path()).unwrap();
        let mut j = journal(2);
        let mut log = StepLog::create(&d, &j, Phase::Apply).unwrap();
        j.save(&d).unwrap();
        log.set(&mut j, 0, StepStatus::Started);
        log.flush().unwrap();
        let path = d.file(&Journal::log_name(&j.key));
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(b"0 do").unwrap();
        let loaded = load(&d).unwrap().unwrap();
        assert_eq!(
            statuses(&loaded),
            vec![StepStatus::Started, StepStatus::Pending]
        );
        let h = header("a1", Phase::Apply);
        for bad in [
            "0 done\n5 done\n",
            "0 finished\n",
            "x started\n",
            "0 done extra\n",
        ] {
            std::fs::write(&path, format!("{h}{bad}")).unwrap();
            let e = load(&d).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Parse, "{bad:?}");
            assert!(e.to_string().contains("journal.log"), "{e}");
            assert!(e.to_string().contains("roce-net archive"), "{e}");
        }
    }

    #[test]
    fn a_log_of_another_apply_or_phase_is_ignored() {
        let t = tempfile::tempdir().unwrap();
        let d = StateDir::create(t.path()).unwrap();
        let mut j = journal(2);
        let mut log = StepLog::create(&d, &j, Phase::Apply).unwrap();
        j.save(&d).unwrap();
        log.set(&mut j, 0, StepStatus::Started);
        log.set(&mut j, 0, StepStatus::Done);
        log.flush().unwrap();
        // The next apply writes its journal before its log exists: the old log
        // (another apply id) must not be replayed onto it.
        let mut next = journal(2);
        next.apply_id = "a2".into();
        next.save(&d).unwrap();
        assert_eq!(
            statuses(&load(&d).unwrap().unwrap()),
            vec![StepStatus::Pending; 2]
        );
        // A rolling-back journal ignores the apply phase's log (it is baked in).
        j.state = JournalState::RollingBack;
        j.save(&d).unwrap();
        let got = load(&d).unwrap().unwrap();
        assert_eq!(statuses(&got), vec![StepStatus::Done, StepStatus::Pending]);
        let mut rlog = StepLog::create(&d, &j, Phase::Rollback).unwrap();
        rlog.set(&mut j, 0, StepStatus::Undone);
        rlog.flush().unwrap();
        let got = load(&d).unwrap().unwrap();
        assert_eq!(
            statuses(&got),
            vec![StepStatus::Undone, StepStatus::Pending]
        );
    }

    #[test]
    fn a_journal_of_another_namespace_or_format_is_refused_with_both_named() {
        let t = tempfile::tempdir().unwrap();
        let d = StateDir::create(t.path()).unwrap();
        let j = journal(1);
        j.save(&d).unwrap();
        let other = NamespaceId { cookie: 8, ..id() };
        let e = Journal::load(&d, &j.key, &other, "network namespace \"rnt-y\"").unwrap_err();
        let s = e.to_string();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{s}");
        assert!(s.contains("\"rnt-x\", cookie 7"), "{s}");
        assert!(s.contains("\"rnt-y\" (cookie 8"), "{s}");
        assert!(s.contains("roce-net archive"), "{s}");
        // A version-1 journal (no namespace identity) is refused, with what to do.
        std::fs::write(
            d.file(&Journal::file_name(&j.key)),
            r#"{"key":"x","netns":null,"started_at":1,"state":"committed","steps":[]}"#,
        )
        .unwrap();
        let e = load(&d).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Parse);
        assert!(e.to_string().contains("older roce-net"), "{e}");
        std::fs::write(d.file(&Journal::file_name(&j.key)), "{not json").unwrap();
        let e = load(&d).unwrap_err();
        assert!(e.to_string().contains("corrupt"), "{e}");
        assert!(e.to_string().contains("roce-net archive"), "{e}");
    }
}
