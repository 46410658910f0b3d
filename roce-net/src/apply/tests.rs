//! The transaction against real kernels in throwaway namespaces, with faults
//! injected through the [`Effects`] seam. The seam's wrapper (`Faulty`) exists
//! only in this test build: the product's apply has no test hooks.

use super::execute::Kernel;
use super::journal::Step;
use super::transaction::{self, Effects, Session, Source};
use super::{apply_with, ApplyOptions, ApplyReport, JournalState, StepStatus};
use crate::error::{Error, ErrorKind, Result};
use crate::model::{Family, HostState, Sysctl};
use crate::plan::Change;
use crate::policy::Policy;
use crate::rt_tables::NameUpdate;
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::process::Command;

/// A hook run before step `index` reaches the kernel (its `started` line and all
/// earlier lines are in the step log by then); an `Err` fails the step as if the
/// kernel had refused it.
type Hook<'h> = Box<dyn FnMut(usize) -> Result<()> + Send + 'h>;

/// The real kernel, with faults.
struct Faulty<'a, 'h> {
    inner: &'a mut dyn Effects,
    before_step: Hook<'h>,
    /// Snapshot calls so far; `fail_snapshot` fails that one (1-based).
    snapshots: usize,
    fail_snapshot: Option<usize>,
    /// Run before the verify snapshot (the second one).
    before_verify: Option<Box<dyn FnMut() + Send + 'h>>,
}

impl Faulty<'_, '_> {
    /// Count a snapshot; run the verify hook before the second; fail as asked.
    fn hit(&mut self) -> Result<()> {
        self.snapshots += 1;
        if self.snapshots == 2 {
            if let Some(f) = self.before_verify.as_mut() {
                f();
            }
        }
        if self.fail_snapshot == Some(self.snapshots) {
            return Err(Error::errno(libc::EINTR, "dumping routes (injected)")
                .with_kind(ErrorKind::Netlink));
        }
        Ok(())
    }
}

impl Effects for Faulty<'_, '_> {
    fn snapshot(&mut self, shared: Option<&[Sysctl]>) -> Result<HostState> {
        self.hit()?;
        self.inner.snapshot(shared)
    }
    fn snapshot_verify(&mut self, sysctls: &[Sysctl], ipv6: bool) -> Result<HostState> {
        self.hit()?;
        self.inner.snapshot_verify(sysctls, ipv6)
    }
    fn own_table_names(&mut self) -> Result<BTreeMap<u32, String>> {
        self.inner.own_table_names()
    }
    fn change(&mut self, index: usize, change: &Change) -> Result<()> {
        (self.before_step)(index)?;
        self.inner.change(index, change)
    }
    fn announce(&mut self, list: &[(String, IpAddr)]) -> Vec<String> {
        self.inner.announce(list)
    }
    fn table_names(
        &mut self,
        first: usize,
        updates: &[NameUpdate<'_>],
        tolerant: bool,
    ) -> Result<Vec<bool>> {
        if !tolerant {
            (self.before_step)(first)?;
        }
        self.inner.table_names(first, updates, tolerant)
    }
    fn undo(&mut self, index: usize, step: &Step) -> Result<Option<String>> {
        self.inner.undo(index, step)
    }
}

// The lab set-up is the integration tests' (`lab_apply.rs`), written once.
#[path = "../../tests/it/apply_support.rs"]
mod apply_support;
pub(super) use apply_support::Env;

/// A seed lab of `nics` NICs for `test` (namespaces tagged `tx`).
pub(super) fn env(test: &str, nics: usize) -> Env {
    Env::new(test, "tx", nics)
}

pub(super) fn ip(ns: &str, args: &str) {
    let st = Command::new("ip")
        .arg("-n")
        .arg(ns)
        .args(args.split_whitespace())
        .status()
        .unwrap();
    assert!(st.success(), "ip -n {ns} {args}");
}

/// Everything apply may change, in a form where "exactly as before" is `==`.
pub(super) fn comparable(st: &HostState) -> serde_json::Value {
    let neigh: BTreeSet<(String, IpAddr, String)> = st
        .neighbors
        .iter()
        .filter(|n| n.mac.is_some() && !n.ip.is_multicast())
        .map(|n| {
            (
                n.ifname.clone(),
                n.ip,
                n.mac.as_ref().map(|m| m.to_string()).unwrap_or_default(),
            )
        })
        .collect();
    // As sets: a route the kernel re-adds (an address put back) comes back at
    // the end of its table's dump.
    let set = |v: Vec<String>| v.into_iter().collect::<BTreeSet<String>>();
    let routes = set(st
        .routes
        .iter()
        .filter(|r| !(r.family == Family::Inet6 && r.protocol == crate::model::protocol::KERNEL))
        .map(|r| serde_json::to_string(r).unwrap())
        .collect());
    let addresses = set(st
        .addresses
        .iter()
        .filter(|a| a.address.is_ipv4())
        .map(|a| serde_json::to_string(a).unwrap())
        .collect());
    serde_json::json!({
        "routes": routes,
        "rules": st.rules,
        "sysctls": st.sysctls,
        "table_names": st.table_names,
        "neighbors": neigh,
        "addresses": addresses,
    })
}

/// Apply `plan` with `fx` wrapping the kernel.
fn apply_faulty<'h>(
    e: &Env,
    source: Source<'_>,
    opts: &ApplyOptions,
    before_step: Hook<'h>,
    fail_snapshot: Option<usize>,
    before_verify: Option<Box<dyn FnMut() + Send + 'h>>,
) -> Result<ApplyReport> {
    apply_with(&e.host, opts, move |s: &Session, k: &mut Kernel<'_>| {
        let mut f = Faulty {
            inner: k,
            before_step,
            snapshots: 0,
            fail_snapshot,
            before_verify,
        };
        transaction::apply(s, &mut f, source, opts)
    })
}

