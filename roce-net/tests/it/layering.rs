//! The crate's modules depend on each other in the direction the flow reads
//! (`docs/architecture.md`): the model at the bottom, the kernel I/O and the
//! host handle above it, the pure NIC scope, policy, planner and doctor above
//! that, apply and persist on top. This test reads `roce-net/src` and fails when
//! a module names (`crate::x`) a module it must not use, outside test code.
//!
//! Within and across modules, files import downward too: the library, the CLI
//! and the Python binding each have no file-level import circle (`imports.rs`
//! draws the graph; `docs/architecture.md`, "Files import downward").

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Uses that break the layering today, each named by file, with why; the test
/// fails when one is gone (remove it here) as it fails on any new one. None
/// now: the names writer's use of apply's lock and persist's directory walk
/// ended when both moved into `files`, below `rt_tables`.
const KNOWN_DEBT: &[(&str, &str)] = &[];

/// What each top-level module may use (besides itself).
const ALLOWED: &[(&str, &[&str])] = &[
    // The one enum-naming macro (its expansion names only std and serde).
    ("named", &[]),
    ("error", &["named"]),
    // The bounded reader of outside files and the escaping of what they hold.
    ("input", &["error"]),
    // A snapshot is saved through files' link-safe whole-file writer.
    ("model", &["error", "input", "named", "files"]),
    ("netns", &["error"]),
    // The raw system calls (getrandom, renameat2), the socket helpers, and
    // the closer made with clone (sys/detach.rs).
    ("sys", &[]),
    // The private state directory, its locks, the link-safe walk.
    ("files", &["error", "input", "sys"]),
    ("rt_tables", &["error", "input", "model", "files"]),
    (
        "kernel",
        &["error", "input", "model", "netns", "rt_tables", "sys"],
    ),
    ("scope", &["error", "model"]),
    // The snapshot reads ethtool statistics and DCB for the NICs in scope.
    (
        "host",
        &[
            "error",
            "input",
            "model",
            "kernel",
            "netns",
            "rt_tables",
            "scope",
        ],
    ),
    ("fib", &["error", "model"]),
    // The policy refuses table names iproute2 cannot hold (rt_tables' name rules).
    ("policy", &["error", "input", "model", "rt_tables", "scope"]),
    // `nccl-env --check` reports doctor `Finding`s and shares its QoS signature.
    ("nccl", &["error", "model", "named", "scope", "doctor"]),
    ("views", &["error", "model", "scope"]),
    (
        "plan",
        &["error", "input", "model", "scope", "fib", "policy"],
    ),
    (
        "doctor",
        &["error", "model", "scope", "fib", "policy", "plan"],
    ),
    ("fleet", &["error", "model", "scope", "doctor", "nccl"]),
    // `roce-net check`: the doctor's findings under the policy's health
    // section, and the faults of the cluster mesh's report on the host.
    ("health", &["error", "model", "doctor", "policy", "mesh"]),
    (
        "metrics",
        &["error", "model", "scope", "doctor", "nccl", "fleet"],
    ),
    // probe rdma picks the port of a source address (scope) and explains a
    // failure with the offline route lookup (fib); it reads its token file
    // and escapes what a peer sends through input.
    (
        "probe",
        &[
            "error", "input", "model", "named", "sys", "kernel", "host", "netns", "scope", "fib",
        ],
    ),
    // apply reaches its state files through input's `open_at`, and after a
    // verified apply announces each NIC's address with probe's announcer; a
    // rollback puts back the boot files persist wrote for its apply through
    // persist's writer; it reads the namespace cookie with sys's getsockopt.
    (
        "apply",
        &[
            "error",
            "input",
            "model",
            "files",
            "sys",
            "kernel",
            "host",
            "netns",
            "rt_tables",
            "policy",
            "plan",
            "probe",
            "persist",
        ],
    ),
    (
        "persist",
        &[
            "error",
            "input",
            "model",
            "files",
            "rt_tables",
            "policy",
            "plan",
        ],
    ),
    ("lab", &["error", "model", "kernel", "host", "netns"]),
    // The cluster mesh: the pure schedule and merge over the NIC scope, the
    // fleet's host names and the doctor's findings; the node run over the
    // host handle, its netlink route lookups, and the ARP and RDMA probes.
    (
        "mesh",
        &[
            "error", "input", "model", "scope", "doctor", "fleet", "kernel", "host", "netns",
            "probe", "sys",
        ],
    ),
];

