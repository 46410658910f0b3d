//! Golden files, for every test that compares output with a committed file
//! (doctor fixtures, planner cases, persistence renderings, recorded RDMA
//! reports): a missing or different file fails the test, and only
//! `UPDATE_GOLDEN=1` writes them. A test run never creates its own expectation.

use std::path::Path;

/// The one variable that regenerates golden files (`UPDATE_GOLDEN=1`).
pub const UPDATE_VAR: &str = "UPDATE_GOLDEN";

/// True when the golden files are to be rewritten (`UPDATE_GOLDEN=1`; any
/// other value, or none, compares).
pub fn updating() -> bool {
    std::env::var(UPDATE_VAR).as_deref() == Ok("1")
}

/// The committed text of the golden file `path`; when updating, `actual` is
/// written there first. Panics when the file is missing or unreadable.
pub fn expected(path: &Path, actual: &str) -> String {
    expected_with(path, actual, updating())
}

/// [`expected`] with the update switch given (for the tests of this module).
pub fn expected_with(path: &Path, actual: &str, update: bool) -> String {
    if update {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
        }
        std::fs::write(path, actual).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    }
    std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "golden file {}: {e}; run with {UPDATE_VAR}=1 to write it, then review the diff",
            path.display()
        )
    })
}

/// Compare `actual` with the golden file `path`, text for text.
pub fn check_text(path: &Path, actual: &str) {
    let want = expected(path, actual);
    assert_eq!(
        actual,
        want,
        "{} differs from the output (run with {UPDATE_VAR}=1 to accept it)",
        path.display()
    );
}