fn refuse_at(at: usize) -> Hook<'static> {
    Box::new(move |i| {
        if i == at {
            Err(Error::errno(libc::EEXIST, "adding route (injected)")
                .with_kind(ErrorKind::Netlink)
                .with_extack("Route already exists (injected)"))
        } else {
            Ok(())
        }
    })
}

fn none() -> Hook<'static> {
    Box::new(|_| Ok(()))
}

/// Apply `policy` with `hook` run between the last change and verify.
pub(super) fn apply_before_verify(
    e: &Env,
    policy: &Policy,
    hook: impl FnMut() + Send + 'static,
) -> Result<ApplyReport> {
    apply_faulty(
        e,
        Source::Policy(policy),
        &e.opts,
        none(),
        None,
        Some(Box::new(hook)),
    )
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn failure_at_every_step_restores_the_host_and_keeps_the_cause() {
    let e = env(
        "failure_at_every_step_restores_the_host_and_keeps_the_cause",
        3,
    );
    let ns = e.lab.host_ns().unwrap().to_string();
    // Polluted neighbours, so the plan flushes some.
    ip(
        &ns,
        "neigh replace 198.18.0.100 dev r0 lladdr 02:00:5e:00:00:98 nud stale",
    );
    ip(
        &ns,
        "neigh replace 198.18.0.100 dev r1 lladdr 02:00:5e:00:00:99 nud stale",
    );
    let before = e.host.snapshot().unwrap();
    let want = comparable(&before);
    let p = crate::plan::plan(&before, &Policy::default()).unwrap();
    assert!(p
        .changes
        .iter()
        .any(|c| matches!(c, Change::FlushNeighbors { .. })));
    // Table-name steps are written together: a failure there is at the run's first.
    let names = p
        .changes
        .iter()
        .take_while(|c| matches!(c, Change::RegisterTableName { .. }))
        .count();
    let points: Vec<usize> = (0..p.changes.len())
        .filter(|i| *i == 0 || *i >= names)
        .collect();
    eprintln!(
        "failing each of {} steps of {} changes",
        points.len(),
        p.changes.len()
    );
    for i in points {
        let err =
            apply_faulty(&e, Source::Saved(&p), &e.opts, refuse_at(i), None, None).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::RolledBack, "step {i}: {err}");
        let s = err.to_string();
        assert!(s.contains(&format!("change {} of", i + 1)), "{s}");
        // The cause is kept whole, and the kernel's text is shown once.
        let cause = err.cause().expect("the refusal is the source");
        assert_eq!(cause.kind(), ErrorKind::Netlink);
        assert_eq!(err.errno_value(), Some(libc::EEXIST));
        assert_eq!(err.extack(), Some("Route already exists (injected)"));
        assert_eq!(
            s.matches("Route already exists (injected)").count(),
            1,
            "{s}"
        );
        let now = comparable(&e.host.snapshot().unwrap());
        assert!(now == want, "host differs after a failure at step {i}");
        let j = super::apply_status(&e.host, &e.opts).unwrap().unwrap();
        assert_eq!(j.state, JournalState::RolledBack);
        assert!(j.failure.unwrap().contains("injected"));
    }
    // And the same plan still applies cleanly afterwards: nothing drifted.
    super::apply(&e.host, &p, &e.opts).unwrap();
}

