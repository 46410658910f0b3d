//! Argument parsing and dispatch.

use crate::render;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use roce_net::{Error, ErrorKind, Host, HostState};
use std::io::{IsTerminal, Write};
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::time::Duration;

/// Exit codes (documented in docs/cli.md).
pub mod exit {
    /// Success; `doctor`: no findings above info.
    pub const OK: u8 = 0;
    /// `doctor`: warnings found.
    pub const WARNINGS: u8 = 1;
    /// `doctor`: errors found.
    pub const ERRORS: u8 = 2;
    /// Bad command line.
    pub const USAGE: u8 = 64;
    /// Bad input data (snapshot, policy, address).
    pub const DATA: u8 = 65;
    /// A named object does not exist (namespace, file, interface).
    pub const NOT_FOUND: u8 = 66;
    /// Not permitted: run as root.
    pub const PERMISSION: u8 = 77;
    /// Another apply holds the lock.
    pub const LOCKED: u8 = 75;
    /// The host drifted since the plan was made.
    pub const DRIFT: u8 = 73;
    /// Apply failed and was rolled back; nothing changed.
    pub const ROLLED_BACK: u8 = 3;
    /// Rollback failed: the host may be in a mixed state.
    pub const ROLLBACK_FAILED: u8 = 4;
    /// Anything else (kernel refused, I/O).
    pub const FAILURE: u8 = 70;
    /// The user declined at the prompt.
    pub const DECLINED: u8 = 5;
    /// A probe ran and what it found is wrong: `probe rdma`, RDMA failed (the
    /// report says the likely cause); `probe arp`, no MAC or more than one (ARP
    /// flux) answered.
    pub const PROBE_FAILED: u8 = 6;
    /// RDMA is unavailable here: no libibverbs, no kernel support, no devices, no
    /// /dev/infiniband, or a build without the `verbs` feature (EX_UNAVAILABLE).
    pub const NO_RDMA: u8 = 69;
}

