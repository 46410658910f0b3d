//! The transaction itself, over an [`Effects`] seam: the real kernel
//! ([`super::execute::Kernel`]) in the product, a fault-injecting wrapper in this
//! crate's own tests (docs/architecture.md, decision 13). Nothing here knows which.
//!
//! Every path after the first change either finishes (verified, journal saved)
//! or undoes what was started, in reverse, and says what failed and what was
//! restored, with the original error kept as the source.

use super::clock::now;
use super::identity::NamespaceId;
use super::journal::{
    Journal, JournalState, NamespaceRecord, Phase, Step, StepLog, StepStatus, StepsJson,
    WatchdogRecord, JOURNAL_VERSION,
};
use super::{validate, ApplyOptions, ApplyReport, RollbackReport};
use crate::error::{Error, ErrorKind, Result};
use crate::files::statedir::StateDir;
use crate::model::{HostState, Sysctl};
use crate::plan::{self, Change, Plan};
use crate::policy::Policy;
use crate::rt_tables::NameUpdate;
use std::collections::BTreeMap;

/// Everything a transaction does to a host.
pub(crate) trait Effects {
    /// Read the host as the planner reads it (everything but NIC statistics,
    /// DCB QoS and RDMA detail beyond each port's netdev: `Parts::PLAN`). With
    /// `shared`, of the sysctls only `/proc/sys` shows (`conf/all`,
    /// `conf/default`, tuning) only those (the ones the policy sets: the planner
    /// reads no others); without, all of them (a saved plan's fingerprint
    /// covers them all).
    fn snapshot(&mut self, shared: Option<&[Sysctl]>) -> Result<HostState>;
    /// Read the host again to verify an apply: everything apply changes or the
    /// planner reads. Links, IPv4 addresses, routes and rules, and table names
    /// are read whole, and so are the IPv6 ones when `ipv6` (the plan changed
    /// an IPv6 route or rule); of the sysctls only `sysctls` (the plan's desired
    /// ones: the planner reads no other). Neighbours (verify ignores one-shot
    /// flushes), RDMA devices (apply never sets them), the other sysctls and,
    /// without `ipv6`, the IPv6 addresses, routes and rules (apply changed
    /// none) may come from the first read.
    fn snapshot_verify(&mut self, sysctls: &[Sysctl], ipv6: bool) -> Result<HostState>;
    /// roce-net's own table-name lines (its names file only).
    fn own_table_names(&mut self) -> Result<BTreeMap<u32, String>>;
    /// Carry out step `index`'s change.
    fn change(&mut self, index: usize, change: &Change) -> Result<()>;
    /// Write table names (steps `first..`); per update, whether it changed the
    /// file (`false`: it already held the name).
    fn table_names(
        &mut self,
        first: usize,
        updates: &[NameUpdate<'_>],
        tolerant: bool,
    ) -> Result<Vec<bool>>;
    /// Undo step `index`, checking that what is restored is what was recorded.
    /// `Some(note)`: restored by being gone (with its interface), in words.
    fn undo(&mut self, index: usize, step: &Step) -> Result<Option<String>>;
    /// Announce each NIC's address from the NIC (gratuitous ARP), so peers
    /// that learned another NIC's MAC for it take the right one now; one line
    /// per address saying what was sent (all of them from one socket).
    fn announce(&mut self, list: &[(String, std::net::IpAddr)]) -> Vec<String>;
}

/// The namespace and state directory a transaction works with, under its lock.
pub(crate) struct Session {
    pub dir: StateDir,
    pub id: NamespaceId,
    pub record: NamespaceRecord,
    /// How messages name the namespace.
    pub desc: String,
}

impl Session {
    pub(crate) fn key(&self) -> String {
        self.id.key()
    }
}

/// What to apply.
#[derive(Clone, Copy)]
pub(crate) enum Source<'a> {
    /// A saved (or shown) plan: validated against a fresh plan under the lock.
    Saved(&'a Plan),
    /// A policy: planned under the lock.
    Policy(&'a Policy),
}

/// The name a table-name change leaves for its table (`None`: no name).
fn name_target(c: &Change) -> Option<Option<&str>> {
    match c {
        Change::RegisterTableName { name, .. } => Some(Some(name.as_str())),
        Change::UnregisterTableName { .. } => Some(None),
        _ => None,
    }
}

fn name_id(c: &Change) -> Option<u32> {
    match c {
        Change::RegisterTableName { id, .. } | Change::UnregisterTableName { id, .. } => Some(*id),
        _ => None,
    }
}

/// The update that carries out `forward` (or with `undo`, its inverse) on the
/// names file.
fn name_update(step: &Step, undo: bool) -> Option<NameUpdate<'_>> {
    let (c, inv) = if undo {
        (&step.inverse, &step.change)
    } else {
        (&step.change, &step.inverse)
    };
    Some(NameUpdate {
        id: name_id(c)?,
        expect: name_target(inv)?,
        set: name_target(c)?,
    })
}

/// The inverse of every change, or an error naming the first change that cannot
/// be undone (nothing is applied then). Table-name inverses restore exactly the
/// line roce-net's own file held (`own`), not the name other files give. A
/// route deleted while another route (of `routes`, the host as planned) shares
/// its key is put back with append semantics.
fn steps_for(
    plan: &Plan,
    own: &BTreeMap<u32, String>,
    routes: &[crate::model::Route],
) -> Result<Vec<Step>> {
    plan.changes
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let inverse = match c {
                Change::RegisterTableName { id, name, .. } => match own.get(id) {
                    None => Some(Change::UnregisterTableName {
                        id: *id,
                        name: name.clone(),
                    }),
                    Some(old) => Some(Change::RegisterTableName {
                        id: *id,
                        name: old.clone(),
                        before: Some(name.clone()),
                    }),
                },
                _ => c.inverse(),
            };
            let inverse = inverse.ok_or_else(|| {
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
            let append = match c {
                Change::DeleteRoute { route } => routes
                    .iter()
                    .any(|r| r.key() == route.key() && !r.same(route)),
                _ => false,
            };
            Ok(Step {
                change: c.clone(),
                inverse,
                status: StepStatus::Pending,
                append,
            })
        })
        .collect()
}

/// Refuse to start while the last apply's journal needs attention.
pub(crate) fn check_previous(s: &Session) -> Result<()> {
    let Some(j) = Journal::load_head(&s.dir, &s.key(), &s.id, &s.desc)? else {
        return Ok(());
    };
    match &j.state {
        JournalState::PendingConfirm { deadline } => Err(Error::new(
            ErrorKind::Locked,
            format!(
                "an earlier apply awaits confirmation until {}; run `roce-net confirm` or \
                 `roce-net rollback` first",
                crate::model::relative_time(*deadline, now())
            ),
        )),
        JournalState::Applying | JournalState::RollingBack => Err(Error::new(
            ErrorKind::Locked,
            format!(
                "an earlier {} did not finish (crashed or killed); run `roce-net rollback` \
                 to restore the host before applying again",
                if j.state == JournalState::Applying {
                    "apply"
                } else {
                    "rollback"
                }
            ),
        )),
        JournalState::RollbackFailed => Err(Error::new(
            ErrorKind::RollbackFailed,
            format!(
                "the last rollback in this namespace failed ({}); its journal {} is the only \
                 record of what to restore, so it is not replaced. Fix the cause and run \
                 `roce-net rollback` again, or run `roce-net archive` to keep the journal aside \
                 and accept the host as it is",
                j.errors.join("; "),
                s.dir.file(&Journal::file_name(&s.key())).display()
            ),
        )),
        JournalState::Committed | JournalState::RolledBack => Ok(()),
    }
}

/// Apply under the lock held by the session. See the module documentation.
pub(crate) fn apply(
    s: &Session,
    fx: &mut dyn Effects,
    source: Source<'_>,
    opts: &ApplyOptions,
) -> Result<ApplyReport> {
    check_previous(s)?;
    let shared = match source {
        Source::Policy(p) => Some(plan::shared_sysctls(p)),
        Source::Saved(_) => None,
    };
    let current = fx.snapshot(shared.as_deref())?;
    let plan = match source {
        // Planned here, under the lock, and applied at once: nothing checks
        // this plan's fingerprint (a saved plan's is checked in `check_saved`),
        // and hashing the whole snapshot costs as much as planning a small host.
        Source::Policy(p) => plan::plan_with(&current, p, false)?,
        Source::Saved(saved) => validate::check_saved(saved, &current)?,
    };
    let journal_path = s.dir.file(&Journal::file_name(&s.key()));
    if plan.is_empty() {
        return Ok(ApplyReport {
            applied: 0,
            changes: Vec::new(),
            confirm_deadline: None,
            journal: journal_path,
            apply_id: None,
            notes: plan.notes(),
            announced: Vec::new(),
        });
    }
    let own = fx.own_table_names()?;
    let steps = steps_for(&plan, &own, &current.routes)?;
    let (apply_id, deadline, pid) = match (&opts.guard, opts.confirm_timeout) {
        (Some(g), _) => {
            if g.namespace != s.id {
                return Err(Error::new(
                    ErrorKind::InvalidInput,
                    format!(
                        "the confirm watchdog was armed for {}, but this is {} ({}); nothing \
                         was changed",
                        g.namespace, s.desc, s.id
                    ),
                ));
            }
            if super::clock::left(g.deadline, g.boot_deadline_ms).is_zero() {
                // Its watchdog may have looked at the deadline already and found
                // nothing to guard: applying now would leave the changes unguarded.
                return Err(Error::new(
                    ErrorKind::Timeout,
                    format!(
                        "the confirm deadline {} passed before the apply could start on \
                         {}; nothing was changed. Run it again, with a longer confirm timeout \
                         if this machine is slow",
                        crate::model::relative_time(g.deadline, now()),
                        s.desc
                    ),
                ));
            }
            (
                g.apply_id.clone(),
                Some((g.deadline, g.boot_deadline_ms)),
                g.watchdog_pid,
            )
        }
        (None, Some(t)) => (
            crate::files::statedir::random_id(),
            Some(super::clock::deadline_after(t)?),
            None,
        ),
        (None, None) => (crate::files::statedir::random_id(), None, None),
    };
    let (deadline, boot_deadline) = match deadline {
        Some((d, b)) => (Some(d), b),
        None => (None, None),
    };
    let mut j = Journal {
        version: JOURNAL_VERSION,
        key: s.key(),
        namespace: s.record.clone(),
        apply_id,
        started_at: now(),
        confirm_deadline: deadline,
        confirm_deadline_boot_ms: boot_deadline,
        state: JournalState::Applying,
        steps,
        failure: None,
        errors: Vec::new(),
        watchdog: deadline.map(|_| WatchdogRecord {
            pid,
            started: pid.and_then(super::clock::process_start),
            outcome: None,
            at: None,
            message: None,
        }),
    };
    // The journal (with the deadline) exists before the first change; its step
    // log is tied to it by the apply id, so either order survives a crash.
    let rendered = StepsJson::of(&j)?;
    j.save_with(&s.dir, &rendered)?;
    let mut log = match StepLog::create(&s.dir, &j, Phase::Apply) {
        Ok(l) => l,
        Err(e) => {
            j.state = JournalState::RolledBack;
            j.failure = Some(e.to_string());
            let _ = j.save(&s.dir);
            return Err(e);
        }
    };
    let result = forward(fx, &mut j, &mut log)
        .and_then(|()| verify(fx, &plan))
        .and_then(|()| {
            let done = match deadline {
                Some(d) => JournalState::PendingConfirm { deadline: d },
                None => JournalState::Committed,
            };
            // The journal in memory says what the one on disk says: a save
            // that fails (a full disk) leaves it `applying`, and its step log
            // is the record the undo works from.
            let was = std::mem::replace(&mut j.state, done);
            j.save_with(&s.dir, &rendered).map_err(|e| {
                j.state = was;
                e.context("recording the apply as finished")
            })
        });
    if let Err(cause) = result {
        return Err(undo_after_failure(s, fx, &mut j, cause));
    }
    let done = |st: StepStatus| j.steps.iter().filter(|x| x.status == st).count();
    let announced = announce(fx, &plan);
    Ok(ApplyReport {
        applied: done(StepStatus::Done),
        changes: j
            .steps
            .iter()
            .filter(|x| x.status == StepStatus::Done)
            .map(|x| x.change.describe())
            .collect(),
        confirm_deadline: deadline,
        journal: journal_path,
        apply_id: Some(j.apply_id.clone()),
        notes: plan.notes(),
        announced,
    })
}

/// The end of the run of table-name steps starting at `i`.
fn names_run(steps: &[Step], i: usize) -> usize {
    let mut end = i;
    while end < steps.len() && name_update(&steps[end], false).is_some() {
        end += 1;
    }
    end
}

fn forward(fx: &mut dyn Effects, j: &mut Journal, log: &mut StepLog) -> Result<()> {
    let n = j.steps.len();
    let what = |j: &Journal, i: usize| {
        format!("change {} of {n} ({})", i + 1, j.steps[i].change.describe())
    };
    let mut i = 0;
    while i < n {
        let end = names_run(&j.steps, i);
        if end > i {
            // Consecutive table-name steps: one write of the names file, each step
            // journalled started before it and done after it, as one by one.
            for k in i..end {
                log.set(j, k, StepStatus::Started);
            }
            log.flush()?;
            let updates: Vec<NameUpdate<'_>> = j.steps[i..end]
                .iter()
                .filter_map(|st| name_update(st, false))
                .collect();
            match fx.table_names(i, &updates, false) {
                Ok(changed) => {
                    for (k, c) in (i..end).zip(changed) {
                        log.set(
                            j,
                            k,
                            if c {
                                StepStatus::Done
                            } else {
                                StepStatus::Skipped
                            },
                        );
                    }
                }
                Err(e) => {
                    // The write is atomic (one rename, the last thing it does):
                    // none of them took effect, so none is undone. A names file
                    // that cannot be written (a read-only /etc, a directory
                    // link refused) could not be written by the undo either:
                    // recorded `started`, they would wedge the journal in
                    // `rollback_failed` although nothing changed.
                    for k in i..end {
                        log.set(j, k, StepStatus::Pending);
                    }
                    // Best effort: the rollback saves the whole journal,
                    // these statuses with it, before it undoes anything.
                    let _ = log.flush();
                    return Err(e.context(what(j, i)));
                }
            }
            i = end;
            continue;
        }
        log.set(j, i, StepStatus::Started);
        log.flush()?;
        fx.change(i, &j.steps[i].change)
            .map_err(|e| e.context(what(j, i)))?;
        log.set(j, i, StepStatus::Done);
        i += 1;
    }
    log.flush()
}

/// Re-read what the plan reads and re-plan: only one-shot neighbour flushes may
/// remain.
fn verify(fx: &mut dyn Effects, plan: &Plan) -> Result<()> {
    let sysctls: Vec<Sysctl> = plan
        .desired
        .sysctls
        .iter()
        .map(|(s, _)| s.clone())
        .collect();
    let ipv6 = plan.changes.iter().any(Change::changes_ipv6_object);
    let after = fx
        .snapshot_verify(&sysctls, ipv6)
        .map_err(|e| e.context("verifying: re-reading the host after applying"))?;
    let again = plan::plan_with(&after, &plan.policy, false)
        .map_err(|e| e.context("verifying: re-planning on the host after applying"))?;
    let left: Vec<String> = again
        .changes
        .iter()
        .filter(|c| !matches!(c, Change::FlushNeighbors { .. }))
        .map(Change::describe)
        .collect();
    if !left.is_empty() {
        return Err(Error::new(
            ErrorKind::Verify,
            format!(
                "after applying, the host still differs from the policy: {}",
                left.join("; ")
            ),
        ));
    }
    Ok(())
}

/// After a verified apply, each managed NIC announces its address (gratuitous
/// ARP for IPv4, an unsolicited neighbour advertisement for IPv6, twice; not
/// on a NIC whose ARP is off): a peer whose neighbour entry
/// holds another NIC's MAC, learned during ARP flux, takes the right one at
/// once instead of keeping the stale entry while it is in use
/// (docs/rdma-probe.md, "Peers heal"). Best effort: an announcement that
/// cannot be sent is reported, never undoes the apply.
fn announce(fx: &mut dyn Effects, plan: &Plan) -> Vec<String> {
    let list: Vec<(String, std::net::IpAddr)> = plan
        .desired
        .nics
        .iter()
        .flat_map(|nic| {
            nic.addresses
                .iter()
                .map(move |a| (nic.ifname.clone(), a.addr()))
        })
        .collect();
    fx.announce(&list)
}

/// Undo every started step in reverse after `cause`; return the error to report.
fn undo_after_failure(s: &Session, fx: &mut dyn Effects, j: &mut Journal, cause: Error) -> Error {
    j.failure = Some(cause.to_string());
    // The journal is `applying` with its step log: a record of what to undo
    // that survives this process, so undoing may start even when the rollback
    // itself cannot be recorded.
    let (undone, save_err) = match undo_journal(s, fx, j) {
        Ok(r) => r,
        Err(e) => return e.with_source(cause),
    };
    let kind_if_ok = if cause.kind() == ErrorKind::Verify {
        ErrorKind::Verify
    } else {
        ErrorKind::RolledBack
    };
    if j.errors.is_empty() {
        let mut msg = format!(
            "rolled back {} change(s), the host is as before{}",
            undone.len(),
            if undone.is_empty() {
                String::new()
            } else {
                format!(": {}", undone.join("; "))
            }
        );
        if let Some(e) = save_err {
            msg.push_str(&format!(" ({})", unrecorded(s, &e)));
        }
        Error::new(kind_if_ok, msg).with_source(cause)
    } else {
        Error::new(
            ErrorKind::RollbackFailed,
            format!(
                "rollback failed too, the host may be in a mixed state; not restored: {}. \
                 Undone: {}. The journal {} is kept; fix the cause and run `roce-net rollback`",
                j.errors.join("; "),
                if undone.is_empty() {
                    "nothing".to_string()
                } else {
                    undone.join("; ")
                },
                s.dir.file(&Journal::file_name(&j.key)).display()
            ),
        )
        .with_source(cause)
    }
}

/// What to say when undoing finished but its outcome could not be saved: the
/// journal on disk (`on_disk`) still says an apply or rollback did not finish.
fn unrecorded(s: &Session, e: &UnsavedOutcome) -> String {
    format!(
        "but the journal could not be updated ({}): {} still says `{}`, so `roce-net status` \
         shows an unfinished {} and the next apply is refused until `roce-net rollback` records \
         the rollback (it finds everything undone already); free space in (or make writable) {} \
         first",
        e.error,
        s.dir.file(&Journal::file_name(&s.key())).display(),
        e.on_disk,
        if e.on_disk == "applying" {
            "apply"
        } else {
            "rollback"
        },
        s.dir.path().display()
    )
}

/// The final save of a rollback that failed, and the state the journal on
/// disk was left in.
struct UnsavedOutcome {
    error: Error,
    on_disk: &'static str,
}

/// Mark the journal rolling back, undo, and save the outcome. Returns what was
/// undone and, when the final save failed, why and what the journal on disk
/// says instead.
///
/// Undoing never starts without a record of it that outlives this process:
/// the journal saved `rolling_back` with a fresh rollback step log, or, for an
/// apply that did not finish, its `applying` journal and step log (undoing
/// again what is undone already restores the same state). A journal that says
/// `committed` or `pending_confirm` whose rollback cannot be recorded (a full
/// or read-only state directory) is left as it is, and so is the host: the
/// error says nothing was undone, and `status` still tells the truth.
fn undo_journal(
    s: &Session,
    fx: &mut dyn Effects,
    j: &mut Journal,
) -> Result<(Vec<String>, Option<UnsavedOutcome>)> {
    let before = j.state.clone();
    j.state = JournalState::RollingBack;
    let mut on_disk = before.name();
    // Its changes rendered once for the saves below.
    let rendered = StepsJson::of(j);
    let save = |j: &Journal| match &rendered {
        Ok(r) => j.save_with(&s.dir, r),
        Err(_) => j.save(&s.dir),
    };
    let log = save(j).and_then(|()| {
        on_disk = JournalState::RollingBack.name();
        let mut l = StepLog::create(&s.dir, j, Phase::Rollback)?;
        // The header goes out now: a log that cannot be written is found
        // before the first step is undone, not after.
        l.flush()?;
        Ok(l)
    });
    let mut log = match log {
        Ok(l) => Some(l),
        // The `applying` journal and its step log (or, when only the new step
        // log failed, the `rolling_back` journal, complete without one) are
        // the record.
        Err(_) if before == JournalState::Applying => None,
        Err(e) => {
            j.state = before;
            // Whatever reached the file, the journal must not say less than
            // the host holds: put the previous state back if it can be written.
            let _ = save(j);
            return Err(Error::new(
                ErrorKind::Io,
                format!(
                    "could not record the rollback in {} ({e}): nothing was undone, the host \
                     still holds the last apply and its journal still says {}. Free space in \
                     (or make writable) {} and run `roce-net rollback` again",
                    s.dir.file(&Journal::file_name(&j.key)).display(),
                    j.state.name(),
                    s.dir.path().display()
                ),
            )
            .with_source(e));
        }
    };
    let undone = undo(fx, j, log.as_mut());
    j.state = if j.errors.is_empty() {
        JournalState::RolledBack
    } else {
        JournalState::RollbackFailed
    };
    let unsaved = save(j).err().map(|error| UnsavedOutcome { error, on_disk });
    Ok((undone, unsaved))
}

/// Undo started/done steps in reverse order, each checked to restore what was
/// recorded (a step that may or may not have reached the kernel counts as undone
/// when the host already holds the recorded state). Errors are recorded in the
/// journal and undoing goes on.
fn undo(fx: &mut dyn Effects, j: &mut Journal, mut log: Option<&mut StepLog>) -> Vec<String> {
    let mut undone = Vec::new();
    // Tables by name, as the plan showed them: the names this apply
    // registered, and roce-net's names file as it is before anything is undone
    // (only for the report's words: a file that cannot be read leaves numbers).
    let mut names = fx.own_table_names().unwrap_or_default();
    for step in &j.steps {
        if let Change::RegisterTableName { id, name, .. } = &step.change {
            names.insert(*id, name.clone());
        }
    }
    j.errors.clear();
    let todo = |st: StepStatus| matches!(st, StepStatus::Started | StepStatus::Done);
    let mut i = j.steps.len();
    while i > 0 {
        let end = i;
        i -= 1;
        if !todo(j.steps[i].status) {
            continue;
        }
        if let Some(l) = log.as_deref_mut() {
            if let Err(e) = l.flush() {
                // Never undo a step without a record of it: stop here. The
                // journal says `rolling_back`, and `rollback` finishes it.
                j.errors.push(format!(
                    "recording rollback progress: {e}; undoing stopped before {} so that \
                     every step undone is recorded: free space in the state directory and \
                     run `roce-net rollback` again",
                    j.steps[i].change.describe()
                ));
                return undone;
            }
        }
        if name_update(&j.steps[i], true).is_some() {
            // The run of table-name steps ending here, undone with one write.
            let mut start = i;
            while start > 0
                && name_update(&j.steps[start - 1], true).is_some()
                && todo(j.steps[start - 1].status)
            {
                start -= 1;
            }
            let idx: Vec<usize> = (start..end).rev().collect();
            let updates: Vec<NameUpdate<'_>> = idx
                .iter()
                .filter_map(|k| name_update(&j.steps[*k], true))
                .collect();
            match fx.table_names(start, &updates, true) {
                Ok(_) => {
                    for k in idx {
                        undone.push(j.steps[k].inverse.describe_named(&names));
                        match log.as_deref_mut() {
                            Some(l) => l.set(j, k, StepStatus::Undone),
                            None => j.steps[k].status = StepStatus::Undone,
                        }
                    }
                }
                Err(e) => {
                    let what: Vec<String> =
                        idx.iter().map(|k| j.steps[*k].change.describe()).collect();
                    j.errors.push(format!("undoing {}: {e}", what.join(", ")));
                }
            }
            i = start;
            continue;
        }
        match fx.undo(i, &j.steps[i]) {
            Ok(note) => {
                let what = j.steps[i].inverse.describe_named(&names);
                undone.push(match note {
                    Some(n) => format!("{what} ({n})"),
                    None => what,
                });
                match log.as_deref_mut() {
                    Some(l) => l.set(j, i, StepStatus::Undone),
                    None => j.steps[i].status = StepStatus::Undone,
                }
            }
            Err(e) => j
                .errors
                .push(format!("undoing {}: {e}", j.steps[i].change.describe())),
        }
    }
    if let Some(l) = log {
        if let Err(e) = l.flush() {
            j.errors.push(format!("recording rollback progress: {e}"));
        }
    }
    undone
}

/// Roll back the session's journal (under its lock). `NotFound` when there is
/// nothing to roll back.
pub(crate) fn rollback(s: &Session, fx: &mut dyn Effects) -> Result<(RollbackReport, Journal)> {
    let Some(mut j) = Journal::load(&s.dir, &s.key(), &s.id, &s.desc)? else {
        return Err(Error::new(
            ErrorKind::NotFound,
            format!(
                "no apply journal for {} in {}: nothing to roll back",
                s.desc,
                s.dir.path().display()
            ),
        ));
    };
    if j.state == JournalState::RolledBack {
        return Err(Error::new(
            ErrorKind::NotFound,
            "the last apply was already rolled back",
        ));
    }
    let was = j.state.name().to_string();
    // The boot configuration persisted for this apply first: a file changed
    // since (or a disk that cannot be written) stops here with nothing undone,
    // and once the files are back the live undo below may be run again.
    let restored_files = super::persisted::restore_for_rollback(&s.dir, &j)?;
    let (undone, save_err) =
        undo_journal(s, fx, &mut j).map_err(|e| with_files(e, &restored_files))?;
    if j.errors.is_empty() {
        if let Some(e) = save_err {
            let said = unrecorded(s, &e);
            return Err(with_files(
                Error::new(
                    ErrorKind::Io,
                    format!("rolled back ({}), {said}", undone.join("; ")),
                )
                .with_source(e.error),
                &restored_files,
            ));
        }
        Ok((
            RollbackReport {
                undone,
                was,
                restored_files,
            },
            j,
        ))
    } else {
        Err(with_files(
            Error::new(
                ErrorKind::RollbackFailed,
                format!(
                    "rollback incomplete, the host may be in a mixed state; not restored: {}; \
                 undone: {}. The journal is kept: fix the cause and run `roce-net rollback` again",
                    j.errors.join("; "),
                    if undone.is_empty() {
                        "nothing".to_string()
                    } else {
                        undone.join("; ")
                    }
                ),
            ),
            &restored_files,
        ))
    }
}

/// `e`, saying which boot files were put back before it (they stay put back:
/// running `rollback` again finds them as they were and redoes only the rest).
fn with_files(e: Error, restored: &[String]) -> Error {
    if restored.is_empty() {
        return e;
    }
    e.context(format!(
        "the boot configuration persisted for the apply was put back first ({})",
        restored.join("; ")
    ))
}
