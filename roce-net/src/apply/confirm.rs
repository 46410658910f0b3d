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

use super::identity::{namespace_id, NamespaceId};
use super::journal::{Journal, JournalState};
use super::statedir::StateDir;
use super::transaction::now;
use super::{record, ApplyOptions, NsLock};
use crate::error::{Error, ErrorKind, Result};
use crate::host::Host;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The longest confirm timeout accepted (one day).
pub const MAX_CONFIRM_TIMEOUT: Duration = Duration::from_secs(86_400);

/// A confirm deadline armed for one namespace before the apply it guards.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfirmGuard {
    /// The id the apply's journal will carry; the watchdog acts on that journal only.
    pub apply_id: String,
    /// When the watchdog rolls back unless confirmed (Unix seconds).
    pub deadline: u64,
    /// The namespace the apply is for; the watchdog touches no other.
    pub namespace: NamespaceId,
    /// The watchdog's process id, once started (recorded in the journal).
    pub watchdog_pid: Option<u32>,
}

/// The first whole Unix second at least `t` from now, for a confirm timeout
/// between 1 s and [`MAX_CONFIRM_TIMEOUT`]. Rounded up from the exact time: a
/// deadline of "this second plus one" could be a millisecond away, and pass
/// before the apply it guards had started.
pub(crate) fn deadline_after(t: Duration) -> Result<u64> {
    if t < Duration::from_secs(1) || t > MAX_CONFIRM_TIMEOUT {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!(
                "confirm timeout {} s is not between 1 and {} seconds",
                t.as_secs_f64(),
                MAX_CONFIRM_TIMEOUT.as_secs()
            ),
        ));
    }
    let end = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .saturating_add(t);
    Ok(end.as_secs() + u64::from(end.subsec_nanos() > 0))
}

/// Arm a confirm deadline `timeout` from now for the host's namespace. Start the
/// watchdog with the guard, then apply with [`ApplyOptions::guard`] set to it.
pub fn arm_confirm(host: &Host, timeout: Duration) -> Result<ConfirmGuard> {
    super::privilege::require_net_admin("apply")?;
    let deadline = deadline_after(timeout)?;
    Ok(ConfirmGuard {
        apply_id: super::statedir::random_id(),
        deadline,
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
            JournalState::PendingConfirm { deadline } if now() <= deadline => {
                j.state = JournalState::Committed;
                if let Some(w) = j.watchdog.as_mut() {
                    w.message = Some(format!("confirmed at {}", crate::model::utc_time(now())));
                }
                j.save(&dir)
            }
            JournalState::PendingConfirm { deadline } => Err(Error::new(
                ErrorKind::Timeout,
                format!(
                    "too late to confirm: the deadline passed at {}; the watchdog rolls this \
                     apply back (see `roce-net status`)",
                    crate::model::relative_time(deadline, now())
                ),
            )),
            JournalState::Applying if j.confirm_deadline.is_some() => Err(Error::new(
                ErrorKind::Locked,
                "the apply to confirm did not finish (crashed or killed); it is rolled back at \
                 its deadline, or now with `roce-net rollback`",
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_is_never_nearer_than_its_timeout() {
        for t in [Duration::from_secs(1), Duration::from_millis(1500)] {
            for _ in 0..50 {
                let before = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap();
                let d = deadline_after(t).unwrap();
                assert!(
                    Duration::from_secs(d) >= before + t,
                    "deadline {d} for {t:?} from {before:?}"
                );
                assert!(Duration::from_secs(d) < before + t + Duration::from_secs(2));
                std::thread::sleep(Duration::from_millis(7));
            }
        }
        assert!(deadline_after(Duration::from_millis(999)).is_err());
        assert!(deadline_after(MAX_CONFIRM_TIMEOUT + Duration::from_secs(1)).is_err());
    }
}
