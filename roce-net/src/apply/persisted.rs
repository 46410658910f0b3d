//! What `persist` wrote for an apply, kept beside its journal so that rolling
//! the apply back also puts the boot configuration back
//! (docs/architecture.md, "What a rollback does with persisted files").
//!
//! [`persist_for_apply`] writes a persistence plan under the namespace's lock
//! (the one apply, rollback and the watchdog take), refusing while the last
//! apply is not settled. When that apply is `committed`, every path persist may
//! touch is read before and after the write, and what changed (each path's
//! previous content or absence, and a digest of what persist left) is saved as
//! `<key>.persisted.json` in the state directory, tagged with the apply's id.
//! A second persist for the same apply adds to the record (each path keeps
//! what it held before the first); a persist after a later apply starts a new
//! record for that apply (the old one can no longer be rolled back).
//!
//! [`restore_for_rollback`] is called by the rollback (the watchdog's
//! included) before it undoes anything live: a record of the journal's own
//! apply is put back through persist's writer, then archived; a file someone
//! changed since stops the rollback with nothing changed.

use super::identity::{describe_target, namespace_id};
use super::journal::{Journal, JournalState};
use super::{ApplyOptions, NsLock};
use crate::error::{Error, ErrorKind, Result};
use crate::files::statedir::StateDir;
use crate::host::Host;
use crate::persist::undo::{self, PersistedFile};
use crate::persist::{PersistPlan, PersistRoot, RemoveReport, WriteReport};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Format of the record.
const RECORD_VERSION: u32 = 1;

/// What persist changed for one apply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PersistRecord {
    version: u32,
    /// Namespace key.
    key: String,
    /// The apply the files were persisted for (its journal's id).
    apply_id: String,
    /// The backend of the last persist recorded.
    backend: String,
    /// Where the files are (absolute).
    target: PersistRoot,
    /// Every path changed, with what it held before the first persist.
    files: Vec<PersistedFile>,
    /// Directories persist created (deepest first).
    #[serde(default)]
    dirs: Vec<PathBuf>,
}

fn record_name(key: &str) -> String {
    Journal::persisted_name(key)
}

/// What [`persist_for_apply`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AppliedPersist {
    /// The files written (as [`write_persistence_at`](crate::write_persistence_at)
    /// reports them).
    pub report: WriteReport,
    /// Files of an earlier persistence removed or kept (as
    /// [`remove_stale_persistence`](crate::remove_stale_persistence) reports
    /// them).
    pub stale: RemoveReport,
    /// The record a rollback of the last apply restores from, when the last
    /// apply is committed and something changed (`None`: no apply journal, a
    /// rolled-back apply, a dry run, or nothing changed).
    pub recorded: Option<PathBuf>,
}

