//! Faults against the transaction, in-process: a state directory
//! that fills up (a small tmpfs in a private mount namespace) and a wall clock
//! stepped under the confirm watchdog (a test-only seam in `clock.rs`).

use super::tests::{comparable, env};
use super::{ApplyOptions, JournalState, WatchdogOutcome};
use crate::error::ErrorKind;
use crate::policy::Policy;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Run `f` on a thread of its own in a private mount namespace (threads it
/// starts inherit it), with a tmpfs of `size` mounted on a fresh directory; the
/// mount is gone when the thread ends, and the machine never sees it.
fn on_small_tmpfs<R: Send>(size: &str, f: impl FnOnce(&Path) -> R + Send) -> R {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            let c = |s: &str| std::ffi::CString::new(s).unwrap();
            let p = c(path.to_str().unwrap());
            // SAFETY: unshare of this thread's mount namespace (CLONE_FS is
            // per thread) and mounts inside it with valid C strings.
            unsafe {
                assert_eq!(libc::unshare(libc::CLONE_NEWNS), 0, "unshare");
                let none = std::ptr::null();
                assert_eq!(
                    libc::mount(
                        none,
                        c("/").as_ptr(),
                        none,
                        libc::MS_REC | libc::MS_PRIVATE,
                        std::ptr::null()
                    ),
                    0
                );
                let opts = c(&format!("size={size},mode=0755"));
                assert_eq!(
                    libc::mount(
                        c("tmpfs").as_ptr(),
                        p.as_ptr(),
                        c("tmpfs").as_ptr(),
                        0,
                        opts.as_ptr().cast()
                    ),
                    0,
                    "mount tmpfs: {}",
                    std::io::Error::last_os_error()
                );
            }
            let r = f(&path);
            // SAFETY: unmount what this thread mounted.
            unsafe { libc::umount2(p.as_ptr(), libc::MNT_DETACH) };
            r
        })
        .join()
        .unwrap()
    });
    drop(dir);
    r
}

/// Run `f` on a thread of its own in a private mount namespace (threads it
/// starts inherit it), with a fresh directory bind-mounted onto itself; `f`
/// gets the directory and a switch that remounts it read-only (`true`) or
/// writable (`false`). The machine never sees the mounts.
fn on_bind_mount<R: Send>(f: impl FnOnce(&Path, &dyn Fn(bool)) -> R + Send) -> R {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let c = |s: &str| std::ffi::CString::new(s).unwrap();
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            let p = c(path.to_str().unwrap());
            let none: *const libc::c_char = std::ptr::null();
            let no_data: *const libc::c_void = std::ptr::null();
            // SAFETY: unshare of this thread's mount namespace (CLONE_FS is
            // per thread) and mounts inside it with valid C strings.
            unsafe {
                assert_eq!(libc::unshare(libc::CLONE_NEWNS), 0, "unshare");
                let flags = libc::MS_REC | libc::MS_PRIVATE;
                assert_eq!(libc::mount(none, c("/").as_ptr(), none, flags, no_data), 0);
                assert_eq!(
                    libc::mount(p.as_ptr(), p.as_ptr(), none, libc::MS_BIND, no_data),
                    0,
                    "bind mount: {}",
                    std::io::Error::last_os_error()
                );
            }
            let read_only = |ro: bool| {
                let mut flags = libc::MS_REMOUNT | libc::MS_BIND;
                if ro {
                    flags |= libc::MS_RDONLY;
                }
                // SAFETY: a remount of the bind mount this thread made.
                let rc = unsafe { libc::mount(none, p.as_ptr(), none, flags, no_data) };
                assert_eq!(rc, 0, "remount: {}", std::io::Error::last_os_error());
            };
            let r = f(&path, &read_only);
            // SAFETY: unmount what this thread mounted.
            unsafe { libc::umount2(p.as_ptr(), libc::MNT_DETACH) };
            r
        })
        .join()
        .unwrap()
    });
    drop(dir);
    r
}