fn rust_files(p: &Path, out: &mut Vec<PathBuf>) {
    if p.is_dir() {
        for e in std::fs::read_dir(p).unwrap() {
            rust_files(&e.unwrap().path(), out);
        }
    } else if p.extension().and_then(|x| x.to_str()) == Some("rs")
        && p.file_name().and_then(|x| x.to_str()) != Some("tests.rs")
    {
        out.push(p.to_path_buf());
    }
}

/// The source without comments and without `#[cfg(test)]` items.
fn product_code(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if t.starts_with("//") {
            continue;
        }
        if t.starts_with("#[cfg(test)]") {
            // Skip the next item: to its `;` or its balanced braces.
            let mut depth = 0i32;
            let mut opened = false;
            for l in lines.by_ref() {
                // Braces in string and character literals (`"}\n"`, `'{'`) do
                // not count.
                let l = l.replace("'{'", "").replace("'}'", "");
                let (mut quoted, mut escaped) = (false, false);
                for c in l.chars() {
                    match c {
                        _ if escaped => escaped = false,
                        '\\' if quoted => escaped = true,
                        '"' => quoted = !quoted,
                        _ if quoted => {}
                        '{' => {
                            depth += 1;
                            opened = true;
                        }
                        '}' => depth -= 1,
                        _ => {}
                    }
                }
                if (opened && depth <= 0) || (!opened && l.trim_end().ends_with(';')) {
                    break;
                }
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The top-level modules `crate::...` paths in `code` name, including the
/// items of `crate::{a::x, b}` groups.
fn crate_refs(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut item_start = true;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => item_start = true,
                    c if item_start && !c.is_whitespace() => {
                        item_start = false;
                        let id = ident(&group[j..]);
                        if !id.is_empty() {
                            out.insert(id.to_string());
                        }
                    }
                    _ => {}
                }
            }
        } else {
            let id = ident(rest);
            if !id.is_empty() {
                out.insert(id.to_string());
            }
        }
    }
    out
}

#[test]
fn modules_only_use_the_layers_below_them() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut seen = BTreeSet::new();
    let mut bad = Vec::new();
    let mut debt = BTreeSet::new();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_string();
        // The fuzz harnesses (cfg(test) / cfg(fuzzing)) never ship.
        if module == "lib" || module == "fuzzing" {
            continue;
        }
        let Some(ok) = allowed.get(module.as_str()) else {
            panic!("module {module} has no entry in ALLOWED: place it in the layering");
        };
        seen.insert(module.clone());
        let code = product_code(&std::fs::read_to_string(f).unwrap());
        for r in crate_refs(&code) {
            if r != module && allowed.contains_key(r.as_str()) && !ok.contains(&r.as_str()) {
                let file = rel.display().to_string();
                if KNOWN_DEBT.contains(&(file.as_str(), r.as_str())) {
                    debt.insert((file, r));
                    continue;
                }
                bad.push(format!("{file}: {module} uses {r}"));
            }
        }
    }
    assert!(bad.is_empty(), "layering violations:\n{}", bad.join("\n"));
    let gone: Vec<_> = KNOWN_DEBT
        .iter()
        .filter(|(f, r)| !debt.contains(&(f.to_string(), r.to_string())))
        .collect();
    assert!(
        gone.is_empty(),
        "paid off, remove from KNOWN_DEBT: {gone:?}"
    );
    assert_eq!(seen.len(), ALLOWED.len(), "modules found: {seen:?}");
}

#[test]
fn the_scanner_sees_grouped_and_plain_paths_and_skips_tests() {
    let code = product_code(
        "use crate::{error::Result, model::{Route, Rule}};\n\
         // crate::apply in a comment\n\
         fn f() { crate::scope::nic_scope(x); }\n\
         #[cfg(test)]\n\
         mod tests {\n    use crate::lab::Lab;\n}\n\
         #[cfg(test)]\n\
         mod t2;\n\
         fn g() { crate::fib::x() }\n",
    );
    let refs = crate_refs(&code);
    assert_eq!(
        refs,
        ["error", "fib", "model", "scope"]
            .map(String::from)
            .into_iter()
            .collect()
    );
}