#[derive(Parser, Debug)]
#[command(
    name = "roce-net",
    version,
    about = "Diagnose and fix host networking on multi-NIC RoCE/RDMA servers",
    long_about = None
)]
pub(crate) struct Cli {
    /// Work inside this named network namespace (as `ip -n NAME`).
    #[arg(long, global = true, value_name = "NAME")]
    pub(crate) netns: Option<String>,
    /// Read RDMA devices from DIR/class/infiniband instead of /sys.
    #[arg(long, global = true, value_name = "DIR")]
    pub(crate) sysfs_root: Option<PathBuf>,
    /// Use DIR instead of /etc: iproute2's table names (DIR/iproute2), and for
    /// `persist` every configuration file it reads or writes under /etc.
    #[arg(long, global = true, value_name = "DIR")]
    pub(crate) etc_root: Option<PathBuf>,
    /// Where apply keeps its locks and journals.
    #[arg(long, global = true, value_name = "DIR", default_value = roce_net::DEFAULT_STATE_DIR)]
    pub(crate) state_dir: PathBuf,
    /// Whether `--state-dir` was given (not its default).
    #[arg(skip)]
    pub(crate) state_dir_given: bool,
    /// Machine-readable JSON output.
    #[arg(long, global = true)]
    pub(crate) json: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
#[command(defer = true)]
enum Cmd {
    /// NICs (in the spirit of ibdev2netdev), GIDs, rules, non-main tables, neighbours.
    Show {
        /// Show a saved snapshot instead of the live host.
        #[arg(long, value_name = "FILE")]
        from: Option<PathBuf>,
    },
    /// GID tables exactly as mlnx-tools' show_gids prints them (`show_gids [DEV [PORT]]`).
    Gids {
        /// Only this RDMA device.
        device: Option<String>,
        /// Only this port of the device.
        port: Option<u32>,
        /// Show a saved snapshot instead of the live host.
        #[arg(long, value_name = "FILE")]
        from: Option<PathBuf>,
    },
    /// RDMA ports and their netdevs as OFED's ibdev2netdev prints them.
    Ibdev2netdev {
        /// Also print PCI address, device id, part number, product name, firmware, port state.
        #[arg(short, long)]
        verbose: bool,
        /// Show a saved snapshot instead of the live host.
        #[arg(long, value_name = "FILE")]
        from: Option<PathBuf>,
    },
    /// Capture the whole host state as JSON (compact; see docs/cli.md, "Snapshot schema").
    Snapshot {
        /// Write to FILE instead of standard output (gzip-compressed when FILE ends in `.gz`).
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Indented JSON for people, instead of compact JSON.
        #[arg(long)]
        pretty: bool,
        /// gzip-compress the output (implied by `-o FILE.gz`).
        #[arg(long)]
        compress: bool,
        /// Also read the devices through libibverbs (the verbs view), for the
        /// doctor's verbs-sysfs-mismatch check.
        #[arg(long)]
        verbs: bool,
    },
    /// RDMA devices, ports and GID tables as libibverbs sees them (exit 69 without RDMA).
    Verbs {
        /// libibverbs to load (soname or path) instead of libibverbs.so.1.
        #[arg(long, value_name = "PATH")]
        libibverbs: Option<PathBuf>,
    },
    /// Ask the kernel which route a flow takes, printed as `ip route get` prints it.
    RouteGet {
        /// Destination address.
        dst: IpAddr,
        /// Source address (`from`).
        #[arg(long = "from", value_name = "SRC")]
        src: Option<IpAddr>,
        /// Look up as if the packet arrived on this interface (`iif`).
        #[arg(long, value_name = "DEV")]
        iif: Option<String>,
        /// Output interface (`oif`).
        #[arg(long, value_name = "DEV")]
        oif: Option<String>,
        /// Firewall mark (`mark`; decimal or 0x hex).
        #[arg(long, value_name = "MARK", value_parser = parse_u32_auto)]
        mark: Option<u32>,
        /// IP protocol (`ipproto`): tcp, udp, icmp, ipv6-icmp, sctp, dccp, gre or a number.
        #[arg(long, value_name = "PROTO", value_parser = parse_ipproto)]
        ipproto: Option<u8>,
        /// Source port (`sport`).
        #[arg(long, value_name = "PORT")]
        sport: Option<u16>,
        /// Destination port (`dport`).
        #[arg(long, value_name = "PORT")]
        dport: Option<u16>,
        /// Print as `ip -d route get` (type `unicast`, table `main`).
        #[arg(short, long)]
        details: bool,
    },
    /// Send probes from this host and report what answers.
    Probe {
        #[command(subcommand)]
        what: ProbeCmd,
    },
    /// Show the changes a policy needs on this host, as a reviewable diff.
    Plan {
        /// Policy file (YAML or JSON); the built-in default policy when omitted.
        #[arg(short = 'f', long = "policy", value_name = "FILE")]
        policy: Option<PathBuf>,
        /// Also write the plan as JSON to FILE (for `apply --plan FILE`).
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Apply a policy as a transaction: verify, roll back on any failure.
    Apply {
        /// Policy file (YAML or JSON); the built-in default policy when omitted.
        #[arg(
            short = 'f',
            long = "policy",
            value_name = "FILE",
            conflicts_with = "plan"
        )]
        policy: Option<PathBuf>,
        /// Apply a plan saved with `plan -o FILE` (refused if the host drifted since).
        #[arg(long, value_name = "FILE")]
        plan: Option<PathBuf>,
        /// Do not ask for confirmation.
        #[arg(short, long)]
        yes: bool,
        /// Roll back on its own unless `roce-net confirm` arrives within SECS
        /// (1 to 86400); the watchdog that does it starts before the first change.
        // Bounded where it is parsed: a deadline of "now + 2^64-1 s" used to wrap
        // into the past and roll back at once (issue 8, defect 10). One day is
        // also the Python binding's limit.
        #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
        confirm_timeout: Option<u64>,
    },
    /// Keep an apply made with --confirm-timeout.
    Confirm,
    /// Where the last apply in this namespace stands (from its journal), and what
    /// its confirm watchdog did.
    Status,
    /// Undo the last apply from its journal (also after a crash, a killed apply or
    /// a killed rollback).
    Rollback,
    /// Move this namespace's journal (a failed rollback's, a corrupt one) to the
    /// state directory's archive/, so the next apply starts afresh. Changes nothing
    /// on the host.
    Archive,
    /// Render the fix as boot-persistent configuration and write it.
    Persist {
        /// Policy file; the built-in default policy when omitted.
        #[arg(short = 'f', long = "policy", value_name = "FILE")]
        policy: Option<PathBuf>,
        /// sysctl.d, rt_tables.d, networkd, netplan, networkmanager or ifupdown;
        /// when omitted, the policy's persistence.backend, detected from the
        /// host when that is auto.
        #[arg(long, value_name = "BACKEND", value_parser = parse_backend)]
        backend: Option<roce_net::Backend>,
        /// Show what would be written (or removed), change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Remove every file persist wrote and restore what it replaced.
        #[arg(long, conflicts_with_all = ["policy", "backend"])]
        remove: bool,
        /// Also remove the files an earlier persist wrote for another routing
        /// backend (switching, e.g., from ifupdown to networkd); without it they
        /// are kept and listed. A sysctl.d or rt_tables.d rendering never
        /// removes them.
        #[arg(long, conflicts_with = "remove")]
        switch_backend: bool,
        /// The node's root: read its configuration and write under DIR instead of /
        /// (for review, image building or tests); `--etc-root` moves /etc alone.
        #[arg(long, value_name = "DIR", default_value = "/")]
        root: PathBuf,
    },
    /// Diagnose the host (or a saved snapshot): findings with evidence and the fix.
    Doctor {
        /// Diagnose a saved snapshot instead of the live host.
        #[arg(long, value_name = "FILE")]
        from: Option<PathBuf>,
        /// Policy the routing fixes are planned with; the built-in default policy
        /// (what `apply` uses without one) when omitted.
        #[arg(short = 'f', long = "policy", value_name = "FILE")]
        policy: Option<PathBuf>,
        /// Also compare the devices libibverbs sees with sysfs (live host only).
        #[arg(long, conflicts_with = "from")]
        verbs: bool,
    },
    /// NCCL environment matching this host's RDMA devices and GID tables.
    NcclEnv {
        /// Use a saved snapshot instead of the live host.
        #[arg(long, value_name = "FILE")]
        from: Option<PathBuf>,
        /// Print only `export NAME='value'` lines, shell-quoted (for `eval`).
        #[arg(long, conflicts_with = "check")]
        export: bool,
        /// The NCCL release the job uses (`2.30`, `2.20.5`); default: advice for every release.
        #[arg(long, value_name = "VERSION", value_parser = parse_nccl_version)]
        nccl_version: Option<roce_net::NcclVersion>,
        /// Check the NCCL environment you have (this process's NCCL_* variables, or
        /// --env-file) instead of recommending one; exit code as for doctor.
        #[arg(long)]
        check: bool,
        /// With --check: read the variables from FILE, parsed as NCCL parses nccl.conf.
        #[arg(long, value_name = "FILE", requires = "check")]
        env_file: Option<PathBuf>,
    },
    /// Prometheus text format for node_exporter's textfile collector: findings by
    /// check and severity, NIC and RDMA port state, drop / retransmit / congestion
    /// counters (docs/metrics.md).
    Metrics {
        /// Render a saved snapshot instead of the live host.
        #[arg(long, value_name = "FILE")]
        from: Option<PathBuf>,
        /// Write to FILE atomically (a temporary file in the same directory, then
        /// rename), as the textfile collector requires; name it `*.prom`.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Findings that only show across hosts, from their saved snapshots.
    Fleet {
        /// Snapshot files (`roce-net snapshot -o FILE` on each host).
        #[arg(required = true, value_name = "SNAPSHOT")]
        snapshots: Vec<PathBuf>,
    },
    /// The demo: build a broken multi-NIC host in namespaces, diagnose, fix, show it fixed.
    #[command(
        after_help = "Of the global options, --netns and --sysfs-root are refused here (exit 64): \
                      the lab builds its own namespaces, of veths no RDMA device backs. \
                      --etc-root and --state-dir take the lab's table names and journal."
    )]
    Lab {
        /// Number of host NICs (2 to 64).
        #[arg(long, default_value_t = 4, value_parser = parse_lab_nics)]
        nics: usize,
        /// Keep the lab afterwards for exploration: its namespaces, table names
        /// (`--etc-root`, else a temporary directory) and apply journal
        /// (`--state-dir`, else a temporary directory); prints the commands to
        /// explore, roll back and remove it.
        #[arg(long)]
        keep: bool,
    },
    /// Internal: the confirm-timeout watchdog, started detached by `apply`
    /// before the first change.
    #[command(name = "__watchdog", hide = true)]
    Watchdog(crate::apply_cmd::WatchdogArgs),
}

