//! Executing a [`Plan`] as a transaction (DESIGN decision 5).
//!
//! 1. take the namespace's lock; refuse while an earlier apply awaits confirmation;
//! 2. re-read the host and refuse if it drifted since the plan was made;
//! 3. validate every change (inverse computable, values in range);
//! 4. apply change by change, journalling each step (with its inverse) before and
//!    after it reaches the kernel;
//! 5. verify: re-read the host and re-plan; the new plan must be empty;
//! 6. on any failure, undo the applied steps in reverse and say what failed and
//!    what was restored.
//!
//! With a confirm timeout, the journal stays `pending_confirm` until
//! [`confirm`]; [`watchdog`] (run detached by the CLI and the Python binding)
//! rolls back when the deadline passes. [`rollback`] undoes the last apply from
//! its journal, also after a crash.

mod execute;
mod journal;
mod lock;

use journal::StepLog;
pub use journal::{Journal, JournalState, Step, StepStatus};
pub use lock::NsLock;

use crate::error::{Error, ErrorKind, Result};
use crate::host::Host;
use crate::kernel::procfs;
use crate::plan::{self, Change, Plan};
use crate::rt_tables::{check_table_name, set_table_names};
use execute::{execute, Target};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Default directory for locks and journals.
pub const DEFAULT_STATE_DIR: &str = "/run/roce-net";

/// How to apply.
#[derive(Debug, Clone)]
pub struct ApplyOptions {
    /// Where locks and journals live (`/run/roce-net`).
    pub state_dir: PathBuf,
    /// Roll back on its own unless [`confirm`] arrives within this time. The
    /// caller must run [`watchdog`] (the CLI starts a detached process for it).
    pub confirm_timeout: Option<Duration>,
    /// Test hook: fail as if the kernel refused the change at this index (0-based),
    /// after the earlier ones were applied.
    #[doc(hidden)]
    pub fail_at: Option<usize>,
    /// Test hook: stop for this long after applying the change at this index,
    /// so a test can kill the process mid-apply.
    #[doc(hidden)]
    pub pause_after: Option<(usize, Duration)>,
}

impl Default for ApplyOptions {
    fn default() -> Self {
        ApplyOptions {
            state_dir: PathBuf::from(DEFAULT_STATE_DIR),
            confirm_timeout: None,
            fail_at: None,
            pause_after: None,
        }
    }
}

/// What an apply did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApplyReport {
    /// Number of changes applied.
    pub applied: usize,
    /// One line per change applied.
    pub changes: Vec<String>,
    /// When set, the apply must be confirmed by then (Unix seconds) or it is
    /// rolled back.
    pub confirm_deadline: Option<u64>,
    /// The journal file.
    pub journal: PathBuf,
}

/// What a rollback did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RollbackReport {
    /// One line per change undone, in the order undone.
    pub undone: Vec<String>,
    /// The journal's state before the rollback.
    pub was: String,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A stable key for the host's namespace: its nsfs inode, so one namespace has one
/// lock and one journal whatever name or path reaches it.
pub fn namespace_key(host: &Host) -> Result<String> {
    let path = host
        .target()
        .file()
        .unwrap_or_else(|| PathBuf::from("/proc/thread-self/ns/net"));
    let md = std::fs::metadata(&path)
        .map_err(|e| Error::io(e, format!("reading namespace inode of {}", path.display())))?;
    Ok(format!("net-{}", md.ino()))
}

/// The inverse of every change, or an error naming the first change that cannot
/// be undone (nothing is applied then).
fn steps_for(plan: &Plan) -> Result<Vec<Step>> {
    plan.changes
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let inverse = c.inverse().ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidInput,
                    format!(
                        "change {} of {} ({}) cannot be undone: its current value could not be read; \
                         nothing was applied",
                        i + 1,
                        plan.changes.len(),
                        c.describe()
                    ),
                )
            })?;
            Ok(Step {
                change: c.clone(),
                inverse,
                status: StepStatus::Pending,
            })
        })
        .collect()
}