/// Apply with a 1 s confirm timeout, `block` the state directory (full,
/// read-only) and run the watchdog: past its deadline it has undone nothing
/// (host `applied`, journal `pending_confirm`) and has not given up; once
/// `unblock`ed it rolls back within 10 s, to `before`. Returns the journal.
fn the_watchdog_waits_to_record(
    e: &super::tests::Env,
    opts: &ApplyOptions,
    (before, applied): (&serde_json::Value, &serde_json::Value),
    block: impl FnOnce(),
    unblock: impl FnOnce(),
) -> super::Journal {
    let timed = ApplyOptions {
        confirm_timeout: Some(Duration::from_secs(1)),
        ..opts.clone()
    };
    super::apply_policy(&e.host, &Policy::default(), &timed).unwrap();
    block();
    std::thread::scope(|s| {
        let w = s.spawn(|| super::watchdog(&e.host, opts));
        std::thread::sleep(Duration::from_millis(2500));
        assert_eq!(
            &comparable(&e.host.snapshot().unwrap()),
            applied,
            "nothing undone while it cannot be recorded"
        );
        let j = super::apply_status(&e.host, opts).unwrap().unwrap();
        assert!(
            matches!(j.state, JournalState::PendingConfirm { .. }),
            "{:?}",
            j.state
        );
        assert!(!w.is_finished(), "the watchdog does not give up");
        unblock();
        let t0 = Instant::now();
        while !w.is_finished() {
            assert!(t0.elapsed() < Duration::from_secs(10), "watchdog stuck");
            std::thread::sleep(Duration::from_millis(50));
        }
        let out = w.join().unwrap().unwrap();
        assert!(matches!(out, WatchdogOutcome::RolledBack(_)), "{out:?}");
    });
    assert_eq!(&comparable(&e.host.snapshot().unwrap()), before);
    let j = super::apply_status(&e.host, opts).unwrap().unwrap();
    assert_eq!(j.state, JournalState::RolledBack);
    j
}

/// A read-only state directory (a bind mount remounted read-only in a private
/// mount namespace). Apply refuses before the first change: the host is as
/// before, the error names the directory, keeps the kernel's "Read-only file
/// system" and says what to do; no journal is left. An apply whose state
/// directory turns read-only afterwards: `status` still reads it, `rollback`
/// undoes nothing and says so (journal `committed`, host applied), and once
/// the directory is writable again `rollback` restores the host.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn a_read_only_state_directory_is_refused_before_any_change() {
    let e = env(
        "a_read_only_state_directory_is_refused_before_any_change",
        2,
    );
    let before = comparable(&e.host.snapshot().unwrap());
    on_bind_mount(|root, read_only| {
        // The state directory exists (made by an earlier run), or is still to
        // be made under the read-only mount.
        std::fs::create_dir(root.join("state")).unwrap();
        std::fs::set_permissions(
            root.join("state"),
            std::os::unix::fs::PermissionsExt::from_mode(0o700),
        )
        .unwrap();
        for dir in [root.join("state"), root.join("fresh")] {
            let opts = ApplyOptions {
                state_dir: dir.clone(),
                ..e.opts.clone()
            };
            read_only(true);
            let err = super::apply_policy(&e.host, &Policy::default(), &opts).unwrap_err();
            let msg = format!("{err:#}");
            assert_eq!(err.kind(), ErrorKind::Io, "{msg}");
            assert!(msg.contains(&dir.display().to_string()), "{msg}");
            assert!(msg.contains("Read-only file system"), "{msg}");
            assert!(
                msg.contains("remount it read-write or use another --state-dir"),
                "{msg}"
            );
            assert_eq!(
                comparable(&e.host.snapshot().unwrap()),
                before,
                "nothing changed"
            );
            read_only(false);
            assert!(
                super::apply_status(&e.host, &opts)
                    .unwrap_or(None)
                    .is_none(),
                "no journal left"
            );
        }

        // Read-only after a successful apply.
        let opts = ApplyOptions {
            state_dir: root.join("state"),
            ..e.opts.clone()
        };
        let r = super::apply_policy(&e.host, &Policy::default(), &opts).unwrap();
        assert!(r.applied > 0);
        let applied = comparable(&e.host.snapshot().unwrap());
        read_only(true);
        let j = super::apply_status(&e.host, &opts).unwrap().unwrap();
        assert_eq!(j.state, JournalState::Committed);
        let err = super::rollback(&e.host, &opts).unwrap_err();
        let msg = err.to_string();
        assert_eq!(err.kind(), ErrorKind::Io, "{msg}");
        assert!(
            msg.contains("nothing was undone")
                && msg.contains("Read-only file system")
                && msg.contains(&format!("{} is on a read-only", opts.state_dir.display()))
                && msg.contains("remount it read-write"),
            "{msg}"
        );
        assert_eq!(comparable(&e.host.snapshot().unwrap()), applied);
        let j = super::apply_status(&e.host, &opts).unwrap().unwrap();
        assert_eq!(
            j.state,
            JournalState::Committed,
            "status agrees with the host"
        );
        read_only(false);
        super::rollback(&e.host, &opts).unwrap();
        assert_eq!(comparable(&e.host.snapshot().unwrap()), before);
        let j = super::apply_status(&e.host, &opts).unwrap().unwrap();
        assert_eq!(j.state, JournalState::RolledBack);

        // The watchdog: a pending apply, the directory read-only at the
        // deadline.
        let j = the_watchdog_waits_to_record(
            &e,
            &opts,
            (&before, &applied),
            || read_only(true),
            || read_only(false),
        );
        let w = j.watchdog.unwrap();
        assert_eq!(w.outcome.as_deref(), Some("rolled_back"), "{w:?}");
    });
}