/// Any failure after the first change rolls back, also in verify
/// (reproduced on main with its `pause_after` hook and an address removed during
/// the pause: exit 65, journal left `applying`, every change in place).
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn a_failure_in_verify_rolls_back() {
    let e = env("a_failure_in_verify_rolls_back", 3);
    let ns = e.lab.host_ns().unwrap().to_string();
    let before = e.host.snapshot().unwrap();
    let want = comparable(&before);
    // (1) The host changes under the apply so that its policy no longer applies
    // (a DHCP client or an operator removes a listed NIC's address): re-planning
    // in verify fails with a policy error.
    let policy: Policy = Policy::from_yaml("version: 1\nnics:\n  include: [r0, r1, r2]\n").unwrap();
    let ns2 = ns.clone();
    let err = apply_before_verify(&e, &policy, move || {
        ip(&ns2, "addr del 198.18.0.12/24 dev r1")
    })
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::RolledBack, "{err}");
    assert_eq!(err.cause().unwrap().kind(), ErrorKind::Policy, "{err}");
    assert!(err.to_string().contains("verifying"), "{err}");
    let j = super::apply_status(&e.host, &e.opts).unwrap().unwrap();
    assert_eq!(j.state, JournalState::RolledBack);
    assert!(j.steps.iter().all(|s| s.status != StepStatus::Done));
    ip(&ns, "addr add 198.18.0.12/24 dev r1");
    let now = comparable(&e.host.snapshot().unwrap());
    assert!(now == want, "restored:\n{now:#}\n---\n{want:#}");

    // (2) Re-reading the host fails.
    let err =
        apply_faulty(&e, Source::Policy(&policy), &e.opts, none(), Some(2), None).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::RolledBack, "{err}");
    assert_eq!(err.errno_value(), Some(libc::EINTR));
    assert!(comparable(&e.host.snapshot().unwrap()) == want, "restored");

    // (3) Another tool removes one of the rules just added (as a network daemon
    // managing foreign rules does): the re-plan is not empty.
    let ns3 = ns.clone();
    let err = apply_before_verify(&e, &policy, move || ip(&ns3, "rule del pref 1002")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Verify, "{err}");
    assert!(err.to_string().contains("still differs"), "{err}");
    assert!(comparable(&e.host.snapshot().unwrap()) == want, "restored");

    // (4), (5) Another tool resets a sysctl the plan set: verify re-reads the
    // plan's `conf/all` values from /proc/sys and every interface's from the
    // link dump, so both are seen.
    for sysctl in [
        "net.ipv4.conf.all.arp_ignore=0",
        "net.ipv4.conf.r1.rp_filter=1",
    ] {
        let ns4 = ns.clone();
        let err = apply_before_verify(&e, &policy, move || {
            let st = Command::new("ip")
                .args(["netns", "exec", &ns4, "sysctl", "-qw", sysctl])
                .status()
                .unwrap();
            assert!(st.success(), "sysctl -w {sysctl}");
        })
        .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Verify, "{err}");
        let (name, _) = sysctl.split_once('=').unwrap();
        assert!(err.to_string().contains(name), "{sysctl}: {err}");
        assert!(comparable(&e.host.snapshot().unwrap()) == want, "restored");
    }
}

/// Verify reads the IPv6 routes and rules again exactly when the plan changed
/// one: an IPv6 rule put back under a plan that deleted it is seen (and the
/// apply rolled back); IPv6 churn under a plan of IPv4 changes only does not
/// fail the apply (verify keeps the IPv6 objects of its first read, which the
/// apply did not touch), and the next plan deals with it.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn verify_rereads_ipv6_only_when_the_plan_changed_ipv6() {
    let e = env("verify_rereads_ipv6_only_when_the_plan_changed_ipv6", 2);
    let ns = e.lab.host_ns().unwrap().to_string();
    let stale = "-6 rule add from 2001:db8:1::12 lookup 1002 pref 1002 proto 201";
    let drop_stale = "-6 rule del from 2001:db8:1::12 lookup 1002 pref 1002";
    let v6_rules = |e: &Env| {
        e.host
            .snapshot()
            .unwrap()
            .rules
            .into_iter()
            .filter(|r| r.family == Family::Inet6 && r.protocol == 201)
            .count()
    };
    let policy = Policy::default();

    // (1) A stale owned IPv6 rule: the plan deletes it; another tool puts it
    // back before verify, which must see it.
    ip(&ns, stale);
    let before = e.host.snapshot().unwrap();
    let want = comparable(&before);
    let p = crate::plan::plan(&before, &policy).unwrap();
    assert!(p.changes.iter().any(Change::changes_ipv6_object), "{p:?}");
    let ns1 = ns.clone();
    let err = apply_before_verify(&e, &policy, move || ip(&ns1, stale)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Verify, "{err}");
    assert!(err.to_string().contains("2001:db8:1::12"), "{err}");
    // Rolled back: the rule put back by the other tool is the one rollback
    // restores (an equal rule in place counts), so the host is as before.
    assert!(comparable(&e.host.snapshot().unwrap()) == want, "restored");
    assert_eq!(v6_rules(&e), 1);
    // Without interference the same apply deletes it and verifies.
    super::apply_policy(&e.host, &policy, &e.opts).unwrap();
    assert_eq!(v6_rules(&e), 0);
    super::rollback(&e.host, &e.opts).unwrap();
    assert_eq!(v6_rules(&e), 1);
    ip(&ns, drop_stale);

    // (2) A plan of IPv4 changes only, and the same IPv6 rule appearing during
    // it: the apply verifies; the next plan deletes the rule.
    let p = crate::plan::plan(&e.host.snapshot().unwrap(), &policy).unwrap();
    assert!(!p.changes.is_empty());
    assert!(!p.changes.iter().any(Change::changes_ipv6_object), "{p:?}");
    let ns2 = ns.clone();
    apply_before_verify(&e, &policy, move || ip(&ns2, stale)).unwrap();
    assert_eq!(v6_rules(&e), 1);
    let next = crate::plan::plan(&e.host.snapshot().unwrap(), &policy).unwrap();
    assert!(
        matches!(next.changes.as_slice(), [Change::DeleteRule { rule }] if rule.family == Family::Inet6),
        "{next:?}"
    );
    super::apply_policy(&e.host, &policy, &e.opts).unwrap();
    assert_eq!(v6_rules(&e), 0);
}

