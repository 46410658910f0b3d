//! Argument parsing and dispatch: the command line (`Cli`, `Cmd`), its value
//! parsers, and `run`, which hands each verb to its own
//! module under `src/cli/` (the apply family is `apply.rs`, `probe rdma` and
//! `verbs` are `rdma.rs`, the lab's demo is `demo.rs`). What every verb
//! starts from (the global options and what they point at) is [`context`],
//! below the verbs: this file uses the verbs, and no verb uses this file.
//! Exit codes and their one mapping from outcomes are [`exit`]; what is
//! printed, and how, is `output`.

mod apply;
mod check;
mod context;
mod demo;
mod doctor;
mod fleet;
mod gids;
mod ibdev2netdev;
mod lab;
mod mesh;
mod metrics;
mod nccl_env;
mod output;
mod persist;
mod plan;
mod probe;
mod rdma;
mod route_get;
mod show;
mod snapshot;

use output::usage_error;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use context::Context;
use roce_net::Error;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;

/// Exit codes (documented in docs/cli.md).
pub mod exit;

#[derive(Parser, Debug)]
#[command(
    name = "roce-net",
    version,
    about = "Diagnose and fix host networking on multi-NIC RoCE/RDMA servers",
    long_about = None
)]
pub(crate) struct Cli {
    /// The global options.
    #[command(flatten)]
    pub(crate) cx: Context,
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
        // into the past and roll back at once. One day is
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
        /// What to write (the help text is `backend_help`).
        #[arg(long, value_name = "BACKEND", value_parser = parse_backend, help = backend_help())]
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
    /// The health verdict for monitoring and schedulers: Nagios plugin
    /// conventions (exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN), or
    /// node-problem-detector's (--format npd), or --json (docs/health.md).
    Check(check::CheckArgs),
    /// Findings that only show across hosts, from their saved snapshots; with
    /// `--mesh`, the cluster mesh's faults too.
    Fleet {
        /// Snapshot files (`roce-net snapshot -o FILE` on each host).
        #[arg(required = true, value_name = "SNAPSHOT")]
        snapshots: Vec<PathBuf>,
        /// The mesh plan the nodes ran (with `--mesh`).
        #[arg(long, value_name = "FILE", requires = "mesh")]
        mesh_plan: Option<PathBuf>,
        /// The nodes' mesh results, or directories of them (with `--mesh-plan`).
        #[arg(long, value_name = "RESULT", num_args = 1.., requires = "mesh_plan")]
        mesh: Vec<PathBuf>,
    },
    /// The cluster test: every NIC of every node probed on its rail, the broken
    /// NIC, host or rail named (docs/mesh.md).
    Mesh {
        #[command(subcommand)]
        what: mesh::MeshCmd,
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
        /// Address the NICs in IPv6 only (the ULA prefix fd00:198:18::/64)
        /// instead of 198.18.0.0/24: the doctor's IPv6 findings, apply's
        /// `ip -6` rules, the peer's neighbour-solicitation probe.
        #[arg(long)]
        ipv6: bool,
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
    Watchdog(apply::WatchdogArgs),
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
        /// Sender IPv4 address; by default DEV's primary IPv4 address.
        #[arg(long)]
        source: Option<Ipv4Addr>,
    },
    /// Neighbour solicitations from DEV for an IPv6 TARGET (IPv6's `probe
    /// arp`); every distinct MAC advertised for it.
    Nd {
        /// Device to send from.
        #[arg(long)]
        dev: String,
        /// IPv6 address to resolve.
        #[arg(long)]
        target: Ipv6Addr,
        /// Solicitations to send (1 to 1000).
        #[arg(long, default_value_t = 3)]
        count: u32,
        /// Seconds to listen for advertisements.
        #[arg(long, default_value_t = 2.0)]
        timeout: f64,
        /// Source IPv6 address; by default one of DEV's own (a global one in
        /// TARGET's prefix, else any global one, else its link-local one).
        #[arg(long)]
        source: Option<Ipv6Addr>,
    },
    /// RDMA traffic with a `probe rdma --server` (like ib_write_bw): latency,
    /// bandwidth both ways, or the failure's likely cause.
    Rdma(Box<rdma::RdmaArgs>),
}