/// Fill the filesystem of `dir` until a write fails; returns the filler.
fn fill(dir: &Path) -> PathBuf {
    let p = dir.join("filler");
    let mut f = std::fs::File::create(&p).unwrap();
    let block = [0u8; 4096];
    while f.write_all(&block).is_ok() {}
    p
}

/// Fill the file system of `dir` (a tmpfs) so that exactly `pages` pages of
/// it stay free; returns the filler.
fn fill_leaving(dir: &Path, pages: u64) -> PathBuf {
    let p = fill(dir);
    let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    let len = f.metadata().unwrap().len();
    f.set_len(len.saturating_sub(pages * 4096)).unwrap();
    p
}

/// A full disk at any point of an apply, swept page by page: the state
/// directory is a tmpfs left with 0, 1, 2, ... pages free, up to more than the
/// apply writes (its journal twice and its step log), one apply of an 8-NIC
/// lab each. Every apply ends exactly applied (`Ok`, journal `committed`) or
/// exactly as before (refused before the first change, or rolled back: never
/// `rollback_failed`), and what the error says of the journal is what the
/// journal on disk says. Among them, the last journal write (recording the
/// apply as finished) fails: the changes are undone from the `applying`
/// journal and its step log (exit 3). On main that left every change
/// applied, exit 70, saying the journal "still says committed" while on disk
/// it said `applying`.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn a_disk_full_at_any_write_of_an_apply_leaves_it_whole_or_undone() {
    let e = env(
        "a_disk_full_at_any_write_of_an_apply_leaves_it_whole_or_undone",
        8,
    );
    let before = comparable(&e.host.snapshot().unwrap());
    on_small_tmpfs("2m", |root| {
        let opts = ApplyOptions {
            state_dir: root.join("state"),
            ..e.opts.clone()
        };
        // What one apply writes, measured with room to spare.
        super::apply_policy(&e.host, &Policy::default(), &opts).unwrap();
        let applied = comparable(&e.host.snapshot().unwrap());
        let pages = |suffix: &str| {
            std::fs::read_dir(&opts.state_dir)
                .unwrap()
                .filter_map(|d| d.ok())
                .filter(|d| d.file_name().to_string_lossy().ends_with(suffix))
                .map(|d| d.metadata().unwrap().len().div_ceil(4096))
                .sum::<u64>()
        };
        let (journal, log) = (pages(".journal.json"), pages(".journal.log"));
        super::rollback(&e.host, &opts).unwrap();
        assert_eq!(comparable(&e.host.snapshot().unwrap()), before);
        let (mut kept, mut refused, mut undone, mut last_write) = (0, 0, 0, 0);
        for free in 0..=2 * journal + log + 2 {
            // A fresh state directory each time (as on a node's first apply):
            // the step log then takes pages of its own.
            let opts = ApplyOptions {
                state_dir: root.join(format!("state-{free}")),
                ..opts.clone()
            };
            let filler = fill_leaving(root, free);
            let r = super::apply_policy(&e.host, &Policy::default(), &opts);
            let host = comparable(&e.host.snapshot().unwrap());
            std::fs::remove_file(&filler).unwrap();
            let on_disk = super::apply_status(&e.host, &opts).unwrap();
            match r {
                Ok(_) => {
                    assert_eq!(host, applied, "{free} pages free");
                    let j = on_disk.unwrap();
                    assert_eq!(j.state, JournalState::Committed, "{free} pages free");
                    kept += 1;
                    super::rollback(&e.host, &opts).unwrap();
                }
                Err(err) => {
                    let msg = format!("{err:#}");
                    assert_eq!(host, before, "{free} pages free: {msg}");
                    assert_ne!(err.kind(), ErrorKind::RollbackFailed, "{msg}");
                    match on_disk.map(|j| j.state) {
                        None => refused += 1,
                        Some(JournalState::RolledBack) => {
                            assert_eq!(err.kind(), ErrorKind::RolledBack, "{msg}");
                            undone += 1;
                        }
                        Some(JournalState::Applying) => {
                            assert_eq!(err.kind(), ErrorKind::RolledBack, "{msg}");
                            assert!(
                                msg.contains("still says `applying`")
                                    && msg.contains("roce-net rollback"),
                                "{free} pages free: the message says what is on disk: {msg}"
                            );
                            undone += 1;
                            // Recorded once there is space; nothing more to undo.
                            super::rollback(&e.host, &opts).unwrap();
                            assert_eq!(comparable(&e.host.snapshot().unwrap()), before);
                        }
                        Some(other) => panic!("{free} pages free: journal {other:?}: {msg}"),
                    }
                    if msg.contains("recording the apply as finished") {
                        last_write += 1;
                    }
                }
            }
            let j = super::apply_status(&e.host, &opts).unwrap();
            assert!(
                j.is_none_or(|j| j.state == JournalState::RolledBack),
                "{free} pages free: settled"
            );
            std::fs::remove_dir_all(&opts.state_dir).unwrap();
        }
        eprintln!(
            "free-space sweep ({journal} journal pages, {log} step log pages): {kept} applied, \
             {refused} refused before the first change, {undone} rolled back ({last_write} at \
             the last journal write)"
        );
        assert!(kept > 0 && refused > 0 && undone > 0, "every outcome seen");
        assert!(
            last_write > 0,
            "the last journal write failed at least once"
        );
    });
}

