//! Copies of fixture trees, for tests that read (or let real tools read) a
//! node's configuration under an injectable root.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

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