#[derive(Subcommand, Debug)]
#[command(defer = true)]
enum ProbeCmd {
    /// ARP requests from DEV for TARGET; every distinct MAC that answers.
    Arp {
        /// Device to send from.
        #[arg(long)]
        dev: String,
        /// Address to resolve.
        #[arg(long)]
        target: Ipv4Addr,
        /// Requests to send (1 to 1000).
        #[arg(long, default_value_t = 3)]
        count: u32,
        /// Seconds to listen for replies.
        #[arg(long, default_value_t = 2.0)]
        timeout: f64,
    },
    /// RDMA traffic with a `probe rdma --server` (like ib_write_bw): latency,
    /// bandwidth both ways, or the failure's likely cause.
    Rdma(Box<crate::rdma::RdmaArgs>),
}

/// `persist --backend`: a usage error (exit 64) when it names no backend.
fn parse_backend(s: &str) -> Result<roce_net::Backend, String> {
    s.parse::<roce_net::Backend>().map_err(|e| e.to_string())
}

/// `lab --nics`: 2 to [`roce_net::SEED_MAX_NICS`], else a usage error (exit 64).
fn parse_lab_nics(s: &str) -> Result<usize, String> {
    let max = roce_net::SEED_MAX_NICS;
    match s.parse::<usize>() {
        Ok(n) if (2..=max).contains(&n) => Ok(n),
        _ => Err(format!("{s:?} is not a number of NICs from 2 to {max}")),
    }
}

/// An NCCL release (`2.30`, `2.30.7-1`).
fn parse_nccl_version(s: &str) -> Result<roce_net::NcclVersion, String> {
    roce_net::NcclVersion::parse(s)
        .ok_or_else(|| format!("{s:?} is not an NCCL version (like 2.30 or 2.20.5)"))
}

