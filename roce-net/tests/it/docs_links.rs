//! The repository's text keeps its own references whole: every relative link
//! of the Markdown files (`README.md`, `docs/`, the Ansible collection's)
//! leads to a file that exists and, with `#anchor`, to a heading it has; every
//! `docs/<page>.md` named anywhere (code comments, the Ansible modules'
//! documentation, scripts) exists; and nothing cites the project's own
//! tracker by number, which a reader of the repository does not have (name the
//! behaviour, or the `docs/` section, instead).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Directories that hold no source of the project: build output, virtual
/// environments, fuzz corpora, the Ansible test output.
const SKIPPED_DIRS: &[&str] = &[
    ".git",
    "target",
    ".venv",
    "dist",
    "corpus",
    "artifacts",
    "output",
    "__pycache__",
    ".pytest_cache",
    "node_modules",
];

/// This file: its examples of what the scanners find are not references.
const THIS_FILE: &str = "roce-net/tests/it/docs_links.rs";

/// Every text file of the repository (UTF-8, at most 1 MiB) but this one,
/// with its path relative to the root.
fn text_files() -> Vec<(PathBuf, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            let Ok(t) = e.file_type() else { continue };
            let name = e.file_name();
            if t.is_dir() {
                if !SKIPPED_DIRS.contains(&name.to_str().unwrap_or("")) {
                    walk(&p, out);
                }
            } else if t.is_file() {
                out.push(p);
            }
        }
    }
    let root = root();
    let mut paths = Vec::new();
    walk(&root, &mut paths);
    paths.sort();
    paths
        .into_iter()
        .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.len() <= 1 << 20))
        .filter_map(|p| {
            let text = String::from_utf8(std::fs::read(&p).ok()?).ok()?;
            Some((p.strip_prefix(&root).unwrap().to_path_buf(), text))
        })
        .filter(|(rel, _)| rel != Path::new(THIS_FILE))
        .collect()
}

/// Markdown without fenced code blocks and inline code spans (a link there is
/// an example, not a link).
fn prose(md: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in md.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
            } else if !in_code {
                out.push(c);
            }
        }
        out.push('\n');
    }
    out
}

/// GitHub's anchor of a heading: lowercase, only letters, digits, `-`, `_`
/// and spaces kept, spaces made `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown file's headings (a repeated heading's as `-1`,
/// `-2`, ..., as GitHub numbers them).
fn anchors(md: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut fenced = false;
    for line in md.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let Some(h) = line.strip_prefix('#') else {
            continue;
        };
        if fenced {
            continue;
        }
        let text = h.trim_start_matches('#');
        if !text.starts_with(' ') {
            continue;
        }
        let base = slug(text.trim_end_matches('#'));
        let mut s = base.clone();
        let mut n = 0;
        while out.contains(&s) {
            n += 1;
            s = format!("{base}-{n}");
        }
        out.insert(s);
    }
    out
}

/// The targets of a Markdown text's links: inline `[text](target "title")`
/// and reference definitions `[id]: target`.
fn link_targets(md: &str) -> Vec<String> {
    let text = prose(md);
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        let end = rest.find(')').unwrap_or(rest.len());
        let t = rest[..end].trim().trim_start_matches('<');
        let t = t
            .split_whitespace()
            .next()
            .unwrap_or("")
            .trim_end_matches('>');
        out.push(t.to_string());
    }
    for line in text.lines() {
        let l = line.trim_start();
        if let Some((label, target)) = l.strip_prefix('[').and_then(|l| l.split_once("]: ")) {
            if !label.is_empty() && !label.contains(']') {
                out.push(target.split_whitespace().next().unwrap_or("").to_string());
            }
        }
    }
    out
}

/// What is wrong with a relative link `target` of the file `from` (relative to
/// the root), if anything.
fn broken(root: &Path, from: &Path, target: &str) -> Option<String> {
    if target.is_empty() {
        return Some("an empty link".into());
    }
    // URLs (https:, mailto:, ...) are not checked here.
    if target.split_once(':').is_some_and(|(s, _)| {
        !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '+')
    }) {
        return None;
    }
    let (path, anchor) = match target.split_once('#') {
        Some((p, a)) => (p, Some(a)),
        None => (target, None),
    };
    let file = if path.is_empty() {
        root.join(from)
    } else if let Some(abs) = path.strip_prefix('/') {
        root.join(abs)
    } else {
        root.join(from.parent().unwrap_or(Path::new(""))).join(path)
    };
    if !file.exists() {
        return Some(format!("{} does not exist", file.display()));
    }
    let anchor = anchor.filter(|a| !a.is_empty())?;
    if file.extension().is_some_and(|e| e == "md") {
        let md = std::fs::read_to_string(&file).unwrap();
        if !anchors(&md).contains(anchor) {
            return Some(format!("{} has no heading #{anchor}", file.display()));
        }
    }
    None
}

