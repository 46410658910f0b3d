//! Safe writing (atomic, backups, no symlinks, dry run, unchanged files left alone)
//! and backend detection, all inside temp directories.

use roce_net::ErrorKind;
use roce_net::{Backend, DiffStatus, RenderedFile};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

fn file(path: &str, content: &str, mode: u32) -> RenderedFile {
    RenderedFile {
        path: PathBuf::from(path),
        content: content.into(),
        mode,
        note: None,
    }
}

fn mode_of(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

/// Every entry under `dir`, recursively, without following symlinks.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                stack.push(p.clone());
            }
            out.push(p);
        }
    }
    out.sort();
    out
}

#[test]
fn writes_new_files_with_parents_and_mode_and_no_temp_leftovers() {
    let root = tempfile::tempdir().unwrap();
    let files = [
        file("/etc/sysctl.d/90-roce-net.conf", "a = 1\n", 0o644),
        file("/etc/netplan/90-roce-net.yaml", "network: {}\n", 0o600),
    ];
    let r = roce_net::write_persistence(&files, root.path(), false).unwrap();
    let p1 = root.path().join("etc/sysctl.d/90-roce-net.conf");
    let p2 = root.path().join("etc/netplan/90-roce-net.yaml");
    assert_eq!(r.written, vec![p1.clone(), p2.clone()]);
    assert!(r.unchanged.is_empty() && r.backups.is_empty());
    assert_eq!(std::fs::read_to_string(&p1).unwrap(), "a = 1\n");
    assert_eq!(mode_of(&p1), 0o644);
    assert_eq!(mode_of(&p2), 0o600);
    assert_eq!(r.diffs[0].status, DiffStatus::Create);
    assert!(r.diffs[0].diff.contains("+a = 1\n"));
    // The boot-time repair of an interrupted switch, installed first.
    let repair = root
        .path()
        .join(roce_net::BOOT_REPAIR_PATH.trim_start_matches('/'));
    assert_eq!(r.boot_repair.as_deref(), Some(repair.as_path()));
    assert_eq!(mode_of(&repair), 0o755);
    // Only the two files, the repair and their directories: no temp files
    // left behind.
    let names: Vec<String> = tree(root.path())
        .iter()
        .map(|p| p.strip_prefix(root.path()).unwrap().display().to_string())
        .collect();
    assert_eq!(
        names,
        [
            "etc",
            "etc/netplan",
            "etc/netplan/90-roce-net.yaml",
            "etc/sysctl.d",
            "etc/sysctl.d/90-roce-net.conf",
            "etc/systemd",
            "etc/systemd/system-generators",
            "etc/systemd/system-generators/roce-net-persist-repair",
        ]
    );
    // Installed once: a persist that finds it in place leaves it alone.
    let again = [file("/etc/sysctl.d/90-roce-net.conf", "a = 2\n", 0o644)];
    let r = roce_net::write_persistence(&again, root.path(), false).unwrap();
    assert_eq!(r.boot_repair, None);
}

#[test]
fn replaces_atomically_and_keeps_a_backup() {
    let root = tempfile::tempdir().unwrap();
    let p = root.path().join("etc/sysctl.d/90-roce-net.conf");
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, "old = 1\n").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
    let old_ino = std::fs::metadata(&p).unwrap().ino();

    let r = roce_net::write_persistence(
        &[file("/etc/sysctl.d/90-roce-net.conf", "new = 2\n", 0o644)],
        root.path(),
        false,
    )
    .unwrap();
    let bak = root
        .path()
        .join("etc/sysctl.d/90-roce-net.conf.roce-net.bak");
    assert_eq!(r.written, vec![p.clone()]);
    assert_eq!(r.backups, vec![bak.clone()]);
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "new = 2\n");
    assert_eq!(mode_of(&p), 0o644);
    // A rename, not an in-place rewrite: the file is a new inode.
    assert_ne!(std::fs::metadata(&p).unwrap().ino(), old_ino);
    assert_eq!(std::fs::read_to_string(&bak).unwrap(), "old = 1\n");
    assert_eq!(mode_of(&bak), 0o640);
    assert_eq!(r.diffs[0].status, DiffStatus::Modify);
    assert!(
        r.diffs[0].diff.contains("-old = 1\n+new = 2\n"),
        "{}",
        r.diffs[0].diff
    );
    assert_eq!(r.diffs[0].mode_before, Some(0o640));
}

