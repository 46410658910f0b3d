//! The confirm timeout: a dead man's switch armed before the first change.
//!
//! [`arm_confirm`] fixes the deadline and a random apply id for the namespace
//! *before* anything is applied; the caller starts the watchdog with that
//! [`ConfirmGuard`] (the CLI: a detached `roce-net __watchdog` in its own
//! session, so it survives the SSH session) and only then applies with it. The
//! journal carries the deadline from its first write, so from the first change
//! on, every change is covered: if the applier dies, hangs up or is killed, the
//! watchdog rolls back the unfinished (`applying`) journal at the deadline; if it
//! finishes, the watchdog rolls back unless [`confirm`] came first.

use super::clock::{deadline_after, now};
use super::identity::{namespace_id, NamespaceId};
use super::journal::{Journal, JournalState};
use super::{record, ApplyOptions, NsLock};
use crate::error::{Error, ErrorKind, Result};
use crate::files::statedir::StateDir;
use crate::host::Host;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A confirm deadline armed for one namespace before the apply it guards.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfirmGuard {
    /// The id the apply's journal will carry; the watchdog acts on that journal only.
    pub apply_id: String,
    /// When the watchdog rolls back unless confirmed (Unix seconds, for people).
    pub deadline: u64,
    /// The same deadline on `CLOCK_BOOTTIME` (milliseconds), which a step of
    /// the wall clock does not move; when set, it decides.
    #[serde(default)]
    pub boot_deadline_ms: Option<u64>,
    /// The namespace the apply is for; the watchdog touches no other.
    pub namespace: NamespaceId,
    /// The watchdog's process id, once started (recorded in the journal).
    pub watchdog_pid: Option<u32>,
}

/// Arm a confirm deadline `timeout` from now for the host's namespace. Start the
/// watchdog with the guard, then apply with [`ApplyOptions::guard`] set to it.
pub fn arm_confirm(host: &Host, timeout: Duration) -> Result<ConfirmGuard> {
    super::privilege::require_net_admin("apply")?;
    let (deadline, boot_deadline_ms) = deadline_after(timeout)?;
    Ok(ConfirmGuard {
        apply_id: crate::files::statedir::random_id(),
        deadline,
        boot_deadline_ms,
        namespace: namespace_id(host)?,
        watchdog_pid: None,
    })
}

/// Confirm an apply made with a confirm timeout, so the watchdog keeps it.
/// Refused once the deadline has passed (the watchdog rolls it back then).
pub fn confirm(host: &Host, opts: &ApplyOptions) -> Result<()> {
    let id = namespace_id(host)?;
    let rec = record(host, &id);
    let desc = super::identity::describe_target(host);
    let Some(dir) = StateDir::open(&opts.state_dir)? else {
        return Err(Error::new(
            ErrorKind::NotFound,
            "no apply journal for this namespace: nothing to confirm",
        ));
    };
    let _lock = NsLock::acquire_in(&dir, &id.key(), None)?;
    match Journal::load(&dir, &id.key(), &id, &desc)? {
        Some(mut j) => match j.state {
            JournalState::PendingConfirm { .. } if !j.deadline_passed() => {
                j.state = JournalState::Committed;
                if let Some(w) = j.watchdog.as_mut() {
                    w.message = Some(format!("confirmed at {}", crate::model::utc_time(now())));
                }
                j.save(&dir)
            }
            JournalState::PendingConfirm { deadline } => Err(Error::new(
                ErrorKind::Timeout,
                format!(
                    "too late to confirm: the deadline passed at {}; {}",
                    crate::model::relative_time(deadline, now()),
                    who_rolls_back(&j)
                ),
            )),
            JournalState::Applying if j.confirm_deadline.is_some() => Err(Error::new(
                ErrorKind::Locked,
                format!(
                    "the apply to confirm did not finish (crashed or killed); {}",
                    who_rolls_back(&j)
                ),
            )),
            ref other => Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "nothing awaits confirmation in {} (the last apply is {})",
                    rec,
                    other.name()
                ),
            )),
        },
        None => Err(Error::new(
            ErrorKind::NotFound,
            "no apply journal for this namespace: nothing to confirm",
        )),
    }
}

/// Who undoes an unconfirmed apply, as it is: its watchdog when it runs, the
/// operator when it does not (killed, or ended with the machine's processes).
fn who_rolls_back(j: &Journal) -> String {
    match j.watchdog.as_ref().map(|w| (w.pid, w.running())) {
        Some((Some(pid), Some(false))) => format!(
            "its watchdog (pid {pid}) is not running, so nothing rolls it back by itself: run \
             `roce-net rollback` to restore the host"
        ),
        _ => "the watchdog rolls this apply back (see `roce-net status`), or run `roce-net \
              rollback` now"
            .to_string(),
    }
}
