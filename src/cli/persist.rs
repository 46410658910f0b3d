//! `roce-net persist`: the fix rendered as boot-persistent configuration for
//! the stack that manages each NIC, written (or shown, or removed).

use super::context::{command_prefix, host, load_policy, Context};
use super::exit;
use super::output::{localize_hints, out, print_json};
use crate::render;
use roce_net::{Backend, Error, PersistRoot};
use std::path::{Path, PathBuf};

/// `persist [-f POLICY] [--backend B] [--dry-run] [--remove] [--switch-backend] [--root DIR]`.
pub(super) fn run(
    cli: &Context,
    policy: &Option<PathBuf>,
    backend: Option<Backend>,
    dry_run: bool,
    remove: bool,
    switch_backend: bool,
    root: &Path,
) -> Result<u8, Error> {
    let mut target = PersistRoot::new(root);
    if let Some(e) = &cli.etc_root {
        target = target.with_etc(e);
    }
    if remove {
        return remove_all(cli, &target, dry_run);
    }
    let policy = load_policy(policy)?;
    let h = host(cli)?;
    let opts = roce_net::ApplyOptions {
        state_dir: cli.state_dir.clone(),
        ..Default::default()
    };
    if !dry_run {
        // Nothing is persisted for an apply that is not settled: files
        // written now would bring an unconfirmed change back at the next boot
        // (checked again under the namespace's lock when writing).
        roce_net::refuse_persist_while_unsettled(&h, &opts)?;
    }
    let st = h.snapshot()?;
    let desired = roce_net::desired_state(&st, &policy)?;
    let chosen = chosen_backend(backend, &policy);
    let plan = roce_net::prepare_persistence(&desired, &st, &target, chosen)?;
    // Written under the namespace's lock; what changed is recorded for a
    // rollback of the last apply to put back.
    let done = roce_net::persist_for_apply(&h, &opts, &plan, &target, switch_backend, dry_run)?;
    let (report, stale) = (done.report, done.stale);
    if cli.json {
        print_json(&serde_json::json!({
            "backend": plan.backend.name(),
            "reason": plan.reason,
            "warnings": plan.warnings,
            "config": plan.config,
            "files": plan.files,
            "report": report,
            "stale": stale,
            "recorded": done.recorded,
        }))?;
    } else {
        let hint = persist_hints(cli, root, &target, dry_run);
        // Every path shown is where the file is on disk: under --etc-root or
        // --root, not the /etc a user who gave them means to stay off.
        let place = |p: &Path| target.on_disk(p).unwrap_or_else(|_| p.to_path_buf());
        let mut text = render::persist(&plan, &report, &stale, &hint, &place);
        if let Some(r) = &done.recorded {
            let line = format!(
                "recorded for the last apply in {}: `roce-net rollback` puts these files back \
                 as they were\n",
                r.display()
            );
            text.push_str(&localize_hints(&line, &command_prefix(cli)));
        }
        out(&text);
    }
    Ok(exit::OK)
}

/// `persist --remove`: every file persist wrote removed, what it replaced put back.
fn remove_all(cli: &Context, target: &PersistRoot, dry_run: bool) -> Result<u8, Error> {
    let report = roce_net::remove_persistence(target, &[], dry_run)?;
    if cli.json {
        print_json(&serde_json::json!({"remove": report}))?;
    } else {
        out(&render::persist_remove(&report));
    }
    Ok(exit::OK)
}

/// The backend asked for and why: `--backend`, else the policy's when it names
/// one; `None` leaves the choice to the host's own configuration.
fn chosen_backend(given: Option<Backend>, policy: &roce_net::Policy) -> Option<(Backend, String)> {
    match given {
        Some(b) => Some((b, "given on the command line".to_string())),
        None => policy
            .persistence
            .backend
            .backend()
            .map(|b| (b, "set in the policy".to_string())),
    }
}

/// The commands `persist`'s notes name, completed to act where it wrote: a
/// `roce-net persist ...` with the global options and `--root`, and the
/// sysctl file's "load it now" as `sysctl -p` of the file written, inside the
/// `--netns` namespace (a bare `sysctl --system` loads the machine's own
/// `/etc/sysctl.d` into the machine's own namespace). In a dry run nothing was
/// written: the note says the command loads the file once persist writes it.
fn persist_hints<'a>(
    cli: &'a Context,
    root: &'a std::path::Path,
    target: &'a roce_net::PersistRoot,
    dry_run: bool,
) -> impl Fn(&str, Option<&std::path::Path>) -> String + 'a {
    move |text: &str, file: Option<&std::path::Path>| {
        let mut t = text.to_string();
        if root != std::path::Path::new("/") {
            let opt = format!(
                "`roce-net persist --root {}",
                roce_net::shell_word(&root.to_string_lossy())
            );
            t = t.replace("`roce-net persist", &opt);
        }
        t = localize_hints(&t, &command_prefix(cli));
        let local = file.and_then(|f| target.on_disk(f).ok().map(|d| (f, d)));
        match local {
            Some((f, disk)) if cli.netns.is_some() || disk != f => {
                let mut cmd = String::new();
                if let Some(ns) = &cli.netns {
                    cmd = format!("ip netns exec {} ", roce_net::shell_word(ns));
                }
                cmd.push_str("sysctl -p ");
                cmd.push_str(&roce_net::shell_word(&disk.to_string_lossy()));
                load_now(&t, &format!("`{cmd}`"), dry_run)
            }
            _ => load_now(&t, "`sysctl --system`", dry_run),
        }
    }
}

/// A note's "run `sysctl --system` to load it now" with `cmd` as the command;
/// in a dry run, which wrote nothing, said as what loads the file once written.
fn load_now(note: &str, cmd: &str, dry_run: bool) -> String {
    const RUN: &str = "run `sysctl --system` to load it now";
    if dry_run {
        note.replace(
            RUN,
            &format!("once persist has written it (run without --dry-run), {cmd} loads it"),
        )
    } else {
        note.replace("`sysctl --system`", cmd)
    }
}