#[test]
fn unchanged_files_are_not_rewritten() {
    let root = tempfile::tempdir().unwrap();
    let files = [file(
        "/etc/iproute2/rt_tables.d/roce-net.conf",
        "100\tx\n",
        0o644,
    )];
    roce_net::write_persistence(&files, root.path(), false).unwrap();
    let p = root.path().join("etc/iproute2/rt_tables.d/roce-net.conf");
    let before = std::fs::metadata(&p).unwrap();
    let r = roce_net::write_persistence(&files, root.path(), false).unwrap();
    assert!(r.written.is_empty(), "{r:?}");
    assert_eq!(r.unchanged, vec![p.clone()]);
    assert!(r.backups.is_empty());
    assert_eq!(r.diffs[0].status, DiffStatus::Unchanged);
    assert!(r.diffs[0].diff.is_empty());
    let after = std::fs::metadata(&p).unwrap();
    assert_eq!(before.ino(), after.ino());
    assert_eq!(before.mtime_nsec(), after.mtime_nsec());
    assert!(!root
        .path()
        .join("etc/iproute2/rt_tables.d/roce-net.conf.roce-net.bak")
        .exists());

    // Same content but another mode is a change.
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    let r = roce_net::write_persistence(&files, root.path(), false).unwrap();
    assert_eq!(r.written, vec![p.clone()]);
    assert_eq!(mode_of(&p), 0o644);
}

#[test]
fn dry_run_writes_nothing_and_reports_what_would_change() {
    let root = tempfile::tempdir().unwrap();
    let existing = root.path().join("etc/sysctl.d/90-roce-net.conf");
    std::fs::create_dir_all(existing.parent().unwrap()).unwrap();
    std::fs::write(&existing, "x = 0\n").unwrap();
    let before = tree(root.path());
    let files = [
        file("/etc/sysctl.d/90-roce-net.conf", "x = 1\n", 0o644),
        file("/etc/network/if-up.d/roce-net", "#!/bin/sh\n", 0o755),
    ];
    let r = roce_net::write_persistence(&files, root.path(), true).unwrap();
    assert!(r.dry_run);
    assert_eq!(r.written.len(), 2);
    assert_eq!(r.backups.len(), 1);
    assert_eq!(
        tree(root.path()),
        before,
        "dry run must not create anything"
    );
    assert_eq!(std::fs::read_to_string(&existing).unwrap(), "x = 0\n");
    // diff_persistence agrees with the report.
    let d = roce_net::diff_persistence(&files, root.path()).unwrap();
    assert_eq!(d, r.diffs);
    assert_eq!(d[1].status, DiffStatus::Create);
    // The diff names the file where it is on disk, under the root.
    let header = format!(
        "--- /dev/null\n+++ {}/etc/network/if-up.d/roce-net\n",
        root.path().display()
    );
    assert!(d[1].diff.starts_with(&header), "{}", d[1].diff);
    assert_eq!(d[1].path, Path::new("/etc/network/if-up.d/roce-net"));
}

#[test]
fn symlink_target_is_refused_and_nothing_is_written() {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("shadow");
    std::fs::write(&victim, "precious\n").unwrap();
    let dir = root.path().join("etc/sysctl.d");
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(&victim, dir.join("90-roce-net.conf")).unwrap();
    let before = tree(root.path());

    // The first file is fine, the second is a symlink: neither may be written.
    let files = [
        file("/etc/iproute2/rt_tables.d/roce-net.conf", "1\tx\n", 0o644),
        file("/etc/sysctl.d/90-roce-net.conf", "evil\n", 0o644),
    ];
    let e = roce_net::write_persistence(&files, root.path(), false).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.to_string().contains("symlink"), "{e}");
    assert!(e.to_string().contains("90-roce-net.conf"), "{e}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert_eq!(tree(root.path()), before);
    assert!(roce_net::diff_persistence(&files, root.path()).is_err());
}

