//! `roce-net check`: the doctor reduced to a health verdict in the conventions
//! the caller expects (docs/health.md): a Nagios plugin's status line and exit
//! code by default, node-problem-detector's one line and exit code with
//! `--format npd`, or the verdict as JSON. Read-only and fast; whatever cannot
//! be read (a namespace, the policy, a cached verdict, the cluster mesh's
//! report) is UNKNOWN, never OK. With `--mesh`, the faults of the cluster
//! mesh's last report that involve this host count too (docs/health.md).

use super::context::{load_policy, state, Context};
use super::exit;
use super::output::{out, print_json};
use roce_net::{HealthStatus, HealthVerdict};
use std::path::{Path, PathBuf};

/// How the verdict is printed.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CheckFormat {
    /// A Nagios plugin: `ROCE-NET <STATUS> - ... | perfdata`, then the
    /// findings; exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.
    Nagios,
    /// A node-problem-detector custom plugin: one line of at most 80 bytes;
    /// exit 0 OK (or warnings only), 1 CRITICAL, 3 UNKNOWN.
    Npd,
}

/// The options of `check` (docs/health.md).
#[derive(clap::Args, Debug)]
pub(crate) struct CheckArgs {
    /// Check a saved snapshot instead of the live host.
    #[arg(long, value_name = "FILE", conflicts_with = "cached")]
    pub(crate) from: Option<PathBuf>,
    /// Policy file: its `health` section says which findings are critical (the
    /// routing fixes are planned with it too); the built-in default when omitted.
    #[arg(
        short = 'f',
        long = "policy",
        value_name = "FILE",
        conflicts_with = "cached"
    )]
    pub(crate) policy: Option<PathBuf>,
    /// nagios (the default) or npd (node-problem-detector).
    #[arg(long, value_enum, default_value = "nagios")]
    pub(crate) format: CheckFormat,
    /// Also write the verdict as JSON to FILE, atomically (what `--cached`
    /// reads; the roce-net-health timer keeps one fresh).
    #[arg(short, long, value_name = "FILE", conflicts_with = "cached")]
    pub(crate) output: Option<PathBuf>,
    /// Print the verdict a `check -o FILE` wrote instead of checking the host
    /// (needs no privilege); UNKNOWN when FILE is missing or older than --max-age.
    #[arg(long, value_name = "FILE")]
    pub(crate) cached: Option<PathBuf>,
    /// With --cached: a verdict older than SECS (1 to 604800) is UNKNOWN.
    #[arg(long, value_name = "SECS", default_value_t = 300, requires = "cached",
          value_parser = clap::value_parser!(u64).range(1..=604_800))]
    pub(crate) max_age: u64,
    /// The cluster mesh's last report (`roce-net mesh report --json`/`-o`, or
    /// `fleet --mesh --json`): its faults involving this host count in the
    /// verdict (mesh-host, mesh-nic, mesh-rail, mesh-pair); a report that
    /// cannot be read, is too old or does not name this host is UNKNOWN.
    #[arg(long, value_name = "FILE", conflicts_with = "cached")]
    pub(crate) mesh: Option<PathBuf>,
    /// With --mesh: this host's name in the mesh (default: its host name, and
    /// `:NETNS` with --netns, as `mesh node` names it).
    #[arg(long, value_name = "NAME", requires = "mesh")]
    pub(crate) mesh_host: Option<String>,
    /// With --mesh: a report whose last run ended more than SECS ago (60 to
    /// 2678400) is UNKNOWN.
    #[arg(long, value_name = "SECS", default_value_t = 86_400, requires = "mesh",
          value_parser = clap::value_parser!(u64).range(60..=2_678_400))]
    pub(crate) mesh_max_age: u64,
}

/// `check [--from FILE] [-f POLICY] [--format nagios|npd] [-o FILE]
/// [--mesh FILE [--mesh-host NAME] [--mesh-max-age SECS]] [--cached FILE [--max-age SECS]]`.
pub(super) fn run(cx: &Context, a: &CheckArgs) -> u8 {
    if cx.json && a.format == CheckFormat::Npd {
        return usage_unknown(
            "check: --json and --format npd are two formats; give one",
            a.format,
            true,
        );
    }
    let mut verdict = match &a.cached {
        Some(file) => cached(file, a.max_age),
        None => check(cx, a),
    };
    if let Some(file) = &a.output {
        if let Err(e) = write_verdict(file, &verdict) {
            verdict = HealthVerdict::unknown(&verdict.host, verdict.netns.as_deref(), e);
        }
    }
    print(&verdict, a.format, cx.json)
}

