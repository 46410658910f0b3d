//! Human-readable rendering: aligned tables in `ip`'s vocabulary.

use roce_net::HostState;
use roce_net::{protocol, ConfKey, RuleAction, RT_TABLE_LOCAL, RT_TABLE_MAIN};
use std::fmt::Write;
use std::path::Path;

/// A plain aligned text table.
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers.
    pub fn new(headers: &[&str]) -> Table {
        Table {
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }
    /// Add a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }
    /// True when there are no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
    /// Render with two spaces between columns.
    pub fn render(&self) -> String {
        let n = self.headers.len();
        let mut w: Vec<usize> = self.headers.iter().map(|h| h.len()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate().take(n) {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let mut s = String::new();
        let line = |s: &mut String, cells: &[String]| {
            let mut l = String::new();
            for (i, c) in cells.iter().enumerate().take(n) {
                if i + 1 == n {
                    l.push_str(c);
                } else {
                    let _ = write!(l, "{:<width$}  ", c, width = w[i]);
                }
            }
            s.push_str(l.trim_end());
            s.push('\n');
        };
        line(&mut s, &self.headers);
        for r in &self.rows {
            line(&mut s, r);
        }
        s
    }
}

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref()
        .map(|x| x.to_string())
        .unwrap_or_else(|| "-".into())
}

/// The global addresses of an interface, IPv6 ones with the flags that decide
/// whether the kernel uses them (`fd00:198:18::11/64(tentative)`).
fn addrs_of(st: &HostState, ifname: &str) -> String {
    use roce_net::AddressFlag as F;
    let v: Vec<String> = st
        .addresses_of(ifname)
        .filter(|a| a.is_global())
        .map(|a| {
            let flags: Vec<&str> = a
                .flags
                .iter()
                .filter(|f| {
                    matches!(
                        f,
                        F::Tentative | F::Dadfailed | F::Deprecated | F::Temporary | F::Optimistic
                    )
                })
                .map(|f| f.name())
                .collect();
            if flags.is_empty() {
                format!("{}/{}", a.address, a.prefix_len)
            } else {
                format!("{}/{}({})", a.address, a.prefix_len, flags.join(","))
            }
        })
        .collect();
    if v.is_empty() {
        "-".into()
    } else {
        v.join(",")
    }
}

fn proto_name(p: u8) -> String {
    protocol::name(p)
        .map(str::to_string)
        .unwrap_or_else(|| p.to_string())
}

/// `roce-net show`.
/// `rdma_source` says where RDMA devices were looked for (the sysfs directory
/// read, or that the state is a saved snapshot), for the "none" line.
pub fn show(st: &HostState, rdma_source: &str) -> String {
    let mut s = String::new();
    let ns = st
        .netns
        .as_deref()
        .map(|n| format!(" (netns {n})"))
        .unwrap_or_default();
    let _ = writeln!(s, "host {}{}", st.hostname, ns);

    // RDMA view, ibdev2netdev style.
    s.push_str("\nRDMA devices\n");
    if st.rdma.is_empty() {
        let _ = writeln!(s, "  none (none in {rdma_source})");
    } else {
        let mut t = Table::new(&[
            "DEVICE",
            "PORT",
            "STATE",
            "PHYS",
            "NETDEV",
            "MTU",
            "ACTIVE_MTU",
            "ADDRESS",
            "RoCEv2-IPv4-GID",
        ]);
        for d in &st.rdma {
            for p in &d.ports {
                let mtu = p
                    .netdev
                    .as_deref()
                    .and_then(|n| st.interface(n))
                    .map(|i| i.mtu.to_string());
                let v2: Vec<String> = p
                    .gids
                    .iter()
                    .filter(|g| g.ipv4.is_some() && g.gid_type == Some(roce_net::GidType::RoceV2))
                    .map(|g| g.index.to_string())
                    .collect();
                t.row(vec![
                    d.name.clone(),
                    p.port.to_string(),
                    opt(&p.state),
                    opt(&p.phys_state),
                    opt(&p.netdev),
                    mtu.unwrap_or_else(|| "-".into()),
                    opt(&p.active_mtu),
                    p.netdev
                        .as_deref()
                        .map(|n| addrs_of(st, n))
                        .unwrap_or_else(|| "-".into()),
                    if v2.is_empty() {
                        "-".into()
                    } else {
                        format!("index {}", v2.join(","))
                    },
                ]);
            }
        }
        s.push_str(&t.render());
    }

    s.push_str("\nInterfaces\n");
    let mut t = Table::new(&[
        "IFACE",
        "STATE",
        "MTU",
        "MAC",
        "ADDRESSES",
        "MASTER",
        "ARP_IGNORE",
        "ARP_ANNOUNCE",
        "RP_FILTER",
        "RX_DROP",
    ]);
    for i in &st.interfaces {
        let eff = |k| opt(&st.sysctls.effective(&i.name, k));
        t.row(vec![
            i.name.clone(),
            format!("{:?}", i.oper_state).to_uppercase(),
            i.mtu.to_string(),
            opt(&i.mac),
            addrs_of(st, &i.name),
            opt(&i.master),
            eff(ConfKey::ArpIgnore),
            eff(ConfKey::ArpAnnounce),
            eff(ConfKey::RpFilter),
            i.stats.rx_dropped.to_string(),
        ]);
    }
    s.push_str(&t.render());
    s.push_str("  (sysctl columns are effective values: the kernel's combination of conf/all and conf/<iface>)\n");

    // IPv6 settings of the interfaces that have any (an interface without
    // IPv6, or a kernel without it, has none).
    let v6: Vec<ConfKey> = ConfKey::of(roce_net::Family::Inet6).collect();
    let with_v6: Vec<_> = st
        .interfaces
        .iter()
        .filter(|i| {
            st.sysctls
                .interfaces
                .get(&i.name)
                .is_some_and(|c| c.configured.disable_ipv6.is_some())
        })
        .collect();
    if !with_v6.is_empty() {
        s.push_str("\nIPv6 settings\n");
        let heads: Vec<String> = std::iter::once("IFACE".to_string())
            .chain(v6.iter().map(|k| k.file_name().to_uppercase()))
            .collect();
        let heads: Vec<&str> = heads.iter().map(String::as_str).collect();
        let mut t = Table::new(&heads);
        for i in with_v6 {
            let mut row = vec![i.name.clone()];
            row.extend(v6.iter().map(|k| opt(&st.sysctls.effective(&i.name, *k))));
            t.row(row);
        }
        s.push_str(&t.render());
        s.push_str(
            "  (effective values, as net/ipv6 combines conf/all with conf/<iface> for each)\n",
        );
    }

    s.push_str("\nPolicy rules\n");
    let mut t = Table::new(&[
        "FAMILY", "PREF", "FROM", "TO", "IIF", "OIF", "FWMARK", "ACTION", "PROTO",
    ]);
    for r in &st.rules {
        let action = match r.action {
            RuleAction::ToTable => format!("lookup {}", st.table_name(r.table)),
            RuleAction::Goto => format!("goto {}", opt(&r.goto)),
            a => a.to_string(),
        };
        t.row(vec![
            match r.family {
                roce_net::Family::Inet => "inet".to_string(),
                roce_net::Family::Inet6 => "inet6".to_string(),
            },
            r.priority.to_string(),
            format!(
                "{}{}",
                if r.invert { "not " } else { "" },
                r.src.map(|p| p.to_string()).unwrap_or_else(|| "all".into())
            ),
            r.dst.map(|p| p.to_string()).unwrap_or_else(|| "all".into()),
            opt(&r.iif),
            opt(&r.oif),
            match (r.fwmark, r.fwmask) {
                (Some(m), Some(k)) => format!("{m:#x}/{k:#x}"),
                (Some(m), None) => format!("{m:#x}"),
                _ => "-".into(),
            },
            action,
            proto_name(r.protocol),
        ]);
    }
    s.push_str(&t.render());

    let mut tables: Vec<u32> = st
        .routes
        .iter()
        .map(|r| r.table)
        .filter(|t| *t != RT_TABLE_MAIN && *t != RT_TABLE_LOCAL)
        .collect();
    tables.sort_unstable();
    tables.dedup();
    s.push_str("\nRouting tables other than main and local\n");
    if tables.is_empty() {
        s.push_str("  none\n");
    }
    for tid in tables {
        let _ = writeln!(s, "table {} ({tid})", st.table_name(tid));
        let mut t = Table::new(&["  DST", "DEV", "SRC", "VIA", "SCOPE", "PROTO", "METRIC"]);
        for r in st.routes.iter().filter(|r| r.table == tid) {
            t.row(vec![
                format!("  {}", r.dst),
                opt(&r.dev),
                opt(&r.prefsrc),
                opt(&r.gateway),
                r.scope.to_string(),
                proto_name(r.protocol),
                opt(&r.metric),
            ]);
        }
        s.push_str(&t.render());
    }

    s.push_str("\nNeighbours\n");
    let mut t = Table::new(&["IP", "DEV", "LLADDR", "STATE"]);
    // As `ip neigh` lists them: entries whose only state is NOARP (multicast,
    // broadcast, loopback, point-to-point) or that have no state are hidden.
    let shown = st.neighbors.iter().filter(|n| {
        n.state
            .iter()
            .any(|x| !matches!(x, roce_net::NeighState::Noarp))
    });
    for n in shown {
        let state: Vec<String> = n.state.iter().map(|x| x.to_string()).collect();
        t.row(vec![
            n.ip.to_string(),
            n.ifname.clone(),
            opt(&n.mac),
            state.join(","),
        ]);
    }
    if t.is_empty() {
        s.push_str("  none\n");
    } else {
        s.push_str(&t.render());
    }
    if !st.warnings.is_empty() {
        s.push_str("\nWarnings (the snapshot is partial here)\n");
        for w in &st.warnings {
            let _ = writeln!(s, "  {}: {}", w.source, w.message);
        }
    }
    s
}

/// `roce-net probe arp`.
pub fn arp_probe(dev: &str, target: std::net::Ipv4Addr, r: &roce_net::ArpProbeResult) -> String {
    let mut s = format!(
        "ARP probe for {target} from {dev}: {} request(s), {} distinct MAC(s) answered\n",
        r.requests_sent,
        r.replies.len()
    );
    for rep in &r.replies {
        let _ = writeln!(
            s,
            "  {}  ({} repl{})",
            rep.mac,
            rep.count,
            if rep.count == 1 { "y" } else { "ies" }
        );
    }
    if r.is_flux() {
        s.push_str("ARP flux: several interfaces answer for one address; peers may learn the wrong MAC (fix: arp_ignore=1, arp_announce=2)\n");
    }
    s
}

/// `roce-net probe nd`.
pub fn nd_probe(dev: &str, target: std::net::Ipv6Addr, r: &roce_net::NdProbeResult) -> String {
    let mut s = format!(
        "ND probe for {target} from {dev} (source {}): {} solicitation(s), {} distinct MAC(s) answered\n",
        r.source,
        r.requests_sent,
        r.replies.len()
    );
    for rep in &r.replies {
        let _ = writeln!(
            s,
            "  {}  ({} advertisement{}{})",
            rep.mac,
            rep.count,
            if rep.count == 1 { "" } else { "s" },
            if rep.router { ", router" } else { "" }
        );
    }
    if r.is_several() {
        s.push_str("several interfaces answer for one address (proxy ND, or the address on more than one NIC); peers may learn the wrong MAC\n");
    }
    s
}

/// `roce-net plan`: the diff and a count, then the plan's notes.
pub fn plan(p: &roce_net::Plan) -> String {
    let mut s = if p.is_empty() {
        "no changes: the host already matches the policy\n".to_string()
    } else {
        let mut s = p.render_diff();
        if !s.ends_with('\n') {
            s.push('\n');
        }
        let _ = writeln!(s, "{} change(s)", p.changes.len());
        s
    };
    s.push_str(&plan_notes(p));
    s
}

/// A plan's notes ([`roce_net::Plan::notes`]), one `note:` line each.
pub fn plan_notes(p: &roce_net::Plan) -> String {
    notes(&p.notes())
}

/// `note:` lines ([`roce_net::Plan::notes`], `ApplyReport::notes`).
pub fn notes(lines: &[String]) -> String {
    let mut s = String::new();
    for n in lines {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

/// `roce-net persist`. `hint` completes the commands a note names (given the
/// rendered file the note is about, if any) so they act where persist wrote;
/// `place` gives where a file the node reads at a path is on disk (under
/// `--root` or `--etc-root`), the path shown; the files' contents are shown as
/// written.
pub fn persist(
    plan: &roce_net::PersistPlan,
    report: &roce_net::WriteReport,
    stale: &roce_net::RemoveReport,
    hint: &dyn Fn(&str, Option<&Path>) -> String,
    place: &dyn Fn(&Path) -> std::path::PathBuf,
) -> String {
    let mut s = format!("backend {} ({})\n", plan.backend.name(), plan.reason);
    for r in report.recovered.iter().chain(&stale.recovered) {
        let _ = writeln!(s, "note: {}", hint(r, None));
    }
    for w in &plan.warnings {
        let _ = writeln!(s, "warning: {}", hint(w, None));
    }
    for d in &report.diffs {
        let _ = writeln!(s, "{:?} {}", d.status, place(&d.path).display());
        if !d.diff.is_empty() {
            s.push_str(&d.diff);
            if !d.diff.ends_with('\n') {
                s.push('\n');
            }
        }
    }
    for f in &plan.files {
        if let Some(n) = &f.note {
            let _ = writeln!(
                s,
                "note: {}: {}",
                place(&f.path).display(),
                hint(n, Some(&f.path))
            );
        }
    }
    if let Some(p) = &report.boot_repair {
        let _ = writeln!(
            s,
            "{} {}: the boot-time repair of a persist interrupted while switching files (a \
             systemd generator; it runs before the network starts)",
            if report.dry_run {
                "would install"
            } else {
                "installed"
            },
            p.display()
        );
    }
    let verb = if report.dry_run {
        "would remove"
    } else {
        "removed"
    };
    for p in &stale.removed {
        let _ = writeln!(
            s,
            "{verb} roce-net's earlier {} (no longer rendered)",
            p.display()
        );
    }
    for p in &stale.edited {
        let _ = writeln!(
            s,
            "kept {}: the file was changed since roce-net wrote it (or carries no record of what roce-net wrote)",
            p.display()
        );
    }
    for (p, why) in &stale.left {
        let _ = writeln!(
            s,
            "kept roce-net's earlier {}: {}",
            p.display(),
            hint(why, None)
        );
    }
    for p in &stale.restored {
        let _ = writeln!(
            s,
            "{verb} roce-net's earlier {} and put back what it replaced",
            p.display()
        );
    }
    if report.dry_run {
        s.push_str("dry run: nothing written\n");
    } else {
        let _ = writeln!(
            s,
            "{} file(s) written, {} unchanged",
            report.written.len(),
            report.unchanged.len()
        );
        for b in &report.backups {
            let _ = writeln!(s, "previous content kept in {}", b.display());
        }
        for b in &report.originals {
            let _ = writeln!(
                s,
                "the file roce-net replaced is kept in {} ({})",
                b.display(),
                hint("`roce-net persist --remove` restores it", None)
            );
        }
    }
    s
}

/// `roce-net persist --remove`.
pub fn persist_remove(r: &roce_net::RemoveReport) -> String {
    let mut s = String::new();
    for n in &r.recovered {
        let _ = writeln!(s, "note: {n}");
    }
    let (rm, rs) = if r.dry_run {
        ("would remove", "would restore")
    } else {
        ("removed", "restored")
    };
    for p in &r.removed {
        let _ = writeln!(s, "{rm} {}", p.display());
    }
    for p in &r.restored {
        let _ = writeln!(s, "{rs} {} (what was there before roce-net)", p.display());
    }
    for p in &r.edited {
        let _ = writeln!(
            s,
            "{} {}: the file was changed since roce-net wrote it (or carries no record of what roce-net wrote)",
            if r.dry_run { "would keep its content in" } else { "kept its content in" },
            p.display()
        );
    }
    for p in &r.foreign {
        let _ = writeln!(s, "left {}: roce-net did not write it", p.display());
    }
    for (p, what) in &r.left {
        let _ = writeln!(s, "left {}: {what}", p.display());
    }
    if r.removed.is_empty() && r.restored.is_empty() {
        s.push_str("nothing of roce-net's persistence found\n");
    }
    if r.dry_run {
        s.push_str("dry run: nothing changed\n");
    }
    s
}

/// The `fix:` and `check:` lines of findings printed one after another, so
/// that the `fix:` lines, run top to bottom (a script with `set -e`), run each
/// command once: two findings fixed by one command (`asymmetric-egress` and
/// `source-rule-missing` both add a NIC's source rule, and a second `ip rule
/// add` fails with "File exists") print it under the first, and the second
/// says where it is. `check:` lines only show more (they change nothing and
/// some fail where there is nothing to show) and are printed once too.
#[derive(Default)]
struct Remedies {
    /// Every command printed so far, with the finding it was printed under.
    printed: std::collections::BTreeMap<String, String>,
}

impl Remedies {
    fn write(&mut self, s: &mut String, f: &roce_net::Finding) {
        let here = format!("[{}] {}", f.id, f.subject);
        let mut above: Vec<String> = Vec::new();
        let mut new = 0;
        for c in &f.remediation.commands {
            match self.printed.get(c) {
                Some(at) => {
                    if !above.contains(at) {
                        above.push(at.clone());
                    }
                }
                None => {
                    new += 1;
                    let _ = writeln!(s, "      fix: {c}");
                    self.printed.insert(c.clone(), here.clone());
                }
            }
        }
        if !above.is_empty() {
            let _ = writeln!(
                s,
                "      (fixed{} by the fix above under {})",
                if new > 0 { " also" } else { "" },
                above.join(" and ")
            );
        }
        for c in &f.remediation.checks {
            if !self.printed.contains_key(c) {
                let _ = writeln!(s, "      check: {c}");
                self.printed.insert(c.clone(), here.clone());
            }
        }
    }
}

/// `roce-net doctor`: findings grouped by severity, most severe first.
pub fn doctor(st: &HostState, findings: &[roce_net::Finding]) -> String {
    use roce_net::Severity;
    let sum = roce_net::summarize(findings);
    let ns = st
        .netns
        .as_deref()
        .map(|n| format!(" (netns {n})"))
        .unwrap_or_default();
    let mut s = format!(
        "doctor: host {}{ns}: {} error(s), {} warning(s), {} info\n",
        st.hostname, sum.error, sum.warning, sum.info
    );
    let mut remedies = Remedies::default();
    for sev in [Severity::Error, Severity::Warning, Severity::Info] {
        let group: Vec<_> = findings.iter().filter(|f| f.severity == sev).collect();
        if group.is_empty() {
            continue;
        }
        let _ = writeln!(s, "\n{}S", sev.to_string().to_uppercase());
        for f in group {
            let _ = writeln!(s, "  [{}] {}: {}", f.id, f.subject, f.message);
            if !f.evidence.is_empty() {
                let ev: Vec<String> = f
                    .evidence
                    .iter()
                    .map(|(k, v)| match v {
                        serde_json::Value::String(x) => format!("{k}={x}"),
                        other => format!("{k}={other}"),
                    })
                    .collect();
                let _ = writeln!(s, "      evidence: {}", ev.join(", "));
            }
            remedies.write(&mut s, f);
            if let Some(p) = &f.remediation.policy {
                let _ = writeln!(s, "      policy: {p}");
            }
        }
    }
    if findings.is_empty() {
        s.push_str("no findings: this host looks healthy for multi-NIC RoCE\n");
    }
    s
}

/// `roce-net nccl-env`.
pub fn nccl(a: &roce_net::NcclAdvice) -> String {
    let mut s = String::new();
    for v in &a.vars {
        match &v.value {
            Some(x) => {
                let _ = writeln!(s, "{}={x}", v.name);
            }
            None => {
                let _ = writeln!(s, "# {} not set", v.name);
            }
        }
        let _ = writeln!(s, "    # {}", v.reason);
    }
    for n in &a.notes {
        let _ = writeln!(s, "note: {n}");
    }
    if !a.picks.is_empty() {
        s.push_str("\nGID NCCL uses per port (target: the RoCE v2 GID of the NIC's address)\n");
        let mut t = Table::new(&[
            "PORT",
            "NETDEV",
            "TARGET",
            "2.21+ UNSET",
            "2.21+ ADVISED",
            "<2.21 UNSET",
            "<2.21 ADVISED",
        ]);
        let pick = |o: &roce_net::PickOutcome| match (&o.selection, o.right) {
            (roce_net::Selection::Index(i), Some(true)) => format!("{i} ok"),
            (roce_net::Selection::Index(i), Some(false)) => format!("{i} WRONG"),
            (roce_net::Selection::Index(i), None) => i.to_string(),
            (roce_net::Selection::Fails(_), _) => "fails".to_string(),
        };
        for p in &a.picks {
            t.row(vec![
                p.port.to_string(),
                opt(&p.netdev),
                p.target
                    .as_ref()
                    .map(|g| g.index.to_string())
                    .unwrap_or_else(|| "-".into()),
                pick(&p.auto_unset),
                pick(&p.auto_advised),
                pick(&p.legacy_unset),
                pick(&p.legacy_advised),
            ]);
        }
        s.push_str(&t.render());
    }
    s
}

/// `roce-net nccl-env --check`.
pub fn nccl_check(env: &roce_net::NcclEnv, findings: &[roce_net::Finding]) -> String {
    let nccl: Vec<String> = env
        .vars
        .iter()
        .filter(|(k, _)| k.starts_with("NCCL_"))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let mut s = format!(
        "nccl-env --check: {} NCCL variable(s){}\n",
        nccl.len(),
        if nccl.is_empty() {
            String::new()
        } else {
            format!(": {}", nccl.join(" "))
        }
    );
    if findings.is_empty() {
        s.push_str("no findings: NCCL will use the GIDs and interfaces this host means\n");
        return s;
    }
    let mut remedies = Remedies::default();
    for f in findings {
        let _ = writeln!(
            s,
            "  {} [{}] {}: {}",
            f.severity, f.id, f.subject, f.message
        );
        remedies.write(&mut s, f);
    }
    s
}

/// `roce-net fleet`.
pub fn fleet(r: &roce_net::FleetReport) -> String {
    let mut t = Table::new(&[
        "HOST",
        "NICS",
        "RDMA",
        "GID_INDEX",
        "MTU",
        "SUBNETS",
        "ERRORS",
        "WARNINGS",
    ]);
    for h in &r.hosts {
        t.row(vec![
            h.hostname.clone(),
            h.nics.len().to_string(),
            h.rdma_devices.len().to_string(),
            opt(&h.gid_index),
            h.mtus
                .iter()
                .map(|m| m.to_string())
                .collect::<Vec<_>>()
                .join(","),
            h.subnets
                .iter()
                .map(|m| m.to_string())
                .collect::<Vec<_>>()
                .join(","),
            h.findings.error.to_string(),
            h.findings.warning.to_string(),
        ]);
    }
    let mut s = t.render();
    if r.findings.is_empty() {
        s.push_str("\nno cross-host findings\n");
    } else {
        s.push_str("\nCross-host findings\n");
        let mut remedies = Remedies::default();
        for f in &r.findings {
            let _ = writeln!(
                s,
                "  {} [{}] {}: {}",
                f.severity, f.id, f.subject, f.message
            );
            remedies.write(&mut s, f);
        }
    }
    s
}

/// `mesh node`: this host's NICs of a mesh inventory.
pub fn mesh_node(n: &roce_net::MeshNode) -> String {
    let mut t = Table::new(&["NIC", "ADDRESS", "MAC", "MTU", "RAIL", "RDMA"]);
    for k in &n.nics {
        t.row(vec![
            k.name.clone(),
            format!("{}/{}", k.address, k.prefix_len),
            k.mac.clone().unwrap_or_else(|| "-".into()),
            k.mtu.to_string(),
            k.rail.clone(),
            if k.rdma { "yes" } else { "no" }.into(),
        ]);
    }
    for u in &n.unprobed {
        t.row(vec![
            u.name.clone(),
            format!("none ({})", u.cause),
            u.seen.mac.clone().unwrap_or_else(|| "-".into()),
            u.seen.mtu.map_or_else(|| "-".into(), |m| m.to_string()),
            u.rail.clone().unwrap_or_else(|| "-".into()),
            if u.rdma { "yes" } else { "no" }.into(),
        ]);
    }
    let mut s = format!("mesh node {}\n{}", n.host, t.render());
    if !n.unprobed.is_empty() {
        let _ = writeln!(
            s,
            "{} NIC(s) without an address are not probed; the report names them",
            n.unprobed.len()
        );
    }
    s
}

/// `mesh plan`: what the schedule holds and when it runs.
pub fn mesh_plan(p: &roce_net::MeshPlan, file: Option<&Path>) -> String {
    let probes = p.probes();
    let intra = probes.iter().filter(|x| x.intra).count();
    let nics: usize = p.inventory.nodes.iter().map(|n| n.nics.len()).sum();
    let rails: std::collections::BTreeSet<&str> = p
        .inventory
        .nodes
        .iter()
        .flat_map(|n| n.nics.iter().map(|k| k.rail.as_str()))
        .collect();
    let o = &p.options;
    let rounds = p.round_count();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "mesh plan {}: {} nodes, {nics} NICs on {} rails; {} probes in {rounds} rounds ({} between hosts, {intra} within hosts)",
        p.id,
        p.inventory.nodes.len(),
        rails.len(),
        probes.len(),
        probes.len() - intra
    );
    let unprobed: Vec<String> = p
        .inventory
        .nodes
        .iter()
        .flat_map(|n| {
            n.unprobed
                .iter()
                .map(move |u| format!("{} {} ({})", n.host, u.name, u.cause))
        })
        .collect();
    if !unprobed.is_empty() {
        let _ = writeln!(
            s,
            "not probed, no address (the report names them): {}",
            unprobed.join(", ")
        );
    }
    let levels: Vec<&str> = [
        (o.levels.neighbor, "neighbor"),
        (o.levels.ip, "ip"),
        (o.levels.rdma, "rdma"),
    ]
    .iter()
    .filter(|(on, _)| *on)
    .map(|(_, n)| *n)
    .collect();
    let _ = writeln!(
        s,
        "levels {}; {} peer(s) per NIC per round; a round lasts {:.1} s; the run {:.1} s from round 1 ({})",
        levels.join(","),
        o.peers,
        p.round_ms() as f64 / 1000.0,
        (u64::from(rounds) * p.round_ms() + roce_net::MESH_END_GRACE_MS) as f64 / 1000.0,
        roce_net::utc_time(o.start_at_ms / 1000)
    );
    for r in &rails {
        let n = p
            .inventory
            .nodes
            .iter()
            .flat_map(|n| n.nics.iter())
            .filter(|k| k.rail == *r)
            .count();
        let _ = writeln!(s, "  rail {r}: {n} NICs");
    }
    if let Some(f) = file {
        let _ = writeln!(
            s,
            "saved to {}; on every node, before round 1: roce-net mesh run --plan {} -o RESULT.json",
            f.display(),
            roce_net::shell_word(&f.to_string_lossy())
        );
    }
    s
}

/// `mesh run --check`: this node's probes by round, and what it answers.
pub fn mesh_schedule(n: &roce_net::NodeSchedule) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "mesh plan {}: node {} would probe {} time(s) and answer {} probe(s) in {} rounds of {:.1} s (round 1 at {})",
        n.plan,
        n.host,
        n.outgoing.len(),
        n.incoming.len(),
        n.rounds,
        n.round_ms as f64 / 1000.0,
        roce_net::utc_time(n.start_at_ms / 1000)
    );
    let levels = |l: &roce_net::MeshLevels| {
        let v: Vec<&str> = [(l.neighbor, "neighbor"), (l.ip, "ip"), (l.rdma, "rdma")]
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, x)| *x)
            .collect();
        v.join(",")
    };
    let mut t = Table::new(&["ROUND", "FROM", "TO", "ADDRESS", "LEVELS"]);
    for p in &n.outgoing {
        t.row(vec![
            (p.round + 1).to_string(),
            format!("{} ({})", p.from.name, p.from.address),
            format!(
                "{} {}{}",
                p.to_host,
                p.to.name,
                if p.intra { " (this host)" } else { "" }
            ),
            p.to.address.to_string(),
            levels(&p.levels),
        ]);
    }
    s.push_str(&t.render());
    let mut t = Table::new(&["ROUND", "ANSWERS", "ON", "LEVELS"]);
    for p in &n.incoming {
        t.row(vec![
            (p.round + 1).to_string(),
            format!("{} {} ({})", p.from_host, p.from.name, p.from.address),
            p.to.name.clone(),
            levels(&p.levels),
        ]);
    }
    s.push('\n');
    s.push_str(&t.render());
    s
}