#[test]
fn every_relative_link_in_the_markdown_resolves() {
    let root = root();
    let mut bad = Vec::new();
    let mut checked = 0;
    for (rel, text) in text_files() {
        if rel.extension().is_none_or(|e| e != "md") {
            continue;
        }
        for t in link_targets(&text) {
            checked += 1;
            if let Some(why) = broken(&root, &rel, &t) {
                bad.push(format!("{}: ({t}): {why}", rel.display()));
            }
        }
    }
    assert!(checked > 50, "only {checked} links found");
    assert!(bad.is_empty(), "dangling links:\n{}", bad.join("\n"));
}

/// `docs/<page>.md` (and `docs/<page>.md#anchor`) as text: in code comments,
/// the Ansible modules' `DOCUMENTATION`, scripts. Paths written relative to
/// something else (`../docs/x.md`, `roce-net/docs`) are not this.
fn docs_mentions(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let b = text.as_bytes();
    let mut from = 0;
    while let Some(i) = text[from..].find("docs/") {
        let at = from + i;
        from = at + 5;
        if at > 0 && (b[at - 1].is_ascii_alphanumeric() || b"/._-".contains(&b[at - 1])) {
            continue;
        }
        let name: String = text[at + 5..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
            .collect();
        let Some(page) = name.strip_suffix(".md").or_else(|| {
            name.contains(".md")
                .then(|| &name[..name.find(".md").unwrap_or(0)])
        }) else {
            continue;
        };
        let mut m = format!("docs/{page}.md");
        let after = &text[at + 5 + page.len() + 3..];
        if let Some(a) = after.strip_prefix('#') {
            let anchor: String = a
                .chars()
                .take_while(|c| c.is_alphanumeric() || matches!(c, '-' | '_'))
                .collect();
            m = format!("{m}#{anchor}");
        }
        out.push(m);
    }
    out
}

#[test]
fn every_docs_page_named_in_the_tree_exists() {
    let root = root();
    let mut bad = Vec::new();
    let mut checked = 0;
    for (rel, text) in text_files() {
        for m in docs_mentions(&text) {
            checked += 1;
            if let Some(why) = broken(&root, Path::new("."), &m) {
                bad.push(format!("{}: {m}: {why}", rel.display()));
            }
        }
    }
    assert!(checked > 100, "only {checked} mentions found");
    assert!(
        bad.is_empty(),
        "pages named that do not exist:\n{}",
        bad.join("\n")
    );
}

/// The word "issue" (any case, singular or plural, with or without `#`) followed
/// by a number or a range of numbers: a citation of a tracker by number.
fn tracker_citations(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let b = lower.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = lower[from..].find("issue") {
        let at = from + i;
        from = at + 5;
        if at > 0 && b[at - 1].is_ascii_alphanumeric() {
            continue;
        }
        let mut j = at + 5;
        if b.get(j) == Some(&b's') {
            j += 1;
        }
        while matches!(b.get(j), Some(b' ' | b'#')) {
            j += 1;
        }
        if j > at + 5 && b.get(j).is_some_and(u8::is_ascii_digit) {
            let line = lower[..at].matches('\n').count() + 1;
            let end = lower[at..].find('\n').map_or(lower.len(), |e| at + e);
            out.push(format!("line {line}: {}", &text[at..end.min(at + 60)]));
        }
    }
    out
}

#[test]
fn nothing_cites_the_tracker_by_number() {
    let mut bad = Vec::new();
    for (rel, text) in text_files() {
        for c in tracker_citations(&text) {
            bad.push(format!("{}: {c}", rel.display()));
        }
    }
    assert!(
        bad.is_empty(),
        "name the behaviour or the docs/ section instead:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_scanners_see_links_headings_mentions_and_citations() {
    let md = "# Top\n## The `x` flag, again\n## Top\n[a](b.md#top-1) and [c](#the-x-flag-again)\n\
              ```\n[not](a/link.md)\n```\n`[nor](this.md)` [web](https://x.org/a)\n[ref]: other.md\n";
    assert_eq!(
        link_targets(md),
        [
            "b.md#top-1",
            "#the-x-flag-again",
            "https://x.org/a",
            "other.md"
        ]
    );
    assert_eq!(
        anchors(md),
        ["top", "the-x-flag-again", "top-1"]
            .map(String::from)
            .into_iter()
            .collect()
    );
    assert_eq!(
        docs_mentions("see docs/cli.md, docs/vm.md#vm-tier and ../docs/x.md or mydocs/y.md"),
        ["docs/cli.md", "docs/vm.md#vm-tier"]
    );
    // Spelled in pieces, so this file cites nothing itself.
    let word = "issue";
    let cited = tracker_citations(&format!(
        "a ({word} 12) b\nI{}s 8–13 c\nt{word} 5",
        &word[1..]
    ));
    assert_eq!(cited.len(), 2, "{cited:?}");
    assert!(tracker_citations("an issue with 3 NICs").is_empty());
    let root = root();
    assert!(broken(&root, Path::new("README.md"), "docs/cli.md#snapshot-schema").is_none());
    assert!(broken(&root, Path::new("README.md"), "docs/cli.md#no-such-heading").is_some());
    assert!(broken(&root, Path::new("docs/cli.md"), "nope.md").is_some());
}
