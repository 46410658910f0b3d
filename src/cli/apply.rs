//! The verbs that change a host or its journal: `apply`, `confirm`, `rollback`,
//! `status`, `archive` and the internal `__watchdog`.

use super::context::{command_prefix, host, load_policy, Context};
use super::exit;
use super::output::{localize_hints, out, print_json};
use crate::render;
use roce_net::{ApplyOptions, ConfirmGuard, Error, ErrorKind, Journal, NamespaceId};
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

/// The hidden arguments of `__watchdog`: the guard armed before the apply.
#[derive(clap::Args, Debug)]
pub(crate) struct WatchdogArgs {
    /// The apply id the journal must carry.
    #[arg(long)]
    apply_id: Option<String>,
    /// The deadline (Unix seconds).
    #[arg(long)]
    deadline: Option<u64>,
    /// The namespace cookie.
    #[arg(long)]
    cookie: Option<u64>,
    /// The boot id.
    #[arg(long)]
    boot_id: Option<String>,
}

fn opts(cli: &Context) -> ApplyOptions {
    ApplyOptions {
        state_dir: cli.state_dir.clone(),
        ..Default::default()
    }
}

/// The Unix time in seconds, rounded up.
fn now_rounded_up() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() + u64::from(d.subsec_nanos() > 0))
        .unwrap_or(0)
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Hang-up, interrupt and terminate are held while a transaction runs, so a lost
/// SSH session or a Ctrl-C never stops it between two changes: it finishes (or
/// rolls back) in milliseconds, then the signal takes effect. `SIGKILL` cannot
/// be held; the journal and, with `--confirm-timeout`, the watchdog cover that.
struct HeldSignals(libc::sigset_t);

impl HeldSignals {
    fn hold() -> HeldSignals {
        // SAFETY: sigset manipulation on local values; pthread_sigmask on this thread
        // (threads the transaction starts inherit the mask).
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for s in [libc::SIGHUP, libc::SIGINT, libc::SIGTERM] {
                libc::sigaddset(&mut set, s);
            }
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
            HeldSignals(old)
        }
    }
}

impl Drop for HeldSignals {
    fn drop(&mut self) {
        // SAFETY: restore the mask saved by `hold`; a pending signal is delivered now.
        unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, &self.0, std::ptr::null_mut());
        }
    }
}

