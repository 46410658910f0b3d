//! The confirm-timeout watchdog (see `confirm.rs` for how it is armed).
//!
//! It waits for its guard's deadline (leaving early once the apply it guards is
//! confirmed or rolled back, or is no longer the pending one: its journal
//! replaced by a newer apply's, removed, or unreadable), then **waits for the namespace's lock** (an apply
//! or rollback still running finishes first; bounded by
//! [`ApplyOptions::watchdog_lock_wait`]), then rolls back the guarded apply if it
//! is still open: `applying` (the applier died or hung up), `pending_confirm`
//! (not confirmed in time) or `rolling_back` (a rollback was killed). It only
//! ever acts on the journal with its guard's apply id, and only inside the
//! namespace with its guard's cookie: a namespace deleted and created again
//! under the same name is another namespace, left alone. What it did is written
//! into the journal (`watchdog.outcome`), which `roce-net status` shows.
//!
//! The deadline is timed on the boot clock (`clock.rs`): a wall-clock step
//! neither rolls back early nor keeps an apply past its time. Asked to stop
//! before its apply is confirmed ([`watchdog_until`]: `SIGTERM`, `SIGHUP`,
//! `SIGINT` in the CLI), it rolls back then, as at the deadline. A state
//! directory that cannot record the rollback (full, read-only) is tried again
//! every few seconds, undoing nothing until it can; a lock it cannot get
//! within [`ApplyOptions::watchdog_lock_wait`] is recorded as `failed`, with
//! who holds it.

use super::clock;
use super::clock::now;
use super::identity::{describe_target, namespace_id, NamespaceId};
use super::journal::{Journal, JournalState, WatchdogRecord};
use super::transaction::{self, Session};
use super::{in_namespace, privilege, record, ApplyOptions, ConfirmGuard, NsLock, RollbackReport};
use crate::error::{Error, ErrorKind, Result};
use crate::files::statedir::StateDir;
use crate::host::Host;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

/// What the watchdog did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WatchdogOutcome {
    /// Confirmed in time; nothing done.
    Confirmed,
    /// The deadline passed; rolled back.
    RolledBack(RollbackReport),
    /// There was nothing pending (the guarded apply never started, failed and was
    /// rolled back, or was rolled back by hand).
    NothingPending,
    /// The guarded namespace is gone or is now another one; nothing done.
    NamespaceChanged(String),
}

/// The error for a namespace that is not the one expected.
pub(crate) fn namespace_changed(host: &Host, want: &NamespaceId, got: &NamespaceId) -> Error {
    Error::new(
        ErrorKind::InvalidInput,
        format!(
            "{} is now another namespace ({got}) than the one guarded ({want}): it was deleted \
             and created again; nothing was changed in it",
            describe_target(host)
        ),
    )
}

/// The guarded apply's outcome if it is already finished.
fn finished(dir: &StateDir, key: &str, apply_id: &str) -> Option<WatchdogOutcome> {
    let j = Journal::load_unchecked(dir, key).ok()??;
    if j.apply_id != apply_id {
        return None;
    }
    match j.state {
        JournalState::Committed => Some(WatchdogOutcome::Confirmed),
        JournalState::RolledBack | JournalState::RollbackFailed => {
            stand_down(
                dir,
                &j,
                &format!(
                    "the apply was {} before the deadline; the watchdog stood down",
                    j.state.name().replace('_', " ")
                ),
            );
            Some(WatchdogOutcome::NothingPending)
        }
        _ => None,
    }
}

/// Whether the guarded apply is no longer the pending one. Once its journal
/// was seen (`seen`; the watchdog is armed before the apply writes it), a
/// journal of another apply (a newer apply replaced it), none (archived, or the
/// state directory removed) or one that cannot be read leaves nothing this
/// watchdog could roll back at its deadline: it leaves at once instead of
/// waiting the deadline out.
fn superseded(dir: &StateDir, key: &str, apply_id: &str, seen: &mut bool) -> bool {
    match Journal::load_unchecked(dir, key) {
        Ok(Some(j)) if j.apply_id == apply_id => {
            *seen = true;
            false
        }
        _ => *seen,
    }
}

/// Record in `j` (the journal as just saved) that its watchdog has nothing
/// left to guard (`stood_down`), unless it already recorded an outcome: a
/// rollback by hand, or the watchdog finding its apply already rolled back.
/// Without this, `status` would say the watchdog waits for a deadline long
/// after it exited. Best effort: the journal's undo record is already saved,
/// and this only adds what the watchdog did.
pub(crate) fn stand_down(dir: &StateDir, j: &Journal, message: &str) {
    let Some(w) = &j.watchdog else { return };
    if w.outcome.is_some() {
        return;
    }
    let mut j = j.clone();
    if let Some(w) = j.watchdog.as_mut() {
        w.outcome = Some("stood_down".to_string());
        w.at = Some(now());
        w.message = Some(message.to_string());
    }
    let _ = j.save(dir);
}

