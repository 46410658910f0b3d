//! `roce-net lab`: the seed scenario as a guided demo, entirely inside network
//! namespaces it creates and removes (names `rnt-demo-*`, addresses 198.18.0.0/15,
//! or with `--ipv6` the ULA prefix `fd00:198:18::/64`).

use super::exit;
use super::output::out;
use crate::render;
use roce_net::ApplyOptions;

use roce_net::Lab;

use roce_net::Policy;
use roce_net::{AddressFamilies, ArpProbeOptions, NdProbeOptions};
use roce_net::{Error, ErrorKind, Host};
use serde_json::json;
use std::collections::BTreeSet;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What the peer's probe of one host address saw on the wire: an ARP probe
/// for an IPv4 lab, a neighbour solicitation probe for an IPv6 one.
struct WireProbe {
    /// `ARP` or `ND`.
    kind: &'static str,
    /// The distinct MACs that answered, in order.
    macs: Vec<String>,
    /// The probe's own result, for `--json`.
    json: serde_json::Value,
}

impl WireProbe {
    /// A probe of `kind` whose replies carried `macs`, reported as `result`.
    fn new<'a>(
        kind: &'static str,
        macs: impl Iterator<Item = &'a roce_net::HwAddr>,
        result: &impl serde::Serialize,
    ) -> Result<WireProbe, Error> {
        let json = serde_json::to_value(result)
            .map_err(|e| Error::new(ErrorKind::Io, format!("encoding the probe result: {e}")))?;
        Ok(WireProbe {
            kind,
            macs: macs.map(ToString::to_string).collect(),
            json,
        })
    }
}

/// What the demo saw at one moment.
struct Observation {
    findings: Vec<roce_net::Finding>,
    probe: WireProbe,
    /// The host's NICs by MAC: whose MAC each answer carries.
    macs: std::collections::BTreeMap<String, String>,
    egress: Vec<(String, IpAddr, Option<String>)>,
}

fn observe(lab: &Lab, host: &Host) -> Result<Observation, Error> {
    let st = host.snapshot()?;
    let findings = roce_net::doctor(&st);
    let nics = lab.nics();
    let peer = lab
        .peer_nic()
        .ok_or_else(|| Error::new(ErrorKind::NotFound, "lab has no peer"))?;
    let peer_ns = lab
        .peer_ns()
        .ok_or_else(|| Error::new(ErrorKind::NotFound, "lab has no peer namespace"))?;
    let target = nics.get(1).unwrap_or(&nics[0]).address;
    let peer_host = Host::netns(peer_ns)?;
    let (count, wait) = (3, Duration::from_millis(800));
    let probe = match target {
        IpAddr::V4(a) => {
            let r = peer_host.probe_arp(&peer.name, a, ArpProbeOptions::new(count, wait))?;
            WireProbe::new("ARP", r.replies.iter().map(|x| &x.mac), &r)?
        }
        IpAddr::V6(a) => {
            let r = peer_host.probe_nd(&peer.name, a, NdProbeOptions::new(count, wait))?;
            WireProbe::new("ND", r.replies.iter().map(|x| &x.mac), &r)?
        }
    };
    let mut egress = Vec::new();
    for n in nics {
        let d = host.route_get(peer.address, Some(n.address))?;
        egress.push((n.name.clone(), n.address, d.dev));
    }
    let macs = nics
        .iter()
        .filter_map(|n| {
            let mac = st.interface(&n.name)?.mac.as_ref()?;
            Some((mac.to_string(), n.name.clone()))
        })
        .collect();
    Ok(Observation {
        findings,
        probe,
        macs,
        egress,
    })
}