/// A u32 in decimal or `0x` hex (as iproute2's `get_unsigned(.., 0)`).
fn parse_u32_auto(s: &str) -> Result<u32, String> {
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|_| format!("{s:?} is not a number (decimal or 0x hex) from 0 to 4294967295"))
}

/// An IP protocol name (as `/etc/protocols` names them) or number.
fn parse_ipproto(s: &str) -> Result<u8, String> {
    Ok(match s {
        "icmp" => 1,
        "igmp" => 2,
        "tcp" => 6,
        "udp" => 17,
        "dccp" => 33,
        "ipv6-icmp" | "icmpv6" => 58,
        "gre" => 47,
        "esp" => 50,
        "sctp" => 132,
        "udplite" => 136,
        n => n.parse().map_err(|_| {
            format!("unknown IP protocol {n:?}: use tcp, udp, icmp, ipv6-icmp, sctp, dccp, gre or a number 0-255")
        })?,
    })
}

/// Entry point.
/// Parse the command line, run it, render the outcome; the process's exit code.
pub fn main() -> u8 {
    let parsed = Cli::command().try_get_matches().and_then(|m| {
        let given = m.value_source("state_dir") == Some(clap::parser::ValueSource::CommandLine);
        Cli::from_arg_matches(&m).map(|mut c| {
            c.state_dir_given = given;
            c
        })
    });
    let cli = match parsed {
        Ok(c) => c,
        Err(e) => {
            if !e.use_stderr() {
                // --help, --version
                let _ = e.print();
                return exit::OK;
            }
            // The command line did not parse, so `--json` is looked for as a
            // word of it (before a `--`), as the parser would have taken it.
            let json = std::env::args_os()
                .skip(1)
                .take_while(|a| a != "--")
                .any(|a| a == "--json");
            // clap lists hidden subcommands too when one is missing: leave
            // the internal one out.
            let text = e.render().to_string().replace(", __watchdog", "");
            if json {
                usage_error(&text, true);
            } else {
                eprint!("{text}");
            }
            return exit::USAGE;
        }
    };
    let json = cli.json;
    let prefix = command_prefix(&cli);
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            report_error(&e, json, &prefix);
            exit_code(&e)
        }
    }
}

/// `roce-net` with the global options that pick what a command acts on, as the
/// user gave them (`--netns`, `--etc-root`, a `--state-dir` other than the
/// default), shell-quoted: the command a hint must name so that, run as
/// printed, it acts on the same namespace, state directory and `/etc`.
pub(crate) fn command_prefix(cli: &Cli) -> String {
    let state = (cli.state_dir != std::path::Path::new(roce_net::DEFAULT_STATE_DIR))
        .then_some(cli.state_dir.as_path());
    roce_net_with(cli.netns.as_deref(), cli.etc_root.as_deref(), state)
}

/// `roce-net --netns NS --etc-root DIR --state-dir DIR`, each option only when
/// given, shell-quoted: the one spelling of a command line that acts on one
/// namespace, `/etc` and state directory (hints, the kept lab's commands).
pub(crate) fn roce_net_with(
    netns: Option<&str>,
    etc_root: Option<&std::path::Path>,
    state_dir: Option<&std::path::Path>,
) -> String {
    let mut s = String::from("roce-net");
    if let Some(n) = netns {
        s.push_str(" --netns ");
        s.push_str(&roce_net::shell_word(n));
    }
    if let Some(r) = etc_root {
        s.push_str(" --etc-root ");
        s.push_str(&roce_net::shell_word(&r.to_string_lossy()));
    }
    if let Some(d) = state_dir {
        s.push_str(" --state-dir ");
        s.push_str(&roce_net::shell_word(&d.to_string_lossy()));
    }
    s
}

/// The library's messages name the next command in backquotes (`` `roce-net
/// rollback` ``, `` `roce-net archive` ``): it knows which step comes next, not
/// which global options this command line had. Every such command is
/// completed here with `prefix` (see [`command_prefix`]), so a hint copied as
/// printed acts on the same namespace and state directory.
pub(crate) fn localize_hints(msg: &str, prefix: &str) -> String {
    if prefix == "roce-net" {
        return msg.to_string();
    }
    msg.replace("`roce-net ", &format!("`{prefix} "))
        .replace("`roce-net`", &format!("`{prefix}`"))
}

/// The exit code for an error kind.
pub fn exit_code(e: &Error) -> u8 {
    match e.kind() {
        ErrorKind::Permission => exit::PERMISSION,
        ErrorKind::NotFound => exit::NOT_FOUND,
        ErrorKind::InvalidInput | ErrorKind::Policy | ErrorKind::Parse => exit::DATA,
        ErrorKind::Locked => exit::LOCKED,
        ErrorKind::Drift => exit::DRIFT,
        ErrorKind::RolledBack | ErrorKind::Verify => exit::ROLLED_BACK,
        ErrorKind::RollbackFailed => exit::ROLLBACK_FAILED,
        ErrorKind::NoRdma => exit::NO_RDMA,
        _ => exit::FAILURE,
    }
}