/// A rollback that cannot write its journal undoes nothing (the host
/// keeps the apply, the journal still says so), says what to do, and works
/// once there is space; the watchdog at its deadline waits for space instead of
/// restoring the host behind a journal that says `pending_confirm`.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn a_rollback_that_cannot_be_recorded_undoes_nothing() {
    let e = env("a_rollback_that_cannot_be_recorded_undoes_nothing", 2);
    let before = comparable(&e.host.snapshot().unwrap());
    on_small_tmpfs("1m", |root| {
        let opts = ApplyOptions {
            state_dir: root.join("state"),
            ..e.opts.clone()
        };
        // A full disk before the apply: refused before the first change,
        // naming the directory and what to do.
        let filler = fill(root);
        let err = super::apply_policy(&e.host, &Policy::default(), &opts).unwrap_err();
        let msg = format!("{err:#}");
        assert_eq!(err.kind(), ErrorKind::Io, "{msg}");
        assert!(
            msg.contains("No space left on device")
                && msg.contains(&format!("no space left for {}", opts.state_dir.display()))
                && msg.contains("free space there or use another --state-dir"),
            "{msg}"
        );
        assert_eq!(
            comparable(&e.host.snapshot().unwrap()),
            before,
            "nothing changed"
        );
        std::fs::remove_file(&filler).unwrap();

        let r = super::apply_policy(&e.host, &Policy::default(), &opts).unwrap();
        assert!(r.applied > 0);
        let applied = comparable(&e.host.snapshot().unwrap());
        assert_ne!(applied, before);

        let filler = fill(root);
        let err = super::rollback(&e.host, &opts).unwrap_err();
        let msg = err.to_string();
        assert_eq!(err.kind(), ErrorKind::Io, "{msg}");
        assert!(
            msg.contains("nothing was undone") && msg.contains("roce-net rollback"),
            "{msg}"
        );
        assert_eq!(
            comparable(&e.host.snapshot().unwrap()),
            applied,
            "the host keeps the apply its journal records"
        );
        let j = super::apply_status(&e.host, &opts).unwrap().unwrap();
        assert_eq!(j.state, JournalState::Committed);
        std::fs::remove_file(&filler).unwrap();
        super::rollback(&e.host, &opts).unwrap();
        assert_eq!(comparable(&e.host.snapshot().unwrap()), before);

        // The watchdog: a pending apply, the disk full at the deadline.
        let filler = std::cell::Cell::new(None);
        let j = the_watchdog_waits_to_record(
            &e,
            &opts,
            (&before, &applied),
            || filler.set(Some(fill(root))),
            || std::fs::remove_file(filler.take().unwrap()).unwrap(),
        );
        let w = j.watchdog.unwrap();
        assert_eq!(w.outcome.as_deref(), Some("rolled_back"), "{w:?}");
    });
}