fn describe(title: &str, lab: &Lab, o: &Observation) -> String {
    let mut s = format!("\n=== {title} ===\n");
    let ids: BTreeSet<&str> = o.findings.iter().map(|f| f.id.as_str()).collect();
    let sum = roce_net::summarize(&o.findings);
    s.push_str(&format!(
        "doctor: {} error(s), {} warning(s), {} info: {}\n",
        sum.error,
        sum.warning,
        sum.info,
        if ids.is_empty() {
            "none".to_string()
        } else {
            ids.into_iter().collect::<Vec<_>>().join(", ")
        }
    ));
    for f in o
        .findings
        .iter()
        .filter(|f| f.severity != roce_net::Severity::Info)
    {
        s.push_str(&format!("  [{}] {}: {}\n", f.id, f.subject, f.message));
    }
    let nics = lab.nics();
    let target = nics.get(1).unwrap_or(&nics[0]);
    let peer = lab.peer_nic().map(|p| p.name.clone()).unwrap_or_default();
    s.push_str(&format!(
        "wire: the peer's {} probe ({peer}) for {} ({}) got {} distinct MAC(s){}\n",
        o.probe.kind,
        target.address,
        target.name,
        o.probe.macs.len(),
        if o.probe.macs.len() > 1 {
            format!(": {} flux", o.probe.kind)
        } else {
            String::new()
        }
    ));
    // Whose MAC each answer carries: the probed NIC's own is the right answer,
    // another NIC's is flux (that NIC answering for an address not its own).
    for mac in &o.probe.macs {
        let whose = match o.macs.get(mac) {
            Some(n) if *n == target.name => format!("{n}'s own MAC: the right answer"),
            Some(n) => format!("{n}'s MAC: {n} answers for {}'s address", target.name),
            None => "no NIC of the host has it".to_string(),
        };
        s.push_str(&format!("  {mac}  ({whose})\n"));
    }
    match lab.peer_nic() {
        Some(p) => s.push_str(&format!(
            "egress: route get {} (the peer's {}) from each NIC's address\n",
            p.address, p.name
        )),
        None => s.push_str("egress: route get the peer from each NIC's address\n"),
    }
    for (name, addr, dev) in &o.egress {
        let dev = dev.clone().unwrap_or_else(|| "-".into());
        let ok = if &dev == name { "ok" } else { "WRONG NIC" };
        s.push_str(&format!("  from {addr} ({name}) leaves by {dev}  {ok}\n"));
    }
    s
}

fn egress_ok(o: &Observation) -> bool {
    o.egress
        .iter()
        .all(|(n, _, d)| d.as_deref() == Some(n.as_str()))
}

/// Where the lab keeps iproute2's table names and apply's journal: the global
/// `--etc-root` / `--state-dir` when given, else temporary directories.
pub struct LabDirs<'a> {
    /// `--etc-root`, when given.
    pub etc_root: Option<&'a Path>,
    /// `--state-dir`, when given (not its default).
    pub state_dir: Option<&'a Path>,
}

/// Run the demo. With `keep`, the namespaces and both directories stay, and the
/// hint commands carry `--etc-root` and `--state-dir`, so that `plan` on the kept
/// host is empty and `status` / `rollback` find the lab's journal.
///
/// Interrupted (`SIGINT` from Ctrl-C, `SIGTERM` from a CI timeout, `SIGHUP` from
/// a dropped SSH session) at any point, it removes the namespaces and the
/// temporary directories it made, says which (or which could not be removed,
/// and how to), and exits with 128 + the signal's number.
pub fn run(
    nics: usize,
    ipv6: bool,
    keep: bool,
    as_json: bool,
    dirs: &LabDirs<'_>,
) -> Result<u8, Error> {
    if !(2..=roce_net::SEED_MAX_NICS).contains(&nics) {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("--nics must be 2 to {}", roce_net::SEED_MAX_NICS),
        ));
    }
    crate::lab_signals::clean_up_on_signals();
    let r = run_lab(nics, ipv6, keep, as_json, dirs);
    // An interrupt makes the lab's next step fail: its own report and exit come
    // from the thread that took the signal, not this error.
    crate::lab_signals::wait_if_interrupted();
    r
}

