//! Fuzz harnesses: one function per parser of outside input.
//!
//! Compiled only for `cargo fuzz` (which sets `cfg(fuzzing)`) and for this
//! crate's own unit tests, which run every harness over the committed seeds and
//! corpus (`fuzz/seeds/<target>/`, `fuzz/corpus/<target>/`) so CI replays what the long runs found without a
//! fuzzer. Never part of the product. Each harness feeds arbitrary bytes to one
//! parser and checks what must hold whatever the bytes: no panic, bounded and
//! escaped messages, and round trips (what parses, re-serialises to an equal
//! value). See `docs/fuzzing.md`.

use std::path::Path;

/// The most bytes a harness hands to a parser; libFuzzer is also run with
/// `-max_len` below this.
const MAX_INPUT: usize = 1 << 20;

fn text(data: &[u8]) -> Option<&str> {
    if data.len() > MAX_INPUT {
        return None;
    }
    std::str::from_utf8(data).ok()
}

/// Every error message stays short enough for one terminal screen.
fn check_error(e: &crate::Error) {
    let m = e.to_string();
    assert!(m.len() < 64 << 10, "error message of {} bytes", m.len());
}

/// sysfs attribute text: GIDs, `<n>: <name>` enums, GID types, counters, and the
/// netdev names in `gid_attrs/ndevs` (bytes, kept with the model's escaping).
pub fn sysfs_attribute(data: &[u8]) {
    if data.len() > MAX_INPUT {
        return;
    }
    let name = crate::model::ifname_from_kernel(data.trim_ascii());
    assert!(!name.chars().any(char::is_control), "escaped name {name:?}");
    let raw = crate::model::ifname_to_kernel(&name).expect("an escaped name decodes");
    assert_eq!(raw, data.trim_ascii(), "the escaping round-trips");
    let s = String::from_utf8_lossy(data);
    let t = s.trim();
    if let Some(g) = crate::kernel::sysfs::parse_gid(t) {
        let _ = g.to_ipv4_mapped();
    }
    if let Some(n) = crate::kernel::sysfs::strip_enum_prefix(t) {
        assert!(!n.is_empty());
    }
    let _ = crate::model::GidType::from_sysfs(t);
    let _ = t.parse::<u64>();
    let w = crate::model::Warning::about_file(
        Path::new("/sys/class/infiniband/x/ports/1/gids/0"),
        format!(
            "GID {} is not a 128-bit address",
            crate::input::excerpt(t, 64)
        ),
    );
    assert!(w.message.chars().count() <= crate::model::Warning::MAX_CHARS + 40);
    assert!(!w.message.chars().any(char::is_control));
}

/// An iproute2 `rt_tables` / `rt_protos` file.
pub fn rt_tables(data: &[u8]) {
    if data.len() > MAX_INPUT {
        return;
    }
    let text = String::from_utf8_lossy(data);
    let mut out = std::collections::BTreeMap::new();
    let mut warnings = Vec::new();
    crate::rt_tables::parse_names_text(
        &text,
        Path::new("/etc/iproute2/rt_tables"),
        u32::MAX,
        &mut out,
        &mut warnings,
    );
    assert!(
        warnings.len() <= 17,
        "{} warnings for one file",
        warnings.len()
    );
    for w in &warnings {
        assert!(!w.message.chars().any(char::is_control), "{:?}", w.message);
    }
    for name in out.values() {
        assert!(!name.is_empty() && !name.chars().any(char::is_whitespace));
    }
    for line in text.lines().take(64) {
        let _ = crate::rt_tables::table_name_problem(line);
    }
}

/// A policy in YAML; what parses round-trips through its JSON form.
pub fn policy_yaml(data: &[u8]) {
    let Some(t) = text(data) else { return };
    match crate::Policy::from_yaml(t) {
        Ok(p) => {
            let again = crate::Policy::from_json(&p.to_json()).expect("its own JSON parses");
            assert_eq!(again, p, "the policy round-trips");
        }
        Err(e) => check_error(&e),
    }
}

/// A policy in JSON; what parses round-trips.
pub fn policy_json(data: &[u8]) {
    let Some(t) = text(data) else { return };
    match crate::Policy::from_json(t) {
        Ok(p) => {
            let again = crate::Policy::from_json(&p.to_json()).expect("its own JSON parses");
            assert_eq!(again, p, "the policy round-trips");
        }
        Err(e) => check_error(&e),
    }
}