/// Apply a plan to a host as a transaction. See the module documentation.
pub fn apply(host: &Host, plan: &Plan, opts: &ApplyOptions) -> Result<ApplyReport> {
    let key = namespace_key(host)?;
    let _lock = NsLock::acquire(&opts.state_dir, &key)?;
    if let Some(j) = Journal::load(&opts.state_dir, &key)? {
        match j.state {
            JournalState::PendingConfirm { deadline } => {
                return Err(Error::new(
                    ErrorKind::Locked,
                    format!(
                        "an earlier apply awaits confirmation until {deadline} (Unix time); \
                         run `roce-net confirm` or `roce-net rollback` first"
                    ),
                ))
            }
            JournalState::Applying => {
                return Err(Error::new(
                    ErrorKind::Locked,
                    "an earlier apply did not finish (crashed or killed); run `roce-net rollback` \
                     to restore the host before applying again",
                ))
            }
            _ => {}
        }
    }

    let current = host.snapshot()?;
    let fp = plan::fingerprint(&current);
    if fp != plan.base_fingerprint {
        return Err(Error::new(
            ErrorKind::Drift,
            format!(
                "the host changed since the plan was made (state {} then, {} now); \
                 make a new plan with `roce-net plan` and review it",
                plan.base_fingerprint, fp
            ),
        ));
    }
    if plan.is_empty() {
        return Ok(ApplyReport {
            applied: 0,
            changes: Vec::new(),
            confirm_deadline: None,
            journal: Journal::path(&opts.state_dir, &key),
        });
    }
    let mut journal = Journal {
        key: key.clone(),
        netns: host.target().name().map(str::to_string),
        started_at: now(),
        state: JournalState::Applying,
        steps: steps_for(plan)?,
        errors: Vec::new(),
    };
    let mut log = StepLog::create(&opts.state_dir, &key)?;
    journal.save(&opts.state_dir)?;

    let etc_root = host.etc_root().to_path_buf();
    let state_dir = opts.state_dir.clone();
    let forward = host.with_netlink(|nl| {
        let mut t = Target {
            nl,
            proc_sys: Path::new(procfs::PROC_SYS),
            etc_root: &etc_root,
        };
        run_forward(&mut t, &mut journal, &mut log, opts)
            .map_err(|e| undo_after_failure(&mut t, &mut journal, &state_dir, e))?;
        Ok(journal)
    });
    let mut journal = forward?;

    // Verify: re-read and re-plan; only one-shot neighbour flushes may remain.
    let after = host.snapshot()?;
    let again = plan::plan(&after, &plan.policy)?;
    let left: Vec<&Change> = again
        .changes
        .iter()
        .filter(|c| !matches!(c, Change::FlushNeighbors { .. }))
        .collect();
    if !left.is_empty() {
        let what: Vec<String> = left.iter().map(|c| c.describe()).collect();
        let err = Error::new(
            ErrorKind::Verify,
            format!(
                "after applying, the host still differs from the policy: {}",
                what.join("; ")
            ),
        );
        let res = host.with_netlink(|nl| {
            let mut t = Target {
                nl,
                proc_sys: Path::new(procfs::PROC_SYS),
                etc_root: &etc_root,
            };
            Err(undo_after_failure(&mut t, &mut journal, &state_dir, err))
        });
        return res;
    }

    let deadline = opts.confirm_timeout.map(|d| now() + d.as_secs().max(1));
    journal.state = match deadline {
        Some(d) => JournalState::PendingConfirm { deadline: d },
        None => JournalState::Committed,
    };
    journal.save(&opts.state_dir)?;
    Ok(ApplyReport {
        applied: journal.steps.len(),
        changes: journal.steps.iter().map(|s| s.change.describe()).collect(),
        confirm_deadline: deadline,
        journal: Journal::path(&opts.state_dir, &key),
    })
}

fn run_forward(
    t: &mut Target<'_>,
    j: &mut Journal,
    log: &mut StepLog,
    opts: &ApplyOptions,
) -> Result<()> {
    let n = j.steps.len();
    let mut i = 0;
    while i < n {
        let end = table_name_run(j, i, opts);
        if end > i + 1 {
            forward_table_names(t, j, log, i, end)?;
            i = end;
            continue;
        }
        log.set(j, i, StepStatus::Started);
        log.flush()?;
        let change = &j.steps[i].change;
        let res = if opts.fail_at == Some(i) {
            Err(Error::new(
                ErrorKind::Netlink,
                "injected failure (test hook)",
            ))
        } else {
            execute(t, change, false)
        };
        res.map_err(|e| e.context(format!("change {} of {n} ({})", i + 1, change.describe())))?;
        log.set(j, i, StepStatus::Done);
        if let Some((at, pause)) = opts.pause_after {
            if at == i {
                log.flush()?;
                std::thread::sleep(pause);
            }
        }
        i += 1;
    }
    log.flush()
}