fn run_lab(
    nics: usize,
    ipv6: bool,
    keep: bool,
    as_json: bool,
    dirs: &LabDirs<'_>,
) -> Result<u8, Error> {
    // The lab never writes the machine's /etc or /run: table names and the apply
    // journal go to the directories given, else to temporary ones (removed at
    // exit unless the lab is kept: a kept host needs them to be planned, shown
    // with its table names, and rolled back).
    let etc = LabDir::new(dirs.etc_root, "etc", keep)?;
    let state_dir = LabDir::new(dirs.state_dir, "state", keep)?;
    let families = if ipv6 {
        AddressFamilies::Ipv6
    } else {
        AddressFamilies::Ipv4
    };
    let mut lab = Lab::seed_families("demo", nics, families)?;
    let host = lab.host()?.with_etc_root(&etc.path);
    let opts = ApplyOptions {
        state_dir: state_dir.path.clone(),
        ..Default::default()
    };

    let before = observe(&lab, &host)?;
    let policy = Policy::default();
    let p = roce_net::plan(&host.snapshot()?, &policy)?;
    let report = roce_net::apply(&host, &p, &opts)?;
    let after = observe(&lab, &host)?;
    let second = roce_net::plan(&host.snapshot()?, &policy)?;
    let fixed = after.probe.macs.len() <= 1 && egress_ok(&after) && second.is_empty();

    if as_json {
        let probe_key = if ipv6 { "nd_probe" } else { "arp_probe" };
        let obs = |o: &Observation| {
            json!({
                "findings": o.findings,
                probe_key: o.probe.json,
                "nic_macs": o.macs,
                "egress": o.egress.iter().map(|(n, a, d)| json!({"nic": n, "source": a, "dev": d})).collect::<Vec<_>>(),
            })
        };
        let v = json!({
            "namespaces": lab.namespaces(),
            "host_namespace": lab.host_ns(),
            "kept": keep,
            "family": if ipv6 { "ipv6" } else { "ipv4" },
            "etc_root": etc.path,
            "state_dir": state_dir.path,
            "before": obs(&before),
            "plan": p,
            "apply": report,
            "after": obs(&after),
            "second_plan_empty": second.is_empty(),
            "fixed": fixed,
        });
        super::output::print_json(&v)?;
    } else {
        let mut s = format!(
            "roce-net lab: a host with {nics} NICs in {} and a peer on one switch (namespaces {})\n",
            if ipv6 {
                "fd00:198:18::/64 (IPv6 only)"
            } else {
                "198.18.0.0/24"
            },
            lab.namespaces().join(", ")
        );
        if ipv6 {
            s.push_str(
                "(in IPv6 a NIC answers a neighbour solicitation only for its own addresses: \
                 the failure to watch is the egress, each source leaving by r0)\n",
            );
        }
        s.push_str(&describe("before: kernel defaults", &lab, &before));
        s.push_str("\n=== plan (default policy) ===\n");
        s.push_str(&render::plan(&p));
        s.push_str(&format!(
            "\n=== apply ===\napplied {} change(s) as one transaction, verified by re-reading the host\n",
            report.applied
        ));
        s.push_str(&describe("after", &lab, &after));
        s.push_str(&format!(
            "\nsecond plan: {}\n",
            if second.is_empty() {
                "empty (the host matches the policy)".to_string()
            } else {
                second.render_diff()
            }
        ));
        s.push_str(if fixed {
            "\nresult: FIXED - one MAC answers per address and every source leaves by its own NIC\n"
        } else {
            "\nresult: NOT FIXED - see above\n"
        });
        if keep {
            let host_ns = lab.host_ns().unwrap_or_default();
            let rn = super::context::roce_net_with(
                Some(host_ns),
                Some(&etc.path),
                Some(&state_dir.path),
            );
            let created: Vec<String> = [&etc, &state_dir]
                .iter()
                .filter(|d| d.created)
                .map(|d| roce_net::shell_word(&d.path.to_string_lossy()))
                .collect();
            s.push_str(&format!(
                "\nthe lab is kept, with its table names under {} and its apply journal in {};\n\
                 explore it with\n  {rn} show\n  {rn} plan\n  {rn} status\n  {rn} rollback\n  \
                 ip -n {} rule\nand remove it with\n  for ns in {}; do ip netns del $ns; done\n",
                etc.path.display(),
                state_dir.path.display(),
                roce_net::shell_word(host_ns),
                lab.namespaces().join(" ")
            ));
            if !created.is_empty() {
                s.push_str(&format!("  rm -r {}\n", created.join(" ")));
            }
        }
        out(&s);
    }
    if keep {
        // Dropping would remove the namespaces; keeping was asked for (and an
        // interrupt from now on leaves them and the directories too).
        lab.set_keep(true);
        crate::lab_signals::forget_dirs();
        std::mem::forget(lab);
    }
    Ok(if fixed { exit::OK } else { exit::FAILURE })
}

