//! Copies of fixture trees, for tests that read (or let real tools read) a
//! node's configuration under an injectable root, and listings of a tree
//! that compare byte for byte.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// What [`tree_listing`] records of one entry: whether it is a directory,
/// its permission bits, and its content (empty for a directory; a symbolic
/// link's own target is not followed, its content is empty too).
pub type Entry = (bool, u32, Vec<u8>);

/// Every file and directory under `dir` (not `dir` itself), by path relative
/// to it: "left as it found it" is `==` of two listings (which files and
/// directories exist, their modes, their bytes).
pub fn tree_listing(dir: &Path) -> BTreeMap<PathBuf, Entry> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries =
            std::fs::read_dir(&d).unwrap_or_else(|e| panic!("reading {}: {e}", d.display()));
        for e in entries {
            let p = e
                .unwrap_or_else(|e| panic!("reading {}: {e}", d.display()))
                .path();
            let m =
                std::fs::symlink_metadata(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let rel = p.strip_prefix(dir).unwrap_or(&p).to_path_buf();
            let mode = m.permissions().mode() & 0o7777;
            let body = if m.is_file() {
                std::fs::read(&p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()))
            } else {
                Vec::new()
            };
            if m.is_dir() {
                stack.push(p);
            }
            out.insert(rel, (m.is_dir(), mode, body));
        }
    }
    out
}

/// Copy the tree `from` into `to`: directories made, symbolic links copied as
/// links, regular files copied with the permission bits `mode(destination)`
/// returns (netplan and NetworkManager refuse group- or world-readable files,
/// networkd reads its own as another user).
pub fn copy_tree(from: &Path, to: &Path, mode: &dyn Fn(&Path) -> u32) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("creating {}: {e}", to.display()));
    let entries =
        std::fs::read_dir(from).unwrap_or_else(|e| panic!("reading {}: {e}", from.display()));
    for e in entries {
        let e = e.unwrap_or_else(|e| panic!("reading {}: {e}", from.display()));
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let ft = e
            .file_type()
            .unwrap_or_else(|e| panic!("{}: {e}", src.display()));
        if ft.is_dir() {
            copy_tree(&src, &dst, mode);
        } else if ft.is_symlink() {
            let target =
                std::fs::read_link(&src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
            std::os::unix::fs::symlink(target, &dst)
                .unwrap_or_else(|e| panic!("linking {}: {e}", dst.display()));
        } else {
            std::fs::copy(&src, &dst)
                .unwrap_or_else(|e| panic!("copying {} to {}: {e}", src.display(), dst.display()));
            std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(mode(&dst)))
                .unwrap_or_else(|e| panic!("chmod {}: {e}", dst.display()));
        }
    }
}