/// Write `plan` under `target` (then remove or keep the files of an earlier
/// persistence, as [`crate::remove_stale_persistence`]), as `roce-net persist`
/// does, under the namespace's lock; refused ([`ErrorKind::Locked`]) while
/// the last apply awaits confirmation or did not finish
/// ([`super::refuse_persist_while_unsettled`]). When the last apply is
/// committed, what changed is recorded beside its journal so that
/// [`crate::rollback`] of that apply puts the files back as they were before
/// (see the module documentation). A dry run takes no lock and records
/// nothing.
pub fn persist_for_apply(
    host: &Host,
    opts: &ApplyOptions,
    plan: &PersistPlan,
    target: &PersistRoot,
    switch_backend: bool,
    dry_run: bool,
) -> Result<AppliedPersist> {
    let write = |t: &PersistRoot| -> Result<(WriteReport, RemoveReport)> {
        let report = crate::persist::write_persistence_at(&plan.files, t, dry_run)?;
        let stale = crate::persist::remove_stale_persistence(t, plan, switch_backend, dry_run)?;
        Ok((report, stale))
    };
    let plain = |(report, stale)| AppliedPersist {
        report,
        stale,
        recorded: None,
    };
    if dry_run {
        return write(target).map(plain);
    }
    let id = namespace_id(host)?;
    let key = id.key();
    // No state directory: no apply to record for (none is created).
    let Some(dir) = StateDir::open(&opts.state_dir)? else {
        return write(target).map(plain);
    };
    let _lock = NsLock::acquire_in(&dir, &key, None)
        .map_err(|e| e.context("persist waits for the apply, rollback or watchdog to finish"))?;
    let journal = Journal::load(&dir, &key, &id, &describe_target(host))?;
    if let Some(j) = &journal {
        super::status::refuse_unsettled(host, j)?;
    }
    let Some(j) = journal.filter(|j| j.state == JournalState::Committed) else {
        return write(target).map(plain);
    };
    // Absolute, so that a rollback run from anywhere finds the files.
    let target = absolute(target)?;
    let files: Vec<PathBuf> = plan.files.iter().map(|f| f.path.clone()).collect();
    let paths = undo::candidates(&target, &files);
    let before = undo::capture(&target, &paths)?;
    let done = write(&target)?;
    let after = undo::capture(&target, &paths);
    let unrecorded = |e: Error| {
        e.context(
            "persist wrote the files but could not record what it changed: a rollback of \
             the last apply will not put them back; `roce-net persist --remove` takes them \
             out",
        )
    };
    let (changed, dirs) = after
        .and_then(|after| undo::changes(&before, &after))
        .map_err(unrecorded)?;
    let name = record_name(&key);
    let earlier = load(&dir, &key)
        .ok()
        .flatten()
        .filter(|r| r.apply_id == j.apply_id);
    let (files, mut all_dirs) = match &earlier {
        Some(r) => (undo::merge(&r.files, changed), r.dirs.clone()),
        None => (changed, Vec::new()),
    };
    for d in dirs {
        if !all_dirs.contains(&d) {
            all_dirs.push(d);
        }
    }
    all_dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    if files.is_empty() && earlier.is_none() {
        return Ok(plain(done));
    }
    let record = PersistRecord {
        version: RECORD_VERSION,
        key: key.clone(),
        apply_id: j.apply_id.clone(),
        backend: plan.backend.name().to_string(),
        target,
        files,
        dirs: all_dirs,
    };
    let bytes = serde_json::to_vec_pretty(&record).map_err(|e| {
        unrecorded(Error::new(
            ErrorKind::Io,
            format!("encoding the persist record: {e}"),
        ))
    })?;
    dir.write_atomic(&name, &bytes).map_err(unrecorded)?;
    Ok(AppliedPersist {
        report: done.0,
        stale: done.1,
        recorded: Some(dir.file(&name)),
    })
}

fn absolute(t: &PersistRoot) -> Result<PersistRoot> {
    let abs = |p: &Path| {
        std::path::absolute(p).map_err(|e| Error::io(e, format!("resolving {}", p.display())))
    };
    Ok(PersistRoot {
        root: abs(&t.root)?,
        etc: abs(&t.etc)?,
        run: abs(&t.run)?,
    })
}

/// The record in `dir` for namespace `key`, if any.
fn load(dir: &StateDir, key: &str) -> Result<Option<PersistRecord>> {
    let name = record_name(key);
    let Some(bytes) = dir.read(&name)? else {
        return Ok(None);
    };
    let r: PersistRecord = serde_json::from_slice(&bytes).map_err(|e| {
        Error::new(
            ErrorKind::Parse,
            format!(
                "{} cannot be read ({e}): roce-net cannot tell which boot files persist \
                 changed for the last apply. Move it aside to roll back the live state only \
                 (then check the boot configuration by hand), or restore it",
                dir.file(&name).display()
            ),
        )
    })?;
    if r.version != RECORD_VERSION || r.key != key {
        return Err(Error::new(
            ErrorKind::Parse,
            format!(
                "{} is of another format or namespace (version {}, key {}); move it aside",
                dir.file(&name).display(),
                r.version,
                r.key
            ),
        ));
    }
    Ok(Some(r))
}

/// Before a rollback of `j` undoes anything live (under the namespace's
/// lock): put back the boot configuration persist changed for this very
/// apply, then archive the record. Lines saying what was put back; none when
/// nothing was persisted for it (a record of another apply is left alone).
/// A file changed since persist wrote it fails with nothing changed.
pub(crate) fn restore_for_rollback(dir: &StateDir, j: &Journal) -> Result<Vec<String>> {
    let Some(r) = load(dir, &j.key)? else {
        return Ok(Vec::new());
    };
    if r.apply_id != j.apply_id {
        return Ok(Vec::new());
    }
    let report = undo::restore(&r.target, &r.files, &r.dirs)
        .map_err(|e| e.context("rollback: nothing was undone"))?;
    let stamp = format!("{}.{}.restored", j.key, super::clock::now());
    // The files are back; a record left (archiving failed) finds them as they
    // were and puts back nothing the next time.
    let _ = dir.archive(&record_name(&j.key), &format!("{stamp}.persisted.json"));
    Ok(report.lines())
}