/// The verdict of the live host (or `--from`'s snapshot) under the policy.
fn check(cx: &Context, a: &CheckArgs) -> HealthVerdict {
    let unknown = |e: roce_net::Error| {
        HealthVerdict::unknown(&roce_net::hostname(), cx.netns.as_deref(), e.to_string())
    };
    let policy = match load_policy(&a.policy)
        .and_then(|p| roce_net::validate_health_policy(&p.health).map(|()| p))
    {
        Ok(p) => p,
        Err(e) => return unknown(e),
    };
    let health = policy.health.clone();
    let verdict = match state(cx, &a.from) {
        Ok(st) => {
            let mut opts = roce_net::DoctorOptions::default();
            opts.policy = Some(policy);
            let findings = roce_net::doctor_with(&st, &opts);
            roce_net::health_verdict(&st, &findings, &health)
        }
        // The mesh may still find the host broken: CRITICAL wins over UNKNOWN.
        Err(e) => unknown(e),
    };
    match &a.mesh {
        Some(file) => with_mesh(verdict, file, a, &health),
        None => verdict,
    }
}

/// The verdict with the mesh report in `file` counted: the faults involving
/// this host (by `--mesh-host`, else the name `mesh node` gives it).
fn with_mesh(
    v: HealthVerdict,
    file: &Path,
    a: &CheckArgs,
    policy: &roce_net::HealthPolicy,
) -> HealthVerdict {
    let host = match (&a.mesh_host, &v.netns) {
        (Some(h), _) => h.clone(),
        (None, Some(ns)) => format!("{}:{ns}", v.host),
        (None, None) => v.host.clone(),
    };
    let source = file.display().to_string();
    match roce_net::MeshReport::load(file) {
        Ok(r) => v.with_mesh(&r, &source, &host, a.mesh_max_age, now(), policy),
        Err(e) => {
            let why = format!("cannot use the mesh report: {e}");
            v.with_unreadable_mesh(&source, &host, a.mesh_max_age, why)
        }
    }
}

/// The verdict `check -o` cached in `file`, UNKNOWN when it cannot be read or
/// is older than `max_age` seconds.
fn cached(file: &Path, max_age: u64) -> HealthVerdict {
    let shown = file.display().to_string();
    let unknown = |why: String| HealthVerdict::unknown("", None, why);
    let text = match roce_net::read_input_text(file, roce_net::InputKind::HealthVerdict) {
        Ok(t) => t,
        Err(e) => return unknown(e.to_string()),
    };
    match serde_json::from_str::<HealthVerdict>(&text) {
        Ok(v) => v.expire(max_age, now(), &shown),
        Err(e) => unknown(format!(
            "{shown}: not a verdict `roce-net check -o` wrote: {e}"
        )),
    }
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The verdict as JSON to `file`, whole or not at all, never through a link.
fn write_verdict(file: &Path, v: &HealthVerdict) -> Result<(), String> {
    let mut text = serde_json::to_string_pretty(v)
        .map_err(|e| format!("cannot write the verdict to {}: {e}", file.display()))?;
    text.push('\n');
    roce_net::write_file_atomically(file, text.as_bytes()).map_err(|e| e.to_string())
}

/// Print the verdict in its format; the exit code for it.
fn print(v: &HealthVerdict, format: CheckFormat, json: bool) -> u8 {
    if json {
        if let Err(e) = print_json(v) {
            eprintln!("roce-net: error: {e}");
            return exit::for_health(HealthStatus::Unknown, false);
        }
        return exit::for_health(v.status, false);
    }
    match format {
        CheckFormat::Nagios => out(&v.nagios()),
        CheckFormat::Npd => out(&v.npd_line()),
    }
    exit::for_health(v.status, format == CheckFormat::Npd)
}

/// A command line that did not parse, when its verb is `check`: UNKNOWN in the
/// caller's conventions (a monitoring system reads any other code as a verdict:
/// Nagios takes an out-of-range code for CRITICAL), the parser's message on
/// standard error.
pub(super) fn usage_unknown(text: &str, format: CheckFormat, json: bool) -> u8 {
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("usage")
        .trim_start_matches("error: ");
    eprintln!("roce-net: {}", text.trim_end());
    let v = HealthVerdict::unknown("", None, format!("bad command line: {first}"));
    print(&v, format, json)
}

/// Whether a command line that did not parse asks for `check`, and in which
/// format, read as the parser would: the first word that is neither an option
/// nor the value of a global option that takes one.
pub(super) fn asked_for(args: &[std::ffi::OsString]) -> Option<(CheckFormat, bool)> {
    const WITH_VALUE: &[&str] = &["--netns", "--sysfs-root", "--etc-root", "--state-dir"];
    let words: Vec<&str> = args.iter().filter_map(|a| a.to_str()).collect();
    let mut i = 0;
    let verb = loop {
        let w = *words.get(i)?;
        if WITH_VALUE.contains(&w) {
            i += 2;
        } else if w.starts_with('-') {
            i += 1;
        } else {
            break w;
        }
    };
    if verb != "check" {
        return None;
    }
    let npd = words.windows(2).any(|w| w == ["--format", "npd"]) || words.contains(&"--format=npd");
    let format = if npd {
        CheckFormat::Npd
    } else {
        CheckFormat::Nagios
    };
    Some((format, words.contains(&"--json")))
}