/// A directory the lab writes to: the one given, or a temporary one it creates
/// (and removes on drop unless kept).
struct LabDir {
    path: PathBuf,
    /// Made by the lab (not given).
    created: bool,
    /// Remove on drop.
    remove: bool,
}

impl LabDir {
    fn new(given: Option<&Path>, what: &str, keep: bool) -> Result<LabDir, Error> {
        let path = match given {
            Some(p) => {
                std::fs::create_dir_all(p)
                    .map_err(|e| Error::io(e, format!("creating {}", p.display())))?;
                p.to_path_buf()
            }
            None => crate::lab_signals::make_dir_removed_on_signal(|| {
                private_temp_dir(&format!("roce-net-lab-{}-{what}-", std::process::id()))
            })?,
        };
        let created = given.is_none();
        Ok(LabDir {
            path,
            created,
            remove: created && !keep,
        })
    }
}

/// A new directory under `$TMPDIR` named `prefix` and six random characters,
/// made by `mkdtemp(3)`: created by this call (never one that was there, nor a
/// symbolic link planted under a name it could guess), mode 0700. Checked
/// again with `lstat` before use: a directory, not a link, owned by this user,
/// not open to others.
fn private_temp_dir(prefix: &str) -> Result<PathBuf, Error> {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    use std::os::unix::fs::MetadataExt;
    let base = std::env::temp_dir();
    let doing = || {
        format!(
            "creating a private directory {prefix}XXXXXX under {}",
            base.display()
        )
    };
    let mut template = base
        .join(format!("{prefix}XXXXXX"))
        .into_os_string()
        .into_vec();
    if template.contains(&0) {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("{}: the path holds a NUL byte", doing()),
        ));
    }
    template.push(0);
    // SAFETY: a writable NUL-terminated buffer ending in XXXXXX, which mkdtemp
    // fills in place.
    let made = unsafe { libc::mkdtemp(template.as_mut_ptr().cast()) };
    if made.is_null() {
        return Err(Error::io(std::io::Error::last_os_error(), doing()));
    }
    template.pop();
    let path = PathBuf::from(std::ffi::OsStr::from_bytes(&template));
    let md = std::fs::symlink_metadata(&path)
        .map_err(|e| Error::io(e, format!("checking {}", path.display())))?;
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    if !md.file_type().is_dir() || md.uid() != me || md.mode() & 0o077 != 0 {
        return Err(Error::new(
            ErrorKind::Permission,
            format!(
                "{} is not a private directory of this user (owner {}, mode {:o}); \
                 something replaced it as it was made: check who writes to {}",
                path.display(),
                md.uid(),
                md.mode() & 0o7777,
                base.display()
            ),
        ));
    }
    Ok(path)
}

impl Drop for LabDir {
    fn drop(&mut self) {
        if self.remove {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}
