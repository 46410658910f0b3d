//! `roce-net lab`: the seed scenario as a guided demo, entirely inside network
//! namespaces it creates and removes (names `rnt-demo-*`, addresses 198.18.0.0/15).

use crate::cli::{exit, out};
use crate::render;
use roce_net::ApplyOptions;

use roce_net::Lab;

use roce_net::Policy;
use roce_net::{ArpProbeOptions, ArpProbeResult};
use roce_net::{Error, ErrorKind, Host};
use serde_json::json;
use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

/// What the demo saw at one moment.
struct Observation {
    findings: Vec<roce_net::Finding>,
    probe: ArpProbeResult,
    egress: Vec<(String, IpAddr, Option<String>)>,
}

fn v4(ip: IpAddr) -> Result<Ipv4Addr, Error> {
    match ip {
        IpAddr::V4(a) => Ok(a),
        IpAddr::V6(_) => Err(Error::new(
            ErrorKind::InvalidInput,
            "lab addresses are IPv4",
        )),
    }
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
    let probe = Host::netns(peer_ns)?.probe_arp(
        &peer.name,
        v4(target)?,
        ArpProbeOptions::new(3, Duration::from_millis(800)),
    )?;
    let mut egress = Vec::new();
    for n in nics {
        let d = host.route_get(peer.address, Some(n.address))?;
        egress.push((n.name.clone(), n.address, d.dev));
    }
    Ok(Observation {
        findings,
        probe,
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
        "wire: the peer's ARP probe ({peer}) for {} ({}) got {} distinct MAC(s){}\n",
        target.address,
        target.name,
        o.probe.replies.len(),
        if o.probe.is_flux() { ": ARP flux" } else { "" }
    ));
    for r in &o.probe.replies {
        s.push_str(&format!("  {}\n", r.mac));
    }
    s.push_str("egress: route get <peer> from each NIC's address\n");
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

/// Run the demo.
pub fn run(nics: usize, keep: bool, as_json: bool) -> Result<u8, Error> {
    if !(2..=roce_net::SEED_MAX_NICS).contains(&nics) {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("--nics must be 2 to {}", roce_net::SEED_MAX_NICS),
        ));
    }
    let mut lab = Lab::seed_tagged("demo", nics)?;
    lab.set_keep(keep);
    // The lab never writes the machine's /etc or /run: table names and the apply
    // journal go to temporary directories.
    let etc = tempdir("etc")?;
    let state_dir = tempdir("state")?;
    let host = lab.host()?.with_etc_root(&etc.0);
    let opts = ApplyOptions {
        state_dir: state_dir.0.clone(),
        ..Default::default()
    };

    let before = observe(&lab, &host)?;
    let policy = Policy::default();
    let p = roce_net::plan(&host.snapshot()?, &policy)?;
    let report = roce_net::apply(&host, &p, &opts)?;
    let after = observe(&lab, &host)?;
    let second = roce_net::plan(&host.snapshot()?, &policy)?;
    let fixed = !after.probe.is_flux() && egress_ok(&after) && second.is_empty();

    if as_json {
        let obs = |o: &Observation| {
            json!({
                "findings": o.findings,
                "arp_probe": o.probe,
                "egress": o.egress.iter().map(|(n, a, d)| json!({"nic": n, "source": a, "dev": d})).collect::<Vec<_>>(),
            })
        };
        let v = json!({
            "namespaces": lab.namespaces(),
            "kept": keep,
            "before": obs(&before),
            "plan": p,
            "apply": report,
            "after": obs(&after),
            "second_plan_empty": second.is_empty(),
            "fixed": fixed,
        });
        out(&serde_json::to_string_pretty(&v).unwrap_or_default());
    } else {
        let mut s = format!(
            "roce-net lab: a host with {nics} NICs in 198.18.0.0/24 and a peer on one switch (namespaces {})\n",
            lab.namespaces().join(", ")
        );
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
            s.push_str(&format!(
                "\nthe lab is kept; explore it with\n  roce-net --netns {host_ns} show\n  ip -n {host_ns} rule\n\
                 and remove it with\n  for ns in {}; do ip netns del $ns; done\n",
                lab.namespaces().join(" ")
            ));
        }
        out(&s);
    }
    if keep {
        // Dropping would remove the namespaces; keeping was asked for.
        std::mem::forget(lab);
    }
    Ok(if fixed { exit::OK } else { exit::FAILURE })
}

/// A temporary directory removed on drop.
struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tempdir(what: &str) -> Result<TempDir, Error> {
    let p = std::env::temp_dir().join(format!("roce-net-lab-{}-{what}", std::process::id()));
    std::fs::create_dir_all(&p).map_err(|e| Error::io(e, format!("creating {}", p.display())))?;
    Ok(TempDir(p))
}