/// A command-line error (exit 64), under `--json` as the documented JSON error
/// (kind `usage`; `message` is the parser's text, its `error: ` label dropped).
fn usage_error(text: &str, json: bool) {
    let text = text.trim_end();
    if json {
        let message = text.strip_prefix("error: ").unwrap_or(text);
        let v = serde_json::json!({
            "error": {
                "kind": "usage",
                "message": message,
                "errno": null,
                "extack": null,
                "causes": [],
            }
        });
        eprintln!("{v}");
    } else {
        eprintln!("roce-net: error: {text}");
    }
}

fn report_error(e: &Error, json: bool, prefix: &str) {
    if json {
        // The chain of causes, outermost first (each with its own kind, errno,
        // kernel text and context).
        let mut causes = Vec::new();
        let mut c = e.cause();
        while let Some(x) = c {
            causes.push(serde_json::json!({
                "kind": x.kind().name(),
                "message": localize_hints(x.message(), prefix),
                "context": x.context_chain(),
                "errno": x.errno_value(),
                "extack": x.extack(),
            }));
            c = x.cause();
        }
        let v = serde_json::json!({
            "error": {
                "kind": e.kind().name(),
                "message": localize_hints(&e.to_string(), prefix),
                "errno": e.errno_value(),
                "extack": e.extack(),
                "causes": causes,
            }
        });
        eprintln!("{v}");
    } else {
        eprintln!(
            "roce-net: error: {}",
            roce_net::terminal_safe(&localize_hints(&e.to_string(), prefix))
        );
    }
}

pub(crate) fn host(cli: &Cli) -> Result<Host, Error> {
    let mut h = match &cli.netns {
        Some(n) => Host::netns(n)?,
        None => Host::current(),
    };
    if let Some(r) = &cli.sysfs_root {
        // A mistyped root would read as a host without RDMA devices.
        if !r.is_dir() {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "--sysfs-root {}: no such directory (give the directory holding class/infiniband)",
                    r.display()
                ),
            ));
        }
        h = h.with_sysfs_root(r.clone());
    }
    if let Some(r) = &cli.etc_root {
        h = h.with_etc_root(r.clone());
    }
    Ok(h)
}

fn state(cli: &Cli, from: &Option<PathBuf>) -> Result<HostState, Error> {
    match from {
        Some(p) => HostState::load(p),
        None => host(cli)?.snapshot(),
    }
}

/// Write `data` to `path` so a reader sees the old file or the whole new one,
/// never a part: a temporary file in the same directory (named so node_exporter's
/// textfile collector, which reads only `*.prom`, skips it), then rename(2) over
/// `path`. The temporary file is removed when anything fails.
fn write_atomic(path: &std::path::Path, data: &[u8]) -> Result<(), Error> {
    let name = path.file_name().ok_or_else(|| {
        Error::new(
            ErrorKind::InvalidInput,
            format!(
                "{}: give a file name to write the metrics to",
                path.display()
            ),
        )
    })?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(data)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io(
            e,
            format!("writing {} (via {})", path.display(), tmp.display()),
        )
    })
}

/// Print text to stdout, every control character in it escaped visibly
/// ([`roce_net::terminal_safe`]: names from the host or a snapshot never reach
/// the terminal raw); a closed pipe (`| head`) is not an error.
pub fn out(s: &str) {
    out_raw(&roce_net::terminal_safe(s));
}

fn out_raw(s: &str) {
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(s.as_bytes());
    if !s.ends_with('\n') {
        let _ = o.write_all(b"\n");
    }
}

/// Print JSON. serde escapes C0 controls in strings; DEL and the C1 codes it
/// leaves raw are written as `\u00XX` escapes too (they only occur in strings).
pub(crate) fn print_json<T: serde::Serialize>(v: &T) -> Result<(), Error> {
    let s = serde_json::to_string_pretty(v)
        .map_err(|e| Error::new(ErrorKind::Io, format!("serialising output: {e}")))?;
    let s = if s.chars().any(|c| ('\u{7f}'..='\u{9f}').contains(&c)) {
        s.chars()
            .map(|c| match c {
                '\u{7f}'..='\u{9f}' => format!("\\u{:04x}", c as u32),
                c => c.to_string(),
            })
            .collect()
    } else {
        s
    };
    out_raw(&s);
    Ok(())
}

