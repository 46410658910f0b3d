//! What writing the rendered files would change: a unified diff per file.

use super::existing::{inspect, merged_names, Existing};
use super::RenderedFile;
use crate::error::Result;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// How a file would change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DiffStatus {
    /// The file does not exist yet.
    Create,
    /// The file exists with other content or another mode.
    Modify,
    /// Content and mode already match.
    Unchanged,
}

/// The change to one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FileDiff {
    /// The path on the target host (as in [`RenderedFile::path`]).
    pub path: PathBuf,
    /// What would happen.
    pub status: DiffStatus,
    /// Current mode, when the file exists.
    pub mode_before: Option<u32>,
    /// Mode it would get.
    pub mode_after: u32,
    /// Unified diff of the content (`---`/`+++` headers, `@@` hunks, 3 lines of
    /// context); empty when the content is the same. The headers name the file
    /// where it is on disk (under `--root` or `--etc-root`), as `diff -u` of
    /// the real files would: `path` is where the node reads it.
    pub diff: String,
}

/// Diff every rendered file against what is under `root` now. Reads only; fails
/// like [`super::write_persistence`] would (symlinks, non-regular files, bad paths).
pub fn diff_persistence(files: &[RenderedFile], root: &Path) -> Result<Vec<FileDiff>> {
    files
        .iter()
        .map(|f| {
            let existing = inspect(root, &f.path)?;
            let on_disk = root.join(f.path.strip_prefix("/").unwrap_or(&f.path));
            Ok(diff_one(&merged_names(f, &existing), &existing, &on_disk))
        })
        .collect()
}

/// The change `f` makes to `existing`, the file at `on_disk`.
pub(crate) fn diff_one(f: &RenderedFile, existing: &Existing, on_disk: &Path) -> FileDiff {
    let mode_after = f.mode & 0o7777;
    let (status, old) = match &existing.content {
        None => (DiffStatus::Create, String::new()),
        Some(c) => {
            let same = c.as_slice() == f.content.as_bytes() && existing.mode == Some(mode_after);
            (
                if same {
                    DiffStatus::Unchanged
                } else {
                    DiffStatus::Modify
                },
                String::from_utf8_lossy(c).into_owned(),
            )
        }
    };
    let diff = if old == f.content {
        String::new()
    } else {
        let to = on_disk.display().to_string();
        let from = if existing.content.is_some() {
            to.clone()
        } else {
            "/dev/null".to_string()
        };
        unified(&old, &f.content, &from, &to)
    };
    FileDiff {
        path: f.path.clone(),
        status,
        mode_before: existing.mode,
        mode_after,
        diff,
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Same,
    Del,
    Ins,
}

/// Line diff by longest common subsequence (rendered files are small; above a
/// size limit the whole file is shown as replaced).
fn ops(a: &[&str], b: &[&str]) -> Vec<(Op, usize, usize)> {
    let (n, m) = (a.len(), b.len());
    let mut out = Vec::new();
    if n.saturating_mul(m) > 4_000_000 {
        out.extend((0..n).map(|i| (Op::Del, i, 0)));
        out.extend((0..m).map(|j| (Op::Ins, n, j)));
        return out;
    }
    // lcs[i][j] = LCS length of a[i..] and b[j..].
    let mut lcs = vec![0u32; (n + 1) * (m + 1)];
    let at = |i: usize, j: usize| i * (m + 1) + j;
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[at(i, j)] = if a[i] == b[j] {
                lcs[at(i + 1, j + 1)] + 1
            } else {
                lcs[at(i + 1, j)].max(lcs[at(i, j + 1)])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            out.push((Op::Same, i, j));
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[at(i + 1, j)] >= lcs[at(i, j + 1)]) {
            out.push((Op::Del, i, j));
            i += 1;
        } else {
            out.push((Op::Ins, i, j));
            j += 1;
        }
    }
    out
}

fn unified(old: &str, new: &str, from: &str, to: &str) -> String {
    const CTX: usize = 3;
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let ops = ops(&a, &b);
    let mut s = format!("--- {from}\n+++ {to}\n");
    let changed: Vec<usize> = (0..ops.len()).filter(|&k| ops[k].0 != Op::Same).collect();
    let mut k = 0;
    while k < changed.len() {
        // Grow a hunk while the next change is within 2*CTX unchanged lines.
        let start = changed[k].saturating_sub(CTX);
        let mut end = changed[k];
        while k + 1 < changed.len() && changed[k + 1] - end <= 2 * CTX {
            k += 1;
            end = changed[k];
        }
        let end = (end + CTX + 1).min(ops.len());
        let hunk = &ops[start..end];
        let a_start = hunk[0].1;
        let b_start = hunk[0].2;
        let a_len = hunk.iter().filter(|o| o.0 != Op::Ins).count();
        let b_len = hunk.iter().filter(|o| o.0 != Op::Del).count();
        let pos = |st: usize, len: usize| if len == 0 { st } else { st + 1 };
        let _ = writeln!(
            s,
            "@@ -{},{a_len} +{},{b_len} @@",
            pos(a_start, a_len),
            pos(b_start, b_len)
        );
        for &(op, i, j) in hunk {
            let _ = match op {
                Op::Same => writeln!(s, " {}", a[i]),
                Op::Del => writeln!(s, "-{}", a[i]),
                Op::Ins => writeln!(s, "+{}", b[j]),
            };
        }
        k += 1;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unified_diff_has_hunks_with_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n";
        let new = "a\nb\nc\nD\ne\nf\ng\nh\ni\nj\nk\n";
        let d = unified(old, new, "/x", "/x");
        assert_eq!(
            d,
            "--- /x\n+++ /x\n@@ -1,7 +1,7 @@\n a\n b\n c\n-d\n+D\n e\n f\n g\n@@ -8,3 +8,4 @@\n h\n i\n j\n+k\n"
        );
    }

    #[test]
    fn diff_of_new_file_is_all_additions() {
        let d = unified("", "x\ny\n", "/dev/null", "/f");
        assert_eq!(d, "--- /dev/null\n+++ /f\n@@ -0,0 +1,2 @@\n+x\n+y\n");
    }
}