/// An apply whose names file cannot be written: a link planted as
/// `iproute2/` or `iproute2/rt_tables.d/` by another account (refused, never
/// written through), or a read-only etc root. Nothing changed, so it is a
/// clean rollback (exit 3, journal `rolled_back` without errors, the host as
/// before) and the next apply is not refused. On main the names step stayed
/// `started`, its undo failed the same way, and the namespace was left in
/// `rollback_failed` (exit 4, "the host may be in a mixed state ... Undone:
/// nothing"), refusing every later apply until a manual rollback.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn a_names_file_that_cannot_be_written_is_a_clean_rollback() {
    let e = env("a_names_file_that_cannot_be_written_is_a_clean_rollback", 2);
    let before = comparable(&e.host.snapshot().unwrap());
    let refused_cleanly = |host: &crate::host::Host, why: &str| {
        let err = super::apply_policy(host, &Policy::default(), &e.opts).unwrap_err();
        let msg = format!("{err:#}");
        assert_eq!(err.kind(), ErrorKind::RolledBack, "{why}: {msg}");
        assert!(!msg.contains("mixed state"), "{why}: {msg}");
        assert_eq!(comparable(&host.snapshot().unwrap()), before, "{why}");
        let j = super::apply_status(host, &e.opts).unwrap().unwrap();
        assert_eq!(j.state, JournalState::RolledBack, "{why}: {:?}", j.errors);
        assert!(j.errors.is_empty(), "{why}: {:?}", j.errors);
        msg
    };
    for planted in ["iproute2", "iproute2/rt_tables.d"] {
        let d = tempfile::tempdir().unwrap();
        let (etc, victim) = (d.path().join("etc"), d.path().join("victim"));
        std::fs::create_dir_all(victim.join("rt_tables.d")).unwrap();
        let link = etc.join(planted);
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
        let host = e.host.clone().with_etc_root(&etc);
        let msg = refused_cleanly(&host, planted);
        assert!(msg.contains("symlink"), "{planted}: {msg}");
        let mut left: Vec<PathBuf> = Vec::new();
        let mut dirs = vec![victim.clone()];
        while let Some(dir) = dirs.pop() {
            for f in std::fs::read_dir(dir).unwrap() {
                let p = f.unwrap().path();
                if p.is_dir() {
                    dirs.push(p);
                } else {
                    left.push(p);
                }
            }
        }
        assert!(left.is_empty(), "{planted}: written through: {left:?}");
        // Nothing blocks the next apply.
        std::fs::remove_file(&link).unwrap();
        super::apply_policy(&host, &Policy::default(), &e.opts).unwrap();
        super::rollback(&host, &e.opts).unwrap();
        assert_eq!(comparable(&host.snapshot().unwrap()), before);
    }
    on_bind_mount(|root, read_only| {
        let host = e.host.clone().with_etc_root(root);
        read_only(true);
        let msg = refused_cleanly(&host, "read-only etc root");
        assert!(msg.contains("Read-only file system"), "{msg}");
        read_only(false);
        super::apply_policy(&host, &Policy::default(), &e.opts).unwrap();
        super::rollback(&host, &e.opts).unwrap();
        assert_eq!(comparable(&host.snapshot().unwrap()), before);
    });
}