/// `persist --backend`: a usage error (exit 64) when it names no backend.
/// `persist --backend`'s help: what each backend writes, as the library renders it.
fn backend_help() -> String {
    format!(
        "{}; when omitted, the policy's persistence.backend, detected from the host \
         when that is auto",
        roce_net::Backend::choices()
    )
}

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
    let mut parser = Cli::command();
    let parsed = parser
        .try_get_matches_from_mut(std::env::args_os())
        .and_then(|m| {
            let given = m.value_source("state_dir") == Some(clap::parser::ValueSource::CommandLine);
            Cli::from_arg_matches(&m).map(|mut c| {
                c.cx.state_dir_given = given;
                c
            })
        });
    // The command tree is left to the process's exit, not freed: dropping its
    // subcommands and their arguments one by one was about 2% of an 8-NIC
    // apply's instructions (docs/benchmarks.md, "Apply").
    std::mem::forget(parser);
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
            // A monitoring system reads `check`'s exit code as a verdict.
            let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
            if let Some((format, json)) = check::asked_for(&args) {
                return check::usage_unknown(&text, format, json);
            }
            if json {
                usage_error(&text, true);
            } else {
                eprint!("{text}");
            }
            return exit::USAGE;
        }
    };
    let json = cli.cx.json;
    let prefix = context::command_prefix(&cli.cx);
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            output::report_error(&e, json, &prefix);
            exit::for_error(&e)
        }
    }
}

/// Hand the command to its verb's module: each verb's options, the library
/// calls and the rendering of the outcome live there; its exit code comes back.
fn run(cli: Cli) -> Result<u8, Error> {
    let (cmd, cli) = (&cli.cmd, &cli.cx);
    match cmd {
        Cmd::Show { from } => show::run(cli, from),
        Cmd::Gids { device, port, from } => gids::run(cli, device, *port, from),
        Cmd::Ibdev2netdev { verbose, from } => ibdev2netdev::run(cli, *verbose, from),
        Cmd::Snapshot {
            output,
            pretty,
            compress,
            verbs,
        } => snapshot::run(cli, output, *pretty, *compress, *verbs),
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
            route_get::run(cli, &q, *details)
        }
        Cmd::Verbs { libibverbs } => rdma::verbs(&context::host(cli)?, libibverbs, cli.json),
        Cmd::Probe {
            what: ProbeCmd::Rdma(a),
        } => rdma::probe(&context::host(cli)?, a, cli.json),
        Cmd::Probe {
            what:
                ProbeCmd::Arp {
                    dev,
                    target,
                    count,
                    timeout,
                    source,
                },
        } => probe::arp(cli, dev, *target, *count, *timeout, *source),
        Cmd::Probe {
            what:
                ProbeCmd::Nd {
                    dev,
                    target,
                    count,
                    timeout,
                    source,
                },
        } => probe::nd(cli, dev, *target, *count, *timeout, *source),
        Cmd::Plan { policy, output } => plan::run(cli, policy, output),
        Cmd::Apply {
            policy,
            plan,
            yes,
            confirm_timeout,
        } => apply::apply(cli, policy, plan, *yes, *confirm_timeout),
        Cmd::Confirm => apply::confirm(cli),
        Cmd::Status => apply::status(cli),
        Cmd::Rollback => apply::rollback(cli),
        Cmd::Archive => apply::archive(cli),
        Cmd::Persist {
            policy,
            backend,
            dry_run,
            remove,
            switch_backend,
            root,
        } => persist::run(
            cli,
            policy,
            *backend,
            *dry_run,
            *remove,
            *switch_backend,
            root,
        ),
        Cmd::Doctor {
            from,
            policy,
            verbs,
        } => doctor::run(cli, from, policy, *verbs),
        Cmd::NcclEnv {
            from,
            export,
            nccl_version,
            check,
            env_file,
        } => nccl_env::run(cli, from, *export, *nccl_version, *check, env_file),
        Cmd::Metrics { from, output } => metrics::run(cli, from, output),
        Cmd::Check(a) => Ok(check::run(cli, a)),
        Cmd::Fleet {
            snapshots,
            mesh_plan,
            mesh,
        } => fleet::run(cli, snapshots, mesh_plan.as_deref(), mesh),
        Cmd::Mesh { what } => mesh::run(cli, what),
        Cmd::Lab { nics, ipv6, keep } => match lab::refused_option(cli) {
            Some(why) => Ok(refused(why, cli.json)),
            None => lab::run(cli, *nics, *ipv6, *keep),
        },
        Cmd::Watchdog(args) => apply::watchdog(cli, args),
    }
}

/// A global option the verb cannot take: a usage error (exit 64), in clap's
/// words and with its usage line, or as the documented JSON error.
fn refused(why: &str, json: bool) -> u8 {
    if json {
        usage_error(why, true);
    } else {
        let _ = Cli::command()
            .error(clap::error::ErrorKind::ArgumentConflict, why)
            .print();
    }
    exit::USAGE
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
        for verb in ["arp", "nd"] {
            assert!(probe.get_subcommands().any(|c| c.get_name() == verb));
        }
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
        assert_eq!(cli.cx.netns.as_deref(), Some("a"));
        assert!(cli.cx.json);
        assert_eq!(cli.cx.state_dir, PathBuf::from("/x"));
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
