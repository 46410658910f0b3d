//! Reading a namespace's journal (`roce-net status`) and putting one aside
//! (`roce-net archive`). Neither changes the network; `status` needs no
//! privilege beyond reading the state directory.

use super::clock::now;
use super::identity::{describe_target, namespace_id};
use super::journal::{Journal, JournalState};
use super::{ApplyOptions, NsLock};
use crate::error::{Error, ErrorKind, Result};
use crate::files::statedir::StateDir;
use crate::host::Host;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The journal of the last apply in this namespace, if any. A journal that
/// cannot be used (corrupt, another namespace's) is an error saying what to do.
pub fn apply_status(host: &Host, opts: &ApplyOptions) -> Result<Option<Journal>> {
    let id = namespace_id(host)?;
    let Some(dir) = StateDir::open(&opts.state_dir)? else {
        return Ok(None);
    };
    Journal::load(&dir, &id.key(), &id, &describe_target(host))
}

/// Refuse to write boot-persistent configuration for this namespace while its
/// last apply is not settled: awaiting confirmation (`pending_confirm`), or
/// still `applying` or `rolling_back`. Files written then would bring the
/// change back at the next boot even after its watchdog (or `rollback`)
/// undid it live, with no watchdog at that boot. Nothing is changed here;
/// the error ([`ErrorKind::Locked`]) says what to run first. No journal, or a
/// settled one (`committed`, `rolled_back`, `rollback_failed`), is `Ok`.
pub fn refuse_persist_while_unsettled(host: &Host, opts: &ApplyOptions) -> Result<()> {
    match apply_status(host, opts)? {
        Some(j) => refuse_unsettled(host, &j),
        None => Ok(()),
    }
}

/// [`refuse_persist_while_unsettled`] for a journal already read.
pub(crate) fn refuse_unsettled(host: &Host, j: &Journal) -> Result<()> {
    let why = match j.state {
        JournalState::PendingConfirm { deadline } => format!(
            "the last apply in {} awaits confirmation (its watchdog rolls it back {} unless \
             confirmed); persisting it now would bring it back at the next boot even if it \
             is rolled back. Check the node is reachable, run `roce-net confirm`, then persist",
            describe_target(host),
            crate::model::relative_time(deadline, now())
        ),
        JournalState::Applying | JournalState::RollingBack => format!(
            "the last apply in {} is {} (not finished: crashed, killed or still running); \
             nothing is persisted for a change that is not settled. See `roce-net status`, \
             then `roce-net rollback` (or `roce-net confirm`) before persisting",
            describe_target(host),
            j.state.name()
        ),
        _ => return Ok(()),
    };
    Err(Error::new(ErrorKind::Locked, why))
}

/// What [`archive_journal`] moved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchiveReport {
    /// Where the journal now is (`None`: there was none).
    pub journal: Option<PathBuf>,
    /// Where its step log now is.
    pub log: Option<PathBuf>,
    /// The journal's state when archived (`unusable` when it could not be read or is another namespace's).
    pub state: String,
}

/// Move this namespace's journal and step log into the state directory's
/// `archive/` (never replacing an archived file), so the next apply starts
/// afresh. Nothing on the host changes. Refused while the journal can still
/// undo an unfinished apply (`applying`, `pending_confirm`, `rolling_back`): run
/// `rollback` (or `confirm`) first. Meant for a `rollback_failed` journal the
/// user gives up on, and for a corrupt or foreign one.
pub fn archive_journal(host: &Host, opts: &ApplyOptions) -> Result<ArchiveReport> {
    let id = namespace_id(host)?;
    let key = id.key();
    let Some(dir) = StateDir::open(&opts.state_dir)? else {
        return Ok(ArchiveReport {
            journal: None,
            log: None,
            state: "none".into(),
        });
    };
    let _lock = NsLock::acquire_in(&dir, &key, None)?;
    let state = match Journal::load(&dir, &key, &id, &describe_target(host)) {
        Ok(Some(j)) if j.state.is_open() => {
            return Err(Error::new(
                ErrorKind::Locked,
                format!(
                    "the last apply is {} and its journal can still restore the host; run \
                     `roce-net rollback` (or `roce-net confirm`) instead of archiving it",
                    j.state.name()
                ),
            ))
        }
        Ok(Some(j)) => j.state.name().to_string(),
        Ok(None) => "none".to_string(),
        Err(_) => "unusable".to_string(),
    };
    let stamp = format!("{key}.{}.{state}", now());
    let journal = dir.archive(&Journal::file_name(&key), &format!("{stamp}.journal.json"))?;
    let log = dir.archive(&Journal::log_name(&key), &format!("{stamp}.journal.log"))?;
    // What persist wrote for it can no longer be rolled back either.
    dir.archive(
        &Journal::persisted_name(&key),
        &format!("{stamp}.persisted.json"),
    )?;
    Ok(ArchiveReport {
        journal,
        log,
        state,
    })
}