/// A saved snapshot, JSON or gzip-compressed JSON (as `--from` and `fleet` read
/// it); what parses round-trips and can be diagnosed and planned.
pub fn snapshot_json(data: &[u8]) {
    if data.len() > MAX_INPUT {
        return;
    }
    match crate::HostState::read_from(data) {
        Ok(st) => {
            let again = crate::HostState::from_json(&st.to_json()).expect("its own JSON parses");
            assert_eq!(again, st, "the snapshot round-trips");
            let _ = crate::doctor(&st);
            match crate::plan(&st, &crate::Policy::default()) {
                Ok(p) => {
                    let _ = p.render_diff();
                }
                Err(e) => check_error(&e),
            }
            let _ = crate::nccl_env(&st);
        }
        Err(e) => check_error(&e),
    }
}

/// A saved plan; what parses round-trips.
pub fn plan_json(data: &[u8]) {
    let Some(t) = text(data) else { return };
    match crate::Plan::from_json(t) {
        Ok(p) => {
            let again = crate::Plan::from_json(&p.to_json()).expect("its own JSON parses");
            assert_eq!(again, p, "the plan round-trips");
            let _ = p.describe();
            let _ = p.render_diff();
        }
        Err(e) => check_error(&e),
    }
}

/// An apply journal and its step log, as `Journal::load` reads them
/// from a state directory: the input is split at the first NUL byte into the
/// journal's JSON and the step log.
pub fn journal(data: &[u8]) {
    use std::sync::OnceLock;
    if data.len() > MAX_INPUT {
        return;
    }
    // One private directory per process (the fuzz build has no dev-dependencies).
    static DIR: OnceLock<std::path::PathBuf> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("roce-net-fuzz-journal-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("a temporary state directory");
        d
    });
    let (json, log) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b""[..]),
    };
    let key = "net-fuzz";
    let Ok(state) = crate::files::statedir::StateDir::create(dir) else {
        return;
    };
    let jpath = state.file(&crate::Journal::file_name(key));
    let lpath = state.file(&crate::Journal::log_name(key));
    if std::fs::write(&jpath, json).is_err() || std::fs::write(&lpath, log).is_err() {
        return;
    }
    // Parse, then load as the namespace it names (the owner check passes) so the
    // step log is replayed as `status`/`rollback` would.
    match crate::Journal::load_unchecked(&state, key) {
        Ok(Some(j)) => {
            let _ = serde_json::to_string(&j);
            match crate::Journal::load(&state, key, &j.namespace.id, "the fuzzed namespace") {
                Ok(Some(j)) => {
                    let _ = serde_json::to_string(&j);
                }
                Ok(None) => {}
                Err(e) => check_error(&e),
            }
        }
        Ok(None) => {}
        Err(e) => check_error(&e),
    }
}

/// One netlink datagram from the kernel (links, addresses, routes, rules,
/// neighbours, errors, dump ends), decoded and converted into the model.
pub fn netlink(data: &[u8]) {
    if data.len() > MAX_INPUT {
        return;
    }
    crate::kernel::netlink::decode_for_fuzzing(data);
}

#[cfg(test)]
mod tests {
    //! Replay the committed corpus (seeds and what the long runs kept) through
    //! every harness: CI runs the fuzz findings as plain tests.
    use std::path::PathBuf;