/// Concepts with one owner (`docs/architecture.md`, "One owner per concept"):
/// the text that defines each appears in product code only in its owner's file.
const OWNED: &[(&str, &str, &[&str])] = &[
    (
        "MAC addresses read from text (ip's colons; a configuration's hyphens and dots)",
        "model/hwaddr.rs",
        &["{p:0>2}", "split([':', '-'])", "fn parse_mac"],
    ),
    (
        "netlink attributes read from bytes (the one walker, with libc's NLA_* constants)",
        "kernel/netlink/attr.rs",
        &["0x3fff", "NLA_TYPE_MASK", "NLA_ALIGNTO", "NLA_HDRLEN"],
    ),
    (
        "RDMA port state, physical state and link-layer names",
        "model/port.rs",
        &[
            "\"ACTIVE\"",
            "\"ACTIVE_DEFER\"",
            "\"LinkUp\"",
            "\"InfiniBand\"",
            "\"Ethernet\"",
        ],
    ),
    (
        "name globs (the policy's and fnmatch(3))",
        "policy/glob.rs",
        &["fn glob_match", "fn fnmatch", "'*' =>"],
    ),
    (
        "INI files (systemd's and GKeyFile's)",
        "persist/ini.rs",
        &["starts_with('[')", "strip_prefix('[')"],
    ),
    (
        "an RDMA port named by device and number (PortRef, not a tuple)",
        "model/rdma.rs",
        &["(String, u32)", "(&str, u32)", "(&'a str, u32)"],
    ),
    (
        "route identity (RouteKey, Route::normalized/same: what the planner \
         matches and what apply's undo checks)",
        "model/route.rs",
        &[
            "metric == Some(0)",
            "fn route_key",
            "fn same_route",
            "fn norm_route",
            "type RouteKey",
        ],
    ),
    (
        "rule identity (RuleKey, Rule::normalized/same)",
        "model/rule.rs",
        &[
            "fwmask == Some(u32::MAX)",
            "fn rule_key",
            "fn same_rule",
            "fn norm_rule",
            "type RuleKey",
        ],
    ),
];

/// Each product file of `roce-net/src` (path relative to it) with its product
/// code: test code (tests/ directories, cfg(test) items) and test-only modules
/// left out.
fn product_files() -> Vec<(PathBuf, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut out = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        let first = rel.components().next().unwrap().as_os_str();
        if rel.components().any(|c| c.as_os_str() == "tests") || first == "fuzzing.rs" {
            continue;
        }
        let code = product_code(&std::fs::read_to_string(f).unwrap());
        out.push((rel.to_path_buf(), code));
    }
    out
}

#[test]
fn each_concept_is_defined_by_its_one_owner() {
    let mut bad = Vec::new();
    for (rel, code) in product_files() {
        for (concept, owner, marks) in OWNED {
            if rel == Path::new(owner) {
                continue;
            }
            for m in marks.iter().filter(|m| code.contains(*m)) {
                bad.push(format!(
                    "{}: {m} ({concept} belong to {owner})",
                    rel.display()
                ));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "defined outside their owner:\n{}",
        bad.join("\n")
    );
}

/// Opening a file to read it, in the standard library's spellings.
const FILE_READS: &[&str] = &[
    "fs::read(",
    "fs::read_to_string(",
    "File::open(",
    ".read(true)",
];

/// Files that read an outside file themselves, with why (each is checked to
/// still do so, so a paid-off one must leave this list):
const READS_ALLOWED: &[(&str, &str)] = &[
    ("input.rs", "the one bounded reader"),
    // Handles, not reads: a namespace file is opened for its descriptor
    // (setns(2), IFLA_NET_NS_FD), a directory for openat(2); none reads
    // the file's content.
    ("netns.rs", "a namespace file opened to enter it (setns)"),
    (
        "kernel/netlink/link.rs",
        "a namespace file opened to move a link into it (IFLA_NET_NS_FD)",
    ),
    (
        "files/walk.rs",
        "the root directory opened as the base of openat(2)",
    ),
    // A sysctl is written and read back through one read-write descriptor
    // (the read-back of what was just written is the kernel's answer to that
    // write, bounded like an attribute, READBACK_MAX); reading a sysctl
    // otherwise goes through input::read_attribute.
    (
        "kernel/procfs/mod.rs",
        "a sysctl file opened read-write to write it and read it back",
    ),
];

/// Every read of an outside file goes through `input.rs` (one bounded read
/// per file kind, `docs/reliability.md`): no other product file opens a file
/// to read it with the standard library.
#[test]
fn only_input_reads_outside_files() {
    let mut bad = Vec::new();
    let mut used = BTreeSet::new();
    for (rel, code) in product_files() {
        let name = rel.to_str().unwrap();
        let hits: Vec<&str> = FILE_READS
            .iter()
            .copied()
            .filter(|m| code.contains(m))
            .collect();
        if hits.is_empty() {
            continue;
        }
        if READS_ALLOWED.iter().any(|(f, _)| *f == name) {
            used.insert(name.to_string());
        } else {
            bad.push(format!("{name}: {}", hits.join(", ")));
        }
    }
    assert!(
        bad.is_empty(),
        "outside files read without input.rs (use read_input/read_attribute/open_input):\n{}",
        bad.join("\n")
    );
    let gone: Vec<_> = READS_ALLOWED
        .iter()
        .filter(|(f, _)| !used.contains(*f))
        .collect();
    assert!(gone.is_empty(), "no longer reads, remove: {gone:?}");
}

/// A public name greps to its definition: the crate root re-exports items
/// under the names they are defined with, never `pub use x as y`.
#[test]
fn the_crate_root_exports_names_as_defined() {
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs");
    let code = product_code(&std::fs::read_to_string(lib).unwrap());
    let mut renamed = Vec::new();
    let mut in_use = false;
    for line in code.lines() {
        let t = line.trim();
        if t.starts_with("pub use ") {
            in_use = true;
        }
        if in_use && t.contains(" as ") {
            renamed.push(t.to_string());
        }
        if t.ends_with(';') {
            in_use = false;
        }
    }
    assert!(renamed.is_empty(), "renamed on export: {renamed:?}");
}

/// The crate whose root file is `rel` (from the repository's root).
fn read_crate(rel: &str) -> crate::imports::Crate {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel);
    crate::imports::Crate::read(&root)
}

/// The circles of a crate's file-level import graph, as text.
fn circles_in(c: &crate::imports::Crate) -> Vec<String> {
    crate::imports::circles(&c.graph())
        .iter()
        .map(|s| {
            s.iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" <-> ")
        })
        .collect()
}