#[test]
fn symlinked_parent_directory_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("etc")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.path().join("etc/netplan")).unwrap();
    let e = roce_net::write_persistence(
        &[file(
            "/etc/netplan/90-roce-net.yaml",
            "network: {}\n",
            0o600,
        )],
        root.path(),
        false,
    )
    .unwrap_err();
    assert!(e.to_string().contains("symlink"), "{e}");
    assert!(e.to_string().contains("etc/netplan"), "{e}");
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
}

#[test]
fn non_plain_paths_are_refused() {
    let root = tempfile::tempdir().unwrap();
    for p in ["etc/x", "/etc/../x", "/etc/./x", "/", "/etc//x", "/etc/x/"] {
        let e =
            roce_net::write_persistence(&[file(p, "x", 0o644)], root.path(), false).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{p}: {e}");
    }
    assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
}

#[test]
fn rendered_backend_files_round_trip_through_the_writer() {
    let root = tempfile::tempdir().unwrap();
    let mut d = roce_net::DesiredState {
        protocol: 201,
        ..Default::default()
    };
    d.table_names.insert(100000, "rnet-eth0".into());
    let files = roce_net::render_persistence(&d, Backend::RtTablesD, &Default::default()).unwrap();
    let r = roce_net::write_persistence(&files, root.path(), false).unwrap();
    assert_eq!(r.written.len(), 3);
    let again = roce_net::write_persistence(&files, root.path(), false).unwrap();
    assert_eq!(again.unchanged.len(), 3);
    assert!(
        std::fs::read_to_string(root.path().join("etc/iproute2/rt_tables.d/roce-net.conf"))
            .unwrap()
            .contains("100000\trnet-eth0\n")
    );
}

#[test]
fn an_oversized_existing_file_is_refused_not_read_whole() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("etc/sysctl.d");
    std::fs::create_dir_all(&dir).unwrap();
    let big = dir.join("90-roce-net.conf");
    // Sparse: 16 MiB + 1 byte without using the disk.
    let f = std::fs::File::create(&big).unwrap();
    f.set_len((16 << 20) + 1).unwrap();
    drop(f);
    let before = tree(root.path());
    let files = [file("/etc/sysctl.d/90-roce-net.conf", "x = 1\n", 0o644)];
    let e = roce_net::write_persistence(&files, root.path(), false).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.to_string().contains("larger than"), "{e}");
    assert!(e.to_string().contains("90-roce-net.conf"), "{e}");
    assert_eq!(tree(root.path()), before);
    assert_eq!(std::fs::metadata(&big).unwrap().len(), (16 << 20) + 1);
}

/// Persist writes roce-net's table-names file under the same
/// host-wide lock apply's writer takes (an exclusive flock on the private
/// `rt_tables.d/.roce-net.lock`), so the two never interleave a
/// read-modify-write of the file.
#[test]
fn the_table_names_file_is_written_under_the_host_wide_lock() {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("etc/iproute2/rt_tables.d");
    std::fs::create_dir_all(&dir).unwrap();
    // Another writer (apply, in any namespace) holds the lock.
    let held = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(dir.join(".roce-net.lock"))
        .unwrap();
    // SAFETY: flock on a descriptor the test owns.
    assert_eq!(
        unsafe { libc::flock(held.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
        0
    );
    let (tx, rx) = std::sync::mpsc::channel();
    let r = root.path().to_path_buf();
    let writer = std::thread::spawn(move || {
        let files = [file(
            &format!("/etc/{}", roce_net::TABLE_NAMES_FILE),
            "1001\troce_a\n",
            0o644,
        )];
        let out = roce_net::write_persistence(&files, &r, false);
        tx.send(()).unwrap();
        out
    });
    assert!(
        rx.recv_timeout(std::time::Duration::from_millis(500))
            .is_err(),
        "persist wrote the names file while another writer held the lock"
    );
    assert!(!dir.join("roce-net.conf").exists());
    drop(held);
    rx.recv_timeout(std::time::Duration::from_secs(30))
        .expect("persist goes on once the lock is free");
    writer.join().unwrap().unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.join("roce-net.conf")).unwrap(),
        "1001\troce_a\n"
    );
}