/// The confirm deadline is timed on the boot clock. A wall clock
/// stepped an hour ahead under the watchdog neither rolls back early nor stops
/// `confirm`; one stepped an hour back does not keep the apply past its time.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn a_wall_clock_step_moves_no_confirm_deadline() {
    use super::clock::WALL_STEP;
    let e = env("a_wall_clock_step_moves_no_confirm_deadline", 2);
    let before = comparable(&e.host.snapshot().unwrap());
    let arm = |secs| {
        let g = super::arm_confirm(&e.host, Duration::from_secs(secs)).unwrap();
        let o = ApplyOptions {
            guard: Some(g),
            ..e.opts.clone()
        };
        super::apply_policy(&e.host, &Policy::default(), &o).unwrap();
        o
    };
    // +1 h: nothing rolled back early, and confirm is still in time.
    let o = arm(4);
    let applied = comparable(&e.host.snapshot().unwrap());
    std::thread::scope(|s| {
        let w = s.spawn(|| {
            WALL_STEP.with(|c| c.set(3600));
            super::watchdog(&e.host, &o)
        });
        std::thread::sleep(Duration::from_millis(1000));
        assert_eq!(comparable(&e.host.snapshot().unwrap()), applied);
        WALL_STEP.with(|c| c.set(3600));
        super::confirm(&e.host, &e.opts).unwrap();
        WALL_STEP.with(|c| c.set(0));
        let out = w.join().unwrap().unwrap();
        assert_eq!(out, WatchdogOutcome::Confirmed);
    });
    assert_eq!(comparable(&e.host.snapshot().unwrap()), applied);
    super::rollback(&e.host, &e.opts).unwrap();
    assert_eq!(comparable(&e.host.snapshot().unwrap()), before);

    // -1 h: rolled back at its deadline (2 s), not an hour later.
    let o = arm(2);
    let (tx, rx) = std::sync::mpsc::channel();
    let (h, o2) = (e.host.clone(), o.clone());
    std::thread::spawn(move || {
        WALL_STEP.with(|c| c.set(-3600));
        let _ = tx.send(super::watchdog(&h, &o2));
    });
    let out = rx
        .recv_timeout(Duration::from_secs(15))
        .expect("the watchdog rolls back at its deadline")
        .unwrap();
    assert!(matches!(out, WatchdogOutcome::RolledBack(_)), "{out:?}");
    assert_eq!(comparable(&e.host.snapshot().unwrap()), before);
}

/// A NIC deleted mid-apply (here between the last change and
/// verify). What lived on it went with it: rollback counts those objects as
/// restored, says so, and finishes `rolled_back`, so the next apply is not
/// refused. On main every such undo was a failure: `rollback_failed`, exit 4
/// "mixed state", every later apply refused until `archive`.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn a_nic_deleted_mid_apply_is_rolled_back_cleanly() {
    a_nic_gone_mid_apply(
        "a_nic_deleted_mid_apply_is_rolled_back_cleanly",
        &["link del r1"],
    );
}

/// A NIC renamed mid-apply (down, renamed,
/// up again, between the last change and verify; the kernel renames only a
/// down link). The objects apply put on it under its old name went with it:
/// rollback says so, finishes `rolled_back` with no "mixed state", r0's
/// objects are restored exactly, and the next apply is accepted.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn a_nic_renamed_mid_apply_is_rolled_back_cleanly() {
    let (msg, after) = a_nic_gone_mid_apply(
        "a_nic_renamed_mid_apply_is_rolled_back_cleanly",
        &[
            "link set dev r1 down",
            "link set dev r1 name rx1",
            "link set dev rx1 up",
        ],
    );
    assert!(msg.contains("renamed"), "{msg}");
    assert!(after.interfaces.iter().any(|i| i.name == "rx1"));
}