/// `roce-net apply`.
pub(crate) fn apply(
    cli: &Context,
    policy: &Option<PathBuf>,
    plan_file: &Option<PathBuf>,
    yes: bool,
    confirm_timeout: Option<u64>,
) -> Result<u8, Error> {
    let h = host(cli)?;
    let timeout = match confirm_timeout {
        Some(s) if s == 0 || s > roce_net::MAX_CONFIRM_TIMEOUT.as_secs() => {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "--confirm-timeout {s} is not between 1 and {} seconds",
                    roce_net::MAX_CONFIRM_TIMEOUT.as_secs()
                ),
            ))
        }
        Some(s) => Some(Duration::from_secs(s)),
        None => None,
    };
    let saved = match plan_file {
        // Bounded, regular files only (a FIFO or /dev/zero is refused at once).
        Some(f) => Some(roce_net::Plan::load(f)?),
        None => None,
    };
    let policy = load_policy(policy)?;
    // Without --yes the user reviews a plan first; that plan is then applied as a
    // saved one (re-made under the lock; refused if what it touches drifted).
    let reviewed = match (&saved, yes) {
        (Some(p), true) => Some(p.clone()),
        (None, true) => None,
        (from, false) => {
            let p = match from {
                Some(p) => p.clone(),
                None => roce_net::plan(&h.snapshot()?, &policy)?,
            };
            if p.is_empty() {
                return nothing_to_do(cli, &p.notes(), from.is_some());
            }
            // Not asked to confirm what it could not do: without CAP_NET_ADMIN
            // exit 77 before the prompt, as `--yes` does before the first change.
            roce_net::require_net_admin("apply")?;
            if !std::io::stdin().is_terminal() {
                return Err(Error::new(
                    ErrorKind::InvalidInput,
                    "apply needs confirmation: review `roce-net plan`, then run with --yes (standard input is not a terminal)",
                ));
            }
            eprint!(
                "{}\nApply these {} change(s)? [y/N] ",
                render::plan(&p),
                p.changes.len()
            );
            let mut answer = String::new();
            let _ = std::io::stdin().read_line(&mut answer);
            if !matches!(answer.trim(), "y" | "Y" | "yes") {
                eprintln!("nothing changed");
                return Ok(exit::DECLINED);
            }
            Some(p)
        }
    };
    let mut o = opts(cli);
    // The dead man's switch is armed, and its watchdog running, before the first
    // change: whatever happens to this process from here on, the watchdog rolls
    // back at the deadline unless `confirm` comes first.
    let mut watchdog_pid = None;
    if let Some(t) = timeout {
        let mut guard = roce_net::arm_confirm(&h, t)?;
        let pid = spawn_watchdog(cli, &guard)?;
        guard.watchdog_pid = Some(pid);
        watchdog_pid = Some((pid, guard.apply_id.clone()));
        o.guard = Some(guard);
    }
    // From here this process works on this one namespace: enter it on the main
    // thread, so the transaction runs here instead of on a worker thread that
    // enters it. Not before: the watchdog started above must not start inside
    // the namespace (it would keep a deleted namespace alive until its deadline).
    h.target().enter()?;
    let held = HeldSignals::hold();
    let res = match &reviewed {
        Some(p) => roce_net::apply(&h, p, &o),
        None => roce_net::apply_policy(&h, &policy, &o),
    };
    let report = match res {
        Ok(r) => r,
        Err(e) => {
            if let Some((pid, id)) = watchdog_pid {
                stop_idle_watchdog(&h, &o, pid, &id);
            }
            // Keep the signals held until the error is reported and the process
            // exits with its code.
            std::mem::forget(held);
            return Err(e);
        }
    };
    if report.applied == 0 && report.apply_id.is_none() {
        if let Some((pid, id)) = watchdog_pid {
            stop_idle_watchdog(&h, &o, pid, &id);
        }
        let r = nothing_to_do(cli, &report.notes, reviewed.is_some());
        drop(held);
        return r;
    }
    if cli.json {
        print_json(&report)?;
    } else {
        let mut s = format!("applied {} change(s), verified:\n", report.applied);
        for c in &report.changes {
            let _ = writeln!(s, "  {c}");
        }
        // Each NIC's gratuitous ARP: peers that learned a wrong MAC heal now.
        for a in &report.announced {
            let _ = writeln!(s, "{a}");
        }
        // What the plan applied under the lock kept (shared table names),
        // unless the prompt showed it already.
        if yes {
            s.push_str(&render::notes(&report.notes));
        }
        if let Some(d) = report.confirm_deadline {
            let _ = writeln!(
                s,
                "run `{} confirm` within {}s to keep it; otherwise it is rolled back",
                command_prefix(cli),
                // Whole seconds surely left: the deadline is rounded up to
                // the second, so the time now is too (never more than asked).
                d.saturating_sub(now_rounded_up())
            );
        }
        out(&s);
    }
    drop(held);
    Ok(exit::OK)
}

/// Nothing to apply: the host already matches the policy, or (`saved`) the
/// reviewed plan is already in effect; exit 0, nothing done, no journal.
fn nothing_to_do(cli: &Context, notes: &[String], saved: bool) -> Result<u8, Error> {
    if cli.json {
        // The keys of every `apply --json` document (ApplyReport's), null
        // where there is nothing: no journal is written when nothing changes.
        print_json(&serde_json::json!({
            "applied": 0,
            "changes": [],
            "confirm_deadline": null,
            "journal": null,
            "apply_id": null,
            "notes": notes,
            "announced": Vec::<String>::new(),
        }))?;
    } else {
        out(if saved {
            "nothing to do: the host already matches the plan (nothing was changed)"
        } else {
            "nothing to do: the host already matches the policy"
        });
    }
    Ok(exit::OK)
}