fn record_outcome(dir: &StateDir, key: &str, outcome: &str, message: String) {
    if let Ok(Some(mut j)) = Journal::load_unchecked(dir, key) {
        let w = j.watchdog.get_or_insert(WatchdogRecord {
            pid: None,
            started: None,
            outcome: None,
            at: None,
            message: None,
        });
        w.outcome = Some(outcome.to_string());
        w.at = Some(now());
        w.message = Some(message);
        let _ = j.save(dir);
    }
}

/// How long the watchdog waits before trying again to roll back when the
/// state directory could not record it (full, read-only).
const RETRY: Duration = if cfg!(test) {
    Duration::from_millis(200)
} else {
    Duration::from_secs(5)
};

/// Wait for the guarded apply's deadline; roll back unless it was confirmed.
/// Blocks; meant to run in a detached process. With [`ApplyOptions::guard`] it
/// guards that apply (armed before it started); without, the pending apply of
/// the host's namespace as its journal records it.
pub fn watchdog(host: &Host, opts: &ApplyOptions) -> Result<WatchdogOutcome> {
    watchdog_until(host, opts, &AtomicI32::new(0))
}

/// [`watchdog`], asked to stop early through `stop`: once it holds a signal
/// number (the caller's handler of `SIGTERM`, `SIGHUP` or `SIGINT` stores
/// it), the watchdog does what the deadline would have done now: an apply
/// not yet confirmed is rolled back (fail safe: an unguarded apply could cut
/// the operator off for good), and the journal records which signal asked.
pub fn watchdog_until(
    host: &Host,
    opts: &ApplyOptions,
    stop: &AtomicI32,
) -> Result<WatchdogOutcome> {
    privilege::require_net_admin("the confirm watchdog")?;
    let dir = StateDir::create(&opts.state_dir)?;
    let guard = match &opts.guard {
        Some(g) => g.clone(),
        None => {
            let id = namespace_id(host)?;
            match Journal::load(&dir, &id.key(), &id, &describe_target(host))? {
                Some(j) if j.state.is_open() => match j.confirm_deadline {
                    Some(deadline) => ConfirmGuard {
                        apply_id: j.apply_id,
                        deadline,
                        boot_deadline_ms: j.confirm_deadline_boot_ms,
                        namespace: id,
                        watchdog_pid: None,
                    },
                    None => return Ok(WatchdogOutcome::NothingPending),
                },
                Some(j) if j.state == JournalState::Committed => {
                    return Ok(WatchdogOutcome::Confirmed)
                }
                _ => return Ok(WatchdogOutcome::NothingPending),
            }
        }
    };
    let mut guard = guard;
    if guard.boot_deadline_ms.is_none() {
        // Armed without a boot-clock deadline (an older caller): fix it now,
        // from the wall clock as it is when the watchdog starts.
        let left = Duration::from_secs(guard.deadline).saturating_sub(clock::wall());
        guard.boot_deadline_ms =
            clock::boot_ms().map(|b| b.saturating_add(left.as_millis() as u64));
    }
    let key = guard.namespace.key();
    let mut signal = 0;
    let mut seen = false;
    loop {
        let left = clock::left(guard.deadline, guard.boot_deadline_ms);
        if left.is_zero() {
            break;
        }
        if let Some(done) = finished(&dir, &key, &guard.apply_id) {
            return Ok(done);
        }
        signal = stop.load(Ordering::SeqCst);
        if signal != 0 {
            break;
        }
        if superseded(&dir, &key, &guard.apply_id, &mut seen) {
            return Ok(WatchdogOutcome::NothingPending);
        }
        std::thread::sleep(left.min(Duration::from_millis(250)));
    }
    let why = match signal {
        0 => format!(
            "the deadline {} passed without `roce-net confirm`",
            crate::model::utc_time(guard.deadline)
        ),
        s => format!(
            "the watchdog was asked to stop ({}) before the deadline {} and before the apply \
             was confirmed",
            signal_name(s),
            crate::model::utc_time(guard.deadline)
        ),
    };

    loop {
        let lock = match NsLock::acquire_in(&dir, &key, Some(opts.watchdog_lock_wait)) {
            Ok(l) => l,
            // A state directory that cannot be written (read-only: the lock
            // file cannot be opened for writing; full) cannot record a
            // rollback either: try again, as below, never give up.
            Err(e)
                if matches!(
                    e.errno_value(),
                    Some(libc::EROFS | libc::ENOSPC | libc::EDQUOT)
                ) =>
            {
                std::thread::sleep(RETRY);
                continue;
            }
            Err(e) => {
                // Never silently: the journal says the apply was left in place.
                record_outcome(
                    &dir,
                    &key,
                    "failed",
                    format!(
                        "{why}, but the watchdog could not take the lock to roll back: {e}. The \
                         apply was NOT rolled back: run `roce-net rollback`"
                    ),
                );
                return Err(e);
            }
        };
        let Some(j) = Journal::load_unchecked(&dir, &key)? else {
            return Ok(WatchdogOutcome::NothingPending);
        };
        if j.apply_id != guard.apply_id || j.namespace.id != guard.namespace {
            return Ok(WatchdogOutcome::NothingPending);
        }
        match j.state {
            JournalState::Committed => return Ok(WatchdogOutcome::Confirmed),
            JournalState::RolledBack | JournalState::RollbackFailed => {
                return Ok(WatchdogOutcome::NothingPending)
            }
            _ => {}
        }
        let was = j.state.name();
        let res = in_namespace(host, None, |id, nl| {
            if id != guard.namespace {
                return Ok(Err(
                    namespace_changed(host, &guard.namespace, &id).to_string()
                ));
            }
            let s = Session {
                dir: StateDir::create(&opts.state_dir)?,
                record: record(host, &id),
                desc: describe_target(host),
                id,
            };
            let mut k = super::execute::Kernel::new(host, nl);
            Ok(Ok(transaction::rollback(&s, &mut k)))
        });
        return match res {
            Err(e) if e.kind() == ErrorKind::NotFound => {
                let msg = format!(
                    "{why}; {} no longer exists ({e}); nothing was changed",
                    describe_target(host)
                );
                record_outcome(&dir, &key, "namespace_gone", msg.clone());
                Ok(WatchdogOutcome::NamespaceChanged(msg))
            }
            Err(e) => {
                record_outcome(&dir, &key, "failed", format!("could not roll back: {e}"));
                Err(e)
            }
            Ok(Err(msg)) => {
                record_outcome(&dir, &key, "namespace_changed", msg.clone());
                Ok(WatchdogOutcome::NamespaceChanged(msg))
            }
            Ok(Ok(Ok((report, _)))) => {
                record_outcome(
                    &dir,
                    &key,
                    "rolled_back",
                    format!(
                        "{why} (the apply was {was}): rolled back {} change(s)",
                        report.undone.len()
                    ),
                );
                Ok(WatchdogOutcome::RolledBack(report))
            }
            // The state directory could not record the rollback (full or
            // read-only): nothing was undone, or all was and only the final
            // record is missing. Try again, without holding the lock, so an
            // operator's `rollback` can go first; never give up.
            Ok(Ok(Err(e))) if e.kind() == ErrorKind::Io => {
                drop(lock);
                std::thread::sleep(RETRY);
                continue;
            }
            Ok(Ok(Err(e))) => {
                record_outcome(
                    &dir,
                    &key,
                    "rollback_failed",
                    format!("{why}; rolling back failed: {e}"),
                );
                Err(e)
            }
        };
    }
}