/// A NIC gone mid-apply, the run: apply to a 3-NIC lab, run the `ip` commands `gone` in its
/// host namespace between the last change and verify, and check that the
/// rollback finished cleanly: no `rollback_failed` or "mixed state", the error
/// says r1 no longer exists, the journal is `rolled_back` without errors, r0's
/// routes and sysctls are exactly as before, and the next apply (and its
/// rollback) works. Returns the error's message and the host after rollback.
fn a_nic_gone_mid_apply(
    test: &str,
    gone: &'static [&'static str],
) -> (String, crate::model::HostState) {
    let e = env(test, 3);
    let ns = e.lab.host_ns().unwrap().to_string();
    let before = e.host.snapshot().unwrap();
    let err = super::tests::apply_before_verify(&e, &Policy::default(), move || {
        for cmd in gone {
            super::tests::ip(&ns, cmd);
        }
    })
    .unwrap_err();
    let msg = err.to_string();
    assert_ne!(err.kind(), ErrorKind::RollbackFailed, "{msg}");
    assert!(!msg.contains("mixed state"), "{msg}");
    assert!(msg.contains("interface r1 no longer exists"), "{msg}");
    let j = super::apply_status(&e.host, &e.opts).unwrap().unwrap();
    assert_eq!(j.state, JournalState::RolledBack, "{:?}", j.errors);
    assert!(j.errors.is_empty(), "{:?}", j.errors);
    // r0's objects are restored exactly.
    let after = e.host.snapshot().unwrap();
    let on_r0 = |st: &crate::model::HostState| {
        let routes: Vec<String> = st
            .routes
            .iter()
            .filter(|r| r.dev.as_deref() == Some("r0") && r.family == crate::model::Family::Inet)
            .map(|r| r.to_string())
            .collect();
        (routes, st.sysctls.interfaces.get("r0").cloned())
    };
    assert_eq!(on_r0(&after), on_r0(&before));
    // Nothing blocks the next apply.
    let r = super::apply_policy(&e.host, &Policy::default(), &e.opts).unwrap();
    assert!(r.applied > 0);
    super::rollback(&e.host, &e.opts).unwrap();
    let j = super::apply_status(&e.host, &e.opts).unwrap().unwrap();
    assert_eq!(j.state, JournalState::RolledBack, "{:?}", j.errors);
    (msg, after)
}

/// A watchdog that cannot get the lock at its deadline (held here
/// by this test for longer than the watchdog waits) does not give up
/// silently: the journal records `failed`, that the apply was NOT rolled back
/// and what to run. On main it exited with nothing recorded and `status` kept
/// saying it would roll back.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn a_watchdog_that_cannot_get_the_lock_says_so() {
    let e = env("a_watchdog_that_cannot_get_the_lock_says_so", 2);
    let timed = ApplyOptions {
        confirm_timeout: Some(Duration::from_secs(1)),
        ..e.opts.clone()
    };
    super::apply_policy(&e.host, &Policy::default(), &timed).unwrap();
    let applied = comparable(&e.host.snapshot().unwrap());
    let key = super::namespace_key(&e.host).unwrap();
    let held = super::NsLock::acquire(&e.opts.state_dir, &key).unwrap();
    let opts = ApplyOptions {
        watchdog_lock_wait: Duration::from_millis(300),
        ..e.opts.clone()
    };
    let err = super::watchdog(&e.host, &opts).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Locked, "{err}");
    drop(held);
    assert_eq!(comparable(&e.host.snapshot().unwrap()), applied);
    let j = super::apply_status(&e.host, &e.opts).unwrap().unwrap();
    let w = j.watchdog.unwrap();
    assert_eq!(w.outcome.as_deref(), Some("failed"), "{w:?}");
    let m = w.message.unwrap_or_default();
    assert!(
        m.contains("NOT rolled back") && m.contains("roce-net rollback"),
        "{m}"
    );
    super::rollback(&e.host, &e.opts).unwrap();
}