/// The table name of a step that registers or removes one, if it is valid.
fn table_name_update(c: &Change) -> Option<(u32, Option<&str>)> {
    match c {
        Change::RegisterTableName { id, name, .. } => {
            check_table_name(*id, name).ok()?;
            Some((*id, Some(name.as_str())))
        }
        Change::UnregisterTableName { id, .. } => Some((*id, None)),
        _ => None,
    }
}

/// The end of the run of table-name steps starting at `i` that can be written
/// together: valid names only, and the test hooks' steps keep their own turn.
fn table_name_run(j: &Journal, i: usize, opts: &ApplyOptions) -> usize {
    let mut end = i;
    while end < j.steps.len() && table_name_update(&j.steps[end].change).is_some() {
        if opts.fail_at == Some(end) {
            break;
        }
        end += 1;
        if opts.pause_after.is_some_and(|(at, _)| at + 1 == end) {
            break;
        }
    }
    end
}

/// Steps `i..end`, all table-name updates, with one write of the names file:
/// each is journalled as started before the write and done after it, exactly as
/// one by one. A failed write counts as the failure of step `i` (the write is
/// atomic, so none of them took effect).
fn forward_table_names(
    t: &mut Target<'_>,
    j: &mut Journal,
    log: &mut StepLog,
    i: usize,
    end: usize,
) -> Result<()> {
    let n = j.steps.len();
    for k in i..end {
        log.set(j, k, StepStatus::Started);
    }
    log.flush()?;
    let updates: Vec<(u32, Option<&str>)> = j.steps[i..end]
        .iter()
        .filter_map(|s| table_name_update(&s.change))
        .collect();
    if let Err(e) = set_table_names(t.etc_root, &updates) {
        for k in i + 1..end {
            j.steps[k].status = StepStatus::Pending;
        }
        return Err(e.context(format!(
            "change {} of {n} ({})",
            i + 1,
            j.steps[i].change.describe()
        )));
    }
    for k in i..end {
        log.set(j, k, StepStatus::Done);
    }
    Ok(())
}

/// Undo every started step in reverse; return the error to report.
fn undo_after_failure(
    t: &mut Target<'_>,
    j: &mut Journal,
    state_dir: &Path,
    cause: Error,
) -> Error {
    let undone = undo(t, j);
    let _ = j.save(state_dir);
    if j.errors.is_empty() {
        let kind = if cause.kind() == ErrorKind::Verify {
            ErrorKind::Verify
        } else {
            ErrorKind::RolledBack
        };
        Error::new(
            kind,
            format!(
                "{cause}; rolled back {} change(s), the host is as before{}",
                undone.len(),
                if undone.is_empty() {
                    String::new()
                } else {
                    format!(": {}", undone.join("; "))
                }
            ),
        )
        .with_errno(cause.errno_value().unwrap_or(0))
        .with_extack(cause.extack().unwrap_or_default())
    } else {
        Error::new(
            ErrorKind::RollbackFailed,
            format!(
                "{cause}; rollback failed too, the host may be in a mixed state: {}. \
                 Undone: {}. The journal is kept; fix the cause and run `roce-net rollback`",
                j.errors.join("; "),
                undone.join("; ")
            ),
        )
    }
}

/// Undo started/done steps in reverse order, tolerating objects already in their
/// restored state. Errors are recorded in the journal and undoing goes on.
fn undo(t: &mut Target<'_>, j: &mut Journal) -> Vec<String> {
    let mut undone = Vec::new();
    j.errors.clear();
    for step in j.steps.iter_mut().rev() {
        if !matches!(step.status, StepStatus::Started | StepStatus::Done) {
            continue;
        }
        match execute(t, &step.inverse, true) {
            Ok(()) => {
                step.status = StepStatus::Undone;
                undone.push(step.inverse.describe());
            }
            Err(e) => j
                .errors
                .push(format!("undoing {}: {e}", step.change.describe())),
        }
    }
    j.state = if j.errors.is_empty() {
        JournalState::RolledBack
    } else {
        JournalState::RollbackFailed
    };
    undone
}