/// For a process that runs [`watchdog_until`] (the CLI's `__watchdog`, the
/// Python binding's `roce_net._watchdog`): block `SIGHUP`, `SIGINT` and
/// `SIGTERM` in the calling thread and take them on a thread of its own,
/// which stores the first one's number in the flag returned (pass it as
/// `stop`). Call it before the process starts any other thread, so every
/// thread inherits the mask: the watchdog then rolls back its unconfirmed
/// apply instead of dying (a `pkill roce-net`, a shutdown or a logout must not
/// leave the apply unguarded). `SIGKILL` cannot be taken.
pub fn stop_on_signals() -> &'static AtomicI32 {
    static STOP: AtomicI32 = AtomicI32::new(0);
    // SAFETY: sigset manipulation on a local value; pthread_sigmask on this
    // thread (threads started later inherit the mask).
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGHUP, libc::SIGINT, libc::SIGTERM] {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    };
    std::thread::spawn(move || loop {
        let mut sig: libc::c_int = 0;
        // SAFETY: sigwait on a set of signals blocked in every thread.
        if unsafe { libc::sigwait(&set, &mut sig) } == 0 {
            let _ = STOP.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
        }
    });
    &STOP
}

/// `SIGTERM`, `SIGHUP`, `SIGINT` or the number.
fn signal_name(s: i32) -> String {
    match s {
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGHUP => "SIGHUP".into(),
        libc::SIGINT => "SIGINT".into(),
        n => format!("signal {n}"),
    }
}