/// After an apply that wrote no journal for the watchdog's apply id (refused
/// before the first change), end that watchdog: it has nothing to guard. One
/// whose apply started stays, and ends by itself once the journal is final.
fn stop_idle_watchdog(h: &roce_net::Host, o: &ApplyOptions, pid: u32, apply_id: &str) {
    let started = matches!(roce_net::apply_status(h, o), Ok(Some(j)) if j.apply_id == apply_id);
    if !started {
        if let Ok(pid) = libc::pid_t::try_from(pid) {
            // SAFETY: kill(2) of the child this process started.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
    }
}

/// Start the confirm-timeout watchdog as a detached process (its own session, so
/// it survives the SSH session that ran `apply`), guarding `g`.
fn spawn_watchdog(cli: &Context, g: &ConfirmGuard) -> Result<u32, Error> {
    use std::os::unix::process::CommandExt;
    let exe =
        std::env::current_exe().map_err(|e| Error::io(e, "finding the roce-net executable"))?;
    let mut cmd = std::process::Command::new(exe);
    if let Some(n) = &cli.netns {
        cmd.arg("--netns").arg(n);
    }
    if let Some(r) = &cli.etc_root {
        cmd.arg("--etc-root").arg(r);
    }
    cmd.arg("--state-dir")
        .arg(&cli.state_dir)
        .arg("__watchdog")
        .arg("--apply-id")
        .arg(&g.apply_id)
        .arg("--deadline")
        .arg(g.deadline.to_string())
        .arg("--cookie")
        .arg(g.namespace.cookie.to_string())
        .arg("--boot-id")
        .arg(&g.namespace.boot_id);
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: setsid is async-signal-safe; called in the child before exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    cmd.spawn().map(|c| c.id()).map_err(|e| {
        Error::io(
            e,
            "starting the confirm-timeout watchdog; nothing was changed",
        )
    })
}

/// `roce-net __watchdog`.
pub(crate) fn watchdog(cli: &Context, a: &WatchdogArgs) -> Result<u8, Error> {
    // Before any thread starts: every thread inherits the mask.
    let stop = roce_net::stop_on_signals();
    let mut o = opts(cli);
    if let (Some(apply_id), Some(deadline), Some(cookie), Some(boot_id)) =
        (&a.apply_id, a.deadline, a.cookie, &a.boot_id)
    {
        o.guard = Some(ConfirmGuard {
            apply_id: apply_id.clone(),
            deadline,
            boot_deadline_ms: None,
            namespace: NamespaceId {
                cookie,
                boot_id: boot_id.clone(),
            },
            watchdog_pid: Some(std::process::id()),
        });
    }
    let outcome = roce_net::watchdog_until(&host(cli)?, &o, stop)?;
    if cli.json {
        print_json(&outcome)?;
    }
    Ok(exit::OK)
}

/// `roce-net confirm`.
pub(crate) fn confirm(cli: &Context) -> Result<u8, Error> {
    roce_net::confirm(&host(cli)?, &opts(cli))?;
    if cli.json {
        print_json(&serde_json::json!({"confirmed": true}))?;
    } else {
        out("confirmed: the last apply is kept");
    }
    Ok(exit::OK)
}

/// `roce-net rollback`.
pub(crate) fn rollback(cli: &Context) -> Result<u8, Error> {
    let held = HeldSignals::hold();
    let r = match roce_net::rollback(&host(cli)?, &opts(cli)) {
        Ok(r) => r,
        Err(e) => {
            std::mem::forget(held);
            return Err(e);
        }
    };
    if cli.json {
        print_json(&r)?;
    } else {
        let mut s = format!("rolled back the last apply (it was {}):\n", r.was);
        for u in &r.undone {
            let _ = writeln!(s, "  {u}");
        }
        if !r.restored_files.is_empty() {
            s.push_str("and the boot configuration persisted for it:\n");
            for u in &r.restored_files {
                let _ = writeln!(s, "  {u}");
            }
        }
        out(&s);
    }
    drop(held);
    Ok(exit::OK)
}

/// `roce-net archive`.
pub(crate) fn archive(cli: &Context) -> Result<u8, Error> {
    let r = roce_net::archive_journal(&host(cli)?, &opts(cli))?;
    if cli.json {
        print_json(&r)?;
    } else {
        match &r.journal {
            None if r.log.is_none() => out("no journal for this namespace: nothing to archive"),
            _ => {
                let mut s = format!("archived the journal (it was {}):\n", r.state);
                for p in r.journal.iter().chain(r.log.iter()) {
                    let _ = writeln!(s, "  {}", p.display());
                }
                s.push_str("the next apply starts afresh; nothing on the host was changed\n");
                out(&s);
            }
        }
    }
    Ok(exit::OK)
}

/// `roce-net status`.
pub(crate) fn status(cli: &Context) -> Result<u8, Error> {
    let j = roce_net::apply_status(&host(cli)?, &opts(cli))?;
    if cli.json {
        print_json(&j)?;
    } else {
        // The watchdog's and the failure's messages come from the library.
        let prefix = command_prefix(cli);
        out(&localize_hints(&journal_text(j.as_ref()), &prefix));
    }
    Ok(exit::OK)
}

/// The human `status` text.
/// Commands are named as `` `roce-net VERB` ``; the caller completes them
/// ([`localize_hints`]).
fn journal_text(j: Option<&Journal>) -> String {
    use roce_net::{JournalState, StepStatus};
    let Some(j) = j else {
        return "no apply recorded in this namespace\n".into();
    };
    let t = now();
    let when = |at: u64| roce_net::relative_time(at, t);
    let state = match &j.state {
        JournalState::Applying => match j.confirm_deadline {
            Some(_) if j.watchdog.as_ref().and_then(|w| w.running()) == Some(false) => {
                "applying: did not finish (crashed or killed?), and its watchdog is not \
                 running; run `roce-net rollback`"
                    .to_string()
            }
            Some(d) => format!(
                "applying: did not finish (crashed or killed?); its watchdog rolls it back at {}, \
                 or run `roce-net rollback` now",
                when(d)
            ),
            None => {
                "applying: did not finish (crashed or killed?); run `roce-net rollback`".to_string()
            }
        },
        JournalState::PendingConfirm { deadline }
            if j.watchdog.as_ref().and_then(|w| w.running()) == Some(false) =>
        {
            format!(
                "applied, awaiting `roce-net confirm` until {}; its watchdog is not running, \
                 so it is not rolled back by itself",
                when(*deadline)
            )
        }
        JournalState::PendingConfirm { deadline } => format!(
            "applied, awaiting `roce-net confirm` until {}, then rolled back",
            when(*deadline)
        ),
        JournalState::Committed => "applied and kept".to_string(),
        JournalState::RollingBack => {
            "rolling back: did not finish (killed?); run `roce-net rollback` again".to_string()
        }
        JournalState::RolledBack => "rolled back".to_string(),
        JournalState::RollbackFailed => "rollback FAILED: the host may be in a mixed state; fix \
             the cause and run `roce-net rollback` again, or `roce-net archive` to keep the \
             journal aside"
            .to_string(),
    };
    let count = |st: StepStatus| j.steps.iter().filter(|s| s.status == st).count();
    let mut s = format!(
        "last apply {} (started {}) in {}: {state}\n{} change(s): {} done, {} started, {} undone, {} not started, {} already in place\n",
        j.apply_id,
        when(j.started_at),
        j.namespace,
        j.steps.len(),
        count(StepStatus::Done),
        count(StepStatus::Started),
        count(StepStatus::Undone),
        count(StepStatus::Pending),
        count(StepStatus::Skipped),
    );
    if let Some(f) = &j.failure {
        let _ = writeln!(s, "failed: {f}");
    }
    for e in &j.errors {
        let _ = writeln!(s, "not restored: {e}");
    }
    if let Some(w) = &j.watchdog {
        let pid = w.pid.map(|p| format!(" (pid {p})")).unwrap_or_default();
        match (&w.outcome, &w.message) {
            (Some(o), m) => {
                let _ = writeln!(
                    s,
                    "watchdog{pid}: {o}{}{}",
                    w.at.map(|a| format!(" at {}", when(a))).unwrap_or_default(),
                    m.as_deref().map(|m| format!(": {m}")).unwrap_or_default()
                );
            }
            // Killed (or ended with the session) before it recorded anything:
            // nothing will roll this apply back by itself.
            (None, _) if j.state.is_open() && w.running() == Some(false) => {
                let _ = writeln!(
                    s,
                    "watchdog{pid}: NOT running (killed?): nothing rolls this apply back by \
                     itself; run `roce-net rollback` to restore the host{}",
                    if matches!(j.state, JournalState::PendingConfirm { .. }) {
                        ", or `roce-net confirm` to keep it"
                    } else {
                        ""
                    }
                );
            }
            (None, Some(m)) => {
                let _ = writeln!(s, "watchdog{pid}: {m}");
            }
            // Journals written before `stood_down` was recorded: say what the
            // state implies instead of "waiting" for a watchdog long gone.
            (None, None) if !j.state.is_open() => {
                let _ = writeln!(
                    s,
                    "watchdog{pid}: stood down (the apply is {})",
                    j.state.name().replace('_', " ")
                );
            }
            (None, None) => match j.confirm_deadline {
                Some(d) if j.deadline_passed() => {
                    let _ = writeln!(
                        s,
                        "watchdog{pid}: the deadline passed {}; it rolls back once it holds the lock",
                        when(d)
                    );
                }
                _ => {
                    let _ = writeln!(s, "watchdog{pid}: waiting for the deadline");
                }
            },
        }
    }
    s
}