fn run(cli: Cli) -> Result<u8, Error> {
    match &cli.cmd {
        Cmd::Show { from } => {
            let st = state(&cli, from)?;
            if cli.json {
                print_json(&st)?;
            } else {
                let source = match (from, &cli.sysfs_root) {
                    (Some(f), _) => format!("the snapshot {}", f.display()),
                    (None, Some(r)) => format!("{}/class/infiniband", r.display()),
                    (None, None) => "/sys/class/infiniband".to_string(),
                };
                out(&render::show(&st, &source));
            }
        }
        Cmd::Gids { device, port, from } => {
            let st = state(&cli, from)?;
            let filter = roce_net::GidFilter {
                device: device.clone(),
                port: *port,
            };
            let rows = roce_net::show_gids(&st, &filter)?;
            if cli.json {
                print_json(&rows)?;
            } else {
                out(&roce_net::render_show_gids(&rows));
            }
        }
        Cmd::Ibdev2netdev { verbose, from } => {
            let st = state(&cli, from)?;
            let rows = roce_net::ibdev2netdev(&st);
            if cli.json {
                print_json(&rows)?;
            } else {
                let text = roce_net::render_ibdev2netdev(&rows, *verbose);
                if !text.is_empty() {
                    out(&text);
                }
            }
        }
        Cmd::Snapshot {
            output,
            pretty,
            compress,
            verbs,
        } => {
            if output.is_none() && *compress && std::io::stdout().is_terminal() {
                return Err(Error::new(
                    ErrorKind::InvalidInput,
                    "refusing to write a compressed snapshot to a terminal; \
                     use -o FILE.json.gz or redirect standard output",
                ));
            }
            let h = host(&cli)?;
            let mut st = h.snapshot()?;
            if *verbs {
                st.verbs = Some(h.verbs_view(&roce_net::VerbsOptions::default()));
            }
            match output {
                Some(p) => {
                    let mut format = roce_net::SnapshotFormat::for_path(p, *pretty);
                    format.gzip |= *compress;
                    st.save(p, format)?;
                }
                None => {
                    let format = roce_net::SnapshotFormat {
                        pretty: *pretty,
                        gzip: *compress,
                    };
                    match st.write_to(std::io::stdout().lock(), format) {
                        // A closed pipe (`| head`) is not an error.
                        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                        r => r.map_err(|e| Error::io(e, "writing snapshot to standard output"))?,
                    }
                }
            }
        }
        Cmd::RouteGet {
            dst,
            src,
            iif,
            oif,
            mark,
            ipproto,
            sport,
            dport,
            details,
        } => {
            let q = roce_net::RouteQuery {
                dst: Some(*dst),
                from: *src,
                iif: iif.clone(),
                oif: oif.clone(),
                mark: *mark,
                ipproto: *ipproto,
                sport: *sport,
                dport: *dport,
            };
            let r = host(&cli)?.route_query(&q)?;
            if cli.json {
                print_json(&r)?;
            } else {
                out(&r.render(*details));
            }
        }
        Cmd::Verbs { libibverbs } => return crate::rdma::verbs(&host(&cli)?, libibverbs, cli.json),
        Cmd::Probe {
            what: ProbeCmd::Rdma(a),
        } => return crate::rdma::probe(&host(&cli)?, a, cli.json),
        Cmd::Probe {
            what:
                ProbeCmd::Arp {
                    dev,
                    target,
                    count,
                    timeout,
                },
        } => {
            if !timeout.is_finite() || *timeout <= 0.0 || *timeout > 3600.0 {
                return Err(Error::new(
                    ErrorKind::InvalidInput,
                    format!(
                        "--timeout must be more than 0 and at most 3600 seconds, not {timeout}"
                    ),
                ));
            }
            let opts = roce_net::ArpProbeOptions::new(*count, Duration::from_secs_f64(*timeout));
            let r = host(&cli)?.probe_arp(dev, *target, opts)?;
            if cli.json {
                print_json(&r)?;
            } else {
                out(&render::arp_probe(dev, *target, &r));
            }
            // One MAC answering is the only healthy outcome: none means the
            // address is unreachable, several mean ARP flux.
            if r.replies.len() != 1 {
                return Ok(exit::PROBE_FAILED);
            }
        }
        Cmd::Plan { policy, output } => {
            let policy = load_policy(policy)?;
            let st = host(&cli)?.snapshot()?;
            let p = roce_net::plan(&st, &policy)?;
            if let Some(o) = output {
                std::fs::write(o, p.to_json() + "\n")
                    .map_err(|e| Error::io(e, format!("writing plan to {}", o.display())))?;
            }
            if cli.json {
                print_json(&p)?;
            } else {
                let mut text = render::plan(&p);
                if !p.is_empty() {
                    text.push_str("review, then apply with `roce-net apply` (same policy) or `roce-net apply --plan FILE`\n");
                }
                out(&localize_hints(&text, &command_prefix(&cli)));
            }
        }
        Cmd::Apply {
            policy,
            plan,
            yes,
            confirm_timeout,
        } => return crate::apply_cmd::apply(&cli, policy, plan, *yes, *confirm_timeout),
        Cmd::Confirm => return crate::apply_cmd::confirm(&cli),
        Cmd::Status => return crate::apply_cmd::status(&cli),
        Cmd::Rollback => return crate::apply_cmd::rollback(&cli),
        Cmd::Archive => return crate::apply_cmd::archive(&cli),
        Cmd::Persist {
            policy,
            backend,
            dry_run,
            remove,
            switch_backend,
            root,
        } => {
            let mut target = roce_net::PersistRoot::new(root);
            if let Some(e) = &cli.etc_root {
                target = target.with_etc(e);
            }
            if *remove {
                let report = roce_net::remove_persistence(&target, &[], *dry_run)?;
                if cli.json {
                    print_json(&serde_json::json!({"remove": report}))?;
                } else {
                    out(&render::persist_remove(&report));
                }
                return Ok(exit::OK);
            }
            let policy = load_policy(policy)?;
            let h = host(&cli)?;
            let st = h.snapshot()?;
            let desired = roce_net::desired_state(&st, &policy)?;
            let chosen = match backend {
                Some(b) => Some((*b, "given on the command line".to_string())),
                None => policy
                    .persistence
                    .backend
                    .backend()
                    .map(|b| (b, "set in the policy".to_string())),
            };
            let plan = roce_net::prepare_persistence(&desired, &st, &target, chosen)?;
            let report = roce_net::write_persistence_at(&plan.files, &target, *dry_run)?;
            let stale =
                roce_net::remove_stale_persistence(&target, &plan, *switch_backend, *dry_run)?;
            if cli.json {
                print_json(&serde_json::json!({
                    "backend": plan.backend.name(),
                    "reason": plan.reason,
                    "warnings": plan.warnings,
                    "config": plan.config,
                    "files": plan.files,
                    "report": report,
                    "stale": stale,
                }))?;
            } else {
                out(&render::persist(&plan, &report, &stale));
            }
        }
        Cmd::Doctor {
            from,
            policy,
            verbs,
        } => {
            let mut st = state(&cli, from)?;
            if *verbs {
                st.verbs = Some(host(&cli)?.verbs_view(&roce_net::VerbsOptions::default()));
            }
            let mut opts = roce_net::DoctorOptions::default();
            if policy.is_some() {
                opts.policy = Some(load_policy(policy)?);
            }
            let findings = roce_net::doctor_with(&st, &opts);
            if cli.json {
                print_json(&serde_json::json!({
                    "host": st.hostname,
                    "netns": st.netns,
                    "summary": roce_net::summarize(&findings),
                    "findings": findings,
                }))?;
            } else {
                out(&render::doctor(&st, &findings));
            }
            return Ok(match roce_net::max_severity(&findings) {
                Some(roce_net::Severity::Error) => exit::ERRORS,
                Some(roce_net::Severity::Warning) => exit::WARNINGS,
                _ => exit::OK,
            });
        }
        Cmd::NcclEnv {
            from,
            export,
            nccl_version,
            check,
            env_file,
        } => {
            let st = state(&cli, from)?;
            let opts = roce_net::NcclOptions::for_version(*nccl_version);
            if *check {
                let env = match env_file {
                    Some(p) => roce_net::NcclEnv::parse_conf(&roce_net::read_input_text(
                        p,
                        roce_net::InputKind::NcclConf,
                    )?),
                    None => roce_net::NcclEnv::from_process(),
                };
                let findings = roce_net::nccl_check(&st, &env, &opts);
                if cli.json {
                    print_json(&findings)?;
                } else {
                    out(&render::nccl_check(&env, &findings));
                }
                return Ok(match roce_net::max_severity(&findings) {
                    Some(roce_net::Severity::Error) => exit::ERRORS,
                    Some(roce_net::Severity::Warning) => exit::WARNINGS,
                    _ => exit::OK,
                });
            }
            let advice = roce_net::nccl_env_with(&st, &opts);
            if cli.json {
                print_json(&advice)?;
            } else if *export {
                let lines: Vec<String> = advice
                    .env_lines()
                    .iter()
                    .map(|l| match l.split_once('=') {
                        Some((k, v)) => format!("export {k}='{}'", v.replace('\'', "'\\''")),
                        None => l.clone(),
                    })
                    .collect();
                out(&lines.join("\n"));
            } else {
                out(&render::nccl(&advice));
            }
        }
        Cmd::Metrics { from, output } => {
            if cli.json {
                // Its one format is the Prometheus text format; a JSON
                // reader given it would fail on the first line.
                usage_error(
                    "metrics has no --json: it writes the Prometheus text format \
                     (the findings as JSON: `roce-net --json doctor`)",
                    true,
                );
                return Ok(exit::USAGE);
            }
            let st = state(&cli, from)?;
            let text = roce_net::render_metrics(&st, &roce_net::doctor(&st));
            match output {
                Some(p) => write_atomic(p, text.as_bytes())?,
                None => out(&text),
            }
        }
        Cmd::Fleet { snapshots } => {
            // Each snapshot is summarised as it is loaded, one per core at a time.
            let mut fleet = roce_net::FleetBuilder::new(&roce_net::DoctorOptions::default());
            let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
            fleet.add_files(snapshots, threads)?;
            let report = fleet.finish();
            if cli.json {
                print_json(&report)?;
            } else {
                out(&render::fleet(&report));
            }
            // The worst of the cross-host findings and of every host's own: a
            // fleet whose table shows a host with errors does not exit 0.
            let worst = roce_net::max_severity(&report.findings)
                .max(report.hosts.iter().filter_map(|h| h.max_severity).max());
            return Ok(match worst {
                Some(roce_net::Severity::Error) => exit::ERRORS,
                Some(roce_net::Severity::Warning) => exit::WARNINGS,
                _ => exit::OK,
            });
        }
        Cmd::Lab { nics, keep } => {
            // The lab builds its own namespaces, and its NICs are veths with no
            // RDMA devices: a --netns or --sysfs-root would be ignored, and the
            // user would think the lab ran (or left its host) there.
            let refused = if cli.netns.is_some() {
                Some(
                    "`lab` builds its own namespaces (rnt-demo-*) and does not take --netns; \
                     drop it (with --keep the lab prints the namespace to use)",
                )
            } else if cli.sysfs_root.is_some() {
                Some(
                    "`lab` does not take --sysfs-root: its NICs are veths, which no RDMA \
                     device of a sysfs tree backs; drop it (use --sysfs-root with `doctor` or \
                     `snapshot` to read such a tree)",
                )
            } else {
                None
            };
            if let Some(why) = refused {
                if cli.json {
                    usage_error(why, true);
                } else {
                    let _ = Cli::command()
                        .error(clap::error::ErrorKind::ArgumentConflict, why)
                        .print();
                }
                return Ok(exit::USAGE);
            }
            let dirs = crate::demo::LabDirs {
                etc_root: cli.etc_root.as_deref(),
                state_dir: cli.state_dir_given.then_some(cli.state_dir.as_path()),
            };
            return crate::demo::run(*nics, *keep, cli.json, &dirs);
        }
        Cmd::Watchdog(args) => return crate::apply_cmd::watchdog(&cli, args),
    }
    Ok(exit::OK)
}