/// The `rt_tables.d` backend's files for table names `name(id)` of `ids`.
fn names_files(
    ids: impl IntoIterator<Item = u32>,
    name: &dyn Fn(u32) -> String,
) -> Vec<RenderedFile> {
    let mut d = roce_net::DesiredState {
        protocol: 201,
        ..Default::default()
    };
    for id in ids {
        d.table_names.insert(id, name(id));
    }
    roce_net::render_persistence(&d, Backend::RtTablesD, &Default::default()).unwrap()
}

/// The names file is host-wide: namespace A's apply (or persist) named tables
/// 1001-1008 for its NICs; persisting namespace B, whose plan keeps A's names
/// for its tables 1001-1004, changes nothing, and naming a table of its own
/// rewrites only that line: A's 1005-1008 stay (before, the file was replaced
/// whole and they were deleted).
#[test]
fn persisting_one_namespace_keeps_the_names_of_tables_it_does_not_name() {
    let root = tempfile::tempdir().unwrap();
    let a = names_files(1001..=1008, &|id| format!("roce_ens{}", id - 1001));
    roce_net::write_persistence(&a, root.path(), false).unwrap();
    let p = root.path().join("etc/iproute2/rt_tables.d/roce-net.conf");
    let written_by_a = std::fs::read_to_string(&p).unwrap();

    // B keeps A's names for 1001-1004: nothing to write.
    let b = names_files(1001..=1004, &|id| format!("roce_ens{}", id - 1001));
    let r = roce_net::write_persistence(&b, root.path(), true).unwrap();
    assert!(r.unchanged.contains(&p), "{r:?}");
    let d = roce_net::diff_persistence(&b, root.path()).unwrap();
    let names = d
        .iter()
        .find(|d| d.path.ends_with("roce-net.conf"))
        .unwrap();
    assert_eq!(names.status, DiffStatus::Unchanged, "{}", names.diff);

    // B names 1002 for its own NIC: only that line changes, in the dry run's
    // diff and on disk.
    let b = names_files(1001..=1004, &|id| match id {
        1002 => "roce_r1".into(),
        _ => format!("roce_ens{}", id - 1001),
    });
    let r = roce_net::write_persistence(&b, root.path(), true).unwrap();
    let diff = &r
        .diffs
        .iter()
        .find(|d| d.path.ends_with("roce-net.conf"))
        .unwrap()
        .diff;
    assert!(diff.contains("-1002\troce_ens1\n"), "{diff}");
    assert!(diff.contains("+1002\troce_r1\n"), "{diff}");
    for id in 1005..=1008 {
        assert!(!diff.contains(&format!("-{id}\t")), "{diff}");
    }
    assert_eq!(
        std::fs::read_to_string(&p).unwrap(),
        written_by_a,
        "dry run"
    );
    roce_net::write_persistence(&b, root.path(), false).unwrap();
    let now = std::fs::read_to_string(&p).unwrap();
    assert!(now.contains("1002\troce_r1\n"), "{now}");
    for id in [1001, 1003, 1004, 1005, 1006, 1007, 1008] {
        assert!(
            now.contains(&format!("{id}\troce_ens{}\n", id - 1001)),
            "{id}: {now}"
        );
    }
    assert!(!now.contains("roce_ens1\n"), "{now}");
    // One line per table.
    for id in 1001..=1008 {
        let lines = now.lines().filter(|l| l.starts_with(&format!("{id}\t")));
        assert_eq!(lines.count(), 1, "{id}: {now}");
    }
    // Persisting again is stable.
    let again = roce_net::write_persistence(&b, root.path(), false).unwrap();
    assert!(again.unchanged.contains(&p), "{again:?}");
}