/// Undo the last apply from its journal (also after a crash or a killed apply).
/// `NotFound` when there is nothing to roll back.
pub fn rollback(host: &Host, opts: &ApplyOptions) -> Result<RollbackReport> {
    let key = namespace_key(host)?;
    let _lock = NsLock::acquire(&opts.state_dir, &key)?;
    rollback_locked(host, opts, &key)
}

fn rollback_locked(host: &Host, opts: &ApplyOptions, key: &str) -> Result<RollbackReport> {
    let Some(mut j) = Journal::load(&opts.state_dir, key)? else {
        return Err(Error::new(
            ErrorKind::NotFound,
            format!(
                "no apply journal for this namespace in {}: nothing to roll back",
                opts.state_dir.display()
            ),
        ));
    };
    if j.state == JournalState::RolledBack {
        return Err(Error::new(
            ErrorKind::NotFound,
            "the last apply was already rolled back",
        ));
    }
    let was = serde_json::to_value(&j.state)
        .ok()
        .and_then(|v| v.get("state").and_then(|s| s.as_str()).map(str::to_string))
        .unwrap_or_default();
    let etc_root = host.etc_root().to_path_buf();
    let state_dir = opts.state_dir.clone();
    host.with_netlink(move |nl| {
        let mut t = Target {
            nl,
            proc_sys: Path::new(procfs::PROC_SYS),
            etc_root: &etc_root,
        };
        let undone = undo(&mut t, &mut j);
        j.save(&state_dir)?;
        if j.errors.is_empty() {
            Ok(RollbackReport { undone, was })
        } else {
            Err(Error::new(
                ErrorKind::RollbackFailed,
                format!(
                    "rollback incomplete: {}; undone: {}",
                    j.errors.join("; "),
                    undone.join("; ")
                ),
            ))
        }
    })
}

/// Confirm an apply made with a confirm timeout, so the watchdog keeps it.
pub fn confirm(host: &Host, opts: &ApplyOptions) -> Result<()> {
    let key = namespace_key(host)?;
    let _lock = NsLock::acquire(&opts.state_dir, &key)?;
    match Journal::load(&opts.state_dir, &key)? {
        Some(mut j) if matches!(j.state, JournalState::PendingConfirm { .. }) => {
            j.state = JournalState::Committed;
            j.save(&opts.state_dir)
        }
        Some(j) => Err(Error::new(
            ErrorKind::NotFound,
            format!(
                "nothing awaits confirmation (the last apply is {})",
                serde_json::to_value(&j.state)
                    .ok()
                    .and_then(|v| v.get("state").and_then(|s| s.as_str()).map(str::to_string))
                    .unwrap_or_default()
            ),
        )),
        None => Err(Error::new(
            ErrorKind::NotFound,
            "no apply journal for this namespace: nothing to confirm",
        )),
    }
}

/// What the watchdog did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WatchdogOutcome {
    /// Confirmed in time; nothing done.
    Confirmed,
    /// The deadline passed; rolled back.
    RolledBack(RollbackReport),
    /// There was nothing pending.
    NothingPending,
}

/// Wait for the pending apply's deadline; roll back unless it was confirmed.
/// Blocks; meant to run in a detached process.
pub fn watchdog(host: &Host, opts: &ApplyOptions) -> Result<WatchdogOutcome> {
    let key = namespace_key(host)?;
    loop {
        let Some(j) = Journal::load(&opts.state_dir, &key)? else {
            return Ok(WatchdogOutcome::NothingPending);
        };
        match j.state {
            JournalState::PendingConfirm { deadline } => {
                if now() >= deadline {
                    let _lock = NsLock::acquire(&opts.state_dir, &key)?;
                    // Re-check under the lock: a confirm may have won the race.
                    match Journal::load(&opts.state_dir, &key)? {
                        Some(j) if matches!(j.state, JournalState::PendingConfirm { .. }) => {
                            return rollback_locked(host, opts, &key)
                                .map(WatchdogOutcome::RolledBack)
                        }
                        _ => return Ok(WatchdogOutcome::Confirmed),
                    }
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            JournalState::Committed => return Ok(WatchdogOutcome::Confirmed),
            _ => return Ok(WatchdogOutcome::NothingPending),
        }
    }
}

/// The journal of the last apply in this namespace, if any.
pub fn status(host: &Host, opts: &ApplyOptions) -> Result<Option<Journal>> {
    Journal::load(&opts.state_dir, &namespace_key(host)?)
}