/// The step log, read back while the apply is held before a step, shows exactly
/// which steps are done (replaces the removed `pause_after` hook).
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn progress_is_exact_while_an_apply_is_held() {
    let e = env("progress_is_exact_while_an_apply_is_held", 3);
    let p = crate::plan::plan(&e.host.snapshot().unwrap(), &Policy::default()).unwrap();
    let n = p.changes.len();
    let names = p
        .changes
        .iter()
        .take_while(|c| matches!(c, Change::RegisterTableName { .. }))
        .count();
    assert!(names >= 2, "the names run is batched: {names}");
    let route = p
        .changes
        .iter()
        .position(|c| matches!(c, Change::AddRoute { .. }))
        .unwrap();
    for at in [0, names, route, n - 1] {
        let host = e.host.clone();
        let opts = e.opts.clone();
        let mut seen = None;
        let hook: Hook<'_> = Box::new(|i| {
            if i == at {
                seen = Some(super::apply_status(&host, &opts).map(|j| j.unwrap()));
            }
            Ok(())
        });
        let r = apply_faulty(&e, Source::Saved(&p), &e.opts, hook, None, None).unwrap();
        assert_eq!(r.applied, n);
        let j = seen.unwrap().unwrap();
        assert_eq!(j.state, JournalState::Applying);
        let got: Vec<StepStatus> = j.steps.iter().map(|s| s.status).collect();
        let run_end = if at == 0 { names } else { at + 1 };
        let mut want = vec![StepStatus::Done; at];
        want.resize(run_end, StepStatus::Started);
        want.resize(n, StepStatus::Pending);
        assert_eq!(got, want, "held before step {at}");
        super::rollback(&e.host, &e.opts).unwrap();
    }
}

/// An apply whose confirm deadline passed before it could start (its watchdog
/// may already have found nothing to guard and stood down) changes nothing and
/// says so; one in time is guarded as armed.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn an_apply_past_its_confirm_deadline_changes_nothing() {
    let e = env("an_apply_past_its_confirm_deadline_changes_nothing", 2);
    let before = comparable(&e.host.snapshot().unwrap());
    let mut guard = super::arm_confirm(&e.host, std::time::Duration::from_secs(1)).unwrap();
    guard.deadline = super::clock::now() - 1;
    // The boot clock decides (a wall-clock step moves no deadline).
    guard.boot_deadline_ms = super::clock::boot_ms().map(|b| b - 1000);
    let opts = ApplyOptions {
        guard: Some(guard.clone()),
        ..e.opts.clone()
    };
    let err = super::apply_policy(&e.host, &Policy::default(), &opts).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains(&format!(
            "deadline {}",
            crate::model::utc_time(guard.deadline)
        )) && msg.contains("nothing was changed"),
        "{msg}"
    );
    assert_eq!(comparable(&e.host.snapshot().unwrap()), before);
    assert!(
        super::apply_status(&e.host, &e.opts).unwrap().is_none(),
        "no journal"
    );

    guard.deadline = super::clock::now() + 60;
    guard.boot_deadline_ms = super::clock::boot_ms().map(|b| b + 60_000);
    let opts = ApplyOptions {
        guard: Some(guard.clone()),
        ..e.opts.clone()
    };
    let r = super::apply_policy(&e.host, &Policy::default(), &opts).unwrap();
    assert_eq!(r.confirm_deadline, Some(guard.deadline));
    super::rollback(&e.host, &e.opts).unwrap();
    assert_eq!(comparable(&e.host.snapshot().unwrap()), before);
}