/// Every file imports downward: a file that names an item of another file
/// (not its own folder's `mod.rs`) is never named back, directly or through
/// others. A circle means neither file can be read first; break it by moving
/// what both need into a file below both.
#[test]
fn no_file_imports_in_a_circle() {
    for (krate, root, at_least) in [
        ("the library", "roce-net/src/lib.rs", 150),
        ("the CLI", "src/main.rs", 20),
        ("the binding", "roce-net-py/src/lib.rs", 15),
    ] {
        let c = read_crate(root);
        let files = c.files().count();
        // The scan followed the `mod` declarations into the whole crate.
        assert!(files >= at_least, "{krate}: only {files} files read");
        let circles = circles_in(&c);
        assert!(
            circles.is_empty(),
            "{krate} ({}): files that import each other:\n{}",
            c.root().display(),
            circles.join("\n")
        );
    }
}

/// The scanner sees the circles it must: through `use` groups, inline paths
/// (`super::x::f()`, `crate::a::B`), re-exports followed to the defining file
/// and `$crate` in macro bodies; and not what it must not: comments, strings,
/// test code, a folder's own file, a re-export list on its own.
#[test]
fn the_import_scanner_finds_circles_and_only_them() {
    let dir = tempfile::tempdir().unwrap();
    let w = |rel: &str, text: &str| {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    w(
        "lib.rs",
        "mod a;\nmod b;\nmod c;\nmod d;\nmod f;\npub use d::D;\n#[cfg(test)]\nmod t;\n",
    );
    // a -> b through a group and a re-export (lib.rs re-exports d::D).
    w(
        "a.rs",
        "use crate::{b::{self, B}, D};\npub struct A;\nfn x() { b::g(); }\n",
    );
    // b -> a through an inline path; b -> c only in a comment, a string and test code.
    w(
        "b.rs",
        "pub struct B;\npub fn g() { let _ = crate::a::A; }\n\
         // crate::c::C\nconst S: &str = \"crate::c::C\";\n\
         #[cfg(test)]\nmod tests { use crate::c::C; }\n",
    );
    // c -> d in a macro body; d -> c with super::.
    w(
        "c.rs",
        "pub struct C;\nmacro_rules! m { () => { $crate::d::D } }\n",
    );
    w(
        "d.rs",
        "pub struct D;\nfn y() -> super::c::C { super::c::C }\n",
    );
    // A folder: its mod.rs defines what its files share and calls them; that
    // is no circle.
    w(
        "f/mod.rs",
        "mod g;\npub struct Shared;\npub fn run() { g::go() }\n",
    );
    w("f/g.rs", "pub fn go() { let _ = super::Shared; }\n");
    w("t.rs", "use crate::a::A;\n");
    let c = crate::imports::Crate::read(&dir.path().join("lib.rs"));
    assert_eq!(c.files().count(), 7, "t.rs is test code");
    let got = circles_in(&c);
    assert_eq!(got, ["a.rs <-> b.rs", "c.rs <-> d.rs"], "{got:?}");
}