/// `persist --remove` leaves the names file (listed in `left`, with why): it
/// is host-wide and live applies in any namespace write and rely on it, so
/// removing it made their names vanish. The other files go.
#[test]
fn remove_leaves_the_shared_table_names_file() {
    let root = tempfile::tempdir().unwrap();
    let files = names_files(1001..=1002, &|id| format!("roce_r{}", id - 1001));
    roce_net::write_persistence(&files, root.path(), false).unwrap();
    let names = root.path().join("etc/iproute2/rt_tables.d/roce-net.conf");
    let before = std::fs::read_to_string(&names).unwrap();
    let target = roce_net::PersistRoot::new(root.path());
    for dry_run in [true, false] {
        let r = roce_net::remove_persistence(&target, &[], dry_run).unwrap();
        assert!(!r.removed.contains(&names), "{r:?}");
        let (_, why) = r.left.iter().find(|(p, _)| *p == names).expect("left");
        assert!(why.contains("live applies"), "{why}");
        assert!(
            r.removed
                .iter()
                .any(|p| p.ends_with("sysctl.d/90-roce-net.conf")),
            "{r:?}"
        );
    }
    assert_eq!(std::fs::read_to_string(&names).unwrap(), before);
    assert!(!root.path().join("etc/sysctl.d/90-roce-net.conf").exists());
}

/// A names file that names no table is removed like roce-net's other files.
#[test]
fn remove_takes_a_names_file_that_names_nothing() {
    let root = tempfile::tempdir().unwrap();
    let files = names_files(std::iter::empty(), &|_| unreachable!());
    roce_net::write_persistence(&files, root.path(), false).unwrap();
    let names = root.path().join("etc/iproute2/rt_tables.d/roce-net.conf");
    assert!(names.is_file());
    let r =
        roce_net::remove_persistence(&roce_net::PersistRoot::new(root.path()), &[], false).unwrap();
    assert!(r.removed.contains(&names), "{r:?}");
    assert!(!names.exists());
}

/// A full `/etc` (a tmpfs of 64 KiB in a private mount
/// namespace of the test's own thread) stopped persist half way: the first files
/// of the new set were written, the rest kept the old, a mix the next boot would
/// combine. Now the whole set is staged first: the write fails before any file
/// changes, the error says the previous set is in place, and nothing of the
/// attempt is left. Then, with room, the same set goes in whole.
#[test]
#[ignore = "needs root: mounts a tmpfs in a private mount namespace (scripts/test.sh runs it)"]
fn a_full_etc_keeps_the_previous_set_whole() {
    // SAFETY: geteuid has no preconditions.
    assert_eq!(
        unsafe { libc::geteuid() },
        0,
        "a_full_etc_keeps_the_previous_set_whole needs root (it mounts a tmpfs)"
    );
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    std::thread::spawn(move || {
        // SAFETY: unshare of the calling thread's mount namespace (CLONE_NEWNS
        // implies CLONE_FS, which a thread may unshare alone), then mounts in it.
        unsafe {
            assert_eq!(libc::unshare(libc::CLONE_NEWNS), 0, "unshare");
            let none = std::ffi::CString::new("none").unwrap();
            let slash = std::ffi::CString::new("/").unwrap();
            assert_eq!(
                libc::mount(
                    none.as_ptr(),
                    slash.as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null()
                ),
                0,
                "making / private"
            );
            let tmpfs = std::ffi::CString::new("tmpfs").unwrap();
            let at = std::ffi::CString::new(root.to_str().unwrap()).unwrap();
            let opts = std::ffi::CString::new("size=64k,mode=0755").unwrap();
            assert_eq!(
                libc::mount(
                    tmpfs.as_ptr(),
                    at.as_ptr(),
                    tmpfs.as_ptr(),
                    0,
                    opts.as_ptr().cast()
                ),
                0,
                "mounting a 64 KiB tmpfs"
            );
        }
        let hook = |v: &str, pad: usize| {
            vec![
                file(
                    "/etc/network/if-up.d/roce-net",
                    &format!("# Managed by roce-net\nip rule add priority {v}001\n"),
                    0o755,
                ),
                file(
                    "/etc/network/if-down.d/roce-net",
                    &format!(
                        "# Managed by roce-net\nip rule del priority {v}001\n{}",
                        "#".repeat(pad)
                    ),
                    0o755,
                ),
            ]
        };
        roce_net::write_persistence(&hook("1", 0), &root, false).unwrap();
        let before = tree(&root)
            .into_iter()
            .filter(|p| p.is_file())
            .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
            .collect::<Vec<_>>();
        // The if-down hook of the new set does not fit.
        let e = roce_net::write_persistence(&hook("2", 256 << 10), &root, false).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("previous set is in place"), "{msg}");
        assert!(msg.contains("No space left"), "the cause is kept: {msg}");
        let after = tree(&root)
            .into_iter()
            .filter(|p| p.is_file())
            .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
            .collect::<Vec<_>>();
        assert_eq!(
            after.iter().map(|(p, _)| p).collect::<Vec<_>>(),
            before.iter().map(|(p, _)| p).collect::<Vec<_>>(),
            "no file added or left behind"
        );
        assert!(after == before, "every file exactly as before");
        // With room, the new set goes in whole.
        roce_net::write_persistence(&hook("2", 0), &root, false).unwrap();
        let up = std::fs::read_to_string(root.join("etc/network/if-up.d/roce-net")).unwrap();
        let down = std::fs::read_to_string(root.join("etc/network/if-down.d/roce-net")).unwrap();
        assert!(up.contains("2001") && down.contains("2001"), "{up}{down}");
    })
    .join()
    .unwrap();
}

