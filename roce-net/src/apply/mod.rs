//! Executing a [`Plan`] as a transaction (docs/architecture.md, decisions 5, 11 and 13).
//!
//! 1. check the caller may change the network (`CAP_NET_ADMIN`) before touching
//!    anything;
//! 2. enter the namespace, identify it by its cookie ([`NamespaceId`]) and take its
//!    lock; refuse while an earlier apply awaits confirmation, did not finish, or
//!    left a failed rollback;
//! 3. plan under the lock: [`apply_policy`] plans from a fresh snapshot of what
//!    the planner reads (no NIC statistics or DCB QoS; of the RDMA devices only
//!    which netdev backs each port);
//!    [`apply`] re-plans a saved plan from its own policy and refuses a change the
//!    planner would not make (`validate.rs`) or drift in what the plan touches;
//! 4. journal every change with its inverse (and, with a confirm timeout, the
//!    deadline) before the first change;
//! 5. apply change by change, journalling each step before and after it reaches
//!    the kernel (`transaction.rs`);
//! 6. verify: re-read what the plan reads and re-plan; the new plan must be
//!    empty (links with each interface's IPv4 settings, addresses, routes, rules
//!    and table names are dumped again, and the `conf/all`, `conf/default` and
//!    tuning sysctls the desired state names are read again; neighbours, RDMA
//!    devices and the other sysctls, which the re-plan does not compare, are the
//!    first snapshot's);
//! 7. on any failure after the first change, undo the applied steps in reverse,
//!    each checked to restore what was recorded, and say what failed (the
//!    original error is the source) and what was restored.
//!
//! With a confirm timeout the journal stays `pending_confirm` until [`confirm`];
//! [`watchdog`] (armed with [`arm_confirm`] and started as a detached process by
//! the CLI and the Python binding *before* the apply) rolls back when the deadline
//! passes, also an apply that never finished. [`rollback`] undoes the last apply
//! from its journal, also after a crash. [`apply_status`] and [`archive_journal`] read and put
//! aside a journal.

mod clock;
mod confirm;
mod execute;
mod identity;
mod journal;
mod lock;
mod persisted;
mod privilege;
pub use privilege::require_net_admin;
mod status;
mod transaction;
mod validate;
mod watchdog;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_faults;

pub use clock::MAX_CONFIRM_TIMEOUT;
pub use confirm::{arm_confirm, confirm, ConfirmGuard};
#[cfg(any(test, feature = "testing"))]
pub use identity::namespace_key;
pub use identity::NamespaceId;
pub use journal::{Journal, JournalState, NamespaceRecord, Step, StepStatus, WatchdogRecord};
pub use lock::NsLock;
pub use persisted::{persist_for_apply, AppliedPersist};
pub use status::{apply_status, archive_journal, refuse_persist_while_unsettled, ArchiveReport};
pub use watchdog::{stop_on_signals, watchdog, watchdog_until, WatchdogOutcome};

use crate::error::{Error, ErrorKind, Result};
use crate::host::Host;
use crate::kernel::netlink::Netlink;
use crate::plan::Plan;
use crate::policy::Policy;
use execute::Kernel;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;
use transaction::{Session, Source};

/// Default directory for locks and journals.
pub const DEFAULT_STATE_DIR: &str = "/run/roce-net";

/// How to apply.
#[derive(Debug, Clone)]
pub struct ApplyOptions {
    /// Where locks and journals live (`/run/roce-net`).
    pub state_dir: PathBuf,
    /// Roll back on its own unless [`confirm`] arrives within this time. Without
    /// [`ApplyOptions::guard`], the caller must run [`watchdog`] after the apply.
    pub confirm_timeout: Option<Duration>,
    /// A confirm deadline armed before the apply ([`arm_confirm`]) and guarded by
    /// a watchdog already running; takes the place of `confirm_timeout`.
    pub guard: Option<ConfirmGuard>,
    /// How long [`watchdog`] waits for the namespace's lock at its deadline
    /// (an apply or rollback still running) before giving up.
    pub watchdog_lock_wait: Duration,
}