/// `mesh run`: this node's probes and what its responder answered.
pub fn mesh_result(r: &roce_net::MeshNodeResult) -> String {
    let mut s = String::new();
    let failed = r.probes.iter().filter(|p| p.failure().is_some()).count();
    let _ = writeln!(
        s,
        "mesh {} node {}: {} probe(s), {failed} failed; responder answered {} and stopped ({}) after {:.1} s",
        r.plan,
        r.host,
        r.probes.len(),
        r.responder.answered.len(),
        r.responder.stopped,
        r.responder.elapsed_ms as f64 / 1000.0
    );
    let mut t = Table::new(&["ROUND", "FROM", "TO", "RESULT"]);
    for p in &r.probes {
        let res: Vec<String> = p
            .levels
            .iter()
            .map(|l| match (&l.status, &l.cause) {
                (roce_net::MeshStatus::Pass, _) => format!("{} ok", l.level),
                (roce_net::MeshStatus::Fail, c) => {
                    format!("{} {}", l.level, c.as_deref().unwrap_or("failed"))
                }
                (roce_net::MeshStatus::Skipped, c) => {
                    format!("{} skipped ({})", l.level, c.as_deref().unwrap_or("-"))
                }
            })
            .collect();
        t.row(vec![
            (p.round + 1).to_string(),
            p.from.clone(),
            format!("{} {}", p.to_host, p.to),
            res.join(", "),
        ]);
    }
    s.push_str(&t.render());
    for p in &r.probes {
        if let Some(l) = p.failure() {
            let _ = writeln!(s, "{} -> {} {}: {}", p.from, p.to_host, p.to, l.message);
        }
    }
    for e in r.responder.errors.iter().chain(r.notes.iter()) {
        let _ = writeln!(s, "note: {e}");
    }
    for m in &r.responder.missing {
        let _ = writeln!(s, "not come: {m}");
    }
    s
}