pub(crate) fn load_policy(path: &Option<PathBuf>) -> Result<roce_net::Policy, Error> {
    match path {
        Some(p) => roce_net::Policy::load(p),
        None => Ok(roce_net::Policy::default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Subcommands are defined lazily (`defer`: only the one given is built, so
    /// `roce-net apply` does not build the options of every other command). Clap
    /// checks a definition only when it is built: build and check them all here.
    #[test]
    fn every_subcommand_definition_is_valid() {
        Cli::command().debug_assert();
        let mut cmd = Cli::command();
        cmd.build();
        let names: Vec<&str> = cmd.get_subcommands().map(|c| c.get_name()).collect();
        for name in [
            "show", "apply", "probe", "persist", "doctor", "plan", "rollback",
        ] {
            assert!(names.contains(&name), "{name} missing from {names:?}");
        }
        let probe = cmd.find_subcommand("probe").expect("probe");
        assert!(probe.get_subcommands().any(|c| c.get_name() == "arp"));
        let apply = cmd.find_subcommand("apply").expect("apply");
        assert!(apply
            .get_arguments()
            .any(|a| a.get_id() == "confirm_timeout"));
    }

    /// Global options reach a deferred subcommand before and after its name, and
    /// its own options and their checks still apply.
    #[test]
    fn deferred_subcommands_parse_as_before() {
        let cli = Cli::try_parse_from([
            "roce-net",
            "--netns",
            "a",
            "apply",
            "--yes",
            "--json",
            "--state-dir",
            "/x",
            "--confirm-timeout",
            "30",
        ])
        .expect("parses");
        assert_eq!(cli.netns.as_deref(), Some("a"));
        assert!(cli.json);
        assert_eq!(cli.state_dir, PathBuf::from("/x"));
        match cli.cmd {
            Cmd::Apply {
                yes,
                confirm_timeout,
                ..
            } => assert!(yes && confirm_timeout == Some(30)),
            other => panic!("parsed as {other:?}"),
        }
        let e = Cli::try_parse_from(["roce-net", "apply", "--confirm-timeout", "0"])
            .expect_err("out of range");
        assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation);
        let e = Cli::try_parse_from(["roce-net", "apply", "-f", "p", "--plan", "q"])
            .expect_err("conflict");
        assert_eq!(e.kind(), clap::error::ErrorKind::ArgumentConflict);
        let e = Cli::try_parse_from(["roce-net", "probe", "arp", "--dev", "x"])
            .expect_err("missing --target");
        assert_eq!(e.kind(), clap::error::ErrorKind::MissingRequiredArgument);
        let help = Cli::try_parse_from(["roce-net", "apply", "--help"]).expect_err("help");
        assert_eq!(help.kind(), clap::error::ErrorKind::DisplayHelp);
        assert!(help.to_string().contains("--confirm-timeout"), "{help}");
    }
}