impl Default for ApplyOptions {
    fn default() -> Self {
        ApplyOptions {
            state_dir: PathBuf::from(DEFAULT_STATE_DIR),
            confirm_timeout: None,
            guard: None,
            watchdog_lock_wait: Duration::from_secs(600),
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
    /// The apply's id in its journal (`None` when nothing was to be done).
    #[serde(default)]
    pub apply_id: Option<String>,
    /// What to know besides the changes: [`Plan::notes`](crate::Plan::notes)
    /// of the plan applied (made under the lock), one line each.
    #[serde(default)]
    pub notes: Vec<String>,
    /// The gratuitous ARP each managed NIC sent for its address after the
    /// apply, one line each (what could not be sent says so): peers holding
    /// another NIC's MAC for it take the right one at once.
    #[serde(default)]
    pub announced: Vec<String>,
}

/// What a rollback did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RollbackReport {
    /// One line per change undone, in the order undone.
    pub undone: Vec<String>,
    /// The journal's state before the rollback.
    pub was: String,
    /// One line per boot-configuration file put back as it was before
    /// `persist` wrote it for this apply ([`persist_for_apply`]); empty when
    /// nothing was persisted for it.
    #[serde(default)]
    pub restored_files: Vec<String>,
}

/// How messages name a host's namespace, and what its journal records of it.
fn record(host: &Host, id: &NamespaceId) -> NamespaceRecord {
    NamespaceRecord {
        id: id.clone(),
        name: host.target().name().map(str::to_string),
        path: match host.target() {
            crate::netns::NetnsTarget::Path(p) => Some(p.clone()),
            _ => None,
        },
    }
}

/// Run `f` on a thread inside the host's namespace with a netlink socket there,
/// after checking the namespace is `expect` (when given).
fn in_namespace<R, F>(host: &Host, expect: Option<&NamespaceId>, f: F) -> Result<R>
where
    R: Send,
    F: FnOnce(NamespaceId, &mut Netlink) -> Result<R> + Send,
{
    host.target().run(|| {
        let id = identity::thread_namespace()?;
        if let Some(want) = expect {
            if *want != id {
                return Err(watchdog::namespace_changed(host, want, &id));
            }
        }
        let mut nl = Netlink::open()?;
        f(id, &mut nl)
    })
}

/// Open the state directory and take the namespace's lock.
fn session(host: &Host, opts: &ApplyOptions, id: NamespaceId) -> Result<(Session, NsLock)> {
    let dir = crate::files::statedir::StateDir::create(&opts.state_dir)?;
    let lock = NsLock::acquire_in(&dir, &id.key(), None)?;
    Ok((
        Session {
            dir,
            record: record(host, &id),
            desc: identity::describe_target(host),
            id,
        },
        lock,
    ))
}

/// Apply under the lock: `run` gets the session and the real kernel's effects
/// (the product passes them to the transaction as they are; this crate's tests
/// wrap them to inject faults).
pub(crate) fn apply_with<F>(host: &Host, opts: &ApplyOptions, run: F) -> Result<ApplyReport>
where
    F: FnOnce(&Session, &mut Kernel<'_>) -> Result<ApplyReport> + Send,
{
    privilege::require_net_admin("apply")?;
    in_namespace(host, None, |id, nl| {
        let (s, _lock) = session(host, opts, id)?;
        let mut k = Kernel::new(host, nl);
        run(&s, &mut k)
    })
}

/// Apply a saved plan (from [`crate::plan`], `roce-net plan -o`, or shown to a
/// user for review) as a transaction. Under the lock the plan is re-made from its
/// own policy on the host as it is: a change the planner would not make there is
/// refused (`InvalidInput`), and so is drift in anything the plan touches or
/// reads (`Drift`). See the module documentation.
pub fn apply(host: &Host, plan: &Plan, opts: &ApplyOptions) -> Result<ApplyReport> {
    apply_with(host, opts, |s, k| {
        transaction::apply(s, k, Source::Saved(plan), opts)
    })
}

/// Plan `policy` under the namespace's lock and apply the plan as a transaction:
/// one snapshot is both the plan's input and the baseline, so nothing can drift
/// in between.
pub fn apply_policy(host: &Host, policy: &Policy, opts: &ApplyOptions) -> Result<ApplyReport> {
    apply_with(host, opts, |s, k| {
        transaction::apply(s, k, Source::Policy(policy), opts)
    })
}

/// Undo the last apply from its journal (also after a crash or a killed apply,
/// or to finish a killed rollback). `NotFound` when there is nothing to roll
/// back; `RollbackFailed` naming what could not be restored.
pub fn rollback(host: &Host, opts: &ApplyOptions) -> Result<RollbackReport> {
    privilege::require_net_admin("rollback")?;
    in_namespace(host, None, |id, nl| {
        // Nothing to roll back creates nothing: no state directory, no lock
        // file (the journal is looked for again under the lock).
        let key = id.key();
        let journal = journal::Journal::file_name(&key);
        let log = journal::Journal::log_name(&key);
        match crate::files::statedir::StateDir::open(&opts.state_dir)? {
            Some(d) if d.exists(&journal) || d.exists(&log) => {}
            _ => {
                return Err(Error::new(
                    ErrorKind::NotFound,
                    format!(
                        "no apply journal for {} in {}: nothing to roll back",
                        identity::describe_target(host),
                        opts.state_dir.display()
                    ),
                ))
            }
        }
        // A state directory that cannot be written (read-only, full) stops
        // rollback before its lock: say that nothing was undone.
        let (s, _lock) = session(host, opts, id).map_err(|e| match e.errno_value() {
            Some(libc::EROFS | libc::ENOSPC | libc::EDQUOT) => {
                e.context("rollback: nothing was undone")
            }
            _ => e,
        })?;
        let mut k = Kernel::new(host, nl);
        let (r, j) = transaction::rollback(&s, &mut k)?;
        watchdog::stand_down(&s.dir, &j, "rolled back by hand; the watchdog stood down");
        Ok(r)
    })
}