/// `persist --remove` once deleted files an admin had edited, with
/// no backup and no word. Now a file changed since persist wrote it (edited in
/// place, or replaced by an editor that writes a new file) is removed only with
/// its content kept in `<file>.roce-net.bak`, listed in `edited`; a file as
/// roce-net wrote it goes without a trace.
#[test]
fn remove_keeps_what_an_admin_edited() {
    let root = tempfile::tempdir().unwrap();
    // roce-net's header: without it the files are someone else's and left alone.
    let h =
        "# Written by roce-net. Do not edit: change the policy and run `roce-net persist` again.\n";
    let files = [
        file(
            "/etc/sysctl.d/90-roce-net.conf",
            &format!("{h}a = 1\n"),
            0o644,
        ),
        file("/etc/network/if-up.d/roce-net", &format!("{h}up\n"), 0o755),
        file(
            "/etc/network/if-down.d/roce-net",
            &format!("{h}down\n"),
            0o755,
        ),
    ];
    roce_net::write_persistence(&files, root.path(), false).unwrap();
    let up = root.path().join("etc/network/if-up.d/roce-net");
    let down = root.path().join("etc/network/if-down.d/roce-net");
    let sysctl = root.path().join("etc/sysctl.d/90-roce-net.conf");
    // Edited in place (the recorded digest stays, the content differs).
    let mut f = std::fs::OpenOptions::new().append(true).open(&up).unwrap();
    std::io::Write::write_all(&mut f, b"ip route add 198.18.9.0/24 dev r9  # mine\n").unwrap();
    drop(f);
    // Replaced by an editor that writes a new file and renames it.
    let tmp = root.path().join("etc/network/if-down.d/.roce-net.swp");
    std::fs::write(&tmp, format!("{h}down\nlogger mine\n")).unwrap();
    std::fs::rename(&tmp, &down).unwrap();
    let target = roce_net::PersistRoot::new(root.path());
    let dry = roce_net::remove_persistence(&target, &[], true).unwrap();
    let bak = |p: &Path| PathBuf::from(format!("{}.roce-net.bak", p.display()));
    let mut want = vec![bak(&up), bak(&down)];
    want.sort();
    let mut got = dry.edited.clone();
    got.sort();
    assert_eq!(got, want, "the dry run names them: {dry:?}");
    let r = roce_net::remove_persistence(&target, &[], false).unwrap();
    let mut got = r.edited.clone();
    got.sort();
    assert_eq!(got, want, "{r:?}");
    assert!(!up.exists() && !down.exists() && !sysctl.exists());
    assert!(std::fs::read_to_string(bak(&up))
        .unwrap()
        .ends_with("# mine\n"));
    assert!(std::fs::read_to_string(bak(&down))
        .unwrap()
        .ends_with("logger mine\n"));
    assert!(!bak(&sysctl).exists(), "an unedited file leaves no backup");
}