    /// The seeds and the corpus of a target (`fuzz/seeds/<t>`, `fuzz/corpus/<t>`).
    fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
        let mut out = Vec::new();
        for kind in ["seeds", "corpus"] {
            let dir = root.join(kind).join(target);
            let Ok(rd) = std::fs::read_dir(&dir) else {
                assert_ne!(kind, "seeds", "no seeds in {}", dir.display());
                continue;
            };
            for e in rd {
                let p = e.unwrap().path();
                let b = std::fs::read(&p).unwrap();
                out.push((p, b));
            }
        }
        assert!(!out.is_empty(), "no seeds for {target}");
        out
    }

    fn replay(target: &str, f: fn(&[u8])) {
        for (p, data) in corpus(target) {
            let r = std::panic::catch_unwind(|| f(&data));
            assert!(r.is_ok(), "{target}: {} fails", p.display());
        }
    }

    #[test]
    fn corpus_sysfs_attribute() {
        replay("sysfs_attribute", super::sysfs_attribute);
    }
    #[test]
    fn corpus_rt_tables() {
        replay("rt_tables", super::rt_tables);
    }
    #[test]
    fn corpus_policy_yaml() {
        replay("policy_yaml", super::policy_yaml);
    }
    #[test]
    fn corpus_policy_json() {
        replay("policy_json", super::policy_json);
    }
    #[test]
    fn corpus_snapshot_json() {
        replay("snapshot_json", super::snapshot_json);
    }
    #[test]
    fn corpus_plan_json() {
        replay("plan_json", super::plan_json);
    }
    #[test]
    fn corpus_journal() {
        replay("journal", super::journal);
    }
    #[test]
    fn corpus_netlink() {
        replay("netlink", super::netlink);
    }

    /// Real kernel dumps of a lab namespace (a link named `r\xff`, addresses,
    /// routes in a table above 255, rules, neighbours) go through the netlink
    /// harness datagram by datagram. With `ROCE_NET_FUZZ_SEEDS=DIR` the
    /// datagrams are also written there (how `fuzz/seeds/netlink` was made).
    #[test]
    #[ignore = "needs root: creates a network namespace"]
    fn real_kernel_dumps_go_through_the_netlink_harness() {
        use crate::kernel::netlink::socket::RECORDED;
        use std::os::unix::ffi::OsStrExt;
        crate::test_support::require_root("real_kernel_dumps_go_through_the_netlink_harness");
        let mut lab = crate::Lab::new("fz").unwrap();
        let ns = lab.add_namespace("h").unwrap();
        let ip = |args: &[&std::ffi::OsStr]| {
            let o = std::process::Command::new("ip")
                .arg("-n")
                .arg(&ns)
                .args(args)
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "{args:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        };
        let o = |s: &'static str| std::ffi::OsStr::new(s);
        let bad = std::ffi::OsStr::from_bytes(b"r\xff");
        ip(&[
            o("link"),
            o("add"),
            bad,
            o("type"),
            o("veth"),
            o("peer"),
            o("name"),
            o("p1"),
        ]);
        ip(&[o("link"), o("set"), bad, o("up")]);
        ip(&[o("link"), o("set"), o("p1"), o("up")]);
        ip(&[o("addr"), o("add"), o("198.18.9.2/24"), o("dev"), bad]);
        ip(&[
            o("route"),
            o("add"),
            o("198.18.10.0/24"),
            o("dev"),
            bad,
            o("table"),
            o("1001"),
            o("proto"),
            o("201"),
        ]);
        ip(&[
            o("rule"),
            o("add"),
            o("from"),
            o("198.18.9.2"),
            o("iif"),
            bad,
            o("lookup"),
            o("1001"),
            o("pref"),
            o("1001"),
        ]);
        ip(&[
            o("neigh"),
            o("add"),
            o("198.18.9.9"),
            o("lladdr"),
            o("02:00:00:00:00:09"),
            o("dev"),
            bad,
        ]);
        let target = crate::NetnsTarget::named(&ns).unwrap();
        let datagrams = target
            .run(|| {
                RECORDED.with(|r| *r.borrow_mut() = Some(Vec::new()));
                let mut nl = crate::Netlink::open()?;
                let links = nl.links()?;
                assert!(links.iter().any(|l| l.name == "r\\xff"), "{links:?}");
                nl.addresses(&links)?;
                nl.routes(&links)?;
                let rules = nl.rules()?;
                assert!(
                    rules.iter().any(|r| r.iif.as_deref() == Some("r\\xff")),
                    "{rules:?}"
                );
                nl.neighbors(&links)?;
                Ok(RECORDED.with(|r| r.borrow_mut().take()).unwrap_or_default())
            })
            .unwrap();
        assert!(datagrams.len() >= 5, "{} datagrams", datagrams.len());
        for d in &datagrams {
            super::netlink(d);
        }
        if let Ok(dir) = std::env::var("ROCE_NET_FUZZ_SEEDS") {
            for (i, d) in datagrams.iter().enumerate() {
                std::fs::write(
                    std::path::Path::new(&dir).join(format!("lab-dump-{i:02}")),
                    d,
                )
                .unwrap();
            }
        }
    }
}
